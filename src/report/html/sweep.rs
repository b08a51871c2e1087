//! The report of one sweep (`sgtune report DIR`, and the end of every sweep): the overview
//! (comparison table with verdicts, failures with hints, decision, a tune's path), the charts by
//! configuration, and per launch the server timeline beside the client's side.

use std::fmt::Write as _;

use super::chart::{self, Chart, Line, Marker};
use super::configs::config_charts;
use super::launch::launch_section;
use super::style::{FOOT, head};
use super::{Sweep, esc, points_per_series};
use crate::report::{decision, doc, table};

fn overview(s: &Sweep, shift: usize) -> String {
    let mut o = String::new();
    let _ = write!(o, "<h{}>Overview</h{}>", 2 + shift, 2 + shift);
    if s.rows.is_empty() {
        o.push_str("<p class=\"note\">results.csv has no rows yet.</p>");
    } else {
        o.push_str(&doc::html(
            &table::blocks(&s.rows, &s.param_keys, s.decision_marks.as_ref()),
            2 + shift,
        ));
    }
    if let Some(d) = &s.decision {
        o.push_str("<section id=\"decision\">");
        o.push_str(&doc::html(&decision::blocks(d), 1 + shift));
        o.push_str(&doc::html(&s.decision_sections, 1 + shift));
        o.push_str("</section>");
    }
    if let Some(t) = &s.tune {
        o.push_str(&tune_chart(t));
    }
    o
}

/// A guided tune's path as a chart: the objective at each step in launch order, and the best
/// eligible value so far, so the reader sees where the evidence led and when it paid. Failed
/// and ineligible steps are named under it (the decision's "Tune path" says why each was
/// chosen).
pub fn tune_chart(t: &crate::report::html::TunePath) -> String {
    let x = |i: usize| (i + 1) as f64;
    let measured: Vec<(f64, f64)> = t
        .steps
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.value.map(|v| (x(i), v)))
        .collect();
    let mut best: Option<f64> = None;
    let mut best_line = Vec::new();
    for (i, s) in t.steps.iter().enumerate() {
        if let (Some(v), true) = (s.value, s.eligible) {
            let better = best.is_none_or(|b| if t.maximize { v > b } else { v < b });
            if better {
                best = Some(v);
            }
        }
        if let Some(b) = best {
            best_line.push((x(i), b));
        }
    }
    let not_eligible: Vec<String> = t
        .steps
        .iter()
        .enumerate()
        .filter(|(_, s)| !s.eligible)
        .map(|(i, s)| {
            format!(
                "{} `{}` ({})",
                i + 1,
                s.name,
                if s.value.is_none() {
                    format!("failed: {}", s.verdict)
                } else {
                    format!("not eligible, {}", s.verdict)
                }
            )
        })
        .collect();
    let confirmations: Vec<String> = t
        .steps
        .iter()
        .enumerate()
        .filter(|(_, s)| s.confirm)
        .map(|(i, s)| format!("{} `{}`", i + 1, s.name))
        .collect();
    let mut c = Chart {
        id: "tune-path".to_string(),
        title: format!("Tune path: {} at each step", t.metric),
        x_label: "step (launch order)".to_string(),
        y_label: t.metric.clone(),
        x_whole: true,
        note: format!(
            "{}{}{}",
            if not_eligible.is_empty() {
                String::new()
            } else {
                format!(
                    "Steps without an eligible result: {}. ",
                    not_eligible.join(", ")
                )
            },
            if confirmations.is_empty() {
                String::new()
            } else {
                format!(
                    "Steps that launch a configuration again to confirm it (its value pools its launches): {}. ",
                    confirmations.join(", ")
                )
            },
            t.end
        ),
        ..Default::default()
    };
    if !measured.is_empty() {
        c.lines
            .push(Line::new("each step", measured, 0).marker(Marker::Circle));
    }
    if !best_line.is_empty() {
        c.lines.push(
            Line::new("best eligible so far", best_line, 1)
                .step()
                .dashed()
                .marker(Marker::Square),
        );
    }
    let mut o = String::from("<section id=\"tune\"><h3>Tune path</h3>");
    o.push_str(&chart::render(&c));
    o.push_str("</section>");
    o
}

pub(super) fn sweep_body(s: &Sweep, prefix: &str, shift: usize) -> String {
    let mut o = overview(s, shift);
    let _ = write!(o, "<h{h}>By configuration</h{h}>", h = 2 + shift);
    o.push_str(&config_charts(s, prefix));
    for n in &s.notes {
        let _ = write!(o, "<p class=\"note\">{}</p>", esc(n));
    }
    o
}

pub(super) fn launches(s: &Sweep, shift: usize, prefix: &str) -> String {
    let mut o = String::new();
    let _ = write!(
        o,
        "<h{h}>Per run: the server's timeline and the client's side</h{h}>",
        h = 2 + shift
    );
    let budget = points_per_series(s.launches.len());
    o.push_str("<div class=\"launches\">");
    for l in &s.launches {
        o.push_str(&launch_section(l, &s.rows, budget, prefix));
    }
    o.push_str("</div>");
    o
}

