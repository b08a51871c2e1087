//! How long a plan will take, from what earlier sweeps in the same results folder measured
//! (`tune::estimate` does the arithmetic; here the folders are read).

use crate::plan::expand::RunPlan;
use crate::plan::spec::SweepSpec;
use crate::record::rows::{self, Col};
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
            .filter(|r| r.is_ok() && ids.contains(r.run_id()))
        {
            ready.extend(r.metric(&Col::TIME_TO_READY_S));
            window.extend(r.metric(&Col::DURATION_S));
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

/// Whether the estimate fits before the deadline, when there is one (`tune::deadline::fit_line`,
/// with the lead the deadline's clock keeps to stop the last server).
pub fn fit_line(
    e: &estimate::Estimate,
    s: &SweepSpec,
    deadline: Option<chrono::DateTime<chrono::Utc>>,
) -> Option<String> {
    let at = deadline?;
    let left_s = (at - chrono::Utc::now()).num_milliseconds() as f64 / 1000.0;
    let lead_s = crate::tune::deadline::lead_s(
        s.server.stop_timeout_s,
        crate::run::session::INTERRUPT_GRACE.as_secs_f64(),
    );
    Some(crate::tune::deadline::fit_line(e, left_s, lead_s))
}

/// With `tune:`: the space's size, what its grid would cost, and the tune's bound (its
/// `launches:`), at the estimate of one configuration (`e`, the start's plan).
pub fn tune_lines(s: &SweepSpec, e: &estimate::Estimate) -> Vec<String> {
    let Some(t) = &s.tune else {
        return Vec::new();
    };
    let size = t.size();
    let per_config = e.launches.max(1) as u128;
    let at = |configs: u128| match e.expected_s {
        Some(x) => format!(", about {}", estimate::human(x * configs as f64)),
        None => String::new(),
    };
    let knobs: Vec<String> = t
        .knobs
        .iter()
        .map(|k| format!("{} ({})", k.key, k.values.len()))
        .collect();
    vec![
        format!(
            "tune: {} knob(s): {}; the space holds {size} configuration(s); its whole grid would be {} launch(es){}",
            t.knobs.len(),
            knobs.join(", "),
            size * per_config,
            at(size)
        ),
        format!(
            "tune: at most {} step(s) ({} launch(es)){}, starting at {}; each next one chosen from the evidence of the ones before",
            t.launches,
            t.launches as u128 * per_config,
            at(t.launches as u128),
            crate::plan::tune::point_name(t, &t.start)
        ),
        if t.confirm > 0 {
            format!(
                "tune: {} of those steps kept to confirm the leader at the end (tune.confirm): re-launches of the leader and of every launch within noise of it, on fresh servers, so the decision names a winner or a tie from repeats, not one launch",
                t.confirm
            )
        } else {
            "tune: no launch kept to confirm the leader (tune.confirm: 0): the decision rests on one launch per configuration".to_string()
        },
    ]
}

/// What `sgtune validate` prints: the plan, its estimate from earlier sweeps under
/// `results_dir`, whether it fits the deadline `at`, and with `tune:` the tune's bound.
pub fn validate_lines(
    s: &SweepSpec,
    plan: &RunPlan,
    results_dir: &Path,
    at: Option<chrono::DateTime<chrono::Utc>>,
) -> Vec<String> {
    let mut lines = crate::report::plan::lines(s, plan);
    let launches = crate::tune::work::plan_launches(s, plan, &|_, _| false, &|_| Vec::new());
    let e = estimate(s, plan, &launches, results_dir);
    lines.push(estimate::line(&e));
    lines.extend(fit_line(&e, s, at));
    lines.extend(tune_lines(s, &e));
    lines
}

/// What `sgtune run --dry-run` prints: the plan and, with `tune:`, the tune's bound.
pub fn dry_run_lines(s: &SweepSpec, plan: &RunPlan, results_dir: &Path) -> Vec<String> {
    let mut lines = crate::report::plan::lines(s, plan);
    if s.tune.is_some() {
        let launches = crate::tune::work::plan_launches(s, plan, &|_, _| false, &|_| Vec::new());
        let e = estimate(s, plan, &launches, results_dir);
        lines.extend(tune_lines(s, &e));
    }
    lines
}
