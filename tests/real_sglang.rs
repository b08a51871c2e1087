//! End-to-end against real SGLang 0.5.23 on CPU (scripts/setup-cpu-sglang.sh provides it and
//! the SGTUNE_* variables; scripts/test.sh sets everything up and runs these). Slow: each
//! server start takes ~45 s, so the tests here run one at a time.
//!
//! They are `#[ignore]`d, so a plain `cargo test` lists them as ignored rather than passing
//! them without a server; scripts/test.sh runs them with `--include-ignored`. There is no
//! skip switch: run without the SGTUNE_* variables, they fail.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test may panic: that is its failure

mod common;
use common::real::*;
use common::*;
use std::sync::Mutex;
use std::time::Duration;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// One sweep: an ok configuration, one SGLang rejects on CPU (FP8 KV) and a mistyped flag.
/// It is interrupted (SIGINT) during the first run's load, then resumed to completion.
#[test]
#[ignore = "needs real SGLang on CPU: run scripts/test.sh"]
fn sweep_interrupted_then_resumed_records_ok_and_failed_runs() {
    let env = real_env();
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("e2e");
    let body = r#"sweep:
  max_total_tokens: [4096]
configs:
  - name: fp8-kv
    max_total_tokens: 4096
    kv_cache_dtype: fp8_e4m3
  - name: bad-flag
    no_such_flag: 1
workload:
  concurrency: 8
  requests: 64
  warmup_requests: 2
  input_tokens: 32
  output_tokens: 128
"#;
    let spec_path = dir.path().join("e2e.yaml");
    std::fs::write(&spec_path, spec(&env, &tag, body)).expect("write spec");
    let results = dir.path().join("results");
    let child = sgtune()
        .arg("run")
        .arg(&spec_path)
        .arg("--results-dir")
        .arg(&results)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn sgtune");
    let loading = wait_until(Duration::from_secs(480), || {
        std::fs::read_dir(&results)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok())
            .is_some_and(|e| e.path().join("runs/mtt4096/requests.csv").exists())
    });
    assert!(loading, "the first server never became ready");
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let out = child.wait_with_output().expect("sgtune exits");
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    assert!(
        wait_until(Duration::from_secs(10), || procs_with_tag(&tag).is_empty()),
        "server left after the interrupt: {:?}",
        procs_with_tag(&tag)
    );
    let folder = only_results_folder(&results);
    let rows = read_rows(&folder.join("results.csv"));
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["status"], "interrupted", "{:?}", rows[0]);

    let out = run(sgtune().arg("resume").arg(&folder));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(
        out.status.code(),
        Some(1),
        "some runs failed → exit 1\n{stdout}\n{stderr}"
    );
    let superseded = read_rows(&folder.join("results.superseded.csv"));
    assert_eq!(superseded.len(), 1, "the interrupted row is set aside");

    for f in [
        "spec.yaml",
        "plan.json",
        "results.csv",
        "results.md",
        "report.html",
        "manifest.json",
    ] {
        assert!(folder.join(f).is_file(), "missing {f}");
    }
    let rows = read_rows(&folder.join("results.csv"));
    assert_eq!(rows.len(), 3, "one row per configuration");
    let ok = &rows[0];
    assert_eq!(ok["run_name"], "mtt4096");
    assert_eq!(ok["status"], "ok", "{ok:?}");
    assert_eq!(num(ok, "requests_completed"), 64.0);
    assert_eq!(num(ok, "requests_failed"), 0.0);
    assert!(num(ok, "output_tok_s") > 0.0);
    assert!(
        num(ok, "server_gen_tput_mean") > 0.0,
        "server stats parsed: {ok:?}"
    );
    assert!(num(ok, "server_stats_lines") >= 1.0);
    assert_eq!(num(ok, "max_total_num_tokens"), 4096.0);
    // The second source: /metrics counters agree with the Decode lines' throughput, within
    // the factor two different measures allow. The counters' rate is over the whole load
    // window (prefill, the ramp and the last requests' tail included) and the log's is the
    // mean of its decode intervals' rates, so the counters' is the lower, the more so the
    // busier the machine: 0.47 in a fresh CI run with two real servers' tests at once.
    // A unit or parsing mistake is off by far more.
    let (counter, log) = (num(ok, "metrics_gen_tput"), num(ok, "server_gen_tput_mean"));
    assert!(
        counter / log > 0.25 && counter / log < 2.0,
        "counter {counter} vs log {log}"
    );
    assert!(num(ok, "ttft_ms_p50") > 0.0 && num(ok, "tpot_ms_p50") > 0.0);
    assert!(!ok["verdict"].is_empty());
    for f in [
        "config.json",
        "command.txt",
        "server.log",
        "requests.csv",
        "summary.json",
        "server_info.json",
    ] {
        assert!(
            folder.join("runs/mtt4096").join(f).is_file(),
            "missing runs/mtt4096/{f}"
        );
    }
    let log = std::fs::read_to_string(folder.join("runs/mtt4096/server.log")).expect("log");
    assert!(log.contains("The server is fired up and ready to roll!"));
    assert!(log.contains("Decode batch"));

    let fp8 = &rows[1];
    assert_eq!(fp8["status"], "failed");
    assert_eq!(fp8["failure_kind"], "startup_error", "{fp8:?}");
    assert!(fp8["failure_message"].contains("FP8"), "{fp8:?}");
    let bad = &rows[2];
    assert_eq!(bad["failure_kind"], "bad_flag", "{bad:?}");
    assert!(
        bad["failure_message"].contains("unrecognized arguments: --no-such-flag"),
        "{bad:?}"
    );

    let manifest = std::fs::read_to_string(folder.join("manifest.json")).expect("manifest");
    assert!(
        manifest.contains("\"sglang\": \"0.5.23\""),
        "SGLang version recorded"
    );
    assert!(folder.join("runs/mtt4096.attempt-1/server.log").exists());
    let md = std::fs::read_to_string(folder.join("results.md")).expect("md");
    assert!(md.contains("★ mtt4096 (best)"), "{md}");
    assert!(
        stdout.contains("★ mtt4096 (best)"),
        "table printed: {stdout}"
    );
    assert!(
        wait_until(Duration::from_secs(10), || procs_with_tag(&tag).is_empty()),
        "server processes left: {:?}",
        procs_with_tag(&tag)
    );
}

