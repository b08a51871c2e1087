//! The Slurm executor: a sweep handed to the cluster's scheduler as one job array (one per GPU
//! count when configurations differ), one task per server launch, and a merge job that runs
//! after every task (`afterany`).
//!
//! ```text
//! DIR/slurm/marker             token written at submit time, read by each task (shared FS)
//! DIR/slurm/submissions.json   every submission: array job ids and their launches, merge job
//! DIR/slurm/base.csv           the rows the folder already had (a resume keeps them)
//! DIR/slurm/array-gpuN.sbatch  the scripts; DIR/slurm/%A_%a.out their output
//! DIR/runs/<launch>/rows.csv   a task's rows; launch.json its provenance
//! ```
//!
//! A task writes only inside its own runs/<launch>/; the merge rebuilds results.csv from
//! base.csv and those files (or, for a task that left none, a row with its Slurm state), so it
//! can run any number of times and no two nodes ever append to one file.
//!
//! A guided tune is submitted in waves, one per batch of its path, by a driver that merges
//! each wave itself (`wave`): the same files, the scripts named `waveK-gpuN.sbatch`.
//!
//! Here: a submission (the marker, base.csv, the arrays and the merge job, recorded), its
//! cancel, and what `--executor slurm` refuses. `script` writes the batch scripts, `client` runs
//! sbatch, sacct, squeue and scancel and reads their answers, `state` is Slurm's job states and
//! what each means for the sweep, `rows` the rows of a task that left none.

use super::Launch;
use crate::plan::spec::SlurmSpec;
use crate::record::layout::{SLURM, SLURM_SUBMISSIONS, slurm_dir};
use crate::record::provenance::now_rfc3339;
use crate::record::slurm as files;
use crate::record::store::{self, StoreError};
use std::path::Path;

pub mod client;
pub mod merge;
pub mod rows;
pub mod script;
pub mod state;
pub mod task;
pub mod wave;

pub use client::{cancel, check_client, task_states};
pub use rows::{missing_rows, out_tail};
pub use script::{array_script, gpus_for, merge_script};
pub use state::{SlurmState, States};

use client::sbatch;

/// Slurm's files in the folder: named in `record::layout`, read and written by `record::slurm`.
pub use crate::record::slurm::{
    ArrayJob, Submission, TuneWave, read_submissions, submissions_path, write_submissions,
};

#[derive(Debug, thiserror::Error)]
pub enum SlurmError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Read(#[from] crate::record::ReadError),
    /// The message names what failed and the fix.
    #[error("{0}")]
    Other(String),
}

fn other(m: impl Into<String>) -> SlurmError {
    SlurmError::Other(m.into())
}

/// The latest submission, or an error that says the folder was never submitted.
pub fn latest(dir: &Path) -> Result<Submission, SlurmError> {
    read_submissions(dir)?.pop().ok_or_else(|| {
        other(format!(
            "{} was not submitted to Slurm (no {SLURM}/{SLURM_SUBMISSIONS}): run `sgtune run SPEC --executor slurm` or `sgtune resume DIR --executor slurm`",
            dir.display()
        ))
    })
}

/// What in the spec a Slurm submission cannot run yet (`run`, `resume` and `validate` with
/// `--executor slurm` refuse it).
pub fn refusal(s: &crate::plan::spec::SweepSpec) -> Option<&'static str> {
    if s.search.preflight.is_some() {
        return Some(
            "--executor slurm does not run search.preflight yet (the pre-flight's launches depend on each other and must finish before the array is planned): run the sweep locally, or run the pre-flight locally and write the value it finds in place of `preflight`",
        );
    }
    if s.auto_repeats.is_some() {
        return Some(
            "--executor slurm does not run `repeats: auto` yet (each round's repeats depend on the rows of the one before, and the job array is planned once, at submission): give a fixed number of repeats, or run the sweep locally",
        );
    }
    if s.objective.as_ref().is_some_and(|o| o.prune) {
        return Some(
            "--executor slurm does not run `objective.prune` yet (which configurations go on past the lowest load point depends on every configuration's rows there, and the job array is planned once, at submission): remove `prune: true`, or run the sweep locally",
        );
    }
    None
}

