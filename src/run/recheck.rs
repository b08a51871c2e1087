//! `sgtune reproduce --decision`: the re-check of a decision's point, planned. Its leader (A)
//! and runner-up (B), each at the load it was judged at, relaunched in ABBA order (so a drift
//! of the machine over the re-check weighs on both alike) under a spec that only measures.

use crate::plan::expand::RunPlan;
use crate::plan::spec::SweepSpec;
use crate::record::rows::{Col, Row};
use crate::tune::decision::PointDecision;
use crate::tune::work::{Launch, Measurement};
use std::path::Path;

/// The re-check's spec, its plan (the two configurations) and its four launches, for the
/// decision `point` of the sweep in `dir` (its spec `s`, plan and `recorded` rows), between
/// its leader and runner-up `(a, b)`. The error names what the folder no longer holds.
pub fn plan(
    s: &SweepSpec,
    plan: &RunPlan,
    recorded: &[Row],
    point: &PointDecision,
    (a, b): (&str, &str),
    dir: &Path,
) -> Result<(SweepSpec, RunPlan, Vec<Launch>), String> {
    // Each at the load it was judged at: the point's, or (max-load search) its own max load.
    let load_of = |name: &str| -> Option<crate::plan::spec::LoadPoint> {
        let lp = point
            .configurations
            .iter()
            .find(|c| c.run_name == name)
            .and_then(|c| c.max_load_at_slo.clone())
            .unwrap_or_else(|| point.load_point.clone());
        let r = recorded
            .iter()
            .find(|r| r.run_name() == name && r.load_point() == lp)?;
        Some(crate::plan::spec::LoadPoint {
            concurrency: r.concurrency()?,
            request_rate: r.request_rate(),
        })
    };
    // A tune's configurations beyond its start are the ones its rows name.
    let plan = crate::run::guided::plan_with_rows(s, plan, recorded);
    let mut runs = Vec::new();
    for name in [a, b] {
        let Some(run) = plan.runs.iter().find(|r| r.name == name) else {
            return Err(format!("`{name}` is not in the spec's plan any more"));
        };
        let Some(lp) = load_of(name) else {
            return Err(format!("no recorded row of `{name}` at its decided load"));
        };
        let mut run = run.clone();
        // A value the pre-flight decided is taken from the recorded row.
        if let Some(p) = &s.search.preflight {
            let v = recorded
                .iter()
                .find(|r| r.run_name() == name)
                .and_then(|r| r.metric(&Col::param(&p.knob)));
            if let Some(v) = v {
                let mut l = Launch {
                    run,
                    dir_name: String::new(),
                    measurements: Vec::new(),
                    search: None,
                    phase: crate::record::Phase::Measure,
                };
                crate::tune::preflight::substitute(&mut l, p, v);
                run = l.run;
            }
        }
        runs.push((run, lp));
    }
    // ABBA: A first and last, B in the middle, each launch its own server.
    let order = [(0usize, 1u64), (1, 1), (1, 2), (0, 2)];
    let launches: Vec<Launch> = order
        .iter()
        .map(|&(i, k)| Launch {
            run: runs[i].0.clone(),
            dir_name: format!("{}.r{k}", runs[i].0.name),
            measurements: vec![Measurement {
                repeat: k,
                point: runs[i].1,
            }],
            search: None,
            phase: crate::record::Phase::Measure,
        })
        .collect();
    let mut s2 = s.clone();
    s2.objective = None; // judged below, pairwise, not per load point
    s2.search = Default::default();
    s2.tune = None; // the two configurations, relaunched as they are; no strategy
    s2.repeats = 2;
    s2.reuse_server = false;
    if let Some(q) = s2.quality.as_mut() {
        // The relaunched servers answer the quality prompts again and are judged against the
        // original sweep's baseline outputs and floor (the re-check's rows carry the verdicts,
        // so a configuration that now derails is not eligible in the re-check either).
        q.reference_dir = Some(dir.display().to_string());
    }
    let one = RunPlan {
        sweep_name: format!("{}-recheck", plan.sweep_name),
        param_keys: plan.param_keys.clone(),
        runs: runs.iter().map(|(r, _)| r.clone()).collect(),
    };
    Ok((s2, one, launches))
}
