//! A failed run's advice: the failure a server's log ends in ([`log_failure`], from its tail)
//! and which way to turn the knobs after a failure of each kind ([`failure_direction`]). The
//! verdict of a run that measured is `observe::diagnose`'s.

use crate::server::failure::{FailureKind, StartFailure, classify};

/// Which way to turn the knobs after a failure of `kind` whose decisive line is `message`.
pub fn failure_direction(kind: FailureKind, message: &str) -> String {
    let m = message.trim();
    let lower = m.to_ascii_lowercase();
    if m.contains("is less than requested memory for kv") {
        return "vLLM's explicit KV space does not fit in this node's free memory: lower kv_cache_memory_bytes (or VLLM_CPU_KVCACHE_SPACE)".into();
    }
    if m.contains("is less than desired CPU memory utilization") {
        return "vLLM on CPU reserves gpu_memory_utilization (mem_fraction_static) of the node's RAM and that much is not free: lower it, or size the KV cache with kv_cache_memory_bytes".into();
    }
    if m.contains("No available memory for the cache blocks") {
        return "no room for vLLM's KV pool after the weights: raise gpu_memory_utilization (mem_fraction_static), or shard the model (tp_size)".into();
    }
    if m.contains("which is larger than the available KV cache memory") {
        return "vLLM's KV pool cannot hold one request of max_model_len: lower max_model_len (context_length) or give the pool more memory".into();
    }
    if m.contains("Not enough host memory") {
        return "the hierarchical cache's host pool does not fit in RAM: lower hicache_size (GB per rank) or hicache_ratio".into();
    }
    if m.contains("Not enough memory") || m.contains("Not enought memory") {
        let current = lower
            .split("mem_fraction_static=")
            .nth(1)
            .and_then(|r| r.split(|c: char| !(c.is_ascii_digit() || c == '.')).next())
            .filter(|v| !v.is_empty())
            .map(|v| format!(" (now {v})"))
            .unwrap_or_default();
        return format!(
            "no room for the KV pool after the weights: raise mem_fraction_static{current}, or shard the model over more GPUs (tp_size)"
        );
    }
    if lower.contains("capture cuda graph failed") || lower.contains("capture cpu graph failed") {
        return "graph capture ran out of memory: lower cuda_graph_max_bs (e.g. 16) or mem_fraction_static".into();
    }
    if m.contains("CUDA out of memory") || m.contains("OutOfMemoryError") {
        return "too little memory left for activations: lower mem_fraction_static, or chunked_prefill_size / cuda_graph_max_bs".into();
    }
    if m.contains("Try to lower your batch size")
        || m.contains("No space left for only one request")
    {
        return "the KV pool ran out while serving: more KV capacity (mem_fraction_static, kv_cache_dtype) or a lower max_running_requests".into();
    }
    const PLATFORM: [&str; 7] = [
        "requires intel amx",
        "not supported on cpu",
        "not supported on current platform",
        "not supported on this platform",
        "found no nvidia driver",
        "no module named",
        "cannot detect cuda",
    ];
    if PLATFORM.iter().any(|p| lower.contains(p)) {
        return format!(
            "a platform limit, not a tuning problem ({m}): this configuration cannot run on this machine; drop it from the sweep"
        );
    }
    if lower.contains("mutually exclusive") {
        return format!("conflicting flags ({m}): use only one of them");
    }
    if kind == FailureKind::BadFlag || lower.contains(": error: ") {
        return argparse_direction(m);
    }
    match kind {
        FailureKind::Crashed if lower.contains("signal 9") => {
            "killed by SIGKILL: often the OS OOM killer (check `dmesg -T | grep -i oom`); lower mem_fraction_static or hicache_size".into()
        }
        FailureKind::ReadyTimeout => {
            "not ready in time: raise server.ready_timeout_s, or look at the last log line".into()
        }
        FailureKind::LaunchError => "check server.command (the program) and server.port".into(),
        FailureKind::LoadFailed => {
            "the server died or failed every request under load: see its log tail".into()
        }
        FailureKind::Interrupted => String::new(),
        FailureKind::PreflightFailed => {
            "widen search.preflight's range downwards (lower `from`), or look at the pre-flight attempts' rows".into()
        }
        _ => "see the message and the log tail".into(),
    }
}

