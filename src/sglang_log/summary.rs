//! Folding a whole SGLang server log into one [`ServerSummary`].

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::line::{LogEvent, StatsKind, StatsLine, Timestamp, parse_line, parse_prefix, rank_of};

/// A Decode line more than this many seconds after the previous Decode line of the same
/// scheduler is excluded: its `gen throughput` averages over the idle time.
pub const IDLE_GAP_SECS: f64 = 10.0;

/// Decode lines of different DP ranks less than this many seconds apart (i.e. the same second
/// when the log has no milliseconds) belong to one logging interval and are summed.
pub const DP_GROUP_SECS: f64 = 1.0;

/// Which lines of the file count as the measured window: 0-based line indices, [start, end).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogWindow {
    pub start_line: usize,
    pub end_line: usize,
}

impl LogWindow {
    pub fn contains(&self, line: usize) -> bool {
        self.start_line <= line && line < self.end_line
    }
}

/// What a server log says about one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerSummary {
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
    /// Retraction lines in the window (TP>0 duplicates dropped) and the requests they retracted.
    pub retractions: u64,
    pub retracted_requests: u64,
    /// Whether `The server is fired up and ready to roll!` appears anywhere.
    pub ready_seen: bool,
}

impl ServerSummary {
    /// Whether any Decode line survived the exclusions.
    pub fn has_stats(&self) -> bool {
        self.stats_lines > 0
    }
}

/// Keep a line unless it is a duplicate from a TP rank > 0 (DP-attention lines are all kept).
fn rank_kept(ranks: &[(String, u32)]) -> bool {
    rank_of(ranks, "DP").is_some() || rank_of(ranks, "TP").is_none_or(|t| t == 0)
}

/// The scheduler a stats line comes from: its DP rank, or the old `gpu_id`/`gpu` tag.
fn scheduler_key(ranks: &[(String, u32)]) -> Option<(&'static str, u32)> {
    if let Some(d) = rank_of(ranks, "DP") {
        Some(("DP", d))
    } else if let Some(g) = rank_of(ranks, "gpu_id").or_else(|| rank_of(ranks, "gpu")) {
        Some(("gpu", g))
    } else {
        None
    }
}

/// A Decode line that says nothing measurable (e.g. cut right after "batch") is ignored.
fn has_data(s: &StatsLine) -> bool {
    s.gen_throughput.is_some() || s.running_req.is_some() || s.token_usage.is_some()
}

struct Kept {
    ts: Option<Timestamp>,
    key: Option<(&'static str, u32)>,
    gen_throughput: Option<f64>,
    running_req: Option<u64>,
    queue_req: Option<u64>,
}

/// One logging interval: the kept Decode lines of all DP ranks printed together.
struct Interval {
    ts: Option<Timestamp>,
    keys: Vec<(&'static str, u32)>,
    gen_throughput: Option<f64>,
    running_req: Option<u64>,
    queue_req: Option<u64>,
}

fn add_f(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x + y),
        (x, None) => x,
        (None, y) => y,
    }
}

