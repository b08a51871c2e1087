//! The work the tuner asks `run/` to do: launches (one server each) and the measurements each
//! makes, and which of a plan's measurements are still to do. Pure: `done` and `probes` say
//! what is already recorded.

use crate::plan::expand::{RunConfig, RunPlan};
use crate::plan::spec::{LoadPoint, SweepSpec};
use crate::record::{Phase, RunRecord};
use crate::tune::search;
use serde::Serialize;

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
