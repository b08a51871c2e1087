//! Cmd: one thin front-end per subcommand. Each parses nothing itself (clap did, in `cli`),
//! wires the stages together, and returns an [`ExitCode`] or a [`CmdError`]; a sweep's outcome
//! becomes its exit code in `run::conclude`, every error's here.

pub mod cli;
pub mod compare;
pub mod load;
pub mod log;
pub mod report;
pub mod reproduce;
pub mod slurm;
pub mod status;
pub mod sweep;

use crate::record::store;
use crate::util::say;
use cli::{Cli, Command};

/// How sgtune exits: `run::finish` has it, as outcome.json records it; the mapping of errors
/// to it is here (`CmdError::exit_code`).
pub use crate::run::finish::ExitCode;

/// Why a command could not do its job at all (a failed run is not this: it is a row).
#[derive(Debug, thiserror::Error)]
pub enum CmdError {
    #[error(transparent)]
    Spec(#[from] crate::plan::spec::SpecError),
    #[error(transparent)]
    Store(#[from] store::StoreError),
    #[error(transparent)]
    Read(#[from] crate::record::ReadError),
    /// Anything else the user can fix: the message names the place and the fix.
    #[error("{0}")]
    Input(String),
    /// The server's program is not there: nothing was launched.
    #[error("{0}")]
    ProgramNotFound(String),
}

/// Each of report.html's errors is one of ours, with the same words.
impl From<crate::run::report::ReportError> for CmdError {
    fn from(e: crate::run::report::ReportError) -> CmdError {
        match e {
            crate::run::report::ReportError::Read(e) => CmdError::Read(e),
            crate::run::report::ReportError::Store(e) => CmdError::Store(e),
        }
    }
}

impl CmdError {
    pub fn input(msg: impl Into<String>) -> CmdError {
        CmdError::Input(msg.into())
    }

    /// Each error is the user's to fix and nothing was judged; the code tells a script which
    /// kind: bad input (2), a results folder that cannot be written (5), a missing program (6).
    pub fn exit_code(&self) -> ExitCode {
        match self {
            CmdError::Spec(_) | CmdError::Read(_) | CmdError::Input(_) => ExitCode::BadInput,
            CmdError::Store(_) => ExitCode::Unwritable,
            CmdError::ProgramNotFound(_) => ExitCode::ProgramNotFound,
        }
    }
}

/// The session's deadline (`sweep::deadline`); a Slurm submission has none (its tasks run
/// when the queue lets them).
fn local_deadline(
    s: &crate::plan::spec::SweepSpec,
    end: &cli::EndArgs,
    resuming: bool,
    slurm: bool,
) -> Result<Option<chrono::DateTime<chrono::Utc>>, CmdError> {
    let d = sweep::deadline(s, end, resuming)?;
    if d.is_some() && slurm {
        return Err(CmdError::input(
            "--deadline/--budget (and the spec's deadline:/budget:) are for local sweeps; with --executor slurm, give the job array a time limit (--time via --sbatch-opt)",
        ));
    }
    Ok(d)
}

/// Results go to stdout (`util::out`, which the conclusion in `run` also uses).
pub(crate) use crate::util::out;

/// Run one subcommand; errors are said here, once, and mapped to their exit code.
pub async fn run(cli: Cli) -> ExitCode {
    match dispatch(cli).await {
        Ok(code) => code,
        Err(e) => {
            say(&format!("error: {e}"));
            e.exit_code()
        }
    }
}

async fn dispatch(cli: Cli) -> Result<ExitCode, CmdError> {
    match cli.command {
        Command::Reap { parent, pgid } => {
            crate::server::reap::reap_loop(parent, pgid);
            Ok(ExitCode::Ok)
        }
        Command::Load {
            url,
            model,
            workload,
            sets,
            output,
        } => {
            let mut w =
                load::build_workload(workload.as_deref(), &sets).map_err(CmdError::Input)?;
            if model.is_some() {
                w.model = model;
            }
            load::run(&url, w, output.as_deref()).await
        }
        Command::Log(args) => log::run(args).await,
        Command::Report {
            dir,
            dir2,
            output,
            noise,
        } => report::run(&dir, dir2.as_deref(), output.as_deref(), noise),
        Command::Columns => {
            out(&crate::record::columns_markdown());
            Ok(ExitCode::Ok)
        }
        Command::Validate {
            spec,
            results_dir,
            deadline,
            budget,
            executor,
        } => {
            let (s, _, plan, _) = sweep::load_checked(&spec)?;
            let slurm = executor == cli::Executor::Slurm;
            if slurm {
                if let Some(why) = slurm_refusal(&s) {
                    return Err(CmdError::input(why));
                }
            }
            // A deadline that does not read is bad input here too, before `run` would meet it.
            let end = cli::EndArgs {
                deadline,
                budget,
                ..cli::EndArgs::default()
            };
            let at = local_deadline(&s, &end, false, slurm)?;
            sweep::print_plan(&s, &plan);
            let launches =
                crate::tune::work::plan_launches(&s, &plan, &|_, _| false, &|_| Vec::new());
            let e = crate::run::estimate::estimate(&s, &plan, &launches, &results_dir);
            out(&crate::tune::estimate::line(&e));
            if let Some(line) = sweep::fit_line(&e, &s, at) {
                out(&line);
            }
            for l in sweep::tune_lines(&s, &e) {
                out(&l);
            }
            Ok(ExitCode::Ok)
        }
        Command::Run {
            spec,
            dry_run,
            results_dir,
            resume,
            retry_failed,
            force,
            slots,
            end,
            executor,
            slurm: slurm_flags,
        } => {
            let (s, text, plan, prep) = match &resume {
                Some(dir) => sweep::load_in_folder(&spec, dir)?,
                None => sweep::load_checked(&spec)?,
            };
            let slots = sweep::slot_spec(&slots, &s, &plan)?;
            let slurm_opts = on_slurm(executor, &slots, &s, &slurm_flags)?;
            let deadline = local_deadline(&s, &end, resume.is_some(), slurm_opts.is_some())?;
            if dry_run {
                sweep::print_plan(&s, &plan);
                if s.tune.is_some() {
                    let launches =
                        crate::tune::work::plan_launches(&s, &plan, &|_, _| false, &|_| Vec::new());
                    let e = crate::run::estimate::estimate(&s, &plan, &launches, &results_dir);
                    for l in sweep::tune_lines(&s, &e) {
                        out(&l);
                    }
                }
                return Ok(ExitCode::Ok);
            }
            let input = sweep::SweepInput {
                spec: &s,
                text: &text,
                spec_path: &spec,
                plan: &plan,
                prep: &prep,
                slots: &slots,
                hook: sweep::hook(&s, &end),
                deadline,
            };
            match (resume, slurm_opts) {
                (Some(dir), None) => sweep::resume_sweep(&input, &dir, retry_failed, force).await,
                (None, None) => sweep::new_sweep(&input, &results_dir).await,
                (Some(dir), Some(o)) => {
                    let (results, launches, _) =
                        sweep::prepare_resume(&input, &dir, retry_failed, force)?;
                    slurm::submit(&input, &results, &launches, &o)
                }
                (None, Some(o)) => {
                    let (results, _) =
                        sweep::create_results(&input, &results_dir, &plan.sweep_name)?;
                    let launches =
                        crate::tune::work::plan_launches(&s, &plan, &|_, _| false, &|_| Vec::new());
                    slurm::submit(&input, &results, &launches, &o)
                }
            }
        }
        Command::Resume {
            dir,
            retry_failed,
            force,
            slots,
            end,
            executor,
            slurm: slurm_flags,
        } => {
            let spec = dir.join(store::SPEC_YAML);
            let (s, text, plan, prep) = sweep::load_in_folder(&spec, &dir)?;
            let slots = sweep::slot_spec(&slots, &s, &plan)?;
            let slurm_opts = on_slurm(executor, &slots, &s, &slurm_flags)?;
            let deadline = local_deadline(&s, &end, true, slurm_opts.is_some())?;
            let input = sweep::SweepInput {
                spec: &s,
                text: &text,
                spec_path: &spec,
                plan: &plan,
                prep: &prep,
                slots: &slots,
                hook: sweep::hook(&s, &end),
                deadline,
            };
            match slurm_opts {
                None => sweep::resume_sweep(&input, &dir, retry_failed, force).await,
                Some(o) => {
                    let (results, launches, _) =
                        sweep::prepare_resume(&input, &dir, retry_failed, force)?;
                    slurm::submit(&input, &results, &launches, &o)
                }
            }
        }
        Command::Status { dir } => status::run(&dir),
        Command::Cancel { dir } => slurm::cancel(&dir),
        Command::RunOne {
            dir,
            launch,
            marker,
        } => slurm::run_one(&dir, &launch, &marker).await,
        Command::Merge { dir } => slurm::merge(&dir),
        Command::Compare {
            a,
            b,
            metric,
            format,
            noise,
            all,
            fail_on,
        } => compare::run(
            &a,
            &b,
            metric,
            compare::View {
                format: format.into(),
                all,
                fail_on: fail_on.into_iter().map(Into::into).collect(),
            },
            noise,
        ),
        Command::Reproduce {
            dir,
            run,
            decision,
            results_dir,
            tolerance,
        } => match (run, tolerance) {
            (Some(run), tolerance) if !decision => {
                let tolerance = tolerance.unwrap_or(reproduce::DEFAULT_TOLERANCE);
                reproduce::run(&dir, &run, &results_dir, tolerance).await
            }
            (_, Some(_)) => Err(CmdError::input(reproduce::TOLERANCE_WITH_DECISION)),
            _ => reproduce::decision(&dir, &results_dir).await,
        },
    }
}

/// What in the spec a Slurm submission cannot run yet (`run`, `resume` and `validate` with
/// `--executor slurm` refuse it).
fn slurm_refusal(s: &crate::plan::spec::SweepSpec) -> Option<&'static str> {
    if s.tune.is_some() {
        return Some(
            "--executor slurm does not run `tune:` yet (each step's configuration is chosen from the rows of the steps before, and the job array is planned once, at submission): run the tune locally",
        );
    }
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

/// The Slurm options when the sweep goes to Slurm (None: it runs here).
fn on_slurm(
    executor: cli::Executor,
    slots: &crate::run::slots::SlotSpec,
    s: &crate::plan::spec::SweepSpec,
    flags: &cli::SlurmArgs,
) -> Result<Option<crate::plan::spec::SlurmSpec>, CmdError> {
    match executor {
        cli::Executor::Local => Ok(None),
        cli::Executor::Slurm if slots.is_parallel() => Err(CmdError::input(
            "--parallel/--gpus share out this machine; with --executor slurm each run is its own task with its own GPUs (slurm.gpus_per_run): drop one of them",
        )),
        cli::Executor::Slurm => {
            if let Some(why) = slurm_refusal(s) {
                return Err(CmdError::input(why));
            }
            crate::run::slurm::check_client()?;
            Ok(Some(slurm::options(s.slurm.as_ref(), flags)))
        }
    }
}
