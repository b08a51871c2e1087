//! Folding a server log into one [`ServerSummary`], streaming.
//!
//! [`Summarizer`] takes one line at a time and keeps only running aggregates, the open
//! logging interval, a bounded [`Quantiles`] per percentile stat, and the last few
//! non-stats lines (for start-up failures): memory stays constant however long the log.
//! [`LineReader`] feeds it from any reader in 1 MiB chunks without copying lines.

use std::io::{self, Read};
use std::path::Path;

use memchr::memchr_iter;
use serde::{Deserialize, Serialize};

use crate::observe::steps::{DecodeSteps, StepBuckets};
use crate::observe::window::WindowFigures;
use crate::plan::engine::Engine;

use super::line::{LogEvent, StatsKind};
use super::prefix::{RankTags, parse_prefix_bytes};
use super::scan::{Scanned, StatsRef, scan_with};
use super::skeleton::{Rules, Skeleton, Window};
use super::version::{self, VersionHints};

pub use super::skeleton::{LogWindow, Scope, TAIL_LINES, Tail, WindowSpan, cmp_ts};

/// A Decode line more than this many seconds after the previous Decode line of the same
/// scheduler is excluded: its `gen throughput` averages over the idle time.
pub const IDLE_GAP_SECS: f64 = 10.0;

/// Decode lines of different DP ranks less than this many seconds apart (i.e. the same second
/// when the log has no milliseconds) belong to one logging interval and are summed.
pub use crate::observe::window::DP_GROUP_SECS;

/// What a server log says about one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerSummary {
    /// The engine whose log this is. Written only when it is not SGLang's (`"vllm"`), so a
    /// summary from before vLLM, which has none, reads as SGLang's and SGLang's stay as they were.
    #[serde(skip_serializing_if = "Engine::is_sglang")]
    pub engine: Engine,
    /// The engine's version as its log prints it (vLLM's start-up lines).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine_version: Option<String>,
    /// Decode lines used for the stats below (after exclusions; one per DP rank and interval).
    pub stats_lines: usize,
    /// Prefill lines in the window (after the ready line, TP>0 duplicates dropped).
    pub prefill_lines: usize,
    /// Decode lines of the window left out: the first one (per DP rank) and any after an idle gap.
    pub excluded_decode_lines: usize,
    /// Over logging intervals; with DP attention the DP ranks' values are summed per interval.
    pub gen_throughput_mean: Option<f64>,
    pub gen_throughput_median: Option<f64>,
    pub running_req_mean: Option<f64>,
    pub running_req_max: Option<u64>,
    pub queue_req_mean: Option<f64>,
    pub queue_req_max: Option<u64>,
    /// Over the kept Decode lines (per rank, never summed).
    pub token_usage_mean: Option<f64>,
    pub token_usage_max: Option<f64>,
    /// From the first capacity line (per scheduler, i.e. per DP rank).
    pub max_total_num_tokens: Option<u64>,
    pub max_running_requests: Option<u64>,
    pub context_len: Option<u64>,
    /// `dtype:` of the KV alloc line, else `Using KV cache dtype:`, else a non-`auto`
    /// `kv_cache_dtype` server arg.
    pub kv_cache_dtype: Option<String>,
    /// K+V (or MLA KV) size in GB of the first KV alloc line (per rank).
    pub kv_cache_gb: Option<f64>,
    /// Host memory of the first HiCache alloc line, GB (per rank).
    pub hicache_host_gb: Option<f64>,
    /// The same line's host pool in tokens (per rank), where it says (SGLang 0.5.23's
    /// `Allocating kv hierarchical KV host pool: N tokens, X GB host memory.`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hicache_host_tokens: Option<u64>,
    /// The server args say the radix (prefix) cache is off (`disable_radix_cache=True`): every
    /// prompt is computed, by the user's choice; nothing is evicted.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub radix_cache_disabled: bool,
    /// Retraction lines in the window (TP>0 duplicates dropped) and the requests they retracted.
    pub retractions: u64,
    pub retracted_requests: u64,
    /// The log cannot say how many: vLLM's V0 engine (to 0.10) prints no preemption count, so
    /// `retractions` is 0 for want of a number, not a count (the column is then empty).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub retractions_not_logged: bool,
    /// Whether `The server is fired up and ready to roll!` appears anywhere.
    pub ready_seen: bool,

    /// Lines read.
    pub lines: usize,
    /// The first ready line (0-based).
    pub ready_line: Option<usize>,
    /// Stats lines (Decode and Prefill) before the ready line: warmup, excluded.
    pub warmup_stats_lines: usize,
    /// Of `excluded_decode_lines`, those excluded because of an idle gap before them.
    pub idle_gap_lines: usize,
    /// Decode lines in the window without any number (cut off, garbled): skipped.
    pub garbled_stats_lines: usize,
    /// Python exception and argparse error lines anywhere in the log.
    pub error_lines: usize,
    /// The kept stats lines' span.
    pub window: WindowSpan,
    /// Logging intervals (Decode lines of all DP ranks printed together count once).
    pub intervals: usize,
    /// Distinct DP ranks among the kept Decode lines (0: no DP attention tags).
    pub dp_ranks: usize,
    pub gen_throughput_p10: Option<f64>,
    pub gen_throughput_p90: Option<f64>,
    /// Share of intervals with `#queue-req` > 0.
    pub queue_nonzero_share: Option<f64>,
    /// Max over intervals of `#running-req` + `#queue-req`: what a closed-loop client offered.
    pub offered_estimate: Option<u64>,
    pub token_usage_p90: Option<f64>,
    /// Percentiles come from the bounded histogram (more than 65,536 values), not exact.
    pub percentiles_approx: bool,
    /// The graph field's name (`cuda graph`, `cpu graph`, ...), when the lines have one.
    pub graph_label: Option<String>,
    /// Kept Decode lines with a graph field, and those saying True.
    pub graph_lines: usize,
    pub graph_on_lines: usize,
    pub graph_on_share: Option<f64>,
    /// `#running-req` on the graph-on lines (max) and graph-off lines (min, mean, max).
    pub graph_on_running_max: Option<u64>,
    pub graph_off_running_min: Option<u64>,
    pub graph_off_running_mean: Option<f64>,
    pub graph_off_running_max: Option<u64>,
    /// The decode steps by running batch size, from the kept Decode lines (per line, per DP
    /// rank: `#running-req` ÷ `gen throughput`), at most [`crate::observe::steps::MAX_BUCKETS`]
    /// buckets (vLLM: its stats lines', graph unknown). Empty in a summary from before it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub decode_steps: Vec<DecodeSteps>,
    /// Largest captured batch size (`Capture cuda graph bs [...]`, else the server arg).
    pub cuda_graph_max_bs: Option<u64>,
    /// The log says CUDA graphs are off (`Cuda graph is disabled`, `disable_cuda_graph=True`).
    pub graphs_disabled: bool,
    /// Prefill lines' `input throughput (token/s)`, mean (per line, never summed).
    pub prefill_input_throughput_mean: Option<f64>,
    /// Σ `#new-token` and Σ `#cached-token` over the window's Prefill lines.
    pub prefill_new_tokens: u64,
    pub prefill_cached_tokens: u64,
    /// cached / (cached + new).
    pub cached_token_share: Option<f64>,
    /// From the capacity line.
    pub chunked_prefill_size: Option<i64>,
    pub available_mem_gb: Option<f64>,
    /// A few tuning-relevant `server_args` (mem_fraction_static, tp_size, ...), as written.
    pub launch_args: Vec<(String, String)>,
    /// What the format says about the SGLang version.
    pub version: VersionHints,
}

