//! The supervisor and the load loop against the fake SGLang (tests/fake_sglang): every
//! start-up failure kind, failures during the load, a server that ignores SIGTERM, Ctrl-C in
//! the middle of a run, and kill -9 of sgtune. Each test checks the rows, and that no process
//! of any server is left.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test may panic: that is its failure

mod common;
use common::*;
use std::collections::HashMap;
use std::process::Stdio;
use std::time::Duration;

fn spec(tag: &str, extra_server: &str, body: &str) -> String {
    format!(
        r#"name: fake
server:
  command: [python3, "{fake}"]
  model_path: /nonexistent-model
  env:
    SGTUNE_TEST_TAG: {tag}
    FAKE_SGLANG_STARTUP_S: "0.2"
    FAKE_SGLANG_SPAWN_CHILD: "1"
  args:
    served_model_name: fake
  ready_timeout_s: 20
  stop_timeout_s: 3
{extra_server}{body}"#,
        fake = fake_server()
    )
}

fn write_spec(dir: &std::path::Path, text: &str) -> std::path::PathBuf {
    let p = dir.join("spec.yaml");
    std::fs::write(&p, text).expect("write spec");
    p
}

fn by_name(rows: &[HashMap<String, String>]) -> HashMap<String, HashMap<String, String>> {
    rows.iter()
        .map(|r| (r["run_name"].clone(), r.clone()))
        .collect()
}

fn assert_no_leftovers(tag: &str) {
    assert!(
        wait_until(Duration::from_secs(10), || procs_with_tag(tag).is_empty()),
        "processes left: {:?}",
        procs_with_tag(tag)
    );
}

#[test]
fn every_failure_becomes_a_row_and_the_sweep_goes_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("matrix");
    let body = r#"configs:
  - {name: kv-small, max_total_tokens: 400}
  - {name: roomy, max_total_tokens: 16384}
  - {name: oom, fake_fault: oom_at_start}
  - {name: cuda-oom, fake_fault: cuda_oom_at_start}
  - {name: bad-flag, no_such_flag: 1}
  - {name: fp8, kv_cache_dtype: fp8_e4m3}
  - {name: exit-early, fake_fault: exit_before_ready}
  - {name: never-ready, fake_fault: never_ready}
  - {name: crash-in-load, fake_fault: crash_during_load}
  - {name: http-500, fake_fault: http_500}
  - {name: http-503, fake_fault: http_503}
  - {name: slow-stream, fake_fault: slow_stream}
  - {name: stream-cut, fake_fault: stream_cut}
  - {name: malformed-sse, fake_fault: malformed_sse}
  - {name: ignores-sigterm, fake_fault: ignore_sigterm}
workload:
  concurrency: 8
  requests: 40
  warmup_requests: 2
  input_tokens: 20
  output_tokens: 60
  vocab_size: 1000
