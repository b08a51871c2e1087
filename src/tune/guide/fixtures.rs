//! The unit tests' shared space and launches: the six-knob space of the story, the three-knob
//! space of issue 35's case, launches measured, failed or ineligible, and a driver that runs
//! the strategy to its stop.

use super::{Evidence, Failure, Knob, Next, Observation, Outcome, Point, Proposal, Space, next};
use crate::observe::diagnose::VerdictKind;
use crate::plan::flags::ParamValue;
use crate::server::failure::FailureKind;

pub(super) fn floats(v: &[f64]) -> Vec<ParamValue> {
    v.iter().map(|&x| ParamValue::Float(x)).collect()
}

pub(super) fn ints(v: &[i64]) -> Vec<ParamValue> {
    v.iter().map(|&x| ParamValue::Int(x)).collect()
}

pub(super) const MFS: usize = 0;

pub(super) const DTYPE: usize = 1;

pub(super) const HICACHE: usize = 2;

pub(super) const MRR: usize = 3;

pub(super) const SC: usize = 4;

pub(super) const PAGE: usize = 5;

pub(super) fn space() -> Space {
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
        confirm: 0,
    }
}

pub(super) fn ev(verdict: VerdictKind) -> Evidence {
    Evidence {
        verdict: Some(verdict),
        kv_usage_max: Some(0.93),
        running_mean: Some(5.8),
        queue_mean: Some(18.8),
        offered: Some(32.0),
        ..Default::default()
    }
}

pub(super) fn measured(point: Point, score: f64, verdict: VerdictKind) -> Observation {
    Observation::once(
        point,
        Outcome::Measured {
            score,
            cv: Some(0.01),
            eligible: true,
            why_not: String::new(),
            slo_excess: None,
            evidence: ev(verdict),
            not_in_effect: vec![],
        },
    )
}

pub(super) fn ineligible(point: Point, score: f64, why_not: &str) -> Observation {
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

pub(super) fn failed(point: Point, kind: &str) -> Observation {
    Observation::once(
        point,
        Outcome::Failed {
            kind: Failure::Server(FailureKind::parse(kind).expect("a failure kind")),
        },
    )
}

pub(super) fn with(base: &Point, k: usize, v: usize) -> Point {
    let mut p = base.clone();
    p[k] = v;
    p
}

pub(super) fn one(n: Next) -> Proposal {
    match n {
        Next::Launch(mut v) => {
            assert_eq!(v.len(), 1);
            v.remove(0)
        }
        Next::Stop { why } => panic!("stopped: {why}"),
    }
}

pub(super) fn stop_why(n: Next) -> String {
    match n {
        Next::Stop { why } => why,
        Next::Launch(v) => panic!("launched {v:?}"),
    }
}

// ---- issue 35: progress while nothing is eligible, sized moves, the confirmation ----

/// A launch ineligible for its SLO alone, `excess` from eligible, with its evidence.
pub(super) fn slo(point: Point, score: f64, excess: f64, evidence: Evidence) -> Observation {
    Observation::once(
        point,
        Outcome::Measured {
            score,
            cv: Some(0.01),
            eligible: false,
            why_not: "SLO not met: ttft_ms_p99".into(),
            slo_excess: Some(excess),
            evidence,
            not_in_effect: vec![],
        },
    )
}

pub(super) fn evidence(verdict: VerdictKind, running: f64, offered: f64, usage: f64) -> Evidence {
    Evidence {
        verdict: Some(verdict),
        kv_usage_max: Some(usage),
        running_mean: Some(running),
        running_max: Some(running),
        queue_mean: Some(offered - running),
        offered: Some(offered),
        ..Default::default()
    }
}

/// The space of the case: the pool, the cap and the graphs.
pub(super) fn stacked() -> Space {
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
            k("max_running_requests", ints(&[16, 32, 48, 64, 96, 128])),
            k("cuda_graph_max_bs", ints(&[16, 32, 64, 128])),
        ],
        start: vec![1, 0, 0],
        confirm: 0,
    }
}

pub(super) fn measured_with(point: Point, score: f64, evidence: Evidence) -> Observation {
    Observation::once(
        point,
        Outcome::Measured {
            score,
            cv: Some(0.01),
            eligible: true,
            why_not: String::new(),
            slo_excess: None,
            evidence,
            not_in_effect: vec![],
        },
    )
}

/// Runs the strategy to its stop on fixed outcomes: `score` of a point, each launch of it
/// measuring `score × (1 + wobble)`, the wobbles taken in turn.
pub(super) fn drive(
    sp: &Space,
    budget: usize,
    score: &dyn Fn(&Point) -> f64,
    wobble: &[f64],
) -> (Vec<Proposal>, Vec<Observation>, String) {
    let mut seen: Vec<Observation> = Vec::new();
    let mut sums: Vec<f64> = Vec::new();
    let mut log = Vec::new();
    let mut w = wobble.iter().cycle();
    loop {
        let used = log.len();
        match next(sp, &seen, budget - used) {
            Next::Stop { why } => return (log, seen, why),
            Next::Launch(v) => {
                for p in v {
                    let x = score(&p.point) * (1.0 + w.next().copied().unwrap_or(0.0));
                    match seen.iter().position(|o| o.point == p.point) {
                        Some(i) => {
                            assert!(p.confirm, "{}", p.why);
                            sums[i] += x;
                            seen[i].again(&p);
                            let mean = sums[i] / seen[i].launches as f64;
                            if let Outcome::Measured { score, .. } = &mut seen[i].outcome {
                                *score = mean;
                            }
                        }
                        None => {
                            assert!(!p.confirm, "{}", p.why);
                            sums.push(x);
                            seen.push(measured_with(
                                p.point.clone(),
                                x,
                                evidence(VerdictKind::ComputeBound, 64.0, 64.0, 0.5),
                            ));
                        }
                    }
                    log.push(p);
                }
            }
        }
    }
}

/// A launch of `point` measuring `score`, compute bound with a pool to spare (usage 0.5, 32 of
/// 32 running, nothing queued, no retraction), on a load that reuses no prefix, prefill a third
/// of the tokens, prompts of 64 tokens: every knob `inert` knows is inert between two such.
pub(super) fn spare(point: Point, score: f64) -> Observation {
    let mut e = evidence(VerdictKind::ComputeBound, 32.0, 32.0, 0.5);
    e.retractions = Some(0);
    e.prefix_reuse = Some(0.0);
    e.prefill_share = Some(0.3);
    e.prompt_tokens = Some(64.0);
    measured_with(point, score, e)
}
