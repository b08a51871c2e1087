//! One server launch: one configuration in, one record per measurement out, every file in its
//! own folder under runs/ (so the same unit can later run as one task of a Slurm job array).
//!
//! The stages, one function each: `prepare` (port, command, config files) → `start` (launch,
//! wait until ready) → `measure` (one session per load point, the cache flushed between) →
//! `shut_down` (stop, check the group and the port) → `record_loads` (log summary, verdict,
//! status per measurement) → summaries written. Whatever fails at a stage becomes the rows'
//! failure; nothing is dropped.
//!
//! The files: `start` (prepare, start, shut down), `measure` (the load points and the search),
//! `upkeep` (between loads: the quality pass, the flush, the working set), `rows` (records,
//! failures, summaries), `seam` (the server behind a trait: the real processes, or the unit
//! tests' scripted server).

mod measure;
mod rows;
mod seam;
mod start;
#[cfg(test)]
mod tests;
mod upkeep;

use super::session::SessionOutcome;
use super::{Launch, Measurement, RunContext};
use crate::observe::prom::MetricsSummary;
use crate::record::RunRecord;
use crate::record::provenance::{LaunchRecord, now_rfc3339};
use crate::report::events::RunEvent;
use crate::server::failure::FailureKind;
use seam::Launcher;
use std::path::Path;

/// What one server launch produced.
pub struct LaunchOutcome {
    /// One per measurement made (or failed); measurements never started are absent.
    pub records: Vec<RunRecord>,
    pub provenance: LaunchRecord,
}

/// The state of one launch as it moves through its stages.
struct LaunchState<'c, 'l> {
    ctx: &'c RunContext<'c>,
    launch: &'l Launch,
    dir: &'l Path,
    provenance: LaunchRecord,
    /// Notes for every row of this launch (a file that could not be written, a slow stop).
    notes: Vec<String>,
    /// `shared_prefix.working_set` sized for this launch: the number of prefix groups.
    prefix_groups: Option<u64>,
    /// What the server runs with against what was asked (set once it is ready).
    effective: Option<crate::observe::effective::EffectiveArgs>,
}

/// One load point's measurement, before it becomes a record.
struct Measured {
    m: Measurement,
    started_at: String,
    session: SessionOutcome,
    /// server.log line marks of the measured window.
    window: Option<(usize, usize)>,
    metrics: Option<MetricsSummary>,
}

impl<'c, 'l> LaunchState<'c, 'l> {
    /// The state of a launch that never starts a server: for rows made without one.
    fn detached(ctx: &'c RunContext<'c>, launch: &'l Launch) -> Self {
        LaunchState {
            ctx,
            launch,
            dir: Path::new(""),
            provenance: LaunchRecord {
                started_at: now_rfc3339(),
                ..Default::default()
            },
            notes: Vec::new(),
            prefix_groups: None,
            effective: None,
        }
    }

    fn run(&self) -> &crate::plan::expand::RunConfig {
        &self.launch.run
    }
}

/// Launch one server, make its measurements, stop it, and record everything.
pub async fn run_launch(
    ctx: &RunContext<'_>,
    launch: &Launch,
    launch_dir: &Path,
    emit: &mut dyn FnMut(RunEvent<'_>),
) -> LaunchOutcome {
    launch_with(&seam::Processes, ctx, launch, launch_dir, emit).await
}

/// `run_launch` with the server behind `launcher` (the unit tests' scripted one, or real
/// processes).
async fn launch_with<L: Launcher>(
    launcher: &L,
    ctx: &RunContext<'_>,
    launch: &Launch,
    launch_dir: &Path,
    emit: &mut dyn FnMut(RunEvent<'_>),
) -> LaunchOutcome {
    let mut st = LaunchState {
        ctx,
        launch,
        dir: launch_dir,
        provenance: LaunchRecord {
            run_name: launch.run.name.clone(),
            run_id: launch.run.id.clone(),
            started_at: now_rfc3339(),
            ..Default::default()
        },
        notes: Vec::new(),
        prefix_groups: None,
        effective: None,
    };
    let records = match start::prepare(launcher, &mut st) {
        Ok((cmd, port)) => start::start_and_measure(launcher, &mut st, &cmd, port, emit).await,
        Err((mut records, cmd)) => {
            for r in &mut records {
                r.notes = st.notes.clone();
            }
            for r in &records {
                st.write_summary(r, &cmd, rows::SummaryDetail::default());
            }
            records
        }
    };
    st.provenance.finished_at = now_rfc3339();
    LaunchOutcome {
        records,
        provenance: st.provenance,
    }
}

/// Every measurement of a launch that is not made, as failed rows (e.g. its knob was to come
/// from a pre-flight that found no safe value).
pub fn unlaunched(
    ctx: &RunContext<'_>,
    launch: &Launch,
    kind: FailureKind,
    message: &str,
) -> Vec<RunRecord> {
    let st = LaunchState::detached(ctx, launch);
    st.all_failed(kind, message)
}

/// Every measurement of a launch left out by successive halving (`objective.prune`), as
/// `pruned` rows carrying the evidence.
pub fn pruned(ctx: &RunContext<'_>, launch: &Launch, evidence: &str) -> Vec<RunRecord> {
    let st = LaunchState::detached(ctx, launch);
    st.all_pruned(evidence)
}
