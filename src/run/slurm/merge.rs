//! `sgtune merge` and `sgtune status` of a Slurm submission: results.csv rebuilt from
//! slurm/base.csv and each task's rows (or, for a task that left none, a row with its Slurm
//! state), then the manifest, results.md and the decision; and each run's state for the status
//! table (`report::slurm` renders it).

use super::task::submitted_launches;
use super::{SlurmState, States, Submission, latest, missing_rows, out_tail, task_states};
use crate::record::RunStatus;
use crate::record::provenance;
use crate::record::rows;
use crate::record::slurm as files;
use crate::record::store::{self, ResultsDir};
use crate::report::slurm::{SlurmStatus, TaskLine};
use crate::run::finish::ExitCode;
use crate::run::prepare::StartError;
use std::path::Path;

/// Rebuild results.csv from slurm/base.csv and every submitted launch's rows (or a row with
/// its Slurm state), then the manifest, results.md and the decision. Idempotent.
pub fn merge(dir: &Path) -> Result<ExitCode, StartError> {
    let sub = latest(dir)?;
    let jobs: Vec<String> = sub.arrays.iter().map(|a| a.job_id.clone()).collect();
    merge_with(dir, &sub, &task_states(&jobs))
}

/// The merge, given every task's Slurm state (what squeue, sacct or jobcomp said).
fn merge_with(dir: &Path, sub: &Submission, states: &States) -> Result<ExitCode, StartError> {
    let pending = merge_rows(dir, sub, states)?;
    let (s, _, plan, _) = crate::run::prepare::load_in_folder(&dir.join(store::SPEC_YAML), dir)?;
    let results = ResultsDir::open(dir, &plan.param_keys);
    let mut manifest = provenance::read(dir).map_err(|e| StartError::input(e.to_string()))?;
    let code = crate::run::conclude::conclude(&s, &plan, &results, &mut manifest, pending);
    provenance::write(dir, &manifest)?;
    // Failed runs are rows, not a failed merge: the merge job itself ends COMPLETED.
    Ok(match code {
        ExitCode::RunsFailed => ExitCode::Ok,
        c => c,
    })
}

/// results.csv rebuilt from base.csv and the submission's tasks (each its rows, or rows with
/// its Slurm state), and their launch records put into manifest.json: the merge without the
/// conclusion, which a tune's driver runs after each wave. True when a task is still queued or
/// running (it has no row yet).
pub fn merge_rows(dir: &Path, sub: &Submission, states: &States) -> Result<bool, StartError> {
    let (_, _, plan, _, launches) = submitted_launches(dir)?;
    let results = ResultsDir::open(dir, &plan.param_keys);
    let base = files::read_base(dir).map_err(|e| StartError::input(e.to_string()))?;
    let mut manifest = provenance::read(dir).map_err(|e| StartError::input(e.to_string()))?;
    // Every file's rows by column name under the folder's header (as read when it is theirs).
    let mut raw = base.fields_under(results.header());
    let mut pending = false;
    for name in sub.launches() {
        let Some(launch) = launches.iter().find(|l| &l.dir_name == name) else {
            continue;
        };
        let ldir = store::launch_dir(dir, name);
        match files::read_task_rows(&ldir) {
            Ok(t) => raw.extend(t.fields_under(results.header())),
            Err(_) => {
                let (job, idx) = sub.task_of(name).unwrap_or_default();
                let state = known_state(sub, states, &job, idx);
                if state.is_live() {
                    // Merged early (by hand): this run has no row yet.
                    pending = true;
                    continue;
                }
                let tail = out_tail(dir, &job, idx);
                let recs = missing_rows(
                    launch,
                    &plan.param_keys,
                    &format!("{job}_{idx}"),
                    &state,
                    &tail,
                );
                raw.extend(recs.iter().map(crate::record::row));
            }
        }
        // A launch.json that is missing or does not read leaves the manifest as it was.
        if let Ok(Some(rec)) = files::read_launch_record(&ldir) {
            manifest.launches.insert(name.clone(), rec);
        }
    }
    results.rewrite_csv(&raw)?;
    provenance::write(dir, &manifest)?;
    Ok(pending)
}

/// Per run of the latest submission: ok / failed / pending / running / cancelled, from its
/// rows if it wrote them, else from its Slurm state.
pub fn status_view(dir: &Path) -> Result<SlurmStatus, StartError> {
    let sub = latest(dir)?;
    let jobs: Vec<String> = sub.arrays.iter().map(|a| a.job_id.clone()).collect();
    let states = task_states(&jobs);
    Ok(status_view_of(&sub, &states, dir))
}

