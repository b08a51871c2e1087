//! The rule, typed: which configuration wins at each load point and with which evidence
//! (eligibility, ranks, margins, the sweep's noise, the SLO checks, the max-load search). It
//! builds no sentence: each finding carries the facts (and the rows they came from) that
//! [`super::words`] puts into words.

use super::{ConfigResult, Outcome, SloCheck, Standing};
use crate::observe::diagnose::VerdictKind;
use crate::plan::spec::{Goal, Objective, SloBound};
use crate::record::rows::{Col, Row};
use crate::record::{Phase, ProbeResult, QualityStatus, RunStatus};
use crate::server::failure::FailureKind;
use crate::tune::stats::{Estimate, Margin, PooledNoise};
use crate::tune::stats::{estimate, margin, median, pooled_noise};
use std::collections::BTreeMap;

/// Why a configuration stands where it does when judged on its own rows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Alone<'r> {
    /// Eligible (`Behind` until compared with the leader).
    Eligible,
    /// At least one repeat failed; the first failure message of them, if any.
    Failed {
        message: Option<&'r str>,
    },
    /// The quality guard's row: its outputs failed against the baseline, or were not checked.
    Quality {
        row: &'r Row,
    },
    /// Successive halving left it out here; the row's message says why.
    Pruned {
        message: &'r str,
    },
    NoFinishedRepeat,
    /// Finished repeats, none with a value of the objective's column.
    NoMetricValue,
    /// Its median breaks an SLO bound (the `slo` checks say which).
    SloNotMet,
}

/// A max-load search's configuration with no passing probe, judged at its lowest probe.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct NoLoad<'r> {
    /// A row of its lowest probe (for the load, in words).
    pub lowest: Option<&'r Row>,
    pub probe: Option<ProbeResult>,
}

/// The most common non-empty verdict of a configuration's rows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Verdict<'r> {
    pub verdict: &'r str,
    /// How many repeats have it, of how many.
    pub count: usize,
    pub repeats: usize,
    /// The `verdict_evidence` of the first row with it.
    pub evidence: &'r str,
}

/// One configuration at one load point: every field of [`ConfigResult`] but the words.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Judged<'r> {
    pub run_name: &'r str,
    pub standing: Standing,
    pub rank: Option<usize>,
    pub estimate: Option<Estimate>,
    pub repeats: usize,
    pub failed: usize,
    pub failure_kinds: Vec<&'r str>,
    pub slo: Vec<SloCheck>,
    pub margin: Option<Margin>,
    pub verdict: Option<Verdict<'r>>,
    pub alone: Alone<'r>,
    pub no_load: Option<NoLoad<'r>>,
    pub max_load_at_slo: Option<String>,
    pub goodput_at_max_load: Option<f64>,
}

/// What a point is named by.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Named<'a> {
    /// Its rows' load (the first row's).
    Load,
    /// A caller's label ([`super::decide_rows`]); the sentence still says the rows' load.
    Given(&'a str),
    /// Each configuration at its own highest load within the SLO.
    MaxLoad,
}

/// The decision at one load point, typed.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Point<'r, 'a> {
    pub load_point: &'a str,
    pub named: Named<'a>,
    /// The point's first row, for its load in words.
    pub first: Option<&'r Row>,
    pub outcome: Outcome,
    pub leader: Option<&'r str>,
    pub runner_up: Option<&'r str>,
    pub tied_with: Vec<&'r str>,
    /// How many configurations were eligible.
    pub eligible: usize,
    pub noise: Option<PooledNoise>,
    pub command: Option<&'a str>,
    /// In reading order: eligible by rank, then SLO misses, quality, failures, no value (and,
    /// with a max-load search, those with no passing probe last).
    pub configs: Vec<Judged<'r>>,
}

impl<'r> Point<'r, '_> {
    pub fn config(&self, name: Option<&str>) -> Option<&Judged<'r>> {
        name.and_then(|n| self.configs.iter().find(|c| c.run_name == n))
    }
}

