//! A mooncake trace's replay: each record is sent at its own time after the window's start.

use crate::load::phase::PhaseCtx;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A mooncake trace's replay: record i is sent at its timestamp (relative to the trace's
/// first, times `slowdown`) after the window's start, whether or not earlier ones are done (an
/// open loop: the trace's times are its arrivals). At most `cap` requests in flight: a record
/// that waits for a slot shows that wait as its scheduling lag. Until the trace ends, `count`
/// requests or the `deadline`.
pub(super) fn spawn(
    ctx: &Arc<PhaseCtx>,
    slowdown: f64,
    cap: u64,
    count: Option<u64>,
    deadline: Option<Instant>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let ctx = ctx.clone();
    let dispatcher = tokio::spawn(async move {
        let slots = Arc::new(tokio::sync::Semaphore::new(cap.max(1) as usize));
        let times: Vec<f64> = ctx
            .target
            .dataset
            .iter()
            .flat_map(|d| d.iter())
            .filter_map(|p| match p {
                crate::load::dataset::DatasetPrompt::Record(r) => Some(r.at_ms),
                _ => None,
            })
            .collect();
        let mut tasks = Vec::new();
        for (index, at_ms) in (0u64..).zip(times) {
            let at =
                ctx.window_start + Duration::from_secs_f64((at_ms * slowdown / 1000.0).max(0.0));
            if super::past_the_end(&ctx, index, at, count, deadline) {
                break;
            }
            let Some(permit) = super::when_due(&ctx, at, &slots).await else {
                break;
            };
            tasks.push(super::send_in_flight(&ctx, index, at, permit));
        }
        for t in tasks {
            let _ = t.await;
        }
    });
    vec![dispatcher]
}
