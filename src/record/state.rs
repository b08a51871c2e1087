//! `state.json`: where a local sweep stands, written atomically by the runner at each event
//! (launch started, ready, load point started, stopping, row written) and read by `sgtune
//! status` from another shell, or after a crash. The rows themselves are in results.csv;
//! this file holds only what results.csv cannot say: who runs the sweep, what runs now, and
//! the expected end.

use super::outcome::SweepEnd;
use super::store::{self, StoreError};
use serde::{Deserialize, Serialize};
use std::path::Path;

pub const FILE: &str = "state.json";

/// What the runner is doing now: state.json's `phase`, spelled as [`StatePhase::as_str`] (the
/// serde names are the same words).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StatePhase {
    /// A launch is starting its server (and the session's first state, before any launch).
    #[default]
    Starting,
    /// The server answered; no load yet.
    Ready,
    /// A load point is running.
    Loading,
    /// The server is being stopped.
    Stopping,
    /// A launch ended; the next has not started.
    BetweenRuns,
    /// The sweep ended (`outcome` says how).
    Finished,
}

impl StatePhase {
    pub const ALL: [StatePhase; 6] = [
        StatePhase::Starting,
        StatePhase::Ready,
        StatePhase::Loading,
        StatePhase::Stopping,
        StatePhase::BetweenRuns,
        StatePhase::Finished,
    ];

    /// The word as state.json spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            StatePhase::Starting => "starting",
            StatePhase::Ready => "ready",
            StatePhase::Loading => "loading",
            StatePhase::Stopping => "stopping",
            StatePhase::BetweenRuns => "between_runs",
            StatePhase::Finished => "finished",
        }
    }
}

impl std::fmt::Display for StatePhase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SweepState {
    /// The sgtune process running the sweep.
    pub pid: u32,
    /// Its start time in clock ticks since boot (guards against a reused pid).
    #[serde(default)]
    pub pid_start: Option<u64>,
    pub host: String,
    /// When this session (a run or a resume) started, RFC 3339.
    pub started_at: String,
    pub updated_at: String,
    pub phase: StatePhase,
    /// The launch in progress (its folder under runs/).
    #[serde(default)]
    pub launch: Option<String>,
    /// Its position in the current round, 1-based, and the round's launches.
    #[serde(default)]
    pub launch_index: usize,
    #[serde(default)]
    pub round_launches: usize,
    /// Launches of the current round that have ended.
    #[serde(default)]
    pub round_done: usize,
    /// The load point in progress, in words ("concurrency 8").
    #[serde(default)]
    pub point: Option<String>,
    /// When the current phase began, RFC 3339.
    #[serde(default)]
    pub phase_since: Option<String>,
    /// Launches this session planned at its start (a search or `repeats: auto` may add more).
    #[serde(default)]
    pub planned_launches: usize,
    /// Launches this session has finished.
    #[serde(default)]
    pub launches_done: usize,
    /// The expected end of the sweep, RFC 3339, and how it was estimated.
    #[serde(default)]
    pub eta: Option<String>,
    #[serde(default)]
    pub eta_basis: Option<String>,
    /// The deadline this session runs against (`--deadline`, `--budget`), RFC 3339.
    #[serde(default)]
    pub deadline: Option<String>,
    /// What the deadline left unmeasured (outcome `deadline`): one line per launch.
    #[serde(default)]
    pub not_measured: Vec<String>,
    /// Set when the sweep ended: its outcome.
    #[serde(default)]
    pub outcome: Option<SweepEnd>,
    #[serde(default)]
    pub finished_at: Option<String>,
}

pub fn write(root: &Path, s: &SweepState) -> Result<(), StoreError> {
    store::write_json(&root.join(FILE), s)
}

/// The sweep ended at `now` with `outcome` (and, at a deadline, what it left unmeasured): say
/// so in state.json (when there is one).
pub fn finished(
    root: &Path,
    outcome: SweepEnd,
    not_measured: &[String],
    now: &str,
) -> Result<(), String> {
    let Some(mut s) = read(root)? else {
        return Ok(());
    };
    s.phase = StatePhase::Finished;
    s.phase_since = Some(now.to_string());
    s.outcome = Some(outcome);
    s.not_measured = not_measured.to_vec();
    s.finished_at = Some(now.to_string());
    s.updated_at = now.to_string();
    s.eta = None;
    s.eta_basis = None;
    write(root, &s).map_err(|e| e.to_string())
}

/// The folder's state.json; None when there is none (a sweep from before it, or Slurm's).
pub fn read(root: &Path) -> Result<Option<SweepState>, String> {
    let p = root.join(FILE);
    match std::fs::read_to_string(&p) {
        Ok(t) => serde_json::from_str(&t)
            .map(Some)
            .map_err(|e| format!("{} is not a sweep state ({e})", p.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", p.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_reads_back_as_written() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read(dir.path()), Ok(None));
        let s = SweepState {
            pid: 42,
            pid_start: Some(1234),
            host: "h".into(),
            started_at: "2026-12-03T10:00:00Z".into(),
            updated_at: "2026-12-03T10:05:00Z".into(),
            phase: StatePhase::Loading,
            outcome: Some(SweepEnd::Deadline),
            launch: Some("mfs0.9".into()),
            launch_index: 2,
            round_launches: 3,
            point: Some("concurrency 8".into()),
            not_measured: vec!["c: c8 r1".into()],
            ..Default::default()
        };
        write(dir.path(), &s).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read(dir.path()), Ok(Some(s)));
    }

    /// Each phase is written as serde writes it, the word state.json held when it was a string.
    #[test]
    fn each_phase_is_spelled_as_before() {
        let words: Vec<&str> = StatePhase::ALL.iter().map(|p| p.as_str()).collect();
        assert_eq!(
            words,
            [
                "starting",
                "ready",
                "loading",
                "stopping",
                "between_runs",
                "finished"
            ]
        );
        for p in StatePhase::ALL {
            let json = serde_json::to_string(&p).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(json, format!("\"{p}\""));
        }
    }

    /// A state.json from before the progress fields loads with their defaults; one that is not
    /// a state is an error naming the file.
    #[test]
    fn an_older_state_loads_and_a_bad_one_names_its_file() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let old = r#"{"pid": 7, "host": "h", "started_at": "t0", "updated_at": "t1", "phase": "starting"}"#;
        std::fs::write(dir.path().join(FILE), old).unwrap_or_else(|e| panic!("{e}"));
        let s = read(dir.path())
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("a state"));
        assert_eq!((s.pid, s.launch_index, s.outcome), (7, 0, None));
        assert_eq!(s.phase, StatePhase::Starting);
        std::fs::write(dir.path().join(FILE), "{\"pid\": \"x\"}").unwrap_or_else(|e| panic!("{e}"));
        let e = read(dir.path()).expect_err("not a state");
        assert!(e.contains(FILE), "{e}");
    }
}
