//! The states Slurm gives a job (`PENDING`, `RUNNING`, `COMPLETED`, `FAILED`, `CANCELLED`,
//! `TIMEOUT`, `OUT_OF_MEMORY`, `NODE_FAIL`, `PREEMPTED`, ...) as one enum parsed from the text
//! squeue, sacct and jobcomp print, and what each means for the sweep: how `sgtune status` shows
//! it, whether the task may still write its rows, and the status of the rows a task that left
//! none gets.

use crate::record::RunStatus;
use std::collections::HashMap;
use std::fmt;

/// A task's Slurm state, as squeue, sacct or jobcomp name it (`PENDING`, `RUNNING`,
/// `COMPLETED`, `FAILED`, `CANCELLED`, `TIMEOUT`, `NODE_FAIL`, ...).
pub type States = HashMap<(String, usize), SlurmState>;

/// Every job state Slurm names (squeue --help, sacct's JOB STATE CODES), plus our `UNKNOWN`,
/// and any other text kept as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlurmState {
    Pending,
    Requeued,
    RequeueHold,
    RequeueFed,
    ResvDelHold,
    Suspended,
    Running,
    Configuring,
    Completing,
    Resizing,
    Signaling,
    StageOut,
    Stopped,
    Cancelled,
    Completed,
    NodeFail,
    Preempted,
    BootFail,
    Failed,
    Timeout,
    Deadline,
    OutOfMemory,
    SpecialExit,
    Revoked,
    /// Ours: no tool knew the task (or Slurm's own `UNKNOWN`).
    Unknown,
    /// A state this list does not name, as Slurm wrote it.
    Other(String),
}

use SlurmState::*;

impl SlurmState {
    /// The state Slurm's text names (exactly, in capitals); any other text is kept as `Other`.
    pub fn parse(text: &str) -> SlurmState {
        match text {
            "PENDING" => Pending,
            "REQUEUED" => Requeued,
            "REQUEUE_HOLD" => RequeueHold,
            "REQUEUE_FED" => RequeueFed,
            "RESV_DEL_HOLD" => ResvDelHold,
            "SUSPENDED" => Suspended,
            "RUNNING" => Running,
            "CONFIGURING" => Configuring,
            "COMPLETING" => Completing,
            "RESIZING" => Resizing,
            "SIGNALING" => Signaling,
            "STAGE_OUT" => StageOut,
            "STOPPED" => Stopped,
            "CANCELLED" => Cancelled,
            "COMPLETED" => Completed,
            "NODE_FAIL" => NodeFail,
            "PREEMPTED" => Preempted,
            "BOOT_FAIL" => BootFail,
            "FAILED" => Failed,
            "TIMEOUT" => Timeout,
            "DEADLINE" => Deadline,
            "OUT_OF_MEMORY" => OutOfMemory,
            "SPECIAL_EXIT" => SpecialExit,
            "REVOKED" => Revoked,
            "UNKNOWN" => Unknown,
            other => Other(other.to_string()),
        }
    }

    /// The state as Slurm writes it (what rows and `sgtune status` say).
    pub fn as_str(&self) -> &str {
        match self {
            Pending => "PENDING",
            Requeued => "REQUEUED",
            RequeueHold => "REQUEUE_HOLD",
            RequeueFed => "REQUEUE_FED",
            ResvDelHold => "RESV_DEL_HOLD",
            Suspended => "SUSPENDED",
            Running => "RUNNING",
            Configuring => "CONFIGURING",
            Completing => "COMPLETING",
            Resizing => "RESIZING",
            Signaling => "SIGNALING",
            StageOut => "STAGE_OUT",
            Stopped => "STOPPED",
            Cancelled => "CANCELLED",
            Completed => "COMPLETED",
            NodeFail => "NODE_FAIL",
            Preempted => "PREEMPTED",
            BootFail => "BOOT_FAIL",
            Failed => "FAILED",
            Timeout => "TIMEOUT",
            Deadline => "DEADLINE",
            OutOfMemory => "OUT_OF_MEMORY",
            SpecialExit => "SPECIAL_EXIT",
            Revoked => "REVOKED",
            Unknown => "UNKNOWN",
            Other(s) => s,
        }
    }

