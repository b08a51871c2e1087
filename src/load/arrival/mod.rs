//! When each request goes: one file per arrival mode, chosen by `spawn` from the workload
//! (closed loop, open loop, sessions closed or open, a trace's replay). Each mode spawns tasks
//! that send through the phase's `PhaseCtx` and end at `count` requests, the `deadline` or a
//! stop.

mod closed;
mod closed_sessions;
mod open;
mod open_sessions;
mod replay;

use super::phase::PhaseCtx;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How a phase's requests arrive.
pub(crate) enum Arrival {
    /// `workers` clients, each sending its next request when its previous one ends.
    Closed { workers: u64 },
    /// `workers` clients, each holding one conversation at a time (`sessions:`).
    ClosedSessions { workers: u64 },
    /// Arrivals at `rate` per second (gamma gaps of shape `burstiness`), at most `cap` in flight.
    Open {
        rate: f64,
        burstiness: f64,
        cap: u64,
    },
    /// Sessions arriving at `rate` per second, each running its turns in order.
    OpenSessions {
        rate: f64,
        burstiness: f64,
        cap: u64,
    },
    /// A mooncake trace's records at their own times (× `slowdown`), at most `cap` in flight.
    Replay { slowdown: f64, cap: u64 },
}

/// Start the phase's requests as `arrival` says, until `count` requests or the `deadline`.
pub(crate) fn spawn(
    ctx: &Arc<PhaseCtx>,
    arrival: Arrival,
    count: Option<u64>,
    deadline: Option<Instant>,
) -> Vec<tokio::task::JoinHandle<()>> {
    match arrival {
        Arrival::Closed { workers } => closed::spawn(ctx, workers, count, deadline),
        Arrival::ClosedSessions { workers } => {
            closed_sessions::spawn(ctx, workers, count, deadline)
        }
        Arrival::Open {
            rate,
            burstiness,
            cap,
        } => open::spawn(ctx, rate, burstiness, cap, count, deadline),
        Arrival::OpenSessions {
            rate,
            burstiness,
            cap,
        } => open_sessions::spawn(ctx, rate, burstiness, cap, count, deadline),
        Arrival::Replay { slowdown, cap } => replay::spawn(ctx, slowdown, cap, count, deadline),
    }
}

/// Whether request `index`, due at `at`, falls past the phase's end: `count` requests, the
/// `deadline`, or a stop.
fn past_the_end(
    ctx: &PhaseCtx,
    index: u64,
    at: Instant,
    count: Option<u64>,
    deadline: Option<Instant>,
) -> bool {
    count.is_some_and(|c| index >= c)
        || deadline.is_some_and(|d| at >= d)
        || ctx.stop.is_cancelled()
}

/// An open loop's next send: wait until `at`, then for one of the `slots` in flight. None when
/// the phase stops first. The wait for a slot shows as the request's scheduling lag.
async fn when_due(
    ctx: &PhaseCtx,
    at: Instant,
    slots: &Arc<Semaphore>,
) -> Option<OwnedSemaphorePermit> {
    tokio::select! {
        _ = tokio::time::sleep_until(at.into()) => {}
        _ = ctx.stop.cancelled() => return None,
    }
    tokio::select! {
        p = slots.clone().acquire_owned() => p.ok(),
        _ = ctx.stop.cancelled() => None,
    }
}

/// Send request `index`, due at `at`, in a task of its own that holds `permit` until its
/// response ends.
fn send_in_flight(
    ctx: &Arc<PhaseCtx>,
    index: u64,
    at: Instant,
    permit: OwnedSemaphorePermit,
) -> tokio::task::JoinHandle<()> {
    let ctx = ctx.clone();
    tokio::spawn(async move {
        if let Some(s) = ctx.send(index, index, Some(at)).await {
            let _ = ctx.tx.send(s);
        }
        drop(permit);
    })
}
