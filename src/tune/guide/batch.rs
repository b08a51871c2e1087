//! Batches (issue 37): with several free slots (GPUs of one machine, a Slurm wave), the guided
//! tune proposes up to that many launches at once, each chosen from the observations before
//! the batch only, so none waits for another's result and `resume` re-derives the same batch
//! boundaries from the rows.
//!
//! The batch, in order (duplicates and launched points skipped, cut at the slots):
//! 1. what the one-slot tune launches next ([`super::next`]): with one slot the path is the
//!    one-slot path, launch for launch;
//! 2. the same move with the **limits the evidence already shows behind it** lifted too: a
//!    sized cap (the running cap, the CUDA graphs) below the offered load binds as soon as the
//!    limit in front of it is gone, so it goes to the smallest value that covers the offered
//!    load; a pool that holds fewer requests than offered (running ÷ KV usage) binds once the
//!    cap is lifted, so more KV comes with it. Serially those are the next steps, each a
//!    launch and a round; in parallel they cost a slot, not a round;
//! 3. every long move of the base's verdict at once (more KV on each KV knob), lifted as above;
//! 4. the fallback of an unsized long move, half way (what the one-slot tune launches if it
//!    fails: a long move is the one that finds a cliff);
//! 5. the base's other rule moves, each on its own knob, lifted; 6. the same, plain;
//! 7. the first moves of the launches within noise of the base with another verdict;
//! 8. only once no rule names a limit (the generic search), what the one-slot tune would
//!    launch next with each launch of the batch held out: the next neighbours.
//!
//! This is the order of expected gain: the evidence's move first, then the same move with the
//! limits behind it, then the hedges. In the confirmation phase a batch is several
//! confirmation launches: the next confirmation had the one before it measured the same mean
//! (the mean is the best guess of a repeat), so the interleaving is the one-slot order.

use super::moves::{Lift, sized_value};
use super::phases::{explore_left, next, next_with};
use super::rules::{self, Dir};
use super::standing::{base, near_ties};
use super::state::{Dropped, State};
use super::types::{
    Failure, Next, Observation, Outcome, Point, Proposal, Space, evidence_of, verdict_of,
};
use super::words::{name, said};
use crate::server::failure::FailureKind;

/// The next batch of at most `slots` launches after `seen` (every configuration of this tune
/// so far, in the order first launched, as [`super::next`] takes it), with `launches_left` of
/// the budget left. For the runner: given the observations the rows give (`tune::path`) and
/// the free slots, launch every proposal of the batch, at once, and record their rows in the
/// batch's order; the next batch is asked once every row of this one is in.
///
/// Pure and deterministic, so a resumed tune replays the same batches (`path::replay_batched`
/// with the same `slots`). With `slots` ≤ 1 it is exactly [`super::next`]. A batch never holds
/// a point twice, except distinct confirmation repeats of one configuration, and never more
/// launches than `launches_left`, nor more exploration launches than the exploration's budget
/// (the budget less the launches kept to confirm): the exploration and the confirmation never
/// share a batch, since what is confirmed depends on what the exploration finds.
pub fn next_batch(space: &Space, seen: &[Observation], launches_left: usize, slots: usize) -> Next {
    let first = next(space, seen, launches_left);
    let Next::Launch(batch) = &first else {
        return first;
    };
    let Some(p1) = batch.first() else {
        return first;
    };
    let room = slots.min(launches_left);
    if room <= 1 || batch.len() != 1 {
        return first;
    }
    // The start alone: nothing is known to choose a second launch by.
    if seen.is_empty() {
        return first;
    }
    let p1 = p1.clone();
    // A re-measure goes alone: the moves after it are chosen from what it measures.
    if p1.remeasure {
        return first;
    }
    if p1.confirm {
        return Next::Launch(confirmations_batch(space, seen, launches_left, room, p1));
    }
    let explore_left = explore_left(space, seen, launches_left);
    let room = room.min(explore_left.max(1));
    // The one-slot tune's launch composes its move with the limits behind it; the batch's
    // hedges are built from the plain move (the lifted one is then one of them).
    let plain = match next_with(space, seen, launches_left, false) {
        Next::Launch(v) => v.into_iter().next().filter(|p| !p.confirm),
        Next::Stop { .. } => None,
    };
    let Some(plain) = plain else {
        return Next::Launch(vec![p1]);
    };
    // The plain move goes last: next to its composed form it only measures again the limit
    // the base already showed.
    let plain_point = plain.point.clone();
    let built = exploration_batch(space, seen, launches_left, room + 1, plain);
    let mut out = vec![p1];
    let mut last = None;
    for p in built {
        if out.iter().any(|q| q.point == p.point) {
            continue;
        }
        if p.point == plain_point {
            last = Some(p);
        } else {
            out.push(p);
        }
    }
    out.extend(last);
    out.truncate(room);
    Next::Launch(out)
}

