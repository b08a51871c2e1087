//! report.html's inputs, read from a results folder into one typed [`Sweep`] (results.csv's
//! rows, decision.json's `Decision` with the sections decision.md has under it rebuilt from
//! their data, the tune's path, and per launch summary*.json, requests*.csv and the server's
//! timeline read from server.log by `observe::timeline` with the launch's engine), and the
//! page written. `report::html` only renders it. Called at
//! the end of every run and resume, and by `sgtune report`.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use crate::observe::timeline::{self, WindowLines};
use crate::plan::engine::Engine;
use crate::record::ReadError;
use crate::record::outcome::SweepEnd;
use crate::record::requests;
use crate::record::rows::{self, Row};
use crate::record::store::{self, StoreError};
use crate::record::summary::{self, Summary};
use crate::record::sweep::Sweep as Loaded;
use crate::report::html::data;
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
fn read_launch(dir: &Path, name: &str, engine: Option<Engine>) -> Launch {
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
        let requests = match requests::read(&req) {
            Ok(r) => data::measured(&r.unwrap_or_default()),
            Err(e) => {
                l.notes.push(e.to_string());
                Vec::new()
            }
        };
        l.points.push(PointClient { label, requests });
    }
    let log = dir.join(store::SERVER_LOG);
    match File::open(&log) {
        Ok(f) => match timeline::read(BufReader::new(f), &windows, engine) {
            Ok(t) => l.timeline = Some(t),
            Err(e) => l.notes.push(format!("{}: {e}", log.display())),
        },
        Err(e) => l.notes.push(format!("{}: {e}", log.display())),
    }
    l
}

/// The engine a launch ran, from its rows' `engine` column (as `sgtune run` tells the log's
/// summarizer); None for a folder from before the column, or a launch without rows: then the
/// log says which.
fn launch_engine(rows: &[rows::Row], launch: &str) -> Option<Engine> {
    rows.iter()
        .filter(|r| {
            let n = r.run_name();
            launch == n
                || launch
                    .strip_prefix(n)
                    .is_some_and(|rest| rest.starts_with('.'))
        })
        .find_map(Row::engine)
}

/// What a deadline left unmeasured, for the section under the decision.
#[derive(Debug, Clone, Copy)]
pub enum Deadline<'a> {
    /// As outcome.json recorded it (`sgtune report`, after the sweep).
    Recorded,
    /// The sweep ending now says (outcome.json is written after the report): the launches a
    /// deadline left, or None when none stopped it.
    Now(Option<&'a [String]>),
}

/// Read a results folder (or its results.csv) into what the page shows.
pub fn read_sweep(p: &Path) -> Result<Sweep, ReadError> {
    Ok(page_of(&Loaded::load(p)?, Deadline::Recorded))
}

/// What the page shows of a loaded results folder, a deadline's leftovers as `deadline` says.
pub fn page_of(loaded: &Loaded, deadline: Deadline) -> Sweep {
    let root = loaded.root.clone();
    let mut s = Sweep {
        name: loaded.name(),
        dir: root.display().to_string(),
        param_keys: loaded.param_keys(),
        rows: loaded.rows().to_vec(),
        notes: loaded.problems.clone(),
        ..Default::default()
    };
    // What the table stars: decision.json's picks; without one (an interrupted sweep), the
    // leader so far by the same rule, from the folder's objective.
    let decided = loaded.decision::<crate::tune::decision::Decision>();
    s.decision_marks = match &decided {
        Ok(Some(d)) => Some(crate::report::table::DecisionMarks::of(d)),
        read => {
            if let Err(e) = read {
                // An older or edited file: the page still renders, starring by the rule.
                crate::util::say(&format!(
                    "warning: {e}; the table stars the leader by the decision rule instead"
                ));
            }
            crate::report::table::marks(loaded.objective.as_ref(), None, &s.rows)
        }
    };
    s.decision = decided.ok().flatten();
    if s.decision.is_none() && root.join(store::DECISION_MD).is_file() {
        // A folder from before decision.json (or with one this version cannot read): the page
        // draws the decision only from the typed file.
        s.notes.push(
            "decision.md is not shown here: the folder has no decision.json this version reads"
                .to_string(),
        );
    }
    // A guided tune's path, for its chart: replayed from the rows with the folder's spec (which
    // may name variables of the shell it ran in: then the chart is left out, and said so).
    let spec_path = root.join(store::SPEC_YAML);
    let spec = crate::plan::spec::load(&spec_path).map(|(spec, _)| spec);
    // A batched tune's path is replayed in its batches (the width its manifest recorded).
    let width = loaded
        .manifest
        .as_ref()
        .and_then(|m| m.tune_slots)
        .unwrap_or(1);
    match &spec {
        Ok(spec) => s.tune = crate::run::guided::chart_path(spec, &s.rows, width),
        Err(e) => {
            let text = std::fs::read_to_string(&spec_path).unwrap_or_default();
            if text.lines().any(|l| l.starts_with("tune:")) {
                s.notes.push(format!("no tune path chart: {e}"));
            }
        }
    }
    // The sections decision.md has under the decision, from the data they were written from
    // (in decision.md's order: run::conclude).
    if s.decision.is_some() {
        s.decision_sections = crate::report::effective::decision_blocks(&s.rows);
        let recorded;
        let left = match deadline {
            Deadline::Now(left) => left,
            Deadline::Recorded => {
                recorded = crate::record::outcome::read(&root)
                    .ok()
                    .flatten()
                    .filter(|o| o.outcome == SweepEnd::Deadline)
                    .map(|o| o.not_measured);
                recorded.as_deref()
            }
        };
        if let Some(left) = left {
            s.decision_sections
                .extend(crate::report::decision::deadline_blocks(left, &root));
        }
        if let Ok(spec) = &spec {
            s.decision_sections
                .extend(crate::run::guided::path_blocks(spec, &s.rows, width));
        }
    }
    // Launch order: the plan's, else the rows', then any other folder under runs/.
    let mut names: Vec<String> = loaded
        .manifest
        .as_ref()
        .map(|m| m.plan.runs.iter().map(|(n, _)| n.clone()).collect())
        .unwrap_or_default();
    for r in &s.rows {
        let n = r.run_name().to_string();
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
            let engine = launch_engine(&s.rows, &n);
            s.launches.push(read_launch(&d, &n, engine));
        }
    }
    s
}

