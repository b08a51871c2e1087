//! Closed loop with `sessions:`: each client holds one conversation, sends its turns in order
//! (thinking between them), then takes the next session.

use crate::load::phase::PhaseCtx;
use crate::load::phase::send_turn;
use crate::load::sessions;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Closed loop with `sessions:`: `workers` clients, each holding one conversation and sending
/// its turns in order (each prompt the history so far plus the next user message, waiting
/// `think_time_s` after a reply), then taking the next session, until `count` requests or the
/// `deadline`. Sessions are numbered as clients take them; session k is the same whoever takes
/// it (`load::sessions`). A failed turn ends its session: its history has no reply to go on
/// with.
pub(super) fn spawn(
    ctx: &Arc<PhaseCtx>,
    workers: u64,
    count: Option<u64>,
    deadline: Option<Instant>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let next = Arc::new(AtomicU64::new(0));
    let next_session = Arc::new(AtomicU64::new(0));
    let think = ctx
        .w
        .sessions
        .as_ref()
        .map_or(0.0, |s| s.think_time_s.max(0.0));
    let think = Duration::from_secs_f64(think);
    (0..workers)
        .map(|worker| {
            let (ctx, next, next_session) = (ctx.clone(), next.clone(), next_session.clone());
            tokio::spawn(async move {
                let mut held: Option<(u64, sessions::Conversation)> = None;
                loop {
                    if ctx.stop.is_cancelled() || deadline.is_some_and(|d| Instant::now() >= d) {
                        break;
                    }
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if count.is_some_and(|c| index >= c) {
                        break;
                    }
                    if held.as_ref().is_none_or(|(_, c)| c.is_done()) {
                        let k = next_session.fetch_add(1, Ordering::Relaxed);
                        held = ctx.conversation(k).map(|c| (k, c));
                    }
                    let Some((k, conv)) = held.as_mut() else {
                        break;
                    };
                    let Some((s, failed)) =
                        send_turn(&ctx, index, worker, *k, conv, None, None).await
                    else {
                        break;
                    };
                    if failed {
                        held = None;
                    }
                    let more = held.as_ref().is_some_and(|(_, c)| !c.is_done());
                    if ctx.tx.send(s).is_err() {
                        break;
                    }
                    if more && !think.is_zero() {
                        tokio::select! {
                            _ = tokio::time::sleep(think) => {}
                            _ = ctx.stop.cancelled() => break,
                        }
                    }
                }
            })
        })
        .collect()
}
