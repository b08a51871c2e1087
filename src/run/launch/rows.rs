//! The rows: a record per measurement, its failure, a pre-flight attempt's standing, the
//! records of the loads that ran, and the summary file each row gets.

use super::super::session::StopReason;
use super::super::{Measurement, suffix};
use super::{LaunchState, Measured};
use crate::observe::diagnose;
use crate::observe::engine_log;
use crate::observe::sglang_log::{self, LogWindow};
use crate::plan::flags;
use crate::record::provenance::now_rfc3339;
use crate::record::store::StoreError;
use crate::record::summary::{self, Summary};
use crate::record::{Phase, ProbeResult, RunRecord, RunStatus};
use crate::server::command::LaunchCommand;
use crate::server::failure::{self, FailureKind, StartFailure};
use crate::server::supervise::{LogSink, StopOutcome};
use crate::tune::preflight;
use crate::tune::search::{self, ProbeRun};
use std::path::Path;

/// What a summary file holds besides its row.
#[derive(Default)]
pub(super) struct SummaryDetail<'a> {
    pub start_failure: Option<&'a StartFailure>,
    pub stop: Option<&'a StopOutcome>,
    pub warmup: (u64, u64),
    pub stopped_early: bool,
    pub window: Option<(usize, usize)>,
}

impl LaunchState<'_, '_> {
    pub(super) fn record(&self, m: Measurement, started_at: &str) -> RunRecord {
        RunRecord {
            status: RunStatus::Failed,
            phase: self.launch.phase,
            // A pre-flight attempt fails unless its burst shows otherwise.
            probe: (self.launch.phase == Phase::Preflight).then_some(ProbeResult::Fail),
            effective: self.effective.clone(),
            started_at: started_at.to_string(),
            ..RunRecord::of_run(self.run(), self.ctx.param_keys, m.point, m.repeat)
        }
    }

    /// Every measurement of this launch, failed for one reason (it never got to its load).
    pub(super) fn all_failed(&self, kind: FailureKind, message: &str) -> Vec<RunRecord> {
        self.launch
            .measurements
            .iter()
            .map(|m| fail(self.record(*m, &self.provenance.started_at), kind, message))
            .collect()
    }

    /// Every measurement of this launch, pruned, with the evidence as its message.
    pub(super) fn all_pruned(&self, evidence: &str) -> Vec<RunRecord> {
        self.launch
            .measurements
            .iter()
            .map(|m| {
                let mut r = self.record(*m, &self.provenance.started_at);
                r.status = RunStatus::Pruned;
                r.failure_message = Some(evidence.to_string());
                r.finished_at = now_rfc3339();
                r
            })
            .collect()
    }

    /// Keep a failed write as a note on every row of this launch.
    pub(super) fn keep(&mut self, what: &str, res: Result<(), StoreError>) {
        if let Err(e) = res {
            self.notes.push(format!("{what} could not be written: {e}"));
        }
    }

    /// Write one measurement's `summary[.suffix].json` (record::summary's one writer).
    pub(super) fn write_summary(
        &mut self,
        record: &RunRecord,
        cmd: &LaunchCommand,
        detail: SummaryDetail,
    ) {
        let sfx = suffix(self.ctx.spec, Measurement::of(record));
        let res = summary::write(
            self.dir,
            &sfx,
            &Summary {
                record: record.clone(),
                command: cmd.clone(),
                start_failure: detail.start_failure.cloned(),
                stop: detail.stop.cloned(),
                warmup_ok: detail.warmup.0,
                warmup_failed: detail.warmup.1,
                load_stopped_early: detail.stopped_early,
                log_window: detail.window,
                notes: self.notes.clone(),
            },
        );
        self.keep("a summary file", res);
    }
}

pub(super) fn fail(mut r: RunRecord, kind: FailureKind, message: &str) -> RunRecord {
    r.status = if kind == FailureKind::Interrupted {
        RunStatus::Interrupted
    } else {
        RunStatus::Failed
    };
    r.failure_kind = Some(kind);
    r.failure_message = Some(message.to_string());
    r.finished_at = now_rfc3339();
    r
}

