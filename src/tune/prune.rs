//! `objective.prune`: successive halving. Every configuration is measured first at the lowest
//! load point; those the leader clearly beats there (their margin separates from zero) skip
//! the other load points, with the evidence in their `pruned` rows.

use crate::plan::spec::{self, LoadPoint, SweepSpec};
use crate::record::rows::Row;
use crate::tune::decision::{self, Standing};
use crate::tune::work::Launch;

/// The load point every configuration is measured at first (the lowest load), when pruning is
/// on and there are other points to save.
pub fn first_point(spec: &SweepSpec) -> Option<LoadPoint> {
    let o = spec.objective.as_ref()?;
    if !o.prune || spec.workload.load_points.len() < 2 || spec.search.max_load.is_some() {
        return None;
    }
    spec.workload.load_points.iter().copied().min_by(|a, b| {
        a.request_rate
            .unwrap_or(0.0)
            .total_cmp(&b.request_rate.unwrap_or(0.0))
            .then(a.concurrency.cmp(&b.concurrency))
    })
}

/// The first round: each launch with only its measurements at `point`.
pub fn first_round(launches: &[Launch], point: LoadPoint) -> Vec<Launch> {
    launches
        .iter()
        .filter_map(|l| {
            let mut l = l.clone();
            l.measurements.retain(|m| m.point == point);
            (!l.measurements.is_empty()).then_some(l)
        })
        .collect()
}

/// What pruning decided after the first round.
#[derive(Debug, Clone, Default)]
pub struct Pruned {
    /// Launches for the remaining load points of the configurations not clearly beaten.
    pub rest: Vec<Launch>,
    /// Launches (remaining load points) of the configurations clearly beaten, each with the
    /// reason its rows carry.
    pub beaten: Vec<(Launch, String)>,
    /// How many configurations were judged at the first point.
    pub judged: usize,
}

/// Decide at `lowest` from the rows recorded there, and split the remaining measurements.
pub fn prune(spec: &SweepSpec, launches: &[Launch], rows: &[Row], lowest: LoadPoint) -> Pruned {
    let Some(o) = &spec.objective else {
        return Pruned::default();
    };
    let label = match lowest.request_rate {
        Some(r) => format!("{}/s", spec::rate_text(Some(r))),
        None => lowest.concurrency.to_string(),
    };
    let at: Vec<&Row> = rows
        .iter()
        .filter(|r| r.load_point() == label && r.get("phase") != "preflight")
        .collect();
    let d = decision::decide_rows(o, &lowest.to_string(), &at, &Default::default());
    let beaten: Vec<(String, String)> = d
        .configurations
        .iter()
        .filter(|c| c.standing == Standing::Behind)
        .map(|c| {
            let m = c
                .margin
                .as_ref()
                .map(decision::margin_text)
                .unwrap_or_default();
            (
                c.run_name.clone(),
                format!(
                    "pruned: at {} it was clearly beaten by {} on {}, by {m}",
                    lowest,
                    d.leader.clone().unwrap_or_default(),
                    o.metric
                ),
            )
        })
        .collect();
    let mut out = Pruned {
        judged: d.configurations.len(),
        ..Pruned::default()
    };
    for l in launches {
        let mut l = l.clone();
        l.measurements.retain(|m| m.point != lowest);
        if l.measurements.is_empty() {
            continue;
        }
        match beaten.iter().find(|(n, _)| *n == l.run.name) {
            Some((_, why)) => out.beaten.push((l, why.clone())),
            None => out.rest.push(l),
        }
    }
    out
}
