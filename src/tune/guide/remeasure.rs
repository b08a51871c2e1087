//! Launches measured again before the tune reasons from them (issue 51 item 1, issue 53 item
//! 1). One launch is one draw: a launch disturbed by other work on the machine, or one whose
//! SLO figure sits within the noise of a bound, is a coin flip, not a verdict. Before the
//! exploration steps from it, such a launch is launched once more, on a fresh server (a launch
//! of the exploration's budget, not of the confirmation's reserve); its rows then pool with the
//! first launch's as the decision pools a configuration's repeats (the mean score, the median
//! of each SLO figure), so eligibility is judged from the repeats by the decision's own rule.
//!
//! A launch is measured again when its evidence is **suspect**:
//! - client/server tok/s far from 1 (below [`CLIENT_SERVER_FAR`] or above its inverse) on a
//!   launch the diagnosis calls `client_bound` (no limit of the server's own explains it),
//!   unless the other launches measured it as far (the workload's, then): the client saw much
//!   less (or more) than the server made. (A `client_bound` launch that breaks its SLO with
//!   the ratio near 1 is no sign: on real SGLang on CPU a TPOT trade's start ran 27 of 32
//!   offered, so the diagnosis named the client, and its batch broke the bound as the fit
//!   says; measuring it again spent a launch on the same draw);
//! - a TPOT tail [`TAIL_FAR`] times the server's own decode step at the batch that ran;
//! - a decode step [`STEP_FAR`] times (or a fraction as much) what the fit from the other
//!   launches gives at its batch, and beyond three times the noise;
//!
//! or when it stands **at a bound** and the answer matters: ineligible for its SLO alone, every
//! broken figure within the noise of its limit, and better than the leader beyond the noise
//! (it would lead if eligible; the tune would otherwise trade past it). An eligible leader at
//! its bound is left to the confirmation, which re-measures the leader first. Each launch is
//! measured again at most once, only during the exploration.

use super::model;
use super::standing::base;
use super::state::State;
use super::types::{
    Observation, Outcome, Proposal, SloSeen, Space, StepSample, differs, evidence_of,
};
use super::words::name;
use crate::observe::diagnose::VerdictKind;

/// Client/server tok/s below this (or above its inverse) is far from 1: the diagnosis calls a
/// launch `client_bound` below 0.7, and a quiet CPU launch measures 0.98-0.99.
pub const CLIENT_SERVER_FAR: f64 = 0.75;

/// A decode step this many times the other launches' fit at its batch (or this fraction of
/// it): the real CPU engine's run-to-run noise is ±20% and its step is not linear in the
/// batch, so only a step far beyond both is suspect.
pub const STEP_FAR: f64 = 1.5;

/// A TPOT figure this many times the server's own logged decode step at the batch that ran:
/// the tail the model carries is 1.1-1.3 (1.2 on the real CPU engine with a queue).
pub const TAIL_FAR: f64 = 2.0;

/// The launch to measure again before the exploration reasons from the launches so far, if
/// any: the base first, then the others in launch order; each at most once.
pub(super) fn again(space: &Space, seen: &[Observation], st: &State) -> Option<Proposal> {
    if seen.is_empty() {
        return None;
    }
    let b = base(space, seen, st.noise);
    let order = std::iter::once(b).chain((0..seen.len()).filter(|&i| i != b));
    for i in order {
        let o = &seen[i];
        if o.launches != 1 || o.remeasured {
            continue;
        }
        let Some(why) = suspect(seen, i, st).or_else(|| at_bound(seen, i, st)) else {
            continue;
        };
        return Some(Proposal {
            point: o.point.clone(),
            why: format!(
                "{}: {why}: measured again (one launch of the budget; eligibility from both launches, pooled as the decision pools repeats)",
                name(space, &o.point)
            ),
            confirm: true,
            remeasure: true,
        });
    }
    None
}