/// The flag and what it accepts, from an argparse error line.
fn argparse_direction(m: &str) -> String {
    let (prog, msg) = m.split_once(": error: ").unwrap_or(("", m));
    let msg = msg.trim();
    if let Some(rest) = msg.strip_prefix("unrecognized arguments:") {
        // vLLM's parser is `api_server.py` (module form) or `vllm serve`.
        let who = if prog.contains("vllm") || prog.contains("api_server") {
            "vLLM"
        } else {
            "SGLang"
        };
        return format!(
            "{who} does not know {}: check the spelling and whether this {who} version has the flag",
            rest.trim()
        );
    }
    if let Some(rest) = msg.strip_prefix("argument ") {
        let (flag, what) = rest.split_once(": ").unwrap_or((rest, ""));
        let flag = flag.split('/').next().unwrap_or(flag).trim();
        if let Some(r) = what.strip_prefix("invalid choice: ") {
            let (value, choices) = r.split_once(" (choose from ").unwrap_or((r, ""));
            let choices = choices.trim_end_matches(')').replace('\'', "");
            return if choices.is_empty() {
                format!("{flag} does not accept {value}")
            } else {
                format!("{flag} does not accept {value}; allowed: {choices}")
            };
        }
        if let Some(r) = what.strip_prefix("invalid ") {
            // `invalid float value: 'abc'`
            let (ty, value) = r.split_once(" value: ").unwrap_or((r, ""));
            return format!("{flag} needs a {ty} value, got {value}");
        }
        if what.starts_with("expected") {
            return format!("{flag}: {what}");
        }
        return format!("{flag}: {what}");
    }
    if let Some(r) = msg.strip_prefix("the following arguments are required:") {
        return format!("required flags missing: {}", r.trim());
    }
    format!("SGLang rejected the command line: {msg}")
}

/// Markers of a server that died after it was ready.
const DIED: [&str; 5] = [
    "Received sigquit",
    "scheduler died",
    "scheduler is dead",
    "Try to lower your batch size",
    "No space left for only one request",
];