"#;
    let text = spec(&tag, "", body).replace("ready_timeout_s: 20", "ready_timeout_s: 4");
    let spec_path = write_spec(dir.path(), &text);
    let results = dir.path().join("results");
    let out = run_sweep(&spec_path, &results);
    assert_eq!(out.status.code(), Some(1), "{}", text_of(&out));
    let folder = only_results_folder(&results);
    let rows = read_rows(&folder.join("results.csv"));
    assert_eq!(rows.len(), 15, "one row per configuration");
    let rows = by_name(&rows);
    let kind = |n: &str| (rows[n]["status"].as_str(), rows[n]["failure_kind"].as_str());

    assert_eq!(kind("kv-small"), ("ok", ""));
    assert_eq!(
        rows["kv-small"]["verdict"], "kv_cache_bound",
        "{:?}",
        rows["kv-small"]
    );
    assert!(num(&rows["kv-small"], "queue_req_max") > 0.0);
    assert!(num(&rows["kv-small"], "running_req_max") < 8.0);
    assert_eq!(num(&rows["kv-small"], "max_total_num_tokens"), 400.0);
    assert_eq!(kind("roomy"), ("ok", ""));
    assert_ne!(rows["roomy"]["verdict"], "kv_cache_bound");
    assert_eq!(num(&rows["roomy"], "requests_completed"), 40.0);
    assert_eq!(num(&rows["roomy"], "running_req_max"), 8.0);

    assert_eq!(kind("oom"), ("failed", "oom"));
    assert!(rows["oom"]["failure_message"].contains("raise mem_fraction_static"));
    assert_eq!(kind("cuda-oom"), ("failed", "oom"));
    assert!(rows["cuda-oom"]["failure_message"].contains("lower mem_fraction_static"));
    assert_eq!(kind("bad-flag"), ("failed", "bad_flag"));
    assert!(
        rows["bad-flag"]["failure_message"].contains("unrecognized arguments: --no-such-flag 1")
    );
    assert_eq!(kind("fp8"), ("failed", "startup_error"));
    assert!(rows["fp8"]["failure_message"].contains("CPU FP8 KV cache requires Intel AMX support"));
    assert_eq!(kind("exit-early"), ("failed", "crashed"));
    assert!(
        rows["exit-early"]["failure_message"].starts_with("exit code 3"),
        "{:?}",
        rows["exit-early"]
    );
    assert_eq!(kind("never-ready"), ("failed", "ready_timeout"));
    assert_eq!(kind("crash-in-load"), ("failed", "load_failed"));
    assert!(rows["crash-in-load"]["failure_message"].contains("died during the load"));
    for (name, class) in [
        ("http-500", "http_status"),
        ("http-503", "http_status"),
        ("stream-cut", "stream_cut"),
        ("malformed-sse", "malformed_sse"),
    ] {
        assert_eq!(kind(name), ("failed", "load_failed"), "{name}");
        let reqs = std::fs::read_to_string(folder.join("runs").join(name).join("requests.csv"))
            .expect("requests.csv");
        assert!(reqs.contains(class), "{name}: no {class} in requests.csv");
    }
    // Ignoring SIGTERM costs the grace period, then the group is killed; the row is fine.
    assert_eq!(kind("ignores-sigterm"), ("ok", ""));
    let summary =
        std::fs::read_to_string(folder.join("runs/ignores-sigterm/summary.json")).expect("summary");
    assert!(summary.contains("\"how\": \"killed\""), "{summary}");
    let summary = std::fs::read_to_string(folder.join("runs/roomy/summary.json")).expect("summary");
    assert!(summary.contains("\"how\": \"terminated\""), "{summary}");

    // A very slow stream is slow, not broken.
    assert_eq!(kind("slow-stream"), ("ok", ""));
    assert!(num(&rows["slow-stream"], "tpot_ms_p50") > num(&rows["roomy"], "tpot_ms_p50"));

    let md = std::fs::read_to_string(folder.join("results.md")).expect("results.md");
    assert!(md.contains("(best)") && md.contains("failed (oom)"), "{md}");
    // The run ends with its pictures: one section per launch, the roomy one with a timeline.
    let html = std::fs::read_to_string(folder.join("report.html")).expect("report.html");
    assert!(html.contains("id=\"run-roomy\"") && html.contains("id=\"run-roomy-reqs\""));
    assert!(html.contains("id=\"run-slow-stream\""));
    assert_no_leftovers(&tag);

    // The folder resumes: every row is finished (failed rows are kept without
    // --retry-failed), so nothing is launched and nothing changes.
    let before = std::fs::read(folder.join("results.csv")).expect("csv");
    let out = run(sgtune().arg("resume").arg(&folder));
    assert_eq!(out.status.code(), Some(1), "{}", text_of(&out));
    assert!(
        common::text(&out.stderr).contains("0 server launch(es) to go"),
        "{}",
        text_of(&out)
    );
    assert_eq!(
        std::fs::read(folder.join("results.csv")).expect("csv"),
        before
    );
}

fn text_of(out: &std::process::Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        text(&out.stdout),
        text(&out.stderr)
    )
}

#[test]
fn requests_csv_and_summary_hold_the_evidence() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("evidence");
    let body = "workload:\n  endpoint: chat\n  concurrency: 3\n  requests: 9\n  warmup_requests: 2\n  input_tokens: 10\n  output_tokens: 12\n";
    let spec_path = write_spec(dir.path(), &spec(&tag, "", body));
    let results = dir.path().join("results");
    let out = run_sweep(&spec_path, &results);
    assert_eq!(out.status.code(), Some(0), "{}", text_of(&out));
    let folder = only_results_folder(&results);
    let run_dir = folder.join("runs/default");
    let reqs = read_rows(&run_dir.join("requests.csv"));
    assert_eq!(reqs.len(), 11, "2 warmup + 9 measured");
    assert_eq!(reqs.iter().filter(|r| r["phase"] == "warmup").count(), 2);
    for r in reqs.iter().filter(|r| r["phase"] == "measured") {
        assert_eq!(r["completion_tokens"], "12");
        assert_eq!(r["content_chunks"], "12");
        assert_eq!(r["chunk_ms"].split(' ').count(), 12);
        assert!(num(r, "ttft_ms") <= num(r, "end_ms"));
    }
    let row = &read_rows(&folder.join("results.csv"))[0];
    assert_eq!(num(row, "requests_completed"), 9.0);
    // Chat's role-only first chunk: vLLM's TTFT comes no later than SGLang's.
    assert!(
        num(row, "ttft_vllm_ms_mean") <= num(row, "ttft_ms_mean"),
        "{row:?}"
    );
    // The client did work (9 streamed chat responses), so it used some CPU; and an empty
    // client_bound means it stayed under 90% of the cores (the CPU half of that verdict).
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let cpu = num(row, "client_cpu_cores");
    assert!(
        cpu > 0.0 && cpu < 0.9 * cores,
        "{cpu} of {cores} cores: {row:?}"
    );
    assert_eq!(row["client_bound"], "");
    assert!(num(row, "output_tok_s") > 0.0);
    let cmd = std::fs::read_to_string(run_dir.join("command.txt")).expect("command.txt");
    assert!(
        cmd.contains("--served-model-name fake") && cmd.contains("--port "),
        "{cmd}"
    );
    let plan = std::fs::read_to_string(folder.join("plan.json")).expect("plan.json");
    assert!(plan.contains("\"runs\""));
    assert_eq!(
        std::fs::read_to_string(folder.join("spec.yaml")).expect("spec copy"),
        std::fs::read_to_string(&spec_path).expect("spec")
    );
    assert_no_leftovers(&tag);
}

