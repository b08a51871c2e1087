//! The sweep page's charts by configuration: each metric across load points (one bar per
//! configuration when the sweep measured one), the Pareto chart, and a sessions sweep's TTFT by
//! turn and prefix-cache hit rate.

use super::Sweep;
use super::chart::{self, Bar, BarChart, Chart, Line, Marker, Measure, Spread};
use super::data::{self, Points, by_config, load_x, loads, mean, pareto_points};
use crate::record::rows::{Col, Row};

fn load_axis(rows: &[Row]) -> &'static str {
    if rows.iter().any(|r| r.rate_text().is_some()) {
        "load point (concurrency, or request rate in req/s)"
    } else {
        "concurrency (requests)"
    }
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

pub(super) fn config_charts(s: &Sweep, prefix: &str) -> String {
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::report::html::testing::{measured, sweep, x_ticks};
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
}
