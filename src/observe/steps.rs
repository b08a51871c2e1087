//! The server's decode steps by running batch size: from each kept stats line (SGLang's Decode
//! line, vLLM's stats line) the step time `#running-req ÷ gen throughput` (each running request
//! gains one token a step), bucketed by the running count. Both engines' summaries feed one
//! [`StepBuckets`]; [`DecodeSteps`] is a bucket as `ServerSummary` and results.csv's
//! `decode_steps` hold it. What a response model fits step time against batch size with.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// At most this many buckets: more distinct running counts are merged into geometric bins.
pub const MAX_BUCKETS: usize = 24;

/// The decode steps logged with one running batch size (or a bin of adjacent sizes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecodeSteps {
    /// `#running-req` of the bucket's lines (their mean, by line, when a bin merges sizes).
    pub running: f64,
    /// The mean step time of the bucket's lines (ms), each line weighing one.
    pub step_ms: f64,
    /// Lines in the bucket.
    pub lines: u32,
    /// Whether graphs ran the steps (`cuda graph: True`), by the majority of the lines that
    /// say; None where none says (vLLM, old SGLang).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph: Option<bool>,
}

/// The running sums of one running count.
#[derive(Debug, Clone, Copy, Default)]
struct Sums {
    lines: u32,
    step_ms: f64,
    graph_on: u32,
    graph_off: u32,
}

impl Sums {
    fn add(&mut self, o: &Sums) {
        self.lines = self.lines.saturating_add(o.lines);
        self.step_ms += o.step_ms;
        self.graph_on = self.graph_on.saturating_add(o.graph_on);
        self.graph_off = self.graph_off.saturating_add(o.graph_off);
    }
}

/// The window's kept lines, by running count: one entry per distinct count (bounded by the
/// server's running cap), so memory does not grow with the log.
#[derive(Debug, Clone, Default)]
pub struct StepBuckets {
    by_running: BTreeMap<u64, Sums>,
}

fn majority(on: u32, off: u32) -> Option<bool> {
    match (on, off) {
        (0, 0) => None,
        (on, off) => Some(on > off),
    }
}

impl StepBuckets {
    /// One kept line: its running count, its generation throughput (token/s) and its graph
    /// flag. A line without either number, or with 0 running or 0 throughput (no step to time),
    /// is left out.
    pub fn line(&mut self, running: Option<u64>, gen_throughput: Option<f64>, graph: Option<bool>) {
        let (Some(r), Some(g)) = (running, gen_throughput) else {
            return;
        };
        if r == 0 || !(g.is_finite() && g > 0.0) {
            return;
        }
        let step_ms = r as f64 / g * 1000.0;
        if !step_ms.is_finite() {
            return;
        }
        let s = self.by_running.entry(r).or_default();
        s.lines = s.lines.saturating_add(1);
        s.step_ms += step_ms;
        match graph {
            Some(true) => s.graph_on = s.graph_on.saturating_add(1),
            Some(false) => s.graph_off = s.graph_off.saturating_add(1),
            None => {}
        }
    }

