//! The `on_finish` hook against the fake SGLang: it runs exactly once for each way a sweep
//! ends (done, failed runs, interrupted, an error after the results folder exists), with the
//! outcome in its environment and in outcome.json; a hook that fails, is not found or hangs
//! is a warning that changes neither the rows nor the exit code.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test may panic: that is its failure

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

fn spec(tag: &str, body: &str) -> String {
    format!(
        r#"name: hook
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
{body}"#,
        fake = fake_server()
    )
}

const SHORT: &str = "workload:\n  concurrency: 2\n  requests: 4\n  warmup_requests: 1\n  input_tokens: 4\n  output_tokens: 8\n  vocab_size: 100\n";
const LONG: &str = "workload:\n  concurrency: 2\n  duration_s: 120\n  input_tokens: 4\n  output_tokens: 40\n  vocab_size: 100\n";

/// A hook that appends one line per call: outcome, exit code, winner, results folder.
fn appender(file: &Path) -> String {
    format!(
        r#"echo "$SGTUNE_OUTCOME|$SGTUNE_EXIT_CODE|$SGTUNE_WINNER|$SGTUNE_RESULTS_DIR|$SGTUNE_OUTCOME_FILE" >> {}"#,
        file.display()
    )
}

fn calls(file: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|l| l.split('|').map(String::from).collect())
        .collect()
}

fn start(spec_path: &Path, results: &Path, extra: &[&str]) -> Child {
    sgtune()
        .arg("run")
        .arg(spec_path)
        .arg("--results-dir")
        .arg(results)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn")
}

fn write(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("spec.yaml");
    std::fs::write(&p, text).expect("write spec");
    p
}

fn first_loading(results: &Path, run: &str) -> Option<PathBuf> {
    let folder = std::fs::read_dir(results).ok()?.flatten().next()?.path();
    folder
        .join("runs")
        .join(run)
        .join("requests.csv")
        .exists()
        .then_some(folder)
}

fn outcome_json(folder: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(folder.join("outcome.json")).expect("outcome"))
        .expect("json")
}

fn no_leftovers(tag: &str) {
    assert!(
        wait_until(Duration::from_secs(10), || procs_with_tag(tag).is_empty()),
        "processes left: {:?}",
        procs_with_tag(tag)
    );
}

#[test]
fn done_runs_the_hook_once_with_the_outcome_and_the_winner() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("hook-done");
    let hook = dir.path().join("calls.txt");
    let body = format!(
        "configs:\n  - {{name: a}}\n  - {{name: b}}\n{SHORT}objective: {{maximize: output_tok_s}}\non_finish: {{command: '{}'}}\n",
        appender(&hook).replace('\'', "''")
    );
    let spec_path = write(dir.path(), &spec(&tag, &body));
    let results = dir.path().join("results");
    let out = run_sweep(&spec_path, &results);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let folder = only_results_folder(&results);
    let c = calls(&hook);
    assert_eq!(c.len(), 1, "exactly one call: {c:?}");
    assert_eq!(c[0][0], "done");
    assert_eq!(c[0][1], "0");
    assert_eq!(Path::new(&c[0][3]), folder);
    let o = outcome_json(&folder);
    assert_eq!(Path::new(&c[0][4]), folder.join("outcome.json"));
    assert_eq!(o["outcome"], "done");
    assert_eq!(o["rows"], 2);
    assert_eq!(o["rows_ok"], 2);
    // The environment and the file say the same winner (none on a tie).
    assert_eq!(o["winner"].as_str().unwrap_or(""), c[0][2]);
    if !c[0][2].is_empty() {
        assert!(
            o["winner_command"]
                .as_str()
                .unwrap()
                .contains("fake_sglang")
        );
    }
    no_leftovers(&tag);
}

#[test]
fn failed_runs_run_the_hook_once_given_on_the_command_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("hook-failed");
    let hook = dir.path().join("calls.txt");
    let body = format!(
        "configs:\n  - {{name: broken, fake_fault: exit_before_ready}}\n{SHORT}on_finish: {{command: 'exit 9'}}\n"
    );
    let spec_path = write(dir.path(), &spec(&tag, &body));
    let results = dir.path().join("results");
    // --on-finish overrides the spec's command.
    let out = common::run(
        sgtune()
            .arg("run")
            .arg(&spec_path)
            .arg("--results-dir")
            .arg(&results)
            .arg("--on-finish")
            .arg(appender(&hook)),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let c = calls(&hook);
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!((c[0][0].as_str(), c[0][1].as_str()), ("runs_failed", "1"));
    let folder = only_results_folder(&results);
    assert_eq!(read_rows(&folder.join("results.csv")).len(), 1);
    no_leftovers(&tag);
}

