//! Why a server never became ready: a kind plus the log lines that prove it.

use serde::{Deserialize, Serialize};
use std::process::ExitStatus;

/// Why a run did not produce a measurement. One list, used for rows, tables and docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// Out of memory at start-up (KV pool, CUDA OOM, host memory for hierarchical cache).
    Oom,
    /// The server rejected its command line (argparse error, exit status 2).
    BadFlag,
    /// An exception during start-up (the configuration is not supported, e.g. FP8 KV on CPU).
    StartupError,
    /// The server exited before ready for another reason (exit code or signal).
    Crashed,
    /// No ready line within `server.ready_timeout_s`.
    ReadyTimeout,
    /// The server died or every request failed during the load.
    LoadFailed,
    /// sgtune could not launch the program at all (not found, not executable).
    LaunchError,
    /// Interrupted by a signal (Ctrl-C, SIGTERM, SIGHUP) while this run was in progress.
    Interrupted,
    /// Not launched: its knob was to come from the memory pre-flight, which found no value
    /// that launches and survives the burst.
    PreflightFailed,
    /// A Slurm task ended (failed, timed out, its node died, cancelled before it started)
    /// without writing its rows; the message has its Slurm state.
    SlurmTask,
}

impl FailureKind {
    pub const ALL: [FailureKind; 10] = [
        FailureKind::Oom,
        FailureKind::BadFlag,
        FailureKind::StartupError,
        FailureKind::Crashed,
        FailureKind::ReadyTimeout,
        FailureKind::LoadFailed,
        FailureKind::LaunchError,
        FailureKind::Interrupted,
        FailureKind::PreflightFailed,
        FailureKind::SlurmTask,
    ];

    /// The kind named by `as_str` (results.csv `failure_kind`).
    pub fn parse(s: &str) -> Option<FailureKind> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Oom => "oom",
            FailureKind::BadFlag => "bad_flag",
            FailureKind::StartupError => "startup_error",
            FailureKind::Crashed => "crashed",
            FailureKind::ReadyTimeout => "ready_timeout",
            FailureKind::LoadFailed => "load_failed",
            FailureKind::LaunchError => "launch_error",
            FailureKind::Interrupted => "interrupted",
            FailureKind::PreflightFailed => "preflight_failed",
            FailureKind::SlurmTask => "slurm_task",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartFailure {
    pub kind: FailureKind,
    /// One line: the decisive log line, or what happened.
    pub message: String,
    /// The log lines the decision rests on.
    pub evidence: Vec<String>,
}

/// `exit code 2` / `killed by signal 9 (SIGKILL)`.
pub fn describe_exit(status: &ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(s)) => {
            let name = match s {
                9 => " (SIGKILL)",
                15 => " (SIGTERM)",
                6 => " (SIGABRT)",
                11 => " (SIGSEGV)",
                2 => " (SIGINT)",
                _ => "",
            };
            format!("killed by signal {s}{name}")
        }
        _ => "exited".to_string(),
    }
}

