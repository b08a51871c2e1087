//! `preflight.json`: what the memory pre-flight found (the knob's value, the next step up and
//! how it failed, every attempt), written by `run::tuning` when the pre-flight ends and read
//! back through the same type. The search itself is `tune::preflight`; its data lives here so
//! the results folder's files are all typed in one stage.

use super::ProbeResult;
use super::ReadError;
use super::rows::Row;
use super::store::{self, StoreError};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The file in the results folder.
pub const FILE: &str = "preflight.json";

/// One attempt as the search sees it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    pub value: f64,
    pub survived: bool,
}

impl Attempt {
    /// A recorded `preflight` row (its knob's value is in `param_<knob>`).
    pub fn of_row(r: &Row, knob: &str) -> Option<Attempt> {
        Some(Attempt {
            value: r.metric(&super::rows::Col::param(knob))?,
            survived: r.probe() == Some(ProbeResult::Pass),
        })
    }
}

/// What the pre-flight found, for preflight.json and the decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub knob: String,
    pub found: Option<f64>,
    /// The lowest value above `found` that was tried and failed, and how.
    pub next_up: Option<f64>,
    pub next_up_failure: Option<String>,
    pub attempts: Vec<Attempt>,
    /// Attempts allowed (search.preflight.max_attempts), and whether the search ran out.
    #[serde(default)]
    pub max_attempts: u64,
    #[serde(default)]
    pub interrupted: bool,
}

pub fn write(root: &Path, o: &Outcome) -> Result<(), StoreError> {
    store::write_json(&root.join(FILE), o)
}

/// The folder's preflight.json; None when the sweep ran no pre-flight.
pub fn read(root: &Path) -> Result<Option<Outcome>, ReadError> {
    store::read_json(&root.join(FILE), "a pre-flight outcome")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_preflight_outcome_reads_back_as_written() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read(dir.path()).unwrap_or_else(|e| panic!("{e}")), None);
        let o = Outcome {
            knob: "mem_fraction_static".into(),
            found: Some(0.85),
            next_up: Some(0.9),
            next_up_failure: Some("startup_error: out of memory".into()),
            attempts: vec![
                Attempt {
                    value: 0.9,
                    survived: false,
                },
                Attempt {
                    value: 0.85,
                    survived: true,
                },
            ],
            max_attempts: 6,
            interrupted: false,
        };
        write(dir.path(), &o).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read(dir.path()).unwrap_or_else(|e| panic!("{e}")), Some(o));
    }

    /// A file without the later fields loads with their defaults; one that is not an outcome
    /// is an error naming the file.
    #[test]
    fn an_older_preflight_loads_and_a_bad_one_names_its_file() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let old = r#"{"knob": "k", "found": 0.8, "next_up": null, "next_up_failure": null,
            "attempts": [{"value": 0.8, "survived": true}]}"#;
        std::fs::write(dir.path().join(FILE), old).unwrap_or_else(|e| panic!("{e}"));
        let o = read(dir.path())
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("an outcome"));
        assert_eq!(
            (o.found, o.max_attempts, o.interrupted),
            (Some(0.8), 0, false)
        );
        std::fs::write(dir.path().join(FILE), "{\"knob\": 1}").unwrap_or_else(|e| panic!("{e}"));
        let e = read(dir.path()).expect_err("not an outcome");
        assert!(e.to_string().contains(FILE), "{e}");
    }
}
