//! Slurm's files in a results folder (`--executor slurm`), each read and written here and only
//! here: `slurm/marker`, `slurm/submissions.json`, `slurm/base.csv`, and in each task's launch
//! folder its `rows.csv` and `launch.json` (names in `layout`). `run::slurm` submits, runs a
//! task and merges through these.

use super::ReadError;
use super::RunRecord;
use super::layout::{
    SLURM_BASE_CSV, SLURM_MARKER, SLURM_SUBMISSIONS, TASK_LAUNCH_JSON, TASK_ROWS_CSV, slurm_dir,
};
use super::provenance::LaunchRecord;
use super::rows::{self, Table};
use super::store::{self, ResultsDir, StoreError};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// One job array: its id and its tasks' launches, by array index.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ArrayJob {
    pub job_id: String,
    /// `--gres=gpu:N` of every task (0: none).
    pub gpus: u64,
    pub launches: Vec<String>,
}

/// One `sgtune run --executor slurm` (or resume) of a folder.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Submission {
    pub at: String,
    pub marker: String,
    pub arrays: Vec<ArrayJob>,
    pub merge_job: Option<String>,
    #[serde(default)]
    pub cancelled_at: Option<String>,
    /// A guided tune's wave (`--executor slurm` with `tune:`): one batch of the path, submitted
    /// by the tune's driver, which merges it itself (no merge job).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wave: Option<TuneWave>,
}

/// One wave of a tune on Slurm: which batch of the path it is, each launch's step number, and
/// whether the driver merged it (a resume that finds it unmerged waits for its tasks, never
/// resubmits them).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TuneWave {
    /// 1 for the tune's first wave in this folder, counting every wave submitted.
    pub index: usize,
    /// launch folder name -> the tune step (1-based) it measures.
    pub steps: std::collections::BTreeMap<String, usize>,
    #[serde(default)]
    pub merged_at: Option<String>,
}

impl Submission {
    /// (array job id, index) of a launch's task.
    pub fn task_of(&self, launch: &str) -> Option<(String, usize)> {
        self.arrays.iter().find_map(|a| {
            a.launches
                .iter()
                .position(|l| l == launch)
                .map(|i| (a.job_id.clone(), i))
        })
    }

    pub fn launches(&self) -> impl Iterator<Item = &String> {
        self.arrays.iter().flat_map(|a| a.launches.iter())
    }
}

/// `slurm/marker`, named for a task's error message.
pub fn marker_path(root: &Path) -> PathBuf {
    slurm_dir(root).join(SLURM_MARKER)
}

/// `slurm/submissions.json`, whose presence says the folder was submitted to Slurm.
pub fn submissions_path(root: &Path) -> PathBuf {
    slurm_dir(root).join(SLURM_SUBMISSIONS)
}

pub fn write_marker(root: &Path, marker: &str) -> Result<(), StoreError> {
    store::write_atomic(&marker_path(root), marker.as_bytes())
}

/// The marker as written, trimmed; the I/O error as is (the task's message says which node
/// could not read it, and why that matters).
pub fn read_marker(root: &Path) -> std::io::Result<String> {
    std::fs::read_to_string(marker_path(root)).map(|t| t.trim().to_string())
}

/// Every submission of the folder, oldest first; none when it was never submitted.
pub fn read_submissions(root: &Path) -> Result<Vec<Submission>, ReadError> {
    store::read_json(&submissions_path(root), "a submissions file").map(Option::unwrap_or_default)
}

pub fn write_submissions(root: &Path, subs: &[Submission]) -> Result<(), StoreError> {
    store::write_json(&submissions_path(root), &subs)
}

/// `slurm/base.csv`: results.csv's bytes at submission, kept as they were.
pub fn write_base(root: &Path, results_csv: &[u8]) -> Result<(), StoreError> {
    store::write_atomic(&slurm_dir(root).join(SLURM_BASE_CSV), results_csv)
}

pub fn read_base(root: &Path) -> Result<Table, ReadError> {
    rows::read(&slurm_dir(root).join(SLURM_BASE_CSV))
}

/// A task's rows, in its own launch folder (no two nodes append to one file).
pub fn write_task_rows(
    results: &ResultsDir,
    launch_dir: &Path,
    records: &[RunRecord],
) -> Result<(), StoreError> {
    results.write_rows(&launch_dir.join(TASK_ROWS_CSV), records)
}

pub fn read_task_rows(launch_dir: &Path) -> Result<Table, ReadError> {
    rows::read(&launch_dir.join(TASK_ROWS_CSV))
}

/// A task's provenance, which the merge puts into manifest.json.
pub fn write_launch_record(launch_dir: &Path, rec: &LaunchRecord) -> Result<(), StoreError> {
    store::write_json(&launch_dir.join(TASK_LAUNCH_JSON), rec)
}

