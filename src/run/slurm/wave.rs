//! A guided tune on Slurm, in waves: `sgtune run SPEC --executor slurm` with `tune:` runs this
//! driver in the foreground. Each batch of the tune's path (`guided::wave`, the same batches a
//! local tune runs on its slots) is one submission of job arrays, a "wave"; the driver waits
//! for the wave's tasks to end, merges their rows into results.csv (`merge::merge_rows`, what
//! `sgtune merge` runs), replays the path from the rows and submits the next wave, until the
//! strategy stops or the budget is spent; then it concludes as a local tune does.
//!
//! A task decides nothing: `run-one` computes its launch from slurm/base.csv (the rows at the
//! wave's submission) and the recorded width, as the driver did. The driver holds no state the
//! folder does not: killed, `sgtune resume DIR --executor slurm` waits for the unmerged wave's
//! tasks (never resubmitting them), merges them and goes on along the same path.

use super::merge::merge_rows;
use super::{
    States, Submission, TuneWave, read_submissions, submit_as, task_states, write_submissions,
};
use crate::plan::spec::SlurmSpec;
use crate::record::layout::{TASK_LAUNCH_JSON, TASK_ROWS_CSV};
use crate::record::provenance::{self, Manifest};
use crate::record::rows;
use crate::record::store::{self, ResultsDir};
use crate::run::execute::SweepInput;
use crate::run::finish::ExitCode;
use crate::run::prepare::{StartError, Target};
use crate::run::{conclude, guided, tuning};
use crate::tune::work;
use crate::util::say;
use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

/// The wave width without `slurm.max_running` (`--max-running`).
pub const DEFAULT_WIDTH: usize = 4;

/// Polls a task may go unseen (in neither squeue nor Slurm's records, and without its rows)
/// before it counts as ended: a finished task can take a moment to reach the accounting or
/// jobcomp log.
const UNSEEN_POLLS: usize = 5;

/// The tune's width on Slurm: as recorded at its first wave (a resume replays the same
/// batches), else `slurm.max_running`, else [`DEFAULT_WIDTH`].
pub fn width(manifest: &Manifest, opts: &SlurmSpec) -> usize {
    manifest
        .tune_slots
        .unwrap_or_else(|| opts.max_running.map_or(DEFAULT_WIDTH, |n| n as usize))
        .max(1)
}

/// How long the driver sleeps between two looks at a wave: `SGTUNE_SLURM_POLL_S` seconds
/// (tests shorten it), else 2.
fn poll() -> Duration {
    let s = std::env::var("SGTUNE_SLURM_POLL_S")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or(2.0);
    Duration::from_secs_f64(s.min(60.0))
}

/// A tune on Slurm, new or resumed: the folder, the waves, then the conclusion (decision.md
/// with its "Tune path", the report, outcome.json, the hook) as at the end of a local tune.
pub async fn start(
    input: &SweepInput<'_>,
    target: Target<'_>,
    opts: &SlurmSpec,
) -> Result<ExitCode, StartError> {
    let (results, mut manifest) = match target {
        Target::New(parent) => {
            crate::run::prepare::create_results(input, parent, &input.plan.sweep_name)?
        }
        Target::Resume {
            dir,
            retry_failed,
            force,
        } => {
            // Its last wave is settled already (`settle`, by `cmd::sweep::start`).
            let (results, _, m) =
                crate::run::prepare::prepare_resume(input, dir, retry_failed, force)?;
            (results, m)
        }
    };
    let w = width(&manifest, opts);
    manifest.tune_slots = Some(w);
    provenance::write(&results.root, &manifest)?;
    say(&format!(
        "tune on Slurm: up to {w} launches per wave (one job array each), chosen from the waves before; this driver runs until the tune ends (keep it in tmux/screen or run it as a job; if it stops, `sgtune resume {} --executor slurm` continues)",
        results.root.display()
    ));
    let ran = drive(input, &results, opts).await;
    // The merges wrote the launches' records into manifest.json: conclude from the file.
    let mut manifest = provenance::read(&results.root).unwrap_or(manifest);
    let (ran, error) = match ran {
        Ok(interrupted) => (Ok(interrupted), None),
        Err(StartError::Store(e)) => (Err(e), None),
        // Anything else (a submission refused, a file that does not read): the rows so far
        // are concluded as an interrupted tune, then the error is said.
        Err(e) => (Ok(true), Some(e)),
    };
    let code = conclude::end(
        input.spec,
        input.plan,
        &results,
        &mut manifest,
        ran,
        None,
        input.hook.as_ref(),
    )
    .await?;
    match error {
        Some(e) => Err(e),
        None => Ok(code),
    }
}

