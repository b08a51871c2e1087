//! The response model (issue 42): what the server's own evidence says a point of the space will
//! do, rebuilt from every launch so far on each call (pure, so `resume` replays it).
//!
//! - **Step time by running batch.** Each launch's `Decode batch` lines, bucketed by
//!   `#running-req` (results.csv `decode_steps`), give the decode step's time at several batch
//!   sizes: the ramp and the drain of one launch already span a few, and each launch adds
//!   more. A weighted least-squares line `step = a + b × running` per graph mode (captured
//!   graphs, eager) is the fit; a launch's TPOT bound is then its step time times the launch's
//!   own ratio of measured TPOT to fitted step (the tail of the step, the prefill stalls).
//! - **Queue wait.** In a closed loop of `C` clients with `R` running, a request waits for
//!   `(C − R) ÷ R` services (Little's law), each `output tokens × step(R)`: TTFT ≈
//!   `T0 + k × (C − R) ÷ R × step(R)`, with `k` calibrated from a launch that had a queue.
//! - **KV capacity.** The pool's size in tokens is logged per launch; a KV knob whose change
//!   left it the same holds no running request more (HiCache on SGLang extends the prefix
//!   cache into host memory, not the pool).
//!
//! From these, [`Band`]: the running batches the SLO allows, TPOT bounding it from above and
//! TTFT from below, at the load offered. The strategy sizes its moves to it both ways and
//! stops, saying so with numbers, when it is empty.

use super::{Evidence, Observation, Outcome, Point, Space, StepSample};

/// Share of an SLO limit a move aims at. At the limit itself: a move that overshoots costs one
/// launch (its own evidence, refitted, names the next value down), while one that keeps room
/// below the limit can stop a value short of the best point and never see it (the best point
/// of a trade sits just under its bound).
pub const AIM: f64 = 1.0;

/// The fewest distinct batch sizes a fit must span to have a slope of its own.
const MIN_SIZES: usize = 2;

/// `step = a + b × running` (ms), fitted over decode buckets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepFit {
    pub a: f64,
    pub b: f64,
    /// Decode lines the fit rests on.
    pub lines: u32,
    /// Distinct batch sizes among them.
    pub sizes: usize,
    /// The weighted mean batch the line pivots on, and the variances of the line's height
    /// there and of its slope, from the buckets' scatter about it (0 with too few buckets to
    /// tell): what [`StepFit::kind_at`] takes off.
    mx: f64,
    var_mean: f64,
    var_b: f64,
}

impl StepFit {
    /// The fitted step at `running` (ms).
    pub fn at(&self, running: f64) -> f64 {
        (self.a + self.b * running).max(f64::MIN_POSITIVE)
    }

    /// The kind edge of the fit at `running`: the line less two standard errors of it there
    /// (about a 95% lower bound). A slope from two plateaus a few lines each, each one draw of
    /// a launch's noise, can be twice the true one: a stop that the line's centre would make
    /// must hold at its kind edge too.
    pub fn kind_at(&self, running: f64) -> f64 {
        let d = running - self.mx;
        let se = (self.var_mean + self.var_b * d * d).max(0.0).sqrt();
        (self.at(running) - 2.0 * se).max(f64::MIN_POSITIVE)
    }

    /// Whether the fit has a slope of its own (enough sizes), not the prior's.
    pub fn measured_slope(&self) -> bool {
        self.sizes >= MIN_SIZES
    }

    /// The largest running batch whose step times `ratio` is at most `limit`; None when no
    /// batch of one meets it; infinite when the step does not grow with the batch.
    pub fn max_running(&self, ratio: f64, limit: f64) -> Option<f64> {
        let per = limit / ratio.max(f64::MIN_POSITIVE);
        if self.a + self.b > per {
            return None;
        }
        if self.b <= 0.0 {
            return Some(f64::INFINITY);
        }
        Some((per - self.a) / self.b)
    }
}

/// Weighted least squares over `(running, step_ms, lines)`. With fewer than [`MIN_SIZES`]
/// sizes the slope cannot be told from the data: the prior is that half the step at the one
/// size seen grows with the batch (a decode step reads the weights once and each request's
/// KV), which a second size replaces.
pub fn fit(samples: &[&StepSample]) -> Option<StepFit> {
    let usable: Vec<(f64, f64, f64)> = samples
        .iter()
        .filter(|s| s.running >= 1.0 && s.step_ms.is_finite() && s.step_ms > 0.0 && s.lines > 0)
        .map(|s| (s.running, s.step_ms, f64::from(s.lines)))
        .collect();
    let w: f64 = usable.iter().map(|s| s.2).sum();
    if usable.is_empty() || w <= 0.0 {
        return None;
    }
    let lines = usable.iter().map(|s| s.2 as u32).sum();
    let mut sizes: Vec<f64> = usable.iter().map(|s| s.0.round()).collect();
    sizes.sort_by(f64::total_cmp);
    sizes.dedup();
    let mx = usable.iter().map(|s| s.0 * s.2).sum::<f64>() / w;
    let my = usable.iter().map(|s| s.1 * s.2).sum::<f64>() / w;
    let sxx: f64 = usable.iter().map(|s| s.2 * (s.0 - mx).powi(2)).sum();
    let sxy: f64 = usable.iter().map(|s| s.2 * (s.0 - mx) * (s.1 - my)).sum();
    let (a, b) = if sizes.len() >= MIN_SIZES && sxx > 0.0 {
        // A step never shrinks as the batch grows: a falling line is noise, read as flat.
        let b = (sxy / sxx).max(0.0);
        (my - b * mx, b)
    } else {
        (my / 2.0, my / 2.0 / mx.max(1.0))
    };
    // A line below zero at one request is an extrapolation past the data: hold it at the
    // smallest step seen, the slope through the mean.
    let (a, b) = if a + b <= 0.0 {
        let least = usable.iter().map(|s| s.1).fold(f64::INFINITY, f64::min);
        let b = ((my - least) / (mx - 1.0).max(1.0)).max(0.0);
        (my - b * mx, b)
    } else {
        (a, b)
    };
    // The line's uncertainty from the buckets' scatter about it: each bucket one draw (its
    // lines share a launch's conditions, so they are not independent draws), weighted as the
    // line was. Var(height at mx) = σ²·Σv², Var(b) = σ²·Σv²(x−mx)² ÷ (Σv(x−mx)²)², v = w ÷ W.
    let n = usable.len();
    let (var_mean, var_b) = if n > 2 && sizes.len() >= MIN_SIZES && sxx > 0.0 {
        let s2 = usable
            .iter()
            .map(|s| (s.1 - (a + b * s.0)).powi(2))
            .sum::<f64>()
            / (n - 2) as f64;
        let v2: f64 = usable.iter().map(|s| (s.2 / w).powi(2)).sum();
        let v2x: f64 = usable
            .iter()
            .map(|s| (s.2 / w).powi(2) * (s.0 - mx).powi(2))
            .sum();
        (s2 * v2, s2 * v2x / (sxx / w).powi(2))
    } else {
        (0.0, 0.0)
    };
    Some(StepFit {
        a,
        b,
        lines,
        sizes: sizes.len(),
        mx,
        var_mean,
        var_b,
    })
}

