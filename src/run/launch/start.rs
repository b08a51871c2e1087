//! Launching: the port, the command and its files (`prepare`), the server started and waited
//! for (`start_and_measure`), and stopped (`shut_down`).

use super::super::Measurement;
use super::rows::{SummaryDetail, fail, record_loads};
use super::seam::{Launcher, Server};
use super::{LaunchState, Measured, measure};
use crate::plan::spec::LoadPoint;
use crate::record::RunRecord;
use crate::record::store;
use crate::report::events::RunEvent;
use crate::server::command::{self, LaunchCommand};
use crate::server::failure::FailureKind;
use crate::server::supervise::{ReadyOutcome, StopOutcome};
use std::time::Duration;

/// Pick the port, build the command, write config.json and command.txt. A port that cannot
/// be had fails every measurement of the launch.
#[allow(clippy::result_large_err)]
pub(super) fn prepare(
    launcher: &impl Launcher,
    st: &mut LaunchState<'_, '_>,
) -> Result<(LaunchCommand, u16), (Vec<RunRecord>, LaunchCommand)> {
    let spec = st.ctx.spec;
    let slot = st.ctx.slot.as_ref();
    let fixed_port = slot.and_then(|s| s.port).or(spec.server.port);
    let port = match fixed_port {
        Some(p) => p,
        None => match launcher.free_port(&spec.server.host) {
            Ok(p) => p,
            Err(e) => {
                let msg = format!("no free port on {}: {e}", spec.server.host);
                let cmd = command::build(&spec.server, st.run(), None);
                return Err((st.all_failed(FailureKind::LaunchError, &msg), cmd));
            }
        },
    };
    let mut cmd = command::build(&spec.server, st.run(), Some(port));
    if let Some(gpus) = slot.and_then(|s| s.gpus.as_ref()) {
        command::set_env(&mut cmd, "CUDA_VISIBLE_DEVICES", &gpus.join(","));
    }
    st.provenance.command = cmd.display();
    st.provenance.env = cmd.env.clone();
    let config = serde_json::json!({
        "run": st.run(), "measurements": st.launch.measurements, "workload": spec.workload,
        "server": {
            "host": spec.server.host, "port": port,
            "ready_timeout_s": spec.server.ready_timeout_s, "stop_timeout_s": spec.server.stop_timeout_s,
        },
        "slot": slot,
    });
    let res = store::write_json(&st.dir.join(store::CONFIG_JSON), &config);
    st.keep(store::CONFIG_JSON, res);
    let res = crate::record::command::write(st.dir, &cmd);
    st.keep(store::COMMAND_TXT, res);
    if fixed_port.is_some() && !launcher.port_free(&spec.server.host, port) {
        let msg = format!(
            "port {port} on {} is already in use (another server still running?): free it, or leave server.port unset to get a free port per run",
            spec.server.host
        );
        return Err((st.all_failed(FailureKind::LaunchError, &msg), cmd));
    }
    Ok((cmd, port))
}

/// Launch, wait until ready, measure, stop, and turn it all into records.
pub(super) async fn start_and_measure<L: Launcher>(
    launcher: &L,
    st: &mut LaunchState<'_, '_>,
    cmd: &LaunchCommand,
    port: u16,
    emit: &mut dyn FnMut(RunEvent<'_>),
) -> Vec<RunRecord> {
    let ctx = st.ctx;
    let spec = ctx.spec;
    let log_path = st.dir.join(store::SERVER_LOG);
    let mut server = match launcher.start(
        cmd,
        &spec.server.host,
        port,
        &log_path,
        st.run().engine.ready_line(),
    ) {
        Ok(s) => s,
        Err(e) => {
            let msg = format!("cannot start `{}`: {e} (check server.command)", cmd.program);
            let records = st.all_failed(FailureKind::LaunchError, &msg);
            for r in &records {
                st.write_summary(r, cmd, SummaryDetail::default());
            }
            return records;
        }
    };
    ctx.groups.add(server.pid());
    let ready = server
        .wait_ready(
            Duration::from_secs(spec.server.ready_timeout_s),
            ctx.cancel,
            |elapsed_s, last_line| {
                emit(RunEvent::Waiting {
                    elapsed_s,
                    last_line,
                })
            },
        )
        .await;
    let mut early: Vec<RunRecord> = Vec::new();
    let mut start_failure = None;
    let mut time_to_ready = None;
    let mut loads: Vec<Measured> = Vec::new();
    match ready {
        ReadyOutcome::Ready { secs } => {
            time_to_ready = Some(secs);
            emit(RunEvent::Ready { secs });
            match measure::measure(st, &mut server, emit).await {
                Ok(measured) => loads = measured,
                // Nothing could be asked of the server: every measurement is a failed row
                // (a run that was not measured is still a row).
                Err(e) => early = st.all_failed(FailureKind::LaunchError, &e),
            }
        }
        ReadyOutcome::Failed(f) => {
            early = st.all_failed(f.kind, &f.message);
            start_failure = Some(f);
        }
        ReadyOutcome::Interrupted => {
            let first = st
                .launch
                .measurements
                .first()
                .copied()
                .unwrap_or(Measurement {
                    repeat: 1,
                    point: LoadPoint {
                        concurrency: spec.workload.concurrency,
                        request_rate: spec.workload.request_rate,
                    },
                });
            early.push(fail(
                st.record(first, &st.provenance.started_at),
                FailureKind::Interrupted,
                "interrupted while the server was starting",
            ));
        }
    }
    let stop = shut_down(st, &mut server, emit).await;
    if loads.is_empty() {
        for r in &mut early {
            r.notes = st.notes.clone();
        }
        for r in &early {
            st.write_summary(
                r,
                cmd,
                SummaryDetail {
                    start_failure: start_failure.as_ref(),
                    stop: Some(&stop),
                    ..Default::default()
                },
            );
        }
        return early;
    }
    let log = server.log().clone();
    record_loads(st, cmd, &log_path, &log, &stop, time_to_ready, loads)
}

/// Stop the server and note anything it left behind.
async fn shut_down(
    st: &mut LaunchState<'_, '_>,
    server: &mut impl Server,
    emit: &mut dyn FnMut(RunEvent<'_>),
) -> StopOutcome {
    emit(RunEvent::Stopping);
    let stop = server
        .stop(Duration::from_secs(st.ctx.spec.server.stop_timeout_s))
        .await;
    st.ctx.groups.remove(server.pid());
    if stop.group_left {
        let m = format!(
            "a process of the server's group (pgid {}) survived SIGKILL",
            server.pid()
        );
        emit(RunEvent::Warning { message: &m });
        st.notes.push(m);
    }
    if !stop.port_free {
        let m = format!(
            "port {} still in use after the server stopped",
            server.port()
        );
        emit(RunEvent::Warning { message: &m });
        st.notes.push(m);
    }
    if let Some(e) = server.log().write_error() {
        st.notes.push(format!("server.log is incomplete: {e}"));
    }
    stop
}
