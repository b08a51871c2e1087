//! Building one move: the first unlaunched move a verdict's rules ask for, sized by the
//! evidence, long or short, composed with the limits behind it; and the proposal for a knob
//! moved from the base, with its line for the step log.

use super::rules::{self, Dir};
use super::state::{Dropped, State};
use super::types::{
    Knob, Next, Observation, Outcome, Point, Space, evidence_of, launch, verdict_of,
};
use super::words::{name, said};
use super::{sized, step};
use crate::observe::diagnose::VerdictKind;

/// The first unlaunched move that `base`'s verdict asks for, if any.
pub(super) fn rule_moves(
    space: &Space,
    seen: &[Observation],
    st: &State,
    base: &Observation,
    compose: bool,
) -> Option<Next> {
    let first = verdict_of(base)?;
    let usage = evidence_of(base).and_then(|e| e.kv_usage_max);
    // The verdict's moves first, then those of every other limit the launch showed: a move
    // the first limit's rules have spent leaves the next limit still to lift.
    let also = evidence_of(base)
        .map(|e| e.also.clone())
        .unwrap_or_default();
    let asked = std::iter::once(first)
        .chain(also)
        .flat_map(|v| rules::moves(v, usage).into_iter().map(move |mv| (v, mv)));
    for (verdict, mv) in asked {
        let Some(k) = space.knobs.iter().position(|kn| kn.key == mv.key) else {
            continue;
        };
        if st.dropped[k] == Some(Dropped::NotInEffect)
            || (st.kv_flat[k] && rules::KV_KNOBS.contains(&mv.key) && mv.dir == Dir::Up)
        {
            continue;
        }
        let len = space.knobs[k].values.len();
        let from = *base.point.get(k)?;
        // A short shortfall asks for a short move: with nearly every offered request running
        // (a queue under a tenth of the offered load), half way to the end of a range
        // overshoots what is missing, and a larger pool or cache can cost speed.
        let near = evidence_of(base).is_some_and(|e| {
            matches!((e.running_mean, e.offered), (Some(r), Some(o)) if o > 0.0 && r >= 0.9 * o)
        });
        // (Not for prefixes: every request runs when the pool evicts them, and the shortfall
        // there is the hit rate's, not the batch's.)
        let near = near && verdict != VerdictKind::PrefixCacheEvicted;
        let long = mv.long && !(near && rules::KV_KNOBS.contains(&mv.key));
        let mut order = step::order(st, k, len, from, mv.dir, long);
        // A move the evidence sizes goes first to the smallest value that covers the size.
        if let Some(i) = mv
            .target
            .and_then(|t| sized_value(&space.knobs[k], base, t))
            .and_then(|want| order.iter().position(|&i| i == want))
        {
            let v = order.remove(i);
            order.insert(0, v);
        }
        // A short move is the next value or nothing: walking on past a launched neighbour
        // would turn "a little less" into "much less". (A sized move is a long one.)
        let take = if long { order.len() } else { 1 };
        for to in order.into_iter().take(take) {
            if st.over_ceiling(space, k, to) {
                continue;
            }
            if let Some(n) = propose(space, st, base, k, to, mv.what) {
                // Only a lift composes: a move down lifts no limit, and a churning pool wants
                // fewer admissions, not the caps lifted behind more KV; a pool that keeps
                // more prefixes lifts no limit on the batch either.
                let lifts = mv.dir == Dir::Up
                    && !matches!(
                        verdict,
                        VerdictKind::RetractionChurn | VerdictKind::PrefixCacheEvicted
                    );
                if !(compose && lifts) {
                    return Some(n);
                }
                match composed(space, st, base, seen, n) {
                    Some(n) => return Some(n),
                    // Measured already with its limits lifted: the plain move is no new
                    // experiment (it measures the limits the composed launch lifted), so
                    // the move goes on to its next value.
                    None => continue,
                }
            }
        }
    }
    None
}

