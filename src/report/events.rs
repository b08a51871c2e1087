//! What the runner reports while it works. The runner never prints; `progress` renders these.

use crate::record::RunRecord;
use std::path::Path;

pub enum RunEvent<'a> {
    SweepStart {
        runs: usize,
        results: &'a Path,
    },
    RunStart {
        index: usize,
        total: usize,
        name: &'a str,
        command: &'a str,
    },
    /// Waiting for the server; about once a second.
    Waiting {
        elapsed_s: f64,
        last_line: &'a str,
    },
    Ready {
        secs: f64,
    },
    LoadStart {
        requests: Option<u64>,
        duration_s: Option<f64>,
        concurrency: u64,
    },
    LoadProgress {
        done: u64,
        failed: u64,
        output_tokens: u64,
        elapsed_s: f64,
    },
    Stopping,
    RunEnd {
        record: &'a RunRecord,
    },
    /// The events that follow (up to the next `Slot`) come from this parallel slot.
    Slot {
        index: usize,
    },
    /// Something worth a line that is not a failure of the run (e.g. a leftover process).
    Warning {
        message: &'a str,
    },
}