#[test]
fn fixed_port_already_taken_is_a_clear_failure() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("port");
    let holder = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = holder.local_addr().expect("addr").port();
    let body = "workload:\n  concurrency: 1\n  requests: 1\n  input_tokens: 4\n  output_tokens: 4\n  vocab_size: 100\n";
    let spec_path = write_spec(dir.path(), &spec(&tag, &format!("  port: {port}\n"), body));
    let results = dir.path().join("results");
    let out = run_sweep(&spec_path, &results);
    assert_eq!(out.status.code(), Some(1), "{}", text_of(&out));
    let row = &read_rows(&only_results_folder(&results).join("results.csv"))[0];
    assert_eq!(row["failure_kind"], "launch_error");
    assert!(row["failure_message"].contains("already in use"), "{row:?}");
    drop(holder);
    assert_no_leftovers(&tag);
}

#[test]
fn sigint_mid_run_keeps_finished_rows_and_stops_the_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("sigint");
    // Both runs would load for 120 s: the signal lands in the first one's load.
    let body = "configs:\n  - {name: first}\n  - {name: second}\nworkload:\n  concurrency: 2\n  duration_s: 120\n  input_tokens: 4\n  output_tokens: 40\n  vocab_size: 100\n";
    let spec_path = write_spec(dir.path(), &spec(&tag, "", body));
    let results = dir.path().join("results");
    let mut child = sgtune()
        .arg("run")
        .arg(&spec_path)
        .arg("--results-dir")
        .arg(&results)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let loading = wait_until(Duration::from_secs(30), || {
        std::fs::read_dir(&results)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok())
            .is_some_and(|e| e.path().join("runs/first/requests.csv").exists())
    });
    assert!(loading, "first run never loaded");
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: sending SIGINT to our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let done = wait_until(Duration::from_secs(30), || {
        matches!(child.try_wait(), Ok(Some(_)))
    });
    assert!(done, "sgtune did not exit after SIGINT");
    let out = child.wait_with_output().expect("output");
    assert_eq!(out.status.code(), Some(130), "{}", text_of(&out));
    let rows = read_rows(&only_results_folder(&results).join("results.csv"));
    assert_eq!(
        rows.len(),
        1,
        "the interrupted run is recorded; the next one never starts"
    );
    assert_eq!(rows[0]["run_name"], "first");
    assert_eq!(rows[0]["status"], "interrupted");
    assert!(num(&rows[0], "requests_completed") > 0.0, "{:?}", rows[0]);
    assert_no_leftovers(&tag);
}

#[test]
fn kill_9_of_sgtune_kills_the_whole_server_group() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("kill9-fake");
    // The fake's child does not watch its parent: only a group kill removes it.
    let body = "workload:\n  concurrency: 2\n  duration_s: 120\n  input_tokens: 4\n  output_tokens: 40\n  vocab_size: 100\n";
    let spec_path = write_spec(dir.path(), &spec(&tag, "", body));
    let results = dir.path().join("results");
    let mut child = sgtune()
        .arg("run")
        .arg(&spec_path)
        .arg("--results-dir")
        .arg(&results)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let loading = wait_until(Duration::from_secs(30), || {
        std::fs::read_dir(&results)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok())
            .is_some_and(|e| e.path().join("runs/default/requests.csv").exists())
    });
    assert!(loading, "never loaded");
    assert!(
        procs_with_tag(&tag).len() >= 2,
        "fake and its child run: {:?}",
        procs_with_tag(&tag)
    );
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    assert_no_leftovers(&tag);
}

