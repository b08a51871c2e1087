//! `sgtune reproduce DIR --run NAME`: relaunch one recorded run and judge whether it holds.

use super::sweep::{SweepInput, create_results, execute, load_in_folder};
use super::{CmdError, ExitCode, out};
use crate::plan::expand::RunPlan;
use crate::record::provenance;
use crate::record::rows;
use crate::record::store;
use crate::record::sweep::Sweep;
use crate::report::reproduce;
use crate::util::say;
use std::path::Path;

/// `--tolerance` when not given: a relative difference up to 20% still counts as reproduced.
pub const DEFAULT_TOLERANCE: f64 = 0.2;

/// Why `--decision` refuses `--tolerance`: the re-check has no use for one, and a flag that
/// is accepted and then ignored would let a user believe their threshold was applied.
pub const TOLERANCE_WITH_DECISION: &str = "--tolerance is not used with --decision: the re-check decides again by the objective's own rule (a 95% interval from the noise its launches measure; `objective.noise` in spec.yaml only when neither side has two successful launches, so no noise is measured), so no tolerance enters it. Drop --tolerance, or use --run NAME to reproduce one run within a tolerance";

/// A results folder, loaded once (`record::sweep`).
fn load(dir: &Path) -> Result<Sweep, CmdError> {
    Sweep::load(dir).map_err(|e| CmdError::input(e.to_string()))
}

/// Relaunch one recorded run and judge whether it reproduced.
pub async fn run(
    dir: &Path,
    run_name: &str,
    results_dir: &Path,
    tolerance: f64,
) -> Result<ExitCode, CmdError> {
    let spec_path = dir.join(store::SPEC_YAML);
    let (s, text, plan, prep) = load_in_folder(&spec_path, dir)?;
    let recorded = load(dir)?;
    let recorded_rows: Vec<rows::Row> = recorded
        .rows()
        .iter()
        .filter(|r| r.run_name() == run_name)
        .cloned()
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
        if r.run_id() != run.id {
            notes.push(format!(
                "the run's resolved configuration differs from the recorded one (id {} → {}): an environment variable in spec.yaml may expand differently here",
                r.run_id(),
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
        hook: None,
        deadline: None,
    };
    let (results, mut manifest) = create_results(&input, results_dir, &one.sweep_name)?;
    let launches = crate::tune::work::plan_launches(&s, &one, &|_, _| false, &|_| Vec::new());
    let code = execute(&input, &results, &launches, &mut manifest, None).await?;
    if code == ExitCode::Interrupted {
        return Ok(code);
    }
    let new_rows = load(&results.root)?.table.rows;
    let context = recorded
        .manifest
        .as_ref()
        .map(|m| provenance::context_differences(m, &manifest))
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

/// `sgtune reproduce DIR --decision`: relaunch the decision's leader (A) and runner-up (B) in
/// ABBA order (so a drift of the machine over the re-check weighs on both alike), each at the
/// load it was judged at, and decide again between them by the same rule. The decision holds
/// when the same configuration leads again, and is again separated when it was claimed as a
/// winner.
pub async fn decision(dir: &Path, results_dir: &Path) -> Result<ExitCode, CmdError> {
    let spec_path = dir.join(store::SPEC_YAML);
    let (s, text, plan, prep) = load_in_folder(&spec_path, dir)?;
    let Some(o) = s.objective.clone() else {
        return Err(CmdError::input(format!(
            "{} has no objective, so no decision to re-check (add `objective:` to the spec, or reproduce one run with --run NAME)",
            spec_path.display()
        )));
    };
    let recorded = load(dir)?.table.rows;
    let before = crate::tune::decision::decide(
        &plan.sweep_name,
        &o,
        &recorded,
        &Default::default(),
        Default::default(),
    );
    use crate::tune::decision::Outcome;
    let point = before
        .points
        .iter()
        .filter(|p| p.leader.is_some() && p.runner_up.is_some())
        // A claimed winner first, then a leader not confirmed, then a tie.
        .max_by_key(|p| match p.outcome {
            Outcome::Winner => 2,
            Outcome::Unconfirmed => 1,
            _ => 0,
        })
        .ok_or_else(|| {
            CmdError::input(format!(
                "no decision in {} has a leader and a runner-up to re-check (fewer than two eligible configurations)",
                dir.display()
            ))
        })?;
    let (Some(a), Some(b)) = (point.leader.clone(), point.runner_up.clone()) else {
        return Err(CmdError::input("no leader and runner-up"));
    };
    let (s2, one, launches) = crate::run::recheck::plan(&s, &plan, &recorded, point, (&a, &b), dir)
        .map_err(CmdError::input)?;
    let input = SweepInput {
        spec: &s2,
        text: &text,
        spec_path: &spec_path,
        plan: &one,
        prep: &prep,
        slots: &crate::run::slots::SlotSpec::serial(),
        hook: None,
        deadline: None,
    };
    out(&format!(
        "re-checking the decision at {}: {a} (leader) against {b} (runner-up), order A B B A",
        point.label
    ));
    let (results, mut manifest) = create_results(&input, results_dir, &one.sweep_name)?;
    let code = execute(&input, &results, &launches, &mut manifest, None).await?;
    if code == ExitCode::Interrupted {
        return Ok(code);
    }
    let new_rows = load(&results.root)?.table.rows;
    let refs: Vec<&rows::Row> = new_rows.iter().collect();
    let after = crate::tune::decision::decide_rows(
        &o,
        &format!("the re-check ({a} and {b}, 2 launches each, ABBA)"),
        &refs,
        &Default::default(),
    );
    let (holds, report) = reproduce::decision_verdict(&before, point, &after);
    out(&report);
    if let Err(e) = store::write_atomic(&results.root.join("recheck.md"), report.as_bytes()) {
        say(&format!(
            "warning: the report above could not be saved: {e}"
        ));
    }
    Ok(if holds {
        ExitCode::Ok
    } else {
        ExitCode::RunsFailed
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::plan::spec::Goal;
    use crate::record::rows::Row;
    use crate::tune::decision::sweep_noise;

    fn row(name: &str, repeat: u64, v: f64) -> Row {
        Row::from_cells(
            [
                ("run_name", name.to_string()),
                ("status", "ok".to_string()),
                ("concurrency", "8".to_string()),
                ("repeat", repeat.to_string()),
                ("output_tok_s", v.to_string()),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v)),
        )
    }

    /// The refusal states the re-check's rule as the decision applies it: one side's two
    /// launches already measure the noise, so `objective.noise` enters only when neither side
    /// has two successful launches.
    #[test]
    fn the_tolerance_refusal_says_when_objective_noise_applies() {
        let o = crate::plan::spec::Objective::for_test(Goal::Maximize, "output_tok_s", &[]);
        let one_side = [row("a", 1, 100.0), row("a", 2, 104.0), row("b", 1, 90.0)];
        assert!(sweep_noise(&o, &one_side.iter().collect::<Vec<_>>()).is_some());
        let neither = [row("a", 1, 100.0), row("b", 1, 90.0)];
        assert!(sweep_noise(&o, &neither.iter().collect::<Vec<_>>()).is_none());
        let m = TOLERANCE_WITH_DECISION;
        assert!(
            !m.contains("where a side has a single successful launch"),
            "{m}"
        );
        assert!(
            m.contains(
                "`objective.noise` in spec.yaml only when neither side has two successful launches"
            ),
            "{m}"
        );
    }
}
