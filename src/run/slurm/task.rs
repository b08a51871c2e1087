//! `sgtune run-one`: one Slurm task, one launch, into its own folder (its rows.csv and
//! launch.json, which the merge reads). Also what the task and the merge agree the submission
//! was: [`submitted_launches`].

use super::{SlurmError, check_marker};
use crate::plan::expand::RunPlan;
use crate::plan::spec::SweepSpec;
use crate::record::slurm as files;
use crate::record::store::{self, ResultsDir};
use crate::report::progress::Progress;
use crate::run::execute::Prepared;
use crate::run::finish::ExitCode;
use crate::run::prepare::{StartError, load_in_folder};
use crate::run::{self as runner, Launch, RunContext, signals};
use crate::util::say;
use std::path::Path;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

impl From<SlurmError> for StartError {
    fn from(e: SlurmError) -> Self {
        StartError::Input(e.to_string())
    }
}

/// The launches a submission made: the plan minus the rows in slurm/base.csv, as at submit
/// time (a task and the merge compute them the same way).
pub fn submitted_launches(
    dir: &Path,
) -> Result<(SweepSpec, String, RunPlan, Prepared, Vec<Launch>), StartError> {
    let spec_path = dir.join(store::SPEC_YAML);
    let (s, text, plan, prep) = load_in_folder(&spec_path, dir)?;
    let base = files::read_base(dir).map_err(|e| StartError::input(e.to_string()))?;
    // base.csv holds the rows kept when the sweep was submitted: what is left runs. A tune's
    // wave is the next batch of its path replayed from those rows at the recorded width, as
    // the driver proposed it.
    let launches = if s.tune.is_some() {
        let width = crate::record::provenance::read(dir)
            .map_err(|e| StartError::input(e.to_string()))?
            .tune_slots
            .unwrap_or(1);
        let rows = crate::run::tuning::judged(&s, &plan, dir, base.rows);
        crate::run::guided::wave(&s, &rows, width).launches
    } else {
        crate::tune::work::left_to_run(&s, &plan, &base.rows, false)
    };
    Ok((s, text, plan, prep, launches))
}

/// One task: check the folder is the one submitted, run the launch, write its rows and
/// provenance into its own folder.
pub async fn run_one(dir: &Path, launch_name: &str, marker: &str) -> Result<ExitCode, StartError> {
    check_marker(dir, marker).map_err(StartError::Input)?;
    let (s, _, plan, prep, launches) = submitted_launches(dir)?;
    let launch = launches
        .iter()
        .find(|l| l.dir_name == launch_name)
        .ok_or_else(|| {
            StartError::input(format!(
                "{}: no launch {launch_name:?} left in this sweep's plan (was spec.yaml or slurm/base.csv changed after submission?)",
                dir.display()
            ))
        })?;
    let results = ResultsDir::open(dir, &plan.param_keys);
    let launch_dir = results.run_dir(&launch.dir_name)?;
    let cancel = CancellationToken::new();
    let groups = Arc::new(signals::Groups::default());
    signals::install(
        cancel.clone(),
        groups.clone(),
        "sgtune run-one: cancelled; recording the run and stopping its server",
    );
    let basis = std::sync::Mutex::new(None);
    let ctx = RunContext {
        spec: &s,
        param_keys: &plan.param_keys,
        vocab_size: prep.vocab,
        dataset: prep.dataset.clone(),
        cancel: &cancel,
        groups: &groups,
        slot: None,
        // Each task sizes a working set against its own server (tasks share no memory).
        working_set_basis: &basis,
        deadline: None,
    };
    let mut progress = Progress::new();
    say(&format!(
        "sgtune run-one: {} on {} (CUDA_VISIBLE_DEVICES={})",
        launch.dir_name,
        crate::util::sys::hostname(),
        std::env::var("CUDA_VISIBLE_DEVICES").unwrap_or_default()
    ));
    let mut outcome =
        runner::run_launch(&ctx, launch, &launch_dir, &mut |ev| progress.handle(&ev)).await;
    progress.finish();
    if cancel.is_cancelled() {
        let task = format!(
            "{}_{}",
            std::env::var("SLURM_ARRAY_JOB_ID").unwrap_or_default(),
            std::env::var("SLURM_ARRAY_TASK_ID").unwrap_or_default()
        );
        for r in &mut outcome.records {
            r.notes.push(format!(
                "slurm: task {task} was signalled (scancel, its time limit or preemption)"
            ));
        }
    }
    files::write_task_rows(&results, &launch_dir, &outcome.records)?;
    files::write_launch_record(&launch_dir, &outcome.provenance)?;
    if cancel.is_cancelled() {
        Ok(ExitCode::Interrupted)
    } else if outcome
        .records
        .iter()
        .any(|r| r.status != crate::record::RunStatus::Ok)
    {
        Ok(ExitCode::RunsFailed)
    } else {
        Ok(ExitCode::Ok)
    }
}
