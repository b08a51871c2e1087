//! RequestSample → ClientSummary. Definitions (docs/methodology.md, "Client metrics"):
//! TTFT at the first non-empty content chunk and E2E to the end of the stream (SGLang's
//! bench_serving), TPOT = (E2E − TTFT)/(output tokens − 1) per request, ITL pooled over the
//! gaps between content chunks of all successful requests, output tokens from `usage`,
//! percentiles with numpy's linear interpolation, throughputs over the measured window.
//!
//! Memory stays flat with run length: samples are folded into an `Accumulator` as they
//! arrive (never kept), and each latency goes into a [`Quantiles`], which keeps its exact
//! values only up to [`EXACT_CAP`](crate::observe::quantiles::EXACT_CAP); past that percentiles come from a histogram
//! (within [`REL_ERROR`](crate::observe::quantiles::REL_ERROR), under 0.1%) and count, mean and max stay exact.

use crate::load::sample::{Phase, RequestSample};
use crate::observe::quantiles::{Quantiles, percentile};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Mean and percentiles of one latency, in milliseconds. None when there is no data.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Stats {
    pub count: usize,
    pub mean: Option<f64>,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
}

impl Stats {
    pub fn of(mut values: Vec<f64>) -> Stats {
        values.retain(|v| v.is_finite());
        if values.is_empty() {
            return Stats::default();
        }
        values.sort_by(f64::total_cmp);
        let n = values.len();
        Stats {
            count: n,
            mean: Some(values.iter().sum::<f64>() / n as f64),
            p50: percentile(&values, 50.0),
            p90: percentile(&values, 90.0),
            p95: percentile(&values, 95.0),
            p99: percentile(&values, 99.0),
            max: values.last().copied(),
        }
    }

    /// Of a bounded distribution: as [`Stats::of`] while it holds every value, else from its
    /// histogram (count, mean and max exact, percentiles within [`REL_ERROR`](crate::observe::quantiles::REL_ERROR)).
    pub fn from_quantiles(q: &Quantiles) -> Stats {
        if let Some(values) = q.exact_values() {
            return Stats::of(values.to_vec());
        }
        let p = q.percentiles(&[50.0, 90.0, 95.0, 99.0]);
        let at = |i: usize| p.get(i).copied().flatten();
        Stats {
            count: usize::try_from(q.len()).unwrap_or(usize::MAX),
            mean: q.mean(),
            p50: at(0),
            p90: at(1),
            p95: at(2),
            p99: at(3),
            max: q.max(),
        }
    }
}

/// Folds measured samples into a ClientSummary as they arrive.
#[derive(Debug, Clone, Default)]
pub struct Accumulator {
    s: ClientSummary,
    ttft: Quantiles,
    itl: Quantiles,
    tpot: Quantiles,
    e2e: Quantiles,
    ttft_v: Quantiles,
    e2e_v: Quantiles,
    lag: Quantiles,
    read_lag: Quantiles,
    measured: u64,
    good: u64,
    requested_input: u64,
    slo: Option<crate::plan::spec::Slo>,
    /// Output tokens by second of the measured window, each request's tokens spread over its
    /// content chunks' arrivals: the series MSER-5 trims.
    tok_bins: Vec<f64>,
    /// `sessions:`: TTFT and TPOT by turn bucket (0-based, the last bucket holding every later
    /// turn), and TTFT of sessions' first and last turns.
    turn_ttft: BTreeMap<u32, Quantiles>,
    turn_tpot: BTreeMap<u32, Quantiles>,
    first_turn_ttft: Quantiles,
    last_turn_ttft: Quantiles,
    /// Σ reusable and Σ prompt tokens over the successful requests whose reusable part the
    /// workload knows and whose prompt length the server reported; and how many successful
    /// requests had either unknown.
    reusable_tokens: u64,
    reusable_of: u64,
    reusable_unknown: u64,
}

/// Turns past this many share the last bucket of `ClientSummary::turns`, so a long session
/// cannot grow the results cell without bound.
pub const TURN_BUCKETS: u32 = 24;

/// One turn bucket's latencies (`sessions:`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TurnStats {
    /// 1-based turn; the last bucket ([`TURN_BUCKETS`]) holds that turn and every later one.
    pub turn: u32,
    pub ttft_ms: Stats,
    pub tpot_ms: Stats,
}

