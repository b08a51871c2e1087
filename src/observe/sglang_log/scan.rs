//! Byte-level scanning of one log line: the fast path behind [`super::parse_line`] and the
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

use memchr::{memchr, memchr_iter, memchr3, memmem};

use super::line::{LogEvent, StatsKind, StatsLine, Timestamp, parse_other, parse_server_args};

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

// ---------------------------------------------------------------------------------------------
// Rank tags without allocation

/// Most rank tags kept: the 2026 prefix has at most six (`DP PP ATTN_CP MOE_DP TP EP`); old
/// logs have one `gpu_id`/`gpu` tag. Further tags are dropped.
pub const MAX_RANKS: usize = 6;
/// Longest rank tag name kept (`ATTN_CP`); longer ones are dropped.
const TAG_NAME: usize = 7;

#[derive(Debug, Clone, Copy, Default)]
struct Tag {
    name: [u8; TAG_NAME],
    len: u8,
    n: u32,
}

/// Rank tags of a prefix (`DP3`, `TP0`, `ATTN_CP1`, `gpu_id=0`), inline in 12 bytes a tag, so
/// a stats line is cheap to move around.
#[derive(Debug, Clone, Copy, Default)]
pub struct RankTags {
    len: u8,
    tags: [Tag; MAX_RANKS],
}

impl RankTags {
    fn push(&mut self, name: &[u8], n: u32) {
        let (Some(slot), Ok(len)) = (
            self.tags.get_mut(usize::from(self.len)),
            u8::try_from(name.len()),
        ) else {
            return;
        };
        let Some(dst) = slot.name.get_mut(..name.len()) else {
            return;
        };
        dst.copy_from_slice(name);
        slot.len = len;
        slot.n = n;
        self.len += 1;
    }