/// The status of a submission, given its tasks' Slurm states.
fn status_view_of(sub: &Submission, states: &States, dir: &Path) -> SlurmStatus {
    let mut tasks = Vec::new();
    for name in sub.launches() {
        let (job, idx) = sub.task_of(name).unwrap_or_default();
        let task = format!("{job}_{idx}");
        let known = known_state(sub, states, &job, idx);
        let slurm_state = (known != SlurmState::Unknown).then_some(&known);
        let (state, detail) = match files::read_task_rows(&store::launch_dir(dir, name)) {
            Ok(t) if t.rows.iter().all(rows::Row::is_ok) => ("ok".to_string(), String::new()),
            Ok(t) => {
                let bad = t.rows.iter().find(|r| !r.is_ok());
                let state = match bad.and_then(|r| r.status()) {
                    Some(RunStatus::Interrupted) => "cancelled",
                    _ => "failed",
                };
                (
                    state.to_string(),
                    bad.and_then(|r| r.failure_kind())
                        .map_or(String::new(), |k| k.as_str().to_string()),
                )
            }
            Err(_) => (
                slurm_state.map_or("unknown", SlurmState::shown).to_string(),
                slurm_state.map_or(String::new(), SlurmState::to_string),
            ),
        };
        let run = match sub.wave.as_ref().and_then(|w| w.steps.get(name)) {
            Some(n) => format!("{name} (step {n})"),
            None => name.clone(),
        };
        tasks.push(TaskLine {
            run,
            state,
            task,
            detail,
        });
    }
    let merged = match &sub.wave {
        Some(w) => w.merged_at.is_some(),
        None => {
            sub.merge_job.is_some() && dir.join(store::RESULTS_MD).exists() && !any_live(states)
        }
    };
    SlurmStatus {
        tasks,
        merge_job: sub.merge_job.clone(),
        merged,
        wave: sub.wave.as_ref().map(|w| w.index),
    }
}

/// A task's state; one that left no trace after `sgtune cancel` was cancelled while pending
/// (Slurm logs no completion for those).
fn known_state(sub: &Submission, states: &States, job: &str, idx: usize) -> SlurmState {
    match states.get(&(job.to_string(), idx)) {
        Some(s) => s.clone(),
        None if sub.cancelled_at.is_some() => SlurmState::Cancelled,
        None => SlurmState::Unknown,
    }
}

