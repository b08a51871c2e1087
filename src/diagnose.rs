//! ClientSummary + ServerSummary → Verdict: what limited this run, the numbers that show it,
//! and which way to turn the knobs. First version; the log-intelligence work deepens it.

use crate::metrics::ClientSummary;
use crate::sglang_log::ServerSummary;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    /// Running requests plateau below the offered concurrency, a queue, a full KV pool.
    KvCacheBound,
    /// A queue while the KV pool has room: a scheduler-side cap.
    QueueWithSpareKv,
    /// The server had room but the client did not keep it busy.
    ClientBound,
    /// Every offered request was running, no queue.
    ComputeBound,
    /// Not enough evidence (no server stats lines, or no completed request).
    Unknown,
}

impl VerdictKind {
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictKind::KvCacheBound => "kv_cache_bound",
            VerdictKind::QueueWithSpareKv => "queue_with_spare_kv",
            VerdictKind::ClientBound => "client_bound",
            VerdictKind::ComputeBound => "compute_bound",
            VerdictKind::Unknown => "unknown",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub kind: VerdictKind,
    /// The numbers the verdict rests on.
    pub evidence: String,
    /// What to try next.
    pub hint: String,
}

/// Share of the offered concurrency below which running requests count as "plateaued".
const PLATEAU: f64 = 0.9;
/// Mean queue length that counts as "a persistent queue".
const QUEUED: f64 = 0.5;
/// Token usage that counts as a full KV pool.
const KV_FULL: f64 = 0.8;

pub fn diagnose(
    concurrency: u64,
    tokens_per_request: u64,
    client: Option<&ClientSummary>,
    server: Option<&ServerSummary>,
) -> Verdict {
    let unknown = |why: &str| Verdict {
        kind: VerdictKind::Unknown,
        evidence: why.to_string(),
        hint: String::new(),
    };
    let Some(s) = server.filter(|s| s.has_stats()) else {
        return unknown("no server stats lines in the measured window");
    };
    let (Some(run_max), Some(run_mean), Some(q_mean)) =
        (s.running_req_max, s.running_req_mean, s.queue_req_mean)
    else {
        return unknown("server stats lines lack #running-req/#queue-req");
    };
    let usage_max = s.token_usage_max.unwrap_or(0.0);
    let offered = concurrency as f64;
    let ratio = client
        .and_then(|c| c.output_tok_s)
        .zip(s.gen_throughput_mean)
        .filter(|(_, g)| *g > 0.0)
        .map(|(c, g)| c / g);
    let ratio_text = ratio
        .map(|r| format!("; client/server tok/s {:.2}", r))
        .unwrap_or_default();

    if (run_max as f64) < PLATEAU * offered
        && q_mean > QUEUED
        && (usage_max >= KV_FULL || s.retractions > 0)
    {
        let arithmetic = match s.max_total_num_tokens {
            Some(cap) if tokens_per_request > 0 => format!(
                "; capacity {cap} tokens ÷ {tokens_per_request} tokens per request ≈ {} requests",
                cap / tokens_per_request
            ),
            _ => String::new(),
        };
        return Verdict {
            kind: VerdictKind::KvCacheBound,
            evidence: format!(
                "#running-req max {run_max} of {concurrency} offered, #queue-req mean {q_mean:.1}, token usage max {usage_max:.2}, retractions {}{arithmetic}{ratio_text}",
                s.retractions
            ),
            hint: "more KV capacity: raise mem_fraction_static, enable hierarchical cache (hicache_size), a smaller kv_cache_dtype, or lower the concurrency".into(),
        };
    }
    if q_mean > QUEUED {
        return Verdict {
            kind: VerdictKind::QueueWithSpareKv,
            evidence: format!(
                "#queue-req mean {q_mean:.1} while token usage max is {usage_max:.2}; #running-req max {run_max} of {concurrency}{ratio_text}"
            ),
            hint: "a scheduler-side cap: check max_running_requests, lower schedule_conservativeness, chunked_prefill_size".into(),
        };
    }
    if run_mean < PLATEAU * offered || ratio.is_some_and(|r| r < 0.7) {
        return Verdict {
            kind: VerdictKind::ClientBound,
            evidence: format!(
                "no queue, #running-req mean {run_mean:.1} of {concurrency} offered, token usage max {usage_max:.2}{ratio_text}"
            ),
            hint: "the server had room: the client did not keep the offered concurrency busy (check the client machine, or raise the concurrency)".into(),
        };
    }
    Verdict {
        kind: VerdictKind::ComputeBound,
        evidence: format!(
            "#running-req mean {run_mean:.1} of {concurrency} offered, no queue, token usage max {usage_max:.2}{ratio_text}"
        ),
        hint: "the KV cache is not the limit: more concurrency, or faster compute (tp_size, cuda graphs)".into(),
    }
}
