//! The tuner's rounds, executed: the memory pre-flight, then the launches (the lowest load
//! point first when pruning), the pruned configurations' rows, and the `repeats: auto`
//! rounds. What to run next is always asked of `tune/`; this file only launches it and
//! writes the rows.

use super::slots::SlotSpec;
use super::{RunContext, launch, preflight, signals};
use crate::plan::expand::RunPlan;
use crate::plan::search::Preflight;
use crate::plan::spec::SweepSpec;
use crate::record::provenance::Manifest;
use crate::record::rows;
use crate::record::store::{ResultsDir, StoreError};
use crate::record::working_set;
use crate::record::{Phase, RunStatus};
use crate::report::progress::Progress;
use crate::server::failure::FailureKind;
use crate::tune::work::Launch;
use crate::tune::{preflight as plan_preflight, prune, repeats};
use crate::util::say;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// What the rounds need besides the results folder.
pub struct TuningInput<'a> {
    pub spec: &'a SweepSpec,
    pub plan: &'a RunPlan,
    /// Prompt token ids are drawn from [0, vocab).
    pub vocab: u64,
    pub dataset: Option<Arc<Vec<crate::load::dataset::DatasetPrompt>>>,
    pub slots: &'a SlotSpec,
    /// The plan's expected seconds (tune::estimate), the ETA until a launch is measured.
    pub estimate_s: Option<f64>,
    /// `--deadline` / `--budget`: what no longer fits is not started, and a launch still
    /// running near it is cancelled in time for its server to stop.
    pub deadline: Option<Arc<super::deadline::Deadline>>,
}

/// Everyone told of the runner's events: the person at the terminal (bars or plain lines)
/// and state.json, for `sgtune status`.
struct Watch {
    progress: Progress,
    state: super::state::Tracker,
}

impl Watch {
    fn handle(&mut self, ev: &crate::report::events::RunEvent<'_>) {
        self.progress.handle(ev);
        self.state.handle(ev);
        if let (crate::report::events::RunEvent::RunEnd { .. }, Some(eta)) =
            (ev, self.state.eta_line())
        {
            self.progress.note(&format!("  {eta}"));
        }
    }
}

/// The rows results.csv holds now (none when it cannot be read: the rounds then plan from
/// nothing, which only means more work, never a lost row).
fn recorded(results: &ResultsDir) -> Vec<rows::Row> {
    rows::read(&results.results_csv())
        .map(|t| t.rows)
        .unwrap_or_default()
}

/// The rows pruning and `repeats: auto` decide from: results.csv's, with the quality guard's
/// verdicts on the launches so far (judged from their quality.jsonl files as at conclusion),
/// so that a configuration whose outputs fail neither leads the pruning nor runs on.
fn judged_rows(input: &TuningInput<'_>, results: &ResultsDir) -> Vec<rows::Row> {
    judged(input.spec, input.plan, &results.root, recorded(results))
}

/// `rows` of the folder `root` with the quality guard's verdicts on their launches (from
/// their quality.jsonl files, as at conclusion): what a tune's path is replayed from, here
/// and by a tune's Slurm driver and tasks alike.
pub fn judged(
    spec: &SweepSpec,
    plan: &RunPlan,
    root: &std::path::Path,
    mut rows: Vec<rows::Row>,
) -> Vec<rows::Row> {
    let mut names: Vec<String> = plan.runs.iter().map(|r| r.name.clone()).collect();
    // A tune's configurations are the ones its rows name (its plan holds the start only).
    for r in &rows {
        if !names.iter().any(|n| n == r.run_name()) {
            names.push(r.run_name().to_string());
        }
    }
    let reference = spec
        .quality
        .as_ref()
        .and_then(|q| q.reference_dir.as_deref())
        .map(std::path::Path::new);
    if let Some(report) = super::quality::judge_folder(spec, &names, root, reference) {
        crate::tune::quality::annotate(&mut rows, &report);
    }
    rows
}

