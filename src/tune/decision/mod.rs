//! The decision: from a finished sweep's rows and the spec's objective, which configuration
//! wins at each load point, by how much and how surely; why every other one lost; the winner's
//! exact launch command; what the sweep cost. Pure functions over results.csv rows, so a
//! fresh sweep, a resumed one and a reproduction decide the same way; `run::tuning` writes the
//! result as decision.json and, through `report::decision`, decision.md.
//!
//! The rule (also written into every decision, see [`words::rule`]): at each load point a
//! configuration is eligible when none of its repeats failed and the median of its repeats
//! meets every SLO bound. The eligible configuration with the best mean leads. The sweep's
//! noise is measured from its own repeats, pooled over every configuration × load point that
//! has two or more ([`sweep_noise`]); from it, the leader's margin over each other eligible
//! configuration gets a 95% interval, and the leader wins only when every such interval lies
//! entirely on its side of zero. A sweep that measured no noise (a single repeat, nothing
//! measured alike) names a leader, never a winner: the margins are only held against the
//! objective's noise threshold to say which configurations are within it.

//!
//! The rule and its words are apart: [`rule`] finds, typed, who wins with which evidence and
//! builds no sentence; [`words`] writes those findings as the sentences of decision.json and
//! decision.md and decides nothing. This module holds the types both share and puts each
//! point together from the two, whole, in one pass.

mod rule;
mod words;

use crate::plan::spec::{Bound, Objective};
use crate::record::provenance::Manifest;
use crate::record::rows::{Col, Row};
use crate::tune::effective::EffectiveFacts;
pub use crate::tune::stats::{Estimate, Interval, Margin, PooledNoise};
pub use rule::sweep_noise;
use serde::Serialize;
use std::collections::BTreeMap;
pub use words::{hours, level_text, margin_text, noise_text, num};

/// One SLO bound, judged on the median of the repeats.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct SloCheck {
    /// The column bounded (written as its name).
    pub column: Col,
    pub bound: Bound,
    pub limit: f64,
    /// None: no repeat has a value for the column (the bound cannot be shown to hold).
    pub median: Option<f64>,
    pub holds: bool,
}

/// Where a configuration stands at a load point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Standing {
    /// Eligible, best mean, separated from every other eligible configuration.
    Winner,
    /// Eligible, best mean, but no winner is claimed: within noise of another, or the sweep
    /// measured no noise.
    Leader,
    /// Eligible, within noise of the leader.
    WithinNoise,
    /// Eligible, behind the leader beyond noise.
    Behind,
    /// Its median breaks an SLO bound, or a bound's column has no value.
    SloNotMet,
    /// At least one repeat failed.
    Failed,
    /// Its outputs fail the quality guard against the baseline, or could not be checked
    /// (`quality:`; `tune::quality`, the rows' `quality_verdict`).
    QualityFailed,
    /// No finished repeat with a value of the objective.
    NoValue,
}

#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct ConfigResult {
    pub run_name: String,
    pub standing: Standing,
    /// 1-based rank among the eligible configurations (by mean); None when not eligible.
    pub rank: Option<usize>,
    pub estimate: Option<Estimate>,
    /// Rows at this load point, and how many of them failed.
    pub repeats: usize,
    pub failed: usize,
    /// The failure kinds of the failed repeats, distinct, in order.
    pub failure_kinds: Vec<String>,
    pub slo: Vec<SloCheck>,
    /// The leader's margin over this configuration (eligible, not the leader).
    pub margin: Option<Margin>,
    /// results.csv `verdict` of most repeats, and that repeat's `verdict_evidence`.
    pub verdict: String,
    pub verdict_evidence: String,
    /// In words: why it won, or why it lost.
    pub why: String,
    /// With a max-load search: the highest load whose probe passed (as results.csv writes the
    /// load: a concurrency, or `<rate>/s`), or None when not even the lowest did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_load_at_slo: Option<String>,
    /// With a max-load search: the median `goodput_req_s` (else `request_throughput`) of the
    /// repeats at that load.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goodput_at_max_load: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Winner,
    TieWithinNoise,
    /// The leader is ahead of every other eligible configuration by more than the noise
    /// threshold, but the sweep measured no noise: named the leader, not claimed as a winner.
    Unconfirmed,
    NoEligibleConfiguration,
}

/// The decision at one load point.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct PointDecision {
    /// As results.csv writes it: the concurrency, or `<rate>/s`.
    pub load_point: String,
    /// In words: "concurrency 8", "request rate 2/s (at most 8 in flight)".
    pub label: String,
    pub outcome: Outcome,
    /// Set only when the outcome is a winner.
    pub winner: Option<String>,
    /// The eligible configuration with the best mean (the winner, when one is claimed).
    pub leader: Option<String>,
    /// The eligible configuration with the second-best mean.
    pub runner_up: Option<String>,
    /// The leader's margin over the runner-up.
    pub margin: Option<Margin>,
    /// Eligible configurations not separated from the leader (a tie).
    pub tied_with: Vec<String>,
    /// The noise the margins were judged with: pooled over the sweep's repeats (None: the
    /// sweep measured none, and the noise threshold only sorts within noise from behind).
    pub noise: Option<PooledNoise>,
    /// The leader's exact launch command (the winner's when one is claimed).
    pub command: Option<String>,
    pub configurations: Vec<ConfigResult>,
    /// One sentence for the summary.
    pub sentence: String,
}