#[test]
fn metrics_endpoint_is_scraped_as_a_second_source() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("metrics");
    // Outputs of 50 to 200 tokens and a Decode line every 10 steps: requests finish apart, so
    // the batch the lines log shrinks as the last requests drain.
    let body = "configs:\n  - {name: with-metrics, enable_metrics: true, decode_log_interval: 10}\n  - {name: without, decode_log_interval: 10}\nworkload:\n  concurrency: 4\n  duration_s: 3\n  input_tokens: 8\n  output_tokens: {dist: uniform, mean: 200, range_ratio: 0.25}\n  vocab_size: 100\n";
    let spec_path = write_spec(dir.path(), &spec(&tag, "", body));
    let results = dir.path().join("results");
    let out = run_sweep(&spec_path, &results);
    assert_eq!(out.status.code(), Some(0), "{}", text_of(&out));
    let folder = only_results_folder(&results);
    let rows = by_name(&read_rows(&folder.join("results.csv")));
    let with = &rows["with-metrics"];
    let counter = num(with, "metrics_gen_tput");
    let log = num(with, "server_gen_tput_mean");
    assert!(
        counter > 0.0 && num(with, "metrics_running_mean") > 0.0,
        "{with:?}"
    );
    // The two sources describe the same window: same order of magnitude.
    assert!(
        counter / log > 0.5 && counter / log < 2.0,
        "counter {counter} vs log {log}"
    );
    let csv =
        std::fs::read_to_string(folder.join("runs/with-metrics/metrics.csv")).expect("metrics.csv");
    assert!(
        csv.starts_with("t_s,metric,labels,value")
            && csv.contains("sglang:generation_tokens_total")
    );
    // The log's decode steps by running batch: the closed loop's ramp and drain (requests of
    // different lengths finishing apart) log more than one batch size, each step timed.
    for r in rows.values() {
        let steps = sgtune::record::decode_steps::parse(&r["decode_steps"]);
        assert!(steps.len() > 1, "{:?}", r["decode_steps"]);
        assert!(
            steps
                .iter()
                .all(|s| s.running > 0.0 && s.step_ms > 0.0 && s.lines > 0),
            "{steps:?}"
        );
    }
    // Without --enable-metrics there is no second source, and no file.
    assert_eq!(rows["without"]["metrics_gen_tput"], "");
    assert!(!folder.join("runs/without/metrics.csv").exists());
    assert_no_leftovers(&tag);
}

#[test]
fn an_objective_ends_the_sweep_with_a_decision() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("decision");
    // A 100-token pool holds 2 of the 8 requests (40 tokens each): a quarter of the roomy
    // pool's throughput, same TPOT. slow_stream decodes 10x slower: over the TPOT bound.
    // The fake is paced (a 10 ms decode step on the wall clock, tokens a late handler missed
    // sent at once), so the 4x between the pools is set by its sleeps: a busy CPU once blurred
    // the roomy pool to 1071 ± 388 tok/s when each step was 5 ms of Python's own speed.
    let body = r#"configs:
  - {name: kv-small, max_total_tokens: 100}
  - {name: roomy, max_total_tokens: 16384}
  - {name: slow, max_total_tokens: 16384, fake_fault: slow_stream}
  - {name: oom, fake_fault: oom_at_start}
repeats: 3
workload:
  concurrency: 8
  requests: 16
  warmup_requests: 2
  input_tokens: 20
  output_tokens: 20
  vocab_size: 1000
objective:
  maximize: output_tok_s
  slo: {tpot_ms_p50: 25}
