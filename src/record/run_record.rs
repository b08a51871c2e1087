//! RunRecord: the flat row of one run. The results.csv column list lives here and only here;
//! `sgtune columns` prints it for the README.

use crate::observe::client::{ClientSummary, Stats};
use crate::observe::diagnose::Verdict;
use crate::observe::sglang_log::ServerSummary;
use crate::plan::flags::ParamValue;
use crate::server::failure::FailureKind;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Ok,
    Failed,
    Interrupted,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Ok => "ok",
            RunStatus::Failed => "failed",
            RunStatus::Interrupted => "interrupted",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct RunRecord {
    pub run_name: String,
    pub run_id: String,
    pub status: RunStatus,
    pub failure_kind: Option<FailureKind>,
    pub failure_message: Option<String>,
    /// Values of the plan's swept keys, in `RunPlan::param_keys` order (None: not set).
    pub params: Vec<(String, Option<ParamValue>)>,
    /// The load point (offered concurrency) of this row.
    pub concurrency: u64,
    /// Open loop: the load point's arrival rate (requests/s); None in a closed loop.
    pub request_rate: Option<f64>,
    /// 1-based repeat index.
    pub repeat: u64,
    pub client: Option<ClientSummary>,
    pub server: Option<ServerSummary>,
    pub verdict: Option<Verdict>,
    pub time_to_ready_s: Option<f64>,
    /// The server's side from `/metrics` (with `--enable-metrics`).
    pub metrics: Option<crate::observe::prom::MetricsSummary>,
    /// Things worth knowing that are not failures (a GPU not released, a slow stop, ...).
    pub notes: Vec<String>,
    pub started_at: String,
    pub finished_at: String,
}

impl RunRecord {
    /// What identifies a row within a sweep: run name, load point, repeat.
    pub fn key(&self) -> RowKey {
        (
            self.run_name.clone(),
            self.concurrency,
            crate::plan::spec::rate_text(self.request_rate),
            self.repeat,
        )
    }
}

/// Run name, concurrency, request rate (as `spec::rate_text` writes it), repeat: one row per
/// key in a finished sweep.
pub type RowKey = (String, u64, String, u64);

/// One fixed column: name, meaning (for the README), and how to read it off a record.
pub struct Column {
    pub name: &'static str,
    pub doc: &'static str,
    pub get: fn(&RunRecord) -> String,
}

fn f(v: Option<f64>) -> String {
    match v {
        Some(x) if x.is_finite() => {
            let s = format!("{x:.4}");
            let s = s.trim_end_matches('0').trim_end_matches('.');
            s.to_string()
        }
        _ => String::new(),
    }
}
fn u(v: Option<u64>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}
fn client<T>(r: &RunRecord, pick: impl Fn(&ClientSummary) -> T) -> Option<T> {
    r.client.as_ref().map(pick)
}
fn server<T>(r: &RunRecord, pick: impl Fn(&ServerSummary) -> Option<T>) -> Option<T> {
    r.server.as_ref().and_then(pick)
}
fn stat(
    r: &RunRecord,
    which: fn(&ClientSummary) -> &Stats,
    part: fn(&Stats) -> Option<f64>,
) -> String {
    f(r.client.as_ref().and_then(|c| part(which(c))))
}

macro_rules! latency_columns {
    ($($metric:ident: $label:literal),*) => {
        [$(
            Column { name: concat!(stringify!($metric), "_mean"), doc: concat!($label, ", mean (ms)"), get: |r| stat(r, |c| &c.$metric, |s| s.mean) },
            Column { name: concat!(stringify!($metric), "_p50"), doc: concat!($label, ", median (ms)"), get: |r| stat(r, |c| &c.$metric, |s| s.p50) },
            Column { name: concat!(stringify!($metric), "_p90"), doc: concat!($label, ", 90th percentile (ms)"), get: |r| stat(r, |c| &c.$metric, |s| s.p90) },
            Column { name: concat!(stringify!($metric), "_p95"), doc: concat!($label, ", 95th percentile (ms)"), get: |r| stat(r, |c| &c.$metric, |s| s.p95) },
            Column { name: concat!(stringify!($metric), "_p99"), doc: concat!($label, ", 99th percentile (ms)"), get: |r| stat(r, |c| &c.$metric, |s| s.p99) },
        )*]
    };
}

