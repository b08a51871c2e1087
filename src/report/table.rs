//! The comparison table, rendered from results.csv rows (so a fresh sweep, a resumed one and a
//! reproduction print the same way): one line per configuration and load point, key columns
//! side by side, repeats as mean ± stddev with the coefficient of variation, failures with
//! their kind, and a ★: with an objective, on the decision's pick at each load point (the
//! winner, or the leader when no winner is claimed), else on the best client output tok/s.
//! Markdown, padded so it reads well in a terminal; saved as results.md.

use crate::observe::diagnose::VerdictKind;
use crate::plan::engine::Engine;
use crate::plan::spec::Objective;
use crate::record::QualityStatus;
use crate::record::RunStatus;
use crate::record::rows::{Col, Row};
use crate::report::doc::{self, Block};
use crate::server::failure::FailureKind;
use crate::tune::decision::{Decision, Outcome};
pub use crate::tune::stats::mean_sd;

/// The decision's pick at one load point, as the table marks it.
#[derive(Debug, Clone, PartialEq)]
pub struct Pick {
    pub run_name: String,
    /// The load point of the table line (results.csv's: a concurrency, or `<rate>/s`); with a
    /// max-load search, the leader's highest load within the SLO.
    pub load_point: String,
    /// Claimed as the winner (else the leader, no winner claimed).
    pub winner: bool,
}

/// What a sweep with an objective stars: the decision's picks, and for each configuration at
/// each load point it was judged at, why it won or lost (to say why the best output tok/s is
/// not starred when it is not).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DecisionMarks {
    pub picks: Vec<Pick>,
    /// (run name, load point, why).
    pub why: Vec<(String, String, String)>,
    /// The leader so far (no decision written yet: an interrupted sweep, a folder without
    /// decision.json), by the same rule.
    pub so_far: bool,
}

/// What the table stars: the decision when there is one, else with an objective the leader
/// so far by the same rule (`tune::leader`), else nothing (the best output tok/s is starred).
pub fn marks(
    objective: Option<&Objective>,
    decided: Option<&Decision>,
    rows: &[Row],
) -> Option<DecisionMarks> {
    match (decided, objective) {
        (Some(d), _) => Some(DecisionMarks::of(d)),
        (None, Some(o)) => Some(DecisionMarks {
            so_far: true,
            ..DecisionMarks::of(&crate::tune::leader::so_far(o, rows))
        }),
        (None, None) => None,
    }
}

impl DecisionMarks {
    /// From the decision itself (a sweep's conclusion).
    pub fn of(d: &Decision) -> Self {
        let mut m = DecisionMarks::default();
        for p in &d.points {
            let at = |run: &str| {
                p.configurations
                    .iter()
                    .find(|c| c.run_name == run)
                    .and_then(|c| c.max_load_at_slo.clone())
                    .unwrap_or_else(|| p.load_point.clone())
            };
            if let Some(l) = &p.leader {
                m.picks.push(Pick {
                    run_name: l.clone(),
                    load_point: at(l),
                    winner: p.outcome == Outcome::Winner,
                });
            }
            for c in &p.configurations {
                m.why
                    .push((c.run_name.clone(), at(&c.run_name), c.why.clone()));
            }
        }
        m
    }
}

fn num(v: Option<f64>, digits: usize) -> String {
    v.map(|x| format!("{x:.digits$}"))
        .unwrap_or_else(|| "-".to_string())
}

/// Rows grouped by (run name, load point), in first-appearance order.
pub fn groups(rows: &[Row]) -> Vec<Vec<&Row>> {
    let mut out: Vec<Vec<&Row>> = Vec::new();
    for r in rows {
        let key = (r.run_name(), r.load_point());
        match out.iter_mut().find(|g| {
            g.first()
                .is_some_and(|f| (f.run_name(), f.load_point()) == key)
        }) {
            Some(g) => g.push(r),
            None => out.push(vec![r]),
        }
    }
    out
}

fn ok_values(g: &[&Row], col: Col) -> Vec<f64> {
    g.iter()
        .filter(|r| r.is_ok())
        .filter_map(|r| r.metric(&col))
        .collect()
}

fn mean_of(g: &[&Row], col: Col) -> Option<f64> {
    mean_sd(&ok_values(g, col)).map(|(m, _)| m)
}