"#;
    let spec_text = spec(&tag, "", body).replace(
        "    FAKE_SGLANG_SPAWN_CHILD: \"1\"\n",
        "    FAKE_SGLANG_TOKEN_S: \"0.01\"\n    FAKE_SGLANG_PACED: \"1\"\n",
    );
    let spec_path = write_spec(dir.path(), &spec_text);
    let results = dir.path().join("results");
    let out = run_sweep(&spec_path, &results);
    assert_eq!(out.status.code(), Some(1), "oom failed: {}", text_of(&out));
    let folder = only_results_folder(&results);
    let stdout = text(&out.stdout);
    let summary_at = stdout
        .find("Decision (maximize output_tok_s subject to tpot_ms_p50 ≤ 25): At concurrency 8, roomy wins")
        .unwrap_or_else(|| panic!("{}", text_of(&out)));
    assert!(
        stdout.find("| run").is_some_and(|table| table < summary_at),
        "the summary follows the table: {stdout}"
    );

    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(folder.join("decision.json")).expect("decision.json"),
    )
    .expect("decision.json is JSON");
    let point = &json["points"][0];
    assert_eq!(point["outcome"], "winner", "{point:#}");
    assert_eq!(point["winner"], "roomy");
    assert_eq!(point["runner_up"], "kv-small");
    let configs = point["configurations"].as_array().expect("configurations");
    let config = |name: &str| {
        configs
            .iter()
            .find(|c| c["run_name"] == name)
            .unwrap_or_else(|| panic!("{name} in {point:#}"))
    };
    let winner = config("roomy");
    assert_eq!(winner["standing"], "winner");
    assert!(
        winner["slo"]
            .as_array()
            .expect("slo")
            .iter()
            .all(|c| c["holds"] == true && c["median"].as_f64().is_some_and(|m| m <= 25.0)),
        "the winner's SLO holds: {winner:#}"
    );
    let margin = &point["margin"];
    // The noise is pooled over the three configurations that ran (3 repeats each: 6 df
    // nominal); the interval takes its effective df (Satterthwaite, rounded down), from 1 to
    // 6 as the configurations' spreads differ.
    let effective = point["noise"]["effective_df"]
        .as_f64()
        .expect("effective df");
    assert!(
        margin["separated"] == true
            && margin["ci"]["low"].as_f64().is_some_and(|l| l > 0.0)
            && (margin["basis"] == "pooled" || margin["basis"] == "own")
            && margin["df"].as_f64() == Some(effective)
            && (1.0..=6.0).contains(&effective),
        "{margin:#}"
    );
    assert_eq!(point["noise"]["df"], 6, "{point:#}");
    // By construction: 8 decoding at once against 2, at the same pace.
    let mean = |name: &str| config(name)["estimate"]["mean"].as_f64().unwrap_or(0.0);
    let ratio = mean("roomy") / mean("kv-small");
    eprintln!(
        "roomy {}, kv-small {}, margin {margin}, slow: {}",
        config("roomy")["estimate"],
        config("kv-small")["estimate"],
        config("slow")["why"]
    );
    assert!(
        (2.5..=6.0).contains(&ratio),
        "roomy / kv-small = {ratio}: {point:#}"
    );
    assert_eq!(config("kv-small")["standing"], "behind");
    assert_eq!(config("kv-small")["verdict"], "kv_cache_bound");
    assert_eq!(config("slow")["standing"], "slo_not_met");
    assert!(
        config("slow")["why"]
            .as_str()
            .is_some_and(|w| w.starts_with("SLO violated: tpot_ms_p50 median ")),
        "{:#}",
        config("slow")
    );
    assert_eq!(config("oom")["standing"], "failed");
    assert!(
        config("oom")["why"]
            .as_str()
            .is_some_and(|w| w.starts_with("failed in 3 of 3 repeats (oom)")),
        "{:#}",
        config("oom")
    );
    let command = point["command"].as_str().expect("the winner's command");
    let recorded =
        std::fs::read_to_string(folder.join("runs/roomy.r1/command.txt")).expect("command.txt");
    assert_eq!(command, recorded.trim_end(), "the exact launch command");
    assert!(command.contains("--max-total-tokens 16384"), "{command}");
    assert_eq!(json["cost"]["launches"], 12, "4 configurations x 3 repeats");
    assert!(
        json["cost"]["server_hours"]
            .as_f64()
            .is_some_and(|h| h > 0.0)
    );

    let md = std::fs::read_to_string(folder.join("decision.md")).expect("decision.md");
    for part in [
        "**Winner: roomy**: ahead of the runner-up kv-small by ",
        "## Rule",
        "only when every one of these intervals lies entirely above zero",
        "The winner's (roomy) exact launch command:",
        "behind the winner by ",
        "## Cost\n\n12 server launch(es)",
    ] {
        assert!(md.contains(part), "{part:?} in:\n{md}");
    }
    assert_no_leftovers(&tag);

    // A resume with nothing left to run decides again from the same rows.
    std::fs::remove_file(folder.join("decision.md")).expect("remove");
    let out = run(sgtune().arg("resume").arg(&folder));
    assert_eq!(out.status.code(), Some(1), "{}", text_of(&out));
    assert!(
        text(&out.stdout).contains("roomy wins"),
        "{}",
        text_of(&out)
    );
    assert!(folder.join("decision.md").exists());
}

/// What a server runs with is checked against what was asked: on a CPU without AMX, the fake
/// (like SGLang 0.5.23) falls back from intel_amx to torch_native. That run gets a warning
/// naming key, asked and in effect (row, table, decision), and, being the same server as the
/// torch_native run, the two are said to be one; a pool size that takes effect gets nothing.
#[test]
fn a_setting_the_server_does_not_run_with_is_a_warning_and_same_servers_are_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("effective");
    let body = r#"sweep:
  attention_backend: [torch_native, intel_amx]
configs:
  - {name: mtt8192, attention_backend: torch_native, max_total_tokens: 8192}
workload:
  concurrency: 2
  requests: 4
  input_tokens: 8
  output_tokens: 8
  vocab_size: 1000
objective:
  maximize: output_tok_s
