//! The two-sweep page (`sgtune report A B`): the decision's diff, every change judged as
//! `sgtune compare` judges it, then both sweeps side by side.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::style::{FOOT, head};
use super::sweep::{launches, sweep_body};
use super::{Sweep, esc};
use crate::report::doc;
use crate::tune::compare::{Comparison, Judgement};

fn judgement_class(j: Judgement) -> &'static str {
    match j {
        Judgement::Better => "better",
        Judgement::Worse => "worse",
        _ => "",
    }
}

fn fmt_side(s: Option<&crate::tune::compare::Side>) -> String {
    match s {
        None => "-".into(),
        Some(s) => match s.sd {
            Some(sd) => format!("{:.1} ± {:.1} (n={})", s.mean, sd, s.n),
            None => format!("{:.1}", s.mean),
        },
    }
}

/// Two sweeps side by side, every change judged as `sgtune compare` judges it.
pub fn compare_page(a: &Sweep, b: &Sweep, c: &Comparison) -> String {
    let mut o = head(&format!("sgtune report: {} vs {}", a.name, b.name));
    let _ = write!(
        o,
        "<h1>sgtune report: A {} vs B {}</h1><p class=\"sub\">A: <code>{}</code><br>B: \
         <code>{}</code></p>",
        esc(&a.name),
        esc(&b.name),
        esc(&a.dir),
        esc(&b.dir)
    );
    // The decision diff first: the paragraph for a ticket, then its details.
    if let Some(d) = &c.decision {
        o.push_str("<section id=\"decision-diff\"><h2>Decision: what changed</h2>");
        o.push_str(&doc::html(&crate::report::compare::diff_blocks(d), 2));
        o.push_str("</section>");
    }
    o.push_str("<h2>Changes from A to B</h2>");
    if c.decision.is_none() {
        for ctx in &c.context {
            let _ = write!(o, "<p class=\"note\">{}</p>", esc(ctx));
        }
    }
    for e in &c.engine_changed {
        let _ = write!(
            o,
            "<p class=\"note\">Engine changed (the same name ran another server): {}</p>",
            esc(e)
        );
    }
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    let header = "<tr><th>run</th><th>load point</th>\
         <th>metric</th><th>A</th><th>B</th><th>change</th><th>judgement</th><th>noise \
         judged by</th></tr>";
    // Changes beyond noise in the table; the rest folded under it. Measured phases first,
    // grouped by configuration; the searches' attempts and probes after them.
    let (mut shown, mut folded) = (String::new(), String::new());
    let mut joined: Vec<&crate::tune::compare::Joined> = c.joined.iter().collect();
    joined.sort_by_key(|j| j.section != "measured");
    for j in joined {
        for cell in &j.cells {
            *counts.entry(cell.judgement.as_str()).or_default() += 1;
            let rel = cell
                .relative
                .map(|r| format!("{:+.1}%", r * 100.0))
                .unwrap_or_else(|| "-".into());
            let to = if matches!(
                cell.judgement,
                Judgement::Better | Judgement::Worse | Judgement::Changed
            ) {
                &mut shown
            } else {
                &mut folded
            };
            let run = if j.section == "measured" {
                j.run_name.clone()
            } else {
                format!("{} (search)", j.run_name)
            };
            let _ = write!(
                to,
                "<tr class=\"{}\"><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td>\
                 <td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                judgement_class(cell.judgement),
                esc(&run),
                esc(&j.concurrency),
                esc(&cell.metric),
                esc(&fmt_side(cell.a.as_ref())),
                esc(&fmt_side(cell.b.as_ref())),
                esc(&rel),
                esc(cell.judgement.as_str()),
                esc(&cell.noise_basis)
            );
        }
    }
    let _ = write!(
        o,
        "<div class=\"scroll\"><table id=\"changes\">{header}{shown}</table></div>"
    );
    if !folded.is_empty() {
        let _ = write!(
            o,
            "<details id=\"within-noise\"><summary>Within noise or not comparable</summary>\
             <div class=\"scroll\"><table>{header}{folded}</table></div></details>"
        );
    }
    let summary: Vec<String> = counts.iter().map(|(k, v)| format!("{v} {k}")).collect();
    let _ = write!(o, "<p>{}</p>", esc(&summary.join(", ")));
    if !c.only_a.is_empty() {
        let _ = write!(o, "<p>Only in A: {}</p>", esc(&c.only_a.join(", ")));
    }
    if !c.only_b.is_empty() {
        let _ = write!(o, "<p>Only in B: {}</p>", esc(&c.only_b.join(", ")));
    }
    o.push_str("<div class=\"two\"><div>");
    let _ = write!(o, "<h2>A: {}</h2>", esc(&a.name));
    o.push_str(&sweep_body(a, "a-cfg-", 1));
    o.push_str(&launches(a, 1, "a-"));
    o.push_str("</div><div>");
    let _ = write!(o, "<h2>B: {}</h2>", esc(&b.name));
    o.push_str(&sweep_body(b, "b-cfg-", 1));
    o.push_str(&launches(b, 1, "b-"));
    o.push_str("</div></div>");
    o.push_str(FOOT);
    o
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::report::html::testing::{measured, sweep};
    /// A configuration that ran another engine in B is said above the changes, as
    /// `sgtune compare` says it.
    #[test]
    fn the_compare_page_names_an_engine_change() {
        let on = |e: &str, tput: &str| {
            let mut r = measured("a", "8", tput, ("10", "20"));
            r.set_cell("engine", e);
            r
        };
        let (a, b) = (
            sweep(vec![on("sglang", "100")]),
            sweep(vec![on("vllm", "130")]),
        );
        let metrics = vec!["output_tok_s".to_string()];
        let c = crate::tune::compare::compare(&a.rows, &b.rows, &metrics, 0.05);
        let html = compare_page(&a, &b, &c);
        assert!(
            html.contains(
                "<p class=\"note\">Engine changed (the same name ran another server): a @8: sglang → vllm</p>"
            ),
            "{html}"
        );
    }
}
