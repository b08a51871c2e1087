//! `objective.prune`: successive halving. Every configuration is measured first at the lowest
//! load point; those the leader beats there beyond noise skip the other load points, with the
//! evidence in their `pruned` rows.
//!
//! Pruning drops contenders, so it keeps its error rate as a family: among configurations
//! that are truly equal, none is pruned in more than 5% of sweeps. Two things make that hold
//! (issue 24): it prunes only on noise the sweep measured (repeats at the first point, or
//! configurations measured alike), never on `objective.noise`'s threshold (on one repeat of
//! four equal configurations at 5% noise, the threshold pruned one in most sweeps); and each
//! margin's interval is at the Bonferroni level over every pair of eligible configurations,
//! since the leader (the best) is compared with the worst, the pair most apart by chance.
//!
//! With the quality guard (`quality:`) the caller puts the verdicts of the first round's
//! launches into the rows first: a configuration whose outputs fail cannot lead (a leader that
//! is not eligible would prune the configurations that could win) and is pruned itself, since
//! no load point can make it eligible again. One that is only unchecked is left to run on.

use crate::plan::spec::{LoadPoint, Objective, SweepSpec};
use crate::record::Phase;
use crate::record::QualityStatus;
use crate::record::rows::Row;
use crate::tune::decision::{self, PointDecision, Standing};
use crate::tune::stats;
use crate::tune::work::Launch;

/// The family-wise confidence of pruning: at most this share of sweeps of equal
/// configurations prunes any of them.
pub const FAMILY_CONFIDENCE: f64 = 0.95;

/// The load point every configuration is measured at first (the lowest load), when pruning is
/// on, there are other points to save, and the first round can decide something: it measures
/// the noise (two or more repeats, or `repeats: auto`) or the quality guard judges outputs.
/// With one repeat and no guard it could prune nothing, and splitting would cost a launch per
/// configuration for nothing.
pub fn first_point(spec: &SweepSpec) -> Option<LoadPoint> {
    let o = spec.objective.as_ref()?;
    if !o.prune || spec.workload.load_points.len() < 2 || spec.search.max_load.is_some() {
        return None;
    }
    if !can_measure_noise(spec) && spec.quality.is_none() {
        return None;
    }
    spec.workload.load_points.iter().copied().min_by(|a, b| {
        a.request_rate
            .unwrap_or(0.0)
            .total_cmp(&b.request_rate.unwrap_or(0.0))
            .then(a.concurrency.cmp(&b.concurrency))
    })
}

/// Whether the first round has repeats to measure the noise with.
pub fn can_measure_noise(spec: &SweepSpec) -> bool {
    spec.repeats >= 2 || spec.auto_repeats.is_some()
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
    /// Those of `beaten` pruned because their outputs failed the quality guard.
    pub quality_failed: Vec<String>,
    /// The first round measured no noise, so nothing was pruned on the objective.
    pub no_noise: bool,
}

/// The configurations the leader of `d` (a decision at the first point) beats on the
/// objective beyond noise at the family level: each with the reason its rows carry. None
/// without measured noise. `at`: the point, in words.
pub fn beaten_on_speed(o: &Objective, d: &PointDecision, at: &str) -> Vec<(String, String)> {
    // Every pair of eligible configurations is a comparison that could prune by chance.
    let eligible = d.configurations.iter().filter(|c| c.rank.is_some()).count();
    let pairs = (eligible * eligible.saturating_sub(1) / 2).max(1);
    let level = 1.0 - (1.0 - FAMILY_CONFIDENCE) / pairs as f64;
    let leader = d
        .configurations
        .iter()
        .find(|c| Some(&c.run_name) == d.leader.as_ref())
        .and_then(|c| c.estimate.as_ref());
    let (Some(noise), Some(lead)) = (d.noise, leader) else {
        return Vec::new();
    };
    d.configurations
        .iter()
        .filter(|c| c.rank.is_some() && Some(&c.run_name) != d.leader.as_ref())
        .filter_map(|c| {
            let m = stats::margin_at(level, o.goal, lead, c.estimate.as_ref()?, Some(noise), o.noise);
            m.separated.then(|| {
                (
                    c.run_name.clone(),
                    format!(
                        "pruned: at {at} it was clearly beaten by {} on {}, by {} at {} confidence, {pairs} pair(s) of configurations compared",
                        d.leader.clone().unwrap_or_default(),
                        o.metric,
                        decision::margin_text(&m),
                        decision::level_text(level),
                    ),
                )
            })
        })
        .collect()
}

