//! One vLLM log line: the prefix (`(APIServer pid=1) INFO 05-19 10:13:11 [loggers.py:271] `,
//! or the older `INFO 02-28 21:48:18 metrics.py:161] `) and the few messages sgtune reads.
//!
//! The periodic stats line comes in two shapes (both printed every few seconds while the engine
//! is busy, and not at all while it is idle):
//!
//! - V0 engine (`vllm/engine/metrics.py`, until 0.10): `Avg prompt throughput: 0.0 tokens/s,
//!   Avg generation throughput: 44.9 tokens/s, Running: 2 reqs, Swapped: 0 reqs, Pending: 3 reqs,
//!   GPU KV cache usage: 82.1%, CPU KV cache usage: 0.0%` (the CPU pool is swap space);
//! - V1 engine (`vllm/v1/metrics/loggers.py`): `Engine 000: Avg prompt throughput: ..., Avg
//!   generation throughput: ..., Running: 18 reqs, Waiting: 43 reqs, GPU KV cache usage: 95.9%,
//!   Prefix cache hit rate: 0.0%`, with optional `Deferred:` and `Preemptions:` parts; newer
//!   builds drop the `Engine 000:` head and name the pool's device (`CPU KV cache usage` on CPU).
//!
//! The start-up capacity: `GPU KV cache size: 2,042,016 tokens` and `Maximum concurrency for
//! 2,048 tokens per request: 997.08x` (V1, two lines until 0.1x, one line joined by `, ` in
//! 0.32), the V0 `# GPU blocks: 1952, # CPU blocks: 2048`, and the explicit KV space on CPU.
//! No function here panics on any input.

use memchr::memmem;

use crate::observe::sglang_log::Timestamp;
use crate::observe::sglang_log::fields::parse_f64;
use crate::observe::sglang_log::line::parse_server_args;

/// Which engine's stats line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatsFormat {
    /// `Running, Swapped, Pending, GPU KV cache usage, CPU KV cache usage`.
    V0,
    /// `Running, Waiting, <device> KV cache usage, Prefix cache hit rate`.
    V1,
}

/// One periodic stats line; a field the line does not carry is None.
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    pub format: StatsFormat,
    /// `Engine 000:` (V1 with several engines: data parallel).
    pub engine: Option<u32>,
    /// tokens/s over the last logging interval.
    pub prompt_throughput: Option<f64>,
    pub generation_throughput: Option<f64>,
    pub running: Option<u64>,
    /// V1 `Waiting` (which includes `Deferred`), V0 `Pending`.
    pub waiting: Option<u64>,
    /// V0: requests swapped out to the CPU pool.
    pub swapped: Option<u64>,
    /// V1: requests that could be scheduled but were put off (part of `waiting`).
    pub deferred: Option<u64>,
    /// V1: requests preempted during the interval (the part is printed only when > 0).
    pub preemptions: Option<u64>,
    /// The device pool's usage as a fraction (the line prints percent).
    pub kv_usage: Option<f64>,
    /// The pool's device name as printed (`GPU`, `CPU`, `XPU`, ...).
    pub kv_device: Option<String>,
    /// V0: the CPU swap pool's usage as a fraction.
    pub swap_usage: Option<f64>,
    /// V1: prefix cache hit rate as a fraction (over vLLM's recent requests).
    pub prefix_hit_rate: Option<f64>,
}

/// The start-up KV capacity.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Capacity {
    /// `GPU KV cache size: N tokens`.
    pub kv_tokens: Option<u64>,
    /// `Maximum concurrency for N tokens per request`: N (the max model length).
    pub tokens_per_request: Option<u64>,
    /// ...`: X.XXx`.
    pub max_concurrency: Option<f64>,
    /// V0 `# GPU blocks: N`.
    pub gpu_blocks: Option<u64>,
}

/// What one line says.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Stats(Stats),
    Capacity(Capacity),
    /// The server answers: uvicorn's `Application startup complete.`.
    Ready,
    /// `vLLM API server version 0.6.3` or the banner's `version 0.32.0`.
    Version(String),
    /// `non-default args: {...}`: the arguments that differ from vLLM's defaults.
    Args(Vec<(String, String)>),
    /// `Using max model len 2048`.
    MaxModelLen(u64),
    /// The KV space in GiB: `Available KV cache memory: 6.51 GiB` (GPU) or `Explicitly set
    /// (1.00/15.6) GiB for KV cache` (CPU).
    KvGib(f64),
}

/// A parsed line: its time (vLLM prints month-day and seconds, no year) and what it says.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub ts: Option<Timestamp>,
    pub event: Event,
}

const LEVELS: [&str; 5] = ["INFO ", "WARNING ", "ERROR ", "DEBUG ", "CRITICAL "];