    /// The buckets, by running count ascending: one per count, or, with more than
    /// [`MAX_BUCKETS`] counts, one per non-empty geometric bin between the least and the
    /// greatest count (the bin's running: its lines' mean).
    pub fn buckets(&self) -> Vec<DecodeSteps> {
        let (Some((&lo, _)), Some((&hi, _))) = (
            self.by_running.first_key_value(),
            self.by_running.last_key_value(),
        ) else {
            return Vec::new();
        };
        let n = MAX_BUCKETS;
        let span = (hi as f64 / lo as f64).ln();
        let bin = |r: u64| -> usize {
            if self.by_running.len() <= n || span <= 0.0 {
                return 0;
            }
            let i = ((r as f64 / lo as f64).ln() / span * n as f64).floor();
            (i.max(0.0) as usize).min(n - 1)
        };
        let merge = self.by_running.len() > n;
        let mut out: Vec<(usize, Sums, f64)> = Vec::new();
        for (&r, s) in &self.by_running {
            let key = if merge { bin(r) } else { out.len() };
            match out.last_mut() {
                Some((k, acc, run_sum)) if merge && *k == key => {
                    acc.add(s);
                    *run_sum += r as f64 * f64::from(s.lines);
                }
                _ => out.push((key, *s, r as f64 * f64::from(s.lines))),
            }
        }
        out.into_iter()
            .filter(|(_, s, _)| s.lines > 0)
            .map(|(_, s, run_sum)| {
                let w = f64::from(s.lines);
                DecodeSteps {
                    running: run_sum / w,
                    step_ms: s.step_ms / w,
                    lines: s.lines,
                    graph: majority(s.graph_on, s.graph_off),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn lines_bucket_by_running_count_with_the_mean_step_and_the_majority_graph() {
        let mut b = StepBuckets::default();
        // 4 running at 400 tok/s: 10 ms; at 200 tok/s: 20 ms.
        b.line(Some(4), Some(400.0), Some(true));
        b.line(Some(4), Some(200.0), Some(true));
        b.line(Some(4), Some(400.0), Some(false));
        // 8 running at 500 tok/s: 16 ms, eager.
        b.line(Some(8), Some(500.0), Some(false));
        // Nothing to time: left out.
        b.line(Some(0), Some(100.0), Some(true));
        b.line(Some(3), Some(0.0), Some(true));
        b.line(None, Some(100.0), None);
        b.line(Some(3), None, None);
        // No graph field.
        b.line(Some(2), Some(100.0), None);
        let got = b.buckets();
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!((got[0].running, got[0].lines, got[0].graph), (2.0, 1, None));
        assert!(close(got[0].step_ms, 20.0));
        assert_eq!(
            (got[1].running, got[1].lines, got[1].graph),
            (4.0, 3, Some(true))
        );
        assert!(close(got[1].step_ms, (10.0 + 20.0 + 10.0) / 3.0));
        assert_eq!(
            (got[2].running, got[2].lines, got[2].graph),
            (8.0, 1, Some(false))
        );
        assert!(close(got[2].step_ms, 16.0));
    }

    #[test]
    fn more_than_24_running_counts_merge_into_geometric_bins() {
        let mut b = StepBuckets::default();
        // 1..=200 running, one line each (two lines at 1), step = 10 ms + 0.1 ms a request.
        for r in 1..=200u64 {
            let step = 10.0 + 0.1 * r as f64;
            b.line(Some(r), Some(r as f64 / step * 1000.0), Some(r <= 170));
        }
        b.line(Some(1), Some(1.0 / 10.1 * 1000.0), Some(true));
        let got = b.buckets();
        assert!(got.len() <= MAX_BUCKETS && got.len() > 10, "{got:?}");
        let lines: u32 = got.iter().map(|s| s.lines).sum();
        assert_eq!(lines, 201);
        // Ascending, and each bin's running is its lines' mean.
        assert!(got.windows(2).all(|w| w[0].running < w[1].running));
        assert!(close(got[0].running, 1.0) && got[0].lines == 2);
        let last = got.last().map(|s| (s.running, s.lines, s.graph));
        // The top bin, [200^(23/24) ≈ 160.4, 200]: 161..=200, 40 lines, 10 with graphs and 30
        // without (eager by majority).
        assert_eq!(last, Some(((161.0 + 200.0) / 2.0, 40, Some(false))));
        // Bins are geometric: the low sizes stay apart, the high ones merge.
        assert!(got.iter().take(5).all(|s| s.lines == 1 || s.running == 1.0));
        // The step of a merged bin is its lines' mean: linear in running, so the step at its
        // mean running.
        for s in &got {
            assert!(close(s.step_ms, 10.0 + 0.1 * s.running), "{s:?}");
        }
    }

    #[test]
    fn nothing_fed_gives_no_buckets() {
        assert!(StepBuckets::default().buckets().is_empty());
    }
}
