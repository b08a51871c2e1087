//! The max-load search: on one running server, the highest load at which the objective's SLO
//! holds. Ramp (double from `from` until a probe does not pass, or `to` passes), then bisect
//! between the highest pass and the lowest non-pass down to the resolution.
//!
//! A probe is judged with its noise in mind ([`judge`]): one measurement far from every
//! bound decides it; one within `objective.noise` of a bound is repeated, up to
//! `search.max_load.repeats`; the median of the repeats must meet the SLO and their spread must
//! not straddle a bound, else the probe is `uncertain`, which the search treats as a miss (it
//! never claims a load it could not show).
//!
//! [`next_step`] is a pure function of the search settings and the measurements so far, so a
//! resumed sweep replays the recorded probes and continues where the search stopped.

use crate::plan::expand::RunConfig;
use crate::plan::search::{Axis, MaxLoad};
use crate::plan::spec::{LoadPoint, SloBound, SweepSpec, WorkloadSpec};
use crate::record::rows::Row;
use crate::record::{ProbeResult, RunRecord, RunStatus, run_record};

/// One measurement of a probe, as the search sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeRun {
    /// The load (concurrency or request rate) it was measured at.
    pub load: f64,
    /// It failed (the server died, no request succeeded, interrupted).
    pub failed: bool,
    /// The value of each SLO bound's column, in the objective's order (None: empty cell).
    pub values: Vec<Option<f64>>,
}

impl ProbeRun {
    /// A record's measurement, read through the results.csv column getters (so the search
    /// judges exactly what the row says).
    pub fn of(r: &RunRecord, axis: Axis, bounds: &[SloBound]) -> ProbeRun {
        let cell = |name: &str| {
            run_record::LEADING
                .iter()
                .chain(run_record::trailing().iter())
                .find(|c| c.name == name)
                .and_then(|c| (c.get)(r).parse::<f64>().ok())
        };
        ProbeRun {
            load: load_of(axis, r.concurrency, r.request_rate),
            failed: r.status != RunStatus::Ok,
            values: bounds.iter().map(|b| cell(&b.column)).collect(),
        }
    }
}

impl ProbeRun {
    /// A recorded row's measurement (resume replays the search from these).
    pub fn of_row(r: &Row, axis: Axis, bounds: &[SloBound]) -> ProbeRun {
        ProbeRun {
            load: match axis {
                Axis::Concurrency => r.f64("concurrency").unwrap_or(f64::NAN),
                Axis::RequestRate => r.f64("request_rate").unwrap_or(f64::NAN),
            },
            failed: !r.is_ok(),
            values: bounds.iter().map(|b| r.f64(&b.column)).collect(),
        }
    }
}

/// Each configuration's recorded max-load probes among `rows` (resume and Slurm tasks replay
/// the search from them).
pub fn recorded_probes(spec: &SweepSpec, rows: &[&Row], run: &RunConfig) -> Vec<ProbeRun> {
    match (&spec.search.max_load, &spec.objective) {
        (Some(ml), Some(o)) => rows
            .iter()
            .filter(|r| r.get("phase") == "probe" && r.get("run_name") == run.name)
            .map(|r| ProbeRun::of_row(r, ml.axis, &o.slo))
            .collect(),
        _ => Vec::new(),
    }
}

/// The searched load of a row.
pub fn load_of(axis: Axis, concurrency: u64, request_rate: Option<f64>) -> f64 {
    match axis {
        Axis::Concurrency => concurrency as f64,
        Axis::RequestRate => request_rate.unwrap_or(f64::NAN),
    }
}

/// The load point a probe at `load` measures: the concurrency itself, or the rate with the
/// workload's concurrency as the cap on requests in flight.
pub fn point(axis: Axis, load: f64, w: &WorkloadSpec) -> LoadPoint {
    match axis {
        Axis::Concurrency => LoadPoint {
            concurrency: load.round().max(1.0) as u64,
            request_rate: None,
        },
        Axis::RequestRate => LoadPoint {
            concurrency: w.concurrency,
            request_rate: Some(load),
        },
    }
}

/// What a probe's measurements so far say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judged {
    /// Measure it (again).
    Repeat,
    Done(ProbeResult),
}

