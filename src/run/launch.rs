//! One server launch: one configuration in, one record per measurement out, every file in its
//! own folder under runs/ (so the same unit can later run as one task of a Slurm job array).
//!
//! The stages, one function each: `prepare` (port, command, config files) → `start` (launch,
//! wait until ready) → `measure` (one session per load point, the cache flushed between) →
//! `shut_down` (stop, check the group and the port) → `record_loads` (log summary, verdict,
//! status per measurement) → summaries written. Whatever fails at a stage becomes the rows'
//! failure; nothing is dropped.

use super::session::{self, SessionOutcome, StopReason, Watch};
use super::{Launch, Measurement, RunContext, suffix};
use crate::load::driver::{self, LoadTarget};
use crate::load::prompts::measurement_seed as mix_seed;
use crate::load::requests_csv;
use crate::observe::diagnose;
use crate::observe::engine_log;
use crate::observe::prom::{self, MetricsSummary, Scrape};
use crate::observe::sglang_log::{self, LogWindow};
use crate::plan::expand::RunConfig;
use crate::plan::spec::LoadPoint;
use crate::record::provenance::{LaunchRecord, now_rfc3339};
use crate::record::store::{self, CsvFile, StoreError};
use crate::record::summary::{self, Summary};
use crate::record::{Phase, ProbeResult, RunRecord, RunStatus};
use crate::report::events::RunEvent;
use crate::server::command::{self, LaunchCommand};
use crate::server::control::Control;
use crate::server::failure::{self, FailureKind, StartFailure};
use crate::server::supervise::{self, LogSink, ReadyOutcome, ServerHandle, StopOutcome};
use crate::tune::preflight;
use crate::tune::search::{self, ProbeRun};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What one server launch produced.
pub struct LaunchOutcome {
    /// One per measurement made (or failed); measurements never started are absent.
    pub records: Vec<RunRecord>,
    pub provenance: LaunchRecord,
}

/// How long to wait for an idle server to accept a prefix-cache flush between load points.
const FLUSH_PATIENCE: Duration = Duration::from_secs(30);
/// How long after the flush's HTTP answer its log line may take to appear.
const FLUSH_LOG_WAIT: Duration = Duration::from_secs(3);

/// The state of one launch as it moves through its stages.
struct LaunchState<'c, 'l> {
    ctx: &'c RunContext<'c>,
    launch: &'l Launch,
    dir: &'l Path,
    provenance: LaunchRecord,
    /// Notes for every row of this launch (a file that could not be written, a slow stop).
    notes: Vec<String>,
    /// `shared_prefix.working_set` sized for this launch: the number of prefix groups.
    prefix_groups: Option<u64>,
    /// What the server runs with against what was asked (set once it is ready).
    effective: Option<crate::observe::effective::EffectiveArgs>,
}

/// One load point's measurement, before it becomes a record.
struct Measured {
    m: Measurement,
    started_at: String,
    session: SessionOutcome,
    /// server.log line marks of the measured window.
    window: Option<(usize, usize)>,
    metrics: Option<MetricsSummary>,
}

impl<'c, 'l> LaunchState<'c, 'l> {
    /// The state of a launch that never starts a server: for rows made without one.
    fn detached(ctx: &'c RunContext<'c>, launch: &'l Launch) -> Self {
        LaunchState {
            ctx,
            launch,
            dir: Path::new(""),
            provenance: LaunchRecord {
                started_at: now_rfc3339(),
                ..Default::default()
            },
            notes: Vec::new(),
            prefix_groups: None,
            effective: None,
        }
    }

    fn run(&self) -> &RunConfig {
        &self.launch.run
    }

    fn record(&self, m: Measurement, started_at: &str) -> RunRecord {
        RunRecord {
            run_name: self.run().name.clone(),
            run_id: self.run().id.clone(),
            engine: self.run().engine,
            status: RunStatus::Failed,
            failure_kind: None,
            failure_message: None,
            params: self
                .ctx
                .param_keys
                .iter()
                .map(|k| (k.clone(), self.run().param(k).cloned()))
                .collect(),
            concurrency: m.point.concurrency,
            request_rate: m.point.request_rate,
            repeat: m.repeat,
            phase: self.launch.phase,
            // A pre-flight attempt fails unless its burst shows otherwise.
            probe: (self.launch.phase == Phase::Preflight).then_some(ProbeResult::Fail),
            client: None,
            server: None,
            verdict: None,
            time_to_ready_s: None,
            metrics: None,
            effective: self.effective.clone(),
            notes: Vec::new(),
            started_at: started_at.to_string(),
            finished_at: String::new(),
        }
    }

