//! Byte-level scanning of one log line: the fast path behind [`parse_line`] and the
//! streaming summary.
//!
//! A line is looked at in this order:
//! 1. A `[timestamp ranks]` prefix at column 0 followed by `Decode batch` / `Prefill batch`
//!    (the current format, and most of the bytes of a busy log): read here without allocating,
//!    keeping only the values the summary needs ([`StatsRef`]).
//! 2. The same prefix followed by uvicorn's `INFO:     ` (access lines): skipped at once.
//!    A traceback frame (`  File "...`) is not searched either.
//! 3. Anything else: every marker is searched anywhere in the line (glued tqdm bars, wrappers,
//!    old formats), with precompiled substring searchers. Lines that carry none of the few
//!    bytes/words every other marker needs cost a couple of `memchr` calls.
//!
//! A second `[` after the message start sends a line to step 3, so two lines glued together
//! are read the careful way. Nothing here panics on any input.

use std::sync::OnceLock;

use memchr::{memchr, memchr3, memmem};

use super::fields::{parse_bool_bytes, parse_f64_bytes, parse_u64_bytes, visit_fields};
use super::line::{LogEvent, StatsKind, StatsLine, parse_other, parse_server_args};
use super::prefix::{Prefix, Timestamp, parse_bracket, parse_prefix_bytes};

/// What one line is.
// Built once per line and handed to a closure; events are rare, so their size does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Scanned<'a> {
    /// A `Decode batch` / `Prefill batch` line (or an older form), borrowed.
    Stats(&'a StatsRef<'a>),
    /// Any other line of interest (rare: start-up, retraction, ready, errors).
    Event(LogEvent),
    /// A uvicorn access line after a normal prefix: known to be of no interest.
    Skip,
    /// Nothing recognised (tracebacks, warnings, start-up chatter, garbage).
    Nothing,
}

/// Fields of a stats line from `region` on: an optional ` [N]` iteration tag, an optional
/// `(mixed #running-req: N)` part, then the `key: value` pieces.
fn visit_region<'a>(line: &'a [u8], region: usize, f: &mut impl FnMut(&'a [u8], &'a [u8])) {
    let mut rest = line.get(region..).unwrap_or(&[]);
    // ` [N]` forward-iteration tag (v0.5.4, or SGLANG_LOG_FORWARD_ITERS).
    if let Some(r) = rest.strip_prefix(b" [") {
        rest = match memchr(b']', r) {
            Some(p) => r.get(p + 1..).unwrap_or(&[]),
            None => &[],
        };
    }
    // `Prefill batch(mixed #running-req: N). ...` (--enable-mixed-chunk, 2024-08 .. 2024-11).
    if let Some(r) = rest.strip_prefix(b"(") {
        let (inner, after) = match memchr(b')', r) {
            Some(p) => (r.get(..p).unwrap_or(&[]), r.get(p + 1..).unwrap_or(&[])),
            None => (r, &[][..]),
        };
        let inner = inner.trim_ascii();
        let inner = inner.strip_prefix(b"mixed").unwrap_or(inner);
        visit_fields(inner, f);
        rest = after;
    }
    visit_fields(rest, f);
}

/// Whether raw key `k` equals `want` after lower-casing and `_` → `-` (`want` is normalised),
/// for keys written with `_` or capitals (v0.1).
fn key_is_folded(k: &[u8], want: &[u8]) -> bool {
    k.len() == want.len()
        && k.iter().zip(want).all(|(&a, &b)| {
            let a = if a == b'_' {
                b'-'
            } else {
                a.to_ascii_lowercase()
            };
            a == b
        })
}

/// `cuda graph`, `cpu graph`, `npu graph`, `musa graph` (any single word + ` graph`).
pub(crate) fn is_graph_key(k: &[u8]) -> bool {
    k.trim_ascii()
        .strip_suffix(b" graph")
        .is_some_and(|w| !w.is_empty() && w.iter().all(u8::is_ascii_alphabetic))
}

#[derive(Clone, Copy)]
enum Slot {
    Running,
    Queue,
    Usage,
    FullUsage,
    Tokens,
    FullTokens,
    Gen,
    Input,
    NewSeq,
    NewToken,
    Cached,
    Graph,
}

