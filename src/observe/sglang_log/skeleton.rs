//! The skeleton both engines' log summarizers share (SGLang's `summary`, `observe::vllm_log`),
//! free of any log format: the measured window ([`Scope`], [`LogWindow`], [`WindowSpan`]), the
//! tail of non-stats lines ([`Tail`]), and [`Skeleton`], the driver each summarizer feeds its
//! parsed lines to: it numbers the lines, keeps the last time seen, starts the window afresh at
//! the ready line (so warm-up stats never count), and decides which stats lines count (per
//! scheduler: not its first in the window, not one after an idle gap). What a line means, and
//! what a kept line adds to the summary, is the engine's ([`Rules`]).

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};

use super::prefix::Timestamp;
use crate::observe::window::{Intervals, WindowStats};

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

/// What counts as the measured window: a line range and/or a time range. Stats lines before
/// the ready line are excluded in any case.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Scope {
    pub lines: Option<LogWindow>,
    /// Lines at or after this time.
    pub since: Option<Timestamp>,
    /// Lines before this time (exclusive).
    pub until: Option<Timestamp>,
}

impl Scope {
    /// Whether line `idx` with time `ts` (its own, or the last one seen before it) is inside.
    /// A line without any time is outside a time range.
    pub fn contains(&self, idx: usize, ts: Option<Timestamp>) -> bool {
        if self.lines.is_some_and(|w| !w.contains(idx)) {
            return false;
        }
        if self.since.is_none() && self.until.is_none() {
            return true;
        }
        let Some(t) = ts else {
            return false;
        };
        self.since.is_none_or(|s| cmp_ts(&t, &s) != Ordering::Less)
            && self.until.is_none_or(|u| cmp_ts(&t, &u) == Ordering::Less)
    }

    /// Whether anything narrows the window.
    pub fn is_restricted(&self) -> bool {
        self.lines.is_some() || self.since.is_some() || self.until.is_some()
    }
}

/// Order of two timestamps: by date and time when both have a date, else by time of day.
pub fn cmp_ts(a: &Timestamp, b: &Timestamp) -> Ordering {
    let by_time = a.secs_of_day.total_cmp(&b.secs_of_day);
    match (a.date, b.date) {
        (Some(x), Some(y)) => x.cmp(&y).then(by_time),
        _ => by_time,
    }
}

/// The stats lines the summary rests on: first and last line (0-based) and their times.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowSpan {
    pub first_line: Option<usize>,
    pub last_line: Option<usize>,
    pub start: Option<Timestamp>,
    pub end: Option<Timestamp>,
    /// end − start, when both have times.
    pub seconds: Option<f64>,
}

/// The last non-stats, non-access lines (oldest first), for start-up failures.
#[derive(Debug, Clone, Default)]
pub struct Tail {
    lines: Vec<Vec<u8>>,
    next: usize,
}

/// Lines the tail keeps, and the bytes kept of each.
pub const TAIL_LINES: usize = 64;
const TAIL_LINE_BYTES: usize = 2048;

impl Tail {
    pub fn push(&mut self, line: &[u8]) {
        let line = line.get(..TAIL_LINE_BYTES).unwrap_or(line);
        if self.lines.len() < TAIL_LINES {
            self.lines.push(line.to_vec());
        } else if let Some(slot) = self.lines.get_mut(self.next) {
            slot.clear();
            slot.extend_from_slice(line);
        }
        self.next = (self.next + 1) % TAIL_LINES;
    }

    pub fn to_strings(&self) -> Vec<String> {
        let (a, b) = if self.lines.len() < TAIL_LINES {
            (&self.lines[..], &[][..])
        } else {
            let (head, tail) = self.lines.split_at(self.next.min(self.lines.len()));
            (tail, head)
        };
        a.iter()
            .chain(b)
            .map(|l| String::from_utf8_lossy(l).into_owned())
            .collect()
    }
}

/// What differs between the engines in the skeleton: how a scheduler is named, what the engine
/// keeps of the window beside the shared counts, its idle gap, and where the window's time span
/// starts.
pub trait Rules: Clone + std::fmt::Debug {
    /// The scheduler a stats line comes from (SGLang's DP rank or GPU tag, vLLM's engine).
    type Key: Copy + PartialEq + std::fmt::Debug;
    /// What the engine measures over the window, started afresh at the ready line.
    type Acc: Default + Clone + std::fmt::Debug;
    /// A stats line more than this many seconds after its scheduler's previous one is left
    /// out: its interval straddles the idle time.
    const IDLE_GAP_SECS: f64;
    /// Whether the span's start time may come from a later line when the window's first stats
    /// line has none (SGLang's log mixes lines with and without a time; vLLM's start is its
    /// first line's).
    const LATE_START: bool;
}

