//! `sgtune log`'s report on one file: what the log says about the server (version hints,
//! capacity, the measured window, stats, the verdict or the failure it ends in), as a table,
//! JSON or CSV.

use std::fmt::Write as _;

use serde::Serialize;

use crate::observe::diagnose::{self, Verdict};
use crate::observe::engine_log::LogSummarizer;
use crate::observe::failure;
use crate::observe::sglang_log::jsonl::format_ts;
use crate::observe::sglang_log::{IDLE_GAP_SECS, ServerSummary, Timestamp};
use crate::plan::engine::Engine;
use crate::server::failure::{FailureKind, StartFailure};

/// `sgtune log --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
    Csv,
}

/// A failure the log ends in.
#[derive(Debug, Clone, Serialize)]
pub struct FailureReport {
    /// `start-up` (no ready line) or `after ready`.
    pub phase: &'static str,
    pub kind: FailureKind,
    /// The decisive log line.
    pub message: String,
    /// Which way to turn the knobs.
    pub direction: String,
    /// The lines around it.
    pub evidence: Vec<String>,
}

/// Everything `sgtune log` says about one file.
#[derive(Debug, Clone, Serialize)]
pub struct FileReport {
    pub file: String,
    pub bytes: u64,
    /// The offered concurrency the verdict used, and where it came from.
    pub offered: Option<u64>,
    pub offered_source: &'static str,
    pub restricted: bool,
    pub summary: ServerSummary,
    pub verdict: Verdict,
    pub failure: Option<FailureReport>,
}

fn failure_report(f: StartFailure, ready_seen: bool) -> FailureReport {
    let decisive = f
        .evidence
        .iter()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.trim().to_string());
    let message = match (f.kind, decisive) {
        (FailureKind::Crashed, Some(last)) => {
            format!("the server died after the ready line; last log line: {last}")
        }
        (_, Some(line)) => line,
        (_, None) => f.message.clone(),
    };
    FailureReport {
        phase: if ready_seen {
            "after ready"
        } else {
            "start-up"
        },
        kind: f.kind,
        direction: failure::failure_direction(f.kind, &message),
        message,
        evidence: f.evidence,
    }
}

/// The report for a log that has been read into `s`.
pub fn file_report(
    file: &str,
    bytes: u64,
    s: &LogSummarizer,
    concurrency: Option<u64>,
    restricted: bool,
) -> FileReport {
    let summary = s.summary();
    let verdict = diagnose::diagnose(concurrency.unwrap_or(0), 0, None, Some(&summary));
    let failure = failure::log_failure(&s.tail(), summary.ready_seen)
        .map(|f| failure_report(f, summary.ready_seen));
    let (offered, offered_source) = match (concurrency, summary.offered_estimate) {
        (Some(c), _) => (Some(c), "--concurrency"),
        (None, Some(e)) => (Some(e), "estimated: max #running-req + #queue-req"),
        (None, None) => (None, "unknown"),
    };
    FileReport {
        file: file.to_string(),
        bytes,
        offered,
        offered_source,
        restricted,
        summary,
        verdict,
        failure,
    }
}

fn num(v: Option<f64>, prec: usize) -> String {
    v.map_or("-".into(), |x| format!("{x:.prec$}"))
}

fn int<T: ToString>(v: Option<T>) -> String {
    v.map_or("-".into(), |x| x.to_string())
}

fn pct(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{:.0}%", x * 100.0))
}

fn human_bytes(b: u64) -> String {
    let b = b as f64;
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} KB", b / 1e3)
    } else {
        format!("{b} B")
    }
}

fn row(o: &mut String, label: &str, text: &str) {
    let _ = writeln!(o, "{label:<12}{text}");
}

