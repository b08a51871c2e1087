//! The load points: a launch that measures everything, and each way a load ends badly.

use super::*;
use crate::record::RunStatus;
use crate::server::failure::FailureKind;

const TWO: &str = "  concurrency: [2, 4]\n";
const REPEATS: &str = "repeats: 2\nreuse_server: true\n";

fn died(how: &str, lines: &[&str]) -> Load {
    Load {
        completed: 3,
        stop: StopReason::ServerDied(how.into()),
        lines: lines.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

#[test]
fn a_launch_that_measures_every_point_records_ok_rows_and_their_files() {
    let spec = spec(TWO, REPEATS);
    let ran = launch(
        &spec,
        Phase::Measure,
        Script {
            server_info: Some(serde_json::json!({"mem_fraction_static": 0.8})),
            loads: vec![
                Load {
                    scrapes: vec![scrape(0.0, 0.0), scrape(2.0, 200.0)],
                    ..Default::default()
                },
                Load::default(),
                Load::default(),
                Load::default(),
            ],
            ..Default::default()
        },
    );
    let rows = ran.records();
    assert_eq!(rows.len(), 4);
    let made: Vec<_> = rows.iter().map(crate::run::Measurement::of).collect();
    assert_eq!(made, ran.launch.measurements, "in the launch's order");
    for r in rows {
        assert_eq!(r.status, RunStatus::Ok, "{:?}", r.failure_message);
        assert!(r.failure_kind.is_none() && r.failure_message.is_none());
        assert_eq!(r.time_to_ready_s, Some(1.5));
        assert_eq!(r.client.as_ref().map(|c| c.completed), Some(10));
        assert!(r.verdict.is_some() && r.effective.is_some());
        // The window's Decode line, and only it, is the server's side of this row.
        let server = r.server.as_ref().unwrap();
        assert_eq!(server.gen_throughput_mean, Some(100.0));
        assert_eq!(
            r.params,
            vec![("mem_fraction_static".into(), r.params[0].1.clone())]
        );
        assert!(r.params[0].1.is_some());
    }
    // /metrics only for the first point: its counter rate (100 tok/s) agrees with the log.
    assert!(rows[0].metrics.is_some() && rows[1].metrics.is_none());
    assert!(!rows[0].notes.iter().any(|n| n.contains("disagrees")));
    let mut files = names(&[
        "command.txt",
        "config.json",
        "effective_args.json",
        "metrics.c2.r1.csv",
        "server.log",
        "server_info.json",
    ]);
    for p in ["c2.r1", "c2.r2", "c4.r1", "c4.r2"] {
        files.push(format!("requests.{p}.csv"));
        files.push(format!("summary.{p}.json"));
    }
    files.sort();
    assert_eq!(ran.files(), files);
    // A flush between points (three for four), each point its own seed, the served model.
    let drives: Vec<&String> = ran
        .calls
        .iter()
        .filter(|c| c.starts_with("drive"))
        .collect();
    assert_eq!(drives.len(), 4);
    assert!(drives.iter().all(|d| d.contains(" served seed ")));
    let seeds: std::collections::BTreeSet<_> =
        drives.iter().map(|d| d.rsplit(' ').next()).collect();
    assert_eq!(seeds.len(), 4, "{drives:?}");
    let flushes = ran.calls.iter().filter(|c| c.starts_with("flush")).count();
    assert_eq!(flushes, 3);
    assert_eq!(ran.calls.first().map(String::as_str), Some("start"));
    assert_eq!(ran.calls.last().map(String::as_str), Some("stop"));
    assert_eq!(
        ran.out.provenance.effective,
        Some(serde_json::json!({"mem_fraction_static": 0.8}))
    );
    // The manifest's entry names the launch and when it ran.
    let p = &ran.out.provenance;
    assert_eq!(
        (p.run_name.as_str(), p.run_id.as_str()),
        ("a", ran.launch.run.id.as_str())
    );
    assert!(!p.run_id.is_empty());
    assert!(
        !p.started_at.is_empty() && p.finished_at >= p.started_at,
        "{p:?}"
    );
    let s = ran.summary("summary.c2.r1.json");
    let (a, b) = s.log_window.unwrap();
    assert_eq!(b - a, 4, "the window holds the load's four log lines");
    assert_eq!(s.record, rows[0]);
}

#[test]
fn a_server_that_dies_mid_load_fails_its_point_and_every_point_after() {
    let ran_spec = spec(TWO, REPEATS);
    let ran = launch(
        &ran_spec,
        Phase::Measure,
        Script {
            loads: vec![Load::default(), died("exit code 1", &["worker lost"])],
            ..Default::default()
        },
    );
    let rows = ran.records();
    assert_eq!(rows.len(), 4, "repeats x load points, measured or not");
    assert_eq!(rows[0].status, RunStatus::Ok);
    assert_eq!(rows[1].failure_kind, Some(FailureKind::LoadFailed));
    assert_eq!(
        message(&rows[1]),
        "the server died during the load (exit code 1); last log line: worker lost"
    );
    assert!(rows[1].client.is_some(), "what it measured is kept");
    for r in &rows[2..] {
        assert_eq!(r.status, RunStatus::Failed);
        assert_eq!(r.failure_kind, Some(FailureKind::LoadFailed));
        assert_eq!(
            message(r),
            "not measured: the server died during an earlier load point (exit code 1)"
        );
        assert!(r.client.is_none());
    }
    let made: Vec<_> = rows.iter().map(crate::run::Measurement::of).collect();
    assert_eq!(made, ran.launch.measurements);
    // Two drives, one flush between them; the unmeasured points have no files.
    assert_eq!(
        ran.calls.iter().filter(|c| c.starts_with("drive")).count(),
        2
    );
    let files = ran.files();
    let sfx = |m| crate::run::suffix(&ran_spec, m);
    for m in &ran.launch.measurements[..2] {
        assert!(
            files.contains(&format!("summary{}.json", sfx(*m))),
            "{files:?}"
        );
        assert!(
            files.contains(&format!("requests{}.csv", sfx(*m))),
            "{files:?}"
        );
    }
    for m in &ran.launch.measurements[2..] {
        assert!(
            !files.contains(&format!("summary{}.json", sfx(*m))),
            "{files:?}"
        );
    }
}

#[test]
fn a_server_that_dies_of_memory_mid_load_is_an_oom_row() {
    let oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB";
    let ran = launch(
        &spec("  concurrency: 2\n", ""),
        Phase::Measure,
        Script {
            loads: vec![died("killed by signal 9 (SIGKILL)", &[oom, "later line"])],
            ..Default::default()
        },
    );
    let rows = ran.records();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].failure_kind, Some(FailureKind::Oom));
    let msg = message(&rows[0]);
    assert!(
        msg.starts_with(&format!(
            "the server died during the load (killed by signal 9 (SIGKILL)) out of memory: {oom} ("
        )),
        "{msg}"
    );
    let s = ran.summary("summary.json");
    assert!(s.load_stopped_early);
}

