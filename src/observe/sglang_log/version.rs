//! SGLang version hints from format features.
//!
//! SGLang does not print its version. Its log format, though, changed often enough that the
//! features a log shows bound the version it came from (dates and versions from the team's
//! SGLang log-format reference; docs/cpu-sglang.md summarises it). Each feature seen gives a
//! "since" and/or an "until" date; the log is newer than the latest "since" and older than the earliest "until".

use serde::{Deserialize, Serialize};

use super::line::LogEvent;
use super::scan::StatsRef;

/// One format feature: what it is, and the first / last date (with the version where known)
/// it was printed.
struct Feature {
    what: &'static str,
    since: Option<(&'static str, &'static str)>,
    until: Option<(&'static str, &'static str)>,
}

const fn f(
    what: &'static str,
    since: Option<(&'static str, &'static str)>,
    until: Option<(&'static str, &'static str)>,
) -> Feature {
    Feature { what, since, until }
}

pub const BARE_DECODE: u32 = 0;
pub const NEW_FILL: u32 = 1;
pub const PREFIL_TYPO: u32 = 2;
pub const GPU_ID_TAG: u32 = 3;
pub const GPU_TAG: u32 = 4;
pub const TIME_ONLY: u32 = 5;
pub const DATED: u32 = 6;
pub const MILLIS: u32 = 7;
pub const CP_MOE_RANKS: u32 = 8;
pub const BATCH_DOT: u32 = 9;
pub const BATCH_ITER: u32 = 10;
pub const BATCH_COMMA: u32 = 11;
pub const TRAILING_COMMA: u32 = 12;
pub const NO_TRAILING_COMMA: u32 = 13;
pub const CUDA_GRAPH: u32 = 14;
pub const CPU_GRAPH: u32 = 15;
pub const NPU_GRAPH: u32 = 16;
pub const ACCEPT_RATE: u32 = 17;
pub const LARGEST_LEN: u32 = 18;
pub const TIMESTAMP_FIELD: u32 = 19;
pub const CACHE_HIT_RATE: u32 = 20;
pub const PENDING_TOKEN: u32 = 21;
pub const PREFILL_INPUT_TPUT: u32 = 22;
pub const MIXED_CHUNK: u32 = 23;
pub const KV_DTYPE_IN_ALLOC: u32 = 24;
pub const USING_KV_DTYPE: u32 = 25;
pub const KV_TOKENS: u32 = 26;
pub const KV_NO_TOKENS: u32 = 27;
pub const AVAIL_GPU_MEM: u32 = 28;
pub const AVAIL_CPU_MEM: u32 = 29;
pub const CHUNKED_IN_CAP: u32 = 30;
pub const CAP_NO_CHUNKED: u32 = 31;
pub const RETRACT_LOWER: u32 = 32;
pub const RETRACT_DECODE_OOM: u32 = 33;
pub const RETRACT_KV_POOL: u32 = 34;
pub const RETRACT_TOKENS_GAINED: u32 = 35;
pub const SGLANG_SERVE: u32 = 36;
pub const SERVER_ARGS_DICT: u32 = 37;
pub const SERVER_ARGS_CLASS: u32 = 38;
pub const HYBRID_FULL_TOKEN: u32 = 39;
pub const MAMBA: u32 = 40;
pub const MFU: u32 = 41;

