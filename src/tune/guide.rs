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
