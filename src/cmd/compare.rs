//! `sgtune compare A B`: two sweeps, run by run.

use super::{CmdError, ExitCode, out};
use crate::record::provenance::{self, Manifest};
use crate::record::rows;
use crate::report::compare;
use std::path::Path;

fn read_side(p: &Path) -> Result<(Vec<rows::Row>, Option<Manifest>), CmdError> {
    let csv = rows::csv_path(p);
    let t = rows::read(&csv).map_err(|e| CmdError::input(e.to_string()))?;
    let manifest = csv.parent().and_then(|d| provenance::read(d).ok());
    Ok((t.rows, manifest))
}

pub fn run(
    a: &Path,
    b: &Path,
    metrics: Option<Vec<String>>,
    format: compare::Format,
    noise: f64,
) -> Result<ExitCode, CmdError> {
    let (ra, ma) = read_side(a)?;
    let (rb, mb) = read_side(b)?;
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
            if judged(&ra) || judged(&rb) {
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
    let mut c = compare::compare(&ra, &rb, &metrics, noise);
    if let (Some(ma), Some(mb)) = (&ma, &mb) {
        c.context = provenance::context_differences(ma, mb);
    }
    if format != compare::Format::Json && format != compare::Format::Csv {
        out(&format!("A: {}\nB: {}\n", a.display(), b.display()));
    }
    out(&compare::render(&c, format));
    Ok(ExitCode::Ok)
}