/// The memory pre-flight's attempts, typed.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Preflight<'r> {
    pub found: Option<f64>,
    /// The lowest failed value above it, and its row (how it failed).
    pub next_up: Option<(f64, &'r Row)>,
    pub attempts: usize,
}

pub(super) fn preflight<'r>(rows: &'r [Row], knob: &str) -> Option<Preflight<'r>> {
    let col = Col::param(knob);
    let attempts: Vec<(&Row, f64)> = rows
        .iter()
        .filter(|r| r.phase() == Phase::Preflight)
        .filter_map(|r| r.metric(&col).map(|v| (r, v)))
        .collect();
    if attempts.is_empty() {
        return None;
    }
    let found = attempts
        .iter()
        .filter(|(r, _)| r.probe() == Some(ProbeResult::Pass))
        .map(|(_, v)| *v)
        .max_by(f64::total_cmp);
    let above = attempts
        .iter()
        .filter(|(r, v)| r.probe() != Some(ProbeResult::Pass) && found.is_none_or(|f| *v > f))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    Some(Preflight {
        found,
        next_up: above.map(|(r, v)| (*v, *r)),
        attempts: attempts.len(),
    })
}

/// The most common non-empty verdict of the rows (the first seen on a tie), with the
/// evidence of the first row with it.
pub(super) fn verdict_of<'r>(rows: &[&'r Row]) -> Option<Verdict<'r>> {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for r in rows {
        let Some(v) = r.verdict().map(VerdictKind::as_str) else {
            continue;
        };
        match counts.iter_mut().find(|(k, _)| *k == v) {
            Some((_, n)) => *n += 1,
            None => counts.push((v, 1)),
        }
    }
    let (verdict, count) =
        counts
            .iter()
            .copied()
            .fold(None, |best: Option<(&str, usize)>, c| match best {
                Some(b) if b.1 >= c.1 => Some(b),
                _ => Some(c),
            })?;
    let evidence = rows
        .iter()
        .find(|r| r.verdict().map(VerdictKind::as_str) == Some(verdict))
        .map_or("", |r| r.verdict_evidence());
    Some(Verdict {
        verdict,
        count,
        repeats: rows.len(),
        evidence,
    })
}

fn check_slo(bounds: &[SloBound], ok: &[&Row]) -> Vec<SloCheck> {
    bounds
        .iter()
        .map(|b| {
            let values: Vec<f64> = ok.iter().filter_map(|r| r.metric(&b.column)).collect();
            let median = median(&values);
            SloCheck {
                column: b.column.clone(),
                bound: b.bound,
                limit: b.limit,
                median,
                holds: median.is_some_and(|m| b.bound.holds(m, b.limit)),
            }
        })
        .collect()
}

/// The sweep's noise ([`pooled_noise`]) of `o`'s column over `rows`: each configuration's
/// finished values at each load point are one group (rows with the same `run_id` are one
/// configuration measured alike, whatever their names); pre-flight bursts are left out, and so
/// are configurations whose outputs failed the quality guard: their speed varies with what they
/// wrote (a derailing configuration's outputs differ in length from launch to launch, 11% apart
/// in two repeats on a busy machine), which is not the measurement noise the eligible ones are
/// compared under, and they are never compared. Left in, that one group dominated the pool,
/// Satterthwaite's degrees of freedom fell to one, and a configuration 4x slower than the
/// leader was no longer separated from it.
pub fn sweep_noise(o: &Objective, rows: &[&Row]) -> Option<PooledNoise> {
    // (run id, or the run name when there is none; load point).
    type Key<'r> = (&'r str, &'r str, String);
    let mut groups: Vec<(Key, Vec<f64>)> = Vec::new();
    for r in rows {
        if !r.is_ok() || r.phase() == Phase::Preflight || r.quality() == Some(QualityStatus::Fail) {
            continue;
        }
        let Some(v) = r.metric(&o.metric) else {
            continue;
        };
        let key = match r.run_id() {
            "" => ("", r.run_name(), r.load_point()),
            id => (id, "", r.load_point()),
        };
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, vs)) => vs.push(v),
            None => groups.push((key, vec![v])),
        }
    }
    pooled_noise(groups.iter().map(|(_, v)| v.as_slice()))
}