pub use crate::report::doc::render_plain;

/// The table plus the failures and the verdict evidence. `decision`: the sweep's objective
/// decided ([`DecisionMarks`]); None without an objective, and the best output tok/s is
/// starred.
pub fn render(rows: &[Row], param_keys: &[String], decision: Option<&DecisionMarks>) -> String {
    doc::markdown(&blocks(rows, param_keys, decision))
}

/// The table and the lists under it as document blocks (results.md writes them as Markdown,
/// report.html as HTML).
pub fn blocks(rows: &[Row], param_keys: &[String], decision: Option<&DecisionMarks>) -> Vec<Block> {
    let groups = groups(rows);
    let aggregates: Vec<GroupAggregate> = groups
        .iter()
        .filter_map(|g| GroupAggregate::of(g))
        .collect();
    let best = best_group(&aggregates);
    let key = |a: &GroupAggregate| (a.first.run_name().to_string(), a.first.load_point());
    let star = |i: usize| -> Option<String> {
        let a = &aggregates[i];
        let name = a.first.run_name();
        match decision {
            None => (Some(i) == best).then(|| format!("★ {name} (best)")),
            Some(d) => d
                .picks
                .iter()
                .find(|p| (p.run_name.clone(), p.load_point.clone()) == key(a))
                .map(|p| match (p.winner, d.so_far) {
                    (true, false) => format!("★ {name} (winner)"),
                    (false, false) => format!("★ {name} (leader, no winner claimed)"),
                    (_, true) => format!("★ {name} (leader so far)"),
                }),
        }
    };
    let many_points = many_load_points(rows);
    let mixed = many_engines(rows);
    let header = header(rows, param_keys, many_points, mixed);
    let lines: Vec<Vec<String>> = aggregates
        .iter()
        .enumerate()
        .map(|(i, a)| format_line(a, star(i), many_points, mixed, param_keys))
        .collect();
    let mut out = vec![Block::Table {
        header,
        rows: lines,
    }];
    if let Some(d) = decision {
        out.push(star_note(
            d,
            best.and_then(|i| aggregates.get(i)),
            many_points,
        ));
    }
    out.extend(failures(rows));
    out.extend(verdict_evidence(&groups, many_points));
    out.extend(sessions(&groups, many_points));
    out.extend(quality(rows));
    out.extend(crate::report::effective::notes(rows));
    out
}

/// The `Output quality:` section (`quality:` in the spec): each configuration's verdict against
/// the baseline with its evidence; `fail` and `unchecked` ones are not eligible to win.
fn quality(rows: &[Row]) -> Option<Block> {
    let mut seen: Vec<&str> = Vec::new();
    let mut items = Vec::new();
    for r in rows {
        let name = r.run_name();
        let Some(v) = r.quality().map(QualityStatus::as_str) else {
            continue;
        };
        if seen.contains(&name) {
            continue;
        }
        seen.push(name);
        let flag = if r.quality_eligible() {
            ""
        } else {
            " (not eligible)"
        };
        items.push(format!("{name}: {v}{flag} — {}", r.quality_evidence()));
    }
    (!items.is_empty()).then(|| Block::List {
        intro: Some("Output quality (against the baseline's greedy outputs):".into()),
        items,
    })
}

/// What the table shows of one (run, load point) group before it is formatted: its rows'
/// counts and, over its ok rows, the means (mean and sd for output tok/s) and the most common
/// verdict.
struct GroupAggregate<'a> {
    first: &'a Row,
    last: &'a Row,
    n: usize,
    n_ok: usize,
    output_tok_s: Option<(f64, Option<f64>)>,
    ttft_p50: Option<f64>,
    tpot_p50: Option<f64>,
    e2e_p50: Option<f64>,
    /// None when the group's rows carry no server stats.
    server: Option<ServerMeans>,
    /// The most common verdict of the ok rows ("-" when there is none).
    verdict: &'a str,
}

/// Means of the server-side stats columns over a group's ok rows.
struct ServerMeans {
    gen_tput: Option<f64>,
    running_mean: Option<f64>,
    running_max: Option<f64>,
    queue_mean: Option<f64>,
    queue_max: Option<f64>,
    usage_max: Option<f64>,
}

