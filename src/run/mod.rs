//! Run: the sweep loop (`sweep`), one server launch (`launch`), one load point (`session`) and
//! the signals that stop them (`signals`). The unit of work is one server launch: one
//! configuration in, its records out (one per repeat × load point it measures), everything in
//! its own folder. The runner owns cancellation and never prints: it emits RunEvents.

pub mod launch;
pub mod preflight;
pub mod search;
pub mod session;
pub mod signals;
pub mod slots;
pub mod slurm;
pub mod sweep;

pub use launch::{LaunchOutcome, run_launch};
pub use sweep::{SweepOutcome, run_sweep};

use crate::plan::expand::{RunConfig, RunPlan};
use crate::plan::spec::{LoadPoint, SweepSpec};
use crate::record::{Phase, RunRecord};
use serde::Serialize;
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
}

/// One measurement: a configuration at one load point, in one repeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Measurement {
    pub repeat: u64,
    pub point: LoadPoint,
}

impl Measurement {
    /// The measurement a record was made for.
    pub fn of(r: &RunRecord) -> Measurement {
        Measurement {
            repeat: r.repeat,
            point: LoadPoint {
                concurrency: r.concurrency,
                request_rate: r.request_rate,
            },
        }
    }
}

/// One server launch and the measurements it makes.
#[derive(Debug, Clone)]
pub struct Launch {
    pub run: RunConfig,
    /// Folder under runs/: the run name, plus `.r<k>` per repeat when each repeat gets its own
    /// server.
    pub dir_name: String,
    pub measurements: Vec<Measurement>,
    /// A max-load search launch: the probes recorded for this configuration before (empty
    /// in a new sweep). `measurements` then holds only the search's next probe, which is the
    /// row a launch that fails gets.
    pub search: Option<Vec<search::ProbeRun>>,
    /// What its rows measure (results.csv `phase`).
    pub phase: Phase,
}

/// The launches for a plan, leaving out measurements for which `done` says a row exists.
/// With a max-load search, `probes` gives each configuration's recorded probes, and a
/// configuration whose search is finished gets no launch.
pub fn plan_launches(
    spec: &SweepSpec,
    plan: &RunPlan,
    done: &dyn Fn(&RunConfig, Measurement) -> bool,
    probes: &dyn Fn(&RunConfig) -> Vec<search::ProbeRun>,
) -> Vec<Launch> {
    let points = &spec.workload.load_points;
    let mut out = Vec::new();
    if let (Some(ml), Some(o)) = (&spec.search.max_load, &spec.objective) {
        for run in &plan.runs {
            let history = probes(run);
            if let search::Step::Probe { load, repeat } =
                search::next_step(ml, &o.slo, o.noise, &history)
            {
                out.push(Launch {
                    run: run.clone(),
                    dir_name: run.name.clone(),
                    measurements: vec![Measurement {
                        repeat,
                        point: search::point(ml.axis, load, &spec.workload),
                    }],
                    search: Some(history),
                    phase: Phase::Probe,
                });
            }
        }
        return out;
    }
    for run in &plan.runs {
        let groups: Vec<(String, Vec<u64>)> = if spec.reuse_server || spec.repeats == 1 {
            vec![(run.name.clone(), (1..=spec.repeats).collect())]
        } else {
            (1..=spec.repeats)
                .map(|k| (format!("{}.r{k}", run.name), vec![k]))
                .collect()
        };
        for (dir_name, repeats) in groups {
            let measurements: Vec<Measurement> = repeats
                .iter()
                .flat_map(|&repeat| {
                    points
                        .iter()
                        .map(move |&point| Measurement { repeat, point })
                })
                .filter(|m| !done(run, *m))
                .collect();
            if !measurements.is_empty() {
                out.push(Launch {
                    run: run.clone(),
                    dir_name,
                    measurements,
                    search: None,
                    phase: Phase::Measure,
                });
            }
        }
    }
    out
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
