//! Whether a spec's `objective:` names results.csv columns, the right way round. The spec
//! (plan) checks the objective's shape; the column list and each column's direction live here,
//! so these checks run after parsing, before anything launches, and the caller places the
//! error on the offending key (`plan::spec::locate_objective`).

use crate::plan::columns::{Better, Col, Column};
use crate::plan::spec::{Bound, Goal, Objective, ObjectiveKey};

/// The direction of a results.csv column, or None when no such column exists (`param_<key>`
/// columns exist for any key, and have no direction).
fn column_direction(name: &str) -> Option<Better> {
    Col::named(name).map(|c| c.better())
}

/// Columns that stay empty unless `workload.slo` defines a good request.
const GOODPUT: &[&str] = &["goodput_share", "goodput_req_s"];

/// Check every name of the objective against the column list and its direction.
/// `goodput_defined`: the workload has an `slo:` (so the goodput columns are filled).
pub fn check(o: &Objective, goodput_defined: bool) -> Result<(), (ObjectiveKey, String)> {
    let metric_err = |m: String| Err((ObjectiveKey::Metric, format!("objective: {m}")));
    match column_direction(&o.metric) {
        None => return metric_err(unknown(&o.metric)),
        Some(Better::Neither) => {
            return metric_err(format!(
                "`{}` has no better direction (it is an identity, a setting or a state, not a quality): optimize a column marked ↑ or ↓ in `sgtune columns`, such as output_tok_s or ttft_ms_p99",
                o.metric
            ));
        }
        Some(Better::Lower) if o.goal == Goal::Maximize => {
            return metric_err(format!(
                "`maximize: {0}` contradicts the column: lower {0} is better (write `minimize: {0}`)",
                o.metric
            ));
        }
        Some(Better::Higher) if o.goal == Goal::Minimize => {
            return metric_err(format!(
                "`minimize: {0}` contradicts the column: higher {0} is better (write `maximize: {0}`)",
                o.metric
            ));
        }
        Some(_) => {}
    }
    if GOODPUT.contains(&o.metric.as_str()) && !goodput_defined {
        return metric_err(goodput_needs_slo(&o.metric));
    }
    for b in &o.slo {
        let err = |m: String| {
            Err((
                ObjectiveKey::Slo(b.column.clone()),
                format!("objective.slo: {m}"),
            ))
        };
        match (column_direction(&b.column), b.bound) {
            (None, _) => return err(unknown(&b.column)),
            (Some(Better::Neither), _) => {
                return err(format!(
                    "`{}` has no better direction (an identity, a setting or a state), so a bound on it is no service level: bound a latency from above (`ttft_ms_p99: 2000`) or a throughput or goodput from below (`goodput_share: {{min: 0.95}}`)",
                    b.column
                ));
            }
            (Some(Better::Lower), Bound::AtLeast) => {
                return err(format!(
                    "`{0}: {{min: {1}}}` is a lower bound on a column where lower is better: it would turn the best configurations away (write `{0}: {1}`, an upper bound)",
                    b.column, b.limit
                ));
            }
            (Some(Better::Higher), Bound::AtMost) => {
                return err(format!(
                    "`{0}` is an upper bound (a plain number means at most) on a column where higher is better: it would turn the best configurations away (write `{0}: {{min: {1}}}` for at least {1})",
                    b.column, b.limit
                ));
            }
            _ => {}
        }
        if GOODPUT.contains(&b.column.as_str()) && !goodput_defined {
            return err(goodput_needs_slo(&b.column));
        }
    }
    Ok(())
}

fn goodput_needs_slo(column: &str) -> String {
    format!(
        "`{column}` stays empty unless `workload.slo` says what a good request is (e.g. `slo: {{ttft_ms: 500}}` under workload:)"
    )
}

/// "not a column", with the closest column names.
fn unknown(name: &str) -> String {
    let hint = match Column::nearest(name).first() {
        Some(c) => format!("did you mean `{c}`? "),
        None => String::new(),
    };
    format!("`{name}` is not a results.csv column ({hint}`sgtune columns` lists them)")
}