impl<'a> GroupAggregate<'a> {
    /// Aggregation: one group's rows → counts, means and verdict (None for an empty group).
    fn of(g: &'a [&'a Row]) -> Option<Self> {
        let first = *g.first()?;
        let server =
            (mean_of(g, Col::SERVER_STATS_LINES).unwrap_or(0.0) > 0.0).then(|| ServerMeans {
                gen_tput: mean_of(g, Col::SERVER_GEN_TPUT_MEAN),
                running_mean: mean_of(g, Col::RUNNING_REQ_MEAN),
                running_max: mean_of(g, Col::RUNNING_REQ_MAX),
                queue_mean: mean_of(g, Col::QUEUE_REQ_MEAN),
                queue_max: mean_of(g, Col::QUEUE_REQ_MAX),
                usage_max: mean_of(g, Col::TOKEN_USAGE_MAX),
            });
        Some(GroupAggregate {
            first,
            last: g.last().copied().unwrap_or(first),
            n: g.len(),
            n_ok: g.iter().filter(|r| r.is_ok()).count(),
            output_tok_s: mean_sd(&ok_values(g, Col::OUTPUT_TOK_S)),
            ttft_p50: mean_of(g, Col::TTFT_MS_P50),
            tpot_p50: mean_of(g, Col::TPOT_MS_P50),
            e2e_p50: mean_of(g, Col::E2E_MS_P50),
            server,
            verdict: common_verdict(g),
        })
    }
}

/// The most common verdict among a group's ok rows (ties: the last in sorted order), "-" when
/// no row is ok.
fn common_verdict<'a>(g: &[&'a Row]) -> &'a str {
    let mut verdicts: Vec<&str> = g
        .iter()
        .filter(|r| r.is_ok())
        .map(|r| r.verdict().map_or("", VerdictKind::as_str))
        .collect();
    verdicts.sort();
    verdicts
        .iter()
        .max_by_key(|v| verdicts.iter().filter(|x| x == v).count())
        .copied()
        .unwrap_or("-")
}

/// Best-run selection: the index of the group with the highest mean output tok/s (the last
/// of equals), None when no group has one.
fn best_group(aggregates: &[GroupAggregate]) -> Option<usize> {
    aggregates
        .iter()
        .enumerate()
        .filter_map(|(i, a)| a.output_tok_s.map(|(m, _)| (i, m)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _)| i)
}

/// Whether the rows span more than one load point (then the table has a load point column).
fn many_load_points(rows: &[Row]) -> bool {
    let mut c: Vec<String> = rows.iter().map(Row::load_point).collect();
    c.sort();
    c.dedup();
    c.len() > 1
}

/// Whether the rows ran on more than one engine (a mixed sweep): the table then names each
/// line's engine. A results.csv from before the `engine` column has none to tell.
fn many_engines(rows: &[Row]) -> bool {
    let mut e = rows.iter().filter_map(Row::engine);
    e.next().is_some_and(|first| e.any(|x| x != first))
}

/// The header row: run, the load point column if any, the engine in a mixed sweep, status,
/// the swept keys, the metrics.
fn header(rows: &[Row], param_keys: &[String], many_points: bool, mixed: bool) -> Vec<String> {
    let mut header: Vec<String> = vec!["run".into()];
    if many_points {
        let open_loop = rows.iter().any(|r| r.rate_text().is_some());
        header.push(
            if open_loop {
                "load point"
            } else {
                "concurrency"
            }
            .into(),
        );
    }
    if mixed {
        header.push("engine".into());
    }
    header.push("status".into());
    header.extend(param_keys.iter().cloned());
    header.extend(
        [
            "out tok/s",
            "TTFT p50 ms",
            "TPOT p50 ms",
            "E2E p50 ms",
            "srv gen tok/s",
            "running mean/max",
            "queue mean/max",
            "usage max",
            "verdict",
        ]
        .map(String::from),
    );
    header
}