/// The summary-relevant key a raw key stands for. Keys as SGLang writes them are matched
/// exactly (constant-size compares); others (`#running_req`, capitals) by folding.
fn slot_of(k: &[u8]) -> Option<Slot> {
    let exact = match k {
        b"#running-req" => Some(Slot::Running),
        b"#queue-req" => Some(Slot::Queue),
        b"token usage" => Some(Slot::Usage),
        b"#token" => Some(Slot::Tokens),
        b"gen throughput (token/s)" => Some(Slot::Gen),
        b"input throughput (token/s)" => Some(Slot::Input),
        b"#new-seq" => Some(Slot::NewSeq),
        b"#new-token" => Some(Slot::NewToken),
        b"#cached-token" => Some(Slot::Cached),
        b"full token usage" => Some(Slot::FullUsage),
        b"#full token" => Some(Slot::FullTokens),
        _ => None,
    };
    if exact.is_some() {
        return exact;
    }
    if k.ends_with(b" graph") {
        return is_graph_key(k).then_some(Slot::Graph);
    }
    let cands: &[(&[u8], Slot)] = match k.len() {
        4 => &[(b"#seq", Slot::NewSeq)],
        6 => &[(b"#token", Slot::Tokens)],
        8 => &[(b"#new-seq", Slot::NewSeq)],
        10 => &[
            (b"#queue-req", Slot::Queue),
            (b"#new-token", Slot::NewToken),
        ],
        11 => &[
            (b"token usage", Slot::Usage),
            (b"#full token", Slot::FullTokens),
        ],
        12 => &[(b"#running-req", Slot::Running)],
        13 => &[(b"#cached-token", Slot::Cached)],
        14 => &[(b"#remaining-req", Slot::Queue)],
        16 => &[(b"full token usage", Slot::FullUsage)],
        24 => &[(b"gen throughput (token/s)", Slot::Gen)],
        26 => &[(b"input throughput (token/s)", Slot::Input)],
        _ => return None,
    };
    cands
        .iter()
        .find(|(w, _)| key_is_folded(k, w))
        .map(|(_, s)| *s)
}

/// The first field of each summary-relevant key, parsed (a later duplicate is ignored, and a
/// first value that does not parse gives None, as a lookup by key would).
#[derive(Default)]
struct Known<'a> {
    seen: u16,
    running: Option<u64>,
    queue: Option<u64>,
    usage: Option<f64>,
    full_usage: Option<f64>,
    tokens: Option<u64>,
    full_tokens: Option<u64>,
    gen_tput: Option<f64>,
    input: Option<f64>,
    new_seq: Option<u64>,
    new_token: Option<u64>,
    cached: Option<u64>,
    graph: Option<bool>,
    graph_label: &'a [u8],
}