"#;
    let spec_text = spec(&tag, "", body).replace(
        "    served_model_name: fake\n",
        "    served_model_name: fake\n    device: cpu\n    max_total_tokens: 4096\n",
    );
    let spec_path = write_spec(dir.path(), &spec_text);
    let results = dir.path().join("results");
    let out = run_sweep(&spec_path, &results);
    assert_eq!(out.status.code(), Some(0), "{}", text_of(&out));
    assert_no_leftovers(&tag);
    let folder = only_results_folder(&results);
    let rows = by_name(&read_rows(&folder.join("results.csv")));
    let (native, amx, roomy) = (
        &rows["ab-torch_native"],
        &rows["ab-intel_amx"],
        &rows["mtt8192"],
    );
    let warning = "`attention_backend` asked intel_amx, in effect torch_native (/server_info, start-up log: \"The current platform does not support Intel AMX, will fallback to torch_native backend.\")";
    assert_eq!(amx["not_in_effect"], warning, "{amx:?}");
    assert!(
        amx["notes"].contains(&format!("not in effect: {warning}")),
        "{amx:?}"
    );
    for r in [native, roomy] {
        assert_eq!(r["not_in_effect"], "", "{r:?}");
        assert!(!r["notes"].contains("not in effect"), "{r:?}");
    }
    let id = &amx["effective_args_id"];
    assert_eq!(id.len(), 12, "{amx:?}");
    assert_eq!(
        &native["effective_args_id"], id,
        "the same server in effect"
    );
    assert_ne!(
        &roomy["effective_args_id"], id,
        "a larger pool is another server"
    );

    let file: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(folder.join("runs/ab-intel_amx/effective_args.json"))
            .expect("effective_args.json"),
    )
    .expect("JSON");
    assert_eq!(
        file["not_in_effect"][0]["key"], "attention_backend",
        "{file:#}"
    );
    assert_eq!(file["not_in_effect"][0]["asked"], "intel_amx");
    assert_eq!(file["not_in_effect"][0]["in_effect"], "torch_native");
    assert_eq!(file["id"], id.as_str());

    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(&format!("Not in effect (asked for, but the server ran otherwise; runs/<run>/effective_args.json):\n- ab-intel_amx: {warning}")),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("- ab-torch_native, ab-intel_amx ({id}): what they differ in (attention_backend) did not change the server")),
        "{stdout}"
    );
    let md = std::fs::read_to_string(folder.join("decision.md")).expect("decision.md");
    assert!(md.contains("## Effective arguments"), "{md}");
    assert!(md.contains(warning), "{md}");
    assert!(
        md.contains(&format!(
            "ab-torch_native and ab-intel_amx ran the same server in effect ({id})"
        )),
        "{md}"
    );
    assert!(
        md.contains(&format!(
            "ran the same server in effect as ab-intel_amx ({id})"
        )),
        "{md}"
    );
    // The key in the loser's why comes from effective_args.json's typed finding.
    let decision: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(folder.join("decision.json")).expect("decision.json"),
    )
    .expect("decision.json is JSON");
    let whys: Vec<&str> = decision["points"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|p| p["configurations"].as_array().into_iter().flatten())
        .filter(|c| c["run_name"] == "ab-intel_amx")
        .filter_map(|c| c["why"].as_str())
        .collect();
    assert!(
        !whys.is_empty()
            && whys
                .iter()
                .all(|w| w.contains("not in effect: attention_backend; ran the same server")),
        "{whys:?}"
    );
}

/// Issue 43: the fake models SGLang's prefix cache and HiCache's host tier. Returning prefixes
/// (16 groups of 256 tokens, a working set of 2 × the 2,048-token pool, sent round robin) are
/// evicted from the device pool before they come back, so the radix cache alone hits little;
/// a host tier of 4 × the pool keeps them all, and the hit rate climbs, with the same pool
/// (`max_total_num_tokens`): the host tier is no room for running requests. Issue 50: with the
/// radix cache off nothing is cached, and the verdict says so rather than an eviction.
#[test]
fn a_host_tier_raises_the_prefix_hit_rate_and_leaves_the_pool_as_it_was() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("hicache");
    let body = r#"configs:
  - {name: radix, max_total_tokens: 2048}
  - {name: hicache, max_total_tokens: 2048, hicache_ratio: 4, enable_metrics: true}
  - {name: no-radix, max_total_tokens: 2048, disable_radix_cache: true, enable_metrics: true}
workload:
  endpoint: completions
  concurrency: 4
  requests: 96
  warmup_requests: 0
  input_tokens: 32
  output_tokens: 16
  vocab_size: 1000
  shared_prefix: {prefix_tokens: 256, working_set: 2.0}
