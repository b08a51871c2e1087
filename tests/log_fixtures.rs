//! The log parser against one small log per SGLang format era and variant (written from the
//! team's SGLang log-format reference, summarised in `docs/cpu-sglang.md`), and against three
//! real logs of SGLang 0.5.23 on CPU (a sweep of 32 concurrent requests of 64 + 256 tokens),
//! with exact expectations.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test may panic: that is its failure

use std::collections::BTreeMap;
use std::path::PathBuf;

use sgtune::observe::diagnose::{VerdictKind, diagnose};
use sgtune::observe::failure::{failure_direction, log_failure};
use sgtune::observe::sglang_log::jsonl::line_event;
use sgtune::observe::sglang_log::{LogWindow, Scope, ServerSummary, Summarizer, summarize_file};
use sgtune::server::failure::FailureKind;

fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/logs")
        .join(name)
}

fn read_scoped(name: &str, scope: Scope) -> Summarizer {
    match summarize_file(&path(name), scope) {
        Ok(s) => s,
        Err(e) => panic!("{name}: {e}"),
    }
}

fn read(name: &str) -> ServerSummary {
    read_scoped(name, Scope::default()).summary()
}

fn window(start_line: usize, end_line: usize) -> Scope {
    Scope {
        lines: Some(LogWindow {
            start_line,
            end_line,
        }),
        ..Scope::default()
    }
}

/// Event lines per kind, as `sgtune log --events jsonl` writes them.
fn events(name: &str) -> BTreeMap<&'static str, usize> {
    let text = std::fs::read(path(name)).unwrap_or_default();
    let mut counts = BTreeMap::new();
    for line in text.split(|b| *b == b'\n') {
        if let Some(e) = line_event(line) {
            *counts.entry(e.kind).or_insert(0) += 1;
        }
    }
    counts
}

