//! The sweep loop. The unit of work is one server launch (`run_launch`): one configuration in,
//! its records out (one per repeat × load point it measures), everything in its own folder, so
//! the same unit can later run as one task of a Slurm job array. The runner owns cancellation
//! and never prints: it emits RunEvents.

use crate::load::driver::{self, LoadEvent, LoadTarget, Phase};
use crate::load::requests_csv;
use crate::observe::client::{self, ClientSummary};
use crate::observe::diagnose;
use crate::observe::sglang_log::{self, LogWindow};
use crate::plan::expand::{RunConfig, RunPlan};
use crate::plan::spec::{LoadPoint, SweepSpec};
use crate::record::gpu;
use crate::record::provenance::{LaunchRecord, Manifest};
use crate::record::store::{self, ResultsDir, StoreError};
use crate::record::{RunRecord, RunStatus};
use crate::report::events::RunEvent;
use crate::server::command::{self, LaunchCommand};
use crate::server::failure::{FailureKind, StartFailure};
use crate::server::supervise::{self, ReadyOutcome, ServerHandle, StopOutcome};
use serde::Serialize;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// What a run needs besides its configuration.
pub struct RunContext<'a> {
    pub spec: &'a SweepSpec,
    pub param_keys: &'a [String],
    /// Prompt token ids are drawn from [0, vocab_size).
    pub vocab_size: u64,
    /// `workload.dataset` prompts, loaded once.
    pub dataset: Option<std::sync::Arc<Vec<crate::load::dataset::DatasetPrompt>>>,
    pub cancel: &'a CancellationToken,
    /// Process group of the server now running (0: none), for the second-signal kill.
    pub current_pgid: &'a Arc<AtomicI32>,
}

/// One measurement: a configuration at one load point, in one repeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Measurement {
    pub repeat: u64,
    pub point: LoadPoint,
}

impl Measurement {
    /// The measurement a record was made for.
    pub fn of(r: &RunRecord) -> Measurement {
        Measurement {
            repeat: r.repeat,
            point: LoadPoint {
                concurrency: r.concurrency,
                request_rate: r.request_rate,
            },
        }
    }
}

/// One server launch and the measurements it makes.
#[derive(Debug, Clone)]
pub struct Launch {
    pub run: RunConfig,
    /// Folder under runs/: the run name, plus `.r<k>` per repeat when each repeat gets its own
    /// server.
    pub dir_name: String,
    pub measurements: Vec<Measurement>,
}

/// The launches for a plan, leaving out measurements for which `done` says a row exists.
pub fn plan_launches(
    spec: &SweepSpec,
    plan: &RunPlan,
    done: &dyn Fn(&RunConfig, Measurement) -> bool,
) -> Vec<Launch> {
    let points = &spec.workload.load_points;
    let mut out = Vec::new();
    for run in &plan.runs {
        let groups: Vec<(String, Vec<u64>)> = if spec.reuse_server || spec.repeats == 1 {
            vec![(run.name.clone(), (1..=spec.repeats).collect())]
        } else {
            (1..=spec.repeats)
                .map(|k| (format!("{}.r{k}", run.name), vec![k]))
                .collect()
        };
        for (dir_name, repeats) in groups {
            let measurements: Vec<Measurement> = repeats
                .iter()
                .flat_map(|&repeat| {
                    points
                        .iter()
                        .map(move |&point| Measurement { repeat, point })
                })
                .filter(|m| !done(run, *m))
                .collect();
            if !measurements.is_empty() {
                out.push(Launch {
                    run: run.clone(),
                    dir_name,
                    measurements,
                });
            }
        }
    }
    out
}

/// File-name suffix of a measurement inside its launch folder: none when the launch measures
/// one thing, else `.c<concurrency>` (or `.rate<rate>`) and/or `.r<repeat>`.
fn suffix(spec: &SweepSpec, m: Measurement) -> String {
    let mut s = String::new();
    if spec.workload.load_points.len() > 1 {
        s.push_str(&format!(".{}", m.point.label()));
    }
    if spec.reuse_server && spec.repeats > 1 {
        s.push_str(&format!(".r{}", m.repeat));
    }
    s
}