fn window_text(r: &FileReport) -> String {
    let s = &r.summary;
    let w = &s.window;
    let mut t = match (w.first_line, w.last_line) {
        (Some(a), Some(b)) => format!("stats lines {}-{}", a + 1, b + 1),
        _ => "no stats lines".to_string(),
    };
    if let (Some(a), Some(b)) = (w.start, w.end) {
        let _ = write!(t, ", {} to {}", format_ts(&a), format_ts(&b));
        if let Some(secs) = w.seconds {
            let _ = write!(t, " ({secs:.0} s)");
        }
    }
    match s.ready_line {
        Some(l) => {
            let _ = write!(t, "; after the ready line ({})", l + 1);
        }
        None => t.push_str("; no ready line, so nothing is excluded as warmup"),
    }
    if w.first_line.is_some() || s.warmup_stats_lines > 0 {
        let first = s.excluded_decode_lines.saturating_sub(s.idle_gap_lines);
        let gap = if s.engine == Engine::Vllm {
            crate::observe::vllm_log::summary::IDLE_GAP_SECS
        } else {
            IDLE_GAP_SECS
        };
        let _ = write!(
            t,
            "; excluded: {} warmup stats lines, {first} first Decode line(s), {} after idle gaps > {gap:.0} s",
            s.warmup_stats_lines, s.idle_gap_lines
        );
    }
    if r.restricted {
        t.push_str("; restricted by --since/--until");
    }
    t
}

/// The human-readable block for one file: one section after another, each appending its rows.
pub fn render_table(r: &FileReport) -> String {
    let s = &r.summary;
    let mut o = String::new();
    render_title(&mut o, r);
    render_version(&mut o, s);
    render_capacity(&mut o, s);
    render_kv_cache(&mut o, s);
    render_server_args(&mut o, s);
    render_window(&mut o, r);
    if s.has_stats() {
        render_decode_stats(&mut o, s);
        render_graph(&mut o, s);
        render_garbled(&mut o, s);
    } else {
        render_no_stats(&mut o, s);
    }
    render_prefill(&mut o, s);
    render_verdict(&mut o, r);
    render_failure(&mut o, r);
    o
}

/// The title line: `== file (N lines, size)`.
fn render_title(o: &mut String, r: &FileReport) {
    let _ = writeln!(
        o,
        "== {} ({} lines, {})",
        r.file,
        r.summary.lines,
        human_bytes(r.bytes)
    );
}

/// The `version` row, and the hints it was inferred from when there are any.
fn render_version(o: &mut String, s: &ServerSummary) {
    if s.engine == Engine::Vllm {
        let v = s.engine_version.as_deref().unwrap_or("version not printed");
        row(
            o,
            "version",
            &format!(
                "vLLM {v} (Running → #running-req, Waiting/Pending → #queue-req, KV cache usage → token usage)"
            ),
        );
        return;
    }
    row(o, "version", &s.version.one_line());
    if !s.version.hints.is_empty() {
        row(o, "", &format!("from: {}", s.version.hints.join("; ")));
    }
}

/// The `capacity` row: the token pool, request and context limits, chunked prefill and the
/// memory left, as far as the log printed them.
fn render_capacity(o: &mut String, s: &ServerSummary) {
    let mut cap = Vec::new();
    if let Some(v) = s.max_total_num_tokens {
        cap.push(format!("max_total_num_tokens {v}"));
    }
    if let Some(v) = s.max_running_requests {
        cap.push(format!("max_running_requests {v}"));
    }
    if let Some(v) = s.context_len {
        cap.push(format!("context_len {v}"));
    }
    if let Some(v) = s.chunked_prefill_size {
        cap.push(format!("chunked_prefill_size {v}"));
    }
    if let Some(v) = s.available_mem_gb {
        cap.push(format!("available mem {v:.2} GB"));
    }
    row(
        o,
        "capacity",
        &if cap.is_empty() {
            "no capacity line".to_string()
        } else {
            format!("{} (per DP rank)", cap.join(", "))
        },
    );
}