fn counts(pairs: &[(&'static str, usize)]) -> BTreeMap<&'static str, usize> {
    pairs.iter().copied().collect()
}

#[track_caller]
fn close(got: Option<f64>, want: f64) {
    match got {
        Some(g) if (g - want).abs() < 1e-6 => {}
        _ => panic!("got {got:?}, want {want}"),
    }
}

fn verdict(s: &ServerSummary) -> VerdictKind {
    diagnose(0, 0, None, Some(s)).kind
}

#[test]
fn v0_1_no_prefix() {
    let s = read("v0.1-no-prefix.log");
    assert!(!s.ready_seen);
    assert_eq!(s.lines, 7);
    // Four Decode lines, the first excluded; no timestamps, so no idle-gap rule.
    assert_eq!((s.stats_lines, s.excluded_decode_lines), (3, 1));
    close(s.gen_throughput_mean, 300.0);
    close(s.gen_throughput_median, 300.0);
    close(s.gen_throughput_p10, 284.0);
    close(s.gen_throughput_p90, 316.0);
    close(s.running_req_mean, 13.0 / 3.0);
    assert_eq!(s.running_req_max, Some(5));
    close(s.queue_req_mean, 8.0 / 3.0);
    assert_eq!(s.queue_req_max, Some(4));
    close(s.token_usage_mean, 0.5);
    close(s.token_usage_max, 0.55);
    assert_eq!((s.retractions, s.retracted_requests), (1, 2));
    // `new fill batch`: #seq/#new_token/#cached_token.
    assert_eq!(s.prefill_lines, 2);
    assert_eq!((s.prefill_new_tokens, s.prefill_cached_tokens), (131, 8));
    assert_eq!(s.window.start, None);
    assert_eq!(
        s.version.older_than.as_deref(),
        Some("2024-06-07, v0.1.16 (bare `#running-req:` Decode line)")
    );
    assert_eq!(s.version.newer_than, None);
    assert_eq!(
        events("v0.1-no-prefix.log"),
        counts(&[("decode", 4), ("prefill", 2), ("retract", 1)])
    );
}

#[test]
fn v0_1_17_gpu_id_and_prefil_typo() {
    let s = read("v0.1.17-gpu-id.log");
    assert!(!s.ready_seen);
    assert_eq!((s.stats_lines, s.excluded_decode_lines), (2, 1));
    close(s.gen_throughput_mean, 410.0);
    assert_eq!(s.running_req_max, Some(9));
    assert_eq!(s.queue_req_max, Some(0));
    assert_eq!(s.max_total_num_tokens, Some(200000));
    assert_eq!(s.context_len, Some(4096));
    assert_eq!(s.max_running_requests, None);
    assert_eq!((s.prefill_new_tokens, s.prefill_cached_tokens), (807, 25));
    assert_eq!(
        s.version.one_line(),
        "between 2024-06-07, v0.1.17 (`Prefil batch` (typo)) and 2024-06-25, v0.1.17 (`Prefil batch` (typo))"
    );
    assert_eq!(verdict(&s), VerdictKind::ComputeBound);
    assert_eq!(
        events("v0.1.17-gpu-id.log"),
        counts(&[("capacity", 1), ("decode", 3), ("prefill", 2)])
    );
}

#[test]
fn v0_2_7_gpu_tag_queue_with_spare_kv() {
    let s = read("v0.2.7-gpu.log");
    assert_eq!(s.ready_line, Some(9));
    // The warmup Prefill before the ready line does not count.
    assert_eq!(s.warmup_stats_lines, 1);
    assert_eq!(s.prefill_lines, 1);
    assert_eq!((s.stats_lines, s.excluded_decode_lines), (2, 1));
    close(s.gen_throughput_mean, 950.0);
    assert_eq!(s.running_req_max, Some(16));
    close(s.queue_req_mean, 48.0);
    close(s.queue_nonzero_share, 1.0);
    assert_eq!(s.offered_estimate, Some(64));
    assert_eq!(s.max_running_requests, Some(16));
    let v = diagnose(64, 0, None, Some(&s));
    assert_eq!(v.kind, VerdictKind::QueueWithSpareKv);
    assert!(
        v.evidence.contains("pinned at max_running_requests 16"),
        "{}",
        v.evidence
    );
    assert_eq!(
        events("v0.2.7-gpu.log"),
        counts(&[("capacity", 2), ("decode", 3), ("prefill", 2), ("ready", 1)])
    );
}

#[test]
fn v0_3_time_only_prefix_tp_duplicates_midnight_and_idle_gap() {
    let s = read("v0.3-hhmmss-tp0.log");
    assert_eq!(s.warmup_stats_lines, 1);
    // Six Decode lines after ready: the first, and the one 26 s after its predecessor, left out.
    assert_eq!(
        (s.stats_lines, s.excluded_decode_lines, s.idle_gap_lines),
        (4, 2, 1)
    );
    close(s.gen_throughput_mean, 1800.0);
    close(s.gen_throughput_median, 2050.0);
    close(s.gen_throughput_p10, 1230.0);
    close(s.gen_throughput_p90, 2170.0);
    close(s.running_req_mean, 26.25);
    close(s.queue_req_mean, 24.25);
    assert_eq!(s.queue_req_max, Some(33));
    close(s.queue_nonzero_share, 0.75);
    close(s.token_usage_mean, 0.7125);
    close(s.token_usage_p90, 0.964);
    close(s.token_usage_max, 0.97);
    // The TP1 copy of the retraction is not counted.
    assert_eq!((s.retractions, s.retracted_requests), (1, 1));
    // `Prefill batch(mixed #running-req: 0)`.
    assert_eq!(s.prefill_lines, 1);
    assert_eq!(s.prefill_new_tokens, 8192);
    // 23:59:50 → 00:00:34 across midnight.
    close(s.window.seconds, 44.0);
    assert_eq!(s.max_total_num_tokens, Some(100000));
    let v = diagnose(0, 0, None, Some(&s));
    assert_eq!(v.kind, VerdictKind::KvCacheBound);
    assert!(
        v.evidence
            .contains("capacity 100000 tokens ÷ plateau 32 ≈ 3125 tokens held per running request"),
        "{}",
        v.evidence
    );
    assert_eq!(
        s.version.one_line(),
        "between 2024-08-25, v0.2.14 (`[HH:MM:SS TP0]` prefix) and 2024-10-17, v0.3.4 (`[HH:MM:SS TP0]` prefix)"
    );
    assert_eq!(
        events("v0.3-hhmmss-tp0.log"),
        counts(&[
            ("capacity", 2),
            ("decode", 6),
            ("prefill", 2),
            ("ready", 1),
            ("retract", 2)
        ])
    );
}

#[test]
fn v0_4_dated_trailing_comma_hicache() {
    let s = read("v0.4.4-dated-trailing-comma.log");
    assert_eq!((s.stats_lines, s.excluded_decode_lines), (3, 1));
    close(s.gen_throughput_mean, 3100.0);
    close(s.gen_throughput_p10, 3020.0);
    close(s.gen_throughput_p90, 3180.0);
    assert_eq!(s.running_req_max, Some(64));
    close(s.token_usage_max, 0.08);
    // 24576 cached of 32768 prefill tokens.
    close(s.cached_token_share, 0.75);
    assert_eq!(s.max_total_num_tokens, Some(600000));
    assert_eq!(s.chunked_prefill_size, Some(8192));
    assert_eq!(s.context_len, Some(131072));
    close(s.kv_cache_gb, 18.32);
    close(s.hicache_host_gb, 48.0);
    // `kv_cache_dtype='auto'` names no dtype.
    assert_eq!(s.kv_cache_dtype, None);
    assert_eq!(s.cuda_graph_max_bs, Some(160));
    assert_eq!(s.launch_arg("mem_fraction_static"), Some("0.88"));
    assert_eq!(
        s.version.one_line(),
        "between 2025-03-05, v0.4.3.post3 (`largest-len`) and 2025-03-26, v0.4.4.post1 (`largest-len`)"
    );
    assert_eq!(verdict(&s), VerdictKind::ComputeBound);
    assert_eq!(
        diagnose(128, 0, None, Some(&s)).kind,
        VerdictKind::ClientBound
    );
    assert_eq!(
        events("v0.4.4-dated-trailing-comma.log"),
        counts(&[
            ("capacity", 2),
            ("decode", 4),
            ("hicache_alloc", 2),
            ("kv_alloc", 2),
            ("prefill", 2),
            ("ready", 1)
        ])
    );
}

#[test]
fn v0_5_3_speculative() {
    let s = read("v0.5.3-speculative.log");
    assert_eq!((s.stats_lines, s.excluded_decode_lines), (2, 1));
    close(s.gen_throughput_mean, 1600.0);
    assert_eq!(s.graph_label.as_deref(), Some("cuda graph"));
    close(s.graph_on_share, 1.0);
    assert_eq!(s.cuda_graph_max_bs, Some(32));
    assert_eq!(s.max_running_requests, Some(48));
    close(s.available_mem_gb, 10.5);
    assert_eq!(
        s.version.one_line(),
        "between 2025-10-13, v0.5.3.post2 (`accept rate`) and 2025-10-23, v0.5.3.post3 (`batch.`)"
    );
    let text = std::fs::read(path("v0.5.3-speculative.log")).unwrap_or_default();
    let last = text.split(|b| *b == b'\n').nth(5).and_then(line_event);
    let fields = last.map(|e| e.fields).unwrap_or_default();
    assert_eq!(fields.get("accept_len"), Some(&serde_json::json!(3.6)));
    assert_eq!(fields.get("accept_rate"), Some(&serde_json::json!(0.78)));
    assert_eq!(
        events("v0.5.3-speculative.log"),
        counts(&[("capacity", 1), ("decode", 3), ("ready", 1)])
    );
}

#[test]
fn v0_5_4_forward_iteration_tag() {
    let s = read("v0.5.4-batch-iter.log");
    assert_eq!(
        (s.stats_lines, s.excluded_decode_lines, s.prefill_lines),
        (1, 1, 1)
    );
    close(s.gen_throughput_mean, 99.99);
    assert_eq!(s.prefill_cached_tokens, 4);
    assert_eq!(
        s.version.one_line(),
        "between 2025-10-23, v0.5.4 (`batch [N],`) and 2026-01-29, v0.5.8 (trailing comma after #queue-req)"
    );
    assert_eq!(
        events("v0.5.4-batch-iter.log"),
        counts(&[("decode", 2), ("prefill", 1), ("ready", 1)])
    );
}

#[test]
fn hybrid_swa_and_mamba_pools() {
    let s = read("2025-hybrid-swa.log");
    // The TP1 line is a duplicate and dropped; `full token usage` stands for token usage.
    assert_eq!((s.stats_lines, s.excluded_decode_lines), (2, 1));
    close(s.gen_throughput_mean, 158.52);
    close(s.token_usage_mean, 0.025);
    assert_eq!(s.running_req_max, Some(2));
    assert!(
        s.version
            .hints
            .iter()
            .any(|h| h.starts_with("hybrid `#full token`"))
    );
    assert!(
        s.version
            .hints
            .iter()
            .any(|h| h.starts_with("`mamba usage`"))
    );
    assert_eq!(
        events("2025-hybrid-swa.log"),
        counts(&[("decode", 4), ("ready", 1)])
    );
}

#[test]
fn dp_attention_ranks_summed_per_interval() {
    let s = read("2026-dp-attention-ms.log");
    // Four DP ranks: each rank's first line left out, then two intervals of four lines.
    assert_eq!(s.dp_ranks, 4);
    assert_eq!(
        (s.stats_lines, s.excluded_decode_lines, s.intervals),
        (8, 4, 2)
    );
    close(s.gen_throughput_mean, 4000.0);
    close(s.running_req_mean, 80.0);
    assert_eq!(s.running_req_max, Some(80));
    close(s.token_usage_mean, 0.4025);
    close(s.token_usage_max, 0.45);
    // Capacity and KV size are per DP rank, printed once / per rank.
    assert_eq!(s.max_total_num_tokens, Some(250000));
    close(s.kv_cache_gb, 16.0);
    assert_eq!(s.kv_cache_dtype.as_deref(), Some("torch.bfloat16"));
    assert_eq!(s.cuda_graph_max_bs, Some(64));
    close(s.window.seconds, 10.53);
    assert_eq!(
        s.version.newer_than.as_deref(),
        Some("2026-05-24 (KV alloc line names its dtype)")
    );
    assert!(
        s.version
            .hints
            .contains(&"milliseconds in the prefix (since 2025-12-01)".to_string())
    );
    assert_eq!(verdict(&s), VerdictKind::ComputeBound);
    assert_eq!(
        events("2026-dp-attention-ms.log"),
        counts(&[
            ("capacity", 1),
            ("decode", 12),
            ("kv_alloc", 4),
            ("ready", 1)
        ])
    );
}

#[test]
fn cuda_graph_limited_above_captured_batch() {
    let s = read("2026-cuda-graph-limited.log");
    assert_eq!(s.stats_lines, 5);
    assert_eq!((s.graph_lines, s.graph_on_lines), (5, 1));
    close(s.graph_off_running_mean, 215.0);
    assert_eq!(s.graph_off_running_min, Some(200));
    assert_eq!(s.graph_on_running_max, Some(150));
    assert_eq!(s.cuda_graph_max_bs, Some(160));
    close(s.gen_throughput_mean, 7520.0);
    let v = diagnose(0, 0, None, Some(&s));
    assert_eq!(v.kind, VerdictKind::CudaGraphLimited);
    assert_eq!(
        v.evidence,
        "cuda graph: False in 80% of Decode lines; #running-req on those mean 215.0 (max 230) > captured batch size 160"
    );
    assert!(v.hint.contains("cuda_graph_max_bs to about 230"));
}

#[test]
fn retraction_churn() {
    let s = read("2026-retraction-churn.log");
    assert_eq!((s.stats_lines, s.excluded_decode_lines), (12, 1));
    assert_eq!((s.retractions, s.retracted_requests), (6, 12));
    close(s.window.seconds, 60.0);
    let v = diagnose(0, 0, None, Some(&s));
    assert_eq!(v.kind, VerdictKind::RetractionChurn);
    assert!(
        v.evidence
            .starts_with("6 retractions (12 requests) in 60 s (6.0/min)"),
        "{}",
        v.evidence
    );
    assert_eq!(
        events("2026-retraction-churn.log"),
        counts(&[
            ("capacity", 1),
            ("decode", 13),
            ("ready", 1),
            ("retract", 6)
        ])
    );
}

#[test]
fn pd_prefill_and_decode_servers() {
    let s = read("2025-pd-prefill.log");
    assert!(!s.has_stats());
    assert_eq!(s.prefill_lines, 2);
    close(s.prefill_input_throughput_mean, 25000.25);
    assert_eq!(
        (s.prefill_new_tokens, s.prefill_cached_tokens),
        (24192, 384)
    );
    let v = diagnose(0, 0, None, Some(&s));
    assert_eq!(v.kind, VerdictKind::Unknown);
    assert!(v.evidence.contains("only Prefill lines"));

    let s = read("2025-pd-decode.log");
    assert_eq!((s.stats_lines, s.excluded_decode_lines), (2, 1));
    close(s.gen_throughput_mean, 410.0);
    assert_eq!(s.dp_ranks, 1);
    let text = std::fs::read(path("2025-pd-decode.log")).unwrap_or_default();
    let e = text.split(|b| *b == b'\n').nth(1).and_then(line_event);
    let fields = e.map(|e| e.fields).unwrap_or_default();
    for k in [
        "pre_allocated_usage",
        "prealloc_req",
        "transfer_req",
        "retracted_req",
    ] {
        assert!(fields.contains_key(k), "{k}: {fields:?}");
    }
}

#[test]
fn log_level_warning_has_no_stats() {
    let s = read("2026-log-level-warning.log");
    assert!(!s.ready_seen);
    assert!(!s.has_stats());
    assert_eq!(s.stats_lines, 0);
    assert_eq!(s.gen_throughput_mean, None);
    assert_eq!(s.running_req_max, None);
    assert_eq!(s.token_usage_max, None);
    assert_eq!(s.retractions, 1);
    let v = diagnose(0, 0, None, Some(&s));
    assert_eq!(
        (v.kind, v.evidence.as_str()),
        (
            VerdictKind::Unknown,
            "no server stats lines in the measured window"
        )
    );
    assert_eq!(
        log_failure(
            &read_scoped("2026-log-level-warning.log", Scope::default()).tail(),
            false
        ),
        None
    );
    assert_eq!(
        events("2026-log-level-warning.log"),
        counts(&[("retract", 1)])
    );
}

#[test]
fn foreign_prefixes_glued_bars_and_a_garbled_line() {
    let s = read("2025-foreign-prefixes.log");
    assert_eq!(s.ready_line, Some(0));
    assert_eq!((s.stats_lines, s.excluded_decode_lines), (3, 1));
    assert_eq!(s.garbled_stats_lines, 1);
    close(s.gen_throughput_mean, 2500.0);
    close(s.queue_req_mean, 10.0);
    close(s.window.seconds, 6.0);
    assert_eq!(verdict(&s), VerdictKind::KvCacheBound);
    assert_eq!(
        events("2025-foreign-prefixes.log"),
        counts(&[("decode", 5), ("ready", 1)])
    );
}

fn failure_of(name: &str) -> (FailureKind, String, String) {
    let s = read_scoped(name, Scope::default());
    let sum = s.summary();
    assert!(!sum.has_stats(), "{name}");
    let f = log_failure(&s.tail(), sum.ready_seen);
    let Some(f) = f else {
        panic!("{name}: no failure found")
    };
    let line = f.evidence.last().cloned().unwrap_or_default();
    let dir = failure_direction(f.kind, &line);
    (f.kind, line.trim().to_string(), dir)
}

#[test]
fn startup_failures_and_their_directions() {
    let (k, line, dir) = failure_of("startup-not-enough-memory.log");
    assert_eq!(k, FailureKind::Oom);
    assert!(line.starts_with("RuntimeError: Not enough memory."));
    assert!(
        dir.contains("raise mem_fraction_static (now 0.84)"),
        "{dir}"
    );

    let (k, line, dir) = failure_of("startup-cuda-graph-oom.log");
    assert_eq!(k, FailureKind::Oom);
    assert!(line.starts_with("Exception: Capture cuda graph failed: CUDA out of memory."));
    assert!(dir.contains("lower cuda_graph_max_bs"), "{dir}");

    let (k, _, dir) = failure_of("startup-host-memory.log");
    assert_eq!(k, FailureKind::Oom);
    assert!(dir.contains("lower hicache_size"), "{dir}");

    let (k, line, dir) = failure_of("startup-bad-flag.log");
    assert_eq!(k, FailureKind::BadFlag);
    assert!(line.starts_with("sglang serve: error: argument --kv-cache-dtype"));
    assert_eq!(
        dir,
        "--kv-cache-dtype does not accept 'fp9'; allowed: auto, fp8_e5m2, fp8_e4m3, bf16, bfloat16, fp4_e2m1"
    );
}

// ---------------------------------------------------------------------------------------------
// Real SGLang 0.5.23 on CPU: 32 concurrent requests of 64 + 256 tokens.

const CONCURRENCY: u64 = 32;
const TOKENS_PER_REQUEST: u64 = 64 + 256;

#[test]
fn real_kv_bound_run() {
    // The measured window sgtune recorded for this run: lines [76, 222).
    let s = read_scoped("real-0.5.23-cpu-kv-bound.log", window(76, 222)).summary();
    assert_eq!(s.max_total_num_tokens, Some(2048));
    assert_eq!(s.max_running_requests, Some(1024));
    // #running-req pinned at capacity ÷ tokens per request.
    assert_eq!(2048 / TOKENS_PER_REQUEST, 6);
    assert_eq!(s.running_req_max, Some(6));
    assert_eq!((s.stats_lines, s.excluded_decode_lines), (69, 1));
    assert!(s.queue_req_mean.is_some_and(|q| q > 0.0));
    assert_eq!(s.queue_req_max, Some(26));
    close(s.queue_req_mean, 1300.0 / 69.0);
    close(s.running_req_mean, 402.0 / 69.0);
    close(s.token_usage_max, 0.93);
    close(s.gen_throughput_median, 483.43);
    assert!(
        s.gen_throughput_mean
            .is_some_and(|g| (g - 487.02).abs() < 0.01)
    );
    assert_eq!(s.offered_estimate, Some(CONCURRENCY));
    assert_eq!(s.retractions, 0);
    assert_eq!(s.kv_cache_dtype.as_deref(), Some("torch.bfloat16"));
    assert_eq!(s.graph_label.as_deref(), Some("cpu graph"));
    assert!(s.graphs_disabled);
    assert_eq!(
        s.version.newer_than.as_deref(),
        Some("2026-05-24 (KV alloc line names its dtype)")
    );
    let v = diagnose(CONCURRENCY, TOKENS_PER_REQUEST, None, Some(&s));
    assert_eq!(v.kind, VerdictKind::KvCacheBound);
    assert!(
        v.evidence
            .contains("capacity 2048 tokens ÷ 320 tokens per request ≈ 6 requests"),
        "{}",
        v.evidence
    );
    // Without the workload, from the log alone.
    assert_eq!(verdict(&s), VerdictKind::KvCacheBound);
    // The whole log (after ready) says the same.
    let whole = read("real-0.5.23-cpu-kv-bound.log");
    assert_eq!(whole.running_req_max, Some(6));
    assert_eq!(whole.warmup_stats_lines, 1);
    assert_eq!(verdict(&whole), VerdictKind::KvCacheBound);
    assert_eq!(
        events("real-0.5.23-cpu-kv-bound.log"),
        counts(&[
            ("capacity", 1),
            ("decode", 76),
            ("kv_alloc", 1),
            ("prefill", 15),
            ("ready", 1)
        ])
    );
}

#[test]
fn real_roomy_run() {
    // Window [75, 158).
    let s = read_scoped("real-0.5.23-cpu-roomy.log", window(75, 158)).summary();
    assert_eq!(s.max_total_num_tokens, Some(32768));
    assert_eq!(s.running_req_max, Some(32));
    close(s.running_req_mean, 32.0);
    assert_eq!(s.queue_req_max, Some(0));
    close(s.token_usage_max, 0.3);
    assert_eq!((s.stats_lines, s.excluded_decode_lines), (12, 1));
    assert!(
        s.gen_throughput_mean
            .is_some_and(|g| (g - 951.93).abs() < 0.01)
    );
    let v = diagnose(CONCURRENCY, TOKENS_PER_REQUEST, None, Some(&s));
    assert_ne!(v.kind, VerdictKind::KvCacheBound);
    assert_eq!(v.kind, VerdictKind::ComputeBound);
    // CPU graphs are never "CUDA-graph limited".
    assert_eq!(s.graph_on_share, Some(0.0));
    assert_ne!(verdict(&s), VerdictKind::CudaGraphLimited);
}

#[test]
fn real_fp8_rejected_at_start() {
    let r = read_scoped("real-0.5.23-cpu-fp8-rejected.log", Scope::default());
    let s = r.summary();
    assert!(!s.ready_seen);
    assert!(!s.has_stats());
    assert_eq!(s.kv_cache_dtype.as_deref(), Some("fp8_e4m3"));
    assert_eq!(s.error_lines, 1);
    let Some(f) = log_failure(&r.tail(), s.ready_seen) else {
        panic!("no failure")
    };
    assert_eq!(f.kind, FailureKind::StartupError);
    assert_eq!(
        f.message,
        "ValueError: CPU FP8 KV cache requires Intel AMX support."
    );
    let dir = failure_direction(f.kind, &f.message);
    assert!(
        dir.starts_with("a platform limit, not a tuning problem"),
        "{dir}"
    );
    assert_eq!(
        events("real-0.5.23-cpu-fp8-rejected.log"),
        counts(&[("error", 1)])
    );
}

#[test]
fn every_fixture_streams_like_text() {
    // The streaming reader and the text fed line by line agree on every fixture.
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/logs");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let p = entry.path();
        if p.extension().is_none_or(|e| e != "log") {
            continue;
        }
        let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap_or_default()).into_owned();
        let mut s = Summarizer::new(Scope::default());
        for l in text.lines() {
            s.feed_line(l.as_bytes());
        }
        let a = s.summary();
        let b = summarize_file(&p, Scope::default()).map(|s| s.summary());
        assert_eq!(b.ok().as_ref(), Some(&a), "{}", p.display());
        n += 1;
    }
    assert!(n >= 20, "{n} fixtures");
}