const FEATURES: [Feature; 42] = [
    f(
        "bare `#running-req:` Decode line",
        None,
        Some(("2024-06-07", "v0.1.16")),
    ),
    f("`new fill batch`", None, Some(("2024-06-07", "v0.1.16"))),
    f(
        "`Prefil batch` (typo)",
        Some(("2024-06-07", "v0.1.17")),
        Some(("2024-06-25", "v0.1.17")),
    ),
    f(
        "`[gpu_id=N]` tag",
        Some(("2024-06-07", "v0.1.17")),
        Some(("2024-07", "v0.2.6")),
    ),
    f(
        "`[gpu=N]` tag",
        Some(("2024-07", "v0.2.7")),
        Some(("2024-08-25", "v0.2.13")),
    ),
    f(
        "`[HH:MM:SS TP0]` prefix",
        Some(("2024-08-25", "v0.2.14")),
        Some(("2024-10-17", "v0.3.4")),
    ),
    f("dated prefix", Some(("2024-10-17", "v0.3.4")), None),
    f("milliseconds in the prefix", Some(("2025-12-01", "")), None),
    f("ATTN_CP/MOE_DP rank tags", Some(("2026-01", "")), None),
    f("`batch.`", None, Some(("2025-10-23", "v0.5.3.post3"))),
    f("`batch [N],`", Some(("2025-10-23", "v0.5.4")), None),
    f("`batch,`", Some(("2025-10-26", "v0.5.4.post1")), None),
    f(
        "trailing comma after #queue-req",
        None,
        Some(("2026-01-29", "v0.5.8")),
    ),
    f(
        "no trailing comma after #queue-req",
        Some(("2026-01-30", "v0.5.8.post1")),
        None,
    ),
    f(
        "`cuda graph` field",
        Some(("2025-05-12", "v0.4.6.post4")),
        None,
    ),
    f("`cpu graph` field", Some(("2025-09-08", "v0.5.2")), None),
    f("`npu/musa graph` field", Some(("2026-01-22", "")), None),
    f("`accept rate`", Some(("2025-10-13", "v0.5.3.post2")), None),
    f(
        "`largest-len`",
        Some(("2025-03-05", "v0.4.3.post3")),
        Some(("2025-03-26", "v0.4.4.post1")),
    ),
    f(
        "`timestamp:` field",
        Some(("2025-07-06", "v0.4.9.post1")),
        Some(("2025-07-19", "v0.4.9.post2")),
    ),
    f(
        "Prefill `cache hit rate`",
        None,
        Some(("2025-03-03", "v0.4.3.post2")),
    ),
    f("`#pending-token`", Some(("2026-04-10", "")), None),
    f(
        "Prefill `input throughput` without PD",
        Some(("2026-01-29", "v0.5.8")),
        None,
    ),
    f(
        "`Prefill batch(mixed ...)`",
        Some(("2024-08-16", "v0.2.14")),
        Some(("2024-11-10", "v0.3.5")),
    ),
    f(
        "KV alloc line names its dtype",
        Some(("2026-05-24", "")),
        None,
    ),
    f(
        "`Using KV cache dtype:` line",
        None,
        Some(("2026-05-24", "")),
    ),
    f(
        "KV alloc line with `#tokens`",
        Some(("2025-03-04", "v0.4.3.post3")),
        None,
    ),
    f(
        "KV alloc line without `#tokens`",
        Some(("2025-01-13", "v0.4.2")),
        Some(("2025-03-04", "v0.4.3.post2")),
    ),
    f("`available_gpu_mem`", Some(("2025-05-31", "v0.4.7")), None),
    f("`available_cpu_mem`", Some(("2025-09-08", "v0.5.2")), None),
    f(
        "`chunked_prefill_size` in the capacity line",
        Some(("2025-01-26", "v0.4.2")),
        None,
    ),
    f(
        "capacity line without `chunked_prefill_size`",
        None,
        Some(("2025-01-26", "v0.4.2")),
    ),
    f(
        "`decode out of memory happened,`",
        None,
        Some(("2024-08-25", "v0.2.13")),
    ),
    f(
        "`Decode out of memory happened.`",
        Some(("2024-08-25", "v0.2.14")),
        Some(("2025-05-31", "v0.4.6.post5")),
    ),
    f(
        "`KV cache pool is full. Retract requests.`",
        Some(("2025-05-31", "v0.4.7")),
        None,
    ),
    f(
        "`#new_tokens_gained` in retractions",
        Some(("2025-12-24", "")),
        None,
    ),
    f(
        "`sglang serve` in argparse messages",
        Some(("2026-03-19", "")),
        None,
    ),
    f("`server_args` printed as a dict", None, None),
    f(
        "`server_args=ServerArgs(...)`",
        Some(("2025-01-19", "v0.4.2")),
        None,
    ),
    f(
        "hybrid `#full token` fields",
        Some(("2025-07-13", "v0.4.9.post3")),
        None,
    ),
    f("`mamba usage`", Some(("2025-10-13", "")), None),
    f("`est. ... TFLOPS/s` fields", Some(("2026-03-30", "")), None),
];

/// Stats lines per kind inspected for features (the format does not change within a log).
pub const INSPECT_LINES: usize = 256;

fn bit(id: u32) -> u64 {
    1u64 << id
}

