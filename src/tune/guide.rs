//! The guided tune (issue 26): the next experiment chosen from the evidence of the launches so
//! far, as the engineer in the story did (the log said the KV cache was full, so the memory
//! knobs came first, then the hierarchical cache). Pure: a function from the space and what
//! was measured so far to the next launches, so `run/` executes it, `resume` replays it from
//! the rows to the same path, and `reproduce --decision` re-checks it.
//!
//! The types and the four functions below are the contract between the strategy and its callers
//! (`plan/` reads the `tune:` section into a `Space`, `run/` turns rows into `Observation`s and
//! each `Proposal` into a launch).
//!
//! The strategy (docs/methodology.md, "The guided tune"): the start first; then, from the
//! leader (or the start while nothing leads), the leader's verdict names the knobs to turn
//! (`rules`: KV capacity when the pool is full, the scheduler caps when a queue waits with KV
//! to spare, fewer admissions or more capacity against retractions, larger CUDA graphs); when
//! no rule's move is left, or the verdict asks for none (compute bound), a coordinate search
//! tries the leader's neighbours on the remaining knobs. A failed launch makes that direction
//! on its knob a cliff, an ineligible one bans the knob value, a knob not in effect or without
//! a response beyond the noise is dropped (`state`). Long moves first, then one value
//! (`step`). A client-bound leader stops the tune: the client, not the server, is the limit.

mod rules;
mod state;
mod step;

use rules::Dir;
use state::{Dropped, State};

use crate::observe::diagnose::VerdictKind;
use crate::plan::flags::ParamValue;

/// One knob: the tuner's own key (as in `configs:`, e.g. `mem_fraction_static`; the engine's
/// flag comes from `plan::flags`/`plan::engine`) and its values in increasing order (a range
/// already expanded at its resolution; a list in the order the user wrote it).
#[derive(Debug, Clone, PartialEq)]
pub struct Knob {
    pub key: String,
    pub values: Vec<ParamValue>,
}

/// The space a tune searches: its knobs and where it starts (the user's current flags).
#[derive(Debug, Clone, PartialEq)]
pub struct Space {
    pub knobs: Vec<Knob>,
    /// One index into each knob's `values`, in `knobs` order.
    pub start: Point,
}

/// A configuration of the space: one value index per knob, in `Space::knobs` order.
pub type Point = Vec<usize>;

/// The numbers the server's own evidence gave for one launch (from its rows' columns).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Evidence {
    pub verdict: Option<VerdictKind>,
    /// The verdict's evidence sentence, as results.csv's `verdict_evidence` holds it.
    pub text: String,
    pub kv_usage_max: Option<f64>,
    pub running_mean: Option<f64>,
    pub running_max: Option<f64>,
    pub queue_mean: Option<f64>,
    /// The concurrency the client offered.
    pub offered: Option<f64>,
    pub retractions: Option<u64>,
}

/// What one launch of a point gave.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// No measurement: the server never became ready, or died (results.csv `failure_kind`,
    /// e.g. `oom`, `startup_error`), or the launch was cancelled.
    Failed { kind: String },
    Measured {
        /// The objective's value, oriented so that higher is better (the caller negates a
        /// minimised one); the mean over the launch's repeats.
        score: f64,
        /// Relative noise of `score` (coefficient of variation) when repeats measured it.
        cv: Option<f64>,
        /// The objective's SLO and the quality guard both allow it (an ineligible point is
        /// never the leader, and the knob value that made it so is not tried again).
        eligible: bool,
        /// Why it is not eligible, in a few words (e.g. `quality: fail`), empty when it is.
        why_not: String,
        evidence: Evidence,
        /// Keys of knobs that the effective-arguments check found not in effect.
        not_in_effect: Vec<String>,
    },
}

/// One launch of the tune so far, in the order they ran.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    pub point: Point,
    pub outcome: Outcome,
}