/// Everything recorded about one measurement, written to `summary[.suffix].json`.
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

use crate::record::provenance::now_rfc3339;

/// Model name for requests: the spec's, else what the server says it serves.
async fn served_model(base_url: &str, spec: &SweepSpec) -> String {
    if let Some(m) = &spec.workload.model {
        return m.clone();
    }
    driver::served_model(base_url)
        .await
        .unwrap_or_else(|| spec.server.model_path.0.clone())
}

fn new_record(ctx: &RunContext<'_>, run: &RunConfig, m: Measurement) -> RunRecord {
    RunRecord {
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
        concurrency: m.point.concurrency,
        request_rate: m.point.request_rate,
        repeat: m.repeat,
        client: None,
        server: None,
        verdict: None,
        time_to_ready_s: None,
        metrics: None,
        notes: Vec::new(),
        started_at: now_rfc3339(),
        finished_at: String::new(),
    }
}

fn fail(mut r: RunRecord, kind: FailureKind, message: &str) -> RunRecord {
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

/// What one server launch produced.
pub struct LaunchOutcome {
    /// One per measurement made (or failed); measurements never started are absent.
    pub records: Vec<RunRecord>,
    pub provenance: LaunchRecord,
}

/// `GET /server_info` (`/get_server_info` before Nov 2025): the effective settings.
async fn server_info(base_url: &str) -> Option<serde_json::Value> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .no_proxy()
        .build()
        .ok()?;
    for path in ["/server_info", "/get_server_info"] {
        if let Ok(r) = client.get(format!("{base_url}{path}")).send().await {
            if r.status().is_success() {
                if let Ok(v) = r.json::<serde_json::Value>().await {
                    return Some(v);
                }
            }
        }
    }
    None
}