/// What kind of bound a column is, for the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Latency {
    /// Time per output token: the decode step's tail.
    Tpot,
    /// Time to the first token: prefill and the queue.
    Ttft,
}

/// The kind of an SLO column, by the name every engine's rows give it.
pub fn latency_of(column: &str) -> Option<Latency> {
    if column.starts_with("tpot_") || column.starts_with("itl_") {
        Some(Latency::Tpot)
    } else if column.starts_with("ttft_") {
        Some(Latency::Ttft)
    } else {
        None
    }
}

/// One upper bound of the SLO on a latency the model predicts.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyBound {
    pub column: String,
    pub limit: f64,
}

/// The model, read from every launch so far (once per call of the strategy: `State` holds it).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Model {
    /// Steps with graphs (or where the log does not say), and eager steps.
    pub graphs: Option<StepFit>,
    pub eager: Option<StepFit>,
    pub tpot: Option<LatencyBound>,
    pub ttft: Option<LatencyBound>,
    /// Per launch (index into `seen`): the measured TPOT bound over the fitted step at its
    /// peak running batch, when it has both.
    tpot_ratio: Vec<Option<f64>>,
    /// TTFT with no queue (the least measured at a launch without one), and the queue's
    /// factor `k`, from the launch with a queue nearest to the base.
    ttft0: Option<f64>,
    ttft_k: Vec<Option<f64>>,
    /// Per knob: a KV knob whose change left the pool's size the same (within 1%).
    pub no_kv_effect: Vec<bool>,
}

fn evidence(o: &Observation) -> Option<&Evidence> {
    match &o.outcome {
        Outcome::Measured { evidence, .. } => Some(evidence),
        Outcome::Failed { .. } => None,
    }
}

/// The upper SLO bound of one kind in an evidence, with its measured value.
fn bound_of(e: &Evidence, kind: Latency) -> Option<(&str, f64, Option<f64>)> {
    e.bounds
        .iter()
        .filter(|b| b.at_most && latency_of(&b.column) == Some(kind))
        .map(|b| (b.column.as_str(), b.limit, b.measured))
        // The tightest relative to what was measured: the one that binds.
        .max_by(|x, y| {
            let r = |b: &(&str, f64, Option<f64>)| b.2.unwrap_or(0.0) / b.1.max(f64::MIN_POSITIVE);
            r(x).total_cmp(&r(y))
        })
}

/// Whether most of a launch's decode lines ran with graphs (None: the log did not say).
pub fn ran_with_graphs(e: &Evidence) -> Option<bool> {
    let (mut on, mut off) = (0u64, 0u64);
    for s in &e.steps {
        match s.graph {
            Some(true) => on += u64::from(s.lines),
            Some(false) => off += u64::from(s.lines),
            None => {}
        }
    }
    (on + off > 0).then_some(on >= off)
}