/// Features of one stats line.
pub fn stats_features(s: &StatsRef<'_>) -> u64 {
    let mut m = 0u64;
    let head = s.line.get(..s.region).unwrap_or(&[]);
    let tail = s.line.get(s.region..).unwrap_or(&[]);
    let normal_marker = head.ends_with(b"Decode batch") || head.ends_with(b"Prefill batch");
    if head.ends_with(b"new fill batch") {
        m |= bit(NEW_FILL);
    } else if head.ends_with(b"Prefil batch") {
        m |= bit(PREFIL_TYPO);
    } else if tail.starts_with(b"#running-req") {
        m |= bit(BARE_DECODE);
    }
    let ranks = &s.prefix.ranks;
    if ranks.get(b"gpu_id").is_some() {
        m |= bit(GPU_ID_TAG);
    }
    if ranks.get(b"gpu").is_some() {
        m |= bit(GPU_TAG);
    }
    if ranks.get(b"ATTN_CP").is_some() || ranks.get(b"MOE_DP").is_some() {
        m |= bit(CP_MOE_RANKS);
    }
    match s.prefix.ts {
        Some(t) if t.date.is_some() => m |= bit(DATED),
        Some(_) => m |= bit(TIME_ONLY),
        None => {}
    }
    if s.prefix.ms {
        m |= bit(MILLIS);
    }
    if normal_marker {
        match s.after_marker() {
            Some(b'.') => m |= bit(BATCH_DOT),
            Some(b',') => m |= bit(BATCH_COMMA),
            Some(b' ') => m |= bit(BATCH_ITER),
            Some(b'(') => m |= bit(MIXED_CHUNK),
            _ => {}
        }
    }
    let decode = s.kind == super::line::StatsKind::Decode;
    let mut last_key: &[u8] = &[];
    s.visit_fields(&mut |k, _| {
        m |= match k {
            b"accept rate" => bit(ACCEPT_RATE),
            b"largest-len" => bit(LARGEST_LEN),
            b"timestamp" => bit(TIMESTAMP_FIELD),
            b"cache hit rate" => bit(CACHE_HIT_RATE),
            b"#pending-token" => bit(PENDING_TOKEN),
            b"#full token" => bit(HYBRID_FULL_TOKEN),
            b"mamba usage" => bit(MAMBA),
            _ if k.starts_with(b"est. ") && k.windows(6).any(|w| w == b"TFLOPS") => bit(MFU),
            _ => 0,
        };
        last_key = k;
    });
    if decode && last_key == b"#queue-req" {
        if s.trailing_comma() {
            m |= bit(TRAILING_COMMA);
        } else if s.after_marker() == Some(b',') {
            m |= bit(NO_TRAILING_COMMA);
        }
    }
    match s.graph_label {
        b"cuda graph" => m |= bit(CUDA_GRAPH),
        b"cpu graph" => m |= bit(CPU_GRAPH),
        b"npu graph" | b"musa graph" => m |= bit(NPU_GRAPH),
        _ => {}
    }
    if !decode && s.input_throughput.is_some() && s.running_req.is_some() {
        m |= bit(PREFILL_INPUT_TPUT);
    }
    m
}

/// Features of a start-up / retraction / error line.
pub fn event_features(line: &[u8], ev: &LogEvent) -> u64 {
    let has = |n: &[u8]| memchr::memmem::find(line, n).is_some();
    match ev {
        LogEvent::KvAlloc(k) => {
            let mut m = 0;
            if k.dtype.is_some() {
                m |= bit(KV_DTYPE_IN_ALLOC);
            }
            m |= if k.tokens.is_some() {
                bit(KV_TOKENS)
            } else {
                bit(KV_NO_TOKENS)
            };
            m
        }
        LogEvent::KvCacheDtype(_) => bit(USING_KV_DTYPE),
        LogEvent::Capacity(_) => {
            let mut m = 0;
            if has(b"available_gpu_mem") {
                m |= bit(AVAIL_GPU_MEM);
            }
            if has(b"available_cpu_mem") {
                m |= bit(AVAIL_CPU_MEM);
            }
            if has(b"chunked_prefill_size") {
                m |= bit(CHUNKED_IN_CAP);
            } else if has(b"max_running_requests") {
                m |= bit(CAP_NO_CHUNKED);
            }
            m
        }
        LogEvent::Retract(_) => {
            let mut m = 0;
            if has(b"decode out of memory happened") {
                m |= bit(RETRACT_LOWER);
            }
            if has(b"Decode out of memory happened") {
                m |= bit(RETRACT_DECODE_OOM);
            }
            if has(b"KV cache pool is full") {
                m |= bit(RETRACT_KV_POOL);
            }
            if has(b"#new_tokens_gained") {
                m |= bit(RETRACT_TOKENS_GAINED);
            }
            m
        }
        LogEvent::Error(_) if has(b"sglang serve") => bit(SGLANG_SERVE),
        LogEvent::ServerArgs(_) => {
            if has(b"server_args={") {
                bit(SERVER_ARGS_DICT)
            } else if has(b"server_args=ServerArgs(") {
                bit(SERVER_ARGS_CLASS)
            } else {
                0
            }
        }
        _ => 0,
    }
}