/// Several confirmations: each next one as the one-slot tune would ask it had the ones before
/// measured their configuration's mean again (one more launch, the same outcome).
fn confirmations_batch(
    space: &Space,
    seen: &[Observation],
    launches_left: usize,
    room: usize,
    p1: Proposal,
) -> Vec<Proposal> {
    let mut lied = seen.to_vec();
    let mut out = vec![p1];
    while out.len() < room {
        let Some(last) = out.last() else { break };
        if let Some(o) = lied.iter_mut().find(|o| o.point == last.point) {
            o.launches += 1;
        }
        match next(space, &lied, launches_left - out.len()) {
            Next::Launch(v) => match v.into_iter().next() {
                Some(p) if p.confirm => out.push(p),
                _ => break,
            },
            Next::Stop { .. } => break,
        }
    }
    out
}

/// The exploration's batch (the module's order), at most `room` launches.
fn exploration_batch(
    space: &Space,
    seen: &[Observation],
    launches_left: usize,
    room: usize,
    p1: Proposal,
) -> Vec<Proposal> {
    let st = State::read(space, seen);
    let b = &seen[base(space, seen, st.noise)];
    let mut out = Batch {
        space,
        st: &st,
        base: b,
        room,
        props: vec![p1.clone()],
    };
    let lift = Lift::read(space, &st, b);
    // 2. The same move, with the limits behind it lifted.
    out.add(
        lift.apply(space, &st, &p1.point, false),
        &p1.why,
        "and the limits behind it",
    );
    let verdict = verdict_of(b);
    let usage = evidence_of(b).and_then(|e| e.kv_usage_max);
    let moves = verdict.map(|v| rules::moves(v, usage)).unwrap_or_default();
    // The first value each of the base's rule moves takes, one per knob, in the rules' order.
    let firsts = first_moves(space, &st, b, &moves);
    // 3. Every long move at once, lifted.
    let mut all = p1.point.clone();
    for &(k, to, long) in &firsts {
        if long && all.get(k) == b.point.get(k) {
            all[k] = to;
        }
    }
    out.add(
        lift.apply(space, &st, &all, true),
        "",
        "every long move of the verdict at once, and the limits behind them",
    );
    // 4. The fallback of a long move, should it fail (a long move is the one that finds a
    // cliff): the one-slot tune's next launch then. A sized move (the cap to the offered
    // load) is not a guess that may overshoot, so it has none.
    let unsized_long = super::types::single_change(&b.point, &p1.point).is_some_and(|k| {
        moves
            .iter()
            .any(|m| m.long && m.target.is_none() && space.knobs[k].key == m.key)
    });
    if unsized_long {
        let mut failed = seen.to_vec();
        failed.push(Observation::once(
            p1.point.clone(),
            Outcome::Failed {
                kind: Failure::Server(FailureKind::Oom),
            },
        ));
        if let Next::Launch(v) = next(space, &failed, launches_left.saturating_sub(1)) {
            if let Some(q) = v.into_iter().next().filter(|q| !q.confirm) {
                out.add(Some(q.point), &q.why, "");
            }
        }
    }
    // The base's other rule moves, each on its own knob (independent of the risk of the first).
    let others: Vec<Point> = firsts
        .iter()
        .filter(|&&(k, _, _)| p1.point.get(k) == b.point.get(k))
        .map(|&(k, to, _)| {
            let mut p = b.point.clone();
            p[k] = to;
            p
        })
        .collect();
    // 5. Each lifted.
    for p in &others {
        out.add(
            lift.apply(space, &st, p, false),
            "",
            "another of the verdict's moves, and the limits behind it",
        );
    }
    // 6. Each plain.
    for p in others {
        out.add(Some(p), "", "another of the verdict's moves");
    }
    // 7. The near ties' moves.
    let base_i = seen.iter().position(|o| o.point == b.point).unwrap_or(0);
    let mut has_tie_moves = false;
    for tie in near_ties(seen, st.noise, base_i) {
        let t = &seen[tie];
        let tv = verdict_of(t);
        let tu = evidence_of(t).and_then(|e| e.kv_usage_max);
        let tmoves = tv.map(|v| rules::moves(v, tu)).unwrap_or_default();
        for (k, to, _) in first_moves(space, &st, t, &tmoves) {
            has_tie_moves = true;
            let mut p = t.point.clone();
            p[k] = to;
            let why = out.why_from(t, &p, "a near tie's move");
            out.add(Some(p), &why, "");
        }
    }
    // 8. Once no rule asks for anything (the generic search's neighbours), the one-slot
    // tune's next launches with each launch of the batch held out: recorded as launched, as
    // far from eligible as can be (so never a base, a near tie, a cliff or a banned value,
    // and no knob is dropped for it), so the search steps to the next neighbour. While a rule
    // still names a limit, a neighbour on another knob only measures that limit again: no
    // launch.
    let mut lied = seen.to_vec();
    while firsts.is_empty() && !has_tie_moves && out.props.len() < out.room {
        for p in &out.props {
            if !lied.iter().any(|o| o.point == p.point) {
                lied.push(Observation::once(
                    p.point.clone(),
                    Outcome::Measured {
                        score: 0.0,
                        cv: None,
                        eligible: false,
                        why_not: "in flight".into(),
                        slo_excess: Some(f64::MAX),
                        evidence: Default::default(),
                        not_in_effect: Vec::new(),
                    },
                ));
            }
        }
        let left = launches_left.saturating_sub(out.props.len());
        let Next::Launch(v) = next(space, &lied, left) else {
            break;
        };
        let Some(q) = v.into_iter().next().filter(|q| !q.confirm) else {
            break;
        };
        let before = out.props.len();
        out.add(Some(q.point), &q.why, "");
        if out.props.len() == before {
            break;
        }
    }
    out.props
}

