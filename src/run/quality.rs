//! The quality guard at the end of a sweep: read every launch's `quality.jsonl`, judge each
//! configuration against the baseline (`tune::quality`), and write the verdicts into the
//! rows' `quality_*` cells of results.csv, which the table, the decision, report.html and
//! `compare` then read like any other column. Judged from the files at conclusion, so the order
//! the launches ran in (`--parallel`, pruning, repeats, Slurm) never matters.

use crate::load::quality::QualitySample;
use crate::plan::quality::baseline_name;
use crate::plan::spec::SweepSpec;
use crate::record::Phase;
use crate::record::quality::read_all;
use crate::record::rows::{Col, Row, Table};
use crate::record::store;
use crate::tune::quality::{QualityReport, cells, judge};
use crate::util::say;
use std::path::Path;

/// Judge the configurations named in `names` from the quality passes under `root/runs` (and,
/// for the baseline, under `reference_dir/runs`: a re-check compares with the sweep it
/// re-checks). None without `quality:`.
pub fn judge_folder(
    spec: &SweepSpec,
    names: &[String],
    root: &Path,
    reference_dir: Option<&Path>,
) -> Option<QualityReport> {
    let q = spec.quality.as_ref()?;
    let baseline = match baseline_name(q, names) {
        Ok(b) => b.to_string(),
        // A re-check's plan holds only the two configurations it relaunches.
        Err(_) => q.baseline.clone().unwrap_or_default(),
    };
    let (mut samples, mut notes) = read_all(&store::runs_dir(root));
    if let Some(r) = reference_dir {
        let (theirs, n) = read_all(&store::runs_dir(r));
        samples.extend(
            theirs
                .into_iter()
                .filter(|s: &QualitySample| s.run_name == baseline)
                .map(|mut s| {
                    // Keep the reference's launches apart from the re-check's own.
                    s.launch = format!("0-reference/{}", s.launch);
                    s
                }),
        );
        notes.extend(n);
    }
    for n in notes {
        say(&format!("warning: a quality.jsonl line was skipped: {n}"));
    }
    let mut all: Vec<String> = names.to_vec();
    if !all.contains(&baseline) {
        all.insert(0, baseline.clone());
    }
    Some(judge(q, &baseline, &samples, &all))
}

/// Put each configuration's verdict into its rows (not the pre-flight's attempts).
pub fn annotate(rows: &mut [Row], report: &QualityReport) {
    for r in rows.iter_mut() {
        if r.phase() == Phase::Preflight {
            continue;
        }
        if let Some(v) = report.verdict(r.run_name()) {
            r.set_quality(&cells(v, &report.floor));
        }
    }
}

/// Rewrite `root`'s results.csv with the annotated rows (through the store's one writer). A
/// header without the quality columns (a folder from an older sgtune) is left as it is.
pub fn rewrite(root: &Path, table: &Table, rows: &[Row]) -> Result<(), String> {
    if !table.has_column(&Col::QUALITY_VERDICT) {
        return Ok(());
    }
    store::rewrite_table(root, &table.header, rows).map_err(|e| e.to_string())
}

/// The whole step for a results folder: judge, annotate `table`'s rows, rewrite results.csv.
/// Returns the report (None without `quality:`) and the annotated rows.
pub fn apply(
    spec: &SweepSpec,
    names: &[String],
    root: &Path,
    mut table: Table,
    reference_dir: Option<&Path>,
) -> (Option<QualityReport>, Vec<Row>) {
    let Some(report) = judge_folder(spec, names, root, reference_dir) else {
        return (None, table.rows);
    };
    annotate(&mut table.rows, &report);
    if let Err(e) = rewrite(root, &table, &table.rows) {
        say(&format!(
            "warning: cannot write the quality verdicts into results.csv: {e}"
        ));
    }
    (Some(report), table.rows)
}