/// With an objective, a line under the table: what ★ marks, and when the highest output tok/s
/// is not starred, why the decision passed it over.
fn star_note(d: &DecisionMarks, best: Option<&GroupAggregate>, many_points: bool) -> Block {
    let mut out = match (d.picks.is_empty(), d.so_far) {
        (true, false) => {
            return Block::Para("★: no configuration is eligible (decision.md says why).".into());
        }
        (true, true) => return Block::Para("★: no configuration is eligible so far.".into()),
        (false, false) => "★ marks the decision's pick (decision.md).".to_string(),
        (false, true) => {
            "★ marks the leader so far: the decision's rule on the rows so far (no decision yet)."
                .to_string()
        }
    };
    let Some(a) = best else {
        return Block::Para(out);
    };
    let (name, lp) = (a.first.run_name(), a.first.load_point());
    if d.picks
        .iter()
        .any(|p| p.run_name == name && p.load_point == lp)
    {
        return Block::Para(out);
    }
    let at = if many_points {
        format!(" at {lp}")
    } else {
        String::new()
    };
    let tok = a
        .output_tok_s
        .map_or("-".into(), |(m, _)| format!("{m:.1}"));
    let why = d
        .why
        .iter()
        .find(|(r, l, _)| r == name && *l == lp)
        .map(|(_, _, w)| w.clone())
        .filter(|w| !w.is_empty())
        .unwrap_or_else(|| "the decision did not judge it at this load".into());
    out.push_str(&format!(
        " The highest output tok/s, {name}{at} ({tok}), is not starred: {why}."
    ));
    Block::Para(out)
}

/// Row formatting: one group's line of the table, in the header's column order; `star`: the
/// name cell when the line is starred.
fn format_line(
    a: &GroupAggregate,
    star: Option<String>,
    many_points: bool,
    mixed: bool,
    param_keys: &[String],
) -> Vec<String> {
    let name = star.unwrap_or_else(|| a.first.run_name().to_string());
    let mut line = vec![name];
    if many_points {
        line.push(a.first.load_point());
    }
    if mixed {
        line.push(a.first.engine().map_or("", Engine::as_str).to_string());
    }
    line.push(status_cell(a));
    line.extend(param_keys.iter().map(|k| {
        let v = a.first.param(k);
        if v.is_empty() {
            "-".to_string()
        } else {
            v.to_string()
        }
    }));
    line.push(output_cell(a.output_tok_s));
    line.push(num(a.ttft_p50, 1));
    line.push(num(a.tpot_p50, 2));
    line.push(num(a.e2e_p50, 1));
    line.extend(server_cells(a));
    line.push(if a.verdict.is_empty() {
        "-".into()
    } else {
        a.verdict.to_string()
    });
    line
}

/// The status cell: `ok`, `ok ×n`, `k/n ok`, or the last row's status and failure kind when
/// none is ok.
fn status_cell(a: &GroupAggregate) -> String {
    match (a.n_ok, a.n) {
        (k, n) if k == n && n == 1 => "ok".to_string(),
        (k, n) if k == n => format!("ok ×{n}"),
        (0, _) => {
            let status = a.last.status().map_or("", RunStatus::as_str);
            match a.last.failure_kind() {
                None => status.to_string(),
                Some(kind) => format!("{status} ({})", kind.as_str()),
            }
        }
        (k, n) => format!("{k}/{n} ok"),
    }
}

/// The out tok/s cell: the mean, with ± sd and the coefficient of variation over repeats.
fn output_cell(v: Option<(f64, Option<f64>)>) -> String {
    match v {
        None => "-".into(),
        Some((m, None)) => format!("{m:.1}"),
        Some((m, Some(sd))) => format!(
            "{m:.1} ± {sd:.1} (CV {:.1}%)",
            if m > 0.0 { sd / m * 100.0 } else { 0.0 }
        ),
    }
}

/// The four server-stats cells (srv gen tok/s, running, queue, usage max); `no stats` when ok
/// rows carry none, dashes when no row is ok.
fn server_cells(a: &GroupAggregate) -> [String; 4] {
    match &a.server {
        Some(s) => [
            num(s.gen_tput, 1),
            format!("{}/{}", num(s.running_mean, 1), num(s.running_max, 0)),
            format!("{}/{}", num(s.queue_mean, 1), num(s.queue_max, 0)),
            num(s.usage_max, 2),
        ],
        None if a.n_ok > 0 => ["no stats", "-", "-", "-"].map(String::from),
        None => ["-", "-", "-", "-"].map(String::from),
    }
}