/// The longest window binned for MSER-5 (a day): a bad timestamp cannot grow the bins.
const MAX_BINS: usize = 86_400;

/// MSER-5 (White 1997; the batch size 5 of Franklin & White): over batch means B of five
/// consecutive observations, the truncation d (in batches, at most half of them) that
/// minimizes Σ_{i≥d} (B_i − mean(B_{d..}))² / (m − d)². Returns d in observations (a
/// multiple of 5), or None when there are fewer than 4 batches to judge by.
pub fn mser5(y: &[f64]) -> Option<usize> {
    let m = y.len() / 5;
    if m < 4 {
        return None;
    }
    let b: Vec<f64> = (0..m)
        .map(|i| y[i * 5..i * 5 + 5].iter().sum::<f64>() / 5.0)
        .collect();
    let mut best = (f64::INFINITY, 0usize);
    for d in 0..=m / 2 {
        let tail = &b[d..];
        let n = tail.len() as f64;
        let mean = tail.iter().sum::<f64>() / n;
        let sse: f64 = tail.iter().map(|x| (x - mean).powi(2)).sum();
        let stat = sse / (n * n);
        if stat < best.0 {
            best = (stat, d);
        }
    }
    Some(best.1 * 5)
}

impl Accumulator {
    /// `requested_input` stands in for a prompt length the server did not report.
    pub fn new(requested_input: u64, slo: Option<&crate::plan::spec::Slo>) -> Self {
        Accumulator {
            requested_input,
            slo: slo.cloned(),
            ..Default::default()
        }
    }

    /// Add one request (warmup requests are ignored).
    pub fn add(&mut self, r: &RequestSample) {
        if r.phase != Phase::Measured {
            return;
        }
        let s = &mut self.s;
        self.measured += 1;
        if let Some(l) = r.sched_lag_ms {
            self.lag.push(l);
        }
        for &l in &r.read_lag_ms {
            self.read_lag.push(l);
        }
        if self.slo.as_ref().is_some_and(|slo| r.meets(slo)) {
            self.good += 1;
        }
        if r.retried {
            s.retries += 1;
        }
        if !r.ok() {
            s.failed += 1;
            if let Some(k) = r.error_kind {
                *s.errors.entry(k.as_str().to_string()).or_default() += 1;
            }
            if s.first_error.is_none() {
                s.first_error = r.error.clone();
            }
            return;
        }
        s.completed += 1;
        s.output_tokens += r.output_tokens();
        let prompt = r.prompt_tokens.unwrap_or(self.requested_input);
        s.input_tokens += prompt;
        if r.usage_missing() {
            s.usage_missing += 1;
        }
        let push = |d: &mut Quantiles, v: Option<f64>| {
            if let Some(v) = v {
                d.push(v);
            }
        };
        push(&mut self.ttft, r.ttft_ms);
        push(&mut self.e2e, r.end_ms);
        push(&mut self.ttft_v, r.first_choices_ms);
        push(&mut self.e2e_v, r.last_content_ms);
        push(&mut self.tpot, r.tpot_ms());
        for gap in r.itl_ms() {
            self.itl.push(gap);
        }
        if let (Some(reusable), Some(prompt)) = (r.reusable_tokens, r.prompt_tokens) {
            // What the server counted bounds what could repeat (a chat template's tokens
            // around a reply may differ from the reply's own count).
            self.reusable_tokens += reusable.min(prompt);
            self.reusable_of += prompt;
        } else {
            self.reusable_unknown += 1;
        }
        if let Some(t) = r.turn {
            let bucket = t.turn.min(TURN_BUCKETS - 1);
            push(self.turn_ttft.entry(bucket).or_default(), r.ttft_ms);
            push(self.turn_tpot.entry(bucket).or_default(), r.tpot_ms());
            if t.turn == 0 {
                push(&mut self.first_turn_ttft, r.ttft_ms);
            }
            if t.last {
                push(&mut self.last_turn_ttft, r.ttft_ms);
            }
        }
        if !r.chunk_ms.is_empty() && r.send_s.is_finite() {
            let per = r.output_tokens() as f64 / r.chunk_ms.len() as f64;
            for &c in &r.chunk_ms {
                let t = r.send_s + c / 1000.0;
                if t >= 0.0 && t.is_finite() && (t as usize) < MAX_BINS {
                    let i = t as usize;
                    if self.tok_bins.len() <= i {
                        self.tok_bins.resize(i + 1, 0.0);
                    }
                    self.tok_bins[i] += per;
                }
            }
        }
    }