/// The record of one measurement: the server's side from its log window, the verdict, and
/// the status; plus how the server died, when it did. Used for the rows, and during a search
/// to judge each probe by exactly what its row will say.
pub(super) fn record_of(
    st: &LaunchState<'_, '_>,
    l: &Measured,
    log_path: &Path,
    log: &LogSink,
    time_to_ready: Option<f64>,
) -> (RunRecord, Option<String>) {
    let w = &st.ctx.spec.workload;
    let mut record = st.record(l.m, &l.started_at);
    record.time_to_ready_s = time_to_ready;
    record.notes = st.notes.clone();
    // Streamed from the file: constant memory whatever the log's size.
    let scope = sglang_log::Scope {
        lines: l.window.map(|(start_line, end_line)| LogWindow {
            start_line,
            end_line,
        }),
        ..Default::default()
    };
    let server = match engine_log::summarize_file(log_path, scope, Some(st.run().engine)) {
        Ok(s) => s.summary(),
        Err(e) => {
            record
                .notes
                .push(format!("server.log could not be read back: {e}"));
            Default::default()
        }
    };
    let client = &l.session.client;
    // A request holds its shared prefix too (the capacity arithmetic once read 1,024 tokens ÷
    // 48 per request ≈ 21 where 304-token requests ran 3 at a time).
    let prefix = w.shared_prefix.as_ref().map_or(0, |sp| sp.prefix_tokens);
    // A session's request holds its whole history: the size the server counted, not the
    // nominal turn (one user message and one reply).
    let per_request = match (&w.sessions, client.mean_tokens_per_request()) {
        (Some(_), Some(mean)) => mean,
        _ => w.input_tokens + w.output_tokens + prefix,
    };
    // The log's server args name the radix cache off; the flags asked for name it where the
    // log prints no server args (`--log-level warning`).
    let radix_cache_off =
        st.run().param(flags::DISABLE_RADIX_CACHE) == Some(&flags::ParamValue::Bool(true));
    record.verdict = Some(diagnose::diagnose_launch(
        l.m.point.concurrency,
        per_request,
        Some(client),
        Some(&server),
        diagnose::Launch {
            metrics: l.metrics.as_ref(),
            radix_cache_off,
        },
    ));
    if let (Some(log_tput), Some(m)) = (
        server.gen_throughput_mean,
        l.metrics.as_ref().and_then(|m| m.gen_tput_from_counter),
    ) {
        if log_tput > 0.0 && ((m - log_tput) / log_tput).abs() > 0.25 {
            record.notes.push(format!(
                "server gen throughput disagrees: log Decode lines {log_tput:.1} tok/s, /metrics counter {m:.1} tok/s"
            ));
        }
    }
    record.metrics = l.metrics.clone();
    record.server = Some(server);
    record.client = Some(client.clone());
    let mut died = None;
    let record = match &l.session.stop {
        StopReason::Interrupted => fail(
            record,
            FailureKind::Interrupted,
            &format!(
                "interrupted during the load after {} completed requests",
                client.completed
            ),
        ),
        StopReason::ServerDied(how) => {
            died = Some(how.clone());
            match failure::oom_in(&log.tail()) {
                Some(oom) => {
                    let msg =
                        format!("the server died during the load ({how}) out of memory: {oom}");
                    fail(record, FailureKind::Oom, &msg)
                }
                None => {
                    let msg = format!(
                        "the server died during the load ({how}); last log line: {}",
                        log.last_line().trim()
                    );
                    fail(record, FailureKind::LoadFailed, &msg)
                }
            }
        }
        StopReason::Completed if client.completed == 0 => {
            let msg = format!(
                "no request succeeded ({} failed): {}",
                client.failed,
                client.first_error.as_deref().unwrap_or("")
            );
            fail(record, FailureKind::LoadFailed, &msg)
        }
        StopReason::Completed => {
            let mut record = record;
            record.status = RunStatus::Ok;
            record.finished_at = now_rfc3339();
            record
        }
    };
    (record, died)
}