/// One experiment the strategy asks for, and why (one line of the step log, e.g.
/// "mfs0.88: kv_cache_bound (usage 0.93, 18.8 queued) → more KV: hicache_size 0 → 48").
#[derive(Debug, Clone, PartialEq)]
pub struct Proposal {
    pub point: Point,
    pub why: String,
}

/// What to do next.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Launch these (independent of each other: slots may run them at once).
    Launch(Vec<Proposal>),
    /// Nothing is left worth a launch; why, for the step log and decision.md.
    Stop { why: String },
}

/// The next experiment(s) after `seen` (every launch of this tune so far, in order), with at
/// most `launches_left` launches of budget left. Deterministic: the same inputs give the same
/// answer, so `resume` replays a tune to the same path.
pub fn next(space: &Space, seen: &[Observation], launches_left: usize) -> Next {
    if launches_left == 0 {
        return Next::Stop {
            why: "the launch budget is spent".to_string(),
        };
    }
    if !seen.iter().any(|o| o.point == space.start) {
        if space.start.len() != space.knobs.len()
            || space
                .knobs
                .iter()
                .zip(&space.start)
                .any(|(k, &i)| i >= k.values.len())
        {
            return Next::Stop {
                why: "the start is not a point of the space".to_string(),
            };
        }
        return Next::Launch(vec![Proposal {
            point: space.start.clone(),
            why: "the start".to_string(),
        }]);
    }
    let st = State::read(space, seen);
    // Step from the leader; while nothing leads (the start failed or is ineligible), from the
    // start, whose evidence still says what limited it.
    let base_i = leader(space, seen)
        .or_else(|| seen.iter().position(|o| o.point == space.start))
        .unwrap_or(0);
    let base = &seen[base_i];
    let verdict = verdict_of(base);
    let head = format!("{}: {}", name(space, &base.point), said(&base.outcome));
    if verdict == Some(VerdictKind::ClientBound) {
        return Next::Stop {
            why: format!(
                "{head}: the client is the limit (the server had room it did not fill): raise the load's concurrency or rate, not the server's knobs"
            ),
        };
    }
    // The verdict's own moves, most wanted first: the leader's, then those of the launches
    // within noise of it (ordered by score), since the strategy cannot tell those from the
    // leader and their evidence may name the next limit (a larger running cap that measured
    // within noise of the leader, but whose pool is now full, asks for more KV).
    if let Some(n) = rule_moves(space, &st, base) {
        return n;
    }
    for tie in near_ties(seen, &st, base_i) {
        if let Some(n) = rule_moves(space, &st, &seen[tie]) {
            return n;
        }
    }
    // The generic search: the leader's nearest allowed neighbour each way on each knob left.
    let what = match verdict {
        Some(VerdictKind::ComputeBound) => "compute bound, trade latency for throughput",
        Some(v) if !rules::moves(v, None).is_empty() => "no rule's move left, the neighbours",
        _ => "no rule for this verdict, the neighbours",
    };
    for (k, knob) in space.knobs.iter().enumerate() {
        if st.dropped[k].is_some() || rules::generic_skips(verdict, &knob.key) {
            continue;
        }
        for dir in [Dir::Up, Dir::Down] {
            let first = step::order(&st, k, knob.values.len(), base.point[k], dir, false)
                .first()
                .copied();
            if let Some(n) = first.and_then(|to| propose(space, &st, base, k, to, what)) {
                return n;
            }
        }
    }
    Next::Stop {
        why: stop_reason(space, &st, &head),
    }
}

/// The verdict of a measured launch.
fn verdict_of(o: &Observation) -> Option<VerdictKind> {
    evidence_of(o).and_then(|e| e.verdict)
}

fn evidence_of(o: &Observation) -> Option<&Evidence> {
    match &o.outcome {
        Outcome::Measured { evidence, .. } => Some(evidence),
        Outcome::Failed { .. } => None,
    }
}

