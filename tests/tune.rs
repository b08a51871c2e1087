//! The guided tune (`tune:`) against the fake SGLang: every step the strategy takes is a step
//! line and a row, the budget holds, a resume continues the same path, decision.md shows the
//! path, and a bad `tune:` section is refused at its line before anything starts. The
//! assertions hold for any strategy `tune::guide::next` implements: only "the start is
//! launched first" and "the strategy's stop ends the tune" are assumed of it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test may panic: that is its failure

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// A tune of the fake's KV pool (a request of 30 + 20 tokens reserves 50, so a pool of 100
/// runs 2 at once and queues the rest: KV-cache bound at concurrency 8).
fn spec(tag: &str, tune: &str, token_s: &str) -> String {
    format!(
        r#"name: tune
server:
  command: [python3, "{fake}"]
  model_path: /nonexistent-model
  env:
    SGTUNE_TEST_TAG: {tag}
    FAKE_SGLANG_STARTUP_S: "0.2"
    FAKE_SGLANG_TOKEN_S: "{token_s}"
  args:
    served_model_name: fake
  ready_timeout_s: 20
  stop_timeout_s: 3
workload:
  vocab_size: 100
  concurrency: 8
  requests: 16
  input_tokens: 30
  output_tokens: 20
  warmup_requests: 0
objective:
  maximize: output_tok_s
  slo: {{ttft_ms_p99: 250}}
{tune}"#,
        fake = fake_server()
    )
}

const KV_TUNE: &str = "tune:\n  knobs:\n    max_total_tokens: [100, 400, 1600]\n    max_running_requests: [4, 8]\n  start: {max_total_tokens: 100, max_running_requests: 8}\n  launches: 3\n";

fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, body).expect("write spec");
    p
}

/// The step lines `tune: step N: <why> → <name>`, as (N, name).
fn steps(log: &str) -> Vec<(usize, String)> {
    log.lines()
        .filter_map(|l| l.strip_prefix("tune: step "))
        .filter_map(|rest| {
            let (n, tail) = rest.split_once(": ")?;
            // A batch's step: `step 4 (2 at once): ...`.
            let n = n.split(" (").next()?;
            let name = tail.rsplit_once(" → ")?.1;
            let name = name.split(" (recorded").next()?;
            Some((n.parse().ok()?, name.to_string()))
        })
        .collect()
}

/// The configurations results.csv holds, in the order of their first row.
fn configs(rows: &[std::collections::HashMap<String, String>]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in rows {
        if !out.contains(&r["run_name"]) {
            out.push(r["run_name"].clone());
        }
    }
    out
}

fn no_leftovers(tag: &str) {
    assert!(
        wait_until(Duration::from_secs(10), || procs_with_tag(tag).is_empty()),
        "fake servers left running: {:?}",
        procs_with_tag(tag)
    );
}