/// The report of one sweep.
pub fn sweep_page(s: &Sweep) -> String {
    let mut o = head(&format!("sgtune report: {}", s.name));
    let _ = write!(
        o,
        "<h1>sgtune report: {}</h1><p class=\"sub\">Results folder: <code>{}</code>. \
         {} rows, {} launches. Time axes are the server log's clock.</p>",
        esc(&s.name),
        esc(&s.dir),
        s.rows.len(),
        s.launches.len()
    );
    o.push_str(&sweep_body(s, "cfg-", 0));
    o.push_str(&launches(s, 0, ""));
    o.push_str(FOOT);
    o
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::report::html::testing::{measured, row, sweep};
    /// The tune's chart: every measured step in launch order, the best eligible so far as a
    /// step line that starts at the first eligible step, and the steps without an eligible
    /// result named under it with the end.
    #[test]
    fn the_tune_path_chart_shows_each_step_and_the_best_eligible_so_far() {
        use crate::report::html::{TunePath, TuneStep};
        let step = |name: &str, value: Option<f64>, eligible: bool, verdict: &str| TuneStep {
            name: name.into(),
            value,
            eligible,
            verdict: verdict.into(),
            confirm: false,
        };
        let t = TunePath {
            metric: "output_tok_s".into(),
            maximize: true,
            steps: vec![
                step("mtt2048", Some(355.0), false, "kv_cache_bound"),
                step("mtt8192", None, false, "oom"),
                step("mtt32768", Some(735.0), true, "compute_bound"),
                step("mtt32768_mrr8", Some(700.0), true, "compute_bound"),
            ],
            end: "Stop: the launch budget is spent.".into(),
        };
        let h = tune_chart(&t);
        assert!(
            h.contains("id=\"tune\"") && h.contains("Tune path: output_tok_s at each step"),
            "{h}"
        );
        assert!(
            h.contains("each step") && h.contains("best eligible so far"),
            "{h}"
        );
        assert!(
            h.contains("Steps without an eligible result: 1 `mtt2048` (not eligible, kv_cache_bound), 2 `mtt8192` (failed: oom). Stop: the launch budget is spent."),
            "{h}"
        );
        // A minimised objective's best is the lowest.
        let low = TunePath {
            maximize: false,
            ..t.clone()
        };
        assert_ne!(tune_chart(&low), h);
        // Nothing measured: still a section, with the end said.
        let none = TunePath {
            steps: vec![step("a", None, false, "oom")],
            ..t.clone()
        };
        let h = tune_chart(&none);
        assert!(h.contains("1 `a` (failed: oom)"), "{h}");
        // A confirmation is named.
        let mut confirmed = t.clone();
        confirmed.steps.push(TuneStep {
            confirm: true,
            ..step("mtt32768", Some(720.0), true, "compute_bound")
        });
        let h = tune_chart(&confirmed);
        assert!(
            h.contains("Steps that launch a configuration again to confirm it (its value pools its launches): 5 `mtt32768`. Stop:"),
            "{h}"
        );
    }

    /// The decision is drawn from the typed `Decision`, as decision.md writes it: the leader,
    /// each configuration's eligibility and why it won or lost, the launch command; the
    /// sections under it from their own blocks. Nothing is read back from a file.
    #[test]
    fn the_decision_section_renders_from_a_decision_value() {
        let rows = vec![
            measured("fast", "32", "457.7", ("900", "44516")),
            measured("roomy", "32", "314.7", ("300", "1867")),
            row(&[
                ("run_name", "fp8"),
                ("status", "failed"),
                ("concurrency", "32"),
            ]),
        ];
        let o = crate::plan::spec::Objective::for_test(
            crate::plan::spec::Goal::Maximize,
            "output_tok_s",
            &[("ttft_ms_p99", crate::plan::spec::Bound::AtMost, 5000.0)],
        );
        let commands = [(
            "roomy".to_string(),
            "python -m sglang.launch_server --x <y>".to_string(),
        )]
        .into_iter()
        .collect();
        let d = crate::tune::decision::decide("s", &o, &rows, &commands, Default::default());
        let mut s = sweep(rows);
        s.decision = Some(d.clone());
        s.decision_sections = crate::report::decision::deadline_blocks(
            &["b.r2: c32 repeat 2".to_string()],
            std::path::Path::new("results/s"),
        );
        let html = sweep_page(&s);
        let start = html
            .find("<section id=\"decision\">")
            .expect("the decision");
        let sec = &html[start..start + html[start..].find("</section>").expect("its end")];
        assert!(sec.contains("<h2>Decision: s</h2>"), "{sec}");
        let leader = d.points[0].leader.clone().expect("a leader");
        assert_eq!(leader, "roomy");
        // The only eligible configuration wins (the SLO rules out the faster one).
        assert!(
            sec.contains(&format!("<strong>Winner: {leader}</strong>")),
            "{sec}"
        );
        // Each configuration's row: its rank (eligibility) and the reason, escaped; the
        // failure in red.
        for c in &d.points[0].configurations {
            assert!(
                sec.contains(&format!(">{}</td></tr>", esc(&c.why))),
                "{}: {sec}",
                c.run_name
            );
        }
        assert!(sec.contains("<td>1</td><td>roomy</td>"), "{sec}");
        assert!(sec.contains("<td>-</td><td>fast</td>"), "{sec}");
        assert!(sec.contains("&gt; 5000</td></tr>"), "{sec}");
        assert!(sec.contains("<td class=\"fail\">failed in 1 of 1"), "{sec}");
        assert!(
            sec.contains("<pre>python -m sglang.launch_server --x &lt;y&gt;\n</pre>"),
            "{sec}"
        );
        assert!(
            sec.contains("<h3>Not measured before the deadline</h3>"),
            "{sec}"
        );
        assert!(sec.contains("<li>b.r2: c32 repeat 2</li>"), "{sec}");
        // Without a decision, no section.
        assert!(!sweep_page(&sweep(Vec::new())).contains("id=\"decision\""));
    }
}