/// A rule's move with the limits the evidence already shows behind it lifted in the same
/// launch (issue 42): a sized cap below the offered load binds as soon as the limit in front
/// of it is gone, and a pool that holds fewer requests than offered binds once the cap is
/// lifted. One launch at a time, lifting them one by one would read each step's unmasked limit
/// as no progress (more KV lets the batch run past the graphs: slower), and never compose them.
/// None when that composed point was launched and measured (a composed launch that failed
/// leaves the plain move to try: the lifted limits may be what failed).
fn composed(
    space: &Space,
    st: &State,
    base: &Observation,
    seen: &[Observation],
    n: Next,
) -> Option<Next> {
    let Next::Launch(v) = &n else { return Some(n) };
    let [p] = v.as_slice() else { return Some(n) };
    let Some(lifted) = Lift::read(space, st, base).apply(space, st, &p.point, false) else {
        return Some(n);
    };
    if lifted == p.point {
        return Some(n);
    }
    if st.seen.contains(&lifted) {
        let measured = seen
            .iter()
            .any(|o| o.point == lifted && matches!(o.outcome, Outcome::Measured { .. }));
        return (!measured).then_some(n);
    }
    let extra = sized::changes(space, &p.point, &lifted);
    Some(launch(
        lifted,
        format!("{}, and the limits behind it: {extra}", p.why),
        false,
    ))
}

/// The index of the smallest numeric value of `knob` that is at least the size `t` names in
/// `base`'s evidence (the offered concurrency, the most requests running), if the evidence has
/// it and a value covers it.
pub(super) fn sized_value(knob: &Knob, base: &Observation, t: rules::Target) -> Option<usize> {
    let e = evidence_of(base)?;
    let size = match t {
        rules::Target::Offered => e.offered?,
        rules::Target::Running => e.running_max.or(e.running_mean)?,
    };
    knob.values
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.as_f64().map(|x| (i, x)))
        .filter(|&(_, x)| x >= size)
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _)| i)
}

/// `base` with knob `k` at value `to`, unless that point was launched already.
pub(super) fn propose(
    space: &Space,
    st: &State,
    base: &Observation,
    k: usize,
    to: usize,
    what: &str,
) -> Option<Next> {
    let mut p = base.point.clone();
    let from = *p.get(k)?;
    *p.get_mut(k)? = to;
    if st.seen.contains(&p) {
        return None;
    }
    let knob = space.knobs.get(k)?;
    let why = format!(
        "{}: {} → {what}: {} {} → {}",
        name(space, &base.point),
        said(&base.outcome),
        knob.key,
        knob.values.get(from)?,
        knob.values.get(to)?
    );
    Some(launch(p, why, false))
}

/// The limits the base's evidence shows behind the one that binds now, as the values that
/// lift them. Here, beside the moves it composes with (`rule_moves`' composed move and the
/// batch's lifted moves both read it).
pub(super) struct Lift {
    /// Knob index and the value that covers the offered load (sized caps below it).
    pub(super) caps: Vec<(usize, usize)>,
    /// The pool holds fewer requests than offered: more KV belongs in the move.
    pub(super) kv_short: bool,
    /// The base's point: more KV is added only to a move that changed no KV knob of it.
    from: Point,
}

