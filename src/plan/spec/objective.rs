//! `objective:`: the column the decision ranks by and the SLO bounds a winner must hold, each
//! resolved to its results.csv column (`plan::columns`) as the spec is read: a name that is no
//! column, or one the goal or bound contradicts, is an error placed on the name.

use crate::plan::columns::{Better, Col, Column};
use crate::plan::keyed::{tag_key, tag_key_name};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::fmt;

/// `objective: {maximize: output_tok_s, slo: {ttft_ms_p99: 2000}}`: the column the decision
/// ranks configurations by, and the bounds a configuration must meet to be eligible. Read,
/// each name is a column with a direction, the goal's for the metric and the bound's for each
/// SLO column (the goodput columns' need of `workload.slo` is `checks`'); written (plan.json,
/// decision.json), each column is its name.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Objective {
    pub goal: Goal,
    /// A results.csv column with a direction: the goal's.
    pub metric: Col,
    /// Every bound, in the order written.
    pub slo: Vec<SloBound>,
    /// Relative margin that counts as within noise when the sweep measured no noise (no
    /// repeats: no interval, and no winner is claimed either way).
    pub noise: f64,
    /// Successive halving: after every configuration is measured at the lowest load point,
    /// the ones clearly beaten there (their margin separates) skip the other points.
    pub prune: bool,
}

/// Which way the objective's column should go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Goal {
    Maximize,
    Minimize,
}

impl Goal {
    pub fn as_str(self) -> &'static str {
        match self {
            Goal::Maximize => "maximize",
            Goal::Minimize => "minimize",
        }
    }
}

/// One SLO bound on a results.csv column, judged on the median of a configuration's repeats.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SloBound {
    /// A results.csv column the bound's direction improves away from.
    pub column: Col,
    pub bound: Bound,
    pub limit: f64,
}

/// `at_most`: `column: 2000` or `column: {max: 2000}`; `at_least`: `column: {min: 0.9}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    AtMost,
    AtLeast,
}

impl Bound {
    pub fn symbol(self) -> &'static str {
        match self {
            Bound::AtMost => "≤",
            Bound::AtLeast => "≥",
        }
    }
    /// Whether `value` meets a bound of `limit`.
    pub fn holds(self, value: f64, limit: f64) -> bool {
        match self {
            Bound::AtMost => value <= limit,
            Bound::AtLeast => value >= limit,
        }
    }
}

impl fmt::Display for SloBound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.column, self.bound.symbol(), self.limit)
    }
}

impl fmt::Display for Objective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.goal.as_str(), self.metric)?;
        if !self.slo.is_empty() {
            let bounds: Vec<String> = self.slo.iter().map(SloBound::to_string).collect();
            write!(f, " subject to {}", bounds.join(", "))?;
        }
        Ok(())
    }
}

/// The default `objective.noise`: compare's default threshold.
pub const DEFAULT_NOISE: f64 = 0.05;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawObjective {
    #[serde(default)]
    maximize: Option<String>,
    #[serde(default)]
    minimize: Option<String>,
    #[serde(default)]
    slo: Option<SloMap>,
    #[serde(default)]
    noise: Option<f64>,
    #[serde(default)]
    prune: bool,
}

impl<'de> Deserialize<'de> for Objective {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let r = RawObjective::deserialize(d)?;
        let (goal, metric) = match (r.maximize, r.minimize) {
            (Some(m), None) => (Goal::Maximize, m),
            (None, Some(m)) => (Goal::Minimize, m),
            (Some(_), Some(_)) => {
                return Err(de::Error::custom(tag_key(
                    "objective.minimize",
                    "objective: give `maximize` or `minimize`, not both",
                )));
            }
            (None, None) => {
                return Err(de::Error::custom(tag_key(
                    "objective",
                    "objective: give `maximize: COLUMN` or `minimize: COLUMN` (a results.csv column, e.g. output_tok_s)",
                )));
            }
        };
        if metric.trim().is_empty() {
            return Err(de::Error::custom(tag_key(
                &format!("objective.{}", goal.as_str()),
                "objective: name a results.csv column",
            )));
        }
        let noise = r.noise.unwrap_or(DEFAULT_NOISE);
        if !(noise.is_finite() && noise > 0.0 && noise < 1.0) {
            return Err(de::Error::custom(tag_key(
                "objective.noise",
                &format!(
                    "objective.noise must be a fraction in (0, 1), e.g. 0.05 for 5%; got {noise}"
                ),
            )));
        }
        // The names, once the section's shape holds: the metric, then each bound in order.
        let metric = metric_column(goal, &metric).map_err(|m| {
            de::Error::custom(tag_key(
                &format!("objective.{}", goal.as_str()),
                &format!("objective: {m}"),
            ))
        })?;
        let mut slo = Vec::new();
        for (name, bound, limit) in r.slo.map(|s| s.0).unwrap_or_default() {
            let column = slo_column(&name, bound, limit).map_err(|m| {
                de::Error::custom(tag_key_name(
                    &format!("objective.slo.{name}"),
                    &format!("objective.slo: {m}"),
                ))
            })?;
            slo.push(SloBound {
                column,
                bound,
                limit,
            });
        }
        Ok(Objective {
            goal,
            metric,
            slo,
            noise,
            prune: r.prune,
        })
    }
}

