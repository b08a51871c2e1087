//! Open loop: requests arrive at a rate (seeded gamma gaps), whether or not earlier ones are
//! done, with a cap on those in flight.

use crate::load::phase::PhaseCtx;
use crate::load::prompts;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Open loop: arrivals at `rate` per second with gamma gaps of shape `burstiness` (1 =
/// Poisson), seeded; at most `cap` in flight (an arrival waits for a slot, and that wait
/// shows as scheduling lag). The first request goes at the start.
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
        let mut rng = prompts::SplitMix64::new(ctx.w.seed ^ 0xA5A5_5A5A_0F0F_F0F0);
        let mut at = ctx.window_start;
        let mut tasks = Vec::new();
        for index in 0.. {
            if super::past_the_end(&ctx, index, at, count, deadline) {
                break;
            }
            let Some(permit) = super::when_due(&ctx, at, &slots).await else {
                break;
            };
            tasks.push(super::send_in_flight(&ctx, index, at, permit));
            at += Duration::from_secs_f64(prompts::gamma_gap(&mut rng, rate, burstiness));
        }
        for t in tasks {
            let _ = t.await;
        }
    });
    vec![dispatcher]
}
