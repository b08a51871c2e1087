//! A checked sweep, from its new results folder to its end: `execute` puts the launches in
//! order against a deadline, runs every round the tuner asks for (`tuning`), and concludes
//! (`conclude`). Shared by `sgtune run`, `resume` and `reproduce`.

use crate::plan::expand::RunPlan;
use crate::plan::spec::{Endpoint, SweepSpec};
use crate::record::plan_file;
use crate::record::provenance::{self, Manifest};
use crate::record::store::{self, ResultsDir, StoreError};
use crate::run::conclude;
use crate::run::deadline::Deadline;
use crate::run::estimate::known;
use crate::run::finish::{ExitCode, Hook};
use crate::run::slots::SlotSpec;
use crate::run::tuning::{self, TuningInput};
use crate::server::command;
use crate::tune::estimate;
use crate::tune::work::Launch;
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

fn write_plan(s: &SweepSpec, plan: &RunPlan, root: &Path) -> Result<(), store::StoreError> {
    let commands: Vec<String> = plan
        .runs
        .iter()
        .map(|r| command::build(&s.server, r, s.server.port).display())
        .collect();
    plan_file::write(root, &plan_file::Written::new(s, plan, &commands))
}

/// A new results folder, its spec copy, plan, manifest and CSV header.
pub fn create_results(
    input: &SweepInput<'_>,
    results_dir: &Path,
    name: &str,
) -> Result<(ResultsDir, Manifest), String> {
    let results = ResultsDir::create(results_dir, name, &input.plan.param_keys)
        .map_err(|e| format!("cannot create the results folder: {e}"))?;
    let manifest = provenance::collect(
        input.spec,
        &input.spec_path.display().to_string(),
        input.text,
        input.plan,
    );
    let setup = store::write_atomic(&results.root.join(store::SPEC_YAML), input.text.as_bytes())
        .and_then(|_| write_plan(input.spec, input.plan, &results.root))
        .and_then(|_| provenance::write(&results.root, &manifest))
        .and_then(|_| results.init_csv());
    setup.map_err(|e| format!("cannot write the results folder: {e}"))?;
    Ok((results, manifest))
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
) -> Result<ExitCode, StoreError> {
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
    conclude::end(
        input.spec,
        input.plan,
        results,
        manifest,
        ran,
        tuning.deadline.as_deref(),
        input.hook.as_ref(),
    )
    .await
}
