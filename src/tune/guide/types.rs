//! The contract between the strategy and its callers: the space a tune searches, what each
//! launch gave (`Observation`), what the strategy asks for (`Proposal`, `Next`), and the few
//! readings of an observation the strategy's parts share.

use crate::observe::diagnose::VerdictKind;
use crate::plan::flags::ParamValue;
use crate::record::RunStatus;
use crate::server::failure::FailureKind;
use std::fmt;

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
    /// Launches of the budget kept to confirm the leader at the end (`tune.confirm`): repeats
    /// of the leader and of every launch within noise of it, on fresh servers.
    pub confirm: usize,
}

/// A configuration of the space: one value index per knob, in `Space::knobs` order.
pub type Point = Vec<usize>;

/// The one knob where `a` and `b` differ, if exactly one does.
pub fn single_change(a: &Point, b: &Point) -> Option<usize> {
    if a.len() != b.len() {
        return None;
    }
    let mut diff = a.iter().zip(b).enumerate().filter(|(_, (x, y))| x != y);
    let first = diff.next()?.0;
    if diff.next().is_some() {
        return None;
    }
    Some(first)
}

/// Whether `a` is beyond noise away from `b` (relative to `b`'s size).
pub fn differs(a: f64, b: f64, noise: f64) -> bool {
    (a - b).abs() > noise * b.abs().max(f64::MIN_POSITIVE)
}

/// The numbers the server's own evidence gave for one launch (from its rows' columns).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Evidence {
    pub verdict: Option<VerdictKind>,
    /// The other limits the launch showed (results.csv `verdict_also`): their rules' moves
    /// follow the verdict's once those are spent.
    pub also: Vec<VerdictKind>,
    /// The verdict's evidence sentence, as results.csv's `verdict_evidence` holds it.
    pub text: String,
    pub kv_usage_max: Option<f64>,
    pub running_mean: Option<f64>,
    pub running_max: Option<f64>,
    pub queue_mean: Option<f64>,
    /// The concurrency the client offered.
    pub offered: Option<f64>,
    pub retractions: Option<u64>,
    /// The server's decode steps by running batch (results.csv `decode_steps`, from every
    /// `Decode batch` line of the window): what the response model fits step time on.
    pub steps: Vec<StepSample>,
    /// The KV pool's size in tokens (`max_total_num_tokens`): what a knob does to capacity is
    /// learned from it, not assumed.
    pub pool_tokens: Option<f64>,
    /// The objective's SLO bounds with what this launch measured (the decision's medians).
    pub bounds: Vec<SloSeen>,
    /// The client's output tok/s over the server's own gen throughput (the diagnosis's
    /// `client/server tok/s`): near 1 when the client saw what the server made; far from it,
    /// the launch was disturbed (another job on the machine) or the client fell behind.
    pub client_server: Option<f64>,
    /// How much the load reuses prefixes: the larger of the server's prefix-cache hit rate
    /// (results.csv `cache_hit_rate`) and the share the workload allows
    /// (`prefix_reusable_share`), where known. Near 0: a host tier or a larger pool keeps
    /// nothing a request comes back to (`inert`).
    pub prefix_reuse: Option<f64>,
    /// Prefill's share of the tokens the server computed: the prompt tokens not cached over
    /// them and the output tokens (from the client's `total_tok_s`, `output_tok_s` and the
    /// hit rate). Small: the decode steps are the server's work (`inert`).
    pub prefill_share: Option<f64>,
    /// The mean prompt of a request in tokens (the client's prompt tok/s over its req/s).
    pub prompt_tokens: Option<f64>,
}

/// The decode steps the server logged with one running batch size (one bucket of
/// results.csv's `decode_steps`).
#[derive(Debug, Clone, PartialEq)]
pub struct StepSample {
    /// `#running-req` of the bucket's Decode lines (their mean when a bucket merges sizes).
    pub running: f64,
    /// The mean time of one decode step (ms): running ÷ gen throughput, since each running
    /// request gains one token a step.
    pub step_ms: f64,
    /// Whether CUDA graphs ran the bucket's steps; None where the log does not say (vLLM).
    pub graph: Option<bool>,
    /// How many Decode lines the bucket holds: the fit's weight.
    pub lines: u32,
}

/// One bound of the objective's SLO, and what a launch measured of it.
#[derive(Debug, Clone, PartialEq)]
pub struct SloSeen {
    /// The column bounded, as the spec names it (`tpot_ms_p99`, `ttft_ms_p99`, ...).
    pub column: String,
    /// An upper bound (`at most`); false: a lower bound.
    pub at_most: bool,
    pub limit: f64,
    /// The median over the launch's repeats; None when no repeat has a value.
    pub measured: Option<f64>,
}