/// The `kv cache` row: dtype, K+V size, the hierarchical cache's host pool, and the radix
/// cache when the server args turn it off.
fn render_kv_cache(o: &mut String, s: &ServerSummary) {
    let tokens = s
        .hicache_host_tokens
        .map(|t| format!(" ({t} tokens)"))
        .unwrap_or_default();
    let mut kv = format!(
        "{}, {}; {}",
        s.kv_cache_dtype.as_deref().unwrap_or("dtype not printed"),
        s.kv_cache_gb.map_or("size not printed".into(), |g| format!(
            "{g:.2} GB K+V per rank"
        )),
        s.hicache_host_gb
            .map_or("no hierarchical cache".into(), |g| format!(
                "hierarchical cache host pool {g:.2} GB{tokens} per rank"
            ))
    );
    if s.radix_cache_disabled {
        kv += "; radix cache off (disable_radix_cache)";
    }
    row(o, "kv cache", &kv);
}

/// The `server args` row (the launch arguments as `key=value`), when the log has them.
fn render_server_args(o: &mut String, s: &ServerSummary) {
    if !s.launch_args.is_empty() {
        let args: Vec<String> = s
            .launch_args
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        row(o, "server args", &args.join(" "));
    }
}

/// The `window` row: which lines and times the stats come from, and what was excluded.
fn render_window(o: &mut String, r: &FileReport) {
    row(o, "window", &window_text(r));
}

/// The decode stats rows (`decode`, `gen tok/s`, `running`, `queue`, `kv usage`,
/// `retractions`), for a log with Decode lines in the window.
fn render_decode_stats(o: &mut String, s: &ServerSummary) {
    let dp = if s.dp_ranks > 1 {
        format!(", summed over {} DP ranks per interval", s.dp_ranks)
    } else {
        String::new()
    };
    row(
        o,
        "decode",
        &format!(
            "{} lines kept in {} intervals{dp}{}",
            s.stats_lines,
            s.intervals,
            if s.percentiles_approx {
                "; percentiles from a histogram (within 0.1%)"
            } else {
                ""
            }
        ),
    );
    row(
        o,
        "gen tok/s",
        &format!(
            "mean {}, median {}, p10 {}, p90 {}",
            num(s.gen_throughput_mean, 1),
            num(s.gen_throughput_median, 1),
            num(s.gen_throughput_p10, 1),
            num(s.gen_throughput_p90, 1)
        ),
    );
    row(
        o,
        "running",
        &format!(
            "#running-req mean {}, max {}",
            num(s.running_req_mean, 1),
            int(s.running_req_max)
        ),
    );
    row(
        o,
        "queue",
        &format!(
            "#queue-req mean {}, max {}, > 0 in {} of intervals",
            num(s.queue_req_mean, 1),
            int(s.queue_req_max),
            pct(s.queue_nonzero_share)
        ),
    );
    row(
        o,
        "kv usage",
        &format!(
            "token usage mean {}, p90 {}, max {}",
            num(s.token_usage_mean, 2),
            num(s.token_usage_p90, 2),
            num(s.token_usage_max, 2)
        ),
    );
    row(
        o,
        "retractions",
        &if s.retractions_not_logged {
            "not printed (vLLM's V0 engine logs no preemption count)".to_string()
        } else {
            format!(
                "{} ({} requests retracted)",
                s.retractions, s.retracted_requests
            )
        },
    );
}

/// The `graph` row: how often CUDA graphs (or the log's graph field) were on, and the
/// captured batch sizes.
fn render_graph(o: &mut String, s: &ServerSummary) {
    let graph = match &s.graph_label {
        Some(l) => {
            let mut g = format!("{l} on in {} of Decode lines", pct(s.graph_on_share));
            if s.graphs_disabled {
                g.push_str(" (the log says graphs are disabled)");
            }
            if let Some(bs) = s.cuda_graph_max_bs {
                let _ = write!(g, "; captured batch sizes up to {bs}");
            }
            g
        }
        None => "no graph field".to_string(),
    };
    row(o, "graph", &graph);
}

/// The `garbled` row, when Decode lines without numbers were skipped.
fn render_garbled(o: &mut String, s: &ServerSummary) {
    if s.garbled_stats_lines > 0 {
        row(
            o,
            "garbled",
            &format!(
                "{} Decode lines without numbers skipped",
                s.garbled_stats_lines
            ),
        );
    }
}