/// The waves, until the strategy stops (false) or the tune is cancelled or cannot go on
/// (true: interrupted, `sgtune resume` continues).
async fn drive(
    input: &SweepInput<'_>,
    results: &ResultsDir,
    opts: &SlurmSpec,
) -> Result<bool, StartError> {
    let spec = input.spec;
    let dir = &results.root;
    let mut first = true;
    // Submissions of each launch in this session: one interrupted again (its node failed
    // twice, its task was cancelled twice) is not submitted a third time.
    let mut submitted: HashMap<String, usize> = HashMap::new();
    let mut last_marker: Option<String> = None;
    loop {
        let width = provenance::read(dir)
            .map_err(|e| StartError::input(e.to_string()))?
            .tune_slots
            .unwrap_or(1);
        set_aside_interrupted(results)?;
        let table =
            rows::read(&results.results_csv()).map_err(|e| StartError::input(e.to_string()))?;
        let before = table.rows.len();
        let rows = tuning::judged(spec, input.plan, dir, table.rows);
        let wave = guided::wave(spec, &rows, width);
        if first && !wave.done.is_empty() {
            say(&format!(
                "tune: {} step(s) already measured in this folder: continuing the same path",
                wave.done.len()
            ));
            for l in guided::recorded_lines(spec, &wave.done) {
                say(&l);
            }
        }
        first = false;
        if let Some(why) = &wave.stop {
            say(&format!("tune: stop: {why}"));
            return Ok(false);
        }
        // `sgtune cancel` between two waves: the latest one (ours) says so.
        if let Some(m) = &last_marker {
            if cancelled(dir, m)? {
                say("tune: cancelled (sgtune cancel): no further wave");
                return Ok(true);
            }
        }
        for l in &wave.launches {
            let n = submitted.entry(l.dir_name.clone()).or_default();
            if *n >= 2 {
                say(&format!(
                    "tune: stop: {} was interrupted on Slurm twice in this session (node failure, preemption or its task cancelled); `sgtune resume {} --executor slurm` runs it again",
                    l.dir_name,
                    dir.display()
                ));
                return Ok(true);
            }
            *n += 1;
            guided::set_aside(results, &l.dir_name)?;
        }
        let base = std::fs::read(results.results_csv())
            .map_err(|e| StartError::input(format!("{}: {e}", results.results_csv().display())))?;
        let index = read_submissions(dir)
            .map_err(|e| StartError::input(e.to_string()))?
            .iter()
            .filter(|s| s.wave.is_some())
            .count()
            + 1;
        for l in &wave.lines {
            say(l);
        }
        let sub = submit_as(
            dir,
            &input.plan.sweep_name,
            opts,
            &wave.launches,
            &base,
            Some(TuneWave {
                index,
                steps: wave.steps.clone(),
                merged_at: None,
            }),
        )?;
        for a in &sub.arrays {
            say(&format!(
                "tune: wave {index}: job array {} ({} task(s)): {}",
                a.job_id,
                a.launches.len(),
                a.launches.join(" ")
            ));
        }
        // A cancel of the wave before, recorded while this one was being submitted, meant
        // the tune: this wave is cancelled too.
        if let Some(m) = &last_marker {
            if cancelled(dir, m)? {
                super::cancel_latest(dir)?;
            }
        }
        last_marker = Some(sub.marker.clone());
        if finish_wave(dir, &sub.marker).await? {
            say(&format!(
                "tune: wave {index} was cancelled (sgtune cancel): its rows are merged; `sgtune resume {} --executor slurm` runs its unfinished launches again and goes on",
                dir.display()
            ));
            return Ok(true);
        }
        let after = rows::read(&results.results_csv())
            .map(|t| t.rows.len())
            .unwrap_or(before);
        if after <= before {
            say("tune: stop: the wave left no row");
            return Ok(true);
        }
    }
}

/// Whether the submission of this marker was cancelled (`sgtune cancel` records it there).
fn cancelled(dir: &Path, marker: &str) -> Result<bool, StartError> {
    Ok(find(dir, marker)?.cancelled_at.is_some())
}

