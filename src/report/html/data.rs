//! The numbers that go into the report's charts, as pure functions with their own tests:
//! min/max downsampling, CDFs, the Pareto frontier, requests in flight, token rates, the rows
//! shaped into per-configuration series across load points (and the Pareto chart's points), and
//! a sessions sweep's TTFT by turn and prefix-cache hit rate against the share allowed. The
//! server's timeline comes read (`observe::timeline`, for either engine): here it is only
//! thinned for drawing.

use crate::load::sample::Phase;
pub use crate::observe::timeline::{Points, Timeline, WindowLines, WindowSpan};
use crate::record::requests::Request;
use crate::record::rows::{Col, Row};
use crate::report::table;

/// At most about `max_points` points from `points` (in x order): the points are cut into
/// buckets of consecutive points and each bucket keeps its lowest and its highest y (in their
/// x order), so every peak and every trough survives. The first and last points are kept.
pub fn downsample(points: &[(f64, f64)], max_points: usize) -> Points {
    let max_points = max_points.max(4);
    if points.len() <= max_points {
        return points.to_vec();
    }
    let buckets = max_points / 2;
    let size = points.len().div_ceil(buckets);
    let mut out = Vec::with_capacity(buckets * 2 + 2);
    for chunk in points.chunks(size) {
        let mut lo = 0;
        let mut hi = 0;
        for (i, p) in chunk.iter().enumerate() {
            if chunk.get(lo).is_some_and(|l| p.1 < l.1) {
                lo = i;
            }
            if chunk.get(hi).is_some_and(|h| p.1 > h.1) {
                hi = i;
            }
        }
        let (a, b) = (lo.min(hi), lo.max(hi));
        if let Some(p) = chunk.get(a) {
            out.push(*p);
        }
        if b != a {
            if let Some(p) = chunk.get(b) {
                out.push(*p);
            }
        }
    }
    if let (Some(first), Some(o)) = (points.first(), out.first()) {
        if first != o {
            out.insert(0, *first);
        }
    }
    if let (Some(last), Some(o)) = (points.last(), out.last()) {
        if last != o {
            out.push(*last);
        }
    }
    out
}

/// The timeline with every series thinned to about `max_points` points (extremes kept).
pub fn downsampled(mut t: Timeline, max_points: usize) -> Timeline {
    for s in [
        &mut t.gen_tok_s,
        &mut t.running,
        &mut t.queue,
        &mut t.token_usage,
        &mut t.cache_hit,
    ] {
        *s = downsample(s, max_points);
    }
    t
}

/// The empirical CDF of the finite values: (value, share of values ≤ value), ascending.
pub fn cdf(values: &[f64]) -> Points {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len() as f64;
    v.iter()
        .enumerate()
        .map(|(i, x)| (*x, (i + 1) as f64 / n))
        .collect()
}

/// The points no other point beats on both axes (higher x and higher y are better), sorted
/// by x ascending (so y descends along it).
pub fn pareto_frontier(points: &[(f64, f64)]) -> Points {
    let mut p: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    // By x descending (ties: y descending); keep each point whose y beats all seen so far.
    p.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.total_cmp(&a.1)));
    let mut out: Points = Vec::new();
    let mut best_y = f64::NEG_INFINITY;
    for q in p {
        if q.1 > best_y {
            out.push(q);
            best_y = q.1;
        }
    }
    out.reverse();
    out
}

/// Requests in flight over time from (start, end) intervals: a step function as points
/// (t, count from t on), starting at the first start. An end at the same instant as a start
/// is counted first.
pub fn in_flight(intervals: &[(f64, f64)]) -> Points {
    let mut ev: Vec<(f64, i64)> = Vec::with_capacity(intervals.len() * 2);
    for &(s, e) in intervals {
        if s.is_finite() && e.is_finite() && e >= s {
            ev.push((s, 1));
            ev.push((e, -1));
        }
    }
    ev.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut out: Points = Vec::new();
    let mut n = 0i64;
    for (t, d) in ev {
        n += d;
        match out.last_mut() {
            Some(last) if last.0 == t => last.1 = n as f64,
            _ => out.push((t, n as f64)),
        }
    }
    out
}

