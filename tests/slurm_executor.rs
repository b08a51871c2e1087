//! `--executor slurm` on a real one-node Slurm (scripts/slurm-local.sh: Debian's slurm-wlm and
//! munge, fake GPUs), with the fake SGLang: a 6-configuration sweep with one failing
//! configuration, `status` while it runs, `cancel` of the running array, then a resume on
//! Slurm; the merged results.csv has exactly one row per planned run.
//!
//! Ignored by default: it needs root (or Slurm already installed and started by the script).
//! CI runs it (`cargo test -- --include-ignored`, as root on a fresh machine): the test starts
//! the cluster when it is not up, and stops exactly what it started.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test may panic: that is its failure

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The local cluster; stopped on drop when this test started it.
struct Cluster {
    conf: String,
    dir: PathBuf,
    started_here: bool,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.started_here {
            let _ = Command::new(repo().join("scripts/slurm-local.sh"))
                .arg("stop")
                .env("SLURM_LOCAL_DIR", &self.dir)
                .status();
        }
    }
}

/// The tests of this file share one cluster, one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn cluster() -> Cluster {
    let script = repo().join("scripts/slurm-local.sh");
    let dir = PathBuf::from(
        std::env::var("SLURM_LOCAL_DIR").unwrap_or_else(|_| "/tmp/sgtune-slurm-local".into()),
    );
    let up = Command::new(&script)
        .arg("status")
        .env("SLURM_LOCAL_DIR", &dir)
        .status()
        .expect("slurm-local.sh runs")
        .success();
    if !up {
        let out = Command::new(&script)
            .arg("start")
            .env("SLURM_LOCAL_DIR", &dir)
            .output()
            .expect("slurm-local.sh start");
        assert!(
            out.status.success(),
            "slurm-local.sh start failed: {}",
            text(&out.stderr)
        );
    }
    Cluster {
        conf: dir.join("slurm.conf").display().to_string(),
        dir,
        started_here: !up,
    }
}

fn spec(tag: &str) -> String {
    format!(
        r#"name: onslurm
server:
  command: [python3, "{fake}"]
  model_path: /nonexistent-model
  env:
    SGTUNE_TEST_TAG: {tag}
    FAKE_SGLANG_STARTUP_S: "2"
  args:
    served_model_name: fake
  ready_timeout_s: 30
  stop_timeout_s: 3
configs:
  - {{name: a}}
  - {{name: bad, fake_fault: exit_before_ready}}
  - {{name: c}}
  - {{name: d}}
  - {{name: e}}
  - {{name: f}}
workload:
  vocab_size: 100
  input_tokens: 4
  output_tokens: 20
  warmup_requests: 0
  concurrency: 2
  requests: 8
slurm:
  max_running: 2
"#,
        fake = fake_server()
    )
}

fn sg(c: &Cluster, args: &[&str]) -> std::process::Output {
    let out = sgtune()
        .args(args)
        .env("SLURM_CONF", &c.conf)
        .output()
        .expect("sgtune runs");
    assert!(
        out.status.success(),
        "sgtune {args:?}: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    out
}

/// The latest submission's merge job has left the queue.
fn merged(c: &Cluster, dir: &Path) -> bool {
    let subs: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("slurm/submissions.json")).expect("submissions"),
    )
    .expect("json");
    let merge = subs
        .as_array()
        .and_then(|a| a.last())
        .and_then(|s| s["merge_job"].as_str())
        .expect("merge job")
        .to_string();
    let q = Command::new("squeue")
        .args(["-h", "-j", &merge])
        .env("SLURM_CONF", &c.conf)
        .output()
        .expect("squeue");
    q.status.success() && text(&q.stdout).trim().is_empty()
}

fn rows_csv_count(dir: &Path) -> usize {
    ["a", "bad", "c", "d", "e", "f"]
        .iter()
        .filter(|n| dir.join("runs").join(n).join("rows.csv").exists())
        .count()
}

