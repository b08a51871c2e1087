//! Parsing of single SGLang log lines.
//!
//! Every marker (`Decode batch`, `max_total_num_tokens=`, ...) and the `[timestamp ranks]`
//! prefix are searched anywhere in the line, because tqdm bars, Ray wrappers and paths get glued
//! in front. Key/value pieces are split on `,` and `. ` and read by key, never by position.
//! No function here panics on any input.

use serde::{Deserialize, Serialize};

use super::scan::{
    parse_bool_bytes, parse_f64_bytes, parse_i64_bytes, parse_prefix_bytes, parse_u64_bytes,
    scan_owned, visit_fields,
};

/// One parsed log line of interest. Lines that are not interesting give None.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum LogEvent {
    /// A `Decode batch` / `Prefill batch` line (or their v0.1 forms).
    Stats(StatsLine),
    /// The `max_total_num_tokens=...` line.
    Capacity(Capacity),
    /// `KV Cache is allocated. ...`
    KvAlloc(KvAlloc),
    /// `Allocating X GB host memory for hierarchical KV cache.` (also the 0.5.23 CPU wording
    /// `Allocating kv hierarchical KV host pool: N tokens, X GB host memory.`)
    HiCacheAlloc { gb: f64 },
    /// A retraction (`KV cache pool is full. Retract requests.` and its older wordings).
    Retract(Retraction),
    /// `The server is fired up and ready to roll!`
    Ready,
    /// The `server_args=ServerArgs(...)` / `server_args={...}` line: every argument in order,
    /// values as written (Python string quotes removed).
    ServerArgs(Vec<(String, String)>),
    /// `Using KV cache dtype: X` (printed before 2026-05, when `KV Cache is allocated` had no
    /// dtype).
    KvCacheDtype(String),
    /// `Capture cuda graph bs [1, 2, 4, ...]`: the largest captured batch size.
    GraphBatchSizes { max_bs: u64 },
    /// `Cuda graph is disabled because ...` (e.g. the torch-native backend on CPU).
    GraphsDisabled,
    /// A Python exception line (`ValueError: ...`) or an argparse error
    /// (`sglang serve: error: ...`), trimmed.
    Error(String),
}

/// Kind of a stats line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum StatsKind {
    Decode,
    Prefill,
}

/// Time from the `[...]` prefix. `secs_of_day` includes milliseconds when printed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Timestamp {
    /// (year, month, day) when the prefix has a date (since 2024-10).
    pub date: Option<(i32, u32, u32)>,
    pub secs_of_day: f64,
}

impl Timestamp {
    /// Seconds elapsed from `earlier` to `self` (negative when `self` is earlier).
    /// Without dates on both sides, a jump back of more than 12 h is taken as a midnight wrap.
    pub fn seconds_since(&self, earlier: &Timestamp) -> f64 {
        match (self.date, earlier.date) {
            (Some(a), Some(b)) => {
                (days_from_civil(a) - days_from_civil(b)) as f64 * 86_400.0 + self.secs_of_day
                    - earlier.secs_of_day
            }
            _ => {
                let d = self.secs_of_day - earlier.secs_of_day;
                if d < -43_200.0 { d + 86_400.0 } else { d }
            }
        }
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil((y, m, d): (i32, u32, u32)) -> i64 {
    let y = i64::from(y) - i64::from(m <= 2);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A `Decode batch` or `Prefill batch` line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatsLine {
    pub kind: StatsKind,
    pub ts: Option<Timestamp>,
    /// Rank tags, e.g. `[("DP",1),("TP",1)]` from the prefix, or `("gpu_id",0)` / `("gpu",0)`.
    pub ranks: Vec<(String, u32)>,
    /// `#running-req` (v0.1 Prefill: `#running_req`; mixed-chunk Prefill: `(mixed #running-req: N)`).
    pub running_req: Option<u64>,
    /// `#queue-req` (v0.1 Prefill: `#remaining_req`).
    pub queue_req: Option<u64>,
    /// `token usage`, or `full token usage` for hybrid models (`full=` part for the v0.4.9 SWA
    /// allocator).
    pub token_usage: Option<f64>,
    /// `#token`, or `#full token` for hybrid models.
    pub num_tokens: Option<u64>,
    /// Decode `gen throughput (token/s)`.
    pub gen_throughput: Option<f64>,
    /// Prefill `input throughput (token/s)`.
    pub input_throughput: Option<f64>,
    /// `#new-seq` (v0.1: `#seq`).
    pub new_seq: Option<u64>,
    /// `#new-token` (v0.1: `#new_token`).
    pub new_token: Option<u64>,
    /// `#cached-token` (v0.1: `#cached_token`).
    pub cached_token: Option<u64>,
    /// `cuda|cpu|npu|musa graph: True|False`.
    pub graph: Option<bool>,
    /// Every `key: value` pair of the line, raw (trimmed), in order; unknown keys kept.
    pub fields: Vec<(String, String)>,
}

impl StatsLine {
    /// Raw value of the first field whose key matches `key` (case-insensitive, `_` = `-`).
    pub fn field(&self, key: &str) -> Option<&str> {
        let want = norm_key(key);
        self.fields
            .iter()
            .find(|(k, _)| norm_key(k) == want)
            .map(|(_, v)| v.as_str())
    }

    /// The DP rank from the prefix, if any.
    pub fn dp_rank(&self) -> Option<u32> {
        rank_of(&self.ranks, "DP")
    }

    /// The TP rank from the prefix, if any.
    pub fn tp_rank(&self) -> Option<u32> {
        rank_of(&self.ranks, "TP")
    }
}

/// Value of the rank tag `name` (exact, e.g. `"DP"`, `"TP"`, `"gpu_id"`).
pub fn rank_of(ranks: &[(String, u32)], name: &str) -> Option<u32> {
    ranks.iter().find(|(n, _)| n == name).map(|(_, r)| *r)
}

/// The `max_total_num_tokens=N, ...` line (values are per scheduler, i.e. per DP rank).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Capacity {
    pub max_total_num_tokens: Option<u64>,
    pub max_running_requests: Option<u64>,
    pub context_len: Option<u64>,
    /// `chunked_prefill_size` (may be -1 when chunked prefill is disabled).
    pub chunked_prefill_size: Option<i64>,
    /// `available_gpu_mem` / `available_cpu_mem` (any `available_*_mem`), in GB.
    pub available_mem_gb: Option<f64>,
}

/// `KV Cache is allocated. [dtype: D, ][#tokens: N, ]K size: X GB, V size: Y GB` (MHA) or
/// `... KV size: Z GB` (MLA).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KvAlloc {
    pub dtype: Option<String>,
    pub tokens: Option<u64>,
    pub k_gb: Option<f64>,
    pub v_gb: Option<f64>,
    /// MLA prints one `KV size`.
    pub kv_gb: Option<f64>,
}

impl KvAlloc {
    /// K+V size, or the MLA KV size, in GB.
    pub fn total_gb(&self) -> Option<f64> {
        match (self.k_gb, self.v_gb, self.kv_gb) {
            (Some(k), Some(v), _) => Some(k + v),
            (_, _, Some(kv)) => Some(kv),
            _ => None,
        }
    }
}

/// A retraction event. `retracted_reqs` is 1 when the count was cut off (a retraction
/// always retracts at least one request).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Retraction {
    pub retracted_reqs: u64,
}

