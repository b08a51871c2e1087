//! What both engines' stats lines give over the measured window, folded one way: per logging
//! interval the generation throughput, the running and the queued requests; per kept line the
//! KV usage. `sglang_log` feeds it from Decode lines (one interval per DP group of lines),
//! `vllm_log` from its stats lines; each keeps its own rules for which lines count.
//! `ServerSummary::set_window` puts the [`WindowFigures`] into the summary.

use crate::observe::quantiles::Quantiles;

/// A log line's time, as far as grouping needs it (SGLang's and vLLM's `Timestamp`). A trait,
/// so this module needs neither parser.
pub trait LineTime: Copy {
    /// Seconds from `earlier` to `self`.
    fn seconds_since(&self, earlier: &Self) -> f64;
}

/// Lines of distinct schedulers (SGLang's DP ranks, vLLM's engines) printed within this many
/// seconds of an open interval's first line belong to that interval.
pub const DP_GROUP_SECS: f64 = 1.0;

/// The sums, maxima and quantiles of one window.
#[derive(Debug, Clone, Default)]
pub struct WindowStats {
    gen_sum: f64,
    gen_n: usize,
    gen_q: Quantiles,
    run_sum: f64,
    run_n: usize,
    run_max: Option<u64>,
    q_sum: f64,
    q_n: usize,
    q_max: Option<u64>,
    q_nonzero: usize,
    offered: Option<u64>,
    usage_sum: f64,
    usage_n: usize,
    usage_max: Option<f64>,
    usage_q: Quantiles,
}

fn max_u(a: Option<u64>, b: u64) -> Option<u64> {
    Some(a.map_or(b, |a| a.max(b)))
}

fn ratio(num: f64, den: usize) -> Option<f64> {
    (den > 0).then(|| num / den as f64)
}

impl WindowStats {
    /// One logging interval: its generation throughput, running and queued requests (each
    /// None where the line does not say).
    pub fn interval(
        &mut self,
        gen_throughput: Option<f64>,
        running: Option<u64>,
        queued: Option<u64>,
    ) {
        if let Some(g) = gen_throughput {
            self.gen_sum += g;
            self.gen_n += 1;
            self.gen_q.push(g);
        }
        if let Some(r) = running {
            self.run_sum += r as f64;
            self.run_n += 1;
            self.run_max = max_u(self.run_max, r);
        }
        if let Some(q) = queued {
            self.q_sum += q as f64;
            self.q_n += 1;
            self.q_max = max_u(self.q_max, q);
            if q > 0 {
                self.q_nonzero += 1;
            }
        }
        if let (Some(r), Some(q)) = (running, queued) {
            self.offered = max_u(self.offered, r.saturating_add(q));
        }
    }

    /// One kept line's KV usage (0-1).
    pub fn usage(&mut self, u: f64) {
        self.usage_sum += u;
        self.usage_n += 1;
        self.usage_max = Some(self.usage_max.map_or(u, |m| m.max(u)));
        self.usage_q.push(u);
    }

    /// The window's figures: throughput mean, median and p10/p90, running and queue means and
    /// maxima, the share of intervals with a queue, the offered load, the KV usage mean, max
    /// and p90, and whether the percentiles are approximate (None: nothing fed).
    pub fn figures(&self) -> WindowFigures {
        let g = self.gen_q.percentiles(&[10.0, 50.0, 90.0]);
        let u = self.usage_q.percentiles(&[90.0]);
        let pick = |v: &[Option<f64>], i: usize| v.get(i).copied().flatten();
        WindowFigures {
            gen_throughput_mean: ratio(self.gen_sum, self.gen_n),
            gen_throughput_median: pick(&g, 1),
            gen_throughput_p10: pick(&g, 0),
            gen_throughput_p90: pick(&g, 2),
            running_req_mean: ratio(self.run_sum, self.run_n),
            running_req_max: self.run_max,
            queue_req_mean: ratio(self.q_sum, self.q_n),
            queue_req_max: self.q_max,
            queue_nonzero_share: ratio(self.q_nonzero as f64, self.q_n),
            offered_estimate: self.offered,
            token_usage_mean: ratio(self.usage_sum, self.usage_n),
            token_usage_max: self.usage_max,
            token_usage_p90: pick(&u, 0),
            percentiles_approx: !(self.gen_q.is_exact() && self.usage_q.is_exact()),
        }
    }
}

/// One logging interval being assembled: the sums of its lines so far.
#[derive(Debug, Clone, Copy)]
struct Interval<T> {
    ts: Option<T>,
    gen_throughput: Option<f64>,
    running: Option<u64>,
    queued: Option<u64>,
}

fn add_f(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x + y),
        (x, None) => x,
        (None, y) => y,
    }
}