/// The window's shared counts and figures, started afresh at the ready line with the engine's
/// own (`acc`).
#[derive(Debug, Clone)]
pub struct Window<R: Rules> {
    /// Stats lines in scope (before the ready line: the warm-up's).
    pub all_stats: usize,
    seen: Vec<Option<R::Key>>,
    /// Stats lines kept.
    pub stats_lines: usize,
    /// Stats lines left out: each scheduler's first, and those after an idle gap.
    pub excluded: usize,
    /// Of those, the ones left out for an idle gap (or as idle).
    pub idle_excluded: usize,
    pub span: WindowSpan,
    /// Kept lines into logging intervals (the schedulers' lines of one interval summed).
    pub intervals: Intervals<R::Key, Timestamp>,
    /// Per interval: throughput, running, queue; per kept line: KV usage.
    pub stats: WindowStats,
    pub acc: R::Acc,
}

impl<R: Rules> Default for Window<R> {
    fn default() -> Self {
        Window {
            all_stats: 0,
            seen: Vec::new(),
            stats_lines: 0,
            excluded: 0,
            idle_excluded: 0,
            span: WindowSpan::default(),
            intervals: Intervals::default(),
            stats: WindowStats::default(),
            acc: R::Acc::default(),
        }
    }
}

impl<R: Rules> Window<R> {
    /// Line `idx` (at `ts`) is part of what the window rests on.
    pub fn note_span(&mut self, idx: usize, ts: Option<Timestamp>) {
        let w = &mut self.span;
        if w.first_line.is_none() {
            w.first_line = Some(idx);
            w.start = ts;
        }
        if R::LATE_START && w.start.is_none() {
            w.start = ts;
        }
        w.last_line = Some(idx);
        if ts.is_some() {
            w.end = ts;
        }
    }
}

/// The driver of one log's summary: feed it each line's place and what the engine's parser
/// found in it, ask for the window at any time.
#[derive(Debug, Clone)]
pub struct Skeleton<R: Rules> {
    scope: Scope,
    next_line: usize,
    /// The ready line (0-based), once seen.
    pub ready_line: Option<usize>,
    /// Stats lines in scope before the ready line.
    pub warmup_stats: usize,
    /// The last time a line carried: the time of a line without one.
    pub last_ts: Option<Timestamp>,
    prev: Vec<(Option<R::Key>, Timestamp)>,
    pub window: Window<R>,
    pub tail: Tail,
}

impl<R: Rules> Default for Skeleton<R> {
    fn default() -> Self {
        Skeleton::new(Scope::default())
    }
}

impl<R: Rules> Skeleton<R> {
    pub fn new(scope: Scope) -> Skeleton<R> {
        Skeleton {
            scope,
            next_line: 0,
            ready_line: None,
            warmup_stats: 0,
            last_ts: None,
            prev: Vec::new(),
            window: Window::default(),
            tail: Tail::default(),
        }
    }

    /// Lines fed so far.
    pub fn lines(&self) -> usize {
        self.next_line
    }

    /// The next line's index, and the line without a trailing `\r`.
    pub fn next_line<'l>(&mut self, line: &'l [u8]) -> (usize, &'l [u8]) {
        let idx = self.next_line;
        self.next_line += 1;
        (idx, line.strip_suffix(b"\r").unwrap_or(line))
    }

    /// Whether line `idx` with time `ts` (or, without one, the last time seen) is in scope.
    pub fn in_scope(&self, idx: usize, ts: Option<Timestamp>) -> bool {
        self.scope.contains(idx, ts.or(self.last_ts))
    }

    /// The ready line: the first one starts the window afresh.
    pub fn ready(&mut self, idx: usize) {
        if self.ready_line.is_none() {
            self.ready_line = Some(idx);
            self.warmup_stats = self.window.all_stats;
            self.window = Window::default();
        }
    }

    /// A stats line of scheduler `key` at `ts`, `in_scope` or not: its time is noted for the
    /// scheduler's next line; in scope, the span grows to it, and it counts (true) unless it is
    /// the scheduler's first in the window, comes more than [`Rules::IDLE_GAP_SECS`] after the
    /// scheduler's previous line, or is `idle` (the engine says it measures nothing).
    pub fn admit(
        &mut self,
        idx: usize,
        ts: Option<Timestamp>,
        key: Option<R::Key>,
        in_scope: bool,
        idle: bool,
    ) -> bool {
        let prev = self.prev.iter_mut().find(|(k, _)| *k == key);
        let gap = match (ts, &prev) {
            (Some(t), Some((_, p))) => Some(t.seconds_since(p)),
            _ => None,
        };
        if let Some(t) = ts {
            match prev {
                Some(p) => p.1 = t,
                None => self.prev.push((key, t)),
            }
        }
        if !in_scope {
            return false;
        }
        let w = &mut self.window;
        w.note_span(idx, ts);
        let first = !w.seen.contains(&key);
        if first {
            w.seen.push(key);
        }
        if first || gap.is_some_and(|g| g > R::IDLE_GAP_SECS) || idle {
            w.excluded += 1;
            if !first {
                w.idle_excluded += 1;
            }
            return false;
        }
        w.stats_lines += 1;
        true
    }

    /// The window so far, its open interval closed and its span's seconds set.
    pub fn closed(&self) -> Window<R> {
        let mut w = self.window.clone();
        w.intervals.close(&mut w.stats);
        if let (Some(s), Some(e)) = (w.span.start, w.span.end) {
            w.span.seconds = Some(e.seconds_since(&s));
        }
        w
    }
}
