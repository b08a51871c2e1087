//! `--executor slurm` without a Slurm: stand-ins for `sbatch`, `sacct`, `squeue` and `scancel`
//! on PATH (shell scripts that record what they were asked and answer what the test says), so
//! the submission, a task (`run-one`, on the fake SGLang), `status`, the merge and `cancel` run
//! through the binary on every `cargo test`. The real cluster is `tests/slurm_executor.rs`
//! (ignored by default: it needs root).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test may panic: that is its failure

mod common;
use common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The stand-ins' folder (`bin/` on PATH) and their state (`FAKE_SLURM_DIR`): `next_id` (the
/// next job id sbatch answers), `sacct` and `squeue` (what they print), `*.log` (each call).
struct FakeSlurm {
    root: PathBuf,
}

impl FakeSlurm {
    fn new(root: &Path) -> FakeSlurm {
        let bin = root.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let scripts = [
            (
                "sbatch",
                r#"if [ "$1" = "--version" ]; then echo "slurm 24.11.0"; exit 0; fi
echo "$*" >> "$FAKE_SLURM_DIR/sbatch.log"
n=$(cat "$FAKE_SLURM_DIR/next_id" 2>/dev/null || echo 500)
echo $((n + 1)) > "$FAKE_SLURM_DIR/next_id"
echo "$n""#,
            ),
            (
                "sacct",
                r#"cat "$FAKE_SLURM_DIR/sacct" 2>/dev/null; exit 0"#,
            ),
            (
                "squeue",
                r#"cat "$FAKE_SLURM_DIR/squeue" 2>/dev/null; exit 0"#,
            ),
            ("scancel", r#"echo "$*" >> "$FAKE_SLURM_DIR/scancel.log""#),
        ];
        for (name, body) in scripts {
            let p = bin.join(name);
            std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        FakeSlurm {
            root: root.to_path_buf(),
        }
    }

    /// What sacct (finished tasks) and squeue (live ones) say, as `JOB_INDEX|STATE` lines.
    fn states(&self, sacct: &str, squeue: &str) {
        std::fs::write(self.root.join("sacct"), sacct).unwrap();
        std::fs::write(self.root.join("squeue"), squeue).unwrap();
    }

    fn log(&self, tool: &str) -> String {
        std::fs::read_to_string(self.root.join(format!("{tool}.log"))).unwrap_or_default()
    }

    fn sgtune(&self, args: &[&str]) -> std::process::Output {
        let path = format!(
            "{}:{}",
            self.root.join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        run(sgtune()
            .args(args)
            .env("PATH", path)
            .env("FAKE_SLURM_DIR", &self.root))
    }
}

fn spec(tag: &str) -> String {
    format!(
        r#"name: fakeslurm
server:
  command: [python3, "{fake}"]
  model_path: /nonexistent-model
  env:
    SGTUNE_TEST_TAG: {tag}
    FAKE_SGLANG_STARTUP_S: "0.2"
  args:
    served_model_name: fake
  ready_timeout_s: 20
  stop_timeout_s: 3
configs:
  - {{name: a}}
  - {{name: b}}
  - {{name: c}}
  - {{name: d}}
workload:
  vocab_size: 100
  input_tokens: 4
  output_tokens: 10
  warmup_requests: 0
  concurrency: 2
  requests: 4
slurm:
  partition: debug
"#,
        fake = fake_server()
    )
}

/// results.csv: run → (status, failure_kind, failure_message).
fn merged(dir: &Path) -> BTreeMap<String, (String, String, String)> {
    let mut m = BTreeMap::new();
    for r in read_rows(&dir.join("results.csv")) {
        let prev = m.insert(
            r["run_name"].clone(),
            (
                r["status"].clone(),
                r["failure_kind"].clone(),
                r["failure_message"].clone(),
            ),
        );
        assert!(prev.is_none(), "two rows for {}", r["run_name"]);
    }
    m
}

/// `sgtune status`: run → its state column.
fn status(slurm: &FakeSlurm, dir: &str) -> BTreeMap<String, String> {
    let out = slurm.sgtune(&["status", dir]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .skip(1)
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            Some((f.next()?.to_string(), f.next()?.to_string()))
        })
        .filter(|(run, _)| ["a", "b", "c", "d"].contains(&run.as_str()))
        .collect()
}

#[test]
fn submit_run_a_task_merge_and_cancel_with_slurms_tools_standing_in() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let slurm = FakeSlurm::new(&tmp.path().join("slurm"));
    let tag = unique_tag("fakeslurm");
    let spec_path = tmp.path().join("s.yaml");
    std::fs::write(&spec_path, spec(&tag)).unwrap();
    let results = tmp.path().join("results");

    // Submit: one array of four tasks (job 500), the merge job (501) after it.
    let out = slurm.sgtune(&[
        "run",
        spec_path.to_str().unwrap(),
        "--results-dir",
        results.to_str().unwrap(),
        "--executor",
        "slurm",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("submitted job array 500 (4 task(s), gres gpu:1): a b c d"),
        "{stdout}"
    );
    assert!(stdout.contains("merge job 501 runs after them"), "{stdout}");
    let sbatch = slurm.log("sbatch");
    assert!(
        sbatch.contains("--dependency=afterany:500"),
        "the merge waits for the array: {sbatch}"
    );
    let dir = only_results_folder(&results);
    let d = dir.to_str().unwrap();
    let script = std::fs::read_to_string(dir.join("slurm/array-gpu1.sbatch")).unwrap();
    assert!(script.contains("#SBATCH --array=0-3\n"), "{script}");
    assert!(script.contains("#SBATCH --partition=debug\n"), "{script}");

    // Task 0 runs (as Slurm would start it), the others have not.
    let marker = std::fs::read_to_string(dir.join("slurm/marker")).unwrap();
    let out = slurm.sgtune(&["run-one", d, "--launch", "a", "--marker", marker.trim()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(dir.join("runs/a/rows.csv").exists());
    // A task that sees another submission's marker refuses to run.
    let out = slurm.sgtune(&["run-one", d, "--launch", "b", "--marker", "stale"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));

    // b was cancelled, c timed out (its output says why), d still waits in the queue.
    std::fs::write(
        dir.join("slurm/500_2.out"),
        "sgtune run-one: c\nslurmstepd: error: *** JOB 500 CANCELLED DUE TO TIME LIMIT ***\n",
    )
    .unwrap();
    slurm.states(
        "500_0|COMPLETED\n500_1|CANCELLED by 0\n500_2|TIMEOUT\n",
        "500_3|PENDING\n",
    );
    let st = status(&slurm, d);
    let want: BTreeMap<String, String> = [
        ("a", "ok"),
        ("b", "cancelled"),
        ("c", "failed"),
        ("d", "pending"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(st, want);

    // A merge now (by hand, early): d has no row yet, and the sweep is not finished.
    let out = slurm.sgtune(&["merge", d]);
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    let m = merged(&dir);
    assert_eq!(m.keys().collect::<Vec<_>>(), ["a", "b", "c"], "{m:?}");
    assert_eq!(m["a"].0, "ok");
    assert_eq!(
        (m["b"].0.as_str(), m["b"].1.as_str()),
        ("interrupted", "interrupted")
    );
    assert!(m["b"].2.contains("`sgtune resume` runs it again"), "{m:?}");
    assert_eq!(
        (m["c"].0.as_str(), m["c"].1.as_str()),
        ("failed", "slurm_task")
    );
    assert!(
        m["c"].2.contains("ended TIMEOUT") && m["c"].2.contains("DUE TO TIME LIMIT"),
        "{m:?}"
    );

    // d runs and ends; the merge job's run rebuilds results.csv: one row per run.
    let out = slurm.sgtune(&["run-one", d, "--launch", "d", "--marker", marker.trim()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    slurm.states(
        "500_0|COMPLETED\n500_1|CANCELLED by 0\n500_2|TIMEOUT\n500_3|COMPLETED\n",
        "",
    );
    let out = slurm.sgtune(&["merge", d]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "failed runs are rows, not a failed merge: {}",
        text(&out.stderr)
    );
    let m = merged(&dir);
    assert_eq!(m.len(), 4, "{m:?}");
    assert_eq!(m["d"].0, "ok");
    assert!(dir.join("results.md").exists() && dir.join("report.html").exists());

    // cancel: scancel of the array, recorded in the submission.
    let out = slurm.sgtune(&["cancel", d]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(slurm.log("scancel").trim(), "500");
    let subs: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("slurm/submissions.json")).unwrap())
            .unwrap();
    assert!(subs[0]["cancelled_at"].is_string(), "{subs}");
    assert!(
        wait_until(std::time::Duration::from_secs(10), || procs_with_tag(&tag)
            .is_empty()),
        "servers left: {:?}",
        procs_with_tag(&tag)
    );
}

/// Stand-ins that run what they are given: `sbatch` starts each task of the array's script in
/// the background (`SLURM_ARRAY_JOB_ID`, `SLURM_ARRAY_TASK_ID` set, as Slurm does), `squeue`
/// lists the tasks still running, `sacct` the ones that ended (COMPLETED; the tasks of job
/// `FAKE_SLURM_FAIL_JOB` end `FAKE_SLURM_FAIL_STATE`, else FAILED, without running, as on a
/// broken node). Enough for a tune's
/// driver, which waits for each wave's tasks, on every `cargo test`.
fn running_slurm(root: &Path) -> PathBuf {
    let bin = root.join("bin");
    std::fs::create_dir_all(root.join("run")).unwrap();
    std::fs::create_dir_all(&bin).unwrap();
    let scripts = [
        (
            "sbatch",
            r#"if [ "$1" = "--version" ]; then echo "slurm 24.11.0"; exit 0; fi
for a in "$@"; do script="$a"; done
n=$(cat "$FAKE_SLURM_DIR/next_id" 2>/dev/null || echo 700)
echo $((n + 1)) > "$FAKE_SLURM_DIR/next_id"
echo "$*" >> "$FAKE_SLURM_DIR/sbatch.log"
last=$(sed -n 's/^#SBATCH --array=0-\([0-9]*\).*/\1/p' "$script")
output=$(sed -n 's/^#SBATCH --output=//p' "$script")
for i in $(seq 0 "${last:-0}"); do
  touch "$FAKE_SLURM_DIR/run/${n}_$i"
  out=$(echo "$output" | sed "s/%A/$n/; s/%a/$i/")
  if [ "$n" = "$FAKE_SLURM_FAIL_JOB" ]; then
    ( sleep 0.5; echo "boom: the node lost its disk"
      echo "${n}_$i|${FAKE_SLURM_FAIL_STATE:-FAILED}" >> "$FAKE_SLURM_DIR/done"
      rm -f "$FAKE_SLURM_DIR/run/${n}_$i" ) > "$out" 2>&1 &
    continue
  fi
  ( SLURM_ARRAY_JOB_ID=$n SLURM_ARRAY_TASK_ID=$i bash "$script"
    echo "${n}_$i|COMPLETED" >> "$FAKE_SLURM_DIR/done"
    rm -f "$FAKE_SLURM_DIR/run/${n}_$i" ) > "$out" 2>&1 &
done
echo "$n""#,
        ),
        (
            "squeue",
            r#"for f in "$FAKE_SLURM_DIR"/run/*; do [ -e "$f" ] && echo "$(basename "$f")|RUNNING"; done; exit 0"#,
        ),
        ("sacct", r#"cat "$FAKE_SLURM_DIR/done" 2>/dev/null; exit 0"#),
        ("scancel", r#"echo "$*" >> "$FAKE_SLURM_DIR/scancel.log""#),
    ];
    for (name, body) in scripts {
        let p = bin.join(name);
        std::fs::write(&p, format!("#!/bin/bash\n{body}\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    bin
}

/// A guided tune with `--executor slurm` and stand-ins that run the tasks: the driver submits
/// one array per batch of the path (the second of two tasks), waits for each, merges it, and
/// ends where the same tune on two local slots ends: the same steps, the same rows, decision.md's
/// Tune path to its stop.
fn tune_spec(tag: &str) -> String {
    spec(tag)
        .replace(
            "configs:\n  - {name: a}\n  - {name: b}\n  - {name: c}\n  - {name: d}\n",
            "objective:\n  maximize: output_tok_s\ntune:\n  knobs:\n    max_total_tokens: [100, 400, 1600]\n    kv_cache_dtype: [auto, fp8_e5m2]\n  start: {max_total_tokens: 100, kv_cache_dtype: auto}\n  launches: 4\n",
        )
        .replace("  concurrency: 2\n  requests: 4\n", "  concurrency: 8\n  requests: 16\n")
        .replace("  input_tokens: 4\n  output_tokens: 10\n", "  input_tokens: 30\n  output_tokens: 20\n")
        .replace("slurm:\n  partition: debug\n", "slurm:\n  max_running: 2\n")
}

/// The configuration of each `tune: step` line.
fn steps(log: &str) -> Vec<String> {
    log.lines()
        .filter(|l| l.starts_with("tune: step "))
        .filter_map(|l| l.rsplit_once(" → ").map(|(_, n)| n.to_string()))
        .collect()
}

/// The reference for a tune on (stand-in) Slurm: the same spec (written to `tmp/s.yaml`) run on
/// two local slots into `tmp/local`; its four steps.
fn tune_on_local_slots(tmp: &Path, tag: &str) -> (PathBuf, PathBuf, Vec<String>) {
    let spec_path = tmp.join("s.yaml");
    std::fs::write(&spec_path, tune_spec(tag)).unwrap();
    let local = tmp.join("local");
    let out = run(sgtune()
        .arg("run")
        .arg(&spec_path)
        .arg("--results-dir")
        .arg(&local)
        .args(["--parallel", "2"]));
    let want = steps(&text(&out.stderr));
    assert_eq!(want.len(), 4, "{}", text(&out.stderr));
    (spec_path, local, want)
}

/// `sgtune run SPEC --executor slurm` with the running stand-ins (`fail_job`: the job whose
/// tasks fail).
fn run_on_fake_slurm(
    tmp: &Path,
    spec_path: &Path,
    fail_job: &str,
) -> (std::process::Output, PathBuf) {
    run_on_fake_slurm_ending(tmp, spec_path, fail_job, "FAILED")
}

/// As [`run_on_fake_slurm`], the failing job's tasks ending in `state`.
fn run_on_fake_slurm_ending(
    tmp: &Path,
    spec_path: &Path,
    fail_job: &str,
    state: &str,
) -> (std::process::Output, PathBuf) {
    let slurm = tmp.join("slurm");
    let bin = running_slurm(&slurm);
    let results = tmp.join("results");
    let out = run(sgtune()
        .arg("run")
        .arg(spec_path)
        .arg("--results-dir")
        .arg(&results)
        .args(["--executor", "slurm"])
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env("FAKE_SLURM_DIR", &slurm)
        .env("FAKE_SLURM_FAIL_JOB", fail_job)
        .env("FAKE_SLURM_FAIL_STATE", state)
        .env("SGTUNE_SLURM_POLL_S", "0.2"));
    (out, results)
}

/// A guided tune with `--executor slurm` and stand-ins that run the tasks: the driver submits
/// one array per batch of the path (the second of two tasks), waits for each, merges it, and
/// ends where the same tune on two local slots ends: the same steps, the same rows, decision.md's
/// Tune path to its stop.
#[test]
fn a_tune_on_slurm_submits_one_array_per_batch_and_ends_as_on_local_slots() {
    let tmp = tempfile::tempdir().unwrap();
    let tag = unique_tag("fakeslurm-tune");
    let (spec_path, local, want) = tune_on_local_slots(tmp.path(), &tag);

    let (out, results) = run_on_fake_slurm(tmp.path(), &spec_path, "");
    let slurm = tmp.path().join("slurm");
    let log = text(&out.stderr);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{log}");
    assert_eq!(steps(&log), want, "{log}");
    let dir = only_results_folder(&results);
    let subs: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("slurm/submissions.json")).unwrap())
            .unwrap();
    let waves: Vec<usize> = subs
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["arrays"][0]["launches"].as_array().map_or(0, Vec::len))
        .collect();
    assert!(waves.len() >= 2 && waves.contains(&2), "{subs}");
    assert_eq!(waves.iter().sum::<usize>(), 4, "one task per step: {subs}");
    let sbatch = std::fs::read_to_string(slurm.join("sbatch.log")).unwrap_or_default();
    assert!(!sbatch.contains("merge"), "no merge job: {sbatch}");
    assert!(dir.join("slurm/wave2-gpu1.sbatch").exists());
    let keys = |d: &Path| {
        let mut k: Vec<(String, String)> = read_rows(&d.join("results.csv"))
            .iter()
            .map(|r| (r["run_name"].clone(), r["status"].clone()))
            .collect();
        k.sort();
        k
    };
    assert_eq!(keys(&dir), keys(&only_results_folder(&local)));
    let md = std::fs::read_to_string(dir.join("decision.md")).unwrap();
    assert!(
        md.contains("## Tune path") && md.contains("\nStop: "),
        "{md}"
    );
    assert!(
        wait_until(std::time::Duration::from_secs(10), || procs_with_tag(&tag)
            .is_empty()),
        "servers left behind"
    );
}

/// A task that ends without rows (its node broke) is a row with its Slurm state, a failed step
/// of the path, and the tune goes on to its stop.
#[test]
fn a_tune_task_that_left_no_rows_is_a_failed_step_and_the_tune_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let tag = unique_tag("fakeslurm-tune-fail");
    let spec_path = tmp.path().join("s.yaml");
    std::fs::write(&spec_path, tune_spec(&tag)).unwrap();
    // Job 700 is the first wave: the start.
    let (out, results) = run_on_fake_slurm(tmp.path(), &spec_path, "700");
    let log = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "failed runs: {log}");
    let st = steps(&log);
    assert!(
        st.len() >= 2,
        "the tune went on past the failed start: {log}"
    );
    assert!(log.contains("tune: stop: "), "{log}");
    let dir = only_results_folder(&results);
    let rows = read_rows(&dir.join("results.csv"));
    let start = rows
        .iter()
        .find(|r| r["run_name"] == "mtt100_kv-auto")
        .expect("the start's row");
    assert_eq!(start["status"], "failed");
    assert_eq!(start["failure_kind"], "slurm_task");
    assert!(
        start["failure_message"].contains("ended FAILED without writing its rows")
            && start["failure_message"].contains("the node lost its disk"),
        "{start:?}"
    );
    assert!(
        log.contains("mtt100_kv-auto: failed (slurm_task) →"),
        "the next step was chosen from the failure: {log}"
    );
    assert!(rows.len() >= 2, "{rows:?}");
    assert!(
        wait_until(std::time::Duration::from_secs(10), || procs_with_tag(&tag)
            .is_empty()),
        "servers left behind"
    );
}

/// A task whose node failed (NODE_FAIL, no rows) is an interrupted launch, not a failed step:
/// its row moves to results.superseded.csv, its launch goes into the next wave, and the tune
/// ends on the same steps and rows as on local slots, with no measurement twice.
#[test]
fn a_tune_task_whose_node_failed_runs_again_in_the_next_wave() {
    let tmp = tempfile::tempdir().unwrap();
    let tag = unique_tag("fakeslurm-tune-nodefail");
    let (spec_path, local, want) = tune_on_local_slots(tmp.path(), &tag);
    // Job 700 is the first wave: the start, on a node that fails.
    let (out, results) = run_on_fake_slurm_ending(tmp.path(), &spec_path, "700", "NODE_FAIL");
    let log = text(&out.stderr);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{log}");
    let dir = only_results_folder(&results);
    let rows = read_rows(&dir.join("results.csv"));
    assert_each_measured_once(&rows);
    let start: Vec<_> = rows
        .iter()
        .filter(|r| r["run_name"] == "mtt100_kv-auto" && r["repeat"] == "1")
        .collect();
    assert_eq!(start.len(), 1, "{rows:?}");
    assert_eq!(start[0]["status"], "ok", "measured again: {rows:?}");
    let superseded = read_rows(&dir.join("results.superseded.csv"));
    assert!(
        superseded
            .iter()
            .any(|r| r["run_name"] == "mtt100_kv-auto" && r["status"] == "interrupted"),
        "{superseded:?}"
    );
    let mut local_runs: Vec<String> = read_rows(&only_results_folder(&local).join("results.csv"))
        .iter()
        .map(|r| r["run_name"].clone())
        .collect();
    let mut runs: Vec<String> = rows.iter().map(|r| r["run_name"].clone()).collect();
    local_runs.sort();
    runs.sort();
    assert_eq!(runs, local_runs, "{log}");
    assert_eq!(steps(&log).last(), want.last(), "{log}");
    assert!(
        wait_until(std::time::Duration::from_secs(10), || procs_with_tag(&tag)
            .is_empty()),
        "servers left behind"
    );
}

/// One driver per tune, and a local resume of a tune whose driver died mid-wave: while the
/// driver runs, a resume of its folder is refused (exit 2), naming it; once it is killed
/// (SIGKILL) after submitting its second wave, a plain `sgtune resume` (no `--executor slurm`)
/// waits for that wave's tasks, merges them without running their launches again here, and
/// goes on locally to the same rows and last step as the same tune on two local slots.
#[test]
fn a_live_driver_refuses_a_second_resume_and_a_local_resume_waits_for_the_unmerged_wave() {
    let tmp = tempfile::tempdir().unwrap();
    let tag = unique_tag("fakeslurm-tune-local-resume");
    let (spec_path, local, want) = tune_on_local_slots(tmp.path(), &tag);

    let slurm = tmp.path().join("slurm");
    let bin = running_slurm(&slurm);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let results = tmp.path().join("results");
    let mut driver = sgtune()
        .arg("run")
        .arg(&spec_path)
        .arg("--results-dir")
        .arg(&results)
        .args(["--executor", "slurm"])
        .env("PATH", &path)
        .env("FAKE_SLURM_DIR", &slurm)
        .env("SGTUNE_SLURM_POLL_S", "0.2")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let waves = |d: &Path| -> usize {
        std::fs::read_to_string(d.join("slurm/submissions.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v.as_array().map(Vec::len))
            .unwrap_or(0)
    };
    let folder = || {
        std::fs::read_dir(&results)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(Result::ok)
            .map(|e| e.path())
    };
    assert!(
        wait_until(std::time::Duration::from_secs(60), || folder()
            .is_some_and(|d| waves(&d) >= 2)),
        "the second wave was never submitted"
    );
    let dir = folder().unwrap();
    let out = run(sgtune()
        .arg("resume")
        .arg(&dir)
        .env("PATH", &path)
        .env("FAKE_SLURM_DIR", &slurm));
    assert_refused_by_the_lock_of(&out, driver.id());
    driver.kill().unwrap();
    driver.wait().unwrap();
    assert_eq!(waves(&dir), 2, "killed while its second wave ran");

    let out = run(sgtune()
        .arg("resume")
        .arg(&dir)
        .args(["--parallel", "2"])
        .env("PATH", &path)
        .env("FAKE_SLURM_DIR", &slurm)
        .env("SGTUNE_SLURM_POLL_S", "0.2"));
    let log = text(&out.stderr);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{log}");
    assert!(log.contains("tune: wave 2 was not merged"), "{log}");
    assert_eq!(waves(&dir), 2, "nothing submitted again: {log}");
    let rows = read_rows(&dir.join("results.csv"));
    assert_each_measured_once(&rows);
    let mut runs: Vec<String> = rows.iter().map(|r| r["run_name"].clone()).collect();
    let mut local_runs: Vec<String> = read_rows(&only_results_folder(&local).join("results.csv"))
        .iter()
        .map(|r| r["run_name"].clone())
        .collect();
    runs.sort();
    local_runs.sort();
    assert_eq!(runs, local_runs, "one row per launch, none twice: {log}");
    assert!(
        !dir.join("results.superseded.csv").exists(),
        "the wave's tasks ran to their end and were merged, not redone: {log}"
    );
    assert_eq!(steps(&log).last(), want.last(), "{log}");
    assert!(
        wait_until(std::time::Duration::from_secs(10), || procs_with_tag(&tag)
            .is_empty()),
        "servers left behind"
    );
}
