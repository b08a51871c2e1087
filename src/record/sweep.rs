//! A results folder read once: its rows, its manifest, its objective (plan.json, else
//! spec.yaml), each launch's effective arguments, and its decision.json. Whoever reads a
//! finished (or interrupted) sweep back (the end of a sweep, the report, compare, status,
//! reproduce) loads this, so each file of the folder has one reader and is read once.
//!
//! The decision's type belongs to `tune/`, above this stage: the loaded sweep keeps
//! decision.json's text and parses it into whatever type the caller names
//! ([`Sweep::decision`]).

use super::ReadError;
use super::effective::EffectiveFile;
use super::layout::{DECISION_JSON, RUNS};
use super::provenance::{self, Manifest};
use super::rows::{self, Row, Table};
use crate::plan::spec::Objective;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A results folder, loaded.
#[derive(Debug, Clone, Default)]
pub struct Sweep {
    /// The folder (the parent of results.csv).
    pub root: PathBuf,
    /// results.csv: the rows, typed, with the header and the fields as on disk.
    pub table: Table,
    /// manifest.json; None when the folder has none (or it cannot be read: see `problems`).
    pub manifest: Option<Manifest>,
    /// The objective as the folder recorded it (plan.json's, else spec.yaml's).
    pub objective: Option<Objective>,
    /// Each launch folder's effective_args.json, by folder name (`runs/<name>`).
    pub effective: BTreeMap<String, EffectiveFile>,
    /// decision.json as written; parsed by [`Sweep::decision`].
    decision_json: Option<String>,
    /// command.txt of each run manifest.json records no command for, by run name: a folder
    /// from before the manifest recorded commands keeps them in its launches' own files.
    pub older_commands: BTreeMap<String, String>,
    /// Files of the folder that exist but could not be read (each names its file): the sweep
    /// still loads, and whoever shows it says so.
    pub problems: Vec<String>,
}

impl Sweep {
    /// Load the folder `p` (or the folder of the results.csv `p`). results.csv must read; every
    /// other file is optional, as a folder from an older sgtune lacks some.
    pub fn load(p: &Path) -> Result<Sweep, ReadError> {
        let csv = rows::csv_path(p);
        let root = csv.parent().map(Path::to_path_buf).unwrap_or_default();
        let table = rows::read(&csv)?;
        let mut problems = Vec::new();
        let manifest = match provenance::read(&root) {
            Ok(m) => Some(m),
            Err(ReadError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                None
            }
            Err(e) => {
                problems.push(e.to_string());
                None
            }
        };
        let objective = super::plan_file::read_objective(&root);
        let mut effective = BTreeMap::new();
        if let Ok(entries) = std::fs::read_dir(root.join(RUNS)) {
            for e in entries.flatten().filter(|e| e.path().is_dir()) {
                let name = e.file_name().to_string_lossy().to_string();
                match super::effective::read(&e.path()) {
                    Ok(Some(f)) => {
                        effective.insert(name, f);
                    }
                    Ok(None) => {}
                    Err(e) => problems.push(e.to_string()),
                }
            }
        }
        let path = root.join(DECISION_JSON);
        let decision_json = match std::fs::read_to_string(&path) {
            Ok(t) => Some(t),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                problems.push(ReadError::io(&path, e).to_string());
                None
            }
        };
        let older_commands = older_commands(&root, &table.rows, manifest.as_ref());
        Ok(Sweep {
            root,
            table,
            manifest,
            objective,
            effective,
            decision_json,
            older_commands,
            problems,
        })
    }

    /// A folder with nothing read from it (one whose results.csv could not be read).
    pub fn empty(root: &Path) -> Sweep {
        Sweep {
            root: root.to_path_buf(),
            ..Default::default()
        }
    }

    /// The rows of results.csv.
    pub fn rows(&self) -> &[Row] {
        &self.table.rows
    }

    /// The swept keys (`param_<key>` columns, in order).
    pub fn param_keys(&self) -> Vec<String> {
        rows::param_keys(&self.table.header)
    }

    /// The folder's name (`<sweep>-<UTC timestamp>`), or "sweep" for a bare results.csv.
    pub fn name(&self) -> String {
        self.root
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_else(|| "sweep".into())
    }

    /// decision.json read as `D` (the decision's type, `tune::decision::Decision`); Ok(None)
    /// when the folder has none (an interrupted sweep), an error naming the file when this
    /// version cannot read it (hand-edited, or written by a version with other fields).
    pub fn decision<D: serde::de::DeserializeOwned>(&self) -> Result<Option<D>, ReadError> {
        let Some(text) = &self.decision_json else {
            return Ok(None);
        };
        serde_json::from_str(text)
            .map(Some)
            .map_err(|e| ReadError::bad(&self.root.join(DECISION_JSON), e))
    }
}

