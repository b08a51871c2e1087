//! Open loop with `sessions:`: sessions arrive at a rate, and each runs its turns in order, the
//! next one due a think time after the previous reply.

use crate::load::phase::PhaseCtx;
use crate::load::phase::send_turn;
use crate::load::prompts;
use crate::load::sessions;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Open loop with `sessions:`: sessions arrive at `rate` per second (gamma gaps of shape
/// `burstiness`, seeded as single requests' arrivals are), and each runs its turns in order,
/// the next one due `think_time_s` after the previous reply. At most `cap` requests are in
/// flight: a due turn waits for a slot, and that wait shows as its scheduling lag. Until
/// `count` requests (turns) or the `deadline`.
pub(super) fn spawn(
    ctx: &Arc<PhaseCtx>,
    rate: f64,
    burstiness: f64,
    cap: u64,
    count: Option<u64>,
    deadline: Option<Instant>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let ctx = ctx.clone();
    let dispatcher = tokio::spawn(async move {
        let slots = Arc::new(tokio::sync::Semaphore::new(cap.max(1) as usize));
        let next = Arc::new(AtomicU64::new(0));
        let mut rng = prompts::SplitMix64::new(ctx.w.seed ^ 0xA5A5_5A5A_0F0F_F0F0);
        let think = ctx
            .w
            .sessions
            .as_ref()
            .map_or(0.0, |s| s.think_time_s.max(0.0));
        let think = Duration::from_secs_f64(think);
        let mut at = ctx.window_start;
        let mut tasks = Vec::new();
        for k in 0.. {
            let sent = next.load(Ordering::Relaxed);
            if super::past_the_end(&ctx, sent, at, count, deadline) {
                break;
            }
            let Some(mut conv) = ctx.conversation(k) else {
                break;
            };
            // The first turn's share is counted before the session's arrival: a tokenization
            // by the server must not show as the turn's lateness. The sessions still join the
            // first turns in their order, which is the order they are sent in.
            let mut counted = match conv.next_turn() {
                Some(t) if t.reusable == sessions::Reuse::FirstTurn => {
                    let Some(f) = ctx.first_turn_share(&t.prompt).await else {
                        break;
                    };
                    Some(f)
                }
                _ => None,
            };
            tokio::select! {
                _ = tokio::time::sleep_until(at.into()) => {}
                _ = ctx.stop.cancelled() => break,
            }
            let (ctx2, slots, next) = (ctx.clone(), slots.clone(), next.clone());
            let arrival = at;
            tasks.push(tokio::spawn(async move {
                let mut due = arrival;
                while !conv.is_done() {
                    if ctx2.stop.is_cancelled() || deadline.is_some_and(|d| Instant::now() >= d) {
                        break;
                    }
                    let permit = tokio::select! {
                        p = slots.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
                        _ = ctx2.stop.cancelled() => break,
                    };
                    // Numbered when sent, so `count` is the turns sent.
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if count.is_some_and(|c| index >= c) {
                        break;
                    }
                    let Some((s, failed)) =
                        send_turn(&ctx2, index, k, k, &mut conv, Some(due), counted.take()).await
                    else {
                        break;
                    };
                    drop(permit);
                    if ctx2.tx.send(s).is_err() || failed {
                        break;
                    }
                    due = Instant::now() + think;
                    if !conv.is_done() && !think.is_zero() {
                        tokio::select! {
                            _ = tokio::time::sleep_until(due.into()) => {}
                            _ = ctx2.stop.cancelled() => break,
                        }
                    }
                }
            }));
            at += Duration::from_secs_f64(prompts::gamma_gap(&mut rng, rate, burstiness));
        }
        for t in tasks {
            let _ = t.await;
        }
    });
    vec![dispatcher]
}