/// Mark the latest submission cancelled, then scancel its arrays; the job ids cancelled. The
/// running tasks record their runs as interrupted, the merge job (still queued, afterany)
/// turns the others into rows.
pub fn cancel_latest(dir: &Path) -> Result<Vec<String>, SlurmError> {
    let mut subs = read_submissions(dir)?;
    let Some(sub) = subs.last_mut() else {
        return Err(latest(dir)
            .err()
            .unwrap_or_else(|| other("nothing submitted")));
    };
    // Recorded before scancel: the merge job may start the moment the array ends.
    sub.cancelled_at = Some(now_rfc3339());
    let ids: Vec<String> = sub.arrays.iter().map(|a| a.job_id.clone()).collect();
    let to_cancel = sub.clone();
    write_submissions(dir, &subs)?;
    cancel(&to_cancel)?;
    Ok(ids)
}

/// A token unique enough to tell this submission's folder from any other.
fn token() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{}-{}-{nanos}",
        crate::util::sys::hostname(),
        std::process::id()
    )
}

/// Submit these launches of the folder: the marker, base.csv (the rows kept), one array per
/// GPU count, the merge job after them all. Returns the submission (also recorded).
pub fn submit(
    dir: &Path,
    sweep: &str,
    opts: &SlurmSpec,
    launches: &[Launch],
    base_rows: &[u8],
) -> Result<Submission, SlurmError> {
    submit_as(dir, sweep, opts, launches, base_rows, None)
}

/// [`submit`], or with `wave` one wave of a guided tune: its arrays only (the tune's driver
/// merges the wave itself, and proposes the next from its rows), recorded as that wave.
pub fn submit_as(
    dir: &Path,
    sweep: &str,
    opts: &SlurmSpec,
    launches: &[Launch],
    base_rows: &[u8],
    wave: Option<TuneWave>,
) -> Result<Submission, SlurmError> {
    let dir = std::path::absolute(dir)
        .map_err(|e| other(format!("{}: cannot make absolute: {e}", dir.display())))?;
    let sf = slurm_dir(&dir);
    std::fs::create_dir_all(&sf).map_err(|e| other(format!("{}: {e}", sf.display())))?;
    let sgtune = match &opts.sgtune {
        Some(s) => s.clone(),
        None => std::env::current_exe()
            .map_err(|e| {
                other(format!(
                    "cannot find this sgtune's path ({e}): set slurm.sgtune"
                ))
            })?
            .display()
            .to_string(),
    };
    let marker = token();
    files::write_marker(&dir, &marker)?;
    files::write_base(&dir, base_rows)?;
    let mut by_gpus: Vec<(u64, Vec<String>)> = Vec::new();
    for l in launches {
        let g = gpus_for(opts, &l.run);
        match by_gpus.iter_mut().find(|(n, _)| *n == g) {
            Some((_, v)) => v.push(l.dir_name.clone()),
            None => by_gpus.push((g, vec![l.dir_name.clone()])),
        }
    }
    let mut sub = Submission {
        at: now_rfc3339(),
        marker: marker.clone(),
        arrays: Vec::new(),
        merge_job: None,
        cancelled_at: None,
        wave: wave.clone(),
    };
    // A wave's scripts are kept per wave, as evidence of what each ran.
    let prefix = wave
        .as_ref()
        .map_or("array".to_string(), |w| format!("wave{}", w.index));
    for (gpus, names) in by_gpus {
        let script = sf.join(format!("{prefix}-gpu{gpus}.sbatch"));
        store::write_atomic(
            &script,
            array_script(sweep, &dir, &sgtune, opts, gpus, &names, &marker).as_bytes(),
        )?;
        let job_id = sbatch(&script, &[])?;
        sub.arrays.push(ArrayJob {
            job_id,
            gpus,
            launches: names,
        });
    }
    if wave.is_none() {
        let script = sf.join("merge.sbatch");
        store::write_atomic(&script, merge_script(sweep, &dir, &sgtune, opts).as_bytes())?;
        let deps: Vec<&str> = sub.arrays.iter().map(|a| a.job_id.as_str()).collect();
        let dependency = if deps.is_empty() {
            Vec::new()
        } else {
            vec![format!("--dependency=afterany:{}", deps.join(":"))]
        };
        sub.merge_job = Some(sbatch(&script, &dependency)?);
    }
    let mut subs = read_submissions(&dir)?;
    subs.push(sub.clone());
    write_submissions(&dir, &subs)?;
    Ok(sub)
}