fn find(dir: &Path, marker: &str) -> Result<Submission, StartError> {
    read_submissions(dir)
        .map_err(|e| StartError::input(e.to_string()))?
        .into_iter()
        .rev()
        .find(|s| s.marker == marker)
        .ok_or_else(|| {
            StartError::input(format!(
                "{}: the wave submitted with marker {marker} is no longer recorded in slurm/submissions.json",
                dir.display()
            ))
        })
}

/// A resumed tune's latest wave, if its driver stopped before merging it: wait for its tasks
/// (they are not submitted again) and merge them. Every resume of a tune does this first
/// (`cmd::sweep::start`), on Slurm or here; a folder never on Slurm has nothing to settle.
pub async fn settle(dir: &Path) -> Result<(), StartError> {
    let Some(sub) = read_submissions(dir)
        .map_err(|e| StartError::input(e.to_string()))?
        .pop()
    else {
        return Ok(());
    };
    let Some(w) = &sub.wave else {
        return Ok(());
    };
    if w.merged_at.is_some() {
        return Ok(());
    }
    say(&format!(
        "tune: wave {} was not merged (its driver stopped): waiting for its tasks, which are not submitted again",
        w.index
    ));
    finish_wave(dir, &sub.marker).await?;
    Ok(())
}

/// Wait for every task of the wave to end, merge its rows into results.csv and record the
/// wave merged. True when the wave was cancelled (`sgtune cancel`).
async fn finish_wave(dir: &Path, marker: &str) -> Result<bool, StartError> {
    let mut unseen: HashMap<String, usize> = HashMap::new();
    let (sub, states) = loop {
        // Read again each time: `sgtune cancel` records itself in the submission.
        let sub = find(dir, marker)?;
        let jobs: Vec<String> = sub.arrays.iter().map(|a| a.job_id.clone()).collect();
        let states = task_states(&jobs);
        let has_rows = |name: &str| {
            let d = store::launch_dir(dir, name);
            d.join(TASK_ROWS_CSV).exists() && d.join(TASK_LAUNCH_JSON).exists()
        };
        if wave_over(&sub, &states, &has_rows, &mut unseen) {
            break (sub, states);
        }
        tokio::time::sleep(poll()).await;
    };
    merge_rows(dir, &sub, &states)?;
    let mut subs = read_submissions(dir).map_err(|e| StartError::input(e.to_string()))?;
    if let Some(w) = subs
        .iter_mut()
        .rev()
        .find(|s| s.marker == marker)
        .and_then(|s| s.wave.as_mut())
    {
        w.merged_at = Some(provenance::now_rfc3339());
    }
    write_submissions(dir, &subs)?;
    Ok(sub.cancelled_at.is_some())
}

/// Whether every task of the wave has ended: none queued or running, and one that neither
/// squeue nor Slurm's records know has its rows, was cancelled with the submission (Slurm
/// keeps no record of a task cancelled while pending), or went unseen for [`UNSEEN_POLLS`]
/// polls (`unseen` counts them, across calls).
fn wave_over(
    sub: &Submission,
    states: &States,
    has_rows: &dyn Fn(&str) -> bool,
    unseen: &mut HashMap<String, usize>,
) -> bool {
    let mut over = true;
    for name in sub.launches() {
        let Some(task) = sub.task_of(name) else {
            continue;
        };
        match states.get(&task) {
            Some(s) if s.is_live() => over = false,
            Some(_) => {}
            None if has_rows(name) || sub.cancelled_at.is_some() => {}
            None => {
                let n = unseen.entry(name.clone()).or_default();
                *n += 1;
                if *n < UNSEEN_POLLS {
                    over = false;
                }
            }
        }
    }
    over
}

/// Rows a wave left interrupted (a node failure, a preemption, a task cancelled) move to
/// results.superseded.csv, as a resume moves them, so the path proposes their launches again
/// and no measurement has two rows.
fn set_aside_interrupted(results: &ResultsDir) -> Result<(), StartError> {
    let table = rows::read(&results.results_csv()).map_err(|e| StartError::input(e.to_string()))?;
    let (keep, redo) = split_finished(&table, results.header());
    if redo.is_empty() {
        return Ok(());
    }
    say(&format!(
        "tune: {} interrupted row(s) set aside in results.superseded.csv: their launches run again",
        redo.len()
    ));
    results.append_superseded(&redo)?;
    results.rewrite_csv(&keep)?;
    Ok(())
}