#[test]
#[ignore = "needs real SGLang on CPU: run scripts/test.sh"]
fn kill_9_of_sgtune_takes_the_server_with_it() {
    let env = real_env();
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("kill9");
    let body = "workload:\n  concurrency: 4\n  requests: 100000\n  warmup_requests: 0\n  input_tokens: 16\n  output_tokens: 64\n";
    let spec_path = dir.path().join("k.yaml");
    std::fs::write(&spec_path, spec(&env, &tag, body)).expect("write spec");
    let results = dir.path().join("results");
    let mut child = sgtune()
        .arg("run")
        .arg(&spec_path)
        .arg("--results-dir")
        .arg(&results)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn sgtune");
    // Wait until the load is running (requests.csv appears once the server is ready).
    let loading = wait_until(Duration::from_secs(480), || {
        std::fs::read_dir(&results)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok())
            .is_some_and(|e| e.path().join("runs/default/requests.csv").exists())
    });
    assert!(loading, "the server never became ready");
    assert!(
        !procs_with_tag(&tag).is_empty(),
        "server processes are running"
    );
    child.kill().expect("SIGKILL sgtune");
    let _ = child.wait();
    assert!(
        wait_until(Duration::from_secs(15), || procs_with_tag(&tag).is_empty()),
        "SGLang processes survived kill -9 of sgtune: {:?}",
        procs_with_tag(&tag)
    );
}

/// sgtune's client and SGLang's own `bench_serving` agree on one server and one workload
/// (scripts/compare-with-bench-serving.sh, small). The bounds allow for this shared 2-core
/// machine's noise; the tighter target and the measured numbers are in docs/benchmarks.md.
#[test]
#[ignore = "needs real SGLang on CPU: run scripts/test.sh"]
fn agrees_with_sglang_bench_serving() {
    let _env = real_env();
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let out = std::process::Command::new("bash")
        .arg(repo().join("scripts/compare-with-bench-serving.sh"))
        .env("SGTUNE_BIN", env!("CARGO_BIN_EXE_sgtune"))
        .env("REQUESTS", "32")
        // Two rounds, compared on their means: one CI round once measured sgtune 350 vs
        // bench_serving 464 tok/s, when a quiet 3-round run right after gave 0.95 with rounds
        // spread ±7%. One round is at the mercy of a single slow stretch.
        .env("ROUNDS", "2")
        .output()
        .expect("run the comparison script");
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let line = stdout
        .lines()
        .find(|l| l.starts_with("AGREEMENT "))
        .unwrap_or_else(|| panic!("no AGREEMENT line in:\n{stdout}"));
    for part in line.split_whitespace().skip(1) {
        let (name, ratio) = part.split_once('=').expect("name=ratio");
        let ratio: f64 = ratio.parse().expect("a number");
        // TTFT is ~35 ms here and dominated by scheduling jitter on a shared 2-core machine;
        // the two clients also reach it through different endpoints (bench_serving's native
        // /generate with token ids, sgtune's /v1/completions). One CI round measured 1.35,
        // a quiet two-round benchmark 1.09. Throughput and TPOT are held tighter.
        let bounds = if name == "ttft_mean" {
            0.5..=2.0
        } else {
            0.75..=1.33
        };
        assert!(
            bounds.contains(&ratio),
            "{name}: sgtune / bench_serving = {ratio}\n{stdout}"
        );
    }
}