#[test]
#[ignore = "needs a local Slurm (root: scripts/slurm-local.sh starts one); CI runs it"]
fn six_configs_one_failing_cancel_then_resume_on_slurm() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let c = cluster();
    let tmp = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("slurm");
    let spec_path = tmp.path().join("s.yaml");
    std::fs::write(&spec_path, spec(&tag)).expect("write");
    let results = tmp.path().join("results");
    let out = sg(
        &c,
        &[
            "run",
            spec_path.to_str().unwrap(),
            "--results-dir",
            results.to_str().unwrap(),
            "--executor",
            "slurm",
        ],
    );
    assert!(text(&out.stdout).contains("submitted job array"));
    let dir = only_results_folder(&results);
    let d = dir.to_str().unwrap();
    let script = std::fs::read_to_string(dir.join("slurm/array-gpu1.sbatch")).expect("script");
    assert!(script.contains("--array=0-5%2"), "{script}");
    assert!(script.contains("--gres=gpu:1"), "{script}");

    // status while the array runs: some run, some wait.
    assert!(
        wait_until(Duration::from_secs(60), || {
            let s = text(&sg(&c, &["status", d]).stdout);
            s.contains("running") && s.contains("pending")
        }),
        "status never showed running and pending runs"
    );
    // The first two finish (one ok, one failed); then cancel while the next ones run.
    assert!(
        wait_until(Duration::from_secs(90), || rows_csv_count(&dir) >= 2
            && text(&sg(&c, &["status", d]).stdout).contains(" running ")),
        "the first tasks never wrote their rows, or no later task started"
    );
    let out = sg(&c, &["cancel", d]);
    assert!(text(&out.stdout).contains("cancelled job array"));
    assert!(
        wait_until(Duration::from_secs(90), || merged(&c, &dir)),
        "the merge job did not run after the cancel"
    );
    let rows = read_rows(&dir.join("results.csv"));
    assert_eq!(
        rows.len(),
        6,
        "one row per planned run after the cancel: {rows:?}"
    );
    let cancelled = rows.iter().filter(|r| r["status"] == "interrupted").count();
    assert!(cancelled >= 1, "the cancel left interrupted rows: {rows:?}");
    // A running task recorded its own run when scancel signalled it.
    let by_task: Vec<_> = ["c", "d", "e", "f"]
        .iter()
        .filter_map(|n| {
            let p = dir.join("runs").join(n).join("rows.csv");
            p.exists().then(|| read_rows(&p))
        })
        .flatten()
        .collect();
    assert!(
        by_task
            .iter()
            .any(|r| r["status"] == "interrupted" && r["notes"].contains("was signalled")),
        "a running task wrote its interrupted row: {by_task:?}"
    );
    let status = text(&sg(&c, &["status", d]).stdout);
    assert!(status.contains("cancelled"), "{status}");

    // Resume on Slurm: only the missing runs are submitted, and the merge completes the sweep.
    let out = sg(&c, &["resume", d, "--executor", "slurm"]);
    let submitted = text(&out.stdout);
    assert!(
        !submitted.contains(": a ") && !submitted.contains(" bad"),
        "{submitted}"
    );
    assert!(
        wait_until(Duration::from_secs(150), || merged(&c, &dir)),
        "the resumed sweep's merge did not run"
    );
    let rows = read_rows(&dir.join("results.csv"));
    let mut names: Vec<&str> = rows.iter().map(|r| r["run_name"].as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["a", "bad", "c", "d", "e", "f"], "{rows:?}");
    for r in &rows {
        if r["run_name"] == "bad" {
            assert_eq!(r["status"], "failed");
            assert!(!r["failure_message"].is_empty(), "the failure says why");
        } else {
            assert_eq!(r["status"], "ok", "{r:?}");
        }
    }
    let superseded = read_rows(&dir.join("results.superseded.csv"));
    assert!(
        superseded.iter().any(|r| r["status"] == "interrupted"),
        "the cancelled rows are kept as evidence"
    );
    assert!(dir.join("results.md").exists());
    // The merge is idempotent: run it again by hand, the same rows.
    sg(&c, &["merge", d]);
    assert_eq!(read_rows(&dir.join("results.csv")).len(), 6);
    assert!(
        wait_until(Duration::from_secs(10), || procs_with_tag(&tag).is_empty()),
        "servers left behind"
    );
}