/// Columns before the `param_<key>` columns.
pub const LEADING: &[Column] = &[
    Column {
        name: "run_name",
        doc: "Readable run name (explicit config name, or built from the swept values)",
        get: |r| r.run_name.clone(),
    },
    Column {
        name: "run_id",
        doc: "Stable id: hash of the resolved command, model, flags and environment",
        get: |r| r.run_id.clone(),
    },
    Column {
        name: "status",
        doc: "`ok`, `failed` or `interrupted`",
        get: |r| r.status.as_str().to_string(),
    },
    Column {
        name: "failure_kind",
        doc: "Why it failed: `oom`, `bad_flag`, `startup_error`, `crashed`, `ready_timeout`, `load_failed`, `launch_error`, `interrupted`",
        get: |r| {
            r.failure_kind
                .map(|k| k.as_str().to_string())
                .unwrap_or_default()
        },
    },
    Column {
        name: "failure_message",
        doc: "The decisive log line or what happened",
        get: |r| r.failure_message.clone().unwrap_or_default(),
    },
];

/// Columns after the `param_<key>` columns.
pub fn trailing() -> Vec<Column> {
    let mut cols = vec![
        Column {
            name: "concurrency",
            doc: "The load point: offered concurrency (closed loop: requests in flight; open loop: the cap on them)",
            get: |r| r.concurrency.to_string(),
        },
        Column {
            name: "request_rate",
            doc: "Open loop: the load point's arrival rate (requests/s, `request_rate:`); empty in a closed loop",
            get: |r| crate::plan::spec::rate_text(r.request_rate),
        },
        Column {
            name: "repeat",
            doc: "Repeat index, 1-based (`repeats:` in the spec)",
            get: |r| r.repeat.to_string(),
        },
        Column {
            name: "requests_completed",
            doc: "Measured requests that succeeded",
            get: |r| u(client(r, |c| c.completed)),
        },
        Column {
            name: "requests_failed",
            doc: "Measured requests that failed (any error class)",
            get: |r| u(client(r, |c| c.failed)),
        },
        Column {
            name: "duration_s",
            doc: "Measured window: first measured send to last completion (s)",
            get: |r| f(client(r, |c| c.duration_s)),
        },
        Column {
            name: "request_throughput",
            doc: "Completed requests / duration (req/s)",
            get: |r| f(r.client.as_ref().and_then(|c| c.request_throughput)),
        },
        Column {
            name: "output_tok_s",
            doc: "Client output tokens/s: Σ usage.completion_tokens of successful requests / duration",
            get: |r| f(r.client.as_ref().and_then(|c| c.output_tok_s)),
        },
        Column {
            name: "total_tok_s",
            doc: "Client (prompt + output) tokens/s over the same window",
            get: |r| f(r.client.as_ref().and_then(|c| c.total_tok_s)),
        },
    ];
    cols.extend(latency_columns!(
        ttft_ms: "Time to first token: send → first chunk with non-empty content (SGLang convention)",
        itl_ms: "Inter-token latency: gaps between content chunks, pooled over requests",
        tpot_ms: "Time per output token: (E2E − TTFT)/(output tokens − 1) per request",
        e2e_ms: "End-to-end latency: send → end of stream (SGLang convention)"
    ));
    cols.extend([
        Column {
            name: "ttft_vllm_ms_mean",
            doc: "TTFT in vLLM's convention: send → first chunk with choices, even empty (chat's role-only chunk counts), mean (ms)",
            get: |r| stat(r, |c| &c.ttft_first_choices_ms, |s| s.mean),
        },
        Column {
            name: "ttft_vllm_ms_p50",
            doc: "Same, median (ms)",
            get: |r| stat(r, |c| &c.ttft_first_choices_ms, |s| s.p50),
        },
        Column {
            name: "e2e_vllm_ms_mean",
            doc: "E2E in vLLM's convention: send → last content chunk (the usage chunk and [DONE] excluded), mean (ms)",
            get: |r| stat(r, |c| &c.e2e_last_content_ms, |s| s.mean),
        },
        Column {
            name: "e2e_vllm_ms_p50",
            doc: "Same, median (ms)",
            get: |r| stat(r, |c| &c.e2e_last_content_ms, |s| s.p50),
        },
        Column {
            name: "goodput_share",
            doc: "Share of measured requests meeting every `workload.slo` limit (empty: no SLO)",
            get: |r| f(r.client.as_ref().and_then(|c| c.goodput_share)),
        },
        Column {
            name: "goodput_req_s",
            doc: "Requests meeting every SLO per second of the measured window",
            get: |r| f(r.client.as_ref().and_then(|c| c.goodput_req_s)),
        },
        Column {
            name: "sched_lag_ms_p99",
            doc: "Open loop (`request_rate`): actual minus scheduled send, 99th percentile (ms); empty in closed loop",
            get: |r| stat(r, |c| &c.sched_lag_ms, |s| s.p99),
        },
        Column {
            name: "read_lag_ms_p99",
            doc: "How long streamed data waited in the socket before the client read it (kernel receive timestamp to read, per read), 99th percentile (ms); empty where the OS gives no timestamps",
            get: |r| stat(r, |c| &c.read_lag_ms, |s| s.p99),
        },
        Column {
            name: "cut_off",
            doc: "Requests abandoned at the `duration_s` deadline under `deadline: cut` (not failures, not in latencies)",
            get: |r| u(client(r, |c| c.cut_off)),
        },
        Column {
            name: "client_cpu_cores",
            doc: "CPU sgtune's client used during the measured window, in cores",
            get: |r| f(r.client.as_ref().and_then(|c| c.client_cpu_cores)),
        },
        Column {
            name: "client_bound",
            doc: "Why the client itself may have limited the load (scheduling lag p99 > 10 ms, CPU near the core count); empty when not",
            get: |r| r.client.as_ref().and_then(|c| c.client_bound.clone()).unwrap_or_default(),
        },
        Column { name: "server_gen_tput_mean", doc: "Server `gen throughput (token/s)` from Decode lines in the window, mean (empty: no stats)", get: |r| f(server(r, |s| s.gen_throughput_mean)) },
        Column { name: "server_gen_tput_median", doc: "Same, median", get: |r| f(server(r, |s| s.gen_throughput_median)) },
        Column { name: "running_req_mean", doc: "Server `#running-req`, mean over Decode lines", get: |r| f(server(r, |s| s.running_req_mean)) },
        Column { name: "running_req_max", doc: "Server `#running-req`, max", get: |r| u(server(r, |s| s.running_req_max)) },
        Column { name: "queue_req_mean", doc: "Server `#queue-req`, mean", get: |r| f(server(r, |s| s.queue_req_mean)) },
        Column { name: "queue_req_max", doc: "Server `#queue-req`, max", get: |r| u(server(r, |s| s.queue_req_max)) },
        Column { name: "token_usage_mean", doc: "Server KV `token usage` (0-1), mean", get: |r| f(server(r, |s| s.token_usage_mean)) },
        Column { name: "token_usage_max", doc: "Server KV `token usage`, max", get: |r| f(server(r, |s| s.token_usage_max)) },
        Column { name: "server_stats_lines", doc: "Decode lines the server stats rest on (0: no stats; the columns above are then empty)", get: |r| r.server.as_ref().map(|s| s.stats_lines.to_string()).unwrap_or_default() },
        Column {
            name: "metrics_gen_tput",
            doc: "Server generated tokens/s from a `/metrics` counter's delta over the window: `sglang:realtime_tokens_total{mode=\"decode\"}` where exported, else `sglang:generation_tokens_total` (empty without `--enable-metrics`)",
            get: |r| f(r.metrics.as_ref().and_then(|m| m.gen_tput_from_counter)),
        },
        Column {
            name: "metrics_running_mean",
            doc: "`sglang:num_running_reqs` from `/metrics`, mean over ~1 s scrapes",
            get: |r| f(r.metrics.as_ref().and_then(|m| m.running_mean)),
        },
        Column {
            name: "metrics_queue_mean",
            doc: "`sglang:num_queue_reqs` from `/metrics`, mean over ~1 s scrapes",
            get: |r| f(r.metrics.as_ref().and_then(|m| m.queue_mean)),
        },
        Column { name: "max_total_num_tokens", doc: "KV pool capacity in tokens (startup capacity line)", get: |r| u(server(r, |s| s.max_total_num_tokens)) },
        Column { name: "max_running_requests", doc: "Effective running-request cap (startup capacity line)", get: |r| u(server(r, |s| s.max_running_requests)) },
        Column { name: "kv_cache_dtype", doc: "KV cache dtype (`KV Cache is allocated` line)", get: |r| server(r, |s| s.kv_cache_dtype.clone()).unwrap_or_default() },
        Column { name: "kv_cache_gb", doc: "KV cache size, K + V (GB)", get: |r| f(server(r, |s| s.kv_cache_gb)) },
        Column { name: "retractions", doc: "KV-pool-full retraction events in the window", get: |r| u(r.server.as_ref().map(|s| s.retractions)) },
        Column { name: "time_to_ready_s", doc: "Launch → ready line and HTTP answer (s)", get: |r| f(r.time_to_ready_s) },
        Column { name: "verdict", doc: "What limited the run: `kv_cache_bound`, `retraction_churn`, `cuda_graph_limited`, `queue_with_spare_kv`, `client_bound`, `compute_bound`, `unknown`", get: |r| r.verdict.as_ref().map(|v| v.kind.as_str().to_string()).unwrap_or_default() },
        Column { name: "verdict_evidence", doc: "The numbers behind the verdict", get: |r| r.verdict.as_ref().map(|v| v.evidence.clone()).unwrap_or_default() },
        Column { name: "notes", doc: "Warnings that are not failures, `; `-separated (e.g. a GPU not back to its baseline memory)", get: |r| r.notes.join("; ") },
        Column { name: "started_at", doc: "UTC start of the run (RFC 3339)", get: |r| r.started_at.clone() },
        Column { name: "finished_at", doc: "UTC end of the run (RFC 3339)", get: |r| r.finished_at.clone() },
    ]);
    cols
}