impl Model {
    pub fn read(space: &Space, seen: &[Observation]) -> Model {
        let all: Vec<&StepSample> = seen
            .iter()
            .filter_map(evidence)
            .flat_map(|e| e.steps.iter())
            .collect();
        let graphs = fit(&all
            .iter()
            .copied()
            .filter(|s| s.graph != Some(false))
            .collect::<Vec<_>>());
        let eager = fit(&all
            .iter()
            .copied()
            .filter(|s| s.graph == Some(false))
            .collect::<Vec<_>>());
        let first = |kind| {
            seen.iter()
                .filter_map(evidence)
                .find_map(|e| bound_of(e, kind))
                .map(|(c, l, _)| LatencyBound {
                    column: c.to_string(),
                    limit: l,
                })
        };
        let mut m = Model {
            graphs,
            eager,
            tpot: first(Latency::Tpot),
            ttft: first(Latency::Ttft),
            tpot_ratio: Vec::new(),
            ttft0: None,
            ttft_k: Vec::new(),
            no_kv_effect: vec![false; space.knobs.len()],
        };
        m.tpot_ratio = seen
            .iter()
            .map(|o| {
                let e = evidence(o)?;
                let (_, _, measured) = bound_of(e, Latency::Tpot)?;
                // A TPOT tail is the steps at the peak batch, not the mean's: the ramp and
                // the drain run smaller (faster) batches.
                let r = e.running_max.or(e.running_mean)?;
                let step = m.step(ran_with_graphs(e) != Some(false), r)?;
                measured
                    .map(|x| x / step)
                    .filter(|x| x.is_finite() && *x > 0.0)
            })
            .collect();
        m.ttft0 = seen
            .iter()
            .filter_map(evidence)
            .filter(|e| queue_share(e) == Some(0.0))
            .filter_map(|e| bound_of(e, Latency::Ttft).and_then(|b| b.2))
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.min(x))));
        m.ttft_k = seen
            .iter()
            .map(|o| {
                let e = evidence(o)?;
                let (_, _, measured) = bound_of(e, Latency::Ttft)?;
                let (r, c) = (e.running_mean?, e.offered?);
                if r < 1.0 || c <= r + 0.5 {
                    return None;
                }
                let step = m.step(ran_with_graphs(e) != Some(false), r)?;
                let wait = measured? - m.ttft0.unwrap_or(0.0);
                let k = wait / ((c - r) / r * step);
                (k.is_finite() && k > 0.0).then_some(k)
            })
            .collect();
        m.no_kv_effect = kv_effect(space, seen);
        m
    }

    /// The fitted step at `running`, with graphs or without; the other mode's fit where this
    /// one has no data.
    pub fn step(&self, graphs: bool, running: f64) -> Option<f64> {
        let f = if graphs {
            self.graphs.or(self.eager)
        } else {
            self.eager.or(self.graphs)
        }?;
        Some(f.at(running))
    }

    fn fit_for(&self, graphs: bool) -> Option<StepFit> {
        if graphs {
            self.graphs.or(self.eager)
        } else {
            self.eager.or(self.graphs)
        }
    }

    /// The TPOT ratio for a prediction from launch `i`: its own, else the median of all.
    fn tpot_ratio_at(&self, i: usize) -> Option<f64> {
        self.tpot_ratio
            .get(i)
            .copied()
            .flatten()
            .or_else(|| median(self.tpot_ratio.iter().flatten().copied().collect()))
    }

    fn ttft_k_at(&self, i: usize) -> Option<f64> {
        self.ttft_k
            .get(i)
            .copied()
            .flatten()
            .or_else(|| median(self.ttft_k.iter().flatten().copied().collect()))
    }

    /// Predicted TTFT (the bound's column) with `running` of `offered`, calibrated on launch
    /// `i`; None before any launch had a queue.
    pub fn ttft_at(&self, i: usize, graphs: bool, running: f64, offered: f64) -> Option<f64> {
        let k = self.ttft_k_at(i)?;
        let r = running.max(1.0);
        let q = (offered - r).max(0.0);
        Some(self.ttft0.unwrap_or(0.0) + k * q / r * self.step(graphs, r)?)
    }

    /// The running batches the SLO allows at `offered`, predicted from launch `i`, each bound
    /// taken at `aim` of its limit.
    pub fn band(&self, i: usize, graphs: bool, offered: f64, aim: f64) -> Band {
        self.band_with(i, graphs, offered, aim, self.tpot_ratio_at(i), false)
    }

    /// [`Model::band`] as kind as the evidence allows, for a finding that ends the exploration:
    /// the least TPOT tail any launch measured (one p99 is one draw of a heavy tail: an
    /// outlier launch's, or two, must not end a tune) on the fit's kind edge
    /// ([`StepFit::kind_at`]: a slope from a few noisy plateaus can be twice the true one).
    pub fn band_kind(&self, i: usize, graphs: bool, offered: f64, aim: f64) -> Band {
        let least = self
            .tpot_ratio
            .iter()
            .flatten()
            .copied()
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.min(x))));
        self.band_with(i, graphs, offered, aim, least, true)
    }

    fn band_with(
        &self,
        i: usize,
        graphs: bool,
        offered: f64,
        aim: f64,
        ratio: Option<f64>,
        kind: bool,
    ) -> Band {
        let hi = match (&self.tpot, self.fit_for(graphs), ratio) {
            // The kind edge is no line: the most running it meets the bound at, scanned up
            // to the load (meeting it there: any batch the load can make).
            (Some(b), Some(f), Some(r)) if kind => {
                let top = offered.max(1.0).ceil() as u64;
                let meets = |x: u64| r * f.kind_at(x as f64) <= b.limit * aim;
                if meets(top) {
                    let line = f.max_running(r, b.limit * aim);
                    Some(line.map_or(top as f64, |x| x.floor().max(top as f64)))
                } else {
                    (1..=top).rev().find(|&x| meets(x)).map(|x| x as f64)
                }
            }
            (Some(b), Some(f), Some(r)) => f.max_running(r, b.limit * aim).map(|x| x.floor()),
            _ => Some(f64::INFINITY),
        };
        // The least running whose predicted TTFT meets its bound: the prediction falls as the
        // running batch grows (the queue empties faster than the step slows), so scan up.
        let lo = match (&self.ttft, self.ttft_k_at(i)) {
            (Some(b), Some(_)) => {
                let top = offered.max(1.0).ceil() as u64;
                (1..=top)
                    .map(|r| r as f64)
                    .find(|&r| {
                        self.ttft_at(i, graphs, r, offered)
                            .is_some_and(|t| t <= b.limit * aim)
                    })
                    .or(Some(f64::INFINITY))
            }
            _ => Some(1.0),
        };
        // Two launches measured the TPOT tail (one p99 is one draw of a heavy tail) and, with
        // a TTFT bound, one had a queue to calibrate the wait on.
        let tails = self.tpot_ratio.iter().flatten().count();
        let known = self.fit_for(graphs).is_some_and(|f| f.measured_slope())
            && (self.tpot.is_none() || tails >= 2)
            && (self.ttft.is_none() || self.ttft_k_at(i).is_some());
        Band {
            lo: lo.unwrap_or(1.0),
            hi,
            known,
        }
    }
}