#[test]
fn each_step_is_a_line_and_a_row_within_the_budget_and_decision_md_shows_the_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("tune");
    let spec_path = write(dir.path(), "s.yaml", &spec(&tag, KV_TUNE, "0.005"));
    let results = dir.path().join("results");
    let out = run_sweep(&spec_path, &results);
    let log = text(&out.stderr) + &text(&out.stdout);
    assert!(
        matches!(out.status.code(), Some(0) | Some(1)),
        "the tune ran to its end: {log}"
    );
    no_leftovers(&tag);
    let folder = only_results_folder(&results);
    let rows = read_rows(&folder.join("results.csv"));
    let lines = steps(&log);
    // The start first, numbered from 1; one line per step; every step a row, in order.
    assert_eq!(
        lines.first().map(|(n, s)| (*n, s.as_str())),
        Some((1, "mtt100_mrr8"))
    );
    let numbers: Vec<usize> = lines.iter().map(|(n, _)| *n).collect();
    assert_eq!(numbers, (1..=lines.len()).collect::<Vec<_>>(), "{log}");
    let names: Vec<String> = lines.iter().map(|(_, s)| s.clone()).collect();
    assert_eq!(configs(&rows), names, "{log}");
    assert!(names.len() <= 3, "the budget is 3 launches: {names:?}");
    // The evidence chooses the second step: a full pool with a queue is kv_cache_bound, so
    // the strategy gives it more KV (the next pool size), and its line says why.
    assert_eq!(
        names.get(1).map(String::as_str),
        Some("mtt400_mrr8"),
        "{log}"
    );
    let second = log
        .lines()
        .find(|l| l.starts_with("tune: step 2: "))
        .unwrap_or_default();
    assert!(
        second.contains("kv_cache_bound (usage ")
            && second.contains("more KV: max_total_tokens 100 → 400"),
        "{second}"
    );
    assert!(
        log.lines()
            .filter(|l| l.starts_with("tune: stop: "))
            .count()
            == 1,
        "one stop line: {log}"
    );
    // The grid's columns: one per knob, with each row's value.
    assert_eq!(rows[0]["param_max_total_tokens"], "100");
    assert_eq!(rows[0]["param_max_running_requests"], "8");
    assert_eq!(rows[0]["verdict"], "kv_cache_bound", "a pool of 100 tokens");
    let md = std::fs::read_to_string(folder.join("decision.md")).expect("decision.md");
    let path = md
        .split("## Tune path")
        .nth(1)
        .expect("a Tune path section");
    for (i, name) in names.iter().enumerate() {
        assert!(
            path.contains(&format!("{}. `{name}`: ", i + 1)),
            "step {} in: {path}",
            i + 1
        );
    }
    assert!(path.contains("kv_cache_bound"), "the verdict: {path}");
    assert!(path.contains("\nStop: "), "{path}");
    // report.html draws the path: each step's objective and the best eligible so far.
    let html = std::fs::read_to_string(folder.join("report.html")).expect("report.html");
    assert!(
        html.contains("<section id=\"tune\">")
            && html.contains("Tune path: output_tok_s at each step")
            && html.contains("best eligible so far"),
        "the tune's chart in report.html"
    );
}

#[test]
fn a_budget_of_one_launch_runs_the_start_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("tune1");
    let one = KV_TUNE.replace("launches: 3", "launches: 1");
    let spec_path = write(dir.path(), "s.yaml", &spec(&tag, &one, "0.002"));
    let results = dir.path().join("results");
    let out = run_sweep(&spec_path, &results);
    let log = text(&out.stderr);
    no_leftovers(&tag);
    let rows = read_rows(&only_results_folder(&results).join("results.csv"));
    assert_eq!(configs(&rows), ["mtt100_mrr8"], "{log}");
    assert_eq!(steps(&log).len(), 1, "{log}");
    assert!(log.contains("tune: stop: "), "{log}");
}

#[test]
fn a_start_that_fails_to_start_is_a_classified_row_and_the_tune_goes_on_or_stops() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("tunefail");
    // The fake rejects an FP8 KV cache at start-up, as SGLang does on a CPU.
    let tune = "tune:\n  knobs:\n    kv_cache_dtype: [fp8_e5m2, auto]\n    max_total_tokens: [400, 1600]\n  launches: 2\n";
    let spec_path = write(dir.path(), "s.yaml", &spec(&tag, tune, "0.002"));
    let results = dir.path().join("results");
    let out = run_sweep(&spec_path, &results);
    let log = text(&out.stderr);
    no_leftovers(&tag);
    let rows = read_rows(&only_results_folder(&results).join("results.csv"));
    assert_eq!(rows[0]["run_name"], "kv-fp8_e5m2_mtt400", "{log}");
    assert_eq!(rows[0]["status"], "failed");
    assert!(
        !rows[0]["failure_kind"].is_empty(),
        "classified: {:?}",
        rows[0]
    );
    let names: Vec<String> = steps(&log).into_iter().map(|(_, s)| s).collect();
    assert_eq!(configs(&rows), names, "{log}");
    assert!(log.contains("tune: stop: "), "{log}");
    assert_ne!(
        out.status.code(),
        Some(0),
        "a failed launch is a failed run"
    );
}

