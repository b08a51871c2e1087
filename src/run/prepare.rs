//! A sweep read and checked before anything is launched (`load_checked`, `load_in_folder`),
//! and the sweep started on it, new (`new_sweep`) or resumed (`resume_sweep`). `cmd` calls
//! these for `run`, `validate` and `resume`, and `run::slurm` for a task and the merge, which
//! read the spec the same way.

use crate::plan::expand::{self, RunPlan};
use crate::plan::spec::{self, SpecError, SweepSpec};
use crate::record::provenance::Manifest;
use crate::record::store::{ResultsDir, StoreError};
use crate::run::estimate::{estimate, fit_line, tune_lines};
use crate::run::execute::{Prepared, SweepInput, execute};
use crate::run::finish::ExitCode;
use crate::run::resume::{self, ResumeInput};
use crate::tune::estimate as est;
use crate::tune::work::{self, Launch};
use crate::util::say;
use std::path::Path;
use std::sync::Arc;

/// Why a sweep could not start (or a Slurm task or merge do its job); `cmd` maps each to its
/// exit code.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Anything else the user can fix: the message names the place and the fix.
    #[error("{0}")]
    Input(String),
    /// The server's program is not there: nothing was launched.
    #[error("{0}")]
    ProgramNotFound(String),
}

impl StartError {
    pub fn input(msg: impl Into<String>) -> StartError {
        StartError::Input(msg.into())
    }
}

/// A spec, its text, its plan and what it needs prepared, checked.
pub type Checked = (SweepSpec, String, RunPlan, Prepared);

/// [`load_checked`] for a sweep that continues in (or is read back from) the results folder
/// `dir`: a folder recorded before run ids hashed the launched command keeps its runs' ids
/// (`expand::adopt_recorded_ids`), so its plan reads as unchanged and its rows stay grouped.
pub fn load_in_folder(path: &Path, dir: &Path) -> Result<Checked, StartError> {
    let (s, text, mut plan, prep) = load_checked(path)?;
    // An unreadable manifest is reported by what reads it next (resume, reproduce).
    if let Ok(recorded) = crate::record::provenance::read(dir) {
        expand::adopt_recorded_ids(&s, &mut plan, &recorded.plan.runs);
    }
    Ok((s, text, plan, prep))
}

pub fn load_checked(path: &Path) -> Result<Checked, StartError> {
    // The objective's names are resolved to columns (and checked) as the spec is read.
    let (s, text) = spec::load(path)?;
    let plan = expand::expand(&s);
    if let Some(message) = expand::preflight_refusal(&s, &plan) {
        // Placed on the knob's first mention (its `preflight` value or its range).
        let knob = s.search.preflight.as_ref().map_or("", |p| p.knob.as_str());
        let (line, column) = spec::locate_key_in(&text, knob)
            .or_else(|| spec::locate_key_in(&text, "preflight"))
            .unwrap_or((1, 1));
        return Err(SpecError {
            file: path.display().to_string(),
            line,
            column,
            message,
        }
        .into());
    }
    let mut s = s;
    if let Some(q) = s.quality.as_mut() {
        // The baseline is resolved once against the plan's names, so every launch (and a
        // Slurm task, which reads the same spec) knows which one makes two passes.
        let names: Vec<String> = plan.runs.iter().map(|r| r.name.clone()).collect();
        let name = crate::plan::quality::baseline_name(q, &names)
            .map(String::from)
            .map_err(|message| {
                let (line, column) = spec::locate_key_in(&text, "baseline")
                    .or_else(|| spec::locate_key_in(&text, "quality"))
                    .unwrap_or((1, 1));
                SpecError {
                    file: path.display().to_string(),
                    line,
                    column,
                    message,
                }
            })?;
        q.baseline = Some(name);
    }
    let vocab = crate::run::execute::resolve_vocab(&s)
        .map_err(|e| StartError::input(format!("{}: {e}", path.display())))?;
    let dataset = match crate::load::dataset::load_for(&s.workload) {
        Some(d) => {
            Some(Arc::new(d.map_err(|e| {
                StartError::input(format!("{}: {e}", path.display()))
            })?))
        }
        None => None,
    };
    let past = sessions_past_context(&s)
        .or_else(|| dataset.as_deref().and_then(|d| trace_past_context(&s, d)));
    if let Some(message) = past {
        let (line, column) = spec::locate_key_in(&text, "sessions").unwrap_or((1, 1));
        return Err(SpecError {
            file: path.display().to_string(),
            line,
            column,
            message,
        }
        .into());
    }
    Ok((s, text, plan, Prepared { vocab, dataset }))
}

