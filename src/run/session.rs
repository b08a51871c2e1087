//! One load point, driven to its end: the workload through `load::driver`, every sample into
//! requests.csv and into the client summary, the client's own CPU over the measured window,
//! and the stop rules (the user's interrupt with a bounded grace, or a watcher's word that
//! the server died). `sgtune run` and `sgtune load` both measure through this one path, so a
//! number means the same in either.

use crate::load::driver;
use crate::load::http1;
use crate::load::sample::{LoadEvent, LoadOutcome, LoadTarget, Phase};
use crate::observe::client::{self, ClientSummary};
use crate::plan::spec::WorkloadSpec;
use crate::record::requests::RequestsCsv;
use crate::record::store::StoreError;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How long an interrupted load waits for its requests in flight before abandoning them.
pub const INTERRUPT_GRACE: Duration = Duration::from_secs(10);

/// How often the stop rules are checked while the load runs.
const POLL: Duration = Duration::from_millis(250);

/// Why a load point ended.
#[derive(Debug, Clone, PartialEq)]
pub enum StopReason {
    /// It ran to its request count or duration.
    Completed,
    /// The user interrupted it (first Ctrl-C / SIGTERM / SIGHUP).
    Interrupted,
    /// The server exited during the load; how it ended.
    ServerDied(String),
}

impl StopReason {
    pub fn is_completed(&self) -> bool {
        matches!(self, StopReason::Completed)
    }
}

/// Measured-phase progress, at most every 200 ms.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub done: u64,
    pub failed: u64,
    pub output_tokens: u64,
    pub elapsed_s: f64,
}

/// What a caller wants to hear about while a load point runs. Every method has a default, so
/// `sgtune load` (no server of its own) and `sgtune run` (a supervised server, its log and its
/// /metrics) implement only what they need.
pub trait Watch {
    /// The measured window opened (`true`) or closed (`false`): warmup excluded.
    fn window(&mut self, _open: bool) {}
    /// Checked every 250 ms: `Some(how)` means the server died, and the load stops at once.
    fn server_exit(&mut self) -> Option<String> {
        None
    }
    fn progress(&mut self, _p: Progress) {}
}

/// A load point's result.
pub struct SessionOutcome {
    pub client: ClientSummary,
    pub load: LoadOutcome,
    pub stop: StopReason,
    /// requests.csv could not be written in full (the row records it).
    pub requests_csv_error: Option<StoreError>,
}

/// Drive `w` against `target` until it completes, `cancel` fires (the grace lets requests in
/// flight finish), or `watch` reports the server gone.
pub async fn run(
    client: &Arc<http1::Client>,
    w: &WorkloadSpec,
    target: &LoadTarget,
    cancel: &CancellationToken,
    mut requests_csv: Option<RequestsCsv>,
    watch: &mut dyn Watch,
) -> SessionOutcome {
    // `stop` ends sending: the user's interrupt reaches it through the parent token, a dead
    // server through `stop.cancel()`. `abort` abandons what is in flight.
    let stop = cancel.child_token();
    let abort = CancellationToken::new();
    let (mut cpu_start, mut cpu_end) = (None, None);
    let mut progress = Progress {
        done: 0,
        failed: 0,
        output_tokens: 0,
        elapsed_s: 0.0,
    };
    let mut measure_t0 = Instant::now();
    let mut last_progress = Instant::now();
    let mut acc = client::Accumulator::new(w.input_tokens, w.slo.as_ref());
    let mut died: Option<String> = None;
    let mut interrupted_at: Option<Instant> = None;
    // The watcher is needed both inside the driver's event callback and in the poll loop
    // below; the two never run at once, so a RefCell hands it to whichever runs.
    let watch = std::cell::RefCell::new(watch);
    let mut on_event = |ev: LoadEvent<'_>| match ev {
        LoadEvent::MeasureStart => {
            measure_t0 = Instant::now();
            cpu_start = crate::util::sys::process_cpu_s();
            watch.borrow_mut().window(true);
        }
        LoadEvent::MeasureEnd => {
            cpu_end = crate::util::sys::process_cpu_s();
            watch.borrow_mut().window(false);
        }
        LoadEvent::Sample(s) => {
            acc.add(s);
            if let Some(f) = requests_csv.as_mut() {
                f.add(s);
            }
            if s.phase == Phase::Measured {
                if s.ok() {
                    progress.done += 1;
                    progress.output_tokens += s.output_tokens();
                } else {
                    progress.failed += 1;
                }
                if last_progress.elapsed() >= Duration::from_millis(200) {
                    last_progress = Instant::now();
                    progress.elapsed_s = measure_t0.elapsed().as_secs_f64();
                    watch.borrow_mut().progress(progress);
                }
            }
        }
    };
    let load = {
        let fut = driver::drive(client, w, target, &stop, &abort, &mut on_event);
        tokio::pin!(fut);
        loop {
            tokio::select! {
                out = &mut fut => break out,
                _ = tokio::time::sleep(POLL) => {
                    if cancel.is_cancelled() {
                        let t = *interrupted_at.get_or_insert_with(Instant::now);
                        if t.elapsed() >= INTERRUPT_GRACE {
                            abort.cancel();
                        }
                    }
                    if died.is_none() {
                        if let Some(how) = watch.borrow_mut().server_exit() {
                            died = Some(how);
                            stop.cancel();
                            abort.cancel();
                        }
                    }
                }
            }
        }
    };
    let requests_csv_error = requests_csv.and_then(|f| f.finish().err());
    let mut summary = acc.finish(load.duration_s);
    summary.client_cpu_cores = cpu_start
        .zip(cpu_end)
        .and_then(|(a, b)| (load.duration_s > 0.0).then(|| (b - a) / load.duration_s));
    summary.cut_off = load.cut_off;
    summary.sessions_reply_ids = load.session_reply_ids;
    client::assess_client(&mut summary, crate::util::sys::available_cores());
    let stop = match died {
        Some(how) => StopReason::ServerDied(how),
        None if cancel.is_cancelled() => StopReason::Interrupted,
        None => StopReason::Completed,
    };
    SessionOutcome {
        client: summary,
        load,
        stop,
        requests_csv_error,
    }
}
