//! The results folder's names: spelled here and only here in src/ (docs/columns.md lists them;
//! tests keep the literal names, since they check the documented layout). `store` re-exports
//! them, so callers write `store::RESULTS_CSV`; this module uses nothing, so every other
//! module of record/ may use it without a circle.

use std::path::{Path, PathBuf};

// The files with a type of their own name themselves beside it: state::FILE,
// provenance::FILE, outcome::FILE, preflight::FILE, summary::path, effective::FILE,
// quality::FILE.
pub const RESULTS_CSV: &str = "results.csv";
pub const RESULTS_MD: &str = "results.md";
/// Rows a resume superseded (interrupted, or failed ones retried), kept as evidence.
pub const SUPERSEDED_CSV: &str = "results.superseded.csv";
pub const RUNS: &str = "runs";
/// Held by the one process writing the folder (`record::lock`).
pub const LOCK_FILE: &str = ".sgtune.lock";
pub const SPEC_YAML: &str = "spec.yaml";
pub const PLAN_JSON: &str = "plan.json";
pub const DECISION_MD: &str = "decision.md";
pub const DECISION_JSON: &str = "decision.json";
pub const REPORT_HTML: &str = "report.html";
/// The `on_finish` hook's output, appended.
pub const ON_FINISH_LOG: &str = "on_finish.log";
/// `shared_prefix.working_set`'s sizing basis.
pub const WORKING_SET_JSON: &str = "working_set.json";
// In each launch folder, runs/<launch>/:
pub const SERVER_LOG: &str = "server.log";
pub const COMMAND_TXT: &str = "command.txt";
pub const CONFIG_JSON: &str = "config.json";
/// GET /server_info right after ready, as the server answered it (the server's JSON, untyped).
pub const SERVER_INFO_JSON: &str = "server_info.json";
pub const METRICS_CSV: &str = "metrics.csv";

/// `runs/` of a results folder.
pub fn runs_dir(root: &Path) -> PathBuf {
    root.join(RUNS)
}

/// `runs/<launch>/` of a results folder.
pub fn launch_dir(root: &Path, launch: &str) -> PathBuf {
    root.join(RUNS).join(launch)
}

/// A measurement's requests file: `requests<suffix>.csv` (the suffix summary*.json gets).
pub fn requests_csv(suffix: &str) -> String {
    format!("requests{suffix}.csv")
}
/// A measurement's /metrics scrapes: `metrics<suffix>.csv` (the suffix requests.csv gets).
pub fn metrics_csv(suffix: &str) -> String {
    format!("metrics{suffix}.csv")
}
// Slurm's files (`--executor slurm`, record::slurm reads and writes each):
/// The folder of a Slurm submission's own files: `slurm/`.
pub const SLURM: &str = "slurm";
/// In `slurm/`: the token each task checks it sees the folder submitted from.
pub const SLURM_MARKER: &str = "marker";
/// In `slurm/`: every submission (array job ids, their launches, the merge job).
pub const SLURM_SUBMISSIONS: &str = "submissions.json";
/// In `slurm/`: the rows the folder already had at submission (a resume keeps them).
pub const SLURM_BASE_CSV: &str = "base.csv";
/// In a task's launch folder: its rows.
pub const TASK_ROWS_CSV: &str = "rows.csv";
/// In a task's launch folder: its LaunchRecord (provenance).
pub const TASK_LAUNCH_JSON: &str = "launch.json";

/// `slurm/` of a results folder.
pub fn slurm_dir(root: &Path) -> PathBuf {
    root.join(SLURM)
}
