//! `sgtune run`, `validate` and `resume`: read the flags (deadline, hook, slots), then hand
//! the sweep to `run::prepare` (the spec checked before anything is launched, the folder new
//! or resumed) and `run::execute`, which runs the launches and concludes; or to Slurm.

use super::{CmdError, ExitCode};
use crate::plan::expand::RunPlan;
use crate::plan::spec::{SlurmSpec, SweepSpec};
use crate::record::lock::FolderLock;
use crate::run::finish::Hook;
use crate::run::prepare::{self, Target};
use crate::run::slots::SlotSpec;
use std::time::Duration;

/// A checked sweep and how it starts: `run::prepare`, `run::execute`.
pub use crate::run::execute::{Prepared, SweepInput, execute};
pub use crate::run::prepare::{create_results, load_checked, load_in_folder};

/// Run the sweep here (`run::prepare::run_here`) or submit it to Slurm: into a new folder or
/// the one resumed (`Target`).
pub async fn start(
    input: &SweepInput<'_>,
    target: Target<'_>,
    slurm: Option<SlurmSpec>,
) -> Result<ExitCode, CmdError> {
    // One writer per folder, before anything in it is read or set aside: a resume of a sweep
    // that is still running (a tune's Slurm driver included) is refused, naming the process.
    // A new folder is locked by its creation (`record::store::ResultsDir::create`).
    let _writer = match target {
        Target::Resume { dir, .. } => {
            Some(FolderLock::take(dir).map_err(|e| CmdError::input(e.to_string()))?)
        }
        Target::New(_) => None,
    };
    // A tune whose Slurm driver stopped mid-wave: that wave's tasks may still be queued or
    // running. Wait for them and merge their rows first, whether the tune goes on on Slurm or
    // here, so that none of their launches is submitted or run a second time.
    if let Target::Resume { dir, .. } = target
        && input.spec.tune.is_some()
    {
        crate::run::slurm::wave::settle(dir).await?;
    }
    match slurm {
        None => Ok(prepare::run_here(input, target).await?),
        // A guided tune chooses each wave from the rows of the waves before: its driver runs
        // here until the tune ends.
        Some(o) if input.spec.tune.is_some() => {
            Ok(crate::run::slurm::wave::start(input, target, &o).await?)
        }
        Some(o) => {
            let (results, launches) = prepare::folder_for_slurm(input, target)?;
            super::slurm::submit(input, &results, &launches, &o)
        }
    }
}

/// The deadline this session runs against: `--deadline` or `--budget` (from now), else, for
/// a new sweep, the spec's `deadline:` or `budget:`. A resume does not reuse the spec's: the
/// night it was meant for is over. A value that does not read is bad input (exit 2), before
/// anything is launched.
pub fn deadline(
    s: &SweepSpec,
    end: &crate::cmd::cli::EndArgs,
    resuming: bool,
) -> Result<Option<chrono::DateTime<chrono::Utc>>, CmdError> {
    use crate::tune::deadline::{parse_budget, parse_deadline};
    let now = chrono::Local::now();
    let from_budget = |b: &str, origin: &str| {
        parse_budget(b)
            .map(|secs| {
                now.with_timezone(&chrono::Utc)
                    + chrono::Duration::milliseconds((secs * 1000.0) as i64)
            })
            .map_err(|e| CmdError::input(format!("{origin}: {e}")))
    };
    let at_time = |d: &str, origin: &str| {
        parse_deadline(d, now).map_err(|e| CmdError::input(format!("{origin}: {e}")))
    };
    match (&end.deadline, &end.budget) {
        (Some(d), _) => return at_time(d, "--deadline").map(Some),
        (None, Some(b)) => return from_budget(b, "--budget").map(Some),
        (None, None) => {}
    }
    if resuming {
        return Ok(None);
    }
    match (&s.deadline, &s.budget) {
        (Some(_), Some(_)) => Err(CmdError::input(
            "the spec sets both `deadline:` and `budget:`: keep one",
        )),
        (Some(d), None) => at_time(d, "spec `deadline:`").map(Some),
        (None, Some(b)) => from_budget(b, "spec `budget:`").map(Some),
        (None, None) => Ok(None),
    }
}

/// The `on_finish` hook: `--on-finish` overrides the spec's command, and keeps its timeout.
pub fn hook(s: &SweepSpec, end: &crate::cmd::cli::EndArgs) -> Option<Hook> {
    let timeout = Duration::from_secs(s.on_finish.as_ref().map_or(60, |o| o.timeout_s));
    end.on_finish
        .clone()
        .or_else(|| s.on_finish.as_ref().map(|o| o.command.clone()))
        .filter(|c| !c.trim().is_empty())
        .map(|command| Hook { command, timeout })
}