/// Tokens per second in bins of `bin_s` seconds from (time, tokens) events: (bin middle,
/// tokens in the bin / bin_s), every bin from the first event's to the last's.
pub fn rate(events: &[(f64, f64)], bin_s: f64) -> Points {
    let finite = events.iter().filter(|(t, _)| t.is_finite());
    let (lo, hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), (t, _)| {
        (lo.min(*t), hi.max(*t))
    });
    if !(lo.is_finite() && hi.is_finite()) || bin_s <= 0.0 {
        return Vec::new();
    }
    let n = (((hi - lo) / bin_s).floor() as usize + 1).min(100_000);
    let mut bins = vec![0.0; n];
    for (t, k) in events {
        if t.is_finite() {
            let i = (((t - lo) / bin_s).floor() as usize).min(n - 1);
            if let Some(b) = bins.get_mut(i) {
                *b += k;
            }
        }
    }
    bins.iter()
        .enumerate()
        .map(|(i, k)| (lo + (i as f64 + 0.5) * bin_s, k / bin_s))
        .collect()
}

/// A bin width that gives about `target` bins over `span` seconds: 1, 2, 5, 10, ... s.
pub fn bin_for(span: f64, target: usize) -> f64 {
    let raw = span / target.max(1) as f64;
    [
        0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0,
    ]
    .into_iter()
    .find(|b| *b >= raw)
    .unwrap_or(900.0)
}

/// One request as the client saw it (a measured row of requests.csv), times in seconds from
/// the load point's start.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientRequest {
    pub send_s: f64,
    pub ttft_ms: Option<f64>,
    pub end_ms: Option<f64>,
    pub completion_tokens: Option<f64>,
    /// Arrival of each content chunk, ms after send (empty when not recorded).
    pub chunk_ms: Vec<f64>,
}

/// The measured requests of one requests.csv as read (`record::requests::read`): warm-up rows,
/// and rows with no send time, are left out.
pub fn measured(rows: &[Request]) -> Vec<ClientRequest> {
    rows.iter()
        .filter(|r| r.phase == Phase::Measured)
        .filter_map(|r| {
            Some(ClientRequest {
                send_s: r.send_s?,
                ttft_ms: r.ttft_ms,
                end_ms: r.end_ms,
                completion_tokens: r.completion_tokens.map(|t| t as f64),
                chunk_ms: r.chunk_ms.clone(),
            })
        })
        .collect()
}

/// The client's output tokens over time, as (time, tokens) events: each chunk carries an equal
/// share of the request's completion tokens; without chunk times, the tokens are spread evenly
/// from first token to end.
pub fn token_events(reqs: &[ClientRequest], offset_s: f64) -> Points {
    let mut ev = Vec::new();
    for r in reqs {
        let Some(tokens) = r.completion_tokens.filter(|t| t.is_finite() && *t > 0.0) else {
            continue;
        };
        let base = offset_s + r.send_s;
        if !r.chunk_ms.is_empty() {
            let each = tokens / r.chunk_ms.len() as f64;
            ev.extend(r.chunk_ms.iter().map(|ms| (base + ms / 1000.0, each)));
        } else if let (Some(a), Some(b)) = (r.ttft_ms, r.end_ms) {
            let n = tokens.clamp(1.0, 1000.0) as usize;
            let each = tokens / n as f64;
            ev.extend((0..n).map(|i| {
                (
                    base + (a + (b - a) * (i as f64 + 0.5) / n as f64) / 1000.0,
                    each,
                )
            }));
        }
    }
    ev
}

/// (start, end) in seconds of each request that has an end, shifted by `offset_s`.
pub fn intervals(reqs: &[ClientRequest], offset_s: f64) -> Vec<(f64, f64)> {
    reqs.iter()
        .filter_map(|r| {
            r.end_ms
                .map(|e| (offset_s + r.send_s, offset_s + r.send_s + e / 1000.0))
        })
        .collect()
}