/// sgtune's multi-turn sessions against SGLang's own bench_serving in its multi-turn mode
/// (issue 50), on one real server, both clients judged by the server's counters:
/// scripts/compare-sessions-with-bench-serving.sh, whose thresholds fail it (the prefix hit
/// rate within 5 points, TTFT p50 and prompt tokens within 10%), on a pool that holds every
/// history. The same script with HiCache on (`HICACHE=8 POOL=1536`) agreed too
/// (docs/benchmarks.md); it is measured by hand, not here: alone on the machine it adds about
/// 150 s to the test command, and its client code is this one's.
#[test]
#[ignore = "needs real SGLang on CPU: run scripts/test.sh"]
fn sessions_agree_with_bench_serving_with_the_radix_cache() {
    let _env = real_env();
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // Three rounds, each client first in every other one, of 32 sessions (128 requests): a
    // round's TTFT p50 moved by ±10-15% from one round to the next on this machine
    // (2026-12-07: 88, 72, 69 ms against 79, 75, 63), so one round of 64 requests is not
    // enough for a 10% bound.
    let out = std::process::Command::new("bash")
        .arg(repo().join("scripts/compare-sessions-with-bench-serving.sh"))
        .env("SGTUNE_BIN", env!("CARGO_BIN_EXE_sgtune"))
        .env("ROUNDS", "3")
        .env("SESSIONS", "32")
        .output()
        .expect("run the comparison script");
    let stdout = text(&out.stdout);
    eprintln!("{stdout}");
    assert!(
        out.status.success(),
        "the clients disagree (or the script failed):\n{stdout}\n{}",
        text(&out.stderr)
    );
    let line = stdout
        .lines()
        .find(|l| l.starts_with("AGREEMENT "))
        .unwrap_or_else(|| panic!("no AGREEMENT line in:\n{stdout}"));
    assert!(stdout.lines().any(|l| l == "PASS"), "{stdout}");
    let host: f64 = line
        .split_whitespace()
        .find_map(|p| p.strip_prefix("host_hit_points="))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no host_hit_points in {line}"));
    assert_eq!(host, 0.0, "no host tier, no host hits: {line}");
}

/// The tuning sweep in experiments/cpu-tuning.yaml, as a user runs it: on each KV pool's one
/// server, the max-load search finds the highest concurrency within the TTFT objective, and
/// the decision compares the pools there. A larger pool holds more requests before they queue,
/// so its highest load within the SLO must be higher; the winner's SLO must hold.
#[test]
#[ignore = "needs real SGLang on CPU: run scripts/test.sh"]
fn the_tuning_sweep_finds_more_load_within_the_slo_for_a_larger_kv_pool() {
    let _env = real_env();
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run_sweep(&repo().join("experiments/cpu-tuning.yaml"), dir.path());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let folder = only_results_folder(dir.path());
    let rows = read_rows(&folder.join("results.csv"));
    assert!(rows.iter().all(|r| r["phase"] == "probe"), "{rows:?}");
    assert!(
        rows.iter().all(|r| !r["probe"].is_empty()),
        "every probe judged: {rows:?}"
    );
    let d: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("decision.json")).unwrap())
            .unwrap();
    let point = d["points"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["load_point"] == "max_load_at_slo"))
        .unwrap_or_else(|| panic!("no max-load decision: {d}"));
    let configs = point["configurations"].as_array().expect("configurations");
    let max_load = |name: &str| -> u64 {
        configs
            .iter()
            .find(|c| c["run_name"] == name)
            .and_then(|c| c["max_load_at_slo"].as_str())
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    };
    let (small, large) = (max_load("mtt2048"), max_load("mtt10240"));
    assert!(small >= 2, "the small pool holds some load: {point}");
    assert!(
        large > small,
        "max_load_at_slo grows with the KV pool: {small} (2,048 tokens) vs {large} (10,240)\n{point}"
    );
    // Whoever leads, its SLO holds at its max load (medians of its repeats there).
    let leader = point["leader"].as_str().expect("a leader");
    let lead = configs
        .iter()
        .find(|c| c["run_name"] == leader)
        .expect("the leader's entry");
    for check in lead["slo"].as_array().expect("slo checks") {
        assert_eq!(check["holds"], true, "{lead}");
    }
    // And the probes above the small pool's max load did not pass.
    for r in rows.iter().filter(|r| r["run_name"] == "mtt2048") {
        let c: u64 = r["concurrency"].parse().unwrap_or(0);
        if c > small {
            assert_ne!(r["probe"], "pass", "{r:?}");
        }
    }
}

