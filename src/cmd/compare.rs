//! `sgtune compare A B`: two sweeps, the decision diff first, then run by run.

use super::{CmdError, ExitCode, out};
use crate::record::provenance;
use crate::record::rows::{self, Col};
use crate::record::sweep::Sweep;
use crate::report::compare;
use crate::tune::compare as judged;
use crate::tune::diff;
use std::path::Path;

/// One side, loaded from its folder (or its results.csv).
pub fn read_side(p: &Path) -> Result<Sweep, CmdError> {
    Sweep::load(p).map_err(|e| CmdError::input(e.to_string()))
}

/// The decision diff of two sides ([`diff::diff`]).
pub fn decision_diff(a: &Sweep, b: &Sweep, noise: f64) -> diff::DecisionDiff {
    diff::diff(&view(a), &view(b), noise)
}

fn view(s: &Sweep) -> diff::SweepView<'_> {
    diff::SweepView {
        rows: s.rows(),
        objective: s.objective.as_ref(),
        manifest: s.manifest.as_ref(),
        preflight_knob: None,
    }
}

/// How to show the comparison, and what fails it.
pub struct View {
    pub format: compare::Format,
    pub all: bool,
    pub fail_on: Vec<judged::Gate>,
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
    let (ra, rb) = (sa.rows(), sb.rows());
    let has = |c: &Col| {
        let has = |r: &rows::Row| r.has(c);
        ra.first().is_none_or(has) && rb.first().is_none_or(has)
    };
    let metrics: Vec<Col> = match metrics {
        // The names asked for on the command line, each a column of both files.
        Some(given) => {
            let mut cols = Vec::new();
            for name in &given {
                match Col::named(name).filter(|c| has(c)) {
                    Some(c) => cols.push(c),
                    None => {
                        return Err(CmdError::input(format!(
                            "--metric {name}: not a column of both results.csv files (see `sgtune columns`)"
                        )));
                    }
                }
            }
            cols
        }
        None => {
            let mut m: Vec<Col> = judged::DEFAULT_METRICS
                .iter()
                .filter(|c| has(c))
                .cloned()
                .collect();
            // With the quality guard on either side, how often outputs derail is compared too
            // (each side against its own baseline).
            let judged = |rs: &[rows::Row]| rs.iter().any(|r| r.quality().is_some());
            if judged(ra) || judged(rb) {
                m.extend(
                    [Col::QUALITY_DECISIVE_SHARE, Col::QUALITY_PREFIX_AGREEMENT]
                        .into_iter()
                        .filter(|c| has(c)),
                );
            }
            m
        }
    };
    let mut c = judged::compare(ra, rb, &metrics, noise);
    if let (Some(ma), Some(mb)) = (&sa.manifest, &sb.manifest) {
        c.context = provenance::context_differences(ma, mb);
    }
    c.set_decision(decision_diff(&sa, &sb, noise));
    if view.format != compare::Format::Json && view.format != compare::Format::Csv {
        out(&format!("A: {}\nB: {}\n", a.display(), b.display()));
    }
    out(&compare::render(&c, view.format, view.all));
    let tripped = judged::tripped(&c, &view.fail_on);
    if tripped.is_empty() {
        return Ok(ExitCode::Ok);
    }
    for t in &tripped {
        crate::util::say(&format!("--fail-on {t}"));
    }
    Ok(ExitCode::Gated)
}