/// A sweep started here and interrupted finishes on Slurm: the rows kept locally plus the
/// tasks' rows, one per planned run. With the quality guard: the baseline (`a`) answered the
/// prompts in the local session, the derailing `c` in a Slurm task, and the merge judges from
/// the files both left (the baseline's outputs exist by then, whoever ran it).
#[test]
#[ignore = "needs a local Slurm (root: scripts/slurm-local.sh starts one); CI runs it"]
fn a_sweep_started_locally_finishes_on_slurm() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let c = cluster();
    let tmp = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("slurm-local-first");
    let spec_path = tmp.path().join("s.yaml");
    let text3 = spec(&tag)
        .replace(
            "  - {name: c}\n  - {name: d}\n  - {name: e}\n  - {name: f}\n",
            "  - {name: c, fake_derail: 0.3}\n",
        )
        .replace(
            "slurm:\n",
            "objective:\n  maximize: output_tok_s\nquality:\n  count: 40\n  output_tokens: 8\nslurm:\n",
        );
    std::fs::write(&spec_path, text3).expect("write");
    let results = tmp.path().join("results");
    let mut child = sgtune()
        .arg("run")
        .arg(&spec_path)
        .arg("--results-dir")
        .arg(&results)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    assert!(
        wait_until(Duration::from_secs(60), || {
            std::fs::read_dir(&results)
                .ok()
                .and_then(|mut d| d.next())
                .and_then(Result::ok)
                .is_some_and(|e| e.path().join("runs/bad").exists())
        }),
        "the local sweep never reached its second run"
    );
    // SIGTERM: the local sweep records what it has and stops.
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(130));
    let dir = only_results_folder(&results);
    let d = dir.to_str().unwrap();
    let local_rows = read_rows(&dir.join("results.csv"));
    assert!(
        local_rows
            .iter()
            .any(|r| r["run_name"] == "a" && r["status"] == "ok")
    );
    sg(&c, &["resume", d, "--executor", "slurm"]);
    assert!(
        wait_until(Duration::from_secs(90), || merged(&c, &dir)),
        "the merge did not run"
    );
    let rows = read_rows(&dir.join("results.csv"));
    let mut names: Vec<&str> = rows.iter().map(|r| r["run_name"].as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["a", "bad", "c"], "{rows:?}");
    assert!(
        rows.iter()
            .all(|r| (r["run_name"] == "bad") == (r["status"] == "failed")),
        "{rows:?}"
    );
    // The merge's verdicts: no near ties on the fake here, so the floor is exactly 0 of 40 and
    // the seeded derails are the same every time.
    let cell = |n: &str, col: &str| {
        rows.iter()
            .find(|r| r["run_name"] == n)
            .map(|r| r[col].clone())
            .unwrap_or_default()
    };
    assert_eq!(
        ["a", "c", "bad"].map(|n| cell(n, "quality_verdict")),
        ["baseline", "fail", "unchecked"],
        "{rows:?}"
    );
    assert!(
        cell("a", "quality_evidence").contains("the baseline's repeat: 0% decisive (0/40)"),
        "{rows:?}"
    );
    assert!(
        cell("c", "quality_evidence").starts_with("derails "),
        "{rows:?}"
    );
    assert!(dir.join("runs/a/quality.jsonl").exists() && dir.join("runs/c/quality.jsonl").exists());
    let md = std::fs::read_to_string(dir.join("decision.md")).expect("decision.md");
    assert!(
        md.contains("## Output quality") && md.contains("1 failed the output-quality check"),
        "{md}"
    );
    let d: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("decision.json")).expect("json"))
            .expect("decision.json");
    assert_eq!(d["points"][0]["leader"], "a", "{d}");
}

/// A guided tune of the fake's KV pool: its FP8 configurations fail at start-up (as SGLang on
/// a CPU), so the second wave's two tasks both leave failed rows and the tune goes on. No SLO:
/// the leader (a pool four times as large, four times the throughput) does not depend on how
/// busy the machine is, so the confirmation step is the same in every run.
fn tune_spec(tag: &str) -> String {
    format!(
        r#"name: slurmtune
server:
  command: [python3, "{fake}"]
  model_path: /nonexistent-model
  env:
    SGTUNE_TEST_TAG: {tag}
    FAKE_SGLANG_STARTUP_S: "1"
    FAKE_SGLANG_TOKEN_S: "0.002"
  args:
    served_model_name: fake
  ready_timeout_s: 20
  stop_timeout_s: 3
workload:
  vocab_size: 100
  concurrency: 12
  requests: 24
  input_tokens: 30
  output_tokens: 20
  warmup_requests: 0
objective:
  maximize: output_tok_s
tune:
  knobs:
    # No two sizes that both run every request (one reserves 50 tokens): at 8 offered, 400
    # and 1,600 both did, at the fake's one pace, and which of them led (and was confirmed)
    # was then the machine's noise, in the Slurm run and the local one apart: the paths must
    # not turn on a coin. At 12 offered, 400 runs 8 and 1,600 all 12.
    max_total_tokens: [100, 400, 1600]
    kv_cache_dtype: [auto, fp8_e5m2]
  start: {{max_total_tokens: 100, kv_cache_dtype: auto}}
  launches: 5
slurm:
  max_running: 2
"#,
        fake = fake_server()
    )
}