/// Run every round into `results`; returns whether the sweep was interrupted.
pub async fn run_rounds(
    input: &TuningInput<'_>,
    results: &ResultsDir,
    launches: &[Launch],
    manifest: &mut Manifest,
) -> Result<bool, StoreError> {
    let cancel = CancellationToken::new();
    let groups = Arc::new(signals::Groups::default());
    signals::install(
        cancel.clone(),
        groups.clone(),
        "sgtune: interrupted; recording the current run and stopping its server (signal again to kill it now)",
    );
    // A working set sized in an earlier session of this sweep keeps its size on resume.
    // One that cannot be read is sized again (as a first session would).
    let basis = std::sync::Mutex::new(
        working_set::read(&results.root)
            .ok()
            .flatten()
            .map(|w| w.basis_tokens),
    );
    let ctx = RunContext {
        spec: input.spec,
        param_keys: &input.plan.param_keys,
        vocab_size: input.vocab,
        dataset: input.dataset.clone(),
        cancel: &cancel,
        groups: &groups,
        slot: None,
        working_set_basis: &basis,
        deadline: input.deadline.as_deref(),
    };
    // Until the rounds end, however they end (the guard stops when dropped).
    let _guard = input.deadline.clone().map(|d| d.guard(cancel.clone()));
    let mut progress = Watch {
        progress: Progress::new(),
        state: super::state::Tracker::new(
            &results.root,
            // A tune's plan is its start: its bound is the budget's launches.
            input.spec.tune.as_ref().map_or(launches.len(), |t| {
                launches.len().max(1) * t.launches as usize
            }),
            input.estimate_s,
            input.deadline.as_ref().map(|d| {
                d.at.with_timezone(&chrono::Local)
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, false)
            }),
        ),
    };
    // A guided tune chooses its launches as it goes (`guided`): no grid rounds.
    if input.spec.tune.is_some() {
        let rows = || judged_rows(input, results);
        let interrupted =
            super::guided::run(&ctx, input.slots, results, manifest, &rows, &mut |ev| {
                progress.handle(&ev)
            })
            .await?;
        progress.progress.finish();
        return Ok(interrupted);
    }
    let mut launches = launches.to_vec();
    let mut interrupted = false;
    if let Some(p) = &input.spec.search.preflight {
        interrupted = run_preflight(
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
    let lowest = prune::first_point(input.spec);
    if !interrupted {
        let first = match lowest {
            Some(p) => prune::first_round(&launches, p),
            None => launches.clone(),
        };
        interrupted = super::run_sweep(&ctx, input.slots, &first, results, manifest, &mut |ev| {
            progress.handle(&ev)
        })
        .await?
        .interrupted;
    }
    if let (Some(p), false) = (lowest, interrupted) {
        let pr = prune::prune(input.spec, &launches, &judged_rows(input, results), p);
        for (l, why) in &pr.beaten {
            for r in launch::pruned(&ctx, l, why) {
                results.append(&r)?;
            }
        }
        if !pr.beaten.is_empty() {
            // One name per configuration, however many repeat launches it has.
            let mut names: Vec<String> = Vec::new();
            for (l, _) in &pr.beaten {
                let n = if pr.quality_failed.contains(&l.run.name) {
                    format!("{} (output quality)", l.run.name)
                } else {
                    l.run.name.clone()
                };
                if !names.contains(&n) {
                    names.push(n);
                }
            }
            say(&format!(
                "prune: {} of {} configuration(s) clearly beaten at {p} skip the other load points: {}",
                names.len(),
                pr.judged,
                names.join(", ")
            ));
        }
        if pr.no_noise {
            say(&format!(
                "prune: nothing pruned on {} at {p}: the first round measured no noise (one repeat), and a margin without it is no evidence",
                input
                    .spec
                    .objective
                    .as_ref()
                    .map_or("the objective".to_string(), |o| o.metric.name())
            ));
        }
        interrupted = super::run_sweep(&ctx, input.slots, &pr.rest, results, manifest, &mut |ev| {
            progress.handle(&ev)
        })
        .await?
        .interrupted;
    }
    // repeats: auto: another round for every configuration and load point not yet precise.
    if let Some(auto) = input.spec.auto_repeats {
        while !interrupted {
            let more =
                repeats::next_round(input.spec, input.plan, &judged_rows(input, results), auto);
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
                    .map_or(String::new(), |o| o.metric.name()),
                auto.precision * 100.0
            ));
            interrupted =
                super::run_sweep(&ctx, input.slots, &more, results, manifest, &mut |ev| {
                    progress.handle(&ev)
                })
                .await?
                .interrupted;
        }
    }
    progress.progress.finish();
    if let (Some(sp), Ok(Some(b))) = (&input.spec.workload.shared_prefix, basis.lock().map(|b| *b))
    {
        if let Some(ws) = sp.working_set {
            let record = working_set::WorkingSet {
                basis_tokens: b,
                working_set: ws,
                prefix_tokens: sp.prefix_tokens,
                groups: sp.groups_for(ws, b),
            };
            if let Err(e) = working_set::write(&results.root, &record) {
                say(&format!("warning: cannot write working_set.json: {e}"));
            }
        }
    }
    Ok(interrupted)
}

/// The memory pre-flight, before the sweep: continue it from the attempts results.csv holds,
/// write preflight.json, and put the value found into the launches that wait for it (or
/// record them as failed rows when there is none). Returns whether it was interrupted.
async fn run_preflight(
    ctx: &RunContext<'_>,
    p: &Preflight,
    plan: &RunPlan,
    results: &ResultsDir,
    manifest: &mut Manifest,
    launches: &mut Vec<Launch>,
    progress: &mut Watch,
) -> Result<bool, StoreError> {
    let Some(base) = plan.runs.first() else {
        return Ok(false);
    };
    let recorded: Vec<(plan_preflight::Attempt, String)> = recorded(results)
        .iter()
        .filter(|r| r.phase() == Phase::Preflight && r.status() != Some(RunStatus::Interrupted))
        .filter_map(|r| {
            let kind = r.failure_kind().map_or("", FailureKind::as_str);
            let why = format!("{kind}: {}", r.failure_message());
            plan_preflight::Attempt::of_row(r, &p.knob).map(|a| (a, why))
        })
        .collect();
    let out = preflight::run(ctx, base, recorded, results, manifest, &mut |ev| {
        progress.handle(&ev)
    })
    .await?;
    if let Err(e) = crate::record::preflight::write(&results.root, &out) {
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
                plan_preflight::substitute(l, p, v);
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
            for l in launches
                .iter()
                .filter(|l| plan_preflight::needs_value(l, p))
            {
                for r in launch::unlaunched(ctx, l, FailureKind::PreflightFailed, &msg) {
                    results.append(&r)?;
                }
            }
        }
    }
    // Without a value, the launches waiting for one are rows already; the others go on.
    launches.retain(|l| !plan_preflight::needs_value(l, p));
    Ok(false)
}