/// One sweep of three launches, shared by the two tests below (each launch costs a server
/// start of ~45-90 s here, so checks that need no launch of their own read one folder): two KV
/// pools under a working set sized against the first one's capacity, and the larger pool again
/// with a setting SGLang 0.5.23 overrides on CPU. The pools come first: the working set is
/// sized from the first configuration's KV capacity.
struct Pools {
    folder: std::path::PathBuf,
    rows: Vec<std::collections::HashMap<String, String>>,
    stdout: String,
}

static POOLS: std::sync::OnceLock<Pools> = std::sync::OnceLock::new();

fn pools() -> &'static Pools {
    POOLS.get_or_init(|| {
        let env = real_env();
        // A fixed folder under cargo's target/tmp, emptied first: a static is never dropped,
        // so a temporary folder held here would be left behind by every run.
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("real_sglang-pools");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("the shared sweep's folder");
        let tag = unique_tag("pools");
        let body = r#"configs:
  - {name: mtt1024, max_total_tokens: 1024}
  - {name: mtt8192, max_total_tokens: 8192}
  - {name: cgmbd-16, max_total_tokens: 8192, cuda_graph_max_bs_decode: 16}
workload:
  endpoint: completions
  concurrency: 4
  requests: 36
  warmup_requests: 0
  input_tokens: 32
  output_tokens: 16
  shared_prefix: {prefix_tokens: 256, working_set: 1.5}
objective:
  maximize: output_tok_s
"#;
        let text_of_spec = spec(&env, &tag, body).replace(
            "    enable_metrics: true\n",
            "    enable_metrics: true\n    max_total_tokens: 4096\n",
        );
        let spec_path = dir.join("pools.yaml");
        std::fs::write(&spec_path, text_of_spec).expect("write spec");
        let results = dir.join("results");
        let out = run_sweep(&spec_path, &results);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
        assert!(
            wait_until(Duration::from_secs(10), || procs_with_tag(&tag).is_empty()),
            "server processes left"
        );
        let folder = only_results_folder(&results);
        let rows = read_rows(&folder.join("results.csv"));
        Pools {
            folder,
            rows,
            stdout,
        }
    })
}