/// Split a line into its time and its message. A line without vLLM's prefix is all message.
pub fn split_prefix(line: &str) -> (Option<Timestamp>, &str) {
    let head = line.get(..line.len().min(160)).unwrap_or(line);
    for level in LEVELS {
        let mut from = 0;
        while let Some(i) = head.get(from..).and_then(|h| h.find(level)) {
            let at = from + i;
            from = at + level.len();
            // The level is a word of its own: at the start or after a space.
            if at > 0 && !head[..at].ends_with(' ') {
                continue;
            }
            let rest = &line[at + level.len()..];
            let Some(ts) = parse_month_day_time(rest) else {
                continue;
            };
            let after = rest.get(14..).unwrap_or_default().trim_start();
            // `[file.py:123] ` (2025 on) or `file.py:123] ` (before).
            let msg = match after.find("] ") {
                Some(j) if j < 80 && !after[..j].contains(' ') => &after[j + 2..],
                _ => after,
            };
            return (Some(ts), msg);
        }
    }
    (None, line)
}

/// `MM-DD HH:MM:SS` at the start of `s`.
fn parse_month_day_time(s: &str) -> Option<Timestamp> {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = b.get(r)?;
        if !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    if b.get(2) != Some(&b'-') || b.get(5) != Some(&b' ') {
        return None;
    }
    if b.get(8) != Some(&b':') || b.get(11) != Some(&b':') {
        return None;
    }
    let (month, day) = (digits(0..2)?, digits(3..5)?);
    let (h, m, sec) = (digits(6..8)?, digits(9..11)?, digits(12..14)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || h > 23 || m > 59 || sec > 60 {
        return None;
    }
    Some(Timestamp {
        date: None,
        secs_of_day: f64::from(h * 3600 + m * 60 + sec),
    })
}

/// The leading integer of a value, thousands separators allowed (`2,042,016 tokens`).
pub fn parse_grouped_u64(v: &str) -> Option<u64> {
    let v = v.trim_start();
    let mut n: u64 = 0;
    let mut any = false;
    for c in v.chars() {
        match c {
            '0'..='9' => {
                n = n.checked_mul(10)?.checked_add(u64::from(c as u8 - b'0'))?;
                any = true;
            }
            ',' if any => {}
            _ => break,
        }
    }
    any.then_some(n)
}

fn pct(v: &str) -> Option<f64> {
    parse_f64(v.trim()).map(|x| x / 100.0)
}

/// Parse one line; None for lines of no interest.
pub fn parse_line(line: &str) -> Option<Line> {
    // Cheap refusal of most lines: every line of interest has one of these.
    let b = line.as_bytes();
    let interesting = memmem::find(b, b"throughput:").is_some()
        || memmem::find(b, b"KV cache").is_some()
        || memmem::find(b, b"concurrency for").is_some()
        || memmem::find(b, b"blocks:").is_some()
        || memmem::find(b, b"startup complete").is_some()
        || memmem::find(b, b"version").is_some()
        || memmem::find(b, b"non-default args:").is_some()
        || memmem::find(b, b"max model len").is_some();
    if !interesting {
        return None;
    }
    let (ts, msg) = split_prefix(line);
    let event = parse_message(msg.trim_end())?;
    Some(Line { ts, event })
}

fn parse_message(msg: &str) -> Option<Event> {
    if let Some(s) = parse_stats(msg) {
        return Some(Event::Stats(s));
    }
    if let Some(c) = parse_capacity(msg) {
        return Some(Event::Capacity(c));
    }
    if msg.contains("Application startup complete") {
        return Some(Event::Ready);
    }
    if let Some(rest) = msg.strip_prefix("non-default args:") {
        return Some(Event::Args(parse_server_args(rest)));
    }
    if let Some(rest) = msg.strip_prefix("Using max model len ") {
        return parse_grouped_u64(rest).map(Event::MaxModelLen);
    }
    if let Some(rest) = msg.strip_prefix("Available KV cache memory:") {
        return parse_f64(rest.trim()).map(Event::KvGib);
    }
    if let Some(rest) = msg.strip_prefix("Explicitly set (") {
        if msg.contains("GiB for KV cache") {
            return parse_f64(rest).map(Event::KvGib);
        }
    }
    if let Some(v) = version(msg) {
        return Some(Event::Version(v));
    }
    None
}

/// `vLLM API server version 0.6.3`, the banner's `... version 0.32.0`, or `Initializing a V1
/// LLM engine (v0.32.0)`.
fn version(msg: &str) -> Option<String> {
    let word = |s: &str| -> Option<String> {
        let v: String = s
            .trim_start()
            .trim_start_matches('v')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '.' || *c == '+')
            .collect();
        v.starts_with(|c: char| c.is_ascii_digit()).then_some(v)
    };
    if let Some((_, rest)) = msg.split_once("vLLM API server version") {
        return word(rest);
    }
    if let Some((_, rest)) = msg.split_once("LLM engine (v") {
        return word(rest);
    }
    // The 0.1x banner: block-letter art, then `version 0.32.0`.
    if msg.contains('█') {
        if let Some((_, rest)) = msg.split_once(" version ") {
            return word(rest);
        }
    }
    None
}