/// None when the task wrote none (it died first).
pub fn read_launch_record(launch_dir: &Path) -> Result<Option<LaunchRecord>, ReadError> {
    store::read_json(&launch_dir.join(TASK_LAUNCH_JSON), "a launch record")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::plan::engine::Engine;
    use crate::plan::flags::ParamValue;
    use crate::record::RunStatus;

    fn folder() -> tempfile::TempDir {
        let tmp = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(slurm_dir(tmp.path())).expect("mkdir");
        tmp
    }

    #[test]
    fn the_marker_reads_back_as_written() {
        let tmp = folder();
        let e = read_marker(tmp.path()).expect_err("none yet");
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
        write_marker(tmp.path(), "node-1-42-99").expect("write");
        assert_eq!(read_marker(tmp.path()).expect("read"), "node-1-42-99");
        assert_eq!(marker_path(tmp.path()), tmp.path().join("slurm/marker"));
    }

    #[test]
    fn submissions_read_back_as_written_and_a_bad_file_names_itself() {
        let tmp = folder();
        assert_eq!(read_submissions(tmp.path()).expect("none"), Vec::new());
        let subs = vec![Submission {
            at: "2026-12-01T00:00:00Z".into(),
            marker: "m".into(),
            arrays: vec![ArrayJob {
                job_id: "12".into(),
                gpus: 2,
                launches: vec!["a".into(), "b".into()],
            }],
            merge_job: Some("13".into()),
            cancelled_at: Some("2026-12-01T00:05:00Z".into()),
            wave: Some(TuneWave {
                index: 2,
                steps: [("a".to_string(), 3), ("b".to_string(), 4)].into(),
                merged_at: None,
            }),
        }];
        write_submissions(tmp.path(), &subs).expect("write");
        assert_eq!(read_submissions(tmp.path()).expect("read"), subs);
        std::fs::write(submissions_path(tmp.path()), "not json").expect("write");
        let e = read_submissions(tmp.path()).expect_err("bad").to_string();
        assert!(
            e.contains("slurm/submissions.json: not a submissions file"),
            "{e}"
        );
    }

    #[test]
    fn base_csv_keeps_the_bytes_it_was_given() {
        let tmp = folder();
        assert!(read_base(tmp.path()).is_err(), "none yet");
        write_base(tmp.path(), b"run_name,status\na,ok\nb,failed\n").expect("write");
        let t = read_base(tmp.path()).expect("read");
        assert_eq!(t.header, ["run_name", "status"]);
        let names: Vec<&str> = t.rows.iter().map(|r| r.run_name()).collect();
        assert_eq!(names, ["a", "b"]);
    }

    fn record(name: &str, status: RunStatus) -> RunRecord {
        let params = vec![("max_total_tokens".into(), Some(ParamValue::Int(300)))];
        let point = crate::plan::spec::LoadPoint {
            concurrency: 4,
            request_rate: None,
        };
        RunRecord {
            status,
            started_at: "t0".into(),
            finished_at: "t1".into(),
            ..RunRecord::new(name, format!("id-{name}"), Engine::Sglang, params, point, 2)
        }
    }

    #[test]
    fn a_tasks_rows_read_back_as_written() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let keys = vec!["max_total_tokens".to_string()];
        let results = ResultsDir::open(tmp.path(), &keys);
        let dir = results.run_dir("a").expect("runs/a");
        assert!(read_task_rows(&dir).is_err(), "none yet");
        let recs = [
            record("a", RunStatus::Ok),
            record("a", RunStatus::Interrupted),
        ];
        write_task_rows(&results, &dir, &recs).expect("write");
        let t = read_task_rows(&dir).expect("read");
        assert_eq!(t.header, results.header());
        let got: Vec<(&str, &str, &str)> = t
            .rows
            .iter()
            .map(|r| {
                (
                    r.run_name(),
                    r.text("status"),
                    r.text("param_max_total_tokens"),
                )
            })
            .collect();
        assert_eq!(got, [("a", "ok", "300"), ("a", "interrupted", "300")]);
    }

    #[test]
    fn a_tasks_launch_record_reads_back_as_written() {
        let tmp = tempfile::tempdir().expect("tempdir");
        assert!(read_launch_record(tmp.path()).expect("none").is_none());
        let rec = LaunchRecord {
            run_name: "a".into(),
            run_id: "id-a".into(),
            command: "python3 -m sglang.launch_server".into(),
            env: vec![("CUDA_VISIBLE_DEVICES".into(), "1".into())],
            effective: Some(serde_json::json!({"max_total_tokens": 300})),
            started_at: "t0".into(),
            finished_at: "t1".into(),
        };
        write_launch_record(tmp.path(), &rec).expect("write");
        let back = read_launch_record(tmp.path()).expect("read").expect("some");
        assert_eq!(
            serde_json::to_value(&back).expect("json"),
            serde_json::to_value(&rec).expect("json")
        );
        std::fs::write(tmp.path().join(TASK_LAUNCH_JSON), "[]").expect("write");
        assert!(
            read_launch_record(tmp.path()).is_err(),
            "not a launch record"
        );
    }
}
