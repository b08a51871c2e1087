//! What the rows say about effective arguments, for the decision: the settings that did not
//! take effect (`not_in_effect`), and the configurations that ran the same server in effect
//! (equal `effective_args_id`, found by `observe::effective::same_in_effect`), whose
//! differences are not a result of the settings that were swept. Pure: [`EffectiveFacts`]
//! carries what the decision needs (the keys typed, read by `run::` from each launch's
//! effective_args.json), and `tune::decision::words` writes the words from it;
//! `report::effective` renders the rows' facts under the table.

use crate::observe::effective::same_in_effect;
use crate::record::Phase;
use crate::record::rows::Row;

/// Configurations that ran the same server in effect: (effective id, their names), from the
/// measured rows (pre-flight attempts left out: they search one knob of one configuration).
pub fn duplicates(rows: &[Row]) -> Vec<(String, Vec<String>)> {
    same_in_effect(
        rows.iter()
            .filter(|r| r.phase() != Phase::Preflight)
            .map(|r| (r.run_name(), r.effective_args_id())),
    )
}

/// Each configuration's settings not in effect, distinct, in row order: (run name, finding).
pub fn not_in_effect(rows: &[Row]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for r in rows {
        for f in r.not_in_effect() {
            let item = (r.run_name().to_string(), f.to_string());
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
        .filter_map(|n| rows.iter().find(|r| r.run_name() == n))
        .collect();
    for r in &firsts {
        for (k, v) in r.params() {
            let distinct = firsts.iter().any(|o| o.param(k) != v);
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

/// What the effective arguments say, for the decision, typed: the settings that did not take
/// effect, by key (from each launch's effective_args.json, read by `run::effective::read`;
/// never from the prose of the `not_in_effect` column), and the configurations that ran the
/// same server (from the rows' `effective_args_id`, an id).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EffectiveFacts {
    /// (run name, spec key), distinct, in the order given.
    pub not_in_effect: Vec<(String, String)>,
    /// (effective id, run names), as [`duplicates`] finds them.
    pub same_server: Vec<(String, Vec<String>)>,
}

impl EffectiveFacts {
    /// The facts of a sweep: `keys` are (run name, key) of the settings not in effect, the
    /// same servers come from `rows`.
    pub fn new(rows: &[Row], keys: impl IntoIterator<Item = (String, String)>) -> Self {
        let mut not_in_effect: Vec<(String, String)> = Vec::new();
        for k in keys {
            if !not_in_effect.contains(&k) {
                not_in_effect.push(k);
            }
        }
        EffectiveFacts {
            not_in_effect,
            same_server: duplicates(rows),
        }
    }
}

/// The clauses configuration `name`'s `why` ends with: its settings not in effect, and the
/// configurations of the same load point (`here`) that ran the same server as it.
pub fn why_clauses(facts: &EffectiveFacts, name: &str, here: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let keys: Vec<&str> = facts
        .not_in_effect
        .iter()
        .filter(|(n, _)| n == name)
        .map(|(_, k)| k.as_str())
        .collect();
    if !keys.is_empty() {
        out.push(format!("not in effect: {}", keys.join(", ")));
    }
    if let Some((id, names)) = facts
        .same_server
        .iter()
        .find(|(_, n)| n.iter().any(|n| n == name))
    {
        let others: Vec<&str> = names
            .iter()
            .filter(|n| *n != name && here.contains(n))
            .map(String::as_str)
            .collect();
        if !others.is_empty() {
            out.push(format!(
                "ran the same server in effect as {} ({id})",
                others.join(", ")
            ));
        }
    }
    out
}

/// One load point's same-server notes: for each group of at least two of its configurations
/// (`here`) that ran the same server, the note, and whether the point's sentence claims a
/// margin between them (its `leader` against one of its `rivals`: the runner-up and those it
/// is tied with), in which case the sentence must say that margin is not an effect of the
/// swept settings.
pub fn same_server_notes(
    facts: &EffectiveFacts,
    rows: &[Row],
    here: &[String],
    leader: Option<&String>,
    rivals: &[&String],
) -> Vec<(bool, String)> {
    let mut out = Vec::new();
    for (id, names) in &facts.same_server {
        let present: Vec<String> = names.iter().filter(|n| here.contains(n)).cloned().collect();
        if present.len() < 2 {
            continue;
        }
        let claim = leader.is_some_and(|l| present.contains(l))
            && rivals.iter().any(|r| present.contains(r));
        let note = format!(
            "{} ran the same server in effect ({id}): {}.",
            present.join(" and "),
            no_effect_clause(rows, &present)
        );
        out.push((claim, note));
    }
    out
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
        Row::from_cells(m)
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

    /// The keys not in effect as effective_args.json gives them, typed.
    fn facts(rows: &[Row]) -> EffectiveFacts {
        let key = "cuda_graph_max_bs_decode".to_string();
        EffectiveFacts::new(
            rows,
            [
                ("cgbd8".to_string(), key.clone()),
                ("cgbd16".to_string(), key.clone()),
                ("cgbd16".to_string(), key),
            ],
        )
    }

    fn decide(rows: &[Row]) -> crate::tune::decision::Decision {
        crate::tune::decision::decide_with(
            "t",
            &objective(),
            rows,
            &BTreeMap::new(),
            Default::default(),
            &facts(rows),
        )
    }

    #[test]
    fn the_decision_does_not_credit_the_swept_key_for_a_same_server_margin() {
        let rows = rows();
        let d = decide(&rows);
        let p = &d.points[0];
        assert_eq!(p.leader.as_deref(), Some("cgbd8"));
        let note = "cgbd8 and cgbd16 ran the same server in effect (aaa): what they differ in \
            (cuda_graph_max_bs_decode) did not change the server, so their difference in the \
            results is run-to-run variation, not an effect of that setting.";
        // The sentence claims the pair's margin, so it says once that it is not an effect.
        assert!(
            p.sentence.ends_with(&format!("--decision`. But {note}")),
            "{}",
            p.sentence
        );
        assert_eq!(p.sentence.matches(" But ").count(), 1, "{}", p.sentence);
        // The summary: the sentences, the cost, then the note, once.
        assert!(
            d.summary
                .ends_with(&format!("server-hours. Same server in effect: {note}")),
            "{}",
            d.summary
        );
        assert!(
            d.summary.contains(&format!("{} Cost:", p.sentence)),
            "{}",
            d.summary
        );
        let why = |n: &str| {
            p.configurations
                .iter()
                .find(|c| c.run_name == n)
                .map(|c| c.why.clone())
                .unwrap_or_default()
        };
        // Each key once (the facts hold it twice for cgbd16), after the margin's own words.
        assert_eq!(
            why("cgbd16"),
            "behind the leader by 10.0 (10.0%; no noise measured: no interval); \
             not in effect: cuda_graph_max_bs_decode; ran the same server in effect as cgbd8 (aaa)"
        );
        assert!(
            why("cgbd8").ends_with(
                "not claimed as the winner; not in effect: cuda_graph_max_bs_decode; \
                 ran the same server in effect as cgbd16 (aaa)"
            ),
            "{}",
            why("cgbd8")
        );
        assert_eq!(
            why("mtt8192"),
            "behind the leader by 20.0 (22.2%; no noise measured: no interval)"
        );
        // Without facts (a comparison, a re-check) the decision says none of it.
        let plain = crate::tune::decision::decide(
            "t",
            &objective(),
            &rows,
            &BTreeMap::new(),
            Default::default(),
        );
        assert!(!plain.summary.contains("same server"), "{}", plain.summary);
        assert!(
            !plain.points[0].configurations[1]
                .why
                .contains("not in effect")
        );
    }

    #[test]
    fn the_key_not_in_effect_is_the_typed_key_not_the_prose() {
        // The prose column names another key in backticks, or none at all: the why names the
        // key the facts carry.
        let mut rows = rows();
        rows[0].set_cell("not_in_effect", "`page_size` asked 8, in effect 1");
        rows[1].set_cell("not_in_effect", "asked 16, in effect no CUDA graph");
        let facts = EffectiveFacts::new(
            &rows,
            [
                ("cgbd8".to_string(), "cuda_graph_max_bs_decode".to_string()),
                ("cgbd16".to_string(), "weird `key".to_string()),
                ("cgbd16".to_string(), "dtype".to_string()),
            ],
        );
        let here: Vec<String> = vec!["cgbd8".into(), "cgbd16".into()];
        assert_eq!(
            why_clauses(&facts, "cgbd8", &here),
            vec![
                "not in effect: cuda_graph_max_bs_decode".to_string(),
                "ran the same server in effect as cgbd16 (aaa)".to_string()
            ]
        );
        assert_eq!(
            why_clauses(&facts, "cgbd16", &here)[0],
            "not in effect: weird `key, dtype"
        );
        // A configuration the facts know nothing of (no effective_args.json) gets no key,
        // whatever its prose says.
        rows[2].set_cell("not_in_effect", "`mtt` asked 8192, in effect 4096");
        assert!(why_clauses(&facts, "mtt8192", &here).is_empty());
    }

    fn objective() -> Objective {
        Objective {
            goal: Goal::Maximize,
            metric: crate::record::rows::Col::OUTPUT_TOK_S,
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
        rows[2].set_cell("output_tok_s", "200");
        let d = decide(&rows);
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
        rows[1].set_cell("concurrency", "8");
        let d = decide(&rows);
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
            r.set_cell("param_dtype", "bfloat16");
        }
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let c = no_effect_clause(&rows, &names(&["cgbd8", "cgbd16"]));
        assert!(
            c.starts_with("what they differ in (cuda_graph_max_bs_decode) did not change")
                && c.ends_with("that setting"),
            "{c}"
        );
        // Both keys differ: both named, and "those settings".
        rows[1].set_cell("param_dtype", "float32");
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
        a.set_cell("phase", "preflight");
        b.set_cell("phase", "preflight");
        assert!(duplicates(&[a, b]).is_empty());
    }
}