/// The `stats` row that stands in for the decode stats when the window has no Decode lines.
fn render_no_stats(o: &mut String, s: &ServerSummary) {
    row(
        o,
        "stats",
        &format!(
            "{}{}",
            if s.prefill_lines > 0 {
                "no Decode lines"
            } else {
                "no stats lines"
            },
            if s.warmup_stats_lines > 0 {
                format!(
                    " ({} warmup stats lines before the ready line)",
                    s.warmup_stats_lines
                )
            } else {
                String::new()
            }
        ),
    );
}

/// The `prefill` row: input throughput and the cached share of prefill tokens, when the log
/// has Prefill lines.
fn render_prefill(o: &mut String, s: &ServerSummary) {
    if s.prefill_lines > 0 {
        row(
            o,
            "prefill",
            &format!(
                "{} lines, input tok/s mean {}, cached tokens {} of {} prefill tokens",
                s.prefill_lines,
                num(s.prefill_input_throughput_mean, 1),
                pct(s.cached_token_share),
                s.prefill_new_tokens.saturating_add(s.prefill_cached_tokens)
            ),
        );
    }
}

/// The `verdict` row (with the offered concurrency it used) and its `hint`.
fn render_verdict(o: &mut String, r: &FileReport) {
    let offered = match r.offered {
        Some(c) => format!(" [offered concurrency {c}: {}]", r.offered_source),
        None => String::new(),
    };
    row(
        o,
        "verdict",
        &format!(
            "{}: {}{offered}",
            r.verdict.kind.as_str(),
            r.verdict.evidence
        ),
    );
    if !r.verdict.hint.is_empty() {
        row(o, "hint", &r.verdict.hint);
    }
}

/// The `failure` and `direction` rows, when the log ends in a failure.
fn render_failure(o: &mut String, r: &FileReport) {
    if let Some(f) = &r.failure {
        row(
            o,
            "failure",
            &format!("{} failure ({}): {}", f.phase, f.kind.as_str(), f.message),
        );
        row(o, "direction", &f.direction);
    }
}

const CSV_HEADER: [&str; 45] = [
    "file",
    "lines",
    "ready_line",
    "warmup_stats_lines",
    "stats_lines",
    "prefill_lines",
    "excluded_decode_lines",
    "window_first_line",
    "window_last_line",
    "window_start",
    "window_end",
    "window_seconds",
    "gen_tput_mean",
    "gen_tput_median",
    "gen_tput_p10",
    "gen_tput_p90",
    "running_req_mean",
    "running_req_max",
    "queue_req_mean",
    "queue_req_max",
    "queue_nonzero_share",
    "token_usage_mean",
    "token_usage_p90",
    "token_usage_max",
    "retractions",
    "retracted_requests",
    "graph_label",
    "graph_on_share",
    "prefill_input_tput_mean",
    "cached_token_share",
    "max_total_num_tokens",
    "max_running_requests",
    "context_len",
    "kv_cache_dtype",
    "kv_cache_gb",
    "hicache_host_gb",
    "hicache_host_tokens",
    "available_mem_gb",
    "version",
    "offered",
    "verdict",
    "verdict_evidence",
    "failure_kind",
    "failure_message",
    "failure_direction",
];