/// A task's check that it sees the folder sgtune submitted from.
pub fn check_marker(dir: &Path, expected: &str) -> Result<(), String> {
    let p = files::marker_path(dir);
    let host = crate::util::sys::hostname();
    match files::read_marker(dir) {
        Ok(t) if t == expected => Ok(()),
        Ok(t) => Err(format!(
            "{} on node {host} holds {t:?}, not this submission's {expected:?}: the folder was resubmitted since, or this node sees another folder of the same path; the results folder must be on a filesystem every node sees",
            p.display(),
        )),
        Err(e) => Err(format!(
            "{} cannot be read on node {host} ({e}): the results folder must be on a filesystem every node sees (e.g. under your home or a project share, not /tmp); rerun with --results-dir on a shared filesystem",
            p.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn submissions_are_recorded_and_read_back() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let e = latest(tmp.path()).expect_err("never submitted");
        assert!(e.to_string().contains("was not submitted to Slurm"), "{e}");
        assert_eq!(read_submissions(tmp.path()).expect("none").len(), 0);
        let sub = |id: &str| Submission {
            at: "t".into(),
            marker: "m".into(),
            arrays: vec![
                ArrayJob {
                    job_id: id.into(),
                    gpus: 1,
                    launches: vec!["a".into(), "b".into()],
                },
                ArrayJob {
                    job_id: "99".into(),
                    gpus: 2,
                    launches: vec!["c".into()],
                },
            ],
            merge_job: None,
            cancelled_at: None,
            wave: None,
        };
        std::fs::create_dir_all(slurm_dir(tmp.path())).expect("mkdir");
        write_submissions(tmp.path(), &[sub("1"), sub("2")]).expect("write");
        let l = latest(tmp.path()).expect("latest");
        assert_eq!(l, sub("2"));
        assert_eq!(l.task_of("b"), Some(("2".to_string(), 1)));
        assert_eq!(l.task_of("c"), Some(("99".to_string(), 0)));
        assert_eq!(l.task_of("z"), None);
        let all: Vec<&String> = l.launches().collect();
        assert_eq!(all, ["a", "b", "c"]);
        std::fs::write(slurm_dir(tmp.path()).join(SLURM_SUBMISSIONS), "not json").expect("write");
        assert!(
            read_submissions(tmp.path())
                .expect_err("bad")
                .to_string()
                .contains("not a submissions file")
        );
        // Nothing to cancel: no scancel is run.
        let none = Submission {
            arrays: Vec::new(),
            ..sub("3")
        };
        assert!(cancel(&none).is_ok());
    }

    #[test]
    fn a_task_refuses_a_folder_it_cannot_see_or_another_submission() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let e = check_marker(tmp.path(), "x").expect_err("no marker");
        assert!(e.contains("filesystem every node sees"), "{e}");
        std::fs::create_dir_all(slurm_dir(tmp.path())).expect("mkdir");
        std::fs::write(
            slurm_dir(tmp.path()).join(crate::record::layout::SLURM_MARKER),
            "y",
        )
        .expect("write");
        assert!(
            check_marker(tmp.path(), "x")
                .expect_err("other")
                .contains("resubmitted")
        );
        assert!(check_marker(tmp.path(), "y").is_ok());
    }
}