/// command.txt of each run in `rows` that `manifest` records no command for (its first
/// launch's folder, `<name>` or `<name>.r1`), by run name.
fn older_commands(
    root: &Path,
    rows: &[Row],
    manifest: Option<&Manifest>,
) -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    for r in rows {
        let name = r.run_name();
        let recorded = manifest.is_some_and(|m| {
            m.launches
                .values()
                .any(|l| l.run_name == name && !l.command.is_empty())
        });
        if recorded || found.contains_key(name) {
            continue;
        }
        let own = [name.to_string(), format!("{name}.r1")]
            .iter()
            .find_map(|d| {
                super::command::read(&super::layout::launch_dir(root, d))
                    .ok()
                    .flatten()
            });
        if let Some(c) = own {
            found.insert(name.to_string(), c);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder with only results.csv loads (an older sgtune's); the files it has are read
    /// once each; one that cannot be read is named, and the rest still load.
    #[test]
    fn a_folder_loads_with_what_it_has_and_names_what_it_cannot_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::write(
            root.join("results.csv"),
            "run_name,status,concurrency,repeat\na,ok,8,1\n",
        )
        .expect("write");
        let s = Sweep::load(root).expect("loads");
        assert_eq!(s.rows().len(), 1);
        assert_eq!(s.rows()[0].run_name(), "a");
        assert!(s.manifest.is_none() && s.objective.is_none() && s.effective.is_empty());
        assert!(s.problems.is_empty(), "{:?}", s.problems);
        assert!(matches!(s.decision::<serde_json::Value>(), Ok(None)));
        // The same folder named by its results.csv.
        let by_csv = Sweep::load(&root.join("results.csv")).expect("loads");
        assert_eq!(by_csv.root, root);

        std::fs::write(root.join("decision.json"), "{\"sweep\": \"s\"}").expect("write");
        std::fs::write(root.join("manifest.json"), "not json").expect("write");
        let s = Sweep::load(root).expect("loads");
        assert!(
            s.problems.iter().any(|p| p.contains("manifest.json")),
            "{:?}",
            s.problems
        );
        let d: Option<serde_json::Value> = s.decision().expect("reads");
        assert_eq!(
            d.and_then(|v| v["sweep"].as_str().map(String::from)),
            Some("s".into())
        );
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Needs {
            points: Vec<u8>,
        }
        let e = s
            .decision::<Needs>()
            .expect_err("missing field")
            .to_string();
        assert!(e.contains("decision.json"), "{e}");
    }

    /// A file that is there but cannot be read (here: a folder where the file should be) is a
    /// problem named, not an absent file; the decision set after loading is the one read back,
    /// and none clears it; an empty sweep keeps its folder.
    #[test]
    fn unreadable_files_are_named_and_the_decision_set_is_the_one_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::write(root.join("results.csv"), "run_name\n").expect("write");
        std::fs::create_dir(root.join("manifest.json")).expect("mkdir");
        std::fs::create_dir(root.join("decision.json")).expect("mkdir");
        let mut s = Sweep::load(root).expect("loads");
        for f in ["manifest.json", "decision.json"] {
            assert!(
                s.problems.iter().any(|p| p.contains(f)),
                "{f}: {:?}",
                s.problems
            );
        }
        assert!(matches!(s.decision::<serde_json::Value>(), Ok(None)));
        s.decision_json = Some(r#"{"sweep": "t"}"#.into());
        let d: Option<serde_json::Value> = s.decision().expect("reads");
        assert_eq!(d, Some(serde_json::json!({"sweep": "t"})));
        s.decision_json = None;
        assert!(matches!(s.decision::<serde_json::Value>(), Ok(None)));
        assert_eq!(Sweep::empty(root).root, root);
        assert!(Sweep::empty(root).rows().is_empty());
    }

    #[test]
    fn no_results_csv_is_an_error_naming_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let e = Sweep::load(dir.path()).expect_err("no rows").to_string();
        assert!(e.contains("results.csv"), "{e}");
    }
}
