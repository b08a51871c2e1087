//! `sgtune run`, `validate` and `resume`: check everything that can be checked before
//! launching anything, set up the results folder, run the launches, print the table.

use super::{CmdError, ExitCode, out};
use crate::plan::expand::{self, RunPlan};
use crate::plan::spec::{self, Endpoint, SweepSpec};
use crate::record::provenance::{self, Manifest};
use crate::record::store::{self, ResultsDir};
use crate::run::conclude;
use crate::run::deadline::Deadline;
use crate::run::estimate::{estimate, known};
use crate::run::finish::Hook;
use crate::run::resume::{self, ResumeInput};
use crate::run::slots::SlotSpec;
use crate::run::tuning::{self, TuningInput};
use crate::server::command;
use crate::tune::estimate;
use crate::tune::work::{self, Launch};
use crate::util::say;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// What a sweep needs besides its spec, read before anything is launched.
pub struct Prepared {
    /// Prompt token ids are drawn from [0, vocab) (0: not needed).
    pub vocab: u64,
    /// `workload.dataset`, loaded.
    pub dataset: Option<Arc<Vec<crate::load::dataset::DatasetPrompt>>>,
}

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
    let vocab =
        resolve_vocab(&s).map_err(|e| CmdError::input(format!("{}: {e}", path.display())))?;
    let dataset = match &s.workload.dataset {
        Some(d) => Some(Arc::new(
            crate::load::dataset::load(Path::new(d))
                .map_err(|e| CmdError::input(format!("{}: {e}", path.display())))?,
        )),
        None => None,
    };
    Ok((s, text, plan, Prepared { vocab, dataset }))
}

/// Token ids for completions prompts are drawn from [0, vocab_size): from the spec, else the
/// model's config.json (also `text_config.vocab_size` for multimodal configs).
pub fn resolve_vocab(s: &SweepSpec) -> Result<u64, String> {
    if let Some(v) = s.workload.vocab_size {
        return Ok(v);
    }
    // Built-in quality prompts are token ids too, whatever the workload's prompts are.
    let quality_ids = s
        .quality
        .as_ref()
        .is_some_and(|q| q.prompts == crate::plan::quality::QualityPrompts::Builtin);
    if (s.workload.endpoint == Endpoint::Chat || s.workload.dataset.is_some()) && !quality_ids {
        return Ok(0);
    }
    let path = Path::new(&s.server.model_path.0).join("config.json");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "workload.vocab_size is not set and {} cannot be read ({e}): set workload.vocab_size",
            path.display()
        )
    })?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{} is not valid JSON ({e}): set workload.vocab_size",
            path.display()
        )
    })?;
    v.get("vocab_size")
        .or_else(|| v.get("text_config").and_then(|t| t.get("vocab_size")))
        .and_then(serde_json::Value::as_u64)
        .filter(|&n| n > 0)
        .ok_or_else(|| {
            format!(
                "{} has no vocab_size: set workload.vocab_size",
                path.display()
            )
        })
}

/// The plan as `validate` and a dry run print it (`report::plan`).
pub fn print_plan(s: &SweepSpec, plan: &RunPlan) {
    for l in crate::report::plan::lines(s, plan) {
        out(&l);
    }
}

/// A checked sweep, ready to run.
pub struct SweepInput<'a> {
    pub spec: &'a SweepSpec,
    pub text: &'a str,
    pub spec_path: &'a Path,
    pub plan: &'a RunPlan,
    pub prep: &'a Prepared,
    /// One launch at a time, or several in slots.
    pub slots: &'a SlotSpec,
    /// Run once when the sweep ends (`--on-finish`, `on_finish:`).
    pub hook: Option<Hook>,
    /// Stop by then with the best decision so far (`--deadline`, `--budget`, the spec's).
    pub deadline: Option<chrono::DateTime<chrono::Utc>>,
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

fn write_plan(s: &SweepSpec, plan: &RunPlan, root: &Path) -> Result<(), store::StoreError> {
    let commands: Vec<String> = plan
        .runs
        .iter()
        .map(|r| command::build(&s.server, r, s.server.port).display())
        .collect();
    store::write_json(
        &root.join("plan.json"),
        &serde_json::json!({
            "sweep": plan.sweep_name,
            "sgtune_version": env!("CARGO_PKG_VERSION"),
            "param_keys": plan.param_keys,
            "workload": s.workload,
            "repeats": s.repeats,
            "reuse_server": s.reuse_server,
            "objective": s.objective,
            "runs": plan.runs,
            "commands": commands,
        }),
    )
}