/// A working set sized against the KV capacity: 1.5 × the first pool's 1,024 tokens of shared
/// prefixes (6 prefixes of 256 tokens, each used by every 6th request). The 8,192-token pool
/// keeps them all and serves most prefix tokens from its cache; the 1,024-token pool cannot
/// hold them next to the running requests, so its cache-hit rate falls.
#[test]
#[ignore = "needs real SGLang on CPU: run scripts/test.sh"]
fn a_working_set_past_the_kv_capacity_lowers_the_cache_hit_rate() {
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Pools { folder, rows, .. } = pools();
    let hit = |name: &str| -> f64 {
        let r = rows
            .iter()
            .find(|r| r["run_name"] == name)
            .unwrap_or_else(|| panic!("no row for {name}: {rows:?}"));
        assert!(
            r["notes"].contains("working set 1.5 x 1024 tokens")
                && r["notes"].contains("6 prefixes of 256 tokens"),
            "{name}: {}",
            r["notes"]
        );
        r["cache_hit_rate"]
            .parse()
            .unwrap_or_else(|_| panic!("{name}: no cache_hit_rate in {r:?}"))
    };
    let (small, large) = (hit("mtt1024"), hit("mtt8192"));
    assert!(
        large > 0.3,
        "the large pool keeps the prefixes: hit rate {large}"
    );
    assert!(
        small < large - 0.2,
        "past the capacity the hit rate falls: {small} (1024) vs {large} (8192)"
    );
    let ws: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("working_set.json")).unwrap())
            .unwrap();
    assert_eq!(ws["basis_tokens"], 1024);
    assert_eq!(ws["groups"], 6);
    // Issue 43: the client knows the share the workload repeats (30 of 36 requests return to
    // a prefix: 30 × 256 ÷ (36 × 288) = 0.74), and the pool that keeps every prefix hits it;
    // the small pool's verdict gives the shortfall, whichever limit it names first (a queue on
    // a full pool stays KV-bound), with a request's size counting its prefix (288 + 16).
    assert!(
        (large - 0.7407).abs() < 0.05,
        "the large pool hits the reusable share: {large}"
    );
    let small_row = rows.iter().find(|r| r["run_name"] == "mtt1024").unwrap();
    let evidence = &small_row["verdict_evidence"];
    assert!(
        ["prefix_cache_evicted", "kv_cache_bound"].contains(&small_row["verdict"].as_str())
            && evidence.contains("where the workload allows 0.74"),
        "{small_row:?}"
    );
    if small_row["verdict"] == "kv_cache_bound" {
        assert!(
            evidence.contains("÷ 304 tokens per request ≈ 3 requests"),
            "{evidence}"
        );
    }
}

/// A setting SGLang 0.5.23 overrides on CPU: with the torch-native attention backend it
/// disables CUDA graphs ("Cuda graph is disabled because of using torch native attention
/// backend"), so the 8,192-token pool with `cuda_graph_max_bs_decode` 16 runs the same server
/// as the one without it. The run that asked gets the warning, and the table and the decision
/// say the two are one server; a KV pool size, which takes effect, gets neither (the two pools
/// are two servers).
#[test]
#[ignore = "needs real SGLang on CPU: run scripts/test.sh"]
fn a_setting_sglang_overrides_on_cpu_is_a_warning_and_its_runs_are_one_server() {
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Pools {
        folder,
        rows,
        stdout,
        ..
    } = pools();
    let row = |name: &str| {
        rows.iter()
            .find(|r| r["run_name"] == name)
            .unwrap_or_else(|| panic!("no row for {name}: {rows:?}"))
    };
    let warning = "`cuda_graph_max_bs_decode` asked 16, in effect no CUDA graph (start-up log: \"Cuda graph is disabled because of using torch native attention backend\")";
    let asked = row("cgmbd-16");
    assert_eq!(asked["not_in_effect"], warning, "{asked:?}");
    assert!(
        asked["notes"].contains(&format!("not in effect: {warning}")),
        "{asked:?}"
    );
    assert!(
        stdout.contains(&format!("- cgmbd-16: {warning}")),
        "{stdout}"
    );
    let id = asked["effective_args_id"].clone();
    assert_eq!(id.len(), 12, "{asked:?}");
    for name in ["mtt1024", "mtt8192"] {
        let pool = row(name);
        assert_eq!(
            pool["not_in_effect"], "",
            "max_total_tokens takes effect: {pool:?}"
        );
        assert!(!pool["notes"].contains("not in effect"), "{pool:?}");
    }
    assert_eq!(
        row("mtt8192")["effective_args_id"],
        id,
        "one server in effect"
    );
    assert_eq!(row("mtt8192")["max_total_num_tokens"], "8192");
    assert_eq!(row("mtt1024")["max_total_num_tokens"], "1024");
    assert_ne!(
        row("mtt1024")["effective_args_id"],
        id,
        "another pool, another server"
    );
    assert!(
        stdout.contains(&format!(
            "- mtt8192, cgmbd-16 ({id}): what they differ in (cuda_graph_max_bs_decode) did not change the server"
        )),
        "{stdout}"
    );
    let md = std::fs::read_to_string(folder.join("decision.md")).expect("decision.md");
    assert!(
        md.contains(&format!(
            "mtt8192 and cgmbd-16 ran the same server in effect ({id})"
        )),
        "{md}"
    );
    let file: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(folder.join("runs/cgmbd-16/effective_args.json"))
            .expect("effective_args.json"),
    )
    .expect("JSON");
    assert_eq!(file["args"]["cuda_graph"], "off", "{file:#}");
    assert!(
        file["override_lines"].as_array().is_some_and(|l| {
            l.iter().any(|l| {
                l == "Cuda graph is disabled because of using torch native attention backend"
            })
        }),
        "{file:#}"
    );
}