/// Substrings that mean out of memory, with the direction to go.
const OOM_PATTERNS: &[(&str, &str)] = &[
    // vLLM on CPU (0.32, `cpu_worker.py`): the explicit KV space is more than the node has.
    (
        "is less than requested memory for kv",
        "vLLM's KV space does not fit in RAM: lower kv_cache_memory_bytes or VLLM_CPU_KVCACHE_SPACE",
    ),
    // vLLM on CPU (0.32, `cpu_worker.py`) without an explicit KV size: the share of the
    // node's RAM `--gpu-memory-utilization` asks for is more than is free.
    (
        "is less than desired CPU memory utilization",
        "vLLM on CPU reserves gpu_memory_utilization (mem_fraction_static) of the node's RAM, more than is free: lower it",
    ),
    // vLLM (`kv_cache_utils.py`): nothing left for the KV pool after the weights.
    (
        "No available memory for the cache blocks",
        "no room for vLLM's KV pool after the weights: raise gpu_memory_utilization (mem_fraction_static)",
    ),
    // vLLM: the pool cannot hold one request of the max model length.
    (
        "which is larger than the available KV cache memory",
        "vLLM's KV pool cannot hold one max_model_len request: lower max_model_len (context_length) or give the pool more memory",
    ),
    // SGLang 0.5.x when the kernel's OOM killer took the scheduler while it allocated the KV
    // pool (seen for real: mem_fraction_static too high inside a memory-limited cgroup).
    (
        "died during initialization (exit code: -9)",
        "SIGKILL while allocating: the OS OOM killer (check `dmesg -T | grep -i oom`); lower mem_fraction_static",
    ),
    (
        "Not enough host memory",
        "hierarchical cache too big: lower hicache_size",
    ),
    (
        "Not enough memory",
        "no room for the KV pool: raise mem_fraction_static",
    ),
    (
        "Not enought memory",
        "no room for the KV pool: raise mem_fraction_static",
    ),
    (
        "CUDA out of memory",
        "too little headroom: lower mem_fraction_static or cuda_graph_max_bs",
    ),
    (
        "OutOfMemoryError",
        "too little headroom: lower mem_fraction_static or cuda_graph_max_bs",
    ),
    (
        "Capture cuda graph failed",
        "graph capture OOM: lower mem_fraction_static or cuda_graph_max_bs",
    ),
];

/// Wrapper lines that follow the real error; never the explanation.
const WRAPPERS: &[&str] = &[
    "Initialization failed",
    "scheduler died",
    "scheduler is dead",
    "Received sigquit",
    "hit an exception",
    "Traceback",
];

fn is_exception_line(line: &str) -> bool {
    let l = line.trim_start();
    let Some((head, _)) = l.split_once(": ") else {
        return false;
    };
    !head.contains(' ')
        && (head.ends_with("Error") || head.ends_with("Exception"))
        && head.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
}

fn context(lines: &[String], idx: usize) -> Vec<String> {
    let from = idx.saturating_sub(3);
    lines[from..=idx].to_vec()
}

/// The out-of-memory line in a log tail and its hint, if any: a server that died under load
/// of an OOM is an `oom` row, not a plain `load_failed` one.
pub fn oom_in(tail: &[String]) -> Option<String> {
    OOM_PATTERNS.iter().find_map(|(needle, hint)| {
        tail.iter()
            .find(|l| l.contains(needle))
            .map(|l| format!("{} ({hint})", l.trim()))
    })
}