/// The step lines `tune: step N: <why> → <name>` (a batch's `step N (2 at once): ...`, a
/// resumed tune's `... → <name> (recorded: ...)`), as (N, name).
fn tune_steps(log: &str) -> Vec<(usize, String)> {
    log.lines()
        .filter_map(|l| l.strip_prefix("tune: step "))
        .filter_map(|rest| {
            let (n, tail) = rest.split_once(": ")?;
            let n = n.split(" (").next()?;
            let name = tail.rsplit_once(" → ")?.1;
            let name = name.split(" (recorded").next()?;
            Some((n.parse().ok()?, name.to_string()))
        })
        .collect()
}

fn submissions(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("slurm/submissions.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
}

/// Every launch of every wave, in submission order.
fn submitted_launches(dir: &Path) -> Vec<String> {
    submissions(dir)
        .iter()
        .flat_map(|s| s["arrays"].as_array().cloned().unwrap_or_default())
        .flat_map(|a| a["launches"].as_array().cloned().unwrap_or_default())
        .filter_map(|l| l.as_str().map(str::to_string))
        .collect()
}

/// (run_name, repeat, status) of each row, sorted (a local batch appends its rows as its
/// launches end); asserts no measurement has two rows.
fn row_keys(dir: &Path) -> Vec<(String, String, String)> {
    let rows = read_rows(&dir.join("results.csv"));
    assert_each_measured_once(&rows);
    let mut keys: Vec<(String, String, String)> = rows
        .iter()
        .map(|r| {
            (
                r["run_name"].clone(),
                r["repeat"].clone(),
                r["status"].clone(),
            )
        })
        .collect();
    keys.sort();
    keys
}

/// `--executor slurm` with `tune:`: the driver submits each batch of the path as one job
/// array (a wave), merges its rows and proposes the next, to the same path as the same tune on
/// two local slots; the failing FP8 launches are rows and the tune goes on. Then the same tune
/// with its driver killed (SIGKILL) while a wave runs (a resume while it lived was refused):
/// `status` shows the wave's step, and `resume --executor slurm` waits for that wave (not
/// resubmitting it) and ends on the same path, no row twice.
#[test]
#[ignore = "needs a local Slurm (root: scripts/slurm-local.sh starts one); CI runs it"]
fn a_tune_runs_in_waves_on_slurm_and_resumes_after_its_driver_is_killed() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let c = cluster();
    let tmp = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("slurm-tune");
    let spec_path = tmp.path().join("s.yaml");
    std::fs::write(&spec_path, tune_spec(&tag)).expect("write");

    // The reference: the same tune on two local slots.
    let local = tmp.path().join("local");
    let out = run(sgtune()
        .arg("run")
        .arg(&spec_path)
        .arg("--results-dir")
        .arg(&local)
        .args(["--parallel", "2"]));
    let local_steps = tune_steps(&text(&out.stderr));
    assert_eq!(local_steps.len(), 5, "{}", text(&out.stderr));
    let local_dir = only_results_folder(&local);

    // On Slurm, to its end.
    let first = tmp.path().join("first");
    let out = sgtune()
        .arg("run")
        .arg(&spec_path)
        .arg("--results-dir")
        .arg(&first)
        .args(["--executor", "slurm"])
        .env("SLURM_CONF", &c.conf)
        .env("SGTUNE_SLURM_POLL_S", "0.5")
        .output()
        .expect("sgtune runs");
    let log = text(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "the tune ran to its end: {log}"
    );
    assert_eq!(tune_steps(&log), local_steps, "{log}");
    assert!(log.contains("tune: stop: "), "{log}");
    let dir = only_results_folder(&first);
    let subs = submissions(&dir);
    assert!(subs.len() >= 2, "{subs:?}");
    for (i, s) in subs.iter().enumerate() {
        assert_eq!(s["wave"]["index"], i + 1, "{s}");
        assert_eq!(s["arrays"].as_array().map(Vec::len), Some(1), "{s}");
        assert!(s["merge_job"].is_null(), "the driver merges: {s}");
        assert!(s["wave"]["merged_at"].is_string(), "{s}");
    }
    assert!(
        subs.iter()
            .any(|s| s["arrays"][0]["launches"].as_array().map(Vec::len) == Some(2)),
        "a wave of two tasks: {subs:?}"
    );
    let keys = row_keys(&dir);
    assert_eq!(
        keys,
        row_keys(&local_dir),
        "the same rows as the local tune"
    );
    assert!(
        keys.iter()
            .any(|(n, _, s)| n.contains("fp8") && s == "failed"),
        "a failing launch is a row and the tune went on: {keys:?}"
    );
    for r in read_rows(&dir.join("results.csv")) {
        if r["status"] == "failed" {
            assert!(!r["failure_kind"].is_empty(), "classified: {r:?}");
        }
    }
    let md = std::fs::read_to_string(dir.join("decision.md")).expect("decision.md");
    assert!(md.contains("## Tune path"), "{md}");
    assert!(md.contains("Stop: the launch budget is spent."), "{md}");
    assert!(dir.join("report.html").exists());
    // `sgtune merge` of a tune's folder rebuilds the same rows.
    sg(&c, &["merge", dir.to_str().unwrap()]);
    assert_eq!(row_keys(&dir), keys);

    // Again, with the driver killed as soon as its third wave is submitted.
    let second = tmp.path().join("second");
    let log_path = tmp.path().join("second.log");
    let mut child = sgtune()
        .arg("run")
        .arg(&spec_path)
        .arg("--results-dir")
        .arg(&second)
        .args(["--executor", "slurm"])
        .env("SLURM_CONF", &c.conf)
        .env("SGTUNE_SLURM_POLL_S", "0.5")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log_path).expect("log"))
        .spawn()
        .expect("spawn");
    let folder = || {
        std::fs::read_dir(&second)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(Result::ok)
            .map(|e| e.path())
    };
    assert!(
        wait_until(Duration::from_secs(90), || folder()
            .is_some_and(|d| submissions(&d).len() >= 3)),
        "the third wave was never submitted: {}",
        std::fs::read_to_string(&log_path).unwrap_or_default()
    );
    // While the driver lives, a resume of its folder is refused (the folder's lock) and
    // submits nothing: one driver per tune.
    let live = folder().expect("the folder");
    let out = sgtune()
        .args(["resume", live.to_str().unwrap(), "--executor", "slurm"])
        .env("SLURM_CONF", &c.conf)
        .output()
        .expect("sgtune resume");
    assert_refused_by_the_lock_of(&out, child.id());
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGKILL);
    }
    child.wait().expect("wait");
    let dir = only_results_folder(&second);
    let d = dir.to_str().unwrap();
    let subs = submissions(&dir);
    assert_eq!(subs.len(), 3, "{subs:?}");
    assert!(
        subs[2]["wave"]["merged_at"].is_null(),
        "killed before it merged the third wave: {subs:?}"
    );
    let before = submitted_launches(&dir);
    let status = text(&sg(&c, &["status", d]).stdout);
    assert!(status.contains("tune wave 3"), "{status}");
    assert!(status.contains("(step 4)"), "{status}");
    let out = sgtune()
        .args(["resume", d, "--executor", "slurm"])
        .env("SLURM_CONF", &c.conf)
        .env("SGTUNE_SLURM_POLL_S", "0.5")
        .output()
        .expect("sgtune resume");
    let log = text(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "the resume ran to its end: {log}"
    );
    assert!(log.contains("tune: wave 3 was not merged"), "{log}");
    assert_eq!(tune_steps(&log), local_steps, "the same path: {log}");
    let after = submitted_launches(&dir);
    assert_eq!(
        after[..before.len()],
        before[..],
        "the waves before the kill are as they were"
    );
    let mut each = after.clone();
    each.sort();
    each.dedup();
    assert_eq!(
        each.len(),
        after.len(),
        "no launch submitted twice: {after:?}"
    );
    assert_eq!(row_keys(&dir), keys, "the same rows, none twice");
    let md = std::fs::read_to_string(dir.join("decision.md")).expect("decision.md");
    assert!(md.contains("Stop: the launch budget is spent."), "{md}");
    assert!(
        wait_until(Duration::from_secs(10), || procs_with_tag(&tag).is_empty()),
        "servers left behind"
    );
}