/// Every load point of a sweep's rows, in first-appearance order, and last, when the sweep
/// searched for its maximum load, that search's point.
pub(super) fn points<'r, 'a>(
    o: &Objective,
    rows: &'r [Row],
    load_points: &'a [String],
    commands: &'a BTreeMap<String, String>,
    noise: Option<PooledNoise>,
) -> Vec<Point<'r, 'a>> {
    let mut out: Vec<Point> = load_points
        .iter()
        .map(|lp| {
            let here: Vec<&Row> = measured(rows).filter(|r| r.load_point() == *lp).collect();
            point(o, lp, Named::Load, &here, commands, noise)
        })
        .collect();
    let probes: Vec<&Row> = rows.iter().filter(|r| r.phase() == Phase::Probe).collect();
    if !probes.is_empty() {
        out.push(at_max_load(o, &probes, commands, noise));
    }
    out
}

/// The rows decided at their own load point: not a max-load search's probes, not pre-flight
/// attempts (they are not candidates).
fn measured(rows: &[Row]) -> impl Iterator<Item = &Row> {
    rows.iter()
        .filter(|r| !matches!(r.phase(), Phase::Probe | Phase::Preflight))
}

/// The load points of [`measured`] rows, in first-appearance order.
pub(super) fn load_points(rows: &[Row]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in measured(rows) {
        let lp = r.load_point();
        if !out.contains(&lp) {
            out.push(lp);
        }
    }
    out
}

/// Rows grouped by configuration, in first-appearance order.
fn by_config<'r>(rows: &[&'r Row]) -> Vec<(&'r str, Vec<&'r Row>)> {
    let mut out: Vec<(&str, Vec<&Row>)> = Vec::new();
    for r in rows {
        let name = r.run_name();
        match out.iter_mut().find(|(k, _)| *k == name) {
            Some((_, v)) => v.push(r),
            None => out.push((name, vec![r])),
        }
    }
    out
}