/// Interrupted while its first step runs, the tune's resume launches the same step again and
/// goes on along the same path: the lines before the interrupt are the first lines after it.
#[test]
fn resume_after_an_interrupt_continues_the_same_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("tuneresume");
    // Slow enough to be caught mid-load: 16 requests at 2 at once, 20 steps of 50 ms each.
    let spec_path = write(dir.path(), "s.yaml", &spec(&tag, KV_TUNE, "0.05"));
    let results = dir.path().join("results");
    let log_path = dir.path().join("first.log");
    let mut child = sgtune()
        .arg("run")
        .arg(&spec_path)
        .arg("--results-dir")
        .arg(&results)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log_path).expect("log"))
        .spawn()
        .expect("spawn");
    let loading = wait_until(Duration::from_secs(30), || {
        std::fs::read_dir(&results)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok())
            .is_some_and(|e| e.path().join("runs/mtt100_mrr8/requests.csv").exists())
    });
    assert!(loading, "the start never loaded");
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(130));
    no_leftovers(&tag);
    let first = steps(&std::fs::read_to_string(&log_path).expect("log"));
    assert_eq!(first.len(), 1, "interrupted in step 1: {first:?}");
    let folder = only_results_folder(&results);
    let out = run(sgtune().arg("resume").arg(&folder));
    let log = text(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(0) | Some(1)),
        "the resume ran to its end: {log}"
    );
    no_leftovers(&tag);
    let after = steps(&log);
    assert_eq!(after.first(), first.first(), "the same path: {log}");
    let rows = read_rows(&folder.join("results.csv"));
    let names: Vec<String> = after.iter().map(|(_, s)| s.clone()).collect();
    assert_eq!(configs(&rows), names, "{log}");
    assert!(rows.iter().all(|r| r["status"] != "interrupted"));
    let superseded = read_rows(&folder.join("results.superseded.csv"));
    assert_eq!(superseded[0]["status"], "interrupted");
    assert!(folder.join("runs/mtt100_mrr8.attempt-1").exists());
    // A second resume of a finished tune replays every step from the rows and launches none.
    let again = run(sgtune().arg("resume").arg(&folder));
    let log2 = text(&again.stderr);
    assert_eq!(steps(&log2), after, "{log2}");
    assert_eq!(read_rows(&folder.join("results.csv")).len(), rows.len());
}