pub(crate) const READY_MARKER: &str = "The server is fired up and ready to roll";
const RETRACT_MARKERS: [&str; 3] = [
    "KV cache pool is full. Retract requests",
    "Decode out of memory happened",
    "decode out of memory happened",
];

/// Parse one log line. Returns None for lines of no interest (and never panics).
///
/// The work is done by [`super::scan::scan`] on bytes; this owned form is for callers that
/// keep events. The streaming summary uses the borrowed form directly.
pub fn parse_line(line: &str) -> Option<LogEvent> {
    scan_owned(line.as_bytes())
}

/// Lines that are neither ready, server_args nor stats: capacity, KV alloc, hierarchical
/// cache, retraction, KV dtype, graph capture, errors. Checked in this order.
pub(crate) fn parse_other(line: &str) -> Option<LogEvent> {
    if let Some(pos) = line.find("max_total_num_tokens=") {
        return Some(LogEvent::Capacity(parse_capacity(
            line.get(pos..).unwrap_or(""),
        )));
    }
    if let Some((_, rest)) = line.split_once("KV Cache is allocated") {
        return Some(LogEvent::KvAlloc(parse_kv_alloc(rest)));
    }
    if let Some(gb) = parse_hicache(line) {
        return Some(LogEvent::HiCacheAlloc { gb });
    }
    for marker in RETRACT_MARKERS {
        if let Some((_, rest)) = line.split_once(marker) {
            let fields = split_fields(rest);
            let n = lookup(&fields, &["#retracted-reqs"]).and_then(parse_u64);
            return Some(LogEvent::Retract(Retraction {
                retracted_reqs: n.unwrap_or(1),
            }));
        }
    }
    if let Some((_, rest)) = line.split_once("Using KV cache dtype:") {
        let d = clean_val(rest);
        if !d.is_empty() {
            return Some(LogEvent::KvCacheDtype(d));
        }
    }
    if let Some((_, rest)) = line.split_once(" graph bs [") {
        // `Capture cuda graph bs [1, 2, 4, ...]` (possibly cut off).
        let list = rest.split(']').next().unwrap_or("");
        if let Some(max_bs) = list.split(',').filter_map(parse_u64).max() {
            return Some(LogEvent::GraphBatchSizes { max_bs });
        }
    }
    if line.to_ascii_lowercase().contains("cuda graph is disabled") {
        return Some(LogEvent::GraphsDisabled);
    }
    error_message(line).map(LogEvent::Error)
}

/// A Python exception line (`ValueError: ...`, `torch.OutOfMemoryError: ...`,
/// `Exception: ...`) or an argparse error (`sglang serve: error: ...`), trimmed.
fn error_message(line: &str) -> Option<String> {
    let l = line.trim();
    if let Some((head, _)) = l.split_once(": ") {
        if !head.contains(' ')
            && (head.ends_with("Error") || head.ends_with("Exception"))
            && head.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        {
            return Some(l.to_string());
        }
    }
    let (prog, _) = l.split_once(": error: ")?;
    (!prog.is_empty() && !prog.contains('[')).then(|| l.to_string())
}

// ---------------------------------------------------------------------------------------------
// Prefix

/// Find the timestamp and rank tags in `text` (normally the part of a line before its
/// marker). The last bracketed timestamp wins (the one closest to the message); a bare
/// `YYYY-MM-DD HH:MM:SS` is used only when there is no bracketed one. `[gpu_id=N]`/`[gpu=N]`
/// tags are appended to the ranks.
pub fn parse_prefix(text: &str) -> (Option<Timestamp>, Vec<(String, u32)>) {
    let p = parse_prefix_bytes(text.as_bytes());
    (p.ts, p.ranks.to_owned_vec())
}

// ---------------------------------------------------------------------------------------------
// key: value pieces