/// The model's context length where it is known before launch: `context_length` in
/// `server.args`, else `max_position_embeddings` in the model's config.json.
fn known_context(s: &SweepSpec) -> Option<u64> {
    use crate::plan::flags::ParamValue;
    let asked = s.server.args.0.iter().find_map(|(k, v)| match v {
        ParamValue::Int(n) if k == "context_length" => u64::try_from(*n).ok(),
        _ => None,
    });
    asked.or_else(|| {
        let text =
            std::fs::read_to_string(Path::new(&s.server.model_path.0).join("config.json")).ok()?;
        let v: serde_json::Value = serde_json::from_str(&text).ok()?;
        v.get("max_position_embeddings")
            .or_else(|| v.get("text_config")?.get("max_position_embeddings"))
            .and_then(serde_json::Value::as_u64)
    })
}

/// A synthetic session whose last turn (history, message and reply at their longest) would
/// not fit the model's context: the message, or None (fits, not synthetic, or the context is
/// not known before launch; the server then refuses the turn and the row's first error says
/// so).
fn sessions_past_context(s: &SweepSpec) -> Option<String> {
    let w = &s.workload;
    let ss = w.sessions.as_ref()?;
    let reply_max = w
        .output_dist
        .as_ref()
        .map_or(w.output_tokens, |d| d.bounds().1);
    let turns = ss.nominal_turns(w.output_tokens, reply_max, true)?;
    let last = turns.last()?;
    let need = last.prompt + last.reply;
    let context = known_context(s)?;
    (need > context).then(|| {
        format!(
            "workload.sessions: a session's last turn needs {need} tokens (history, message and reply at their longest, {} turns) but the model's context is {context}: fewer `turns`, shorter `user_tokens` or `reply_tokens`",
            turns.len()
        )
    })
}

/// A mooncake trace's longest record (its input and output) past the model's context, where
/// that is known before launch: the message naming the record, or None.
fn trace_past_context(s: &SweepSpec, d: &[crate::load::dataset::DatasetPrompt]) -> Option<String> {
    use crate::load::dataset::DatasetPrompt;
    let (i, need) = d
        .iter()
        .enumerate()
        .filter_map(|(i, p)| match p {
            DatasetPrompt::Record(r) => Some((i, r.input + r.output)),
            _ => None,
        })
        .max_by_key(|&(_, need)| need)?;
    let context = known_context(s)?;
    (need > context).then(|| {
        format!(
            "workload.sessions.from_trace: record {} needs {need} tokens (its input_length and output_length) but the model's context is {context}: drop the longer records from the trace, or raise `context_length`",
            i + 1
        )
    })
}

/// A new results folder (`run::execute::create_results`); then the sweep.
pub async fn new_sweep(input: &SweepInput<'_>, results_dir: &Path) -> Result<ExitCode, StartError> {
    programs_exist(input)?;
    let (results, mut manifest) = create_results(input, results_dir, &input.plan.sweep_name)?;
    let launches = work::plan_launches(input.spec, input.plan, &|_, _| false, &|_| Vec::new());
    let e = estimate(input.spec, input.plan, &launches, results_dir);
    say(&est::line(&e));
    if let Some(line) = fit_line(&e, input.spec, input.deadline) {
        say(&line);
    }
    for l in tune_lines(input.spec, &e) {
        say(&l);
    }
    Ok(execute(input, &results, &launches, &mut manifest, e.expected_s).await?)
}

