//! The sweep loop. One run is self-contained (`run_one`: one configuration in, one record
//! out, everything it needs in its own folder) so the same unit can later run as one task of
//! a Slurm job array. The runner owns cancellation and never prints: it emits RunEvents.

use crate::cancel::Cancel;
use crate::diagnose::{self, Verdict};
use crate::events::RunEvent;
use crate::expand::{RunConfig, RunPlan};
use crate::load::driver::{self, LoadEvent, LoadTarget, Phase, RequestSample};
use crate::metrics::{self, ClientSummary};
use crate::record::{RunRecord, RunStatus};
use crate::server::command::{self, LaunchCommand};
use crate::server::failure::{FailureKind, StartFailure};
use crate::server::supervise::{self, ReadyOutcome, ServerHandle, StopOutcome};
use crate::sglang_log::{self, LogWindow};
use crate::spec::SweepSpec;
use crate::store::{self, ResultsDir, StoreError};
use serde::Serialize;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

/// What a run needs besides its configuration.
pub struct RunContext<'a> {
    pub spec: &'a SweepSpec,
    pub param_keys: &'a [String],
    /// Prompt token ids are drawn from [0, vocab_size).
    pub vocab_size: u64,
    pub cancel: &'a Cancel,
    /// Process group of the server now running (0: none), for the second-signal kill.
    pub current_pgid: &'a Arc<AtomicI32>,
}

/// Everything recorded about one run, written to `summary.json`.
#[derive(Serialize)]
struct RunSummaryFile<'a> {
    record: &'a RunRecord,
    command: &'a LaunchCommand,
    start_failure: Option<&'a StartFailure>,
    stop: Option<&'a StopOutcome>,
    warmup_ok: u64,
    warmup_failed: u64,
    load_stopped_early: bool,
    log_window: Option<(usize, usize)>,
    notes: &'a [String],
}

fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn opt_f(v: Option<f64>) -> String {
    v.filter(|x| x.is_finite())
        .map(|x| format!("{x:.3}"))
        .unwrap_or_default()
}

const REQUESTS_HEADER: &[&str] = &[
    "phase",
    "index",
    "worker",
    "send_s",
    "headers_ms",
    "ttft_ms",
    "last_content_ms",
    "end_ms",
    "content_chunks",
    "prompt_tokens",
    "completion_tokens",
    "finish_reason",
    "http_status",
    "retried",
    "error_kind",
    "error",
    "chunk_ms",
];

fn request_row(s: &RequestSample) -> Vec<String> {
    vec![
        match s.phase {
            Phase::Warmup => "warmup".into(),
            Phase::Measured => "measured".into(),
        },
        s.index.to_string(),
        s.worker.to_string(),
        opt_f(Some(s.send_s)),
        opt_f(s.headers_ms),
        opt_f(s.ttft_ms),
        opt_f(s.last_content_ms),
        opt_f(s.end_ms),
        s.chunk_ms.len().to_string(),
        s.prompt_tokens.map(|v| v.to_string()).unwrap_or_default(),
        s.completion_tokens
            .map(|v| v.to_string())
            .unwrap_or_default(),
        s.finish_reason.clone().unwrap_or_default(),
        s.http_status.map(|v| v.to_string()).unwrap_or_default(),
        s.retried.to_string(),
        s.error_kind
            .map(|k| k.as_str().to_string())
            .unwrap_or_default(),
        s.error.clone().unwrap_or_default(),
        s.chunk_ms
            .iter()
            .map(|m| format!("{m:.2}"))
            .collect::<Vec<_>>()
            .join(" "),
    ]
}

/// Model name for requests: the spec's, else what the server says it serves.
async fn served_model(base_url: &str, spec: &SweepSpec) -> String {
    if let Some(m) = &spec.workload.model {
        return m.clone();
    }
    let from_server = async {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .no_proxy()
            .build()
            .ok()?;
        let v: serde_json::Value = client
            .get(format!("{base_url}/v1/models"))
            .send()
            .await
            .ok()?
            .json()
            .await
            .ok()?;
        v.get("data")?.get(0)?.get("id")?.as_str().map(String::from)
    };
    match from_server.await {
        Some(m) => m,
        None => spec.server.model_path.0.clone(),
    }
}