impl Model {
    /// The most running requests the TPOT bound allows at launch `i`'s load, by the fit at
    /// the limit itself (no room kept): a move that raises the running cap past it is one the
    /// model already knows breaks the bound. None without a bound, a measured slope, or a load.
    pub fn ceiling(&self, seen: &[Observation], i: usize) -> Option<f64> {
        self.tpot.as_ref()?;
        let e = evidence(seen.get(i)?)?;
        let offered = e.offered?;
        let graphs = self.graphs.is_some();
        let f = self.fit_for(graphs)?;
        if !f.measured_slope() {
            return None;
        }
        self.band(i, graphs, offered, 1.0)
            .hi
            .filter(|h| h.is_finite())
    }
}

/// The running batches an SLO allows at one load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Band {
    /// The least running that drains the queue fast enough for the TTFT bound (1: no bound
    /// or nothing known; infinite: no batch does).
    pub lo: f64,
    /// The most running whose step meets the TPOT bound (None: not even one request does;
    /// infinite: no bound, or the step does not grow).
    pub hi: Option<f64>,
    /// The fit measured its slope and, with a TTFT bound, a queue calibrated it: an empty band
    /// is then a finding, not a guess.
    pub known: bool,
}

impl Band {
    pub fn empty(&self) -> bool {
        self.hi.is_none_or(|h| h < self.lo)
    }
}