"#;
    let spec_text = spec(&tag, "", body).replace(
        "    FAKE_SGLANG_SPAWN_CHILD: \"1\"\n",
        "    FAKE_SGLANG_SPAWN_CHILD: \"1\"\n    FAKE_SGLANG_HICACHE_OK: \"1\"\n",
    );
    let spec_path = write_spec(dir.path(), &spec_text);
    let results = dir.path().join("results");
    let out = run_sweep(&spec_path, &results);
    assert_eq!(out.status.code(), Some(0), "{}", text_of(&out));
    let folder = only_results_folder(&results);
    let rows = by_name(&read_rows(&folder.join("results.csv")));
    let (radix, hicache, off) = (&rows["radix"], &rows["hicache"], &rows["no-radix"]);
    for r in [radix, hicache, off] {
        assert_eq!(r["status"], "ok", "{r:?}");
        assert_eq!(r["max_total_num_tokens"], "2048", "{r:?}");
        assert!(
            r["notes"].contains("16 prefixes of 256 tokens"),
            "{}",
            r["notes"]
        );
    }
    let (low, high) = (num(radix, "cache_hit_rate"), num(hicache, "cache_hit_rate"));
    // Each prompt is 256 + 32 tokens: a hit on every prefix is 0.89 of the prompt tokens;
    // the first pass over the 16 groups misses.
    assert!(low < 0.2, "the device pool alone thrashes: {low}");
    assert!(high > 0.6, "the host tier keeps the prefixes: {high}");
    // The verdict compares with the share the workload repeats (80 of 96 requests return to
    // a prefix sent before: 80 × 256 ÷ (96 × 288) = 0.74): the pool alone drops them, with a
    // prefill-heavy load (288 prompt tokens to 16 generated), and names both moves.
    assert_eq!(radix["verdict"], "prefix_cache_evicted", "{radix:?}");
    let evidence = &radix["verdict_evidence"];
    assert!(
        evidence.contains("where the workload allows 0.74")
            && evidence.contains("pool max_total_num_tokens 2048"),
        "{evidence}"
    );
    assert_ne!(hicache["verdict"], "prefix_cache_evicted", "{hicache:?}");
    // The server's log says the host pool it allocated: 4 × 2,048 tokens + 1, as 0.5.23 logs.
    let log = std::fs::read_to_string(folder.join("runs/hicache/server.log")).expect("server.log");
    assert!(
        log.contains("Allocating kv hierarchical KV host pool: 8193 tokens"),
        "{log}"
    );
    // /metrics splits the hits by tier, as 0.5.23 does (the log's #cached-token is both): the
    // host tier served most of them, and the counters' hit rate is the log's.
    let scrapes = sgtune::record::metrics::read(&folder.join("runs/hicache/metrics.csv"))
        .expect("metrics.csv")
        .expect("scrapes");
    let last = |mode: &str| -> f64 {
        let label = format!("mode=\"{mode}\"");
        scrapes
            .iter()
            .flat_map(|s| &s.samples)
            .filter(|x| {
                x.name == "sglang:prefill_effective_tokens_total" && x.labels.contains(&label)
            })
            .map(|x| x.value)
            .next_back()
            .unwrap_or_else(|| panic!("no {mode} series"))
    };
    let (host, device) = (last("host_hit"), last("device_hit"));
    assert!(host > device, "host {host}, device {device}");
    // The counters' window starts at the first scrape, after the first misses: higher, not equal.
    let from_counters = num(hicache, "metrics_cache_hit_rate");
    assert!(from_counters > 0.6, "{from_counters}");
    // And its column: the share the host tier served; none where /metrics was off.
    let host_share = num(hicache, "metrics_host_hit_rate");
    assert!(host_share > 0.5, "{host_share}");
    assert_eq!(radix["metrics_host_hit_rate"], "");
    // Issue 50: the hits come in two labelled series (device, host), the host one appearing
    // at the first host hit; the overall rate sums them, and the tiers split it.
    let device_share = num(hicache, "metrics_device_hit_rate");
    assert!(
        (device_share + host_share - from_counters).abs() < 0.02,
        "device {device_share} + host {host_share} against {from_counters}"
    );
    // What the host tier did: loads, write-through backups, its fill; its size from the log.
    assert!(
        num(hicache, "metrics_load_back_tokens") > 0.0,
        "{hicache:?}"
    );
    assert!(num(hicache, "metrics_backup_tokens") > 0.0, "{hicache:?}");
    let fill = num(hicache, "metrics_host_usage_max");
    assert!(fill > 0.0 && fill <= 1.0, "{fill}");
    assert_eq!(hicache["hicache_host_tokens"], "8193");
    for col in ["metrics_load_back_tokens", "hicache_host_tokens"] {
        assert_eq!(radix[col], "", "{col}");
        assert_eq!(off[col], "", "{col}");
    }
    // The radix cache off: not a hit, and no counter of hits exported at all; the rate is 0,
    // not empty. Nothing was evicted and the verdict says why nothing was cached.
    assert_eq!(off["cache_hit_rate"], "0", "{off:?}");
    assert_eq!(off["metrics_cache_hit_rate"], "0", "{off:?}");
    assert_ne!(off["verdict"], "prefix_cache_evicted", "{off:?}");
    assert!(
        !off["verdict_also"].contains("prefix_cache_evicted"),
        "{off:?}"
    );
    assert!(
        off["verdict_evidence"]
            .contains("radix cache off (disable_radix_cache): every prompt computed, nothing cached to evict; the workload allows a hit rate of 0.74"),
        "{off:?}"
    );
    assert_no_leftovers(&tag);
}

