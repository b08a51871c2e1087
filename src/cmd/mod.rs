//! Cmd: one thin front-end per subcommand. Each parses nothing itself (clap did, in `cli`),
//! wires the stages together, and returns an [`ExitCode`] or a [`CmdError`]; a sweep's outcome
//! becomes its exit code in `run::conclude`, every error's here.

pub mod args;
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
use crate::run::prepare::{StartError, Target};
use crate::util::say;
use cli::{Cli, Command};

/// How sgtune exits: `run::finish` has it, as outcome.json records it; the mapping of errors
/// to it is here (`CmdError::exit_code`).
pub use crate::run::finish::ExitCode;

/// Why a command could not do its job at all (a failed run is not this: it is a row): one of
/// the kinds a sweep cannot start for ([`StartError`]: the spec, the results folder, other
/// input, a missing program), or a recorded folder that cannot be read back.
#[derive(Debug, thiserror::Error)]
pub enum CmdError {
    #[error(transparent)]
    Start(#[from] StartError),
    #[error(transparent)]
    Read(#[from] crate::record::ReadError),
}

impl From<crate::plan::spec::SpecError> for CmdError {
    fn from(e: crate::plan::spec::SpecError) -> CmdError {
        CmdError::Start(StartError::Spec(e))
    }
}

impl From<store::StoreError> for CmdError {
    fn from(e: store::StoreError) -> CmdError {
        CmdError::Start(StartError::Store(e))
    }
}

/// Each of report.html's errors is one of ours, with the same words.
impl From<crate::run::report::ReportError> for CmdError {
    fn from(e: crate::run::report::ReportError) -> CmdError {
        match e {
            crate::run::report::ReportError::Read(e) => CmdError::Read(e),
            crate::run::report::ReportError::Store(e) => e.into(),
        }
    }
}

impl CmdError {
    /// Anything else the user can fix: the message names the place and the fix.
    pub fn input(msg: impl Into<String>) -> CmdError {
        CmdError::Start(StartError::input(msg))
    }

    /// Each error is the user's to fix and nothing was judged; the code tells a script which
    /// kind: bad input (2), a results folder that cannot be written (5), a missing program (6).
    pub fn exit_code(&self) -> ExitCode {
        match self {
            CmdError::Start(StartError::Spec(_) | StartError::Input(_)) | CmdError::Read(_) => {
                ExitCode::BadInput
            }
            CmdError::Start(StartError::Store(_)) => ExitCode::Unwritable,
            CmdError::Start(StartError::ProgramNotFound(_)) => ExitCode::ProgramNotFound,
        }
    }
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
                load::build_workload(workload.as_deref(), &sets).map_err(CmdError::input)?;
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
            let (s, text, plan, prep) = sweep::load_checked(&spec)?;
            let slurm = executor == cli::Executor::Slurm;
            if slurm {
                if let Some(why) = crate::run::slurm::refusal(&s) {
                    return Err(CmdError::input(why));
                }
            }
            // A deadline that does not read is bad input here too, before `run` would meet it.
            let end = cli::EndArgs {
                deadline,
                budget,
                ..cli::EndArgs::default()
            };
            let at = sweep::local_deadline(&s, &end, false, slurm)?;
            for l in crate::run::estimate::validate_lines(&s, &plan, &results_dir, at) {
                out(&l);
            }
            if let Some(l) = prep
                .dataset
                .as_deref()
                .and_then(|d| crate::report::plan::dataset_sessions_line(d))
            {
                out(&l);
            }
            for l in crate::run::flags::validate_lines(&s, &text, &spec) {
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
            let slurm_opts = sweep::on_slurm(executor, &slots, &s, &slurm_flags)?;
            let deadline = sweep::local_deadline(&s, &end, resume.is_some(), slurm_opts.is_some())?;
            let unknown = crate::run::flags::run_warnings(&s, &text, &spec);
            if dry_run {
                for l in crate::run::estimate::dry_run_lines(&s, &plan, &results_dir) {
                    out(&l);
                }
                for w in &unknown {
                    out(w);
                }
                return Ok(ExitCode::Ok);
            }
            // Before anything is launched: a misspelled key still goes to the server.
            for w in &unknown {
                say(w);
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
            let target = match &resume {
                Some(dir) => Target::Resume {
                    dir,
                    retry_failed,
                    force,
                },
                None => Target::New(&results_dir),
            };
            sweep::start(&input, target, slurm_opts).await
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
            for w in crate::run::flags::run_warnings(&s, &text, &spec) {
                say(&w);
            }
            let slots = sweep::slot_spec(&slots, &s, &plan)?;
            let slurm_opts = sweep::on_slurm(executor, &slots, &s, &slurm_flags)?;
            let deadline = sweep::local_deadline(&s, &end, true, slurm_opts.is_some())?;
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
            let target = Target::Resume {
                dir: &dir,
                retry_failed,
                force,
            };
            sweep::start(&input, target, slurm_opts).await
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
