//! `--executor slurm` and its subcommands: submit a sweep (new or resumed) as job arrays,
//! `run-one` (one task: one launch into its own folder), `merge` (results.csv, results.md and
//! the decision from the tasks' files), `status` and `cancel`.

use super::sweep::{self, SweepInput};
use super::{CmdError, ExitCode, out};
use crate::plan::spec::SlurmSpec;
use crate::record::provenance::{self, LaunchRecord};
use crate::record::rows;
use crate::record::store::{self, ResultsDir};
use crate::report::progress::Progress;
use crate::run::slurm::{self, SlurmError};
use crate::run::{self as runner, Launch, RunContext, signals};
use crate::util::say;
use std::path::Path;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

impl From<SlurmError> for CmdError {
    fn from(e: SlurmError) -> Self {
        CmdError::Input(e.to_string())
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

/// The launches a submission made: the plan minus the rows in slurm/base.csv, as at submit
/// time (a task and the merge compute them the same way).
fn submitted_launches(
    dir: &Path,
) -> Result<
    (
        crate::plan::spec::SweepSpec,
        String,
        crate::plan::expand::RunPlan,
        sweep::Prepared,
        Vec<Launch>,
    ),
    CmdError,
> {
    let spec_path = dir.join(store::SPEC_YAML);
    let (s, text, plan, prep) = sweep::load_in_folder(&spec_path, dir)?;
    let base_path = slurm::folder(dir).join(slurm::BASE);
    let base = rows::read(&base_path).map_err(|e| CmdError::input(e.to_string()))?;
    // base.csv holds the rows kept when the sweep was submitted: what is left runs.
    let launches = crate::tune::work::left_to_run(&s, &plan, &base.rows, false);
    Ok((s, text, plan, prep, launches))
}

/// One task: check the folder is the one submitted, run the launch, write its rows and
/// provenance into its own folder.
pub async fn run_one(dir: &Path, launch_name: &str, marker: &str) -> Result<ExitCode, CmdError> {
    slurm::check_marker(dir, marker).map_err(CmdError::Input)?;
    let (s, _, plan, prep, launches) = submitted_launches(dir)?;
    let launch = launches
        .iter()
        .find(|l| l.dir_name == launch_name)
        .ok_or_else(|| {
            CmdError::input(format!(
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
    results.write_rows(&launch_dir.join(slurm::ROWS), &outcome.records)?;
    store::write_json(&launch_dir.join(slurm::LAUNCH_RECORD), &outcome.provenance)?;
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

/// Rebuild results.csv from slurm/base.csv and every submitted launch's rows (or a row with
/// its Slurm state), then the manifest, results.md and the decision. Idempotent.
pub fn merge(dir: &Path) -> Result<ExitCode, CmdError> {
    let sub = slurm::latest(dir)?;
    let jobs: Vec<String> = sub.arrays.iter().map(|a| a.job_id.clone()).collect();
    merge_with(dir, &sub, &slurm::task_states(&jobs))
}

/// The merge, given every task's Slurm state (what squeue, sacct or jobcomp said).
fn merge_with(
    dir: &Path,
    sub: &slurm::Submission,
    states: &slurm::States,
) -> Result<ExitCode, CmdError> {
    let (s, _, plan, _, launches) = submitted_launches(dir)?;
    let results = ResultsDir::open(dir, &plan.param_keys);
    let base = rows::read(&slurm::folder(dir).join(slurm::BASE))
        .map_err(|e| CmdError::input(e.to_string()))?;
    let mut manifest = provenance::read(dir).map_err(|e| CmdError::input(e.to_string()))?;
    let mut raw = base.raw.clone();
    let mut pending = false;
    for name in sub.launches() {
        let Some(launch) = launches.iter().find(|l| &l.dir_name == name) else {
            continue;
        };
        let ldir = store::launch_dir(dir, name);
        match rows::read(&ldir.join(slurm::ROWS)) {
            Ok(t) => raw.extend(t.raw),
            Err(_) => {
                let (job, idx) = sub.task_of(name).unwrap_or_default();
                let state = known_state(sub, states, &job, idx);
                if matches!(slurm::describe(Some(&state)), "pending" | "running") {
                    // Merged early (by hand): this run has no row yet.
                    pending = true;
                    continue;
                }
                let tail = slurm::out_tail(dir, &job, idx);
                let recs = slurm::missing_rows(
                    launch,
                    &plan.param_keys,
                    &format!("{job}_{idx}"),
                    &state,
                    &tail,
                );
                raw.extend(recs.iter().map(crate::record::row));
            }
        }
        if let Ok(t) = std::fs::read_to_string(ldir.join(slurm::LAUNCH_RECORD)) {
            if let Ok(rec) = serde_json::from_str::<LaunchRecord>(&t) {
                manifest.launches.insert(name.clone(), rec);
            }
        }
    }
    results.rewrite_csv(&raw)?;
    let interrupted = pending;
    let code = crate::run::conclude::conclude(&s, &plan, &results, &mut manifest, interrupted);
    provenance::write(dir, &manifest)?;
    // Failed runs are rows, not a failed merge: the merge job itself ends COMPLETED.
    Ok(match code {
        ExitCode::RunsFailed => ExitCode::Ok,
        c => c,
    })
}

/// Per run of the latest submission: ok / failed / pending / running / cancelled.
pub fn status(dir: &Path) -> Result<ExitCode, CmdError> {
    let sub = slurm::latest(dir)?;
    let jobs: Vec<String> = sub.arrays.iter().map(|a| a.job_id.clone()).collect();
    let states = slurm::task_states(&jobs);
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    out(&format!(
        "{:<28} {:<10} {:<12} detail",
        "run", "state", "task"
    ));
    for name in sub.launches() {
        let (job, idx) = sub.task_of(name).unwrap_or_default();
        let task = format!("{job}_{idx}");
        let known = known_state(&sub, &states, &job, idx);
        let slurm_state = (known != "UNKNOWN").then_some(known.as_str());
        let (state, detail) = match rows::read(&store::launch_dir(dir, name).join(slurm::ROWS)) {
            Ok(t) if t.rows.iter().all(rows::Row::is_ok) => ("ok".to_string(), String::new()),
            Ok(t) => {
                let bad = t.rows.iter().find(|r| !r.is_ok());
                let st = bad.map_or("failed", |r| r.get("status"));
                let state = if st == "interrupted" {
                    "cancelled"
                } else {
                    "failed"
                };
                (
                    state.to_string(),
                    bad.map_or(String::new(), |r| r.get("failure_kind").to_string()),
                )
            }
            Err(_) => (
                slurm::describe(slurm_state).to_string(),
                slurm_state.unwrap_or("").to_string(),
            ),
        };
        *counts.entry(state.clone()).or_default() += 1;
        out(&format!("{name:<28} {state:<10} {task:<12} {detail}"));
    }
    let merge = match &sub.merge_job {
        Some(m) => {
            let merged = dir.join(store::RESULTS_MD).exists() && !any_live(&states);
            format!(
                "merge job {m}{}",
                if merged { " (results merged)" } else { "" }
            )
        }
        None => "no merge job".to_string(),
    };
    let summary: Vec<String> = counts.iter().map(|(k, v)| format!("{v} {k}")).collect();
    out(&format!("{}; {merge}", summary.join(", ")));
    Ok(ExitCode::Ok)
}

/// A task's state; one that left no trace after `sgtune cancel` was cancelled while pending
/// (Slurm logs no completion for those).
fn known_state(sub: &slurm::Submission, states: &slurm::States, job: &str, idx: usize) -> String {
    match states.get(&(job.to_string(), idx)) {
        Some(s) => s.clone(),
        None if sub.cancelled_at.is_some() => "CANCELLED".to_string(),
        None => "UNKNOWN".to_string(),
    }
}

fn any_live(states: &slurm::States) -> bool {
    states
        .values()
        .any(|s| matches!(slurm::describe(Some(s)), "pending" | "running"))
}

/// scancel the latest submission's arrays; the running tasks record their runs as
/// interrupted, the merge job (still queued, afterany) turns the others into rows.
pub fn cancel(dir: &Path) -> Result<ExitCode, CmdError> {
    let mut subs = slurm::read_submissions(dir)?;
    let Some(sub) = subs.last_mut() else {
        return Err(slurm::latest(dir)
            .err()
            .map_or_else(|| CmdError::input("nothing submitted"), CmdError::from));
    };
    // Recorded before scancel: the merge job may start the moment the array ends.
    sub.cancelled_at = Some(provenance::now_rfc3339());
    let ids: Vec<String> = sub.arrays.iter().map(|a| a.job_id.clone()).collect();
    let to_cancel = sub.clone();
    slurm::write_submissions(dir, &subs)?;
    slurm::cancel(&to_cancel)?;
    out(&format!(
        "cancelled job array(s) {}; the merge job records each run's state; `sgtune resume {} --executor slurm` submits what is missing",
        ids.join(" "),
        dir.display()
    ));
    Ok(ExitCode::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::slurm::{ArrayJob, States, Submission};
    use std::collections::BTreeMap;

    const SPEC: &str = "name: merged\nserver:\n  command: [python3, fake.py]\n  model_path: /nonexistent-model\nconfigs:\n  - {name: a}\n  - {name: b}\n  - {name: c}\n  - {name: d}\n  - {name: e}\nworkload:\n  vocab_size: 100\n  concurrency: 2\n  requests: 4\n  input_tokens: 4\n  output_tokens: 4\n";

    /// A results folder as `--executor slurm` leaves it, made by hand: the spec, a manifest,
    /// an empty base.csv, one array of five tasks (job 77, launches a-e) and its merge job
    /// (78); task `a` wrote its row, the others none.
    fn folder(cancelled: bool) -> (tempfile::TempDir, Submission) {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path();
        std::fs::write(dir.join("spec.yaml"), SPEC).expect("spec");
        let (_, _, plan, _, launches) = {
            std::fs::create_dir_all(slurm::folder(dir)).expect("mkdir");
            let (_, _, plan, _) = sweep::load_checked(&dir.join("spec.yaml")).expect("spec");
            let results = ResultsDir::open(dir, &plan.param_keys);
            results.init_csv().expect("results.csv");
            std::fs::copy(results.results_csv(), slurm::folder(dir).join(slurm::BASE))
                .expect("base.csv");
            submitted_launches(dir).expect("launches")
        };
        provenance::write(dir, &provenance::Manifest::default()).expect("manifest");
        let names: Vec<String> = launches.iter().map(|l| l.dir_name.clone()).collect();
        assert_eq!(names, ["a", "b", "c", "d", "e"]);
        let sub = Submission {
            at: "2026-12-01T00:00:00Z".into(),
            marker: "m".into(),
            arrays: vec![ArrayJob {
                job_id: "77".into(),
                gpus: 0,
                launches: names,
            }],
            merge_job: Some("78".into()),
            cancelled_at: cancelled.then(|| "2026-12-01T00:01:00Z".to_string()),
        };
        slurm::write_submissions(dir, std::slice::from_ref(&sub)).expect("submissions");
        let mut ok = slurm::missing_rows(&launches[0], &plan.param_keys, "77_0", "COMPLETED", "");
        for r in &mut ok {
            r.status = crate::record::RunStatus::Ok;
            r.failure_kind = None;
            r.failure_message = None;
            r.notes.clear();
        }
        let results = ResultsDir::open(dir, &plan.param_keys);
        let a = results.run_dir("a").expect("runs/a");
        results
            .write_rows(&a.join(slurm::ROWS), &ok)
            .expect("rows.csv");
        (tmp, sub)
    }

    fn states(s: &[(usize, &str)]) -> States {
        s.iter()
            .map(|(i, st)| (("77".to_string(), *i), st.to_string()))
            .collect()
    }

    /// results.csv after the merge: run → (status, failure_kind, failure_message).
    fn merged(dir: &Path) -> BTreeMap<String, (String, String, String)> {
        let t = rows::read(&dir.join("results.csv")).expect("results.csv");
        let mut m = BTreeMap::new();
        for r in &t.rows {
            let prev = m.insert(
                r.get("run_name").to_string(),
                (
                    r.get("status").to_string(),
                    r.get("failure_kind").to_string(),
                    r.get("failure_message").to_string(),
                ),
            );
            assert!(prev.is_none(), "two rows for {}", r.get("run_name"));
        }
        m
    }

    #[test]
    fn the_merge_turns_each_tasks_state_into_its_rows() {
        let (tmp, sub) = folder(false);
        let dir = tmp.path();
        std::fs::write(
            slurm::folder(dir).join("77_2.out"),
            "sgtune run-one: c\n\nTraceback (most recent call last):\nslurmstepd: error: *** JOB 77 CANCELLED DUE TO TIME LIMIT ***\n",
        )
        .expect("out");
        // b was cancelled, c ran out of time, d still waits in the queue, e is running.
        let st = states(&[
            (0, "COMPLETED"),
            (1, "CANCELLED"),
            (2, "TIMEOUT"),
            (3, "PENDING"),
            (4, "RUNNING"),
        ]);
        let code = merge_with(dir, &sub, &st).expect("merge");
        assert_eq!(
            code,
            ExitCode::Interrupted,
            "tasks still queued or running: the sweep is not finished"
        );
        let m = merged(dir);
        assert_eq!(m["a"].0, "ok");
        assert_eq!(
            m["b"],
            (
                "interrupted".to_string(),
                "interrupted".to_string(),
                "Slurm task 77_1 ended CANCELLED without writing its rows (`sgtune resume` runs it again)".to_string()
            )
        );
        assert_eq!(
            (m["c"].0.as_str(), m["c"].1.as_str()),
            ("failed", "slurm_task")
        );
        assert_eq!(
            m["c"].2,
            "Slurm task 77_2 ended TIMEOUT without writing its rows; its output ends: Traceback (most recent call last): | slurmstepd: error: *** JOB 77 CANCELLED DUE TO TIME LIMIT ***"
        );
        assert!(
            !m.contains_key("d") && !m.contains_key("e"),
            "a pending or running task has no row yet: {m:?}"
        );
        assert!(dir.join("results.md").exists());

        // Later d ended without rows and e is gone from Slurm's records: each gets its row;
        // merging again rebuilds results.csv (one row per run, nothing doubled).
        let st = states(&[(1, "CANCELLED"), (2, "TIMEOUT"), (3, "COMPLETED")]);
        let code = merge_with(dir, &sub, &st).expect("merge");
        assert_eq!(
            code,
            ExitCode::Ok,
            "failed runs are rows, not a failed merge"
        );
        let m = merged(dir);
        assert_eq!(m.len(), 5, "{m:?}");
        assert_eq!(
            (m["d"].0.as_str(), m["d"].1.as_str()),
            ("failed", "slurm_task")
        );
        assert_eq!(
            (m["e"].0.as_str(), m["e"].1.as_str()),
            ("interrupted", "interrupted")
        );
        assert!(m["e"].2.contains("ended UNKNOWN"), "{m:?}");
    }

    #[test]
    fn after_a_cancel_a_task_slurm_kept_no_record_of_was_cancelled() {
        let (tmp, sub) = folder(true);
        let dir = tmp.path();
        // Cancelled while pending: sacct and squeue know nothing of b-e.
        let code = merge_with(dir, &sub, &States::new()).expect("merge");
        assert_eq!(code, ExitCode::Ok);
        let m = merged(dir);
        for name in ["b", "c", "d", "e"] {
            assert_eq!(m[name].0, "interrupted", "{name}: {m:?}");
            assert!(m[name].2.contains("ended CANCELLED"), "{name}: {m:?}");
        }
    }
}