/// The header for a plan with these swept keys.
pub fn header(param_keys: &[String]) -> Vec<String> {
    let mut h: Vec<String> = LEADING.iter().map(|c| c.name.to_string()).collect();
    h.extend(param_keys.iter().map(|k| format!("param_{k}")));
    h.extend(trailing().iter().map(|c| c.name.to_string()));
    h
}

/// The row of one record, aligned with `header`.
pub fn row(r: &RunRecord) -> Vec<String> {
    let mut out: Vec<String> = LEADING.iter().map(|c| (c.get)(r)).collect();
    out.extend(
        r.params
            .iter()
            .map(|(_, v)| v.as_ref().map(|v| v.to_string()).unwrap_or_default()),
    );
    out.extend(trailing().iter().map(|c| (c.get)(r)));
    out
}

/// Markdown table of every column and its meaning (the README's column reference).
pub fn columns_markdown() -> String {
    let mut s = String::from("| column | meaning |\n|---|---|\n");
    for c in LEADING {
        s.push_str(&format!("| `{}` | {} |\n", c.name, c.doc));
    }
    s.push_str(
        "| `param_<key>` | One per swept key (grid or explicit configs): the run's value |\n",
    );
    for c in trailing() {
        s.push_str(&format!("| `{}` | {} |\n", c.name, c.doc));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_row_align_and_names_are_unique() {
        let keys = vec!["mem_fraction_static".to_string()];
        let h = header(&keys);
        let mut sorted = h.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), h.len(), "duplicate column names");
        let r = RunRecord {
            run_name: "a".into(),
            run_id: "0123".into(),
            status: RunStatus::Failed,
            failure_kind: Some(FailureKind::Oom),
            failure_message: Some("Not enough memory".into()),
            params: vec![("mem_fraction_static".into(), Some(ParamValue::Float(0.88)))],
            concurrency: 8,
            request_rate: None,
            repeat: 1,
            client: None,
            server: None,
            verdict: None,
            time_to_ready_s: None,
            metrics: None,
            notes: vec![],
            started_at: "t".into(),
            finished_at: "t".into(),
        };
        let row = row(&r);
        assert_eq!(row.len(), h.len());
        assert_eq!(row[2], "failed");
        assert_eq!(row[3], "oom");
        assert_eq!(row[5], "0.88");
        assert!(h.contains(&"ttft_ms_p99".to_string()));
        assert_eq!(f(Some(1.50)), "1.5");
        assert_eq!(f(Some(2.0)), "2");
        assert_eq!(f(None), "");
    }

    #[test]
    fn verdict_column_names_exactly_the_verdicts() {
        let md = columns_markdown();
        let row = md
            .lines()
            .find(|l| l.starts_with("| `verdict` |"))
            .unwrap_or_default();
        // The backticked names in the column's meaning.
        let named: Vec<&str> = row.split('`').skip(3).step_by(2).collect::<Vec<_>>();
        let want: Vec<&str> = crate::observe::diagnose::VerdictKind::ALL
            .iter()
            .map(|k| k.as_str())
            .collect();
        assert_eq!(named, want, "{row}");
    }
}