fn add_u(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.saturating_add(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// Stats lines into logging intervals. With data parallelism each scheduler prints its own
/// line per interval; the server's interval is their sum (throughput, running, queued), so a
/// line joins the open interval when its scheduler is not in it yet and it was printed within
/// [`DP_GROUP_SECS`] of it. A line without a scheduler key (one scheduler, or an engine's
/// own aggregate) is an interval by itself. Both log parsers feed their kept lines here.
#[derive(Debug, Clone)]
pub struct Intervals<K, T> {
    open: Option<Interval<T>>,
    keys: Vec<K>,
    /// Intervals closed so far.
    pub count: usize,
}

impl<K, T> Default for Intervals<K, T> {
    fn default() -> Self {
        Intervals {
            open: None,
            keys: Vec::new(),
            count: 0,
        }
    }
}

impl<K: PartialEq + Copy, T: LineTime> Intervals<K, T> {
    /// One kept line: its time, scheduler, generation throughput, running and queued requests.
    pub fn line(
        &mut self,
        w: &mut WindowStats,
        ts: Option<T>,
        key: Option<K>,
        gen_throughput: Option<f64>,
        running: Option<u64>,
        queued: Option<u64>,
    ) {
        let joins = match (ts, key, &self.open) {
            (Some(t), Some(k), Some(open)) => {
                !self.keys.is_empty()
                    && !self.keys.contains(&k)
                    && open
                        .ts
                        .is_some_and(|lts| t.seconds_since(&lts).abs() < DP_GROUP_SECS)
            }
            _ => false,
        };
        if let (true, Some(open), Some(k)) = (joins, self.open.as_mut(), key) {
            self.keys.push(k);
            open.gen_throughput = add_f(open.gen_throughput, gen_throughput);
            open.running = add_u(open.running, running);
            open.queued = add_u(open.queued, queued);
            return;
        }
        self.close(w);
        self.open = Some(Interval {
            ts,
            gen_throughput,
            running,
            queued,
        });
        self.keys.clear();
        if let Some(k) = key {
            self.keys.push(k);
        }
    }

    /// Close the open interval into `w` (at the end of the window, before reading it).
    pub fn close(&mut self, w: &mut WindowStats) {
        let Some(iv) = self.open.take() else {
            return;
        };
        self.count += 1;
        w.interval(iv.gen_throughput, iv.running, iv.queued);
    }
}

/// What [`WindowStats`] gives, named as `ServerSummary`'s fields.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WindowFigures {
    pub gen_throughput_mean: Option<f64>,
    pub gen_throughput_median: Option<f64>,
    pub gen_throughput_p10: Option<f64>,
    pub gen_throughput_p90: Option<f64>,
    pub running_req_mean: Option<f64>,
    pub running_req_max: Option<u64>,
    pub queue_req_mean: Option<f64>,
    pub queue_req_max: Option<u64>,
    pub queue_nonzero_share: Option<f64>,
    pub offered_estimate: Option<u64>,
    pub token_usage_mean: Option<f64>,
    pub token_usage_max: Option<f64>,
    pub token_usage_p90: Option<f64>,
    pub percentiles_approx: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    impl LineTime for f64 {
        fn seconds_since(&self, earlier: &Self) -> f64 {
            self - earlier
        }
    }

    /// Distinct schedulers within a second are one interval, summed; the same scheduler, a
    /// line a whole second later, or a line without a key starts a new one.
    #[test]
    fn intervals_join_distinct_schedulers_within_a_second_only() {
        let mut w = WindowStats::default();
        let mut iv: Intervals<u32, f64> = Intervals::default();
        iv.line(&mut w, Some(0.0), Some(0), Some(10.0), Some(1), Some(0));
        iv.line(&mut w, Some(0.5), Some(1), Some(20.0), Some(2), Some(0)); // joins
        iv.line(&mut w, Some(0.6), Some(0), Some(30.0), Some(3), Some(0)); // same rank: new
        iv.line(&mut w, Some(1.6), Some(1), Some(40.0), Some(4), Some(0)); // 1.0 s later: new
        iv.line(&mut w, Some(10.0), Some(0), Some(50.0), Some(5), Some(0));
        iv.line(&mut w, Some(10.1), None, Some(60.0), Some(6), Some(0)); // no key: new
        iv.close(&mut w);
        assert_eq!(iv.count, 5);
        let f = w.figures();
        // 30, 30, 40, 50, 60: the first two lines summed, the others alone.
        assert_eq!(f.gen_throughput_mean, Some(42.0));
        assert_eq!(f.running_req_max, Some(6));
        assert_eq!(f.running_req_mean, Some(21.0 / 5.0));
    }

    #[test]
    fn intervals_and_usage_fold_into_the_summary() {
        let mut w = WindowStats::default();
        w.interval(Some(100.0), Some(4), Some(0));
        w.interval(Some(300.0), Some(8), Some(2));
        w.interval(None, None, Some(1));
        w.usage(0.5);
        w.usage(0.9);
        let s = w.figures();
        assert_eq!(s.gen_throughput_mean, Some(200.0));
        assert_eq!(s.running_req_mean, Some(6.0));
        assert_eq!(s.running_req_max, Some(8));
        assert_eq!(s.queue_req_mean, Some(1.0));
        assert_eq!(s.queue_req_max, Some(2));
        assert_eq!(s.queue_nonzero_share, Some(2.0 / 3.0));
        assert_eq!(s.offered_estimate, Some(10));
        assert!(s.token_usage_mean.is_some_and(|m| (m - 0.7).abs() < 1e-12));
        assert_eq!(s.token_usage_max, Some(0.9));
        assert!(!s.percentiles_approx);
        // Nothing fed: every figure stays empty.
        assert_eq!(WindowStats::default().figures(), WindowFigures::default());
    }
}
