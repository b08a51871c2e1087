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
