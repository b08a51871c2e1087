//! Renders RunEvents: indicatif bars on a terminal (one for the sweep, one for the current
//! run); plain lines, at most one progress line every ~10 s, when stderr is not a terminal, so
//! a run under nohup leaves a readable log.

use crate::record::RunRecord;
use crate::report::events::RunEvent;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::{Duration, Instant};

const PLAIN_EVERY: Duration = Duration::from_secs(10);

pub struct Progress {
    bars: Option<Bars>,
    last_plain: Instant,
    run_started: Instant,
    /// The parallel slot the current events come from (None: one run at a time).
    slot: Option<usize>,
    /// Start of the run in each slot, for its duration.
    slot_started: std::collections::HashMap<usize, Instant>,
}

struct Bars {
    multi: MultiProgress,
    sweep: ProgressBar,
    run: ProgressBar,
}

fn short(s: &str, n: usize) -> String {
    let s = s.trim();
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let cut: String = s.chars().take(n).collect();
        format!("{cut}…")
    }
}

/// A run's outcome for its RunEnd line: the failure (kind and message), or the ok summary
/// (requests, output tok/s, verdict).
fn run_outcome(record: &RunRecord) -> String {
    match (&record.failure_kind, &record.client) {
        (Some(k), _) => format!(
            "{} ({}): {}",
            record.status.as_str(),
            k.as_str(),
            short(record.failure_message.as_deref().unwrap_or(""), 160)
        ),
        (None, Some(c)) => format!(
            "ok: {} requests, {:.1} output tok/s, verdict {}",
            c.completed,
            c.output_tok_s.unwrap_or(0.0),
            record.verdict.as_ref().map_or("-", |v| v.kind.as_str())
        ),
        (None, None) => record.status.as_str().to_string(),
    }
}

