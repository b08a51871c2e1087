//! How long a plan will take, from what earlier sweeps in the same results folder measured
//! (`tune::estimate` does the arithmetic; here the folders are read).

use crate::plan::expand::RunPlan;
use crate::plan::spec::SweepSpec;
use crate::record::rows;
use crate::record::store;
use crate::tune::estimate;
use crate::tune::work::Launch;
use std::path::Path;

/// What earlier sweeps under `results_dir` measured for this plan's configurations (same run
/// id: same command, model, flags and environment): the median start-up and, for `requests:`
/// workloads, the median load point; else the spec's stated defaults (`estimate:`).
pub fn known(s: &SweepSpec, plan: &RunPlan, results_dir: &Path) -> estimate::Known {
    // Folders recorded before run ids hashed the launched command hold the earlier ids.
    let ids: std::collections::HashSet<String> = plan
        .runs
        .iter()
        .flat_map(|r| {
            [
                r.id.clone(),
                crate::plan::expand::legacy_run_id_for(s, r.engine, &r.resolved),
            ]
        })
        .collect();
    let (mut ready, mut window, mut sweeps) = (Vec::new(), Vec::new(), 0);
    let folders = std::fs::read_dir(results_dir)
        .map(|d| d.flatten().map(|e| e.path()).collect::<Vec<_>>())
        .unwrap_or_default();
    for f in folders {
        let Ok(t) = rows::read(&f.join(store::RESULTS_CSV)) else {
            continue;
        };
        let before = ready.len();
        for r in t
            .rows
            .iter()
            .filter(|r| r.is_ok() && ids.contains(r.get("run_id")))
        {
            ready.extend(r.f64("time_to_ready_s"));
            window.extend(r.f64("duration_s"));
        }
        sweeps += usize::from(ready.len() > before);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied()
    };
    let (startup_s, startup_from) = match median(&mut ready) {
        Some(m) => (
            m,
            format!(
                "median of {} launch(es) of these configurations in {sweeps} earlier sweep(s) under {}",
                ready.len(),
                results_dir.display()
            ),
        ),
        None => (
            s.estimate.startup_s,
            "estimate.startup_s: nothing measured yet".to_string(),
        ),
    };
    let measured = s
        .workload
        .requests
        .and_then(|_| median(&mut window))
        .filter(|_| s.estimate.point_s.is_none());
    let (point_s, point_from) = estimate::point_seconds(s, measured);
    estimate::Known {
        startup_s,
        startup_from,
        point_s,
        point_from,
        stop_s: s.estimate.stop_s,
    }
}

/// The plan's estimate, from what earlier sweeps under `results_dir` measured.
pub fn estimate(
    s: &SweepSpec,
    plan: &RunPlan,
    launches: &[Launch],
    results_dir: &Path,
) -> estimate::Estimate {
    estimate::estimate(s, launches, &known(s, plan, results_dir))
}