    /// Per run, as `sgtune status` shows it. A task still queued (held ones too) is pending; one
    /// that holds its node (stopped, resizing, signalled, staging out) is running: neither has
    /// finished, so the merge gives neither a row yet.
    pub fn shown(&self) -> &'static str {
        match self {
            Pending | Requeued | RequeueHold | RequeueFed | ResvDelHold | Suspended => "pending",
            Running | Configuring | Completing | Resizing | Signaling | StageOut | Stopped => {
                "running"
            }
            Cancelled => "cancelled",
            Completed => "ended",
            NodeFail | Preempted | BootFail | Failed | Timeout | Deadline | OutOfMemory
            | SpecialExit | Revoked | Unknown | Other(_) => "failed",
        }
    }

    /// Pending or running: the task has not finished, and may still write its rows.
    pub fn is_live(&self) -> bool {
        matches!(self.shown(), "pending" | "running")
    }

    /// Status and kind of rows made for a task that left none: cancelled, preempted, dead nodes,
    /// a state no tool knew, and a task that never finished are interrupted (a resume runs them
    /// again); a task that ended on its own (completed, failed, timed out, ...) failed.
    pub fn row_status(&self) -> RunStatus {
        match self {
            Cancelled | NodeFail | Preempted | BootFail | Requeued | Unknown => {
                RunStatus::Interrupted
            }
            s if s.is_live() => RunStatus::Interrupted,
            _ => RunStatus::Failed,
        }
    }
}

impl fmt::Display for SlurmState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every job state Slurm names (squeue --help, sacct's JOB STATE CODES), plus our
    /// UNKNOWN (no tool knew the task): how `status` shows it, and the row a task that left
    /// none gets. Cancelled, preempted, lost nodes, the unknown and the unfinished are
    /// interrupted (a resume runs them again); a task that ended on its own without rows
    /// failed.
    #[test]
    fn every_slurm_state_is_shown_and_recorded_the_right_way() {
        use RunStatus::{Failed, Interrupted};
        let table: &[(&str, &str, RunStatus)] = &[
            ("PENDING", "pending", Interrupted),
            ("REQUEUED", "pending", Interrupted),
            ("REQUEUE_HOLD", "pending", Interrupted),
            ("REQUEUE_FED", "pending", Interrupted),
            ("RESV_DEL_HOLD", "pending", Interrupted),
            ("SUSPENDED", "pending", Interrupted),
            ("RUNNING", "running", Interrupted),
            ("CONFIGURING", "running", Interrupted),
            ("COMPLETING", "running", Interrupted),
            ("RESIZING", "running", Interrupted),
            ("SIGNALING", "running", Interrupted),
            ("STAGE_OUT", "running", Interrupted),
            ("STOPPED", "running", Interrupted),
            ("CANCELLED", "cancelled", Interrupted),
            ("COMPLETED", "ended", Failed),
            ("NODE_FAIL", "failed", Interrupted),
            ("PREEMPTED", "failed", Interrupted),
            ("BOOT_FAIL", "failed", Interrupted),
            ("UNKNOWN", "failed", Interrupted),
            ("FAILED", "failed", Failed),
            ("TIMEOUT", "failed", Failed),
            ("DEADLINE", "failed", Failed),
            ("OUT_OF_MEMORY", "failed", Failed),
            ("SPECIAL_EXIT", "failed", Failed),
            ("REVOKED", "failed", Failed),
        ];
        for (text, shown, status) in table {
            let state = SlurmState::parse(text);
            assert!(!matches!(state, Other(_)), "{text} is named");
            assert_eq!(state.to_string(), *text, "written back as read");
            assert_eq!(state.shown(), *shown, "{text}");
            assert_eq!(state.row_status(), *status, "{text}");
            assert_eq!(
                state.is_live(),
                matches!(*shown, "pending" | "running"),
                "{text}"
            );
        }
        // A state Slurm may add later (or one in lower case) is kept as written, and counts as
        // a task that ended on its own.
        for text in ["LAUNCH_FAILED", "cancelled", ""] {
            let state = SlurmState::parse(text);
            assert_eq!(state, Other(text.to_string()));
            assert_eq!(state.to_string(), text);
            assert_eq!(state.shown(), "failed");
            assert!(!state.is_live());
            assert_eq!(state.row_status(), Failed);
        }
    }
}
