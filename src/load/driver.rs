//! A load's run: the warmup (closed loop, recorded and excluded from the summary), then the
//! measured window by the workload's arrival mode (`load::arrival`), which starts just before
//! the first measured send and ends at the last completion; the caller sees each sample as it
//! comes (`LoadEvent`) and gets the outcome. A stop ends it early and waits for the requests
//! in flight; an abort abandons them; the `cut` deadline policy abandons and counts them.

use super::arrival::{self, Arrival};
use super::http1;
use super::openai::{self, Prompt};
use super::phase::{PhaseCtx, SessionMemory};
use super::prompts;
use super::request::{blank_sample, mooncake, one_request};
use super::sample::{LoadEvent, LoadOutcome, LoadTarget, Phase, RequestSample};
use super::sessions;
use crate::plan::spec::{Endpoint, WorkloadSpec};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Synthetic `sessions:` (not a dataset's or a trace's conversations).
fn synthetic_sessions(w: &WorkloadSpec) -> bool {
    matches!(
        w.sessions.as_ref().map(|s| &s.source),
        Some(crate::plan::spec::SessionSource::Synthetic { .. })
    )
}

/// Whether the server returns a completion's token ids when asked (`return_token_ids`): one
/// streamed request of the prompt `ids` and one output token. None: it did not answer.
async fn reply_ids_probe(
    client: &http1::Client,
    w: &WorkloadSpec,
    target: &LoadTarget,
    ids: Vec<u64>,
    path: &str,
    timeout: Duration,
) -> Option<bool> {
    let mut body = openai::request_body(w, &target.model, Prompt::TokenIds(ids), 1);
    openai::ask_reply_ids(&mut body);
    let body = serde_json::to_vec(&body).ok()?;
    let mut sample = blank_sample(Phase::Warmup, 0, 0, f64::NAN, 1);
    sample.reply = Some(openai::Reply::default());
    let s = one_request(client, path, &body, timeout, sample).await;
    s.ok().then(|| {
        s.reply
            .is_some_and(|r| r.ids.is_some_and(|v| !v.is_empty()))
    })
}