    /// The summary over a measured window of `duration_s` seconds.
    pub fn finish(&self, duration_s: f64) -> ClientSummary {
        let mut s = self.s.clone();
        s.duration_s = duration_s;
        if duration_s > 0.0 && s.completed > 0 {
            s.request_throughput = Some(s.completed as f64 / duration_s);
            s.output_tok_s = Some(s.output_tokens as f64 / duration_s);
            s.total_tok_s = Some((s.input_tokens + s.output_tokens) as f64 / duration_s);
        }
        if self.slo.is_some() && self.measured > 0 {
            s.goodput_share = Some(self.good as f64 / self.measured as f64);
            if duration_s > 0.0 {
                s.goodput_req_s = Some(self.good as f64 / duration_s);
            }
        }
        s.sched_lag_ms = Stats::from_quantiles(&self.lag);
        s.read_lag_ms = Stats::from_quantiles(&self.read_lag);
        s.ttft_first_choices_ms = Stats::from_quantiles(&self.ttft_v);
        s.e2e_last_content_ms = Stats::from_quantiles(&self.e2e_v);
        s.ttft_ms = Stats::from_quantiles(&self.ttft);
        s.itl_ms = Stats::from_quantiles(&self.itl);
        s.tpot_ms = Stats::from_quantiles(&self.tpot);
        s.e2e_ms = Stats::from_quantiles(&self.e2e);
        // The share is a ceiling on the server's hit rate over every successful request: one
        // whose part is unknown could have any, so leaving it out could put the ceiling below
        // the server's rate. Then the share is unknown too.
        s.reusable_prompt_share = (self.reusable_of > 0 && self.reusable_unknown == 0)
            .then(|| self.reusable_tokens as f64 / self.reusable_of as f64);
        s.turns = self
            .turn_ttft
            .iter()
            .map(|(&b, ttft)| TurnStats {
                turn: b + 1,
                ttft_ms: Stats::from_quantiles(ttft),
                tpot_ms: self
                    .turn_tpot
                    .get(&b)
                    .map(Stats::from_quantiles)
                    .unwrap_or_default(),
            })
            .collect();
        s.ttft_first_turn_ms = Stats::from_quantiles(&self.first_turn_ttft);
        s.ttft_last_turn_ms = Stats::from_quantiles(&self.last_turn_ttft);
        // Steady state: MSER-5 over the whole seconds of the window (the last, partial one
        // is left out: its bin is not a full second).
        let whole = (duration_s.max(0.0) as usize).min(self.tok_bins.len());
        let mut y = self.tok_bins[..whole].to_vec();
        y.resize(duration_s.max(0.0) as usize, 0.0);
        if let Some(d) = mser5(&y) {
            s.warmup_trimmed_s = Some(d as f64);
            let tail = &y[d..];
            s.output_tok_s_steady = Some(tail.iter().sum::<f64>() / tail.len() as f64);
        }
        s
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClientSummary {
    pub completed: u64,
    pub failed: u64,
    /// Measured window in seconds: first send to last completion.
    pub duration_s: f64,
    pub request_throughput: Option<f64>,
    /// Σ output tokens of successful requests / duration.
    pub output_tok_s: Option<f64>,
    /// Output tok/s after the warm-up MSER-5 trims: the mean of the window's one-second bins
    /// from the truncation point on (None: a window under 20 s).
    pub output_tok_s_steady: Option<f64>,
    /// Seconds MSER-5 trimmed from the window's start.
    pub warmup_trimmed_s: Option<f64>,
    /// Σ (prompt + output) tokens of successful requests / duration.
    pub total_tok_s: Option<f64>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub ttft_ms: Stats,
    pub itl_ms: Stats,
    pub tpot_ms: Stats,
    pub e2e_ms: Stats,
    /// TTFT at the first chunk with choices (vLLM's convention).
    pub ttft_first_choices_ms: Stats,
    /// E2E to the last content chunk (vLLM's convention).
    pub e2e_last_content_ms: Stats,
    /// Share of measured requests meeting every SLO (None: no SLO given).
    pub goodput_share: Option<f64>,
    /// Requests meeting every SLO per second of the measured window.
    pub goodput_req_s: Option<f64>,
    /// CPU the client used during the measured window, in cores (1.0 = one core busy).
    pub client_cpu_cores: Option<f64>,
    /// Open loop: how late requests went out against their schedule (ms).
    pub sched_lag_ms: Stats,
    /// Per socket read: how long the newest data had waited in the kernel before the client
    /// read it (receive timestamp to read; Linux). The client's own lateness in reading.
    pub read_lag_ms: Stats,
    /// Requests abandoned at the deadline (`deadline: cut`); not failures, not in latencies.
    pub cut_off: u64,
    /// The client itself may have limited the load: the reason, when so.
    pub client_bound: Option<String>,
    /// Successful requests whose stream carried no `usage`: output counted as content chunks.
    pub usage_missing: u64,
    pub retries: u64,
    /// Failed requests per error class.
    pub errors: BTreeMap<String, u64>,
    /// One example error message (the first seen).
    pub first_error: Option<String>,
    /// The prefix-cache hit rate the workload allows, a ceiling the server's cannot beat:
    /// Σ reusable ÷ Σ prompt tokens over the successful requests, in the server's tokens,
    /// where the reusable part of a prompt is what an earlier request already sent (a
    /// session's previous prompt and reply as `usage` counted them, what a session's first
    /// turn has in common with an earlier one's, a `shared_prefix` group's prefix after the
    /// group's first request; `load::sessions`). None: the workload does not say (single
    /// synthetic or dataset prompts), or some successful request's part is not known.
    pub reusable_prompt_share: Option<f64>,
    /// Synthetic sessions on completions: whether the server returned its replies' token ids,
    /// so the history carried them (false: it returned none, and the sessions went as text).
    pub sessions_reply_ids: Option<bool>,
    /// `sessions:`: latencies by turn (empty otherwise).
    pub turns: Vec<TurnStats>,
    /// `sessions:`: TTFT of the sessions' first turns (no history).
    pub ttft_first_turn_ms: Stats,
    /// `sessions:`: TTFT of the sessions' last turns (the longest history).
    pub ttft_last_turn_ms: Stats,
}

impl ClientSummary {
    /// The tokens a successful request held on average, prompt and output as the server
    /// counted them (None: nothing completed). Sessions need it: their prompts grow with the
    /// history, so the workload's nominal per-request size (one user message and one reply)
    /// understates what a running request holds in the pool by several times (the capacity
    /// arithmetic once read 1,100 tokens ÷ 64 per request ≈ 17 where 5 ran).
    pub fn mean_tokens_per_request(&self) -> Option<u64> {
        // `completed` counts the successful requests only, as the two sums do.
        let n = self.completed;
        (n > 0).then(|| (self.input_tokens + self.output_tokens).div_ceil(n))
    }
}

/// Scheduling or read lag p99 above which the client counts as late.
pub const LAG_BOUND_MS: f64 = 10.0;

/// Decide whether the client may have been the bottleneck: requests went out late (open
/// loop), streamed data waited in the socket before the client read it, or the client's CPU
/// use is near the machine's cores.
pub fn assess_client(s: &mut ClientSummary, cores: usize) {
    let mut why = Vec::new();
    if let Some(p99) = s.sched_lag_ms.p99.filter(|p| *p > LAG_BOUND_MS) {
        why.push(format!(
            "requests went out late: scheduling lag p99 {p99:.1} ms > {LAG_BOUND_MS} ms"
        ));
    }
    if let Some(p99) = s.read_lag_ms.p99.filter(|p| *p > LAG_BOUND_MS) {
        why.push(format!(
            "the client read streamed data late: read lag p99 {p99:.1} ms > {LAG_BOUND_MS} ms"
        ));
    }
    if let Some(c) = s
        .client_cpu_cores
        .filter(|c| *c >= 0.9 * cores.max(1) as f64)
    {
        why.push(format!("the client used {c:.2} of {cores} cores"));
    }
    s.client_bound = (!why.is_empty()).then(|| why.join("; "));
}

/// Summarize a slice of samples (tests and small callers; the runner accumulates instead).
pub fn summarize(
    samples: &[RequestSample],
    duration_s: f64,
    requested_input: u64,
    slo: Option<&crate::plan::spec::Slo>,
) -> ClientSummary {
    let mut acc = Accumulator::new(requested_input, slo);
    for r in samples {
        acc.add(r);
    }
    acc.finish(duration_s)
}

#[cfg(test)]
mod mser_tests {
    use super::mser5;

    #[test]
    fn mser5_trims_a_warm_up_and_nothing_from_a_steady_series() {
        // 10 s of ramp (100 tok/s), then 50 s at about 1,000.
        let mut y: Vec<f64> = vec![100.0; 10];
        y.extend((0..50).map(|i| 1000.0 + if i % 2 == 0 { 20.0 } else { -20.0 }));
        assert_eq!(mser5(&y), Some(10));
        let flat: Vec<f64> = (0..60).map(|i| 1000.0 + (i % 3) as f64).collect();
        assert_eq!(mser5(&flat), Some(0));
        assert_eq!(mser5(&[1.0; 19]), None, "under 4 batches");
        // Never more than half the batches.
        let mut late: Vec<f64> = vec![0.0; 45];
        late.extend([1000.0; 15]);
        assert!(mser5(&late).unwrap_or(0) <= 30);
    }

    #[test]
    fn mser5_considers_every_truncation_up_to_half_the_batches() {
        // 12 batches: 6 of warm-up at 0, then 6 at exactly 1,000. The best truncation is
        // the last candidate, m/2 = 6 batches (30 observations).
        let mut y = vec![0.0; 30];
        y.extend([1000.0; 30]);
        assert_eq!(mser5(&y), Some(30));
        // 13 batches (m/2 rounds down to 6), and the 3 values past the last whole batch are
        // not judged.
        let mut y = vec![0.0; 30];
        y.extend([1000.0; 35]);
        y.extend([0.0, 0.0, 0.0]);
        assert_eq!(mser5(&y), Some(30));
        // Four batches are enough to judge; a constant series keeps its first candidate (no
        // truncation), not a later one with the same statistic.
        assert_eq!(mser5(&[7.0; 20]), Some(0));
        assert_eq!(mser5(&[7.0; 60]), Some(0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::sample::ErrorKind;

    fn sample(ttft: f64, chunks: &[f64], end: f64, tokens: Option<u64>) -> RequestSample {
        RequestSample {
            phase: Phase::Measured,
            index: 0,
            worker: 0,
            send_s: 0.0,
            headers_ms: Some(1.0),
            ttft_ms: Some(ttft),
            last_content_ms: chunks.last().copied(),
            first_choices_ms: Some(ttft - 5.0),
            end_ms: Some(end),
            chunk_ms: chunks.to_vec(),
            chunk_chars: vec![1; chunks.len()],
            read_lag_ms: Vec::new(),
            prompt_tokens: Some(10),
            completion_tokens: tokens,
            finish_reason: Some("length".into()),
            http_status: Some(200),
            retried: false,
            error_kind: None,
            error: None,
            scheduled_s: None,
            sched_lag_ms: None,
            max_tokens: 4,
            turn: None,
            reusable_tokens: None,
            reply: None,
        }
    }

    #[test]
    fn the_steady_state_trims_a_slow_start_by_chunk_arrival() {
        // 30 s window: one request per second, each 4 tokens over 4 chunks within its second;
        // during the first 10 s each request yields only 1 token (a slow start).
        let mut acc = Accumulator::new(10, None);
        for sec in 0..30 {
            let mut r = sample(
                5.0,
                &[100.0, 200.0, 300.0, 400.0],
                450.0,
                Some(if sec < 10 { 1 } else { 4 }),
            );
            r.send_s = sec as f64;
            acc.add(&r);
        }
        let s = acc.finish(30.0);
        assert_eq!(s.warmup_trimmed_s, Some(10.0));
        assert_eq!(s.output_tok_s_steady, Some(4.0));
        // The whole window's throughput keeps the slow start.
        assert_eq!(s.output_tok_s, Some((10.0 + 80.0) / 30.0));
        // Too short a window: nothing trimmed, nothing claimed.
        let s = acc.finish(15.0);
        assert_eq!((s.warmup_trimmed_s, s.output_tok_s_steady), (None, None));
    }

    #[test]
    fn stats_take_numpy_linear_percentiles() {
        // numpy.percentile([1, 2, 3, 4], [50, 95]) == [2.5, 3.85]
        let s = Stats::of(vec![4.0, 1.0, f64::NAN, 3.0, 2.0]);
        assert_eq!((s.count, s.p50, s.max), (4, Some(2.5), Some(4.0)));
        assert!((s.p95.unwrap_or(0.0) - 3.85).abs() < 1e-12);
        assert_eq!(Stats::of(vec![]), Stats::default());
    }

    #[test]
    fn summary_follows_the_conventions() {
        let a = sample(100.0, &[100.0, 110.0, 130.0], 140.0, Some(4));
        let b = sample(200.0, &[200.0, 220.0], 230.0, None);
        let mut bad = sample(0.0, &[], 0.0, None);
        bad.error_kind = Some(ErrorKind::HttpStatus);
        bad.error = Some("HTTP 500".into());
        let slo = crate::plan::spec::Slo {
            ttft_ms: Some(150.0),
            tpot_ms: None,
            e2e_ms: None,
        };
        let s = summarize(&[a, b, bad], 2.0, 10, Some(&slo));
        // Only `a` meets TTFT ≤ 150 ms; the failed request is not good.
        assert!((s.goodput_share.unwrap_or(0.0) - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(s.goodput_req_s, Some(0.5));
        // vLLM's conventions side by side.
        assert_eq!(s.ttft_first_choices_ms.mean, Some(145.0));
        assert_eq!(s.e2e_last_content_ms.max, Some(220.0));
        assert_eq!((s.completed, s.failed), (2, 1));
        assert_eq!(s.errors.get("http_status"), Some(&1));
        // Tokens: 4 from usage, 2 chunks where usage was missing.
        assert_eq!(s.output_tokens, 6);
        assert_eq!(s.usage_missing, 1);
        assert_eq!(s.output_tok_s, Some(3.0));
        assert_eq!(s.total_tok_s, Some(13.0));
        assert_eq!(s.request_throughput, Some(1.0));
        // TPOT: (140-100)/3 and (230-200)/1.
        assert_eq!(s.tpot_ms.count, 2);
        assert!((s.tpot_ms.mean.unwrap_or(0.0) - (40.0 / 3.0 + 30.0) / 2.0).abs() < 1e-9);
        // ITL pooled: 10, 20, 20.
        assert_eq!(s.itl_ms.count, 3);
        assert_eq!(s.itl_ms.p50, Some(20.0));
        assert_eq!(s.ttft_ms.mean, Some(150.0));
        assert_eq!(s.e2e_ms.max, Some(230.0));
    }

    #[test]
    fn client_bound_from_lag_or_cpu() {
        let mut s = ClientSummary::default();
        assess_client(&mut s, 2);
        assert_eq!(s.client_bound, None);
        s.sched_lag_ms = Stats::of(vec![1.0, 50.0, 60.0]);
        s.client_cpu_cores = Some(1.95);
        assess_client(&mut s, 2);
        let why = s.client_bound.clone().unwrap_or_default();
        assert!(
            why.contains("scheduling lag") && why.contains("1.95 of 2 cores"),
            "{why}"
        );
    }

    #[test]
    fn stats_are_exact_then_bounded() {
        let mut d = Quantiles::default();
        for i in 0..1000 {
            d.push(i as f64);
        }
        assert_eq!(
            Stats::from_quantiles(&d),
            Stats::of((0..1000).map(|i| i as f64).collect())
        );
        let mut big = Quantiles::default();
        // Whole cycles of 0.5 .. 999.5, past the cap: mean 500.
        let n = (crate::observe::quantiles::EXACT_CAP / 1000 + 50) * 1000;
        for i in 0..n {
            big.push((i % 1000) as f64 + 0.5);
        }
        assert!(!big.is_exact(), "moved to the histogram");
        let st = Stats::from_quantiles(&big);
        assert_eq!(st.count, n);
        assert!(
            (st.mean.unwrap_or(0.0) - 500.0).abs() < 1e-6,
            "mean stays exact"
        );
        assert_eq!(st.max, Some(999.5));
        let p50 = st.p50.unwrap_or(0.0);
        assert!((p50 - 500.0).abs() / 500.0 < 0.002, "p50 {p50}");
        assert!((st.p99.unwrap_or(0.0) - 990.5).abs() / 990.5 < 0.002);
        d.push(f64::NAN);
        assert_eq!(
            Stats::from_quantiles(&d).count,
            1000,
            "non-finite values are ignored"
        );
        assert_eq!(
            Stats::from_quantiles(&Quantiles::default()),
            Stats::default()
        );
    }

    #[test]
    fn turns_and_the_reusable_share_are_summed_over_the_successful_requests() {
        use crate::load::sample::SessionTurn;
        let turn = |t: u32, last: bool, ttft: f64, prompt: u64, reusable: u64| {
            let mut r = sample(ttft, &[ttft, ttft + 10.0], ttft + 10.0, Some(2));
            r.turn = Some(SessionTurn {
                session: 0,
                turn: t,
                last,
            });
            r.prompt_tokens = Some(prompt);
            r.reusable_tokens = Some(reusable);
            r
        };
        let mut bad = turn(1, true, 0.0, 50, 40);
        bad.error_kind = Some(ErrorKind::HttpStatus);
        // Turn reusables above the server's prompt count are bounded by it.
        let mut far = turn(30, true, 300.0, 100, 150);
        far.turn = far.turn.map(|t| SessionTurn { last: true, ..t });
        let s = summarize(
            &[
                turn(0, false, 100.0, 20, 0),
                turn(1, true, 200.0, 40, 30),
                turn(0, false, 110.0, 20, 5),
                bad,
                far,
            ],
            1.0,
            10,
            None,
        );
        // (0 + 30 + 5 + 100) / (20 + 40 + 20 + 100); the failed request is not counted.
        assert_eq!(s.reusable_prompt_share, Some(135.0 / 180.0));
        let got: Vec<(u32, usize, Option<f64>)> = s
            .turns
            .iter()
            .map(|t| (t.turn, t.ttft_ms.count, t.ttft_ms.p50))
            .collect();
        assert_eq!(
            got,
            vec![
                (1, 2, Some(105.0)),
                (2, 1, Some(200.0)),
                (TURN_BUCKETS, 1, Some(300.0))
            ]
        );
        assert_eq!(s.ttft_first_turn_ms.p50, Some(105.0));
        assert_eq!(s.ttft_last_turn_ms.p50, Some(250.0));
        assert_eq!(s.turns[0].tpot_ms.p50, Some(10.0));
        // Without sessions or a known reusable part: nothing claimed.
        let plain = summarize(&[sample(5.0, &[5.0], 6.0, Some(1))], 1.0, 10, None);
        assert_eq!((plain.reusable_prompt_share, plain.turns.len()), (None, 0));
        // One successful turn whose part is not known (or whose prompt the server did not
        // count): the rest alone are no ceiling, so none is claimed.
        let mut unknown = turn(1, true, 200.0, 40, 30);
        unknown.reusable_tokens = None;
        let mut uncounted = turn(1, true, 200.0, 40, 30);
        uncounted.prompt_tokens = None;
        for odd in [unknown, uncounted] {
            let s = summarize(&[turn(0, false, 100.0, 20, 0), odd], 1.0, 10, None);
            assert_eq!(s.reusable_prompt_share, None);
        }
    }

    #[test]
    fn no_success_gives_no_numbers() {
        let s = summarize(&[], 0.0, 10, None);
        assert_eq!(s.output_tok_s, None);
        assert_eq!(s.ttft_ms.mean, None);
    }

    #[test]
    fn the_mean_tokens_per_request_counts_what_the_server_counted() {
        let s = ClientSummary {
            completed: 3,
            failed: 2,
            input_tokens: 1000,
            output_tokens: 72,
            ..Default::default()
        };
        // (1000 + 72) ÷ 3, rounded up: a request holds whole tokens.
        assert_eq!(s.mean_tokens_per_request(), Some(358));
        assert_eq!(ClientSummary::default().mean_tokens_per_request(), None);
    }
}
