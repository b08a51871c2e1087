//! vLLM's log read like SGLang's: each field of the stats and capacity lines of the V0 and V1
//! engines, on real lines (where each came from: tests/fixtures/logs/vllm-SOURCES.md), the
//! summary the verdicts read, and `engine_log`'s choice of parser.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test may panic: that is its failure

use std::path::PathBuf;

use sgtune::observe::diagnose::{VerdictKind, diagnose};
use sgtune::observe::engine_log::{LogSummarizer, summarize_file};
use sgtune::observe::failure::{failure_direction, log_failure};
use sgtune::observe::sglang_log::{LogWindow, Scope, ServerSummary};
use sgtune::observe::vllm_log::{Event, Stats, StatsFormat, Summarizer, parse_line};
use sgtune::plan::engine::Engine;
use sgtune::server::failure::FailureKind;

/// A whole vLLM log text summarised, the lines in `window` measured (None: all).
fn summarize_text(text: &str, window: Option<LogWindow>) -> ServerSummary {
    let mut s = Summarizer::new(Scope {
        lines: window,
        ..Scope::default()
    });
    for l in text.lines() {
        s.feed_line(l.as_bytes());
    }
    s.summary()
}

fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/logs")
        .join(name)
}

fn text(name: &str) -> String {
    std::fs::read_to_string(path(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn stats(line: &str) -> Stats {
    match parse_line(line).map(|l| l.event) {
        Some(Event::Stats(s)) => s,
        other => panic!("not a stats line ({other:?}): {line}"),
    }
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-9)
}

fn first_line(name: &str) -> String {
    text(name).lines().next().unwrap_or_default().to_string()
}

#[test]
fn v0_stats_line_every_field() {
    let s = stats(&first_line("vllm-v0-metrics.log"));
    assert_eq!(s.format, StatsFormat::V0);
    assert_eq!(s.engine, None);
    assert!(close(s.prompt_throughput, 0.0));
    assert!(close(s.generation_throughput, 44.9));
    assert_eq!(s.running, Some(2));
    assert_eq!(s.swapped, Some(0));
    assert_eq!(s.waiting, Some(3));
    assert!(close(s.kv_usage, 0.821));
    assert_eq!(s.kv_device.as_deref(), Some("GPU"));
    assert!(close(s.swap_usage, 0.0));
    // V0 has no prefix hit rate, deferred or preemption part: empty, not zero.
    assert_eq!(s.prefix_hit_rate, None);
    assert_eq!(s.deferred, None);
    assert_eq!(s.preemptions, None);
    let ts = parse_line(&first_line("vllm-v0-metrics.log")).and_then(|l| l.ts);
    assert_eq!(
        ts.map(|t| t.secs_of_day),
        Some(21.0 * 3600.0 + 48.0 * 60.0 + 18.0)
    );
}

#[test]
fn v0_stats_line_with_a_closing_period() {
    let s = stats(&first_line("vllm-v0-metrics-period.log"));
    assert_eq!(s.format, StatsFormat::V0);
    assert!(close(s.generation_throughput, 41.7));
    assert_eq!(
        (s.running, s.waiting, s.swapped),
        (Some(1), Some(0), Some(0))
    );
    assert!(close(s.kv_usage, 0.02));
    assert!(close(s.swap_usage, 0.0));
}

#[test]
fn v1_stats_line_every_field() {
    let s = stats(&first_line("vllm-v1-kv-full.log"));
    assert_eq!(s.format, StatsFormat::V1);
    assert_eq!(s.engine, Some(0));
    assert!(close(s.prompt_throughput, 0.0));
    assert!(close(s.generation_throughput, 1055.3));
    assert_eq!(s.running, Some(18));
    assert_eq!(s.waiting, Some(43));
    assert_eq!(s.swapped, None);
    assert!(close(s.kv_usage, 0.959));
    assert_eq!(s.kv_device.as_deref(), Some("GPU"));
    assert_eq!(s.swap_usage, None);
    assert!(close(s.prefix_hit_rate, 0.0));
    let s = stats(&first_line("vllm-v1-docker-prefix.log"));
    assert!(close(s.prompt_throughput, 6335.3));
    assert!(close(s.generation_throughput, 4.8));
    assert_eq!((s.running, s.waiting), (Some(9), Some(0)));
    assert!(close(s.kv_usage, 0.628));
}

#[test]
fn v1_stats_line_of_0_32_on_cpu() {
    let t = text("vllm-0.32.0-cpu-roomy.log");
    let line = t
        .lines()
        .find(|l| l.contains("Avg generation throughput: 271.2"))
        .expect("the busy interval");
    let s = stats(line);
    assert_eq!(s.format, StatsFormat::V1);
    assert_eq!(s.engine, Some(0));
    assert!(close(s.prompt_throughput, 17.6));
    assert!(close(s.generation_throughput, 271.2));
    assert_eq!((s.running, s.waiting), (Some(0), Some(0)));
    assert!(close(s.kv_usage, 0.0));
    assert_eq!(s.kv_device.as_deref(), Some("CPU"));
    assert!(close(s.prefix_hit_rate, 0.0));
}

#[test]
fn capacity_lines_of_each_era() {
    let caps: Vec<_> = text("vllm-v1-capacity.log")
        .lines()
        .filter_map(parse_line)
        .map(|l| l.event)
        .collect();
    let Event::Capacity(c) = &caps[0] else {
        panic!("{caps:?}")
    };
    assert_eq!(c.kv_tokens, Some(2_042_016));
    let Event::Capacity(c) = &caps[1] else {
        panic!("{caps:?}")
    };
    assert_eq!(c.tokens_per_request, Some(2048));
    assert!(close(c.max_concurrency, 997.08));
    assert_eq!(caps[2], Event::KvGib(6.51));
    let s = summarize_text(&text("vllm-v1-capacity.log"), None);
    assert_eq!(s.max_total_num_tokens, Some(2_042_016)); // the first
    assert_eq!(s.context_len, Some(2048));
    // 0.32 on CPU: one line, the device named.
    let s = summarize_text(&text("vllm-0.32.0-cpu-roomy.log"), None);
    assert_eq!(s.max_total_num_tokens, Some(262_144));
    assert_eq!(s.context_len, Some(2048));
    assert!(close(s.kv_cache_gb, 1.073_741_824));
    assert_eq!(s.engine, Engine::Vllm);
    assert_eq!(s.engine_version.as_deref(), Some("0.32.0"));
    // V0: blocks, not tokens (the block size is not in the log): the token count stays empty.
    let v0: Vec<_> = text("vllm-v0-capacity.log")
        .lines()
        .filter_map(parse_line)
        .collect();
    let Event::Capacity(c) = &v0[0].event else {
        panic!("{v0:?}")
    };
    assert_eq!(c.gpu_blocks, Some(1952));
    let s = summarize_text(&text("vllm-v0-capacity.log"), None);
    assert_eq!(s.max_total_num_tokens, None);
    assert_eq!(s.context_len, Some(20_000));
}

#[test]
fn v1_summary_feeds_the_kv_bound_verdict() {
    let s = summarize_text(&text("vllm-v1-kv-full.log"), None);
    // No ready line in the excerpt: nothing is warmup; the first line is left out.
    assert_eq!(s.excluded_decode_lines, 1);
    assert_eq!(s.stats_lines, 4);
    assert!(close(
        s.gen_throughput_mean,
        (1226.3 + 734.9 + 589.8 + 1242.7) / 4.0
    ));
    assert_eq!(s.running_req_max, Some(21));
    assert!(close(s.running_req_mean, (18.0 + 18.0 + 21.0 + 20.0) / 4.0));
    assert_eq!(s.queue_req_max, Some(42));
    assert!(close(s.queue_req_mean, (42.0 + 33.0 + 23.0 + 23.0) / 4.0));
    assert!(close(s.queue_nonzero_share, 1.0));
    assert!(close(s.token_usage_max, 0.984));
    assert_eq!(s.offered_estimate, Some(60));
    assert!(close(s.cached_token_share, 0.0));
    // The span runs from the first stats line of the window, left out or not (as SGLang's).
    assert_eq!(s.window.seconds, Some(40.0));
    // What vLLM cannot say stays empty.
    assert_eq!(s.prefill_lines, 0);
    assert_eq!(s.graph_lines, 0);
    assert_eq!(s.kv_cache_dtype, None);
    assert_eq!(s.prefill_input_throughput_mean, None);
    let v = diagnose(0, 0, None, Some(&s));
    assert_eq!(v.kind, VerdictKind::KvCacheBound, "{v:?}");
    // The hint names vLLM's knobs.
    assert!(v.hint.contains("gpu_memory_utilization"), "{v:?}");
    assert!(!v.hint.contains("hicache"), "{v:?}");
}

#[test]
fn v0_summary_is_compute_bound_with_one_request() {
    let s = summarize_text(&text("vllm-v0-metrics-period.log"), None);
    assert_eq!(s.stats_lines, 5);
    assert_eq!(s.running_req_max, Some(1));
    assert_eq!(s.queue_req_max, Some(0));
    assert!(close(s.token_usage_max, 0.023));
    let v = diagnose(1, 0, None, Some(&s));
    assert_eq!(v.kind, VerdictKind::ComputeBound, "{v:?}");
}

#[test]
fn idle_gaps_and_warmup_are_left_out() {
    let line = |t: &str, g: f64, r: u64| {
        format!(
            "(APIServer pid=1) INFO 12-02 02:{t} [loggers.py:335] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: {g:.1} tokens/s, Running: {r} reqs, Waiting: 0 reqs, CPU KV cache usage: 10.0%, Prefix cache hit rate: 0.0%\n"
        )
    };
    let mut log = line("10:00", 5.0, 1); // warmup: before the ready line
    log += "INFO:     Application startup complete.\n";
    log += &line("11:00", 50.0, 1); // first in the window: left out
    log += &line("11:10", 100.0, 2);
    log += &line("11:20", 200.0, 4);
    log += &line("13:00", 7.0, 1); // 100 s later: straddles idle time, left out
    log += &line("13:10", 300.0, 6);
    let s = summarize_text(&log, None);
    assert!(s.ready_seen);
    assert_eq!(s.ready_line, Some(1));
    assert_eq!(s.warmup_stats_lines, 1);
    assert_eq!(s.excluded_decode_lines, 2);
    assert_eq!(s.idle_gap_lines, 1);
    assert_eq!(s.stats_lines, 3);
    assert!(close(s.gen_throughput_mean, 200.0));
    assert_eq!(s.running_req_max, Some(6));
    // The decode steps come from the same kept lines: Running ÷ throughput, graph unknown.
    let steps: Vec<(f64, f64, u32, Option<bool>)> = s
        .decode_steps
        .iter()
        .map(|b| (b.running, b.step_ms, b.lines, b.graph))
        .collect();
    assert_eq!(
        steps,
        vec![
            (2.0, 20.0, 1, None),
            (4.0, 20.0, 1, None),
            (6.0, 20.0, 1, None)
        ]
    );
}

/// Data parallelism 2 (real lines, vllm-project/vllm PR #30738): each engine prints its own
/// line per interval; the server's interval is their sum, as with SGLang's DP ranks. Each
/// engine's first line is left out (as one engine's is), so one interval of two lines counts.
#[test]
fn data_parallel_engines_lines_are_summed_per_interval() {
    let t = text("vllm-v1-dp2-engines.log");
    let mfu = stats(t.lines().nth(2).unwrap_or_default());
    assert_eq!(mfu.engine, Some(0));
    assert!(close(mfu.generation_throughput, 32.0));
    assert_eq!((mfu.running, mfu.waiting), (Some(106), Some(22)));
    assert_eq!(stats(t.lines().nth(3).unwrap_or_default()).engine, Some(1));
    let s = summarize_text(&t, None);
    assert_eq!(s.dp_ranks, 2);
    assert_eq!((s.stats_lines, s.excluded_decode_lines), (2, 2));
    assert_eq!(s.intervals, 1);
    assert!(
        close(s.gen_throughput_mean, 64.0),
        "{:?}",
        s.gen_throughput_mean
    );
    assert!(close(s.running_req_mean, 212.0), "{:?}", s.running_req_mean);
    assert_eq!((s.running_req_max, s.queue_req_max), (Some(212), Some(44)));
    // KV usage is per engine's pool: the mean of the lines, not a sum.
    assert!(close(s.token_usage_max, 0.025), "{:?}", s.token_usage_max);
    // With `--aggregate-engine-logging` vLLM sums them itself, under the prefix its
    // AggregatedLoggingStatLogger prints (`{n} Engines Aggregated: `): one line, one interval.
    let agg = t
        .lines()
        .filter(|l| l.contains("Engine 000: "))
        .map(|l| l.replace("Engine 000: ", "2 Engines Aggregated: "))
        .collect::<Vec<_>>()
        .join("\n");
    let a = stats(agg.lines().nth(1).unwrap_or_default());
    assert_eq!((a.engine, a.running), (None, Some(106)));
    let s = summarize_text(&agg, None);
    assert_eq!((s.stats_lines, s.intervals, s.dp_ranks), (1, 1, 0));
    assert_eq!(s.running_req_max, Some(106));
}

fn detect(name: &str) -> (Option<Engine>, ServerSummary) {
    let s = summarize_file(&path(name), Scope::default(), None).expect("readable");
    (s.engine(), s.summary())
}

#[test]
fn either_engines_log_is_recognised() {
    for name in [
        "vllm-v0-metrics.log",
        "vllm-v1-kv-full.log",
        "vllm-v1-capacity.log",
        "vllm-0.32.0-cpu-roomy.log",
    ] {
        let (e, s) = detect(name);
        assert_eq!(e, Some(Engine::Vllm), "{name}");
        assert_eq!(s.engine, Engine::Vllm, "{name}");
    }
    for name in ["real-0.5.23-cpu-kv-bound.log", "v0.1-no-prefix.log"] {
        let (e, s) = detect(name);
        assert_eq!(e, Some(Engine::Sglang), "{name}");
        assert_eq!(s.engine, Engine::Sglang, "{name}");
        assert!(s.has_stats(), "{name}");
    }
    // A log with no line of either engine's own stays unknown and reads as SGLang's.
    let mut s = LogSummarizer::detect(Scope::default());
    s.feed_line(b"Traceback (most recent call last):");
    assert_eq!(s.engine(), None);
    assert_eq!(s.tail().len(), 1);
}

#[test]
fn real_0_32_cpu_log_with_a_small_pool() {
    // 16 concurrent requests of 200 tokens, three rounds, on a 2,048-token pool (8 MiB).
    let s = summarize_text(&text("vllm-0.32.0-cpu-kv-bound.log"), None);
    assert_eq!(s.max_total_num_tokens, Some(2048));
    assert_eq!(s.context_len, Some(512));
    assert_eq!(s.max_running_requests, Some(64)); // --max-num-seqs 64
    assert!(s.ready_seen);
    // Six stats lines after the ready line: the first left out, the last all-zero (idle).
    assert_eq!(s.excluded_decode_lines, 2);
    assert_eq!(s.idle_gap_lines, 1);
    assert_eq!(s.stats_lines, 4);
    assert_eq!(s.running_req_max, Some(15));
    assert_eq!(s.queue_req_max, Some(1));
    assert!(close(s.token_usage_max, 1.0));
    assert!(close(
        s.gen_throughput_mean,
        (1324.6 + 1033.5 + 1032.2 + 417.9) / 4.0
    ));
    assert_eq!(s.engine_version.as_deref(), Some("0.32.0"));
    assert!(
        s.launch_args
            .iter()
            .any(|(k, v)| k == "kv_cache_memory_bytes" && v == "8388608"),
        "{:?}",
        s.launch_args
    );
}

fn failure_of(name: &str) -> (FailureKind, String, String) {
    let s = summarize_file(&path(name), Scope::default(), None).expect("readable");
    let sum = s.summary();
    assert!(!sum.has_stats(), "{name}");
    let Some(f) = log_failure(&s.tail(), sum.ready_seen) else {
        panic!("{name}: no failure found")
    };
    let line = f.evidence.last().cloned().unwrap_or_default();
    let dir = failure_direction(f.kind, &line);
    (f.kind, line.trim().to_string(), dir)
}

#[test]
fn real_vllm_start_up_failures_and_their_directions() {
    // `--max-num-seqz 4`: argparse's own line, exit status 2.
    let (k, line, dir) = failure_of("vllm-0.32.0-startup-bad-flag.log");
    assert_eq!(k, FailureKind::BadFlag);
    assert_eq!(
        line,
        "api_server.py: error: unrecognized arguments: --max-num-seqz"
    );
    assert!(
        dir.starts_with("vLLM does not know --max-num-seqz"),
        "{dir}"
    );
    // `--kv-cache-memory-bytes 10000000000000` on a 23.5 GiB node.
    let (k, line, dir) = failure_of("vllm-0.32.0-startup-kv-too-big.log");
    assert_eq!(k, FailureKind::Oom);
    assert!(
        line.contains("is less than requested memory for kv (9313.23 GiB)"),
        "{line}"
    );
    assert!(dir.contains("lower kv_cache_memory_bytes"), "{dir}");
}

/// A results.csv row of `engine` with this server summary, built as a sweep builds it: the
/// effective-argument check read the start-up log without SGLang's `/server_info`.
fn vllm_row(server: ServerSummary, startup_log: &str) -> Vec<(String, String)> {
    use sgtune::plan::flags::ParamValue;
    use sgtune::record::RunRecord;
    let asked = vec![(
        "kv_cache_memory_bytes".to_string(),
        ParamValue::Int(8388608),
    )];
    let lines: Vec<&str> = startup_log.lines().collect();
    let effective = sgtune::observe::effective::check(&asked, None, &lines).for_row();
    let point = sgtune::plan::spec::LoadPoint {
        concurrency: 16,
        request_rate: None,
    };
    let rec = RunRecord {
        server: Some(server),
        time_to_ready_s: Some(60.0),
        effective: Some(effective),
        ..RunRecord::new("v", "id", Engine::Vllm, Vec::new(), point, 1)
    };
    sgtune::record::header(&[])
        .into_iter()
        .zip(sgtune::record::row(&rec))
        .collect()
}

/// Each column vLLM cannot fill (`Engine::unreported_columns`, the one list) is empty on a row
/// made from a real vLLM log that lacks it, never zero, and `sgtune columns` says why under
/// the column; the same logs fill the columns vLLM does report.
#[test]
fn columns_vllm_cannot_fill_are_empty_and_the_reference_says_why() {
    let cell = |row: &[(String, String)], c: &str| {
        row.iter()
            .find(|(h, _)| h == c)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no column {c}"))
    };
    // vLLM 0.32 on CPU, no --max-num-seqs: a V1 log, its pool in tokens.
    let roomy = text("vllm-0.32.0-cpu-roomy.log");
    let v1 = vllm_row(summarize_text(&roomy, None), &roomy);
    // The V0 engine prints its pool in blocks.
    let old = text("vllm-v0-capacity.log");
    let v0 = vllm_row(summarize_text(&old, None), &old);
    // The V0 engine's stats lines carry no preemption count.
    let v0_stats = text("vllm-v0-metrics-period.log");
    let v0s = vllm_row(summarize_text(&v0_stats, None), &v0_stats);
    let cases: &[(&str, &[(String, String)])] = &[
        ("retractions", &v0s),
        ("kv_cache_dtype", &v1),
        ("not_in_effect", &v1),
        ("effective_args_id", &v1),
        ("max_running_requests", &v1),
        ("max_total_num_tokens", &v0),
        // SGLang's hierarchical cache and its /metrics tiers (issue 50): vLLM has neither.
        ("hicache_host_tokens", &v1),
        ("metrics_device_hit_rate", &v1),
        ("metrics_host_hit_rate", &v1),
        ("metrics_load_back_tokens", &v1),
        ("metrics_backup_tokens", &v1),
        ("metrics_evicted_tokens", &v1),
        ("metrics_host_usage_max", &v1),
    ];
    let unreported = Engine::Vllm.unreported_columns();
    let mut listed: Vec<&str> = unreported.iter().map(|(c, _)| c.name()).collect();
    let mut tested: Vec<&str> = cases.iter().map(|(c, _)| *c).collect();
    listed.sort_unstable();
    tested.sort_unstable();
    assert_eq!(listed, tested, "a case for every column in the list");
    let reference = sgtune::record::columns_markdown();
    for (column, row) in cases {
        assert_eq!(cell(row, column), "", "{column} on a vLLM row");
        let why = unreported
            .iter()
            .find(|(c, _)| c.name() == *column)
            .map(|(_, w)| *w)
            .unwrap_or_default();
        let line = reference
            .lines()
            .find(|l| l.starts_with(&format!("| `{column}` |")))
            .unwrap_or_else(|| panic!("{column} is not a column"));
        assert!(
            line.ends_with(&format!(". Empty for vLLM{why} |")),
            "{line}"
        );
    }
    assert!(Engine::Sglang.unreported_columns().is_empty());
    // What vLLM does report is filled on the same rows.
    assert_eq!(cell(&v1, "engine"), "vllm");
    assert!(
        cell(&v1, "max_total_num_tokens")
            .parse::<u64>()
            .is_ok_and(|n| n > 0)
    );
    assert!(!cell(&v1, "kv_cache_gb").is_empty());
    assert!(!cell(&v1, "server_stats_lines").is_empty());
    // V1 prints `Preemptions: N` only when N > 0: its silence is a count of 0.
    assert_eq!(cell(&v1, "retractions"), "0");
}