#[test]
fn a_server_gone_right_after_its_load_fails_the_point() {
    let ran = launch(
        &spec(TWO, ""),
        Phase::Measure,
        Script {
            loads: vec![Load {
                completed: 4,
                failed: 6,
                connect_errors: 6,
                ..Default::default()
            }],
            exited: Some("exit code 137".into()),
            ..Default::default()
        },
    );
    let rows = ran.records();
    assert_eq!(rows.len(), 2);
    assert!(
        message(&rows[0]).starts_with("the server died during the load (exit code 137);"),
        "{}",
        message(&rows[0])
    );
    assert_eq!(
        message(&rows[1]),
        "not measured: the server died during an earlier load point (exit code 137)"
    );
    assert_eq!(
        ran.calls.iter().filter(|c| c.starts_with("drive")).count(),
        1
    );
}

#[test]
fn zero_successful_requests_fail_the_point_and_the_next_is_still_measured() {
    let ran = launch(
        &spec(TWO, ""),
        Phase::Measure,
        Script {
            loads: vec![Load {
                completed: 0,
                failed: 10,
                first_error: Some("HTTP 500: boom".into()),
                ..Default::default()
            }],
            ..Default::default()
        },
    );
    let rows = ran.records();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].status, RunStatus::Failed);
    assert_eq!(rows[0].failure_kind, Some(FailureKind::LoadFailed));
    assert_eq!(
        message(&rows[0]),
        "no request succeeded (10 failed): HTTP 500: boom"
    );
    assert_eq!(rows[1].status, RunStatus::Ok);
    assert_eq!(
        ran.files(),
        names(&[
            "command.txt",
            "config.json",
            "effective_args.json",
            "requests.c2.csv",
            "requests.c4.csv",
            "server.log",
            "summary.c2.json",
            "summary.c4.json",
        ])
    );
}

#[test]
fn an_http_client_that_cannot_be_built_fails_each_point_without_driving_it() {
    let ran = launch(
        &spec(TWO, ""),
        Phase::Measure,
        Script {
            base_url: "not a url".into(),
            ..Default::default()
        },
    );
    let rows = ran.records();
    assert_eq!(rows.len(), 2);
    for r in rows {
        assert_eq!(r.failure_kind, Some(FailureKind::LoadFailed));
        assert!(
            message(r)
                .starts_with("no request succeeded (0 failed): cannot build the HTTP client: "),
            "{}",
            message(r)
        );
    }
    assert!(!ran.calls.iter().any(|c| c.starts_with("drive")));
    assert!(!ran.files().iter().any(|f| f.starts_with("requests")));
}

/// The user's interrupt and the deadline's guard both cancel the sweep's token: the point in
/// progress is interrupted and the points after it are not recorded (left for `resume`).
#[test]
fn a_cancel_during_a_load_interrupts_its_point_and_records_no_more() {
    let ran = launch(
        &spec(TWO, REPEATS),
        Phase::Measure,
        Script {
            loads: vec![Load {
                completed: 3,
                stop: StopReason::Interrupted,
                cancel: true,
                ..Default::default()
            }],
            ..Default::default()
        },
    );
    assert!(ran.cancelled);
    let rows = ran.records();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].status, RunStatus::Interrupted);
    assert_eq!(rows[0].failure_kind, Some(FailureKind::Interrupted));
    assert_eq!(
        message(&rows[0]),
        "interrupted during the load after 3 completed requests"
    );
    assert_eq!(ran.calls.last().map(String::as_str), Some("stop"));
    assert!(ran.groups_left.is_empty());
}

#[test]
fn a_cancel_as_a_load_completes_keeps_its_row_and_starts_no_other() {
    let ran = launch(
        &spec(TWO, REPEATS),
        Phase::Measure,
        Script {
            loads: vec![Load {
                cancel: true,
                ..Default::default()
            }],
            ..Default::default()
        },
    );
    let rows = ran.records();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].status, RunStatus::Ok);
    assert!(ran.calls[1].starts_with("drive c2 "), "{:?}", ran.calls);
    assert_eq!(ran.calls.len(), 3, "{:?}", ran.calls);
    assert!(!ran.calls.iter().any(|c| c.starts_with("flush")));
}
