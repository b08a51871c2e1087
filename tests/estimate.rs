//! The time estimate against the fake SGLang with a known start-up (FAKE_SGLANG_STARTUP_S)
//! and a fixed measured window (`duration_s`): a 12-launch plan's estimate is within 20% of
//! the sweep's actual time, before the first launch (from the stated default set to the
//! fake's start-up) and after it (the ETA in state.json, from the measured launch).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test may panic: that is its failure

mod common;
use common::*;
use std::process::Stdio;
use std::time::{Duration, Instant};

const STARTUP_S: f64 = 2.0;
const WINDOW_S: f64 = 2.0;

fn spec(tag: &str) -> String {
    format!(
        r#"name: estimate
server:
  command: [python3, "{fake}"]
  model_path: /nonexistent-model
  env:
    SGTUNE_TEST_TAG: {tag}
    FAKE_SGLANG_STARTUP_S: "{STARTUP_S}"
  args:
    served_model_name: fake
  ready_timeout_s: 60
  stop_timeout_s: 5
sweep:
  max_running_requests: [8, 9, 10, 11, 12, 13]
repeats: 2
workload:
  concurrency: 2
  duration_s: {WINDOW_S}
  warmup_requests: 1
  input_tokens: 4
  output_tokens: 4
  vocab_size: 100
estimate: {{startup_s: {STARTUP_S}, stop_s: 0.5}}
"#,
        fake = fake_server()
    )
}

/// Seconds of `human`'s output: `42 s`, `4m 10s`, `1h 05m`.
fn secs(h: &str) -> f64 {
    let h = h.trim();
    if let Some(s) = h.strip_suffix(" s") {
        return s.parse().unwrap();
    }
    if let Some((m, s)) = h.split_once("m ") {
        return m.parse::<f64>().unwrap() * 60.0 + s.trim_end_matches('s').parse::<f64>().unwrap();
    }
    let (hh, m) = h.split_once("h ").unwrap();
    hh.parse::<f64>().unwrap() * 3600.0 + m.trim_end_matches('m').parse::<f64>().unwrap() * 60.0
}

fn expected_of(line: &str) -> f64 {
    let after = line.split("expected ").nth(1).expect("an expected time");
    secs(after.split(" (").next().unwrap())
}

fn eta_secs(state: &serde_json::Value) -> Option<f64> {
    let eta = chrono::DateTime::parse_from_rfc3339(state["eta"].as_str()?).ok()?;
    Some((eta.with_timezone(&chrono::Utc) - chrono::Utc::now()).num_milliseconds() as f64 / 1e3)
}

#[test]
fn a_12_launch_plan_is_estimated_within_20_percent_before_and_after_the_first_launch() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("estimate");
    let spec_path = dir.path().join("spec.yaml");
    std::fs::write(&spec_path, spec(&tag)).expect("spec");
    let results = dir.path().join("results");

    let v = common::run(
        sgtune()
            .arg("validate")
            .arg(&spec_path)
            .arg("--results-dir")
            .arg(&results),
    );
    let said = text(&v.stdout);
    let line = said
        .lines()
        .find(|l| l.starts_with("estimate:"))
        .unwrap_or_else(|| panic!("no estimate: {said}"));
    assert!(line.contains("12 launch(es), 12 load point(s)"), "{line}");
    assert!(line.contains("estimate.startup_s"), "{line}");
    let before = expected_of(line);

    let t0 = Instant::now();
    let mut child = sgtune()
        .arg("run")
        .arg(&spec_path)
        .arg("--results-dir")
        .arg(&results)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // After the first launch: the ETA in state.json, and when it was read.
    let mut after = None;
    let found = wait_until(Duration::from_secs(120), || {
        let Some(f) = std::fs::read_dir(&results)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok())
        else {
            return false;
        };
        let Ok(t) = std::fs::read_to_string(f.path().join("state.json")) else {
            return false;
        };
        let Ok(s) = serde_json::from_str::<serde_json::Value>(&t) else {
            return false;
        };
        if s["launches_done"] == 1 {
            after = eta_secs(&s).map(|e| (e, Instant::now()));
        }
        after.is_some()
    });
    assert!(found, "never saw the first launch end");
    let (eta_left, read_at) = after.unwrap();
    assert!(
        wait_until(Duration::from_secs(300), || matches!(
            child.try_wait(),
            Ok(Some(_))
        )),
        "the sweep did not end"
    );
    let end = Instant::now();
    let out = child.wait_with_output().expect("output");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let actual = (end - t0).as_secs_f64();
    let actual_left = (end - read_at).as_secs_f64();
    eprintln!(
        "estimate before: {before:.1} s, actual {actual:.1} s ({:+.1}%); after the first launch: ETA in {eta_left:.1} s, actual {actual_left:.1} s ({:+.1}%)",
        (before / actual - 1.0) * 100.0,
        (eta_left / actual_left - 1.0) * 100.0
    );
    assert!(
        (before - actual).abs() <= 0.2 * actual,
        "before: {before} s vs actual {actual} s"
    );
    assert!(
        (eta_left - actual_left).abs() <= 0.2 * actual_left,
        "after the first launch: {eta_left} s vs actual {actual_left} s"
    );
    assert!(
        wait_until(Duration::from_secs(10), || procs_with_tag(&tag).is_empty()),
        "servers left"
    );
}

/// `validate --budget` (and the spec's `budget:`) says whether the plan fits before anything
/// starts: the 12-launch plan's expected time is about 12 × (2 + 0.5) + 12 × 2 = 54 s.
#[test]
fn validate_says_whether_the_plan_fits_the_deadline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("estimate-fit");
    let spec_path = dir.path().join("s.yaml");
    std::fs::write(&spec_path, spec(&tag)).expect("spec");
    let results = dir.path().join("results");
    let validate = |extra: &[&str]| {
        let out = common::run(
            sgtune()
                .arg("validate")
                .arg(&spec_path)
                .arg("--results-dir")
                .arg(&results)
                .args(extra),
        );
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let line = |out: &str| {
        out.lines()
            .find(|l| l.starts_with("deadline: "))
            .unwrap_or_else(|| panic!("no deadline line in:\n{out}"))
            .to_string()
    };
    let fits = validate(&["--budget", "8h"]);
    assert!(line(&fits).contains("fits, even the worst case"), "{fits}");
    // 30 s, less the lead (stop_timeout_s 5 + the interrupt grace + 2: 17 s): 13 s usable, for
    // a plan of 54 s whose launches take 4.5 s each: 2 of 12.
    let tight = validate(&["--budget", "30s"]);
    let l = line(&tight);
    assert!(l.contains("does NOT fit: expected 54 s"), "{l}");
    assert!(l.contains("about 2 of 12 launch(es) fit"), "{l}");
    // Without a deadline, no such line; the spec's `budget:` is read like the flag.
    assert!(!validate(&[]).contains("deadline: "));
    std::fs::write(&spec_path, format!("{}budget: 8h\n", spec(&tag))).expect("spec");
    assert!(line(&validate(&[])).contains("fits, even the worst case"));
    // A value that does not read is bad input, as for `run`.
    let out = common::run(
        sgtune()
            .arg("validate")
            .arg(&spec_path)
            .args(["--deadline", "25:00"]),
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        !results.exists(),
        "validate starts nothing and writes nothing"
    );
    assert!(procs_with_tag(&tag).is_empty());
}