/// The `Failures:` section: one item per failed row, with which way to turn the knobs (on a
/// line of its own under the item).
fn failures(rows: &[Row]) -> Option<Block> {
    let items: Vec<String> = rows
        .iter()
        .filter(|r| !r.is_ok())
        .map(|r| {
            let direction = r
                .failure_kind()
                .map(|k| crate::observe::failure::failure_direction(k, r.failure_message()))
                .filter(|d| !d.is_empty())
                .map(|d| format!("\n  → {d}"))
                .unwrap_or_default();
            format!(
                "{} (load point {}, repeat {}) [{}]: {}{direction}",
                r.run_name(),
                r.load_point(),
                r.repeat().map_or(String::new(), |k| k.to_string()),
                r.failure_kind().map_or("", FailureKind::as_str),
                r.failure_message()
            )
        })
        .collect();
    (!items.is_empty()).then(|| Block::List {
        intro: Some("Failures:".into()),
        items,
    })
}

/// The `Verdicts:` section: each group's first ok row with verdict evidence.
fn verdict_evidence(groups: &[Vec<&Row>], many_points: bool) -> Option<Block> {
    let items: Vec<String> = groups
        .iter()
        .filter_map(|g| {
            g.iter()
                .find(|r| r.is_ok() && !r.verdict_evidence().is_empty())
                .copied()
        })
        .map(|r| {
            format!(
                "{}{}: {} — {}",
                r.run_name(),
                if many_points {
                    format!(" @{}", r.load_point())
                } else {
                    String::new()
                },
                r.verdict().map_or("", VerdictKind::as_str),
                r.verdict_evidence()
            )
        })
        .collect();
    (!items.is_empty()).then(|| Block::List {
        intro: Some("Verdicts:".into()),
        items,
    })
}

