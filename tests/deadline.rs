//! A sweep against a deadline, on the fake SGLang: each configuration's throughput is set by
//! construction (`fake_token_s`, the fake's decode step), so CPU load cannot change the
//! decision. An unbudgeted run gives the reference decision and the plan's time; a run whose
//! deadline fits about 60% of that stops every server before the deadline (watched in the
//! process table), exits 3 and says in decision.md what was not measured; `resume` then
//! finishes the rest and decides as the unbudgeted run did. Timings are never asserted
//! tightly: the deadline is sized from the reference run on this machine.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test may panic: that is its failure

mod common;
use common::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// Four configurations, two repeats each on their own server: 8 launches. Output tok/s is about
/// concurrency / fake_token_s: fast 200, mid 100, slow 50, slower 25.
fn spec(tag: &str, extra: &str) -> String {
    spec_with(tag, "1", FOUR, 2, extra)
}

const FOUR: &str = "  - {name: slow, fake_token_s: 0.04}
  - {name: fast, fake_token_s: 0.01}
  - {name: mid, fake_token_s: 0.02}
  - {name: slower, fake_token_s: 0.08}
";

fn spec_with(tag: &str, startup_s: &str, configs: &str, repeats: u64, extra: &str) -> String {
    format!(
        r#"name: deadline
server:
  command: [python3, "{fake}"]
  model_path: /nonexistent-model
  env:
    SGTUNE_TEST_TAG: {tag}
    FAKE_SGLANG_STARTUP_S: "{startup_s}"
  args:
    served_model_name: fake
  ready_timeout_s: 300
  stop_timeout_s: 3
configs:
{configs}repeats: {repeats}
workload:
  concurrency: 2
  duration_s: 2
  warmup_requests: 1
  input_tokens: 4
  output_tokens: 8
  vocab_size: 100
estimate: {{startup_s: 1, stop_s: 1}}
objective: {{maximize: output_tok_s}}
{extra}"#,
        fake = fake_server()
    )
}

/// The winner at each load point, from decision.json.
fn winners(dir: &Path) -> Vec<String> {
    let d: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("decision.json")).expect("decision.json"),
    )
    .expect("json");
    d["points"]
        .as_array()
        .expect("points")
        .iter()
        .map(|p| p["winner"].as_str().unwrap_or("(none)").to_string())
        .collect()
}

fn rfc3339(t: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[test]
fn a_deadline_stops_in_time_and_resume_reaches_the_unbudgeted_decision() {
    let dir = tempfile::tempdir().expect("tempdir");

    // The reference: the whole plan, no deadline.
    let tag = unique_tag("deadline-ref");
    let spec_path = dir.path().join("ref.yaml");
    std::fs::write(&spec_path, spec(&tag, "")).expect("spec");
    let t0 = Instant::now();
    let out = run_sweep(&spec_path, &dir.path().join("ref"));
    let plan_s = t0.elapsed().as_secs_f64();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let reference = only_results_folder(&dir.path().join("ref"));
    let reference_winners = winners(&reference);
    assert_eq!(reference_winners, ["fast"], "pace set by construction");
    assert_eq!(read_rows(&reference.join("results.csv")).len(), 8);

    // The same sweep against a deadline that fits about 60% of it: the lead (stop_timeout_s 3
    // + the 10 s grace + 2 s) plus 60% of the plan's time on this machine, now.
    let tag = unique_tag("deadline-cut");
    let spec_path = dir.path().join("cut.yaml");
    std::fs::write(&spec_path, spec(&tag, "")).expect("spec");
    let lead_s = 3.0 + 10.0 + 2.0;
    let deadline = SystemTime::now() + Duration::from_secs_f64(lead_s + 0.6 * plan_s);
    let results = dir.path().join("cut");
    let started = SystemTime::now();
    let (out, seen) = watching(&tag, || {
        common::run(
            sgtune()
                .arg("run")
                .arg(&spec_path)
                .arg("--results-dir")
                .arg(&results)
                .arg("--deadline")
                .arg(rfc3339(deadline))
                .stdin(Stdio::null()),
        )
    });
    let ended = SystemTime::now();
    let stderr = text(&out.stderr);
    let secs = |t: SystemTime| t.duration_since(started).unwrap_or_default().as_secs_f64();
    eprintln!(
        "plan {plan_s:.1} s unbudgeted; deadline at +{:.1} s; sgtune ended at +{:.1} s; servers (pid: first seen, last seen): {:?}",
        secs(deadline),
        secs(ended),
        seen.iter()
            .map(|(p, (a, b))| format!("{p}: +{:.1} s, +{:.1} s", secs(*a), secs(*b)))
            .collect::<Vec<_>>()
    );
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(!seen.is_empty(), "no server was ever seen: {stderr}");
    for (pid, (_, last)) in &seen {
        assert!(
            *last < deadline,
            "server {pid} still ran {:.1} s after the deadline: {stderr}",
            last.duration_since(deadline)
                .unwrap_or_default()
                .as_secs_f64()
        );
    }
    assert!(procs_with_tag(&tag).is_empty(), "servers left behind");
    let cut = only_results_folder(&results);
    let rows = read_rows(&cut.join("results.csv"));
    let ok = rows.iter().filter(|r| r["status"] == "ok").count();
    assert!(ok < 8, "the deadline should leave work: {ok} ok rows");
    let md = std::fs::read_to_string(cut.join("decision.md")).expect("decision.md");
    assert!(md.contains("## Not measured before the deadline"), "{md}");
    let listed = md
        .lines()
        .skip_while(|l| !l.starts_with("## Not measured"))
        .filter(|l| l.starts_with("- "))
        .count();
    assert!(
        listed >= 1 && listed <= 8 - ok,
        "{listed} listed, {ok} ok: {md}"
    );
    assert!(
        stderr.contains("not measured before the deadline"),
        "{stderr}"
    );
    let outcome: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(cut.join("outcome.json")).expect("outcome.json"),
    )
    .expect("json");
    assert_eq!(outcome["outcome"], "deadline", "{outcome}");
    assert_eq!(outcome["exit_code"], 3, "{outcome}");
    assert_eq!(
        outcome["not_measured"].as_array().map(Vec::len),
        Some(listed),
        "{outcome}"
    );
    let status = common::run(sgtune().arg("status").arg(&cut));
    let said = text(&status.stdout);
    assert!(said.contains("finished, deadline at"), "{said}");
    assert!(said.contains("not measured before the deadline"), "{said}");
    assert!(said.contains("sgtune resume"), "{said}");

    // resume, without a deadline: the rest, and the unbudgeted run's decision.
    let out = common::run(sgtune().arg("resume").arg(&cut).stdin(Stdio::null()));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows = read_rows(&cut.join("results.csv"));
    assert_eq!(
        rows.iter().filter(|r| r["status"] == "ok").count(),
        8,
        "{rows:?}"
    );
    let resumed = winners(&cut);
    eprintln!(
        "decision: unbudgeted {reference_winners:?}, after the deadline and resume {resumed:?}"
    );
    assert_eq!(resumed, reference_winners);
    let md = std::fs::read_to_string(cut.join("decision.md")).expect("decision.md");
    assert!(!md.contains("Not measured before the deadline"), "{md}");
}

