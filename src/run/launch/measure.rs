//! Measuring: the launch's load points on a ready server, in order (or as the max-load search
//! asks), each one a session with its log window and its /metrics.

use super::super::session::{self, SessionOutcome, StopReason, Watch};
use super::super::{Measurement, suffix};
use super::rows::record_of;
use super::seam::{Driven, Server};
use super::upkeep::{flush, quality_pass, size_working_set};
use super::{LaunchState, Measured};
use crate::load::prompts::measurement_seed as mix_seed;
use crate::load::request::http_client;
use crate::load::sample::LoadTarget;
use crate::observe::prom;
use crate::record::Phase;
use crate::record::provenance::now_rfc3339;
use crate::record::requests::RequestsCsv;
use crate::record::store;
use crate::record::{metrics, server_info};
use crate::report::events::RunEvent;
use crate::server::supervise::LogSink;
use crate::tune::search::{self, ProbeRun};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Make the launch's measurements on a ready server, in order, flushing the prefix cache
/// between load points. Stops at an interrupt or a dead server. Err: no measurement could be
/// made at all (the control client could not be built), the message for the failed rows.
pub(super) async fn measure(
    st: &mut LaunchState<'_, '_>,
    server: &mut impl Server,
    emit: &mut dyn FnMut(RunEvent<'_>),
) -> Result<Vec<Measured>, String> {
    let ctx = st.ctx;
    let mut loads = Vec::new();
    server.control()?;
    let info = if st.run().engine.has_server_args_info() {
        server.server_info().await
    } else {
        None
    };
    if let Some(info) = &info {
        let res = server_info::write(st.dir, info);
        st.keep(store::SERVER_INFO_JSON, res);
        st.provenance.effective = Some(info.clone());
    }
    let checked = super::super::effective::check_launch(st.dir, &st.run().resolved, info.as_ref());
    st.keep(super::super::effective::FILE, checked.written);
    for w in &checked.warnings {
        emit(RunEvent::Warning { message: w });
    }
    st.notes.extend(checked.warnings);
    st.effective = Some(checked.row);
    size_working_set(st, info.as_ref());
    let model = match &ctx.spec.workload.model {
        Some(m) => m.clone(),
        None => server
            .served_model()
            .await
            .unwrap_or_else(|| ctx.spec.server.model_path.0.clone()),
    };
    // The quality pass: after start-up, before the first measured window (and a flush after
    // it, so its prompts do not warm the first load point's cache).
    if let Some(q) = &ctx.spec.quality {
        if st.launch.phase != Phase::Preflight && !ctx.cancel.is_cancelled() {
            quality_pass(st, server, &model, q).await;
            flush(st, server).await;
        }
    }
    match &st.launch.search {
        None => {
            for (i, m) in st.launch.measurements.iter().enumerate() {
                if ctx.cancel.is_cancelled() {
                    break;
                }
                if i > 0 {
                    flush(st, server).await;
                }
                let measured = measure_point(st, server, &model, *m, emit).await;
                let go_on = measured.session.stop.is_completed();
                loads.push(measured);
                if !go_on {
                    break;
                }
            }
        }
        Some(recorded) => {
            let mut history = recorded.clone();
            search_max_load(st, server, &model, &mut history, &mut loads, emit).await;
        }
    }
    Ok(loads)
}

/// The max-load search on this server: probe after probe as `search::next_step` says,
/// continuing from the probes an earlier attempt recorded, until the search is done, the
/// server dies or the sweep is interrupted.
async fn search_max_load(
    st: &mut LaunchState<'_, '_>,
    server: &mut impl Server,
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
            flush(st, server).await;
        }
        let m = Measurement {
            repeat,
            point: search::point(ml.axis, load, &spec.workload),
        };
        let measured = measure_point(st, server, model, m, emit).await;
        let go_on = measured.session.stop.is_completed();
        // The probe's row as it will be written, judged through the same column getters.
        let (record, _) = record_of(st, &measured, &log_path, server.log(), None);
        history.push(ProbeRun::of(&record, ml.axis, &o.slo));
        loads.push(measured);
        if !go_on {
            return;
        }
    }
}

/// What the launch watches during one load point: the log (the window's line marks) and the
/// progress. Whether the server exited is the server's to say (`Server::drive`).
struct LogWatch<'a, 'e> {
    log: Arc<LogSink>,
    window: (Option<usize>, Option<usize>),
    emit: &'a mut (dyn FnMut(RunEvent<'_>) + 'e),
}

impl Watch for LogWatch<'_, '_> {
    fn window(&mut self, open: bool) {
        let line = self.log.line_count();
        if open {
            self.window.0 = Some(line);
        } else {
            self.window.1 = Some(line);
        }
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
    server: &mut impl Server,
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
        base_url: server.base_url(),
        vocab_size: ctx.vocab_size,
        dataset: ctx.dataset.clone(),
    };
    let sfx = suffix(ctx.spec, m);
    let client = match http_client(&target.base_url) {
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
    let csv = match RequestsCsv::create(&st.dir.join(store::requests_csv(&sfx))) {
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
    let mut watch = LogWatch {
        log: server.log().clone(),
        window: (None, None),
        emit,
    };
    let Driven {
        mut session,
        scrapes,
    } = server
        .drive(&client, &w, &target, ctx.cancel, csv, &mut watch)
        .await;
    let window = watch.window.0.zip(watch.window.1);
    let metrics = if scrapes.is_empty() {
        None
    } else {
        let res = metrics::write(&st.dir.join(store::metrics_csv(&sfx)), &scrapes);
        st.keep(store::METRICS_CSV, res);
        Some(prom::summarize(&scrapes))
    };
    if session.client.sessions_reply_ids == Some(false) {
        st.notes.push(
            "sessions: the server returned no token ids for its replies (return_token_ids), so the completions sessions went as text prompts, each reply's text in the history".into(),
        );
    }
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
            if let Some(how) = server.exited() {
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
