//! `sgtune run`, `validate` and `resume`: check everything that can be checked before
//! launching anything, read the flags (deadline, hook, slots), then hand the sweep to
//! `run::execute`, which sets up the results folder, runs the launches and concludes.

use super::{CmdError, ExitCode, out};
use crate::plan::expand::{self, RunPlan};
use crate::plan::spec::{self, SweepSpec};
use crate::record::provenance::Manifest;
use crate::record::store::ResultsDir;
use crate::run::estimate::estimate;
use crate::run::finish::Hook;
use crate::run::resume::{self, ResumeInput};
use crate::run::slots::SlotSpec;
use crate::tune::estimate;
use crate::tune::work::{self, Launch};
use crate::util::say;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// [`load_checked`] for a sweep that continues in (or is read back from) the results folder
/// `dir`: a folder recorded before run ids hashed the launched command keeps its runs' ids
/// (`expand::adopt_recorded_ids`), so its plan reads as unchanged and its rows stay grouped.
pub fn load_in_folder(
    path: &Path,
    dir: &Path,
) -> Result<(SweepSpec, String, RunPlan, Prepared), CmdError> {
    let (s, text, mut plan, prep) = load_checked(path)?;
    // An unreadable manifest is reported by what reads it next (resume, reproduce).
    if let Ok(recorded) = crate::record::provenance::read(dir) {
        expand::adopt_recorded_ids(&s, &mut plan, &recorded.plan.runs);
    }
    Ok((s, text, plan, prep))
}

/// A checked sweep and how it runs: `run::execute`.
pub use crate::run::execute::{Prepared, SweepInput, execute};

pub fn load_checked(path: &Path) -> Result<(SweepSpec, String, RunPlan, Prepared), CmdError> {
    let (s, text) = spec::load(path)?;
    if let Some(o) = &s.objective {
        // The names are checked against the column list here (record is a later layer than
        // the spec), and the error is placed on the offending key.
        crate::tune::objective::check(o, s.workload.slo.is_some()).map_err(|(key, message)| {
            let (line, column) = spec::locate_objective(&text, &key);
            spec::SpecError {
                file: path.display().to_string(),
                line,
                column,
                message,
            }
        })?;
    }
    let plan = expand::expand(&s);
    if let Some(message) = expand::preflight_refusal(&s, &plan) {
        // Placed on the knob's first mention (its `preflight` value or its range).
        let knob = s.search.preflight.as_ref().map_or("", |p| p.knob.as_str());
        let (line, column) = spec::locate_key_in(&text, knob)
            .or_else(|| spec::locate_key_in(&text, "preflight"))
            .unwrap_or((1, 1));
        return Err(spec::SpecError {
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
                spec::SpecError {
                    file: path.display().to_string(),
                    line,
                    column,
                    message,
                }
            })?;
        q.baseline = Some(name);
    }
    let vocab = crate::run::execute::resolve_vocab(&s)
        .map_err(|e| CmdError::input(format!("{}: {e}", path.display())))?;
    let dataset = match &s.workload.dataset {
        Some(d) => Some(Arc::new(
            crate::load::dataset::load(Path::new(d))
                .map_err(|e| CmdError::input(format!("{}: {e}", path.display())))?,
        )),
        None => None,
    };
    Ok((s, text, plan, Prepared { vocab, dataset }))
}

