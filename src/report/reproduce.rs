//! The reproduction report: "reproduced", or what differs and what in the provenance may
//! explain it.

use crate::record::rows::{self, Col};
use crate::report::compare;
use crate::server::failure::FailureKind;
use crate::tune::compare as judged;

/// The columns a reproduction compares.
const REPRODUCE_METRICS: &[Col] = &[
    Col::OUTPUT_TOK_S,
    Col::TTFT_MS_P50,
    Col::TPOT_MS_P50,
    Col::E2E_MS_P50,
];

/// "reproduced", or what differs (and what in the provenance may explain it).
pub fn verdict(
    recorded: &[rows::Row],
    new: &[rows::Row],
    tolerance: f64,
    context: &[String],
    notes: &[String],
) -> (bool, String) {
    let mut report = String::from("## Reproduction\n\n");
    let rec_ok = recorded.iter().any(|r| r.is_ok());
    let new_ok = new.iter().any(|r| r.is_ok());
    let mut differs: Vec<String> = Vec::new();
    match (rec_ok, new_ok) {
        (true, true) => render_comparison(&mut report, &mut differs, recorded, new, tolerance),
        (false, false) => render_failed_again(&mut report, &mut differs, recorded, new),
        (true, false) => differs.push(format!(
            "the recorded run was ok; this time it failed: {}",
            new.first()
                .map(|r| {
                    let kind = r.failure_kind().map_or("", FailureKind::as_str);
                    format!("{kind} — {}", r.failure_message())
                })
                .unwrap_or_default()
        )),
        (false, true) => {
            differs.push("the recorded run failed; this time it succeeded".to_string())
        }
    }
    render_provenance(&mut report, context, notes);
    let reproduced = differs.is_empty();
    render_verdict_line(&mut report, &differs, tolerance);
    (reproduced, report)
}

/// Both runs ok: the compare table of the key metrics, and each metric beyond noise (or load
/// point not measured again) noted as a difference.
fn render_comparison(
    report: &mut String,
    differs: &mut Vec<String>,
    recorded: &[rows::Row],
    new: &[rows::Row],
    tolerance: f64,
) {
    let c = judged::compare(recorded, new, REPRODUCE_METRICS, tolerance);
    report.push_str(&compare::render(&c, compare::Format::Table, true));
    report.push('\n');
    for j in &c.joined {
        for cell in &j.cells {
            if matches!(
                cell.judgement,
                judged::Judgement::Better | judged::Judgement::Worse
            ) {
                differs.push(format!(
                    "{} @{}: {} {} ({})",
                    j.run_name,
                    j.concurrency,
                    cell.metric,
                    cell.relative
                        .map_or("-".into(), |r| format!("{:+.1}%", r * 100.0)),
                    cell.judgement.as_str()
                ));
            }
        }
    }
    differs.extend(c.only_a.iter().map(|x| format!("not measured again: {x}")));
}

/// Both runs failed: `Failed again, as recorded` when the failure kinds match, else a
/// difference naming both.
fn render_failed_again(
    report: &mut String,
    differs: &mut Vec<String>,
    recorded: &[rows::Row],
    new: &[rows::Row],
) {
    let kinds = |rs: &[rows::Row]| {
        let mut k: Vec<String> = rs
            .iter()
            .map(|r| r.failure_kind().map_or("", FailureKind::as_str).to_string())
            .collect();
        k.sort();
        k.dedup();
        k
    };
    if kinds(recorded) != kinds(new) {
        differs.push(format!(
            "failed again, but as {} instead of {}",
            kinds(new).join(", "),
            kinds(recorded).join(", ")
        ));
    } else {
        report.push_str(&format!(
            "Failed again, as recorded ({}).\n\n",
            kinds(new).join(", ")
        ));
    }
}

/// The provenance differences that may explain a difference, when there are any.
fn render_provenance(report: &mut String, context: &[String], notes: &[String]) {
    if !context.is_empty() || !notes.is_empty() {
        report.push_str("Provenance differences that may explain a difference:\n");
        for d in context.iter().chain(notes) {
            report.push_str(&format!("- {d}\n"));
        }
        report.push('\n');
    }
}

/// The closing `Verdict:` line: reproduced, or not reproduced with each difference listed.
fn render_verdict_line(report: &mut String, differs: &[String], tolerance: f64) {
    if differs.is_empty() {
        report.push_str(&format!(
            "Verdict: reproduced (key metrics within {:.0}% or the repeats' noise).\n",
            tolerance * 100.0
        ));
    } else {
        report.push_str("Verdict: not reproduced:\n");
        for d in differs {
            report.push_str(&format!("- {d}\n"));
        }
    }
}