/// Every configuration's program can be started here (`server::command::find_program`),
/// before a results folder exists: a missing interpreter is one error, not a failed row per
/// configuration. (Slurm tasks run elsewhere and are not checked here.)
fn programs_exist(input: &SweepInput<'_>) -> Result<(), StartError> {
    let mut seen = std::collections::BTreeSet::new();
    for run in &input.plan.runs {
        let cmd = crate::server::command::build(&input.spec.server, run, None);
        if seen.insert(cmd.program.clone()) {
            crate::server::command::find_program(&cmd.program, &cmd.env)
                .map_err(|e| StartError::ProgramNotFound(format!("nothing was launched: {e}")))?;
        }
    }
    Ok(())
}

/// A new results folder, its spec copy, plan, manifest and CSV header.
pub fn create_results(
    input: &SweepInput<'_>,
    results_dir: &Path,
    name: &str,
) -> Result<(ResultsDir, Manifest), StartError> {
    crate::run::execute::create_results(input, results_dir, name).map_err(StartError::Input)
}

/// Continue a sweep: keep its finished rows, redo interrupted (and, asked, failed) ones, run
/// what never started. Refused when the inputs changed, unless forced.
pub async fn resume_sweep(
    input: &SweepInput<'_>,
    dir: &Path,
    retry_failed: bool,
    force: bool,
) -> Result<ExitCode, StartError> {
    programs_exist(input)?;
    let (results, launches, mut recorded) = prepare_resume(input, dir, retry_failed, force)?;
    // Earlier sweeps next to this one, and this one's own rows, say how long a launch takes.
    let e = estimate(
        input.spec,
        input.plan,
        &launches,
        dir.parent().unwrap_or(Path::new(".")),
    );
    say(&format!("what is left: {}", est::line(&e)));
    if let Some(line) = fit_line(&e, input.spec, input.deadline) {
        say(&line);
    }
    Ok(execute(input, &results, &launches, &mut recorded, e.expected_s).await?)
}

/// What a resume keeps and what it redoes (`run::resume`).
pub fn prepare_resume(
    input: &SweepInput<'_>,
    dir: &Path,
    retry_failed: bool,
    force: bool,
) -> Result<(ResultsDir, Vec<Launch>, Manifest), StartError> {
    let r = ResumeInput {
        spec: input.spec,
        spec_path: input.spec_path,
        text: input.text,
        plan: input.plan,
    };
    resume::prepare_resume(&r, dir, retry_failed, force).map_err(StartError::Input)
}

/// Where a sweep's launches go: a new results folder under a parent, or a folder resumed.
#[derive(Debug, Clone, Copy)]
pub enum Target<'a> {
    New(&'a Path),
    Resume {
        dir: &'a Path,
        retry_failed: bool,
        force: bool,
    },
}

/// Run the sweep on this machine, into a new folder or the one resumed.
pub async fn run_here(input: &SweepInput<'_>, target: Target<'_>) -> Result<ExitCode, StartError> {
    match target {
        Target::New(results_dir) => new_sweep(input, results_dir).await,
        Target::Resume {
            dir,
            retry_failed,
            force,
        } => resume_sweep(input, dir, retry_failed, force).await,
    }
}

/// The folder a Slurm submission fills and the launches it submits: a new folder and the
/// whole plan, or the resumed folder put in order and what is left of it.
pub fn folder_for_slurm(
    input: &SweepInput<'_>,
    target: Target<'_>,
) -> Result<(ResultsDir, Vec<Launch>), StartError> {
    match target {
        Target::New(results_dir) => {
            let (results, _) = create_results(input, results_dir, &input.plan.sweep_name)?;
            let launches =
                work::plan_launches(input.spec, input.plan, &|_, _| false, &|_| Vec::new());
            Ok((results, launches))
        }
        Target::Resume {
            dir,
            retry_failed,
            force,
        } => {
            let (results, launches, _) = prepare_resume(input, dir, retry_failed, force)?;
            Ok((results, launches))
        }
    }
}