/// With two slots the tune proposes two launches at once after the start (`--parallel 2`),
/// records that width, and a `kill -9` in the middle of a batch, then `resume` (here without
/// `--parallel`), follows the same path: the same batches from the rows, the killed batch's
/// unfinished launch run again, and no configuration's row twice.
#[test]
fn a_tune_on_two_slots_runs_batches_and_resume_after_kill_9_follows_the_same_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("tunebatch");
    let five = KV_TUNE.replace("launches: 3\n", "launches: 5\n  confirm: 1\n");
    let spec_path = write(dir.path(), "s.yaml", &spec(&tag, &five, "0.05"));
    let results = dir.path().join("results");
    let log_path = dir.path().join("first.log");
    let mut child = sgtune()
        .arg("run")
        .arg(&spec_path)
        .arg("--results-dir")
        .arg(&results)
        .arg("--parallel")
        .arg("2")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log_path).expect("log"))
        .spawn()
        .expect("spawn");
    // Two launches of the second batch under load at once: kill sgtune there.
    let loading = |n: usize| {
        std::fs::read_dir(&results)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok())
            .and_then(|e| std::fs::read_dir(e.path().join("runs")).ok())
            .is_some_and(|runs| {
                runs.flatten()
                    .filter(|r| r.file_name() != "mtt100_mrr8")
                    .filter(|r| r.path().join("requests.csv").exists())
                    .count()
                    >= n
            })
    };
    assert!(
        wait_until(Duration::from_secs(60), || loading(2)),
        "the second batch never ran two at once: {}",
        std::fs::read_to_string(&log_path).unwrap_or_default()
    );
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGKILL);
    }
    child.wait().expect("wait");
    no_leftovers(&tag);
    let first_log = std::fs::read_to_string(&log_path).expect("log");
    assert!(first_log.contains("(2 at once): "), "{first_log}");
    let first = steps(&first_log);
    let folder = only_results_folder(&results);
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(
        manifest["tune_slots"], 2,
        "the width is recorded for a resume"
    );
    let out = run(sgtune().arg("resume").arg(&folder));
    let log = text(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(0) | Some(1)),
        "the resume ran to its end: {log}"
    );
    no_leftovers(&tag);
    let after = steps(&log);
    assert!(
        after.len() >= first.len() && after[..first.len()] == first[..],
        "the same path, the killed batch's steps first: {first:?} then {after:?}\n{log}"
    );
    assert!(after.len() <= 5, "within the budget: {after:?}");
    // Each batch after the start is two at once, in the resume as in the first run.
    assert!(log.contains("(2 at once): "), "{log}");
    let rows = read_rows(&folder.join("results.csv"));
    let mut keys: Vec<(String, String)> = rows
        .iter()
        .map(|r| (r["run_name"].clone(), r["repeat"].clone()))
        .collect();
    let n = keys.len();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), n, "no row twice: {rows:?}");
    let mut names: Vec<String> = Vec::new();
    for (_, s) in &after {
        if !names.contains(s) {
            names.push(s.clone());
        }
    }
    let mut measured = configs(&rows);
    measured.sort();
    names.sort();
    assert_eq!(measured, names, "{log}");
    // A second resume of the finished tune replays every step and launches none.
    let again = run(sgtune().arg("resume").arg(&folder));
    assert_eq!(steps(&text(&again.stderr)), after);
    assert_eq!(read_rows(&folder.join("results.csv")).len(), rows.len());
    // decision.md's path is replayed in the batches the tune ran: every step, and its stop.
    let md = std::fs::read_to_string(folder.join("decision.md")).expect("decision.md");
    assert!(md.contains(&format!("; {} launched.", after.len())), "{md}");
    assert!(md.contains("\nStop: "), "{md}");
}