#[test]
fn bad_deadlines_and_budgets_launch_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("deadline-bad");
    let spec_path = dir.path().join("s.yaml");
    std::fs::write(&spec_path, spec(&tag, "")).expect("spec");
    let results = dir.path().join("results");
    for (flag, value, says) in [
        ("--budget", "8x", "not a duration"),
        ("--budget", "0s", "more than 0"),
        ("--deadline", "25:00", "is not a time"),
        ("--deadline", "2020-01-01T07:00:00Z", "already past"),
    ] {
        let out = common::run(
            sgtune()
                .arg("run")
                .arg(&spec_path)
                .arg("--results-dir")
                .arg(&results)
                .arg(flag)
                .arg(value),
        );
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {err}");
        assert!(err.contains(says), "{flag} {value}: {err}");
    }
    let bad_key = dir.path().join("k.yaml");
    std::fs::write(&bad_key, spec(&tag, "budget: soon\n")).expect("spec");
    let out = run_sweep(&bad_key, &results);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("not a duration"), "{err}");
    assert!(err.contains("k.yaml:"), "the key's place: {err}");
    assert!(!results.exists(), "nothing may be written or launched");
    assert!(procs_with_tag(&tag).is_empty());
}

/// Every server pid of the sweep tagged `tag`, first and last seen in the process table, while
/// `f` runs.
fn watching<T>(tag: &str, f: impl FnOnce() -> T) -> (T, BTreeMap<i32, (SystemTime, SystemTime)>) {
    let seen: Arc<Mutex<BTreeMap<i32, (SystemTime, SystemTime)>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (seen, stop, tag) = (seen.clone(), stop.clone(), tag.to_string());
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                let now = SystemTime::now();
                for pid in procs_with_tag(&tag) {
                    let mut s = seen.lock().unwrap();
                    s.entry(pid).or_insert((now, now)).1 = now;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    let out = f();
    stop.store(true, Ordering::SeqCst);
    watcher.join().expect("watcher");
    let seen = seen.lock().unwrap().clone();
    (out, seen)
}

#[test]
fn a_launch_running_at_the_cutoff_is_stopped_before_the_deadline() {
    // The estimate says a launch takes 1 s to start and 2 s to measure; this one takes 10 s
    // to start. Admitted with 8 s to the cut-off (sgtune's own start-up may take up to 5 of
    // them), it is still starting there: cancelled, recorded `interrupted`, its server
    // stopped before the deadline.
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("deadline-guard");
    let spec_path = dir.path().join("s.yaml");
    std::fs::write(
        &spec_path,
        spec_with(&tag, "10", "  - {name: only, fake_token_s: 0.01}\n", 1, ""),
    )
    .expect("spec");
    let results = dir.path().join("results");
    let hook = dir.path().join("hook.txt");
    let deadline = SystemTime::now() + Duration::from_secs_f64(15.0 + 8.0);
    let (out, seen) = watching(&tag, || {
        common::run(
            sgtune()
                .arg("run")
                .arg(&spec_path)
                .arg("--results-dir")
                .arg(&results)
                .arg("--deadline")
                .arg(rfc3339(deadline))
                .arg("--on-finish")
                .arg(format!(
                    "echo \"$SGTUNE_OUTCOME $SGTUNE_EXIT_CODE $SGTUNE_NOT_MEASURED\" >> {}",
                    hook.display()
                ))
                .stdin(Stdio::null()),
        )
    });
    let stderr = text(&out.stderr);
    let told = std::fs::read_to_string(&hook).unwrap_or_default();
    assert_eq!(
        told, "deadline 3 only: c2 repeat 1\n",
        "the hook, once: {stderr}"
    );
    let before = |t: &SystemTime| match deadline.duration_since(*t) {
        Ok(d) => d.as_secs_f64(),
        Err(e) => -e.duration().as_secs_f64(),
    };
    eprintln!(
        "servers (pid: last seen, seconds before the deadline): {:?}",
        seen.iter()
            .map(|(p, (_, b))| format!("{p}: {:.1} s", before(b)))
            .collect::<Vec<_>>()
    );
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("the deadline"), "{stderr}");
    assert!(!seen.is_empty(), "no server was ever seen: {stderr}");
    for (pid, (_, last)) in &seen {
        assert!(
            *last < deadline,
            "server {pid} ran past the deadline: {stderr}"
        );
    }
    let f = only_results_folder(&results);
    let rows = read_rows(&f.join("results.csv"));
    assert_eq!(rows.len(), 1, "{rows:?} {stderr}");
    assert_eq!(rows[0]["status"], "interrupted", "{rows:?}");
    let md = std::fs::read_to_string(f.join("decision.md")).expect("decision.md");
    assert!(md.contains("- only: c2 repeat 1"), "{md}");
    let out = common::run(sgtune().arg("resume").arg(&f).stdin(Stdio::null()));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(winners(&f), ["only"]);
}

