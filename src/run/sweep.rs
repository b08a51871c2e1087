//! The sweep loop: the launches in order, each finished row on disk as soon as its launch
//! ends, the manifest updated after every launch, and the between-runs hooks. With slots
//! (`--parallel`, `--gpus`) several launches run at once; they are futures polled by this one
//! task (so every server is forked from the runtime's main thread, see `supervise::launch`),
//! and only this loop writes results.csv and the manifest: the one writer, so rows of
//! concurrent launches never interleave.

use super::slots::{Pool, Slot, SlotSpec};
use super::{Launch, RunContext, run_launch};
use crate::record::RunRecord;
use crate::record::gpu;
use crate::record::provenance::Manifest;
use crate::record::store::{ResultsDir, StoreError};
use crate::report::events::RunEvent;
use crate::server::command;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// How a sweep ended.
pub struct SweepOutcome {
    pub records: Vec<RunRecord>,
    pub interrupted: bool,
}

/// What a slot's future hands back to the loop.
enum Done {
    /// The server stopped and its rows are made: the loop writes them now.
    Launched {
        slot: Slot,
        dir_name: String,
        outcome: Box<super::LaunchOutcome>,
        /// Start to stop, for the deadline's pace.
        elapsed_s: f64,
    },
    /// The between-runs hooks and the GPU check are over: the slot is free again.
    Released { slot: Slot, notes: Vec<String> },
}

type Task<'f> = Pin<Box<dyn Future<Output = Done> + 'f>>;

/// Run the launches, at most as many at once as the slots allow (one, by default); each
/// finished row is on disk before the next launch in its slot starts, and the manifest is
/// updated after every launch.
pub async fn run_sweep(
    ctx: &RunContext<'_>,
    slots: &SlotSpec,
    launches: &[Launch],
    results: &ResultsDir,
    manifest: &mut Manifest,
    emit: &mut dyn FnMut(RunEvent<'_>),
) -> Result<SweepOutcome, StoreError> {
    emit(RunEvent::SweepStart {
        runs: launches.len(),
        results: &results.root,
    });
    let parallel = slots.is_parallel();
    let gpu_baseline = manifest.gpus.clone();
    let emit = RefCell::new(emit);
    let mut pool = Pool::new(slots, ctx.spec.server.port, &ctx.spec.server.host);
    let mut records = Vec::new();
    // Notes the previous launch in a slot leaves to the next one there (GPUs not released).
    let mut carry: HashMap<usize, Vec<String>> = HashMap::new();
    let mut running: FuturesUnordered<Task<'_>> = FuturesUnordered::new();
    let mut next = 0;
    loop {
        while next < launches.len() && !ctx.cancel.is_cancelled() {
            let launch = &launches[next];
            // Against a deadline, a launch that no longer fits is not started, nor is any
            // after it: the rest is left for `resume` (nothing is recorded for it).
            if let Some(d) = ctx.deadline {
                if !d.admit(ctx.spec, launch) {
                    next = launches.len();
                    break;
                }
            }
            let Some(slot) = pool.take(&launch.run) else {
                break;
            };
            let launch_dir = results.run_dir(&launch.dir_name)?;
            let index = next;
            next += 1;
            let mut slot_ctx = ctx.clone();
            slot_ctx.slot = parallel.then(|| slot.clone());
            let notes = carry.remove(&slot.index).unwrap_or_default();
            let emit = &emit;
            running.push(Box::pin(async move {
                let started = std::time::Instant::now();
                let mut e = |ev: RunEvent<'_>| {
                    if let Ok(mut f) = emit.try_borrow_mut() {
                        if parallel {
                            f(RunEvent::Slot { index: slot.index });
                        }
                        f(ev);
                    }
                };
                let mut cmd = command::build(
                    &slot_ctx.spec.server,
                    &launch.run,
                    slot.port.or(slot_ctx.spec.server.port),
                );
                if let Some(g) = slot_ctx.slot.as_ref().and_then(|s| s.gpus.as_ref()) {
                    command::set_env(&mut cmd, "CUDA_VISIBLE_DEVICES", &g.join(","));
                }
                e(RunEvent::RunStart {
                    index,
                    total: launches.len(),
                    name: &launch.dir_name,
                    command: &cmd.display(),
                });
                let mut outcome = run_launch(&slot_ctx, launch, &launch_dir, &mut e).await;
                for r in &mut outcome.records {
                    // A GPU the previous server in this slot did not give back is this run's
                    // context.
                    r.notes.splice(0..0, notes.iter().cloned());
                }
                Done::Launched {
                    slot,
                    dir_name: launch.dir_name.clone(),
                    outcome: Box::new(outcome),
                    elapsed_s: started.elapsed().as_secs_f64(),
                }
            }));
        }
        let Some(done) = running.next().await else {
            break;
        };
        match done {
            Done::Launched {
                slot,
                dir_name,
                outcome,
                elapsed_s,
            } => {
                if let Some(d) = ctx.deadline {
                    d.observe(&outcome.records, elapsed_s);
                }
                for r in &outcome.records {
                    results.append(r)?;
                    if let Ok(mut f) = emit.try_borrow_mut() {
                        if parallel {
                            f(RunEvent::Slot { index: slot.index });
                        }
                        f(RunEvent::RunEnd { record: r });
                    }
                }
                manifest.launches.insert(dir_name, outcome.provenance);
                records.extend(outcome.records);
                crate::record::provenance::write(&results.root, manifest)?;
                // The slot's GPUs, or every GPU when one launch runs at a time. CPU slots that
                // share the machine's GPUs with each other cannot be checked one by one.
                let baseline: Vec<gpu::Gpu> = match (&slot.gpus, parallel) {
                    (Some(ids), _) => gpu_baseline
                        .iter()
                        .filter(|g| {
                            ids.iter()
                                .any(|id| *id == g.index.to_string() || *id == g.uuid)
                        })
                        .cloned()
                        .collect(),
                    (None, false) => gpu_baseline.clone(),
                    (None, true) => Vec::new(),
                };
                let slot_ctx = RunContext {
                    slot: Some(slot.clone()),
                    ..ctx.clone()
                };
                let emit = &emit;
                running.push(Box::pin(async move {
                    let mut e = |ev: RunEvent<'_>| {
                        if let Ok(mut f) = emit.try_borrow_mut() {
                            if parallel {
                                f(RunEvent::Slot { index: slot.index });
                            }
                            f(ev);
                        }
                    };
                    let notes = between_runs(&slot_ctx, &baseline, &mut e).await;
                    Done::Released { slot, notes }
                }));
            }
            Done::Released { slot, notes } => {
                manifest.gpu_not_released.extend(notes.iter().cloned());
                if !notes.is_empty() {
                    crate::record::provenance::write(&results.root, manifest)?;
                }
                pool.give_back(&slot);
                carry.insert(slot.index, notes);
            }
        }
    }
    Ok(SweepOutcome {
        // A deadline that stopped the launches ends the rounds as an interrupt does.
        interrupted: ctx.cancel.is_cancelled() || ctx.deadline.is_some_and(|d| d.reached()),
        records,
    })
}

