//! A launch's server timeline from its log, for either engine: throughput, running and queued
//! requests, KV usage, cache-hit rate, retractions (SGLang) or preemptions (vLLM), when the
//! server was ready, and where each measured window lies on the log's clock. Streaming,
//! constant memory per line. The engine is the one the launch ran (`run` knows it from its
//! rows, as `engine_log::summarize_file` is told it); a log of unknown engine (`sgtune log`)
//! is read with both parsers and the one that found stats lines wins.

use std::io::{self, Read};

use crate::observe::sglang_log::line::{LogEvent, StatsKind};
use crate::observe::sglang_log::prefix::parse_prefix_bytes;
use crate::observe::sglang_log::scan::scan_owned;
use crate::observe::sglang_log::{LineReader, Timestamp};
use crate::observe::vllm_log;
use crate::observe::window::DP_GROUP_SECS;
use crate::plan::engine::Engine;

/// Points of one line on a chart, in x order.
pub type Points = Vec<(f64, f64)>;

/// One measured window of a launch's server.log, as 0-based line numbers [start, end).
#[derive(Debug, Clone, PartialEq)]
pub struct WindowLines {
    pub start_line: usize,
    pub end_line: usize,
    /// The load point's label (e.g. `c32`), shown on the chart.
    pub label: String,
    /// The offered concurrency, drawn as a line over the window.
    pub offered: Option<f64>,
}

/// A window placed on the timeline's clock (seconds since the log's first timestamp).
#[derive(Debug, Clone, PartialEq)]
pub struct WindowSpan {
    pub t0: f64,
    pub t1: f64,
    pub label: String,
    pub offered: Option<f64>,
}

/// The server's own timeline from its log, in seconds since the log's first timestamp.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timeline {
    pub gen_tok_s: Points,
    pub running: Points,
    pub queue: Points,
    pub token_usage: Points,
    /// Prefix-cache hit rate: a decode line's own `cache hit rate` field when it has one, else
    /// each prefill line's cached ÷ (cached + new) tokens.
    pub cache_hit: Points,
    pub retractions: Vec<f64>,
    /// When the server said it was ready (stats before it are warm-up).
    pub ready: Option<f64>,
    pub windows: Vec<WindowSpan>,
    /// The first timestamp of the log, the clock's zero.
    pub origin: Option<Timestamp>,
    pub lines: usize,
}

impl Timeline {
    pub fn is_empty(&self) -> bool {
        self.gen_tok_s.is_empty() && self.running.is_empty() && self.queue.is_empty()
    }

    /// Seconds from the origin to `ts`.
    pub fn at(&self, ts: &Timestamp) -> Option<f64> {
        self.origin.map(|o| ts.seconds_since(&o))
    }
}

fn hit_rate_field(fields: &[(String, String)]) -> Option<f64> {
    fields
        .iter()
        .find(|(k, _)| k.to_ascii_lowercase().contains("cache hit rate"))
        .and_then(|(_, v)| v.trim_end_matches('%').trim().parse::<f64>().ok())
        .map(|v| if v > 1.0 { v / 100.0 } else { v })
}

/// The log's clock as lines go by: the first timestamp is zero, a line without one is at the
/// last time seen, and each measured window spans the first to the last time inside its lines.
struct Clock<'w> {
    windows: &'w [WindowLines],
    /// Per window: (first time inside, last time inside).
    spans: Vec<(Option<f64>, Option<f64>)>,
    origin: Option<Timestamp>,
    last: Option<f64>,
    lines: usize,
}

impl<'w> Clock<'w> {
    fn new(windows: &'w [WindowLines]) -> Self {
        Clock {
            windows,
            spans: vec![(None, None); windows.len()],
            origin: None,
            last: None,
            lines: 0,
        }
    }

    /// The next line, with its timestamp if it has one: the time it is at (None before the
    /// first timestamp).
    fn tick(&mut self, ts: Option<Timestamp>) -> Option<f64> {
        let i = self.lines;
        self.lines += 1;
        let own = ts.map(|ts| ts.seconds_since(self.origin.get_or_insert(ts)));
        if let Some(now) = own {
            self.last = Some(now);
            for (w, span) in self.windows.iter().zip(self.spans.iter_mut()) {
                if w.start_line <= i && i < w.end_line {
                    span.0.get_or_insert(now);
                    span.1 = Some(now);
                }
            }
        }
        self.last
    }

    /// The clock's part of the timeline: its origin, its line count, the windows placed.
    fn finish(self, t: &mut Timeline) {
        t.origin = self.origin;
        t.lines = self.lines;
        t.windows = self
            .windows
            .iter()
            .zip(self.spans)
            .filter_map(|(w, (a, b))| {
                Some(WindowSpan {
                    t0: a?,
                    t1: b?,
                    label: w.label.clone(),
                    offered: w.offered,
                })
            })
            .collect();
    }
}