/// What the sweep cost, from manifest.json's launches.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Cost {
    pub launches: usize,
    /// Σ (finished_at − started_at) over the launches: launch to stop, in hours.
    pub server_hours: f64,
    /// Launches whose times could not be read (left out of the hours).
    pub launches_without_times: usize,
}

/// The memory pre-flight's result, from its rows (phase `preflight`).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct PreflightSummary {
    pub knob: String,
    /// The highest value that launched and survived the burst.
    pub found: Option<f64>,
    /// The margin: the lowest failed value above it, and how it failed.
    pub next_up: Option<f64>,
    pub next_up_failure: Option<String>,
    pub attempts: usize,
}

/// Summarize the pre-flight attempts among `rows` (None when there are none).
pub fn preflight_summary(rows: &[Row], knob: &str) -> Option<PreflightSummary> {
    rule::preflight(rows, knob).map(|p| words::preflight(knob, &p))
}

#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Decision {
    pub sweep: String,
    /// The memory pre-flight, when the sweep had one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preflight: Option<PreflightSummary>,
    /// Read back in the form it is written in (`Objective`'s own `Deserialize` reads the
    /// spec's YAML shape, `maximize: column`).
    #[serde(deserialize_with = "crate::record::plan_file::objective_as_written")]
    pub objective: Objective,
    /// The decision rule, in words.
    pub rule: String,
    pub points: Vec<PointDecision>,
    pub cost: Cost,
    /// The output-quality guard, when the spec has `quality:` (set by the caller, like
    /// `preflight`; the rows already carry each configuration's verdict).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quality: Option<crate::tune::quality::QualityReport>,
    /// One paragraph: every load point's outcome and the cost.
    pub summary: String,
}

/// Decide every load point of a sweep. `commands`: each configuration's launch command;
/// `cost`: from the manifest ([`cost`]). Says nothing about effective arguments: a sweep's
/// own decision is [`decide_with`].
pub fn decide(
    sweep: &str,
    objective: &Objective,
    rows: &[Row],
    commands: &BTreeMap<String, String>,
    cost: Cost,
) -> Decision {
    decide_with(
        sweep,
        objective,
        rows,
        commands,
        cost,
        &EffectiveFacts::default(),
    )
}

/// [`decide`], saying what the effective arguments say (`facts`): each configuration's
/// settings not in effect and the configurations it ran the same server as (in its `why`),
/// and, where two of a load point's configurations ran the same server, that their margin is
/// not an effect of the swept settings (in the point's sentence and the summary). Each point
/// is built whole, the rule's findings and their words together, so nothing is rewritten
/// after it.
pub fn decide_with(
    sweep: &str,
    objective: &Objective,
    rows: &[Row],
    commands: &BTreeMap<String, String>,
    cost: Cost,
    facts: &EffectiveFacts,
) -> Decision {
    // Load points in first-appearance order; configurations likewise within each. Probes of
    // a max-load search are decided together, each configuration at its own highest load
    // within the SLO; pre-flight attempts are not candidates.
    let all: Vec<&Row> = rows.iter().collect();
    let noise = sweep_noise(objective, &all);
    let load_points = rule::load_points(rows);
    let mut same_server: Vec<String> = Vec::new();
    let points: Vec<PointDecision> = rule::points(objective, rows, &load_points, commands, noise)
        .iter()
        .map(|p| {
            let (p, notes) = words::point(objective, p, rows, facts);
            for n in notes {
                if !same_server.contains(&n) {
                    same_server.push(n);
                }
            }
            p
        })
        .collect();
    let summary = words::summary(objective, &points, &cost, &same_server);
    Decision {
        sweep: sweep.to_string(),
        preflight: None,
        quality: None,
        objective: objective.clone(),
        rule: words::rule(objective),
        points,
        cost,
        summary,
    }
}

/// Decide between the configurations of `rows` as if they were one load point, whatever load
/// each row was measured at (a re-check measures each configuration at its own load), with
/// the noise pooled over these rows. Its label is `label`; its sentence names the rows' load.
pub fn decide_rows(
    o: &Objective,
    label: &str,
    rows: &[&Row],
    commands: &BTreeMap<String, String>,
) -> PointDecision {
    let noise = sweep_noise(o, rows);
    let p = rule::point(o, label, rule::Named::Given(label), rows, commands, noise);
    words::point(o, &p, &[], &EffectiveFacts::default()).0
}

/// Each configuration's launch command as manifest.json recorded it (its first launch folder
/// by name: `<run>` or `<run>.r1`; the repeats' commands differ only in the port).
pub fn commands(m: &Manifest) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for l in m.launches.values() {
        if !l.command.is_empty() && !out.contains_key(&l.run_name) {
            out.insert(l.run_name.clone(), l.command.clone());
        }
    }
    out
}

/// Launches and server-hours from manifest.json (each launch: start to stop).
pub fn cost(m: &Manifest) -> Cost {
    let mut c = Cost::default();
    for l in m.launches.values() {
        c.launches += 1;
        let t = |s: &str| chrono::DateTime::parse_from_rfc3339(s).ok();
        match (t(&l.started_at), t(&l.finished_at)) {
            (Some(a), Some(b)) if b >= a => {
                c.server_hours += (b - a).num_milliseconds() as f64 / 3_600_000.0;
            }
            _ => c.launches_without_times += 1,
        }
    }
    c
}

#[cfg(test)]
mod tests;
