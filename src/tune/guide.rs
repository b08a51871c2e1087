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
//! PLACEHOLDER (being replaced in this same session): `next` below only launches the start and
//! then stops; the evidence-guided strategy replaces its body, not its signature.

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
    if seen.iter().any(|o| o.point == space.start) {
        return Next::Stop {
            why: "placeholder strategy: only the start is launched".to_string(),
        };
    }
    Next::Launch(vec![Proposal {
        point: space.start.clone(),
        why: "the start".to_string(),
    }])
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