/// Write one sweep's report to `out` (default DIR/report.html).
pub fn write_sweep_report(dir: &Path, out_file: Option<&Path>) -> Result<PathBuf, ReportError> {
    write_sweep_report_at(dir, out_file, Deadline::Recorded)
}

/// Write one sweep's report, a deadline's leftovers as `deadline` says.
pub fn write_sweep_report_at(
    dir: &Path,
    out_file: Option<&Path>,
    deadline: Deadline,
) -> Result<PathBuf, ReportError> {
    write_page(&page_of(&Loaded::load(dir)?, deadline), out_file)
}

/// Write the page of a loaded sweep to `out` (default DIR/report.html).
pub fn write_page(s: &Sweep, out_file: Option<&Path>) -> Result<PathBuf, ReportError> {
    let path = out_file
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(&s.dir).join(store::REPORT_HTML));
    store::write_atomic(&path, html::sweep_page(s).as_bytes())?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, engine: &str) -> rows::Row {
        rows::Row::from_cells([("run_name", name), ("engine", engine)])
    }

    /// A launch's timeline is read with the engine its rows name (a repeat's folder `a.r2`
    /// included); without one (an older folder), the log says.
    #[test]
    fn a_launch_is_read_with_the_engine_its_rows_name() {
        let rows = [row("a", "vllm"), row("b", "sglang"), row("c", "")];
        assert_eq!(launch_engine(&rows, "a"), Some(Engine::Vllm));
        assert_eq!(launch_engine(&rows, "a.r2"), Some(Engine::Vllm));
        assert_eq!(launch_engine(&rows, "b"), Some(Engine::Sglang));
        assert_eq!(launch_engine(&rows, "c"), None);
        assert_eq!(launch_engine(&rows, "ab"), None);
    }

    /// A folder's decision reaches the page typed (decision.json), with the deadline's section
    /// from outcome.json after the sweep, or from the sweep ending now (whose outcome.json is
    /// not written yet: an older one there is not believed).
    #[test]
    fn the_decision_and_a_deadline_come_typed_from_the_folder() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        let fixture = Path::new("tests/fixtures/results/cpu-demo-rerun");
        for f in ["results.csv", "decision.json"] {
            std::fs::copy(fixture.join(f), root.join(f)).expect("copy");
        }
        let mut o = crate::record::outcome::read(fixture)
            .ok()
            .flatten()
            .expect("the fixture's outcome.json");
        o.outcome = SweepEnd::Deadline;
        o.not_measured = vec!["mtt2048.r2: c32 repeat 2".into()];
        store::write_json(&root.join(crate::run::finish::FILE), &o).expect("write");
        let has_deadline = |s: &Sweep| {
            s.decision_sections.iter().any(|b| {
                matches!(b, crate::report::doc::Block::List { items, .. }
                    if items == &["mtt2048.r2: c32 repeat 2".to_string()])
            })
        };
        let s = read_sweep(root).expect("reads");
        let d = s.decision.as_ref().expect("the decision");
        // The rerun's decision as `compare` reads it: none eligible at concurrency 32.
        assert_eq!(d.points[0].label, "concurrency 32");
        assert_eq!(d.points[0].leader, None);
        assert!(has_deadline(&s));
        let s = page_of(&Loaded::load(root).expect("reads"), Deadline::Now(None));
        assert!(s.decision.is_some() && !has_deadline(&s));
        // Without decision.json, no decision (and decision.md alone is not parsed).
        std::fs::remove_file(root.join("decision.json")).expect("rm");
        std::fs::write(root.join("decision.md"), "# Decision: x\n").expect("write");
        let s = read_sweep(root).expect("reads");
        assert!(s.decision.is_none() && s.decision_sections.is_empty());
        assert!(
            s.notes
                .iter()
                .any(|n| n.contains("decision.md is not shown"))
        );
    }
}