/// The memory pre-flight is held to the deadline like any launch: its attempts stop starting
/// when one no longer fits (each takes at least its 2 s start-up and 1 s burst, against 9 s
/// usable, so at most 3 of the bisection's 6 run), decision.md says the pre-flight is not
/// finished, and `resume` continues its bisection from the recorded attempts to the value an
/// unbudgeted pre-flight finds (0.88 by construction: tests/search.rs).
#[test]
fn a_preflight_cut_by_the_deadline_is_said_and_resume_finishes_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("deadline-preflight");
    let spec_path = dir.path().join("pf.yaml");
    std::fs::write(
        &spec_path,
        format!(
            r#"name: pf
server:
  command: [python3, "{fake}"]
  model_path: /nonexistent-model
  env:
    SGTUNE_TEST_TAG: {tag}
    FAKE_SGLANG_STARTUP_S: "2"
  args:
    served_model_name: fake
    fake_max_mfs_launch: 0.93
    fake_max_mfs_burst: 0.88
  ready_timeout_s: 60
  stop_timeout_s: 3
sweep:
  mem_fraction_static: [preflight]
workload:
  vocab_size: 100
  concurrency: 4
  requests: 8
  input_tokens: 10
  output_tokens: 20
  warmup_requests: 0
objective:
  maximize: output_tok_s
search:
  preflight:
    mem_fraction_static: {{from: 0.80, to: 0.95, resolution: 0.01}}
    burst_s: 1
estimate: {{startup_s: 2, stop_s: 1}}
"#,
            fake = fake_server()
        ),
    )
    .expect("spec");
    let results = dir.path().join("results");
    // The lead is stop_timeout_s 3 + the 10 s grace + 2 s: 9 s usable.
    let out = common::run(
        sgtune()
            .arg("run")
            .arg(&spec_path)
            .arg("--results-dir")
            .arg(&results)
            .args(["--budget", "24s"]),
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let folder = only_results_folder(&results);
    let rows = read_rows(&folder.join("results.csv"));
    assert!(!rows.is_empty() && rows.len() <= 3, "{rows:?}");
    assert!(rows.iter().all(|r| r["phase"] == "preflight"), "{rows:?}");
    let md = std::fs::read_to_string(folder.join("decision.md")).unwrap();
    assert!(
        md.contains(&format!(
            "the pre-flight: not finished after {} attempt(s)",
            rows.len()
        )),
        "{md}"
    );
    assert!(procs_with_tag(&tag).is_empty(), "every server stopped");

    let out = common::run(sgtune().arg("resume").arg(&folder));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let pf: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("preflight.json")).unwrap())
            .unwrap();
    assert_eq!(pf["found"], 0.88, "{pf}");
    let rows = read_rows(&folder.join("results.csv"));
    let main: Vec<_> = rows.iter().filter(|r| r["phase"] == "measure").collect();
    assert_eq!(main.len(), 1, "{rows:?}");
    assert_eq!(main[0]["param_mem_fraction_static"], "0.88");
    assert!(procs_with_tag(&tag).is_empty());
}
