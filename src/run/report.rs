//! report.html's inputs, read from a results folder (results.csv, decision.md, and per launch
//! server.log, summary*.json, requests*.csv) into a [`Sweep`], and the page written. Called at
//! the end of every run and resume, and by `sgtune report`.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use crate::record::ReadError;
use crate::record::provenance;
use crate::record::rows;
use crate::record::store::{self, StoreError};
use crate::record::summary::{self, Summary};
use crate::report::html::data::{self, WindowLines};
use crate::report::html::{self, Launch, PointClient, Sweep};

/// Why report.html could not be written: its results.csv does not read, or the page cannot be
/// written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The label of one measurement: `c<concurrency>` or `rate<r>`, with ` r<repeat>` when the
/// launch measured more than one repeat.
fn label(s: &Summary, many_repeats: bool) -> String {
    let rec = &s.record;
    let mut l = match rec.request_rate {
        Some(r) => format!("rate{r}"),
        None => format!("c{}", rec.concurrency),
    };
    if many_repeats {
        l.push_str(&format!(" r{}", rec.repeat));
    }
    l
}

/// One `runs/<name>/` folder: its measurements (summary*.json with the matching
/// requests*.csv) and the server's timeline. What cannot be read becomes a note.
fn read_launch(dir: &Path, name: &str) -> Launch {
    let mut l = Launch {
        name: name.to_string(),
        ..Default::default()
    };
    let mut summaries: Vec<(String, Summary)> = Vec::new();
    for (sfx, read) in summary::read_all(dir) {
        match read {
            Ok(s) => summaries.push((sfx, s)),
            Err(e) => l.notes.push(e.to_string()),
        }
    }
    // Measurement order: by the window's first line (the order they ran).
    summaries.sort_by_key(|(_, s)| s.log_window.map_or(usize::MAX, |w| w.0));
    let repeats: std::collections::BTreeSet<u64> =
        summaries.iter().map(|(_, s)| s.record.repeat).collect();
    let many = repeats.len() > 1;
    let mut windows = Vec::new();
    for (sfx, s) in &summaries {
        let label = label(s, many);
        if let Some((a, b)) = s.log_window {
            windows.push(WindowLines {
                start_line: a,
                end_line: b,
                label: label.clone(),
                offered: Some(s.record.concurrency as f64),
            });
        }
        let req = dir.join(store::requests_csv(sfx));
        let requests = match File::open(&req) {
            Ok(f) => match data::read_requests(BufReader::new(f)) {
                Ok(r) => r,
                Err(e) => {
                    l.notes.push(format!("{}: {e}", req.display()));
                    Vec::new()
                }
            },
            Err(_) => Vec::new(),
        };
        l.points.push(PointClient { label, requests });
    }
    let log = dir.join(store::SERVER_LOG);
    match File::open(&log) {
        Ok(f) => match data::read_timeline(f, &windows) {
            Ok(t) => l.timeline = Some(t),
            Err(e) => l.notes.push(format!("{}: {e}", log.display())),
        },
        Err(e) => l.notes.push(format!("{}: {e}", log.display())),
    }
    l
}

/// Read a results folder (or its results.csv) into what the page shows.
pub fn read_sweep(p: &Path) -> Result<Sweep, ReadError> {
    let csv = rows::csv_path(p);
    let root = csv.parent().map(Path::to_path_buf).unwrap_or_default();
    let t = rows::read(&csv)?;
    let mut s = Sweep {
        name: root
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_else(|| "sweep".into()),
        dir: root.display().to_string(),
        param_keys: rows::param_keys(&t.header),
        rows: t.rows,
        decision_md: std::fs::read_to_string(root.join(store::DECISION_MD)).ok(),
        ..Default::default()
    };
    // What the table stars: decision.json's picks; without one (an interrupted sweep), the
    // leader so far by the same rule, from the folder's objective.
    s.decision_marks = match crate::run::decision_file::read(&root) {
        Ok(Some(d)) => Some(crate::report::table::DecisionMarks::of(&d)),
        read => {
            if let Err(e) = read {
                // An older or edited file: the page still renders, starring by the rule.
                crate::util::say(&format!(
                    "warning: {e}; the table stars the leader by the decision rule instead"
                ));
            }
            let objective = store::read_objective(&root);
            crate::report::table::marks(objective.as_ref(), None, &s.rows)
        }
    };
    // A guided tune's path, for its chart: replayed from the rows with the folder's spec (which
    // may name variables of the shell it ran in: then the chart is left out, and said so).
    let spec_path = root.join(store::SPEC_YAML);
    match crate::plan::spec::load(&spec_path) {
        Ok((spec, _)) => s.tune = crate::run::guided::chart_path(&spec, &s.rows),
        Err(e) => {
            let text = std::fs::read_to_string(&spec_path).unwrap_or_default();
            if text.lines().any(|l| l.starts_with("tune:")) {
                s.notes.push(format!("no tune path chart: {e}"));
            }
        }
    }
    // Launch order: the plan's, else the rows', then any other folder under runs/.
    let mut names: Vec<String> = provenance::read(&root)
        .map(|m| m.plan.runs.into_iter().map(|(n, _)| n).collect())
        .unwrap_or_default();
    for r in &s.rows {
        let n = r.get("run_name").to_string();
        if !names.contains(&n) {
            names.push(n);
        }
    }
    let runs = store::runs_dir(&root);
    if let Ok(entries) = std::fs::read_dir(&runs) {
        let mut extra: Vec<String> = entries
            .flatten()
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().to_string())
            .filter(|n| !names.contains(n))
            .collect();
        extra.sort();
        names.extend(extra);
    }
    for n in names {
        let d = runs.join(&n);
        if d.is_dir() {
            s.launches.push(read_launch(&d, &n));
        }
    }
    Ok(s)
}

/// Write one sweep's report to `out` (default DIR/report.html).
pub fn write_sweep_report(dir: &Path, out_file: Option<&Path>) -> Result<PathBuf, ReportError> {
    let s = read_sweep(dir)?;
    let path = out_file
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(&s.dir).join(store::REPORT_HTML));
    store::write_atomic(&path, html::sweep_page(&s).as_bytes())?;
    Ok(path)
}