/// The queue's share of the offered load at a launch (None without the numbers).
fn queue_share(e: &Evidence) -> Option<f64> {
    let (r, c) = (e.running_mean?, e.offered?);
    (c > 0.0)
        .then(|| ((c - r) / c).max(0.0))
        .map(|x| if x < 0.02 { 0.0 } else { x })
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Per knob: whether some launch changed only this KV knob from another launch and the pool's
/// size stayed within 1% (a knob that adds no room for running requests: HiCache's host tier
/// holds prefixes, not the running batch).
pub fn kv_effect(space: &Space, seen: &[Observation]) -> Vec<bool> {
    let pool = |o: &Observation| evidence(o).and_then(|e| e.pool_tokens);
    let mut flat = vec![false; space.knobs.len()];
    let mut moved = vec![false; space.knobs.len()];
    for (i, a) in seen.iter().enumerate() {
        for b in &seen[..i] {
            let Some(k) = super::types::single_change(&a.point, &b.point) else {
                continue;
            };
            if let (Some(x), Some(y)) = (pool(a), pool(b)) {
                if (x - y).abs() <= 0.01 * y.abs().max(1.0) {
                    flat[k] = true;
                } else {
                    moved[k] = true;
                }
            }
        }
    }
    flat.iter().zip(&moved).map(|(&f, &m)| f && !m).collect()
}

/// The running batch a point gets at `offered`: the cap, the pool (in requests), the load.
pub fn running_at(cap: Option<f64>, pool_requests: Option<f64>, offered: f64) -> f64 {
    let mut r = offered;
    if let Some(c) = cap {
        r = r.min(c);
    }
    if let Some(p) = pool_requests {
        r = r.min(p.floor());
    }
    r.max(1.0)
}

/// The number a knob holds at a point, if numeric.
pub fn value(space: &Space, p: &Point, key: &str) -> Option<f64> {
    let k = space.knobs.iter().position(|kn| kn.key == key)?;
    space.knobs[k].values.get(*p.get(k)?)?.as_f64()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::super::SloSeen;
    use super::*;

    fn s(running: f64, step_ms: f64, lines: u32, graph: Option<bool>) -> StepSample {
        StepSample {
            running,
            step_ms,
            graph,
            lines,
        }
    }

    /// A bucket whose step reads 0 ms (or less, or not a number), or that has no lines, is no
    /// measurement: the fit is the one without it.
    #[test]
    fn a_step_of_no_time_or_no_lines_is_left_out_of_the_fit() {
        let v = [
            s(4.0, 12.0, 5, None),
            s(16.0, 18.0, 10, None),
            s(32.0, 26.0, 40, None),
        ];
        let base = fit(&v.iter().collect::<Vec<_>>()).unwrap();
        for bad in [
            s(24.0, 0.0, 20, None),
            s(24.0, -1.0, 20, None),
            s(24.0, f64::NAN, 20, None),
            s(24.0, 15.0, 0, None),
            s(0.5, 15.0, 20, None),
        ] {
            let mut w: Vec<&StepSample> = v.iter().collect();
            w.push(&bad);
            assert_eq!(fit(&w), Some(base), "{bad:?}");
        }
    }

    /// The line's uncertainty, on a case worked by hand: three buckets of one line each at 1,
    /// 2, 3 running, steps 1, 3, 2 ms. The line 1 + 0.5 R; residuals −0.5, 1, −0.5, so σ² =
    /// 1.5 ÷ (3 − 2); Var(height at the mean) = σ² ÷ 3 = 0.5, Var(slope) = σ² ÷ Σ(x − x̄)² = 0.75
    /// (ordinary least squares' own, the weights being equal).
    #[test]
    fn the_fits_uncertainty_matches_least_squares_worked_by_hand() {
        let v = [
            s(1.0, 1.0, 1, None),
            s(2.0, 3.0, 1, None),
            s(3.0, 2.0, 1, None),
        ];
        let f = fit(&v.iter().collect::<Vec<_>>()).unwrap();
        assert!(
            (f.a - 1.0).abs() < 1e-12 && (f.b - 0.5).abs() < 1e-12,
            "{f:?}"
        );
        assert!((f.var_mean - 0.5).abs() < 1e-12, "{f:?}");
        assert!((f.var_b - 0.75).abs() < 1e-12, "{f:?}");
    }

    /// The queue's constant comes from a launch with a queue and at least one request running
    /// on average: one running is a calibration, half a request (the server mostly idle) none.
    #[test]
    fn the_queues_constant_needs_a_request_running() {
        let sp = space1();
        let at = |running: f64| {
            let mut e = ev(
                running,
                8.0,
                vec![bound("ttft_ms_p99", 1000.0, 900.0)],
                line(8.0, None),
            );
            e.running_max = Some(running.max(1.0));
            obs(vec![0], e)
        };
        let m = Model::read(&sp, &[at(1.0), at(0.5)]);
        assert!(m.ttft_k[0].is_some_and(|k| k > 0.0), "{:?}", m.ttft_k);
        assert!(m.ttft_k[1].is_none(), "{:?}", m.ttft_k);
    }

    /// The queue's constant is read with the step of the mode the launch ran in: here it ran
    /// without graphs (10 + 0.5 R: 12 ms at 4 running) beside a launch whose steps ran on
    /// them (3 + 0.25 R). A wait of 900 ms with 4 queued behind 4 running: k = 900 ÷ (1 × 12).
    #[test]
    fn the_queues_constant_is_read_in_the_mode_the_launch_ran() {
        let sp = space1();
        let graphs = ev(
            4.0,
            4.0,
            vec![],
            vec![s(2.0, 3.5, 10, Some(true)), s(4.0, 4.0, 10, Some(true))],
        );
        let mut eager = ev(
            4.0,
            8.0,
            vec![bound("ttft_ms_p99", 1000.0, 900.0)],
            line(8.0, Some(false)),
        );
        eager.running_max = Some(4.0);
        let m = Model::read(&sp, &[obs(vec![0], graphs), obs(vec![1], eager)]);
        assert!(m.graphs.is_some() && m.eager.is_some());
        assert!(
            m.ttft_k[1].is_some_and(|k| (k - 75.0).abs() < 1e-9),
            "{:?}",
            m.ttft_k
        );
    }

    /// A queue under 2% of the offered load is none (a request arriving as another ends); at
    /// 2% it is a queue.
    #[test]
    fn a_queue_of_two_percent_is_a_queue() {
        assert_eq!(queue_share(&ev(49.5, 50.0, vec![], vec![])), Some(0.0));
        assert_eq!(
            queue_share(&ev(49.0, 50.0, vec![], vec![])),
            Some(1.0 / 50.0)
        );
        assert_eq!(queue_share(&ev(51.0, 50.0, vec![], vec![])), Some(0.0));
        assert_eq!(queue_share(&ev(25.0, 50.0, vec![], vec![])), Some(0.5));
    }

    /// Two buckets fit a line exactly and leave no scatter to read an uncertainty from: the
    /// fit claims none (not 0 ÷ 0).
    #[test]
    fn two_buckets_give_a_line_without_an_uncertainty() {
        let v = [s(8.0, 14.0, 10, None), s(16.0, 18.0, 10, None)];
        let f = fit(&v.iter().collect::<Vec<_>>()).unwrap();
        assert!((f.b - 0.5).abs() < 1e-12, "{f:?}");
        assert_eq!((f.var_mean, f.var_b), (0.0, 0.0), "{f:?}");
    }

    /// A launch whose TPOT tail reads 0 (every request one token long) calibrates nothing.
    #[test]
    fn a_tpot_tail_of_zero_is_no_calibration() {
        let sp = space1();
        let mut a = ev(
            64.0,
            64.0,
            vec![bound("tpot_ms_p99", 40.0, 0.0)],
            line(64.0, None),
        );
        a.running_max = Some(64.0);
        let m = Model::read(&sp, &[obs(vec![3], a)]);
        assert!(m.graphs.is_some());
        assert_eq!(m.tpot_ratio, vec![None]);
    }

    #[test]
    fn the_fit_recovers_a_line_from_buckets_of_one_launch() {
        let v = [
            s(4.0, 12.0, 5, None),
            s(16.0, 18.0, 10, None),
            s(32.0, 26.0, 40, None),
        ];
        let f = fit(&v.iter().collect::<Vec<_>>()).unwrap();
        assert!(
            (f.a - 10.0).abs() < 1e-9 && (f.b - 0.5).abs() < 1e-9,
            "{f:?}"
        );
        assert_eq!((f.lines, f.sizes), (55, 3));
        assert!(f.measured_slope());
        assert!((f.at(20.0) - 20.0).abs() < 1e-9);
        // ratio 1.5 under 33 ms: step ≤ 22 → running ≤ 24.
        assert_eq!(f.max_running(1.5, 33.0), Some(24.0));
        assert_eq!(f.max_running(1.5, 15.0), None);
    }

    #[test]
    fn one_size_takes_the_prior_and_a_falling_line_is_flat() {
        let one = [s(10.0, 20.0, 8, None)];
        let f = fit(&one.iter().collect::<Vec<_>>()).unwrap();
        assert!(!f.measured_slope());
        assert!(
            (f.a - 10.0).abs() < 1e-9 && (f.b - 1.0).abs() < 1e-9,
            "{f:?}"
        );
        let falling = [s(2.0, 30.0, 4, None), s(20.0, 10.0, 4, None)];
        let f = fit(&falling.iter().collect::<Vec<_>>()).unwrap();
        assert_eq!(f.b, 0.0);
        assert_eq!(f.max_running(1.0, 100.0), Some(f64::INFINITY));
        assert!(fit(&[]).is_none());
        let junk = [
            s(0.0, 5.0, 3, None),
            s(3.0, f64::NAN, 3, None),
            s(3.0, 4.0, 0, None),
        ];
        assert!(fit(&junk.iter().collect::<Vec<_>>()).is_none());
    }

    #[test]
    fn columns_are_read_as_the_latency_they_bound() {
        assert_eq!(latency_of("tpot_ms_p99"), Some(Latency::Tpot));
        assert_eq!(latency_of("itl_ms_p50"), Some(Latency::Tpot));
        assert_eq!(latency_of("ttft_ms_p99"), Some(Latency::Ttft));
        assert_eq!(latency_of("e2e_ms_p50"), None);
    }

    #[test]
    fn the_running_batch_is_the_least_of_cap_pool_and_load() {
        assert_eq!(running_at(Some(32.0), Some(40.7), 64.0), 32.0);
        assert_eq!(running_at(Some(64.0), Some(40.7), 64.0), 40.0);
        assert_eq!(running_at(None, None, 24.0), 24.0);
        assert_eq!(running_at(Some(0.0), None, 24.0), 1.0);
    }

    #[test]
    fn the_edges_of_the_fit_a_bound_met_exactly_and_sizes_that_round_to_one() {
        let v = [s(4.0, 12.0, 5, None), s(16.0, 18.0, 10, None)];
        let f = fit(&v.iter().collect::<Vec<_>>()).unwrap();
        // One request meets a bound of exactly its step: a batch of one, not none.
        assert_eq!(f.max_running(1.0, f.a + f.b), Some(1.0));
        // 10.0 and 10.3 are one batch size: the prior, not a slope from the 0.3.
        let v = [s(10.0, 20.0, 5, None), s(10.3, 26.0, 5, None)];
        let f = fit(&v.iter().collect::<Vec<_>>()).unwrap();
        assert!(!f.measured_slope());
        // The prior: half the mean step (23 at 10.15) grows with the batch.
        assert!(
            (f.a - 11.5).abs() < 1e-9 && (f.b - 11.5 / 10.15).abs() < 1e-9,
            "{f:?}"
        );
        // A small intercept under a steep slope is a line, not one below zero.
        let v = [s(10.0, 10.5, 5, None), s(20.0, 20.5, 5, None)];
        let f = fit(&v.iter().collect::<Vec<_>>()).unwrap();
        assert!(
            (f.a - 0.5).abs() < 1e-9 && (f.b - 1.0).abs() < 1e-9,
            "{f:?}"
        );
    }

    #[test]
    fn a_band_of_one_batch_size_is_not_empty() {
        let b = |lo: f64, hi: Option<f64>| Band {
            lo,
            hi,
            known: true,
        };
        assert!(!b(5.0, Some(5.0)).empty());
        assert!(b(6.0, Some(5.0)).empty());
        assert!(b(1.0, None).empty());
        assert!(!b(1.0, Some(f64::INFINITY)).empty());
    }

    #[test]
    fn a_line_below_zero_at_one_request_is_held_at_the_least_step_seen() {
        // Through (10, 1) and (20, 11): a = -9, so one request would take -8 ms.
        let v = [s(10.0, 1.0, 5, None), s(20.0, 11.0, 5, None)];
        let f = fit(&v.iter().collect::<Vec<_>>()).unwrap();
        assert!(f.at(1.0) > 0.0, "{f:?}");
        // The slope from the least step (1) to the mean (6 at 15): 5 / 14.
        assert!((f.b - 5.0 / 14.0).abs() < 1e-9, "{f:?}");
        assert!((f.a + f.b * 15.0 - 6.0).abs() < 1e-9, "{f:?}");
    }

    fn ev(running: f64, offered: f64, bounds: Vec<SloSeen>, steps: Vec<StepSample>) -> Evidence {
        Evidence {
            running_mean: Some(running),
            running_max: Some(running),
            offered: Some(offered),
            steps,
            bounds,
            ..Default::default()
        }
    }

    fn bound(column: &str, limit: f64, measured: f64) -> SloSeen {
        SloSeen {
            column: column.into(),
            at_most: true,
            limit,
            measured: Some(measured),
        }
    }

    fn obs(point: Point, e: Evidence) -> Observation {
        Observation::once(
            point,
            Outcome::Measured {
                score: 1.0,
                cv: None,
                eligible: false,
                why_not: String::new(),
                slo_excess: Some(1.5),
                evidence: e,
                not_in_effect: vec![],
            },
        )
    }

    fn line(running: f64, graph: Option<bool>) -> Vec<StepSample> {
        [0.5, 1.0]
            .iter()
            .map(|f| s(running * f, 10.0 + 0.5 * running * f, 10, graph))
            .collect()
    }

    fn space1() -> Space {
        Space {
            knobs: vec![super::super::Knob {
                key: "max_running_requests".into(),
                values: (1..=4)
                    .map(|i| crate::plan::flags::ParamValue::Int(i * 16))
                    .collect(),
            }],
            start: vec![3],
            confirm: 0,
        }
    }

    #[test]
    fn the_binding_bound_of_a_kind_is_the_one_nearest_its_limit() {
        let e = ev(
            8.0,
            8.0,
            vec![
                bound("tpot_ms_p50", 100.0, 50.0),
                bound("tpot_ms_p99", 60.0, 90.0),
                bound("ttft_ms_p99", 10.0, 1.0),
            ],
            vec![],
        );
        assert_eq!(
            bound_of(&e, Latency::Tpot).map(|b| b.0),
            Some("tpot_ms_p99")
        );
        assert_eq!(
            bound_of(&e, Latency::Ttft).map(|b| b.0),
            Some("ttft_ms_p99")
        );
        let mut lower = e.clone();
        lower.bounds = vec![SloSeen {
            at_most: false,
            ..bound("tpot_ms_p99", 60.0, 90.0)
        }];
        assert!(bound_of(&lower, Latency::Tpot).is_none());
    }

    #[test]
    fn graphs_are_the_majority_of_the_lines_that_say() {
        let mut e = ev(
            8.0,
            8.0,
            vec![],
            vec![s(4.0, 1.0, 3, Some(true)), s(8.0, 1.0, 2, Some(false))],
        );
        assert_eq!(ran_with_graphs(&e), Some(true));
        e.steps.push(s(8.0, 1.0, 2, Some(false)));
        assert_eq!(ran_with_graphs(&e), Some(false));
        e.steps = vec![s(8.0, 1.0, 2, Some(false)), s(8.0, 1.0, 2, Some(true))];
        assert_eq!(ran_with_graphs(&e), Some(true), "a tie is graphs");
        e.steps = vec![s(8.0, 1.0, 9, None)];
        assert_eq!(ran_with_graphs(&e), None);
    }

    #[test]
    fn tpot_is_calibrated_at_the_peak_batch_and_ttft_on_a_queue() {
        let sp = space1();
        // step = 10 + 0.5 R. A: 64 of 64 running, no queue, TPOT p99 1.2 × step(64) = 50.4,
        // TTFT 300. B: 32 of 64 running, TTFT 300 + 2 × (32/32) × step(32) = 352.
        let mut a = ev(
            63.5,
            64.0,
            vec![
                bound("tpot_ms_p99", 40.0, 50.4),
                bound("ttft_ms_p99", 1000.0, 300.0),
            ],
            line(64.0, None),
        );
        a.running_max = Some(64.0);
        let b = ev(
            32.0,
            64.0,
            vec![
                bound("tpot_ms_p99", 40.0, 31.2),
                bound("ttft_ms_p99", 1000.0, 352.0),
            ],
            line(32.0, None),
        );
        let seen = vec![obs(vec![3], a), obs(vec![1], b)];
        let m = Model::read(&sp, &seen);
        let f = m.graphs.unwrap();
        assert!(
            (f.a - 10.0).abs() < 1e-9 && (f.b - 0.5).abs() < 1e-9,
            "{f:?}"
        );
        // At the peak (64), not the mean (63.5).
        assert!(
            (m.tpot_ratio[0].unwrap() - 1.2).abs() < 1e-9,
            "{:?}",
            m.tpot_ratio
        );
        // The predicted TPOT at 32 running: the ratio times the step.
        let tpot = m.tpot_ratio_at(0).unwrap() * m.step(true, 32.0).unwrap();
        assert!((tpot - 31.2).abs() < 1e-9);
        assert_eq!(m.ttft0, Some(300.0));
        assert!(m.ttft_k[0].is_none(), "no queue, no k");
        assert!((m.ttft_k[1].unwrap() - 2.0).abs() < 1e-9, "{:?}", m.ttft_k);
        // A launch without a k of its own takes the median of those with one.
        assert!((m.ttft_at(0, true, 32.0, 64.0).unwrap() - 352.0).abs() < 1e-9);
        assert!((m.ttft_at(0, true, 64.0, 64.0).unwrap() - 300.0).abs() < 1e-9);
        // The band at the limits: TPOT 1.2 × (10 + 0.5 R) ≤ 40 → R ≤ 46; TTFT 300 + 2 ×
        // (64 − R)/R × (10 + 0.5 R) ≤ 1000 → the least R is 2.
        let band = m.band(0, true, 64.0, 1.0);
        assert_eq!(band.hi, Some(46.0));
        assert_eq!(band.lo, 2.0);
        // Aimed at half the TTFT bound (500 ms): 2 × (64 − R)/R × (10 + 0.5 R) ≤ 200 → R ≥ 7.6.
        assert_eq!(m.band(0, true, 64.0, 0.5).lo, 8.0);
        assert!(band.known && !band.empty());
        assert_eq!(m.ceiling(&seen, 0), Some(46.0));
        // A tighter TTFT: the floor rises past the top, and the band is empty.
        let tight = m.clone();
        let tight = Model {
            ttft: Some(LatencyBound {
                column: "ttft_ms_p99".into(),
                limit: 310.0,
            }),
            ..tight
        };
        let band = tight.band(0, true, 64.0, 1.0);
        assert!(band.lo > 46.0 && band.empty(), "{band:?}");
    }

    #[test]
    fn one_tail_is_no_finding_and_the_kind_band_takes_the_least_tail_of_all() {
        let sp = space1();
        let a = ev(
            64.0,
            64.0,
            vec![bound("tpot_ms_p99", 40.0, 84.0)],
            line(64.0, None),
        );
        let seen = vec![obs(vec![3], a.clone())];
        let m = Model::read(&sp, &seen);
        assert!(!m.band(0, true, 64.0, 1.0).known, "one launch's tail");
        // A second launch with a kinder tail (1.2 against 2.0): the kind band is the wider.
        let b = ev(
            32.0,
            64.0,
            vec![bound("tpot_ms_p99", 40.0, 31.2)],
            line(32.0, None),
        );
        let seen = vec![obs(vec![3], a), obs(vec![1], b)];
        let m = Model::read(&sp, &seen);
        let own = m.band(0, true, 64.0, 1.0);
        let kind = m.band_kind(0, true, 64.0, 1.0);
        assert!(own.known);
        assert!(kind.hi.unwrap() > own.hi.unwrap(), "{own:?} {kind:?}");
        // The least tail any launch measured (1.2, not the first's 2.0 or the median's 1.6),
        // on the fit's kind edge (two buckets: no scatter to widen it, the line itself):
        // 1.2 × (10 + 0.5 R) ≤ 40.
        assert_eq!(kind.hi, Some(46.0));
        // Each bound taken at `aim` of its limit: 1.2 × (10 + 0.5 R) ≤ 0.8 × 40 gives R ≤ 33
        // on the kind edge; its own tail (2.0) on the line, 2 × (10 + 0.5 R) ≤ 32, R ≤ 12.
        assert_eq!(m.band_kind(0, true, 64.0, 0.8).hi, Some(33.0));
        assert_eq!(m.band(0, true, 64.0, 0.8).hi, Some(12.0));
        // Met on the kind edge at the whole load (32 offered): the line's own top, 33.
        assert_eq!(m.band_kind(0, true, 32.0, 0.8).hi, Some(33.0));
        assert_eq!(own.hi, Some(20.0));
    }

    #[test]
    fn the_kind_edge_is_the_line_less_two_standard_errors_of_it() {
        let sample = |running: f64, step_ms: f64, lines: u32| StepSample {
            running,
            step_ms,
            lines,
            graph: None,
        };
        // On a line: no scatter, the kind edge is the line.
        let on = [
            sample(8.0, 14.0, 10),
            sample(16.0, 18.0, 10),
            sample(32.0, 26.0, 10),
        ];
        let f = fit(&on.iter().collect::<Vec<_>>()).unwrap();
        assert!((f.at(64.0) - 42.0).abs() < 1e-9, "{f:?}");
        assert!((f.kind_at(64.0) - f.at(64.0)).abs() < 1e-9, "{f:?}");
        // Scattered about it: below the line, the more so the farther from the data.
        let off = [
            sample(8.0, 13.0, 10),
            sample(16.0, 19.5, 10),
            sample(24.0, 21.0, 10),
            sample(32.0, 27.0, 10),
        ];
        let f = fit(&off.iter().collect::<Vec<_>>()).unwrap();
        let gap = |r: f64| f.at(r) - f.kind_at(r);
        assert!(gap(20.0) > 0.0 && gap(64.0) > gap(20.0), "{f:?}");
        // Least at the buckets' weighted mean (20: equal weights), where only the height is
        // uncertain, and growing with the slope's uncertainty either side of it.
        assert!(gap(20.0) < gap(12.0) && gap(20.0) < gap(28.0), "{f:?}");
        // Two buckets tell no scatter: the line.
        let two = [sample(8.0, 13.0, 10), sample(32.0, 27.0, 10)];
        let f = fit(&two.iter().collect::<Vec<_>>()).unwrap();
        assert!((f.kind_at(64.0) - f.at(64.0)).abs() < 1e-9, "{f:?}");
    }

    #[test]
    fn the_queue_share_ignores_a_rounding_of_the_running_mean() {
        assert_eq!(queue_share(&ev(63.0, 64.0, vec![], vec![])), Some(0.0));
        assert_eq!(queue_share(&ev(32.0, 64.0, vec![], vec![])), Some(0.5));
        assert_eq!(queue_share(&ev(70.0, 64.0, vec![], vec![])), Some(0.0));
        assert_eq!(queue_share(&ev(1.0, 0.0, vec![], vec![])), None);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(vec![]), None);
    }

    #[test]
    fn a_pool_that_moved_by_a_percent_or_less_is_no_kv_effect() {
        let sp = Space {
            knobs: vec![
                super::super::Knob {
                    key: "hicache_size".into(),
                    values: (0..3).map(crate::plan::flags::ParamValue::Int).collect(),
                },
                super::super::Knob {
                    key: "mem_fraction_static".into(),
                    values: (0..3).map(crate::plan::flags::ParamValue::Int).collect(),
                },
            ],
            start: vec![0, 0],
            confirm: 0,
        };
        let p = |point: Point, pool: f64| {
            let mut e = ev(8.0, 8.0, vec![], vec![]);
            e.pool_tokens = Some(pool);
            obs(point, e)
        };
        let seen = vec![
            p(vec![0, 0], 10_000.0),
            p(vec![1, 0], 10_100.0),
            p(vec![1, 1], 12_000.0),
        ];
        assert_eq!(kv_effect(&sp, &seen), vec![true, false]);
        // Once a change of it moved the pool, it is a KV knob after all.
        let seen = vec![
            p(vec![0, 0], 10_000.0),
            p(vec![1, 0], 10_000.0),
            p(vec![2, 0], 11_000.0),
        ];
        assert_eq!(kv_effect(&sp, &seen), vec![false, false]);
        assert_eq!(value(&sp, &vec![2, 1], "mem_fraction_static"), Some(1.0));
        assert_eq!(value(&sp, &vec![2, 1], "nope"), None);
    }
}
