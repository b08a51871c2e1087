//! `repeats: auto`: the next round of repeats, for the points whose objective is not yet
//! precise enough.

use crate::plan::expand::RunPlan;
use crate::plan::spec::{AutoRepeats, SweepSpec};
use crate::record::Phase;
use crate::record::QualityStatus;
use crate::record::rows::Row;
use crate::tune::stats::needs_more_repeats;
use crate::tune::work::{Launch, Measurement};

/// The next round's launches. For each configuration, every load point whose repeats are all
/// ok, below `auto.max`, and whose 95% half-width of the objective is still above
/// `auto.precision` × the mean gets one more repeat, on one new server per configuration. A
/// failed repeat ends its point, and so do outputs that failed the quality guard (a
/// `quality_verdict` of `fail` on the rows): neither is eligible anyway.
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
            let label = p.table_label();
            let mine: Vec<&Row> = rows
                .iter()
                .filter(|r| r.run_name() == run.name && r.load_point() == label)
                .filter(|r| !matches!(r.phase(), Phase::Probe | Phase::Preflight))
                .collect();
            let n = mine.len() as u64;
            let ineligible = |r: &&Row| !r.is_ok() || r.quality() == Some(QualityStatus::Fail);
            if n == 0 || n >= auto.max || mine.iter().any(ineligible) {
                continue;
            }
            let values: Vec<f64> = mine.iter().filter_map(|r| r.metric(&o.metric)).collect();
            if needs_more_repeats(&values, auto.precision) {
                let k = mine.iter().filter_map(|r| r.repeat()).max().unwrap_or(n) + 1;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::spec::LoadPoint;
    use crate::tune::testing;

    fn spec() -> SweepSpec {
        testing::spec(
            "configs:\n  - {name: a}\n  - {name: b}\n  - {name: c}\nworkload:\n  vocab_size: 100\n  concurrency: [2, 8]\n  requests: 4\n  input_tokens: 4\n  output_tokens: 4\nobjective:\n  maximize: output_tok_s\nrepeats: auto\nprecision: 0.05\nmax_repeats: 4\n",
        )
    }

    /// Rows of `name` at concurrency `c`: (repeat, status, output tok/s).
    fn rows(name: &str, c: &str, reps: &[(u64, &str, f64)]) -> Vec<Row> {
        reps.iter()
            .map(|(k, status, v)| {
                testing::row(&[
                    ("run_name", name),
                    ("concurrency", c),
                    ("repeat", &k.to_string()),
                    ("status", status),
                    ("phase", "measure"),
                    ("output_tok_s", &v.to_string()),
                ])
            })
            .collect()
    }

    fn ok(values: &[f64]) -> Vec<(u64, &'static str, f64)> {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| (i as u64 + 1, "ok", *v))
            .collect()
    }

    /// A launch of the round: run name, folder, (concurrency, repeat) of each measurement.
    type Planned = (String, String, Vec<(u64, u64)>);

    fn round(rows: &[Row]) -> Vec<Planned> {
        let s = spec();
        let plan = crate::plan::expand::expand(&s);
        let auto = s.auto_repeats.expect("repeats: auto");
        next_round(&s, &plan, rows, auto)
            .into_iter()
            .map(|l| {
                assert_eq!(l.phase, Phase::Measure);
                assert!(l.search.is_none());
                (
                    l.run.name.clone(),
                    l.dir_name.clone(),
                    l.measurements
                        .iter()
                        .map(|m| (m.point.concurrency, m.repeat))
                        .collect(),
                )
            })
            .collect()
    }

    #[test]
    fn a_point_is_repeated_while_its_half_width_is_above_the_precision() {
        // 95, 100, 105: the 95% half-width is t(2) · 5 / √3 = 12.4% of the mean, above 5%
        // (a quarter of it, 3.1%, would be below: the rule uses the whole half-width).
        let mut r = rows("a", "2", &ok(&[95.0, 100.0, 105.0]));
        // 99.9, 100, 100.1: 0.25%, precise enough.
        r.extend(rows("a", "8", &ok(&[99.9, 100.0, 100.1])));
        // Two repeats 1% apart: t(1) = 12.7 makes the half-width 9% of the mean.
        r.extend(rows("b", "2", &ok(&[100.0, 101.0])));
        // Two repeats 0.1% apart: 0.9%, precise enough.
        r.extend(rows("b", "8", &ok(&[100.0, 100.1])));
        assert_eq!(
            round(&r),
            vec![
                ("a".to_string(), "a.r4".to_string(), vec![(2, 4)]),
                ("b".to_string(), "b.r3".to_string(), vec![(2, 3)]),
            ]
        );
    }

    #[test]
    fn the_rule_is_the_95_percent_half_width_against_precision_times_the_mean() {
        // Three repeats whose half-width is 4.3% and 5.8% of the mean: only the second
        // needs a fourth (a rule with a narrower or wider interval would split them
        // differently).
        let sd_for = |rel: f64| rel * 100.0 * 3f64.sqrt() / 4.303;
        let three = |rel: f64| {
            let d = sd_for(rel);
            ok(&[100.0 - d, 100.0, 100.0 + d])
        };
        let mut r = rows("a", "2", &three(0.043));
        r.extend(rows("a", "8", &three(0.058)));
        assert_eq!(
            round(&r),
            vec![("a".to_string(), "a.r4".to_string(), vec![(8, 4)])]
        );
        // Below the mean's sign: the half-width is compared with |mean|.
        let neg: Vec<(u64, &str, f64)> = three(0.043)
            .into_iter()
            .map(|(k, s, v)| (k, s, -v))
            .collect();
        assert_eq!(round(&rows("c", "2", &neg)), vec![]);
    }

    #[test]
    fn the_cap_a_failed_repeat_and_other_phases_end_a_point() {
        let wide = [50.0, 100.0, 150.0, 120.0];
        // At the cap (4): no more, however wide.
        let mut r = rows("a", "2", &ok(&wide));
        // A failed repeat: the point is not eligible anyway.
        r.extend(rows("b", "2", &[(1, "ok", 50.0), (2, "failed", 0.0)]));
        // No row at all: nothing to repeat (the first round has not run).
        assert_eq!(round(&r), vec![]);
        // Probe and pre-flight rows are not repeats of a point: c at 8 is precise on its
        // two measured repeats, whatever a probe or an attempt there measured.
        let precise = rows("c", "8", &ok(&[100.0, 100.01]));
        for phase in ["probe", "preflight"] {
            let mut other = rows("c", "8", &[(3, "ok", 500.0)]);
            other[0].set_cell("phase", phase);
            let mut r = precise.clone();
            r.extend(other);
            assert_eq!(round(&r), vec![], "{phase}");
        }
        // Below the cap the same wide values ask for more.
        assert_eq!(round(&rows("a", "2", &ok(&wide[..3]))).len(), 1);
    }

    #[test]
    fn outputs_failing_the_quality_guard_end_a_point_and_others_do_not() {
        let wide = [50.0, 100.0, 150.0];
        for (verdict, more) in [
            ("fail", 0),
            ("pass", 1),
            ("baseline", 1),
            ("unchecked", 1),
            ("", 1),
        ] {
            let mut r = rows("a", "2", &ok(&wide));
            for x in &mut r {
                x.set_cell("quality_verdict", verdict);
            }
            assert_eq!(round(&r).len(), more, "{verdict:?}");
        }
    }

    #[test]
    fn one_new_server_measures_every_imprecise_point_at_the_next_repeat_index() {
        // a at 2 has repeats 1, 2, 3 (next 4); at 8 repeats 1, 2 (next 3): one launch, both
        // points, as repeat 4 (the highest).
        let mut r = rows("a", "2", &ok(&[90.0, 100.0, 110.0]));
        r.extend(rows("a", "8", &ok(&[90.0, 110.0])));
        assert_eq!(
            round(&r),
            vec![("a".to_string(), "a.r4".to_string(), vec![(2, 4), (8, 4)])]
        );
        // The index follows the highest recorded repeat, not the count of rows.
        let gap = rows("b", "8", &[(1, "ok", 90.0), (5, "ok", 110.0)]);
        assert_eq!(
            round(&gap),
            vec![("b".to_string(), "b.r6".to_string(), vec![(8, 6)])]
        );
    }

    #[test]
    fn open_loop_points_and_no_objective() {
        let s = testing::spec(
            "configs:\n  - {name: a}\nworkload:\n  vocab_size: 100\n  concurrency: 4\n  request_rate: [1.5, 3]\n  requests: 4\n  input_tokens: 4\n  output_tokens: 4\nobjective:\n  maximize: output_tok_s\nrepeats: auto\n",
        );
        let plan = crate::plan::expand::expand(&s);
        let auto = s.auto_repeats.expect("auto");
        let mut r = rows("a", "4", &ok(&[90.0, 110.0]));
        for x in &mut r {
            x.set_cell("request_rate", "1.5");
        }
        let next = next_round(&s, &plan, &r, auto);
        assert_eq!(next.len(), 1);
        assert_eq!(
            next[0].measurements,
            vec![Measurement {
                repeat: 3,
                point: LoadPoint {
                    concurrency: 4,
                    request_rate: Some(1.5)
                }
            }]
        );
        let mut none = s.clone();
        none.objective = None;
        assert!(next_round(&none, &plan, &r, auto).is_empty());
    }
}
