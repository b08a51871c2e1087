//! Closed loop: a fixed number of clients, each sending its next request when its previous
//! one ends.

use crate::load::phase::PhaseCtx;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Closed loop: `workers` workers, each sending its next request when its previous one ends,
/// until `count` requests or the `deadline`.
pub(super) fn spawn(
    ctx: &Arc<PhaseCtx>,
    workers: u64,
    count: Option<u64>,
    deadline: Option<Instant>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let next = Arc::new(AtomicU64::new(0));
    (0..workers)
        .map(|worker| {
            let (ctx, next) = (ctx.clone(), next.clone());
            tokio::spawn(async move {
                loop {
                    if ctx.stop.is_cancelled() || deadline.is_some_and(|d| Instant::now() >= d) {
                        break;
                    }
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if count.is_some_and(|c| index >= c) {
                        break;
                    }
                    let Some(s) = ctx.send(index, worker, None).await else {
                        break;
                    };
                    if ctx.tx.send(s).is_err() {
                        break;
                    }
                }
            })
        })
        .collect()
}