/// A batch being filled.
struct Batch<'a> {
    space: &'a Space,
    st: &'a State,
    base: &'a Observation,
    room: usize,
    props: Vec<Proposal>,
}

impl Batch<'_> {
    /// Add `point` unless the batch is full, holds it, or it was launched already.
    fn add(&mut self, point: Option<Point>, why: &str, note: &str) {
        let Some(point) = point else { return };
        if self.props.len() >= self.room
            || self.st.seen.contains(&point)
            || self.props.iter().any(|p| p.point == point)
        {
            return;
        }
        // The log line names every knob the launch changes from the base it steps from.
        let why = if note.is_empty() {
            why.to_string()
        } else {
            self.why_from(self.base, &point, note)
        };
        self.props.push(Proposal {
            point,
            why,
            confirm: false,
            remeasure: false,
        });
    }

    /// "base: what it said → what: k a → b, k2 c → d" for `point` against `from`.
    fn why_from(&self, from: &Observation, point: &Point, what: &str) -> String {
        let changes: Vec<String> = self
            .space
            .knobs
            .iter()
            .zip(from.point.iter().zip(point))
            .filter(|(_, (a, b))| a != b)
            .filter_map(|(k, (&a, &b))| {
                Some(format!(
                    "{} {} → {}",
                    k.key,
                    k.values.get(a)?,
                    k.values.get(b)?
                ))
            })
            .collect();
        format!(
            "{}: {} → {what}: {}",
            name(self.space, &from.point),
            said(&from.outcome),
            changes.join(", ")
        )
    }
}