/// Decide at `lowest` from the rows recorded there, and split the remaining measurements.
pub fn prune(spec: &SweepSpec, launches: &[Launch], rows: &[Row], lowest: LoadPoint) -> Pruned {
    let Some(o) = &spec.objective else {
        return Pruned::default();
    };
    let label = lowest.table_label();
    let at: Vec<&Row> = rows
        .iter()
        .filter(|r| r.load_point() == label && r.phase() != Phase::Preflight)
        .collect();
    let d = decision::decide_rows(o, &lowest.to_string(), &at, &Default::default());
    let beaten = beaten_on_speed(o, &d, &lowest.to_string());
    // Failed the quality guard at the first round: not eligible at any point.
    let beaten: Vec<(String, String)> = beaten
        .into_iter()
        .chain(
            d.configurations
                .iter()
                .filter(|c| c.standing == Standing::QualityFailed)
                .filter(|c| {
                    at.iter().any(|r| {
                        r.run_name() == c.run_name && r.quality() == Some(QualityStatus::Fail)
                    })
                })
                .map(|c| {
                    (
                        c.run_name.clone(),
                        format!("pruned: at {lowest} its {}", c.why),
                    )
                }),
        )
        .collect();
    let mut out = Pruned {
        judged: d.configurations.len(),
        no_noise: d.noise.is_none(),
        quality_failed: d
            .configurations
            .iter()
            .filter(|c| c.standing == Standing::QualityFailed)
            .filter(|c| beaten.iter().any(|(n, _)| *n == c.run_name))
            .map(|c| c.run_name.clone())
            .collect(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::rows::Col;
    use crate::tune::testing;

    /// Three configurations at `points` (YAML list under `workload:`), two repeats, pruning on.
    fn spec(points: &str) -> SweepSpec {
        testing::spec(&format!(
            "repeats: 2\nreuse_server: true\nconfigs:\n  - {{name: fast}}\n  - {{name: close}}\n  - {{name: beaten}}\nworkload:\n  vocab_size: 100\n{points}  requests: 4\n  input_tokens: 4\n  output_tokens: 4\nobjective:\n  maximize: output_tok_s\n  prune: true\n"
        ))
    }

    fn launches(s: &SweepSpec) -> Vec<Launch> {
        let plan = crate::plan::expand::expand(s);
        crate::tune::work::plan_launches(s, &plan, &|_, _| false, &|_| Vec::new())
    }

    /// One measured row per value (repeats 1, 2, ...).
    fn rows(name: &str, point: (&str, &str), phase: &str, values: &[f64]) -> Vec<Row> {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                testing::row(&[
                    ("run_name", name),
                    ("status", "ok"),
                    ("phase", phase),
                    ("concurrency", point.0),
                    ("request_rate", point.1),
                    ("repeat", &(i + 1).to_string()),
                    ("output_tok_s", &v.to_string()),
                ])
            })
            .collect()
    }

    const LOWEST: LoadPoint = LoadPoint {
        concurrency: 2,
        request_rate: None,
    };

    /// The leader at 1,000 tok/s; `close` 0.5% behind (within noise); `beaten` 7% behind
    /// with tight repeats (clearly beaten, though by little).
    fn first_round_rows() -> Vec<Row> {
        let at = ("2", "");
        let mut r = rows("fast", at, "measure", &[990.0, 1000.0, 1010.0]);
        r.extend(rows("close", at, "measure", &[985.0, 995.0, 1005.0]));
        r.extend(rows("beaten", at, "measure", &[928.0, 930.0, 932.0]));
        r
    }

    #[test]
    fn only_the_clearly_beaten_are_pruned_not_those_within_noise() {
        let s = spec("  concurrency: [8, 2, 16]\n");
        let all = launches(&s);
        let p = prune(&s, &all, &first_round_rows(), LOWEST);
        assert_eq!(p.judged, 3);
        let rest: Vec<&str> = p.rest.iter().map(|l| l.run.name.as_str()).collect();
        assert_eq!(rest, ["fast", "close"], "within noise is not pruned");
        assert_eq!(p.beaten.len(), 1);
        let (l, why) = &p.beaten[0];
        assert_eq!(l.run.name, "beaten");
        assert!(
            why.starts_with(
                "pruned: at concurrency 2 it was clearly beaten by fast on output_tok_s, by 70"
            ),
            "{why}"
        );
        // The launches left hold the other points only.
        for l in p.rest.iter().chain(p.beaten.iter().map(|(l, _)| l)) {
            let points: Vec<u64> = l.measurements.iter().map(|m| m.point.concurrency).collect();
            assert_eq!(points, [8, 16, 8, 16], "{}: two repeats each", l.run.name);
        }
    }

    /// Single repeats measure no noise: a 6% lead over a configuration is no evidence at 5%
    /// noise (the threshold pruned an equal configuration in most sweeps), so nothing is
    /// pruned on speed, and the result says why.
    #[test]
    fn without_measured_noise_nothing_is_pruned_on_speed() {
        let s = spec("  concurrency: [2, 8]\n");
        let mut r = rows("fast", ("2", ""), "measure", &[1000.0]);
        r.extend(rows("close", ("2", ""), "measure", &[960.0]));
        r.extend(rows("beaten", ("2", ""), "measure", &[500.0]));
        let p = prune(&s, &launches(&s), &r, LOWEST);
        let rest: Vec<&str> = p.rest.iter().map(|l| l.run.name.as_str()).collect();
        assert_eq!(rest, ["fast", "close", "beaten"]);
        assert!(p.beaten.is_empty() && p.no_noise && p.judged == 3);
        // The same values measured twice alike: noise measured, the far one pruned.
        let mut r2 = r.clone();
        r2.extend(rows("fast", ("2", ""), "measure", &[1000.0, 1010.0]));
        r2.extend(rows("close", ("2", ""), "measure", &[1005.0, 995.0]));
        r2.extend(rows("beaten", ("2", ""), "measure", &[500.0, 505.0]));
        let p = prune(&s, &launches(&s), &r2, LOWEST);
        let beaten: Vec<&str> = p.beaten.iter().map(|(l, _)| l.run.name.as_str()).collect();
        assert_eq!(beaten, ["beaten"]);
        assert!(!p.no_noise);
    }

    /// The margin is held at the Bonferroni level over every pair of eligible configurations:
    /// 3 configurations, 3 pairs, 98.33%. A lead that separates at 95% but not there is kept.
    #[test]
    fn the_margin_is_held_at_the_family_level() {
        let s = spec("  concurrency: [2, 8]\n");
        let at = ("2", "");
        // CV 1% everywhere; `beaten` 2.6% behind the leader.
        let mut r = rows("fast", at, "measure", &[990.0, 1000.0, 1010.0]);
        r.extend(rows("close", at, "measure", &[985.0, 995.0, 1005.0]));
        r.extend(rows("beaten", at, "measure", &[964.0, 974.0, 984.0]));
        let refs: Vec<&Row> = r.iter().collect();
        let o = s.objective.clone().expect("objective");
        let d = decision::decide_rows(&o, "2", &refs, &Default::default());
        let beaten_95 = d
            .configurations
            .iter()
            .find(|c| c.run_name == "beaten")
            .and_then(|c| c.margin.clone())
            .expect("a margin");
        assert!(beaten_95.separated, "separates at 95%: {beaten_95:?}");
        let p = prune(&s, &launches(&s), &r, LOWEST);
        assert!(p.beaten.is_empty(), "{:?}", p.beaten);
        // Further behind, it is pruned, and the reason names the level and the pairs.
        let mut far = r.clone();
        for x in &mut far {
            if x.run_name() == "beaten" {
                let v = x.metric(&Col::OUTPUT_TOK_S).expect("value") - 30.0;
                x.set_cell("output_tok_s", v.to_string());
            }
        }
        let p = prune(&s, &launches(&s), &far, LOWEST);
        assert_eq!(p.beaten.len(), 1);
        assert!(
            p.beaten[0].1.contains("98.33% CI")
                && p.beaten[0]
                    .1
                    .ends_with("at 98.33% confidence, 3 pair(s) of configurations compared"),
            "{}",
            p.beaten[0].1
        );
        assert_eq!(FAMILY_CONFIDENCE, 0.95);
    }

    #[test]
    fn pruning_judges_only_the_lowest_point_and_no_preflight_rows() {
        let s = spec("  concurrency: [2, 8]\n");
        let mut r = first_round_rows();
        // At 8 `close` collapsed, and a pre-flight attempt at 2 was far faster than anyone:
        // neither counts at the first round.
        r.extend(rows("close", ("8", ""), "measure", &[10.0, 11.0, 12.0]));
        r.extend(rows(
            "fast",
            ("8", ""),
            "measure",
            &[2000.0, 2001.0, 2002.0],
        ));
        r.extend(rows("preflight-mfs0.9", ("2", ""), "preflight", &[5000.0]));
        let p = prune(&s, &launches(&s), &r, LOWEST);
        assert_eq!(p.judged, 3);
        let beaten: Vec<&str> = p.beaten.iter().map(|(l, _)| l.run.name.as_str()).collect();
        assert_eq!(beaten, ["beaten"]);
        // Without an objective nothing is pruned.
        let mut none = s.clone();
        none.objective = None;
        let p = prune(&none, &launches(&s), &r, LOWEST);
        assert!(p.rest.is_empty() && p.beaten.is_empty() && p.judged == 0);
    }

    /// The quality guard's verdicts on the first round's rows: the fastest fails, so the next
    /// leads and prunes by its own margin; the failing one is pruned with the guard's evidence;
    /// an unchecked one (its comparison may still come) neither leads nor is pruned.
    #[test]
    fn a_configuration_failing_the_quality_guard_neither_leads_nor_runs_on() {
        let s = testing::spec(
            "configs:\n  - {name: derails}\n  - {name: fast}\n  - {name: beaten}\n  - {name: unknown}\nworkload:\n  vocab_size: 100\n  concurrency: [2, 8]\n  requests: 4\n  input_tokens: 4\n  output_tokens: 4\nobjective:\n  maximize: output_tok_s\n  prune: true\n",
        );
        let mut r = rows("derails", ("2", ""), "measure", &[3000.0, 3001.0, 3002.0]);
        r.extend(first_round_rows());
        r.retain(|x| x.run_name() != "close");
        r.extend(rows(
            "unknown",
            ("2", ""),
            "measure",
            &[9000.0, 9001.0, 9002.0],
        ));
        for x in &mut r {
            let (v, e) = match x.run_name() {
                "derails" => ("fail", "derails 24% of prompts decisively (48/200)"),
                "unknown" => ("unchecked", "quality unchecked: no quality outputs"),
                _ => ("pass", "diverges 0% of prompts decisively (0/200)"),
            };
            x.set_cell("quality_verdict", v);
            x.set_cell("quality_evidence", e);
        }
        let p = prune(&s, &launches(&s), &r, LOWEST);
        let rest: Vec<&str> = p.rest.iter().map(|l| l.run.name.as_str()).collect();
        assert_eq!(rest, ["fast", "unknown"]);
        let beaten: Vec<(&str, &str)> = p
            .beaten
            .iter()
            .map(|(l, w)| (l.run.name.as_str(), w.as_str()))
            .collect();
        assert_eq!(beaten.len(), 2, "{beaten:?}");
        assert_eq!(p.quality_failed, ["derails"]);
        assert_eq!(
            beaten[0],
            (
                "derails",
                "pruned: at concurrency 2 its output quality fail: derails 24% of prompts decisively (48/200)"
            )
        );
        assert!(
            beaten[1].0 == "beaten" && beaten[1].1.contains("clearly beaten by fast"),
            "{beaten:?}"
        );
        // Without verdicts (no guard) the fastest leads and prunes the rest as before.
        for x in &mut r {
            x.remove_cell("quality_verdict");
        }
        let p = prune(&s, &launches(&s), &r, LOWEST);
        let rest: Vec<&str> = p.rest.iter().map(|l| l.run.name.as_str()).collect();
        assert_eq!(rest, ["unknown"]);
    }

    #[test]
    fn open_loop_points_are_pruned_by_their_rate() {
        let s = spec("  concurrency: 4\n  request_rate: [4, 1]\n");
        let lowest = first_point(&s).expect("a first point");
        assert_eq!(
            lowest,
            LoadPoint {
                concurrency: 4,
                request_rate: Some(1.0)
            }
        );
        let at = ("4", "1");
        let mut r = rows("fast", at, "measure", &[1000.0, 1010.0]);
        r.extend(rows("close", at, "measure", &[990.0, 1000.0]));
        r.extend(rows("beaten", at, "measure", &[500.0, 505.0]));
        r.extend(rows("fast", ("4", "4"), "measure", &[1.0]));
        let p = prune(&s, &launches(&s), &r, lowest);
        assert_eq!(p.judged, 3);
        let beaten: Vec<&str> = p.beaten.iter().map(|(l, _)| l.run.name.as_str()).collect();
        assert_eq!(beaten, ["beaten"]);
        assert!(
            p.beaten[0].1.contains("at request rate 1/s"),
            "{}",
            p.beaten[0].1
        );
        let rates: Vec<Option<f64>> = p.rest[0]
            .measurements
            .iter()
            .map(|m| m.point.request_rate)
            .collect();
        assert_eq!(rates, [Some(4.0), Some(4.0)], "two repeats");
    }

    #[test]
    fn the_first_point_is_the_lowest_load_when_pruning_can_save_anything() {
        let s = spec("  concurrency: [8, 2, 16]\n");
        assert_eq!(first_point(&s), Some(LOWEST));
        let mut off = s.clone();
        if let Some(o) = off.objective.as_mut() {
            o.prune = false;
        }
        assert_eq!(first_point(&off), None);
        let mut no_objective = s.clone();
        no_objective.objective = None;
        assert_eq!(first_point(&no_objective), None);
        assert_eq!(first_point(&spec("  concurrency: 2\n")), None, "one point");
        // One repeat and no quality guard: the first round could prune nothing.
        let mut once = s.clone();
        once.repeats = 1;
        assert_eq!(first_point(&once), None);
        let mut auto = once.clone();
        auto.auto_repeats = Some(crate::plan::spec::AutoRepeats {
            precision: 0.05,
            max: 5,
        });
        assert_eq!(
            first_point(&auto),
            Some(LOWEST),
            "repeats: auto measures noise"
        );
        let guarded = testing::spec(
            "configs:\n  - {name: fast}\n  - {name: close}\nworkload:\n  vocab_size: 100\n  concurrency: [8, 2]\n  requests: 4\n  input_tokens: 4\n  output_tokens: 4\nobjective:\n  maximize: output_tok_s\n  prune: true\nquality:\n  baseline: fast\n",
        );
        assert_eq!(first_point(&guarded), Some(LOWEST), "the guard can prune");
        let mut searched = s.clone();
        searched.search.max_load = Some(crate::plan::search::MaxLoad {
            axis: crate::plan::search::Axis::Concurrency,
            range: crate::plan::search::Range {
                from: 1.0,
                to: 8.0,
                resolution: 1.0,
            },
            repeats: 1,
        });
        assert_eq!(
            first_point(&searched),
            None,
            "the search picks its own loads"
        );
    }

    #[test]
    fn the_first_round_measures_only_the_first_point() {
        let mut s = spec("  concurrency: [2, 8]\n");
        s.repeats = 2;
        s.reuse_server = true;
        let all = launches(&s);
        let first = first_round(&all, LOWEST);
        assert_eq!(first.len(), 3);
        for l in &first {
            let m: Vec<(u64, u64)> = l
                .measurements
                .iter()
                .map(|m| (m.point.concurrency, m.repeat))
                .collect();
            assert_eq!(m, [(2, 1), (2, 2)], "{}", l.run.name);
        }
        let none = first_round(
            &all,
            LoadPoint {
                concurrency: 99,
                request_rate: None,
            },
        );
        assert!(
            none.is_empty(),
            "a launch with nothing at the point is left out"
        );
    }
}