impl Lift {
    pub(super) fn read(space: &Space, st: &State, b: &Observation) -> Lift {
        let Some(e) = evidence_of(b) else {
            return Lift {
                caps: Vec::new(),
                kv_short: false,
                from: b.point.clone(),
            };
        };
        let Some(offered) = e.offered.filter(|o| *o > 0.0) else {
            return Lift {
                caps: Vec::new(),
                kv_short: false,
                from: b.point.clone(),
            };
        };
        // The knobs some rule sizes from the evidence (the running cap, the CUDA graphs): once
        // every offered request runs, each must cover the offered load.
        let mut caps: Vec<(usize, usize)> = Vec::new();
        for v in [
            VerdictKind::QueueWithSpareKv,
            VerdictKind::CudaGraphLimited,
            VerdictKind::KvCacheBound,
            VerdictKind::RetractionChurn,
        ] {
            for mv in rules::moves(v, None) {
                if mv.target.is_none() || mv.dir != Dir::Up {
                    continue;
                }
                let Some(k) = space.knobs.iter().position(|kn| kn.key == mv.key) else {
                    continue;
                };
                if st.dropped[k] == Some(Dropped::NotInEffect) || caps.iter().any(|c| c.0 == k) {
                    continue;
                }
                let knob = &space.knobs[k];
                let now = b.point.get(k).and_then(|&i| knob.values.get(i)?.as_f64());
                let want = knob
                    .values
                    .iter()
                    .enumerate()
                    .filter_map(|(i, v)| v.as_f64().map(|x| (i, x)))
                    .filter(|&(_, x)| x >= offered)
                    .min_by(|a, b| a.1.total_cmp(&b.1))
                    .map(|(i, _)| i);
                if let (Some(now), Some(want)) = (now, want) {
                    if now < offered && st.allowed(k, want) && !st.over_ceiling(space, k, want) {
                        caps.push((k, want));
                    }
                }
            }
        }
        // The pool's size in requests is what ran over the share of it they used.
        let kv_short = verdict_of(b) != Some(VerdictKind::KvCacheBound)
            && matches!(
                (e.running_max.or(e.running_mean), e.kv_usage_max),
                (Some(r), Some(u)) if u > 0.0 && r / u < offered
            );
        Lift {
            caps,
            kv_short,
            from: b.point.clone(),
        }
    }