/// Why launch `i`'s evidence contradicts itself or the other launches, if it does.
pub(super) fn suspect(seen: &[Observation], i: usize, st: &State) -> Option<String> {
    let Outcome::Measured { evidence: e, .. } = &seen.get(i)?.outcome else {
        return None;
    };
    if let Some(r) = e.client_server {
        let others: Vec<f64> = seen
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .filter_map(|(_, o)| evidence_of(o)?.client_server)
            .collect();
        // A ratio the other launches share is the workload's (a long prefill the Decode lines
        // do not see), not this launch's.
        let usual = median(others).is_none_or(|m| !far_from_one(m));
        // Only where the diagnosis found no limit of the server's own (its `client_bound`):
        // a server that names its limit explains a low ratio itself. Sessions with a think
        // time idle the server between turns and a prefill-heavy load makes tokens the Decode
        // lines do not count; on real SGLang such a start measured 0.43 with
        // `prefix_cache_evicted`, and measuring it again would have spent the tune's second
        // launch on a draw of the same.
        let client_bound = e.verdict == Some(VerdictKind::ClientBound);
        if far_from_one(r) && usual && client_bound {
            return Some(format!(
                "client/server tok/s {r:.2}: the measurement is suspect"
            ));
        }
    }
    if let Some(why) = tail_far(e) {
        return Some(why);
    }
    step_far(seen, i, st)
}

/// A TPOT figure [`TAIL_FAR`] times the launch's own decode step at its peak batch.
fn tail_far(e: &super::Evidence) -> Option<String> {
    let peak = e.running_max.or(e.running_mean)?;
    let graphs = model::ran_with_graphs(e) != Some(false);
    let own: Vec<&StepSample> = e
        .steps
        .iter()
        .filter(|s| (s.graph != Some(false)) == graphs)
        .collect();
    let step = model::fit(&own)?.at(peak);
    e.bounds
        .iter()
        .filter(|b| b.at_most && b.column.starts_with("tpot_"))
        .find_map(|b| {
            let m = b.measured?;
            let tail = m / step;
            (tail.is_finite() && tail > TAIL_FAR).then(|| {
                format!(
                    "{} is {tail:.1} × the server's own decode step ({} ms at {} running): the measurement is suspect",
                    figure(b),
                    num(step),
                    num(peak)
                )
            })
        })
}

/// A decode step far from what the fit from the other launches gives at the same batches.
fn step_far(seen: &[Observation], i: usize, st: &State) -> Option<String> {
    let e = evidence_of(seen.get(i)?)?;
    let graphs = model::ran_with_graphs(e) != Some(false);
    let mode = |s: &&StepSample| (s.graph != Some(false)) == graphs;
    let others: Vec<&StepSample> = seen
        .iter()
        .enumerate()
        .filter(|&(j, _)| j != i)
        .filter_map(|(_, o)| evidence_of(o))
        .flat_map(|e| e.steps.iter())
        .filter(mode)
        .collect();
    let f = model::fit(&others).filter(|f| f.measured_slope())?;
    let (mut measured, mut fitted) = (0.0, 0.0);
    for s in e.steps.iter().filter(mode).filter(|s| s.running >= 1.0) {
        let w = f64::from(s.lines);
        measured += w * s.step_ms;
        fitted += w * f.at(s.running);
    }
    if fitted <= 0.0 || measured <= 0.0 {
        return None;
    }
    let q = measured / fitted;
    let far = !(1.0 / STEP_FAR..=STEP_FAR).contains(&q) && differs(q, 1.0, 3.0 * st.noise);
    far.then(|| {
        format!(
            "decode step {q:.2} × what the other launches' fit gives at its batch ({:.2} + {:.3} × running ms): the measurement is suspect",
            f.a, f.b
        )
    })
}

/// Why launch `i` stands at a bound where one more draw can change the answer, if it does: it
/// is ineligible for its SLO alone, every broken figure lies within one measurement's noise of
/// its bound (half the tune's noise, which is two measurements apart), and it would lead if
/// eligible (its score beyond the noise of every eligible launch's, or nothing is eligible).
/// The tune would otherwise trade past it. An eligible leader at its bound is left to the
/// confirmation, which re-measures the leader first: measured during the exploration as well,
/// it cost the trade bench's noisy family a seed (docs/benchmarks.md).
pub(super) fn at_bound(seen: &[Observation], i: usize, st: &State) -> Option<String> {
    let Outcome::Measured {
        score,
        eligible: false,
        slo_excess: Some(_),
        evidence: e,
        ..
    } = &seen.get(i)?.outcome
    else {
        return None;
    };
    let one = st.noise / 2.0;
    let broken: Vec<&SloSeen> = e.bounds.iter().filter(|b| breaks(b)).collect();
    let at = |b: &&SloSeen| b.measured.is_some_and(|m| !differs(m, b.limit, one));
    if broken.is_empty() || !broken.iter().all(at) {
        return None;
    }
    let best_eligible = seen
        .iter()
        .filter_map(|o| match o.outcome {
            Outcome::Measured {
                score,
                eligible: true,
                ..
            } => Some(score),
            _ => None,
        })
        .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
    if best_eligible.is_some_and(|l| *score <= l || !differs(*score, l, st.noise)) {
        return None;
    }
    let pick = broken
        .into_iter()
        .max_by(|x, y| ratio(x).total_cmp(&ratio(y)))?;
    Some(format!(
        "{}, within the noise (±{}%) of the {} bound",
        figure(pick),
        num(one * 100.0),
        with_unit(pick, pick.limit)
    ))
}