/// The rows to keep (finished, the first of each measurement) and those to redo, their fields
/// under `header` (the folder's: as read, unless the file predates a column).
fn split_finished(table: &rows::Table, header: &[String]) -> (Vec<Vec<String>>, Vec<Vec<String>>) {
    let mut keep = Vec::new();
    let mut redo = Vec::new();
    let mut kept = Vec::new();
    for (row, raw) in table.rows.iter().zip(&table.fields_under(header)) {
        if work::is_finished(row, false) && !kept.contains(&row.key()) {
            kept.push(row.key());
            keep.push(raw.clone());
        } else {
            redo.push(raw.clone());
        }
    }
    (keep, redo)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::slurm::ArrayJob;
    use crate::run::slurm::SlurmState;

    fn sub(cancelled: bool) -> Submission {
        Submission {
            at: "t".into(),
            marker: "m".into(),
            arrays: vec![ArrayJob {
                job_id: "7".into(),
                gpus: 1,
                launches: vec!["a".into(), "b".into()],
            }],
            merge_job: None,
            cancelled_at: cancelled.then(|| "t".to_string()),
            wave: Some(TuneWave {
                index: 1,
                steps: [("a".to_string(), 2), ("b".to_string(), 3)].into(),
                merged_at: None,
            }),
        }
    }

    fn states(s: &[(usize, &str)]) -> States {
        s.iter()
            .map(|(i, st)| (("7".to_string(), *i), SlurmState::parse(st)))
            .collect()
    }

    #[test]
    fn a_wave_is_over_when_no_task_is_queued_or_running() {
        let none = |_: &str| false;
        let mut unseen = HashMap::new();
        let s = sub(false);
        assert!(!wave_over(
            &s,
            &states(&[(0, "RUNNING"), (1, "COMPLETED")]),
            &none,
            &mut unseen
        ));
        assert!(!wave_over(
            &s,
            &states(&[(0, "PENDING"), (1, "FAILED")]),
            &none,
            &mut unseen
        ));
        assert!(wave_over(
            &s,
            &states(&[(0, "COMPLETED"), (1, "NODE_FAIL")]),
            &none,
            &mut unseen
        ));
        assert!(unseen.is_empty());
    }

    #[test]
    fn a_task_slurm_does_not_know_ends_with_its_rows_a_cancel_or_after_some_polls() {
        let s = sub(false);
        let only_a = |n: &str| n == "a";
        let mut unseen = HashMap::new();
        // b unseen, without rows: not over for UNSEEN_POLLS - 1 polls, then over.
        for _ in 1..UNSEEN_POLLS {
            assert!(!wave_over(&s, &States::new(), &only_a, &mut unseen));
        }
        assert!(wave_over(&s, &States::new(), &only_a, &mut unseen));
        assert_eq!(unseen.get("b"), Some(&UNSEEN_POLLS));
        assert!(!unseen.contains_key("a"), "a has its rows");
        // After `sgtune cancel`, a task with no trace was cancelled while pending.
        let mut unseen = HashMap::new();
        assert!(wave_over(
            &sub(true),
            &States::new(),
            &|_| false,
            &mut unseen
        ));
    }

    #[test]
    fn the_width_is_the_recorded_one_else_max_running_else_four() {
        let mut m = Manifest::default();
        let o = SlurmSpec::default();
        assert_eq!(width(&m, &o), DEFAULT_WIDTH);
        let two = SlurmSpec {
            max_running: Some(2),
            ..Default::default()
        };
        assert_eq!(width(&m, &two), 2);
        let zero = SlurmSpec {
            max_running: Some(0),
            ..Default::default()
        };
        assert_eq!(width(&m, &zero), 1, "at least one launch per wave");
        m.tune_slots = Some(3);
        assert_eq!(width(&m, &two), 3, "a resume keeps the recorded width");
    }

    #[test]
    fn interrupted_rows_and_second_rows_of_a_measurement_are_set_aside() {
        let csv = "run_name,status,concurrency,request_rate,repeat\na,ok,2,,1\nb,interrupted,2,,1\nc,failed,2,,1\na,ok,2,,1\n";
        let tmp = tempfile::tempdir().expect("tempdir");
        let p = tmp.path().join("r.csv");
        std::fs::write(&p, csv).expect("write");
        let t = rows::read(&p).expect("read");
        let (keep, redo) = split_finished(&t, &t.header);
        let names = |v: &[Vec<String>]| v.iter().map(|r| r[0].clone()).collect::<Vec<_>>();
        assert_eq!(names(&keep), ["a", "c"]);
        assert_eq!(names(&redo), ["b", "a"]);
    }
}
