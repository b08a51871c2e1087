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

use super::Launch;
use crate::plan::expand::RunConfig;
use crate::plan::flags::ParamValue;
use crate::plan::spec::SlurmSpec;
use crate::record::layout::{SLURM, SLURM_SUBMISSIONS, slurm_dir};
use crate::record::provenance::now_rfc3339;
use crate::record::slurm as files;
use crate::record::store::{self, StoreError};
use crate::record::{RunRecord, RunStatus};
use crate::server::command::shell_quote;
use crate::server::failure::FailureKind;
use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

pub mod merge;
pub mod task;
pub mod wave;

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

/// GPUs a task of this configuration asks for: `slurm.gpus_per_run`, else tp_size × dp_size.
pub fn gpus_for(opts: &SlurmSpec, run: &RunConfig) -> u64 {
    let int = |k: &str| match run.param(k) {
        Some(ParamValue::Int(n)) if *n >= 1 => *n as u64,
        _ => 1,
    };
    opts.gpus_per_run
        .unwrap_or_else(|| int("tp_size") * int("dp_size"))
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

/// The `#SBATCH` lines every job of the sweep shares.
fn common_options(opts: &SlurmSpec) -> Vec<String> {
    let mut o = Vec::new();
    for (flag, v) in [
        ("partition", &opts.partition),
        ("account", &opts.account),
        ("qos", &opts.qos),
    ] {
        if let Some(v) = v {
            o.push(format!("--{flag}={v}"));
        }
    }
    o
}

/// The batch script of one job array.
pub fn array_script(
    sweep: &str,
    dir: &Path,
    sgtune: &str,
    opts: &SlurmSpec,
    gpus: u64,
    launches: &[String],
    marker: &str,
) -> String {
    let mut s = String::from("#!/bin/bash\n");
    let throttle = opts.max_running.map_or(String::new(), |n| format!("%{n}"));
    let mut o = vec![
        format!("--job-name=sgtune-{sweep}"),
        format!("--array=0-{}{throttle}", launches.len().saturating_sub(1)),
        format!("--output={}/{SLURM}/%A_%a.out", dir.display()),
    ];
    o.extend(common_options(opts));
    if let Some(t) = &opts.time {
        o.push(format!("--time={t}"));
    }
    if gpus > 0 {
        o.push(format!("--gres=gpu:{gpus}"));
    }
    o.extend(opts.extra.iter().cloned());
    for line in o {
        s.push_str(&format!("#SBATCH {line}\n"));
    }
    s.push_str("set -e\n");
    for l in &opts.setup {
        s.push_str(l);
        s.push('\n');
    }
    s.push_str("launches=(");
    s.push_str(
        &launches
            .iter()
            .map(|l| shell_quote(l))
            .collect::<Vec<_>>()
            .join(" "),
    );
    s.push_str(")\n");
    s.push_str(&format!(
        "exec {} run-one {} --launch \"${{launches[$SLURM_ARRAY_TASK_ID]}}\" --marker {}\n",
        shell_quote(sgtune),
        shell_quote(&dir.display().to_string()),
        shell_quote(marker)
    ));
    s
}

/// The batch script of the merge job.
pub fn merge_script(sweep: &str, dir: &Path, sgtune: &str, opts: &SlurmSpec) -> String {
    let mut s = String::from("#!/bin/bash\n");
    let mut o = vec![
        format!("--job-name=sgtune-{sweep}-merge"),
        format!("--output={}/{SLURM}/merge-%j.out", dir.display()),
    ];
    o.extend(common_options(opts));
    for line in o {
        s.push_str(&format!("#SBATCH {line}\n"));
    }
    s.push_str("set -e\n");
    for l in &opts.setup {
        s.push_str(l);
        s.push('\n');
    }
    s.push_str(&format!(
        "exec {} merge {}\n",
        shell_quote(sgtune),
        shell_quote(&dir.display().to_string())
    ));
    s
}

/// Run a Slurm command; its stdout, or an error with its stderr and the fix.
fn tool(program: &str, args: &[String]) -> Result<String, SlurmError> {
    let out = Command::new(program).args(args).output().map_err(|e| {
        other(format!(
            "cannot run `{program}` ({e}): is Slurm's client installed and on PATH on this machine?"
        ))
    })?;
    if !out.status.success() {
        return Err(other(format!(
            "`{program} {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Slurm's client is here (checked before the results folder is created).
pub fn check_client() -> Result<(), SlurmError> {
    tool("sbatch", &["--version".to_string()])
        .map(|_| ())
        .map_err(|e| {
            other(format!(
                "{e}\n  (--executor slurm submits from this machine: it needs Slurm's client and the cluster's config, as on a login node; SLURM_CONF names a config file elsewhere)"
            ))
        })
}

/// `sbatch --parsable SCRIPT` → the job id.
fn sbatch(script: &Path, extra: &[String]) -> Result<String, SlurmError> {
    let mut args = vec!["--parsable".to_string()];
    args.extend(extra.iter().cloned());
    args.push(script.display().to_string());
    let out = tool("sbatch", &args).map_err(|e| {
        other(format!(
            "{e}\n  (check the slurm: options: partition, account, qos, time, gpus_per_run; a job asking for more GPUs than a node has is refused)"
        ))
    })?;
    // `--parsable` prints `jobid` or `jobid;cluster`.
    let id = out.trim().split(';').next().unwrap_or("").to_string();
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
        return Err(other(format!(
            "sbatch answered {:?}, not a job id",
            out.trim()
        )));
    }
    Ok(id)
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

/// A task's Slurm state, as squeue, sacct or jobcomp name it (`PENDING`, `RUNNING`,
/// `COMPLETED`, `FAILED`, `CANCELLED`, `TIMEOUT`, `NODE_FAIL`, ...).
pub type States = HashMap<(String, usize), String>;

/// The states of every task of these array jobs: live ones from squeue, finished ones from
/// sacct, or (without accounting) from the jobcomp/filetxt log the cluster may keep.
pub fn task_states(job_ids: &[String]) -> States {
    let mut st = States::new();
    if job_ids.is_empty() {
        return st;
    }
    let list = job_ids.join(",");
    let finished = tool(
        "sacct",
        &[
            "-n".into(),
            "-P".into(),
            "-X".into(),
            "-j".into(),
            list.clone(),
            "-o".into(),
            "JobID,State".into(),
        ],
    );
    match finished {
        Ok(text) => parse_pairs(&text, &mut st),
        Err(_) => jobcomp_states(job_ids, &mut st),
    }
    if let Ok(text) = tool(
        "squeue",
        &[
            "-h".into(),
            "-r".into(),
            "-j".into(),
            list,
            "-o".into(),
            "%i|%T".into(),
        ],
    ) {
        parse_pairs(&text, &mut st);
    }
    st
}

/// `JOB_INDEX|STATE` lines (squeue -o %i|%T, sacct -P); `CANCELLED by 0` → `CANCELLED`.
pub fn parse_pairs(text: &str, st: &mut States) {
    for line in text.lines() {
        let Some((id, state)) = line.split_once('|') else {
            continue;
        };
        let Some((job, idx)) = id.trim().split_once('_') else {
            continue;
        };
        let Ok(idx) = idx.parse::<usize>() else {
            continue;
        };
        let state = state.split_whitespace().next().unwrap_or("").to_string();
        if !state.is_empty() {
            st.insert((job.to_string(), idx), state);
        }
    }
}

/// jobcomp/filetxt: `ArrayJobId=J ArrayTaskId=I JobState=S` per finished task.
pub fn parse_jobcomp(text: &str, job_ids: &[String], st: &mut States) {
    for line in text.lines() {
        let mut job = None;
        let mut idx = None;
        let mut state = None;
        for kv in line.split_whitespace() {
            match kv.split_once('=') {
                Some(("ArrayJobId", v)) => job = Some(v),
                Some(("ArrayTaskId", v)) => idx = v.parse::<usize>().ok(),
                Some(("JobState", v)) => state = Some(v),
                _ => {}
            }
        }
        if let (Some(j), Some(i), Some(s)) = (job, idx, state) {
            if job_ids.iter().any(|x| x == j) {
                st.insert((j.to_string(), i), s.to_string());
            }
        }
    }
}

fn jobcomp_states(job_ids: &[String], st: &mut States) {
    let Ok(conf) = tool("scontrol", &["show".into(), "config".into()]) else {
        return;
    };
    let value = |key: &str| {
        conf.lines().find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == key).then(|| v.trim().to_string())
        })
    };
    if value("JobCompType").as_deref() != Some("jobcomp/filetxt") {
        return;
    }
    if let Some(path) = value("JobCompLoc") {
        if let Ok(text) = std::fs::read_to_string(path) {
            parse_jobcomp(&text, job_ids, st);
        }
    }
}

/// Per run, as `sgtune status` shows it. A task still queued (held ones too) is pending; one
/// that holds its node (stopped, resizing, signalled, staging out) is running: neither has
/// finished, so the merge gives neither a row yet.
pub fn describe(state: Option<&str>) -> &'static str {
    match state {
        Some(
            "PENDING" | "REQUEUED" | "REQUEUE_HOLD" | "REQUEUE_FED" | "RESV_DEL_HOLD" | "SUSPENDED",
        ) => "pending",
        Some(
            "RUNNING" | "CONFIGURING" | "COMPLETING" | "RESIZING" | "SIGNALING" | "STAGE_OUT"
            | "STOPPED",
        ) => "running",
        Some("CANCELLED") => "cancelled",
        Some("COMPLETED") => "ended",
        Some(_) => "failed",
        None => "unknown",
    }
}

/// Status and kind of rows made for a task that left none: cancelled, preempted, dead nodes,
/// a state no tool knew, and a task that never finished are interrupted (a resume runs them
/// again); a task that ended on its own (completed, failed, timed out, ...) failed.
pub fn status_for(state: &str) -> RunStatus {
    match state {
        "CANCELLED" | "NODE_FAIL" | "PREEMPTED" | "BOOT_FAIL" | "REQUEUED" | "UNKNOWN" => {
            RunStatus::Interrupted
        }
        s if matches!(describe(Some(s)), "pending" | "running") => RunStatus::Interrupted,
        _ => RunStatus::Failed,
    }
}

/// The rows of a launch whose task left none: one per measurement, with its Slurm state and
/// the end of its output.
pub fn missing_rows(
    launch: &Launch,
    param_keys: &[String],
    task: &str,
    state: &str,
    out_tail: &str,
) -> Vec<RunRecord> {
    let status = status_for(state);
    let kind = if status == RunStatus::Interrupted {
        FailureKind::Interrupted
    } else {
        FailureKind::SlurmTask
    };
    let mut message = format!("Slurm task {task} ended {state} without writing its rows");
    if status == RunStatus::Interrupted {
        message.push_str(" (`sgtune resume` runs it again)");
    }
    if !out_tail.is_empty() {
        message.push_str(&format!("; its output ends: {out_tail}"));
    }
    let now = now_rfc3339();
    launch
        .measurements
        .iter()
        .map(|m| RunRecord {
            status,
            failure_kind: Some(kind),
            failure_message: Some(message.clone()),
            phase: launch.phase,
            notes: vec![format!("slurm: {state}")],
            started_at: now.clone(),
            finished_at: now.clone(),
            ..RunRecord::of_run(&launch.run, param_keys, m.point, m.repeat)
        })
        .collect()
}

/// The last non-empty lines of a task's output file, on one line.
pub fn out_tail(dir: &Path, job: &str, idx: usize) -> String {
    let p = slurm_dir(dir).join(format!("{job}_{idx}.out"));
    let text = std::fs::read_to_string(p).unwrap_or_default();
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let tail = &lines[lines.len().saturating_sub(2)..];
    let joined = tail.join(" | ");
    if joined.chars().count() > 300 {
        joined.chars().take(300).collect::<String>() + "…"
    } else {
        joined
    }
}

/// `scancel` the arrays of a submission.
pub fn cancel(sub: &Submission) -> Result<(), SlurmError> {
    let ids: Vec<String> = sub.arrays.iter().map(|a| a.job_id.clone()).collect();
    if ids.is_empty() {
        return Ok(());
    }
    tool("scancel", &ids).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_from_squeue_sacct_and_jobcomp() {
        let mut st = States::new();
        parse_pairs(
            "12_0|RUNNING\n12_1|CANCELLED by 0\n12_2|PENDING\nbad\n13|COMPLETED\n",
            &mut st,
        );
        assert_eq!(
            st.get(&("12".into(), 1)).map(String::as_str),
            Some("CANCELLED")
        );
        assert_eq!(st.len(), 3);
        let jc = "JobId=3 UserId=root(0) Name=wrap JobState=FAILED Partition=debug ArrayJobId=1 ArrayTaskId=1 ExitCode=3:0\nJobId=9 JobState=COMPLETED ArrayJobId=7 ArrayTaskId=0\n";
        let mut st = States::new();
        parse_jobcomp(jc, &["1".to_string()], &mut st);
        assert_eq!(st.len(), 1);
        assert_eq!(st.get(&("1".into(), 1)).map(String::as_str), Some("FAILED"));
    }

    /// Every job state Slurm names (squeue --help, sacct's JOB STATE CODES), plus our
    /// UNKNOWN (no tool knew the task): how `status` shows it, and the row a task that left
    /// none gets. Cancelled, preempted, lost nodes, the unknown and the unfinished are
    /// interrupted (a resume runs them again); a task that ended on its own without rows
    /// failed.
    #[test]
    fn every_slurm_state_is_shown_and_recorded_the_right_way() {
        use RunStatus::{Failed, Interrupted};
        let table: &[(&str, &str, RunStatus)] = &[
            ("PENDING", "pending", Interrupted),
            ("REQUEUED", "pending", Interrupted),
            ("REQUEUE_HOLD", "pending", Interrupted),
            ("REQUEUE_FED", "pending", Interrupted),
            ("RESV_DEL_HOLD", "pending", Interrupted),
            ("SUSPENDED", "pending", Interrupted),
            ("RUNNING", "running", Interrupted),
            ("CONFIGURING", "running", Interrupted),
            ("COMPLETING", "running", Interrupted),
            ("RESIZING", "running", Interrupted),
            ("SIGNALING", "running", Interrupted),
            ("STAGE_OUT", "running", Interrupted),
            ("STOPPED", "running", Interrupted),
            ("CANCELLED", "cancelled", Interrupted),
            ("COMPLETED", "ended", Failed),
            ("NODE_FAIL", "failed", Interrupted),
            ("PREEMPTED", "failed", Interrupted),
            ("BOOT_FAIL", "failed", Interrupted),
            ("UNKNOWN", "failed", Interrupted),
            ("FAILED", "failed", Failed),
            ("TIMEOUT", "failed", Failed),
            ("DEADLINE", "failed", Failed),
            ("OUT_OF_MEMORY", "failed", Failed),
            ("SPECIAL_EXIT", "failed", Failed),
            ("REVOKED", "failed", Failed),
        ];
        for (state, shown, status) in table {
            assert_eq!(describe(Some(state)), *shown, "{state}");
            assert_eq!(status_for(state), *status, "{state}");
        }
        assert_eq!(describe(None), "unknown");
    }

    #[test]
    fn rows_for_a_task_that_left_none() {
        let spec = crate::plan::spec::parse(
            "name: t\nserver:\n  command: [python3, f.py]\n  model_path: /m\nsweep:\n  max_total_tokens: [300]\nworkload:\n  vocab_size: 100\n  concurrency: [2, 8]\n  requests: 4\n  input_tokens: 4\n  output_tokens: 4\nrepeats: 2\n",
            "t.yaml",
        )
        .expect("spec");
        let plan = crate::plan::expand::expand(&spec);
        let launches =
            crate::tune::work::plan_launches(&spec, &plan, &|_, _| false, &|_| Vec::new());
        let l = &launches[1];
        assert_eq!(l.dir_name, "mtt300.r2");
        let keys = vec!["max_total_tokens".to_string(), "absent".to_string()];
        let rows = missing_rows(l, &keys, "9_1", "CANCELLED", "a | b");
        assert_eq!(rows.len(), 2, "one per measurement");
        for (r, c) in rows.iter().zip([2, 8]) {
            assert_eq!(r.run_name, "mtt300");
            assert_eq!(r.run_id, l.run.id);
            assert_eq!((r.concurrency, r.repeat), (c, 2));
            assert_eq!(r.status, RunStatus::Interrupted);
            assert_eq!(r.failure_kind, Some(FailureKind::Interrupted));
            assert_eq!(
                r.failure_message.as_deref(),
                Some(
                    "Slurm task 9_1 ended CANCELLED without writing its rows (`sgtune resume` runs it again); its output ends: a | b"
                )
            );
            assert_eq!(r.notes, ["slurm: CANCELLED"]);
            assert_eq!(
                r.params,
                vec![
                    ("max_total_tokens".to_string(), Some(ParamValue::Int(300))),
                    ("absent".to_string(), None)
                ]
            );
            assert_eq!(r.phase, l.phase);
        }
        let failed = missing_rows(l, &keys, "9_1", "OUT_OF_MEMORY", "");
        assert_eq!(failed[0].status, RunStatus::Failed);
        assert_eq!(failed[0].failure_kind, Some(FailureKind::SlurmTask));
        assert_eq!(
            failed[0].failure_message.as_deref(),
            Some("Slurm task 9_1 ended OUT_OF_MEMORY without writing its rows")
        );
    }

    #[test]
    fn the_end_of_a_tasks_output_on_one_line() {
        let tmp = tempfile::tempdir().expect("tempdir");
        assert_eq!(out_tail(tmp.path(), "5", 0), "", "no output file");
        std::fs::create_dir_all(slurm_dir(tmp.path())).expect("mkdir");
        std::fs::write(
            slurm_dir(tmp.path()).join("5_0.out"),
            "one\n  two  \n\nthree\n\n",
        )
        .expect("write");
        assert_eq!(out_tail(tmp.path(), "5", 0), "two | three");
        std::fs::write(slurm_dir(tmp.path()).join("5_1.out"), "only\n").expect("write");
        assert_eq!(out_tail(tmp.path(), "5", 1), "only");
        let long = "x".repeat(400);
        std::fs::write(slurm_dir(tmp.path()).join("5_2.out"), &long).expect("write");
        let t = out_tail(tmp.path(), "5", 2);
        assert_eq!(t.chars().count(), 301);
        assert!(t.ends_with("x…"));
        std::fs::write(slurm_dir(tmp.path()).join("5_3.out"), "y".repeat(300)).expect("write");
        assert_eq!(out_tail(tmp.path(), "5", 3), "y".repeat(300), "300 fit");
    }

    #[test]
    fn gpus_per_task_and_the_merge_script() {
        let spec = crate::plan::spec::parse(
            "name: t\nserver:\n  command: [python3, f.py]\n  model_path: /m\n  args: {tp_size: 2}\nconfigs:\n  - {name: a}\n  - {name: b, dp_size: 3}\n  - {name: c}\nworkload:\n  vocab_size: 100\n  concurrency: 2\n  requests: 4\n  input_tokens: 4\n  output_tokens: 4\n",
            "t.yaml",
        )
        .expect("spec");
        let mut plan = crate::plan::expand::expand(&spec);
        // (A size below 1 or not a number counts 1; the spec refuses those, a hand-made
        // configuration may not.)
        plan.runs[2].resolved = vec![
            ("tp_size".into(), ParamValue::Int(0)),
            ("dp_size".into(), ParamValue::Str("x".into())),
        ];
        let o = SlurmSpec::default();
        let g: Vec<u64> = plan.runs.iter().map(|r| gpus_for(&o, r)).collect();
        assert_eq!(
            g,
            [2, 6, 1],
            "tp × dp, a missing or non-positive size counting 1"
        );
        let fixed = SlurmSpec {
            gpus_per_run: Some(0),
            ..Default::default()
        };
        assert_eq!(gpus_for(&fixed, &plan.runs[1]), 0);

        let opts = SlurmSpec {
            partition: Some("gpu".into()),
            account: Some("acct".into()),
            qos: Some("high".into()),
            time: Some("1:00:00".into()),
            setup: vec!["module load cuda".into()],
            ..Default::default()
        };
        let s = merge_script("kv", Path::new("/shared/r"), "/opt/sgtune", &opts);
        assert_eq!(
            s,
            "#!/bin/bash\n#SBATCH --job-name=sgtune-kv-merge\n#SBATCH --output=/shared/r/slurm/merge-%j.out\n#SBATCH --partition=gpu\n#SBATCH --account=acct\n#SBATCH --qos=high\nset -e\nmodule load cuda\nexec /opt/sgtune merge /shared/r\n"
        );
    }

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
    fn squeue_and_sacct_lines_with_odd_fields() {
        let mut st = States::new();
        parse_pairs(
            "55_3|COMPLETED
55_x|FAILED
55_4|
 56_0 | PENDING (Resources)
57_[1-3]|PENDING
",
            &mut st,
        );
        let want: States = [
            (("55".to_string(), 3), "COMPLETED".to_string()),
            (("56".to_string(), 0), "PENDING".to_string()),
        ]
        .into_iter()
        .collect();
        assert_eq!(st, want);
        // jobcomp: lines of other jobs, and lines missing a field, are skipped.
        let mut st = States::new();
        parse_jobcomp(
            "JobState=FAILED ArrayJobId=1
ArrayJobId=1 ArrayTaskId=x JobState=FAILED
ArrayJobId=2 ArrayTaskId=0 JobState=TIMEOUT
ArrayJobId=1 ArrayTaskId=4 JobState=CANCELLED
",
            &["1".to_string()],
            &mut st,
        );
        assert_eq!(st.len(), 1);
        assert_eq!(
            st.get(&("1".into(), 4)).map(String::as_str),
            Some("CANCELLED")
        );
        // No job: no Slurm tool is asked.
        assert!(task_states(&[]).is_empty());
    }

    #[test]
    fn array_script_throttles_asks_gpus_and_runs_one_launch_per_task() {
        let opts = SlurmSpec {
            partition: Some("gpu".into()),
            time: Some("1:00:00".into()),
            max_running: Some(2),
            extra: vec!["--constraint=h100".into()],
            setup: vec!["module load cuda".into()],
            ..Default::default()
        };
        let s = array_script(
            "kv",
            Path::new("/shared/r/kv-1"),
            "/opt/sgtune",
            &opts,
            2,
            &["a".into(), "b c".into(), "d".into()],
            "tok",
        );
        for want in [
            "#SBATCH --array=0-2%2\n",
            "#SBATCH --output=/shared/r/kv-1/slurm/%A_%a.out\n",
            "#SBATCH --partition=gpu\n",
            "#SBATCH --time=1:00:00\n",
            "#SBATCH --gres=gpu:2\n",
            "#SBATCH --constraint=h100\n",
            "module load cuda\n",
            "launches=(a 'b c' d)\n",
            "exec /opt/sgtune run-one /shared/r/kv-1 --launch \"${launches[$SLURM_ARRAY_TASK_ID]}\" --marker tok\n",
        ] {
            assert!(s.contains(want), "{want} in\n{s}");
        }
        let no_gpu = array_script(
            "kv",
            Path::new("/d"),
            "sg",
            &SlurmSpec::default(),
            0,
            &["a".into()],
            "t",
        );
        assert!(!no_gpu.contains("--gres"), "{no_gpu}");
        assert!(no_gpu.contains("--array=0-0\n"), "{no_gpu}");
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
