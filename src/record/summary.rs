//! `runs/<launch>/summary[.suffix].json`: everything recorded about one measurement (its row,
//! the command, how the server started and stopped, the warm-up counts, the server.log window).
//! Written once per measurement by `run::launch`, read back by the report (`run::report`).
//! The suffix (`.c8`, `.rate2.5`, `.r2`) is the one requests*.csv gets; see docs/columns.md.

use super::ReadError;
use super::RunRecord;
use super::store::{self, StoreError};
use crate::server::command::LaunchCommand;
use crate::server::failure::StartFailure;
use crate::server::supervise::StopOutcome;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// One measurement's summary file. Every field but the row and the command may be absent in
/// a file from an older sgtune (defaults: none, 0, false, empty).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub record: RunRecord,
    pub command: LaunchCommand,
    /// Why the server did not start, with the log lines it rests on.
    #[serde(default)]
    pub start_failure: Option<StartFailure>,
    /// How the server stopped (terminated / killed, its group gone, the port free).
    #[serde(default)]
    pub stop: Option<StopOutcome>,
    #[serde(default)]
    pub warmup_ok: u64,
    #[serde(default)]
    pub warmup_failed: u64,
    #[serde(default)]
    pub load_stopped_early: bool,
    /// server.log's first and last line of the measured window.
    #[serde(default)]
    pub log_window: Option<(usize, usize)>,
    /// The launch's notes (a file that could not be written, a slow stop).
    #[serde(default)]
    pub notes: Vec<String>,
}

/// `summary<suffix>.json` in a launch folder.
pub fn path(run_dir: &Path, suffix: &str) -> PathBuf {
    run_dir.join(format!("summary{suffix}.json"))
}

/// The suffix of a summary file's name (`summary.c8.json` → `.c8`); None for other files.
pub fn suffix_of(file_name: &str) -> Option<&str> {
    file_name
        .strip_prefix("summary")
        .and_then(|s| s.strip_suffix(".json"))
}

pub fn write(run_dir: &Path, suffix: &str, s: &Summary) -> Result<(), StoreError> {
    store::write_json(&path(run_dir, suffix), s)
}

/// One summary file; an error names the file.
pub fn read(path: &Path) -> Result<Summary, ReadError> {
    let bytes = std::fs::read(path).map_err(|e| ReadError::io(path, e))?;
    serde_json::from_slice(&bytes)
        .map_err(|e| ReadError::bad(path, format!("not a measurement summary ({e})")))
}

/// Every summary file of a launch folder, by suffix (in name order), each read or its error.
/// A folder that cannot be listed has none.
pub fn read_all(run_dir: &Path) -> Vec<(String, Result<Summary, ReadError>)> {
    let mut names: Vec<(String, PathBuf)> = std::fs::read_dir(run_dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            suffix_of(&name).map(|s| (s.to_string(), e.path()))
        })
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|(sfx, p)| {
            let s = read(&p);
            (sfx, s)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Phase, RunStatus};
    use crate::server::failure::FailureKind;
    use crate::server::supervise::StopHow;

    fn sample() -> Summary {
        Summary {
            record: RunRecord {
                status: RunStatus::Failed,
                failure_kind: Some(FailureKind::StartupError),
                failure_message: Some("no AMX".into()),
                phase: Phase::Probe,
                probe: Some(crate::record::ProbeResult::Uncertain),
                client: Some(crate::observe::client::ClientSummary {
                    completed: 40,
                    output_tok_s: Some(123.5),
                    ..Default::default()
                }),
                time_to_ready_s: Some(12.25),
                notes: vec!["slow stop".into()],
                started_at: "2026-12-03T10:00:00Z".into(),
                finished_at: "2026-12-03T10:01:00Z".into(),
                ..RunRecord::new(
                    "mtt2048",
                    "abc123",
                    crate::plan::engine::Engine::Vllm,
                    vec![(
                        "max_total_tokens".into(),
                        Some(crate::plan::flags::ParamValue::Int(2048)),
                    )],
                    crate::plan::spec::LoadPoint {
                        concurrency: 8,
                        request_rate: Some(2.5),
                    },
                    2,
                )
            },
            command: LaunchCommand {
                program: "python3".into(),
                args: vec!["-m".into(), "sglang.launch_server".into()],
                env: vec![("CUDA_VISIBLE_DEVICES".into(), "0".into())],
            },
            start_failure: Some(StartFailure {
                kind: FailureKind::StartupError,
                message: "ValueError".into(),
                evidence: vec!["line".into()],
            }),
            stop: Some(StopOutcome {
                how: StopHow::Terminated,
                secs: 1.5,
                group_left: false,
                port_free: true,
                exit: Some("exit code 0".into()),
            }),
            warmup_ok: 3,
            warmup_failed: 1,
            load_stopped_early: true,
            log_window: Some((76, 223)),
            notes: vec!["a note".into()],
        }
    }

    #[test]
    fn a_summary_reads_back_as_written() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let s = sample();
        write(dir.path(), ".c8.r2", &s).unwrap_or_else(|e| panic!("{e}"));
        assert!(dir.path().join("summary.c8.r2.json").is_file());
        let back = read(&path(dir.path(), ".c8.r2")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, s);
        let all = read_all(dir.path());
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].0, ".c8.r2");
    }

    /// A summary from before the engine, phase, probe and stop fields still loads, with their
    /// defaults; a file that is not a summary is an error naming it.
    #[test]
    fn an_older_summary_loads_and_a_bad_one_names_its_file() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let old = serde_json::json!({
            "record": {"run_name": "a", "run_id": "x", "status": "ok", "failure_kind": null,
                "failure_message": null, "params": [["k", 1]], "concurrency": 4,
                "request_rate": null, "repeat": 1, "client": null, "server": null,
                "verdict": null, "time_to_ready_s": 3.0, "metrics": null,
                "started_at": "t0", "finished_at": "t1"},
            "command": {"program": "p", "args": [], "env": []},
            "log_window": [1, 9]
        });
        std::fs::write(dir.path().join("summary.json"), old.to_string())
            .unwrap_or_else(|e| panic!("{e}"));
        let s = read(&path(dir.path(), "")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.record.phase, Phase::Measure);
        assert_eq!(s.record.engine, crate::plan::engine::Engine::Sglang);
        assert_eq!(s.log_window, Some((1, 9)));
        assert_eq!(s.stop, None);
        assert_eq!(s.warmup_ok, 0);
        std::fs::write(dir.path().join("summary.c2.json"), "{\"record\": 1}")
            .unwrap_or_else(|e| panic!("{e}"));
        let e = read(&path(dir.path(), ".c2")).expect_err("not a summary");
        assert!(e.to_string().contains("summary.c2.json"), "{e}");
    }

    /// The summaries in tests/fixtures (folders written by earlier versions) all load.
    #[test]
    fn the_fixture_summaries_load() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/results");
        let mut n = 0;
        for sweep in std::fs::read_dir(&root).into_iter().flatten().flatten() {
            for launch in std::fs::read_dir(sweep.path().join("runs"))
                .into_iter()
                .flatten()
                .flatten()
            {
                for (sfx, s) in read_all(&launch.path()) {
                    let s = s.unwrap_or_else(|e| panic!("{sfx}: {e}"));
                    assert_eq!(s.record.run_name, launch.file_name().to_string_lossy());
                    n += 1;
                }
            }
        }
        assert!(n > 0, "no fixture summary found under {}", root.display());
    }
}
