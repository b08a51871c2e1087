//! What the rows say about effective arguments, for the decision: the settings that did not
//! take effect (`not_in_effect`), and the configurations that ran the same server in effect
//! (equal `effective_args_id`, found by `observe::effective::same_in_effect`), whose
//! differences are not a result of the settings that were swept. Pure functions of rows;
//! `report::effective` renders the same facts under the table.

use crate::observe::effective::same_in_effect;
use crate::record::Phase;
use crate::record::rows::Row;
use crate::tune::decision::Decision;

/// Configurations that ran the same server in effect: (effective id, their names), from the
/// measured rows (pre-flight attempts left out: they search one knob of one configuration).
pub fn duplicates(rows: &[Row]) -> Vec<(String, Vec<String>)> {
    same_in_effect(
        rows.iter()
            .filter(|r| r.phase() != Phase::Preflight)
            .map(|r| (r.get("run_name"), r.get("effective_args_id"))),
    )
}

/// Each configuration's settings not in effect, distinct, in row order: (run name, finding).
pub fn not_in_effect(rows: &[Row]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for r in rows {
        for f in r.get("not_in_effect").split("; ").filter(|f| !f.is_empty()) {
            let item = (r.get("run_name").to_string(), f.to_string());
            if !out.contains(&item) {
                out.push(item);
            }
        }
    }
    out
}

/// The swept keys (`param_<key>` columns) whose values differ between these configurations.
fn differing_keys(rows: &[Row], names: &[String]) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    let firsts: Vec<&Row> = names
        .iter()
        .filter_map(|n| rows.iter().find(|r| r.get("run_name") == n))
        .collect();
    for r in &firsts {
        for k in r.0.keys().filter_map(|k| k.strip_prefix("param_")) {
            let col = format!("param_{k}");
            let distinct = firsts.iter().any(|o| o.get(&col) != r.get(&col));
            if distinct && !keys.iter().any(|x| x == k) {
                keys.push(k.to_string());
            }
        }
    }
    keys
}

/// Why these configurations' results differ: "what they differ in (keys) did not change the
/// server, so ..." naming the swept keys, or, when no swept key differs, run-to-run variation.
pub fn no_effect_clause(rows: &[Row], names: &[String]) -> String {
    let keys = differing_keys(rows, names);
    if keys.is_empty() {
        "their difference in the results is run-to-run variation".to_string()
    } else {
        format!(
            "what they differ in ({}) did not change the server, so their difference in the results is run-to-run variation, not an effect of {}",
            keys.join(", "),
            if keys.len() == 1 {
                "that setting"
            } else {
                "those settings"
            }
        )
    }
}

/// Say in the decision what the rows say about effective arguments: each configuration's
/// settings not in effect and the configurations it ran the same server as (in its `why`),
/// and, where two of a load point's configurations ran the same server, that their margin is
/// not an effect of the swept settings (in the point's sentence and the summary).
pub fn annotate_decision(d: &mut Decision, rows: &[Row]) {
    let dups = duplicates(rows);
    let missed = not_in_effect(rows);
    let mut summary_notes: Vec<String> = Vec::new();
    for p in &mut d.points {
        let here: Vec<String> = p
            .configurations
            .iter()
            .map(|c| c.run_name.clone())
            .collect();
        for c in &mut p.configurations {
            let keys: Vec<String> = missed
                .iter()
                .filter(|(n, _)| *n == c.run_name)
                .map(|(_, f)| f.split('`').nth(1).unwrap_or(f).to_string())
                .collect();
            if !keys.is_empty() {
                push_clause(&mut c.why, &format!("not in effect: {}", keys.join(", ")));
            }
            if let Some((id, names)) = dups.iter().find(|(_, n)| n.contains(&c.run_name)) {
                let others: Vec<&str> = names
                    .iter()
                    .filter(|n| **n != c.run_name && here.contains(n))
                    .map(String::as_str)
                    .collect();
                if !others.is_empty() {
                    push_clause(
                        &mut c.why,
                        &format!(
                            "ran the same server in effect as {} ({id})",
                            others.join(", ")
                        ),
                    );
                }
            }
        }
        for (id, names) in &dups {
            let present: Vec<String> = names.iter().filter(|n| here.contains(n)).cloned().collect();
            if present.len() < 2 {
                continue;
            }
            let involved = |n: &Option<String>| n.as_ref().is_some_and(|n| present.contains(n));
            let claim = involved(&p.leader)
                && (involved(&p.runner_up) || p.tied_with.iter().any(|t| present.contains(t)));
            let note = format!(
                "{} ran the same server in effect ({id}): {}.",
                present.join(" and "),
                no_effect_clause(rows, &present)
            );
            if claim {
                p.sentence = format!("{} But {note}", p.sentence);
            }
            if !summary_notes.contains(&note) {
                summary_notes.push(note);
            }
        }
    }
    if !summary_notes.is_empty() {
        d.summary = format!(
            "{} Same server in effect: {}",
            d.summary,
            summary_notes.join(" ")
        );
    }
}

