//! The deadline's clock (the rules are `tune::deadline`'s): before each launch, whether it
//! still fits; while one runs, a guard that cancels it (the existing cancellation: its row
//! becomes `interrupted`, which resume redoes) in time for its server to stop before the
//! deadline; and whether the deadline stopped the sweep.

use crate::record::RunRecord;
use crate::run::session::INTERRUPT_GRACE;
use crate::tune::deadline::{self as rule, Pace};
use crate::tune::estimate::Known;
use crate::tune::work::Launch;
use chrono::{DateTime, Utc};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub struct Deadline {
    pub at: DateTime<Utc>,
    /// Seconds before `at` when a running launch is cancelled (`tune::deadline::lead_s`).
    lead_s: f64,
    pace: Mutex<Pace>,
    reached: AtomicBool,
}

impl Deadline {
    pub fn new(at: DateTime<Utc>, stop_timeout_s: u64, known: &Known) -> Deadline {
        Deadline {
            at,
            lead_s: rule::lead_s(stop_timeout_s, INTERRUPT_GRACE.as_secs_f64()),
            pace: Mutex::new(Pace::new(known)),
            reached: AtomicBool::new(false),
        }
    }

    /// Seconds before the cut-off, when a launch still running is cancelled.
    pub fn lead_s(&self) -> f64 {
        self.lead_s
    }

    fn left_s(&self) -> f64 {
        (self.at - Utc::now()).num_milliseconds() as f64 / 1000.0
    }

    /// Whether `launch` may start now; when it may not, the deadline has stopped the sweep.
    pub fn admit(&self, spec: &crate::plan::spec::SweepSpec, launch: &Launch) -> bool {
        if self.reached() {
            return false;
        }
        let need = self
            .pace
            .lock()
            .map(|p| p.need_s(rule::points_of(spec, launch)))
            .unwrap_or(0.0);
        let ok = rule::fits(self.left_s(), self.lead_s, need);
        if !ok {
            self.reached.store(true, Ordering::SeqCst);
        }
        ok
    }

    /// A launch ended after `elapsed_s`: its start-up and the rest per load point (stop
    /// included, which errs long) say how long the next one takes.
    pub fn observe(&self, records: &[RunRecord], elapsed_s: f64) {
        let measured: Vec<&RunRecord> = records
            .iter()
            .filter(|r| r.status == crate::record::RunStatus::Ok)
            .collect();
        let Some(first) = measured.first() else {
            return;
        };
        let startup = first.time_to_ready_s;
        let per_point = (elapsed_s - startup.unwrap_or(0.0)).max(0.0) / measured.len() as f64;
        if let Ok(mut p) = self.pace.lock() {
            p.observe(startup, &vec![per_point; measured.len()]);
        }
    }

    pub fn reached(&self) -> bool {
        self.reached.load(Ordering::SeqCst)
    }

    /// Cancel `cancel` at the cut-off (the deadline less the lead): whatever runs then stops
    /// sending, records its row and stops its server before the deadline. Dropping the guard
    /// (the rounds ended first, or stopped on an error) ends it.
    pub fn guard(self: std::sync::Arc<Self>, cancel: CancellationToken) -> Guard {
        Guard(tokio::spawn(async move {
            let wait = (self.left_s() - self.lead_s).max(0.0);
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs_f64(wait)) => {
                    self.reached.store(true, Ordering::SeqCst);
                    crate::util::say(&format!(
                        "sgtune: the deadline ({}) is near: stopping the launch in progress so its server is down in time",
                        self.at.with_timezone(&chrono::Local).to_rfc3339_opts(chrono::SecondsFormat::Secs, false)
                    ));
                    cancel.cancel();
                }
                _ = cancel.cancelled() => {}
            }
        }))
    }
}

/// The cut-off's timer, stopped when dropped.
pub struct Guard(tokio::task::JoinHandle<()>);

impl Drop for Guard {
    fn drop(&mut self) {
        self.0.abort();
    }
}
