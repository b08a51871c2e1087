//! The sweep loop: the launches in order, each finished row on disk before the next launch
//! starts, the manifest updated after every launch, and the between-runs hooks.

use super::{Launch, RunContext, run_launch};
use crate::record::RunRecord;
use crate::record::gpu;
use crate::record::provenance::Manifest;
use crate::record::store::{self, ResultsDir, StoreError};
use crate::report::events::RunEvent;
use crate::server::command;
use std::time::Duration;

/// How a sweep ended.
pub struct SweepOutcome {
    pub records: Vec<RunRecord>,
    pub interrupted: bool,
}

/// Run the launches in order; each finished row is on disk before the next launch starts, and
/// the manifest is updated after every launch.
pub async fn run_sweep(
    ctx: &RunContext<'_>,
    launches: &[Launch],
    results: &ResultsDir,
    manifest: &mut Manifest,
    emit: &mut dyn FnMut(RunEvent<'_>),
) -> Result<SweepOutcome, StoreError> {
    emit(RunEvent::SweepStart {
        runs: launches.len(),
        results: &results.root,
    });
    let gpu_baseline = manifest.gpus.clone();
    let mut records = Vec::new();
    let mut carry_notes: Vec<String> = Vec::new();
    for (index, launch) in launches.iter().enumerate() {
        if ctx.cancel.is_cancelled() {
            break;
        }
        let launch_dir = results.run_dir(&launch.dir_name)?;
        let cmd = command::build(&ctx.spec.server, &launch.run, ctx.spec.server.port);
        let shown = cmd.display();
        emit(RunEvent::RunStart {
            index,
            total: launches.len(),
            name: &launch.dir_name,
            command: &shown,
        });
        let mut outcome = run_launch(ctx, launch, &launch_dir, emit).await;
        for r in &mut outcome.records {
            // A GPU the previous server did not give back is this run's context.
            r.notes.splice(0..0, carry_notes.iter().cloned());
        }
        for r in &outcome.records {
            results.append(r)?;
            emit(RunEvent::RunEnd { record: r });
        }
        manifest
            .launches
            .insert(launch.dir_name.clone(), outcome.provenance);
        records.extend(outcome.records);
        carry_notes = between_runs(ctx, &gpu_baseline, emit).await;
        manifest
            .gpu_not_released
            .extend(carry_notes.iter().cloned());
        store::write_json(
            &results.root.join(crate::record::provenance::FILE),
            manifest,
        )?;
    }
    Ok(SweepOutcome {
        interrupted: ctx.cancel.is_cancelled(),
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