    /// Every measurement of this launch, failed for one reason (it never got to its load).
    fn all_failed(&self, kind: FailureKind, message: &str) -> Vec<RunRecord> {
        self.launch
            .measurements
            .iter()
            .map(|m| fail(self.record(*m, &self.provenance.started_at), kind, message))
            .collect()
    }

    /// Keep a failed write as a note on every row of this launch.
    fn keep(&mut self, what: &str, res: Result<(), StoreError>) {
        if let Err(e) = res {
            self.notes.push(format!("{what} could not be written: {e}"));
        }
    }

    /// Write one measurement's `summary[.suffix].json` (record::summary's one writer).
    fn write_summary(&mut self, record: &RunRecord, cmd: &LaunchCommand, detail: SummaryDetail) {
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

#[derive(Default)]
struct SummaryDetail<'a> {
    start_failure: Option<&'a StartFailure>,
    stop: Option<&'a StopOutcome>,
    warmup: (u64, u64),
    stopped_early: bool,
    window: Option<(usize, usize)>,
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

/// Launch one server, make its measurements, stop it, and record everything.
pub async fn run_launch(
    ctx: &RunContext<'_>,
    launch: &Launch,
    launch_dir: &Path,
    emit: &mut dyn FnMut(RunEvent<'_>),
) -> LaunchOutcome {
    let mut st = LaunchState {
        ctx,
        launch,
        dir: launch_dir,
        provenance: LaunchRecord {
            run_name: launch.run.name.clone(),
            run_id: launch.run.id.clone(),
            started_at: now_rfc3339(),
            ..Default::default()
        },
        notes: Vec::new(),
        prefix_groups: None,
        effective: None,
    };
    let records = match prepare(&mut st) {
        Ok((cmd, port)) => start_and_measure(&mut st, &cmd, port, emit).await,
        Err((mut records, cmd)) => {
            for r in &mut records {
                r.notes = st.notes.clone();
            }
            for r in &records {
                st.write_summary(r, &cmd, SummaryDetail::default());
            }
            records
        }
    };
    st.provenance.finished_at = now_rfc3339();
    LaunchOutcome {
        records,
        provenance: st.provenance,
    }
}

/// Pick the port, build the command, write config.json and command.txt. A port that cannot
/// be had fails every measurement of the launch.
#[allow(clippy::result_large_err)]
fn prepare(
    st: &mut LaunchState<'_, '_>,
) -> Result<(LaunchCommand, u16), (Vec<RunRecord>, LaunchCommand)> {
    let spec = st.ctx.spec;
    let slot = st.ctx.slot.as_ref();
    let fixed_port = slot.and_then(|s| s.port).or(spec.server.port);
    let port = match fixed_port {
        Some(p) => p,
        None => match supervise::free_port(&spec.server.host) {
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
    let res = store::write_atomic(
        &st.dir.join(store::COMMAND_TXT),
        format!("{}\n", cmd.display()).as_bytes(),
    );
    st.keep(store::COMMAND_TXT, res);
    if fixed_port.is_some()
        && std::net::TcpListener::bind((spec.server.host.as_str(), port)).is_err()
    {
        let msg = format!(
            "port {port} on {} is already in use (another server still running?): free it, or leave server.port unset to get a free port per run",
            spec.server.host
        );
        return Err((st.all_failed(FailureKind::LaunchError, &msg), cmd));
    }
    Ok((cmd, port))
}

/// Launch, wait until ready, measure, stop, and turn it all into records.
async fn start_and_measure(
    st: &mut LaunchState<'_, '_>,
    cmd: &LaunchCommand,
    port: u16,
    emit: &mut dyn FnMut(RunEvent<'_>),
) -> Vec<RunRecord> {
    let ctx = st.ctx;
    let spec = ctx.spec;
    let log_path = st.dir.join(store::SERVER_LOG);
    let mut handle = match supervise::launch(
        cmd,
        &spec.server.host,
        port,
        &log_path,
        st.run().engine.ready_line(),
    ) {
        Ok(h) => h,
        Err(e) => {
            let msg = format!("cannot start `{}`: {e} (check server.command)", cmd.program);
            let records = st.all_failed(FailureKind::LaunchError, &msg);
            for r in &records {
                st.write_summary(r, cmd, SummaryDetail::default());
            }
            return records;
        }
    };
    ctx.groups.add(handle.pid);
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
    let mut early: Vec<RunRecord> = Vec::new();
    let mut start_failure = None;
    let mut time_to_ready = None;
    let mut loads: Vec<Measured> = Vec::new();
    match ready {
        ReadyOutcome::Ready { secs } => {
            time_to_ready = Some(secs);
            emit(RunEvent::Ready { secs });
            loads = measure(st, &mut handle, emit).await;
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
    let stop = shut_down(st, &mut handle, emit).await;
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
    record_loads(st, cmd, &log_path, &handle.log, &stop, time_to_ready, loads)
}

/// Make the launch's measurements on a ready server, in order, flushing the prefix cache
/// between load points. Stops at an interrupt or a dead server.
async fn measure(
    st: &mut LaunchState<'_, '_>,
    handle: &mut ServerHandle,
    emit: &mut dyn FnMut(RunEvent<'_>),
) -> Vec<Measured> {
    let ctx = st.ctx;
    let mut loads = Vec::new();
    let control = match Control::new(&handle.base_url()) {
        Ok(c) => c,
        Err(e) => {
            st.notes.push(e.to_string());
            return loads;
        }
    };
    let info = if st.run().engine.has_server_args_info() {
        control.server_info().await
    } else {
        None
    };
    if let Some(info) = &info {
        let res = store::write_json(&st.dir.join(store::SERVER_INFO_JSON), info);
        st.keep(store::SERVER_INFO_JSON, res);
        st.provenance.effective = Some(info.clone());
    }
    let checked = super::effective::check_launch(st.dir, &st.run().resolved, info.as_ref());
    st.keep(super::effective::FILE, checked.written);
    for w in &checked.warnings {
        emit(RunEvent::Warning { message: w });
    }
    st.notes.extend(checked.warnings);
    st.effective = Some(checked.row);
    size_working_set(st, info.as_ref());
    let model = match &ctx.spec.workload.model {
        Some(m) => m.clone(),
        None => control
            .served_model()
            .await
            .unwrap_or_else(|| ctx.spec.server.model_path.0.clone()),
    };
    // The quality pass: after start-up, before the first measured window (and a flush after
    // it, so its prompts do not warm the first load point's cache).
    if let Some(q) = &ctx.spec.quality {
        if st.launch.phase != Phase::Preflight && !ctx.cancel.is_cancelled() {
            quality_pass(st, &control, &model, q).await;
            flush(st, handle, &control).await;
        }
    }
    match &st.launch.search {
        None => {
            for (i, m) in st.launch.measurements.iter().enumerate() {
                if ctx.cancel.is_cancelled() {
                    break;
                }
                if i > 0 {
                    flush(st, handle, &control).await;
                }
                let measured = measure_point(st, handle, &control, &model, *m, emit).await;
                let go_on = measured.session.stop.is_completed();
                loads.push(measured);
                if !go_on {
                    break;
                }
            }
        }
        Some(recorded) => {
            let mut history = recorded.clone();
            search_max_load(st, handle, &control, &model, &mut history, &mut loads, emit).await;
        }
    }
    loads
}

/// Send the quality prompts (`quality:`), greedy with log-probabilities, and keep the outputs
/// in `quality.jsonl`: once, or twice on the baseline's launch (its repeat on the same server
/// is the noise floor). Problems are notes on the rows; the judgement comes at decision time.
async fn quality_pass(
    st: &mut LaunchState<'_, '_>,
    control: &Control,
    model: &str,
    q: &crate::plan::quality::Quality,
) {
    use crate::load::quality;
    let prompts = match quality::prompts(q, st.ctx.vocab_size) {
        Ok(p) => p,
        Err(e) => {
            st.notes.push(format!("no quality pass: {e}"));
            return;
        }
    };
    let run_name = st.run().name.clone();
    let launch = st
        .dir
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| run_name.clone());
    let passes = if q.baseline.as_deref() == Some(run_name.as_str()) {
        2
    } else {
        1
    };
    if crate::record::quality::already_answered(st.dir, &run_name, passes, prompts.len()) {
        // Pruning's second round of this launch: its outputs were taken in the first.
        return;
    }
    let timeout = Duration::from_secs_f64(st.ctx.spec.workload.request_timeout_s);
    let mut all = Vec::new();
    let mut failed = Vec::new();
    for pass in 1..=passes {
        let t0 = Instant::now();
        let mut samples = quality::run_pass(
            control.base_url(),
            q,
            model,
            &prompts,
            &run_name,
            &launch,
            pass,
            timeout,
        )
        .await;
        let secs = t0.elapsed().as_secs_f64();
        for s in &mut samples {
            s.pass_s = secs;
            if let Some(e) = &s.error {
                failed.push(e.clone());
            }
        }
        all.extend(samples);
    }
    if let Some(first) = failed.first() {
        let short: String = first.chars().take(160).collect();
        st.notes.push(format!(
            "quality pass: {} of {} prompts got no usable answer (first: {short})",
            failed.len(),
            prompts.len() * passes as usize
        ));
    }
    let res = crate::record::quality::write(st.dir, &all);
    st.keep(crate::record::quality::FILE, res);
}

/// `shared_prefix.working_set`: size the prefix groups against the KV capacity. The basis is
/// the first configuration's capacity (from /server_info, else the log's capacity line), kept
/// for the whole sweep so every configuration gets the same prompts.
fn size_working_set(st: &mut LaunchState<'_, '_>, info: Option<&serde_json::Value>) {
    let Some(sp) = &st.ctx.spec.workload.shared_prefix else {
        return;
    };
    let Some(ws) = sp.working_set else {
        return;
    };
    let own = info
        .and_then(|i| i.get("max_total_num_tokens"))
        .and_then(serde_json::Value::as_u64)
        .or_else(|| {
            let scope = sglang_log::Scope::default();
            engine_log::summarize_file(
                &st.dir.join(store::SERVER_LOG),
                scope,
                Some(st.run().engine),
            )
            .ok()
            .and_then(|s| s.summary().max_total_num_tokens)
        });
    let basis = match st.ctx.working_set_basis.lock() {
        Ok(mut b) => {
            if b.is_none() {
                *b = own;
            }
            *b
        }
        Err(_) => own,
    };
    match basis {
        Some(b) => {
            let groups = sp.groups_for(ws, b);
            st.prefix_groups = Some(groups);
            st.notes.push(format!(
                "working set {ws} x {b} tokens (the first configuration's KV capacity): {groups} prefixes of {} tokens{}",
                sp.prefix_tokens,
                own.filter(|&o| o != b)
                    .map(|o| format!("; this server's capacity is {o}, so {:.2}x its own", groups as f64 * sp.prefix_tokens as f64 / o as f64))
                    .unwrap_or_default()
            ));
        }
        None => {
            st.prefix_groups = Some(1);
            st.notes.push(
                "working set not sized: the server reported no KV capacity (max_total_num_tokens); one shared prefix used".into(),
            );
        }
    }
}

/// The max-load search on this server: probe after probe as `search::next_step` says,
/// continuing from the probes an earlier attempt recorded, until the search is done, the
/// server dies or the sweep is interrupted.
async fn search_max_load(
    st: &mut LaunchState<'_, '_>,
    handle: &mut ServerHandle,
    control: &Control,
    model: &str,
    history: &mut Vec<ProbeRun>,
    loads: &mut Vec<Measured>,
    emit: &mut dyn FnMut(RunEvent<'_>),
) {
    let spec = st.ctx.spec;
    let (Some(ml), Some(o)) = (&spec.search.max_load, &spec.objective) else {
        return;
    };
    let log_path = st.dir.join(store::SERVER_LOG);
    loop {
        if st.ctx.cancel.is_cancelled() {
            return;
        }
        let (load, repeat) = match search::next_step(ml, &o.slo, o.noise, history) {
            search::Step::Done { .. } => return,
            search::Step::Probe { load, repeat } => (load, repeat),
        };
        if !loads.is_empty() {
            flush(st, handle, control).await;
        }
        let m = Measurement {
            repeat,
            point: search::point(ml.axis, load, &spec.workload),
        };
        let measured = measure_point(st, handle, control, model, m, emit).await;
        let go_on = measured.session.stop.is_completed();
        // The probe's row as it will be written, judged through the same column getters.
        let (record, _) = record_of(st, &measured, &log_path, &handle.log, None);
        history.push(ProbeRun::of(&record, ml.axis, &o.slo));
        loads.push(measured);
        if !go_on {
            return;
        }
    }
}

/// Clear the prefix cache between measurements, and check that it took effect: SGLang logs
/// "Cache flushed successfully!" when it did. Anything else is a note on the rows.
async fn flush(st: &mut LaunchState<'_, '_>, handle: &ServerHandle, control: &Control) {
    let mark = handle.log.line_count();
    let engine = st.run().engine;
    if let Some(n) = control
        .flush_cache(engine.flush_path(), FLUSH_PATIENCE)
        .await
    {
        st.notes.push(n);
        return;
    }
    // The scheduler logs it right after the HTTP answer; give the line a moment to arrive.
    let deadline = Instant::now() + FLUSH_LOG_WAIT;
    let flushed = engine.flushed_line();
    while !handle.log.seen_since(mark, flushed) {
        if Instant::now() >= deadline {
            st.notes.push(format!(
                "the prefix-cache flush was answered, but server.log shows no \"{flushed}\" within {} s (log level above info?): this point may have started on a warm cache",
                FLUSH_LOG_WAIT.as_secs()
            ));
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What the runner watches during one load point: the server process, its log (the window's
/// line marks) and its /metrics scraper (on only inside the window).
struct ServerWatch<'a, 'e> {
    handle: &'a mut ServerHandle,
    log: Arc<LogSink>,
    measuring: Arc<AtomicBool>,
    window: (Option<usize>, Option<usize>),
    emit: &'a mut (dyn FnMut(RunEvent<'_>) + 'e),
}

impl Watch for ServerWatch<'_, '_> {
    fn window(&mut self, open: bool) {
        let line = self.log.line_count();
        if open {
            self.window.0 = Some(line);
        } else {
            self.window.1 = Some(line);
        }
        self.measuring.store(open, Ordering::SeqCst);
    }

    fn server_exit(&mut self) -> Option<String> {
        self.handle.try_exit().map(|s| failure::describe_exit(&s))
    }

    fn progress(&mut self, p: session::Progress) {
        (self.emit)(RunEvent::LoadProgress {
            done: p.done + p.failed,
            failed: p.failed,
            output_tokens: p.output_tokens,
            elapsed_s: p.elapsed_s,
        });
    }
}

async fn measure_point(
    st: &mut LaunchState<'_, '_>,
    handle: &mut ServerHandle,
    control: &Control,
    model: &str,
    m: Measurement,
    emit: &mut dyn FnMut(RunEvent<'_>),
) -> Measured {
    let ctx = st.ctx;
    let started_at = now_rfc3339();
    let mut w = ctx.spec.workload.clone();
    w.concurrency = m.point.concurrency;
    w.request_rate = m.point.request_rate;
    w.seed = measurement_seed(ctx.spec.workload.seed, m);
    if let (Some(sp), Some(g)) = (w.shared_prefix.as_mut(), st.prefix_groups) {
        sp.groups = g;
    }
    let target = LoadTarget {
        model: model.to_string(),
        base_url: handle.base_url(),
        vocab_size: ctx.vocab_size,
        dataset: ctx.dataset.clone(),
    };
    let sfx = suffix(ctx.spec, m);
    let client = match driver::http_client(&target.base_url) {
        Ok(c) => c,
        Err(e) => {
            return Measured {
                m,
                started_at,
                session: SessionOutcome {
                    client: crate::observe::client::ClientSummary {
                        first_error: Some(format!("cannot build the HTTP client: {e}")),
                        ..Default::default()
                    },
                    load: Default::default(),
                    stop: StopReason::Completed,
                    requests_csv_error: None,
                },
                window: None,
                metrics: None,
            };
        }
    };
    let csv = match CsvFile::create(
        &st.dir.join(store::requests_csv(&sfx)),
        requests_csv::HEADER,
    ) {
        Ok(f) => Some(f),
        Err(e) => {
            st.notes
                .push(format!("requests.csv could not be written: {e}"));
            None
        }
    };
    emit(RunEvent::LoadStart {
        requests: w.requests,
        duration_s: w.duration_s,
        concurrency: w.concurrency,
    });
    // The second source: /metrics, scraped once a second during the measured window.
    let measuring = Arc::new(AtomicBool::new(false));
    let scrape_done = ctx.cancel.child_token();
    let scraper = tokio::spawn(prom::scrape_loop(
        control.clone(),
        measuring.clone(),
        scrape_done.clone(),
        Duration::from_secs(1),
    ));
    let mut watch = ServerWatch {
        log: handle.log.clone(),
        handle,
        measuring,
        window: (None, None),
        emit,
    };
    let mut session = session::run(&client, &w, &target, ctx.cancel, csv, &mut watch).await;
    let window = watch.window.0.zip(watch.window.1);
    scrape_done.cancel();
    let scrapes = scraper.await.unwrap_or_default();
    let metrics = if scrapes.is_empty() {
        None
    } else {
        let res = write_metrics_csv(&st.dir.join(format!("metrics{sfx}.csv")), &scrapes);
        st.keep(store::METRICS_CSV, res);
        Some(prom::summarize(&scrapes))
    };
    if let Some(e) = session.requests_csv_error.take() {
        st.notes.push(format!("requests.csv is incomplete: {e}"));
    }
    // The load can finish (every remaining request refused at once) before the watcher sees
    // a dead server; a server must still be running after its load. Connection errors mean
    // it may be dying right now: give its exit status a moment to show.
    if session.stop.is_completed() {
        let wait = if session.client.errors.contains_key("connect") {
            Duration::from_millis(1000)
        } else {
            Duration::ZERO
        };
        let deadline = Instant::now() + wait;
        loop {
            if let Some(how) = watch.server_exit() {
                session.stop = StopReason::ServerDied(how);
                break;
            }
            if Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    Measured {
        m,
        started_at,
        session,
        window,
        metrics,
    }
}

/// The prompts' seed for one measurement: the workload's seed mixed with the load point and
/// the repeat (`load::prompts::measurement_seed`).
fn measurement_seed(seed: u64, m: Measurement) -> u64 {
    mix_seed(
        seed,
        &[
            m.point.concurrency,
            m.point.request_rate.map_or(0, f64::to_bits),
            m.repeat,
        ],
    )
}

/// metrics.csv: one row per series per scrape.
fn write_metrics_csv(path: &Path, scrapes: &[Scrape]) -> Result<(), StoreError> {
    let mut f = CsvFile::create(path, ["t_s", "metric", "labels", "value"])?;
    for s in scrapes {
        for x in &s.samples {
            f.row([
                format!("{:.3}", s.t_s),
                x.name.clone(),
                x.labels.clone(),
                x.value.to_string(),
            ]);
        }
    }
    f.finish()
}

/// Stop the server and note anything it left behind.
async fn shut_down(
    st: &mut LaunchState<'_, '_>,
    handle: &mut ServerHandle,
    emit: &mut dyn FnMut(RunEvent<'_>),
) -> StopOutcome {
    emit(RunEvent::Stopping);
    let stop = handle
        .stop(Duration::from_secs(st.ctx.spec.server.stop_timeout_s))
        .await;
    st.ctx.groups.remove(handle.pid);
    if stop.group_left {
        let m = format!(
            "a process of the server's group (pgid {}) survived SIGKILL",
            handle.pid
        );
        emit(RunEvent::Warning { message: &m });
        st.notes.push(m);
    }
    if !stop.port_free {
        let m = format!("port {} still in use after the server stopped", handle.port);
        emit(RunEvent::Warning { message: &m });
        st.notes.push(m);
    }
    if let Some(e) = handle.log.write_error() {
        st.notes.push(format!("server.log is incomplete: {e}"));
    }
    stop
}

/// The record of one measurement: the server's side from its log window, the verdict, and
/// the status; plus how the server died, when it did. Used for the rows, and during a search
/// to judge each probe by exactly what its row will say.
fn record_of(
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
    record.verdict = Some(diagnose::diagnose(
        l.m.point.concurrency,
        w.input_tokens + w.output_tokens,
        Some(client),
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
fn preflight_standing(st: &LaunchState<'_, '_>, mut record: RunRecord) -> RunRecord {
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

/// Every measurement of a launch that is not made, as failed rows (e.g. its knob was to come
/// from a pre-flight that found no safe value).
pub fn unlaunched(
    ctx: &RunContext<'_>,
    launch: &Launch,
    kind: FailureKind,
    message: &str,
) -> Vec<RunRecord> {
    let st = LaunchState::detached(ctx, launch);
    st.all_failed(kind, message)
}

/// Every measurement of a launch left out by successive halving (`objective.prune`), as
/// `pruned` rows carrying the evidence.
pub fn pruned(ctx: &RunContext<'_>, launch: &Launch, evidence: &str) -> Vec<RunRecord> {
    let st = LaunchState::detached(ctx, launch);
    launch
        .measurements
        .iter()
        .map(|m| {
            let mut r = st.record(*m, &st.provenance.started_at);
            r.status = RunStatus::Pruned;
            r.failure_message = Some(evidence.to_string());
            r.finished_at = now_rfc3339();
            r
        })
        .collect()
}

/// One record per load that ran: the server's side from its log window, the verdict, and the
/// status; then the load points a dead server never reached.
fn record_loads(
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