/// One load point: every configuration of `rows` judged alone, the eligible ones ranked,
/// the leader's margin over each, the outcome.
pub(super) fn point<'r, 'a>(
    o: &Objective,
    load_point: &'a str,
    named: Named<'a>,
    rows: &[&'r Row],
    commands: &'a BTreeMap<String, String>,
    noise: Option<PooledNoise>,
) -> Point<'r, 'a> {
    let mut configs: Vec<Judged> = by_config(rows)
        .iter()
        .map(|(name, rows)| judge_alone(o, name, rows))
        .collect();

    // Eligible ones, best mean first (stable: plan order on equal means).
    let mut eligible: Vec<usize> = (0..configs.len())
        .filter(|&i| configs[i].standing == Standing::Behind)
        .collect();
    let mean = |i: usize| configs[i].estimate.as_ref().map_or(f64::NAN, |e| e.mean);
    eligible.sort_by(|&a, &b| match o.goal {
        Goal::Maximize => mean(b).total_cmp(&mean(a)),
        Goal::Minimize => mean(a).total_cmp(&mean(b)),
    });
    for (rank, &i) in eligible.iter().enumerate() {
        configs[i].rank = Some(rank + 1);
    }
    let leader = eligible.first().copied();
    let mut tied: Vec<&str> = Vec::new();
    if let Some(l) = leader {
        let lead_est = configs[l].estimate.clone();
        for &i in eligible.iter().skip(1) {
            let (Some(le), Some(oe)) = (&lead_est, &configs[i].estimate) else {
                continue;
            };
            let m = margin(o.goal, le, oe, noise, o.noise);
            if !m.separated {
                configs[i].standing = Standing::WithinNoise;
                tied.push(configs[i].run_name);
            }
            configs[i].margin = Some(m);
        }
    }
    let outcome = match leader {
        None => Outcome::NoEligibleConfiguration,
        Some(_) if !tied.is_empty() => Outcome::TieWithinNoise,
        // Margins held only against the threshold: no noise was measured to claim a winner.
        Some(_) if noise.is_none() && eligible.len() > 1 => Outcome::Unconfirmed,
        Some(_) => Outcome::Winner,
    };
    let leader_name = leader.map(|l| configs[l].run_name);
    if let Some(l) = leader {
        configs[l].standing = if outcome == Outcome::Winner {
            Standing::Winner
        } else {
            Standing::Leader
        };
    }
    let runner_up = eligible.get(1).map(|&i| configs[i].run_name);
    // Order for reading: the eligible by rank, then SLO misses, failures, no value; plan
    // order within each.
    let class = |c: &Judged| match c.standing {
        Standing::Winner | Standing::Leader | Standing::WithinNoise | Standing::Behind => 0,
        Standing::SloNotMet => 1,
        Standing::QualityFailed => 2,
        Standing::Failed => 3,
        Standing::NoValue => 4,
    };
    configs.sort_by_key(|c| (class(c), c.rank.unwrap_or(usize::MAX)));
    Point {
        load_point,
        named,
        first: rows.first().copied(),
        outcome,
        leader: leader_name,
        runner_up,
        tied_with: tied,
        eligible: eligible.len(),
        noise,
        command: leader_name.and_then(|n| commands.get(n).map(String::as_str)),
        configs,
    }
}

/// The decision of a max-load search: each configuration at the highest load whose probe
/// passed (the `probe` column), compared there by the same rule as a load point. A
/// configuration with no passing probe is not eligible: no load within the SLO was shown.
fn at_max_load<'r, 'a>(
    o: &Objective,
    rows: &[&'r Row],
    commands: &'a BTreeMap<String, String>,
    noise: Option<PooledNoise>,
) -> Point<'r, 'a> {
    let by_config = by_config(rows);
    // The searched load of a row: its rate in an open loop, else its concurrency.
    let load = |r: &Row| {
        r.request_rate()
            .or_else(|| r.concurrency().map(|c| c as f64))
    };
    let mut at_max: Vec<&Row> = Vec::new();
    let mut found: BTreeMap<&str, (String, Option<f64>)> = BTreeMap::new();
    let mut none_passed: Vec<Judged> = Vec::new();
    for (name, rs) in &by_config {
        let best = rs
            .iter()
            .filter(|r| r.probe() == Some(ProbeResult::Pass))
            .filter_map(|r| load(r))
            .max_by(f64::total_cmp);
        match best {
            Some(l) => {
                let there: Vec<&Row> = rs.iter().copied().filter(|r| load(r) == Some(l)).collect();
                let goodput: Vec<f64> = there
                    .iter()
                    .filter_map(|r| {
                        r.metric(&Col::GOODPUT_REQ_S)
                            .or_else(|| r.metric(&Col::REQUEST_THROUGHPUT))
                    })
                    .collect();
                let lp = there.first().map(|r| r.load_point()).unwrap_or_default();
                found.insert(name, (lp, median(&goodput)));
                at_max.extend(there);
            }
            None => {
                // Judged at its lowest probe, for its verdict and failure; never eligible.
                let lowest = rs.iter().filter_map(|r| load(r)).min_by(f64::total_cmp);
                let there: Vec<&Row> = rs.iter().copied().filter(|r| load(r) == lowest).collect();
                let mut c = judge_alone(o, name, &there);
                // A failed start or failed outputs stay the reason: they hold at any load.
                if !matches!(c.standing, Standing::Failed | Standing::QualityFailed) {
                    c.standing = Standing::SloNotMet;
                }
                c.no_load = Some(NoLoad {
                    lowest: there.first().copied(),
                    probe: there.first().and_then(|r| r.probe()),
                });
                none_passed.push(c);
            }
        }
    }
    let mut p = point(
        o,
        "max_load_at_slo",
        Named::MaxLoad,
        &at_max,
        commands,
        noise,
    );
    for c in &mut p.configs {
        if let Some((lp, g)) = found.remove(c.run_name) {
            c.max_load_at_slo = Some(lp);
            c.goodput_at_max_load = g;
        }
    }
    p.configs.extend(none_passed);
    p
}

/// A configuration judged on its own rows: failed, no value, SLO not met, or eligible
/// (`Behind` until compared with the leader).
fn judge_alone<'r>(o: &Objective, name: &'r str, rows: &[&'r Row]) -> Judged<'r> {
    let failed: Vec<&Row> = rows
        .iter()
        .copied()
        .filter(|r| r.status() == Some(RunStatus::Failed))
        .collect();
    let ok: Vec<&Row> = rows.iter().copied().filter(|r| r.is_ok()).collect();
    let mut kinds: Vec<&str> = Vec::new();
    for r in &failed {
        let k = r.failure_kind().map_or("", FailureKind::as_str);
        if !kinds.contains(&k) {
            kinds.push(k);
        }
    }
    let values: Vec<f64> = ok.iter().filter_map(|r| r.metric(&o.metric)).collect();
    let slo = check_slo(&o.slo, &ok);
    let estimate = estimate(&values);
    let quality = quality_block(rows);
    let (standing, alone) = if !failed.is_empty() {
        let message = failed
            .iter()
            .map(|r| r.failure_message())
            .find(|m| !m.is_empty());
        (Standing::Failed, Alone::Failed { message })
    } else if let Some(row) = quality {
        (Standing::QualityFailed, Alone::Quality { row })
    } else if estimate.is_none() {
        let pruned = rows.iter().find(|r| r.status() == Some(RunStatus::Pruned));
        let why = match (ok.is_empty(), pruned) {
            (true, Some(p)) => Alone::Pruned {
                message: p.failure_message(),
            },
            (true, None) => Alone::NoFinishedRepeat,
            (false, _) => Alone::NoMetricValue,
        };
        (Standing::NoValue, why)
    } else if slo.iter().any(|s| !s.holds) {
        (Standing::SloNotMet, Alone::SloNotMet)
    } else {
        (Standing::Behind, Alone::Eligible)
    };
    Judged {
        run_name: name,
        standing,
        rank: None,
        estimate,
        repeats: rows.len(),
        failed: failed.len(),
        failure_kinds: kinds,
        slo,
        margin: None,
        verdict: verdict_of(rows),
        alone,
        no_load: None,
        max_load_at_slo: None,
        goodput_at_max_load: None,
    }
}

/// The quality guard's hook: the first row saying its configuration's outputs failed against
/// the baseline (or could not be checked); such a configuration is not eligible.
fn quality_block<'r>(rows: &[&'r Row]) -> Option<&'r Row> {
    rows.iter().copied().find(|r| !r.quality_eligible())
}

/// The fields of a [`ConfigResult`] the rule decides, for words to complete.
impl Judged<'_> {
    pub fn result(&self, verdict: String, verdict_evidence: String, why: String) -> ConfigResult {
        ConfigResult {
            run_name: self.run_name.to_string(),
            standing: self.standing,
            rank: self.rank,
            estimate: self.estimate.clone(),
            repeats: self.repeats,
            failed: self.failed,
            failure_kinds: self.failure_kinds.iter().map(|k| k.to_string()).collect(),
            slo: self.slo.clone(),
            margin: self.margin.clone(),
            verdict,
            verdict_evidence,
            why,
            max_load_at_slo: self.max_load_at_slo.clone(),
            goodput_at_max_load: self.goodput_at_max_load,
        }
    }
}