/// The guided tune on two slots (`--parallel 2`) on real SGLang: the start alone, then a batch
/// of two launches at once, each on its own port, both measured while the other ran; every
/// launch a row, the width recorded, and a decision from the three. (What the batch holds is
/// the strategy's: tune::guide::batch's tests; here, that it runs for real.)
#[test]
#[ignore = "needs real SGLang on CPU: run scripts/test.sh"]
fn a_guided_tune_on_two_slots_runs_its_batch_at_once() {
    let _env = real_env();
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("tempdir");
    let text_of = std::fs::read_to_string(repo().join("experiments/cpu-tune.yaml"))
        .expect("experiments/cpu-tune.yaml");
    // Three launches, no confirmation: the start, then one batch of two.
    // (experiments/cpu-tune.yaml's own budget is 3.)
    let body = text_of
        .replace("  confirm: 1\n", "  confirm: 0\n")
        .replace("  requests: 64\n", "  requests: 32\n");
    let spec_path = dir.path().join("cpu-tune-2.yaml");
    std::fs::write(&spec_path, body).expect("write spec");
    let results = dir.path().join("results");
    let out = run(sgtune()
        .arg("run")
        .arg(&spec_path)
        .arg("--results-dir")
        .arg(&results)
        .arg("--parallel")
        .arg("2"));
    let log = text(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(0) | Some(1)),
        "{}\n{log}",
        text(&out.stdout)
    );
    let folder = only_results_folder(&results);
    let rows = read_rows(&folder.join("results.csv"));
    let batch: Vec<&str> = log
        .lines()
        .filter(|l| l.starts_with("tune: step ") && l.contains(" (2 at once): "))
        .collect();
    assert_eq!(batch.len(), 2, "one batch of two: {log}");
    assert_eq!(rows.len(), 3, "{rows:?}\n{log}");
    assert_eq!(
        rows[0]["run_name"], "mtt2048_mrr16_cps2048",
        "the start alone, first"
    );
    assert_eq!(rows[0]["verdict"], "kv_cache_bound", "{:?}", rows[0]);
    let (a, b) = (&rows[1], &rows[2]);
    assert_ne!(a["run_name"], b["run_name"], "two configurations");
    for r in [a, b] {
        assert_eq!(r["status"], "ok", "{r:?}");
        assert!(
            batch
                .iter()
                .any(|l| l.ends_with(&format!("→ {}", r["run_name"]))),
            "{r:?} {batch:?}"
        );
    }
    // At once: each started before the other finished.
    assert!(
        a["started_at"] < b["finished_at"] && b["started_at"] < a["finished_at"],
        "the batch's launches overlapped: {a:?} {b:?}"
    );
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["tune_slots"], 2);
    let d: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("decision.json")).unwrap())
            .unwrap();
    assert_eq!(d["cost"]["launches"], 3, "{d}");
}

/// `validate` reads the installed SGLang's own `--help` (no server is started) and names the
/// flag a misspelled key meant from it. Takes the import time of SGLang (~6 s here).
#[test]
#[ignore = "needs real SGLang on CPU: run scripts/test.sh"]
fn validate_checks_keys_against_the_installed_sglangs_help() {
    let env = real_env();
    let dir = tempfile::tempdir().expect("tempdir");
    let body = "sweep:\n  mem_fraction_statc: [0.8]\n  max_total_tokens: [4096]\nworkload:\n  concurrency: 1\n  requests: 1\n  input_tokens: 8\n  output_tokens: 8\n";
    let spec_path = dir.path().join("typo.yaml");
    std::fs::write(&spec_path, spec(&env, &unique_tag("flags"), body)).expect("write spec");
    let out = run(sgtune().arg("validate").arg(&spec_path));
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}\n{}", text(&out.stderr));
    assert!(
        said.contains("flags: SGLang keys checked against the installed SGLang's own list: ")
            && said.contains(&format!("`{} -m sglang.launch_server --help`", env.python)),
        "{said}"
    );
    assert!(
        said.contains("`sweep.mem_fraction_statc` is not in the installed SGLang's own list: did you mean `mem_fraction_static`?"),
        "{said}"
    );
    // Every other key of the spec (server.args included) is one of the installed flags.
    assert_eq!(said.matches("warning: ").count(), 1, "{said}");
}
