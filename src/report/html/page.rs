//! The page: overview (comparison table with verdicts, failures with hints, decision), the
//! per-configuration charts across load points, and per launch the server timeline beside
//! the client's side. Also the two-sweep page and the one-log page.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::chart::{self, Bar, BarChart, Chart, Line, Marker, Measure, Spread};
use super::data::{self, Points, Timeline};
use super::{Launch, Sweep, esc, points_per_series};
use crate::record::rows::{Col, Row};
use crate::report::compare::{Comparison, Judgement};
use crate::report::{decision, doc, table};
use crate::server::failure::FailureKind;

const CSS: &str = r#"
:root{--fg:#1b1b1b;--muted:#5a5a5a;--line:#d8d8d8;--bg:#fff;--card:#fafafa}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg);margin:0 auto;padding:16px 24px;max-width:1800px}
h1{font-size:1.5rem;margin:.2em 0}h2{font-size:1.2rem;margin:1.4em 0 .4em;border-bottom:1px solid var(--line)}h3{font-size:1.05rem;margin:.8em 0 .3em}
p.sub,.note,.nodata{color:var(--muted)}
table{border-collapse:collapse;margin:.5em 0;font-variant-numeric:tabular-nums}
td,th{border:1px solid var(--line);padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f0f0f0}
.scroll{overflow-x:auto}
code,pre{font:12px/1.4 ui-monospace,Menlo,Consolas,monospace}
pre{white-space:pre-wrap;word-break:break-all;background:#f4f4f4;padding:6px 8px}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(440px,1fr));gap:14px}
.launches{display:grid;grid-template-columns:repeat(auto-fit,minmax(520px,1fr));gap:18px}
.launch{border:1px solid var(--line);background:var(--card);padding:8px 12px;border-radius:4px}
.two{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:18px}
figure.chart{margin:0 0 10px;background:#fff;border:1px solid #eee;padding:6px}
figure.chart svg{width:100%;height:auto;display:block}
figcaption{font-weight:600}
ul.legend{list-style:none;margin:2px 0 0;padding:0;display:flex;flex-wrap:wrap;gap:2px 14px;font-size:12px}
.sw{display:inline-block;width:18px;height:0;margin-right:5px;vertical-align:middle}
.sw.win{height:10px;background:rgba(86,180,233,.25);border:0}
.sw.mark{height:10px;width:0;border-left:2px solid #D55E00}
.sw.ev{height:10px;width:0;border-left:2px solid #aaa}
.better{background:#d9f0e3}.worse{background:#fbe0d2}.verdict{font-weight:600}
.fail{color:#a33d00}
@media print{body{max-width:none;padding:0;font-size:11px}.scroll{overflow:visible}table{font-size:8.5px;width:100%}td,th{padding:1px 3px;overflow-wrap:anywhere}.launches,.grid{grid-template-columns:1fr 1fr}.launch,figure.chart{break-inside:avoid}h2{break-after:avoid}}
@media (max-width:1100px){.two{grid-template-columns:1fr}}
"#;

fn head(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
<title>{}</title><style>{CSS}</style></head><body>\n",
        esc(title)
    )
}

const FOOT: &str = "</body></html>\n";

/// The x of a row on the load-point axis: its concurrency, else its request rate.
fn load_x(r: &Row) -> Option<f64> {
    r.concurrency()
        .map(|c| c as f64)
        .or_else(|| r.request_rate())
}

fn load_axis(rows: &[Row]) -> &'static str {
    if rows.iter().any(|r| r.rate_text().is_some()) {
        "load point (concurrency, or request rate in req/s)"
    } else {
        "concurrency (requests)"
    }
}

/// A configuration's name and, per load point, its repeats' values.
pub type ConfigSeries = (String, Vec<(f64, Vec<f64>)>);

/// Per configuration (in first-appearance order): per load point (x ascending) the ok
/// repeats' values of `col`.
pub fn by_config(rows: &[Row], col: &Col) -> Vec<ConfigSeries> {
    let mut out: Vec<ConfigSeries> = Vec::new();
    for g in table::groups(rows) {
        let Some(first) = g.first() else { continue };
        let name = first.run_name().to_string();
        let Some(x) = load_x(first) else { continue };
        let vals: Vec<f64> = g
            .iter()
            .filter(|r| r.is_ok())
            .filter_map(|r| r.metric(col))
            .collect();
        let idx = match out.iter().position(|(n, _)| *n == name) {
            Some(i) => i,
            None => {
                out.push((name, Vec::new()));
                out.len() - 1
            }
        };
        if let (Some(entry), false) = (out.get_mut(idx), vals.is_empty()) {
            entry.1.push((x, vals));
        }
    }
    for (_, pts) in &mut out {
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// One line per configuration: the mean of `col` at each load point, with the repeats'
/// min..max as error bars when there is more than one.
fn metric_lines(rows: &[Row], col: &Col, suffix: &str, dashed: bool, c: &mut Chart) {
    for (i, (name, pts)) in by_config(rows, col).into_iter().enumerate() {
        if pts.is_empty() {
            continue;
        }
        let line: Points = pts.iter().map(|(x, v)| (*x, mean(v))).collect();
        for (x, v) in &pts {
            if v.len() > 1 {
                let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                c.bars.push(Bar {
                    x: *x,
                    lo,
                    hi,
                    color: i,
                });
            }
        }
        let marker = if dashed {
            Marker::Triangle
        } else {
            Marker::nth(i / chart::PALETTE.len())
        };
        let mut l = Line::new(format!("{name}{suffix}"), line, i).marker(marker);
        l.dashed = dashed;
        c.lines.push(l);
    }
}

/// (total output tok/s, output tok/s per user) for each configuration and load point.
pub fn pareto_points(rows: &[Row]) -> Vec<(String, Points)> {
    let tput = by_config(rows, &Col::OUTPUT_TOK_S);
    tput.into_iter()
        .map(|(name, pts)| {
            let p = pts
                .iter()
                .filter_map(|(x, v)| {
                    let total = mean(v);
                    // Per user: the total shared by the concurrent requests; for a rate, by the
                    // requests in flight the rows say the server was running.
                    let users = rows
                        .iter()
                        .find(|r| r.run_name() == name && load_x(r) == Some(*x))
                        .and_then(|r| {
                            r.concurrency()
                                .map(|c| c as f64)
                                .or_else(|| r.metric(&Col::RUNNING_REQ_MEAN))
                        })
                        .filter(|u| *u > 0.0)?;
                    Some((total, total / users))
                })
                .collect();
            (name, p)
        })
        .collect()
}

/// The distinct loads the rows were measured at (their x on the load axis), ascending.
fn loads(rows: &[Row]) -> Vec<f64> {
    let mut v: Vec<f64> = rows.iter().filter_map(load_x).collect();
    v.sort_by(f64::total_cmp);
    v.dedup();
    v
}

/// The one load point of a sweep that measured one, in words: `concurrency 32`, or
/// `request rate 4/s`.
fn load_words(rows: &[Row]) -> String {
    let Some(r) = rows.iter().find(|r| load_x(r).is_some()) else {
        return String::new();
    };
    match r.rate_text() {
        None => format!("concurrency {}", r.load_point()),
        Some(rate) => format!("request rate {rate}/s"),
    }
}

/// A single load point's `col` (and `outline`, e.g. the p99 beside a p50) as bars: one row per
/// configuration with a value, coloured as in the other charts.
fn load_bars(rows: &[Row], col: (&Col, &str), outline: Option<(&Col, &str)>) -> BarChart {
    let first = |v: &[(f64, Vec<f64>)]| v.first().and_then(|(_, vals)| Spread::of(vals));
    let filled = by_config(rows, col.0);
    let other = outline.map(|(c, _)| by_config(rows, c)).unwrap_or_default();
    let mut c = BarChart {
        filled: Measure {
            name: col.1.into(),
            values: Vec::new(),
        },
        outline: outline.map(|(_, name)| Measure {
            name: name.into(),
            values: Vec::new(),
        }),
        ..Default::default()
    };
    for (i, (name, pts)) in filled.iter().enumerate() {
        let f = first(pts);
        let o = other
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, p)| first(p));
        if f.is_none() && o.is_none() {
            continue;
        }
        c.rows.push((name.clone(), i));
        c.filled.values.push(f);
        if let Some(m) = &mut c.outline {
            m.values.push(o);
        }
    }
    c
}

/// A sweep measured at one load point: per metric, one bar per configuration (a line chart
/// would join nothing, and its load axis would be a single point padded to a range).
fn single_load_charts(rows: &[Row], prefix: &str) -> String {
    let at = load_words(rows);
    let mut o = String::new();
    let mut tput = load_bars(rows, (&Col::OUTPUT_TOK_S, "output tok/s"), None);
    tput.id = format!("{prefix}tput");
    tput.title = format!("Output throughput at {at}, by configuration");
    tput.x_label = "output tok/s".into();
    tput.note = format!(
        "The sweep measured one load point ({at}), so each chart shows one bar per \
         configuration (error bars: repeats' min–max)."
    );
    o.push_str(&chart::render_bars(&tput));
    for (p50, p99, what) in [
        (Col::TTFT_MS_P50, Col::TTFT_MS_P99, "TTFT"),
        (Col::TPOT_MS_P50, Col::TPOT_MS_P99, "TPOT"),
    ] {
        let mut c = load_bars(rows, (&p50, "p50"), Some((&p99, "p99")));
        c.id = format!("{prefix}{}", what.to_lowercase());
        c.title = format!("{what} p50 (filled) and p99 (dashed outline) at {at}");
        c.x_label = format!("{what} (ms)");
        o.push_str(&chart::render_bars(&c));
    }
    let mut good = load_bars(rows, (&Col::GOODPUT_REQ_S, "goodput"), None);
    good.id = format!("{prefix}goodput");
    good.title = format!("Goodput at {at}, by configuration");
    good.x_label = "goodput (req/s meeting the SLO)".into();
    if good.rows.is_empty() {
        good.note = "No goodput recorded: the workload set no SLO (see docs/spec.md).".into();
    }
    o.push_str(&chart::render_bars(&good));
    o
}

/// Across load points: per metric, one line per configuration.
fn load_line_charts(rows: &[Row], prefix: &str) -> String {
    let axis = load_axis(rows);
    // Concurrency is a whole number of requests: no ticks between them.
    let whole = !rows.iter().any(|r| r.rate_text().is_some());
    let mut o = String::new();
    let mut tput = Chart {
        id: format!("{prefix}tput"),
        title: "Output throughput by load point (error bars: repeats' min–max)".into(),
        x_label: axis.into(),
        y_label: "output tok/s".into(),
        x_from_data: true,
        x_whole: whole,
        ..Default::default()
    };
    metric_lines(rows, &Col::OUTPUT_TOK_S, "", false, &mut tput);
    o.push_str(&chart::render(&tput));
    for (p50, p99, what) in [
        (Col::TTFT_MS_P50, Col::TTFT_MS_P99, "TTFT"),
        (Col::TPOT_MS_P50, Col::TPOT_MS_P99, "TPOT"),
    ] {
        let mut c = Chart {
            id: format!("{prefix}{}", what.to_lowercase()),
            title: format!("{what} p50 (solid) and p99 (dashed) by load point"),
            x_label: axis.into(),
            y_label: format!("{what} (ms)"),
            x_from_data: true,
            x_whole: whole,
            ..Default::default()
        };
        metric_lines(rows, &p50, " p50", false, &mut c);
        metric_lines(rows, &p99, " p99", true, &mut c);
        o.push_str(&chart::render(&c));
    }
    let mut good = Chart {
        id: format!("{prefix}goodput"),
        title: "Goodput by load point".into(),
        x_label: axis.into(),
        y_label: "goodput (req/s meeting the SLO)".into(),
        x_from_data: true,
        x_whole: whole,
        ..Default::default()
    };
    metric_lines(rows, &Col::GOODPUT_REQ_S, "", false, &mut good);
    if good.lines.is_empty() {
        good.note = "No goodput recorded: the workload set no SLO (see docs/spec.md).".into();
    }
    o.push_str(&chart::render(&good));
    o
}

fn config_charts(s: &Sweep, prefix: &str) -> String {
    let rows = &s.rows;
    let mut o = String::from("<div class=\"grid\">");
    if loads(rows).len() <= 1 {
        o.push_str(&single_load_charts(rows, prefix));
    } else {
        o.push_str(&load_line_charts(rows, prefix));
    }
    let mut pareto = Chart {
        id: format!("{prefix}pareto"),
        title: "Pareto: output tok/s per user against total output tok/s".into(),
        x_label: "total output tok/s".into(),
        y_label: "output tok/s per user".into(),
        note: "Each point is a configuration at one load point; the dashed black line joins \
               the points no other beats on both axes."
            .into(),
        ..Default::default()
    };
    let pp = pareto_points(rows);
    let all: Points = pp.iter().flat_map(|(_, p)| p.iter().copied()).collect();
    for (i, (name, p)) in pp.into_iter().enumerate() {
        if !p.is_empty() {
            let mut l = Line::new(name, p, i).marker(Marker::nth(i / chart::PALETTE.len()));
            l.thin = true;
            pareto.lines.push(l);
        }
    }
    let frontier = data::pareto_frontier(&all);
    if !frontier.is_empty() {
        pareto
            .lines
            .push(Line::new("Pareto frontier", frontier, 6).dashed());
    }
    o.push_str(&chart::render(&pareto));
    if data::has_sessions(rows) {
        o.push_str(&session_charts(rows, prefix));
    }
    o.push_str("</div>");
    o
}

/// A sessions sweep (`sessions:`): TTFT p50 against the turn, one line per configuration, and
/// the prefix-cache hit rate the server reported beside the share the workload allows. A sweep
/// without sessions draws neither (its page stays as it was).
fn session_charts(rows: &[Row], prefix: &str) -> String {
    let mut o = String::new();
    let series = data::ttft_by_turn(rows);
    let and_later = series
        .iter()
        .filter(|s| s.and_later)
        .filter_map(|s| s.points.last().map(|p| p.0))
        .next();
    let mut turns = Chart {
        id: format!("{prefix}turns"),
        title: "TTFT p50 by turn (the history grows with each turn)".into(),
        x_label:
            "turn (1: no history; each later turn re-sends the earlier ones and their replies)"
                .into(),
        y_label: "TTFT p50 (ms)".into(),
        x_from_data: true,
        x_whole: true,
        note: format!(
            "One line per configuration (repeats weighted by their requests in the turn). A line \
             that stays flat: the prefix cache serves the history; one that climbs with the \
             turn: each turn prefills its history again.{}",
            and_later.map_or(String::new(), |t| format!(
                " The point at turn {t} holds that turn and every later one."
            ))
        ),
        ..Default::default()
    };
    let mut drawn: Vec<usize> = Vec::new();
    for s in series {
        // The same configuration at another load point keeps its colour and takes the next
        // marker; past the palette, the marker tells configurations apart as elsewhere.
        let again = drawn.iter().filter(|c| **c == s.color).count();
        drawn.push(s.color);
        let marker = Marker::nth(again + s.color / chart::PALETTE.len());
        turns
            .lines
            .push(Line::new(s.name, s.points, s.color).marker(marker));
    }
    if turns.lines.is_empty() {
        turns.note = "No turn has a TTFT: no session turn succeeded.".into();
    }
    o.push_str(&chart::render(&turns));

    let shares = data::cache_hit_vs_allowed(rows);
    let mut hit = BarChart {
        id: format!("{prefix}prefix-cache"),
        title: "Prefix-cache hit rate (filled) and the share the workload allows (dashed outline)"
            .into(),
        x_label: "share of prompt tokens (0–1)".into(),
        filled: Measure {
            name: "hit rate the server reported (cache_hit_rate)".into(),
            values: Vec::new(),
        },
        outline: Some(Measure {
            name: "share the workload allows (prefix_reusable_share)".into(),
            values: Vec::new(),
        }),
        note: "The outline is the history sgtune's sessions let the cache reuse; a hit rate \
               well under it is reusable history the cache dropped (a larger device pool or a \
               host tier, hicache_size, keeps it)."
            .into(),
        ..Default::default()
    };
    for c in &shares {
        hit.rows.push((c.name.clone(), c.color));
        hit.filled.values.push(Spread::of(&c.hit));
        if let Some(m) = &mut hit.outline {
            m.values.push(Spread::of(&c.allowed));
        }
    }
    o.push_str(&chart::render_bars(&hit));
    o
}

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

/// Offset of each load point's requests on the launch's timeline clock: its measured
/// window's start (matched by label).
fn client_offset(t: Option<&Timeline>, label: &str) -> Option<f64> {
    t?.windows.iter().find(|w| w.label == label).map(|w| w.t0)
}

fn launch_section(l: &Launch, rows: &[Row], budget: usize, prefix: &str) -> String {
    let id = format!("{prefix}run-{}", slug(&l.name));
    let mut o = String::new();
    let _ = write!(
        o,
        "<section class=\"launch\" id=\"{}\"><h3>{}</h3>",
        esc(&id),
        esc(&l.name)
    );
    let mine: Vec<&Row> = rows.iter().filter(|r| r.run_name() == l.name).collect();
    for r in &mine {
        if !r.is_ok() {
            let _ = write!(
                o,
                "<p class=\"fail\">{} failed ({}): {}</p>",
                esc(&r.load_point()),
                esc(r.failure_kind().map_or("", FailureKind::as_str)),
                esc(r.failure_message())
            );
        } else if let Some(v) = r.verdict() {
            let _ = write!(
                o,
                "<p><span class=\"verdict\">{} at {}</span>: {}</p>",
                esc(v.as_str()),
                esc(&r.load_point()),
                esc(r.verdict_evidence())
            );
        }
    }
    for n in &l.notes {
        let _ = write!(o, "<p class=\"note\">{}</p>", esc(n));
    }
    let t = l.timeline.as_ref();
    // The client's side on the server's clock: every load point shifted to its window.
    let mut tokens = Vec::new();
    let mut spans = Vec::new();
    for p in &l.points {
        if let Some(off) = client_offset(t, &p.label) {
            tokens.extend(data::token_events(&p.requests, off));
            spans.extend(data::intervals(&p.requests, off));
        }
    }
    match t {
        Some(t) if !t.is_empty() => {
            let t = data::downsampled(t.clone(), budget);
            o.push_str(&timeline_charts(&id, &t, &tokens, &spans, budget));
        }
        _ => o.push_str("<p class=\"nodata\">No stats lines in server.log: no timeline.</p>"),
    }
    if !l.points.is_empty() && l.points.iter().any(|p| !p.requests.is_empty()) {
        for (what, col, f) in [
            (
                "TTFT",
                "ttft",
                (|r: &data::ClientRequest| r.ttft_ms) as fn(&data::ClientRequest) -> Option<f64>,
            ),
            ("E2E latency", "e2e", |r: &data::ClientRequest| r.end_ms),
        ] {
            let mut c = Chart {
                id: format!("{id}-{col}-cdf"),
                title: format!("{what} CDF (client)"),
                x_label: format!("{what} (ms)"),
                y_label: "share of requests".into(),
                y_range: Some((0.0, 1.0)),
                ..Default::default()
            };
            for (i, p) in l.points.iter().enumerate() {
                let v: Vec<f64> = p.requests.iter().filter_map(f).collect();
                let cdf = data::downsample(&data::cdf(&v), (budget / 3).max(60));
                if !cdf.is_empty() {
                    c.lines.push(Line::new(p.label.clone(), cdf, i));
                }
            }
            o.push_str(&chart::render(&c));
        }
    }
    o.push_str("</section>");
    o
}

/// The server's timeline as three charts on one clock: throughput (server gen tok/s and, when
/// given, the client's tok/s), requests (running, queued, offered, client in flight), and KV
/// cache (token usage, cache-hit rate). Windows shaded, retractions marked.
fn timeline_charts(
    id: &str,
    t: &Timeline,
    client_tokens: &[(f64, f64)],
    client_spans: &[(f64, f64)],
    budget: usize,
) -> String {
    let spans: Vec<(f64, f64, String)> = t
        .windows
        .iter()
        .map(|w| (w.t0, w.t1, w.label.clone()))
        .collect();
    let base = |suffix: &str, title: &str, y: &str| Chart {
        id: format!("{id}-{suffix}"),
        title: title.into(),
        x_label: "time since the log's first line (s)".into(),
        y_label: y.into(),
        spans: spans.clone(),
        events: t
            .ready
            .map(|r| vec![(r, "ready".to_string())])
            .unwrap_or_default(),
        x_from_data: true,
        ..Default::default()
    };
    let mut o = String::new();
    let mut tput = base(
        "tput",
        "Throughput: server gen tok/s and client tok/s",
        "tok/s",
    );
    tput.lines.push(Line::new(
        "server gen throughput (log)",
        t.gen_tok_s.clone(),
        0,
    ));
    let span = t.gen_tok_s.last().map(|l| l.0).unwrap_or(0.0)
        - t.gen_tok_s.first().map(|f| f.0).unwrap_or(0.0);
    let client = data::downsample(&data::rate(client_tokens, data::bin_for(span, 120)), budget);
    if !client.is_empty() {
        let mut l = Line::new("client output tok/s (requests.csv)", client, 1).step();
        l.thin = true;
        tput.lines.push(l);
    }
    if !t.windows.is_empty() {
        tput.note = format!(
            "Shaded: measured windows ({}).",
            t.windows
                .iter()
                .map(|w| w.label.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    o.push_str(&chart::render(&tput));

    let title = if t.windows.iter().any(|w| w.offered.is_some()) {
        "Requests: running, queued and offered"
    } else {
        "Requests: running and queued"
    };
    let mut reqs = base("reqs", title, "requests");
    reqs.y_whole = true;
    reqs.marks = t.retractions.clone();
    reqs.marks_label = "retraction".into();
    reqs.lines
        .push(Line::new("#running-req", t.running.clone(), 0).step());
    reqs.lines
        .push(Line::new("#queue-req", t.queue.clone(), 3).step());
    for (i, w) in t.windows.iter().enumerate() {
        if let Some(c) = w.offered {
            let name = if i == 0 { "offered concurrency" } else { "" };
            reqs.lines
                .push(Line::new(name, vec![(w.t0, c), (w.t1, c)], 6).dashed());
        }
    }
    let inflight = data::downsample(&data::in_flight(client_spans), budget);
    if !inflight.is_empty() {
        let mut l = Line::new("client requests in flight", inflight, 2).step();
        l.thin = true;
        reqs.lines.push(l);
    }
    o.push_str(&chart::render(&reqs));

    let mut kv = base(
        "kv",
        "KV cache: token usage and cache-hit rate",
        "share (0–1)",
    );
    kv.y_range = Some((0.0, 1.0));
    kv.lines
        .push(Line::new("token usage", t.token_usage.clone(), 0));
    if !t.cache_hit.is_empty() {
        kv.lines
            .push(Line::new("cache-hit rate", t.cache_hit.clone(), 2).marker(Marker::Circle));
    }
    o.push_str(&chart::render(&kv));
    o
}

fn slug(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

fn sweep_body(s: &Sweep, prefix: &str, shift: usize) -> String {
    let mut o = overview(s, shift);
    let _ = write!(o, "<h{h}>By configuration</h{h}>", h = 2 + shift);
    o.push_str(&config_charts(s, prefix));
    for n in &s.notes {
        let _ = write!(o, "<p class=\"note\">{}</p>", esc(n));
    }
    o
}

fn launches(s: &Sweep, shift: usize, prefix: &str) -> String {
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

fn judgement_class(j: Judgement) -> &'static str {
    match j {
        Judgement::Better => "better",
        Judgement::Worse => "worse",
        _ => "",
    }
}

fn fmt_side(s: Option<&crate::report::compare::Side>) -> String {
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
    let mut joined: Vec<&crate::report::compare::Joined> = c.joined.iter().collect();
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

/// `sgtune log FILE --html OUT`: the server timeline of any SGLang or vLLM log.
pub fn log_page(name: &str, t: &Timeline) -> String {
    let mut o = head(&format!("sgtune log: {name}"));
    let _ = write!(
        o,
        "<h1>Server log: {}</h1><p class=\"sub\">{} lines, {} throughput stats lines, {} \
         retractions or preemptions.</p>",
        esc(name),
        t.lines,
        t.gen_tok_s.len(),
        t.retractions.len()
    );
    if t.is_empty() {
        o.push_str("<p class=\"nodata\">No stats lines: nothing to draw.</p>");
    } else {
        let budget = 1500;
        let t = data::downsampled(t.clone(), budget);
        o.push_str("<div class=\"grid\">");
        o.push_str(&timeline_charts("log", &t, &[], &[], budget));
        o.push_str("</div>");
    }
    o.push_str(FOOT);
    o
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn row(pairs: &[(&str, &str)]) -> Row {
        Row::from_cells(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())))
    }

    /// The x axis' tick labels of the chart `id` on a page: plotters centres them under the
    /// axis (`text-anchor="middle"`, `dy="0.76em"`, not rotated as the y axis' title is).
    fn x_ticks(html: &str, id: &str) -> Vec<String> {
        let start = html.find(&format!("id=\"{id}\"")).expect("the chart");
        let fig = &html[start..start + html[start..].find("</figure>").expect("its end")];
        fig.split("<text ")
            .skip(1)
            .filter(|t| t.contains("text-anchor=\"middle\"") && t.contains("dy=\"0.76em\""))
            .filter(|t| !t.contains("transform="))
            .filter_map(|t| t.split('>').nth(1)?.split('<').next())
            .map(|t| t.trim().to_string())
            .collect()
    }

    fn sweep(rows: Vec<Row>) -> Sweep {
        Sweep {
            name: "s".into(),
            dir: "s".into(),
            rows,
            param_keys: Vec::new(),
            decision: None,
            decision_sections: Vec::new(),
            decision_marks: None,
            launches: Vec::new(),
            tune: None,
            notes: Vec::new(),
        }
    }

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
        let c = crate::report::compare::compare(&a.rows, &b.rows, &metrics, 0.05);
        let html = compare_page(&a, &b, &c);
        assert!(
            html.contains(
                "<p class=\"note\">Engine changed (the same name ran another server): a @8: sglang → vllm</p>"
            ),
            "{html}"
        );
    }

    fn measured(name: &str, c: &str, tput: &str, ttft: (&str, &str)) -> Row {
        row(&[
            ("run_name", name),
            ("status", "ok"),
            ("concurrency", c),
            ("request_rate", ""),
            ("output_tok_s", tput),
            ("ttft_ms_p50", ttft.0),
            ("ttft_ms_p99", ttft.1),
            ("tpot_ms_p50", "12.5"),
            ("tpot_ms_p99", "14"),
        ])
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
        let o = crate::tune::objective::test_objective(
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

    /// One load point (the demo's 32 concurrent requests): no line chart with an axis padded
    /// from 31 to 33 and ticks at 31.5 and 32.5 requests, but one bar per configuration, with
    /// the repeats' spread, and the load named in the title.
    #[test]
    fn a_single_load_point_is_drawn_as_bars_not_lines() {
        let rows = vec![
            measured("kv-bound", "32", "450", ("13000", "20000")),
            measured("kv-bound", "32", "470", ("13400", "21000")),
            measured("roomy", "32", "755", ("156", "210")),
        ];
        let h = config_charts(&sweep(rows), "cfg-");
        for id in ["cfg-tput", "cfg-ttft", "cfg-tpot"] {
            let ticks = x_ticks(&h, id);
            assert!(!ticks.is_empty(), "{id}: no ticks");
            for t in &ticks {
                assert!(
                    !["31", "31.5", "32.5", "33"].contains(&t.as_str()),
                    "{id}: {ticks:?}"
                );
            }
        }
        assert!(
            h.contains("Output throughput at concurrency 32, by configuration"),
            "{h}"
        );
        // A bar per configuration, in its palette colour, and no line in one.
        for c in ["#0072B2", "#E69F00"] {
            assert!(h.contains(&format!("fill=\"{c}\"")), "no {c} bar");
            assert!(
                !h.contains(&format!("<polyline fill=\"none\" stroke=\"{c}\"")),
                "a {c} line"
            );
        }
        // Both names on the axis; the values beside the bars; p99 as the outline.
        assert!(h.contains("kv-bound") && h.contains("roomy"));
        assert!(h.contains("460") && h.contains("755"), "{h}");
        assert!(h.contains("13200 / 20500"), "{h}");
        assert!(h.contains("stroke-dasharray"), "p99 outline");
        // The spread of kv-bound's two repeats is an error bar at 450..470.
        assert!(h.contains("repeats&#39; min–max"));
        // No goodput recorded: said, not drawn.
        assert!(h.contains("No goodput recorded"));
    }

    /// Across load points, a concurrency axis ticks whole requests only.
    #[test]
    fn concurrency_axes_tick_whole_requests() {
        let rows = vec![
            measured("a", "2", "100", ("10", "12")),
            measured("a", "3", "140", ("11", "13")),
            measured("a", "4", "170", ("13", "15")),
        ];
        let h = config_charts(&sweep(rows), "cfg-");
        for id in ["cfg-tput", "cfg-ttft", "cfg-tpot"] {
            let ticks = x_ticks(&h, id);
            assert_eq!(ticks, ["2", "3", "4"], "{id}");
        }
    }

    /// A sessions sweep: TTFT against the turn, one line per configuration in its colour,
    /// and the hit rate beside the share allowed, as bars; a sweep without sessions draws
    /// neither.
    #[test]
    fn a_sessions_sweep_draws_ttft_by_turn_and_the_hit_rate_beside_the_share_allowed() {
        let session = |name: &str, turns: &str, hit: &str, allowed: &str| {
            measured(name, "4", "100", ("50", "90"))
                .with("turn_latency", turns)
                .with("cache_hit_rate", hit)
                .with("prefix_reusable_share", allowed)
        };
        let rows = vec![
            session(
                "radix",
                "1:60.0:5.00:8 2:55.0:5.00:8 3:58.0:5.00:8 4:63.0:5.00:8",
                "0.53",
                "0.58",
            ),
            session(
                "no-radix",
                "1:60.0:5.00:8 2:150.0:5.00:8 3:260.0:5.00:8 4:377.0:5.00:8",
                "0",
                "0.58",
            ),
        ];
        let h = config_charts(&sweep(rows.clone()), "cfg-");
        let fig = |id: &str| {
            let start = h.find(&format!("id=\"{id}\"")).expect(id);
            h[start..start + h[start..].find("</figure>").expect("its end")].to_string()
        };
        let turns = fig("cfg-turns");
        assert!(turns.contains("TTFT p50 by turn"), "{turns}");
        assert!(turns.contains("<svg"), "drawn: {turns}");
        for (name, colour) in [("radix", "#0072B2"), ("no-radix", "#E69F00")] {
            assert!(
                turns.contains(&format!("</span>{name}</li>")),
                "{name}: {turns}"
            );
            assert!(
                turns.contains(&format!("<polyline fill=\"none\" stroke=\"{colour}\"")),
                "{name}'s line: {turns}"
            );
        }
        assert_eq!(x_ticks(&h, "cfg-turns"), ["1", "2", "3", "4"]);
        assert!(!turns.contains("every later one"), "{turns}");
        let cache = fig("cfg-prefix-cache");
        assert!(cache.contains("<svg"), "drawn: {cache}");
        assert!(cache.contains("0.53 / 0.58"), "{cache}");
        assert!(cache.contains("share the workload allows"), "{cache}");
        // Without sessions, nothing new on the page.
        let plain: Vec<Row> = vec![measured("radix", "4", "100", ("50", "90"))];
        let h = config_charts(&sweep(plain), "cfg-");
        assert!(!h.contains("cfg-turns") && !h.contains("cfg-prefix-cache"));
        // The last bucket is said as holding every later turn.
        let long = vec![session(
            "radix",
            "1:60.0:5.00:8 24+:90.0:5.00:2",
            "0.5",
            "0.6",
        )];
        let h = config_charts(&sweep(long), "cfg-");
        assert!(
            h.contains("The point at turn 24 holds that turn and every later one."),
            "{h}"
        );
    }

    #[test]
    fn config_series_and_pareto_points() {
        let rows = vec![
            row(&[
                ("run_name", "a"),
                ("status", "ok"),
                ("concurrency", "8"),
                ("request_rate", ""),
                ("output_tok_s", "80"),
            ]),
            row(&[
                ("run_name", "a"),
                ("status", "ok"),
                ("concurrency", "8"),
                ("request_rate", ""),
                ("output_tok_s", "100"),
            ]),
            row(&[
                ("run_name", "a"),
                ("status", "ok"),
                ("concurrency", "2"),
                ("request_rate", ""),
                ("output_tok_s", "40"),
            ]),
            row(&[
                ("run_name", "b"),
                ("status", "failed"),
                ("concurrency", "2"),
                ("request_rate", ""),
                ("output_tok_s", ""),
            ]),
        ];
        let s = by_config(&rows, &Col::OUTPUT_TOK_S);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].1, vec![(2.0, vec![40.0]), (8.0, vec![80.0, 100.0])]);
        assert!(s[1].1.is_empty());
        let p = pareto_points(&rows);
        assert_eq!(p[0].1, vec![(40.0, 20.0), (90.0, 11.25)]);
    }
}