/// Lower-case, `_` → `-`, trimmed: `#running_req` and `#Running-Req` both give `#running-req`.
fn norm_key(k: &str) -> String {
    k.trim()
        .chars()
        .map(|c| {
            if c == '_' {
                '-'
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect()
}

fn clean_val(v: &str) -> String {
    v.trim()
        .trim_end_matches(|c: char| c.is_whitespace() || matches!(c, '.' | ',' | ';'))
        .to_string()
}

/// Split a message tail into `key: value` pairs (see [`visit_fields`]: pieces split on `,` and
/// `. `; a piece without `:` before `. ` starts the next key, one before `,` continues the
/// previous value).
pub fn split_fields(s: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    visit_fields(s.as_bytes(), &mut |k, v| {
        out.push((
            String::from_utf8_lossy(k).into_owned(),
            String::from_utf8_lossy(v).into_owned(),
        ));
    });
    out
}

/// Whether raw key `k` normalises (see [`norm_key`]) to `want`, without allocating.
fn key_eq(k: &str, want: &str) -> bool {
    let k = k.trim();
    k.len() == want.len()
        && k.bytes().zip(want.bytes()).all(|(a, b)| {
            let a = if a == b'_' {
                b'-'
            } else {
                a.to_ascii_lowercase()
            };
            a == b
        })
}

/// First field whose normalised key is one of `keys` (already normalised).
fn lookup<'a>(fields: &'a [(String, String)], keys: &[&str]) -> Option<&'a str> {
    fields
        .iter()
        .find(|(k, _)| keys.iter().any(|want| key_eq(k, want)))
        .map(|(_, v)| v.as_str())
}

/// Leading number of a value (`0.84`, `12.50%`, `0.02 GB`, `0.0980 -> 0.7047` gives 0.098).
pub fn parse_f64(v: &str) -> Option<f64> {
    parse_f64_bytes(v.as_bytes())
}

/// Leading unsigned integer of a value (`3`, `full=165376, swa=768` gives 165376).
pub fn parse_u64(v: &str) -> Option<u64> {
    parse_u64_bytes(v.as_bytes())
}

/// Leading signed integer (`-1`).
fn parse_i64(v: &str) -> Option<i64> {
    parse_i64_bytes(v.as_bytes())
}

/// `True`/`False` (any case).
pub fn parse_bool(v: &str) -> Option<bool> {
    parse_bool_bytes(v.as_bytes())
}

// ---------------------------------------------------------------------------------------------
// Startup lines

/// `max_total_num_tokens=N, chunked_prefill_size=N, ..., available_gpu_mem=X GB`.
fn parse_capacity(s: &str) -> Capacity {
    let mut cap = Capacity {
        max_total_num_tokens: None,
        max_running_requests: None,
        context_len: None,
        chunked_prefill_size: None,
        available_mem_gb: None,
    };
    for piece in s.split(',') {
        let Some((k, v)) = piece.split_once('=') else {
            continue;
        };
        let k = k.trim();
        match k {
            "max_total_num_tokens" => {
                cap.max_total_num_tokens = cap.max_total_num_tokens.or(parse_u64(v))
            }
            "max_running_requests" => {
                cap.max_running_requests = cap.max_running_requests.or(parse_u64(v))
            }
            "context_len" => cap.context_len = cap.context_len.or(parse_u64(v)),
            "chunked_prefill_size" => {
                cap.chunked_prefill_size = cap.chunked_prefill_size.or(parse_i64(v))
            }
            _ if k.starts_with("available_") && k.ends_with("_mem") => {
                cap.available_mem_gb = cap.available_mem_gb.or(parse_f64(v));
            }
            _ => {}
        }
    }
    cap
}

/// The tail after `KV Cache is allocated`.
fn parse_kv_alloc(rest: &str) -> KvAlloc {
    let fields = split_fields(rest);
    let dtype = lookup(&fields, &["dtype"])
        .map(str::to_string)
        .filter(|d| !d.is_empty());
    KvAlloc {
        dtype,
        tokens: lookup(&fields, &["#tokens"]).and_then(parse_u64),
        k_gb: lookup(&fields, &["k size"]).and_then(parse_f64),
        v_gb: lookup(&fields, &["v size"]).and_then(parse_f64),
        kv_gb: lookup(&fields, &["kv size"]).and_then(parse_f64),
    }
}

/// HiCache host pool size in GB.
fn parse_hicache(line: &str) -> Option<f64> {
    if let Some((before, _)) = line.split_once(" GB host memory for hierarchical KV cache") {
        let (_, num) = before.rsplit_once("Allocating ")?;
        return parse_f64(num);
    }
    if let Some((_, after)) = line.split_once("hierarchical KV host pool:") {
        let (before, _) = after.split_once(" GB host memory")?;
        let num = before
            .rsplit(|c: char| c == ',' || c.is_whitespace())
            .next()?;
        return parse_f64(num);
    }
    None
}

/// Parse the text after `server_args=`: `ServerArgs(a=1, b='x', ...)` or `{'a': 1, ...}`.
/// Only complete pairs are returned (a truncated or wrapped line gives the pairs before the cut).
pub fn parse_server_args(s: &str) -> Vec<(String, String)> {
    let s = s.trim_start();
    let (body, kv_sep) = if let Some(r) = s.strip_prefix("ServerArgs(") {
        (r, '=')
    } else if let Some(r) = s.strip_prefix('{') {
        (r, ':')
    } else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut depth: u32 = 0;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut start = 0;
    for (i, c) in body.char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' => quote = Some(c),
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' if depth > 0 => depth -= 1,
            ')' | '}' | ',' if depth == 0 => {
                if let Some(pair) = body.get(start..i).and_then(|p| split_arg(p, kv_sep)) {
                    out.push(pair);
                }
                start = i + c.len_utf8();
                if c != ',' {
                    break;
                }
            }
            _ => {}
        }
    }
    out
}

