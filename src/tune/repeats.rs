//! `repeats: auto`: the next round of repeats, for the points whose objective is not yet
//! precise enough.

use crate::plan::expand::RunPlan;
use crate::plan::spec::{self, AutoRepeats, SweepSpec};
use crate::record::Phase;
use crate::record::rows::Row;
use crate::tune::stats::needs_more_repeats;
use crate::tune::work::{Launch, Measurement};

/// The next round's launches. For each configuration, every load point whose repeats are all
/// ok, below `auto.max`, and whose 95% half-width of the objective is still above
/// `auto.precision` × the mean gets one more repeat, on one new server per configuration. A
/// failed repeat ends its point (it is not eligible anyway).
pub fn next_round(
    spec: &SweepSpec,
    plan: &RunPlan,
    rows: &[Row],
    auto: AutoRepeats,
) -> Vec<Launch> {
    let Some(o) = &spec.objective else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for run in &plan.runs {
        let mut next: Option<u64> = None;
        let mut points = Vec::new();
        for p in &spec.workload.load_points {
            let label = match p.request_rate {
                Some(r) => format!("{}/s", spec::rate_text(Some(r))),
                None => p.concurrency.to_string(),
            };
            let mine: Vec<&Row> = rows
                .iter()
                .filter(|r| r.get("run_name") == run.name && r.load_point() == label)
                .filter(|r| !matches!(r.get("phase"), "probe" | "preflight"))
                .collect();
            let n = mine.len() as u64;
            if n == 0 || n >= auto.max || mine.iter().any(|r| !r.is_ok()) {
                continue;
            }
            let values: Vec<f64> = mine.iter().filter_map(|r| r.f64(&o.metric)).collect();
            if needs_more_repeats(&values, auto.precision) {
                let k = mine
                    .iter()
                    .filter_map(|r| r.u64("repeat"))
                    .max()
                    .unwrap_or(n)
                    + 1;
                next = Some(next.map_or(k, |x: u64| x.max(k)));
                points.push(*p);
            }
        }
        if let Some(k) = next {
            out.push(Launch {
                run: run.clone(),
                dir_name: format!("{}.r{k}", run.name),
                measurements: points
                    .into_iter()
                    .map(|point| Measurement { repeat: k, point })
                    .collect(),
                search: None,
                phase: Phase::Measure,
            });
        }
    }
    out
}