    /// `point` with the limits lifted: each sized cap not above its value raised to it, and
    /// (when the pool is short and no KV knob moved yet) the first long KV move.
    /// With `all`, every long KV move at once (one per KV knob), not only the first.
    pub(super) fn apply(
        &self,
        space: &Space,
        st: &State,
        point: &Point,
        all: bool,
    ) -> Option<Point> {
        let mut p = point.clone();
        for &(k, want) in &self.caps {
            if *p.get(k)? < want {
                p[k] = want;
            }
        }
        if self.kv_short {
            super::sized::more_kv(space, st, &mut p, &self.from, all);
        }
        Some(p)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::super::next;
    use super::super::standing::base;
    use super::super::types::{Outcome, Point};
    use super::*;
    use crate::observe::diagnose::VerdictKind;

    #[test]
    fn a_move_measured_with_its_limits_lifted_is_not_launched_again_without_them() {
        let sp = stacked();
        let s = sp.start.clone();
        let kv = |r| evidence(VerdictKind::KvCacheBound, r, 64.0, 0.97);
        // The start, KV bound; its first KV move went out with the cap and the graphs behind
        // it (4, 3, 2) and measured further from eligible: the start stays the base.
        let mut seen = vec![
            slo(s.clone(), 600.0, 2.0, kv(12.0)),
            slo(vec![4, 3, 2], 500.0, 3.0, kv(30.0)),
        ];
        assert_eq!(base(&sp, &seen, 0.02), 0);
        let p = one(next(&sp, &seen, 10));
        // The same value of the pool without the lifts (4, 0, 0) would measure only what the
        // composed launch lifted: the move goes on to its next value, composed.
        assert_ne!(p.point, vec![4, 0, 0], "{}", p.why);
        assert!(p.point[0] != 4 && p.point[0] > 1, "{}", p.why);
        assert!(p.why.contains("and the limits behind it"), "{}", p.why);
        // A composed launch that died leaves its plain move to the cliff's rule, not to this:
        // nothing at or past the blamed pool value again.
        seen[1] = failed(vec![4, 3, 2], "oom");
        let p = one(next(&sp, &seen, 10));
        assert!(p.point[0] < 4, "{}", p.why);
    }

    /// A composed launch that failed (the server did not start, blamed on the graphs it
    /// lifted: a cliff there) leaves the plain move to measure: the lifted limits may be what
    /// failed.
    #[test]
    fn a_composed_launch_that_failed_leaves_the_plain_move_to_try() {
        let sp = stacked();
        let s = sp.start.clone();
        // The cap binds with room in the pool: the cap's move to the load, with the graphs
        // behind it (1, 3, 2), went out and the server did not start.
        let queue = evidence(VerdictKind::QueueWithSpareKv, 16.0, 64.0, 0.2);
        let seen = vec![
            slo(s.clone(), 600.0, 2.0, queue),
            failed(vec![1, 3, 2], "startup_error"),
        ];
        let p = one(next(&sp, &seen, 10));
        assert_eq!(p.point, vec![1, 3, 0], "{}", p.why);
        assert!(!p.why.contains("and the limits behind it"), "{}", p.why);
    }

    /// `composed` itself: the composed point measured is no new experiment (None), the same
    /// point failed leaves the plain move. (Through `next` a failure's cliff usually keeps the
    /// lift off the failed value; a cliff blamed from another base does not, so the rule holds
    /// on its own.)
    #[test]
    fn a_composed_point_answers_by_its_outcome_measured_or_failed() {
        let sp = stacked();
        let queue = evidence(VerdictKind::QueueWithSpareKv, 16.0, 64.0, 0.2);
        let base = slo(sp.start.clone(), 600.0, 2.0, queue);
        let lifted = vec![1, 3, 2];
        let ask = |seen: &[Observation]| {
            let mut st = State::read(&sp, seen);
            st.ceiling = vec![None; sp.knobs.len()];
            let plain = propose(&sp, &st, &base, 1, 3, "lift the scheduler cap").unwrap();
            composed(&sp, &st, &base, seen, plain).map(one)
        };
        let p = ask(std::slice::from_ref(&base)).unwrap();
        assert_eq!(p.point, lifted, "{}", p.why);
        let measured = slo(lifted.clone(), 650.0, 1.0, ev(VerdictKind::ComputeBound));
        assert!(ask(&[base.clone(), measured]).is_none());
        let failed_there = failed(lifted.clone(), "startup_error");
        let p = ask(&[base.clone(), failed_there]).unwrap();
        assert_eq!(p.point, vec![1, 3, 0], "{}", p.why);
    }

    /// A KV knob learned to leave the pool the same (two launches one value apart, one pool)
    /// is no "more KV" move: the next KV knob's is made.
    #[test]
    fn a_kv_knob_that_leaves_the_pool_the_same_is_passed_over_for_the_next() {
        let sp = Space {
            knobs: vec![
                Knob {
                    key: "mem_fraction_static".into(),
                    values: floats(&[0.80, 0.84, 0.88, 0.92]),
                },
                Knob {
                    key: "max_total_tokens".into(),
                    values: ints(&[4096, 8192, 16384, 32768]),
                },
            ],
            start: vec![0, 0],
            confirm: 0,
        };
        let at = |point: Point, score: f64| {
            let mut o = measured(point, score, VerdictKind::KvCacheBound);
            if let Outcome::Measured { evidence, .. } = &mut o.outcome {
                evidence.pool_tokens = Some(4096.0);
            }
            o
        };
        let seen = [at(vec![0, 0], 100.0), at(vec![1, 0], 100.0)];
        let p = one(next(&sp, &seen, 10));
        assert_eq!(p.point[0], 0, "{:?}: {}", p.point, p.why);
        assert!(p.point[1] > 0, "{:?}: {}", p.point, p.why);
        assert!(p.why.contains("more KV: max_total_tokens"), "{}", p.why);
    }

    #[test]
    fn kv_cache_bound_turns_the_memory_fraction_up_half_way_with_the_evidence_in_the_log() {
        let sp = space();
        let seen = [measured(sp.start.clone(), 100.0, VerdictKind::KvCacheBound)];
        let p = one(next(&sp, &seen, 5));
        // From index 1 of 8: six values above, half way is the third (0.88).
        assert_eq!(p.point, with(&sp.start, MFS, 4));
        assert_eq!(
            p.why,
            "mfs0.82_kv-auto_hicache0_mrr32_sc1_ps1: kv_cache_bound (usage 0.93, 18.8 queued, 5.8 running of 32) → more KV: mem_fraction_static 0.82 → 0.88"
        );
    }

    /// Issue 42: the diagnosis names every limit a launch shows; once the verdict's own moves
    /// are spent, the next limit's rules move, and the step log names both.
    #[test]
    fn a_limit_named_beside_the_verdict_moves_once_the_verdicts_moves_are_spent() {
        let mut sp = space();
        // The running cap at its largest, admission at its least conservative: the queue's
        // rules have nothing left.
        sp.start = vec![1, 0, 0, 4, 0, 0];
        let mut o = measured(sp.start.clone(), 100.0, VerdictKind::QueueWithSpareKv);
        if let Outcome::Measured { evidence, .. } = &mut o.outcome {
            evidence.also = vec![VerdictKind::KvCacheBound];
        }
        let p = one(next(&sp, &[o], 5));
        assert!(p.point[MFS] > 1, "{:?}: {}", p.point, p.why);
        assert!(
            p.why.contains(
                "queue_with_spare_kv + kv_cache_bound (usage 0.93, 18.8 queued, 5.8 running of 32) → more KV: mem_fraction_static 0.82 →"
            ),
            "{}",
            p.why
        );
        // Without the second limit named, no rule moves: the generic search does, and says so.
        let plain = measured(sp.start.clone(), 100.0, VerdictKind::QueueWithSpareKv);
        let q = one(next(&sp, &[plain], 5));
        assert!(!q.why.contains("more KV"), "{}", q.why);
    }

    #[test]
    fn an_evicted_prefix_cache_grows_the_pool_then_the_host_tier_in_long_moves() {
        let sp = space();
        // Every offered request runs (the batch is not short): the moves stay long.
        let evicted = |point: Point| {
            let mut o = measured(point, 100.0, VerdictKind::PrefixCacheEvicted);
            if let Outcome::Measured { evidence, .. } = &mut o.outcome {
                evidence.running_mean = Some(32.0);
                evidence.queue_mean = Some(0.0);
                evidence.kv_usage_max = Some(0.5);
            }
            o
        };
        let p = one(next(&sp, &[evicted(sp.start.clone())], 5));
        assert_eq!(p.point, with(&sp.start, MFS, 4), "{}", p.why);
        assert!(
            p.why
                .contains("→ a larger pool for prefixes: mem_fraction_static 0.82 → 0.88"),
            "{}",
            p.why
        );
        // The memory fraction at its top: the host tier, half way (0 → 32 GB).
        let mut sp = sp;
        let top = with(&sp.start, MFS, 7);
        sp.start = top.clone();
        let p = one(next(&sp, &[evicted(top.clone())], 5));
        assert_eq!(p.point, with(&top, HICACHE, 2), "{}", p.why);
        assert!(
            p.why
                .contains("→ a host tier for evicted prefixes: hicache_size 0 → 32"),
            "{}",
            p.why
        );
        // A KV-bound launch at the same point asks for the dtype, not the host tier.
        let p = one(next(
            &sp,
            &[measured(top.clone(), 100.0, VerdictKind::KvCacheBound)],
            5,
        ));
        assert_eq!(p.point, with(&top, DTYPE, 1), "{}", p.why);
    }

    #[test]
    fn a_queue_with_spare_kv_lifts_the_running_cap_and_churn_lowers_it_one_value() {
        let sp = space();
        let seen = [measured(
            sp.start.clone(),
            100.0,
            VerdictKind::QueueWithSpareKv,
        )];
        let p = one(next(&sp, &seen, 5));
        // From 32 (index 1 of 5): three values above, half way is 128; the pool, which holds
        // 6 of the 32 offered (5.8 running at 0.93 usage), grows with it (composed, issue 42).
        assert_eq!(p.point, with(&with(&sp.start, MRR, 3), MFS, 4));
        let s = with(&sp.start, MRR, 4);
        let sp = Space {
            start: s.clone(),
            ..sp
        };
        let seen = [measured(s.clone(), 100.0, VerdictKind::RetractionChurn)];
        let p = one(next(&sp, &seen, 5));
        assert_eq!(p.point, with(&s, MRR, 3));
        assert!(p.why.contains("admit fewer"), "{}", p.why);
    }

    #[test]
    fn a_small_shortfall_of_kv_asks_for_one_value_more_not_half_the_range() {
        let sp = Space {
            start: vec![1, 3, 3],
            ..stacked()
        };
        let near = vec![slo(
            vec![1, 3, 3],
            600.0,
            1.2,
            evidence(VerdictKind::KvCacheBound, 60.0, 64.0, 0.97),
        )];
        assert_eq!(one(next(&sp, &near, 10)).point, vec![2, 3, 3]);
        let far = vec![slo(
            vec![1, 3, 3],
            600.0,
            1.2,
            evidence(VerdictKind::KvCacheBound, 40.0, 64.0, 0.97),
        )];
        assert_eq!(one(next(&sp, &far, 10)).point, vec![4, 3, 3]);
    }

    #[test]
    fn a_long_move_walks_past_a_value_launched_already_and_a_short_one_does_not() {
        let sp = stacked();
        let kv = |r: f64| evidence(VerdictKind::KvCacheBound, r, 64.0, 0.97);
        // Half way (0.88) was launched and did worse: the long move's next value, 0.86.
        let seen = vec![
            slo(vec![1, 0, 0], 600.0, 3.0, kv(20.0)),
            slo(vec![4, 0, 0], 500.0, 4.0, kv(20.0)),
        ];
        assert_eq!(one(next(&sp, &seen, 10)).point, vec![3, 3, 2]);
        // A small shortfall: one value up, launched already: no more KV from the memory
        // fraction; the neighbours come next.
        let seen = vec![
            slo(vec![1, 0, 0], 600.0, 1.2, kv(60.0)),
            slo(vec![2, 0, 0], 500.0, 1.5, kv(60.0)),
        ];
        let p = one(next(&sp, &seen, 10));
        assert_eq!(p.point, vec![1, 1, 0], "{}", p.why);
    }

    #[test]
    fn a_sized_move_falls_back_to_the_long_order_when_its_value_is_taken() {
        let mut sp = Space {
            start: vec![1, 0, 3],
            ..stacked()
        };
        let q = |r: f64| evidence(VerdictKind::QueueWithSpareKv, r, 64.0, 0.4);
        let mut seen = vec![slo(vec![1, 0, 3], 600.0, 5.0, q(16.0))];
        // The cap to the offered 64; the pool (16 at 0.4: 40 requests) grows with it.
        assert_eq!(one(next(&sp, &seen, 10)).point, vec![4, 3, 3]);
        // That failed to start: the memory fraction is blamed (a composed move's failure is
        // memory's), the cap's sized value still goes, with less KV.
        seen.push(failed(vec![4, 3, 3], "startup_error"));
        let st = State::read(&sp, &seen);
        assert_eq!((st.ceiling[0], st.ceiling[1]), (Some(4), None));
        let p = one(next(&sp, &seen, 10)).point;
        assert!(p[0] < 4 && p[1] == 3, "{p:?}");
        // The plain cap of 64 failed to start: half way below the cliff (32 and 48 left: 32
        // first), the pool lifted with it.
        let mut seen = vec![slo(vec![1, 0, 3], 600.0, 5.0, q(16.0))];
        seen.push(failed(vec![1, 3, 3], "startup_error"));
        assert_eq!(one(next(&sp, &seen, 10)).point[1], 1);
        // An offered load above every value: the sized move has no value, the long order goes.
        let huge = vec![slo(
            vec![1, 0, 3],
            600.0,
            5.0,
            evidence(VerdictKind::QueueWithSpareKv, 16.0, 500.0, 0.4),
        )];
        assert_eq!(one(next(&sp, &huge, 10)).point[1], 3);
        // 40 offered: 48 covers it, where the long move would go to 64.
        let forty = vec![slo(
            vec![1, 0, 3],
            600.0,
            5.0,
            evidence(VerdictKind::QueueWithSpareKv, 16.0, 40.0, 0.4),
        )];
        assert_eq!(one(next(&sp, &forty, 10)).point, vec![1, 2, 3]);
        // Graphs: the smallest capture at least the batch that ran.
        sp.start = vec![1, 3, 0];
        let g = vec![measured_with(
            vec![1, 3, 0],
            2000.0,
            evidence(VerdictKind::CudaGraphLimited, 40.0, 40.0, 0.5),
        )];
        assert_eq!(one(next(&sp, &g, 10)).point, vec![1, 3, 2]);
    }
}
