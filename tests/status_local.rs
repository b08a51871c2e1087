//! `sgtune status DIR` on local sweeps against the fake SGLang, from another process and the
//! results folder alone: while the sweep runs (the launch in progress, rows, the leader so
//! far, the ETA), after sgtune is killed with -9 (no longer running, how to resume), and
//! once it finished.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test may panic: that is its failure

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

fn spec(tag: &str, configs: &str) -> String {
    format!(
        r#"name: status
server:
  command: [python3, "{fake}"]
  model_path: /nonexistent-model
  env:
    SGTUNE_TEST_TAG: {tag}
    FAKE_SGLANG_STARTUP_S: "0.2"
  args:
    served_model_name: fake
  ready_timeout_s: 300
  stop_timeout_s: 3
configs:
{configs}workload:
  concurrency: 2
  requests: 4
  warmup_requests: 1
  input_tokens: 4
  output_tokens: 8
  vocab_size: 100
objective: {{maximize: output_tok_s}}
"#,
        fake = fake_server()
    )
}

fn status(dir: &Path) -> (Option<i32>, String) {
    let out = common::run(sgtune().arg("status").arg(dir));
    (
        out.status.code(),
        format!("{}{}", text(&out.stdout), text(&out.stderr)),
    )
}

fn folder(results: &Path) -> Option<PathBuf> {
    Some(std::fs::read_dir(results).ok()?.flatten().next()?.path())
}

#[test]
fn status_while_running_and_after_kill_9() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("status-run");
    // `fast` measures and ends; `stuck` then never gets ready: the sweep sits in its launch.
    let configs = "  - {name: fast}\n  - {name: stuck, fake_fault: never_ready}\n";
    let spec_path = dir.path().join("spec.yaml");
    std::fs::write(&spec_path, spec(&tag, configs)).expect("spec");
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
    let mut f = None;
    let mut said = String::new();
    // The state is written at each event; wait for the second launch's.
    let there = wait_until(Duration::from_secs(60), || {
        f = folder(&results);
        let Some(f) = &f else { return false };
        said = status(f).1;
        said.contains("stuck: starting")
    });
    assert!(there, "never saw the second launch: {said}");
    let f = f.unwrap();
    let (code, said) = status(&f);
    assert_eq!(code, Some(0), "{said}");
    assert!(
        said.contains(&format!("running (sgtune pid {}", child.id())),
        "{said}"
    );
    assert!(said.contains("now: launch 2/2 stuck: starting"), "{said}");
    assert!(said.contains("rows: 1 (1 ok, 0 failed)"), "{said}");
    assert!(said.contains("1 left in this round"), "{said}");
    assert!(
        said.contains("leader so far at concurrency 2: fast"),
        "{said}"
    );
    // One launch ended: the ETA is known.
    assert!(said.contains("ETA: 20"), "{said}");

    child.kill().expect("SIGKILL");
    let _ = child.wait();
    assert!(
        wait_until(Duration::from_secs(10), || procs_with_tag(&tag).is_empty()),
        "servers left: {:?}",
        procs_with_tag(&tag)
    );
    let (code, said) = status(&f);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("not running: sgtune (pid"), "{said}");
    assert!(said.contains("gone without finishing"), "{said}");
    assert!(said.contains("last: launch 2/2 stuck"), "{said}");
    assert!(
        said.contains(&format!("sgtune resume {}", f.display())),
        "{said}"
    );
    assert!(!said.contains("ETA"), "{said}");
    assert_eq!(debug_formatting(&said), Vec::<String>::new(), "{said}");
}

#[test]
fn status_of_a_finished_sweep() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("status-done");
    let spec_path = dir.path().join("spec.yaml");
    std::fs::write(&spec_path, spec(&tag, "  - {name: a}\n  - {name: b}\n")).expect("spec");
    let results = dir.path().join("results");
    let out = run_sweep(&spec_path, &results);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let f = only_results_folder(&results);
    let (code, said) = status(&f);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("status: finished, done at 20"), "{said}");
    assert!(said.contains("rows: 2 (2 ok, 0 failed)"), "{said}");
    assert!(said.contains("leader so far at concurrency 2: "), "{said}");
    assert!(!said.contains("resume"), "{said}");
    assert!(!said.contains("ETA"), "{said}");
    // A folder that is neither local nor Slurm's is a clear error.
    let (code, said) = status(dir.path());
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("has no state.json"), "{said}");
}