/// Classify a start-up failure from the exit status (None: still running / unknown) and the
/// log tail (oldest first).
pub fn classify(exit: Option<&ExitStatus>, tail: &[String], timed_out: bool) -> StartFailure {
    for (needle, hint) in OOM_PATTERNS {
        if let Some(i) = tail.iter().position(|l| l.contains(needle)) {
            return StartFailure {
                kind: FailureKind::Oom,
                message: format!("{} ({hint})", tail[i].trim()),
                evidence: context(tail, i),
            };
        }
    }
    if exit.and_then(|s| s.code()) == Some(2) {
        if let Some(i) = tail.iter().rposition(|l| l.contains(": error:")) {
            return StartFailure {
                kind: FailureKind::BadFlag,
                message: tail[i].trim().to_string(),
                evidence: context(tail, i),
            };
        }
    }
    let exc = tail
        .iter()
        .position(|l| is_exception_line(l) && !WRAPPERS.iter().any(|w| l.contains(w)))
        .or_else(|| tail.iter().rposition(|l| is_exception_line(l)));
    if let (Some(i), false) = (exc, timed_out) {
        return StartFailure {
            kind: FailureKind::StartupError,
            message: tail[i].trim().to_string(),
            evidence: context(tail, i),
        };
    }
    let last = tail
        .iter()
        .rev()
        .find(|l| !l.trim().is_empty())
        .cloned()
        .unwrap_or_default();
    if timed_out {
        return StartFailure {
            kind: FailureKind::ReadyTimeout,
            message: format!("not ready in time; last log line: {}", last.trim()),
            evidence: tail.iter().rev().take(5).rev().cloned().collect(),
        };
    }
    let how = exit.map_or_else(|| "exited".to_string(), describe_exit);
    StartFailure {
        kind: FailureKind::Crashed,
        message: format!("{how} before ready; last log line: {}", last.trim()),
        evidence: tail.iter().rev().take(5).rev().cloned().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    fn lines(s: &str) -> Vec<String> {
        s.lines().map(String::from).collect()
    }

    #[test]
    fn oom_kinds_and_directions() {
        let tail = lines(
            "[x] Scheduler hit an exception: Traceback (most recent call last):\n  File \"a.py\"\nRuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.8\n[x] Received sigquit from a child process. It usually means the child failed.",
        );
        let f = classify(Some(&ExitStatus::from_raw(9)), &tail, false);
        assert_eq!(f.kind, FailureKind::Oom);
        assert!(f.message.contains("raise mem_fraction_static"));
        let f = classify(
            None,
            &lines("ValueError: Not enough host memory available. Requesting 48 GB"),
            false,
        );
        assert!(f.message.contains("hicache_size"));
        // The kernel's OOM killer during the KV allocation (real CPU SGLang in a cgroup).
        let f = classify(
            Some(&ExitStatus::from_raw(1 << 8)),
            &lines(
                "RuntimeError: Rank 0 scheduler died during initialization (exit code: -9). If exit code is -9 (SIGKILL), a common cause is the OS OOM killer.",
            ),
            false,
        );
        assert_eq!(f.kind, FailureKind::Oom);
        assert!(f.message.contains("OOM killer"));
        // vLLM 0.32 on CPU asked for more of the node's RAM than is free (the text of
        // `cpu_worker.py`'s error): the knob that asked is named.
        let f = classify(
            Some(&ExitStatus::from_raw(1 << 8)),
            &lines(
                "(EngineCore pid=9) ValueError: Available memory on node 0 (19.80/22.93 GiB) on startup is less than desired CPU memory utilization (0.99, 22.70 GiB). On the CPU backend, the `--gpu-memory-utilization` flag controls the fraction of CPU memory reserved (despite its name).",
            ),
            false,
        );
        assert_eq!(f.kind, FailureKind::Oom);
        assert!(f.message.contains("lower it"), "{}", f.message);
        assert!(
            f.message
                .contains("gpu_memory_utilization (mem_fraction_static)")
        );
    }

    #[test]
    fn argparse_error_is_bad_flag() {
        let tail = lines(
            "usage: sglang serve [-h] --model-path MODEL_PATH\nsglang serve: error: unrecognized arguments: --no-such-flag 1",
        );
        let f = classify(Some(&ExitStatus::from_raw(2 << 8)), &tail, false);
        assert_eq!(f.kind, FailureKind::BadFlag);
        assert_eq!(
            f.message,
            "sglang serve: error: unrecognized arguments: --no-such-flag 1"
        );
    }

    #[test]
    fn exception_picks_the_cause_not_the_wrapper() {
        let tail = lines(
            "[t] Scheduler hit an exception: Traceback (most recent call last):\n  File \"x\", line 1\nValueError: CPU FP8 KV cache requires Intel AMX support.\n[t] Received sigquit from a child process. It usually means the child failed.\nRuntimeError: Initialization failed. Please see the error messages above.",
        );
        let f = classify(Some(&ExitStatus::from_raw(9)), &tail, false);
        assert_eq!(f.kind, FailureKind::StartupError);
        assert_eq!(
            f.message,
            "ValueError: CPU FP8 KV cache requires Intel AMX support."
        );
    }

    #[test]
    fn plain_exit_and_timeout() {
        let f = classify(
            Some(&ExitStatus::from_raw(3 << 8)),
            &lines("[t] Memory pool end"),
            false,
        );
        assert_eq!(f.kind, FailureKind::Crashed);
        assert!(f.message.starts_with("exit code 3"), "{}", f.message);
        let f = classify(None, &lines("[t] loading"), true);
        assert_eq!(f.kind, FailureKind::ReadyTimeout);
        assert_eq!(
            describe_exit(&ExitStatus::from_raw(9)),
            "killed by signal 9 (SIGKILL)"
        );
    }
}
