//! The memory pre-flight's launches: each attempt `tune::preflight::next_attempt` asks for,
//! launched with the worst-case burst, its row appended to results.csv as it finishes.

use super::{RunContext, run_sweep};
use crate::plan::expand::RunConfig;
use crate::record::Phase;
use crate::record::provenance::Manifest;
use crate::record::store;
use crate::record::store::{ResultsDir, StoreError};
use crate::report::events::RunEvent;
use crate::tune::preflight::{
    Attempt, Outcome, Step, attempt_config, burst_spec, next_attempt, outcome, why,
};
use crate::tune::work::{Launch, Measurement};

/// Run the pre-flight, continuing from `recorded` attempts; every attempt's row is appended
/// to results.csv as it finishes (phase `preflight`).
pub async fn run(
    ctx: &RunContext<'_>,
    base: &RunConfig,
    recorded: Vec<(Attempt, String)>,
    results: &ResultsDir,
    manifest: &mut Manifest,
    emit: &mut dyn FnMut(RunEvent<'_>),
) -> Result<Outcome, StoreError> {
    let spec = ctx.spec;
    let Some(p) = &spec.search.preflight else {
        return Ok(Outcome {
            knob: String::new(),
            found: None,
            next_up: None,
            next_up_failure: None,
            attempts: Vec::new(),
            max_attempts: 0,
            interrupted: false,
        });
    };
    let mut burst = burst_spec(spec, p);
    // The burst is single requests at the longest lengths (and no dataset): a sessions
    // workload's longest prompt is its last turn, history and all.
    if let Some(ss) = burst.workload.sessions.take() {
        let w = &mut burst.workload;
        let last = ss
            .nominal_turns(w.output_tokens, w.output_tokens, true)
            .and_then(|t| t.last().copied());
        if let Some(last) = last {
            w.input_tokens = last.prompt;
        }
        // A mooncake trace's longest record, input and output, is its worst case.
        let longest = ctx
            .dataset
            .iter()
            .flat_map(|d| d.iter())
            .filter_map(|p| match p {
                crate::load::dataset::DatasetPrompt::Record(r) => Some((r.input, r.output)),
                _ => None,
            });
        if let Some(input) = longest.clone().map(|l| l.0).max() {
            w.input_tokens = input;
        }
        if let Some(output) = longest.map(|l| l.1).max() {
            w.output_tokens = output;
        }
    }
    let bctx = RunContext {
        spec: &burst,
        param_keys: ctx.param_keys,
        vocab_size: ctx.vocab_size,
        dataset: None,
        cancel: ctx.cancel,
        groups: ctx.groups,
        slot: None,
        working_set_basis: ctx.working_set_basis,
        deadline: ctx.deadline,
    };
    let mut history: Vec<(Attempt, String)> = recorded;
    loop {
        let attempts: Vec<Attempt> = history.iter().map(|(a, _)| *a).collect();
        let step = next_attempt(p, &attempts);
        let v = match step {
            Step::Try(v) if !ctx.cancel.is_cancelled() => v,
            Step::Try(_) => {
                return Ok(outcome(p, &history, None, None, true));
            }
            Step::Done { found, next_up, .. } => {
                return Ok(outcome(p, &history, found, next_up, false));
            }
        };
        let run = attempt_config(spec, base, p, v);
        let launch = Launch {
            dir_name: run.name.clone(),
            measurements: vec![Measurement {
                repeat: 1,
                point: burst.workload.load_points[0],
            }],
            run,
            search: None,
            phase: Phase::Preflight,
        };
        set_aside(results, &launch.dir_name);
        let out = run_sweep(
            &bctx,
            &super::slots::SlotSpec::serial(),
            std::slice::from_ref(&launch),
            results,
            manifest,
            emit,
        )
        .await?;
        if out.interrupted {
            return Ok(outcome(p, &history, None, None, true));
        }
        let failure = out.records.first().map(why).unwrap_or_default();
        let survived = out
            .records
            .first()
            .is_some_and(|r| r.probe == Some(crate::record::ProbeResult::Pass));
        history.push((Attempt { value: v, survived }, failure));
    }
}

/// A folder left by an interrupted attempt is kept, renamed, as evidence (as resume does for
/// launches).
fn set_aside(results: &ResultsDir, dir_name: &str) {
    let d = store::launch_dir(&results.root, dir_name);
    if !d.exists() {
        return;
    }
    let mut n = 1;
    while results
        .root
        .join(store::RUNS)
        .join(format!("{dir_name}.attempt-{n}"))
        .exists()
    {
        n += 1;
    }
    let to = results
        .root
        .join(store::RUNS)
        .join(format!("{dir_name}.attempt-{n}"));
    if let Err(e) = std::fs::rename(&d, &to) {
        crate::util::say(&format!("warning: cannot set aside {}: {e}", d.display()));
    }
}