fn parse_stats(msg: &str) -> Option<Stats> {
    let at = msg.find("Avg prompt throughput:")?;
    let engine = msg
        .get(..at)
        .and_then(|h| h.trim().strip_prefix("Engine "))
        .and_then(|e| e.trim_end_matches(':').trim().parse::<u32>().ok());
    let body = msg.get(at..)?.trim_end_matches('.');
    let mut s = Stats {
        format: StatsFormat::V1,
        engine,
        prompt_throughput: None,
        generation_throughput: None,
        running: None,
        waiting: None,
        swapped: None,
        deferred: None,
        preemptions: None,
        kv_usage: None,
        kv_device: None,
        swap_usage: None,
        prefix_hit_rate: None,
    };
    let mut v0 = false;
    let mut usages: Vec<(&str, f64)> = Vec::new();
    for part in body.split(", ") {
        let Some((k, v)) = part.split_once(": ") else {
            continue;
        };
        let k = k.trim();
        match k {
            "Avg prompt throughput" => s.prompt_throughput = parse_f64(v),
            "Avg generation throughput" => s.generation_throughput = parse_f64(v),
            "Running" => s.running = parse_grouped_u64(v),
            "Waiting" => s.waiting = parse_grouped_u64(v),
            "Pending" => {
                v0 = true;
                s.waiting = parse_grouped_u64(v);
            }
            "Swapped" => {
                v0 = true;
                s.swapped = parse_grouped_u64(v);
            }
            "Deferred" => s.deferred = parse_grouped_u64(v),
            "Preemptions" => s.preemptions = parse_grouped_u64(v),
            "Prefix cache hit rate" => s.prefix_hit_rate = pct(v),
            _ => {
                if let Some(dev) = k.strip_suffix(" KV cache usage") {
                    if let Some(u) = pct(v) {
                        usages.push((dev, u));
                    }
                }
            }
        }
    }
    if v0 {
        s.format = StatsFormat::V0;
        s.kv_usage = usages.iter().find(|(d, _)| *d == "GPU").map(|(_, u)| *u);
        s.kv_device = s.kv_usage.map(|_| "GPU".to_string());
        s.swap_usage = usages.iter().find(|(d, _)| *d == "CPU").map(|(_, u)| *u);
    } else if let Some((d, u)) = usages.first() {
        s.kv_usage = Some(*u);
        s.kv_device = Some((*d).to_string());
    }
    Some(s)
}

fn parse_capacity(msg: &str) -> Option<Capacity> {
    let mut c = Capacity::default();
    if let Some((_, rest)) = msg.split_once("KV cache size: ") {
        if rest.contains("tokens") {
            c.kv_tokens = parse_grouped_u64(rest);
        }
    }
    if let Some((_, rest)) = msg.split_once("Maximum concurrency for ") {
        c.tokens_per_request = parse_grouped_u64(rest);
        if let Some((_, x)) = rest.split_once("per request: ") {
            c.max_concurrency = parse_f64(x);
        }
    }
    if let Some((_, rest)) = msg.split_once("# GPU blocks: ") {
        c.gpu_blocks = parse_grouped_u64(rest);
    }
    (c != Capacity::default()).then_some(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_of_each_era() {
        let (ts, msg) = split_prefix(
            "(APIServer pid=3646) INFO 05-19 10:13:11 [loggers.py:271] Engine 000: Avg",
        );
        assert_eq!(ts.map(|t| t.secs_of_day), Some(36_791.0));
        assert_eq!(msg, "Engine 000: Avg");
        let (ts, msg) = split_prefix("INFO 02-28 21:48:18 metrics.py:161] Avg prompt");
        assert_eq!(ts.map(|t| t.secs_of_day), Some(78_498.0));
        assert_eq!(msg, "Avg prompt");
        let (ts, msg) = split_prefix("plain text");
        assert_eq!((ts, msg), (None, "plain text"));
        // A level word inside a message is not a prefix.
        assert_eq!(split_prefix("XINFO 02-28 21:48:18 a] b").0, None);
        assert_eq!(split_prefix("INFO 13-28 21:48:18 a] b").0, None);
    }

    #[test]
    fn grouped_numbers() {
        assert_eq!(parse_grouped_u64("2,042,016 tokens"), Some(2_042_016));
        assert_eq!(parse_grouped_u64(" 17 reqs"), Some(17));
        assert_eq!(parse_grouped_u64("x"), None);
        assert_eq!(parse_grouped_u64("99999999999999999999999"), None);
    }

    #[test]
    fn never_panics_on_cut_lines() {
        let line = "(APIServer pid=1) INFO 05-19 10:13:11 [loggers.py:271] Engine 000: Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 3 reqs, Waiting: 4 reqs, GPU KV cache usage: 5.0%, Prefix cache hit rate: 6.0%";
        for (i, _) in line.char_indices() {
            let _ = parse_line(&line[..i]);
        }
        let s = match parse_line(line).map(|l| l.event) {
            Some(Event::Stats(s)) => s,
            other => panic!("{other:?}"),
        };
        assert_eq!(s.waiting, Some(4));
    }
}