impl Progress {
    pub fn new() -> Self {
        let bars = std::io::stderr().is_terminal().then(|| {
            let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
            let sweep = multi.add(ProgressBar::new(0));
            sweep.set_style(
                ProgressStyle::with_template("sweep {pos}/{len} [{elapsed_precise}] {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            let run = multi.add(ProgressBar::new(0));
            run.set_style(
                ProgressStyle::with_template("  {bar:30} {pos}/{len} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            Bars { multi, sweep, run }
        });
        Progress {
            bars,
            last_plain: Instant::now() - PLAIN_EVERY,
            run_started: Instant::now(),
            slot: None,
            slot_started: std::collections::HashMap::new(),
        }
    }

    fn println(&self, line: &str) {
        let tagged;
        let line = match self.slot {
            Some(k) => {
                tagged = line
                    .lines()
                    .map(|l| format!("[slot {k}] {l}"))
                    .collect::<Vec<_>>()
                    .join("\n");
                tagged.as_str()
            }
            None => line,
        };
        match &self.bars {
            Some(b) => {
                let _ = b.multi.println(line);
            }
            None => {
                let _ = writeln!(std::io::stderr(), "{line}");
            }
        }
    }

    fn plain_due(&mut self) -> bool {
        if self.last_plain.elapsed() >= PLAIN_EVERY {
            self.last_plain = Instant::now();
            true
        } else {
            false
        }
    }

    /// Renders one event: on the bars, or as plain lines when stderr is not a terminal.
    pub fn handle(&mut self, ev: &RunEvent<'_>) {
        match ev {
            RunEvent::SweepStart { runs, results } => self.sweep_start(*runs, results),
            RunEvent::RunStart {
                index,
                total,
                name,
                command,
            } => self.run_start(*index, *total, name, command),
            RunEvent::Waiting {
                elapsed_s,
                last_line,
            } => self.waiting(*elapsed_s, last_line),
            RunEvent::Ready { secs } => self.println(&format!("  ready in {secs:.1}s")),
            RunEvent::LoadStart {
                requests,
                duration_s,
                concurrency,
            } => self.load_start(*requests, *duration_s, *concurrency),
            RunEvent::LoadProgress {
                done,
                failed,
                output_tokens,
                elapsed_s,
            } => self.load_progress(*done, *failed, *output_tokens, *elapsed_s),
            RunEvent::Stopping => {
                if let Some(b) = &self.bars {
                    b.run.set_message("stopping server");
                }
            }
            RunEvent::RunEnd { record } => self.run_end(record),
            RunEvent::Warning { message } => self.println(&format!("  warning: {message}")),
            RunEvent::Slot { index } => self.slot = Some(*index),
        }
    }

    /// SweepStart: the sweep bar's length and the `sgtune: N run(s)` line.
    fn sweep_start(&mut self, runs: usize, results: &Path) {
        if let Some(b) = &self.bars {
            b.sweep.set_length(runs as u64);
        }
        self.println(&format!(
            "sgtune: {runs} run(s); results in {}",
            results.display()
        ));
    }

    /// RunStart: the `[i/n] name` line with the server command; the run bar reset.
    fn run_start(&mut self, index: usize, total: usize, name: &str, command: &str) {
        self.run_started = Instant::now();
        if let Some(k) = self.slot {
            self.slot_started.insert(k, Instant::now());
        }
        self.last_plain = Instant::now();
        self.println(&format!("[{}/{}] {name}\n  $ {command}", index + 1, total));
        if let Some(b) = &self.bars {
            b.sweep.set_message(name.to_string());
            b.run.reset();
            b.run.set_length(0);
            b.run.set_message("starting server");
        }
    }

    /// Waiting: `waiting for ready` with the server's last log line, on the run bar or as a
    /// throttled plain line.
    fn waiting(&mut self, elapsed_s: f64, last_line: &str) {
        let msg = format!(
            "waiting for ready {elapsed_s:.0}s | {}",
            short(last_line, 90)
        );
        match &self.bars {
            Some(b) => b.run.set_message(msg),
            None => {
                if self.plain_due() {
                    self.println(&format!("  {msg}"));
                }
            }
        }
    }

    /// LoadStart: the `load:` line (requests or duration, and the concurrency); the run bar's
    /// length.
    fn load_start(&mut self, requests: Option<u64>, duration_s: Option<f64>, concurrency: u64) {
        let what = match (requests, duration_s) {
            (Some(n), _) => format!("{n} requests"),
            (None, Some(d)) => format!("{d} s"),
            _ => String::new(),
        };
        self.println(&format!("  load: {what} at concurrency {concurrency}"));
        if let Some(b) = &self.bars {
            b.run.set_length(requests.unwrap_or(0));
            b.run.set_position(0);
        }
    }

    /// LoadProgress: output tok/s and errors so far, on the run bar or as a throttled plain
    /// line.
    fn load_progress(&mut self, done: u64, failed: u64, output_tokens: u64, elapsed_s: f64) {
        let tok_s = if elapsed_s > 0.0 {
            output_tokens as f64 / elapsed_s
        } else {
            0.0
        };
        let msg = format!("{tok_s:.0} tok/s, {failed} errors, {elapsed_s:.0}s");
        match &self.bars {
            Some(b) => {
                b.run.set_position(done);
                b.run.set_message(msg);
            }
            None => {
                if self.plain_due() {
                    self.println(&format!("  {done} requests done, {msg}"));
                }
            }
        }
    }

    /// RunEnd: the sweep bar advanced and the run's outcome line with its duration.
    fn run_end(&mut self, record: &RunRecord) {
        if let Some(b) = &self.bars {
            b.sweep.inc(1);
        }
        let started = self
            .slot
            .and_then(|k| self.slot_started.get(&k))
            .unwrap_or(&self.run_started);
        let who = match self.slot {
            Some(_) => format!("{}: ", record.run_name),
            None => String::new(),
        };
        self.println(&format!(
            "  {who}{} in {:.0}s",
            run_outcome(record),
            started.elapsed().as_secs_f64()
        ));
    }

    /// A line of its own (e.g. the ETA), above the bars or plain.
    pub fn note(&self, line: &str) {
        self.println(line);
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bars {
            b.run.finish_and_clear();
            b.sweep.finish_and_clear();
        }
    }
}

impl Default for Progress {
    fn default() -> Self {
        Self::new()
    }
}
