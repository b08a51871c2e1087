//! The memory pre-flight: before the sweep, the highest value of one memory knob (e.g.
//! `mem_fraction_static`) that both launches and survives a worst-case burst.
//!
//! Starting is not enough (vLLM's auto_tune accepts a value because the server started, and it
//! then runs out of memory under load): each attempt launches the first configuration with the
//! knob at a value, then drives the workload's worst case for `burst_s` seconds: its longest
//! inputs and outputs, its highest load, ignore_eos, every request in flight at once. The
//! attempt survives when the server stays up, answers, and shows no retraction storm.
//!
//! The search tries `to` (the hoped-for value) and `from` (the safe one) first, then bisects
//! between the highest survivor and the lowest failure on the grid `from + k·resolution`,
//! so it needs at most ceil(log2(range / resolution)) + 2 launches. It is a pure function of
//! the attempts so far ([`next_attempt`]), so a resumed sweep replays the recorded attempts.
//! `run::preflight` launches what it asks for.

use crate::plan::expand::{self, RunConfig};
use crate::plan::flags::{self, PREFLIGHT_VALUE, ParamValue};
use crate::plan::search::{INTEGER_KNOBS, Preflight};
use crate::plan::spec::{DeadlinePolicy, LoadPoint, SweepSpec};
use crate::record::RunRecord;
use crate::record::rows::Row;
use crate::tune::work::Launch;
use serde::Serialize;

/// One attempt as the search sees it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Attempt {
    pub value: f64,
    pub survived: bool,
}

impl Attempt {
    /// A recorded `preflight` row (its knob's value is in `param_<knob>`).
    pub fn of_row(r: &Row, knob: &str) -> Option<Attempt> {
        Some(Attempt {
            value: r.f64(&format!("param_{knob}"))?,
            survived: r.get("probe") == "pass",
        })
    }
}

/// The search's next move.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step {
    Try(f64),
    /// Finished: the highest survivor (None: not even `from`), and the lowest failure above it
    /// (the margin: the next step up and how it failed).
    Done {
        found: Option<f64>,
        next_up: Option<f64>,
        attempts: usize,
    },
}

/// Value `k` steps above `from`, rounded so that its text is short and stable.
fn grid(p: &Preflight, k: f64) -> f64 {
    let v = p.range.from + k * p.range.resolution;
    (v * 1e9).round() / 1e9
}

pub fn next_attempt(p: &Preflight, history: &[Attempt]) -> Step {
    let r = p.range;
    let seen = |v: f64| {
        history
            .iter()
            .find(|a| (a.value - v).abs() <= 1e-9 * v.abs().max(1.0))
            .map(|a| a.survived)
    };
    let steps = ((r.to - r.from) / r.resolution + 1e-9).floor();
    let top = grid(p, steps);
    let done = |found: Option<f64>, next_up: Option<f64>| Step::Done {
        found,
        next_up,
        attempts: history.len(),
    };
    // Indices on the grid: lo survived, hi failed.
    let (mut lo, mut hi) = (None::<f64>, None::<f64>);
    for (k, v) in [(steps, top), (0.0, r.from)] {
        match seen(v) {
            None if (history.len() as u64) < p.max_attempts => return Step::Try(v),
            None => return done(lo.map(|k| grid(p, k)), hi.map(|k| grid(p, k))),
            Some(true) if k == steps => return done(Some(top), None),
            Some(true) => lo = Some(k),
            Some(false) if k == 0.0 => return done(None, Some(r.from)),
            Some(false) => hi = Some(k),
        }
    }
    let (Some(mut lo), Some(mut hi)) = (lo, hi) else {
        return done(None, None);
    };
    while hi - lo > 1.0 {
        let mid = ((lo + hi) / 2.0).floor();
        match seen(grid(p, mid)) {
            None if (history.len() as u64) < p.max_attempts => return Step::Try(grid(p, mid)),
            None => break,
            Some(true) => lo = mid,
            Some(false) => hi = mid,
        }
    }
    done(Some(grid(p, lo)), Some(grid(p, hi)))
}

/// The knob's value as a flag value: a whole number for the integer knobs.
pub fn value_of(p: &Preflight, v: f64) -> ParamValue {
    if INTEGER_KNOBS.contains(&p.knob.as_str()) {
        ParamValue::Int(v.round() as i64)
    } else {
        ParamValue::Float(v)
    }
}

/// The spec an attempt runs: the workload's worst case for `burst_s` seconds. Longest inputs
/// and outputs, the highest load point (or the max-load search's top), closed loop,
/// ignore_eos, no warmup; requests still in flight at the end are cut.
pub fn burst_spec(spec: &SweepSpec, p: &Preflight) -> SweepSpec {
    let mut s = spec.clone();
    let w = &mut s.workload;
    let top_search = spec
        .search
        .max_load
        .as_ref()
        .filter(|m| m.axis == crate::plan::search::Axis::Concurrency)
        .map_or(0, |m| m.range.to as u64);
    let top = w
        .load_points
        .iter()
        .map(|l| l.concurrency)
        .max()
        .unwrap_or(w.concurrency)
        .max(top_search)
        .max(1);
    w.input_tokens = w
        .input_dist
        .as_ref()
        .map_or(w.input_tokens, |d| d.bounds().1);
    w.output_tokens = w
        .output_dist
        .as_ref()
        .map_or(w.output_tokens, |d| d.bounds().1);
    w.input_dist = None;
    w.output_dist = None;
    w.dataset = None;
    w.concurrency = top;
    w.request_rate = None;
    w.load_points = vec![LoadPoint {
        concurrency: top,
        request_rate: None,
    }];
    w.requests = None;
    w.duration_s = Some(p.burst_s);
    w.deadline = DeadlinePolicy::Cut;
    w.warmup_requests = 0;
    w.ignore_eos = true;
    s.search.max_load = None;
    s.repeats = 1;
    s
}