/// Feed every line of `r` to `feed`, streaming.
fn each_line<R: Read>(mut r: R, feed: &mut impl FnMut(&[u8])) -> io::Result<()> {
    let mut lr = LineReader::new();
    lr.read_available(&mut r, feed)?;
    lr.finish(feed);
    Ok(())
}

/// The SGLang half of a timeline: one line at a time.
#[derive(Default)]
struct Sglang {
    t: Timeline,
    prefill_hit: Points,
}

impl Sglang {
    fn feed(&mut self, clock: &mut Clock, line: &[u8]) {
        let ev = scan_owned(line);
        let ts = match &ev {
            Some(LogEvent::Stats(s)) => s.ts,
            _ => parse_prefix_bytes(line).ts,
        };
        let Some(now) = clock.tick(ts) else {
            return;
        };
        let t = &mut self.t;
        match ev {
            Some(LogEvent::Stats(s)) => match s.kind {
                StatsKind::Decode => {
                    if let Some(g) = s.gen_throughput {
                        t.gen_tok_s.push((now, g));
                    }
                    if let Some(v) = s.running_req {
                        t.running.push((now, v as f64));
                    }
                    if let Some(v) = s.queue_req {
                        t.queue.push((now, v as f64));
                    }
                    if let Some(v) = s.token_usage {
                        t.token_usage.push((now, v));
                    }
                    if let Some(h) = hit_rate_field(&s.fields) {
                        t.cache_hit.push((now, h));
                    }
                }
                StatsKind::Prefill => {
                    if let Some(h) = hit_rate_field(&s.fields) {
                        t.cache_hit.push((now, h));
                    }
                    if let (Some(c), Some(n)) = (s.cached_token, s.new_token) {
                        if c + n > 0 {
                            self.prefill_hit.push((now, c as f64 / (c + n) as f64));
                        }
                    }
                    if let Some(v) = s.queue_req {
                        t.queue.push((now, v as f64));
                    }
                }
            },
            Some(LogEvent::Retract(_)) => t.retractions.push(now),
            Some(LogEvent::Ready) => t.ready = t.ready.or(Some(now)),
            _ => {}
        }
    }

    fn finish(self) -> Timeline {
        let mut t = self.t;
        // Prefill and decode lines interleave: keep the queue in time order.
        t.queue.sort_by(|a, b| a.0.total_cmp(&b.0));
        // One source per series: the prefill-derived hit rates only when the decode lines never
        // carried one.
        if t.cache_hit.is_empty() {
            t.cache_hit = self.prefill_hit;
        }
        t
    }
}

/// Add `v` to the series: to its last point when the line joins that point's interval (data
/// parallel: each engine prints its own line for the interval, and the server's value is their
/// sum), else as a new point at `now`.
fn add(series: &mut Points, now: f64, v: f64, joins: bool, fold: fn(f64, f64) -> f64) {
    match series.last_mut() {
        Some(last) if joins => last.1 = fold(last.1, v),
        _ => series.push((now, v)),
    }
}

/// The vLLM half of a timeline: its periodic stats lines (V0 and V1), preemptions as
/// retractions, uvicorn's start-up line as ready.
#[derive(Default)]
struct Vllm {
    t: Timeline,
    /// The engines (`Engine 000:`) in the open interval, and when it opened.
    engines_now: Vec<Option<u32>>,
    last_stats: Option<f64>,
}

impl Vllm {
    fn feed(&mut self, clock: &mut Clock, line: &[u8]) {
        let text = String::from_utf8_lossy(line);
        let parsed = vllm_log::parse_line(&text);
        let ts = match &parsed {
            Some(l) => l.ts,
            None => vllm_log::line::split_prefix(&text).0,
        };
        let Some(now) = clock.tick(ts) else {
            return;
        };
        let t = &mut self.t;
        match parsed.map(|l| l.event) {
            Some(vllm_log::Event::Stats(s)) => {
                // The interval rule of the window's summary (`window::Intervals`): a line
                // joins the open interval when its engine is not in it yet and it was printed
                // within DP_GROUP_SECS of it; a line without an engine key stands alone.
                let joins = s.engine.is_some()
                    && !self.engines_now.is_empty()
                    && !self.engines_now.contains(&s.engine)
                    && self
                        .last_stats
                        .is_some_and(|at| (now - at).abs() < DP_GROUP_SECS);
                if !joins {
                    self.engines_now.clear();
                    self.last_stats = Some(now);
                }
                self.engines_now.push(s.engine);
                let sum = |a: f64, b: f64| a + b;
                if let Some(g) = s.generation_throughput {
                    add(&mut t.gen_tok_s, now, g, joins, sum);
                }
                if let Some(v) = s.running {
                    add(&mut t.running, now, v as f64, joins, sum);
                }
                if let Some(v) = s.waiting {
                    add(&mut t.queue, now, v as f64, joins, sum);
                }
                // Shares are not summed over engines: the fullest pool, the last hit rate.
                if let Some(u) = s.kv_usage {
                    add(&mut t.token_usage, now, u, joins, f64::max);
                }
                if let Some(h) = s.prefix_hit_rate {
                    add(&mut t.cache_hit, now, h, joins, |_, b| b);
                }
                // vLLM preempts one request at a time: one mark per preempted request.
                for _ in 0..s.preemptions.unwrap_or(0).min(1000) {
                    t.retractions.push(now);
                }
            }
            Some(vllm_log::Event::Ready) => t.ready = t.ready.or(Some(now)),
            _ => {}
        }
    }
}