fn any_live(states: &States) -> bool {
    states.values().any(SlurmState::is_live)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::layout::slurm_dir;
    use crate::record::rows;
    use crate::record::slurm::{ArrayJob, Submission};
    use crate::record::store::ResultsDir;
    use crate::run::slurm::{SlurmState, States, missing_rows};
    use std::collections::BTreeMap;
    use std::path::Path;

    const SPEC: &str = "name: merged\nserver:\n  command: [python3, fake.py]\n  model_path: /nonexistent-model\nconfigs:\n  - {name: a}\n  - {name: b}\n  - {name: c}\n  - {name: d}\n  - {name: e}\nworkload:\n  vocab_size: 100\n  concurrency: 2\n  requests: 4\n  input_tokens: 4\n  output_tokens: 4\n";

    /// A results folder as `--executor slurm` leaves it, made by hand: the spec, a manifest,
    /// an empty base.csv, one array of five tasks (job 77, launches a-e) and its merge job
    /// (78); task `a` wrote its row, the others none.
    fn folder(cancelled: bool) -> (tempfile::TempDir, Submission) {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path();
        std::fs::write(dir.join("spec.yaml"), SPEC).expect("spec");
        let (_, _, plan, _, launches) = {
            std::fs::create_dir_all(slurm_dir(dir)).expect("mkdir");
            let (_, _, plan, _) =
                crate::run::prepare::load_checked(&dir.join("spec.yaml")).expect("spec");
            let results = ResultsDir::open(dir, &plan.param_keys);
            results.init_csv().expect("results.csv");
            let csv = std::fs::read(results.results_csv()).expect("results.csv");
            files::write_base(dir, &csv).expect("base.csv");
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
            wave: None,
        };
        files::write_submissions(dir, std::slice::from_ref(&sub)).expect("submissions");
        let mut ok = missing_rows(
            &launches[0],
            &plan.param_keys,
            "77_0",
            &SlurmState::Completed,
            "",
        );
        for r in &mut ok {
            r.status = crate::record::RunStatus::Ok;
            r.failure_kind = None;
            r.failure_message = None;
            r.notes.clear();
        }
        let results = ResultsDir::open(dir, &plan.param_keys);
        let a = results.run_dir("a").expect("runs/a");
        files::write_task_rows(&results, &a, &ok).expect("rows.csv");
        (tmp, sub)
    }

    fn states(s: &[(usize, &str)]) -> States {
        s.iter()
            .map(|(i, st)| (("77".to_string(), *i), SlurmState::parse(st)))
            .collect()
    }

    /// results.csv after the merge: run → (status, failure_kind, failure_message).
    fn merged(dir: &Path) -> BTreeMap<String, (String, String, String)> {
        let t = rows::read(&dir.join("results.csv")).expect("results.csv");
        let mut m = BTreeMap::new();
        for r in &t.rows {
            let prev = m.insert(
                r.run_name().to_string(),
                (
                    r.status().map_or("", RunStatus::as_str).to_string(),
                    r.failure_kind().map_or("", |k| k.as_str()).to_string(),
                    r.failure_message().to_string(),
                ),
            );
            assert!(prev.is_none(), "two rows for {}", r.run_name());
        }
        m
    }

    #[test]
    fn the_merge_turns_each_tasks_state_into_its_rows() {
        let (tmp, sub) = folder(false);
        let dir = tmp.path();
        std::fs::write(
            slurm_dir(dir).join("77_2.out"),
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

    /// A tune's wave: the launches are the path's next batch from base.csv at the recorded
    /// width (as the task computed them); a task that left no rows becomes its rows, with its
    /// Slurm state, which the tune's path then reads (a failed step, or one to run again).
    #[test]
    fn a_tunes_wave_merges_its_tasks_and_the_ones_that_left_no_rows() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path();
        let spec = "name: t\nserver:\n  command: [python3, fake.py]\n  model_path: /nonexistent-model\nworkload:\n  vocab_size: 100\n  concurrency: 2\n  requests: 4\n  input_tokens: 4\n  output_tokens: 4\nobjective: {maximize: output_tok_s}\ntune:\n  knobs:\n    max_total_tokens: [100, 400]\n  launches: 3\n";
        std::fs::write(dir.join("spec.yaml"), spec).expect("spec");
        std::fs::create_dir_all(slurm_dir(dir)).expect("mkdir");
        let (_, _, plan, _) =
            crate::run::prepare::load_checked(&dir.join("spec.yaml")).expect("spec");
        let results = ResultsDir::open(dir, &plan.param_keys);
        results.init_csv().expect("results.csv");
        let csv = std::fs::read(results.results_csv()).expect("results.csv");
        files::write_base(dir, &csv).expect("base.csv");
        let m = provenance::Manifest {
            tune_slots: Some(2),
            ..Default::default()
        };
        provenance::write(dir, &m).expect("manifest");
        let (_, _, _, _, launches) = submitted_launches(dir).expect("launches");
        let names: Vec<String> = launches.iter().map(|l| l.dir_name.clone()).collect();
        assert_eq!(names, ["mtt100"], "the first wave: the start");
        let sub = Submission {
            at: "t".into(),
            marker: "m".into(),
            arrays: vec![ArrayJob {
                job_id: "5".into(),
                gpus: 1,
                launches: names,
            }],
            merge_job: None,
            cancelled_at: None,
            wave: Some(crate::record::slurm::TuneWave {
                index: 1,
                steps: [("mtt100".to_string(), 1)].into(),
                merged_at: None,
            }),
        };
        files::write_submissions(dir, std::slice::from_ref(&sub)).expect("submissions");
        let running = [(("5".to_string(), 0), SlurmState::Running)].into();
        assert!(
            merge_rows(dir, &sub, &running).expect("merge"),
            "still running"
        );
        assert!(merged(dir).is_empty());
        let failed = [(("5".to_string(), 0), SlurmState::OutOfMemory)].into();
        assert!(!merge_rows(dir, &sub, &failed).expect("merge"));
        let m = merged(dir);
        assert_eq!(
            (m["mtt100"].0.as_str(), m["mtt100"].1.as_str()),
            ("failed", "slurm_task")
        );
        let view = status_view_of(&sub, &failed, dir);
        assert_eq!(view.wave, Some(1));
        assert_eq!(view.tasks[0].run, "mtt100 (step 1)");
        assert!(!view.merged, "the driver has not recorded its merge");
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
