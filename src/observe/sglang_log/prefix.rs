//! The `[timestamp ranks]` prefix of a log line: [`Timestamp`], the rank tags kept inline
//! ([`RankTags`]), and the byte-level parser that finds them anywhere in a line. A leaf of
//! `sglang_log`: it uses no other module of it. No function here panics on any input.

use memchr::{memchr, memchr_iter, memmem};
use serde::{Deserialize, Serialize};

/// Time from the `[...]` prefix. `secs_of_day` includes milliseconds when printed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Timestamp {
    /// (year, month, day) when the prefix has a date (since 2024-10).
    pub date: Option<(i32, u32, u32)>,
    pub secs_of_day: f64,
}

impl crate::observe::window::LineTime for Timestamp {
    fn seconds_since(&self, earlier: &Self) -> f64 {
        Timestamp::seconds_since(self, earlier)
    }
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
pub(super) fn parse_bracket(b: &[u8], j: usize, out: &mut Prefix) -> Option<usize> {
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

/// Find the timestamp and rank tags in `text` (normally the part of a line before its
/// marker). The last bracketed timestamp wins (the one closest to the message); a bare
/// `YYYY-MM-DD HH:MM:SS` is used only when there is no bracketed one. `[gpu_id=N]`/`[gpu=N]`
/// tags are appended to the ranks.
#[cfg(test)]
pub fn parse_prefix(text: &str) -> (Option<Timestamp>, Vec<(String, u32)>) {
    let p = parse_prefix_bytes(text.as_bytes());
    (p.ts, p.ranks.to_owned_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