/// Read an SGLang log into its timeline (the tests' form of [`read`]).
#[cfg(test)]
pub fn read_sglang<R: Read>(r: R, windows: &[WindowLines]) -> io::Result<Timeline> {
    read(r, windows, Some(Engine::Sglang))
}

/// Read a log of `engine` (None: find it from the log) into its timeline. `windows` are the
/// measured windows by line number; each becomes a span from the first timestamp at or after
/// its start line to the last one before its end line.
pub fn read<R: Read>(
    r: R,
    windows: &[WindowLines],
    engine: Option<Engine>,
) -> io::Result<Timeline> {
    let mut clock = Clock::new(windows);
    let mut t = match engine {
        Some(Engine::Sglang) => {
            let mut s = Sglang::default();
            each_line(r, &mut |l| s.feed(&mut clock, l))?;
            s.finish()
        }
        Some(Engine::Vllm) => {
            let mut v = Vllm::default();
            each_line(r, &mut |l| v.feed(&mut clock, l))?;
            v.t
        }
        None => {
            // Both parsers on one pass, each with its own clock; the engine is the one whose
            // stats lines were found (SGLang when neither: its prefixes are the older form).
            let mut vclock = Clock::new(windows);
            let (mut s, mut v) = (Sglang::default(), Vllm::default());
            each_line(r, &mut |l| {
                s.feed(&mut clock, l);
                v.feed(&mut vclock, l);
            })?;
            let s = s.finish();
            if s.is_empty() && !v.t.is_empty() {
                clock = vclock;
                v.t
            } else {
                s
            }
        }
    };
    clock.finish(&mut t);
    Ok(t)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn timeline_from_a_log_with_window_and_retraction() {
        let log = "\
[2026-12-01 14:24:00] startup
[2026-12-01 14:24:01] The server is fired up and ready to roll!
[2026-12-01 14:24:02] Prefill batch, #new-seq: 1, #new-token: 30, #cached-token: 10, token usage: 0.01, #running-req: 0, #queue-req: 3
[2026-12-01 14:24:03] Decode batch, #running-req: 2, #token: 194, token usage: 0.09, gen throughput (token/s): 27.83, #queue-req: 1
[2026-12-01 14:24:04] KV cache pool is full. Retract requests. #retracted_reqs: 1, #new_token_ratio: 0.5
[2026-12-01 14:24:05] Decode batch, #running-req: 3, #token: 294, token usage: 0.19, gen throughput (token/s): 40.0, #queue-req: 0
";
        let w = [WindowLines {
            start_line: 2,
            end_line: 5,
            label: "c4".into(),
            offered: Some(4.0),
        }];
        let t = read_sglang(log.as_bytes(), &w).unwrap();
        assert_eq!(t.ready, Some(1.0));
        assert_eq!(t.gen_tok_s, vec![(3.0, 27.83), (5.0, 40.0)]);
        assert_eq!(t.running, vec![(3.0, 2.0), (5.0, 3.0)]);
        assert_eq!(t.queue, vec![(2.0, 3.0), (3.0, 1.0), (5.0, 0.0)]);
        assert_eq!(t.cache_hit, vec![(2.0, 0.25)]);
        assert_eq!(t.retractions, vec![4.0]);
        assert_eq!(t.windows.len(), 1);
        assert_eq!((t.windows[0].t0, t.windows[0].t1), (2.0, 4.0));
        assert_eq!(t.lines, 6);
    }

    #[test]
    fn a_printed_cache_hit_rate_wins_over_the_prefill_estimate() {
        let log = "\
[2026-12-01 14:24:02] Prefill batch, #new-seq: 1, #new-token: 30, #cached-token: 10, token usage: 0.01, #running-req: 0, #queue-req: 3
[2026-12-01 14:24:03] Decode batch, #running-req: 2, #token: 194, token usage: 0.09, cache hit rate: 50.00%, gen throughput (token/s): 27.83, #queue-req: 1
";
        let t = read_sglang(log.as_bytes(), &[]).unwrap();
        assert_eq!(t.cache_hit, vec![(1.0, 0.5)]);
    }

    /// A vLLM launch gets its timeline from vLLM's stats lines: throughput, running, waiting,
    /// KV usage and prefix-cache hit rate; preemptions as retractions; uvicorn's start-up line
    /// (no timestamp of its own) at the last time seen; the window on the log's clock.
    #[test]
    fn a_vllm_log_gives_a_timeline() {
        let log = "\
INFO 12-02 02:20:44 [api_utils.py:347] vLLM API server version 0.32.0
INFO:     Application startup complete.
INFO 12-02 02:20:50 [loggers.py:335] Engine 000: Avg prompt throughput: 53.6 tokens/s, Avg generation throughput: 544.1 tokens/s, Running: 7 reqs, Waiting: 9 reqs, GPU KV cache usage: 93.3%, Prefix cache hit rate: 10.0%
INFO 12-02 02:21:00 [loggers.py:335] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 1324.6 tokens/s, Running: 15 reqs, Waiting: 1 reqs, Preemptions: 2 reqs, GPU KV cache usage: 100.0%, Prefix cache hit rate: 20.0%
INFO 12-02 02:21:10 [loggers.py:335] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, Prefix cache hit rate: 20.0%
";
        let w = [WindowLines {
            start_line: 2,
            end_line: 4,
            label: "c16".into(),
            offered: Some(16.0),
        }];
        let t = read(log.as_bytes(), &w, Some(Engine::Vllm)).unwrap();
        assert_eq!(t.ready, Some(0.0));
        assert_eq!(t.gen_tok_s, vec![(6.0, 544.1), (16.0, 1324.6), (26.0, 0.0)]);
        assert_eq!(t.running, vec![(6.0, 7.0), (16.0, 15.0), (26.0, 0.0)]);
        assert_eq!(t.queue, vec![(6.0, 9.0), (16.0, 1.0), (26.0, 0.0)]);
        let usage: Vec<f64> = t.token_usage.iter().map(|p| p.1).collect();
        assert!((usage[0] - 0.933).abs() < 1e-9, "{usage:?}");
        assert_eq!(t.cache_hit.len(), 3);
        assert!((t.cache_hit[1].1 - 0.2).abs() < 1e-9);
        assert_eq!(t.retractions, vec![16.0, 16.0]);
        assert_eq!(t.windows.len(), 1);
        assert_eq!((t.windows[0].t0, t.windows[0].t1), (6.0, 16.0));
        assert_eq!(t.lines, 5);
        // Told nothing, the reader finds vLLM from the log and reads the same timeline.
        assert_eq!(read(log.as_bytes(), &w, None).unwrap(), t);
        // SGLang's parser finds nothing in it: the engine matters.
        assert!(read_sglang(log.as_bytes(), &w).unwrap().is_empty());
    }

    /// Data parallel: each engine prints its own line per interval; the server's throughput
    /// and requests are their sum (a real two-engine log).
    #[test]
    fn a_data_parallel_vllm_log_sums_its_engines() {
        let log = include_str!("../../tests/fixtures/logs/vllm-v1-dp2-engines.log");
        let t = read(log.as_bytes(), &[], Some(Engine::Vllm)).unwrap();
        let first = t.gen_tok_s.first().copied().unwrap();
        assert!((first.1 - (98.9 + 0.4)).abs() < 1e-9, "{first:?}");
        assert_eq!(t.running.first().map(|p| p.1), Some(2.0));
        assert!(
            t.gen_tok_s.windows(2).all(|w| w[0].0 < w[1].0),
            "one point per interval"
        );
    }

    /// An SGLang log read without saying the engine is read as SGLang's.
    #[test]
    fn an_sglang_log_is_found_without_being_told() {
        let log = "\
[2026-12-01 14:24:01] The server is fired up and ready to roll!
[2026-12-01 14:24:03] Decode batch, #running-req: 2, #token: 194, token usage: 0.09, gen throughput (token/s): 27.83, #queue-req: 1
";
        let t = read(log.as_bytes(), &[], None).unwrap();
        assert_eq!(t.gen_tok_s, vec![(2.0, 27.83)]);
        assert_eq!(t, read_sglang(log.as_bytes(), &[]).unwrap());
    }
}