/// Drive the workload. `stop` ends it early: no new request is sent and the requests in
/// flight are waited for (an interrupt). `abort` abandons the requests in flight too (a dead
/// server, or an interrupt whose grace ran out). Either sets `stopped`.
pub async fn drive(
    client: &Arc<http1::Client>,
    workload: &WorkloadSpec,
    target: &LoadTarget,
    stop: &CancellationToken,
    abort: &CancellationToken,
    on_event: &mut dyn FnMut(LoadEvent<'_>),
) -> LoadOutcome {
    let w = Arc::new(workload.clone());
    let target = Arc::new(target.clone());
    let n = w.concurrency.max(1);
    let mut outcome = LoadOutcome {
        warmup_ok: 0,
        warmup_failed: 0,
        cut_off: 0,
        duration_s: 0.0,
        stopped: false,
        session_reply_ids: None,
    };

    // Warmup: excluded from every number, but written to requests.csv as evidence.
    // Our own abort, so the `cut` deadline can abandon requests without touching the caller's.
    let inner_abort = CancellationToken::new();
    let forward = {
        let (outer, inner) = (abort.clone(), inner_abort.clone());
        tokio::spawn(async move {
            outer.cancelled().await;
            inner.cancel();
        })
    };
    let in_flight = Arc::new(AtomicU64::new(0));
    // Synthetic sessions on completions go as token ids when the server returns its replies'
    // ids, else as text: one question before the load decides, for every session alike.
    let mut prefixes = sessions::SentPrefixes::default();
    let reply_ids = if synthetic_sessions(&w) && w.endpoint == Endpoint::Completions {
        // Its own seed stream: nothing a session's prompt starts with, but the server caches
        // it like any prompt, so the first turns count what they share with it too.
        let probe = prompts::token_ids(w.seed, 0x1D5, 0, 8, target.vocab_size.max(1));
        let probe_tokens: Vec<u32> = probe
            .iter()
            .map(|&x| u32::try_from(x).unwrap_or(u32::MAX))
            .collect();
        let _ = prefixes.share(&probe_tokens);
        let path = client.path(w.endpoint.path());
        let timeout = Duration::from_secs_f64(w.request_timeout_s);
        let got = tokio::select! {
            g = reply_ids_probe(client, &w, &target, probe, &path, timeout) => g,
            _ = abort.cancelled() => None,
        };
        // Not answered: as SGLang and vLLM answer (a reply without ids then ends its session).
        got.unwrap_or(true)
    } else {
        true
    };
    outcome.session_reply_ids =
        (synthetic_sessions(&w) && w.endpoint == Endpoint::Completions).then_some(reply_ids);
    let memory = Arc::new(SessionMemory {
        reply_ids,
        prefixes: std::sync::Mutex::new(prefixes),
        ..SessionMemory::default()
    });
    let phase_ctx =
        |phase: Phase, window_start: Instant, tx: mpsc::UnboundedSender<RequestSample>| {
            Arc::new(PhaseCtx {
                client: client.clone(),
                w: w.clone(),
                target: target.clone(),
                phase,
                path: client.path(w.endpoint.path()),
                timeout: Duration::from_secs_f64(w.request_timeout_s),
                window_start,
                stop: stop.clone(),
                abort: inner_abort.clone(),
                tx,
                in_flight: in_flight.clone(),
                sessions: memory.clone(),
            })
        };
    if w.warmup_requests > 0 {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let far = Instant::now() + Duration::from_secs(86_400 * 365);
        // Warmup is always closed loop: it only has to warm the server.
        let warm = phase_ctx(Phase::Warmup, far, tx);
        let (workers, count) = (n.min(w.warmup_requests), Some(w.warmup_requests));
        // A mooncake trace's warmup sends its first records closed loop, in the warmup's own
        // blocks (`load::trace::mooncake_prompt`), so it leaves nothing the measurement reuses.
        let mode = if w.sessions.is_some() && mooncake(&w).is_none() {
            Arrival::ClosedSessions { workers }
        } else {
            Arrival::Closed { workers }
        };
        let handles = arrival::spawn(&warm, mode, count, None);
        drop(warm);
        while let Some(mut s) = rx.recv().await {
            // Warmup happens before the measured window: no offset in it (empty in the CSV).
            s.send_s = f64::NAN;
            if s.ok() {
                outcome.warmup_ok += 1;
            } else {
                outcome.warmup_failed += 1;
            }
            on_event(LoadEvent::Sample(&s));
        }
        for h in handles {
            let _ = h.await;
        }
        if stop.is_cancelled() || abort.is_cancelled() {
            outcome.stopped = true;
            forward.abort();
            return outcome;
        }
    }

    on_event(LoadEvent::MeasureStart);
    let start = Instant::now();
    let deadline = w.duration_s.map(|d| start + Duration::from_secs_f64(d));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let ctx = phase_ctx(Phase::Measured, start, tx);
    let (burstiness, cap) = (w.burstiness, n);
    let mode = match w.request_rate {
        // The spec refuses a rate with a trace: its records carry their own times.
        _ if mooncake(&w).is_some() => Arrival::Replay {
            slowdown: mooncake(&w).map_or(1.0, |m| m.1),
            cap,
        },
        Some(rate) if w.sessions.is_some() => Arrival::OpenSessions {
            rate,
            burstiness,
            cap,
        },
        Some(rate) => Arrival::Open {
            rate,
            burstiness,
            cap,
        },
        None if w.sessions.is_some() => Arrival::ClosedSessions { workers: n },
        None => Arrival::Closed { workers: n },
    };
    let handles = arrival::spawn(&ctx, mode, w.requests, deadline);
    drop(ctx);
    let mut last_end = start;
    let cut_at = deadline.filter(|_| w.deadline == crate::plan::spec::DeadlinePolicy::Cut);
    loop {
        tokio::select! {
            _ = tokio::time::sleep_until(cut_at.unwrap_or(start).into()), if cut_at.is_some() && !inner_abort.is_cancelled() => {
                // The deadline, with `cut`: what is still in flight is abandoned and counted.
                outcome.cut_off = in_flight.load(Ordering::SeqCst);
                inner_abort.cancel();
                last_end = cut_at.unwrap_or(last_end);
            }
            s = rx.recv() => match s {
                Some(s) => {
                    last_end = Instant::now();
                    on_event(LoadEvent::Sample(&s));
                }
                None => break,
            },
            _ = abort.cancelled() => {
                // Anything still in flight is abandoned.
                inner_abort.cancel();
                for h in &handles {
                    h.abort();
                }
                while let Ok(s) = rx.try_recv() {
                    on_event(LoadEvent::Sample(&s));
                }
                break;
            }
        }
    }
    for h in handles {
        let _ = h.await;
    }
    forward.abort();
    outcome.stopped = stop.is_cancelled() || abort.is_cancelled();
    outcome.duration_s = (last_end - start).as_secs_f64();
    on_event(LoadEvent::MeasureEnd);
    outcome
}