/// After a server stopped: the spec's `between_runs` command and sleep, then (on GPU machines)
/// wait for every GPU to return to its baseline memory. Returns notes for the next run.
async fn between_runs(
    ctx: &RunContext<'_>,
    gpu_baseline: &[gpu::Gpu],
    emit: &mut dyn FnMut(RunEvent<'_>),
) -> Vec<String> {
    let mut notes = Vec::new();
    if ctx.cancel.is_cancelled() {
        return notes;
    }
    if let Some(b) = &ctx.spec.between_runs {
        if let Some(c) = &b.command {
            let out = tokio::process::Command::new("sh")
                .args(["-c", c])
                .stdin(std::process::Stdio::null())
                .output()
                .await;
            let problem = match out {
                Ok(o) if o.status.success() => None,
                Ok(o) => Some(format!(
                    "between_runs.command exited with {}: {}",
                    crate::server::failure::describe_exit(&o.status),
                    String::from_utf8_lossy(&o.stderr).trim()
                )),
                Err(e) => Some(format!("between_runs.command could not start: {e}")),
            };
            if let Some(p) = problem {
                emit(RunEvent::Warning { message: &p });
                notes.push(p);
            }
        }
        if b.sleep_s > 0.0 {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs_f64(b.sleep_s)) => {}
                _ = ctx.cancel.cancelled() => {}
            }
        }
    }
    // After the site's cleanup: the GPUs the stopped server used should be back to baseline.
    if !gpu_baseline.is_empty() {
        let baseline = gpu_baseline.to_vec();
        let timeout = Duration::from_secs(ctx.spec.server.gpu_release_timeout_s);
        let held = tokio::task::spawn_blocking(move || gpu::wait_released(&baseline, timeout))
            .await
            .unwrap_or_default();
        for h in &held {
            emit(RunEvent::Warning { message: h });
        }
        notes.extend(held);
    }
    notes
}