/// What the launches of one point gave.
// One per configuration of a tune (tens at most): boxing the evidence would cost every match
// on it a deref for no memory worth saving.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// No measurement the strategy can use: the server never became ready, or died
    /// (results.csv `failure_kind`, e.g. `oom`, `startup_error`), the launch was cancelled, or
    /// its rows give no value of the objective.
    Failed { kind: Failure },
    Measured {
        /// The objective's value, oriented so that higher is better (the caller negates a
        /// minimised one); the mean over the launch's repeats.
        score: f64,
        /// Relative noise of `score` (coefficient of variation) when repeats measured it.
        cv: Option<f64>,
        /// The objective's SLO and the quality guard both allow it (an ineligible point is
        /// never the leader while an eligible one exists).
        eligible: bool,
        /// Why it is not eligible, in a few words (e.g. `quality: fail`), empty when it is.
        why_not: String,
        /// When it is ineligible for its SLO alone: how far from eligible, the worst ratio of
        /// a broken bound's measured value to its limit (≥ 1; `ttft_ms_p99` 13,000 against
        /// 5,000 is 2.6). None when eligible, or ineligible for anything else (the quality
        /// guard, a failed repeat): such a launch never leads.
        slo_excess: Option<f64>,
        evidence: Evidence,
        /// Keys of knobs that the effective-arguments check found not in effect.
        not_in_effect: Vec<String>,
    },
}

/// Why a point has no measurement the strategy can use ([`Outcome::Failed`]). Its text (Display)
/// is the word in the step log's and decision.md's `failed (...)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// A row's `failure_kind`: why the server failed (`oom`, `startup_error`, ...).
    Server(FailureKind),
    /// No row names a failure kind: the status of the point's first row (`failed`,
    /// `interrupted`, `pruned`).
    Status(RunStatus),
    /// No row names a failure kind, and the first row's status is not one sgtune writes (an
    /// edited file): no word (`failed ()`).
    Unknown,
    /// The spec has no objective: nothing measured is a score (`no_objective`).
    NoObjective,
    /// Rows measured, but the decision's rule gives the point no value of the objective: no
    /// measured row holds the objective's metric, or no load point was decided (`no_value`).
    NoValue,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Failure::Server(k) => k.as_str(),
            Failure::Status(s) => s.as_str(),
            Failure::Unknown => "",
            Failure::NoObjective => "no_objective",
            Failure::NoValue => "no_value",
        })
    }
}

/// One configuration of the tune so far, in the order they were first launched, with what
/// all its launches gave together.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    pub point: Point,
    pub outcome: Outcome,
    /// How many launches of the point the outcome pools: 1, one more for a re-measure, and
    /// one more per confirmation.
    pub launches: usize,
    /// Whether one of those launches was a re-measure (`remeasure`: a suspect or near-bound
    /// launch measured again during the exploration), not a confirmation.
    pub remeasured: bool,
}

impl Observation {
    /// One launch of `point`.
    pub fn once(point: Point, outcome: Outcome) -> Observation {
        Observation {
            point,
            outcome,
            launches: 1,
            remeasured: false,
        }
    }

    /// One more launch of the point, as `p` asked for it (a re-measure or a confirmation); the
    /// caller sets the pooled outcome.
    pub fn again(&mut self, p: &Proposal) {
        self.launches += 1;
        self.remeasured |= p.remeasure;
    }
}

/// One experiment the strategy asks for, and why (one line of the step log, e.g.
/// "mfs0.88: kv_cache_bound (usage 0.93, 18.8 queued) → more KV: hicache_size 0 → 48").
#[derive(Debug, Clone, PartialEq)]
pub struct Proposal {
    pub point: Point,
    pub why: String,
    /// Another launch of a point already measured, on a fresh server: a confirmation, or a
    /// re-measure (`remeasure`).
    pub confirm: bool,
    /// A re-measure: a launch whose evidence is suspect, or whose SLO figure lies within the
    /// noise of a bound, measured again once before the tune reasons from it. It spends a
    /// launch of the exploration's budget, not of the confirmation's reserve.
    pub remeasure: bool,
}

/// What to do next.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Launch these (independent of each other: slots may run them at once).
    Launch(Vec<Proposal>),
    /// Nothing is left worth a launch; why, for the step log and decision.md.
    Stop { why: String },
}

pub(super) fn launch(point: Point, why: String, confirm: bool) -> Next {
    Next::Launch(vec![Proposal {
        point,
        why,
        confirm,
        remeasure: false,
    }])
}

/// The verdict of a measured launch.
pub(super) fn verdict_of(o: &Observation) -> Option<VerdictKind> {
    evidence_of(o).and_then(|e| e.verdict)
}

pub(super) fn evidence_of(o: &Observation) -> Option<&Evidence> {
    match &o.outcome {
        Outcome::Measured { evidence, .. } => Some(evidence),
        Outcome::Failed { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The step log and decision.md print `failed (<this>)`: the words the tuner wrote when
    /// the kind was a string.
    #[test]
    fn a_failure_prints_the_word_the_step_log_always_had() {
        for k in FailureKind::ALL {
            assert_eq!(Failure::Server(k).to_string(), k.as_str());
        }
        assert_eq!(Failure::Server(FailureKind::Oom).to_string(), "oom");
        for s in RunStatus::ALL {
            assert_eq!(Failure::Status(s).to_string(), s.as_str());
        }
        assert_eq!(
            Failure::Status(RunStatus::Interrupted).to_string(),
            "interrupted"
        );
        assert_eq!(Failure::Unknown.to_string(), "");
        assert_eq!(Failure::NoObjective.to_string(), "no_objective");
        assert_eq!(Failure::NoValue.to_string(), "no_value");
    }
}
