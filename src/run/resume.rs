//! `sgtune resume`: what a resume keeps and what it redoes, with the results folder put in
//! order for it (rows to redo set aside, earlier attempts' folders renamed).

use crate::plan::expand::RunPlan;
use crate::plan::spec::SweepSpec;
use crate::record::RowKey;
use crate::record::provenance::{self, Manifest};
use crate::record::rows;
use crate::record::store;
use crate::record::store::ResultsDir;
use crate::tune::work::{self, Launch};
use crate::util::say;
use std::path::Path;

/// The sweep as it is now, to hold against what the folder recorded.
pub struct ResumeInput<'a> {
    pub spec: &'a SweepSpec,
    pub spec_path: &'a Path,
    pub text: &'a str,
    pub plan: &'a RunPlan,
}

/// What a resume keeps and what it redoes: results.csv rewritten with the kept rows (the others
/// set aside in results.superseded.csv), earlier attempts' folders renamed, the launches to go.
pub fn prepare_resume(
    input: &ResumeInput<'_>,
    dir: &Path,
    retry_failed: bool,
    force: bool,
) -> Result<(ResultsDir, Vec<Launch>, Manifest), String> {
    let mut recorded = provenance::read(dir).map_err(|e| {
        format!(
            "cannot resume {}: {e} (is it a results folder written by sgtune run?)",
            dir.display()
        )
    })?;
    let now = provenance::collect(
        input.spec,
        &input.spec_path.display().to_string(),
        input.text,
        input.plan,
    );
    let diffs = provenance::differences(&recorded, &now);
    if !diffs.is_empty() && !force {
        let list: String = diffs.iter().map(|d| format!("\n  - {d}")).collect();
        return Err(format!(
            "refusing to resume {}: the sweep changed since it was recorded:{list}\n  (resume with the recorded spec: `sgtune resume DIR`; or accept the changes with --force, which records them in manifest.json)",
            dir.display()
        ));
    }
    let csv_path = dir.join(store::RESULTS_CSV);
    let table = rows::read(&csv_path).map_err(|e| format!("cannot resume: {e}"))?;
    let results = ResultsDir::open(dir, &input.plan.param_keys);
    // A file from an sgtune before a column was added is resumed, its rows written again under
    // today's header with the new cells empty; any other difference is another sweep's file.
    let Some(added) = table.columns_added_by(results.header()) else {
        return Err(format!(
            "cannot resume: {} has other columns than this sweep writes (was it written by another sgtune version?)",
            csv_path.display()
        ));
    };
    if !added.is_empty() {
        say(&format!(
            "resume: results.csv was written before the column(s) {}: its rows keep their cells, those empty",
            added.join(", ")
        ));
    }
    let fields = table.fields_under(results.header());
    if table.partial_tail {
        say(
            "resume: results.csv ended in a partial row (sgtune was killed while writing it); that row is dropped and its run redone",
        );
    }
    // Keep finished rows; set aside the ones to redo.
    let mut keep_raw = Vec::new();
    let mut redo_raw = Vec::new();
    let mut kept: Vec<RowKey> = Vec::new();
    let mut kept_rows: Vec<rows::Row> = Vec::new();
    for (row, raw) in table.rows.iter().zip(&fields) {
        if work::is_finished(row, retry_failed) && !kept.contains(&row.key()) {
            kept.push(row.key());
            kept_rows.push(row.clone());
            keep_raw.push(raw.clone());
        } else {
            redo_raw.push(raw.clone());
        }
    }
    results
        .append_superseded(&redo_raw)
        .and_then(|_| results.rewrite_csv(&keep_raw))
        .map_err(|e| format!("cannot update the results folder: {e}"))?;
    // What is left: the kept rows are finished, and a search continues from their probes.
    let launches = work::left_to_run(input.spec, input.plan, &kept_rows, retry_failed);
    // A launch folder left by an earlier attempt is kept, renamed, as evidence.
    for l in &launches {
        let d = store::launch_dir(dir, &l.dir_name);
        if d.exists() {
            let mut n = 1;
            while dir
                .join(store::RUNS)
                .join(format!("{}.attempt-{n}", l.dir_name))
                .exists()
            {
                n += 1;
            }
            let to = dir
                .join(store::RUNS)
                .join(format!("{}.attempt-{n}", l.dir_name));
            // The new attempt must not write into the old one's folder: refuse rather than
            // mix two attempts' files.
            std::fs::rename(&d, &to).map_err(|e| {
                format!("cannot set aside {} as {}: {e}", d.display(), to.display())
            })?;
        }
    }
    recorded.resumes.push(provenance::ResumeNote {
        at: provenance::now_rfc3339(),
        forced_differences: diffs,
        retry_failed,
    });
    recorded.finished_at = None;
    say(&format!(
        "resume: {} row(s) kept, {} set aside in results.superseded.csv, {} server launch(es) to go",
        keep_raw.len(),
        redo_raw.len(),
        launches.len()
    ));
    Ok((results, launches, recorded))
}