/// `sgtune cancel` of a tune on Slurm scancels its current wave; the driver merges the wave's
/// rows (the cancelled launch interrupted) and stops (exit 130); `resume --executor slurm`
/// sets the interrupted rows aside, runs that launch again and ends on the same path as the
/// tune on two local slots.
#[test]
#[ignore = "needs a local Slurm (root: scripts/slurm-local.sh starts one); CI runs it"]
fn cancelling_a_tunes_wave_stops_its_driver_and_resume_runs_the_wave_again() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let c = cluster();
    let tmp = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("slurm-tune-cancel");
    let spec_path = tmp.path().join("s.yaml");
    // Slow enough (3 s to start) for the cancel to find the third wave's task running.
    std::fs::write(
        &spec_path,
        tune_spec(&tag).replace(
            "FAKE_SGLANG_STARTUP_S: \"1\"",
            "FAKE_SGLANG_STARTUP_S: \"3\"",
        ),
    )
    .expect("write");
    let local = tmp.path().join("local");
    let out = run(sgtune()
        .arg("run")
        .arg(&spec_path)
        .arg("--results-dir")
        .arg(&local)
        .args(["--parallel", "2"]));
    let local_steps = tune_steps(&text(&out.stderr));
    assert_eq!(local_steps.len(), 5, "{}", text(&out.stderr));

    let results = tmp.path().join("results");
    let log_path = tmp.path().join("driver.log");
    let mut child = sgtune()
        .arg("run")
        .arg(&spec_path)
        .arg("--results-dir")
        .arg(&results)
        .args(["--executor", "slurm"])
        .env("SLURM_CONF", &c.conf)
        .env("SGTUNE_SLURM_POLL_S", "0.5")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log_path).expect("log"))
        .spawn()
        .expect("spawn");
    let folder = || {
        std::fs::read_dir(&results)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(Result::ok)
            .map(|e| e.path())
    };
    assert!(
        wait_until(Duration::from_secs(90), || folder().is_some_and(|d| {
            submissions(&d).len() >= 3
                && text(&sg(&c, &["status", d.to_str().unwrap()]).stdout).contains(" running ")
        })),
        "the third wave's task never ran: {}",
        std::fs::read_to_string(&log_path).unwrap_or_default()
    );
    let dir = only_results_folder(&results);
    let d = dir.to_str().unwrap();
    let out = sg(&c, &["cancel", d]);
    assert!(
        text(&out.stdout).contains("cancelled tune wave 3"),
        "{}",
        text(&out.stdout)
    );
    let mut code = None;
    assert!(
        wait_until(Duration::from_secs(60), || {
            code = child.try_wait().ok().flatten().and_then(|s| s.code());
            code.is_some()
        }),
        "the driver did not stop after the cancel"
    );
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    assert_eq!(code, Some(130), "{log}");
    assert!(log.contains("tune: wave 3 was cancelled"), "{log}");
    let subs = submissions(&dir);
    assert_eq!(subs.len(), 3, "no wave after the cancel: {subs:?}");
    assert!(subs[2]["cancelled_at"].is_string() && subs[2]["wave"]["merged_at"].is_string());
    let keys = row_keys(&dir);
    assert!(
        keys.iter().any(|(_, _, s)| s == "interrupted"),
        "the cancelled launch's row is merged: {keys:?}"
    );

    let out = sgtune()
        .args(["resume", d, "--executor", "slurm"])
        .env("SLURM_CONF", &c.conf)
        .env("SGTUNE_SLURM_POLL_S", "0.5")
        .output()
        .expect("sgtune resume");
    let log = text(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "the resume ran to its end: {log}"
    );
    assert_eq!(tune_steps(&log), local_steps, "the same path: {log}");
    assert_eq!(
        row_keys(&dir),
        row_keys(&only_results_folder(&local)),
        "the same rows as the local tune, none twice"
    );
    let superseded = read_rows(&dir.join("results.superseded.csv"));
    assert!(
        superseded.iter().any(|r| r["status"] == "interrupted"),
        "the cancelled rows are kept as evidence"
    );
    assert!(
        wait_until(Duration::from_secs(10), || procs_with_tag(&tag).is_empty()),
        "servers left behind"
    );
}