/// The tune's last launch confirms its leader: the same configuration again, on a fresh server,
/// as its next repeat (its own folder `<name>.r2`, a row with `repeat` 2); the decision pools
/// both; a resume of the finished tune replays the confirmation from its row and launches none.
#[test]
fn the_confirmation_relaunches_the_leader_as_its_next_repeat_and_resume_replays_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("tuneconfirm");
    let confirmed = KV_TUNE.replace("launches: 3\n", "launches: 4\n  confirm: 1\n");
    let spec_path = write(dir.path(), "s.yaml", &spec(&tag, &confirmed, "0.002"));
    let results = dir.path().join("results");
    let out = run_sweep(&spec_path, &results);
    let log = text(&out.stderr);
    assert!(matches!(out.status.code(), Some(0) | Some(1)), "{log}");
    no_leftovers(&tag);
    let folder = only_results_folder(&results);
    let rows = read_rows(&folder.join("results.csv"));
    let lines = steps(&log);
    assert_eq!(lines.len(), 4, "{log}");
    let last = log
        .lines()
        .find(|l| l.starts_with("tune: step 4: "))
        .unwrap_or_default();
    assert!(last.contains(": confirm the leader "), "{last}");
    let leader = &lines[3].1;
    // Three configurations explored, the leader launched twice: repeats 1 and 2.
    assert_eq!(configs(&rows).len(), 3, "{log}");
    let mut repeats: Vec<&str> = rows
        .iter()
        .filter(|r| &r["run_name"] == leader)
        .map(|r| r["repeat"].as_str())
        .collect();
    repeats.sort_unstable();
    assert_eq!(repeats, vec!["1", "2"], "{rows:?}");
    assert!(folder.join(format!("runs/{leader}.r2")).is_dir());
    let d: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("decision.json")).unwrap())
            .unwrap();
    // The decision pools the leader's two launches. Whether it still leads is the machine's
    // speed: two of the space's configurations run all 8 requests at once alike, so the
    // confirmation may find them within noise (a busy machine did): it leads or ties.
    let entry = d["points"][0]["configurations"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["run_name"] == leader.as_str()))
        .cloned()
        .unwrap_or_default();
    assert_eq!(entry["repeats"], 2, "{d}");
    assert!(
        ["winner", "leader", "within_noise"].contains(&entry["standing"].as_str().unwrap_or("")),
        "{d}"
    );
    let md = std::fs::read_to_string(folder.join("decision.md")).expect("decision.md");
    assert!(md.contains(&format!("4. `{leader}`: ")), "{md}");
    assert!(md.contains("Chosen: confirm the leader"), "{md}");
    let html = std::fs::read_to_string(folder.join("report.html")).expect("report.html");
    assert!(
        html.contains(&format!(
            "again to confirm it (its value pools its launches): 4 `{leader}`"
        )),
        "the chart labels the confirmation"
    );
    // A resume of the finished tune: the same four steps from the rows, no launch.
    let again = run(sgtune().arg("resume").arg(&folder));
    let log2 = text(&again.stderr);
    assert_eq!(steps(&log2), lines, "{log2}");
    assert_eq!(read_rows(&folder.join("results.csv")).len(), rows.len());
}

/// `reproduce --decision` reads a tune's folder: it re-checks the leader against the runner-up
/// when the tune measured two eligible configurations, and says plainly when it did not.
#[test]
fn reproduce_decision_reads_a_tunes_folder() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("tunerepro");
    let roomy = KV_TUNE.replace("max_total_tokens: 100,", "max_total_tokens: 1600,");
    let spec_path = write(dir.path(), "s.yaml", &spec(&tag, &roomy, "0.002"));
    let results = dir.path().join("results");
    let out = run_sweep(&spec_path, &results);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let folder = only_results_folder(&results);
    let rows = read_rows(&folder.join("results.csv"));
    let out = run(sgtune()
        .arg("reproduce")
        .arg(&folder)
        .arg("--decision")
        .arg("--results-dir")
        .arg(dir.path().join("recheck")));
    let err = text(&out.stderr);
    no_leftovers(&tag);
    if configs(&rows).len() < 2 {
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("fewer than two eligible"), "{err}");
    } else {
        assert!(!err.contains("not in the spec's plan"), "{err}");
        assert!(
            text(&out.stdout).contains("re-checking the decision"),
            "{err}"
        );
    }
}

/// A bad `tune:` launches nothing: one error at its file:line, exit 2, no results folder.
#[test]
fn a_bad_tune_section_is_refused_at_its_line() {
    let cases: &[(&str, usize, &str)] = &[
        (
            "tune:\n  knobs:\n    max_total_tokens: [100, 400]\n    mem_fraction_statik: [0.8, 0.9]\n  launches: 3\n",
            4,
            "did you mean `mem_fraction_static`",
        ),
        (
            "tune:\n  knobs:\n    max_total_tokens: [100, 400]\n    mem_fraction_static: {from: 0.1, to: 0.9, step: 0.0001}\n  launches: 3\n",
            4,
            "more than 1000",
        ),
        (
            "tune:\n  knobs:\n    max_total_tokens: [100, 400]\n  start:\n    max_total_tokens: 800\n  launches: 3\n",
            5,
            "max_total_tokens = 800",
        ),
        (
            "tune:\n  knobs:\n    max_total_tokens: {from: 400, to: 100, step: 100}\n  launches: 3\n",
            3,
            "at most `to`",
        ),
    ];
    for (tune, line, says) in cases {
        let body = spec("never", tune, "0.002");
        // `line` counts from the `tune:` line, 1.
        let at = body.lines().position(|l| l == "tune:").unwrap() + line;
        rejected(&body, at, says);
    }
    // Beside what a tune cannot run with, placed on that key.
    let prune = spec("never", KV_TUNE, "0.002").replace(
        "  maximize: output_tok_s\n",
        "  maximize: output_tok_s\n  prune: true\n",
    );
    let at = prune
        .lines()
        .position(|l| l.contains("prune: true"))
        .unwrap()
        + 1;
    rejected(&prune, at, "objective.prune does not apply to a tune");
    let grid = spec("never", KV_TUNE, "0.002") + "sweep:\n  max_total_tokens: [100, 200]\n";
    let at = grid.lines().position(|l| l == "tune:").unwrap() + 1;
    rejected(&grid, at, "cannot run beside `sweep:`");
}