/// Judge one probe from its measurements (at one load).
pub fn judge(bounds: &[SloBound], noise: f64, max_repeats: u64, runs: &[&ProbeRun]) -> Judged {
    if runs.is_empty() {
        return Judged::Repeat;
    }
    if runs.iter().any(|r| r.failed) {
        return Judged::Done(ProbeResult::Fail);
    }
    let mut all_hold = true;
    let mut decided_miss = false;
    let mut close = false;
    for (i, b) in bounds.iter().enumerate() {
        let vals: Vec<f64> = runs.iter().filter_map(|r| r.values[i]).collect();
        if vals.len() < runs.len() {
            // An empty cell (no stats to judge by) cannot show the SLO holds.
            return Judged::Done(ProbeResult::Fail);
        }
        let med = median(&vals);
        let holds = b.bound.holds(med, b.limit);
        let near = if vals.len() == 1 {
            (vals[0] - b.limit).abs() <= noise * b.limit
        } else {
            let sides = vals.iter().filter(|&&v| b.bound.holds(v, b.limit)).count();
            sides != 0 && sides != vals.len()
        };
        all_hold &= holds;
        if near {
            close = true;
        } else if !holds {
            decided_miss = true;
        }
    }
    if decided_miss {
        // One bound is clearly missed: whatever the others say, the probe does not pass.
        return Judged::Done(ProbeResult::Fail);
    }
    if !close {
        return Judged::Done(if all_hold {
            ProbeResult::Pass
        } else {
            ProbeResult::Fail
        });
    }
    if (runs.len() as u64) < max_repeats {
        Judged::Repeat
    } else {
        Judged::Done(ProbeResult::Uncertain)
    }
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// The search's next move.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step {
    /// Measure `load`, as its `repeat`-th measurement.
    Probe { load: f64, repeat: u64 },
    /// Finished: the highest load that passed (None: not even `from`).
    Done { max_load: Option<f64> },
}

/// The next step of the search, given every measurement made so far (in any order).
pub fn next_step(ml: &MaxLoad, bounds: &[SloBound], noise: f64, history: &[ProbeRun]) -> Step {
    let r = ml.range;
    let at = |x: f64| -> Vec<&ProbeRun> {
        history
            .iter()
            .filter(|p| (p.load - x).abs() <= 1e-9 * x.abs().max(1.0))
            .collect()
    };
    // Ramp.
    let mut lo: Option<f64> = None;
    let mut x = r.from;
    let hi = loop {
        let runs = at(x);
        match judge(bounds, noise, ml.repeats, &runs) {
            Judged::Repeat => {
                return Step::Probe {
                    load: x,
                    repeat: runs.len() as u64 + 1,
                };
            }
            Judged::Done(ProbeResult::Pass) => {
                lo = Some(x);
                if x >= r.to {
                    return Step::Done { max_load: lo };
                }
                x = snap(ml.axis, (x * 2.0).min(r.to), r.resolution).min(r.to);
            }
            Judged::Done(_) => break x,
        }
    };
    let Some(mut lo) = lo else {
        return Step::Done { max_load: None };
    };
    // Bisect.
    let mut hi = hi;
    while hi - lo > r.resolution * (1.0 + 1e-9) {
        let mid = snap(ml.axis, lo + (hi - lo) / 2.0, r.resolution);
        let mid = if ml.axis == Axis::Concurrency {
            // Whole steps of the resolution above lo, strictly inside (lo, hi).
            let steps = ((mid - lo) / r.resolution).floor().max(1.0);
            lo + steps * r.resolution
        } else {
            mid
        };
        if mid <= lo || mid >= hi {
            break;
        }
        let runs = at(mid);
        match judge(bounds, noise, ml.repeats, &runs) {
            Judged::Repeat => {
                return Step::Probe {
                    load: mid,
                    repeat: runs.len() as u64 + 1,
                };
            }
            Judged::Done(ProbeResult::Pass) => lo = mid,
            Judged::Done(_) => hi = mid,
        }
    }
    Step::Done { max_load: Some(lo) }
}

