//! report.html's inputs read from a results folder: each launch's (summary*.json,
//! requests*.csv, and the server's timeline read from server.log by `observe::timeline` with
//! the launch's engine: `launches`, which the end of every sweep reads too), and for `sgtune
//! report` the conclusion read back (`page_of`: decision.json's `Decision`, the tune's path
//! from spec.yaml, a deadline's leftovers from outcome.json) into one typed [`Sweep`], drawn
//! by `report::conclusion` as the end of a sweep draws it; and the page written.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use crate::observe::timeline::{self, WindowLines};
use crate::plan::engine::Engine;
use crate::record::ReadError;
use crate::record::outcome::SweepEnd;
use crate::record::provenance::Manifest;
use crate::record::requests;
use crate::record::rows::{self, Row};
use crate::record::store::{self, StoreError};
use crate::record::summary::{self, Summary};
use crate::record::sweep::Sweep as Loaded;
use crate::report::conclusion::{self as shown, Frame};
use crate::report::html::data;
use crate::report::html::{self, Launch, PointClient, Sweep};
use crate::tune::conclusion::Conclusion;
use crate::tune::decision::Decision;

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

/// The note when a folder's decision.md has no decision.json this version reads.
pub const NO_DECISION_JSON: &str =
    "decision.md is not shown here: the folder has no decision.json this version reads";

/// Read a results folder (or its results.csv) into what the page shows.
pub fn read_sweep(p: &Path) -> Result<Sweep, ReadError> {
    Ok(page_of(&Loaded::load(p)?))
}

/// What the page shows of a loaded results folder, as the sweep's end recorded it: the
/// conclusion read back (decision.json's decision, the tune's path replayed from the rows with
/// the folder's spec.yaml, what a deadline left from outcome.json), drawn as the end of the
/// sweep draws it (`report::conclusion`).
pub fn page_of(loaded: &Loaded) -> Sweep {
    let root = &loaded.root;
    let mut notes = loaded.problems.clone();
    let decision = match loaded.decision::<Decision>() {
        Ok(d) => d,
        Err(e) => {
            // An older or edited file: the page still renders, starring by the rule.
            crate::util::say(&format!(
                "warning: {e}; the table stars the leader by the decision rule instead"
            ));
            None
        }
    };
    if decision.is_none() && root.join(store::DECISION_MD).is_file() {
        // A folder from before decision.json (or with one this version cannot read): the page
        // draws the decision only from the typed file.
        notes.push(NO_DECISION_JSON.to_string());
    }
    // A guided tune's path, for its chart: replayed from the rows with the folder's spec (which
    // may name variables of the shell it ran in: then the chart is left out, and said so).
    let spec_path = root.join(store::SPEC_YAML);
    let spec = match crate::plan::spec::load(&spec_path) {
        Ok((spec, _)) => Some(spec),
        Err(e) => {
            let text = std::fs::read_to_string(&spec_path).unwrap_or_default();
            if text.lines().any(|l| l.starts_with("tune:")) {
                notes.push(format!("no tune path chart: {e}"));
            }
            None
        }
    };
    let rows = loaded.rows().to_vec();
    // A batched tune's path is replayed in its batches (the width its manifest recorded).
    let width = loaded.manifest.as_ref().and_then(|m| m.tune_slots);
    let path = spec
        .as_ref()
        .and_then(|s| crate::tune::conclusion::replay(s, width, &rows));
    let not_measured = match &decision {
        Some(_) => crate::record::outcome::read(root)
            .ok()
            .flatten()
            .filter(|o| o.outcome == SweepEnd::Deadline)
            .map(|o| o.not_measured),
        None => None,
    };
    let c = Conclusion {
        sweep: loaded.name(),
        rows,
        judged: false,
        objective: loaded.objective.clone(),
        decision,
        path,
        end: if not_measured.is_some() {
            SweepEnd::Deadline
        } else {
            SweepEnd::Done
        },
        not_measured,
    };
    let marks = shown::marks(&c);
    let sections = shown::sections(&c, spec.as_ref(), root);
    let frame = Frame {
        name: loaded.name(),
        dir: root.display().to_string(),
        param_keys: loaded.param_keys(),
        launches: launches(root, loaded.manifest.as_ref(), loaded.rows()),
        notes,
    };
    shown::page(&c, spec.as_ref(), marks, sections, frame)
}

/// What the page shows of each launch folder under runs/ (its measurements and the server's
/// timeline): in the plan's order, else the rows', then any other folder under runs/.
pub fn launches(root: &Path, manifest: Option<&Manifest>, rows: &[Row]) -> Vec<Launch> {
    let mut names: Vec<String> = manifest
        .map(|m| m.plan.runs.iter().map(|(n, _)| n.clone()).collect())
        .unwrap_or_default();
    for r in rows {
        let n = r.run_name().to_string();
        if !names.contains(&n) {
            names.push(n);
        }
    }
    let runs = store::runs_dir(root);
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
    let mut out = Vec::new();
    for n in names {
        let d = runs.join(&n);
        if d.is_dir() {
            let engine = launch_engine(rows, &n);
            out.push(read_launch(&d, &n, engine));
        }
    }
    out
}

/// Write one sweep's report to `out` (default DIR/report.html).
pub fn write_sweep_report(dir: &Path, out_file: Option<&Path>) -> Result<PathBuf, ReportError> {
    write_page(&page_of(&Loaded::load(dir)?), out_file)
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