/// The failure a log ends in, from its last lines (oldest first): an argparse error, an
/// out-of-memory or an exception before the ready line, or a server that died after it.
/// None when the log shows no failure (a clean run, a cut-off log, an old version that never
/// printed the ready line).
pub fn log_failure(tail: &[String], ready_seen: bool) -> Option<StartFailure> {
    // argparse prints `usage: ...` then `prog: error: ...`; vLLM's usage runs to hundreds of
    // lines, past the tail, so its last line alone counts too when it is argparse's.
    let argparse_last = tail
        .iter()
        .rev()
        .find(|l| !l.trim().is_empty())
        .and_then(|l| l.split_once(": error: "))
        .is_some_and(|(prog, _)| {
            !prog.is_empty() && !prog.contains('[') && prog.split_whitespace().count() <= 2
        });
    let usage = argparse_last || tail.iter().any(|l| l.trim_start().starts_with("usage: "));
    if let (true, Some(i)) = (usage, tail.iter().rposition(|l| l.contains(": error: "))) {
        let from = i.saturating_sub(3);
        return Some(StartFailure {
            kind: FailureKind::BadFlag,
            message: tail
                .get(i)
                .map(|l| l.trim().to_string())
                .unwrap_or_default(),
            evidence: tail
                .get(from..=i)
                .map(<[String]>::to_vec)
                .unwrap_or_default(),
        });
    }
    let died = tail.iter().any(|l| DIED.iter().any(|d| l.contains(d)));
    if ready_seen && !died {
        return None;
    }
    let f = classify(None, tail, false);
    match f.kind {
        FailureKind::Oom | FailureKind::StartupError => Some(f),
        _ if ready_seen => Some(StartFailure {
            kind: FailureKind::Crashed,
            ..f
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directions_for_failures() {
        let d = |k, m: &str| failure_direction(k, m);
        assert!(
            d(
                FailureKind::Oom,
                "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.84"
            )
            .contains("raise mem_fraction_static (now 0.84)")
        );
        assert!(
            d(
                FailureKind::Oom,
                "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 448.00 MiB."
            )
            .contains("lower cuda_graph_max_bs")
        );
        assert!(
            d(
                FailureKind::Oom,
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
            )
            .contains("chunked_prefill_size")
        );
        assert!(
            d(
                FailureKind::Oom,
                "ValueError: Not enough host memory available. Requesting 48 GB but only have 20 GB free."
            )
            .contains("lower hicache_size")
        );
        assert_eq!(
            d(
                FailureKind::BadFlag,
                "sglang serve: error: argument --kv-cache-dtype: invalid choice: 'fp9' (choose from 'auto', 'fp8_e5m2', 'fp8_e4m3', 'bf16', 'bfloat16', 'fp4_e2m1')"
            ),
            "--kv-cache-dtype does not accept 'fp9'; allowed: auto, fp8_e5m2, fp8_e4m3, bf16, bfloat16, fp4_e2m1"
        );
        assert_eq!(
            d(
                FailureKind::BadFlag,
                "sglang serve: error: argument --mem-fraction-static: invalid float value: 'abc'"
            ),
            "--mem-fraction-static needs a float value, got 'abc'"
        );
        assert!(
            d(
                FailureKind::BadFlag,
                "launch_server.py: error: unrecognized arguments: --no-such-flag 1"
            )
            .starts_with("SGLang does not know --no-such-flag 1")
        );
        let p = d(
            FailureKind::StartupError,
            "ValueError: CPU FP8 KV cache requires Intel AMX support.",
        );
        assert!(p.starts_with("a platform limit"), "{p}");
        assert!(p.contains("CPU FP8 KV cache requires Intel AMX support."));
        assert!(
            d(
                FailureKind::Crashed,
                "killed by signal 9 (SIGKILL) before ready"
            )
            .contains("OOM killer")
        );
    }

    #[test]
    fn failures_from_a_log_tail() {
        let lines = |s: &str| s.lines().map(String::from).collect::<Vec<_>>();
        let bad = lines(
            "usage: sglang serve [-h] --model-path MODEL_PATH\nsglang serve: error: unrecognized arguments: --no-such-flag 1",
        );
        let f = log_failure(&bad, false).map(|f| (f.kind, f.message));
        assert_eq!(
            f,
            Some((
                FailureKind::BadFlag,
                "sglang serve: error: unrecognized arguments: --no-such-flag 1".to_string()
            ))
        );
        let fp8 = lines(
            "[t] Scheduler hit an exception: Traceback (most recent call last):\n  File \"x\", line 1\nValueError: CPU FP8 KV cache requires Intel AMX support.\n\n[t] Received sigquit from a child process. It usually means the child failed.",
        );
        let f = log_failure(&fp8, false);
        assert_eq!(f.as_ref().map(|f| f.kind), Some(FailureKind::StartupError));
        // A clean shutdown after ready is no failure; a cut-off start-up without an error neither.
        let clean = lines(
            "[t] SIGTERM received. Draining requests and shutting down...\n[t] Gracefully exiting...",
        );
        assert_eq!(log_failure(&clean, true), None);
        assert_eq!(log_failure(&lines("[t] Load weight begin."), false), None);
        // Died after ready.
        let died = lines(
            "RuntimeError: Decode out of memory. Try to lower your batch size.\n[t] Received sigquit from a child process.",
        );
        assert_eq!(
            log_failure(&died, true).map(|f| f.kind),
            Some(FailureKind::StartupError)
        );
    }
}
