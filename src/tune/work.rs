//! The work the tuner asks `run/` to do: launches (one server each) and the measurements each
//! makes, and which of a plan's measurements are still to do. Pure: `done` and `probes` say
//! what is already recorded.

use crate::plan::expand::{RunConfig, RunPlan};
use crate::plan::spec::{LoadPoint, SweepSpec};
use crate::record::rows::Row;
use crate::record::{Phase, RunRecord, RunStatus};
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

/// Whether a recorded row is finished: it stays, and its measurement is not run again. An
/// ok row, a pruned one, and a failed one unless the user asked to retry failures; an
/// interrupted row (or a cell sgtune does not write) is not. The one definition for
/// `resume`, the deadline's "not measured" list and a Slurm submission's base rows.
pub fn is_finished(row: &Row, retry_failed: bool) -> bool {
    match row.status() {
        Some(RunStatus::Ok | RunStatus::Pruned) => true,
        Some(RunStatus::Failed) => !retry_failed,
        Some(RunStatus::Interrupted) | None => false,
    }
}

/// What a plan still needs to run, given the rows recorded so far: `plan_launches` with every
/// finished row's measurement done, and each max-load search continued from its finished
/// probes (an interrupted probe is run again, never judged).
pub fn left_to_run(
    spec: &SweepSpec,
    plan: &RunPlan,
    rows: &[Row],
    retry_failed: bool,
) -> Vec<Launch> {
    let finished: Vec<&Row> = rows
        .iter()
        .filter(|r| is_finished(r, retry_failed))
        .collect();
    let done: std::collections::BTreeSet<crate::record::RowKey> =
        finished.iter().map(|r| r.key()).collect();
    let probes: Vec<&Row> = finished
        .iter()
        .copied()
        .filter(|r| r.phase() == Phase::Probe)
        .collect();
    plan_launches(
        spec,
        plan,
        &|run, m| {
            done.contains(&(
                run.name.clone(),
                m.point.concurrency,
                crate::plan::spec::rate_text(m.point.request_rate),
                m.repeat,
            ))
        },
        &|run| search::recorded_probes(spec, &probes, run),
    )
}

/// A configuration's repeat `repeat` on a server of its own, at every load point of the
/// workload: a guided tune's confirmation of a configuration it measured before.
pub fn repeat_launch(spec: &SweepSpec, run: RunConfig, repeat: u64) -> Launch {
    Launch {
        dir_name: format!("{}.r{repeat}", run.name),
        measurements: spec
            .workload
            .load_points
            .iter()
            .map(|&point| Measurement { repeat, point })
            .collect(),
        search: None,
        phase: Phase::Measure,
        run,
    }
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

#[cfg(test)]
mod left_tests {
    use super::*;
    use crate::tune::testing::{row, spec};

    #[test]
    fn finished_is_ok_pruned_and_failed_unless_retried() {
        let with = |s: &str| row(&[("status", s)]);
        for retry in [false, true] {
            assert!(is_finished(&with("ok"), retry));
            assert!(is_finished(&with("pruned"), retry));
            assert!(!is_finished(&with("interrupted"), retry));
            assert!(!is_finished(&with("bogus"), retry));
        }
        assert!(is_finished(&with("failed"), false));
        assert!(!is_finished(&with("failed"), true));
    }

    /// A grid: a finished measurement is not run again, an interrupted or (retried) failed
    /// one is. A search: it continues from its finished probes; an interrupted probe is run
    /// again, not taken as a result.
    #[test]
    fn what_is_left_skips_finished_rows_only() {
        let grid = spec(
            "configs:\n  - {name: a}\n  - {name: b}\n  - {name: c}\nworkload:\n  vocab_size: 100\n  concurrency: 2\n  requests: 4\n  input_tokens: 4\n  output_tokens: 4\n",
        );
        let plan = crate::plan::expand::expand(&grid);
        let at = |name: &str, status: &str| {
            row(&[
                ("run_name", name),
                ("status", status),
                ("concurrency", "2"),
                ("repeat", "1"),
            ])
        };
        let rows = [at("a", "ok"), at("b", "interrupted"), at("c", "failed")];
        let names = |ls: Vec<Launch>| ls.into_iter().map(|l| l.dir_name).collect::<Vec<_>>();
        assert_eq!(names(left_to_run(&grid, &plan, &rows, false)), ["b"]);
        assert_eq!(names(left_to_run(&grid, &plan, &rows, true)), ["b", "c"]);

        let searched = spec(
            "configs:\n  - {name: a}\nworkload:\n  vocab_size: 100\n  concurrency: 1\n  requests: 4\n  input_tokens: 4\n  output_tokens: 4\nobjective:\n  maximize: output_tok_s\n  slo: {ttft_ms_p99: 250}\nsearch:\n  max_load:\n    concurrency: {from: 1, to: 8}\n",
        );
        let plan = crate::plan::expand::expand(&searched);
        let probe = |c: &str, status: &str| {
            row(&[
                ("run_name", "a"),
                ("phase", "probe"),
                ("status", status),
                ("concurrency", c),
                ("repeat", "1"),
                ("ttft_ms_p99", "100"),
            ])
        };
        let next = |rows: &[Row]| {
            let ls = left_to_run(&searched, &plan, rows, false);
            ls.first()
                .map(|l| l.measurements[0].point.concurrency)
                .unwrap_or(0)
        };
        let first = next(&[]);
        // The first probe passed: the search goes on past it.
        let after_pass = next(&[probe(&first.to_string(), "ok")]);
        assert_ne!(after_pass, first);
        // The first probe was interrupted: it is run again.
        assert_eq!(next(&[probe(&first.to_string(), "interrupted")]), first);
    }
}