/// A new results folder, its spec copy, plan, manifest and CSV header; then the sweep.
pub async fn new_sweep(input: &SweepInput<'_>, results_dir: &Path) -> Result<ExitCode, CmdError> {
    let (results, mut manifest) = create_results(input, results_dir, &input.plan.sweep_name)?;
    let launches = work::plan_launches(input.spec, input.plan, &|_, _| false, &|_| Vec::new());
    let e = estimate(input.spec, input.plan, &launches, results_dir);
    say(&estimate::line(&e));
    execute(input, &results, &launches, &mut manifest, e.expected_s).await
}

pub fn create_results(
    input: &SweepInput<'_>,
    results_dir: &Path,
    name: &str,
) -> Result<(ResultsDir, Manifest), CmdError> {
    let results = ResultsDir::create(results_dir, name, &input.plan.param_keys)
        .map_err(|e| CmdError::input(format!("cannot create the results folder: {e}")))?;
    let manifest = provenance::collect(
        input.spec,
        &input.spec_path.display().to_string(),
        input.text,
        input.plan,
    );
    let setup = store::write_atomic(&results.root.join("spec.yaml"), input.text.as_bytes())
        .and_then(|_| write_plan(input.spec, input.plan, &results.root))
        .and_then(|_| store::write_json(&results.root.join(provenance::FILE), &manifest))
        .and_then(|_| results.init_csv());
    setup.map_err(|e| CmdError::input(format!("cannot write the results folder: {e}")))?;
    Ok((results, manifest))
}

/// Continue a sweep: keep its finished rows, redo interrupted (and, asked, failed) ones, run
/// what never started. Refused when the inputs changed, unless forced.
pub async fn resume_sweep(
    input: &SweepInput<'_>,
    dir: &Path,
    retry_failed: bool,
    force: bool,
) -> Result<ExitCode, CmdError> {
    let (results, launches, mut recorded) = prepare_resume(input, dir, retry_failed, force)?;
    // Earlier sweeps next to this one, and this one's own rows, say how long a launch takes.
    let e = estimate(
        input.spec,
        input.plan,
        &launches,
        dir.parent().unwrap_or(Path::new(".")),
    );
    say(&format!("what is left: {}", estimate::line(&e)));
    execute(input, &results, &launches, &mut recorded, e.expected_s).await
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

/// Run the launches into `results` (`run::tuning` runs every round the tuner asks for),
/// then print and save the table of every row the folder holds, map the outcome to an exit
/// code, and tell it (`outcome.json`, the `on_finish` hook), also when a round stopped on an
/// error.
pub async fn execute(
    input: &SweepInput<'_>,
    results: &ResultsDir,
    launches: &[Launch],
    manifest: &mut Manifest,
    estimate_s: Option<f64>,
) -> Result<ExitCode, CmdError> {
    let tuning = TuningInput {
        spec: input.spec,
        plan: input.plan,
        vocab: input.prep.vocab,
        dataset: input.prep.dataset.clone(),
        slots: input.slots,
        estimate_s,
        deadline: input.deadline.map(|at| {
            let known = known(
                input.spec,
                input.plan,
                results.root.parent().unwrap_or(Path::new(".")),
            );
            Arc::new(Deadline::new(at, input.spec.server.stop_timeout_s, &known))
        }),
    };
    // Against a deadline, a decision as early as possible: every configuration once before
    // any extra repeat.
    let ordered;
    let launches = match &tuning.deadline {
        Some(d) => {
            let left_s = (d.at - chrono::Utc::now()).num_seconds().max(0) as f64;
            let usable_s = (left_s - d.lead_s()).max(0.0);
            let fits = match estimate_s {
                Some(e) if e <= usable_s => format!("the expected {} fits", estimate::human(e)),
                Some(e) => format!(
                    "the expected {} does not fit: every configuration once first, the rest left for `sgtune resume`",
                    estimate::human(e)
                ),
                None => "the plan's time is not known".to_string(),
            };
            say(&format!(
                "deadline: {} (in {}; measuring stops {} before it, for the servers to stop): {fits}. Launches that no longer fit are not started.",
                d.at.with_timezone(&chrono::Local)
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, false),
                estimate::human(left_s),
                estimate::human(d.lead_s())
            ));
            ordered = crate::tune::deadline::order_for_decision(launches);
            &ordered[..]
        }
        None => launches,
    };
    let ran = tuning::run_rounds(&tuning, results, launches, manifest).await;
    Ok(conclude::end(
        input.spec,
        input.plan,
        results,
        manifest,
        ran,
        tuning.deadline.as_deref(),
        input.hook.as_ref(),
    )
    .await?)
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