/// An objective for tests (here and in `tune::decision`): `slo` as (column, bound, limit),
/// noise 5%.
#[cfg(test)]
pub(crate) fn test_objective(goal: Goal, metric: &str, slo: &[(&str, Bound, f64)]) -> Objective {
    Objective {
        prune: false,
        goal,
        metric: metric.into(),
        slo: slo
            .iter()
            .map(|(c, b, l)| crate::plan::spec::SloBound {
                column: c.to_string(),
                bound: *b,
                limit: *l,
            })
            .collect(),
        noise: 0.05,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(goal: Goal, metric: &str, slo: &[(&str, Bound, f64)]) -> Objective {
        test_objective(goal, metric, slo)
    }

    fn refused(o: &Objective, goodput: bool) -> (ObjectiveKey, String) {
        match check(o, goodput) {
            Ok(()) => panic!("expected a refusal of {o}"),
            Err(e) => e,
        }
    }

    #[test]
    fn good_objectives_pass() {
        for o in [
            obj(
                Goal::Maximize,
                "output_tok_s",
                &[
                    ("ttft_ms_p99", Bound::AtMost, 2000.0),
                    ("tpot_ms_p99", Bound::AtMost, 100.0),
                ],
            ),
            obj(Goal::Minimize, "ttft_ms_p99", &[]),
            obj(
                Goal::Maximize,
                "goodput_req_s",
                &[("goodput_share", Bound::AtLeast, 0.9)],
            ),
        ] {
            assert_eq!(check(&o, true), Ok(()), "{o}");
        }
    }

    #[test]
    fn unknown_columns_are_named_with_a_suggestion() {
        let (key, m) = refused(&obj(Goal::Maximize, "output_tokps", &[]), true);
        assert_eq!(key, ObjectiveKey::Metric);
        assert!(
            m.contains("`output_tokps` is not a results.csv column"),
            "{m}"
        );
        assert!(m.contains("did you mean `output_tok_s`?"), "{m}");
        let (key, m) = refused(
            &obj(
                Goal::Maximize,
                "output_tok_s",
                &[("ttft_p99", Bound::AtMost, 1.0)],
            ),
            true,
        );
        assert_eq!(key, ObjectiveKey::Slo("ttft_p99".into()));
        assert!(m.starts_with("objective.slo: `ttft_p99` is not"), "{m}");
        let (_, m) = refused(&obj(Goal::Maximize, "zzzzzzzzzzzz", &[]), true);
        assert!(!m.contains("did you mean"), "{m}");
    }

    #[test]
    fn contradictions_and_directionless_columns_are_refused() {
        let (_, m) = refused(&obj(Goal::Maximize, "ttft_ms_p99", &[]), true);
        assert!(m.contains("write `minimize: ttft_ms_p99`"), "{m}");
        let (_, m) = refused(&obj(Goal::Minimize, "output_tok_s", &[]), true);
        assert!(m.contains("write `maximize: output_tok_s`"), "{m}");
        let (_, m) = refused(&obj(Goal::Maximize, "max_total_num_tokens", &[]), true);
        assert!(m.contains("no better direction"), "{m}");
        let (_, m) = refused(&obj(Goal::Maximize, "param_tp_size", &[]), true);
        assert!(m.contains("no better direction"), "{m}");
        for (column, bound, says) in [
            ("ttft_ms_p99", Bound::AtLeast, "write `ttft_ms_p99: 5`"),
            (
                "goodput_share",
                Bound::AtMost,
                "write `goodput_share: {min: 5}`",
            ),
            ("token_usage_max", Bound::AtMost, "no better direction"),
        ] {
            let (key, m) = refused(
                &obj(Goal::Maximize, "output_tok_s", &[(column, bound, 5.0)]),
                true,
            );
            assert_eq!(key, ObjectiveKey::Slo(column.into()));
            assert!(m.contains(says), "{m}");
        }
    }

    #[test]
    fn goodput_needs_a_workload_slo() {
        let (key, m) = refused(&obj(Goal::Maximize, "goodput_req_s", &[]), false);
        assert_eq!(key, ObjectiveKey::Metric);
        assert!(m.contains("workload.slo"), "{m}");
        let (key, _) = refused(
            &obj(
                Goal::Maximize,
                "output_tok_s",
                &[("goodput_share", Bound::AtLeast, 0.9)],
            ),
            false,
        );
        assert_eq!(key, ObjectiveKey::Slo("goodput_share".into()));
    }

    #[test]
    fn edit_distance() {
        assert_eq!(crate::util::edit_distance("kitten", "sitting"), 3);
        assert_eq!(crate::util::edit_distance("", "ab"), 2);
        assert_eq!(crate::util::edit_distance("same", "same"), 0);
    }
}
