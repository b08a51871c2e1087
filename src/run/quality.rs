//! The quality guard between rounds (`run::tuning`, pruning): read every launch's
//! `quality.jsonl` and judge each configuration against the baseline (`tune::quality`). At the
//! end of a sweep `run::conclude` reads the same files and `tune::conclusion` judges them,
//! putting the verdicts into the rows' `quality_*` cells of results.csv, which the table, the
//! decision, report.html and `compare` then read like any other column. Judged from the files,
//! so the order the launches ran in (`--parallel`, pruning, repeats, Slurm) never matters.

use crate::plan::spec::SweepSpec;
use crate::tune::quality::{QualityReport, judge_sweep};
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
    let (samples, reference) = crate::record::quality::read_sweep(root, reference_dir);
    Some(judge_sweep(q, names, samples, reference))
}