/// A sweep over a mooncake trace (issue 43): the trace is read before launch and replayed
/// after a warmup in blocks of its own, and results.csv's `prefix_reusable_share` is the
/// trace's, exactly (`validate` prints the same 18 of 37 for this file).
#[test]
fn a_mooncake_trace_sweep_records_the_traces_exact_reusable_share() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("mooncake");
    let trace = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/traces/mooncake.jsonl");
    let body = format!(
        "workload:\n  endpoint: completions\n  concurrency: 4\n  requests: 4\n  warmup_requests: 1\n  vocab_size: 1000\n  sessions: {{from_trace: {}, format: mooncake, block_tokens: 4, slowdown: 0.5}}\n",
        trace.display()
    );
    let spec_path = write_spec(dir.path(), &spec(&tag, "", &body));
    let results = dir.path().join("results");
    let out = run_sweep(&spec_path, &results);
    assert_eq!(out.status.code(), Some(0), "{}", text_of(&out));
    let folder = only_results_folder(&results);
    let reqs = read_rows(&folder.join("runs/default/requests.csv"));
    let measured: Vec<_> = reqs.iter().filter(|r| r["phase"] == "measured").collect();
    let mut prompts: Vec<f64> = measured.iter().map(|r| num(r, "prompt_tokens")).collect();
    prompts.sort_by(f64::total_cmp);
    assert_eq!(
        prompts,
        [6.0, 9.0, 10.0, 12.0],
        "each record's input_length"
    );
    let row = &read_rows(&folder.join("results.csv"))[0];
    assert_eq!(num(row, "requests_completed"), 4.0);
    let share = num(row, "prefix_reusable_share");
    assert!((share - 18.0 / 37.0).abs() < 1e-3, "{share}: {row:?}");
    assert_no_leftovers(&tag);
}

/// The reusable share is a ceiling the server's hit rate never beats (issue 50), on a pool
/// that keeps every history, on both endpoints: sessions share a system prompt, and their first
/// turns are counted in the server's tokens, the chat template's included (the fake renders
/// one and answers `/tokenize`); each later turn, the previous prompt and reply as `usage`
/// counted them; a session that repeats an earlier one (`sessions: 4`, then they cycle) may be
/// served whole. Counted in words, the first turns alone put the share under the fake's rate.
#[test]
fn a_sessions_reusable_share_is_a_ceiling_the_servers_hit_rate_never_beats() {
    for endpoint in ["chat", "completions"] {
        let dir = tempfile::tempdir().expect("tempdir");
        let tag = unique_tag("ceiling");
        let body = format!(
            "configs:\n  - {{name: roomy, max_total_tokens: 65536}}\nworkload:\n  endpoint: {endpoint}\n  concurrency: 3\n  requests: 36\n  warmup_requests: 3\n  vocab_size: 1000\n  sessions: {{turns: 3, user_tokens: 16, reply_tokens: 8, system_tokens: 48, sessions: 4}}\n"
        );
        let spec_path = write_spec(dir.path(), &spec(&tag, "", &body));
        let results = dir.path().join("results");
        let out = run_sweep(&spec_path, &results);
        assert_eq!(out.status.code(), Some(0), "{}", text_of(&out));
        let folder = only_results_folder(&results);
        let row = &read_rows(&folder.join("results.csv"))[0];
        assert_eq!(row["status"], "ok", "{row:?}");
        assert_eq!(num(row, "requests_completed"), 36.0, "{row:?}");
        let (hit, share) = (
            num(row, "cache_hit_rate"),
            num(row, "prefix_reusable_share"),
        );
        eprintln!("{endpoint}: cache_hit_rate {hit}, prefix_reusable_share {share}");
        assert!(
            hit > 0.5,
            "{endpoint}: the cache serves the histories: {hit}"
        );
        assert!(
            share >= hit,
            "{endpoint}: the server beat the ceiling: {hit} > {share}"
        );
        // A ceiling, not a guess from above: the fake keeps its prompts (not its replies)
        // in 16-token blocks, so it falls short of the share by little.
        assert!(share - hit < 0.15, "{endpoint}: {hit} far under {share}");
        assert!(
            !row["notes"].contains("went as text"),
            "{endpoint}: {}",
            row["notes"]
        );
        assert_no_leftovers(&tag);
    }
}
