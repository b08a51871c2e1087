//! `sgtune compare A B`: join two sweeps' rows on configuration (run name) and load point, and
//! judge each metric's change as better, worse or within noise. Noise comes from the repeats'
//! spread when both sides have repeats (|Δ| within two standard errors of the difference),
//! else from a stated relative threshold.

use crate::record::Better;
use crate::record::rows::Row;
use crate::tune::stats::mean_sd;
use serde::Serialize;

pub const DEFAULT_METRICS: &[&str] = &[
    "output_tok_s",
    "request_throughput",
    "ttft_ms_p50",
    "ttft_ms_p99",
    "tpot_ms_p50",
    "e2e_ms_p50",
    "server_gen_tput_mean",
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
    pub metric: String,
    pub a: Option<Side>,
    pub b: Option<Side>,
    pub delta: Option<f64>,
    pub relative: Option<f64>,
    pub judgement: Judgement,
    /// How noise was judged: "repeats" or "threshold 5%".
    pub noise_basis: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Joined {
    pub run_name: String,
    pub concurrency: String,
    pub cells: Vec<Cell>,
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
}

fn side(rows: &[&Row], metric: &str) -> Option<Side> {
    let v: Vec<f64> = rows
        .iter()
        .filter(|r| r.is_ok())
        .filter_map(|r| r.f64(metric))
        .collect();
    mean_sd(&v).map(|(mean, sd)| Side {
        mean,
        sd,
        n: v.len(),
    })
}

/// Judge B against A for one metric.
pub fn judge(metric: &str, a: Option<&Side>, b: Option<&Side>, threshold: f64) -> Cell {
    let mut cell = Cell {
        metric: metric.to_string(),
        a: a.cloned(),
        b: b.cloned(),
        delta: None,
        relative: None,
        judgement: Judgement::NotComparable,
        noise_basis: String::new(),
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
            delta.abs() <= 2.0 * (sa * sa / a.n as f64 + sb * sb / b.n as f64).sqrt()
        }
        _ => {
            cell.noise_basis = format!("threshold {:.0}%", threshold * 100.0);
            match cell.relative {
                Some(r) => r.abs() <= threshold,
                None => delta == 0.0,
            }
        }
    };
    // The direction comes from the column's own definition (record::run_record).
    let improved = match crate::record::better(metric) {
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

fn keyed(rows: &[Row]) -> Vec<((String, String), Vec<&Row>)> {
    let mut out: Vec<((String, String), Vec<&Row>)> = Vec::new();
    for r in rows {
        let k = (r.get("run_name").to_string(), r.load_point());
        match out.iter_mut().find(|(key, _)| *key == k) {
            Some((_, v)) => v.push(r),
            None => out.push((k, vec![r])),
        }
    }
    out
}

/// The engine a configuration's rows ran on (None: a results.csv from before the column).
fn engine<'a>(rows: &[&'a Row]) -> Option<&'a str> {
    rows.iter().map(|r| r.get("engine")).find(|e| !e.is_empty())
}

pub fn compare(a: &[Row], b: &[Row], metrics: &[String], threshold: f64) -> Comparison {
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

fn table_rows(c: &Comparison) -> (Vec<String>, Vec<Vec<String>>) {
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
    for j in &c.joined {
        for cell in &j.cells {
            rows.push(vec![
                j.run_name.clone(),
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
    (header, rows)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Markdown,
    Csv,
    Json,
}

pub fn render(c: &Comparison, format: Format) -> String {
    match format {
        Format::Json => serde_json::to_string_pretty(c).unwrap_or_default(),
        Format::Csv => {
            let (header, rows) = table_rows(c);
            let mut w = csv::Writer::from_writer(Vec::new());
            let _ = w.write_record(&header);
            for r in &rows {
                let _ = w.write_record(r);
            }
            String::from_utf8_lossy(&w.into_inner().unwrap_or_default()).into_owned()
        }
        Format::Table | Format::Markdown => {
            let mut out = String::new();
            if !c.context.is_empty() {
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
            let (header, rows) = table_rows(c);
            out.push_str(&crate::report::table::render_plain(&header, &rows));
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
        Row(m)
    }

    #[test]
    fn direction_comes_from_the_column() {
        let row = |g: f64, cap: f64| {
            Row([
                ("run_name", "x".to_string()),
                ("status", "ok".to_string()),
                ("concurrency", "8".to_string()),
                ("repeat", "1".to_string()),
                ("goodput_share", g.to_string()),
                ("max_total_num_tokens", cap.to_string()),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect())
        };
        let metrics = vec![
            "goodput_share".to_string(),
            "max_total_num_tokens".to_string(),
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
        let metrics = vec!["output_tok_s".to_string(), "ttft_ms_p50".to_string()];
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
            x.0.insert("engine".into(), e.into());
            x
        };
        let metrics = vec!["output_tok_s".to_string()];
        let c = compare(&[on("sglang", 100.0)], &[on("vllm", 130.0)], &metrics, 0.05);
        assert_eq!(c.engine_changed, ["a @8: sglang → vllm"]);
        assert_eq!(c.joined[0].cells[0].judgement, Judgement::Better);
        let t = render(&c, Format::Table);
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
        assert!(!render(&same, Format::Table).contains("Engine changed"));
    }

    #[test]
    fn one_sided_runs_are_listed() {
        let c = compare(
            &[r("x", 1.0, 1.0), r("only-a", 1.0, 1.0)],
            &[r("x", 1.0, 1.0), r("only-b", 1.0, 1.0)],
            &["output_tok_s".into()],
            0.05,
        );
        assert_eq!(c.only_a, ["only-a @8"]);
        assert_eq!(c.only_b, ["only-b @8"]);
        let out = render(&c, Format::Table);
        assert!(
            out.contains("Only in A") && out.contains("within noise"),
            "{out}"
        );
        assert!(render(&c, Format::Csv).starts_with("run,concurrency,metric"));
        assert!(render(&c, Format::Json).contains("\"joined\""));
    }
}