impl ServerSummary {
    /// Set the window's figures (both engines' summaries fold them with [`WindowStats`]).
    pub fn set_window(&mut self, w: WindowFigures) {
        let WindowFigures {
            gen_throughput_mean,
            gen_throughput_median,
            gen_throughput_p10,
            gen_throughput_p90,
            running_req_mean,
            running_req_max,
            queue_req_mean,
            queue_req_max,
            queue_nonzero_share,
            offered_estimate,
            token_usage_mean,
            token_usage_max,
            token_usage_p90,
            percentiles_approx,
        } = w;
        self.gen_throughput_mean = gen_throughput_mean;
        self.gen_throughput_median = gen_throughput_median;
        self.gen_throughput_p10 = gen_throughput_p10;
        self.gen_throughput_p90 = gen_throughput_p90;
        self.running_req_mean = running_req_mean;
        self.running_req_max = running_req_max;
        self.queue_req_mean = queue_req_mean;
        self.queue_req_max = queue_req_max;
        self.queue_nonzero_share = queue_nonzero_share;
        self.offered_estimate = offered_estimate;
        self.token_usage_mean = token_usage_mean;
        self.token_usage_max = token_usage_max;
        self.token_usage_p90 = token_usage_p90;
        self.percentiles_approx = percentiles_approx;
    }

    /// Whether any Decode line survived the exclusions.
    pub fn has_stats(&self) -> bool {
        self.stats_lines > 0
    }