fn add_u(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.saturating_add(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

fn group_intervals(kept: &[Kept]) -> Vec<Interval> {
    let mut out: Vec<Interval> = Vec::new();
    for k in kept {
        if let (Some(ts), Some(key), Some(last)) = (k.ts, k.key, out.last_mut()) {
            let joins = !last.keys.is_empty()
                && !last.keys.contains(&key)
                && last
                    .ts
                    .is_some_and(|lts| ts.seconds_since(&lts).abs() < DP_GROUP_SECS);
            if joins {
                last.keys.push(key);
                last.gen_throughput = add_f(last.gen_throughput, k.gen_throughput);
                last.running_req = add_u(last.running_req, k.running_req);
                last.queue_req = add_u(last.queue_req, k.queue_req);
                continue;
            }
        }
        out.push(Interval {
            ts: k.ts,
            keys: k.key.into_iter().collect(),
            gen_throughput: k.gen_throughput,
            running_req: k.running_req,
            queue_req: k.queue_req,
        });
    }
    out
}

fn mean(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        None
    } else {
        Some(v.iter().sum::<f64>() / v.len() as f64)
    }
}

fn median(v: &[f64]) -> Option<f64> {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n == 0 {
        return None;
    }
    let hi = s.get(n / 2).copied()?;
    if n % 2 == 1 {
        Some(hi)
    } else {
        let lo = s.get(n / 2 - 1).copied()?;
        Some((lo + hi) / 2.0)
    }
}

fn max_f(v: &[f64]) -> Option<f64> {
    v.iter().copied().reduce(f64::max)
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
pub fn summarize_text(text: &str, window: Option<LogWindow>) -> ServerSummary {
    let events: Vec<(usize, &str, LogEvent)> = text
        .lines()
        .enumerate()
        .filter_map(|(i, l)| parse_line(l).map(|e| (i, l, e)))
        .collect();
    let ready_idx = events
        .iter()
        .find(|(_, _, e)| matches!(e, LogEvent::Ready))
        .map(|(i, _, _)| *i);
    let in_scope =
        |i: usize| ready_idx.is_none_or(|r| i > r) && window.is_none_or(|w| w.contains(i));

    let mut sum = ServerSummary {
        ready_seen: ready_idx.is_some(),
        ..ServerSummary::default()
    };
    let mut kv_dtype_line: Option<String> = None;
    let mut kv_dtype_arg: Option<String> = None;
    let mut kv_seen = false;

    let mut prev_decode: HashMap<Option<(&'static str, u32)>, Timestamp> = HashMap::new();
    let mut seen_in_scope: HashSet<Option<(&'static str, u32)>> = HashSet::new();
    let mut kept: Vec<Kept> = Vec::new();
    let mut usages: Vec<f64> = Vec::new();

    for (i, line, ev) in &events {
        let i = *i;
        match ev {
            LogEvent::Stats(s) => {
                if !rank_kept(&s.ranks) {
                    continue;
                }
                let key = scheduler_key(&s.ranks);
                match s.kind {
                    StatsKind::Prefill => {
                        if in_scope(i) {
                            sum.prefill_lines += 1;
                        }
                    }
                    StatsKind::Decode => {
                        if !has_data(s) {
                            continue;
                        }
                        let gap = match (s.ts, prev_decode.get(&key)) {
                            (Some(t), Some(p)) => Some(t.seconds_since(p)),
                            _ => None,
                        };
                        if let Some(t) = s.ts {
                            prev_decode.insert(key, t);
                        }
                        if !in_scope(i) {
                            continue;
                        }
                        let first = seen_in_scope.insert(key);
                        if first || gap.is_some_and(|g| g > IDLE_GAP_SECS) {
                            sum.excluded_decode_lines += 1;
                            continue;
                        }
                        if let Some(u) = s.token_usage {
                            usages.push(u);
                        }
                        kept.push(Kept {
                            ts: s.ts,
                            key,
                            gen_throughput: s.gen_throughput,
                            running_req: s.running_req,
                            queue_req: s.queue_req,
                        });
                    }
                }
            }
            LogEvent::Capacity(c) => {
                sum.max_total_num_tokens = sum.max_total_num_tokens.or(c.max_total_num_tokens);
                sum.max_running_requests = sum.max_running_requests.or(c.max_running_requests);
                sum.context_len = sum.context_len.or(c.context_len);
            }
            LogEvent::KvAlloc(k) => {
                if !kv_seen {
                    kv_seen = true;
                    sum.kv_cache_gb = k.total_gb();
                    sum.kv_cache_dtype = k.dtype.clone();
                }
            }
            LogEvent::KvCacheDtype(d) => {
                kv_dtype_line.get_or_insert_with(|| d.clone());
            }
            LogEvent::ServerArgs(args) => {
                if kv_dtype_arg.is_none() {
                    kv_dtype_arg = args
                        .iter()
                        .find(|(k, _)| k == "kv_cache_dtype")
                        .map(|(_, v)| v.clone())
                        .filter(|v| !v.is_empty() && v != "auto" && v != "None");
                }
            }
            LogEvent::HiCacheAlloc { gb } => {
                sum.hicache_host_gb = sum.hicache_host_gb.or(Some(*gb));
            }
            LogEvent::Retract(r) => {
                if in_scope(i) && rank_kept(&parse_prefix(line).1) {
                    sum.retractions += 1;
                    sum.retracted_requests =
                        sum.retracted_requests.saturating_add(r.retracted_reqs);
                }
            }
            LogEvent::Ready => {}
        }
    }
    sum.kv_cache_dtype = sum.kv_cache_dtype.or(kv_dtype_line).or(kv_dtype_arg);

    sum.stats_lines = kept.len();
    let intervals = group_intervals(&kept);
    let gens: Vec<f64> = intervals.iter().filter_map(|v| v.gen_throughput).collect();
    let running: Vec<u64> = intervals.iter().filter_map(|v| v.running_req).collect();
    let queue: Vec<u64> = intervals.iter().filter_map(|v| v.queue_req).collect();
    let as_f = |v: &[u64]| v.iter().map(|x| *x as f64).collect::<Vec<f64>>();

    sum.gen_throughput_mean = mean(&gens);
    sum.gen_throughput_median = median(&gens);
    sum.running_req_mean = mean(&as_f(&running));
    sum.running_req_max = running.iter().copied().max();
    sum.queue_req_mean = mean(&as_f(&queue));
    sum.queue_req_max = queue.iter().copied().max();
    sum.token_usage_mean = mean(&usages);
    sum.token_usage_max = max_f(&usages);
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn median_and_mean_helpers() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0]), Some(3.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(mean(&[1.0, 2.0]), Some(1.5));
        assert_eq!(max_f(&[1.0, 7.0, 2.0]), Some(7.0));
    }

    /// xorshift64* pseudo-random numbers (no external crates).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        fn below(&mut self, n: usize) -> usize {
            if n == 0 {
                0
            } else {
                (self.next() % n as u64) as usize
            }
        }
    }

    #[test]
    fn never_panics_on_garbage() {
        let seeds: Vec<String> = synthetic()
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
            .collect();
        let alphabet: &[u8] =
            b"[]():,.=# -_0123456789TPDEGBabcdefghijklmnopqrstuvwxyz'\"{}\\\n\r\t%>";
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut corpus = String::new();
        for round in 0..4000 {
            let seed = seeds
                .get(rng.below(seeds.len()))
                .cloned()
                .unwrap_or_default();
            let mut bytes = seed.into_bytes();
            let edits = 1 + rng.below(6);
            for _ in 0..edits {
                match rng.below(6) {
                    0 => {
                        let cut = rng.below(bytes.len() + 1);
                        bytes.truncate(cut);
                    }
                    1 => {
                        let at = rng.below(bytes.len() + 1);
                        let c = alphabet
                            .get(rng.below(alphabet.len()))
                            .copied()
                            .unwrap_or(b'x');
                        bytes.insert(at, c);
                    }
                    2 => {
                        if !bytes.is_empty() {
                            let at = rng.below(bytes.len());
                            bytes.remove(at);
                        }
                    }
                    3 => {
                        let at = rng.below(bytes.len() + 1);
                        bytes.insert(at, (rng.next() & 0xff) as u8);
                    }
                    4 => {
                        // Glue another seed in front or behind.
                        let other = seeds
                            .get(rng.below(seeds.len()))
                            .cloned()
                            .unwrap_or_default();
                        if rng.below(2) == 0 {
                            let mut o = other.into_bytes();
                            o.extend_from_slice(&bytes);
                            bytes = o;
                        } else {
                            bytes.extend_from_slice(other.as_bytes());
                        }
                    }
                    _ => {
                        let len = rng.below(40);
                        let mut junk: Vec<u8> =
                            (0..len).map(|_| (rng.next() & 0xff) as u8).collect();
                        if round % 2 == 0 {
                            junk = (0..len)
                                .map(|_| {
                                    alphabet
                                        .get(rng.below(alphabet.len()))
                                        .copied()
                                        .unwrap_or(b' ')
                                })
                                .collect();
                        }
                        let at = rng.below(bytes.len() + 1);
                        bytes.splice(at..at, junk);
                    }
                }
            }
            let line = String::from_utf8_lossy(&bytes).into_owned();
            let _ = parse_line(&line);
            let _ = parse_prefix(&line);
            corpus.push_str(&line);
            corpus.push('\n');
        }
        // Pure random bytes, too.
        for _ in 0..1000 {
            let len = rng.below(200);
            let bytes: Vec<u8> = (0..len).map(|_| (rng.next() & 0xff) as u8).collect();
            let line = String::from_utf8_lossy(&bytes).into_owned();
            let _ = parse_line(&line);
        }
        let _ = summarize_text(&corpus, None);
        let _ = summarize_text(
            &corpus,
            Some(LogWindow {
                start_line: 100,
                end_line: 3000,
            }),
        );
    }
}