/// `--parallel`, `--gpus`, `--gpus-per-run`, checked against the plan before anything starts.
pub fn slot_spec(
    a: &crate::cmd::cli::SlotArgs,
    s: &SweepSpec,
    plan: &RunPlan,
) -> Result<SlotSpec, CmdError> {
    // The flags override the spec's `slots:` keys one by one.
    let from_spec = s.slots.clone().unwrap_or_default();
    let spec_gpus = (!from_spec.gpus.is_empty()).then(|| {
        from_spec
            .gpus
            .iter()
            .map(|g| g.0.as_str())
            .collect::<Vec<_>>()
            .join(",")
    });
    let parallel = a.parallel.or(from_spec.parallel.map(|n| n as usize));
    let gpus = a.gpus.clone().or(spec_gpus);
    let per_run = a
        .gpus_per_run
        .or(from_spec.gpus_per_run.map(|n| n as usize));
    let slots =
        SlotSpec::from_flags(parallel, gpus.as_deref(), per_run).map_err(CmdError::input)?;
    slots
        .check(&plan.runs, s.server.port)
        .map_err(CmdError::input)?;
    Ok(slots)
}

/// The session's deadline (`sweep::deadline`); a Slurm submission has none (its tasks run
/// when the queue lets them).
pub fn local_deadline(
    s: &crate::plan::spec::SweepSpec,
    end: &super::cli::EndArgs,
    resuming: bool,
    slurm: bool,
) -> Result<Option<chrono::DateTime<chrono::Utc>>, CmdError> {
    let d = deadline(s, end, resuming)?;
    if d.is_some() && slurm {
        return Err(CmdError::input(
            "--deadline/--budget (and the spec's deadline:/budget:) are for local sweeps; with --executor slurm, give the job array a time limit (--time via --sbatch-opt)",
        ));
    }
    Ok(d)
}

/// The Slurm options when the sweep goes to Slurm (None: it runs here).
pub fn on_slurm(
    executor: super::cli::Executor,
    slots: &crate::run::slots::SlotSpec,
    s: &crate::plan::spec::SweepSpec,
    flags: &super::cli::SlurmArgs,
) -> Result<Option<crate::plan::spec::SlurmSpec>, CmdError> {
    match executor {
        super::cli::Executor::Local => Ok(None),
        super::cli::Executor::Slurm if slots.is_parallel() => Err(CmdError::input(
            "--parallel/--gpus share out this machine; with --executor slurm each run is its own task with its own GPUs (slurm.gpus_per_run): drop one of them",
        )),
        super::cli::Executor::Slurm => {
            if let Some(why) = crate::run::slurm::refusal(s) {
                return Err(CmdError::input(why));
            }
            crate::run::slurm::check_client()?;
            Ok(Some(super::slurm::options(s.slurm.as_ref(), flags)))
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::cmd::cli::EndArgs;

    fn spec(extra: &str) -> SweepSpec {
        let text = format!(
            "name: d\nserver: {{command: [python3], model_path: /m}}\nconfigs: [{{name: a}}]\nworkload: {{concurrency: 2, requests: 4, input_tokens: 4, output_tokens: 8, vocab_size: 100}}\n{extra}"
        );
        crate::plan::spec::parse(&text, "s.yaml").expect("spec")
    }

    fn end(deadline: Option<&str>, budget: Option<&str>) -> EndArgs {
        EndArgs {
            on_finish: None,
            deadline: deadline.map(str::to_string),
            budget: budget.map(str::to_string),
        }
    }

    #[test]
    fn the_flag_wins_and_a_resume_does_not_reuse_the_specs_deadline() {
        let now = chrono::Utc::now();
        let s = spec("budget: 2h\n");
        let at = deadline(&s, &end(None, None), false).unwrap().unwrap();
        let secs = (at - now).num_seconds();
        assert!((7190..=7210).contains(&secs), "{secs}");
        let at = deadline(&s, &end(None, Some("30m")), false)
            .unwrap()
            .unwrap();
        assert!(((at - now).num_seconds() - 1800).abs() <= 10);
        assert_eq!(deadline(&s, &end(None, None), true).unwrap(), None);
        let at = deadline(&s, &end(None, Some("30m")), true).unwrap();
        assert!(at.is_some(), "given again on resume, it counts");
        let both = spec("budget: 2h\ndeadline: '07:00'\n");
        let e = deadline(&both, &end(None, None), false).unwrap_err();
        assert!(e.to_string().contains("keep one"), "{e}");
        let past = spec("deadline: '2020-01-01T07:00:00Z'\n");
        let e = deadline(&past, &end(None, None), false).unwrap_err();
        assert!(e.to_string().contains("spec `deadline:`"), "{e}");
        assert!(e.to_string().contains("already past"), "{e}");
        assert_eq!(e.exit_code(), ExitCode::BadInput);
        assert_eq!(ExitCode::Deadline.code(), 3);
    }
}