    /// A launch argument from the `server_args` line, as written.
    pub fn launch_arg(&self, key: &str) -> Option<&str> {
        self.launch_args
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// `server_args` worth showing next to a verdict.
const LAUNCH_ARGS: [&str; 24] = [
    "model_path",
    "device",
    "tp_size",
    "dp_size",
    "pp_size",
    "ep_size",
    "enable_dp_attention",
    "mem_fraction_static",
    "max_total_tokens",
    "max_running_requests",
    "chunked_prefill_size",
    "context_length",
    "kv_cache_dtype",
    "page_size",
    "cuda_graph_max_bs",
    "disable_cuda_graph",
    "enable_hierarchical_cache",
    "hicache_size",
    "hicache_ratio",
    "schedule_policy",
    "schedule_conservativeness",
    "attention_backend",
    "speculative_algorithm",
    "disaggregation_mode",
];

/// Keep a line unless it is a duplicate from a TP rank > 0 (DP-attention lines are all kept).
fn rank_kept(ranks: &RankTags) -> bool {
    ranks.get(b"DP").is_some() || ranks.get(b"TP").is_none_or(|t| t == 0)
}

/// The scheduler a stats line comes from: its DP rank, or the old `gpu_id`/`gpu` tag.
type SchedKey = (u8, u32);

fn scheduler_key(ranks: &RankTags) -> Option<SchedKey> {
    if let Some(d) = ranks.get(b"DP") {
        Some((0, d))
    } else {
        ranks
            .get(b"gpu_id")
            .or_else(|| ranks.get(b"gpu"))
            .map(|g| (1, g))
    }
}

/// A Decode line that says nothing measurable (e.g. cut right after "batch") is ignored.
fn has_data(s: &StatsRef<'_>) -> bool {
    s.gen_throughput.is_some() || s.running_req.is_some() || s.token_usage.is_some()
}

fn max_u(a: Option<u64>, b: u64) -> Option<u64> {
    Some(a.map_or(b, |a| a.max(b)))
}

fn min_u(a: Option<u64>, b: u64) -> Option<u64> {
    Some(a.map_or(b, |a| a.min(b)))
}

fn ratio(num: f64, den: usize) -> Option<f64> {
    (den > 0).then(|| num / den as f64)
}

/// SGLang's rules in the shared skeleton: schedulers by DP rank (or GPU tag), Decode lines
/// after [`IDLE_GAP_SECS`] left out, the window's start from its first line with a time.
#[derive(Debug, Clone, Copy)]
pub struct Sglang;

impl Rules for Sglang {
    type Key = SchedKey;
    type Acc = Acc;
    const IDLE_GAP_SECS: f64 = IDLE_GAP_SECS;
    const LATE_START: bool = true;
}

/// What SGLang's log adds over the window beside the skeleton's counts (DP ranks' Decode
/// lines summed into intervals there). Replaced by a fresh one at the ready line, so that
/// warmup stats never count.
#[derive(Debug, Clone, Default)]
pub struct Acc {
    dp_ranks: Vec<u32>,
    prefill_lines: usize,
    garbled: usize,

    graph_label: Option<String>,
    graph_lines: usize,
    graph_on: usize,
    graph_on_run_max: Option<u64>,
    graph_off_run_min: Option<u64>,
    graph_off_run_max: Option<u64>,
    graph_off_run_sum: f64,
    graph_off_run_n: usize,
    steps: StepBuckets,

    input_sum: f64,
    input_n: usize,
    new_tokens: u64,
    cached_tokens: u64,

    retractions: u64,
    retracted: u64,
}

impl Acc {
    fn prefill(&mut self, s: &StatsRef<'_>) {
        self.prefill_lines += 1;
        if let Some(t) = s.input_throughput {
            self.input_sum += t;
            self.input_n += 1;
        }
        self.new_tokens = self.new_tokens.saturating_add(s.new_token.unwrap_or(0));
        self.cached_tokens = self
            .cached_tokens
            .saturating_add(s.cached_token.unwrap_or(0));
    }
}

impl Window<Sglang> {
    /// A Decode line the skeleton counts.
    fn keep(&mut self, s: &StatsRef<'_>, key: Option<SchedKey>) {
        if let Some(u) = s.token_usage {
            self.stats.usage(u);
        }
        let a = &mut self.acc;
        a.steps.line(s.running_req, s.gen_throughput, s.graph);
        if let Some(g) = s.graph {
            a.graph_lines += 1;
            if a.graph_label.is_none() {
                a.graph_label = Some(String::from_utf8_lossy(s.graph_label).into_owned());
            }
            match (g, s.running_req) {
                (true, r) => {
                    a.graph_on += 1;
                    if let Some(r) = r {
                        a.graph_on_run_max = max_u(a.graph_on_run_max, r);
                    }
                }
                (false, Some(r)) => {
                    a.graph_off_run_min = min_u(a.graph_off_run_min, r);
                    a.graph_off_run_max = max_u(a.graph_off_run_max, r);
                    a.graph_off_run_sum += r as f64;
                    a.graph_off_run_n += 1;
                }
                (false, None) => {}
            }
        }
        self.intervals.line(
            &mut self.stats,
            s.ts(),
            key,
            s.gen_throughput,
            s.running_req,
            s.queue_req,
        );
    }
}

/// Streaming summary of one log: feed it lines in order, ask for the summary at any time.
#[derive(Debug, Clone, Default)]
pub struct Summarizer {
    core: Skeleton<Sglang>,

    max_total_num_tokens: Option<u64>,
    max_running_requests: Option<u64>,
    context_len: Option<u64>,
    chunked_prefill_size: Option<i64>,
    available_mem_gb: Option<f64>,
    kv_seen: bool,
    kv_cache_gb: Option<f64>,
    kv_dtype_alloc: Option<String>,
    kv_dtype_line: Option<String>,
    kv_dtype_arg: Option<String>,
    hicache_host_gb: Option<f64>,
    hicache_host_tokens: Option<u64>,
    radix_cache_disabled: bool,
    capture_bs: Option<u64>,
    graph_bs_arg: Option<u64>,
    graphs_disabled: bool,
    args_seen: bool,
    launch_args: Vec<(String, String)>,
    error_lines: usize,
    features: u64,
    inspected: [usize; 2],
}

impl Summarizer {
    pub fn new(scope: Scope) -> Summarizer {
        Summarizer {
            core: Skeleton::new(scope),
            ..Summarizer::default()
        }
    }

    /// Lines fed so far.
    pub fn lines(&self) -> usize {
        self.core.lines()
    }

    /// The last non-stats, non-access lines (at most [`TAIL_LINES`]), oldest first.
    pub fn tail(&self) -> Vec<String> {
        self.core.tail.to_strings()
    }

    /// Feed the next line (without its newline; a trailing `\r` is ignored).
    pub fn feed_line(&mut self, line: &[u8]) {
        let (idx, line) = self.core.next_line(line);
        scan_with(line, |sc| match sc {
            Scanned::Stats(s) => self.on_stats(idx, s),
            Scanned::Skip => {}
            Scanned::Nothing => self.core.tail.push(line),
            Scanned::Event(ev) => {
                self.core.tail.push(line);
                self.on_event(idx, line, ev);
            }
        })
    }

    fn on_stats(&mut self, idx: usize, s: &StatsRef<'_>) {
        let ts = s.ts();
        if ts.is_some() {
            self.core.last_ts = ts;
        }
        let k = usize::from(s.kind == StatsKind::Prefill);
        if let Some(n) = self.inspected.get_mut(k) {
            if *n < version::INSPECT_LINES {
                *n += 1;
                self.features |= version::stats_features(s);
            }
        }
        let ranks = &s.prefix.ranks;
        if !rank_kept(ranks) {
            return;
        }
        let in_scope = self.core.in_scope(idx, ts);
        let w = &mut self.core.window;
        if in_scope {
            w.all_stats += 1;
        }
        match s.kind {
            StatsKind::Prefill => {
                if in_scope {
                    w.acc.prefill(s);
                    w.note_span(idx, ts);
                }
            }
            StatsKind::Decode => {
                if !has_data(s) {
                    if in_scope {
                        w.acc.garbled += 1;
                    }
                    return;
                }
                let key = scheduler_key(ranks);
                let kept = self.core.admit(idx, ts, key, in_scope, false);
                let w = &mut self.core.window;
                if in_scope {
                    if let Some(d) = ranks.get(b"DP") {
                        if !w.acc.dp_ranks.contains(&d) {
                            w.acc.dp_ranks.push(d);
                        }
                    }
                }
                if kept {
                    w.keep(s, key);
                }
            }
        }
    }

    fn on_event(&mut self, idx: usize, line: &[u8], ev: LogEvent) {
        self.features |= version::event_features(line, &ev);
        match ev {
            LogEvent::Ready => self.core.ready(idx),
            LogEvent::Capacity(c) => {
                self.max_total_num_tokens = self.max_total_num_tokens.or(c.max_total_num_tokens);
                self.max_running_requests = self.max_running_requests.or(c.max_running_requests);
                self.context_len = self.context_len.or(c.context_len);
                self.chunked_prefill_size = self.chunked_prefill_size.or(c.chunked_prefill_size);
                self.available_mem_gb = self.available_mem_gb.or(c.available_mem_gb);
            }
            LogEvent::KvAlloc(k) => {
                if !self.kv_seen {
                    self.kv_seen = true;
                    self.kv_cache_gb = k.total_gb();
                    self.kv_dtype_alloc = k.dtype;
                }
            }
            LogEvent::KvCacheDtype(d) => {
                self.kv_dtype_line.get_or_insert(d);
            }
            LogEvent::ServerArgs(args) => {
                if !self.args_seen {
                    self.args_seen = true;
                    self.on_server_args(args);
                }
            }
            LogEvent::HiCacheAlloc { gb, tokens } => {
                // The first line's, both figures from it.
                if self.hicache_host_gb.is_none() {
                    self.hicache_host_gb = Some(gb);
                    self.hicache_host_tokens = tokens;
                }
            }
            LogEvent::Retract(r) => {
                let p = parse_prefix_bytes(line);
                if p.ts.is_some() {
                    self.core.last_ts = p.ts;
                }
                if self.core.in_scope(idx, p.ts) && rank_kept(&p.ranks) {
                    let a = &mut self.core.window.acc;
                    a.retractions += 1;
                    a.retracted = a.retracted.saturating_add(r.retracted_reqs);
                }
            }
            LogEvent::GraphBatchSizes { max_bs } => {
                self.capture_bs = max_u(self.capture_bs, max_bs);
            }
            LogEvent::GraphsDisabled => self.graphs_disabled = true,
            LogEvent::Error(_) => self.error_lines += 1,
            LogEvent::Stats(_) => {}
        }
    }

    fn on_server_args(&mut self, args: Vec<(String, String)>) {
        for (k, v) in args {
            match k.as_str() {
                "kv_cache_dtype" if !v.is_empty() && v != "auto" && v != "None" => {
                    self.kv_dtype_arg = Some(v.clone());
                }
                "cuda_graph_max_bs" => self.graph_bs_arg = super::fields::parse_u64(&v),
                "disable_cuda_graph" if v == "True" => self.graphs_disabled = true,
                "disable_radix_cache" if v == "True" => self.radix_cache_disabled = true,
                _ => {}
            }
            if LAUNCH_ARGS.contains(&k.as_str()) {
                self.launch_args.push((k, v));
            }
        }
    }

    /// The summary of everything fed so far (the open interval included).
    pub fn summary(&self) -> ServerSummary {
        let w = self.core.closed();
        let a = &w.acc;
        let total_prefill = a.new_tokens.saturating_add(a.cached_tokens);
        let mut summary = ServerSummary {
            engine: Engine::Sglang,
            engine_version: None,
            stats_lines: w.stats_lines,
            prefill_lines: a.prefill_lines,
            excluded_decode_lines: w.excluded,
            max_total_num_tokens: self.max_total_num_tokens,
            max_running_requests: self.max_running_requests,
            context_len: self.context_len,
            kv_cache_dtype: self
                .kv_dtype_alloc
                .clone()
                .or_else(|| self.kv_dtype_line.clone())
                .or_else(|| self.kv_dtype_arg.clone()),
            kv_cache_gb: self.kv_cache_gb,
            hicache_host_gb: self.hicache_host_gb,
            hicache_host_tokens: self.hicache_host_tokens,
            radix_cache_disabled: self.radix_cache_disabled,
            retractions: a.retractions,
            retracted_requests: a.retracted,
            ready_seen: self.core.ready_line.is_some(),
            lines: self.core.lines(),
            ready_line: self.core.ready_line,
            warmup_stats_lines: self.core.warmup_stats,
            idle_gap_lines: w.idle_excluded,
            garbled_stats_lines: a.garbled,
            error_lines: self.error_lines,
            window: w.span,
            intervals: w.intervals.count,
            dp_ranks: a.dp_ranks.len(),
            graph_label: a.graph_label.clone(),
            graph_lines: a.graph_lines,
            graph_on_lines: a.graph_on,
            graph_on_share: ratio(a.graph_on as f64, a.graph_lines),
            graph_on_running_max: a.graph_on_run_max,
            graph_off_running_min: a.graph_off_run_min,
            graph_off_running_mean: ratio(a.graph_off_run_sum, a.graph_off_run_n),
            graph_off_running_max: a.graph_off_run_max,
            decode_steps: a.steps.buckets(),
            cuda_graph_max_bs: self.capture_bs.or(self.graph_bs_arg),
            graphs_disabled: self.graphs_disabled,
            prefill_input_throughput_mean: ratio(a.input_sum, a.input_n),
            prefill_new_tokens: a.new_tokens,
            prefill_cached_tokens: a.cached_tokens,
            cached_token_share: (total_prefill > 0)
                .then(|| a.cached_tokens as f64 / total_prefill as f64),
            chunked_prefill_size: self.chunked_prefill_size,
            available_mem_gb: self.available_mem_gb,
            launch_args: self.launch_args.clone(),
            version: version::hints(self.features),
            ..ServerSummary::default()
        };
        summary.set_window(w.stats.figures());
        summary
    }
}

/// Splits what a reader yields into lines, in place, in 1 MiB chunks. A line longer than the
/// buffer is handed out cut to the buffer's size (and counted once). A final line without a
/// newline is handed out by [`LineReader::finish`], as `str::lines` would.
#[derive(Debug)]
pub struct LineReader {
    buf: Vec<u8>,
    filled: usize,
    skipping: bool,
}

impl Default for LineReader {
    fn default() -> Self {
        LineReader::new()
    }
}

/// Size of [`LineReader`]'s buffer, and so the longest line it keeps whole.
pub const READ_CHUNK: usize = 1 << 20;

fn trim_cr(l: &[u8]) -> &[u8] {
    l.strip_suffix(b"\r").unwrap_or(l)
}

impl LineReader {
    pub fn new() -> LineReader {
        LineReader {
            buf: vec![0; READ_CHUNK],
            filled: 0,
            skipping: false,
        }
    }

    /// Forget any partial line (after the file was truncated).
    pub fn reset(&mut self) {
        self.filled = 0;
        self.skipping = false;
    }

    /// Read until `r` reports the end, calling `f` for each complete line. A partial last line
    /// stays buffered. Returns the bytes read.
    pub fn read_available<R: Read>(
        &mut self,
        r: &mut R,
        f: &mut impl FnMut(&[u8]),
    ) -> io::Result<u64> {
        let mut total = 0u64;
        loop {
            if self.filled >= self.buf.len() {
                if !self.skipping {
                    f(trim_cr(&self.buf));
                }
                self.skipping = true;
                self.filled = 0;
            }
            let n = match r.read(self.buf.get_mut(self.filled..).unwrap_or_default()) {
                Ok(0) => return Ok(total),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            total += n as u64;
            let scan_from = self.filled;
            self.filled += n;
            let data = self.buf.get(..self.filled).unwrap_or_default();
            let mut start = 0;
            for nl in memchr_iter(b'\n', data.get(scan_from..).unwrap_or_default()) {
                let end = scan_from + nl;
                if self.skipping {
                    self.skipping = false;
                } else {
                    f(trim_cr(data.get(start..end).unwrap_or_default()));
                }
                start = end + 1;
            }
            if start > 0 {
                self.buf.copy_within(start..self.filled, 0);
                self.filled -= start;
            }
        }
    }

    /// Hand out a final line that had no newline.
    pub fn finish(&mut self, f: &mut impl FnMut(&[u8])) {
        if self.filled > 0 && !self.skipping {
            f(trim_cr(self.buf.get(..self.filled).unwrap_or_default()));
        }
        self.reset();
    }
}

/// Summarise a whole log from a reader, streaming.
pub fn summarize_reader<R: Read>(mut r: R, scope: Scope) -> io::Result<Summarizer> {
    let mut s = Summarizer::new(scope);
    let mut lr = LineReader::new();
    lr.read_available(&mut r, &mut |l| s.feed_line(l))?;
    lr.finish(&mut |l| s.feed_line(l));
    Ok(s)
}

/// Summarise a log file, streaming (constant memory, whatever its size).
pub fn summarize_file(path: &Path, scope: Scope) -> io::Result<Summarizer> {
    summarize_reader(std::fs::File::open(path)?, scope)
}

/// Summarise a whole server.log text. Startup facts (capacity, KV alloc, hicache) come from the
/// whole file; stats and retractions only from lines inside `window` (all lines after the ready
/// line when window is None).
///
/// Stats lines before the first ready line (warmup) are always excluded; when the log has no
/// ready line at all, nothing is excluded for warmup. Within the window, the first Decode line of
/// each scheduler (DP rank) and every Decode line more than [`IDLE_GAP_SECS`] after that
/// scheduler's previous Decode line (anywhere in the file) are excluded. TP>0 duplicates are
/// dropped unless the line carries a DP rank.
#[cfg(test)]
pub fn summarize_text(text: &str, window: Option<LogWindow>) -> ServerSummary {
    let mut s = Summarizer::new(Scope {
        lines: window,
        ..Scope::default()
    });
    for l in text.lines() {
        s.feed_line(l.as_bytes());
    }
    s.summary()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::sglang_log::prefix::{Timestamp, parse_prefix};
    use crate::observe::sglang_log::scan::parse_line;

    /// The engine is written only for vLLM, as the string it always was; a summary without one
    /// (SGLang's, or any from before vLLM) reads as SGLang's.
    #[test]
    fn the_engine_is_written_only_for_vllm() {
        let sglang = ServerSummary::default();
        let json = serde_json::to_value(&sglang).unwrap_or_else(|e| panic!("{e}"));
        assert!(json.get("engine").is_none(), "{json}");
        let vllm = ServerSummary {
            engine: Engine::Vllm,
            ..ServerSummary::default()
        };
        let json = serde_json::to_value(&vllm).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(json["engine"], serde_json::json!("vllm"));
        let back: ServerSummary = serde_json::from_value(json).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, vllm);
        let old: ServerSummary =
            serde_json::from_str(r#"{"stats_lines": 3}"#).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((old.engine, old.stats_lines), (Engine::Sglang, 3));
    }

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-6)
    }

    const STARTUP: &str = "\
[2026-11-30 15:44:30] server_args={'model_path': '/tmp/m', 'kv_cache_dtype': 'auto', 'mem_fraction_static': 0.716}
[2026-11-30 15:45:03] Load weight end. elapsed=0.03 s, type=LlamaForCausalLM, avail mem=20.82 GB, mem usage=0.02 GB.
[2026-11-30 15:45:04] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 16384, K size: 0.02 GB, V size: 0.02 GB
[2026-11-30 15:45:04] Memory pool end. avail mem=20.73 GB
[2026-11-30 15:45:04] max_total_num_tokens=16384, chunked_prefill_size=4096, max_prefill_tokens=16384, max_running_requests=2048, context_len=4096, available_cpu_mem=20.73 GB
[2026-11-30 15:45:05] Prefill batch, #new-seq: 1, #new-token: 11, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, #pending-token: 0, cpu graph: False, input throughput (token/s): 9.44
[2026-11-30 15:45:05] Decode batch, #running-req: 1, #token: 19, token usage: 0.00, cpu graph: False, gen throughput (token/s): 5.00, #queue-req: 0
[2026-11-30 15:45:05] The server is fired up and ready to roll!
";

    fn decode(t: &str, run: u64, usage: f64, thr: f64, q: u64) -> String {
        format!(
            "[2026-11-30 {t}] Decode batch, #running-req: {run}, #token: 1725, token usage: {usage:.2}, cpu graph: False, gen throughput (token/s): {thr:.2}, #queue-req: {q}\n"
        )
    }

    fn synthetic() -> String {
        let mut s = STARTUP.to_string(); // lines 0..=7, ready at 7
        s += "[2026-11-30 15:46:00] Prefill batch, #new-seq: 3, #new-token: 192, #cached-token: 0, token usage: 0.01, #running-req: 0, #queue-req: 29, #pending-token: 0, cpu graph: False, input throughput (token/s): 900.00\n"; // 8
        s += &decode("15:46:01", 3, 0.10, 4.0, 29); // 9: first decode after ready: excluded
        s += &decode("15:46:02", 3, 0.50, 500.0, 28); // 10
        s += &decode("15:46:03", 3, 0.80, 600.0, 27); // 11
        s += "Capturing junk 100%|███| [00:01<00:00]\n"; // 12
        s += "[2026-11-30 15:46:04] KV cache pool is full. Retract requests. #retracted_reqs: 2, #new_tokens_gained: 340, #new_token_ratio: 0.0980 -> 0.7047\n"; // 13
        s += &decode("15:46:04", 2, 0.84, 700.0, 26); // 14
        s += &decode("15:46:30", 1, 0.20, 3.0, 0); // 15: idle gap 26 s: excluded
        s += &decode("15:46:31", 1, 0.20, 300.0, 0); // 16
        s
    }

    #[test]
    fn synthetic_log_default_window() {
        let sum = summarize_text(&synthetic(), None);
        assert!(sum.ready_seen);
        assert!(sum.has_stats());
        assert_eq!(sum.prefill_lines, 1); // warmup Prefill excluded
        assert_eq!(sum.stats_lines, 4); // lines 10, 11, 14, 16
        assert_eq!(sum.excluded_decode_lines, 2); // 9 (first) and 15 (idle gap)
        assert!(close(
            sum.gen_throughput_mean,
            (500.0 + 600.0 + 700.0 + 300.0) / 4.0
        ));
        assert!(close(sum.gen_throughput_median, 550.0));
        assert!(close(sum.running_req_mean, 9.0 / 4.0));
        assert_eq!(sum.running_req_max, Some(3));
        assert!(close(sum.queue_req_mean, (28.0 + 27.0 + 26.0) / 4.0));
        assert_eq!(sum.queue_req_max, Some(28));
        assert!(close(sum.token_usage_mean, (0.5 + 0.8 + 0.84 + 0.2) / 4.0));
        assert!(close(sum.token_usage_max, 0.84));
        assert_eq!(sum.max_total_num_tokens, Some(16384));
        assert_eq!(sum.max_running_requests, Some(2048));
        assert_eq!(sum.context_len, Some(4096));
        assert_eq!(sum.kv_cache_dtype.as_deref(), Some("torch.bfloat16"));
        assert!(close(sum.kv_cache_gb, 0.04));
        assert_eq!(sum.hicache_host_gb, None);
        assert_eq!(sum.retractions, 1);
        assert_eq!(sum.retracted_requests, 2);
    }

    /// The decode steps come from the kept Decode lines only (not warm-up, not a rank's first
    /// line, not after an idle gap, not a garbled one), bucketed by `#running-req` with the
    /// majority graph flag of either graph field (`cuda graph`, `cpu graph`; none: unknown).
    #[test]
    fn decode_steps_by_running_batch() {
        let line = |t: &str, run: u64, thr: f64, graph: &str| {
            format!(
                "[2026-11-30 {t}] Decode batch, #running-req: {run}, #token: 100, token usage: 0.10, {graph}gen throughput (token/s): {thr:.2}, #queue-req: 0\n"
            )
        };
        let mut s = STARTUP.to_string(); // warm-up Decode line (running 1) before ready: left out
        s += &line("15:46:01", 9, 100.0, "cuda graph: True, "); // first: left out
        s += &line("15:46:02", 4, 400.0, "cuda graph: True, "); // 10 ms
        s += &line("15:46:03", 4, 200.0, "cuda graph: True, "); // 20 ms
        s += &line("15:46:04", 8, 500.0, "cuda graph: False, "); // 16 ms
        s += &line("15:46:05", 8, 400.0, "cuda graph: False, "); // 20 ms
        s += &line("15:46:06", 8, 800.0, "cuda graph: True, "); // 10 ms
        s += "[2026-11-30 15:46:07] Decode batch,\n"; // garbled: left out
        s += &line("15:46:40", 16, 1.0, "cpu graph: False, "); // after an idle gap: left out
        s += &line("15:46:41", 16, 800.0, "cpu graph: False, "); // 20 ms
        s += &line("15:46:42", 0, 0.0, "cpu graph: False, "); // nothing running: no step
        s += &line("15:46:43", 2, 100.0, ""); // 20 ms, no graph field
        let sum = summarize_text(&s, None);
        assert_eq!(sum.garbled_stats_lines, 1);
        let got: Vec<(f64, f64, u32, Option<bool>)> = sum
            .decode_steps
            .iter()
            .map(|b| {
                (
                    b.running,
                    (b.step_ms * 1000.0).round() / 1000.0,
                    b.lines,
                    b.graph,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (2.0, 20.0, 1, None),
                (4.0, 15.0, 2, Some(true)),
                (8.0, 15.333, 3, Some(false)),
                (16.0, 20.0, 1, Some(false)),
            ]
        );
        // Written to summary.json and read back; a summary from before the field has none.
        let json = serde_json::to_string(&sum).unwrap_or_else(|e| panic!("{e}"));
        let back: ServerSummary = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back.decode_steps, sum.decode_steps);
        let none = serde_json::to_value(ServerSummary::default()).unwrap_or_else(|e| panic!("{e}"));
        assert!(none.get("decode_steps").is_none(), "{none}");
    }

    #[test]
    fn synthetic_log_explicit_window() {
        // Lines 11..15: 11 is the window's first Decode (excluded), 14 kept; the retraction at
        // 13 counts; 15 and 16 are outside.
        let sum = summarize_text(
            &synthetic(),
            Some(LogWindow {
                start_line: 11,
                end_line: 15,
            }),
        );
        assert_eq!(sum.stats_lines, 1);
        assert_eq!(sum.excluded_decode_lines, 1);
        assert!(close(sum.gen_throughput_mean, 700.0));
        assert!(close(sum.gen_throughput_median, 700.0));
        assert_eq!(sum.prefill_lines, 0);
        assert_eq!(sum.retractions, 1);
        // Startup facts still come from the whole file.
        assert_eq!(sum.max_total_num_tokens, Some(16384));

        // A window ending before the retraction and covering warmup only: no stats.
        let sum = summarize_text(
            &synthetic(),
            Some(LogWindow {
                start_line: 0,
                end_line: 8,
            }),
        );
        assert!(!sum.has_stats());
        assert_eq!(sum.retractions, 0);
        assert_eq!(sum.gen_throughput_mean, None);
        // Window past the end of the file.
        let sum = summarize_text(
            &synthetic(),
            Some(LogWindow {
                start_line: 100,
                end_line: 50,
            }),
        );
        assert!(!sum.has_stats());
    }

    #[test]
    fn no_stats_log_gives_none() {
        let sum = summarize_text(STARTUP, None);
        assert!(sum.ready_seen);
        assert_eq!(sum.stats_lines, 0);
        assert!(!sum.has_stats());
        assert_eq!(sum.gen_throughput_mean, None);
        assert_eq!(sum.gen_throughput_median, None);
        assert_eq!(sum.running_req_mean, None);
        assert_eq!(sum.running_req_max, None);
        assert_eq!(sum.queue_req_mean, None);
        assert_eq!(sum.queue_req_max, None);
        assert_eq!(sum.token_usage_mean, None);
        assert_eq!(sum.token_usage_max, None);
        assert_eq!(sum.max_total_num_tokens, Some(16384));

        let empty = summarize_text("", None);
        assert_eq!(empty, ServerSummary::default());
        assert!(!empty.ready_seen);
    }

    #[test]
    fn dp_attention_aggregation_and_tp_duplicates() {
        let mut s = String::new();
        s += "[2026-01-10 10:00:00 DP0 TP0] max_total_num_tokens=100000, chunked_prefill_size=4096, max_prefill_tokens=16384, max_running_requests=1024, context_len=8192, available_gpu_mem=10.00 GB\n";
        s += "[2026-01-10 10:00:00 DP0 TP0] KV Cache is allocated. #tokens: 100000, KV size: 6.00 GB\n";
        s += "[2026-01-10 10:00:00 DP1 TP1] KV Cache is allocated. #tokens: 100000, KV size: 6.00 GB\n";
        s += "[2026-01-10 10:00:01 DP0 TP0] Allocating 48.00 GB host memory for hierarchical KV cache.\n";
        s += "[2026-01-10 10:00:05] The server is fired up and ready to roll!\n";
        let d = |t: &str, dp: u32, run: u64, usage: f64, thr: f64, q: u64| {
            format!(
                "[2026-01-10 {t} DP{dp} TP{dp} EP{dp}] Decode batch, #running-req: {run}, #token: 10, token usage: {usage:.2}, cuda graph: True, gen throughput (token/s): {thr:.2}, #queue-req: {q}\n"
            )
        };
        // First lines of each DP rank: excluded.
        s += &d("10:01:00.100", 0, 1, 0.01, 1.0, 0);
        s += &d("10:01:00.120", 1, 1, 0.01, 1.0, 0);
        // Interval 1.
        s += &d("10:01:02.100", 0, 10, 0.30, 1000.0, 2);
        s += &d("10:01:02.130", 1, 12, 0.40, 1100.0, 3);
        // Interval 2 (the two ranks straddle a second boundary).
        s += &d("10:01:03.990", 0, 11, 0.50, 900.0, 1);
        s += &d("10:01:04.010", 1, 13, 0.60, 1300.0, 0);
        let sum = summarize_text(&s, None);
        assert_eq!(sum.excluded_decode_lines, 2);
        assert_eq!(sum.stats_lines, 4);
        assert!(close(sum.gen_throughput_mean, (2100.0 + 2200.0) / 2.0));
        assert!(close(sum.gen_throughput_median, 2150.0));
        assert!(close(sum.running_req_mean, 23.0));
        assert_eq!(sum.running_req_max, Some(24));
        assert!(close(sum.queue_req_mean, 3.0));
        assert_eq!(sum.queue_req_max, Some(5));
        assert!(close(sum.token_usage_mean, 0.45));
        assert!(close(sum.token_usage_max, 0.6));
        assert_eq!(sum.max_total_num_tokens, Some(100000));
        assert!(close(sum.kv_cache_gb, 6.0));
        assert_eq!(sum.kv_cache_dtype, None);
        assert!(close(sum.hicache_host_gb, 48.0));

        // Plain TP=2 (old versions printed on every TP rank): TP1 duplicates dropped.
        let mut t =
            String::from("[2025-01-01 00:00:00] The server is fired up and ready to roll!\n");
        for (sec, thr) in [(1, 10.0), (2, 200.0), (3, 400.0)] {
            for tp in 0..2 {
                t += &format!(
                    "[2025-01-01 00:00:0{sec} TP{tp}] Decode batch. #running-req: 4, #token: 10, token usage: 0.10, gen throughput (token/s): {thr:.2}, #queue-req: 0\n"
                );
            }
        }
        t += "[2025-01-01 00:00:04 TP0] Decode out of memory happened. #retracted_reqs: 1, #new_token_ratio: 0.4000 -> 0.8000\n";
        t += "[2025-01-01 00:00:04 TP1] Decode out of memory happened. #retracted_reqs: 1, #new_token_ratio: 0.4000 -> 0.8000\n";
        let sum = summarize_text(&t, None);
        assert_eq!(sum.stats_lines, 2);
        assert_eq!(sum.excluded_decode_lines, 1);
        assert!(close(sum.gen_throughput_mean, 300.0));
        assert!(close(sum.running_req_mean, 4.0));
        assert_eq!(sum.retractions, 1);
        assert_eq!(sum.retracted_requests, 1);
    }

    #[test]
    fn old_log_without_ready_or_timestamps() {
        let log = "\
#running-req: 1, #token: 10, token usage: 0.01, gen throughput (token/s): 1.00, #queue-req: 0
#running-req: 4, #token: 40, token usage: 0.04, gen throughput (token/s): 100.00, #queue-req: 2
#running-req: 6, #token: 60, token usage: 0.06, gen throughput (token/s): 200.00, #queue-req: 0
decode out of memory happened, #retracted_reqs: 3, #new_token_ratio: 0.5000 -> 0.7000
";
        let sum = summarize_text(log, None);
        assert!(!sum.ready_seen);
        assert_eq!(sum.stats_lines, 2);
        assert_eq!(sum.excluded_decode_lines, 1);
        assert!(close(sum.gen_throughput_mean, 150.0));
        assert_eq!(sum.running_req_max, Some(6));
        assert_eq!(sum.retracted_requests, 3);
    }

    /// Issue 50: the host pool named in tokens as well as GB, and the radix cache off read
    /// from the server args in both of SGLang's forms.
    #[test]
    fn the_host_pool_in_tokens_and_the_radix_cache_off() {
        let log = "[2026-12-07 10:00:00] Allocating kv hierarchical KV host pool: 8800 tokens, 0.01 GB host memory.\n\
                   [2026-12-07 10:00:00] Allocating kv hierarchical KV host pool: 1 tokens, 9.00 GB host memory.\n";
        let sum = summarize_text(log, None);
        assert_eq!(sum.hicache_host_tokens, Some(8800));
        assert!(close(sum.hicache_host_gb, 0.01));
        assert!(!sum.radix_cache_disabled);
        // The older wording gives the GB alone.
        let old = summarize_text(
            "Allocating 48.00 GB host memory for hierarchical KV cache.\n",
            None,
        );
        assert_eq!(
            (old.hicache_host_tokens, old.hicache_host_gb),
            (None, Some(48.0))
        );
        for args in [
            "server_args={'model_path': '/m', 'disable_radix_cache': True}",
            "server_args=ServerArgs(model_path='/m', disable_radix_cache=True)",
        ] {
            assert!(summarize_text(&format!("{args}\n"), None).radix_cache_disabled);
        }
        assert!(
            !summarize_text("server_args={'disable_radix_cache': False}\n", None)
                .radix_cache_disabled
        );
    }

    #[test]
    fn kv_dtype_fallbacks() {
        let log = "server_args=ServerArgs(model_path='/m', kv_cache_dtype='fp8_e4m3')\n\
                   [2025-03-10 00:00:00 TP0] KV Cache is allocated. #tokens: 10, K size: 1.00 GB, V size: 1.00 GB\n";
        assert_eq!(
            summarize_text(log, None).kv_cache_dtype.as_deref(),
            Some("fp8_e4m3")
        );
        let log2 =
            format!("{log}[2025-03-10 00:00:00 TP0] Using KV cache dtype: torch.float8_e4m3fn\n");
        assert_eq!(
            summarize_text(&log2, None).kv_cache_dtype.as_deref(),
            Some("torch.float8_e4m3fn")
        );
        let log3 = "server_args={'kv_cache_dtype': 'auto'}\n";
        assert_eq!(summarize_text(log3, None).kv_cache_dtype, None);
    }

    #[test]
    fn serializes_to_json() {
        let sum = summarize_text(&synthetic(), None);
        let json = serde_json::to_string(&sum).unwrap();
        let back: ServerSummary = serde_json::from_str(&json).unwrap();
        assert_eq!(back, sum);
        let ev = parse_line("[2026-09-24 01:47:50.615 DP3 TP3 EP3] Decode batch, #running-req: 12, gen throughput (token/s): 1.50").unwrap();
        let json = serde_json::to_string(&ev).unwrap();
        assert!(json.contains("\"DP\""));
        let back: LogEvent = serde_json::from_str(&json).unwrap();
        assert_eq!(back, ev);
    }

    /// A reader that hands out at most `step` bytes per read, to cross chunk boundaries.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }
    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(buf.len()).min(self.data.len());
            let (head, rest) = self.data.split_at(n);
            buf[..n].copy_from_slice(head);
            self.data = rest;
            Ok(n)
        }
    }

    #[test]
    fn streaming_reader_equals_text() {
        let text = synthetic() + "[2026-11-30 15:46:32] Decode batch, #running-req: 1"; // no newline
        let want = summarize_text(&text, None);
        for step in [1, 7, 100, 1 << 20] {
            let got = summarize_reader(
                Trickle {
                    data: text.as_bytes(),
                    step,
                },
                Scope::default(),
            )
            .map(|s| s.summary());
            assert_eq!(got.as_ref().ok(), Some(&want), "step {step}");
        }
        // CRLF line ends read the same.
        let crlf = text.replace('\n', "\r\n");
        let got = summarize_reader(crlf.as_bytes(), Scope::default()).map(|s| s.summary());
        assert_eq!(got.ok(), Some(want));
    }

    #[test]
    fn overlong_line_is_cut_and_counted_once() {
        let mut text = STARTUP.to_string();
        text.push_str(&"x".repeat(READ_CHUNK * 2 + 5));
        text.push('\n');
        text += &decode("15:46:02", 3, 0.50, 500.0, 28);
        text += &decode("15:46:03", 3, 0.50, 500.0, 28);
        let s = summarize_reader(text.as_bytes(), Scope::default())
            .map(|s| s.summary())
            .unwrap_or_default();
        assert_eq!(s.lines, 11);
        assert_eq!(s.stats_lines, 1);
        assert_eq!(summarize_text(&text, None).lines, 11);
    }

    #[test]
    fn time_scope() {
        let ts = |t: &str| Timestamp {
            date: Some((2026, 11, 30)),
            secs_of_day: crate::observe::sglang_log::prefix::parse_datetime(
                format!("{t}]").as_bytes(),
                0,
                false,
            )
            .map(|(t, _, _)| t.secs_of_day)
            .unwrap_or(0.0),
        };
        let mut s = Summarizer::new(Scope {
            lines: None,
            since: Some(ts("15:46:02")),
            until: Some(ts("15:46:04")),
        });
        for l in synthetic().lines() {
            s.feed_line(l.as_bytes());
        }
        let sum = s.summary();
        // 10 (first in scope: excluded) and 11 kept; the retraction at 15:46:04 is outside.
        assert_eq!(sum.excluded_decode_lines, 1);
        assert_eq!(sum.stats_lines, 1);
        assert!(close(sum.gen_throughput_mean, 600.0));
        assert_eq!(sum.retractions, 0);
        assert_eq!(sum.window.first_line, Some(10));
        assert_eq!(sum.window.last_line, Some(11));
        assert!(close(sum.window.seconds, 1.0));
    }

    mod props {
        use super::*;
        use crate::observe::sglang_log::jsonl;
        use crate::observe::sglang_log::scan::scan_owned;
        use proptest::collection::vec;
        use proptest::prelude::*;
        use proptest::sample::{Index, select};

        /// The bytes log lines are made of, so that random edits get deep into the parsers.
        const ALPHABET: &[u8] =
            b"[]():,.=# -_0123456789TPDEGBabcdefghijklmnopqrstuvwxyz'\"{}\\\n\r\t%>";

        /// Lines of every format the parsers know, for the edits to start from.
        fn seeds() -> Vec<String> {
            synthetic()
                .lines()
                .map(str::to_string)
                .chain(
                    [
                        "[2026-09-24 01:47:50.615 DP3 TP3 EP3] Decode batch, #running-req: 12, #token: 5000, token usage: 0.20, cuda graph: True, gen throughput (token/s): 1500.25, #queue-req: 0",
                        "new fill batch. #seq: 1. #cached_token: 0. #new_token: 11. #remaining_req: 0. #running_req: 0. tree_cache_hit_rate: 0.00%.",
                        "[gpu_id=0] Prefil batch. #new-seq: 1, #new-token: 7, #cached-token: 1, cache hit rate: 12.50%, #running-req: 0, #queue-req: 0",
                        "[2024-10-20 12:34:56 TP0] Prefill batch(mixed #running-req: 3). #new-seq: 1",
                        "server_args=ServerArgs(model_path='/m', x=[1, (2, 3)], y={'a': \"b\\\"\"})",
                        "Allocating kv hierarchical KV host pool: 488282 tokens, 1.00 GB host memory.",
                        "[12:34:56 TP0] Decode batch [7], #token: full=1, swa=2, token usage: full=0.1, swa=0.2, est. x: 1",
                    ]
                    .iter()
                    .map(|s| s.to_string()),
                )
                .collect()
        }

        /// A byte from the alphabet or any byte (invalid UTF-8, NUL, `\r` included).
        fn byte() -> impl Strategy<Value = u8> {
            prop_oneof![select(ALPHABET), any::<u8>()]
        }

        #[derive(Debug, Clone)]
        enum Edit {
            Cut(Index),
            Insert(Index, u8),
            Remove(Index),
            /// Another whole line glued in front (true) or behind.
            Glue(String, bool),
            Splice(Index, Vec<u8>),
        }

        fn edit() -> impl Strategy<Value = Edit> {
            prop_oneof![
                any::<Index>().prop_map(Edit::Cut),
                (any::<Index>(), byte()).prop_map(|(i, b)| Edit::Insert(i, b)),
                any::<Index>().prop_map(Edit::Remove),
                (select(seeds()), any::<bool>()).prop_map(|(s, front)| Edit::Glue(s, front)),
                (
                    any::<Index>(),
                    prop_oneof![vec(select(ALPHABET), 0..40), vec(any::<u8>(), 0..40)]
                )
                    .prop_map(|(i, junk)| Edit::Splice(i, junk)),
            ]
        }

        fn apply(mut bytes: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
            for e in edits {
                match e {
                    Edit::Cut(i) => bytes.truncate(i.index(bytes.len() + 1)),
                    Edit::Insert(i, b) => bytes.insert(i.index(bytes.len() + 1), *b),
                    Edit::Remove(i) => {
                        if !bytes.is_empty() {
                            bytes.remove(i.index(bytes.len()));
                        }
                    }
                    Edit::Glue(other, true) => {
                        let mut o = other.clone().into_bytes();
                        o.extend_from_slice(&bytes);
                        bytes = o;
                    }
                    Edit::Glue(other, false) => bytes.extend_from_slice(other.as_bytes()),
                    Edit::Splice(i, junk) => {
                        let at = i.index(bytes.len() + 1);
                        bytes.splice(at..at, junk.iter().copied());
                    }
                }
            }
            bytes
        }

        /// A real line after a few random edits, pure random bytes, or a real line with
        /// random bytes spliced in.
        fn line() -> impl Strategy<Value = Vec<u8>> {
            prop_oneof![
                3 => (select(seeds()), vec(edit(), 1..7))
                    .prop_map(|(s, e)| apply(s.into_bytes(), &e)),
                1 => vec(any::<u8>(), 0..200),
                1 => (select(seeds()), any::<Index>(), vec(any::<u8>(), 0..200)).prop_map(
                    |(s, i, junk)| apply(s.into_bytes(), &[Edit::Splice(i, junk)])
                ),
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(128))]

            /// Every parser path, on random-ish lines: the owned parsers (through lossy
            /// UTF-8), the byte scanner and the JSONL encoder (raw bytes), and the streaming
            /// summary in odd chunk sizes, with `\r` line ends, a line longer than the
            /// reader's buffer, a line window and a time window. None may panic.
            #[test]
            fn no_parser_path_panics(
                lines in vec(line(), 1..64),
                cr_every in 2usize..9,
                overlong_at in proptest::option::weighted(0.08, any::<Index>()),
                window in (0usize..80, 0usize..80),
            ) {
                let mut raw: Vec<u8> = Vec::new();
                let mut text = String::new();
                for (n, bytes) in lines.iter().enumerate() {
                    let lossy = String::from_utf8_lossy(bytes);
                    let _ = parse_line(&lossy);
                    let _ = parse_prefix(&lossy);
                    let _ = jsonl::line_event(bytes).map(|e| e.to_json(n, Some("f")));
                    let _ = scan_owned(bytes);
                    if overlong_at.is_some_and(|i| i.index(lines.len()) == n) {
                        raw.extend(std::iter::repeat_n(b'[', READ_CHUNK + 17));
                        raw.push(b'\n');
                    }
                    raw.extend_from_slice(bytes);
                    raw.push(if n % cr_every == 0 { b'\r' } else { b'\n' });
                    text.push_str(&lossy);
                    text.push('\n');
                }
                // Byte by byte, except through the 1 MiB line (too slow unoptimised).
                let first_step = if overlong_at.is_some() { 4096 } else { 1 };
                for step in [first_step, 97, READ_CHUNK] {
                    let r = summarize_reader(Trickle { data: &raw, step }, Scope::default());
                    let _ = r.map(|s| (s.summary(), s.tail()));
                }
                let _ = summarize_text(&text, None);
                let _ = summarize_text(
                    &text,
                    Some(LogWindow {
                        start_line: window.0,
                        end_line: window.1,
                    }),
                );
                for step in [13, 4096] {
                    let r = summarize_reader(
                        Trickle {
                            data: text.as_bytes(),
                            step,
                        },
                        Scope {
                            lines: None,
                            since: Some(Timestamp {
                                date: None,
                                secs_of_day: 100.0,
                            }),
                            until: None,
                        },
                    );
                    let _ = r.map(|s| (s.summary(), s.tail()));
                }
            }
        }
    }
}
