//! `sgtune compare A B`: two sweeps, the decision diff first, then run by run.

use super::{CmdError, ExitCode, out};
use crate::plan::spec::Objective;
use crate::record::provenance::{self, Manifest};
use crate::record::{plan_file, rows};
use crate::report::compare;
use crate::tune::diff;
use std::path::Path;

/// One side as read from its folder (or its results.csv).
pub struct Side {
    pub rows: Vec<rows::Row>,
    pub manifest: Option<Manifest>,
    pub objective: Option<Objective>,
}

pub fn read_side(p: &Path) -> Result<Side, CmdError> {
    let csv = rows::csv_path(p);
    let t = rows::read(&csv).map_err(|e| CmdError::input(e.to_string()))?;
    let dir = csv.parent();
    Ok(Side {
        rows: t.rows,
        manifest: dir.and_then(|d| provenance::read(d).ok()),
        objective: dir.and_then(plan_file::read_objective),
    })
}

/// The decision diff of two sides ([`diff::diff`]).
pub fn decision_diff(a: &Side, b: &Side, noise: f64) -> diff::DecisionDiff {
    diff::diff(&a.view(), &b.view(), noise)
}

impl Side {
    fn view(&self) -> diff::SweepView<'_> {
        diff::SweepView {
            rows: &self.rows,
            objective: self.objective.as_ref(),
            manifest: self.manifest.as_ref(),
            preflight_knob: None,
        }
    }
}

/// How to show the comparison, and what fails it.
pub struct View {
    pub format: compare::Format,
    pub all: bool,
    pub fail_on: Vec<compare::Gate>,
}

pub fn run(
    a: &Path,
    b: &Path,
    metrics: Option<Vec<String>>,
    view: View,
    noise: f64,
) -> Result<ExitCode, CmdError> {
    let sa = read_side(a)?;
    let sb = read_side(b)?;
    let (ra, rb) = (&sa.rows, &sb.rows);
    let has = |m: &String| {
        ra.first().is_none_or(|r| r.0.contains_key(m))
            && rb.first().is_none_or(|r| r.0.contains_key(m))
    };
    let metrics: Vec<String> = match metrics {
        Some(given) => {
            if let Some(bad) = given.iter().find(|m| !has(m)) {
                return Err(CmdError::input(format!(
                    "--metric {bad}: not a column of both results.csv files (see `sgtune columns`)"
                )));
            }
            given
        }
        None => {
            let mut m: Vec<String> = compare::DEFAULT_METRICS
                .iter()
                .map(|m| m.to_string())
                .filter(|m| has(m))
                .collect();
            // With the quality guard on either side, how often outputs derail is compared too
            // (each side against its own baseline).
            let judged = |rs: &[rows::Row]| rs.iter().any(|r| !r.get("quality_verdict").is_empty());
            if judged(ra) || judged(rb) {
                m.extend(
                    ["quality_decisive_share", "quality_prefix_agreement"]
                        .map(String::from)
                        .into_iter()
                        .filter(|c| has(c)),
                );
            }
            m
        }
    };
    let mut c = compare::compare(ra, rb, &metrics, noise);
    if let (Some(ma), Some(mb)) = (&sa.manifest, &sb.manifest) {
        c.context = provenance::context_differences(ma, mb);
    }
    c.set_decision(decision_diff(&sa, &sb, noise));
    if view.format != compare::Format::Json && view.format != compare::Format::Csv {
        out(&format!("A: {}\nB: {}\n", a.display(), b.display()));
    }
    out(&compare::render(&c, view.format, view.all));
    let tripped = compare::tripped(&c, &view.fail_on);
    if tripped.is_empty() {
        return Ok(ExitCode::Ok);
    }
    for t in &tripped {
        crate::util::say(&format!("--fail-on {t}"));
    }
    Ok(ExitCode::Gated)
}
