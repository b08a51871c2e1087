//! Failures before the first load: the port, the program, readiness, the control plane; and
//! the stop.

use super::*;
use crate::record::RunStatus;
use crate::server::failure::FailureKind;

/// Two load points, two repeats on one server: four measurements.
const FOUR: &str = "  concurrency: [2, 4]\n";
const REPEATS: &str = "repeats: 2\nreuse_server: true\n";

const SUMMARIES: [&str; 4] = [
    "summary.c2.r1.json",
    "summary.c2.r2.json",
    "summary.c4.r1.json",
    "summary.c4.r2.json",
];

fn with(files: &[&str], more: &[&str]) -> Vec<String> {
    let mut v = names(files);
    v.extend(names(more));
    v.sort();
    v
}

/// Every row failed with `kind`, one per measurement, each with the same message.
fn all_failed(ran: &Ran, kind: FailureKind) -> String {
    let rows = ran.records();
    assert_eq!(rows.len(), ran.launch.measurements.len());
    let made: Vec<_> = rows.iter().map(crate::run::Measurement::of).collect();
    assert_eq!(made, ran.launch.measurements);
    for r in rows {
        assert_eq!(r.status, RunStatus::Failed);
        assert_eq!(r.failure_kind, Some(kind));
        assert!(r.client.is_none() && r.verdict.is_none());
        assert!(!r.finished_at.is_empty());
        assert_eq!(message(r), message(&rows[0]));
    }
    message(&rows[0]).to_string()
}

#[test]
fn no_free_port_fails_every_measurement_before_any_file_but_the_summaries() {
    let spec = spec(FOUR, REPEATS);
    let ran = launch(
        &spec,
        Phase::Measure,
        Script {
            free_port: None,
            ..Default::default()
        },
    );
    assert_eq!(ran.launch.measurements.len(), 4);
    let msg = all_failed(&ran, FailureKind::LaunchError);
    assert_eq!(
        msg,
        format!("no free port on {}: all ports taken", spec.server.host)
    );
    assert_eq!(ran.files(), names(&SUMMARIES));
    assert!(ran.calls.is_empty(), "{:?}", ran.calls);
    // The summary keeps the command, with the placeholder for the port it never got.
    let s = ran.summary("summary.c2.r1.json");
    assert!(
        s.command
            .args
            .iter()
            .any(|a| a == crate::server::command::AUTO_PORT),
        "{:?}",
        s.command
    );
    assert!(s.stop.is_none() && s.start_failure.is_none());
}

#[test]
fn a_fixed_port_in_use_fails_every_measurement_after_config_and_command() {
    let spec = spec_in("  port: 31000\n", FOUR, REPEATS);
    let ran = launch(
        &spec,
        Phase::Measure,
        Script {
            port_taken: true,
            ..Default::default()
        },
    );
    let msg = all_failed(&ran, FailureKind::LaunchError);
    assert!(msg.starts_with("port 31000 on "), "{msg}");
    assert!(msg.contains("already in use"), "{msg}");
    assert_eq!(
        ran.files(),
        with(&SUMMARIES, &["command.txt", "config.json"])
    );
    assert!(ran.calls.is_empty());
    let cmd = std::fs::read_to_string(ran.launch_dir().join("command.txt")).unwrap();
    assert!(cmd.contains("31000"), "{cmd}");
    assert_eq!(ran.out.provenance.command, cmd.trim_end());
}

#[test]
fn a_program_that_cannot_start_fails_every_measurement_as_launch_error() {
    let ran = launch(
        &spec(FOUR, REPEATS),
        Phase::Measure,
        Script {
            spawn_error: Some("No such file or directory"),
            ..Default::default()
        },
    );
    let msg = all_failed(&ran, FailureKind::LaunchError);
    assert_eq!(
        msg,
        "cannot start `python3`: No such file or directory (check server.command)"
    );
    assert_eq!(
        ran.files(),
        with(&SUMMARIES, &["command.txt", "config.json", "server.log"])
    );
    // Never started, so never stopped.
    assert_eq!(ran.calls, names(&["start"]));
    assert!(ran.groups_left.is_empty());
}

/// Each start-up failure class: the log, the exit, and the kind and message rows get.
#[test]
fn each_start_failure_class_fails_every_measurement_with_its_kind() {
    let cases: [(&str, Option<i32>, FailureKind, &str); 5] = [
        (
            "RuntimeError: Rank 0 scheduler died during initialization (exit code: -9). If exit code is -9 (SIGKILL), a common cause is the OS OOM killer.",
            Some(1),
            FailureKind::Oom,
            "OOM killer",
        ),
        (
            "sglang serve: error: unrecognized arguments: --no-such-flag 1",
            Some(2),
            FailureKind::BadFlag,
            "unrecognized arguments: --no-such-flag 1",
        ),
        (
            "ValueError: CPU FP8 KV cache requires Intel AMX support.",
            Some(1),
            FailureKind::StartupError,
            "ValueError: CPU FP8 KV cache requires Intel AMX support.",
        ),
        (
            "[t] Memory pool end",
            Some(3),
            FailureKind::Crashed,
            "exit code 3",
        ),
        (
            "[t] loading weights",
            None,
            FailureKind::ReadyTimeout,
            "not ready in time; last log line: [t] loading weights",
        ),
    ];
    for (line, exit, kind, says) in cases {
        let ran = launch(
            &spec(FOUR, REPEATS),
            Phase::Measure,
            Script {
                start_lines: vec![line.into()],
                ready: Ready::Fails(exit),
                ..Default::default()
            },
        );
        let msg = all_failed(&ran, kind);
        assert!(msg.contains(says), "{kind:?}: {msg}");
        assert_eq!(
            ran.files(),
            with(&SUMMARIES, &["command.txt", "config.json", "server.log"]),
            "{kind:?}"
        );
        // Stopped all the same, and no longer in the second signal's list.
        assert_eq!(ran.calls, names(&["start", "stop"]), "{kind:?}");
        assert!(ran.groups_left.is_empty());
        let s = ran.summary("summary.c4.r2.json");
        let f = s.start_failure.expect("the start failure is kept");
        assert_eq!((f.kind, f.message.as_str()), (kind, msg.as_str()));
        assert_eq!(s.stop.map(|s| s.how), Some(StopHow::Terminated));
        let log = std::fs::read_to_string(ran.launch_dir().join("server.log")).unwrap();
        assert_eq!(log, format!("{line}\n"));
    }
}