fn csv_row(r: &FileReport) -> Vec<String> {
    let s = &r.summary;
    let f = |v: Option<f64>| v.map(|x| format!("{x:.4}")).unwrap_or_default();
    let u = |v: Option<u64>| v.map(|x| x.to_string()).unwrap_or_default();
    let line1 = |v: Option<usize>| v.map(|x| (x + 1).to_string()).unwrap_or_default();
    let ts = |t: Option<Timestamp>| t.map(|t| format_ts(&t)).unwrap_or_default();
    vec![
        r.file.clone(),
        s.lines.to_string(),
        line1(s.ready_line),
        s.warmup_stats_lines.to_string(),
        s.stats_lines.to_string(),
        s.prefill_lines.to_string(),
        s.excluded_decode_lines.to_string(),
        line1(s.window.first_line),
        line1(s.window.last_line),
        ts(s.window.start),
        ts(s.window.end),
        f(s.window.seconds),
        f(s.gen_throughput_mean),
        f(s.gen_throughput_median),
        f(s.gen_throughput_p10),
        f(s.gen_throughput_p90),
        f(s.running_req_mean),
        u(s.running_req_max),
        f(s.queue_req_mean),
        u(s.queue_req_max),
        f(s.queue_nonzero_share),
        f(s.token_usage_mean),
        f(s.token_usage_p90),
        f(s.token_usage_max),
        // Empty, not 0, where the log cannot say (vLLM's V0 engine).
        if s.retractions_not_logged {
            String::new()
        } else {
            s.retractions.to_string()
        },
        if s.retractions_not_logged {
            String::new()
        } else {
            s.retracted_requests.to_string()
        },
        s.graph_label.clone().unwrap_or_default(),
        f(s.graph_on_share),
        f(s.prefill_input_throughput_mean),
        f(s.cached_token_share),
        u(s.max_total_num_tokens),
        u(s.max_running_requests),
        u(s.context_len),
        s.kv_cache_dtype.clone().unwrap_or_default(),
        f(s.kv_cache_gb),
        f(s.hicache_host_gb),
        u(s.hicache_host_tokens),
        f(s.available_mem_gb),
        match (s.engine, &s.engine_version) {
            (Engine::Vllm, Some(v)) => format!("vLLM {v}"),
            (Engine::Vllm, None) => "vLLM".to_string(),
            (Engine::Sglang, _) => s.version.one_line(),
        },
        u(r.offered),
        r.verdict.kind.as_str().to_string(),
        r.verdict.evidence.clone(),
        r.failure
            .as_ref()
            .map(|x| x.kind.as_str().to_string())
            .unwrap_or_default(),
        r.failure
            .as_ref()
            .map(|x| x.message.clone())
            .unwrap_or_default(),
        r.failure
            .as_ref()
            .map(|x| x.direction.clone())
            .unwrap_or_default(),
    ]
}

/// All reports in one format.
pub fn render(reports: &[FileReport], format: Format) -> String {
    match format {
        Format::Table => reports
            .iter()
            .map(render_table)
            .collect::<Vec<_>>()
            .join("\n"),
        Format::Json => serde_json::to_string_pretty(reports).unwrap_or_default() + "\n",
        Format::Csv => {
            let mut w = csv::Writer::from_writer(Vec::new());
            let _ = w.write_record(CSV_HEADER);
            for r in reports {
                let _ = w.write_record(csv_row(r));
            }
            w.into_inner()
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host pool is named in GB and, where the start-up line says, in tokens; a radix
    /// cache turned off is named too.
    #[test]
    fn the_kv_cache_row_names_the_host_pool_in_tokens() {
        let kv = |s: &ServerSummary| {
            let mut o = String::new();
            render_kv_cache(&mut o, s);
            o
        };
        let s = ServerSummary {
            hicache_host_gb: Some(0.01),
            hicache_host_tokens: Some(8800),
            ..ServerSummary::default()
        };
        assert!(
            kv(&s).contains("hierarchical cache host pool 0.01 GB (8800 tokens) per rank"),
            "{}",
            kv(&s)
        );
        let gb_only = ServerSummary {
            hicache_host_tokens: None,
            ..s
        };
        assert!(kv(&gb_only).contains("host pool 0.01 GB per rank"));
        assert!(!kv(&gb_only).contains("radix"));
        let off = ServerSummary {
            radix_cache_disabled: true,
            ..ServerSummary::default()
        };
        assert!(
            kv(&off).ends_with("no hierarchical cache; radix cache off (disable_radix_cache)\n"),
            "{}",
            kv(&off)
        );
    }
}