/// Launch, load, observe, stop and record one configuration.
pub async fn run_one(
    ctx: &RunContext<'_>,
    run: &RunConfig,
    run_dir: &Path,
    emit: &mut dyn FnMut(RunEvent<'_>),
) -> RunRecord {
    let spec = ctx.spec;
    let started_at = now_rfc3339();
    let mut record = RunRecord {
        run_name: run.name.clone(),
        run_id: run.id.clone(),
        status: RunStatus::Failed,
        failure_kind: None,
        failure_message: None,
        params: ctx
            .param_keys
            .iter()
            .map(|k| (k.clone(), run.param(k).cloned()))
            .collect(),
        concurrency: spec.workload.concurrency,
        client: None,
        server: None,
        verdict: None,
        time_to_ready_s: None,
        started_at,
        finished_at: String::new(),
    };
    let mut notes: Vec<String> = Vec::new();
    let port = match spec.server.port {
        Some(p) => p,
        None => match supervise::free_port(&spec.server.host) {
            Ok(p) => p,
            Err(e) => {
                record.failure_kind = Some(FailureKind::LaunchError);
                record.failure_message = Some(format!("no free port on {}: {e}", spec.server.host));
                record.finished_at = now_rfc3339();
                return record;
            }
        },
    };
    let cmd = command::build(&spec.server, run, Some(port));
    if spec.server.port.is_some()
        && std::net::TcpListener::bind((spec.server.host.as_str(), port)).is_err()
    {
        record.failure_kind = Some(FailureKind::LaunchError);
        record.failure_message = Some(format!(
            "port {port} on {} is already in use (another server still running?): free it, or leave server.port unset to get a free port per run",
            spec.server.host
        ));
        record.finished_at = now_rfc3339();
        write_summary(run_dir, &record, &cmd, None, None, None, None, &notes);
        return record;
    }
    let _ = store::write_json(
        &run_dir.join("config.json"),
        &serde_json::json!({
            "run": run, "workload": spec.workload, "server": {
                "host": spec.server.host, "port": port,
                "ready_timeout_s": spec.server.ready_timeout_s, "stop_timeout_s": spec.server.stop_timeout_s,
            }
        }),
    );
    let _ = store::write_atomic(
        &run_dir.join("command.txt"),
        format!("{}\n", cmd.display()).as_bytes(),
    );

    let log_path = run_dir.join("server.log");
    let mut handle = match supervise::launch(&cmd, &spec.server.host, port, &log_path) {
        Ok(h) => h,
        Err(e) => {
            record.failure_kind = Some(FailureKind::LaunchError);
            record.failure_message = Some(format!(
                "cannot start `{}`: {e} (check server.command)",
                cmd.program
            ));
            record.finished_at = now_rfc3339();
            write_summary(run_dir, &record, &cmd, None, None, None, None, &notes);
            return record;
        }
    };
    ctx.current_pgid.store(handle.pid, Ordering::SeqCst);

    let ready = handle
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
    let mut start_failure = None;
    let mut load = None;
    match ready {
        ReadyOutcome::Ready { secs } => {
            record.time_to_ready_s = Some(secs);
            emit(RunEvent::Ready { secs });
            load = Some(run_load(ctx, &mut handle, run_dir, emit).await);
        }
        ReadyOutcome::Failed(f) => {
            record.failure_kind = Some(f.kind);
            record.failure_message = Some(f.message.clone());
            start_failure = Some(f);
        }
        ReadyOutcome::Interrupted => {
            record.status = RunStatus::Interrupted;
            record.failure_kind = Some(FailureKind::Interrupted);
            record.failure_message = Some("interrupted while the server was starting".into());
        }
    }

    emit(RunEvent::Stopping);
    let stop = handle
        .stop(Duration::from_secs(spec.server.stop_timeout_s))
        .await;
    ctx.current_pgid.store(0, Ordering::SeqCst);
    if stop.group_left {
        let m = format!(
            "a process of the server's group (pgid {}) survived SIGKILL",
            handle.pid
        );
        emit(RunEvent::Warning { message: &m });
        notes.push(m);
    }
    if !stop.port_free {
        let m = format!("port {} still in use after the server stopped", handle.port);
        emit(RunEvent::Warning { message: &m });
        notes.push(m);
    }
    if let Some(e) = handle.log.write_error() {
        notes.push(format!("server.log is incomplete: {e}"));
    }

    let mut window = None;
    if let Some(l) = &load {
        window = l.window;
        let text = std::fs::read(&log_path)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        let server = sglang_log::summarize_text(
            &text,
            l.window.map(|(start_line, end_line)| LogWindow {
                start_line,
                end_line,
            }),
        );
        let w = &spec.workload;
        record.verdict = Some(diagnose::diagnose(
            w.concurrency,
            w.input_tokens + w.output_tokens,
            Some(&l.client),
            Some(&server),
        ));
        record.server = Some(server);
        record.client = Some(l.client.clone());
        let died = l.server_died.clone();
        if ctx.cancel.is_cancelled() {
            record.status = RunStatus::Interrupted;
            record.failure_kind = Some(FailureKind::Interrupted);
            record.failure_message = Some(format!(
                "interrupted during the load after {} completed requests",
                l.client.completed
            ));
        } else if let Some(how) = died {
            record.failure_kind = Some(FailureKind::LoadFailed);
            record.failure_message = Some(format!(
                "the server died during the load ({how}); last log line: {}",
                handle.log.last_line().trim()
            ));
        } else if l.client.completed == 0 {
            record.failure_kind = Some(FailureKind::LoadFailed);
            record.failure_message = Some(format!(
                "no request succeeded ({} failed): {}",
                l.client.failed,
                l.client.first_error.as_deref().unwrap_or("")
            ));
        } else {
            record.status = RunStatus::Ok;
        }
    }
    if record.status == RunStatus::Ok && record.verdict.is_none() {
        record.verdict = Some(Verdict {
            kind: diagnose::VerdictKind::Unknown,
            evidence: String::new(),
            hint: String::new(),
        });
    }
    record.finished_at = now_rfc3339();
    let (wok, wfail, stopped) = load
        .as_ref()
        .map(|l| (l.warmup_ok, l.warmup_failed, l.stopped))
        .unwrap_or_default();
    write_summary(
        run_dir,
        &record,
        &cmd,
        start_failure.as_ref(),
        Some(&stop),
        Some((wok, wfail, stopped)),
        window,
        &notes,
    );
    record
}

#[allow(clippy::too_many_arguments)]
fn write_summary(
    run_dir: &Path,
    record: &RunRecord,
    cmd: &LaunchCommand,
    start_failure: Option<&StartFailure>,
    stop: Option<&StopOutcome>,
    load: Option<(u64, u64, bool)>,
    window: Option<(usize, usize)>,
    notes: &[String],
) {
    let (warmup_ok, warmup_failed, load_stopped_early) = load.unwrap_or_default();
    let _ = store::write_json(
        &run_dir.join("summary.json"),
        &RunSummaryFile {
            record,
            command: cmd,
            start_failure,
            stop,
            warmup_ok,
            warmup_failed,
            load_stopped_early,
            log_window: window,
            notes,
        },
    );
}

struct LoadResult {
    client: ClientSummary,
    warmup_ok: u64,
    warmup_failed: u64,
    stopped: bool,
    /// server.log line marks of the measured window.
    window: Option<(usize, usize)>,
    /// How the server ended if it died during the load.
    server_died: Option<String>,
}

async fn run_load(
    ctx: &RunContext<'_>,
    handle: &mut ServerHandle,
    run_dir: &Path,
    emit: &mut dyn FnMut(RunEvent<'_>),
) -> LoadResult {
    let w = &ctx.spec.workload;
    let base_url = handle.base_url();
    let target = LoadTarget {
        model: served_model(&base_url, ctx.spec).await,
        base_url,
        vocab_size: ctx.vocab_size,
    };
    let client = match driver::http_client(w.concurrency) {
        Ok(c) => c,
        Err(e) => {
            return LoadResult {
                client: ClientSummary {
                    first_error: Some(format!("cannot build the HTTP client: {e}")),
                    ..Default::default()
                },
                warmup_ok: 0,
                warmup_failed: 0,
                stopped: true,
                window: None,
                server_died: None,
            };
        }
    };
    let mut requests_csv = csv::Writer::from_path(run_dir.join("requests.csv")).ok();
    if let Some(wr) = requests_csv.as_mut() {
        let _ = wr.write_record(REQUESTS_HEADER);
    }
    emit(RunEvent::LoadStart {
        requests: w.requests,
        duration_s: w.duration_s,
        concurrency: w.concurrency,
    });
    let log = handle.log.clone();
    let mut mark_start = None;
    let mut mark_end = None;
    let (mut done, mut failed, mut tokens) = (0u64, 0u64, 0u64);
    let mut measure_t0 = Instant::now();
    let mut last_emit = Instant::now();
    let mut rows = 0u64;
    let stop = Cancel::new();
    let mut on_event = |ev: LoadEvent<'_>| match ev {
        LoadEvent::MeasureStart => {
            mark_start = Some(log.line_count());
            measure_t0 = Instant::now();
        }
        LoadEvent::MeasureEnd => mark_end = Some(log.line_count()),
        LoadEvent::Sample(s) => {
            if let Some(wr) = requests_csv.as_mut() {
                let _ = wr.write_record(request_row(s));
                rows += 1;
                if rows % 64 == 0 {
                    let _ = wr.flush();
                }
            }
            if s.phase == Phase::Measured {
                if s.ok() {
                    done += 1;
                    tokens += s.output_tokens();
                } else {
                    failed += 1;
                }
                if last_emit.elapsed() >= Duration::from_millis(200) {
                    last_emit = Instant::now();
                    emit(RunEvent::LoadProgress {
                        done: done + failed,
                        failed,
                        output_tokens: tokens,
                        elapsed_s: measure_t0.elapsed().as_secs_f64(),
                    });
                }
            }
        }
    };
    let mut server_died = None;
    let outcome = {
        let fut = driver::drive(&client, w, &target, &stop, &mut on_event);
        tokio::pin!(fut);
        loop {
            tokio::select! {
                out = &mut fut => break out,
                _ = tokio::time::sleep(Duration::from_millis(250)) => {
                    if ctx.cancel.is_cancelled() {
                        stop.cancel();
                    }
                    if server_died.is_none() {
                        if let Some(st) = handle.try_exit() {
                            server_died = Some(crate::server::failure::describe_exit(&st));
                            stop.cancel();
                        }
                    }
                }
            }
        }
    };
    if let Some(mut wr) = requests_csv {
        let _ = wr.flush();
    }
    let client = metrics::summarize(&outcome.samples, outcome.duration_s, w.input_tokens);
    // The load can finish (every remaining request refused at once) before the watcher above
    // sees a dead server; a server must still be running after its load. Connection errors
    // mean it may be dying right now: give its exit status a moment to show.
    if server_died.is_none() {
        let wait = if client.errors.contains_key("connect") {
            1000
        } else {
            0
        };
        let deadline = Instant::now() + Duration::from_millis(wait);
        loop {
            if let Some(st) = handle.try_exit() {
                server_died = Some(crate::server::failure::describe_exit(&st));
                break;
            }
            if Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    LoadResult {
        client,
        warmup_ok: outcome.warmup_ok,
        warmup_failed: outcome.warmup_failed,
        stopped: outcome.stopped,
        window: mark_start.zip(mark_end),
        server_died,
    }
}

/// How a sweep ended.
pub struct SweepOutcome {
    pub records: Vec<RunRecord>,
    pub interrupted: bool,
}

/// Run every configuration of the plan in order; each finished row is on disk before the next
/// run starts.
pub async fn run_sweep(
    ctx: &RunContext<'_>,
    plan: &RunPlan,
    results: &ResultsDir,
    emit: &mut dyn FnMut(RunEvent<'_>),
) -> Result<SweepOutcome, StoreError> {
    emit(RunEvent::SweepStart {
        runs: plan.runs.len(),
        results: &results.root,
    });
    let mut records = Vec::new();
    for (index, run) in plan.runs.iter().enumerate() {
        if ctx.cancel.is_cancelled() {
            break;
        }
        let run_dir = results.run_dir(&run.name)?;
        let cmd = command::build(&ctx.spec.server, run, ctx.spec.server.port);
        let shown = cmd.display();
        emit(RunEvent::RunStart {
            index,
            total: plan.runs.len(),
            name: &run.name,
            command: &shown,
        });
        let record = run_one(ctx, run, &run_dir, emit).await;
        results.append(&record)?;
        emit(RunEvent::RunEnd { record: &record });
        records.push(record);
    }
    Ok(SweepOutcome {
        interrupted: ctx.cancel.is_cancelled(),
        records,
    })
}
