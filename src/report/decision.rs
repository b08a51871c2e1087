//! decision.md: the tuner's decision (`tune::decision::Decision`), rendered. Nothing is
//! decided here.

use crate::tune::decision::{
    ConfigResult, Decision, Estimate, Outcome, Standing, hours, margin_text, noise_text, num,
};

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// decision.md.
pub fn render_md(d: &Decision) -> String {
    let mut s = format!("# Decision: {}\n\n", d.sweep);
    s.push_str(&format!(
        "Objective: {} `{}`",
        d.objective.goal.as_str(),
        d.objective.metric
    ));
    if !d.objective.slo.is_empty() {
        let b: Vec<String> = d.objective.slo.iter().map(|b| format!("`{b}`")).collect();
        s.push_str(&format!(" subject to {}", b.join(", ")));
    }
    s.push_str(".\n\n");
    s.push_str(&d.summary);
    s.push_str("\n\n## Rule\n\n");
    s.push_str(&d.rule);
    s.push('\n');
    for p in &d.points {
        s.push_str(&format!("\n## At {}\n\n", p.label));
        let margin = p
            .margin
            .as_ref()
            .zip(p.runner_up.as_ref())
            .map(|(m, r)| format!(": ahead of the runner-up {r} by {}", margin_text(m)))
            .unwrap_or_default();
        match (p.outcome, &p.leader) {
            (Outcome::Winner, Some(w)) => {
                s.push_str(&format!("**Winner: {w}**{margin}.\n\n"));
            }
            (Outcome::Unconfirmed, Some(l)) => {
                s.push_str(&format!(
                    "**Leader: {l}** (not claimed as the winner){margin}. The sweep measured no noise: every configuration ran once, so whether this margin is more than the run-to-run noise is unknown. To confirm it, run with `repeats: 2` or more (or `repeats: auto`), or re-check the leader against the runner-up with `sgtune reproduce DIR --decision`.\n\n"
                ));
            }
            (Outcome::TieWithinNoise, Some(l)) => {
                s.push_str(&format!(
                    "**Tie within noise** between {l} and {}: no winner is claimed ({l} leads{margin}).\n\n",
                    p.tied_with.join(", ")
                ));
            }
            _ => s.push_str(
                "**No configuration is eligible**: each one failed, broke the SLO or has no value.\n\n",
            ),
        }
        if p.leader.is_some() {
            s.push_str(&format!(
                "Noise: {}.\n\n",
                noise_text(&d.objective.metric, p.noise, d.objective.noise)
            ));
        }
        if let (Some(l), Some(cmd)) = (&p.leader, &p.command) {
            let whose = if p.outcome == Outcome::Winner {
                format!("The winner's ({l}) exact launch command")
            } else {
                format!("The leader's ({l}) launch command (not a claimed winner)")
            };
            s.push_str(&format!("{whose}:\n\n```sh\n{cmd}\n```\n\n"));
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
            rows.push(row.iter().map(|x| md_cell(x)).collect());
        }
        s.push_str(&crate::report::table::render_plain(&header, &rows));
        let evidence: Vec<&ConfigResult> = p
            .configurations
            .iter()
            .filter(|c| !c.verdict_evidence.is_empty())
            .collect();
        if !evidence.is_empty() {
            s.push_str("\nVerdict evidence (results.csv `verdict_evidence`):\n");
            for c in evidence {
                s.push_str(&format!(
                    "- {}: {}: {}\n",
                    c.run_name, c.verdict, c.verdict_evidence
                ));
            }
        }
    }
    if let Some(p) = &d.preflight {
        s.push_str("\n## Memory pre-flight\n\n");
        let margin = match (p.next_up, &p.next_up_failure) {
            (Some(n), Some(w)) => format!(" The next step up, {n}, failed: {w}."),
            _ => String::new(),
        };
        match p.found {
            Some(v) => s.push_str(&format!(
                "`{} = {}` is the highest value that launched and survived the worst-case burst ({} attempt(s); rows with phase `preflight`).{margin}\n",
                p.knob, v, p.attempts
            )),
            None => s.push_str(&format!(
                "No value of `{}` launched and survived the burst ({} attempt(s)).{margin}\n",
                p.knob, p.attempts
            )),
        }
    }
    if let Some(q) = &d.quality {
        s.push_str("\n## Output quality\n\n");
        s.push_str(&q.rule);
        s.push_str(&format!(
            "\n\nReference: `{}`, {}. Outputs and log-probabilities: runs/<launch>/quality.jsonl.\n\n",
            q.baseline,
            q.reference.as_deref().unwrap_or("none (the baseline has no quality outputs)")
        ));
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
                [
                    v.run_name.clone(),
                    v.status.as_str().to_string(),
                    pct(v.tally.decisive_share()),
                    pct(v.tally.diverged_share()),
                    pct(v.tally.prefix_agreement()),
                    v.evidence.clone(),
                ]
                .iter()
                .map(|x| md_cell(x))
                .collect()
            })
            .collect();
        s.push_str(&crate::report::table::render_plain(&header, &rows));
    }
    s.push_str(&format!(
        "\n## Cost\n\n{} server launch(es), {} server-hours (manifest.json: each launch from its start to its server's stop){}.\n",
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
    ));
    s
}

/// decision.md's last section after a deadline: what the decision above could not use.
pub fn deadline_section(left: &[String], root: &std::path::Path) -> String {
    let mut s = String::from(
        "\n## Not measured before the deadline\n\nThe decision above is from what was measured by the deadline. Not measured before the deadline:\n\n",
    );
    for l in left {
        s.push_str(&format!("- {l}\n"));
    }
    s.push_str(&format!(
        "\n`sgtune resume {}` measures them and decides again from every row.\n",
        root.display()
    ));
    s
}