/// What the features seen say about the SGLang version.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VersionHints {
    /// Each feature seen, with its era, e.g. "`batch,` (since 2025-10-26, v0.5.4.post1)".
    pub hints: Vec<String>,
    /// The log is from this date or later: the newest "since" among the features, e.g.
    /// "2026-05-24 (KV alloc line names its dtype)".
    pub newer_than: Option<String>,
    /// The log is from this date or earlier: the oldest "until" among the features.
    pub older_than: Option<String>,
    /// The features contradict each other (a mixed log, or a custom build).
    pub conflicting: bool,
}

impl VersionHints {
    /// One line: "2026-05-24 or newer (KV alloc line names its dtype)", "between ...".
    pub fn one_line(&self) -> String {
        let mut s = match (&self.newer_than, &self.older_than) {
            (Some(a), Some(b)) => format!("between {a} and {b}"),
            (Some(a), None) => format!("from {a} or newer"),
            (None, Some(b)) => format!("from {b} or older"),
            (None, None) => "no version hints".to_string(),
        };
        if self.conflicting {
            s.push_str(" (conflicting hints: a mixed log or a custom build)");
        }
        s
    }
}

fn era(date: &str, version: &str) -> String {
    if version.is_empty() {
        date.to_string()
    } else {
        format!("{date}, {version}")
    }
}

/// Turn a feature bit set into hints.
pub fn hints(mask: u64) -> VersionHints {
    let mut out = VersionHints::default();
    let mut newest: Option<(&str, String)> = None;
    let mut oldest: Option<(&str, String)> = None;
    for (i, feat) in FEATURES.iter().enumerate() {
        if mask & (1u64 << i) == 0 {
            continue;
        }
        let mut h = feat.what.to_string();
        match (feat.since, feat.until) {
            (Some((d, v)), Some((d2, v2))) => {
                h.push_str(&format!(" (from {} to {})", era(d, v), era(d2, v2)));
            }
            (Some((d, v)), None) => h.push_str(&format!(" (since {})", era(d, v))),
            (None, Some((d, v))) => h.push_str(&format!(" (until {})", era(d, v))),
            (None, None) => {}
        }
        out.hints.push(h);
        if let Some((d, v)) = feat.since {
            if newest.as_ref().is_none_or(|(n, _)| d > *n) {
                newest = Some((d, format!("{} ({})", era(d, v), feat.what)));
            }
        }
        if let Some((d, v)) = feat.until {
            if oldest.as_ref().is_none_or(|(o, _)| d < *o) {
                oldest = Some((d, format!("{} ({})", era(d, v), feat.what)));
            }
        }
    }
    if let (Some((n, _)), Some((o, _))) = (&newest, &oldest) {
        out.conflicting = n > o;
    }
    out.newer_than = newest.map(|(_, s)| s);
    out.older_than = oldest.map(|(_, s)| s);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_from_features() {
        assert_eq!(hints(0), VersionHints::default());
        assert_eq!(hints(0).one_line(), "no version hints");
        let h = hints(bit(DATED) | bit(BATCH_COMMA) | bit(KV_DTYPE_IN_ALLOC));
        assert_eq!(h.hints.len(), 3);
        assert_eq!(
            h.one_line(),
            "from 2026-05-24 (KV alloc line names its dtype) or newer"
        );
        let h = hints(bit(LARGEST_LEN) | bit(DATED));
        assert_eq!(
            h.one_line(),
            "between 2025-03-05, v0.4.3.post3 (`largest-len`) and 2025-03-26, v0.4.4.post1 (`largest-len`)"
        );
        let h = hints(bit(BATCH_DOT) | bit(PENDING_TOKEN));
        assert!(h.conflicting);
        assert_eq!(FEATURES.len(), MFU as usize + 1);
    }
}
