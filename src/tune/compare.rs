//! `sgtune compare A B`'s judgement: join two sweeps' rows on configuration (run name) and load
//! point, and judge each metric's change as better, worse or within noise; and the gates
//! `--fail-on` trips (the leader changed, the winner regressed beyond noise, a configuration
//! turned ineligible). Noise comes from the repeats' spread when both sides have repeats (|Δ|
//! within two standard errors of the difference), else from a stated relative threshold.
//! Pure, beside `tune::diff` (the decision diff); `report::compare` renders.

use crate::plan::engine::Engine;
use crate::record::Better;
use crate::record::Phase;
use crate::record::rows::{Col, Row};
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

/// A side's figure as the table and the gates write it: the mean, ± the repeats' spread.
pub fn fmt_side(s: &Option<Side>) -> String {
    match s {
        None => "-".into(),
        Some(Side {
            mean, sd: Some(sd), ..
        }) => format!("{mean:.2} ± {sd:.2}"),
        Some(Side { mean, .. }) => format!("{mean:.2}"),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A row of run `name` at concurrency 8 with its output tok/s and TTFT p50 (report::compare's
    /// tests use it too).
    pub(crate) fn r(name: &str, tok: f64, ttft: f64) -> Row {
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
}