impl<'a> Known<'a> {
    fn take(&mut self, k: &'a [u8], v: &[u8]) {
        let Some(slot) = slot_of(k) else {
            return;
        };
        let bit = 1u16 << (slot as u16);
        if self.seen & bit != 0 {
            return;
        }
        self.seen |= bit;
        match slot {
            Slot::Running => self.running = parse_u64_bytes(v),
            Slot::Queue => self.queue = parse_u64_bytes(v),
            Slot::Usage => self.usage = parse_f64_bytes(v),
            Slot::FullUsage => self.full_usage = parse_f64_bytes(v),
            Slot::Tokens => self.tokens = parse_u64_bytes(v),
            Slot::FullTokens => self.full_tokens = parse_u64_bytes(v),
            Slot::Gen => self.gen_tput = parse_f64_bytes(v),
            Slot::Input => self.input = parse_f64_bytes(v),
            Slot::NewSeq => self.new_seq = parse_u64_bytes(v),
            Slot::NewToken => self.new_token = parse_u64_bytes(v),
            Slot::Cached => self.cached = parse_u64_bytes(v),
            Slot::Graph => {
                self.graph = parse_bool_bytes(v);
                self.graph_label = k.trim_ascii();
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Stats lines

/// A stats line read without allocating: the prefix, the values the summary uses, and the
/// line itself (its fields can be visited again with [`StatsRef::visit_fields`]).
#[derive(Debug, Clone, Copy)]
pub struct StatsRef<'a> {
    pub kind: StatsKind,
    pub prefix: Prefix,
    pub line: &'a [u8],
    /// Offset right after the marker (`Decode batch`), where the fields start.
    pub region: usize,
    pub running_req: Option<u64>,
    pub queue_req: Option<u64>,
    /// `token usage`, else `full token usage`.
    pub token_usage: Option<f64>,
    /// `#token`, else `#full token`.
    pub num_tokens: Option<u64>,
    pub gen_throughput: Option<f64>,
    pub input_throughput: Option<f64>,
    pub new_seq: Option<u64>,
    pub new_token: Option<u64>,
    pub cached_token: Option<u64>,
    pub graph: Option<bool>,
    /// `cuda graph`, `cpu graph`, ... as written; empty when the line has no graph field.
    pub graph_label: &'a [u8],
    /// Number of `key: value` fields.
    pub field_count: usize,
}

impl<'a> StatsRef<'a> {
    pub fn ts(&self) -> Option<Timestamp> {
        self.prefix.ts
    }

    /// Call `f(key, value)` for every field, in order.
    pub fn visit_fields(&self, f: &mut impl FnMut(&'a [u8], &'a [u8])) {
        visit_region(self.line, self.region, f);
    }

    /// The byte right after the marker: `.` (≤ v0.5.3), `,` (≥ v0.5.4.post1), ` ` (` [N]`,
    /// v0.5.4), `(` (mixed chunk), or None.
    pub fn after_marker(&self) -> Option<u8> {
        self.line.get(self.region).copied()
    }

    /// The line ends with `,` (after trimming whitespace).
    pub fn trailing_comma(&self) -> bool {
        self.line.trim_ascii_end().last() == Some(&b',')
    }

    /// The owned form, every field kept.
    pub fn to_owned_line(&self) -> StatsLine {
        let mut fields = Vec::with_capacity(self.field_count);
        self.visit_fields(&mut |k, v| {
            fields.push((
                String::from_utf8_lossy(k).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            ));
        });
        StatsLine {
            kind: self.kind,
            ts: self.prefix.ts,
            ranks: self.prefix.ranks.to_owned_vec(),
            running_req: self.running_req,
            queue_req: self.queue_req,
            token_usage: self.token_usage,
            num_tokens: self.num_tokens,
            gen_throughput: self.gen_throughput,
            input_throughput: self.input_throughput,
            new_seq: self.new_seq,
            new_token: self.new_token,
            cached_token: self.cached_token,
            graph: self.graph,
            fields,
        }
    }
}

fn build_stats<'a>(line: &'a [u8], kind: StatsKind, prefix: Prefix, region: usize) -> StatsRef<'a> {
    let mut k = Known::default();
    let mut n = 0usize;
    visit_region(line, region, &mut |key, val| {
        n += 1;
        k.take(key, val);
    });
    StatsRef {
        kind,
        prefix,
        line,
        region,
        running_req: k.running,
        queue_req: k.queue,
        token_usage: k.usage.or(k.full_usage),
        num_tokens: k.tokens.or(k.full_tokens),
        gen_throughput: k.gen_tput,
        input_throughput: k.input,
        new_seq: k.new_seq,
        new_token: k.new_token,
        cached_token: k.cached,
        graph: k.graph,
        graph_label: k.graph_label,
        field_count: n,
    }
}

const STATS_MARKERS: [(&[u8], StatsKind); 4] = [
    (b"Decode batch", StatsKind::Decode),
    (b"Prefill batch", StatsKind::Prefill),
    (b"Prefil batch", StatsKind::Prefill),
    (b"new fill batch", StatsKind::Prefill),
];

/// What may follow a stats marker: the end, `.`, `,`, `(`, `:` or ` [`.
fn marker_end_ok(after: &[u8]) -> bool {
    match after.first() {
        None => true,
        Some(b'.' | b',' | b'(' | b':') => true,
        Some(b' ') => after.get(1) == Some(&b'['),
        _ => false,
    }
}

struct Finders {
    ready: memmem::Finder<'static>,
    server_args: memmem::Finder<'static>,
    batch: memmem::Finder<'static>,
    stats: [memmem::Finder<'static>; 4],
    running_req: memmem::Finder<'static>,
    token_usage: memmem::Finder<'static>,
    hash_token: memmem::Finder<'static>,
    graph: memmem::Finder<'static>,
    of_memory: memmem::Finder<'static>,
}

fn finders() -> &'static Finders {
    static F: OnceLock<Finders> = OnceLock::new();
    F.get_or_init(|| Finders {
        ready: memmem::Finder::new(super::line::READY_MARKER.as_bytes()),
        server_args: memmem::Finder::new(b"server_args="),
        batch: memmem::Finder::new(b"batch"),
        stats: STATS_MARKERS.map(|(m, _)| memmem::Finder::new(m)),
        running_req: memmem::Finder::new(b"#running-req:"),
        token_usage: memmem::Finder::new(b"token usage"),
        hash_token: memmem::Finder::new(b"#token:"),
        graph: memmem::Finder::new(b"raph"),
        of_memory: memmem::Finder::new(b"of memory"),
    })
}

/// Where a stats marker starts, its kind, and the byte offset right after the marker. The
/// earliest valid marker wins.
fn find_stats_marker(line: &[u8]) -> Option<(StatsKind, usize, usize)> {
    let f = finders();
    if f.batch.find(line).is_some() {
        let mut best: Option<(StatsKind, usize, usize)> = None;
        for ((marker, kind), finder) in STATS_MARKERS.iter().zip(&f.stats) {
            for pos in finder.find_iter(line) {
                let end = pos + marker.len();
                if marker_end_ok(line.get(end..).unwrap_or(&[])) {
                    if best.is_none_or(|(_, p, _)| pos < p) {
                        best = Some((*kind, pos, end));
                    }
                    break;
                }
            }
        }
        if best.is_some() {
            return best;
        }
    }
    // v0.1 (before "Decode batch" existed): a bare `#running-req: N, #token: ...` line.
    let pos = f.running_req.find(line)?;
    let rest = line.get(pos..).unwrap_or(&[]);
    if f.token_usage.find(rest).is_some() || f.hash_token.find(rest).is_some() {
        Some((StatsKind::Decode, pos, pos))
    } else {
        None
    }
}

/// What the fast path found. Returned once, in place; boxing would allocate per line.
#[allow(clippy::large_enum_variant)]
enum Fast<'a> {
    Stats(StatsRef<'a>),
    Skip,
    No,
}

/// The fast path: `[prefix] Decode batch...` / `[prefix] Prefill batch...` at column 0 with no
/// other `[` after the marker, or a prefixed uvicorn line. `No`: use the general path.
fn fast_prefixed(line: &[u8]) -> Fast<'_> {
    if line.first() != Some(&b'[') {
        return Fast::No;
    }
    let mut prefix = Prefix::default();
    let Some(close) = parse_bracket(line, 1, &mut prefix) else {
        return Fast::No;
    };
    let mut msg_start = close + 1;
    if line.get(msg_start) == Some(&b' ') {
        msg_start += 1;
    }
    let msg = line.get(msg_start..).unwrap_or(&[]);
    let (kind, len) = if msg.starts_with(b"Decode batch") {
        (StatsKind::Decode, 12)
    } else if msg.starts_with(b"Prefill batch") {
        (StatsKind::Prefill, 13)
    } else if msg.starts_with(b"INFO:     ") && memchr(b'[', msg).is_none() {
        return Fast::Skip;
    } else {
        return Fast::No;
    };
    let after = msg.get(len..).unwrap_or(&[]);
    if !marker_end_ok(after) {
        return Fast::No;
    }
    let mut tail = after;
    if let Some(r) = tail.strip_prefix(b" [") {
        tail = memchr(b']', r).and_then(|p| r.get(p + 1..)).unwrap_or(&[]);
    }
    if memchr(b'[', tail).is_some() {
        return Fast::No;
    }
    Fast::Stats(build_stats(line, kind, prefix, msg_start + len))
}