/// Whether a bound's measured figure breaks it.
fn breaks(b: &SloSeen) -> bool {
    b.measured
        .is_some_and(|m| if b.at_most { m > b.limit } else { m < b.limit })
}

/// How near a figure is to breaking its bound: measured ÷ limit (inverted for a lower bound).
fn ratio(b: &SloSeen) -> f64 {
    let m = b.measured.unwrap_or(0.0);
    let r = if b.at_most { m / b.limit } else { b.limit / m };
    if r.is_finite() { r } else { 0.0 }
}

/// A bound's figure in words: `tpot_ms_p99 40.004 ms`.
fn figure(b: &SloSeen) -> String {
    match b.measured {
        Some(m) => format!("{} {}", b.column, with_unit(b, m)),
        None => b.column.clone(),
    }
}

fn with_unit(b: &SloSeen, x: f64) -> String {
    if b.column.contains("_ms") {
        format!("{} ms", num(x))
    } else {
        num(x)
    }
}

/// A number with at most three decimals, trailing zeros dropped (`40.004`, `40`, `205`).
fn num(x: f64) -> String {
    let s = format!("{x:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

fn far_from_one(r: f64) -> bool {
    !(CLIENT_SERVER_FAR..=1.0 / CLIENT_SERVER_FAR).contains(&r)
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::super::confirm::confirmations;
    use super::super::fixtures::{ints, one};
    use super::super::types::{Evidence, Knob, Next, Point};
    use super::super::{next, next_batch};
    use super::*;

    /// `experiments/cpu-tune-tpot.yaml`'s space: the running cap and the chunked prefill, the
    /// start at cap 32 (every one of 32 clients running), 10 launches, 2 kept to confirm.
    fn cpu_space() -> Space {
        Space {
            knobs: vec![
                Knob {
                    key: "max_running_requests".into(),
                    values: ints(&[4, 8, 12, 16, 24, 32]),
                },
                Knob {
                    key: "chunked_prefill_size".into(),
                    values: ints(&[512, 2048]),
                },
            ],
            start: vec![5, 1],
            confirm: 2,
        }
    }

    /// Decode buckets on the CPU engine (eager), step = a + b × running ms: the ramp and the
    /// drain a few lines each, the plateau at 32 most.
    fn cpu_steps(a: f64, b: f64) -> Vec<StepSample> {
        [(4.0, 3), (16.0, 2), (24.0, 2), (32.0, 52)]
            .iter()
            .map(|&(r, lines)| StepSample {
                running: r,
                step_ms: a + b * r,
                graph: Some(false),
                lines,
            })
            .collect()
    }

    fn tpot(limit: f64, measured: f64) -> SloSeen {
        SloSeen {
            column: "tpot_ms_p99".into(),
            at_most: true,
            limit,
            measured: Some(measured),
        }
    }

    /// A measured launch: eligibility and the SLO excess from its bounds, as `path::observe`
    /// gives them.
    fn launch(point: Point, score: f64, e: Evidence) -> Observation {
        let broken: Vec<f64> = e.bounds.iter().filter(|b| breaks(b)).map(ratio).collect();
        let excess = broken
            .iter()
            .copied()
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
        Observation::once(
            point,
            Outcome::Measured {
                score,
                cv: None,
                eligible: excess.is_none(),
                why_not: if excess.is_some() {
                    "SLO not met: tpot_ms_p99".into()
                } else {
                    String::new()
                },
                slo_excess: excess,
                evidence: e,
                not_in_effect: vec![],
            },
        )
    }

    /// Issue 51's perturbed start on real SGLang on CPU: every request running (32 of 32), no
    /// queue, KV usage 0.30, 202 tok/s, TPOT p99 205 ms, client/server tok/s 0.60, verdict
    /// `client_bound` (the diagnosis's ratio rule), against a TPOT bound that only a smaller
    /// batch meets. The server's own steps were slow too: 337 tok/s at 32 running, 95 ms.
    fn perturbed(limit: f64) -> Evidence {
        Evidence {
            verdict: Some(VerdictKind::ClientBound),
            text: "no queue, #running-req mean 32.0 of 32 offered, token usage max 0.30; client/server tok/s 0.60".into(),
            kv_usage_max: Some(0.30),
            running_mean: Some(32.0),
            running_max: Some(32.0),
            queue_mean: Some(0.0),
            offered: Some(32.0),
            retractions: Some(0),
            steps: cpu_steps(19.0, 2.35),
            pool_tokens: Some(32_768.0),
            bounds: vec![tpot(limit, 205.0)],
            client_server: Some(0.60),
            ..Default::default()
        }
    }

    /// The same configuration on a quiet machine: 1,478 tok/s, a 21.7 ms step at 32 running,
    /// TPOT p99 1.14 × it (the real engine's tail), still over the bound.
    fn quiet(limit: f64) -> Evidence {
        Evidence {
            verdict: Some(VerdictKind::ComputeBound),
            steps: cpu_steps(4.4, 0.54),
            bounds: vec![tpot(limit, 24.7)],
            client_server: Some(0.99),
            ..perturbed(limit)
        }
    }

    /// The two launches pooled as `path::observe` pools a configuration's rows: the mean
    /// score, the median of each SLO figure (of two, their mean), the last row's verdict,
    /// every row's decode buckets, the ratio of the mean throughputs.
    fn pooled(space: &Space, limit: f64, again: &Proposal) -> Observation {
        let mut e = quiet(limit);
        e.steps.extend(perturbed(limit).steps);
        e.bounds = vec![tpot(limit, (205.0 + 24.7) / 2.0)];
        e.client_server = Some(((202.0 + 1478.0) / 2.0) / ((337.0 + 1493.0) / 2.0));
        let mut o = launch(space.start.clone(), (202.0 + 1478.0) / 2.0, e);
        o.again(again);
        o
    }

    #[test]
    fn the_perturbed_real_start_of_issue_51_is_measured_again_not_the_end_of_the_tune() {
        let sp = cpu_space();
        let seen = vec![launch(sp.start.clone(), 202.0, perturbed(20.0))];
        // Before: "the client is the limit ... raise the load's concurrency", stop at launch 1
        // of 10 with nothing eligible. Now: the same configuration again, saying why.
        let p = one(next(&sp, &seen, 9));
        assert_eq!(p.point, sp.start);
        assert!(p.confirm && p.remeasure, "{p:?}");
        assert!(
            p.why.starts_with(
                "mrr32_cps2048: client/server tok/s 0.60: the measurement is suspect: measured again (one launch of the budget"
            ),
            "{}",
            p.why
        );
        // One slot or several: the re-measure goes alone.
        assert_eq!(next_batch(&sp, &seen, 9, 4), Next::Launch(vec![p.clone()]));
        // The quiet re-run (1,478 tok/s) pooled with it: still over the TPOT bound, compute
        // bound now; the re-measure is no confirmation, and the tune goes on with the model's
        // move down the running cap, not a stop.
        let seen = vec![pooled(&sp, 20.0, &p)];
        assert_eq!(confirmations(&seen), 0);
        let q = one(next(&sp, &seen, 8));
        assert!(!q.confirm && !q.remeasure, "{}", q.why);
        assert!(q.point[0] < sp.start[0], "{}", q.why);
        assert!(q.why.contains("max_running_requests 32 → "), "{}", q.why);
        // Measured again once only: the pooled launch is not launched a third time.
        assert!(again(&sp, &seen, &State::read(&sp, &seen)).is_none());
        // Had the re-run been disturbed too (client bound again), nothing is eligible and the
        // model has shown nothing yet: the tune still goes on.
        let mut busy = seen[0].clone();
        if let Outcome::Measured { evidence, .. } = &mut busy.outcome {
            evidence.verdict = Some(VerdictKind::ClientBound);
        }
        let r = one(next(&sp, &[busy], 8));
        assert!(!r.confirm && r.point != sp.start, "{}", r.why);
    }

    #[test]
    fn each_sign_of_a_suspect_launch_names_itself() {
        let sp = cpu_space();
        let st = |seen: &[Observation]| State::read(&sp, seen);
        // Client/server far from 1 either way, on a launch the diagnosis calls client-bound
        // (within its SLO, so the ratio is the only sign); near 1 is no sign.
        for (r, sign) in [(0.60, true), (1.5, true), (0.8, false), (1.2, false)] {
            let mut e = quiet(30.0);
            e.client_server = Some(r);
            e.verdict = Some(VerdictKind::ClientBound);
            let seen = [launch(sp.start.clone(), 1478.0, e)];
            assert_eq!(suspect(&seen, 0, &st(&seen)).is_some(), sign, "{r}");
        }
        // A server that names its own limit explains a low ratio: real SGLang's start of chat
        // sessions with a think time (the server idles between turns) measured 0.43 with
        // `prefix_cache_evicted`, and on a queue or a full pool the same holds.
        for kind in [
            VerdictKind::PrefixCacheEvicted,
            VerdictKind::KvCacheBound,
            VerdictKind::ComputeBound,
        ] {
            let mut e = quiet(30.0);
            e.client_server = Some(0.43);
            e.verdict = Some(kind);
            let seen = [launch(sp.start.clone(), 1478.0, e)];
            assert_eq!(suspect(&seen, 0, &st(&seen)), None, "{kind:?}");
        }
        // A ratio the other launches share is the workload's, not the launch's.
        let mut low = quiet(30.0);
        low.client_server = Some(0.6);
        low.verdict = Some(VerdictKind::ClientBound);
        let seen = [
            launch(vec![4, 1], 1200.0, low.clone()),
            launch(sp.start.clone(), 1478.0, low.clone()),
        ];
        assert_eq!(suspect(&seen, 1, &st(&seen)), None);
        let mut usual = quiet(30.0);
        usual.client_server = Some(0.97);
        let seen = [
            launch(vec![4, 1], 1200.0, usual),
            launch(sp.start.clone(), 1478.0, low),
        ];
        assert!(suspect(&seen, 1, &st(&seen)).is_some());
        // Client bound while the SLO breaks, the ratio near 1: the batch the client filled
        // breaks the bound, as the fit says; no sign (real SGLang on CPU: a TPOT trade's start
        // ran 27 of 32 offered, TPOT p99 26.4 ms against a 13.7 ms bound, the ratio about 1).
        let mut e = quiet(13.7);
        e.verdict = Some(VerdictKind::ClientBound);
        e.client_server = Some(0.98);
        let seen = [launch(sp.start.clone(), 1252.0, e)];
        assert_eq!(suspect(&seen, 0, &st(&seen)), None);
        // A TPOT tail over twice the server's own step at the batch that ran.
        let mut e = quiet(100.0);
        e.bounds = vec![tpot(100.0, 2.2 * 21.68)];
        let seen = [launch(sp.start.clone(), 1478.0, e.clone())];
        let why = suspect(&seen, 0, &st(&seen)).unwrap();
        assert!(
            why.starts_with("tpot_ms_p99 47.696 ms is 2.2 × the server's own decode step (21.68 ms at 32 running)"),
            "{why}"
        );
        e.bounds = vec![tpot(100.0, 1.9 * 21.68)];
        let seen = [launch(sp.start.clone(), 1478.0, e)];
        assert_eq!(suspect(&seen, 0, &st(&seen)), None);
        // A step far from the fit of the other launches (both ways); near it, none.
        let others = |a: f64, b: f64| {
            let mut e = quiet(100.0);
            e.steps = cpu_steps(a, b);
            e.bounds = vec![];
            e
        };
        for (scale, sign) in [(1.8, true), (0.5, true), (1.3, false), (0.8, false)] {
            let seen = [
                launch(vec![4, 1], 1200.0, others(4.4, 0.54)),
                launch(vec![3, 1], 1000.0, others(4.4, 0.54)),
                launch(sp.start.clone(), 1478.0, others(4.4 * scale, 0.54 * scale)),
            ];
            let why = suspect(&seen, 2, &st(&seen));
            assert_eq!(why.is_some(), sign, "{scale}: {why:?}");
            if let Some(w) = why {
                assert!(w.starts_with(&format!("decode step {scale:.2} × what the other launches' fit gives at its batch (4.40 + 0.540 × running ms)")), "{w}");
            }
        }
        // With only the launch itself, there is no fit of the others to be far from.
        let seen = [launch(sp.start.clone(), 1478.0, others(8.0, 1.0))];
        assert_eq!(step_far(&seen, 0, &st(&seen)), None);
    }

    /// Issue 53: the best cap measured TPOT p99 within the noise of the bound, over it. One
    /// more draw decides, judged from both by the decision's rule, before the tune trades past
    /// it to a lower cap.
    #[test]
    fn a_launch_at_the_bound_that_would_lead_is_measured_again_and_judged_from_both() {
        let sp = cpu_space();
        let at = |measured: f64| {
            let mut e = quiet(40.0);
            e.bounds = vec![tpot(40.0, measured)];
            e
        };
        let seen = vec![
            launch(sp.start.clone(), 1300.0, at(42.0)),
            launch(vec![3, 1], 1000.0, at(34.0)),
            launch(vec![4, 1], 1100.0, at(40.004)),
        ];
        let st = State::read(&sp, &seen);
        let p = again(&sp, &seen, &st).unwrap();
        assert_eq!(p.point, vec![4, 1], "{}", p.why);
        assert!(p.confirm && p.remeasure);
        assert_eq!(
            p.why,
            "mrr24_cps2048: tpot_ms_p99 40.004 ms, within the noise (±2.5%) of the 40 ms bound: measured again (one launch of the budget; eligibility from both launches, pooled as the decision pools repeats)"
        );
        assert_eq!(one(next(&sp, &seen, 8)), p);
        // The second draw, 39.2 ms: the median of the two is 39.602, under the bound (the
        // decision's rule); the cap leads, and is not measured a third time.
        let mut both = seen.clone();
        both[2] = launch(vec![4, 1], 1100.0, at((40.004 + 39.2) / 2.0));
        both[2].again(&p);
        assert!(matches!(
            both[2].outcome,
            Outcome::Measured { eligible: true, .. }
        ));
        let q = one(next(&sp, &both, 7));
        assert!(!q.remeasure && !q.confirm, "{}", q.why);
        assert_eq!(confirmations(&both), 0);
        // Not at the bound: 10% over is a verdict.
        let far = vec![seen[1].clone(), launch(vec![4, 1], 1100.0, at(44.0))];
        assert_eq!(at_bound(&far, 1, &State::read(&sp, &far)), None);
        // At the bound, but no better than the leader beyond the noise: no answer changes.
        let close = vec![seen[1].clone(), launch(vec![4, 1], 1010.0, at(40.004))];
        assert_eq!(at_bound(&close, 1, &State::read(&sp, &close)), None);
        let worse = vec![seen[1].clone(), launch(vec![4, 1], 900.0, at(40.004))];
        assert_eq!(at_bound(&worse, 1, &State::read(&sp, &worse)), None);
        // Nothing eligible: it would lead; a lower bound counts the same way.
        let alone = vec![launch(vec![4, 1], 1100.0, at(40.004))];
        assert!(at_bound(&alone, 0, &State::read(&sp, &alone)).is_some());
        let mut lower = quiet(40.0);
        lower.bounds = vec![SloSeen {
            column: "output_tok_s".into(),
            at_most: false,
            limit: 1500.0,
            measured: Some(1490.0),
        }];
        let alone = vec![launch(vec![4, 1], 1100.0, lower)];
        let why = at_bound(&alone, 0, &State::read(&sp, &alone)).unwrap();
        assert_eq!(
            why,
            "output_tok_s 1490, within the noise (±2.5%) of the 1500 bound"
        );
        // An eligible leader at its bound is left to the confirmation.
        let eligible = vec![launch(vec![4, 1], 1100.0, at(39.99))];
        assert_eq!(at_bound(&eligible, 0, &State::read(&sp, &eligible)), None);
        // Ineligible for more than its SLO (no excess: the quality guard): no.
        let mut quality = launch(vec![4, 1], 1100.0, at(40.004));
        if let Outcome::Measured { slo_excess, .. } = &mut quality.outcome {
            *slo_excess = None;
        }
        assert_eq!(at_bound(&[quality], 0, &State::read(&sp, &[])), None);
    }

    #[test]
    fn a_re_measure_spends_the_exploration_not_the_reserve_and_none_comes_after_it() {
        let sp = cpu_space();
        let seen = vec![launch(sp.start.clone(), 202.0, perturbed(20.0))];
        // The exploration's last launch (3 left, 2 kept... but nothing is eligible: none kept).
        assert!(one(next(&sp, &seen, 1)).remeasure);
        // Once the confirmation began, nothing is measured again: it re-measures by itself.
        let mut confirmed = vec![launch(sp.start.clone(), 1478.0, quiet(30.0))];
        confirmed[0].launches = 2;
        let mut e = perturbed(30.0);
        e.bounds = vec![tpot(30.0, 24.0)];
        e.verdict = Some(VerdictKind::ComputeBound);
        confirmed.push(launch(vec![4, 1], 1200.0, e));
        let p = next(&sp, &confirmed, 5);
        if let Next::Launch(v) = &p {
            assert!(v.iter().all(|q| !q.remeasure), "{p:?}");
        }
    }
}