/// The column `maximize:` or `minimize:` names, when it has a direction and it is the goal's.
fn metric_column(goal: Goal, name: &str) -> Result<Col, String> {
    let col = Col::named(name).ok_or_else(|| unknown(name))?;
    match (col.better(), goal) {
        (Better::Neither, _) => Err(format!(
            "`{name}` has no better direction (it is an identity, a setting or a state, not a quality): optimize a column marked ↑ or ↓ in `sgtune columns`, such as output_tok_s or ttft_ms_p99"
        )),
        (Better::Lower, Goal::Maximize) => Err(format!(
            "`maximize: {name}` contradicts the column: lower {name} is better (write `minimize: {name}`)"
        )),
        (Better::Higher, Goal::Minimize) => Err(format!(
            "`minimize: {name}` contradicts the column: higher {name} is better (write `maximize: {name}`)"
        )),
        _ => Ok(col),
    }
}

/// The column an SLO bound names, when it has a direction and the bound holds the column from
/// its worse side.
fn slo_column(name: &str, bound: Bound, limit: f64) -> Result<Col, String> {
    let col = Col::named(name).ok_or_else(|| unknown(name))?;
    match (col.better(), bound) {
        (Better::Neither, _) => Err(format!(
            "`{name}` has no better direction (an identity, a setting or a state), so a bound on it is no service level: bound a latency from above (`ttft_ms_p99: 2000`) or a throughput or goodput from below (`goodput_share: {{min: 0.95}}`)"
        )),
        (Better::Lower, Bound::AtLeast) => Err(format!(
            "`{name}: {{min: {limit}}}` is a lower bound on a column where lower is better: it would turn the best configurations away (write `{name}: {limit}`, an upper bound)"
        )),
        (Better::Higher, Bound::AtMost) => Err(format!(
            "`{name}` is an upper bound (a plain number means at most) on a column where higher is better: it would turn the best configurations away (write `{name}: {{min: {limit}}}` for at least {limit})"
        )),
        _ => Ok(col),
    }
}

/// "not a column", with the closest column names.
fn unknown(name: &str) -> String {
    let hint = match Column::nearest(name).first() {
        Some(c) => format!("did you mean `{c}`? "),
        None => String::new(),
    };
    format!("`{name}` is not a results.csv column ({hint}`sgtune columns` lists them)")
}

/// `slo:` under `objective:`: column name → bound, in the order written (the names are
/// resolved to columns once the whole objective is read).
struct SloMap(Vec<(String, Bound, f64)>);

impl<'de> Deserialize<'de> for SloMap {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SloMap;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a mapping of results.csv column to bound, e.g. `{ttft_ms_p99: 2000, goodput_share: {min: 0.95}}`",
                )
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SloMap, A::Error> {
                let mut out: Vec<(String, Bound, f64)> = Vec::new();
                while let Some(column) = map.next_key::<String>()? {
                    if out.iter().any(|(c, _, _)| *c == column) {
                        return Err(de::Error::custom(format!("`{column}` is given twice")));
                    }
                    let (bound, limit) = map.next_value_seed(SloValueSeed { column: &column })?;
                    out.push((column, bound, limit));
                }
                if out.is_empty() {
                    return Err(de::Error::custom(
                        "objective.slo is empty: give at least one bound, or leave `slo` out",
                    ));
                }
                Ok(SloMap(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// One SLO bound: a number (at most), or `{max: N}` / `{min: N}`.
struct SloValueSeed<'a> {
    column: &'a str,
}

impl<'de> de::DeserializeSeed<'de> for SloValueSeed<'_> {
    type Value = (Bound, f64);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(Bound, f64), D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Explicit {
            #[serde(default)]
            max: Option<f64>,
            #[serde(default)]
            min: Option<f64>,
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(f64),
            Explicit(Explicit),
        }
        let column = self.column;
        let bad = |m: String| de::Error::custom(tag_key(column, &m));
        let raw = Raw::deserialize(d).map_err(|_| {
            bad(format!(
                "`{column}`: expected a number (an upper bound), or {{max: N}} or {{min: N}}"
            ))
        })?;
        let (bound, limit) = match raw {
            Raw::Number(v) => (Bound::AtMost, v),
            Raw::Explicit(Explicit {
                max: Some(v),
                min: None,
            }) => (Bound::AtMost, v),
            Raw::Explicit(Explicit {
                max: None,
                min: Some(v),
            }) => (Bound::AtLeast, v),
            Raw::Explicit(_) => {
                return Err(bad(format!(
                    "`{column}`: give one bound, {{max: N}} or {{min: N}}"
                )));
            }
        };
        if !(limit.is_finite() && limit > 0.0) {
            return Err(bad(format!(
                "`{column}`: the bound must be a number > 0, got {limit}"
            )));
        }
        Ok((bound, limit))
    }
}

