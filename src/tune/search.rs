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
use crate::record::Phase;
use crate::record::rows::{Col, Row};
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
        let cell = |col: &Col| match col {
            Col::Listed(c) => run_record::cell(*c, r).parse::<f64>().ok(),
            // A swept key's column has no direction, so it is no bound's: a spec never names it.
            Col::Param(_) => None,
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
                Axis::Concurrency => r.concurrency().map_or(f64::NAN, |c| c as f64),
                Axis::RequestRate => r.request_rate().unwrap_or(f64::NAN),
            },
            failed: !r.is_ok(),
            values: bounds.iter().map(|b| r.metric(&b.column)).collect(),
        }
    }
}

/// Each configuration's recorded max-load probes among `rows` (resume and Slurm tasks replay
/// the search from them).
pub fn recorded_probes(spec: &SweepSpec, rows: &[&Row], run: &RunConfig) -> Vec<ProbeRun> {
    match (&spec.search.max_load, &spec.objective) {
        (Some(ml), Some(o)) => rows
            .iter()
            .filter(|r| r.phase() == Phase::Probe && r.run_name() == run.name)
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
            column: Col::TTFT_MS_P99,
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
        // The load claimed, and every load below it that was measured, passed by the rule:
        // not `fail`, and not `uncertain` either (the search cannot show those hold).
        let v = verdicts(&ml(1.0, 64.0, 1.0, 3), &ttft_bound(2000.0), 0.05, &probes);
        assert!(v.iter().any(|(l, _)| *l == got), "{got} was never measured");
        for (l, r) in &v {
            if *l <= got {
                assert_eq!(*r, Some(ProbeResult::Pass), "load {l}: {v:?}");
            } else {
                assert_ne!(*r, Some(ProbeResult::Pass), "load {l} passed above {got}");
            }
        }
        // Near the bound the noise made some probe uncertain or repeated: the test is not
        // one the cliff alone would pass.
        assert!(probes.len() > v.len(), "no probe was repeated: {probes:?}");
    }

    /// A probe whose repeats straddle the bound: 980, 1010, 990 ms against 1,000 ms.
    fn straddle(repeat: u64) -> f64 {
        [980.0, 1010.0, 990.0][((repeat.max(1) - 1) % 3) as usize]
    }

    #[test]
    fn an_uncertain_probe_in_the_ramp_is_a_miss() {
        // 1 and 2 pass clearly, 4 is uncertain (its median holds, its repeats straddle), 5
        // and above fail: the highest load shown to hold is 3, not 4.
        let f = |c: f64, k: u64| {
            if c <= 3.0 {
                500.0
            } else if c == 4.0 {
                straddle(k)
            } else {
                5000.0
            }
        };
        let m = ml(1.0, 64.0, 1.0, 3);
        let (got, probes) = search(&m, &ttft_bound(1000.0), 0.05, &f);
        assert_eq!(got, Some(3.0), "{probes:?}");
        let v = verdicts(&m, &ttft_bound(1000.0), 0.05, &probes);
        assert!(v.contains(&(4.0, Some(ProbeResult::Uncertain))), "{v:?}");
        // The ramp stopped at the uncertain probe: nothing above 4 was measured.
        assert!(probes.iter().all(|p| p.load <= 4.0), "{probes:?}");
    }

    #[test]
    fn an_uncertain_probe_in_the_bisection_is_a_miss() {
        // Ramp 1..16 passes, 32 fails; the bisection meets 21, uncertain: the answer is 20.
        let f = |c: f64, k: u64| {
            if c <= 20.0 {
                500.0
            } else if c == 21.0 {
                straddle(k)
            } else {
                5000.0
            }
        };
        let m = ml(1.0, 64.0, 1.0, 3);
        let (got, probes) = search(&m, &ttft_bound(1000.0), 0.05, &f);
        assert_eq!(got, Some(20.0), "{probes:?}");
        let at21 = probes.iter().filter(|p| p.load == 21.0).count();
        assert_eq!(at21, 3, "21 measured up to the repeat cap: {probes:?}");
        let v = verdicts(&m, &ttft_bound(1000.0), 0.05, &probes);
        assert!(v.contains(&(21.0, Some(ProbeResult::Uncertain))), "{v:?}");
    }

    #[test]
    fn an_uncertain_top_of_the_range_is_not_claimed() {
        // Everything passes up to `to`, which is uncertain: the answer is the load below it.
        let f = |c: f64, k: u64| if c < 8.0 { 500.0 } else { straddle(k) };
        let (got, _) = search(&ml(1.0, 8.0, 1.0, 3), &ttft_bound(1000.0), 0.05, &f);
        assert_eq!(got, Some(7.0));
        // And with `to` a clear pass, `to` itself is the answer after the ramp reaches it.
        let (got, probes) = search(&ml(1.0, 8.0, 1.0, 3), &ttft_bound(1000.0), 0.05, &|_, _| {
            500.0
        });
        assert_eq!(got, Some(8.0));
        let loads: Vec<f64> = probes.iter().map(|p| p.load).collect();
        assert_eq!(loads, [1.0, 2.0, 4.0, 8.0]);
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

    /// A probe's load comes back from results.csv as printed decimal text, which can differ
    /// from the load asked for in its last digits: a relative difference of 1e-10 at a load
    /// of thousands is still the same probe (the search goes on rather than asking again).
    #[test]
    fn a_load_read_back_with_rounding_is_the_same_probe() {
        let m = ml(100.0, 6400.0, 100.0, 1);
        let mut history: Vec<ProbeRun> = Vec::new();
        let knee = 2500.0;
        let mut asked = Vec::new();
        let got = loop {
            match next_step(&m, &ttft_bound(2000.0), 0.05, &history) {
                Step::Done { max_load } => break max_load,
                Step::Probe { load, .. } => {
                    assert!(
                        !asked.contains(&load),
                        "{load} asked twice: the read-back load was not recognised"
                    );
                    asked.push(load);
                    history.push(ProbeRun {
                        load: load * (1.0 + 1e-10),
                        failed: false,
                        values: vec![Some(if load <= knee { 100.0 } else { 9000.0 })],
                    });
                }
            }
        };
        let got = got.unwrap_or(0.0);
        assert!(got <= knee && knee - got <= 100.0, "got {got}");
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

    #[test]
    fn near_means_within_noise_of_the_bound_on_either_side() {
        // noise 0.25 of a 1,000 ms bound: 750..=1250 is near (exact in binary).
        let b = ttft_bound(1000.0);
        let one = |v: f64| ProbeRun {
            load: 4.0,
            failed: false,
            values: vec![Some(v)],
        };
        assert_eq!(judge(&b, 0.25, 3, &[&one(1250.0)]), Judged::Repeat);
        assert_eq!(judge(&b, 0.25, 3, &[&one(750.0)]), Judged::Repeat);
        assert_eq!(
            judge(&b, 0.25, 3, &[&one(1250.5)]),
            Judged::Done(ProbeResult::Fail)
        );
        assert_eq!(
            judge(&b, 0.25, 3, &[&one(749.5)]),
            Judged::Done(ProbeResult::Pass)
        );
        // With one measurement allowed, near is decided at once: uncertain.
        assert_eq!(
            judge(&b, 0.25, 1, &[&one(1000.0)]),
            Judged::Done(ProbeResult::Uncertain)
        );
        // No measurement yet: measure.
        assert_eq!(judge(&b, 0.25, 3, &[]), Judged::Repeat);
    }

    #[test]
    fn a_lower_bound_and_several_bounds() {
        // goodput_share ≥ 0.9 and TTFT ≤ 1,000 ms.
        let b = vec![
            SloBound {
                column: Col::Listed(crate::plan::columns::Column::GoodputShare),
                bound: Bound::AtLeast,
                limit: 0.9,
            },
            SloBound {
                column: Col::TTFT_MS_P99,
                bound: Bound::AtMost,
                limit: 1000.0,
            },
        ];
        let p = |g: f64, t: f64| ProbeRun {
            load: 4.0,
            failed: false,
            values: vec![Some(g), Some(t)],
        };
        let j = |runs: &[&ProbeRun]| judge(&b, 0.05, 3, runs);
        assert_eq!(j(&[&p(0.99, 100.0)]), Judged::Done(ProbeResult::Pass));
        assert_eq!(j(&[&p(0.5, 100.0)]), Judged::Done(ProbeResult::Fail));
        assert_eq!(j(&[&p(0.99, 5000.0)]), Judged::Done(ProbeResult::Fail));
        // One bound near, the other clearly missed: a miss, not a repeat.
        assert_eq!(j(&[&p(0.5, 990.0)]), Judged::Done(ProbeResult::Fail));
        assert_eq!(j(&[&p(0.91, 5000.0)]), Judged::Done(ProbeResult::Fail));
        // One bound near, the other clearly held: measure again.
        assert_eq!(j(&[&p(0.91, 100.0)]), Judged::Repeat);
        // Two repeats on the failing side of the lower bound: decided.
        assert_eq!(
            j(&[&p(0.85, 100.0), &p(0.86, 100.0)]),
            Judged::Done(ProbeResult::Fail)
        );
        // One of two repeats has an empty cell: it cannot pass.
        let empty = ProbeRun {
            values: vec![None, Some(100.0)],
            ..p(0.99, 100.0)
        };
        assert_eq!(
            j(&[&p(0.99, 100.0), &empty]),
            Judged::Done(ProbeResult::Fail)
        );
    }

    #[test]
    fn the_median_of_the_repeats_decides_when_they_do_not_straddle() {
        let b = ttft_bound(1000.0);
        let one = |v: f64| ProbeRun {
            load: 4.0,
            failed: false,
            values: vec![Some(v)],
        };
        // Three repeats all just above the bound: a fail, not uncertain.
        assert_eq!(
            judge(&b, 0.05, 3, &[&one(1010.0), &one(1020.0), &one(1030.0)]),
            Judged::Done(ProbeResult::Fail)
        );
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn probes_are_read_from_records_and_rows_alike() {
        let b = vec![
            SloBound {
                column: Col::TTFT_MS_P99,
                bound: Bound::AtMost,
                limit: 1000.0,
            },
            SloBound {
                column: Col::OUTPUT_TOK_S,
                bound: Bound::AtLeast,
                limit: 1.0,
            },
        ];
        let row = crate::tune::testing::row;
        let r = row(&[
            ("status", "ok"),
            ("concurrency", "8"),
            ("request_rate", "2.5"),
            ("ttft_ms_p99", "123.5"),
            ("output_tok_s", ""),
        ]);
        let p = ProbeRun::of_row(&r, Axis::Concurrency, &b);
        assert_eq!(
            p,
            ProbeRun {
                load: 8.0,
                failed: false,
                values: vec![Some(123.5), None],
            }
        );
        assert_eq!(ProbeRun::of_row(&r, Axis::RequestRate, &b).load, 2.5);
        let failed = row(&[("status", "failed"), ("concurrency", "8")]);
        assert!(ProbeRun::of_row(&failed, Axis::Concurrency, &b).failed);
        assert!(
            ProbeRun::of_row(&failed, Axis::RequestRate, &b)
                .load
                .is_nan()
        );
        // A record is read through the results.csv getters: the same numbers.
        let rec = crate::record::RunRecord {
            request_rate: Some(2.5),
            client: Some(crate::observe::client::ClientSummary {
                ttft_ms: crate::observe::client::Stats::of(vec![123.5]),
                output_tok_s: Some(42.0),
                ..Default::default()
            }),
            ..crate::tune::testing::record("a")
        };
        let p = ProbeRun::of(&rec, Axis::Concurrency, &b);
        assert_eq!(p.load, 8.0);
        assert!(!p.failed);
        assert_eq!(p.values, vec![Some(123.5), Some(42.0)]);
        assert_eq!(ProbeRun::of(&rec, Axis::RequestRate, &b).load, 2.5);
        let bad = crate::record::RunRecord {
            status: RunStatus::Failed,
            ..rec
        };
        assert!(ProbeRun::of(&bad, Axis::Concurrency, &b).failed);
        assert!(load_of(Axis::RequestRate, 8, None).is_nan());
    }

    #[test]
    fn recorded_probes_are_the_configurations_probe_rows() {
        let spec = crate::tune::testing::spec(
            "configs:\n  - {name: a}\n  - {name: b}\nworkload:\n  vocab_size: 100\n  concurrency: 1\n  requests: 4\n  input_tokens: 4\n  output_tokens: 4\nobjective:\n  maximize: output_tok_s\n  slo: {ttft_ms_p99: 250}\nsearch:\n  max_load:\n    concurrency: {from: 1, to: 8}\n",
        );
        let plan = crate::plan::expand::expand(&spec);
        let row = |name: &str, phase: &str, c: &str| {
            crate::tune::testing::row(&[
                ("run_name", name),
                ("phase", phase),
                ("status", "ok"),
                ("concurrency", c),
                ("ttft_ms_p99", "100"),
            ])
        };
        let rows = [
            row("a", "probe", "1"),
            row("b", "probe", "1"),
            row("a", "probe", "2"),
            row("a", "measure", "4"),
            row("a", "preflight", "8"),
        ];
        let refs: Vec<&Row> = rows.iter().collect();
        let a = &plan.runs[0];
        assert_eq!(a.name, "a");
        let loads: Vec<f64> = recorded_probes(&spec, &refs, a)
            .iter()
            .map(|p| p.load)
            .collect();
        assert_eq!(loads, [1.0, 2.0]);
        // Without a search, nothing is replayed.
        let mut plain = spec.clone();
        plain.search.max_load = None;
        assert!(recorded_probes(&plain, &refs, a).is_empty());
        let mut no_objective = spec;
        no_objective.objective = None;
        assert!(recorded_probes(&no_objective, &refs, a).is_empty());
    }

    #[test]
    fn a_probe_is_a_load_point() {
        let w = crate::tune::testing::spec(
            "workload:\n  vocab_size: 100\n  concurrency: 64\n  requests: 4\n  input_tokens: 4\n  output_tokens: 4\n",
        )
        .workload;
        assert_eq!(
            point(Axis::Concurrency, 12.4, &w),
            LoadPoint {
                concurrency: 12,
                request_rate: None
            }
        );
        assert_eq!(point(Axis::Concurrency, 0.2, &w).concurrency, 1);
        assert_eq!(
            point(Axis::RequestRate, 2.5, &w),
            LoadPoint {
                concurrency: 64,
                request_rate: Some(2.5)
            }
        );
        // Rates keep four significant digits; concurrencies are whole and at least 1.
        assert_eq!(snap(Axis::RequestRate, 1.234_567, 0.1), 1.235);
        assert_eq!(snap(Axis::RequestRate, 123.456_7, 0.1), 123.5);
        assert_eq!(snap(Axis::Concurrency, 7.9, 1.0), 7.0);
        assert_eq!(snap(Axis::Concurrency, 0.5, 1.0), 1.0);
    }

    #[test]
    fn verdicts_leave_a_probe_still_to_repeat_unjudged() {
        let m = ml(1.0, 64.0, 1.0, 3);
        let b = ttft_bound(1000.0);
        let h = [
            ProbeRun {
                load: 1.0,
                failed: false,
                values: vec![Some(100.0)],
            },
            ProbeRun {
                load: 2.0,
                failed: false,
                values: vec![Some(990.0)],
            },
            ProbeRun {
                load: 1.0 + 1e-12,
                failed: false,
                values: vec![Some(100.0)],
            },
        ];
        assert_eq!(
            verdicts(&m, &b, 0.05, &h),
            vec![(1.0, Some(ProbeResult::Pass)), (2.0, None)]
        );
        // The search asks for 2's second measurement.
        assert_eq!(
            next_step(&m, &b, 0.05, &h),
            Step::Probe {
                load: 2.0,
                repeat: 2
            }
        );
    }
}