/// The plan as `validate` and a dry run print it (`report::plan`).
pub fn print_plan(s: &SweepSpec, plan: &RunPlan) {
    for l in crate::report::plan::lines(s, plan) {
        out(&l);
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
        SlotSpec::from_flags(parallel, gpus.as_deref(), per_run).map_err(CmdError::Input)?;
    slots
        .check(&plan.runs, s.server.port)
        .map_err(CmdError::Input)?;
    Ok(slots)
}

/// With `tune:`: the space's size, what its grid would cost, and the tune's bound (its
/// `launches:`), at the estimate of one configuration (`e`, the start's plan).
pub fn tune_lines(s: &SweepSpec, e: &estimate::Estimate) -> Vec<String> {
    let Some(t) = &s.tune else {
        return Vec::new();
    };
    let size = t.size();
    let per_config = e.launches.max(1) as u128;
    let at = |configs: u128| match e.expected_s {
        Some(x) => format!(", about {}", estimate::human(x * configs as f64)),
        None => String::new(),
    };
    let knobs: Vec<String> = t
        .knobs
        .iter()
        .map(|k| format!("{} ({})", k.key, k.values.len()))
        .collect();
    vec![
        format!(
            "tune: {} knob(s): {}; the space holds {size} configuration(s); its whole grid would be {} launch(es){}",
            t.knobs.len(),
            knobs.join(", "),
            size * per_config,
            at(size)
        ),
        format!(
            "tune: at most {} configuration(s) ({} launch(es)){}, starting at {}; each next one chosen from the evidence of the ones before",
            t.launches,
            t.launches as u128 * per_config,
            at(t.launches as u128),
            crate::plan::tune::point_name(t, &t.start)
        ),
    ]
}

/// A new results folder (`run::execute::create_results`); then the sweep.
pub async fn new_sweep(input: &SweepInput<'_>, results_dir: &Path) -> Result<ExitCode, CmdError> {
    programs_exist(input)?;
    let (results, mut manifest) = create_results(input, results_dir, &input.plan.sweep_name)?;
    let launches = work::plan_launches(input.spec, input.plan, &|_, _| false, &|_| Vec::new());
    let e = estimate(input.spec, input.plan, &launches, results_dir);
    say(&estimate::line(&e));
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
fn programs_exist(input: &SweepInput<'_>) -> Result<(), CmdError> {
    let mut seen = std::collections::BTreeSet::new();
    for run in &input.plan.runs {
        let cmd = crate::server::command::build(&input.spec.server, run, None);
        if seen.insert(cmd.program.clone()) {
            crate::server::command::find_program(&cmd.program, &cmd.env)
                .map_err(|e| CmdError::ProgramNotFound(format!("nothing was launched: {e}")))?;
        }
    }
    Ok(())
}

/// Whether the estimate fits before the deadline, when there is one (`tune::deadline::fit_line`,
/// with the lead the deadline's clock keeps to stop the last server).
pub fn fit_line(
    e: &estimate::Estimate,
    s: &SweepSpec,
    deadline: Option<chrono::DateTime<chrono::Utc>>,
) -> Option<String> {
    let at = deadline?;
    let left_s = (at - chrono::Utc::now()).num_milliseconds() as f64 / 1000.0;
    let lead_s = crate::tune::deadline::lead_s(
        s.server.stop_timeout_s,
        crate::run::session::INTERRUPT_GRACE.as_secs_f64(),
    );
    Some(crate::tune::deadline::fit_line(e, left_s, lead_s))
}

/// A new results folder, its spec copy, plan, manifest and CSV header.
pub fn create_results(
    input: &SweepInput<'_>,
    results_dir: &Path,
    name: &str,
) -> Result<(ResultsDir, Manifest), CmdError> {
    crate::run::execute::create_results(input, results_dir, name).map_err(CmdError::Input)
}

/// Continue a sweep: keep its finished rows, redo interrupted (and, asked, failed) ones, run
/// what never started. Refused when the inputs changed, unless forced.
pub async fn resume_sweep(
    input: &SweepInput<'_>,
    dir: &Path,
    retry_failed: bool,
    force: bool,
) -> Result<ExitCode, CmdError> {
    programs_exist(input)?;
    let (results, launches, mut recorded) = prepare_resume(input, dir, retry_failed, force)?;
    // Earlier sweeps next to this one, and this one's own rows, say how long a launch takes.
    let e = estimate(
        input.spec,
        input.plan,
        &launches,
        dir.parent().unwrap_or(Path::new(".")),
    );
    say(&format!("what is left: {}", estimate::line(&e)));
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
) -> Result<(ResultsDir, Vec<Launch>, Manifest), CmdError> {
    let r = ResumeInput {
        spec: input.spec,
        spec_path: input.spec_path,
        text: input.text,
        plan: input.plan,
    };
    resume::prepare_resume(&r, dir, retry_failed, force).map_err(CmdError::Input)
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