/// Whether a line that is neither ready, server_args nor stats may still be of interest:
/// every other marker has `=`, `K` (`KV`) or `:`, or says `graph` or `of memory`.
fn maybe_other(line: &[u8]) -> bool {
    let f = finders();
    memchr3(b'=', b'K', b':', line).is_some()
        || f.graph.find(line).is_some()
        || f.of_memory.find(line).is_some()
}

/// Classify one line (without its newline) and hand the result to `f`. A stats line is lent
/// by reference, so nothing is copied around. Never panics.
pub fn scan_with<R>(line: &[u8], f: impl FnOnce(Scanned<'_>) -> R) -> R {
    match fast_prefixed(line) {
        Fast::Stats(s) => return f(Scanned::Stats(&s)),
        Fast::Skip => return f(Scanned::Skip),
        Fast::No => {}
    }
    if line.starts_with(b"  File \"") && memchr(b'[', line).is_none() {
        return f(Scanned::Nothing);
    }
    let fs = finders();
    if fs.ready.find(line).is_some() {
        return f(Scanned::Event(LogEvent::Ready));
    }
    if let Some(p) = fs.server_args.find(line) {
        let rest = String::from_utf8_lossy(line.get(p + b"server_args=".len()..).unwrap_or(&[]));
        let args = parse_server_args(&rest);
        if !args.is_empty() {
            return f(Scanned::Event(LogEvent::ServerArgs(args)));
        }
    }
    if let Some((kind, pos, region)) = find_stats_marker(line) {
        let prefix = parse_prefix_bytes(line.get(..pos).unwrap_or(&[]));
        return f(Scanned::Stats(&build_stats(line, kind, prefix, region)));
    }
    if !maybe_other(line) {
        return f(Scanned::Nothing);
    }
    match parse_other(&String::from_utf8_lossy(line)) {
        Some(e) => f(Scanned::Event(e)),
        None => f(Scanned::Nothing),
    }
}

/// The owned reading of a line: a stats line as [`StatsLine`], another event, or None.
pub fn scan_owned(line: &[u8]) -> Option<LogEvent> {
    scan_with(line, |s| match s {
        Scanned::Stats(s) => Some(LogEvent::Stats(s.to_owned_line())),
        Scanned::Event(e) => Some(e),
        Scanned::Skip | Scanned::Nothing => None,
    })
}

/// Parse one log line. Returns None for lines of no interest (and never panics).
///
/// The work is done by [`scan_with`] on bytes; this owned form is for callers that
/// keep events. The streaming summary uses the borrowed form directly.
pub fn parse_line(line: &str) -> Option<LogEvent> {
    scan_owned(line.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::sglang_log::line::{Capacity, rank_of};

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
    fn fast_and_general_paths_agree() {
        let lines = [
            "[2026-11-30 15:53:30] Decode batch, #running-req: 6, #token: 492, token usage: 0.24, cpu graph: False, gen throughput (token/s): 317.90, #queue-req: 26",
            "[2026-09-24 01:47:50.615 DP3 TP3 EP3] Decode batch [7], #running-req: 12, #token: 5000, token usage: 0.20, cuda graph: True, gen throughput (token/s): 1500.25, #queue-req: 0, ",
            "[2025-03-10 08:00:01 TP0] Prefill batch. #new-seq: 2, #new-token: 64, #cached-token: 0, token usage: 0.01, #running-req: 0, #queue-req: 7,",
        ];
        for l in lines {
            let fast = scan_owned(l.as_bytes());
            // Force the general path by gluing junk in front.
            let glued = format!("junk {l}");
            let slow = scan_owned(glued.as_bytes());
            assert!(matches!(fast, Some(LogEvent::Stats(_))), "{l}");
            assert_eq!(fast, slow, "{l}");
        }
    }

    #[test]
    fn access_lines_and_frames_are_skipped() {
        let kind = |l: &[u8]| {
            scan_with(l, |s| match s {
                Scanned::Stats(_) => "stats",
                Scanned::Event(_) => "event",
                Scanned::Skip => "skip",
                Scanned::Nothing => "nothing",
            })
        };
        assert_eq!(
            kind(b"[2026-11-30 15:53:28] INFO:     127.0.0.1:34590 - \"GET /v1/models HTTP/1.1\" 200 OK"),
            "skip"
        );
        assert_eq!(
            kind(b"  File \"/x/scheduler.py\", line 6362, in run_scheduler_process"),
            "nothing"
        );
        // Two lines glued: the ready line after a Decode line wins, as it is searched first.
        assert_eq!(
            scan_owned(b"[2026-11-30 15:53:28] Decode batch, #running-req: 1[2026-11-30 15:53:28] The server is fired up and ready to roll!"),
            Some(LogEvent::Ready)
        );
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
            Some(LogEvent::HiCacheAlloc {
                gb: 48.0,
                tokens: None
            })
        );
        assert_eq!(
            parse_line(
                "[2026-11-30 15:45:04] Allocating kv hierarchical KV host pool: 488282 tokens, 1.00 GB host memory."
            ),
            Some(LogEvent::HiCacheAlloc {
                gb: 1.0,
                tokens: Some(488282)
            })
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
}