/// What the pre-flight found, for preflight.json and the decision.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub knob: String,
    pub found: Option<f64>,
    /// The lowest value above `found` that was tried and failed, and how.
    pub next_up: Option<f64>,
    pub next_up_failure: Option<String>,
    pub attempts: Vec<Attempt>,
    /// Attempts allowed (search.preflight.max_attempts), and whether the search ran out.
    pub max_attempts: u64,
    pub interrupted: bool,
}

/// The configuration an attempt launches: the first planned one with the knob set.
pub fn attempt_config(spec: &SweepSpec, base: &RunConfig, p: &Preflight, v: f64) -> RunConfig {
    let value = value_of(p, v);
    let mut params = base.params.clone();
    match params.iter_mut().find(|(k, _)| *k == p.knob) {
        Some(slot) => slot.1 = value.clone(),
        None => params.push((p.knob.clone(), value.clone())),
    }
    let mut resolved = base.resolved.clone();
    match resolved.iter_mut().find(|(k, _)| *k == p.knob) {
        Some(slot) => slot.1 = value.clone(),
        None => resolved.push((p.knob.clone(), value.clone())),
    }
    RunConfig {
        name: format!(
            "preflight-{}{}",
            flags::abbreviation(&p.knob),
            flags::value_label(&value)
        ),
        id: expand::run_id(spec, &resolved),
        source: base.source,
        params,
        resolved,
    }
}

/// A failed attempt's kind and message, for the margin.
pub fn why(r: &RunRecord) -> String {
    match (&r.failure_kind, &r.failure_message) {
        (Some(k), Some(m)) => format!("{}: {m}", k.as_str()),
        (Some(k), None) => k.as_str().to_string(),
        _ => String::new(),
    }
}

pub fn outcome(
    p: &Preflight,
    history: &[(Attempt, String)],
    found: Option<f64>,
    next_up: Option<f64>,
    interrupted: bool,
) -> Outcome {
    let next_up_failure = next_up.and_then(|n| {
        history
            .iter()
            .find(|(a, _)| (a.value - n).abs() <= 1e-9 * n.abs().max(1.0))
            .map(|(_, w)| w.clone())
    });
    Outcome {
        knob: p.knob.clone(),
        found,
        next_up,
        next_up_failure,
        attempts: history.iter().map(|(a, _)| *a).collect(),
        max_attempts: p.max_attempts,
        interrupted,
    }
}

/// Put the value found into every launch whose knob was `preflight`.
pub fn substitute(launch: &mut Launch, p: &Preflight, v: f64) {
    let value = value_of(p, v);
    for (k, x) in launch
        .run
        .params
        .iter_mut()
        .chain(launch.run.resolved.iter_mut())
    {
        if *k == p.knob && matches!(x, ParamValue::Str(s) if s == PREFLIGHT_VALUE) {
            *x = value.clone();
        }
    }
}

/// Whether a launch waits on the pre-flight's value.
pub fn needs_value(launch: &Launch, p: &Preflight) -> bool {
    launch
        .run
        .resolved
        .iter()
        .any(|(k, x)| *k == p.knob && matches!(x, ParamValue::Str(s) if s == PREFLIGHT_VALUE))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::search::Range;

    fn pf(from: f64, to: f64, resolution: f64, max_attempts: u64) -> Preflight {
        Preflight {
            knob: "mem_fraction_static".into(),
            range: Range {
                from,
                to,
                resolution,
            },
            max_attempts,
            burst_s: 10.0,
            max_retractions: 2,
        }
    }

    /// Run the search against a threshold: values ≤ `safe` survive.
    fn search(p: &Preflight, safe: f64) -> (Option<f64>, Option<f64>, usize) {
        let mut h = Vec::new();
        loop {
            match next_attempt(p, &h) {
                Step::Try(v) => h.push(Attempt {
                    value: v,
                    survived: v <= safe + 1e-12,
                }),
                Step::Done {
                    found,
                    next_up,
                    attempts,
                } => return (found, next_up, attempts),
            }
        }
    }

    #[test]
    fn finds_the_threshold_within_the_launch_bound() {
        let p = pf(0.80, 0.95, 0.01, 6);
        for k in 0..=15 {
            let safe = 0.80 + k as f64 * 0.01;
            let (found, next_up, n) = search(&p, safe);
            let found = found.unwrap_or(f64::NAN);
            assert!((found - safe).abs() < 1e-9, "safe {safe}: found {found}");
            assert!(n <= 6, "safe {safe}: {n} launches");
            if k < 15 {
                let up = next_up.unwrap_or(f64::NAN);
                assert!((up - safe - 0.01).abs() < 1e-9, "safe {safe}: next up {up}");
            }
        }
        // Nothing survives: one failure at `from` after `to`.
        assert_eq!(search(&p, 0.5), (None, Some(0.80), 2));
    }

    #[test]
    fn max_attempts_bounds_the_search_and_keeps_the_best_so_far() {
        let p = pf(0.80, 0.95, 0.01, 3);
        let (found, _, n) = search(&p, 0.88);
        assert_eq!(n, 3);
        // 0.95 failed, 0.80 survived, 0.87 survived: the best shown so far.
        assert_eq!(found, Some(0.87));
    }

    #[test]
    fn integer_knobs_search_whole_numbers() {
        let mut p = pf(8.0, 256.0, 8.0, 10);
        p.knob = "cuda_graph_max_bs".into();
        let (found, _, _) = search(&p, 100.0);
        assert_eq!(found, Some(96.0));
        assert_eq!(value_of(&p, 96.0), ParamValue::Int(96));
    }
}