fn push_clause(why: &mut String, clause: &str) {
    if why.is_empty() {
        *why = clause.to_string();
    } else {
        why.push_str("; ");
        why.push_str(clause);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::plan::spec::{Goal, Objective};
    use std::collections::BTreeMap;

    pub(crate) fn row(name: &str, param: &str, id: &str, missed: &str, tok: &str) -> Row {
        let mut m = BTreeMap::new();
        for (k, v) in [
            ("run_name", name),
            ("status", "ok"),
            ("phase", "measure"),
            ("concurrency", "4"),
            ("repeat", "1"),
            ("param_cuda_graph_max_bs_decode", param),
            ("effective_args_id", id),
            ("not_in_effect", missed),
            ("output_tok_s", tok),
        ] {
            m.insert(k.to_string(), v.to_string());
        }
        Row(m)
    }

    pub(crate) fn rows() -> Vec<Row> {
        vec![
            row(
                "cgbd8",
                "8",
                "aaa",
                "`cuda_graph_max_bs_decode` asked 8, in effect no CUDA graph (start-up log: \"Cuda graph is disabled\")",
                "110",
            ),
            row(
                "cgbd16",
                "16",
                "aaa",
                "`cuda_graph_max_bs_decode` asked 16, in effect no CUDA graph (start-up log: \"Cuda graph is disabled\")",
                "100",
            ),
            row("mtt8192", "", "bbb", "", "90"),
        ]
    }

    #[test]
    fn the_decision_does_not_credit_the_swept_key_for_a_same_server_margin() {
        let rows = rows();
        let o = Objective {
            goal: Goal::Maximize,
            metric: "output_tok_s".into(),
            slo: Vec::new(),
            noise: 0.01,
            prune: false,
        };
        let mut d =
            crate::tune::decision::decide("t", &o, &rows, &BTreeMap::new(), Default::default());
        annotate_decision(&mut d, &rows);
        let p = &d.points[0];
        assert_eq!(p.leader.as_deref(), Some("cgbd8"));
        assert!(
            p.sentence
                .contains("But cgbd8 and cgbd16 ran the same server in effect (aaa)")
                && p.sentence.contains("not an effect of that setting"),
            "{}",
            p.sentence
        );
        assert!(
            d.summary
                .contains("Same server in effect: cgbd8 and cgbd16")
        );
        let why = |n: &str| {
            p.configurations
                .iter()
                .find(|c| c.run_name == n)
                .map(|c| c.why.clone())
                .unwrap_or_default()
        };
        assert!(why("cgbd16").contains("ran the same server in effect as cgbd8 (aaa)"));
        assert!(why("cgbd16").contains("not in effect: cuda_graph_max_bs_decode"));
        assert!(
            !why("mtt8192").contains("same server") && !why("mtt8192").contains("not in effect"),
            "{}",
            why("mtt8192")
        );
    }

    fn objective() -> Objective {
        Objective {
            goal: Goal::Maximize,
            metric: "output_tok_s".into(),
            slo: Vec::new(),
            noise: 0.01,
            prune: false,
        }
    }

    #[test]
    fn a_leader_on_another_server_makes_no_claim_about_the_pair_behind_it() {
        // mtt8192 leads; the same-server pair is second and third: the sentence is about the
        // leader and stays as it is, the summary still notes the pair.
        let mut rows = rows();
        rows[2].0.insert("output_tok_s".into(), "200".into());
        let mut d = crate::tune::decision::decide(
            "t",
            &objective(),
            &rows,
            &BTreeMap::new(),
            Default::default(),
        );
        annotate_decision(&mut d, &rows);
        let p = &d.points[0];
        assert_eq!(p.leader.as_deref(), Some("mtt8192"));
        assert_eq!(p.runner_up.as_deref(), Some("cgbd8"));
        assert!(!p.sentence.contains("same server"), "{}", p.sentence);
        assert!(
            d.summary
                .contains("Same server in effect: cgbd8 and cgbd16")
        );
    }

    #[test]
    fn a_pair_at_different_load_points_is_not_compared() {
        // cgbd16 ran at another load point: no point holds both, so nothing is said.
        let mut rows = rows();
        rows[1].0.insert("concurrency".into(), "8".into());
        let mut d = crate::tune::decision::decide(
            "t",
            &objective(),
            &rows,
            &BTreeMap::new(),
            Default::default(),
        );
        annotate_decision(&mut d, &rows);
        assert!(
            !d.summary.contains("Same server in effect"),
            "{}",
            d.summary
        );
        for p in &d.points {
            assert!(!p.sentence.contains("same server"), "{}", p.sentence);
        }
    }

    #[test]
    fn the_clause_names_only_the_keys_that_differ_between_the_named_configurations() {
        let mut rows = rows();
        // A second swept key, equal in the two: not named.
        for r in &mut rows {
            r.0.insert("param_dtype".into(), "bfloat16".into());
        }
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let c = no_effect_clause(&rows, &names(&["cgbd8", "cgbd16"]));
        assert!(
            c.starts_with("what they differ in (cuda_graph_max_bs_decode) did not change")
                && c.ends_with("that setting"),
            "{c}"
        );
        // Both keys differ: both named, and "those settings".
        rows[1].0.insert("param_dtype".into(), "float32".into());
        let c = no_effect_clause(&rows, &names(&["cgbd8", "cgbd16"]));
        assert!(
            c.contains("(cuda_graph_max_bs_decode, dtype)") && c.ends_with("those settings"),
            "{c}"
        );
        // Each configuration's own row is the one compared (not the first row of the sweep).
        let c = no_effect_clause(&rows, &names(&["cgbd16", "mtt8192"]));
        assert!(c.contains("(cuda_graph_max_bs_decode, dtype)"), "{c}");
        // One configuration alone differs in nothing.
        assert_eq!(
            no_effect_clause(&rows, &names(&["cgbd8"])),
            "their difference in the results is run-to-run variation"
        );
    }

    #[test]
    fn preflight_attempts_are_not_duplicates() {
        let mut a = row("p1", "", "aaa", "", "1");
        let mut b = row("p2", "", "aaa", "", "1");
        a.0.insert("phase".into(), "preflight".into());
        b.0.insert("phase".into(), "preflight".into());
        assert!(duplicates(&[a, b]).is_empty());
    }
}