/// The `Sessions:` section (`sessions:` in the spec; none otherwise): per configuration and
/// load point, the prefix-cache hit rate the server reported beside the share the workload
/// allows, and the TTFT p50 of the sessions' first turns against their last (the longest
/// history), each a mean over the ok repeats. A line in words, as the verdicts are, since the
/// table's columns are the same for every sweep.
fn sessions(groups: &[Vec<&Row>], many_points: bool) -> Option<Block> {
    let items: Vec<String> = groups
        .iter()
        .filter(|g| g.iter().any(|r| r.is_ok() && !r.turn_latency().is_empty()))
        .filter_map(|g| {
            let first = g.first()?;
            let hit = mean_of(g, Col::CACHE_HIT_RATE);
            let allowed = mean_of(g, Col::PREFIX_REUSABLE_SHARE);
            let ttft_first = mean_of(g, Col::TTFT_FIRST_TURN_MS_P50);
            let ttft_last = mean_of(g, Col::TTFT_LAST_TURN_MS_P50);
            Some(format!(
                "{}{}: prefix-cache hit rate {} of {} allowed; TTFT p50 first turn {} ms → last turn {} ms",
                first.run_name(),
                if many_points {
                    format!(" @{}", first.load_point())
                } else {
                    String::new()
                },
                num(hit, 2),
                num(allowed, 2),
                num(ttft_first, 1),
                num(ttft_last, 1),
            ))
        })
        .collect();
    (!items.is_empty()).then(|| Block::List {
        intro: Some(
            "Sessions (the server's prefix-cache hit rate against what the workload allows; \
             TTFT as the history grows):"
                .into(),
        ),
        items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, conc: &str, status: &str, tok: &str) -> Row {
        let mut m = std::collections::BTreeMap::new();
        for (k, v) in [
            ("run_name", name),
            ("run_id", name),
            ("concurrency", conc),
            ("repeat", "1"),
            ("status", status),
            ("output_tok_s", tok),
            ("failure_kind", if status == "ok" { "" } else { "oom" }),
            ("verdict", "compute_bound"),
            ("server_stats_lines", "3"),
            ("param_mfs", "0.8"),
        ] {
            m.insert(k.to_string(), v.to_string());
        }
        Row::from_cells(m)
    }

    /// A mixed sweep's table names each line's engine; a one-engine sweep's (and a
    /// results.csv from before the column) has no such column.
    #[test]
    fn the_engine_is_a_column_only_when_the_sweep_mixes_engines() {
        let on = |r: Row, e: &str| with(r, "engine", e);
        let mixed = [
            on(row("sg", "8", "ok", "100"), "sglang"),
            on(row("vl", "8", "ok", "120"), "vllm"),
        ];
        let t = render(&mixed, &[], None);
        let cells =
            |line: &str| -> Vec<String> { line.split('|').map(|c| c.trim().to_string()).collect() };
        let lines: Vec<Vec<String>> = t.lines().take(4).map(cells).collect();
        assert_eq!(lines[0][1..4], ["run", "engine", "status"], "{t}");
        assert_eq!(lines[2][1..4], ["sg", "sglang", "ok"], "{t}");
        assert_eq!(lines[3][1..4], ["★ vl (best)", "vllm", "ok"], "{t}");
        for one in [
            vec![
                on(row("a", "8", "ok", "1"), "vllm"),
                on(row("b", "8", "ok", "2"), "vllm"),
            ],
            vec![row("a", "8", "ok", "1"), row("b", "8", "ok", "2")],
        ] {
            let t = render(&one, &[], None);
            assert!(!t.contains("engine"), "{t}");
        }
    }

    /// A sessions sweep says per configuration its hit rate against the share allowed and its
    /// TTFT from the first turn to the last, over the ok repeats; a sweep without sessions has
    /// no such section.
    #[test]
    fn a_sessions_sweep_has_a_line_per_configuration_and_others_none() {
        let session = |name: &str, status: &str, hit: &str, first: &str, last: &str| {
            [
                ("turn_latency", "1:60.0:5.00:8 2:70.0:5.00:8"),
                ("cache_hit_rate", hit),
                ("prefix_reusable_share", "0.58"),
                ("ttft_first_turn_ms_p50", first),
                ("ttft_last_turn_ms_p50", last),
            ]
            .into_iter()
            .fold(row(name, "4", status, "100"), |r, (k, v)| with(r, k, v))
        };
        let rows = vec![
            session("radix", "ok", "0.5", "60", "62"),
            session("radix", "ok", "0.56", "62", "64"),
            session("radix", "failed", "0.9", "1", "1"),
            session("no-radix", "ok", "0", "61", "377"),
            row("plain", "4", "ok", "100"),
        ];
        let t = render(&rows, &[], None);
        assert!(
            t.contains(
                "Sessions (the server's prefix-cache hit rate against what the workload allows; TTFT as the history grows):\n\
                 - radix: prefix-cache hit rate 0.53 of 0.58 allowed; TTFT p50 first turn 61.0 ms → last turn 63.0 ms\n\
                 - no-radix: prefix-cache hit rate 0.00 of 0.58 allowed; TTFT p50 first turn 61.0 ms → last turn 377.0 ms\n"
            ),
            "{t}"
        );
        assert!(!t.contains("- plain:"), "{t}");
        let t = render(&rows[4..], &[], None);
        assert!(!t.contains("Sessions"), "{t}");
    }

    #[test]
    fn repeats_show_mean_sd_cv_and_best_is_marked() {
        let rows = vec![
            row("a", "8", "ok", "100"),
            row("a", "8", "ok", "110"),
            row("a", "8", "ok", "90"),
            row("b", "8", "ok", "200"),
            row("c", "8", "failed", ""),
        ];
        let t = render(&rows, &["mfs".to_string()], None);
        assert!(t.contains("100.0 ± 10.0 (CV 10.0%)"), "{t}");
        assert!(t.contains("★ b (best)"), "{t}");
        assert!(t.contains("ok ×3"), "{t}");
        assert!(t.contains("failed (oom)"), "{t}");
        assert!(
            !t.contains("concurrency |"),
            "one load point: no column\n{t}"
        );
        let t = render(
            &[row("a", "8", "ok", "1"), row("a", "16", "ok", "2")],
            &[],
            None,
        );
        assert!(t.contains("| concurrency |"), "{t}");
    }

    fn decided(rows: &[Row], slo: &[(&str, crate::plan::spec::Bound, f64)]) -> DecisionMarks {
        let o = crate::plan::spec::Objective::for_test(
            crate::plan::spec::Goal::Maximize,
            "output_tok_s",
            slo,
        );
        let d =
            crate::tune::decision::decide("s", &o, rows, &Default::default(), Default::default());
        let marks = DecisionMarks::of(&d);
        // decision.json read back is the same decision, so the same marks.
        let json = serde_json::to_string(&d).expect("serializes");
        let back: crate::tune::decision::Decision = serde_json::from_str(&json).expect("reads");
        assert_eq!(back, d);
        assert_eq!(DecisionMarks::of(&back), marks);
        marks
    }

    fn with(mut r: Row, k: &str, v: &str) -> Row {
        r.set_cell(k, v);
        r
    }

    /// The demo's case: the highest output tok/s broke the SLO, so the star follows the
    /// decision's winner and a line says why the faster one is not starred.
    #[test]
    fn with_an_objective_the_star_follows_the_decision() {
        let ttft = |r: Row, v: &str| with(r, "ttft_ms_p99", v);
        let rows = vec![
            ttft(row("mtt2048", "32", "ok", "457.7"), "44516"),
            ttft(row("mtt32768", "32", "ok", "314.7"), "1867"),
            row("fp8", "32", "failed", ""),
        ];
        let marks = decided(
            &rows,
            &[("ttft_ms_p99", crate::plan::spec::Bound::AtMost, 5000.0)],
        );
        let t = render(&rows, &[], Some(&marks));
        assert!(t.contains("| ★ mtt32768 (winner) |"), "{t}");
        assert!(!t.contains("(best)"), "{t}");
        assert!(
            t.contains("★ marks the decision's pick (decision.md). The highest output tok/s, mtt2048 (457.7), is not starred: SLO violated: ttft_ms_p99 median 44516 > 5000.\n"),
            "{t}"
        );
        // Without the objective, as before: the best output tok/s.
        let t = render(&rows, &[], None);
        assert!(t.contains("★ mtt2048 (best)"), "{t}");

        // One repeat each, no noise measured: the leader is starred as a leader, at each load
        // point its own; the highest (b at 16) is starred, so no note of why.
        let rows = vec![
            row("a", "8", "ok", "100"),
            row("b", "8", "ok", "150"),
            row("a", "16", "ok", "300"),
            row("b", "16", "ok", "400"),
        ];
        let marks = decided(&rows, &[]);
        let t = render(&rows, &[], Some(&marks));
        assert!(t.contains("| ★ b (leader, no winner claimed) | 8 "), "{t}");
        assert!(t.contains("| ★ b (leader, no winner claimed) | 16 "), "{t}");
        assert!(
            t.contains("★ marks the decision's pick (decision.md).\n"),
            "{t}"
        );
        assert!(!t.contains("is not starred"), "{t}");

        // Nothing eligible: no star, and the line says so.
        let rows = vec![row("a", "8", "failed", ""), row("b", "8", "failed", "")];
        let t = render(&rows, &[], Some(&decided(&rows, &[])));
        assert!(!t.contains("| ★"), "{t}");
        assert!(t.contains("★: no configuration is eligible"), "{t}");
    }

    /// With a max-load search each configuration is starred at its own highest load within
    /// the SLO; another load of the same configuration is not.
    #[test]
    fn with_a_max_load_search_the_star_is_at_the_leaders_max_load() {
        let probe = |n: &str, c: &str, tok: &str, standing: &str| {
            with(
                with(row(n, c, "ok", tok), "phase", "probe"),
                "probe",
                standing,
            )
        };
        let rows = vec![
            probe("small", "4", "100", "pass"),
            probe("small", "8", "900", "fail"),
            probe("large", "4", "100", "pass"),
            probe("large", "8", "200", "pass"),
        ];
        let marks = decided(&rows, &[]);
        assert_eq!(
            marks.picks,
            vec![Pick {
                run_name: "large".into(),
                load_point: "8".into(),
                winner: false
            }]
        );
        let t = render(&rows, &[], Some(&marks));
        assert!(
            t.contains("| ★ large (leader, no winner claimed) | 8 "),
            "{t}"
        );
        assert!(t.contains("| large "), "{t}");
        assert!(
            t.contains("The highest output tok/s, small at 8 (900.0), is not starred: the decision did not judge it at this load."),
            "{t}"
        );
    }

    #[test]
    fn mean_and_sample_sd() {
        assert_eq!(mean_sd(&[]), None);
        assert_eq!(mean_sd(&[2.0]), Some((2.0, None)));
        let (m, sd) = mean_sd(&[1.0, 2.0, 3.0]).expect("some");
        assert_eq!(m, 2.0);
        assert_eq!(sd, Some(1.0));
    }
}
