//! Run: a checked sweep from start to end (`execute`), the sweep loop (`sweep`), one server
//! launch (`launch`), one load point (`session`), the signals that stop them (`signals`), and
//! the conclusion every sweep ends with (`conclude`). The unit of work is one server launch:
//! one configuration in, its records out (one per repeat × load point it measures), everything
//! in its own folder. The runner owns cancellation and, while launches run, never prints: it
//! emits RunEvents; the conclusion prints the table and the decision's summary.

pub mod conclude;
pub mod deadline;
pub mod effective;
pub mod estimate;
pub mod execute;
pub mod finish;
pub mod flags;
pub mod guided;
pub mod launch;
pub mod preflight;
pub mod prepare;
pub mod quality;
pub mod recheck;
pub mod report;
pub mod resume;
pub mod session;
pub mod signals;
pub mod slots;
pub mod slurm;
pub mod state;
pub mod sweep;
pub mod tuning;

/// The work the tuner asks for, executed here.
pub use crate::tune::work::{Launch, Measurement};
pub use launch::{LaunchOutcome, run_launch};
pub use sweep::{SweepOutcome, run_sweep};

use crate::plan::spec::SweepSpec;
use tokio_util::sync::CancellationToken;

/// What a run needs besides its configuration.
#[derive(Clone)]
pub struct RunContext<'a> {
    pub spec: &'a SweepSpec,
    pub param_keys: &'a [String],
    /// Prompt token ids are drawn from [0, vocab_size).
    pub vocab_size: u64,
    /// `workload.dataset` prompts, loaded once.
    pub dataset: Option<std::sync::Arc<Vec<crate::load::dataset::DatasetPrompt>>>,
    pub cancel: &'a CancellationToken,
    /// `shared_prefix.working_set`: the KV capacity (tokens) the working set is sized against,
    /// that of the first configuration measured, so that every configuration gets the same
    /// prompts and a larger pool shows how much more of them it keeps. None until known.
    pub working_set_basis: &'a std::sync::Mutex<Option<u64>>,
    /// Process groups of the servers now running, for the second-signal kill.
    pub groups: &'a signals::Groups,
    /// Where this launch runs when several share the machine (None: the whole machine, the
    /// spec's port or a free one).
    pub slot: Option<slots::Slot>,
    /// `--deadline` / `--budget`: launches start only while they fit (`deadline`).
    pub deadline: Option<&'a deadline::Deadline>,
}

/// File-name suffix of a measurement inside its launch folder: none when the launch measures
/// one thing, else `.c<concurrency>` (or `.rate<rate>`) and/or `.r<repeat>`.
pub(crate) fn suffix(spec: &SweepSpec, m: Measurement) -> String {
    let mut s = String::new();
    let search = spec.search.max_load.is_some();
    if spec.workload.load_points.len() > 1 || search {
        s.push_str(&format!(".{}", m.point.label()));
    }
    // A search repeats a probe on the same server when it is close to the SLO.
    if search || (spec.reuse_server && spec.repeats > 1) {
        s.push_str(&format!(".r{}", m.repeat));
    }
    s
}