/// The ok rows of a sweep grouped as its charts draw them: by configuration and load point, in
/// first-appearance order, each group with its configuration's palette index (its run name's
/// order of first appearance, as the per-configuration charts colour it). The group's name is
/// the configuration's, with ` @ <load point>` when the rows span more than one load point.
fn ok_groups(rows: &[Row]) -> Vec<(String, usize, Vec<&Row>)> {
    let mut names: Vec<&str> = Vec::new();
    let mut points: Vec<String> = Vec::new();
    for r in rows {
        if !names.contains(&r.run_name()) {
            names.push(r.run_name());
        }
        let p = r.load_point();
        if !points.contains(&p) {
            points.push(p);
        }
    }
    let several = points.len() > 1;
    let mut out: Vec<(String, usize, Vec<&Row>)> = Vec::new();
    let mut keys: Vec<(String, String)> = Vec::new();
    for r in rows.iter().filter(|r| r.is_ok()) {
        let key = (r.run_name().to_string(), r.load_point());
        let i = match keys.iter().position(|k| *k == key) {
            Some(i) => i,
            None => {
                let color = names.iter().position(|n| *n == r.run_name()).unwrap_or(0);
                let name = if several {
                    format!("{} @ {}", key.0, key.1)
                } else {
                    key.0.clone()
                };
                keys.push(key);
                out.push((name, color, Vec::new()));
                out.len() - 1
            }
        };
        if let Some(g) = out.get_mut(i) {
            g.2.push(r);
        }
    }
    out
}

/// Whether the rows measured sessions (`sessions:`): some row has latency by turn.
pub fn has_sessions(rows: &[Row]) -> bool {
    rows.iter().any(|r| !r.turn_latency().is_empty())
}

/// One line of the TTFT-by-turn chart.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnSeries {
    /// The configuration (` @ <load point>` when the sweep has several).
    pub name: String,
    /// Its palette index, as in the per-configuration charts.
    pub color: usize,
    /// (turn, TTFT p50 in ms), turns ascending.
    pub points: Points,
    /// The last point is the last bucket, holding that turn and every later one.
    pub and_later: bool,
}

/// Per configuration (and load point) of a sessions sweep, its TTFT p50 at each turn. The
/// repeats' p50s of a turn are averaged weighted by their requests in that turn (a repeat
/// that measured more of a turn says more about it); a configuration with no turn measured
/// has no line.
pub fn ttft_by_turn(rows: &[Row]) -> Vec<TurnSeries> {
    let mut out = Vec::new();
    for (name, color, group) in ok_groups(rows) {
        // turn -> (Σ weight × p50, Σ weight, and_later)
        let mut by_turn: std::collections::BTreeMap<u32, (f64, f64, bool)> = Default::default();
        for r in &group {
            for t in r.turn_latency() {
                let Some(ms) = t.ttft_p50_ms else { continue };
                // A bucket that says it has no requests still has its p50: weigh it as one.
                let w = t.requests.max(1) as f64;
                let e = by_turn.entry(t.turn).or_insert((0.0, 0.0, false));
                e.0 += w * ms;
                e.1 += w;
                e.2 |= t.and_later;
            }
        }
        if by_turn.is_empty() {
            continue;
        }
        let and_later = by_turn.values().next_back().is_some_and(|e| e.2);
        out.push(TurnSeries {
            name,
            color,
            points: by_turn
                .iter()
                .map(|(t, (sum, w, _))| (f64::from(*t), sum / w))
                .collect(),
            and_later,
        });
    }
    out
}

/// A configuration's prefix-cache hit rate as the server reported it beside the hit rate the
/// workload allows, over its ok repeats.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheShare {
    /// The configuration (` @ <load point>` when the sweep has several).
    pub name: String,
    /// Its palette index, as in the per-configuration charts.
    pub color: usize,
    /// The server's hit rate (`cache_hit_rate`) of each repeat that has one.
    pub hit: Vec<f64>,
    /// The share the workload allows (`prefix_reusable_share`) of each repeat that has one.
    pub allowed: Vec<f64>,
}

/// Per configuration (and load point), the server's prefix-cache hit rate and the share the
/// workload allows; a configuration with neither is left out.
pub fn cache_hit_vs_allowed(rows: &[Row]) -> Vec<CacheShare> {
    ok_groups(rows)
        .into_iter()
        .map(|(name, color, group)| CacheShare {
            name,
            color,
            hit: group
                .iter()
                .filter_map(|r| r.metric(&Col::CACHE_HIT_RATE))
                .collect(),
            allowed: group
                .iter()
                .filter_map(|r| r.metric(&Col::PREFIX_REUSABLE_SHARE))
                .collect(),
        })
        .filter(|c| !(c.hit.is_empty() && c.allowed.is_empty()))
        .collect()
}

