//! Keeps `state.json` (record::state) true while the sweep runs: each event that changes what
//! runs now is written at once, atomically, so `sgtune status` from another shell (or after a
//! crash) reads a whole file.

use crate::record::provenance::now_rfc3339;
use crate::record::state::{self, StatePhase, SweepState};
use crate::report::events::RunEvent;
use crate::util::say;
use std::path::{Path, PathBuf};
use std::time::Instant;

pub struct Tracker {
    root: PathBuf,
    state: SweepState,
    launch_started: Option<Instant>,
    /// Seconds each launch of this session took, start to stop.
    launch_secs: Vec<f64>,
    warned: bool,
}

impl Tracker {
    /// This session's state: this process, `planned` launches ahead, expected to take
    /// `estimate_s` (the ETA until a launch is measured).
    pub fn new(
        root: &Path,
        planned: usize,
        estimate_s: Option<f64>,
        deadline: Option<String>,
    ) -> Tracker {
        let pid = std::process::id();
        let now = now_rfc3339();
        let mut t = Tracker {
            root: root.to_path_buf(),
            state: SweepState {
                pid,
                pid_start: crate::util::sys::process_start_ticks(pid),
                host: crate::util::sys::hostname(),
                started_at: now.clone(),
                updated_at: now.clone(),
                phase: StatePhase::Starting,
                phase_since: Some(now),
                planned_launches: planned,
                deadline,
                ..SweepState::default()
            },
            launch_started: None,
            launch_secs: Vec::new(),
            warned: false,
        };
        if let Some(secs) = estimate_s {
            t.state.eta = Some(in_secs(secs));
            t.state.eta_basis = Some("the plan's estimate; no launch measured yet".to_string());
        }
        t.write();
        t
    }

    /// The ETA in words for a progress line, once a launch was measured.
    pub fn eta_line(&self) -> Option<String> {
        if self.launch_secs.is_empty() {
            return None;
        }
        let eta = self.state.eta.as_deref()?;
        Some(format!(
            "ETA {eta} ({})",
            self.state.eta_basis.as_deref().unwrap_or("")
        ))
    }

    fn phase(&mut self, phase: StatePhase) {
        self.state.phase = phase;
        self.state.phase_since = Some(now_rfc3339());
    }

    fn write(&mut self) {
        self.state.updated_at = now_rfc3339();
        if let Err(e) = state::write(&self.root, &self.state) {
            if !self.warned {
                self.warned = true;
                say(&format!(
                    "warning: cannot write {} (sgtune status will not see this sweep): {e}",
                    state::FILE
                ));
            }
        }
    }

    /// The expected end: the launches left in this round at the mean time of those finished.
    fn eta(&mut self) {
        if self.launch_secs.is_empty() {
            return;
        }
        let mean = self.launch_secs.iter().sum::<f64>() / self.launch_secs.len() as f64;
        let left = self
            .state
            .round_launches
            .saturating_sub(self.state.round_done);
        let current = self
            .launch_started
            .map_or(0.0, |t| t.elapsed().as_secs_f64());
        let secs = if self.launch_started.is_some() {
            (mean - current).max(0.0) + mean * left.saturating_sub(1) as f64
        } else {
            mean * left as f64
        };
        self.state.eta = Some(in_secs(secs));
        self.state.eta_basis = Some(format!(
            "{left} launch(es) left in this round at the mean of {} measured ({mean:.0} s each)",
            self.launch_secs.len()
        ));
    }

    pub fn handle(&mut self, ev: &RunEvent<'_>) {
        match ev {
            RunEvent::SweepStart { runs, .. } => {
                self.state.round_launches = *runs;
                self.state.round_done = 0;
            }
            RunEvent::RunStart {
                index, total, name, ..
            } => {
                self.launch_started = Some(Instant::now());
                self.state.launch = Some(name.to_string());
                self.state.launch_index = index + 1;
                self.state.round_launches = *total;
                self.state.point = None;
                self.phase(StatePhase::Starting);
            }
            RunEvent::Ready { .. } => self.phase(StatePhase::Ready),
            RunEvent::LoadStart { concurrency, .. } => {
                self.state.point = Some(format!("concurrency {concurrency}"));
                self.phase(StatePhase::Loading);
            }
            RunEvent::Stopping => self.phase(StatePhase::Stopping),
            RunEvent::RunEnd { .. } => {
                // One launch may end with several rows (load points, repeats): it ended
                // when its first row arrives.
                if let Some(t) = self.launch_started.take() {
                    self.launch_secs.push(t.elapsed().as_secs_f64());
                    self.state.launches_done += 1;
                    self.state.round_done += 1;
                }
                self.phase(StatePhase::BetweenRuns);
            }
            RunEvent::Waiting { .. }
            | RunEvent::LoadProgress { .. }
            | RunEvent::Slot { .. }
            | RunEvent::Warning { .. } => return,
        }
        self.eta();
        self.write();
    }
}

/// Now plus `secs`, RFC 3339 in UTC.
fn in_secs(secs: f64) -> String {
    let at = chrono::Utc::now() + chrono::Duration::milliseconds((secs * 1000.0) as i64);
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}
