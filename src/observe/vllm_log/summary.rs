//! Folding a vLLM log into the same [`ServerSummary`] as SGLang's, streaming, so the verdicts
//! read either engine.
//!
//! The mapping, field by field: `Running` → `#running-req`; `Waiting` (V1) or `Pending` +
//! `Swapped` (V0) → `#queue-req` (both are requests admitted by the server and not running);
//! the device pool's `KV cache usage` → token usage; `Avg generation throughput` → gen
//! throughput; the start-up `KV cache size: N tokens` → `max_total_num_tokens`; the max model
//! length → `context_len`; V1's `Preemptions` (requests preempted in the interval) → both
//! retraction counts (vLLM preempts one request at a time); the last `Prefix cache hit rate` of
//! the window → `cached_token_share`; `max_num_seqs` and `max_num_batched_tokens` from the
//! `non-default args` line → `max_running_requests` and `chunked_prefill_size`; per kept line
//! `Running` ÷ `Avg generation throughput` → a decode step of `decode_steps`. Fields vLLM's log
//! has no counterpart for (graph lines and `decode_steps`' graph flag, prefill batches, KV
//! dtype) stay empty.
//!
//! Which lines count: like SGLang's, stats lines before the ready line are warmup; in the
//! window, the first stats line of each engine is left out (its interval began before the
//! window) and so is any line more than [`IDLE_GAP_SECS`] after that engine's previous one
//! (vLLM prints nothing while idle, so such a line's interval straddles the idle time), and the
//! one all-zero line vLLM prints when the engine goes idle (counted with the idle-gap lines).

use crate::observe::sglang_log::line::error_message;
use crate::observe::sglang_log::skeleton::{Rules, Skeleton, Window};
use crate::observe::sglang_log::{Scope, ServerSummary, Timestamp};
use crate::observe::steps::StepBuckets;

use super::line::{Event, Stats, StatsFormat, parse_line};

/// A stats line more than this many seconds after the same engine's previous one is left out.
/// vLLM logs every 10 s by default (`VLLM_LOG_STATS_INTERVAL`; 5 s in the V0 engine).
pub const IDLE_GAP_SECS: f64 = 25.0;

/// vLLM's rules in the shared skeleton: schedulers by engine index (`Engine 001:`), lines after
/// [`IDLE_GAP_SECS`] or idle left out, the window's start from its first line.
#[derive(Debug, Clone, Copy)]
pub struct Vllm;

impl Rules for Vllm {
    type Key = u32;
    type Acc = Acc;
    const IDLE_GAP_SECS: f64 = IDLE_GAP_SECS;
    const LATE_START: bool = false;
}

/// What vLLM's log adds over the window beside the skeleton's counts (the engines' lines of
/// one interval summed there).
#[derive(Debug, Clone, Default)]
pub struct Acc {
    engines: Vec<u32>,
    preempted: u64,
    /// Kept lines of the V0 engine, whose stats lines carry no preemption count.
    v0_lines: usize,
    hit_rate: Option<f64>,
    steps: StepBuckets,
}

impl Window<Vllm> {
    /// A stats line the skeleton counts.
    fn keep(&mut self, s: &Stats, ts: Option<Timestamp>) {
        self.acc.v0_lines += usize::from(s.format == StatsFormat::V0);
        let queued = match (s.waiting, s.swapped) {
            (Some(w), Some(sw)) => Some(w.saturating_add(sw)),
            (w, sw) => w.or(sw),
        };
        // Data parallel: each engine prints its own line per interval (`Engine 001:`); the
        // server's interval is their sum, as with SGLang's DP ranks.
        self.intervals.line(
            &mut self.stats,
            ts,
            s.engine,
            s.generation_throughput,
            s.running,
            queued,
        );
        if let Some(u) = s.kv_usage {
            self.stats.usage(u);
        }
        let a = &mut self.acc;
        // Per line (each engine's own batch), graph unknown: vLLM's line does not say.
        a.steps.line(s.running, s.generation_throughput, None);
        if let Some(p) = s.preemptions {
            a.preempted = a.preempted.saturating_add(p);
        }
        if s.prefix_hit_rate.is_some() {
            a.hit_rate = s.prefix_hit_rate;
        }
    }
}

/// The line vLLM prints once after the engine goes idle (nothing ran in the interval, nothing
/// runs or waits now): SGLang prints no Decode line then, so it does not count either.
fn idle(s: &Stats) -> bool {
    s.generation_throughput == Some(0.0)
        && s.prompt_throughput == Some(0.0)
        && s.running == Some(0)
        && s.waiting.is_none_or(|w| w == 0)
}

/// Streaming summary of one vLLM log.
#[derive(Debug, Clone, Default)]
pub struct Summarizer {
    core: Skeleton<Vllm>,
    kv_tokens: Option<u64>,
    max_model_len: Option<u64>,
    kv_gib: Option<f64>,
    version: Option<String>,
    args: Vec<(String, String)>,
    args_seen: bool,
    error_lines: usize,
    /// Lines that only vLLM prints (stats, capacity, version): the log is vLLM's.
    signature_lines: usize,
}

/// `non-default args` worth showing next to a verdict.
const LAUNCH_ARGS: [&str; 12] = [
    "model",
    "tensor_parallel_size",
    "data_parallel_size",
    "pipeline_parallel_size",
    "gpu_memory_utilization",
    "kv_cache_memory_bytes",
    "num_gpu_blocks_override",
    "max_num_seqs",
    "max_num_batched_tokens",
    "max_model_len",
    "kv_cache_dtype",
    "enable_chunked_prefill",
];