fn rejected(body: &str, line: usize, says: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec_path = write(dir.path(), "bad.yaml", body);
    let results = dir.path().join("results");
    let out = run_sweep(&spec_path, &results);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{says}: {err}");
    let place = format!("{}:{line}:", spec_path.display());
    assert!(err.contains(&place), "expected {place} in: {err}");
    assert!(err.contains(says), "expected {says:?} in: {err}");
    assert!(!results.exists(), "a results folder was created");
}

#[test]
fn validate_prints_the_space_the_grid_and_the_bound_and_slurm_accepts_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec_path = write(dir.path(), "s.yaml", &spec("never", KV_TUNE, "0.002"));
    let out = run(sgtune().arg("validate").arg(&spec_path));
    let o = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(o.contains("the space holds 6 configuration(s)"), "{o}");
    assert!(o.contains("its whole grid would be 6 launch(es)"), "{o}");
    assert!(o.contains("at most 3 step(s)"), "{o}");
    assert!(o.contains("no launch kept to confirm the leader"), "{o}");
    let confirmed = KV_TUNE.replace("launches: 3\n", "launches: 8\n");
    let spec_path = write(dir.path(), "c.yaml", &spec("never", &confirmed, "0.002"));
    let o = text(&run(sgtune().arg("validate").arg(&spec_path)).stdout);
    assert!(
        o.contains("tune: 2 of those steps kept to confirm the leader at the end (tune.confirm)"),
        "{o}"
    );
    assert!(o.contains("starting at mtt100_mrr8"), "{o}");
    let out = run(sgtune()
        .args(["validate", "--executor", "slurm"])
        .arg(&spec_path));
    // A tune runs on Slurm in waves (tests/slurm_executor.rs): validate accepts it.
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// `--budget` stops a tune as it stops a sweep: exit 3, the decision from what was measured,
/// and decision.md's Tune path says the tune did not finish (resume continues it).
#[test]
fn a_budget_in_time_stops_the_tune_at_the_deadline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("tunebudget");
    let spec_path = write(dir.path(), "s.yaml", &spec(&tag, KV_TUNE, "0.05"));
    let results = dir.path().join("results");
    let out = run(sgtune()
        .arg("run")
        .arg(&spec_path)
        .arg("--results-dir")
        .arg(&results)
        .args(["--budget", "5s"]));
    let log = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{log}");
    no_leftovers(&tag);
    let folder = only_results_folder(&results);
    let ok: Vec<String> = read_rows(&folder.join("results.csv"))
        .into_iter()
        .filter(|r| r["status"] == "ok")
        .map(|r| r["run_name"].clone())
        .collect();
    assert!(ok.is_empty(), "nothing fits in 5 s: {ok:?}");
    let md = std::fs::read_to_string(folder.join("decision.md")).expect("decision.md");
    let path = md
        .split("## Tune path")
        .nth(1)
        .expect("a Tune path section");
    assert!(path.contains("Not finished"), "{path}");
}
