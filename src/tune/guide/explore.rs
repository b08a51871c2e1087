//! The exploration: from the base, the verdict's moves, then those of the launches within noise
//! of it, then the generic search of the base's neighbours, then the model's own edge; or why
//! nothing is left.

use super::moves::{propose, rule_moves};
use super::rules::{self, Dir};
use super::standing::{base, leader, near_ties};
use super::state::State;
use super::types::{Next, Observation, Space, evidence_of, launch, verdict_of};
use super::words::{name, said, stop_reason};
use super::{sized, step};
use crate::observe::diagnose::VerdictKind;

/// What the exploration says.
pub(super) enum Explored {
    Launch(Next),
    /// No move left, for this reason: the confirmation comes next.
    Spent(String),
}

/// The exploration: from the base (the leader, else the launch nearest to eligible, else the
/// start), the base's verdict's moves, then those of the launches within noise of it, then the
/// generic search.
pub(super) fn explore(space: &Space, seen: &[Observation], st: &State, compose: bool) -> Explored {
    let base_i = base(space, seen, st.noise);
    let base = &seen[base_i];
    let verdict = verdict_of(base);
    let head = format!("{}: {}", name(space, &base.point), said(&base.outcome));
    // The client is the limit: no server knob can show more. The confirmation still follows:
    // the limit falls on every configuration alike, and the decision between them still
    // wants repeats.
    // The SLO sized by the response model, both ways: a TPOT bound that only a smaller batch
    // meets, a TTFT bound that needs the queue drained, the throughput the bounds leave; or
    // no batch meets them all, and the exploration is over. A trade for a latency bound still
    // counts when the client limits throughput: the batch the client keeps is too large.
    // (The plain path is the batch's hedges: the rules' own moves, beside the model's.)
    let sized = if compose {
        sized::from_base(space, seen, st, base_i)
    } else {
        None
    };
    if let Some(sized::Sized::Launch(p, why, true)) = &sized {
        return Explored::Launch(launch(p.clone(), why.clone(), false));
    }
    // With nothing eligible, the client's limit is no finding about the SLO: the tune goes on
    // (the sized move, else the search), and only the model's numbers end it early.
    if verdict == Some(VerdictKind::ClientBound) && leader(space, seen).is_some() {
        return Explored::Spent(format!(
            "{head}: the client is the limit (the server had room it did not fill): raise the load's concurrency or rate, not the server's knobs"
        ));
    }
    match sized {
        Some(sized::Sized::Launch(p, why, _)) => return Explored::Launch(launch(p, why, false)),
        Some(sized::Sized::Empty(why)) => return Explored::Spent(why),
        None => {}
    }
    // The verdict's own moves, most wanted first: the base's, then those of the launches
    // within noise of it (ordered by standing), since the strategy cannot tell those from the
    // base and their evidence may name the next limit (a larger running cap that measured
    // within noise of the leader, but whose pool is now full, asks for more KV).
    // A queue the TPOT bound keeps (the running cap at the model's ceiling) is the SLO's price,
    // not a limit: the queue's moves (lift the cap, admit more, a larger chunked prefill) are
    // moot there.
    let priced =
        verdict == Some(VerdictKind::QueueWithSpareKv) && sized::cap_at_ceiling(space, st, base);
    if !priced {
        if let Some(n) = rule_moves(space, seen, st, base, compose) {
            return Explored::Launch(n);
        }
    }
    for tie in near_ties(seen, st.noise, base_i) {
        if let Some(n) = rule_moves(space, seen, st, &seen[tie], compose) {
            return Explored::Launch(n);
        }
    }
    // The generic search: the base's nearest allowed neighbour each way on each knob left;
    // a move against the verdict (less KV when the pool is full) only after every other.
    let what = match verdict {
        Some(VerdictKind::ComputeBound) => "compute bound, trade latency for throughput",
        Some(VerdictKind::ClientBound) => {
            "the client is the limit but nothing is eligible yet, the neighbours"
        }
        Some(v) if !rules::moves(v, None).is_empty() => "no rule's move left, the neighbours",
        _ => "no rule for this verdict, the neighbours",
    };
    let usage = evidence_of(base).and_then(|e| e.kv_usage_max);
    for against in [false, true] {
        for (k, knob) in space.knobs.iter().enumerate() {
            if st.dropped[k].is_some() || rules::generic_skips(verdict, &knob.key) {
                continue;
            }
            for dir in [Dir::Up, Dir::Down] {
                if sized::moot(space, seen, st, base_i, k, dir) {
                    continue;
                }
                if rules::against(verdict, usage, &knob.key, dir) != against {
                    continue;
                }
                let first = step::order(st, k, knob.values.len(), base.point[k], dir, false)
                    .first()
                    .copied()
                    .filter(|&to| !st.over_ceiling(space, k, to))
                    .filter(|&to| !st.enters_flat(k, base.point[k], to))
                    .filter(|&to| !st.measured_worse(k, base.point[k], to));
                let what = if against {
                    "the rules are spent, against the verdict"
                } else {
                    what
                };
                if let Some(n) = first.and_then(|to| propose(space, st, base, k, to, what)) {
                    return Explored::Launch(n);
                }
            }
        }
    }
    // Last, the response model's own edge: the running cap one value past what it allowed,
    // once, before the exploration ends with launches left (its ceiling is a fit through
    // noisy tails, not a measurement).
    for (k, dir) in sized::model_edges(space, seen, st, base_i) {
        let len = space.knobs[k].values.len();
        let first = step::order(st, k, len, base.point[k], dir, false)
            .first()
            .copied()
            .filter(|&to| !st.enters_flat(k, base.point[k], to));
        let Some(p) = first.and_then(|to| sized::edge_point(space, seen, st, base_i, k, to)) else {
            continue;
        };
        if st.seen.contains(&p) {
            continue;
        }
        let why = format!(
            "{head} → every other move is spent: the model's edge on the running cap, tested once: {}",
            sized::changes(space, &base.point, &p)
        );
        return Explored::Launch(launch(p, why, false));
    }
    Explored::Spent(stop_reason(space, st, &head))
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::super::next;
    use super::super::standing::leader;
    use super::super::state::{Dropped, State};
    use super::super::types::{Knob, Outcome};
    use super::*;

    #[test]
    fn an_oom_is_a_cliff_the_search_never_crosses() {
        let sp = space();
        let s = sp.start.clone();
        let seen = vec![
            measured(s.clone(), 100.0, VerdictKind::KvCacheBound),
            failed(with(&s, MFS, 4), "oom"),
        ];
        let p = one(next(&sp, &seen, 5));
        // Below the cliff: half way from 0.82 to 0.86 is 0.84, then 0.86.
        assert_eq!(p.point, with(&s, MFS, 2));
        let mut seen = seen;
        seen.push(measured(p.point, 110.0, VerdictKind::KvCacheBound));
        let p = one(next(&sp, &seen, 5));
        assert_eq!(p.point, with(&s, MFS, 3));
        seen.push(measured(p.point, 120.0, VerdictKind::KvCacheBound));
        // No memory fraction left under the cliff: the next KV knob, the dtype's next entry;
        // not the hierarchical cache, whose host tier holds prefixes, not the running batch.
        let p = one(next(&sp, &seen, 5));
        assert_eq!(p.point[MFS], 3);
        assert_eq!(p.point[HICACHE], 0);
        assert!(
            p.why.contains("kv_cache_dtype auto → fp8_e5m2"),
            "{}",
            p.why
        );
        // Nothing over the cliff, ever, from any base.
        for _ in 0..30 {
            match next(&sp, &seen, 30) {
                Next::Launch(v) => {
                    for p in v {
                        assert!(p.point[MFS] < 4, "{}", p.why);
                        seen.push(measured(p.point, 50.0, VerdictKind::KvCacheBound));
                    }
                }
                Next::Stop { .. } => break,
            }
        }
    }

    #[test]
    fn a_failure_going_down_is_a_floor() {
        let mut sp = space();
        let s = with(&sp.start, MRR, 3);
        sp.start = s.clone();
        let seen = vec![
            measured(s.clone(), 100.0, VerdictKind::RetractionChurn),
            failed(with(&s, MRR, 2), "startup_error"),
        ];
        let st = State::read(&sp, &seen);
        assert_eq!(st.floor[MRR], Some(2));
        assert_eq!(st.ceiling[MRR], None);
        assert!(!st.allowed(MRR, 1) && !st.allowed(MRR, 2) && st.allowed(MRR, 4));
        // The churn rule's "admit fewer" on the running cap is closed: the next one, the
        // conservativeness up.
        let p = one(next(&sp, &seen, 5));
        assert_eq!(p.point, with(&s, SC, 3));
    }

    #[test]
    fn a_quality_failed_dtype_is_never_tried_again() {
        let mut sp = space();
        let s = with(&with(&sp.start, MFS, 7), HICACHE, 4);
        sp.start = s.clone();
        let mut seen = vec![measured(s.clone(), 100.0, VerdictKind::KvCacheBound)];
        let p = one(next(&sp, &seen, 5));
        assert_eq!(p.point, with(&s, DTYPE, 1));
        seen.push(ineligible(p.point, 130.0, "quality: fail"));
        // The ineligible point does not lead, though it scored higher.
        assert_eq!(leader(&sp, &seen), Some(0));
        let p = one(next(&sp, &seen, 5));
        assert_eq!(p.point, with(&s, DTYPE, 2));
        for _ in 0..40 {
            match next(&sp, &seen, 40) {
                Next::Launch(v) => {
                    for p in v {
                        assert_ne!(p.point[DTYPE], 1, "{}", p.why);
                        seen.push(measured(p.point, 90.0, VerdictKind::KvCacheBound));
                    }
                }
                Next::Stop { .. } => break,
            }
        }
    }

    #[test]
    fn a_knob_not_in_effect_is_dropped() {
        let sp = space();
        let mut start = measured(sp.start.clone(), 100.0, VerdictKind::Unknown);
        if let Outcome::Measured { not_in_effect, .. } = &mut start.outcome {
            not_in_effect.push("page_size".into());
        }
        let mut seen = vec![start];
        assert_eq!(
            State::read(&sp, &seen).dropped[PAGE],
            Some(Dropped::NotInEffect)
        );
        let mut last = String::new();
        for _ in 0..60 {
            match next(&sp, &seen, 60) {
                Next::Launch(v) => {
                    for p in v {
                        assert_eq!(p.point[PAGE], 0, "{}", p.why);
                        seen.push(measured(p.point, 90.0, VerdictKind::Unknown));
                    }
                }
                Next::Stop { why } => {
                    last = why;
                    break;
                }
            }
        }
        assert!(last.contains("not in effect: page_size"), "{last}");
    }

    #[test]
    fn a_knob_without_response_leaves_the_generic_search() {
        let sp = space();
        let s = sp.start.clone();
        let seen = vec![
            measured(s.clone(), 100.0, VerdictKind::ComputeBound),
            // The running cap up: within noise (2 × 1% cv).
            measured(with(&s, MRR, 2), 101.0, VerdictKind::ComputeBound),
        ];
        let st = State::read(&sp, &seen);
        assert!((st.noise - 0.02).abs() < 1e-12);
        // Flat one way: the other way is still to try (a knob's best may be in its middle),
        // but not back into the interval measured flat.
        assert_eq!(st.dropped[MRR], None);
        assert_eq!(st.flat[MRR], vec![(1, 2)]);
        let p = one(next(&sp, &seen, 5));
        assert_eq!(p.point[MRR], 3, "{}", p.why);
        // Flat on the next value too: the leader (101) sits between two flat intervals, and
        // the next step turns another knob.
        let mut both = seen.clone();
        both.push(measured(with(&s, MRR, 3), 100.5, VerdictKind::ComputeBound));
        let st = State::read(&sp, &both);
        assert_eq!(st.flat[MRR], vec![(1, 2), (2, 3)]);
        let p = one(next(&sp, &both, 5));
        assert!(p.why.contains("schedule_conservativeness"), "{}", p.why);
        // Measured flat going up and going down: dropped.
        let mut down = both.clone();
        down.push(measured(with(&s, MRR, 0), 100.0, VerdictKind::ComputeBound));
        assert_eq!(
            State::read(&sp, &down).dropped[MRR],
            Some(Dropped::NoResponse)
        );
        // From below: the start (1) stepped up to 2, flat; down from the start is the other
        // way, and it is tried.
        let below = vec![
            measured(s.clone(), 101.0, VerdictKind::ComputeBound),
            measured(with(&s, MRR, 2), 100.0, VerdictKind::ComputeBound),
        ];
        let p = one(next(&sp, &below, 5));
        assert_eq!(p.point[MRR], 0, "{}", p.why);
        // A response beyond noise keeps a knob in, even after a flat one; the interval
        // measured flat stays flat (the response was on another), and the knob is not
        // one "without response".
        let mut seen = seen;
        seen.push(measured(with(&s, MRR, 0), 50.0, VerdictKind::ComputeBound));
        let st = State::read(&sp, &seen);
        assert_eq!(st.dropped[MRR], None);
        assert_eq!(st.flat[MRR], vec![(1, 2)]);
        assert!(st.responded[MRR] && !st.without_response(MRR));
        // ... and that change (from the leader, 101 at 2), measured worse, is not made again
        // from another base; the flat ones are not "worse".
        assert!(st.measured_worse(MRR, 2, 0));
        assert!(!st.measured_worse(MRR, 1, 2) && !st.measured_worse(MRR, 0, 2));
    }

    #[test]
    fn compute_bound_searches_only_the_knobs_that_are_not_kv_capacity() {
        let sp = space();
        let mut seen = vec![measured(sp.start.clone(), 100.0, VerdictKind::ComputeBound)];
        for _ in 0..20 {
            match next(&sp, &seen, 20) {
                Next::Launch(v) => {
                    for p in v {
                        assert_eq!(p.point[MFS], sp.start[MFS], "{}", p.why);
                        assert_eq!(p.point[HICACHE], sp.start[HICACHE], "{}", p.why);
                        assert_eq!(p.point[DTYPE], sp.start[DTYPE], "{}", p.why);
                        assert!(p.why.contains("compute bound"), "{}", p.why);
                        seen.push(measured(p.point, 60.0, VerdictKind::ComputeBound));
                    }
                }
                Next::Stop { why } => {
                    assert!(why.contains("no step from the leader"), "{why}");
                    break;
                }
            }
        }
        // mrr both ways, sc both ways, page both ways (page_size has one value below: none).
        assert_eq!(seen.len(), 1 + 2 + 2 + 1);
    }

    #[test]
    fn a_client_bound_leader_stops_the_tune() {
        let sp = space();
        let seen = [measured(sp.start.clone(), 100.0, VerdictKind::ClientBound)];
        let why = stop_why(next(&sp, &seen, 10));
        assert!(why.contains("the client is the limit"), "{why}");
        assert!(why.starts_with("mfs0.82_"), "{why}");
    }

    #[test]
    fn a_failed_start_steps_from_the_start_by_the_generic_search() {
        let sp = space();
        let seen = [failed(sp.start.clone(), "oom")];
        let p = one(next(&sp, &seen, 5));
        assert_eq!(p.point, with(&sp.start, MFS, 2));
        assert!(p.why.starts_with("mfs0.82"), "{}", p.why);
        assert!(p.why.contains("failed (oom)"), "{}", p.why);
        // A single-value space has nothing left after its start.
        let tiny = Space {
            knobs: vec![Knob {
                key: "page_size".into(),
                values: ints(&[1]),
            }],
            start: vec![0],
            confirm: 0,
        };
        let seen = [measured(vec![0], 1.0, VerdictKind::ComputeBound)];
        assert!(stop_why(next(&tiny, &seen, 5)).contains("no step"));
    }

    #[test]
    fn with_nothing_leading_the_search_steps_from_the_start() {
        let sp = space();
        let seen = [
            failed(sp.start.clone(), "oom"),
            failed(with(&sp.start, MFS, 2), "oom"),
        ];
        // Up from the start is a cliff now: down, from the start, not from the later failure.
        let p = one(next(&sp, &seen, 5));
        assert_eq!(p.point, with(&sp.start, MFS, 0));
        assert!(p.why.starts_with("mfs0.82_"), "{}", p.why);
    }

    #[test]
    fn the_generic_search_says_why_it_searches() {
        let sp = space();
        let seen = [measured(sp.start.clone(), 100.0, VerdictKind::Unknown)];
        let p = one(next(&sp, &seen, 5));
        assert!(
            p.why
                .contains("unknown (usage 0.93, 18.8 queued, 5.8 running of 32) → no rule for this verdict, the neighbours: mem_fraction_static 0.82 → 0.84"),
            "{}",
            p.why
        );
        // A verdict with rules whose moves are all spent: the same search, said so.
        let tiny = Space {
            knobs: vec![Knob {
                key: "page_size".into(),
                values: ints(&[1, 16]),
            }],
            start: vec![0],
            confirm: 0,
        };
        let seen = [measured(vec![0], 100.0, VerdictKind::KvCacheBound)];
        let p = one(next(&tiny, &seen, 5));
        assert!(
            p.why
                .contains("→ no rule's move left, the neighbours: page_size 1 → 16"),
            "{}",
            p.why
        );
    }

    #[test]
    fn a_long_move_that_made_progress_and_a_cliff_past_it_are_not_back_filled() {
        let sp = Space {
            start: vec![1, 1, 3],
            ..stacked()
        };
        let kv = |r: f64| evidence(VerdictKind::KvCacheBound, r, 64.0, 0.97);
        // The start, then half way up (progress), then the next long move died under load.
        let seen = vec![
            slo(vec![1, 1, 3], 600.0, 5.0, kv(20.0)),
            slo(vec![4, 1, 3], 800.0, 3.0, kv(30.0)),
            failed(vec![6, 1, 3], "oom"),
        ];
        let p = one(next(&sp, &seen, 10));
        // Between the progress and the cliff, never back toward the start; the cap of 32
        // behind the pool lifted with it.
        assert_eq!(p.point, vec![5, 3, 3], "{}", p.why);
        let mut seen = seen;
        seen.push(slo(p.point, 820.0, 2.9, kv(31.0)));
        // Whatever comes next, nothing goes back between the start and the progress.
        for _ in 0..12 {
            match next(&sp, &seen, 20) {
                Next::Launch(v) => {
                    for p in v {
                        assert!(!(2..=3).contains(&p.point[MFS]), "{}", p.why);
                        seen.push(slo(p.point, 500.0, 4.0, kv(20.0)));
                    }
                }
                Next::Stop { .. } => break,
            }
        }
    }

    #[test]
    fn a_move_against_the_verdict_comes_after_every_other_neighbour() {
        let sp = Space {
            start: vec![3, 1, 1],
            ..stacked()
        };
        let kv = evidence(VerdictKind::KvCacheBound, 20.0, 64.0, 0.97);
        // More KV died: the rules are spent.
        let mut seen = vec![
            slo(vec![3, 1, 1], 600.0, 5.0, kv.clone()),
            failed(vec![4, 1, 1], "oom"),
        ];
        let mut order = Vec::new();
        while let Next::Launch(v) = next(&sp, &seen, 20) {
            for p in v {
                order.push(p.why.clone());
                seen.push(slo(p.point, 500.0, 6.0, kv.clone()));
            }
        }
        assert_eq!(order.len(), 5, "{order:#?}");
        assert!(
            order[..4]
                .iter()
                .all(|w| w.contains("no rule's move left, the neighbours")),
            "{order:#?}"
        );
        assert!(
            order[4].ends_with(
                "→ the rules are spent, against the verdict: mem_fraction_static 0.86 → 0.84"
            ),
            "{order:#?}"
        );
    }
}
