//! `sgtune compare A B`: join two sweeps' rows on configuration (run name) and load point, and
//! judge each metric's change as better, worse or within noise. Noise comes from the repeats'
//! spread when both sides have repeats (|Δ| within two standard errors of the difference),
//! else from a stated relative threshold.

use crate::plan::engine::Engine;
use crate::record::Better;
use crate::record::Phase;
use crate::record::rows::{Col, Row};
use crate::report::doc::{self, Block};
use crate::tune::stats::mean_sd;
use serde::Serialize;

/// The columns compared when none are asked for.
pub const DEFAULT_METRICS: &[Col] = &[
    Col::OUTPUT_TOK_S,
    Col::REQUEST_THROUGHPUT,
    Col::TTFT_MS_P50,
    Col::TTFT_MS_P99,
    Col::TPOT_MS_P50,
    Col::E2E_MS_P50,
    Col::SERVER_GEN_TPUT_MEAN,
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Judgement {
    Better,
    Worse,
    WithinNoise,
    /// Beyond noise, on a column with no better direction (a capacity, a setting).
    Changed,
    /// A value is missing on one side.
    NotComparable,
}

impl Judgement {
    pub fn as_str(self) -> &'static str {
        match self {
            Judgement::Better => "better",
            Judgement::Worse => "worse",
            Judgement::WithinNoise => "within noise",
            Judgement::Changed => "changed",
            Judgement::NotComparable => "n/a",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Side {
    pub mean: f64,
    pub sd: Option<f64>,
    pub n: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// The column's name, as the tables and pages show it.
    pub metric: String,
    /// The column compared (its direction judges the change).
    #[serde(skip)]
    pub column: Col,
    pub a: Option<Side>,
    pub b: Option<Side>,
    pub delta: Option<f64>,
    pub relative: Option<f64>,
    pub judgement: Judgement,
    /// How noise was judged: "repeats" or "threshold 5%".
    pub noise_basis: String,
    /// The noise band the judgement used, in the metric's unit: a change within ± this is
    /// noise (None: a value missing on one side).
    #[serde(skip)]
    pub band: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Joined {
    pub run_name: String,
    pub concurrency: String,
    /// `measured`, or `search` for pre-flight attempts and max-load probes (their own
    /// section, after the measured phases).
    pub section: &'static str,
    pub cells: Vec<Cell>,
}

/// The section of a row: the measured phases, or the searches' attempts and probes.
fn section(r: &Row) -> &'static str {
    match r.phase() {
        Phase::Preflight | Phase::Probe => "search",
        Phase::Measure => "measured",
    }
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct Comparison {
    pub joined: Vec<Joined>,
    /// `name @ concurrency` present (with ok rows) only on one side.
    pub only_a: Vec<String>,
    pub only_b: Vec<String>,
    /// Differences in versions, hardware, model (from the manifests), shown above the table.
    pub context: Vec<String>,
    /// `name @ concurrency: A's engine → B's`: a configuration that ran another engine in B
    /// (an identity change, not a metric), shown above the table.
    pub engine_changed: Vec<String>,
    /// The decision diff (`tune::diff`), shown first in every format.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<crate::tune::diff::DecisionDiff>,
}

impl Comparison {
    /// Set the decision diff, with the regressions of A's leader that `--fail-on
    /// winner-regressed` trips on ([`winner_regressions`], the one test of it), so that the
    /// paragraph a ticket quotes names them.
    pub fn set_decision(&mut self, mut d: crate::tune::diff::DecisionDiff) {
        self.decision = Some(d.clone());
        let falls = winner_regressions(self)
            .into_iter()
            .map(|w| crate::tune::diff::WinnerFall {
                load_point: w.point.to_string(),
                run_name: w.leader.to_string(),
                metric: w.cell.column.clone(),
                a: w.cell.a.as_ref().map_or(f64::NAN, |x| x.mean),
                b: w.cell.b.as_ref().map_or(f64::NAN, |x| x.mean),
                band: w.cell.band,
            })
            .collect();
        d.note_winner_falls(falls);
        self.decision = Some(d);
    }
}

fn side(rows: &[&Row], metric: &Col) -> Option<Side> {
    let v: Vec<f64> = rows
        .iter()
        .filter(|r| r.is_ok())
        .filter_map(|r| r.metric(metric))
        .collect();
    mean_sd(&v).map(|(mean, sd)| Side {
        mean,
        sd,
        n: v.len(),
    })
}

/// Judge B against A for one metric.
pub fn judge(metric: &Col, a: Option<&Side>, b: Option<&Side>, threshold: f64) -> Cell {
    let mut cell = Cell {
        metric: metric.name(),
        column: metric.clone(),
        a: a.cloned(),
        b: b.cloned(),
        delta: None,
        relative: None,
        judgement: Judgement::NotComparable,
        noise_basis: String::new(),
        band: None,
    };
    let (Some(a), Some(b)) = (a, b) else {
        return cell;
    };
    let delta = b.mean - a.mean;
    cell.delta = Some(delta);
    cell.relative = (a.mean != 0.0).then(|| delta / a.mean.abs());
    let within = match (a.sd, b.sd) {
        (Some(sa), Some(sb)) => {
            cell.noise_basis = "repeats".into();
            let band = 2.0 * (sa * sa / a.n as f64 + sb * sb / b.n as f64).sqrt();
            cell.band = Some(band);
            delta.abs() <= band
        }
        _ => {
            cell.noise_basis = format!("threshold {:.0}%", threshold * 100.0);
            cell.band = Some(threshold * a.mean.abs());
            match cell.relative {
                Some(r) => r.abs() <= threshold,
                None => delta == 0.0,
            }
        }
    };
    // The direction comes from the column's own definition (plan::columns).
    let improved = match metric.better() {
        Better::Higher => Some(delta > 0.0),
        Better::Lower => Some(delta < 0.0),
        Better::Neither => None,
    };
    cell.judgement = match (within, improved) {
        (true, _) => Judgement::WithinNoise,
        (false, Some(true)) => Judgement::Better,
        (false, Some(false)) => Judgement::Worse,
        (false, None) => Judgement::Changed,
    };
    cell
}

type Key = (String, String, &'static str);

fn keyed(rows: &[Row]) -> Vec<(Key, Vec<&Row>)> {
    let mut out: Vec<(Key, Vec<&Row>)> = Vec::new();
    for r in rows {
        let k = (r.run_name().to_string(), r.load_point(), section(r));
        match out.iter_mut().find(|(key, _)| *key == k) {
            Some((_, v)) => v.push(r),
            None => out.push((k, vec![r])),
        }
    }
    out
}

/// The engine a configuration's rows ran on (None: a results.csv from before the column).
fn engine(rows: &[&Row]) -> Option<&'static str> {
    rows.iter().find_map(|r| r.engine().map(Engine::as_str))
}

/// A metric [`compare`] is asked for: a column. A name is taken too, resolved to its column
/// (one that is none is left out), only because report/html/page.rs's tests still pass
/// names: drop `impl Metric for String` once they pass columns.
pub trait Metric {
    fn column(&self) -> Option<Col>;
}

impl Metric for Col {
    fn column(&self) -> Option<Col> {
        Some(self.clone())
    }
}

impl Metric for String {
    fn column(&self) -> Option<Col> {
        Col::named(self)
    }
}

pub fn compare<M: Metric>(a: &[Row], b: &[Row], metrics: &[M], threshold: f64) -> Comparison {
    let metrics: Vec<Col> = metrics.iter().filter_map(Metric::column).collect();
    let ka = keyed(a);
    let kb = keyed(b);
    let has_ok = |v: &[&Row]| v.iter().any(|r| r.is_ok());
    let mut c = Comparison::default();
    for (key, ra) in &ka {
        let Some((_, rb)) = kb.iter().find(|(k, _)| k == key) else {
            c.only_a.push(format!("{} @{}", key.0, key.1));
            continue;
        };
        if let (Some(ea), Some(eb)) = (engine(ra), engine(rb)) {
            if ea != eb {
                c.engine_changed
                    .push(format!("{} @{}: {ea} → {eb}", key.0, key.1));
            }
        }
        match (has_ok(ra), has_ok(rb)) {
            (true, true) => c.joined.push(Joined {
                run_name: key.0.clone(),
                concurrency: key.1.clone(),
                section: key.2,
                cells: metrics
                    .iter()
                    .map(|m| judge(m, side(ra, m).as_ref(), side(rb, m).as_ref(), threshold))
                    .collect(),
            }),
            (true, false) => c
                .only_a
                .push(format!("{} @{} (no ok row in B)", key.0, key.1)),
            (false, true) => c
                .only_b
                .push(format!("{} @{} (no ok row in A)", key.0, key.1)),
            (false, false) => {}
        }
    }
    for (key, _) in &kb {
        if !ka.iter().any(|(k, _)| k == key) {
            c.only_b.push(format!("{} @{}", key.0, key.1));
        }
    }
    c
}

fn fmt_side(s: &Option<Side>) -> String {
    match s {
        None => "-".into(),
        Some(Side {
            mean, sd: Some(sd), ..
        }) => format!("{mean:.2} ± {sd:.2}"),
        Some(Side { mean, .. }) => format!("{mean:.2}"),
    }
}

/// A cell the folded table shows: a change beyond noise (or a changed setting).
fn shown(cell: &Cell) -> bool {
    matches!(
        cell.judgement,
        Judgement::Better | Judgement::Worse | Judgement::Changed
    )
}

/// The joined rows in reading order: measured phases first, then the searches' attempts and
/// probes; within each, grouped by configuration (first appearance), load points in order.
fn ordered(c: &Comparison) -> Vec<&Joined> {
    let mut names: Vec<&str> = Vec::new();
    for j in &c.joined {
        if !names.contains(&j.run_name.as_str()) {
            names.push(&j.run_name);
        }
    }
    let mut out: Vec<(usize, &Joined)> = c.joined.iter().enumerate().collect();
    out.sort_by_key(|(i, j)| {
        (
            j.section != "measured",
            names.iter().position(|n| *n == j.run_name),
            *i,
        )
    });
    out.into_iter().map(|(_, j)| j).collect()
}

/// The table's header and rows (every cell with `all`, else only changes beyond noise), and
/// how many cells were left out.
fn table_rows(c: &Comparison, all: bool) -> (Vec<String>, Vec<Vec<String>>, usize) {
    let header = [
        "run",
        "concurrency",
        "metric",
        "A",
        "B",
        "Δ",
        "Δ%",
        "change",
    ]
    .map(String::from)
    .to_vec();
    let mut rows = Vec::new();
    let mut hidden = 0;
    for j in ordered(c) {
        for cell in &j.cells {
            if !all && !shown(cell) {
                hidden += 1;
                continue;
            }
            let run = if j.section == "measured" {
                j.run_name.clone()
            } else {
                format!("{} (search)", j.run_name)
            };
            rows.push(vec![
                run,
                j.concurrency.clone(),
                cell.metric.clone(),
                fmt_side(&cell.a),
                fmt_side(&cell.b),
                cell.delta.map_or("-".into(), |d| format!("{d:+.2}")),
                cell.relative
                    .map_or("-".into(), |r| format!("{:+.1}%", r * 100.0)),
                cell.judgement.as_str().to_string(),
            ]);
        }
    }
    (header, rows, hidden)
}

/// The decision diff as text: the paragraph, then the details.
pub fn render_diff(d: &crate::tune::diff::DecisionDiff) -> String {
    doc::markdown(&diff_blocks(d))
}

/// The decision diff as document blocks (`compare` prints them as Markdown, report.html draws
/// them as HTML).
pub fn diff_blocks(d: &crate::tune::diff::DecisionDiff) -> Vec<Block> {
    use crate::tune::diff::leader_text;
    let mut out = vec![Block::Para(format!("Decision: {}", d.paragraph))];
    let mut head = vec![format!("Objective: {}", d.objective)];
    if let Some(n) = &d.objective_note {
        head.push(format!("Note: {n}"));
    }
    out.push(Block::Lines(head));
    let mut rows = Vec::new();
    for p in &d.points {
        rows.push(vec![
            p.label.clone(),
            leader_text(p.a_leader.as_deref(), p.a_outcome),
            leader_text(p.b_leader.as_deref(), p.b_outcome),
            match p.noise {
                Some(n) => format!("changed ({})", n.as_str()),
                None => "same".into(),
            },
        ]);
    }
    if !rows.is_empty() {
        let header = ["load point", "A leader", "B leader", "decision"].map(String::from);
        out.push(Block::Table {
            header: header.to_vec(),
            rows,
        });
    }
    let many = d.points.len() > 1;
    let mut rows = Vec::new();
    for c in &d.configurations {
        let load = |x: &Option<String>| x.clone().unwrap_or_else(|| "-".into());
        let why = |s: crate::tune::diff::Stand, w: &str| {
            if w.is_empty() || s == crate::tune::diff::Stand::Eligible {
                s.as_str().to_string()
            } else {
                let short: String = w.chars().take(80).collect();
                format!(
                    "{} ({short}{})",
                    s.as_str(),
                    if short.len() < w.len() { "…" } else { "" }
                )
            }
        };
        let mut line = vec![c.run_name.clone()];
        if many {
            line.push(c.load_point.clone());
        }
        line.extend([
            why(c.a, &c.a_why),
            why(c.b, &c.b_why),
            if c.flipped {
                "flipped".into()
            } else if c.a == c.b {
                "same".into()
            } else {
                "one side only".into()
            },
        ]);
        if c.a_max_load.is_some() || c.b_max_load.is_some() {
            line.push(format!("{} → {}", load(&c.a_max_load), load(&c.b_max_load)));
        }
        rows.push(line);
    }
    if !rows.is_empty() {
        let mut header = vec!["configuration".to_string()];
        if many {
            header.push("load point".into());
        }
        header.extend(["A standing", "B standing", "standing"].map(String::from));
        if rows.iter().any(|r| r.len() > header.len()) {
            header.push("max load within SLO".into());
        }
        out.push(Block::Table { header, rows });
    }
    if let Some(p) = &d.preflight {
        let w = |x: Option<f64>| x.map_or("none".to_string(), crate::tune::decision::num);
        out.push(Block::Para(format!(
            "Pre-flight {}: {} → {} ({})",
            p.knob,
            w(p.a),
            w(p.b),
            if p.a == p.b { "same" } else { "changed" }
        )));
    }
    for (label, list) in [
        ("Environment differs", &d.environment),
        ("Configurations only in A", &d.only_a),
        ("Configurations only in B", &d.only_b),
    ] {
        if !list.is_empty() {
            out.push(Block::List {
                intro: Some(format!("{label}:")),
                items: list.clone(),
            });
        }
    }
    out
}

/// What `compare --fail-on` gates on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Gate {
    /// The leader changed at some load point.
    Decision,
    /// A metric of A's leader (winner) got worse beyond noise in B, at the load it led.
    WinnerRegressed,
    /// A configuration eligible in A is not in B (SLO, quality, failure).
    Ineligible,
}

/// A metric of A's leader at a load point that got worse beyond noise in B.
pub struct WinnerRegression<'c> {
    /// The decision's load point (`max_load_at_slo` for a search).
    pub point: &'c str,
    pub leader: &'c str,
    /// The load it led at: the point's, or its own highest within the SLO for a search.
    pub load: String,
    pub cell: &'c Cell,
}

/// `--fail-on winner-regressed`'s test, and the decision paragraph's: at each load point, A's
/// leader's metrics judged worse beyond noise at the load it led at.
pub fn winner_regressions(c: &Comparison) -> Vec<WinnerRegression<'_>> {
    let Some(d) = &c.decision else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for p in &d.points {
        let Some(l) = &p.a_leader else { continue };
        // At the load it led at: its own highest within the SLO, for a search.
        let lp = d
            .configurations
            .iter()
            .find(|x| &x.run_name == l && x.load_point == p.load_point)
            .and_then(|x| x.a_max_load.clone())
            .unwrap_or_else(|| p.load_point.clone());
        for j in c
            .joined
            .iter()
            .filter(|j| &j.run_name == l && j.concurrency == lp)
        {
            for cell in j.cells.iter().filter(|x| x.judgement == Judgement::Worse) {
                out.push(WinnerRegression {
                    point: &p.load_point,
                    leader: l,
                    load: lp.clone(),
                    cell,
                });
            }
        }
    }
    out
}

/// The gates among `gates` that this comparison trips, each with why.
pub fn tripped(c: &Comparison, gates: &[Gate]) -> Vec<String> {
    let Some(d) = &c.decision else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for g in gates {
        match g {
            Gate::Decision => {
                for p in d.points.iter().filter(|p| p.changed) {
                    out.push(format!(
                        "decision: the leader at {} changed ({} → {})",
                        p.label,
                        p.a_leader.as_deref().unwrap_or("none"),
                        p.b_leader.as_deref().unwrap_or("none")
                    ));
                }
            }
            Gate::Ineligible => {
                for x in d.became_ineligible() {
                    out.push(format!("ineligible: {x} was eligible in A and is not in B"));
                }
            }
            Gate::WinnerRegressed => {
                for w in winner_regressions(c) {
                    out.push(format!(
                        "winner-regressed: {} @{} {}: {} → {} ({})",
                        w.leader,
                        w.load,
                        w.cell.metric,
                        fmt_side(&w.cell.a),
                        fmt_side(&w.cell.b),
                        w.cell.noise_basis
                    ));
                }
            }
        }
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Markdown,
    Csv,
    Json,
}

/// The comparison in `format`: the decision diff first, then the per-metric table (folded to
/// the changes beyond noise unless `all`; CSV and JSON always carry every row).
pub fn render(c: &Comparison, format: Format, all: bool) -> String {
    match format {
        Format::Json => serde_json::to_string_pretty(c).unwrap_or_default(),
        Format::Csv => {
            let (header, rows, _) = table_rows(c, true);
            let mut w = csv::Writer::from_writer(Vec::new());
            let _ = w.write_record(&header);
            // The decision diff as rows of the same columns: the leader per load point, the
            // standing per configuration.
            if let Some(d) = &c.decision {
                use crate::tune::diff::leader_text;
                for p in &d.points {
                    let _ = w.write_record([
                        "",
                        p.load_point.as_str(),
                        "decision_leader",
                        &leader_text(p.a_leader.as_deref(), p.a_outcome),
                        &leader_text(p.b_leader.as_deref(), p.b_outcome),
                        "-",
                        "-",
                        &p.noise
                            .map_or("same".to_string(), |n| format!("changed ({})", n.as_str())),
                    ]);
                }
                for x in &d.configurations {
                    let _ = w.write_record([
                        x.run_name.as_str(),
                        x.load_point.as_str(),
                        "decision_standing",
                        x.a.as_str(),
                        x.b.as_str(),
                        "-",
                        "-",
                        if x.flipped {
                            "changed"
                        } else if x.a == x.b {
                            "same"
                        } else {
                            "one side only"
                        },
                    ]);
                }
            }
            for r in &rows {
                let _ = w.write_record(r);
            }
            String::from_utf8_lossy(&w.into_inner().unwrap_or_default()).into_owned()
        }
        Format::Table | Format::Markdown => {
            let mut out = String::new();
            if let Some(d) = &c.decision {
                out.push_str(&render_diff(d));
                out.push_str("\nPer metric:\n\n");
            }
            if !c.context.is_empty() && c.decision.is_none() {
                out.push_str("Provenance differs:\n");
                for d in &c.context {
                    out.push_str(&format!("- {d}\n"));
                }
                out.push('\n');
            }
            if !c.engine_changed.is_empty() {
                out.push_str("Engine changed (the same name ran another server):\n");
                for d in &c.engine_changed {
                    out.push_str(&format!("- {d}\n"));
                }
                out.push('\n');
            }
            let (header, rows, hidden) = table_rows(c, all);
            if rows.is_empty() {
                out.push_str("No metric changed beyond noise.\n");
            } else {
                out.push_str(&crate::report::table::render_plain(&header, &rows));
            }
            if hidden > 0 {
                out.push_str(&format!(
                    "({hidden} within noise or not comparable, not shown; --all shows every row)\n"
                ));
            }
            for (label, list) in [("Only in A", &c.only_a), ("Only in B", &c.only_b)] {
                if !list.is_empty() {
                    out.push_str(&format!("\n{label}:\n"));
                    for x in list {
                        out.push_str(&format!("- {x}\n"));
                    }
                }
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(name: &str, tok: f64, ttft: f64) -> Row {
        let mut m = std::collections::BTreeMap::new();
        for (k, v) in [
            ("run_name", name.to_string()),
            ("concurrency", "8".into()),
            ("status", "ok".into()),
            ("output_tok_s", tok.to_string()),
            ("ttft_ms_p50", ttft.to_string()),
        ] {
            m.insert(k.to_string(), v);
        }
        Row::from_cells(m)
    }

    #[test]
    fn direction_comes_from_the_column() {
        let row = |g: f64, cap: f64| {
            Row::from_cells(
                [
                    ("run_name", "x".to_string()),
                    ("status", "ok".to_string()),
                    ("concurrency", "8".to_string()),
                    ("repeat", "1".to_string()),
                    ("goodput_share", g.to_string()),
                    ("max_total_num_tokens", cap.to_string()),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v)),
            )
        };
        let metrics = [
            Col::Listed(crate::plan::columns::Column::GoodputShare),
            Col::MAX_TOTAL_NUM_TOKENS,
        ];
        let c = compare(&[row(0.5, 1000.0)], &[row(0.9, 2000.0)], &metrics, 0.05);
        assert_eq!(
            c.joined[0].cells[0].judgement,
            Judgement::Better,
            "more requests within the SLO is better"
        );
        assert_eq!(
            c.joined[0].cells[1].judgement,
            Judgement::Changed,
            "a capacity is neither better nor worse"
        );
        let c = compare(&[row(0.9, 1000.0)], &[row(0.5, 1000.0)], &metrics, 0.05);
        assert_eq!(c.joined[0].cells[0].judgement, Judgement::Worse);
    }

    #[test]
    fn judges_direction_and_noise() {
        let metrics = [Col::OUTPUT_TOK_S, Col::TTFT_MS_P50];
        let c = compare(
            &[r("x", 100.0, 50.0)],
            &[r("x", 150.0, 40.0)],
            &metrics,
            0.05,
        );
        assert_eq!(c.joined[0].cells[0].judgement, Judgement::Better);
        assert_eq!(
            c.joined[0].cells[1].judgement,
            Judgement::Better,
            "lower latency is better"
        );
        let c = compare(
            &[r("x", 100.0, 50.0)],
            &[r("x", 103.0, 60.0)],
            &metrics,
            0.05,
        );
        assert_eq!(c.joined[0].cells[0].judgement, Judgement::WithinNoise);
        assert_eq!(c.joined[0].cells[1].judgement, Judgement::Worse);
        // With repeats, the spread decides: a 10% change inside a wide spread is noise.
        let a = [r("x", 80.0, 1.0), r("x", 120.0, 1.0), r("x", 100.0, 1.0)];
        let b = [r("x", 90.0, 1.0), r("x", 130.0, 1.0), r("x", 110.0, 1.0)];
        let c = compare(&a, &b, &metrics, 0.05);
        assert_eq!(c.joined[0].cells[0].judgement, Judgement::WithinNoise);
        assert_eq!(c.joined[0].cells[0].noise_basis, "repeats");
    }

    /// A configuration that ran another engine in B is named above the table, not judged as
    /// a metric; rows without the column (older sweeps) say nothing either way.
    #[test]
    fn an_engine_change_is_an_identity_change() {
        let on = |e: &str, tok: f64| {
            let mut x = r("a", tok, 10.0);
            x.set_cell("engine", e);
            x
        };
        let metrics = [Col::OUTPUT_TOK_S];
        let c = compare(&[on("sglang", 100.0)], &[on("vllm", 130.0)], &metrics, 0.05);
        assert_eq!(c.engine_changed, ["a @8: sglang → vllm"]);
        assert_eq!(c.joined[0].cells[0].judgement, Judgement::Better);
        let t = render(&c, Format::Table, true);
        assert!(
            t.starts_with(
                "Engine changed (the same name ran another server):\n- a @8: sglang → vllm\n"
            ),
            "{t}"
        );
        let same = compare(&[on("vllm", 100.0)], &[on("vllm", 130.0)], &metrics, 0.05);
        assert!(same.engine_changed.is_empty());
        let old = compare(&[r("a", 100.0, 10.0)], &[on("vllm", 130.0)], &metrics, 0.05);
        assert!(old.engine_changed.is_empty());
        assert!(!render(&same, Format::Table, true).contains("Engine changed"));
    }

    #[test]
    fn one_sided_runs_are_listed() {
        let c = compare(
            &[r("x", 1.0, 1.0), r("only-a", 1.0, 1.0)],
            &[r("x", 1.0, 1.0), r("only-b", 1.0, 1.0)],
            &[Col::OUTPUT_TOK_S],
            0.05,
        );
        assert_eq!(c.only_a, ["only-a @8"]);
        assert_eq!(c.only_b, ["only-b @8"]);
        let out = render(&c, Format::Table, true);
        assert!(
            out.contains("Only in A") && out.contains("within noise"),
            "{out}"
        );
        assert!(render(&c, Format::Csv, true).starts_with("run,concurrency,metric"));
        assert!(render(&c, Format::Json, true).contains("\"joined\""));
    }

    /// By default only changes beyond noise, grouped by configuration, measured phases
    /// first and the searches' rows in their own section; `--all` shows every row.
    #[test]
    fn the_table_folds_and_groups() {
        let probe = |name: &str, tok: f64| {
            let mut x = r(name, tok, 10.0);
            x.set_cell("phase", "probe");
            x
        };
        let at = |mut x: Row, c: &str| {
            x.set_cell("concurrency", c);
            x
        };
        let a = [
            probe("x", 100.0),
            r("x", 100.0, 10.0),
            r("y", 100.0, 10.0),
            at(r("x", 100.0, 10.0), "16"),
        ];
        let b = [
            probe("x", 200.0),
            r("x", 101.0, 20.0),
            r("y", 150.0, 10.0),
            at(r("x", 300.0, 10.0), "16"),
        ];
        let metrics = [Col::OUTPUT_TOK_S, Col::TTFT_MS_P50];
        let c = compare(&a, &b, &metrics, 0.05);
        let t = render(&c, Format::Table, false);
        let runs: Vec<(String, String, String)> = t
            .lines()
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .map(|l| {
                let v: Vec<String> = l.split('|').map(|c| c.trim().to_string()).collect();
                (v[1].clone(), v[2].clone(), v[3].clone())
            })
            .collect();
        let want = [
            ("x", "8", "ttft_ms_p50"),
            ("x", "16", "output_tok_s"),
            ("y", "8", "output_tok_s"),
            ("x (search)", "8", "output_tok_s"),
        ]
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()));
        assert_eq!(runs, want, "{t}");
        assert!(
            t.contains("(4 within noise or not comparable, not shown; --all shows every row)"),
            "{t}"
        );
        let all = render(&c, Format::Table, true);
        assert_eq!(all.matches("within noise |").count(), 4, "{all}");
        assert!(!all.contains("not shown"), "{all}");
        // Nothing beyond noise: said in words.
        let c = compare(&a, &a, &metrics, 0.05);
        assert!(render(&c, Format::Table, false).contains("No metric changed beyond noise."));
    }

    fn decided(a: &[Row], b: &[Row]) -> Comparison {
        let metrics = [Col::OUTPUT_TOK_S, Col::TTFT_MS_P50];
        let mut c = compare(a, b, &metrics, 0.05);
        let v = |rows| crate::tune::diff::SweepView {
            rows,
            objective: None,
            manifest: None,
            preflight_knob: None,
        };
        c.set_decision(crate::tune::diff::diff(&v(a), &v(b), 0.05));
        c
    }

    /// The winner stays the winner but its objective fell 25% beyond noise: the paragraph says
    /// so with the numbers the winner-regressed gate trips on; a fall within noise is not named.
    #[test]
    fn the_paragraph_names_the_winners_fall_beyond_noise() {
        let a = [r("x", 1200.0, 10.0), r("y", 100.0, 10.0)];
        let c = decided(&a, &[r("x", 900.0, 10.0), r("y", 100.0, 10.0)]);
        let d = c.decision.as_ref().expect("decided");
        assert_eq!(
            d.paragraph,
            "Same decision at concurrency 8: x (leader, no noise measured) in both, but its output_tok_s fell 25% (1200 → 900), beyond the noise (±5.0%)."
        );
        assert!(!d.same);
        assert_eq!(
            tripped(&c, &[Gate::WinnerRegressed]),
            ["winner-regressed: x @8 output_tok_s: 1200.00 → 900.00 (threshold 5%)"]
        );
        // Latency rises; two metrics worse: the first named, the other counted.
        let c = decided(&a, &[r("x", 900.0, 20.0), r("y", 100.0, 10.0)]);
        assert!(
            c.decision.as_ref().expect("decided").paragraph.contains(
                "but its output_tok_s fell 25% (1200 → 900), beyond the noise (±5.0%), and 1 more metric(s) got worse"
            ),
            "{:?}",
            c.decision
        );
        let c = decided(&a, &[r("x", 1000.0, 13.0), r("y", 100.0, 10.0)]);
        assert!(c.decision.as_ref().expect("decided").paragraph.contains(
            "but its output_tok_s fell 17% (1200 → 1000), beyond the noise (±5.0%), and 1 more"
        ));
        // Within noise (3%): the decision is the same, nothing named, nothing tripped.
        let c = decided(&a, &[r("x", 1164.0, 10.0), r("y", 100.0, 10.0)]);
        assert_eq!(
            c.decision.as_ref().expect("decided").paragraph,
            "Same decision at concurrency 8: x (leader, no noise measured) in both. Nothing the decision rests on changed."
        );
        assert!(tripped(&c, &[Gate::WinnerRegressed]).is_empty());
    }

    /// Each gate trips on its own change, and none on a folder against itself.
    #[test]
    fn fail_on_gates() {
        let all = [Gate::Decision, Gate::WinnerRegressed, Gate::Ineligible];
        let a = [r("x", 200.0, 10.0), r("y", 100.0, 10.0)];
        assert!(tripped(&decided(&a, &a), &all).is_empty());
        // y overtakes x: the decision changed; x's latency regressed.
        let b = [r("x", 200.0, 20.0), r("y", 300.0, 10.0)];
        let c = decided(&a, &b);
        assert_eq!(
            tripped(&c, &[Gate::Decision]),
            ["decision: the leader at concurrency 8 changed (x → y)"]
        );
        assert_eq!(
            tripped(&c, &[Gate::WinnerRegressed]),
            ["winner-regressed: x @8 ttft_ms_p50: 10.00 → 20.00 (threshold 5%)"]
        );
        assert!(tripped(&c, &[Gate::Ineligible]).is_empty());
        // x fails in B: ineligible (and the decision changed).
        let mut failed = r("x", 0.0, 0.0);
        failed.set_cell("status", "failed");
        let c = decided(&a, &[failed, r("y", 100.0, 10.0)]);
        assert_eq!(
            tripped(&c, &[Gate::Ineligible]),
            ["ineligible: x @8 was eligible in A and is not in B"]
        );
        // No gate asked, none tripped.
        assert!(tripped(&c, &[]).is_empty());
        // Every format carries the diff first.
        let t = render(&c, Format::Table, false);
        assert!(
            t.starts_with("Decision: The decision changed at concurrency 8: x (leader, no noise measured) in A, y (winner) in B (noise not measured)."),
            "{t}"
        );
        let csv = render(&c, Format::Csv, false);
        assert!(
            csv.lines()
                .nth(1)
                .is_some_and(|l| l.starts_with(",8,decision_leader,")),
            "{csv}"
        );
        let j: serde_json::Value =
            serde_json::from_str(&render(&c, Format::Json, false)).unwrap_or_default();
        assert_eq!(j["decision"]["points"][0]["changed"], true, "{j}");
        assert_eq!(j["decision"]["configurations"][0]["b"], "failed", "{j}");
    }
}
