//! `sgtune run`, `validate` and `resume`: check everything that can be checked before
//! launching anything, set up the results folder, run the launches, print the table.

use super::{CmdError, ExitCode, out};
use crate::plan::expand::{self, RunPlan};
use crate::plan::spec::{self, Endpoint, SweepSpec};
use crate::record::provenance::{self, Manifest};
use crate::record::rows;
use crate::record::store::{self, ResultsDir};
use crate::report::decision;
use crate::report::progress::Progress;
use crate::report::table;
use crate::run::slots::SlotSpec;
use crate::run::{self as runner, RunContext, signals};
use crate::server::command;
use crate::server::failure::FailureKind;
use crate::util::say;
use std::path::Path;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

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
        crate::record::objective::check(o, s.workload.slo.is_some()).map_err(
            |(key, message)| {
                let (line, column) = spec::locate_objective(&text, &key);
                spec::SpecError {
                    file: path.display().to_string(),
                    line,
                    column,
                    message,
                }
            },
        )?;
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
                "repeats: auto: 2 repeats, then one more at a time until the 95% interval of {} is within ±{}% of its mean (at most {} repeats); a winner only when its margins' 95% intervals lie above zero",
                o.metric,
                a.precision * 100.0,
                a.max
            )
        } else if s.search.max_load.is_some() {
            format!(
                "a winner only when its margin separates from every other's: by 95% intervals where probes were repeated, else by more than {}% (objective.noise)",
                o.noise * 100.0
            )
        } else if s.repeats < 2 {
            format!(
                "one repeat, so no interval: a winner needs a margin over {}% (objective.noise)",
                o.noise * 100.0
            )
        } else {
            format!(
                "a winner only when the 95% intervals of its margins ({} repeats) lie above zero",
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
    if let Some(p) = prune_point(s) {
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
    let launches = runner::plan_launches(input.spec, input.plan, &|_, _| false, &|_| Vec::new());
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

/// What a resume keeps and what it redoes: results.csv rewritten with the kept rows (the others
/// set aside in results.superseded.csv), earlier attempts' folders renamed, the launches to go.
pub fn prepare_resume(
    input: &SweepInput<'_>,
    dir: &Path,
    retry_failed: bool,
    force: bool,
) -> Result<(ResultsDir, Vec<runner::Launch>, Manifest), CmdError> {
    let mut recorded = provenance::read(dir).map_err(|e| {
        CmdError::input(format!(
            "cannot resume {}: {e} (is it a results folder written by sgtune run?)",
            dir.display()
        ))
    })?;
    let now = provenance::collect(
        input.spec,
        &input.spec_path.display().to_string(),
        input.text,
        input.plan,
    );
    let diffs = provenance::differences(&recorded, &now);
    if !diffs.is_empty() && !force {
        let list: String = diffs.iter().map(|d| format!("\n  - {d}")).collect();
        return Err(CmdError::input(format!(
            "refusing to resume {}: the sweep changed since it was recorded:{list}\n  (resume with the recorded spec: `sgtune resume DIR`; or accept the changes with --force, which records them in manifest.json)",
            dir.display()
        )));
    }
    let csv_path = dir.join("results.csv");
    let table =
        rows::read(&csv_path).map_err(|e| CmdError::input(format!("cannot resume: {e}")))?;
    let results = ResultsDir::open(dir, &input.plan.param_keys);
    if table.header != results.header() {
        return Err(CmdError::input(format!(
            "cannot resume: {} has other columns than this sweep writes (was it written by another sgtune version?)",
            csv_path.display()
        )));
    }
    if table.partial_tail {
        say(
            "resume: results.csv ended in a partial row (sgtune was killed while writing it); that row is dropped and its run redone",
        );
    }
    // Keep finished rows; set aside the ones to redo.
    let mut keep_raw = Vec::new();
    let mut redo_raw = Vec::new();
    let mut kept: Vec<crate::record::RowKey> = Vec::new();
    for (row, raw) in table.rows.iter().zip(&table.raw) {
        let finished = row.is_ok()
            || row.get("status") == "pruned"
            || (row.get("status") == "failed" && !retry_failed);
        if finished && !kept.contains(&row.key()) {
            kept.push(row.key());
            keep_raw.push(raw.clone());
        } else {
            redo_raw.push(raw.clone());
        }
    }
    results
        .append_superseded(&table.header, &redo_raw)
        .and_then(|_| results.rewrite_csv(&keep_raw))
        .map_err(|e| CmdError::input(format!("cannot update the results folder: {e}")))?;
    // A search continues from the probes already kept: replayed, not redone.
    let kept_rows: Vec<&rows::Row> = table
        .rows
        .iter()
        .filter(|r| kept.contains(&r.key()) && r.get("phase") == "probe")
        .collect();
    let probes = |run: &crate::plan::expand::RunConfig| -> Vec<runner::search::ProbeRun> {
        match (&input.spec.search.max_load, &input.spec.objective) {
            (Some(ml), Some(o)) => kept_rows
                .iter()
                .filter(|r| r.get("run_name") == run.name)
                .map(|r| runner::search::ProbeRun::of_row(r, ml.axis, &o.slo))
                .collect(),
            _ => Vec::new(),
        }
    };
    let launches = runner::plan_launches(
        input.spec,
        input.plan,
        &|run, m| {
            kept.contains(&(
                run.name.clone(),
                m.point.concurrency,
                crate::plan::spec::rate_text(m.point.request_rate),
                m.repeat,
            ))
        },
        &probes,
    );
    // A launch folder left by an earlier attempt is kept, renamed, as evidence.
    for l in &launches {
        let d = dir.join("runs").join(&l.dir_name);
        if d.exists() {
            let mut n = 1;
            while dir
                .join("runs")
                .join(format!("{}.attempt-{n}", l.dir_name))
                .exists()
            {
                n += 1;
            }
            let to = dir.join("runs").join(format!("{}.attempt-{n}", l.dir_name));
            // The new attempt must not write into the old one's folder: refuse rather than
            // mix two attempts' files.
            std::fs::rename(&d, &to).map_err(|e| {
                CmdError::input(format!(
                    "cannot set aside {} as {}: {e}",
                    d.display(),
                    to.display()
                ))
            })?;
        }
    }
    recorded.resumes.push(provenance::ResumeNote {
        at: provenance::now_rfc3339(),
        forced_differences: diffs,
        retry_failed,
    });
    recorded.finished_at = None;
    say(&format!(
        "resume: {} row(s) kept, {} set aside in results.superseded.csv, {} server launch(es) to go",
        keep_raw.len(),
        redo_raw.len(),
        launches.len()
    ));
    Ok((results, launches, recorded))
}

/// With an objective: write decision.md and decision.json from every row the folder holds and
/// print the summary. An interrupted sweep is not decided (its rows are incomplete), and an
/// earlier decision in the folder is removed rather than left to contradict the rows.
fn decide(
    o: &spec::Objective,
    sweep: &str,
    rows: &[rows::Row],
    results: &ResultsDir,
    manifest: &Manifest,
    interrupted: bool,
    preflight_knob: Option<&str>,
) {
    let (md_path, json_path) = (
        results.root.join("decision.md"),
        results.root.join("decision.json"),
    );
    if interrupted {
        for p in [&md_path, &json_path] {
            if let Err(e) = std::fs::remove_file(p) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    say(&format!("warning: cannot remove {}: {e}", p.display()));
                }
            }
        }
        say("no decision: the sweep was interrupted; `sgtune resume` finishes it and decides");
        return;
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
    let written = store::write_atomic(&md_path, decision::render_md(&d).as_bytes())
        .and_then(|_| store::write_json(&json_path, &d));
    if let Err(e) = written {
        say(&format!("warning: cannot write the decision: {e}"));
    }
    out(&format!("{}\n", d.summary));
}

/// `objective.prune`: the load point every configuration is measured at first (the lowest
/// load), when there are other points to save.
fn prune_point(spec: &SweepSpec) -> Option<spec::LoadPoint> {
    let o = spec.objective.as_ref()?;
    if !o.prune || spec.workload.load_points.len() < 2 || spec.search.max_load.is_some() {
        return None;
    }
    spec.workload.load_points.iter().copied().min_by(|a, b| {
        a.request_rate
            .unwrap_or(0.0)
            .total_cmp(&b.request_rate.unwrap_or(0.0))
            .then(a.concurrency.cmp(&b.concurrency))
    })
}

/// After the lowest load point: decide there; every configuration the leader clearly beats
/// (its margin separates from zero) gets `pruned` rows for its other measurements, with the
/// evidence; the others' launches for the remaining points are returned.
fn prune_rest(
    ctx: &RunContext<'_>,
    input: &SweepInput<'_>,
    results: &ResultsDir,
    launches: &[runner::Launch],
    lowest: spec::LoadPoint,
) -> Result<Vec<runner::Launch>, CmdError> {
    let Some(o) = &input.spec.objective else {
        return Ok(Vec::new());
    };
    let recorded = rows::read(&results.results_csv())
        .map(|t| t.rows)
        .unwrap_or_default();
    let label = match lowest.request_rate {
        Some(r) => format!("{}/s", spec::rate_text(Some(r))),
        None => lowest.concurrency.to_string(),
    };
    let at: Vec<&rows::Row> = recorded
        .iter()
        .filter(|r| r.load_point() == label && r.get("phase") != "preflight")
        .collect();
    let d = decision::decide_rows(o, &lowest.to_string(), &at, &Default::default());
    let beaten: Vec<(String, String)> = d
        .configurations
        .iter()
        .filter(|c| c.standing == decision::Standing::Behind)
        .map(|c| {
            let m = c
                .margin
                .as_ref()
                .map(decision::margin_text)
                .unwrap_or_default();
            (
                c.run_name.clone(),
                format!(
                    "pruned: at {} it was clearly beaten by {} on {}, by {m}",
                    lowest,
                    d.leader.clone().unwrap_or_default(),
                    o.metric
                ),
            )
        })
        .collect();
    let mut rest = Vec::new();
    for l in launches {
        let mut l = l.clone();
        l.measurements.retain(|m| m.point != lowest);
        if l.measurements.is_empty() {
            continue;
        }
        match beaten.iter().find(|(n, _)| *n == l.run.name) {
            Some((_, why)) => {
                for r in runner::launch::pruned(ctx, &l, why) {
                    results
                        .append(&r)
                        .map_err(|e| CmdError::input(format!("cannot write results.csv: {e}")))?;
                }
            }
            None => rest.push(l),
        }
    }
    if !beaten.is_empty() {
        say(&format!(
            "prune: {} of {} configuration(s) clearly beaten at {lowest} skip the other load points: {}",
            beaten.len(),
            d.configurations.len(),
            beaten
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(rest)
}

/// `repeats: auto`: the next round's launches. For each configuration, every load point
/// whose repeats are all ok, below `auto.max`, and whose 95% half-width of the objective is
/// still above `auto.precision` × the mean gets one more repeat, on one new server per
/// configuration. A failed repeat ends its point (it is not eligible anyway).
pub fn auto_round(
    spec: &SweepSpec,
    plan: &RunPlan,
    rows: &[rows::Row],
    auto: spec::AutoRepeats,
) -> Vec<runner::Launch> {
    let Some(o) = &spec.objective else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for run in &plan.runs {
        let mut next: Option<u64> = None;
        let mut points = Vec::new();
        for p in &spec.workload.load_points {
            let label = match p.request_rate {
                Some(r) => format!("{}/s", spec::rate_text(Some(r))),
                None => p.concurrency.to_string(),
            };
            let mine: Vec<&rows::Row> = rows
                .iter()
                .filter(|r| r.get("run_name") == run.name && r.load_point() == label)
                .filter(|r| !matches!(r.get("phase"), "probe" | "preflight"))
                .collect();
            let n = mine.len() as u64;
            if n == 0 || n >= auto.max || mine.iter().any(|r| !r.is_ok()) {
                continue;
            }
            let values: Vec<f64> = mine.iter().filter_map(|r| r.f64(&o.metric)).collect();
            if decision::needs_more_repeats(&values, auto.precision) {
                let k = mine
                    .iter()
                    .filter_map(|r| r.u64("repeat"))
                    .max()
                    .unwrap_or(n)
                    + 1;
                next = Some(next.map_or(k, |x: u64| x.max(k)));
                points.push(*p);
            }
        }
        if let Some(k) = next {
            out.push(runner::Launch {
                run: run.clone(),
                dir_name: format!("{}.r{k}", run.name),
                measurements: points
                    .into_iter()
                    .map(|point| runner::Measurement { repeat: k, point })
                    .collect(),
                search: None,
                phase: crate::record::Phase::Measure,
            });
        }
    }
    out
}

/// Each configuration's recorded max-load probes among `rows` (resume and Slurm tasks replay
/// the search from them).
pub fn recorded_probes(
    spec: &SweepSpec,
    rows: &[&rows::Row],
    run: &crate::plan::expand::RunConfig,
) -> Vec<runner::search::ProbeRun> {
    match (&spec.search.max_load, &spec.objective) {
        (Some(ml), Some(o)) => rows
            .iter()
            .filter(|r| r.get("phase") == "probe" && r.get("run_name") == run.name)
            .map(|r| runner::search::ProbeRun::of_row(r, ml.axis, &o.slo))
            .collect(),
        _ => Vec::new(),
    }
}

/// The memory pre-flight, before the sweep: continue it from the attempts results.csv holds,
/// write preflight.json, and put the value found into the launches that wait for it (or
/// record them as failed rows when there is none). Returns whether it was interrupted.
async fn run_preflight(
    ctx: &RunContext<'_>,
    p: &crate::plan::search::Preflight,
    plan: &RunPlan,
    results: &ResultsDir,
    manifest: &mut Manifest,
    launches: &mut Vec<runner::Launch>,
    progress: &mut Progress,
) -> Result<bool, CmdError> {
    use runner::preflight;
    let Some(base) = plan.runs.first() else {
        return Ok(false);
    };
    let recorded: Vec<(preflight::Attempt, String)> = rows::read(&results.results_csv())
        .map(|t| t.rows)
        .unwrap_or_default()
        .iter()
        .filter(|r| r.get("phase") == "preflight" && r.get("status") != "interrupted")
        .filter_map(|r| {
            let why = format!("{}: {}", r.get("failure_kind"), r.get("failure_message"));
            preflight::Attempt::of_row(r, &p.knob).map(|a| (a, why))
        })
        .collect();
    let out = preflight::run(ctx, base, recorded, results, manifest, &mut |ev| {
        progress.handle(&ev)
    })
    .await?;
    if let Err(e) = store::write_json(&results.root.join("preflight.json"), &out) {
        say(&format!("warning: cannot write preflight.json: {e}"));
    }
    if out.interrupted {
        return Ok(true);
    }
    let margin = match (out.next_up, &out.next_up_failure) {
        (Some(n), Some(w)) => format!("; the next step up, {n}, failed ({w})"),
        _ => String::new(),
    };
    match out.found {
        Some(v) => {
            say(&format!(
                "preflight: {} = {v} launches and survives the burst ({} attempt(s)){margin}",
                p.knob,
                out.attempts.len()
            ));
            for l in launches.iter_mut() {
                preflight::substitute(l, p, v);
            }
        }
        None => {
            let msg = format!(
                "the memory pre-flight found no {} in [{}, {}] that launches and survives the burst ({} attempt(s)){margin}",
                p.knob,
                p.range.from,
                p.range.to,
                out.attempts.len()
            );
            say(&format!("preflight: {msg}"));
            for l in launches.iter().filter(|l| preflight::needs_value(l, p)) {
                for r in runner::launch::unlaunched(ctx, l, FailureKind::PreflightFailed, &msg) {
                    results
                        .append(&r)
                        .map_err(|e| CmdError::input(format!("cannot write results.csv: {e}")))?;
                }
            }
        }
    }
    // Without a value, the launches waiting for one are rows already; the others go on.
    launches.retain(|l| !preflight::needs_value(l, p));
    Ok(false)
}

/// Run the launches into `results`, then print and save the table of every row the folder
/// holds, and map the outcome to an exit code.
pub async fn execute(
    input: &SweepInput<'_>,
    results: &ResultsDir,
    launches: &[runner::Launch],
    manifest: &mut Manifest,
) -> Result<ExitCode, CmdError> {
    let cancel = CancellationToken::new();
    let groups = Arc::new(signals::Groups::default());
    signals::install(
        cancel.clone(),
        groups.clone(),
        "sgtune: interrupted; recording the current run and stopping its server (signal again to kill it now)",
    );
    // A working set sized in an earlier session of this sweep keeps its size on resume.
    let basis_path = results.root.join("working_set.json");
    let basis = std::sync::Mutex::new(
        std::fs::read_to_string(&basis_path)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v["basis_tokens"].as_u64()),
    );
    let ctx = RunContext {
        spec: input.spec,
        param_keys: &input.plan.param_keys,
        vocab_size: input.prep.vocab,
        dataset: input.prep.dataset.clone(),
        cancel: &cancel,
        groups: &groups,
        slot: None,
        working_set_basis: &basis,
    };
    let mut progress = Progress::new();
    let mut launches = launches.to_vec();
    let mut preflight_interrupted = false;
    if let Some(p) = &input.spec.search.preflight {
        preflight_interrupted = run_preflight(
            &ctx,
            p,
            input.plan,
            results,
            manifest,
            &mut launches,
            &mut progress,
        )
        .await?;
    }
    // Successive halving: the lowest load point first, then the rest for the configurations
    // not clearly beaten there.
    let lowest = prune_point(input.spec);
    let first: Vec<runner::Launch> = match lowest {
        Some(p) => launches
            .iter()
            .filter_map(|l| {
                let mut l = l.clone();
                l.measurements.retain(|m| m.point == p);
                (!l.measurements.is_empty()).then_some(l)
            })
            .collect(),
        None => launches.clone(),
    };
    let mut outcome = if preflight_interrupted {
        Ok(runner::SweepOutcome {
            records: Vec::new(),
            interrupted: true,
        })
    } else {
        runner::run_sweep(&ctx, input.slots, &first, results, manifest, &mut |ev| {
            progress.handle(&ev)
        })
        .await
    };
    if let (Some(p), Ok(o)) = (lowest, &outcome) {
        if !o.interrupted {
            let rest = prune_rest(&ctx, input, results, &launches, p)?;
            outcome = runner::run_sweep(&ctx, input.slots, &rest, results, manifest, &mut |ev| {
                progress.handle(&ev)
            })
            .await;
        }
    }
    // repeats: auto: another round for every configuration and load point not yet precise.
    if let Some(auto) = input.spec.auto_repeats {
        while matches!(&outcome, Ok(o) if !o.interrupted) {
            let recorded = rows::read(&results.results_csv())
                .map(|t| t.rows)
                .unwrap_or_default();
            let more = auto_round(input.spec, input.plan, &recorded, auto);
            if more.is_empty() {
                break;
            }
            say(&format!(
                "repeats: auto: {} launch(es) for the configurations whose {} is not yet within ±{}% (95%)",
                more.len(),
                input
                    .spec
                    .objective
                    .as_ref()
                    .map_or("", |o| o.metric.as_str()),
                auto.precision * 100.0
            ));
            outcome = runner::run_sweep(&ctx, input.slots, &more, results, manifest, &mut |ev| {
                progress.handle(&ev)
            })
            .await;
        }
    }
    progress.finish();
    if let (Some(sp), Ok(Some(b))) = (&input.spec.workload.shared_prefix, basis.lock().map(|b| *b))
    {
        if let Some(ws) = sp.working_set {
            let record = serde_json::json!({
                "basis_tokens": b,
                "working_set": ws,
                "prefix_tokens": sp.prefix_tokens,
                "groups": sp.groups_for(ws, b),
            });
            if let Err(e) = store::write_json(&basis_path, &record) {
                say(&format!("warning: cannot write working_set.json: {e}"));
            }
        }
    }
    let outcome = outcome?;
    Ok(conclude(
        input.spec,
        input.plan,
        results,
        manifest,
        outcome.interrupted,
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
    let table = table::render(&all, &plan.param_keys);
    let md = format!(
        "# {}\n\nResults folder: `{}`\n\n{table}",
        plan.sweep_name,
        results.root.display()
    );
    if let Err(e) = store::write_atomic(&results.root.join("results.md"), md.as_bytes()) {
        say(&format!("warning: cannot write results.md: {e}"));
    }
    out(&format!("\n{table}"));
    if let Some(o) = &spec.objective {
        decide(
            o,
            &plan.sweep_name,
            &all,
            results,
            manifest,
            interrupted,
            spec.search.preflight.as_ref().map(|p| p.knob.as_str()),
        );
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