/// One `key=value` / `'key': value` item; quotes removed from key and string values.
fn split_arg(item: &str, kv_sep: char) -> Option<(String, String)> {
    let item = item.trim();
    let (k, v) = if kv_sep == ':' {
        // The key is a quoted string; split at the first ':' after it.
        let q = item.chars().next().filter(|c| *c == '\'' || *c == '"')?;
        let rest = item.get(1..)?;
        let close = rest.find(q)?;
        let key = rest.get(..close)?;
        let after = rest.get(close + 1..)?.trim_start();
        (key, after.strip_prefix(':')?)
    } else {
        item.split_once('=')?
    };
    let k = k.trim();
    if k.is_empty() {
        return None;
    }
    Some((k.to_string(), unquote(v.trim())))
}

/// Remove Python string quotes and simple escapes; other values are returned as written.
fn unquote(v: &str) -> String {
    let Some(q) = v.chars().next().filter(|c| *c == '\'' || *c == '"') else {
        return v.to_string();
    };
    let inner = v.strip_prefix(q).unwrap_or(v);
    let inner = inner.strip_suffix(q).unwrap_or(inner);
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(o) => out.push(o),
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(line: &str) -> StatsLine {
        match parse_line(line) {
            Some(LogEvent::Stats(s)) => s,
            other => panic!("not a stats line: {other:?} <- {line}"),
        }
    }

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-9)
    }

    #[test]
    fn decode_v01_bare_running_req() {
        let s = stats("#running-req: 5, #token: 1234, token usage: 0.12, #queue-req: 0");
        assert_eq!(s.kind, StatsKind::Decode);
        assert_eq!(s.ts, None);
        assert!(s.ranks.is_empty());
        assert_eq!(s.running_req, Some(5));
        assert_eq!(s.num_tokens, Some(1234));
        assert!(close(s.token_usage, 0.12));
        assert_eq!(s.queue_req, Some(0));
        assert_eq!(s.gen_throughput, None);
        assert_eq!(s.fields.len(), 4);

        let s = stats(
            "#running-req: 5, #token: 1234, token usage: 0.12, gen throughput (token/s): 345.67, #queue-req: 2",
        );
        assert!(close(s.gen_throughput, 345.67));
        assert_eq!(s.queue_req, Some(2));
    }

    #[test]
    fn prefill_v01_new_fill_batch() {
        let s = stats(
            "new fill batch. #seq: 1. #cached_token: 0. #new_token: 11. #remaining_req: 3. #running_req: 2. tree_cache_hit_rate: 12.50%. fsm_cache_hit_rate: 0.00%. fsm_cache_avg_init_time: 0.01s.",
        );
        assert_eq!(s.kind, StatsKind::Prefill);
        assert_eq!(s.new_seq, Some(1));
        assert_eq!(s.cached_token, Some(0));
        assert_eq!(s.new_token, Some(11));
        assert_eq!(s.queue_req, Some(3));
        assert_eq!(s.running_req, Some(2));
        assert_eq!(s.field("tree_cache_hit_rate"), Some("12.50%"));
        assert_eq!(s.field("fsm_cache_avg_init_time"), Some("0.01s"));
        assert_eq!(s.fields.len(), 8);
    }

    #[test]
    fn gpu_id_and_gpu_tags() {
        let s = stats(
            "[gpu_id=0] Decode batch. #running-req: 8, #token: 2048, token usage: 0.05, gen throughput (token/s): 512.30, #queue-req: 0",
        );
        assert_eq!(s.kind, StatsKind::Decode);
        assert_eq!(s.ranks, vec![("gpu_id".to_string(), 0)]);
        assert!(close(s.gen_throughput, 512.3));

        let s = stats(
            "[gpu_id=1] Prefil batch. #new-seq: 1, #new-token: 7, #cached-token: 1, cache hit rate: 12.50%, #running-req: 0, #queue-req: 0",
        );
        assert_eq!(s.kind, StatsKind::Prefill);
        assert_eq!(s.ranks, vec![("gpu_id".to_string(), 1)]);
        assert_eq!(s.new_token, Some(7));
        assert_eq!(s.field("cache hit rate"), Some("12.50%"));

        let s = stats(
            "[gpu=2] Prefill batch. #new-seq: 3, #new-token: 300, #cached-token: 12, cache hit rate: 3.85%, #running-req: 4, #queue-req: 1",
        );
        assert_eq!(s.ranks, vec![("gpu".to_string(), 2)]);
        assert_eq!(s.new_seq, Some(3));
        assert_eq!(s.running_req, Some(4));
    }

    #[test]
    fn hhmmss_tp0_prefix() {
        let s = stats(
            "[12:34:56 TP0] Decode batch. #running-req: 16, #token: 9000, token usage: 0.44, gen throughput (token/s): 1200.50, #queue-req: 0",
        );
        let ts = s.ts.unwrap();
        assert_eq!(ts.date, None);
        assert!((ts.secs_of_day - 45296.0).abs() < 1e-9);
        assert_eq!(s.ranks, vec![("TP".to_string(), 0)]);
        assert_eq!(s.tp_rank(), Some(0));
        assert_eq!(s.dp_rank(), None);
    }

    #[test]
    fn mixed_chunk_prefill() {
        let s = stats(
            "[2024-10-20 12:34:56 TP0] Prefill batch(mixed #running-req: 3). #new-seq: 1, #new-token: 512, #cached-token: 0, cache hit rate: 0.00%, token usage: 0.10, #queue-req: 5",
        );
        assert_eq!(s.kind, StatsKind::Prefill);
        assert_eq!(s.ts.unwrap().date, Some((2024, 10, 20)));
        assert_eq!(s.running_req, Some(3));
        assert_eq!(s.new_token, Some(512));
        assert_eq!(s.queue_req, Some(5));
        assert!(close(s.token_usage, 0.10));
    }

    #[test]
    fn largest_len_and_trailing_comma_space() {
        let s = stats(
            "[2025-03-10 08:00:01 TP0] Decode batch. #running-req: 16, #token: 9000, token usage: 0.44, gen throughput (token/s): 1200.50, largest-len: 512, #queue-req: 0, ",
        );
        assert_eq!(s.queue_req, Some(0));
        assert_eq!(s.field("largest-len"), Some("512"));
        assert_eq!(s.fields.len(), 6);
        // Right-trimmed paste.
        let s = stats(
            "[2025-03-10 08:00:01 TP0] Prefill batch. #new-seq: 2, #new-token: 64, #cached-token: 0, token usage: 0.01, #running-req: 0, #queue-req: 7,",
        );
        assert_eq!(s.queue_req, Some(7));
        assert_eq!(s.fields.len(), 6);
    }

    #[test]
    fn speculative_and_pd_fields() {
        let s = stats(
            "[2025-05-20 10:00:00 DP0 TP0] Decode batch. #running-req: 4, #token: 100, token usage: 0.01, accept len: 3.21, pre-allocated usage: 0.05, #retracted-req: 0, cuda graph: True, gen throughput (token/s): 88.00, #queue-req: 0",
        );
        assert_eq!(s.field("accept len"), Some("3.21"));
        assert_eq!(s.field("pre-allocated usage"), Some("0.05"));
        assert_eq!(s.graph, Some(true));
        assert_eq!(s.dp_rank(), Some(0));
        assert!(close(s.gen_throughput, 88.0));
        // v0.5.3.post2 accept rate, cpu graph label.
        let s = stats(
            "[2025-10-20 10:00:00] Decode batch. #running-req: 1, #token: 10, token usage: 0.00, accept len: 5.30, accept rate: 0.86, cpu graph: False, gen throughput (token/s): 167.04, #queue-req: 0, ",
        );
        assert_eq!(s.field("accept rate"), Some("0.86"));
        assert_eq!(s.graph, Some(false));
    }

    #[test]
    fn swa_allocator_and_timestamp_field() {
        let s = stats(
            "[2025-07-08 01:02:03 TP0] Decode batch. #running-req: 2, #token: full=1000, swa=200, token usage: full=0.10, swa=0.02, gen throughput (token/s): 50.00, #queue-req: 0, timestamp: 2025-07-08T01:02:03.456789",
        );
        assert_eq!(s.num_tokens, Some(1000));
        assert!(close(s.token_usage, 0.10));
        assert_eq!(s.field("#token"), Some("full=1000, swa=200"));
        assert_eq!(s.field("timestamp"), Some("2025-07-08T01:02:03.456789"));
        assert_eq!(s.queue_req, Some(0));
    }

    #[test]
    fn hybrid_full_swa_and_mamba() {
        let s = stats(
            "[2026-08-23 09:05:37 TP0 EP0] Decode batch, #running-req: 1, #full token: 165376, full token usage: 0.02, #swa token: 768, swa token usage: 0.00, accept len: 5.30, accept rate: 0.86, cuda graph: True, gen throughput (token/s): 167.04, #queue-req: 0",
        );
        assert_eq!(s.num_tokens, Some(165376));
        assert!(close(s.token_usage, 0.02));
        assert_eq!(s.field("swa token usage"), Some("0.00"));
        assert_eq!(s.ranks, vec![("TP".to_string(), 0), ("EP".to_string(), 0)]);
        let s = stats(
            "[2025-11-01 00:00:00] Decode batch, #running-req: 9, #full token: 4000, full token usage: 0.31, mamba num: 9, mamba usage: 0.05, cuda graph: True, gen throughput (token/s): 700.10, #queue-req: 1, ",
        );
        assert!(close(s.token_usage, 0.31));
        assert_eq!(s.field("mamba usage"), Some("0.05"));
    }

    #[test]
    fn forward_iter_tag_v054() {
        let s = stats(
            "[2025-10-24 11:11:11] Decode batch [7], #running-req: 3, #token: 300, token usage: 0.03, cuda graph: True, gen throughput (token/s): 99.99, #queue-req: 0, ",
        );
        assert_eq!(s.running_req, Some(3));
        assert_eq!(s.fields.first().map(|f| f.0.as_str()), Some("#running-req"));
        let s = stats(
            "[2025-10-24 11:11:11] Prefill batch [12], #new-seq: 1, #new-token: 20, #cached-token: 4, token usage: 0.00, #running-req: 0, #queue-req: 0, ",
        );
        assert_eq!(s.cached_token, Some(4));
    }

    #[test]
    fn ms_and_dp_tp_ep_ranks() {
        let s = stats(
            "[2026-09-24 01:47:50.615 DP3 TP3 EP3] Decode batch, #running-req: 12, #token: 5000, token usage: 0.20, cuda graph: True, gen throughput (token/s): 1500.25, #queue-req: 0",
        );
        let ts = s.ts.unwrap();
        assert_eq!(ts.date, Some((2026, 9, 24)));
        assert!((ts.secs_of_day - (3600.0 + 47.0 * 60.0 + 50.615)).abs() < 1e-6);
        assert_eq!(s.dp_rank(), Some(3));
        assert_eq!(s.tp_rank(), Some(3));
        assert_eq!(rank_of(&s.ranks, "EP"), Some(3));
        assert_eq!(s.queue_req, Some(0));
        // 2026 rank parts.
        let s = stats(
            "[2026-04-01 00:00:00 DP1 PP0 ATTN_CP1 MOE_DP2 TP5 EP5] Decode batch, #running-req: 1, #token: 1, token usage: 0.00, cuda graph: True, gen throughput (token/s): 1.00, #queue-req: 0",
        );
        assert_eq!(rank_of(&s.ranks, "ATTN_CP"), Some(1));
        assert_eq!(rank_of(&s.ranks, "MOE_DP"), Some(2));
        assert_eq!(s.ranks.len(), 6);
    }

    #[test]
    fn ray_wrapper_and_tqdm_glued() {
        let s = stats(
            "(head, rank=0, pid=18260) [2025-02-14 10:11:12 TP0] Decode batch. #running-req: 64, #token: 30000, token usage: 0.75, gen throughput (token/s): 2400.00, #queue-req: 10",
        );
        assert_eq!(s.ts.unwrap().date, Some((2025, 2, 14)));
        assert_eq!(s.ranks, vec![("TP".to_string(), 0)]);
        assert_eq!(s.running_req, Some(64));

        let s = stats(
            "Capturing batches (bs=1 avail_mem=10.20 GB): 100%|██████████| 35/35 [00:05<00:00,  6.61it/s][2026-01-02 03:04:05] Decode batch, #running-req: 2, #token: 44, token usage: 0.00, cuda graph: True, gen throughput (token/s): 10.50, #queue-req: 0",
        );
        let ts = s.ts.unwrap();
        assert_eq!(ts.date, Some((2026, 1, 2)));
        assert!((ts.secs_of_day - (3.0 * 3600.0 + 4.0 * 60.0 + 5.0)).abs() < 1e-9);
        assert!(close(s.gen_throughput, 10.5));

        // Glued path in front, no space.
        let s = stats(
            "/opt/venv/lib/python3.12/site-packages/x.py:12: UserWarning: blah[2025-01-01 00:00:01 TP0] Prefill batch. #new-seq: 1, #new-token: 5, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0",
        );
        assert_eq!(s.new_token, Some(5));
        assert!(s.ts.is_some());
    }

    #[test]
    fn library_logger_format() {
        let s = stats(
            "2025-12-04 20:35:53 INFO 151972 [scheduler_metrics_mixin.py:287] Decode batch. #running-req: 7, #token: 700, token usage: 0.07, cuda graph: True, gen throughput (token/s): 321.00, #queue-req: 0, ",
        );
        assert_eq!(s.ts.unwrap().date, Some((2025, 12, 4)));
        assert!(s.ranks.is_empty());
        assert_eq!(s.running_req, Some(7));
    }

    #[test]
    fn cpu_0_5_23_lines() {
        let s = stats(
            "[2026-11-30 15:45:05] Prefill batch, #new-seq: 1, #new-token: 11, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, #pending-token: 0, cpu graph: False, input throughput (token/s): 9.44",
        );
        assert_eq!(s.kind, StatsKind::Prefill);
        assert!(close(s.input_throughput, 9.44));
        assert_eq!(s.graph, Some(false));
        assert_eq!(s.field("#pending-token"), Some("0"));
        assert_eq!(s.fields.len(), 9);

        let s = stats(
            "[2026-11-30 15:46:10] Decode batch, #running-req: 3, #token: 1725, token usage: 0.84, cpu graph: False, gen throughput (token/s): 566.12, #queue-req: 27",
        );
        assert_eq!(s.kind, StatsKind::Decode);
        assert_eq!(s.running_req, Some(3));
        assert_eq!(s.num_tokens, Some(1725));
        assert!(close(s.token_usage, 0.84));
        assert!(close(s.gen_throughput, 566.12));
        assert_eq!(s.queue_req, Some(27));
        assert_eq!(s.graph, Some(false));
    }

    #[test]
    fn mfu_fields_and_pd_prefill() {
        let s = stats(
            "[2026-04-02 00:00:00] Decode batch, #running-req: 1, #token: 1, token usage: 0.00, cuda graph: True, gen throughput (token/s): 50.00, #queue-req: 0, est. decode TFLOPS/s (per GPU): 12.34, est. read BW (GB/s per GPU): 800.00, est. write BW (GB/s per GPU): 5.00",
        );
        assert_eq!(s.field("est. decode TFLOPS/s (per GPU)"), Some("12.34"));
        assert_eq!(s.field("est. write BW (GB/s per GPU)"), Some("5.00"));
        assert_eq!(s.queue_req, Some(0));
        assert!(close(s.gen_throughput, 50.0));

        let s = stats(
            "[2025-06-20 00:00:00 TP0] Prefill batch. #new-seq: 1, #new-token: 8192, #cached-token: 0, token usage: 0.01, #unbootstrapped-req: 0, #queue-req: 0, #transferring-req: 1, input throughput (token/s): 20000.50 ",
        );
        assert!(close(s.input_throughput, 20000.5));
        assert_eq!(s.field("#transferring-req"), Some("1"));
        assert_eq!(s.running_req, None);
    }

    #[test]
    fn not_stats() {
        for l in [
            "[2025-01-01 00:00:00] Decode batch size is 4",
            "[2026-11-30 15:45:04] Memory pool end. avail mem=20.73 GB",
            "",
            "[",
            "[2025-13-01 00:00:00] nothing",
        ] {
            assert_eq!(parse_line(l), None, "{l}");
        }
        // A runtime OOM is an error line, not a stats line.
        assert_eq!(
            parse_line("RuntimeError: Decode out of memory. Try to lower your batch size."),
            Some(LogEvent::Error(
                "RuntimeError: Decode out of memory. Try to lower your batch size.".into()
            ))
        );
    }

    #[test]
    fn graph_and_error_lines() {
        assert_eq!(
            parse_line("[2025-05-01 00:00:00 TP0] Capture cuda graph bs [1, 2, 4, 8, 16, 160]"),
            Some(LogEvent::GraphBatchSizes { max_bs: 160 })
        );
        assert_eq!(
            parse_line("[2025-05-01 00:00:00 TP0] Capture cuda graph bs [1, 2, 4, 8, 1"),
            Some(LogEvent::GraphBatchSizes { max_bs: 8 })
        );
        assert_eq!(
            parse_line(
                "[2026-11-30 15:56:00] Cuda graph is disabled because of using torch native attention backend"
            ),
            Some(LogEvent::GraphsDisabled)
        );
        // Prefill-only graphs being off says nothing about decode graphs.
        assert_eq!(
            parse_line(
                "[2026-11-30 15:53:26] Disable prefill CUDA graph because cuda_graph_config resolved prefill.backend='disabled'"
            ),
            None
        );
        for l in [
            "ValueError: CPU FP8 KV cache requires Intel AMX support.",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 448.00 MiB.",
            "Exception: Capture cuda graph failed: CUDA out of memory.",
            "sglang serve: error: argument --kv-cache-dtype: invalid choice: 'fp9' (choose from 'auto', 'fp8_e5m2')",
            "launch_server.py: error: unrecognized arguments: --enable_metrics",
        ] {
            assert_eq!(parse_line(l), Some(LogEvent::Error(l.into())), "{l}");
        }
        for l in [
            "[2026-11-30 15:56:30] Scheduler hit an exception: Traceback (most recent call last):",
            "  File \"/x/scheduler.py\", line 6362, in run_scheduler_process",
            "    raise ValueError(\"CPU FP8 KV cache requires Intel AMX support.\")",
        ] {
            assert_eq!(parse_line(l), None, "{l}");
        }
    }

    #[test]
    fn truncated_stats_lines() {
        let s = stats("[2026-01-01 00:00:00] Decode batch, #running-req: 3, #tok");
        assert_eq!(s.running_req, Some(3));
        assert_eq!(s.num_tokens, None);
        let s = stats("[2026-01-01 00:00:00] Decode batch");
        assert!(s.fields.is_empty());
        let s = stats("Decode batch [12");
        assert!(s.fields.is_empty());
        let s = stats("Prefill batch(mixed #running-req: 4");
        assert_eq!(s.running_req, Some(4));
    }

    #[test]
    fn capacity_lines() {
        let cap = |l: &str| match parse_line(l) {
            Some(LogEvent::Capacity(c)) => c,
            o => panic!("{o:?}"),
        };
        let c = cap(
            "[gpu_id=0] max_total_num_tokens=123456, max_prefill_tokens=16384, context_len=4096, ",
        );
        assert_eq!(c.max_total_num_tokens, Some(123456));
        assert_eq!(c.context_len, Some(4096));
        assert_eq!(c.max_running_requests, None);

        let c = cap(
            "[2024-11-01 00:00:00 TP0] max_total_num_tokens=500000, max_prefill_tokens=16384, max_running_requests=4097, context_len=8192",
        );
        assert_eq!(c.max_running_requests, Some(4097));
        assert_eq!(c.chunked_prefill_size, None);

        let c = cap(
            "[2025-02-01 00:00:00 TP0] max_total_num_tokens=500000, chunked_prefill_size=-1, max_prefill_tokens=16384, max_running_requests=2048, context_len=8192",
        );
        assert_eq!(c.chunked_prefill_size, Some(-1));

        let c = cap(
            "[2026-05-24 00:53:20] max_total_num_tokens=1707904, chunked_prefill_size=16384, max_prefill_tokens=16384, max_running_requests=4096, context_len=40960, available_gpu_mem=21.24 GB",
        );
        assert_eq!(c.max_total_num_tokens, Some(1707904));
        assert_eq!(c.chunked_prefill_size, Some(16384));
        assert!(close(c.available_mem_gb, 21.24));

        let c = cap(
            "[2026-11-30 15:45:04] max_total_num_tokens=16384, chunked_prefill_size=4096, max_prefill_tokens=16384, max_running_requests=2048, context_len=4096, available_cpu_mem=20.73 GB",
        );
        assert_eq!(
            c,
            Capacity {
                max_total_num_tokens: Some(16384),
                max_running_requests: Some(2048),
                context_len: Some(4096),
                chunked_prefill_size: Some(4096),
                available_mem_gb: Some(20.73),
            }
        );
        // The profiled-value warning is not a capacity line.
        assert_eq!(
            parse_line(
                "max_total_tokens=131072 is larger than the profiled value -561981. Use the profiled value instead."
            ),
            None
        );
    }

    #[test]
    fn kv_alloc_lines() {
        let kv = |l: &str| match parse_line(l) {
            Some(LogEvent::KvAlloc(k)) => k,
            o => panic!("{o:?}"),
        };
        let k = kv(
            "[2025-01-20 00:00:00 TP0] KV Cache is allocated. K size: 10.50 GB, V size: 10.50 GB.",
        );
        assert_eq!(k.dtype, None);
        assert_eq!(k.tokens, None);
        assert!(close(k.k_gb, 10.5));
        assert!(close(k.total_gb(), 21.0));

        let k = kv(
            "[2025-03-10 00:00:00 TP1] KV Cache is allocated. #tokens: 1707904, K size: 117.28 GB, V size: 117.28 GB",
        );
        assert_eq!(k.tokens, Some(1707904));
        assert!(close(k.v_gb, 117.28));

        let k = kv(
            "[2025-05-01 00:00:00 DP2 TP2] KV Cache is allocated. #tokens: 600000, KV size: 39.12 GB",
        );
        assert_eq!(k.k_gb, None);
        assert!(close(k.kv_gb, 39.12));
        assert!(close(k.total_gb(), 39.12));

        let k = kv(
            "[2026-11-30 15:45:04] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 16384, K size: 0.02 GB, V size: 0.02 GB",
        );
        assert_eq!(k.dtype.as_deref(), Some("torch.bfloat16"));
        assert_eq!(k.tokens, Some(16384));
        assert!(close(k.total_gb(), 0.04));

        let k = kv(
            "[2026-06-01 00:00:00] KV Cache is allocated. dtype: torch.float8_e4m3fn, #tokens: 900000, KV size: 20.00 GB",
        );
        assert_eq!(k.dtype.as_deref(), Some("torch.float8_e4m3fn"));
        assert!(close(k.total_gb(), 20.0));
    }

    #[test]
    fn hicache_lines() {
        assert_eq!(
            parse_line(
                "[2026-11-30 15:45:04] Allocating 48.00 GB host memory for hierarchical KV cache."
            ),
            Some(LogEvent::HiCacheAlloc { gb: 48.0 })
        );
        assert_eq!(
            parse_line(
                "[2026-11-30 15:45:04] Allocating kv hierarchical KV host pool: 488282 tokens, 1.00 GB host memory."
            ),
            Some(LogEvent::HiCacheAlloc { gb: 1.0 })
        );
        assert_eq!(
            parse_line(
                "Allocating 3.00 GB host memory for hierarchical Mamba cache (layout=page_first)."
            ),
            None
        );
    }

    #[test]
    fn retraction_wordings() {
        let r = |l: &str| match parse_line(l) {
            Some(LogEvent::Retract(r)) => r.retracted_reqs,
            o => panic!("{o:?}"),
        };
        assert_eq!(
            r(
                "decode out of memory happened, #retracted_reqs: 3, #new_token_ratio: 0.5000 -> 0.7000"
            ),
            3
        );
        assert_eq!(
            r(
                "[2024-09-01 00:00:00 TP1] Decode out of memory happened. #retracted_reqs: 2, #new_token_ratio: 0.4000 -> 0.8000"
            ),
            2
        );
        assert_eq!(
            r(
                "[2025-06-01 00:00:00] KV cache pool is full. Retract requests. #retracted_reqs: 5, #new_token_ratio: 0.1000 -> 0.6000"
            ),
            5
        );
        assert_eq!(
            r(
                "[2026-11-30 15:46:11] KV cache pool is full. Retract requests. #retracted_reqs: 1, #new_tokens_gained: 340, #new_token_ratio: 0.0980 -> 0.7047"
            ),
            1
        );
        assert_eq!(
            r("[2026-11-30 15:46:11] KV cache pool is full. Retract requests. #retr"),
            1
        );
    }

    #[test]
    fn ready_and_server_args() {
        assert_eq!(
            parse_line("[2026-11-30 15:45:05] The server is fired up and ready to roll!"),
            Some(LogEvent::Ready)
        );
        let Some(LogEvent::ServerArgs(a)) = parse_line(
            "[2026-11-30 15:44:30] server_args={'model_path': '/tmp/m', 'kv_cache_dtype': 'auto', 'mem_fraction_static': 0.716, 'cuda_graph_bs': [1, 2, 4], 'json_model_override_args': '{}', 'x': {'a': 1, 'b': \"it's\"}, 'lora_paths': None}",
        ) else {
            panic!()
        };
        assert_eq!(a.len(), 7);
        assert_eq!(a[1], ("kv_cache_dtype".into(), "auto".into()));
        assert_eq!(a[2], ("mem_fraction_static".into(), "0.716".into()));
        assert_eq!(a[3].1, "[1, 2, 4]");
        assert_eq!(a[4].1, "{}");
        assert_eq!(a[6], ("lora_paths".into(), "None".into()));

        let Some(LogEvent::ServerArgs(a)) = parse_line(
            "[2025-05-01 00:00:00] server_args=ServerArgs(model_path='/m, x', kv_cache_dtype='fp8_e4m3', max_running_requests=None, chunked_prefill_size=8192, trunc='abc",
        ) else {
            panic!()
        };
        assert_eq!(
            a,
            vec![
                ("model_path".to_string(), "/m, x".to_string()),
                ("kv_cache_dtype".to_string(), "fp8_e4m3".to_string()),
                ("max_running_requests".to_string(), "None".to_string()),
                ("chunked_prefill_size".to_string(), "8192".to_string()),
            ]
        );
        assert_eq!(
            parse_line("Using KV cache dtype: torch.float8_e4m3fn"),
            Some(LogEvent::KvCacheDtype("torch.float8_e4m3fn".into()))
        );
    }

    #[test]
    fn timestamp_math() {
        let a = Timestamp {
            date: Some((2025, 12, 31)),
            secs_of_day: 86_399.0,
        };
        let b = Timestamp {
            date: Some((2026, 1, 1)),
            secs_of_day: 1.5,
        };
        assert!((b.seconds_since(&a) - 2.5).abs() < 1e-9);
        let c = Timestamp {
            date: Some((2024, 2, 28)),
            secs_of_day: 0.0,
        };
        let d = Timestamp {
            date: Some((2024, 3, 1)),
            secs_of_day: 0.0,
        };
        assert!((d.seconds_since(&c) - 2.0 * 86_400.0).abs() < 1e-9);
        let e = Timestamp {
            date: None,
            secs_of_day: 86_390.0,
        };
        let f = Timestamp {
            date: None,
            secs_of_day: 5.0,
        };
        assert!((f.seconds_since(&e) - 15.0).abs() < 1e-9);
        assert_eq!(days_from_civil((1970, 1, 1)), 0);
    }

    #[test]
    fn value_parsers() {
        assert_eq!(parse_f64("12.50%"), Some(12.5));
        assert_eq!(parse_f64("0.0980 -> 0.7047"), Some(0.098));
        assert_eq!(parse_f64("True"), None);
        assert_eq!(parse_f64("1e999"), None);
        assert_eq!(parse_u64("full=165376, swa=768"), Some(165376));
        assert_eq!(parse_u64("-3"), None);
        assert_eq!(parse_i64("-1"), Some(-1));
        assert_eq!(parse_bool("True"), Some(true));
        assert_eq!(parse_bool("false,"), Some(false));
        assert_eq!(parse_bool("maybe"), None);
    }
}