/// The x of a row on the load-point axis: its concurrency, else its request rate.
pub(super) fn load_x(r: &Row) -> Option<f64> {
    r.concurrency()
        .map(|c| c as f64)
        .or_else(|| r.request_rate())
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

pub(super) fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
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
pub(super) fn loads(rows: &[Row]) -> Vec<f64> {
    let mut v: Vec<f64> = rows.iter().filter_map(load_x).collect();
    v.sort_by(f64::total_cmp);
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::report::html::testing::row;

    #[test]
    fn downsample_keeps_extremes_and_ends() {
        let pts: Points = (0..10_000)
            .map(|i| {
                let y = match i {
                    1234 => 1e6,
                    8765 => -1e6,
                    _ => (i as f64 * 0.01).sin(),
                };
                (i as f64, y)
            })
            .collect();
        let d = downsample(&pts, 200);
        assert!(d.len() <= 204, "{}", d.len());
        assert!(d.contains(&(1234.0, 1e6)));
        assert!(d.contains(&(8765.0, -1e6)));
        assert_eq!(d.first(), pts.first());
        assert_eq!(d.last(), pts.last());
        assert!(d.windows(2).all(|w| w[0].0 < w[1].0), "x order kept");
        let max = |p: &[(f64, f64)]| p.iter().map(|q| q.1).fold(f64::MIN, f64::max);
        assert_eq!(max(&d), max(&pts));
        // Short series pass through.
        assert_eq!(downsample(&pts[..10], 200), pts[..10].to_vec());
    }

    #[test]
    fn cdf_is_monotone_and_ends_at_one() {
        let c = cdf(&[5.0, 1.0, f64::NAN, 3.0, 3.0, 2.0]);
        assert_eq!(c.len(), 5);
        assert!(c.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 < w[1].1));
        assert_eq!(c.last().unwrap().1, 1.0);
        assert_eq!(c.first().unwrap(), &(1.0, 0.2));
        assert!(cdf(&[]).is_empty());
    }

    #[test]
    fn pareto_frontier_keeps_only_undominated_points() {
        let pts = [
            (100.0, 50.0),
            (200.0, 40.0),
            (150.0, 30.0), // dominated by (200, 40)
            (300.0, 10.0),
            (50.0, 50.0),  // dominated by (100, 50)
            (250.0, 10.0), // dominated by (300, 10)
        ];
        assert_eq!(
            pareto_frontier(&pts),
            vec![(100.0, 50.0), (200.0, 40.0), (300.0, 10.0)]
        );
        assert!(pareto_frontier(&[]).is_empty());
    }

    #[test]
    fn in_flight_counts_overlaps() {
        let f = in_flight(&[(0.0, 2.0), (1.0, 3.0), (2.0, 4.0), (f64::NAN, 1.0)]);
        assert_eq!(
            f,
            vec![(0.0, 1.0), (1.0, 2.0), (2.0, 2.0), (3.0, 1.0), (4.0, 0.0)]
        );
        assert!(f.iter().all(|p| p.1 >= 0.0));
    }

    #[test]
    fn rate_bins_tokens_per_second() {
        let r = rate(&[(0.1, 10.0), (0.9, 10.0), (2.5, 4.0)], 1.0);
        assert_eq!(r, vec![(0.6, 20.0), (1.6, 0.0), (2.6, 4.0)]);
        assert!(rate(&[], 1.0).is_empty());
        assert_eq!(bin_for(100.0, 100), 1.0);
        assert_eq!(bin_for(1000.0, 100), 10.0);
    }

    #[test]
    fn requests_csv_rows_become_events() {
        let csv = "phase,index,send_s,ttft_ms,end_ms,completion_tokens,chunk_ms\n\
warmup,0,,5,10,2,\n\
measured,0,0.0,100,1100,4,100 400 700 1100\n\
measured,1,0.5,200,700,2,\n";
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("requests.csv");
        std::fs::write(&path, csv).unwrap();
        let r = measured(&crate::record::requests::read(&path).unwrap().unwrap());
        assert_eq!(r.len(), 2);
        let ev = token_events(&r, 10.0);
        assert_eq!(ev.len(), 4 + 2);
        assert!((ev.iter().map(|e| e.1).sum::<f64>() - 6.0).abs() < 1e-9);
        assert_eq!(ev[0], (10.1, 1.0));
        assert_eq!(intervals(&r, 0.0), vec![(0.0, 1.1), (0.5, 1.2)]);
    }

    fn session_row(name: &str, c: &str, status: &str, cells: &[(&str, &str)]) -> Row {
        let mut r = Row::from_cells([
            ("run_name", name),
            ("status", status),
            ("concurrency", c),
            ("request_rate", ""),
        ]);
        for (k, v) in cells {
            r.set_cell(k, *v);
        }
        r
    }

    /// One line per configuration, turns ascending, repeats weighted by their requests in a
    /// turn; failed rows, rows without sessions and empty TTFTs add nothing; colours follow
    /// the run names' first appearance, as the other charts' do.
    #[test]
    fn ttft_by_turn_is_one_line_per_configuration() {
        let rows = vec![
            session_row("failed", "8", "failed", &[]),
            session_row(
                "radix",
                "8",
                "ok",
                &[("turn_latency", "2:100.0:10.00:30 1:200.0:10.00:10")],
            ),
            session_row(
                "radix",
                "8",
                "ok",
                &[("turn_latency", "1:300.0:10.00:30 2:100.0:10.00:10")],
            ),
            session_row(
                "no-radix",
                "8",
                "ok",
                &[("turn_latency", "1:150.0::4 3::10.00:2 24+:900.0:10.00:1")],
            ),
            session_row("plain", "8", "ok", &[]),
        ];
        assert!(has_sessions(&rows));
        assert!(!has_sessions(&rows[4..]));
        let got = ttft_by_turn(&rows);
        assert_eq!(
            got,
            vec![
                TurnSeries {
                    name: "radix".into(),
                    color: 1,
                    // (200×10 + 300×30) / 40 and (100×30 + 100×10) / 40.
                    points: vec![(1.0, 275.0), (2.0, 100.0)],
                    and_later: false,
                },
                TurnSeries {
                    name: "no-radix".into(),
                    color: 2,
                    points: vec![(1.0, 150.0), (24.0, 900.0)],
                    and_later: true,
                },
            ]
        );
        // Without sessions: no line.
        assert!(ttft_by_turn(&rows[4..]).is_empty());
    }

    /// A sweep over several load points names each line by its point too.
    #[test]
    fn several_load_points_are_lines_of_their_own() {
        let rows = vec![
            session_row("a", "8", "ok", &[("turn_latency", "1:10.0::1")]),
            session_row("a", "16", "ok", &[("turn_latency", "1:20.0::1")]),
        ];
        let names: Vec<(String, usize)> = ttft_by_turn(&rows)
            .into_iter()
            .map(|s| (s.name, s.color))
            .collect();
        assert_eq!(names, [("a @ 8".to_string(), 0), ("a @ 16".to_string(), 0)]);
    }

    /// The server's hit rate beside the allowed share, per configuration; one with neither
    /// (single prompts) and failed rows are left out.
    #[test]
    fn the_hit_rate_stands_beside_the_share_allowed() {
        let rows = vec![
            session_row(
                "small-pool",
                "8",
                "ok",
                &[("cache_hit_rate", "0.3"), ("prefix_reusable_share", "0.8")],
            ),
            session_row(
                "small-pool",
                "8",
                "ok",
                &[("cache_hit_rate", "0.4"), ("prefix_reusable_share", "0.82")],
            ),
            session_row(
                "small-pool",
                "8",
                "failed",
                &[("cache_hit_rate", "0.9"), ("prefix_reusable_share", "0.9")],
            ),
            session_row("plain", "8", "ok", &[("cache_hit_rate", "")]),
            session_row("hicache", "8", "ok", &[("prefix_reusable_share", "0.81")]),
        ];
        assert_eq!(
            cache_hit_vs_allowed(&rows),
            vec![
                CacheShare {
                    name: "small-pool".into(),
                    color: 0,
                    hit: vec![0.3, 0.4],
                    allowed: vec![0.8, 0.82],
                },
                CacheShare {
                    name: "hicache".into(),
                    color: 2,
                    hit: vec![],
                    allowed: vec![0.81],
                },
            ]
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