/// Between load points: clear the prefix cache so one point does not warm the next. SGLang
/// refuses to flush while requests are running, so retrying also waits for the server to be
/// idle. Returns a note when it could not.
async fn flush_cache(base_url: &str) -> Option<String> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .no_proxy()
        .build()
        .ok()?;
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = String::new();
    while Instant::now() < deadline {
        match client.post(format!("{base_url}/flush_cache")).send().await {
            Ok(r) if r.status().is_success() => return None,
            Ok(r) => last = format!("HTTP {}", r.status()),
            Err(e) => last = e.to_string(),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Some(format!(
        "could not flush the prefix cache before this load point ({last})"
    ))
}

/// Launch one server, make its measurements, stop it, and record everything.
pub async fn run_launch(
    ctx: &RunContext<'_>,
    launch: &Launch,
    launch_dir: &Path,
    emit: &mut dyn FnMut(RunEvent<'_>),
) -> LaunchOutcome {
    let spec = ctx.spec;
    let run = &launch.run;
    let first = launch.measurements.first().copied().unwrap_or(Measurement {
        repeat: 1,
        point: LoadPoint {
            concurrency: spec.workload.concurrency,
            request_rate: spec.workload.request_rate,
        },
    });
    let started_at = now_rfc3339();
    let mut notes: Vec<String> = Vec::new();
    let mut provenance = LaunchRecord {
        run_name: run.name.clone(),
        run_id: run.id.clone(),
        started_at,
        ..Default::default()
    };
    let all_failed = |kind: FailureKind, message: &str| -> Vec<RunRecord> {
        launch
            .measurements
            .iter()
            .map(|m| fail(new_record(ctx, run, *m), kind, message))
            .collect()
    };
    let port = match spec.server.port {
        Some(p) => p,
        None => match supervise::free_port(&spec.server.host) {
            Ok(p) => p,
            Err(e) => {
                let msg = format!("no free port on {}: {e}", spec.server.host);
                return LaunchOutcome {
                    records: all_failed(FailureKind::LaunchError, &msg),
                    provenance,
                };
            }
        },
    };
    let cmd = command::build(&spec.server, run, Some(port));
    provenance.command = cmd.display();
    provenance.env = cmd.env.clone();
    let _ = store::write_json(
        &launch_dir.join("config.json"),
        &serde_json::json!({
            "run": run, "measurements": launch.measurements, "workload": spec.workload, "server": {
                "host": spec.server.host, "port": port,
                "ready_timeout_s": spec.server.ready_timeout_s, "stop_timeout_s": spec.server.stop_timeout_s,
            }
        }),
    );
    let _ = store::write_atomic(
        &launch_dir.join("command.txt"),
        format!("{}\n", cmd.display()).as_bytes(),
    );
    let summary_path = |m: Measurement| launch_dir.join(format!("summary{}.json", suffix(spec, m)));
    if spec.server.port.is_some()
        && std::net::TcpListener::bind((spec.server.host.as_str(), port)).is_err()
    {
        let msg = format!(
            "port {port} on {} is already in use (another server still running?): free it, or leave server.port unset to get a free port per run",
            spec.server.host
        );
        let records = all_failed(FailureKind::LaunchError, &msg);
        for r in &records {
            write_summary(
                &summary_path(Measurement::of(r)),
                r,
                &cmd,
                None,
                None,
                None,
                None,
                &notes,
            );
        }
        provenance.finished_at = now_rfc3339();
        return LaunchOutcome {
            records,
            provenance,
        };
    }

    let log_path = launch_dir.join("server.log");
    let mut handle = match supervise::launch(&cmd, &spec.server.host, port, &log_path) {
        Ok(h) => h,
        Err(e) => {
            let msg = format!("cannot start `{}`: {e} (check server.command)", cmd.program);
            let records = all_failed(FailureKind::LaunchError, &msg);
            provenance.finished_at = now_rfc3339();
            return LaunchOutcome {
                records,
                provenance,
            };
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
    let mut time_to_ready = None;
    // (measurement, load result) for every load that ran.
    let mut loads: Vec<(Measurement, LoadResult)> = Vec::new();
    let mut records: Vec<RunRecord> = Vec::new();
    match ready {
        ReadyOutcome::Ready { secs } => {
            time_to_ready = Some(secs);
            emit(RunEvent::Ready { secs });
            let base_url = handle.base_url();
            if let Some(info) = server_info(&base_url).await {
                let _ = store::write_json(&launch_dir.join("server_info.json"), &info);
                provenance.effective = Some(info);
            }
            for (i, m) in launch.measurements.iter().enumerate() {
                if ctx.cancel.is_cancelled() {
                    break;
                }
                if i > 0 {
                    if let Some(n) = flush_cache(&base_url).await {
                        notes.push(n);
                    }
                }
                let result = run_load(ctx, &mut handle, launch_dir, *m, emit).await;
                let died = result.server_died.is_some();
                let interrupted = ctx.cancel.is_cancelled();
                loads.push((*m, result));
                if died || interrupted {
                    break;
                }
            }
        }
        ReadyOutcome::Failed(f) => {
            records = all_failed(f.kind, &f.message);
            start_failure = Some(f);
        }
        ReadyOutcome::Interrupted => {
            records.push(fail(
                new_record(ctx, run, first),
                FailureKind::Interrupted,
                "interrupted while the server was starting",
            ));
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

    let mut died_at: Option<String> = None;
    for (m, l) in &loads {
        let mut record = new_record(ctx, run, *m);
        record.time_to_ready_s = time_to_ready;
        record.notes = notes.clone();
        // Streamed from the file: constant memory whatever the log's size.
        let scope = sglang_log::Scope {
            lines: l.window.map(|(start_line, end_line)| LogWindow {
                start_line,
                end_line,
            }),
            ..Default::default()
        };
        let server = sglang_log::summarize_file(&log_path, scope)
            .map(|s| s.summary())
            .unwrap_or_default();
        let w = &spec.workload;
        record.verdict = Some(diagnose::diagnose(
            m.point.concurrency,
            w.input_tokens + w.output_tokens,
            Some(&l.client),
            Some(&server),
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
        record.client = Some(l.client.clone());
        if l.interrupted {
            record = fail(
                record,
                FailureKind::Interrupted,
                &format!(
                    "interrupted during the load after {} completed requests",
                    l.client.completed
                ),
            );
        } else if let Some(how) = &l.server_died {
            died_at = Some(how.clone());
            record = fail(
                record,
                FailureKind::LoadFailed,
                &format!(
                    "the server died during the load ({how}); last log line: {}",
                    handle.log.last_line().trim()
                ),
            );
        } else if l.client.completed == 0 {
            let msg = format!(
                "no request succeeded ({} failed): {}",
                l.client.failed,
                l.client.first_error.as_deref().unwrap_or("")
            );
            record = fail(record, FailureKind::LoadFailed, &msg);
        } else {
            record.status = RunStatus::Ok;
            record.finished_at = now_rfc3339();
        }
        write_summary(
            &summary_path(*m),
            &record,
            &cmd,
            None,
            Some(&stop),
            Some((l.warmup_ok, l.warmup_failed, l.stopped)),
            l.window,
            &notes,
        );
        records.push(record);
    }
    // Load points a dead server never reached are failures of this launch too.
    if let Some(how) = died_at {
        let made: Vec<Measurement> = loads.iter().map(|(m, _)| *m).collect();
        for m in launch.measurements.iter().filter(|m| !made.contains(m)) {
            let r = fail(
                new_record(ctx, run, *m),
                FailureKind::LoadFailed,
                &format!("not measured: the server died during an earlier load point ({how})"),
            );
            records.push(r);
        }
    }
    if loads.is_empty() {
        for r in &mut records {
            r.notes = notes.clone();
            let m = Measurement::of(r);
            write_summary(
                &summary_path(m),
                r,
                &cmd,
                start_failure.as_ref(),
                Some(&stop),
                None,
                None,
                &notes,
            );
        }
    }
    provenance.finished_at = now_rfc3339();
    LaunchOutcome {
        records,
        provenance,
    }
}

#[allow(clippy::too_many_arguments)]
fn write_summary(
    path: &Path,
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
        path,
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
    /// sgtune was interrupted during this load.
    interrupted: bool,
    /// From `/metrics`, when the server exports it.
    metrics: Option<crate::observe::prom::MetricsSummary>,
}

/// How long an interrupted load waits for its requests in flight before abandoning them.
const INTERRUPT_GRACE: Duration = Duration::from_secs(10);

async fn run_load(
    ctx: &RunContext<'_>,
    handle: &mut ServerHandle,
    launch_dir: &Path,
    m: Measurement,
    emit: &mut dyn FnMut(RunEvent<'_>),
) -> LoadResult {
    let mut point = ctx.spec.workload.clone();
    point.concurrency = m.point.concurrency;
    point.request_rate = m.point.request_rate;
    let w = &point;
    let base_url = handle.base_url();
    let target = LoadTarget {
        model: served_model(&base_url, ctx.spec).await,
        base_url,
        vocab_size: ctx.vocab_size,
        dataset: ctx.dataset.clone(),
    };
    let client = match driver::http_client(&target.base_url) {
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
                interrupted: false,
                metrics: None,
            };
        }
    };
    let mut requests_csv =
        csv::Writer::from_path(launch_dir.join(format!("requests{}.csv", suffix(ctx.spec, m))))
            .ok();
    if let Some(wr) = requests_csv.as_mut() {
        let _ = wr.write_record(requests_csv::HEADER);
    }
    emit(RunEvent::LoadStart {
        requests: w.requests,
        duration_s: w.duration_s,
        concurrency: w.concurrency,
    });
    let log = handle.log.clone();
    // The second source: /metrics, scraped once a second during the measured window.
    let measuring = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let scrape_done = CancellationToken::new();
    let scraper = tokio::spawn(crate::observe::prom::scrape_loop(
        format!("{}/metrics", target.base_url),
        measuring.clone(),
        scrape_done.clone(),
        Duration::from_secs(1),
    ));
    let mut mark_start = None;
    let (mut cpu_start, mut cpu_end) = (None, None);
    let mut mark_end = None;
    let (mut done, mut failed, mut tokens) = (0u64, 0u64, 0u64);
    let mut measure_t0 = Instant::now();
    let mut last_emit = Instant::now();
    let mut rows = 0u64;
    let stop = CancellationToken::new();
    let abort = CancellationToken::new();
    let mut interrupted_at: Option<Instant> = None;
    let mut acc = client::Accumulator::new(w.input_tokens, w.slo.as_ref());
    let mut on_event = |ev: LoadEvent<'_>| match ev {
        LoadEvent::MeasureStart => {
            mark_start = Some(log.line_count());
            measure_t0 = Instant::now();
            cpu_start = requests_csv::process_cpu_s();
            measuring.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        LoadEvent::MeasureEnd => {
            mark_end = Some(log.line_count());
            cpu_end = requests_csv::process_cpu_s();
            measuring.store(false, std::sync::atomic::Ordering::SeqCst);
        }
        LoadEvent::Sample(s) => {
            acc.add(s);
            if let Some(wr) = requests_csv.as_mut() {
                let _ = wr.write_record(requests_csv::row(s));
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
        let fut = driver::drive(&client, w, &target, &stop, &abort, &mut on_event);
        tokio::pin!(fut);
        loop {
            tokio::select! {
                out = &mut fut => break out,
                _ = tokio::time::sleep(Duration::from_millis(250)) => {
                    if ctx.cancel.is_cancelled() {
                        // Stop sending; give the requests in flight a bounded time.
                        stop.cancel();
                        let t = *interrupted_at.get_or_insert_with(Instant::now);
                        if t.elapsed() >= INTERRUPT_GRACE {
                            abort.cancel();
                        }
                    }
                    if server_died.is_none() {
                        if let Some(st) = handle.try_exit() {
                            server_died = Some(crate::server::failure::describe_exit(&st));
                            stop.cancel();
                            abort.cancel();
                        }
                    }
                }
            }
        }
    };
    if let Some(mut wr) = requests_csv {
        let _ = wr.flush();
    }
    scrape_done.cancel();
    let scrapes = scraper.await.unwrap_or_default();
    let metrics = (!scrapes.is_empty()).then(|| {
        write_metrics_csv(
            &launch_dir.join(format!("metrics{}.csv", suffix(ctx.spec, m))),
            &scrapes,
        );
        crate::observe::prom::summarize(&scrapes)
    });
    let mut client = acc.finish(outcome.duration_s);
    client.client_cpu_cores = cpu_start
        .zip(cpu_end)
        .and_then(|(a, b)| (outcome.duration_s > 0.0).then(|| (b - a) / outcome.duration_s));
    client.cut_off = outcome.cut_off;
    client::assess_client(&mut client, crate::util::sys::available_cores());
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
        interrupted: ctx.cancel.is_cancelled(),
        metrics,
    }
}

/// metrics.csv: one row per series per scrape.
fn write_metrics_csv(path: &Path, scrapes: &[crate::observe::prom::Scrape]) {
    let Ok(mut w) = csv::Writer::from_path(path) else {
        return;
    };
    let _ = w.write_record(["t_s", "metric", "labels", "value"]);
    for s in scrapes {
        for x in &s.samples {
            let _ = w.write_record([
                format!("{:.3}", s.t_s),
                x.name.clone(),
                x.labels.clone(),
                x.value.to_string(),
            ]);
        }
    }
    let _ = w.flush();
}

/// How a sweep ended.
pub struct SweepOutcome {
    pub records: Vec<RunRecord>,
    pub interrupted: bool,
}

/// Run the launches in order; each finished row is on disk before the next launch starts, and
/// the manifest is updated after every launch.
pub async fn run_sweep(
    ctx: &RunContext<'_>,
    launches: &[Launch],
    results: &ResultsDir,
    manifest: &mut Manifest,
    emit: &mut dyn FnMut(RunEvent<'_>),
) -> Result<SweepOutcome, StoreError> {
    emit(RunEvent::SweepStart {
        runs: launches.len(),
        results: &results.root,
    });
    let gpu_baseline = manifest.gpus.clone();
    let mut records = Vec::new();
    let mut carry_notes: Vec<String> = Vec::new();
    for (index, launch) in launches.iter().enumerate() {
        if ctx.cancel.is_cancelled() {
            break;
        }
        let launch_dir = results.run_dir(&launch.dir_name)?;
        let cmd = command::build(&ctx.spec.server, &launch.run, ctx.spec.server.port);
        let shown = cmd.display();
        emit(RunEvent::RunStart {
            index,
            total: launches.len(),
            name: &launch.dir_name,
            command: &shown,
        });
        let mut outcome = run_launch(ctx, launch, &launch_dir, emit).await;
        for r in &mut outcome.records {
            // A GPU the previous server did not give back is this run's context.
            r.notes.splice(0..0, carry_notes.iter().cloned());
        }
        for r in &outcome.records {
            results.append(r)?;
            emit(RunEvent::RunEnd { record: r });
        }
        manifest
            .launches
            .insert(launch.dir_name.clone(), outcome.provenance);
        records.extend(outcome.records);
        carry_notes = between_runs(ctx, &gpu_baseline, emit).await;
        manifest
            .gpu_not_released
            .extend(carry_notes.iter().cloned());
        store::write_json(
            &results.root.join(crate::record::provenance::FILE),
            manifest,
        )?;
    }
    Ok(SweepOutcome {
        interrupted: ctx.cancel.is_cancelled(),
        records,
    })
}

/// After a server stopped: the spec's `between_runs` command and sleep, then (on GPU machines)
/// wait for every GPU to return to its baseline memory. Returns notes for the next run.
async fn between_runs(
    ctx: &RunContext<'_>,
    gpu_baseline: &[gpu::Gpu],
    emit: &mut dyn FnMut(RunEvent<'_>),
) -> Vec<String> {
    let mut notes = Vec::new();
    if ctx.cancel.is_cancelled() {
        return notes;
    }
    if let Some(b) = &ctx.spec.between_runs {
        if let Some(c) = &b.command {
            let out = tokio::process::Command::new("sh")
                .args(["-c", c])
                .stdin(std::process::Stdio::null())
                .output()
                .await;
            let problem = match out {
                Ok(o) if o.status.success() => None,
                Ok(o) => Some(format!(
                    "between_runs.command exited with {}: {}",
                    crate::server::failure::describe_exit(&o.status),
                    String::from_utf8_lossy(&o.stderr).trim()
                )),
                Err(e) => Some(format!("between_runs.command could not start: {e}")),
            };
            if let Some(p) = problem {
                emit(RunEvent::Warning { message: &p });
                notes.push(p);
            }
        }
        if b.sleep_s > 0.0 {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs_f64(b.sleep_s)) => {}
                _ = ctx.cancel.cancelled() => {}
            }
        }
    }
    // After the site's cleanup: the GPUs the stopped server used should be back to baseline.
    if !gpu_baseline.is_empty() {
        let baseline = gpu_baseline.to_vec();
        let timeout = Duration::from_secs(ctx.spec.server.gpu_release_timeout_s);
        let held = tokio::task::spawn_blocking(move || gpu::wait_released(&baseline, timeout))
            .await
            .unwrap_or_default();
        for h in &held {
            emit(RunEvent::Warning { message: h });
        }
        notes.extend(held);
    }
    notes
}