    /// (name, number) pairs in prefix order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], u32)> {
        self.tags
            .get(..usize::from(self.len))
            .unwrap_or(&[])
            .iter()
            .map(|t| (t.name.get(..usize::from(t.len)).unwrap_or(&[]), t.n))
    }

    /// Value of the tag `name` (exact, e.g. `b"DP"`).
    pub fn get(&self, name: &[u8]) -> Option<u32> {
        self.iter().find(|(n, _)| *n == name).map(|(_, r)| r)
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn to_owned_vec(&self) -> Vec<(String, u32)> {
        self.iter()
            .map(|(n, r)| (String::from_utf8_lossy(n).into_owned(), r))
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// Timestamps and prefixes

/// Exactly `n` ASCII digits at `b[j..]`.
fn digits(b: &[u8], j: usize, n: usize) -> Option<u32> {
    let mut v: u32 = 0;
    for k in 0..n {
        let c = *b.get(j + k)?;
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + u32::from(c - b'0');
    }
    Some(v)
}

/// `[YYYY-MM-DD ]HH:MM:SS[.fff]` at `b[j..]` (date required when `need_date`). Returns the
/// timestamp, the offset after it, and whether it had a fraction of a second.
pub(crate) fn parse_datetime(
    b: &[u8],
    j: usize,
    need_date: bool,
) -> Option<(Timestamp, usize, bool)> {
    let mut j = j;
    let mut date = None;
    if let (Some(y), Some(b'-'), Some(mo), Some(b'-'), Some(d), Some(b' ')) = (
        digits(b, j, 4),
        b.get(j + 4),
        digits(b, j + 5, 2),
        b.get(j + 7),
        digits(b, j + 8, 2),
        b.get(j + 10),
    ) {
        if !(1..=12).contains(&mo) || !(1..=31).contains(&d) {
            return None;
        }
        date = Some((i32::try_from(y).ok()?, mo, d));
        j += 11;
    } else if need_date {
        return None;
    }
    let (h, m, s) = match (
        digits(b, j, 2),
        b.get(j + 2),
        digits(b, j + 3, 2),
        b.get(j + 5),
        digits(b, j + 6, 2),
    ) {
        (Some(h), Some(b':'), Some(m), Some(b':'), Some(s)) => (h, m, s),
        _ => return None,
    };
    if h > 23 || m > 59 || s > 60 {
        return None;
    }
    j += 8;
    let mut secs = f64::from(h * 3600 + m * 60 + s);
    let mut frac_seen = false;
    if let Some(b'.' | b',') = b.get(j) {
        let mut frac = 0.0;
        let mut scale = 0.1;
        let mut k = j + 1;
        while let Some(c) = b.get(k).filter(|c| c.is_ascii_digit()) {
            if k - j <= 6 {
                frac += f64::from(c - b'0') * scale;
                scale /= 10.0;
            }
            k += 1;
        }
        if k > j + 1 {
            secs += frac;
            j = k;
            frac_seen = true;
        }
    }
    // Reject a longer digit run such as `12:34:567`.
    if b.get(j).is_some_and(|c| c.is_ascii_digit()) {
        return None;
    }
    Some((
        Timestamp {
            date,
            secs_of_day: secs,
        },
        j,
        frac_seen,
    ))
}

/// `[A-Z_]+[0-9]+` → (letters, number).
fn parse_rank_token(tok: &[u8]) -> Option<(&[u8], u32)> {
    let split = tok.iter().position(|c| c.is_ascii_digit())?;
    let (name, num) = tok.split_at(split);
    if name.is_empty() || !name.iter().all(|c| c.is_ascii_uppercase() || *c == b'_') {
        return None;
    }
    Some((name, parse_u32_exact(num)?))
}

fn parse_u32_exact(num: &[u8]) -> Option<u32> {
    if num.is_empty() {
        return None;
    }
    let mut v: u32 = 0;
    for &c in num {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u32::from(c - b'0'))?;
    }
    Some(v)
}

/// A bracketed prefix's content.
#[derive(Debug, Clone, Copy, Default)]
pub struct Prefix {
    pub ts: Option<Timestamp>,
    pub ranks: RankTags,
    /// The timestamp had milliseconds (`SGLANG_LOG_MS=1`, since 2025-12).
    pub ms: bool,
}

/// Inside `[`: a timestamp then space-separated tokens up to `]`. Tokens like `DP3`, `TP0`,
/// `ATTN_CP1`, `MOE_DP2` become ranks; other tokens are ignored. Fills `out` (left as it was
/// when there is no valid bracket) and returns the index of the closing `]`.
fn parse_bracket(b: &[u8], j: usize, out: &mut Prefix) -> Option<usize> {
    let (ts, mut j, ms) = parse_datetime(b, j, false)?;
    // The time must end the first token (rejects tqdm's `[10:02:03<00:00, 1.2it/s]`).
    if !matches!(b.get(j), Some(b' ' | b']')) {
        return None;
    }
    let mut ranks = RankTags::default();
    let limit = j + 200;
    loop {
        match *b.get(j)? {
            b']' => {
                out.ts = Some(ts);
                out.ranks = ranks;
                out.ms = ms;
                return Some(j);
            }
            b' ' => j += 1,
            _ => {
                let start = j;
                while let Some(&c) = b.get(j) {
                    if c == b' ' || c == b']' || c == b'[' {
                        break;
                    }
                    j += 1;
                }
                if b.get(j) == Some(&b'[') {
                    return None;
                }
                if let Some((name, n)) = b.get(start..j).and_then(parse_rank_token) {
                    ranks.push(name, n);
                }
            }
        }
        if j > limit {
            return None;
        }
    }
}

/// Find the timestamp and rank tags in `text` (normally the part of a line before its
/// marker). The last bracketed timestamp wins (the one closest to the message); a bare
/// `YYYY-MM-DD HH:MM:SS` is used only when there is no bracketed one. `[gpu_id=N]`/`[gpu=N]`
/// tags are appended to the ranks.
pub fn parse_prefix_bytes(text: &[u8]) -> Prefix {
    let mut prefix = Prefix::default();
    for i in memchr_iter(b'[', text) {
        let mut p = Prefix::default();
        if parse_bracket(text, i + 1, &mut p).is_some() {
            prefix = p;
        }
    }
    if prefix.ts.is_none() {
        for i in 0..text.len() {
            if text.get(i).is_some_and(u8::is_ascii_digit) {
                if let Some((t, _, ms)) = parse_datetime(text, i, true) {
                    prefix.ts = Some(t);
                    prefix.ms = ms;
                }
            }
        }
    }
    for (tag, name) in [
        (&b"[gpu_id="[..], &b"gpu_id"[..]),
        (&b"[gpu="[..], &b"gpu"[..]),
    ] {
        let n = memmem::rfind(text, tag).and_then(|p| {
            let rest = text.get(p + tag.len()..)?;
            let close = memchr(b']', rest)?;
            parse_u32_exact(rest.get(..close)?.trim_ascii())
        });
        if let Some(n) = n {
            prefix.ranks.push(name, n);
        }
    }
    prefix
}

// ---------------------------------------------------------------------------------------------
// Numbers and booleans

/// The numeric text a value starts with; `full=X, swa=Y` gives X.
fn num_text(v: &[u8]) -> &[u8] {
    let v = v.trim_ascii();
    let v = v.strip_prefix(b"full=").unwrap_or(v);
    let end = v
        .iter()
        .position(|c| !(c.is_ascii_digit() || matches!(c, b'.' | b'-' | b'+' | b'e' | b'E')))
        .unwrap_or(v.len());
    v.get(..end).unwrap_or(&[])
}

/// Exact powers of ten (all representable in f64).
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// `123` / `123.45`: an integer mantissa below 2^53 divided by an exact power of ten, which
/// is correctly rounded, i.e. the same as `str::parse`. None for anything else.
fn fast_decimal(t: &[u8]) -> Option<f64> {
    let mut mant: u64 = 0;
    let mut int_digits = 0usize;
    let mut frac_digits = 0usize;
    let mut in_frac = false;
    for &c in t {
        match c {
            b'0'..=b'9' => {
                mant = mant.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
                if in_frac {
                    frac_digits += 1;
                } else {
                    int_digits += 1;
                }
            }
            b'.' if !in_frac => in_frac = true,
            _ => return None,
        }
    }
    if int_digits == 0 || mant >= (1u64 << 53) {
        return None;
    }
    let p = *POW10.get(frac_digits)?;
    Some(mant as f64 / p)
}

/// Where a value's number starts: leading whitespace and a `full=` (SWA pools) skipped.
fn num_start(v: &[u8]) -> &[u8] {
    let v = v.trim_ascii_start();
    v.strip_prefix(b"full=").unwrap_or(v)
}

/// Leading number of a value (`0.84`, `12.50%`, `0.02 GB`, `0.0980 -> 0.7047` gives 0.098).
/// The usual `123.45` is read in one pass; anything else goes through `str::parse`.
pub fn parse_f64_bytes(v: &[u8]) -> Option<f64> {
    let t = num_start(v);
    let mut mant: u64 = 0;
    let mut int_digits = 0usize;
    let mut frac_digits = 0usize;
    let mut in_frac = false;
    let mut simple = true;
    for &c in t {
        match c {
            b'0'..=b'9' => {
                match mant
                    .checked_mul(10)
                    .and_then(|m| m.checked_add(u64::from(c - b'0')))
                {
                    Some(m) => mant = m,
                    None => simple = false,
                }
                if in_frac {
                    frac_digits += 1;
                } else {
                    int_digits += 1;
                }
            }
            b'.' if !in_frac => in_frac = true,
            b'.' | b'+' | b'-' | b'e' | b'E' => {
                simple = false;
                break;
            }
            _ => break,
        }
    }
    if simple && int_digits > 0 && mant < (1u64 << 53) {
        if let Some(p) = POW10.get(frac_digits) {
            return Some(mant as f64 / p);
        }
    }
    let t = num_text(v);
    fast_decimal(t)
        .or_else(|| std::str::from_utf8(t).ok()?.parse::<f64>().ok())
        .filter(|x| x.is_finite())
}

/// Leading unsigned integer of a value (`3`, `+3`, `full=165376, swa=768` gives 165376;
/// `-3`, `x` and overflow give None).
pub fn parse_u64_bytes(v: &[u8]) -> Option<u64> {
    let t = num_start(v);
    let t = t.strip_prefix(b"+").unwrap_or(t);
    let mut n: u64 = 0;
    let mut any = false;
    for &c in t {
        if !c.is_ascii_digit() {
            break;
        }
        n = n.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
        any = true;
    }
    any.then_some(n)
}

/// Leading signed integer (`-1`).
pub fn parse_i64_bytes(v: &[u8]) -> Option<i64> {
    let t = num_text(v);
    let (neg, t) = match t.strip_prefix(b"-") {
        Some(r) => (true, r),
        None => (false, t.strip_prefix(b"+").unwrap_or(t)),
    };
    let n = i64::try_from(parse_u64_bytes(t)?).ok()?;
    Some(if neg { -n } else { n })
}

/// `True`/`False` (any case).
pub fn parse_bool_bytes(v: &[u8]) -> Option<bool> {
    let v = v.trim_ascii();
    let starts = |w: &[u8]| v.get(..w.len()).is_some_and(|p| p.eq_ignore_ascii_case(w));
    if starts(b"true") {
        Some(true)
    } else if starts(b"false") {
        Some(false)
    } else {
        None
    }
}

// ---------------------------------------------------------------------------------------------
// key: value pieces

#[derive(Clone, Copy, PartialEq)]
enum Sep {
    Comma,
    DotSpace,
    End,
}

fn is_key_trim(c: u8) -> bool {
    c.is_ascii_whitespace() || matches!(c, b'.' | b',' | b';')
}

/// `s[a..b]` without leading and trailing whitespace.
fn trim_range(s: &[u8], mut a: usize, mut b: usize) -> (usize, usize) {
    while a < b && s.get(a).is_some_and(u8::is_ascii_whitespace) {
        a += 1;
    }
    while b > a && s.get(b - 1).is_some_and(u8::is_ascii_whitespace) {
        b -= 1;
    }
    (a, b)
}

/// A key without surrounding whitespace and `.,;`.
fn clean_key_range(s: &[u8], mut a: usize, mut b: usize) -> (usize, usize) {
    while a < b && s.get(a).is_some_and(|c| is_key_trim(*c)) {
        a += 1;
    }
    while b > a && s.get(b - 1).is_some_and(|c| is_key_trim(*c)) {
        b -= 1;
    }
    (a, b)
}

/// A value without surrounding whitespace and without trailing `.,;`.
fn clean_val_range(s: &[u8], a: usize, b: usize) -> (usize, usize) {
    let (a, mut b) = trim_range(s, a, b);
    while b > a && s.get(b - 1).is_some_and(|c| is_key_trim(*c)) {
        b -= 1;
    }
    (a, b)
}

/// The bytes [`visit_fields`] stops at: `,`, `.` and `:`.
static SEPARATOR: [bool; 256] = {
    let mut t = [false; 256];
    t[b',' as usize] = true;
    t[b'.' as usize] = true;
    t[b':' as usize] = true;
    t
};

/// The field being assembled by [`visit_fields`]: (key start, key end, value start, value end)
/// of the field not yet handed out, and a pending key prefix (start, end).
struct FieldState {
    cur: Option<(usize, usize, usize, usize)>,
    pending: Option<(usize, usize)>,
}

impl FieldState {
    /// One piece `s[start..end]`, followed by `sep`; `colon` is its first `:`.
    fn piece<'a>(
        &mut self,
        s: &'a [u8],
        (start, end): (usize, usize),
        sep: Sep,
        colon: Option<usize>,
        f: &mut impl FnMut(&'a [u8], &'a [u8]),
    ) {
        let (ps, pe) = trim_range(s, start, end);
        if ps >= pe {
            return;
        }
        if let Some(colon) = colon {
            let (ks, ke) = clean_key_range(s, ps, colon);
            let key = match self.pending.take() {
                Some((p, pend)) => Some((p, if ke > ks { ke } else { pend })),
                None if ke > ks => Some((ks, ke)),
                None => None,
            };
            if let Some((ks, ke)) = key {
                let (vs, ve) = clean_val_range(s, colon + 1, pe);
                self.flush(s, f);
                self.cur = Some((ks, ke, vs, ve));
            }
        } else if sep == Sep::DotSpace {
            self.pending = Some(match self.pending {
                Some((p, _)) => (p, pe),
                None => (ps, pe),
            });
        } else if self.pending.is_none() {
            if let Some(c) = self.cur.as_mut() {
                let (xs, xe) = clean_val_range(s, ps, pe);
                if xs < xe {
                    c.3 = xe;
                }
            }
        }
    }

    fn flush<'a>(&mut self, s: &'a [u8], f: &mut impl FnMut(&'a [u8], &'a [u8])) {
        if let Some(c) = self.cur.take() {
            if let (Some(k), Some(v)) = (s.get(c.0..c.1), s.get(c.2..c.3)) {
                f(k, v);
            }
        }
    }
}