#[test]
fn interrupted_while_starting_records_one_interrupted_row() {
    let ran = launch(
        &spec(FOUR, REPEATS),
        Phase::Measure,
        Script {
            ready: Ready::Interrupted,
            ..Default::default()
        },
    );
    let rows = ran.records();
    assert_eq!(rows.len(), 1, "only the first measurement is recorded");
    assert_eq!(rows[0].status, RunStatus::Interrupted);
    assert_eq!(rows[0].failure_kind, Some(FailureKind::Interrupted));
    assert_eq!(
        message(&rows[0]),
        "interrupted while the server was starting"
    );
    assert_eq!(
        crate::run::Measurement::of(&rows[0]),
        ran.launch.measurements[0]
    );
    assert_eq!(
        ran.files(),
        names(&[
            "command.txt",
            "config.json",
            "server.log",
            "summary.c2.r1.json"
        ])
    );
    assert_eq!(ran.calls, names(&["start", "stop"]));
    let s = ran.summary("summary.c2.r1.json");
    assert!(s.start_failure.is_none() && s.stop.is_some());
}

/// A gap, kept as it is: when the control-plane client cannot be built, the launch measures
/// nothing and records no row (the measurements stay for `resume`); only a note is made, on
/// rows that never exist.
#[test]
fn a_control_client_that_cannot_be_built_fails_every_measurement() {
    let ran = launch(
        &spec(FOUR, REPEATS),
        Phase::Measure,
        Script {
            control: Err("cannot build an HTTP client: builder error".into()),
            ..Default::default()
        },
    );
    let msg = all_failed(&ran, FailureKind::LaunchError);
    assert_eq!(msg, "cannot build an HTTP client: builder error");
    assert_eq!(
        ran.files(),
        with(&SUMMARIES, &["command.txt", "config.json", "server.log"])
    );
    // Started, so stopped, and nothing asked of it in between.
    assert_eq!(ran.calls, names(&["start", "stop"]));
}

#[test]
fn a_stop_that_needed_kill_is_kept_and_what_it_left_are_notes() {
    let ran = launch(
        &spec("  concurrency: 2\n", ""),
        Phase::Measure,
        Script {
            stop: StopOutcome {
                how: StopHow::Killed,
                secs: 3.2,
                group_left: true,
                port_free: false,
                exit: Some("killed by signal 9 (SIGKILL)".into()),
            },
            ..Default::default()
        },
    );
    let rows = ran.records();
    assert_eq!(rows.len(), 1);
    // The measurement stands: a slow stop is a note, not a failure.
    assert_eq!(rows[0].status, RunStatus::Ok);
    let left = [
        "a process of the server's group (pgid 4242) survived SIGKILL",
        "port 30000 still in use after the server stopped",
    ];
    for n in left {
        assert!(rows[0].notes.iter().any(|x| x == n), "{:?}", rows[0].notes);
        assert!(ran.warnings.iter().any(|x| x == n), "{:?}", ran.warnings);
    }
    let s = ran.summary("summary.json");
    assert_eq!(s.stop.as_ref().map(|s| s.how), Some(StopHow::Killed));
    assert!(s.notes.iter().any(|x| x == left[0]));
    assert!(ran.groups_left.is_empty());
}

#[test]
fn a_server_log_that_cannot_be_written_is_a_note_on_every_row() {
    let ran = launch(
        &spec(FOUR, REPEATS),
        Phase::Measure,
        Script {
            log_to: Some("/dev/full".into()),
            ..Default::default()
        },
    );
    let rows = ran.records();
    assert_eq!(rows.len(), 4);
    for r in rows {
        assert!(
            r.notes
                .iter()
                .any(|n| n.starts_with("server.log is incomplete: ")),
            "{:?}",
            r.notes
        );
        // record_of reads server.log back from the launch folder, which has none.
        assert!(
            r.notes
                .iter()
                .any(|n| n.starts_with("server.log could not be read back: ")),
            "{:?}",
            r.notes
        );
    }
}

/// Only a fixed port is checked for being held; a port just picked free by the kernel is not
/// checked again.
#[test]
fn a_picked_free_port_is_not_checked_again() {
    let ran = launch(
        &spec("  concurrency: 2\n", ""),
        Phase::Measure,
        Script {
            port_taken: true,
            ..Default::default()
        },
    );
    assert_eq!(ran.records().len(), 1);
    assert_eq!(ran.records()[0].status, RunStatus::Ok);
    assert_eq!(ran.calls.first().map(String::as_str), Some("start"));
}
