//! `sgtune run`, `validate` and `resume`: check everything that can be checked before
//! launching anything, set up the results folder, run the launches, print the table.

use super::{CmdError, ExitCode, out};
use crate::plan::expand::{self, RunPlan};
use crate::plan::spec::{self, Endpoint, SweepSpec};
use crate::record::provenance::{self, Manifest};
use crate::record::rows;
use crate::record::store::{self, ResultsDir};
use crate::report::decision as decision_md;
use crate::report::table;
use crate::run::resume::{self, ResumeInput};
use crate::run::slots::SlotSpec;
use crate::run::tuning::{self, TuningInput};
use crate::server::command;
use crate::tune::decision;
use crate::tune::work::{self, Launch};
use crate::util::say;
use std::path::Path;
use std::sync::Arc;

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
    if s.workload.endpoint == Endpoint::Chat || s.workload.dataset.is_some() {
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

pub fn print_plan(s: &SweepSpec, plan: &RunPlan) {
    let w = &s.workload;
    let amount = match (w.requests, w.duration_s) {
        (Some(n), _) => format!("{n} requests"),
        (None, Some(d)) => format!("{d} s"),
        _ => String::new(),
    };
    out(&format!(
        "plan {}: {} run(s); workload {:?} at concurrency {}, {amount} after {} warmup, {} input / {} output tokens, seed {}",
        plan.sweep_name,
        plan.runs.len(),
        w.endpoint,
        w.concurrency,
        w.warmup_requests,
        w.input_tokens,
        w.output_tokens,
        w.seed
    ));
    if let Some(o) = &s.objective {
        let rule = if let Some(a) = s.auto_repeats {
            format!(
                "repeats: auto: 2 repeats, then one more at a time until the 95% interval of {} is within ±{}% of its mean (at most {} repeats); a winner only when its margins' 95% intervals, from the noise pooled over every configuration and load point, lie above zero",
                o.metric,
                a.precision * 100.0,
                a.max
            )
        } else if s.search.max_load.is_some() {
            format!(
                "a winner only when its margins' 95% intervals, from the noise pooled over the probes that were repeated, lie above zero; with no probe repeated, no noise is measured and the best is named the leader, not the winner (a margin under {}%, objective.noise, is within noise)",
                o.noise * 100.0
            )
        } else if s.repeats < 2 {
            format!(
                "one repeat, so no noise is measured: the best is named the leader, not the winner (a margin under {}%, objective.noise, is within noise); `repeats: 2` or more, or `sgtune reproduce DIR --decision`, confirms it",
                o.noise * 100.0
            )
        } else {
            format!(
                "a winner only when the 95% intervals of its margins ({} repeats) lie above zero, from the noise pooled over every configuration and load point",
                s.repeats
            )
        };
        let per = if s.search.max_load.is_some() {
            "decided at each configuration's highest load within the SLO"
        } else {
            "decided per load point"
        };
        out(&format!("objective: {o}; {per} (decision.md), {rule}"));
    }
    if let Some(p) = crate::tune::prune::first_point(s) {
        out(&format!(
            "prune: every configuration is measured at {p} first; those clearly beaten there skip the other load points (rows `pruned`, with the evidence)"
        ));
    }
    if let Some(ml) = &s.search.max_load {
        let unit = match ml.axis {
            crate::plan::search::Axis::Concurrency => "",
            crate::plan::search::Axis::RequestRate => " requests/s",
        };
        out(&format!(
            "search max_load: per configuration, on one server, the highest {} within the SLO: ramp from {}{unit} doubling to {}{unit}, then bisect to {}{unit}; a probe near a bound is repeated up to {} times",
            ml.axis.as_str(),
            ml.range.from,
            ml.range.to,
            ml.range.resolution,
            ml.repeats
        ));
    }
    if let Some(p) = &s.search.preflight {
        out(&format!(
            "search preflight: on {}, the highest {} in [{}, {}] (step {}) that launches and survives {} s of the worst-case burst (longest inputs, highest load, ignore_eos; at most {} retractions); at most {} launches (a bisection needs {})",
            plan.runs.first().map_or("-", |r| r.name.as_str()),
            p.knob,
            p.range.from,
            p.range.to,
            p.range.resolution,
            p.burst_s,
            p.max_retractions,
            p.max_attempts,
            crate::plan::search::bisection_launches(&p.range)
        ));
    }
    for (i, r) in plan.runs.iter().enumerate() {
        let cmd = command::build(&s.server, r, s.server.port);
        out(&format!(
            "{:>3}. {}  [{}]  {}",
            i + 1,
            r.name,
            r.id,
            cmd.display()
        ));
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
    execute(input, &results, &launches, &mut manifest).await
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
    execute(input, &results, &launches, &mut recorded).await
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

/// With an objective: decide from every row the folder holds. An interrupted sweep is not
/// decided (its rows are incomplete), and an earlier decision in the folder is removed rather
/// than left to contradict the rows.
fn decide(
    o: &spec::Objective,
    sweep: &str,
    rows: &[rows::Row],
    results: &ResultsDir,
    manifest: &Manifest,
    interrupted: bool,
    preflight_knob: Option<&str>,
) -> Option<decision::Decision> {
    if interrupted {
        for p in [
            results.root.join("decision.md"),
            results.root.join("decision.json"),
        ] {
            if let Err(e) = std::fs::remove_file(&p) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    say(&format!("warning: cannot remove {}: {e}", p.display()));
                }
            }
        }
        say("no decision: the sweep was interrupted; `sgtune resume` finishes it and decides");
        return None;
    }
    let mut commands = decision::commands(manifest);
    for r in rows {
        let name = r.get("run_name");
        if commands.contains_key(name) {
            continue;
        }
        // A folder from before the manifest recorded commands: the launch's own file.
        let found = [name.to_string(), format!("{name}.r1")]
            .iter()
            .find_map(|d| {
                std::fs::read_to_string(results.root.join("runs").join(d).join("command.txt")).ok()
            });
        if let Some(c) = found {
            commands.insert(name.to_string(), c.trim_end().to_string());
        }
    }
    let mut d = decision::decide(sweep, o, rows, &commands, decision::cost(manifest));
    d.preflight = preflight_knob.and_then(|k| decision::preflight_summary(rows, k));
    Some(d)
}

/// decision.md and decision.json, and the summary after the table.
fn write_decision(d: &decision::Decision, results: &ResultsDir) {
    let written = store::write_atomic(
        &results.root.join("decision.md"),
        decision_md::render_md(d).as_bytes(),
    )
    .and_then(|_| store::write_json(&results.root.join("decision.json"), d));
    if let Err(e) = written {
        say(&format!("warning: cannot write the decision: {e}"));
    }
    out(&format!("{}\n", d.summary));
}

/// Run the launches into `results` (`run::tuning` runs every round the tuner asks for),
/// then print and save the table of every row the folder holds, and map the outcome to an
/// exit code.
pub async fn execute(
    input: &SweepInput<'_>,
    results: &ResultsDir,
    launches: &[Launch],
    manifest: &mut Manifest,
) -> Result<ExitCode, CmdError> {
    let tuning = TuningInput {
        spec: input.spec,
        plan: input.plan,
        vocab: input.prep.vocab,
        dataset: input.prep.dataset.clone(),
        slots: input.slots,
    };
    let interrupted = tuning::run_rounds(&tuning, results, launches, manifest).await?;
    Ok(conclude(
        input.spec,
        input.plan,
        results,
        manifest,
        interrupted,
    ))
}

/// After the runs (here, or the Slurm merge): the manifest, results.md and the table from every
/// row the folder holds, the decision, and the exit code.
pub fn conclude(
    spec: &SweepSpec,
    plan: &RunPlan,
    results: &ResultsDir,
    manifest: &mut Manifest,
    interrupted: bool,
) -> ExitCode {
    if !interrupted {
        manifest.finished_at = Some(provenance::now_rfc3339());
    }
    if let Err(e) = store::write_json(&results.root.join(provenance::FILE), manifest) {
        say(&format!("warning: cannot write manifest.json: {e}"));
    }
    let all = match rows::read(&results.results_csv()) {
        Ok(t) => t.rows,
        Err(e) => {
            say(&format!(
                "warning: cannot read results.csv back for the table: {e}"
            ));
            Vec::new()
        }
    };
    // Decided first, so that the table stars the decision's pick; printed after the table.
    let decision = spec.objective.as_ref().and_then(|o| {
        decide(
            o,
            &plan.sweep_name,
            &all,
            results,
            manifest,
            interrupted,
            spec.search.preflight.as_ref().map(|p| p.knob.as_str()),
        )
    });
    let marks = decision.as_ref().map(table::DecisionMarks::of);
    let table = table::render(&all, &plan.param_keys, marks.as_ref());
    let md = format!(
        "# {}\n\nResults folder: `{}`\n\n{table}",
        plan.sweep_name,
        results.root.display()
    );
    if let Err(e) = store::write_atomic(&results.root.join("results.md"), md.as_bytes()) {
        say(&format!("warning: cannot write results.md: {e}"));
    }
    out(&format!("\n{table}"));
    if let Some(d) = &decision {
        write_decision(d, results);
    }
    // The pictures: a report that cannot be written loses nothing (the rows are in
    // results.csv); say so and carry on.
    match crate::cmd::report::write_sweep_report(&results.root, None) {
        Ok(p) => out(&format!("report: {}", p.display())),
        Err(e) => say(&format!("warning: cannot write report.html: {e}")),
    }
    out(&format!("results: {}", results.root.display()));
    if interrupted {
        say(&format!(
            "interrupted: every finished run is in results.csv; continue with `sgtune resume {}`",
            results.root.display()
        ));
        ExitCode::Interrupted
    } else if all
        .iter()
        .any(|r| !r.is_ok() && r.get("phase") != "preflight" && r.get("status") != "pruned")
    {
        // A pre-flight attempt that failed, or a pruned measurement, is the search working,
        // not a failed run.
        ExitCode::RunsFailed
    } else {
        ExitCode::Ok
    }
}