/// Call `f(key, value)` for every `key: value` pair of a message tail, in order.
///
/// Pieces are split on `,` and on `. ` (v0.1 used `. ` between fields). A piece without `:`
/// that is followed by `. ` is the start of the next key (`est. decode TFLOPS/s (per GPU): X`);
/// one followed by `,` or the end continues the previous value (`#token: full=1, swa=2`).
/// Keys and values are slices of `s`, trimmed. One plain pass over the bytes: the pieces are
/// short, so this beats both a `memchr` call per piece and `memchr3_iter` (measured).
pub fn visit_fields<'a>(s: &'a [u8], f: &mut impl FnMut(&'a [u8], &'a [u8])) {
    let mut st = FieldState {
        cur: None,
        pending: None,
    };
    let mut start = 0;
    let mut colon = None;
    for (i, &c) in s.iter().enumerate() {
        if !SEPARATOR[usize::from(c)] {
            continue;
        }
        match c {
            b':' if colon.is_none() => colon = Some(i),
            b',' => {
                st.piece(s, (start, i), Sep::Comma, colon, f);
                start = i + 1;
                colon = None;
            }
            b'.' if s.get(i + 1) == Some(&b' ') => {
                st.piece(s, (start, i), Sep::DotSpace, colon, f);
                start = i + 2;
                colon = None;
            }
            _ => {}
        }
    }
    st.piece(s, (start.min(s.len()), s.len()), Sep::End, colon, f);
    st.flush(s, f);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(s: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        visit_fields(s.as_bytes(), &mut |k, v| {
            out.push((
                String::from_utf8_lossy(k).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            ))
        });
        out
    }

    #[test]
    fn fast_decimal_matches_std() {
        for t in [
            "0",
            "0.84",
            "566.12",
            "12.50",
            "1707904",
            "0.0980",
            "9007199254740991",
            "1.",
            "00.5",
            "123456789012.345678",
        ] {
            assert_eq!(
                fast_decimal(t.as_bytes()).or_else(|| t.parse().ok()),
                t.parse::<f64>().ok(),
                "{t}"
            );
        }
        assert_eq!(fast_decimal(b".5"), None);
        assert_eq!(fast_decimal(b"1e5"), None);
        assert_eq!(parse_f64_bytes(b"1e5"), Some(1e5));
        assert_eq!(parse_f64_bytes(b"99999999999999999999.5"), Some(1e20));
        assert_eq!(parse_u64_bytes(b"99999999999999999999999"), None);
        assert_eq!(parse_i64_bytes(b"-17"), Some(-17));
        assert_eq!(parse_bool_bytes(b" TRUE,"), Some(true));
        assert_eq!(parse_bool_bytes(b"fals"), None);
    }

    #[test]
    fn one_pass_numbers_match_str_parse() {
        // The one-pass readers against the plain definition: the numeric prefix, then
        // `str::parse` (finite only) / its leading digits.
        let reference_f = |v: &[u8]| {
            std::str::from_utf8(num_text(v))
                .ok()?
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
        };
        let reference_u = |v: &[u8]| {
            let t = num_text(v);
            let t = t.strip_prefix(b"+").unwrap_or(t);
            let end = t
                .iter()
                .position(|c| !c.is_ascii_digit())
                .unwrap_or(t.len());
            std::str::from_utf8(t.get(..end)?).ok()?.parse::<u64>().ok()
        };
        let alphabet = b"0123456789..+-eE %xfull= ,";
        let mut x: u64 = 0x1234_5678_9abc_def1;
        for _ in 0..20000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 12) as usize;
            let v: Vec<u8> = (0..len)
                .map(|k| alphabet[((x >> (k * 5)) % alphabet.len() as u64) as usize])
                .collect();
            assert_eq!(
                parse_f64_bytes(&v),
                reference_f(&v),
                "{:?}",
                String::from_utf8_lossy(&v)
            );
            assert_eq!(
                parse_u64_bytes(&v),
                reference_u(&v),
                "{:?}",
                String::from_utf8_lossy(&v)
            );
        }
    }

    #[test]
    fn fields_split_like_the_reference() {
        assert_eq!(
            fields(", #token: full=1000, swa=200, token usage: full=0.10, swa=0.02, x: 1"),
            vec![
                ("#token".into(), "full=1000, swa=200".into()),
                ("token usage".into(), "full=0.10, swa=0.02".into()),
                ("x".into(), "1".into()),
            ]
        );
        assert_eq!(
            fields(", #queue-req: 0, est. decode TFLOPS/s (per GPU): 12.34, "),
            vec![
                ("#queue-req".into(), "0".into()),
                ("est. decode TFLOPS/s (per GPU)".into(), "12.34".into()),
            ]
        );
        assert_eq!(
            fields(". #seq: 1. #cached_token: 0. tree_cache_hit_rate: 12.50%. t: 0.01s."),
            vec![
                ("#seq".into(), "1".into()),
                ("#cached_token".into(), "0".into()),
                ("tree_cache_hit_rate".into(), "12.50%".into()),
                ("t".into(), "0.01s".into()),
            ]
        );
        assert!(fields("").is_empty());
        assert!(fields(": : ,,. . :").iter().all(|(k, _)| !k.is_empty()));
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
}
