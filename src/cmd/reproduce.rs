//! `sgtune reproduce DIR --run NAME`: relaunch one recorded run and judge whether it holds.

use super::sweep::{SweepInput, create_results, execute, load_checked};
use super::{CmdError, ExitCode, out};
use crate::plan::expand::RunPlan;
use crate::record::provenance;
use crate::record::rows;
use crate::record::store;
use crate::report::reproduce;
use crate::run as runner;
use crate::util::say;
use std::path::Path;

/// Relaunch one recorded run and judge whether it reproduced.
pub async fn run(
    dir: &Path,
    run_name: &str,
    results_dir: &Path,
    tolerance: f64,
) -> Result<ExitCode, CmdError> {
    let spec_path = dir.join("spec.yaml");
    let (s, text, plan, prep) = load_checked(&spec_path)?;
    let recorded_rows: Vec<rows::Row> = rows::read(&dir.join("results.csv"))
        .map_err(|e| CmdError::input(e.to_string()))?
        .rows
        .into_iter()
        .filter(|r| r.get("run_name") == run_name)
        .collect();
    let Some(run) = plan.runs.iter().find(|r| r.name == run_name) else {
        let names: Vec<&str> = plan.runs.iter().map(|r| r.name.as_str()).collect();
        return Err(CmdError::input(format!(
            "no run named `{run_name}` in {} (runs: {})",
            dir.display(),
            names.join(", ")
        )));
    };
    if recorded_rows.is_empty() {
        return Err(CmdError::input(format!(
            "`{run_name}` has no recorded row in {}/results.csv to reproduce",
            dir.display()
        )));
    }
    let mut notes: Vec<String> = Vec::new();
    if let Some(r) = recorded_rows.first() {
        if r.get("run_id") != run.id {
            notes.push(format!(
                "the run's resolved configuration differs from the recorded one (id {} → {}): an environment variable in spec.yaml may expand differently here",
                r.get("run_id"),
                run.id
            ));
        }
    }
    let one = RunPlan {
        sweep_name: format!("{}-reproduce-{run_name}", plan.sweep_name),
        param_keys: plan.param_keys.clone(),
        runs: vec![run.clone()],
    };
    let input = SweepInput {
        spec: &s,
        text: &text,
        spec_path: &spec_path,
        plan: &one,
        prep: &prep,
        slots: &crate::run::slots::SlotSpec::serial(),
    };
    let (results, mut manifest) = create_results(&input, results_dir, &one.sweep_name)?;
    let launches = runner::plan_launches(&s, &one, &|_, _| false);
    let code = execute(&input, &results, &launches, &mut manifest).await?;
    if code == ExitCode::Interrupted {
        return Ok(code);
    }
    let new_rows = rows::read(&results.results_csv())
        .map_err(|e| CmdError::input(e.to_string()))?
        .rows;
    let context = provenance::read(dir)
        .map(|m| provenance::context_differences(&m, &manifest))
        .unwrap_or_default();
    let (reproduced, report) =
        reproduce::verdict(&recorded_rows, &new_rows, tolerance, &context, &notes);
    out(&report);
    if let Err(e) = store::write_atomic(&results.root.join("reproduce.md"), report.as_bytes()) {
        say(&format!(
            "warning: the report above could not be saved: {e}"
        ));
    }
    Ok(if reproduced {
        ExitCode::Ok
    } else {
        ExitCode::RunsFailed
    })
}
