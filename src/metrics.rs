//! RequestSample → ClientSummary. Definitions follow ../shared/reference/metrics-conventions.md:
//! TTFT at the first non-empty content chunk and E2E to the end of the stream (SGLang's
//! bench_serving), TPOT = (E2E − TTFT)/(output tokens − 1) per request, ITL pooled over the
//! gaps between content chunks of all successful requests, output tokens from `usage`,
//! percentiles with numpy's linear interpolation, throughputs over the measured window.

use crate::load::driver::{Phase, RequestSample};
use serde::Serialize;
use std::collections::BTreeMap;

/// Mean and percentiles of one latency, in milliseconds. None when there is no data.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Stats {
    pub count: usize,
    pub mean: Option<f64>,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
}

/// numpy.percentile(..., method="linear") on sorted data; q in [0, 100].
pub fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let pos = (q / 100.0).clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    let (a, b) = (sorted.get(lo)?, sorted.get(hi)?);
    Some(a + (b - a) * (pos - lo as f64))
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
            p99: percentile(&values, 99.0),
            max: values.last().copied(),
        }
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ClientSummary {
    pub completed: u64,
    pub failed: u64,
    /// Measured window in seconds: first send to last completion.
    pub duration_s: f64,
    pub request_throughput: Option<f64>,
    /// Σ output tokens of successful requests / duration.
    pub output_tok_s: Option<f64>,
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
    /// Successful requests whose stream carried no `usage`: output counted as content chunks.
    pub usage_missing: u64,
    pub retries: u64,
    /// Failed requests per error class.
    pub errors: BTreeMap<String, u64>,
    /// One example error message (the first seen).
    pub first_error: Option<String>,
}

/// Summarize the measured requests of a run. `requested_input` stands in for a prompt length
/// the server did not report.
pub fn summarize(
    samples: &[RequestSample],
    duration_s: f64,
    requested_input: u64,
    slo: Option<&crate::spec::Slo>,
) -> ClientSummary {
    let mut s = ClientSummary {
        duration_s,
        ..Default::default()
    };
    let (mut ttft, mut itl, mut tpot, mut e2e) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut ttft_v, mut e2e_v) = (Vec::new(), Vec::new());
    let (mut measured, mut good) = (0u64, 0u64);
    for r in samples.iter().filter(|r| r.phase == Phase::Measured) {
        measured += 1;
        if slo.is_some_and(|slo| r.meets(slo)) {
            good += 1;
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
            continue;
        }
        s.completed += 1;
        s.output_tokens += r.output_tokens();
        s.input_tokens += r.prompt_tokens.unwrap_or(requested_input);
        if r.usage_missing() {
            s.usage_missing += 1;
        }
        ttft.extend(r.ttft_ms);
        e2e.extend(r.end_ms);
        ttft_v.extend(r.first_choices_ms);
        e2e_v.extend(r.last_content_ms);
        tpot.extend(r.tpot_ms());
        itl.extend(r.itl_ms());
    }
    if duration_s > 0.0 && s.completed > 0 {
        s.request_throughput = Some(s.completed as f64 / duration_s);
        s.output_tok_s = Some(s.output_tokens as f64 / duration_s);
        s.total_tok_s = Some((s.input_tokens + s.output_tokens) as f64 / duration_s);
    }
    if slo.is_some() && measured > 0 {
        s.goodput_share = Some(good as f64 / measured as f64);
        if duration_s > 0.0 {
            s.goodput_req_s = Some(good as f64 / duration_s);
        }
    }
    s.ttft_first_choices_ms = Stats::of(ttft_v);
    s.e2e_last_content_ms = Stats::of(e2e_v);
    s.ttft_ms = Stats::of(ttft);
    s.itl_ms = Stats::of(itl);
    s.tpot_ms = Stats::of(tpot);
    s.e2e_ms = Stats::of(e2e);
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::driver::ErrorKind;

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
            prompt_tokens: Some(10),
            completion_tokens: tokens,
            finish_reason: Some("length".into()),
            http_status: Some(200),
            retried: false,
            error_kind: None,
            error: None,
        }
    }

    #[test]
    fn numpy_linear_percentiles() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&v, 50.0), Some(2.5));
        assert_eq!(percentile(&v, 90.0), Some(3.7));
        assert!((percentile(&v, 99.0).unwrap_or(0.0) - 3.97).abs() < 1e-12);
        assert_eq!(percentile(&v, 0.0), Some(1.0));
        assert_eq!(percentile(&v, 100.0), Some(4.0));
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&[5.0], 99.0), Some(5.0));
    }

    #[test]
    fn summary_follows_the_conventions() {
        let a = sample(100.0, &[100.0, 110.0, 130.0], 140.0, Some(4));
        let b = sample(200.0, &[200.0, 220.0], 230.0, None);
        let mut bad = sample(0.0, &[], 0.0, None);
        bad.error_kind = Some(ErrorKind::HttpStatus);
        bad.error = Some("HTTP 500".into());
        let slo = crate::spec::Slo {
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
    fn no_success_gives_no_numbers() {
        let s = summarize(&[], 0.0, 10, None);
        assert_eq!(s.output_tok_s, None);
        assert_eq!(s.ttft_ms.mean, None);
    }
}