/// A uvicorn access line (`INFO:     127.0.0.1:5000 - "POST /v1/completions HTTP/1.1" 200`).
fn is_access_line(line: &str) -> bool {
    line.contains("INFO:     ") && line.contains(" HTTP/1.")
}

impl Summarizer {
    pub fn new(scope: Scope) -> Summarizer {
        Summarizer {
            core: Skeleton::new(scope),
            ..Summarizer::default()
        }
    }

    pub fn lines(&self) -> usize {
        self.core.lines()
    }

    /// The last non-stats, non-access lines, oldest first.
    pub fn tail(&self) -> Vec<String> {
        self.core.tail.to_strings()
    }

    /// Lines only vLLM prints seen so far.
    pub fn signature_lines(&self) -> usize {
        self.signature_lines
    }

    /// Feed the next line (without its newline).
    pub fn feed_line(&mut self, line: &[u8]) {
        let (idx, line) = self.core.next_line(line);
        let text = String::from_utf8_lossy(line);
        let Some(parsed) = parse_line(&text) else {
            if !is_access_line(&text) {
                self.core.tail.push(line);
                let (_, msg) = super::line::split_prefix(&text);
                if error_message(msg).is_some() {
                    self.error_lines += 1;
                }
            }
            return;
        };
        if parsed.ts.is_some() {
            self.core.last_ts = parsed.ts;
        }
        match parsed.event {
            Event::Stats(s) => {
                self.signature_lines += 1;
                self.on_stats(idx, parsed.ts, &s);
            }
            ev => {
                self.core.tail.push(line);
                self.on_event(idx, ev);
            }
        }
    }

    fn on_event(&mut self, idx: usize, ev: Event) {
        match ev {
            Event::Ready => self.core.ready(idx),
            Event::Capacity(c) => {
                self.signature_lines += 1;
                self.kv_tokens = self.kv_tokens.or(c.kv_tokens);
                self.max_model_len = self.max_model_len.or(c.tokens_per_request);
            }
            Event::Version(v) => {
                self.signature_lines += 1;
                self.version.get_or_insert(v);
            }
            Event::Args(a) => {
                if !self.args_seen {
                    self.args_seen = true;
                    self.args = a;
                }
            }
            Event::MaxModelLen(n) => {
                self.max_model_len.get_or_insert(n);
            }
            Event::KvGib(g) => {
                self.kv_gib.get_or_insert(g);
            }
            Event::Stats(_) => {}
        }
    }

    fn on_stats(&mut self, idx: usize, ts: Option<Timestamp>, s: &Stats) {
        let in_scope = self.core.in_scope(idx, ts);
        if in_scope {
            self.core.window.all_stats += 1;
        }
        let key = s.engine;
        let kept = self.core.admit(idx, ts, key, in_scope, idle(s));
        let w = &mut self.core.window;
        if in_scope {
            if let Some(e) = key {
                if !w.acc.engines.contains(&e) {
                    w.acc.engines.push(e);
                }
            }
        }
        if kept {
            w.keep(s, ts);
        }
    }

    fn arg(&self, key: &str) -> Option<&str> {
        self.args
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The summary of everything fed so far.
    pub fn summary(&self) -> ServerSummary {
        let w = self.core.closed();
        let a = &w.acc;
        let arg_u64 = |k: &str| self.arg(k).and_then(|v| v.trim().parse::<u64>().ok());
        let mut version = crate::observe::sglang_log::version::VersionHints::default();
        if let Some(v) = &self.version {
            version.hints.push(format!("vLLM {v} (start-up lines)"));
        }
        let mut summary = ServerSummary {
            engine: crate::plan::engine::Engine::Vllm,
            engine_version: self.version.clone(),
            stats_lines: w.stats_lines,
            excluded_decode_lines: w.excluded,
            max_total_num_tokens: self.kv_tokens,
            max_running_requests: arg_u64("max_num_seqs"),
            context_len: self.max_model_len,
            kv_cache_gb: self.kv_gib.map(|g| g * 1.073_741_824),
            retractions: a.preempted,
            retracted_requests: a.preempted,
            // V1 prints `Preemptions: N` only when N > 0, so its silence is a 0; V0's is not.
            retractions_not_logged: a.v0_lines > 0,
            ready_seen: self.core.ready_line.is_some(),
            lines: self.core.lines(),
            ready_line: self.core.ready_line,
            warmup_stats_lines: self.core.warmup_stats,
            idle_gap_lines: w.idle_excluded,
            error_lines: self.error_lines,
            window: w.span,
            intervals: w.intervals.count,
            dp_ranks: if a.engines.len() > 1 {
                a.engines.len()
            } else {
                0
            },
            cached_token_share: a.hit_rate,
            decode_steps: a.steps.buckets(),
            chunked_prefill_size: self
                .arg("max_num_batched_tokens")
                .and_then(|v| v.trim().parse::<i64>().ok()),
            launch_args: self
                .args
                .iter()
                .filter(|(k, _)| LAUNCH_ARGS.contains(&k.as_str()))
                .cloned()
                .collect(),
            version,
            ..ServerSummary::default()
        };
        summary.set_window(w.stats.figures());
        summary
    }
}

/// Summarise a whole vLLM log text (tests, small files).
#[cfg(test)]
pub fn summarize_text(
    text: &str,
    window: Option<crate::observe::sglang_log::LogWindow>,
) -> ServerSummary {
    let mut s = Summarizer::new(Scope {
        lines: window,
        ..Scope::default()
    });
    for l in text.lines() {
        s.feed_line(l.as_bytes());
    }
    s.summary()
}