/// The eligible measured launches other than `lead` whose score is within noise of its score
/// and whose verdict differs from its verdict (one with the same verdict would ask for the
/// same moves again, each a launch, and spend the budget on the noise), best first (ties in
/// score by launch order).
fn near_ties(seen: &[Observation], st: &State, lead: usize) -> Vec<usize> {
    let score = |o: &Observation| match o.outcome {
        Outcome::Measured {
            score,
            eligible: true,
            ..
        } => Some(score),
        _ => None,
    };
    let Some(best) = seen.get(lead).and_then(score) else {
        return Vec::new();
    };
    let mut ties: Vec<(usize, f64)> = seen
        .iter()
        .enumerate()
        .filter(|&(i, o)| i != lead && verdict_of(o) != verdict_of(&seen[lead]))
        .filter_map(|(i, o)| score(o).map(|s| (i, s)))
        // Two launches each within `noise` of their truth differ by up to √2 × that.
        .filter(|&(_, s)| !state::differs(s, best, st.noise * std::f64::consts::SQRT_2))
        .collect();
    ties.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ties.into_iter().map(|(i, _)| i).collect()
}

/// The first unlaunched move that `base`'s verdict asks for, if any.
fn rule_moves(space: &Space, st: &State, base: &Observation) -> Option<Next> {
    let verdict = verdict_of(base)?;
    let usage = evidence_of(base).and_then(|e| e.kv_usage_max);
    for mv in rules::moves(verdict, usage) {
        let Some(k) = space.knobs.iter().position(|kn| kn.key == mv.key) else {
            continue;
        };
        if st.dropped[k] == Some(Dropped::NotInEffect) {
            continue;
        }
        let len = space.knobs[k].values.len();
        let order = step::order(st, k, len, *base.point.get(k)?, mv.dir, mv.long);
        // A short move is the next value or nothing: walking on past a launched neighbour
        // would turn "a little less" into "much less".
        let take = if mv.long { order.len() } else { 1 };
        for to in order.into_iter().take(take) {
            if let Some(n) = propose(space, st, base, k, to, mv.what) {
                return Some(n);
            }
        }
    }
    None
}

/// `base` with knob `k` at value `to`, unless that point was launched already.
fn propose(
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
    Some(Next::Launch(vec![Proposal { point: p, why }]))
}

/// What the evidence of a launch said, for the step log: the verdict and its numbers, e.g.
/// `kv_cache_bound (usage 0.93, 18.8 queued, 5.8 running of 32)`.
fn said(outcome: &Outcome) -> String {
    let (evidence, eligible, why_not) = match outcome {
        Outcome::Failed { kind } => return format!("failed ({kind})"),
        Outcome::Measured {
            evidence,
            eligible,
            why_not,
            ..
        } => (evidence, *eligible, why_not),
    };
    let mut nums = Vec::new();
    if let Some(u) = evidence.kv_usage_max {
        nums.push(format!("usage {u:.2}"));
    }
    if let Some(q) = evidence.queue_mean {
        nums.push(format!("{q:.1} queued"));
    }
    match (evidence.running_mean, evidence.offered) {
        (Some(r), Some(o)) => nums.push(format!("{r:.1} running of {o}")),
        (Some(r), None) => nums.push(format!("{r:.1} running")),
        _ => {}
    }
    if let Some(n) = evidence.retractions.filter(|&n| n > 0) {
        nums.push(format!("{n} retractions"));
    }
    if !eligible {
        nums.push(format!("ineligible: {why_not}"));
    }
    let verdict = evidence.verdict.map_or("no verdict", VerdictKind::as_str);
    if nums.is_empty() {
        verdict.to_string()
    } else {
        format!("{verdict} ({})", nums.join(", "))
    }
}