/// A pre-flight attempt survived its burst when the server stayed up and did not fall into
/// a retraction storm; its row says which (`probe`: pass or fail).
pub(super) fn preflight_standing(st: &LaunchState<'_, '_>, mut record: RunRecord) -> RunRecord {
    let limit = st
        .ctx
        .spec
        .search
        .preflight
        .as_ref()
        .map_or(u64::MAX, |p| p.max_retractions);
    if let Some(n) = preflight::cut_but_alive(&record) {
        record.status = RunStatus::Ok;
        record.failure_kind = None;
        record.failure_message = None;
        record.notes.push(format!(
            "pre-flight burst cut at burst_s with {n} request(s) still in flight and none failed: survived"
        ));
    }
    if record.status == RunStatus::Ok {
        if let Some(msg) = preflight::storm(&record, limit) {
            record = fail(record, FailureKind::LoadFailed, &msg);
        }
    }
    record.probe = Some(if record.status == RunStatus::Ok {
        ProbeResult::Pass
    } else {
        ProbeResult::Fail
    });
    record
}

/// One record per load that ran: the server's side from its log window, the verdict, and the
/// status; then the load points a dead server never reached.
pub(super) fn record_loads(
    st: &mut LaunchState<'_, '_>,
    cmd: &LaunchCommand,
    log_path: &Path,
    log: &LogSink,
    stop: &StopOutcome,
    time_to_ready: Option<f64>,
    loads: Vec<Measured>,
) -> Vec<RunRecord> {
    let mut records = Vec::new();
    let mut died_at: Option<String> = None;
    // Each record once: the log window is read back from the file, so not twice per load.
    let built: Vec<(RunRecord, Option<String>)> = loads
        .iter()
        .map(|l| record_of(st, l, log_path, log, time_to_ready))
        .collect();
    // A search launch: every probe's standing over all its repeats (recorded before too).
    let probe_verdicts = match (
        &st.launch.search,
        &st.ctx.spec.search.max_load,
        &st.ctx.spec.objective,
    ) {
        (Some(recorded), Some(ml), Some(o)) => {
            let mut history = recorded.clone();
            history.extend(built.iter().map(|(r, _)| ProbeRun::of(r, ml.axis, &o.slo)));
            search::verdicts(ml, &o.slo, o.noise, &history)
        }
        _ => Vec::new(),
    };
    for (l, (mut record, died)) in loads.iter().zip(built) {
        if died.is_some() {
            died_at = died;
        }
        if st.launch.phase == Phase::Preflight {
            record = preflight_standing(st, record);
        }
        if let Some(v) = probe_verdicts.iter().find(|(load, _)| {
            st.ctx.spec.search.max_load.as_ref().is_some_and(|ml| {
                (search::load_of(ml.axis, l.m.point.concurrency, l.m.point.request_rate) - load)
                    .abs()
                    <= 1e-9 * load.abs().max(1.0)
            })
        }) {
            record.probe = v.1;
        }
        st.write_summary(
            &record,
            cmd,
            SummaryDetail {
                stop: Some(stop),
                warmup: (l.session.load.warmup_ok, l.session.load.warmup_failed),
                stopped_early: l.session.load.stopped,
                window: l.window,
                ..Default::default()
            },
        );
        records.push(record);
    }
    // Load points a dead server never reached are failures of this launch too.
    if let Some(how) = died_at {
        let made: Vec<Measurement> = loads.iter().map(|l| l.m).collect();
        for m in st.launch.measurements.iter().filter(|m| !made.contains(m)) {
            records.push(fail(
                st.record(*m, &now_rfc3339()),
                FailureKind::LoadFailed,
                &format!("not measured: the server died during an earlier load point ({how})"),
            ));
        }
    }
    records
}
