//! Slurm's commands, run and read: `sbatch` (a script in, its job id out), `sacct`, `squeue` and
//! the jobcomp log (each task's state), `scancel`; and whether Slurm's client is here at all.

use super::state::{SlurmState, States};
use super::{SlurmError, Submission, other};
use std::path::Path;
use std::process::Command;

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
pub(super) fn sbatch(script: &Path, extra: &[String]) -> Result<String, SlurmError> {
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
        let state = state.split_whitespace().next().unwrap_or("");
        if !state.is_empty() {
            st.insert((job.to_string(), idx), SlurmState::parse(state));
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
                st.insert((j.to_string(), i), SlurmState::parse(s));
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
        assert_eq!(st.get(&("12".into(), 1)), Some(&SlurmState::Cancelled));
        assert_eq!(st.len(), 3);
        let jc = "JobId=3 UserId=root(0) Name=wrap JobState=FAILED Partition=debug ArrayJobId=1 ArrayTaskId=1 ExitCode=3:0\nJobId=9 JobState=COMPLETED ArrayJobId=7 ArrayTaskId=0\n";
        let mut st = States::new();
        parse_jobcomp(jc, &["1".to_string()], &mut st);
        assert_eq!(st.len(), 1);
        assert_eq!(st.get(&("1".into(), 1)), Some(&SlurmState::Failed));
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
            (("55".to_string(), 3), SlurmState::Completed),
            (("56".to_string(), 0), SlurmState::Pending),
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
        assert_eq!(st.get(&("1".into(), 4)), Some(&SlurmState::Cancelled));
        // No job: no Slurm tool is asked.
        assert!(task_states(&[]).is_empty());
    }
}
