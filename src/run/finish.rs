//! The end of a sweep, told: `outcome.json` in the results folder, then the `on_finish` hook
//! (`sh -c`), once, however the sweep ended. The rows are on disk before either, and the
//! hook's failure (non-zero, not found, still running at its timeout) is a warning: it never
//! loses a row and never changes the exit code.

use std::path::Path;
use std::time::Duration;

pub use crate::record::outcome::{FILE, Outcome, SweepEnd};
/// The hook's stdout and stderr, appended, in the results folder.
pub const LOG: &str = crate::record::store::ON_FINISH_LOG;

/// How sgtune exits. Documented in `sgtune --help` and the README.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// Every run (or every file, every load point) was fine.
    Ok,
    /// At least one run failed (its row says why), or nothing succeeded.
    RunsFailed,
    /// Bad input or usage (a spec error, an unreadable results folder, a resume refused):
    /// the user's to fix; nothing was launched, or nothing was judged (2).
    BadInput,
    /// The results folder (or a file in it) could not be written: a full disk, permissions.
    /// Every row written before is kept (5).
    Unwritable,
    /// The server's program (`server.command`'s first word) is not found: nothing was
    /// launched (6).
    ProgramNotFound,
    /// Stopped by Ctrl-C / SIGTERM / SIGHUP; every finished row is kept.
    Interrupted,
    /// Stopped at `--deadline` / `--budget`: decided from what was measured, the rest is
    /// left for `sgtune resume` (3).
    Deadline,
    /// `sgtune compare --fail-on`: a gated change was found (4).
    Gated,
}

/// The exit codes as `sgtune --help` lists them (and the README's usage, in other words);
/// a unit test holds this list, the enum and the README together.
pub const EXIT_CODES_HELP: &str = "Exit codes:
  0    every run ok (compare: no gate tripped)
  1    some runs failed: their rows in results.csv say why (load: a point had no success)
  2    bad input or usage: a spec error, a resume refused, an unreadable file; nothing launched
  3    stopped at --deadline/--budget: decided from what was measured; `sgtune resume` goes on
  4    compare --fail-on: a gated change was found
  5    the results folder could not be written (disk full, permissions); written rows are kept
  6    the server's program (server.command) was not found; nothing launched
  130  interrupted (Ctrl-C, SIGTERM, SIGHUP); every finished row is kept";

impl ExitCode {
    pub const ALL: [ExitCode; 8] = [
        ExitCode::Ok,
        ExitCode::RunsFailed,
        ExitCode::BadInput,
        ExitCode::Deadline,
        ExitCode::Gated,
        ExitCode::Unwritable,
        ExitCode::ProgramNotFound,
        ExitCode::Interrupted,
    ];

    pub fn code(self) -> i32 {
        match self {
            ExitCode::Ok => 0,
            ExitCode::RunsFailed => 1,
            ExitCode::BadInput => 2,
            ExitCode::Interrupted => crate::run::signals::INTERRUPTED_STATUS,
            ExitCode::Deadline => 3,
            ExitCode::Gated => 4,
            ExitCode::Unwritable => 5,
            ExitCode::ProgramNotFound => 6,
        }
    }
}

impl Outcome {
    /// The hook's environment: every field it may need, as text (empty when unknown).
    pub fn env(&self, outcome_file: &Path) -> Vec<(&'static str, String)> {
        vec![
            ("SGTUNE_OUTCOME", self.outcome.as_str().to_string()),
            ("SGTUNE_EXIT_CODE", self.exit_code.to_string()),
            ("SGTUNE_SWEEP", self.sweep.clone()),
            ("SGTUNE_RESULTS_DIR", self.results_dir.clone()),
            ("SGTUNE_WINNER", self.winner.clone().unwrap_or_default()),
            (
                "SGTUNE_WINNER_COMMAND",
                self.winner_command.clone().unwrap_or_default(),
            ),
            ("SGTUNE_SUMMARY", self.summary.clone()),
            ("SGTUNE_NOT_MEASURED", self.not_measured.join("; ")),
            ("SGTUNE_OUTCOME_FILE", outcome_file.display().to_string()),
        ]
    }
}

/// The hook to run: the command and how long it may take.
#[derive(Debug, Clone)]
pub struct Hook {
    pub command: String,
    pub timeout: Duration,
}

/// Run the hook once, `outcome` in its environment (outcome.json is written before it, by
/// `run::conclude`). The warning to say when it failed; nothing here fails the sweep.
pub async fn hook(root: &Path, outcome: &Outcome, hook: &Hook) -> Option<String> {
    let file = root.join(FILE);
    run_hook(root, hook, &outcome.env(&file))
        .await
        .err()
        .map(|why| {
            format!(
                "the on_finish hook {why} (its output: {}); the results are complete",
                root.join(LOG).display()
            )
        })
}

/// `sh -c CMD` in its own process group, output appended to `on_finish.log`; its group is
/// killed when it outlives the timeout.
async fn run_hook(root: &Path, hook: &Hook, env: &[(&'static str, String)]) -> Result<(), String> {
    let log_path = root.join(LOG);
    let open = || {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
    };
    let (out, err) = match (open(), open()) {
        (Ok(o), Ok(e)) => (std::process::Stdio::from(o), std::process::Stdio::from(e)),
        // Without its log the hook still runs: the person waits for its message, not the log.
        _ => (std::process::Stdio::null(), std::process::Stdio::null()),
    };
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c")
        .arg(&hook.command)
        .stdin(std::process::Stdio::null())
        .stdout(out)
        .stderr(err)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("could not start (`sh -c`: {e})"))?;
    let pgid = child.id().map_or(0, |p| p as i32);
    match tokio::time::timeout(hook.timeout, child.wait()).await {
        Ok(Ok(st)) if st.success() => Ok(()),
        Ok(Ok(st)) => Err(format!(
            "`{}` exited with {}",
            hook.command,
            crate::server::failure::describe_exit(&st)
        )),
        Ok(Err(e)) => Err(format!("`{}` could not be waited for: {e}", hook.command)),
        Err(_) => {
            if pgid > 0 {
                crate::server::reap::signal_group(pgid, libc::SIGKILL);
            }
            let _ = child.wait().await;
            Err(format!(
                "`{}` was still running after {} s (on_finish.timeout_s) and was killed",
                hook.command,
                hook.timeout.as_secs()
            ))
        }
    }
}

#[cfg(test)]
mod exit_code_tests {
    use super::*;

    /// Each code is distinct, listed in `--help` in order, and in the README's usage.
    #[test]
    fn every_exit_code_is_distinct_and_documented() {
        let codes: Vec<i32> = ExitCode::ALL.iter().map(|c| c.code()).collect();
        let mut sorted = codes.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted, codes, "distinct and in increasing order");
        let listed: Vec<i32> = EXIT_CODES_HELP
            .lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().next()?.parse().ok())
            .collect();
        assert_eq!(listed, codes);
        let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
            .expect("README.md");
        for c in codes {
            assert!(
                readme.contains(&format!("`{c}`")),
                "README names exit code {c}"
            );
        }
    }
}
