//! decision.md: the tuner's decision (`tune::decision::Decision`), rendered as document blocks
//! (`report::doc`) that decision.md writes as Markdown and report.html as HTML. Nothing is
//! decided here.

use crate::report::doc::{self, Block};
use crate::tune::decision::{
    ConfigResult, Decision, Estimate, Outcome, Standing, hours, margin_text, noise_text, num,
};

/// decision.md.
pub fn render_md(d: &Decision) -> String {
    doc::markdown(&blocks(d))
}

/// The decision as a document: decision.md's blocks, which report.html shows as they are.
pub fn blocks(d: &Decision) -> Vec<Block> {
    let mut out = vec![Block::Heading(1, format!("Decision: {}", d.sweep))];
    let mut objective = format!(
        "Objective: {} `{}`",
        d.objective.goal.as_str(),
        d.objective.metric
    );
    if !d.objective.slo.is_empty() {
        let b: Vec<String> = d.objective.slo.iter().map(|b| format!("`{b}`")).collect();
        objective.push_str(&format!(" subject to {}", b.join(", ")));
    }
    objective.push('.');
    out.push(Block::Para(objective));
    out.push(Block::Para(d.summary.clone()));
    out.push(Block::Heading(2, "Rule".into()));
    out.push(Block::Para(d.rule.clone()));
    for p in &d.points {
        out.push(Block::Heading(2, format!("At {}", p.label)));
        let margin = p
            .margin
            .as_ref()
            .zip(p.runner_up.as_ref())
            .map(|(m, r)| format!(": ahead of the runner-up {r} by {}", margin_text(m)))
            .unwrap_or_default();
        out.push(Block::Para(match (p.outcome, &p.leader) {
            (Outcome::Winner, Some(w)) => format!("**Winner: {w}**{margin}."),
            (Outcome::Unconfirmed, Some(l)) => format!(
                "**Leader: {l}** (not claimed as the winner){margin}. The sweep measured no noise: every configuration ran once, so whether this margin is more than the run-to-run noise is unknown. To confirm it, run with `repeats: 2` or more (or `repeats: auto`), or re-check the leader against the runner-up with `sgtune reproduce DIR --decision`."
            ),
            (Outcome::TieWithinNoise, Some(l)) => format!(
                "**Tie within noise** between {l} and {}: no winner is claimed ({l} leads{margin}).",
                p.tied_with.join(", ")
            ),
            _ => "**No configuration is eligible**: each one failed, broke the SLO or has no value."
                .to_string(),
        }));
        if p.leader.is_some() {
            out.push(Block::Para(format!(
                "Noise: {}.",
                noise_text(&d.objective.metric.name(), p.noise, d.objective.noise)
            )));
        }
        if let (Some(l), Some(cmd)) = (&p.leader, &p.command) {
            let whose = if p.outcome == Outcome::Winner {
                format!("The winner's ({l}) exact launch command")
            } else {
                format!("The leader's ({l}) launch command (not a claimed winner)")
            };
            out.push(Block::Para(format!("{whose}:")));
            out.push(Block::Code {
                lang: "sh".into(),
                text: cmd.clone(),
            });
        }
        let mut header: Vec<String> = vec![
            "rank".into(),
            "configuration".into(),
            format!("{} mean [95% CI]", d.objective.metric),
            "repeats".into(),
        ];
        for b in &d.objective.slo {
            header.push(format!("{b} (median)"));
        }
        let search = p.load_point == "max_load_at_slo";
        if search {
            header.push("max load within SLO".into());
            header.push("goodput there (req/s)".into());
        }
        header.extend(["verdict".to_string(), "why it won or lost".to_string()]);
        let mut rows: Vec<Vec<String>> = Vec::new();
        for c in &p.configurations {
            let est = match &c.estimate {
                Some(Estimate {
                    mean, ci: Some(ci), ..
                }) => format!("{} [{}, {}]", num(*mean), num(ci.low), num(ci.high)),
                Some(e) => format!("{} [one repeat]", num(e.mean)),
                None => "-".into(),
            };
            let repeats = if c.failed > 0 {
                format!("{} ({} failed)", c.repeats, c.failed)
            } else {
                c.repeats.to_string()
            };
            let mut row = vec![
                c.rank.map_or("-".into(), |r| r.to_string()),
                c.run_name.clone(),
                est,
                repeats,
            ];
            let judged = !matches!(c.standing, Standing::Failed | Standing::NoValue);
            for check in &c.slo {
                row.push(match check.median {
                    _ if !judged => "-".into(),
                    Some(m) => format!("{} {}", num(m), if check.holds { "✓" } else { "✗" }),
                    None => "- ✗".into(),
                });
            }
            if search {
                row.push(c.max_load_at_slo.clone().unwrap_or_else(|| "none".into()));
                row.push(c.goodput_at_max_load.map_or("-".into(), num));
            }
            row.push(c.verdict.clone());
            row.push(c.why.clone());
            rows.push(row);
        }
        out.push(Block::Table { header, rows });
        let evidence: Vec<&ConfigResult> = p
            .configurations
            .iter()
            .filter(|c| !c.verdict_evidence.is_empty())
            .collect();
        if !evidence.is_empty() {
            out.push(Block::List {
                intro: Some("Verdict evidence (results.csv `verdict_evidence`):".into()),
                items: evidence
                    .iter()
                    .map(|c| format!("{}: {}: {}", c.run_name, c.verdict, c.verdict_evidence))
                    .collect(),
            });
        }
    }
    if let Some(p) = &d.preflight {
        out.push(Block::Heading(2, "Memory pre-flight".into()));
        let margin = match (p.next_up, &p.next_up_failure) {
            (Some(n), Some(w)) => format!(" The next step up, {n}, failed: {w}."),
            _ => String::new(),
        };
        out.push(Block::Para(match p.found {
            Some(v) => format!(
                "`{} = {}` is the highest value that launched and survived the worst-case burst ({} attempt(s); rows with phase `preflight`).{margin}",
                p.knob, v, p.attempts
            ),
            None => format!(
                "No value of `{}` launched and survived the burst ({} attempt(s)).{margin}",
                p.knob, p.attempts
            ),
        }));
    }
    if let Some(q) = &d.quality {
        out.push(Block::Heading(2, "Output quality".into()));
        out.push(Block::Para(q.rule.clone()));
        out.push(Block::Para(format!(
            "Reference: `{}`, {}. Outputs and log-probabilities: runs/<launch>/quality.jsonl.",
            q.baseline,
            q.reference
                .as_deref()
                .unwrap_or("none (the baseline has no quality outputs)")
        )));
        let header: Vec<String> = [
            "configuration",
            "quality",
            "decisive",
            "diverged",
            "prefix agreement",
            "evidence",
        ]
        .map(String::from)
        .to_vec();
        let pct = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{:.1}%", v * 100.0));
        let rows: Vec<Vec<String>> = q
            .verdicts
            .iter()
            .map(|v| {
                vec![
                    v.run_name.clone(),
                    v.status.as_str().to_string(),
                    pct(v.tally.decisive_share()),
                    pct(v.tally.diverged_share()),
                    pct(v.tally.prefix_agreement()),
                    v.evidence.clone(),
                ]
            })
            .collect();
        out.push(Block::Table { header, rows });
    }
    out.push(Block::Heading(2, "Cost".into()));
    out.push(Block::Para(format!(
        "{} server launch(es), {} server-hours (manifest.json: each launch from its start to its server's stop){}.",
        d.cost.launches,
        hours(d.cost.server_hours),
        if d.cost.launches_without_times > 0 {
            format!(
                "; {} launch(es) without readable times are left out of the hours",
                d.cost.launches_without_times
            )
        } else {
            String::new()
        }
    )));
    out
}

/// decision.md's last section after a deadline, what the decision above could not use, as
/// blocks (report.html shows them under the decision).
pub fn deadline_blocks(left: &[String], root: &std::path::Path) -> Vec<Block> {
    vec![
        Block::Heading(2, "Not measured before the deadline".into()),
        Block::Para(
            "The decision above is from what was measured by the deadline. Not measured before the deadline:"
                .into(),
        ),
        Block::List {
            intro: None,
            items: left.to_vec(),
        },
        Block::Para(format!(
            "`sgtune resume {}` measures them and decides again from every row.",
            root.display()
        )),
    ]
}
