//! `--executor slurm` and its subcommands: submit a sweep (new or resumed) as job arrays,
//! `run-one` (one task: `run::slurm::task`), `merge` and `status` (`run::slurm::merge`, the
//! table rendered by `report::slurm`), and `cancel`.

use super::{CmdError, ExitCode, out};
use crate::plan::spec::SlurmSpec;
use crate::record::store::ResultsDir;
use crate::run::Launch;
use crate::run::execute::SweepInput;
use crate::run::slurm::{self, SlurmError};
use std::path::Path;

impl From<SlurmError> for CmdError {
    fn from(e: SlurmError) -> Self {
        CmdError::input(e.to_string())
    }
}

/// The `slurm:` section overlaid with the command-line flags.
pub fn options(spec: Option<&SlurmSpec>, flags: &crate::cmd::cli::SlurmArgs) -> SlurmSpec {
    let mut o = spec.cloned().unwrap_or_default();
    let set = |slot: &mut Option<String>, v: &Option<String>| {
        if v.is_some() {
            slot.clone_from(v);
        }
    };
    set(&mut o.partition, &flags.partition);
    set(&mut o.account, &flags.account);
    set(&mut o.time, &flags.time);
    set(&mut o.qos, &flags.qos);
    if flags.max_running.is_some() {
        o.max_running = flags.max_running;
    }
    o.extra.extend(flags.sbatch_opt.iter().cloned());
    o
}

/// Submit the launches of a results folder whose results.csv holds the rows to keep.
pub fn submit(
    input: &SweepInput<'_>,
    results: &ResultsDir,
    launches: &[Launch],
    opts: &SlurmSpec,
) -> Result<ExitCode, CmdError> {
    if launches.is_empty() {
        out("nothing to submit: every planned run has its row");
        return Ok(ExitCode::Ok);
    }
    let base = std::fs::read(results.results_csv())
        .map_err(|e| CmdError::input(format!("{}: {e}", results.results_csv().display())))?;
    let sub = slurm::submit(&results.root, &input.plan.sweep_name, opts, launches, &base)?;
    for a in &sub.arrays {
        out(&format!(
            "submitted job array {} ({} task(s){}): {}",
            a.job_id,
            a.launches.len(),
            if a.gpus > 0 {
                format!(", gres gpu:{}", a.gpus)
            } else {
                String::new()
            },
            a.launches.join(" ")
        ));
    }
    if let Some(m) = &sub.merge_job {
        out(&format!("merge job {m} runs after them (afterany)"));
    }
    out(&format!(
        "results: {}\n  follow: sgtune status {0}\n  stop:   sgtune cancel {0}",
        results.root.display()
    ));
    Ok(ExitCode::Ok)
}

/// One task (`run::slurm::task::run_one`).
pub async fn run_one(dir: &Path, launch_name: &str, marker: &str) -> Result<ExitCode, CmdError> {
    Ok(slurm::task::run_one(dir, launch_name, marker).await?)
}

/// The merge (`run::slurm::merge::merge`).
pub fn merge(dir: &Path) -> Result<ExitCode, CmdError> {
    Ok(slurm::merge::merge(dir)?)
}

/// Per run of the latest submission: ok / failed / pending / running / cancelled.
pub fn status(dir: &Path) -> Result<ExitCode, CmdError> {
    let view = slurm::merge::status_view(dir)?;
    for l in crate::report::slurm::lines(&view) {
        out(&l);
    }
    Ok(ExitCode::Ok)
}

/// scancel the latest submission's arrays; the running tasks record their runs as
/// interrupted, the merge job (still queued, afterany) turns the others into rows.
pub fn cancel(dir: &Path) -> Result<ExitCode, CmdError> {
    let wave = slurm::latest(dir)?.wave;
    let ids = slurm::cancel_latest(dir)?;
    if let Some(w) = wave {
        out(&format!(
            "cancelled tune wave {} (job array(s) {}); the tune's driver, if it runs, merges the wave's rows and stops; `sgtune resume {} --executor slurm` continues the tune",
            w.index,
            ids.join(" "),
            dir.display()
        ));
        return Ok(ExitCode::Ok);
    }
    out(&format!(
        "cancelled job array(s) {}; the merge job records each run's state; `sgtune resume {} --executor slurm` submits what is missing",
        ids.join(" "),
        dir.display()
    ));
    Ok(ExitCode::Ok)
}
