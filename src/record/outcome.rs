//! `outcome.json`: how a sweep ended (outcome, exit code, rows, winner), written once at its
//! end by `run::finish` before the `on_finish` hook, whose environment carries the same fields.

use super::ReadError;
use super::store::{self, StoreError};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The outcome file in the results folder.
pub const FILE: &str = "outcome.json";

/// How a sweep ended, in one word: outcome.json's and state.json's `outcome`, and the hook's
/// `SGTUNE_OUTCOME`, spelled as [`SweepEnd::as_str`] (the serde names are the same words).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SweepEnd {
    /// Exit 0.
    Done,
    /// Exit 1: some runs failed.
    RunsFailed,
    /// Exit 5: the sweep stopped on an error after its results folder existed.
    Error,
    /// Exit 3: stopped at `--deadline`/`--budget`, decided from what was measured.
    Deadline,
    /// Exit 130.
    Interrupted,
}

impl SweepEnd {
    pub const ALL: [SweepEnd; 5] = [
        SweepEnd::Done,
        SweepEnd::RunsFailed,
        SweepEnd::Error,
        SweepEnd::Deadline,
        SweepEnd::Interrupted,
    ];

    /// The word as the files and the hook's environment spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            SweepEnd::Done => "done",
            SweepEnd::RunsFailed => "runs_failed",
            SweepEnd::Error => "error",
            SweepEnd::Deadline => "deadline",
            SweepEnd::Interrupted => "interrupted",
        }
    }
}

impl std::fmt::Display for SweepEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a sweep ended, for the hook and for `outcome.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub outcome: SweepEnd,
    pub exit_code: i32,
    pub sweep: String,
    pub results_dir: String,
    pub rows: usize,
    pub rows_ok: usize,
    pub rows_failed: usize,
    /// The decision's winner (the same one at every load point decided), if any.
    pub winner: Option<String>,
    /// The winner's exact launch command.
    pub winner_command: Option<String>,
    /// One line: outcome, rows, winner.
    pub summary: String,
    /// What a deadline left unmeasured (outcome `deadline`), one line per launch; `sgtune
    /// resume` measures it.
    #[serde(default)]
    pub not_measured: Vec<String>,
    /// The error that stopped the sweep (outcome `error`).
    pub error: Option<String>,
    pub finished_at: String,
}

pub fn write(root: &Path, o: &Outcome) -> Result<(), StoreError> {
    store::write_json(&root.join(FILE), o)
}

/// The folder's outcome.json; None when there is none (a sweep still running, or killed).
pub fn read(root: &Path) -> Result<Option<Outcome>, ReadError> {
    store::read_json(&root.join(FILE), "a sweep outcome")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outcome_reads_back_as_written() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read(dir.path()).unwrap_or_else(|e| panic!("{e}")), None);
        let o = Outcome {
            outcome: SweepEnd::Deadline,
            exit_code: 3,
            sweep: "kv".into(),
            results_dir: "/r/kv".into(),
            rows: 4,
            rows_ok: 3,
            rows_failed: 1,
            winner: Some("mfs0.9".into()),
            winner_command: Some("python -m sglang.launch_server".into()),
            summary: "deadline: 4 rows".into(),
            not_measured: vec!["b: c8 r1".into()],
            error: None,
            finished_at: "2026-12-03T10:00:00Z".into(),
        };
        write(dir.path(), &o).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read(dir.path()).unwrap_or_else(|e| panic!("{e}")), Some(o));
    }

    /// Each word is written as serde writes it, so outcome.json, state.json and the hook's
    /// environment spell it the same way (and as they did when the outcome was a string).
    #[test]
    fn each_outcome_is_spelled_as_before() {
        let words: Vec<&str> = SweepEnd::ALL.iter().map(|e| e.as_str()).collect();
        assert_eq!(
            words,
            ["done", "runs_failed", "error", "deadline", "interrupted"]
        );
        for e in SweepEnd::ALL {
            let json = serde_json::to_string(&e).unwrap_or_else(|x| panic!("{x}"));
            assert_eq!(json, format!("\"{e}\""));
            let back: SweepEnd = serde_json::from_str(&json).unwrap_or_else(|x| panic!("{x}"));
            assert_eq!(back, e);
        }
    }

    /// The fixture folder's outcome.json (an older sgtune's) loads; a broken one is an error
    /// naming the file.
    #[test]
    fn an_older_outcome_loads_and_a_bad_one_names_its_file() {
        let fixture =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/results/cpu-demo-rerun");
        let o = read(&fixture).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(o.map(|o| o.outcome), Some(SweepEnd::RunsFailed));
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join(FILE), "{\"outcome\": 3}").unwrap_or_else(|e| panic!("{e}"));
        let e = read(dir.path()).expect_err("not an outcome");
        assert!(e.to_string().contains(FILE), "{e}");
    }
}