/// The first value each rule move of `from` takes (the one-slot tune's order of that move's
/// values, the first launchable), one per knob, with whether the move is long.
fn first_moves(
    space: &Space,
    st: &State,
    from: &Observation,
    moves: &[rules::Move],
) -> Vec<(usize, usize, bool)> {
    let mut out: Vec<(usize, usize, bool)> = Vec::new();
    for mv in moves {
        let Some(k) = space.knobs.iter().position(|kn| kn.key == mv.key) else {
            continue;
        };
        if st.dropped[k] == Some(Dropped::NotInEffect) || out.iter().any(|m| m.0 == k) {
            continue;
        }
        let Some(&at) = from.point.get(k) else {
            continue;
        };
        let len = space.knobs[k].values.len();
        let mut order = super::step::order(st, k, len, at, mv.dir, mv.long);
        if let Some(i) = mv
            .target
            .and_then(|t| sized_value(&space.knobs[k], from, t))
            .and_then(|want| order.iter().position(|&i| i == want))
        {
            let v = order.remove(i);
            order.insert(0, v);
        }
        let take = if mv.long { order.len() } else { 1 };
        let first = order.into_iter().take(take).find(|&to| {
            let mut p = from.point.clone();
            p[k] = to;
            !st.seen.contains(&p)
        });
        if let Some(to) = first {
            out.push((k, to, mv.long && mv.dir == Dir::Up));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::super::{Evidence, Knob};
    use super::*;
    use crate::observe::diagnose::VerdictKind;
    use crate::plan::flags::ParamValue;

    const MFS: usize = 0;
    const MTT: usize = 1;
    const MRR: usize = 2;
    const CGBS: usize = 3;

    fn space(confirm: usize) -> Space {
        let k = |key: &str, values: Vec<ParamValue>| Knob {
            key: key.into(),
            values,
        };
        let ints = |v: &[i64]| v.iter().map(|&x| ParamValue::Int(x)).collect();
        Space {
            knobs: vec![
                k(
                    "mem_fraction_static",
                    [0.80, 0.82, 0.84, 0.86, 0.88, 0.90, 0.92, 0.94]
                        .iter()
                        .map(|&x| ParamValue::Float(x))
                        .collect(),
                ),
                // A second KV knob: the token cap on the pool (the hierarchical cache is none).
                k("max_total_tokens", ints(&[4096, 8192, 16384, 32768])),
                k("max_running_requests", ints(&[16, 32, 48, 64, 96, 128])),
                k("cuda_graph_max_bs", ints(&[16, 32, 64, 128])),
            ],
            start: vec![1, 0, 1, 0],
            confirm,
        }
    }

    fn evidence(verdict: VerdictKind, running: f64, usage: f64) -> Evidence {
        Evidence {
            verdict: Some(verdict),
            kv_usage_max: Some(usage),
            running_mean: Some(running),
            running_max: Some(running),
            queue_mean: Some(64.0 - running),
            offered: Some(64.0),
            ..Default::default()
        }
    }

    fn measured(point: Point, score: f64, eligible: bool, ev: Evidence) -> Observation {
        Observation::once(
            point,
            Outcome::Measured {
                score,
                cv: Some(0.01),
                eligible,
                why_not: String::new(),
                slo_excess: (!eligible).then_some(3.0),
                evidence: ev,
                not_in_effect: vec![],
            },
        )
    }

    fn points(n: Next) -> Vec<Point> {
        match n {
            Next::Launch(v) => v.into_iter().map(|p| p.point).collect(),
            Next::Stop { why } => panic!("stopped: {why}"),
        }
    }

    /// A made-up response, so a driven tune walks many states: more of every knob runs more,
    /// up to the offered 64; mfs 0.92 and above fail.
    fn respond(p: &Point) -> Observation {
        if p[MFS] >= 6 {
            return Observation::once(
                p.clone(),
                Outcome::Failed {
                    kind: Failure::Server(FailureKind::Oom),
                },
            );
        }
        let kv = 8.0 * (p[MFS] as f64) + 10.0 * p[MTT] as f64;
        let cap = [16.0, 32.0, 48.0, 64.0, 96.0, 128.0][p[MRR]];
        let running = kv.min(cap).clamp(1.0, 64.0);
        let graphs = [16.0, 32.0, 64.0, 128.0][p[CGBS]] >= running;
        let verdict = if running < 64.0 && running >= cap {
            VerdictKind::QueueWithSpareKv
        } else if running < 64.0 {
            VerdictKind::KvCacheBound
        } else if !graphs {
            VerdictKind::CudaGraphLimited
        } else {
            VerdictKind::ComputeBound
        };
        let eligible = running >= 60.0 && graphs;
        measured(
            p.clone(),
            running * if graphs { 10.0 } else { 7.0 } - p[MTT] as f64,
            eligible,
            evidence(verdict, running, (running / kv.max(1.0)).min(1.0)),
        )
    }

    /// Drive a tune batch by batch; each batch's proposals checked, then answered in order.
    fn drive(sp: &Space, budget: usize, slots: usize) -> Vec<Vec<Proposal>> {
        let mut seen: Vec<Observation> = Vec::new();
        let mut batches = Vec::new();
        let mut used = 0;
        while let Next::Launch(v) = next_batch(sp, &seen, budget - used, slots) {
            assert!(!v.is_empty() && v.len() <= slots.max(1) && v.len() <= budget - used);
            for (i, p) in v.iter().enumerate() {
                let known = seen.iter().any(|o| o.point == p.point);
                assert_eq!(known, p.confirm, "{}", p.why);
                if !p.confirm {
                    assert!(
                        v[..i].iter().all(|q| q.point != p.point),
                        "twice in a batch: {}",
                        p.why
                    );
                }
            }
            // The exploration and the confirmation never share a batch.
            assert!(v.iter().all(|p| p.confirm) || v.iter().all(|p| !p.confirm));
            for p in &v {
                used += 1;
                match seen.iter().position(|o| o.point == p.point) {
                    Some(i) => seen[i].again(p),
                    None => seen.push(respond(&p.point)),
                }
            }
            batches.push(v);
        }
        batches
    }

    #[test]
    fn with_one_slot_the_batch_is_the_one_slot_proposal_at_every_step() {
        let sp = space(3);
        for b in drive(&sp, 14, 1) {
            assert_eq!(b.len(), 1);
        }
        // Step by step: next_batch(.., 1) and next agree on every state the tune passes.
        let mut seen: Vec<Observation> = Vec::new();
        for used in 0..14 {
            let one = next(&sp, &seen, 14 - used);
            assert_eq!(next_batch(&sp, &seen, 14 - used, 1), one);
            assert_eq!(next_batch(&sp, &seen, 14 - used, 0), one);
            let Next::Launch(v) = one else { break };
            for p in v {
                match seen.iter().position(|o| o.point == p.point) {
                    Some(i) => seen[i].again(&p),
                    None => seen.push(respond(&p.point)),
                }
            }
        }
    }

    #[test]
    fn batches_hold_no_point_twice_and_keep_to_the_slots_and_the_budget() {
        for slots in [2, 3, 4, 8] {
            for budget in [1, 2, 5, 9, 16] {
                let sp = space(budget / 4);
                let batches = drive(&sp, budget, slots);
                let n: usize = batches.iter().map(Vec::len).sum();
                assert!(n <= budget, "{slots} slots, budget {budget}: {n}");
                assert_eq!(batches[0].len(), 1, "the start goes alone");
            }
        }
    }

    #[test]
    fn a_kv_bound_start_batches_the_move_its_lifted_limits_all_kv_at_once_and_the_fallback() {
        let sp = space(0);
        let seen = [measured(
            sp.start.clone(),
            200.0,
            false,
            evidence(VerdictKind::KvCacheBound, 20.0, 0.98),
        )];
        let b = points(next_batch(&sp, &seen, 10, 4));
        assert_eq!(
            b,
            vec![
                // The one-slot move, composed (issue 42): the memory fraction half way,
                // 0.82 → 0.88, with the cap (32) and the graphs (16) to the offered 64.
                vec![4, 0, 3, 2],
                // And the token cap half way too.
                vec![4, 2, 3, 2],
                // Should 0.88 fail: half way below it, 0.84, composed as the one-slot tune
                // would launch it.
                vec![2, 0, 3, 2],
                // The token cap alone, lifted.
                vec![1, 2, 3, 2],
            ]
        );
        assert_eq!(points(next_batch(&sp, &seen, 10, 2)), b[..2].to_vec());
        // Never more than the budget.
        assert_eq!(points(next_batch(&sp, &seen, 3, 8)), b[..3].to_vec());
        // The log line names each knob the launch changes.
        let Next::Launch(v) = next_batch(&sp, &seen, 10, 4) else {
            panic!()
        };
        assert!(
            v[0].why.contains("max_running_requests 32 → 64")
                && v[0].why.contains("cuda_graph_max_bs 16 → 64")
                && v[0].why.contains("mem_fraction_static 0.82 → 0.88"),
            "{}",
            v[0].why
        );
    }

    #[test]
    fn with_more_slots_the_verdicts_other_knobs_come_lifted_then_plain() {
        let sp = space(0);
        let seen = [measured(
            sp.start.clone(),
            200.0,
            false,
            evidence(VerdictKind::KvCacheBound, 20.0, 0.98),
        )];
        let b = points(next_batch(&sp, &seen, 10, 6));
        assert_eq!(
            b[3..].to_vec(),
            vec![
                // The token cap half way (4096 → 16384), with the cap and the graphs...
                vec![1, 2, 3, 2],
                // ...then alone.
                vec![1, 2, 1, 0],
                // Last, the one-slot move without the limits behind it.
                vec![4, 0, 1, 0],
            ]
        );
    }

    #[test]
    fn every_long_move_at_once_leaves_a_short_move_alone() {
        let mut sp = space(0);
        // A KV dtype is a short move (a list, gated by the quality guard): not in the
        // all-at-once launch.
        sp.knobs.insert(
            1,
            Knob {
                key: "kv_cache_dtype".into(),
                values: vec![
                    ParamValue::Str("auto".into()),
                    ParamValue::Str("fp8_e5m2".into()),
                ],
            },
        );
        sp.start = vec![1, 0, 0, 3, 2];
        let seen = [measured(
            sp.start.clone(),
            200.0,
            false,
            evidence(VerdictKind::KvCacheBound, 20.0, 0.98),
        )];
        let b = points(next_batch(&sp, &seen, 10, 8));
        // The memory fraction and the token cap half way at once, the dtype auto.
        assert_eq!(b[1], vec![4, 0, 2, 3, 2], "{b:?}");
        // The dtype is tried on its own, as one slot would.
        assert!(b.contains(&vec![1, 1, 0, 3, 2]), "{b:?}");
    }

    #[test]
    fn a_near_tie_with_another_verdict_adds_its_moves_and_no_neighbours() {
        let mut sp = space(0);
        // The leader is compute bound (no rule move); a launch within noise of it, one knob
        // away, is KV bound: its moves are the batch.
        let tie = vec![1, 0, 3, 2];
        let lead = vec![1, 0, 5, 2];
        sp.start = tie.clone();
        let seen = [
            measured(
                tie.clone(),
                99.0,
                true,
                evidence(VerdictKind::KvCacheBound, 40.0, 0.98),
            ),
            measured(
                lead.clone(),
                100.0,
                true,
                evidence(VerdictKind::ComputeBound, 64.0, 0.6),
            ),
        ];
        let b = points(next_batch(&sp, &seen, 10, 4));
        assert_eq!(b, vec![vec![4, 0, 3, 2], vec![1, 2, 3, 2]]);
    }

    fn with_offered(mut e: Evidence, offered: f64) -> Evidence {
        e.offered = Some(offered);
        e
    }

    #[test]
    fn a_first_move_is_sized_by_the_evidence_and_only_long_moves_up_are_flagged_long() {
        let mut sp = space(0);
        sp.knobs.push(Knob {
            key: "kv_cache_dtype".into(),
            values: vec![
                ParamValue::Str("auto".into()),
                ParamValue::Str("fp8_e5m2".into()),
            ],
        });
        sp.start.push(0);
        // 32 running at the cap of 32, 40 offered: the cap to 48, not half way (64).
        let o = measured(
            sp.start.clone(),
            100.0,
            false,
            with_offered(evidence(VerdictKind::QueueWithSpareKv, 32.0, 0.3), 40.0),
        );
        let st = State::read(&sp, std::slice::from_ref(&o));
        let q = first_moves(
            &sp,
            &st,
            &o,
            &rules::moves(VerdictKind::QueueWithSpareKv, Some(0.3)),
        );
        assert_eq!(q, vec![(MRR, 2, true)]);
        let kv = first_moves(&sp, &st, &o, &rules::moves(VerdictKind::KvCacheBound, None));
        // The dtype is a short move: one value, not long.
        assert_eq!(kv, vec![(MFS, 4, true), (MTT, 2, true), (4, 1, false)]);
        let churn = first_moves(
            &sp,
            &st,
            &o,
            &rules::moves(VerdictKind::RetractionChurn, None),
        );
        // "Admit fewer" one value down (short), then more KV, each knob once.
        let mut want = vec![(MRR, 0, false)];
        want.extend(kv);
        assert_eq!(churn, want);
    }

    #[test]
    fn a_knob_not_in_effect_is_never_moved_or_lifted_by_a_batch() {
        let sp = space(0);
        let mut o = measured(
            sp.start.clone(),
            200.0,
            false,
            evidence(VerdictKind::KvCacheBound, 20.0, 0.98),
        );
        if let Outcome::Measured { not_in_effect, .. } = &mut o.outcome {
            *not_in_effect = vec!["max_total_tokens".into(), "cuda_graph_max_bs".into()];
        }
        let b = points(next_batch(&sp, &[o], 10, 8));
        assert!(b.len() >= 3, "{b:?}");
        assert!(b.iter().all(|p| p[MTT] == 0 && p[CGBS] == 0), "{b:?}");
        // The running cap still goes to the offered load.
        assert!(b.contains(&vec![4, 0, 3, 0]), "{b:?}");
    }

    #[test]
    fn the_lifted_limits_are_the_sized_caps_below_the_offered_load_short_of_a_cliff() {
        let sp = space(0);
        let start = measured(
            vec![1, 0, 0, 0],
            100.0,
            false,
            with_offered(evidence(VerdictKind::KvCacheBound, 10.0, 0.98), 40.0),
        );
        let st = State::read(&sp, std::slice::from_ref(&start));
        let lift = Lift::read(&sp, &st, &start);
        // The cap (16) to 48, the graphs (16) to 64; the token cap is no running cap, though
        // its values are numbers above 40; a KV-bound base wants no extra KV move.
        assert_eq!(lift.caps, vec![(MRR, 2), (CGBS, 2)]);
        assert!(!lift.kv_short);
        // Graphs of 64 failed to start: the lift stops short of the cliff, no lift there.
        let cliff = [
            start.clone(),
            Observation::once(
                vec![1, 0, 0, 2],
                Outcome::Failed {
                    kind: Failure::Server(FailureKind::Oom),
                },
            ),
        ];
        let st = State::read(&sp, &cliff);
        assert_eq!(Lift::read(&sp, &st, &start).caps, vec![(MRR, 2)]);
        // Caps at or above the offered load are no limit; nor is anything without an offer.
        let roomy = measured(
            vec![1, 0, 3, 3],
            100.0,
            false,
            with_offered(evidence(VerdictKind::KvCacheBound, 10.0, 0.98), 40.0),
        );
        assert!(Lift::read(&sp, &st, &roomy).caps.is_empty());
        let exact = measured(
            vec![1, 0, 3, 2],
            100.0,
            false,
            evidence(VerdictKind::KvCacheBound, 10.0, 0.98),
        );
        assert!(Lift::read(&sp, &st, &exact).caps.is_empty(), "64 holds 64");
        let silent = measured(vec![1, 0, 0, 0], 100.0, false, Evidence::default());
        assert!(Lift::read(&sp, &st, &silent).caps.is_empty());
    }

    #[test]
    fn a_cap_bound_start_with_a_short_pool_brings_more_kv_with_the_cap() {
        let sp = space(0);
        // 32 running at the cap of 32, the pool 40% used: it holds 80, more than offered.
        let roomy = [measured(
            sp.start.clone(),
            200.0,
            false,
            evidence(VerdictKind::QueueWithSpareKv, 32.0, 0.4),
        )];
        let b = points(next_batch(&sp, &roomy, 10, 4));
        // The one-slot move composes: the cap to the offered 64 and the graphs, no more KV;
        // the plain cap alone is the last hedge.
        assert_eq!(b[0], vec![1, 0, 3, 2], "the cap and the graphs");
        assert_eq!(b.last(), Some(&vec![1, 0, 3, 0]), "{b:?}");
        // The pool 80% used: it holds 40 of the 64 offered, so more KV comes with the cap.
        let short = [measured(
            sp.start.clone(),
            200.0,
            false,
            evidence(VerdictKind::QueueWithSpareKv, 32.0, 0.8),
        )];
        let b = points(next_batch(&sp, &short, 10, 4));
        assert_eq!(b[0], vec![4, 0, 3, 2]);
        // Every KV knob at once.
        assert_eq!(b[1], vec![4, 2, 3, 2]);
        assert_eq!(b.last(), Some(&vec![1, 0, 3, 0]), "{b:?}");
        // A sized move has no fallback: no lower cap is launched beside it.
        assert!(b.iter().all(|p| p[MRR] >= 3), "{b:?}");
    }

    #[test]
    fn the_exploration_batch_keeps_to_the_exploration_budget() {
        let sp = space(4);
        let seen = [measured(
            sp.start.clone(),
            200.0,
            true,
            evidence(VerdictKind::KvCacheBound, 20.0, 0.98),
        )];
        // 6 left, 4 kept to confirm: 2 to explore.
        assert_eq!(points(next_batch(&sp, &seen, 6, 4)).len(), 2);
        assert_eq!(points(next_batch(&sp, &seen, 7, 4)).len(), 3);
        // Nothing eligible: nothing to confirm, and no reserve is kept from the exploration.
        let ineligible = [measured(
            sp.start.clone(),
            200.0,
            false,
            evidence(VerdictKind::KvCacheBound, 20.0, 0.98),
        )];
        assert_eq!(points(next_batch(&sp, &ineligible, 6, 4)).len(), 4);
    }

    #[test]
    fn a_confirmation_batch_interleaves_the_leader_and_its_near_ties() {
        let sp = space(4);
        let ev = || evidence(VerdictKind::ComputeBound, 64.0, 0.8);
        let seen = [
            measured(vec![1, 0, 1, 0], 100.0, true, ev()),
            measured(vec![2, 0, 1, 0], 99.0, true, ev()),
            measured(vec![3, 0, 1, 0], 98.0, true, ev()),
        ];
        let Next::Launch(v) = next_batch(&sp, &seen, 4, 4) else {
            panic!()
        };
        assert!(v.iter().all(|p| p.confirm));
        let got: Vec<usize> = v.iter().map(|p| p.point[MFS]).collect();
        // Fewest launches first, the leader first among equals: as one slot would, in turn.
        assert_eq!(got, vec![1, 2, 3, 1]);
        let Next::Launch(two) = next_batch(&sp, &seen, 2, 4) else {
            panic!()
        };
        assert_eq!(two.len(), 2);
    }

    #[test]
    fn in_the_generic_search_a_batch_takes_neighbours_on_several_knobs() {
        let sp = space(0);
        let p = vec![4, 1, 3, 2];
        let seen = [
            measured(
                sp.start.clone(),
                100.0,
                true,
                evidence(VerdictKind::ComputeBound, 64.0, 0.8),
            ),
            measured(
                p.clone(),
                640.0,
                true,
                evidence(VerdictKind::ComputeBound, 64.0, 0.8),
            ),
        ];
        let b = points(next_batch(&sp, &seen, 10, 4));
        assert_eq!(b.len(), 4, "{b:?}");
        // Each one knob from the leader, no two the same.
        for q in &b {
            assert_eq!(q.iter().zip(&p).filter(|(a, b)| a != b).count(), 1, "{q:?}");
        }
        let knobs: std::collections::BTreeSet<usize> = b
            .iter()
            .map(|q| q.iter().zip(&p).position(|(a, b)| a != b).unwrap())
            .collect();
        assert!(knobs.len() >= 2, "{b:?}");
    }
}