#[test]
fn an_interrupted_sweep_runs_the_hook_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("hook-int");
    let hook = dir.path().join("calls.txt");
    let body = format!("configs:\n  - {{name: first}}\n  - {{name: second}}\n{LONG}");
    let spec_path = write(dir.path(), &spec(&tag, &body));
    let results = dir.path().join("results");
    let mut child = start(&spec_path, &results, &["--on-finish", &appender(&hook)]);
    assert!(
        wait_until(Duration::from_secs(30), || first_loading(&results, "first")
            .is_some()),
        "first run never loaded"
    );
    // SAFETY: SIGINT to our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    assert!(wait_until(Duration::from_secs(60), || matches!(
        child.try_wait(),
        Ok(Some(_))
    )));
    let out = child.wait_with_output().expect("output");
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    let c = calls(&hook);
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!((c[0][0].as_str(), c[0][1].as_str()), ("interrupted", "130"));
    no_leftovers(&tag);
}

#[test]
fn an_error_after_the_results_folder_exists_runs_the_hook_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("hook-err");
    let hook = dir.path().join("calls.txt");
    let body = format!("configs:\n  - {{name: first}}\n  - {{name: second}}\n{LONG}");
    let spec_path = write(dir.path(), &spec(&tag, &body));
    let results = dir.path().join("results");
    let mut child = start(&spec_path, &results, &["--on-finish", &appender(&hook)]);
    let mut folder = None;
    assert!(
        wait_until(Duration::from_secs(30), || {
            folder = first_loading(&results, "first");
            folder.is_some()
        }),
        "first run never loaded"
    );
    // results.csv becomes a folder: the first row cannot be written, which stops the sweep.
    let csv = folder.unwrap().join("results.csv");
    std::fs::remove_file(&csv).expect("rm results.csv");
    std::fs::create_dir(&csv).expect("mkdir results.csv");
    // SAFETY: SIGINT to our own child, so its first row is written now.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    assert!(wait_until(Duration::from_secs(60), || matches!(
        child.try_wait(),
        Ok(Some(_))
    )));
    let out = child.wait_with_output().expect("output");
    // 5: the results folder could not be written (not 2, bad input: a script tells them apart).
    assert_eq!(out.status.code(), Some(5), "{}", text(&out.stderr));
    let c = calls(&hook);
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!((c[0][0].as_str(), c[0][1].as_str()), ("error", "5"));
    no_leftovers(&tag);
}

#[test]
fn a_failing_missing_or_hanging_hook_is_a_warning() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("hook-bad");
    let results = dir.path().join("results");
    for (i, (hook, says)) in [
        ("exit 3", "exited with"),
        ("/nonexistent/notify-me", "exited with"),
        ("sleep 300", "was still running after 1 s"),
    ]
    .iter()
    .enumerate()
    {
        let body = format!("{SHORT}on_finish: {{command: '{hook}', timeout_s: 1}}\n");
        let sub = dir.path().join(format!("s{i}"));
        std::fs::create_dir_all(&sub).expect("mkdir");
        let spec_path = write(&sub, &spec(&tag, &body));
        let res = results.join(format!("s{i}"));
        let t0 = Instant::now();
        let out = run_sweep(&spec_path, &res);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{hook}: {err}");
        assert!(err.contains("warning: the on_finish hook"), "{hook}: {err}");
        assert!(err.contains(says), "{hook}: {err}");
        let folder = only_results_folder(&res);
        assert_eq!(read_rows(&folder.join("results.csv")).len(), 1, "{hook}");
        assert_eq!(outcome_json(&folder)["outcome"], "done");
        // The hanging hook is killed at its timeout, not waited for.
        assert!(t0.elapsed() < Duration::from_secs(200), "{hook}");
    }
    no_leftovers(&tag);
}