/// Why the tune stops when no move is left: what closed each knob.
fn stop_reason(space: &Space, st: &State, head: &str) -> String {
    let keys = |d: Dropped| -> Vec<&str> {
        space
            .knobs
            .iter()
            .zip(&st.dropped)
            .filter(|(_, x)| **x == Some(d))
            .map(|(k, _)| k.key.as_str())
            .collect()
    };
    let mut why = format!(
        "{head}: no step from the leader is left to beat it beyond the noise (±{:.0}%): every rule's move and every neighbour is launched, banned or over a cliff",
        st.noise * 100.0
    );
    let flat = keys(Dropped::NoResponse);
    if !flat.is_empty() {
        why.push_str(&format!("; no response within noise: {}", flat.join(", ")));
    }
    let off = keys(Dropped::NotInEffect);
    if !off.is_empty() {
        why.push_str(&format!("; not in effect: {}", off.join(", ")));
    }
    why
}

/// The index in `seen` of the best eligible measured launch, if any.
pub fn leader(_space: &Space, seen: &[Observation]) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for (i, o) in seen.iter().enumerate() {
        if let Outcome::Measured {
            score,
            eligible: true,
            ..
        } = o.outcome
        {
            if best.is_none_or(|(_, b)| score > b) {
                best = Some((i, score));
            }
        }
    }
    best.map(|(i, _)| i)
}