/// A concurrency is a whole number; a rate is kept to a few significant digits, so its
/// results.csv text stays short and reads back as the same number.
fn snap(axis: Axis, x: f64, _resolution: f64) -> f64 {
    match axis {
        Axis::Concurrency => x.floor().max(1.0),
        Axis::RequestRate => {
            let mag = 10f64.powi(x.abs().log10().floor() as i32 - 3);
            (x / mag).round() * mag
        }
    }
}

/// The standing of every load the history measured, for the rows' `probe` column.
pub fn verdicts(
    ml: &MaxLoad,
    bounds: &[SloBound],
    noise: f64,
    history: &[ProbeRun],
) -> Vec<(f64, Option<ProbeResult>)> {
    let mut loads: Vec<f64> = Vec::new();
    for p in history {
        if !loads
            .iter()
            .any(|l| (l - p.load).abs() <= 1e-9 * l.abs().max(1.0))
        {
            loads.push(p.load);
        }
    }
    loads
        .into_iter()
        .map(|l| {
            let runs: Vec<&ProbeRun> = history
                .iter()
                .filter(|p| (p.load - l).abs() <= 1e-9 * l.abs().max(1.0))
                .collect();
            let v = match judge(bounds, noise, ml.repeats, &runs) {
                Judged::Done(v) => Some(v),
                Judged::Repeat => None,
            };
            (l, v)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::search::Range;
    use crate::plan::spec::Bound;

    fn ttft_bound(limit: f64) -> Vec<SloBound> {
        vec![SloBound {
            column: "ttft_ms_p99".into(),
            bound: Bound::AtMost,
            limit,
        }]
    }

    fn ml(from: f64, to: f64, resolution: f64, repeats: u64) -> MaxLoad {
        MaxLoad {
            axis: Axis::Concurrency,
            range: Range {
                from,
                to,
                resolution,
            },
            repeats,
        }
    }

    /// Run the search against a server whose TTFT p99 is `f(load)` (plus noise from `noise`,
    /// called with the load and the repeat), and return the answer and the probes made.
    fn search(
        m: &MaxLoad,
        bounds: &[SloBound],
        noise_frac: f64,
        f: &dyn Fn(f64, u64) -> f64,
    ) -> (Option<f64>, Vec<ProbeRun>) {
        let mut history = Vec::new();
        for _ in 0..200 {
            match next_step(m, bounds, noise_frac, &history) {
                Step::Done { max_load } => return (max_load, history),
                Step::Probe { load, repeat } => history.push(ProbeRun {
                    load,
                    failed: false,
                    values: vec![Some(f(load, repeat))],
                }),
            }
        }
        panic!("the search did not finish in 200 probes");
    }

    #[test]
    fn finds_the_knee_exactly_at_resolution_one() {
        // TTFT is 100 ms up to a knee, then the queue makes it 10 s: SLO 2000 ms.
        for knee in [1.0, 2.0, 7.0, 10.0, 33.0, 63.0, 64.0] {
            let (got, probes) = search(
                &ml(1.0, 64.0, 1.0, 3),
                &ttft_bound(2000.0),
                0.05,
                &|c, _| if c <= knee { 100.0 } else { 10_000.0 },
            );
            assert_eq!(got, Some(knee), "knee {knee}");
            // Ramp (≤ 7 doublings) plus bisection (≤ 5 halvings of the last gap).
            assert!(probes.len() <= 13, "knee {knee}: {} probes", probes.len());
        }
    }

    #[test]
    fn lands_within_one_step_of_the_knee_at_a_coarser_resolution() {
        for knee in [5.0, 19.0, 40.0, 77.0] {
            let (got, _) = search(
                &ml(2.0, 100.0, 4.0, 3),
                &ttft_bound(2000.0),
                0.05,
                &|c, _| if c <= knee { 100.0 } else { 9000.0 },
            );
            let got = got.unwrap_or(0.0);
            assert!(got <= knee && knee - got <= 4.0, "knee {knee}: got {got}");
        }
    }

    #[test]
    fn not_even_from_passes() {
        let (got, probes) = search(&ml(4.0, 64.0, 1.0, 3), &ttft_bound(50.0), 0.05, &|_, _| {
            100.0
        });
        assert_eq!(got, None);
        assert_eq!(probes.len(), 1);
    }

    #[test]
    fn a_probe_near_the_bound_is_repeated_and_a_straddle_is_uncertain() {
        let b = ttft_bound(1000.0);
        let near = |v: f64| ProbeRun {
            load: 8.0,
            failed: false,
            values: vec![Some(v)],
        };
        // Far from the bound: decided by one measurement.
        assert_eq!(
            judge(&b, 0.05, 3, &[&near(500.0)]),
            Judged::Done(ProbeResult::Pass)
        );
        assert_eq!(
            judge(&b, 0.05, 3, &[&near(1500.0)]),
            Judged::Done(ProbeResult::Fail)
        );
        // Within 5% of it: measured again.
        assert_eq!(judge(&b, 0.05, 3, &[&near(980.0)]), Judged::Repeat);
        // Two on the same side decide; a straddle asks for a third, then is uncertain.
        assert_eq!(
            judge(&b, 0.05, 3, &[&near(980.0), &near(990.0)]),
            Judged::Done(ProbeResult::Pass)
        );
        assert_eq!(
            judge(&b, 0.05, 3, &[&near(980.0), &near(1010.0)]),
            Judged::Repeat
        );
        assert_eq!(
            judge(&b, 0.05, 3, &[&near(980.0), &near(1010.0), &near(990.0)]),
            Judged::Done(ProbeResult::Uncertain)
        );
        // A failed measurement fails the probe; an empty cell cannot pass it.
        let failed = ProbeRun {
            failed: true,
            ..near(10.0)
        };
        assert_eq!(
            judge(&b, 0.05, 3, &[&failed]),
            Judged::Done(ProbeResult::Fail)
        );
        let empty = ProbeRun {
            values: vec![None],
            ..near(10.0)
        };
        assert_eq!(
            judge(&b, 0.05, 3, &[&empty]),
            Judged::Done(ProbeResult::Fail)
        );
    }

    #[test]
    fn noisy_probes_near_the_knee_never_claim_a_load_that_fails() {
        // TTFT rises linearly through the bound at c = 20; ±3% noise by repeat.
        let f = |c: f64, k: u64| {
            let base = 100.0 * c;
            base * (1.0 + 0.03 * [0.0, 1.0, -1.0, 0.5][(k as usize) % 4])
        };
        let (got, probes) = search(&ml(1.0, 64.0, 1.0, 3), &ttft_bound(2000.0), 0.05, &f);
        let got = got.unwrap_or(0.0);
        assert!((19.0..=20.0).contains(&got), "got {got}");
        // Every load the search claims passed was a pass by the rule.
        let v = verdicts(&ml(1.0, 64.0, 1.0, 3), &ttft_bound(2000.0), 0.05, &probes);
        for (l, r) in v {
            if l <= got {
                assert_ne!(r, Some(ProbeResult::Fail), "load {l}");
            }
        }
    }

    #[test]
    fn replaying_the_history_continues_where_it_stopped() {
        let m = ml(1.0, 64.0, 1.0, 3);
        let b = ttft_bound(2000.0);
        let f = |c: f64| if c <= 21.0 { 100.0 } else { 5000.0 };
        let (_, full) = search(&m, &b, 0.05, &|c, _| f(c));
        // Cut the history anywhere: the next step is the next probe the full run made.
        for cut in 0..full.len() {
            match next_step(&m, &b, 0.05, &full[..cut]) {
                Step::Probe { load, .. } => assert_eq!(load, full[cut].load, "cut {cut}"),
                Step::Done { .. } => panic!("done early at cut {cut}"),
            }
        }
    }

    #[test]
    fn request_rates_are_bisected_to_the_resolution() {
        let m = MaxLoad {
            axis: Axis::RequestRate,
            range: Range {
                from: 0.5,
                to: 16.0,
                resolution: 0.25,
            },
            repeats: 1,
        };
        let (got, _) = search(&m, &ttft_bound(2000.0), 0.05, &|r, _| {
            if r <= 5.3 { 100.0 } else { 9000.0 }
        });
        let got = got.unwrap_or(0.0);
        assert!(got <= 5.3 && 5.3 - got <= 0.25, "got {got}");
    }
}
