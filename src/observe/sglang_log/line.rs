//! The owned form of a log line ([`LogEvent`] and its parts), and the parsers of the rare
//! lines that `scan` hands over as text: capacity, KV alloc, hierarchical cache,
//! retraction, KV dtype, graph capture, errors (`parse_other`) and `server_args`.
//!
//! Every marker (`Decode batch`, `max_total_num_tokens=`, ...) and the `[timestamp ranks]`
//! prefix are searched anywhere in the line, because tqdm bars, Ray wrappers and paths get glued
//! in front. Key/value pieces are split on `,` and `. ` and read by key, never by position.
//! No function here panics on any input.

use serde::{Deserialize, Serialize};

use super::fields::{parse_f64, parse_i64, parse_u64, split_fields};
use super::prefix::Timestamp;

/// One parsed log line of interest. Lines that are not interesting give None.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum LogEvent {
    /// A `Decode batch` / `Prefill batch` line (or their v0.1 forms).
    Stats(StatsLine),
    /// The `max_total_num_tokens=...` line.
    Capacity(Capacity),
    /// `KV Cache is allocated. ...`
    KvAlloc(KvAlloc),
    /// `Allocating X GB host memory for hierarchical KV cache.` (also the 0.5.23 wording
    /// `Allocating kv hierarchical KV host pool: N tokens, X GB host memory.`, which also
    /// names the pool's size in tokens)
    HiCacheAlloc {
        gb: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tokens: Option<u64>,
    },
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

    /// The DP rank from the prefix, if any (tests read it; the summary reads the ranks).
    #[cfg(test)]
    pub fn dp_rank(&self) -> Option<u32> {
        rank_of(&self.ranks, "DP")
    }

    /// The TP rank from the prefix, if any (tests read it; the summary reads the ranks).
    #[cfg(test)]
    pub fn tp_rank(&self) -> Option<u32> {
        rank_of(&self.ranks, "TP")
    }
}

/// Value of the rank tag `name` (exact, e.g. `"DP"`, `"TP"`, `"gpu_id"`).
#[cfg(test)]
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
    if let Some((gb, tokens)) = parse_hicache(line) {
        return Some(LogEvent::HiCacheAlloc { gb, tokens });
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
pub(crate) fn error_message(line: &str) -> Option<String> {
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

/// HiCache host pool size in GB, and in tokens where the line says (the `host pool:` wording).
fn parse_hicache(line: &str) -> Option<(f64, Option<u64>)> {
    if let Some((before, _)) = line.split_once(" GB host memory for hierarchical KV cache") {
        let (_, num) = before.rsplit_once("Allocating ")?;
        return parse_f64(num).map(|gb| (gb, None));
    }
    if let Some((_, after)) = line.split_once("hierarchical KV host pool:") {
        let (before, _) = after.split_once(" GB host memory")?;
        let num = before
            .rsplit(|c: char| c == ',' || c.is_whitespace())
            .next()?;
        let tokens = before
            .split_once(" tokens")
            .and_then(|(n, _)| parse_u64(n.trim()));
        return parse_f64(num).map(|gb| (gb, tokens));
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