/// A point's configuration name, in the grid's convention (`plan::flags::abbreviation` and
/// value labels, `_`-joined, e.g. `mfs0.88_hicache48`), so a tune's rows read like a sweep's.
pub fn name(space: &Space, point: &Point) -> String {
    space
        .knobs
        .iter()
        .zip(point)
        .filter_map(|(k, &i)| {
            k.values.get(i).map(|v| {
                format!(
                    "{}{}",
                    crate::plan::flags::abbreviation(&k.key),
                    crate::plan::flags::value_label(v)
                )
            })
        })
        .collect::<Vec<_>>()
        .join("_")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn floats(v: &[f64]) -> Vec<ParamValue> {
        v.iter().map(|&x| ParamValue::Float(x)).collect()
    }
    fn ints(v: &[i64]) -> Vec<ParamValue> {
        v.iter().map(|&x| ParamValue::Int(x)).collect()
    }

    const MFS: usize = 0;
    const DTYPE: usize = 1;
    const HICACHE: usize = 2;
    const MRR: usize = 3;
    const SC: usize = 4;
    const PAGE: usize = 5;

    fn space() -> Space {
        let k = |key: &str, values| Knob {
            key: key.into(),
            values,
        };
        Space {
            knobs: vec![
                k(
                    "mem_fraction_static",
                    floats(&[0.80, 0.82, 0.84, 0.86, 0.88, 0.90, 0.92, 0.94]),
                ),
                k(
                    "kv_cache_dtype",
                    ["auto", "fp8_e5m2", "fp8_e4m3"]
                        .iter()
                        .map(|s| ParamValue::Str(s.to_string()))
                        .collect(),
                ),
                k("hicache_size", ints(&[0, 16, 32, 48, 64])),
                k("max_running_requests", ints(&[16, 32, 64, 128, 256])),
                k("schedule_conservativeness", floats(&[0.3, 0.6, 1.0, 1.5])),
                k("page_size", ints(&[1, 16, 64])),
            ],
            start: vec![1, 0, 0, 1, 2, 0],
        }
    }

    fn ev(verdict: VerdictKind) -> Evidence {
        Evidence {
            verdict: Some(verdict),
            kv_usage_max: Some(0.93),
            running_mean: Some(5.8),
            queue_mean: Some(18.8),
            offered: Some(32.0),
            ..Default::default()
        }
    }

    fn measured(point: Point, score: f64, verdict: VerdictKind) -> Observation {
        Observation {
            point,
            outcome: Outcome::Measured {
                score,
                cv: Some(0.01),
                eligible: true,
                why_not: String::new(),
                evidence: ev(verdict),
                not_in_effect: vec![],
            },
        }
    }

    fn ineligible(point: Point, score: f64, why_not: &str) -> Observation {
        let mut o = measured(point, score, VerdictKind::KvCacheBound);
        if let Outcome::Measured {
            eligible,
            why_not: w,
            ..
        } = &mut o.outcome
        {
            *eligible = false;
            *w = why_not.into();
        }
        o
    }

    fn failed(point: Point, kind: &str) -> Observation {
        Observation {
            point,
            outcome: Outcome::Failed { kind: kind.into() },
        }
    }

    fn with(base: &Point, k: usize, v: usize) -> Point {
        let mut p = base.clone();
        p[k] = v;
        p
    }

    fn one(n: Next) -> Proposal {
        match n {
            Next::Launch(mut v) => {
                assert_eq!(v.len(), 1);
                v.remove(0)
            }
            Next::Stop { why } => panic!("stopped: {why}"),
        }
    }

    fn stop_why(n: Next) -> String {
        match n {
            Next::Stop { why } => why,
            Next::Launch(v) => panic!("launched {v:?}"),
        }
    }

    #[test]
    fn the_start_comes_first_and_a_spent_budget_stops() {
        let sp = space();
        let p = one(next(&sp, &[], 5));
        assert_eq!((p.point, p.why.as_str()), (sp.start.clone(), "the start"));
        assert!(stop_why(next(&sp, &[], 0)).contains("budget"));
        let seen = [measured(sp.start.clone(), 1.0, VerdictKind::KvCacheBound)];
        assert!(stop_why(next(&sp, &seen, 0)).contains("budget"));
    }

    #[test]
    fn a_start_outside_the_space_stops() {
        let mut sp = space();
        sp.start[MFS] = 99;
        assert!(stop_why(next(&sp, &[], 5)).contains("not a point"));
        sp.start = vec![0];
        assert!(stop_why(next(&sp, &[], 5)).contains("not a point"));
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
        // No memory fraction left under the cliff: the next KV knob, the hierarchical cache.
        let p = one(next(&sp, &seen, 5));
        assert_eq!(p.point[MFS], 3);
        assert_ne!(p.point[HICACHE], 0);
        assert!(p.why.contains("hicache_size 0 → "), "{}", p.why);
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
        assert_eq!(st.dropped[MRR], Some(Dropped::NoResponse));
        // The leader (101) keeps its running cap: the next step turns another knob.
        let p = one(next(&sp, &seen, 5));
        assert_eq!(p.point[MRR], 2, "{}", p.why);
        assert!(p.why.contains("schedule_conservativeness"), "{}", p.why);
        // A response beyond noise keeps a knob in, even after a flat one.
        let mut seen = seen;
        seen.push(measured(with(&s, MRR, 0), 50.0, VerdictKind::ComputeBound));
        assert_eq!(State::read(&sp, &seen).dropped[MRR], None);
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
    fn a_queue_with_spare_kv_lifts_the_running_cap_and_churn_lowers_it_one_value() {
        let sp = space();
        let seen = [measured(
            sp.start.clone(),
            100.0,
            VerdictKind::QueueWithSpareKv,
        )];
        let p = one(next(&sp, &seen, 5));
        // From 32 (index 1 of 5): three values above, half way is 128.
        assert_eq!(p.point, with(&sp.start, MRR, 3));
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
    fn a_launch_within_noise_with_another_verdict_is_followed_too() {
        let mut sp = space();
        let s = with(&with(&sp.start, MFS, 7), MRR, 3);
        sp.start = s.clone();
        // The leader's queue waits on the running cap; lifting it measured within noise, and
        // there the pool is full: its "more KV" is the next move, not a neighbour search.
        let mut seen = vec![
            measured(s.clone(), 100.0, VerdictKind::QueueWithSpareKv),
            measured(with(&s, MRR, 4), 99.0, VerdictKind::KvCacheBound),
        ];
        if let Outcome::Measured { evidence, .. } = &mut seen[0].outcome {
            evidence.kv_usage_max = Some(0.95);
        }
        // The leader's own moves: chunked prefill is not in this space, conservativeness is
        // skipped with a full pool, so the tie's moves come next.
        let p = one(next(&sp, &seen, 5));
        assert_eq!(p.point, with(&with(&s, MRR, 4), HICACHE, 2), "{}", p.why);
        assert!(
            p.why.starts_with("mfs0.94_kv-auto_hicache0_mrr256"),
            "{}",
            p.why
        );
    }

    #[test]
    fn a_tune_never_repeats_a_point_and_replays_the_same_path() {
        let sp = space();
        // A fixed landscape: score by the point's digits, verdict by its running cap.
        let outcome = |p: &Point| -> Outcome {
            if p[MFS] > 5 {
                return Outcome::Failed { kind: "oom".into() };
            }
            let verdict = match p[MRR] {
                0 | 1 => VerdictKind::QueueWithSpareKv,
                2 => VerdictKind::KvCacheBound,
                3 => VerdictKind::RetractionChurn,
                _ => VerdictKind::ComputeBound,
            };
            let score = 100.0 + (p[MFS] * 7 + p[HICACHE] * 5 + p[MRR] * 11 + p[SC]) as f64;
            Outcome::Measured {
                score,
                cv: None,
                eligible: p[DTYPE] == 0,
                why_not: if p[DTYPE] == 0 { "" } else { "quality: fail" }.into(),
                evidence: ev(verdict),
                not_in_effect: vec![],
            }
        };
        let run = || {
            let mut seen: Vec<Observation> = Vec::new();
            let mut log = Vec::new();
            loop {
                match next(&sp, &seen, 200 - seen.len()) {
                    Next::Launch(v) => {
                        for p in v {
                            assert!(!seen.iter().any(|o| o.point == p.point), "{}", p.why);
                            log.push(p.why.clone());
                            let o = outcome(&p.point);
                            seen.push(Observation {
                                point: p.point,
                                outcome: o,
                            });
                        }
                    }
                    Next::Stop { why } => {
                        log.push(why);
                        break;
                    }
                }
            }
            (seen.len(), log)
        };
        let (n, log) = run();
        assert!(n > 5 && n < 200, "{n} launches");
        assert_eq!(run(), (n, log));
    }

    #[test]
    fn the_default_noise_is_five_percent_and_a_pooled_cv_doubles() {
        let sp = space();
        let mut o = measured(sp.start.clone(), 100.0, VerdictKind::Unknown);
        if let Outcome::Measured { cv, .. } = &mut o.outcome {
            *cv = None;
        }
        assert!((State::read(&sp, &[o.clone()]).noise - state::DEFAULT_NOISE).abs() < 1e-12);
        let mut a = measured(with(&sp.start, MRR, 0), 100.0, VerdictKind::Unknown);
        if let Outcome::Measured { cv, .. } = &mut a.outcome {
            *cv = Some(0.03);
        }
        let mut b = a.clone();
        b.point = with(&sp.start, MRR, 2);
        if let Outcome::Measured { cv, .. } = &mut b.outcome {
            *cv = Some(0.04);
        }
        // sqrt((0.03² + 0.04²) / 2) × 2.
        let want = 2.0 * ((0.0009 + 0.0016) / 2.0f64).sqrt();
        assert!((State::read(&sp, &[o, a, b]).noise - want).abs() < 1e-12);
    }

    #[test]
    fn the_log_line_says_a_failure_and_an_ineligible_launch() {
        assert_eq!(
            said(&Outcome::Failed { kind: "oom".into() }),
            "failed (oom)"
        );
        let sp = space();
        let mut o = ineligible(sp.start.clone(), 1.0, "quality: fail");
        if let Outcome::Measured { evidence, .. } = &mut o.outcome {
            evidence.retractions = Some(7);
            evidence.offered = None;
        }
        assert_eq!(
            said(&o.outcome),
            "kv_cache_bound (usage 0.93, 18.8 queued, 5.8 running, 7 retractions, ineligible: quality: fail)"
        );
        let bare = Outcome::Measured {
            score: 1.0,
            cv: None,
            eligible: true,
            why_not: String::new(),
            evidence: Evidence::default(),
            not_in_effect: vec![],
        };
        assert_eq!(said(&bare), "no verdict");
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
    fn only_launches_within_noise_of_the_leader_with_another_verdict_are_followed() {
        let mut sp = space();
        let s = with(&with(&sp.start, MFS, 7), MRR, 4);
        sp.start = s.clone();
        let full = |mut o: Observation, usage: f64| {
            if let Outcome::Measured { evidence, .. } = &mut o.outcome {
                evidence.kv_usage_max = Some(usage);
            }
            o
        };
        // The leader's moves are spent (the cap at its top, the pool full); the generic search
        // from the leader starts with the memory fraction down (it is at its top).
        let from_leader = with(&s, MFS, 6);
        let lead = full(
            measured(s.clone(), 100.0, VerdictKind::QueueWithSpareKv),
            0.95,
        );
        // Within √2 × 2% (cv 1%), but beyond 2%: a tie, followed.
        let tie = measured(with(&s, HICACHE, 1), 97.5, VerdictKind::KvCacheBound);
        let p = one(next(&sp, &[lead.clone(), tie], 5));
        assert_eq!(p.point, with(&s, HICACHE, 3), "{}", p.why);
        // Far below: not a tie.
        let far = measured(with(&s, HICACHE, 1), 50.0, VerdictKind::KvCacheBound);
        let p = one(next(&sp, &[lead.clone(), far], 5));
        assert_eq!(p.point, from_leader, "{}", p.why);
        // Within noise but with the leader's own verdict: its moves would be the same again.
        let same = full(
            measured(with(&s, HICACHE, 1), 99.5, VerdictKind::QueueWithSpareKv),
            0.5,
        );
        let p = one(next(&sp, &[lead, same], 5));
        assert_eq!(p.point, from_leader, "{}", p.why);
    }

    #[test]
    fn no_retractions_are_not_in_the_log_line() {
        let sp = space();
        let mut o = measured(sp.start.clone(), 1.0, VerdictKind::ComputeBound);
        if let Outcome::Measured { evidence, .. } = &mut o.outcome {
            evidence.retractions = Some(0);
        }
        assert_eq!(
            said(&o.outcome),
            "compute_bound (usage 0.93, 18.8 queued, 5.8 running of 32)"
        );
    }

    #[test]
    fn the_stop_line_names_the_knobs_without_response_and_only_those() {
        let tiny = Space {
            knobs: vec![Knob {
                key: "page_size".into(),
                values: ints(&[1, 16]),
            }],
            start: vec![0],
        };
        let flat = [
            measured(vec![0], 100.0, VerdictKind::Unknown),
            measured(vec![1], 100.5, VerdictKind::Unknown),
        ];
        let why = stop_why(next(&tiny, &flat, 5));
        assert!(
            why.ends_with("; no response within noise: page_size"),
            "{why}"
        );
        let moved = [
            measured(vec![0], 100.0, VerdictKind::Unknown),
            measured(vec![1], 50.0, VerdictKind::Unknown),
        ];
        let why = stop_why(next(&tiny, &moved, 5));
        assert!(why.ends_with("banned or over a cliff"), "{why}");
    }

    #[test]
    fn of_equal_scores_the_first_leads() {
        let sp = space();
        let seen = [
            measured(sp.start.clone(), 100.0, VerdictKind::Unknown),
            measured(with(&sp.start, MRR, 2), 100.0, VerdictKind::Unknown),
            failed(with(&sp.start, MRR, 3), "oom"),
        ];
        assert_eq!(leader(&sp, &seen), Some(0));
        assert_eq!(leader(&sp, &seen[2..]), None);
    }
}