/// Objectives built in tests (tune's, report's and cmd's): a spec's objective is typed as the
/// spec is read, so a test that wants one without a spec builds it here.
#[cfg(test)]
impl Objective {
    /// An objective for tests: `slo` as (column, bound, limit), noise 5%. The names are
    /// results.csv columns (a test that names another one is wrong, and panics).
    pub(crate) fn for_test(goal: Goal, metric: &str, slo: &[(&str, Bound, f64)]) -> Objective {
        let col = |name: &str| Col::named(name).unwrap_or_else(|| panic!("`{name}` is no column"));
        Objective {
            prune: false,
            goal,
            metric: col(metric),
            slo: slo
                .iter()
                .map(|(c, b, l)| SloBound {
                    column: col(c),
                    bound: *b,
                    limit: *l,
                })
                .collect(),
            noise: 0.05,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::spec::fixtures::{GOOD, err_of};
    use crate::plan::spec::parse;

    #[test]
    fn objective_parses_in_block_and_flow_style() {
        let text = format!(
            "{GOOD}objective: {{maximize: output_tok_s, slo: {{ttft_ms_p99: 2000, tpot_ms_p99: 100}}}}\n"
        );
        let s = parse(&text, "s.yaml").expect("parses");
        let o = s.objective.expect("an objective");
        assert_eq!((o.goal, &o.metric), (Goal::Maximize, &Col::OUTPUT_TOK_S));
        assert_eq!(o.noise, DEFAULT_NOISE);
        assert_eq!(
            o.to_string(),
            "maximize output_tok_s subject to ttft_ms_p99 ≤ 2000, tpot_ms_p99 ≤ 100"
        );
        // A goodput column needs the workload's definition of a good request.
        let good = GOOD.replace("  seed: 1\n", "  seed: 1\n  slo: {ttft_ms: 500}\n");
        let text = format!(
            "{good}objective:\n  minimize: ttft_ms_p99\n  noise: 0.1\n  slo:\n    goodput_share: {{min: 0.9}}\n    e2e_ms_p50: {{max: 5000}}\n"
        );
        let o = parse(&text, "s.yaml")
            .expect("parses")
            .objective
            .expect("an objective");
        assert_eq!((o.goal, o.noise), (Goal::Minimize, 0.1));
        assert_eq!(
            o.slo,
            vec![
                SloBound {
                    column: Col::Listed(Column::GoodputShare),
                    bound: Bound::AtLeast,
                    limit: 0.9
                },
                SloBound {
                    column: Col::E2E_MS_P50,
                    bound: Bound::AtMost,
                    limit: 5000.0
                },
            ]
        );
        assert!(parse(GOOD, "s.yaml").expect("parses").objective.is_none());
    }

    #[test]
    fn bad_objectives_are_located() {
        // GOOD has 28 lines; `objective:` is line 29.
        let block = |body: &str| format!("{GOOD}objective:\n{body}");
        for (text, at, says) in [
            (
                block("  maximize: output_tok_s\n  minimize: ttft_ms_p99\n"),
                (31, 13),
                "not both",
            ),
            (
                block("  slo: {ttft_ms_p99: 5}\n"),
                (29, 1),
                "`maximize: COLUMN`",
            ),
            (
                block("  maximize: output_tok_s\n  slo:\n    ttft_ms_p99: -5\n"),
                (32, 18),
                "number > 0, got -5",
            ),
            (
                block("  maximize: output_tok_s\n  slo:\n    ttft_ms_p99: .inf\n"),
                (32, 18),
                "number > 0",
            ),
            (
                block("  maximize: output_tok_s\n  slo:\n    ttft_ms_p99: {max: 1, min: 2}\n"),
                (32, 18),
                "one bound",
            ),
            (
                block("  maximize: output_tok_s\n  slo:\n    ttft_ms_p99: {below: 1}\n"),
                (32, 18),
                "{max: N} or {min: N}",
            ),
            (
                block("  maximize: output_tok_s\n  goal: fast\n"),
                (31, 3),
                "unknown field `goal`",
            ),
            (
                block("  maximize: output_tok_s\n  noise: 5\n"),
                (31, 10),
                "fraction in (0, 1)",
            ),
            (
                format!("{GOOD}objective: {{maximize: output_tok_s, minimize: e2e_ms_p99}}\n"),
                (29, 47),
                "not both",
            ),
            (
                format!("{GOOD}objective: {{maximize: output_tok_s, slo: {{ttft_ms_p99: -5}}}}\n"),
                (29, 56),
                "number > 0, got -5",
            ),
        ] {
            let e = err_of(&text);
            assert!(e.message.contains(says), "{says}: {e}");
            assert_eq!((e.line, e.column), at, "{says}: {e}");
        }
    }

    /// The names are resolved as the spec is read: one that is no column, one without a
    /// direction, and one the goal or the bound contradicts are each refused on the name,
    /// with the fix; the first of them in the order written is the one named.
    #[test]
    fn a_wrong_column_is_refused_on_its_name_with_the_fix() {
        // GOOD has 28 lines; `objective:` is line 29.
        let block = |body: &str| format!("{GOOD}objective:\n{body}");
        for (text, at, says) in [
            (
                block("  maximize: output_tokps\n"),
                (30, 13),
                "objective: `output_tokps` is not a results.csv column (did you mean `output_tok_s`? `sgtune columns` lists them)",
            ),
            (
                format!("{GOOD}objective: {{maximize: zzzzzzzzzzzz}}\n"),
                (29, 23),
                "objective: `zzzzzzzzzzzz` is not a results.csv column (`sgtune columns` lists them)",
            ),
            (
                block("  maximize: output_tok_s\n  slo:\n    ttft_p99: 1\n"),
                (32, 5),
                "objective.slo: `ttft_p99` is not a results.csv column (did you mean",
            ),
            (
                block("  maximize: ttft_ms_p99\n"),
                (30, 13),
                "write `minimize: ttft_ms_p99`",
            ),
            (
                block("  minimize: output_tok_s\n"),
                (30, 13),
                "write `maximize: output_tok_s`",
            ),
            (
                block("  maximize: max_total_num_tokens\n"),
                (30, 13),
                "no better direction",
            ),
            (
                block("  maximize: param_tp_size\n"),
                (30, 13),
                "no better direction",
            ),
            (
                block("  maximize: output_tok_s\n  slo:\n    ttft_ms_p99: {min: 5}\n"),
                (32, 5),
                "write `ttft_ms_p99: 5`",
            ),
            (
                format!("{GOOD}objective: {{maximize: output_tok_s, slo: {{goodput_share: 5}}}}\n"),
                (29, 43),
                "write `goodput_share: {min: 5}`",
            ),
            (
                block(
                    "  maximize: output_tok_s\n  slo:\n    ttft_ms_p99: 9\n    token_usage_max: 5\n",
                ),
                (33, 5),
                "no better direction",
            ),
            (
                block("  maximize: output_tokps\n  slo:\n    ttft_p99: 1\n"),
                (30, 13),
                "`output_tokps` is not",
            ),
        ] {
            let e = err_of(&text);
            assert!(e.message.contains(says), "{says}: {e}");
            assert_eq!((e.line, e.column), at, "{says}: {e}");
        }
    }

    /// The goodput columns stay empty without `workload.slo`: refused on the name then, taken
    /// with it.
    #[test]
    fn goodput_needs_a_workload_slo() {
        for (objective, at, says) in [
            (
                "objective:\n  maximize: goodput_req_s\n",
                (30, 13),
                "objective: `goodput_req_s` stays empty unless `workload.slo`",
            ),
            (
                "objective:\n  maximize: output_tok_s\n  slo:\n    goodput_share: {min: 0.9}\n",
                (32, 5),
                "objective.slo: `goodput_share` stays empty unless `workload.slo`",
            ),
        ] {
            let e = err_of(&format!("{GOOD}{objective}"));
            assert!(e.message.contains(says), "{says}: {e}");
            assert_eq!((e.line, e.column), at, "{says}: {e}");
            let good = GOOD.replace("  seed: 1\n", "  seed: 1\n  slo: {ttft_ms: 500}\n");
            parse(&format!("{good}{objective}"), "s.yaml").expect("with workload.slo");
        }
    }
}