/// Whether a re-check upholds a decision, and the report saying so. It holds when the same
/// configuration leads again and, if it had been claimed the winner, is separated again. A
/// leader the sweep could not confirm (it measured no noise) is confirmed when the re-check
/// claims it as the winner.
pub fn decision_verdict(
    before: &crate::tune::decision::Decision,
    point: &crate::tune::decision::PointDecision,
    after: &crate::tune::decision::PointDecision,
) -> (bool, String) {
    use crate::tune::decision::{Outcome, num};
    let was_winner = point.outcome == Outcome::Winner;
    let same_leader = after.leader == point.leader;
    let holds = same_leader && (!was_winner || after.outcome == Outcome::Winner);
    let mut s = format!("# Re-check of the decision: {}\n\n", before.sweep);
    s.push_str(&format!("Objective: {}.\n\n", before.objective));
    let name = |o: &Option<String>| o.clone().unwrap_or_else(|| "-".into());
    s.push_str(&format!(
        "Recorded, at {}: {} {} (runner-up {}).\n\n",
        point.label,
        match point.outcome {
            Outcome::Winner => "winner",
            Outcome::TieWithinNoise => "leader, tie within noise with",
            Outcome::Unconfirmed => "leader, not confirmed (no noise measured), ahead of",
            Outcome::NoEligibleConfiguration => "no eligible configuration",
        },
        name(&point.leader),
        name(&point.runner_up),
    ));
    if point.outcome == Outcome::TieWithinNoise {
        s.push_str(&format!("(tied with {})\n\n", point.tied_with.join(", ")));
    }
    s.push_str(&format!("Re-check: {}\n\n", after.sentence));
    for c in &after.configurations {
        let est = c
            .estimate
            .as_ref()
            .map(|e| match &e.ci {
                Some(ci) => format!("{} [{}, {}]", num(e.mean), num(ci.low), num(ci.high)),
                None => num(e.mean),
            })
            .unwrap_or_else(|| "-".into());
        s.push_str(&format!(
            "- {}: {} {est} over {} launch(es){}\n",
            c.run_name,
            before.objective.metric,
            c.repeats,
            if c.why.is_empty() {
                String::new()
            } else {
                format!(": {}", c.why)
            }
        ));
    }
    let verdict = if holds {
        if was_winner {
            format!(
                "**The decision holds**: {} wins again, separated from {}.",
                name(&point.leader),
                name(&point.runner_up)
            )
        } else if point.outcome == Outcome::Unconfirmed && after.outcome == Outcome::Winner {
            format!(
                "**The decision holds, and is now confirmed**: {} wins the re-check, separated from {}.",
                name(&point.leader),
                name(&point.runner_up)
            )
        } else {
            format!(
                "**The decision holds**: {} leads again (it was not claimed as a winner).",
                name(&point.leader)
            )
        }
    } else if same_leader {
        format!(
            "**The decision does not hold as claimed**: {} leads again, but no longer separates from {} ({}).",
            name(&point.leader),
            name(&point.runner_up),
            after.sentence
        )
    } else {
        format!(
            "**The decision does not hold**: {} leads the re-check, not {}.",
            name(&after.leader),
            name(&point.leader)
        )
    };
    s.push_str(&format!("\n{verdict}\n"));
    (holds, s)
}

#[cfg(test)]
mod tests {
    use super::decision_verdict;
    use crate::plan::spec::Goal;
    use crate::record::rows::Row;
    use crate::tune::decision::{Outcome, decide, decide_rows};

    fn rows(configs: &[(&str, &[f64])]) -> Vec<Row> {
        configs
            .iter()
            .flat_map(|(name, values)| {
                values.iter().enumerate().map(|(i, v)| {
                    Row::from_cells(
                        [
                            ("run_name", name.to_string()),
                            ("status", "ok".into()),
                            ("concurrency", "8".into()),
                            ("repeat", (i + 1).to_string()),
                            ("output_tok_s", v.to_string()),
                        ]
                        .into_iter()
                        .map(|(k, v)| (k.to_string(), v)),
                    )
                })
            })
            .collect()
    }

    /// Each recorded outcome against a re-check of two launches each.
    #[test]
    fn a_recheck_confirms_upholds_or_overturns() {
        let o = crate::plan::spec::Objective::for_test(Goal::Maximize, "output_tok_s", &[]);
        let recheck = |configs: &[(&str, &[f64])]| {
            let r = rows(configs);
            let refs: Vec<&Row> = r.iter().collect();
            decide_rows(&o, "re-check", &refs, &Default::default())
        };
        let record = |configs: &[(&str, &[f64])]| {
            decide(
                "s",
                &o,
                &rows(configs),
                &Default::default(),
                Default::default(),
            )
        };
        // One repeat: a leader, not confirmed. A re-check that separates confirms it.
        let once = record(&[("a", &[1000.0]), ("b", &[1200.0])]);
        assert_eq!(once.points[0].outcome, Outcome::Unconfirmed);
        let clear = recheck(&[("a", &[1000.0, 1010.0]), ("b", &[1200.0, 1190.0])]);
        assert_eq!(clear.outcome, Outcome::Winner);
        let (holds, report) = decision_verdict(&once, &once.points[0], &clear);
        assert!(holds, "{report}");
        assert!(
            report.contains("**The decision holds, and is now confirmed**: b wins the re-check, separated from a."),
            "{report}"
        );
        assert!(report.contains("leader, not confirmed (no noise measured), ahead of"));
        // The same leader, still not separated: it holds as it was, unconfirmed.
        let blurred = recheck(&[("a", &[1000.0, 1300.0]), ("b", &[1200.0, 1190.0])]);
        assert_eq!(blurred.outcome, Outcome::TieWithinNoise);
        let (holds, report) = decision_verdict(&once, &once.points[0], &blurred);
        assert!(holds, "{report}");
        assert!(
            report.contains(
                "**The decision holds**: b leads again (it was not claimed as a winner)."
            ),
            "{report}"
        );
        // A claimed winner that no longer separates does not hold; another leader overturns.
        let won = record(&[("a", &[1000.0, 1010.0]), ("b", &[1200.0, 1190.0])]);
        assert_eq!(won.points[0].outcome, Outcome::Winner);
        let (holds, report) = decision_verdict(&won, &won.points[0], &blurred);
        assert!(
            !holds && report.contains("does not hold as claimed"),
            "{report}"
        );
        let turned = recheck(&[("a", &[1300.0, 1310.0]), ("b", &[1200.0, 1190.0])]);
        let (holds, report) = decision_verdict(&won, &won.points[0], &turned);
        assert!(!holds, "{report}");
        assert!(
            report.contains("**The decision does not hold**: a leads the re-check, not b."),
            "{report}"
        );
    }
}
