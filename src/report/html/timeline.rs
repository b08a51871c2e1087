//! A server's timeline as three charts on one clock (throughput, requests, KV cache), which a
//! launch's section and the log page draw.

use super::chart::{self, Chart, Line, Marker};
use super::data::{self, Timeline};

/// The server's timeline as three charts on one clock: throughput (server gen tok/s and, when
/// given, the client's tok/s), requests (running, queued, offered, client in flight), and KV
/// cache (token usage, cache-hit rate). Windows shaded, retractions marked.
pub(super) fn timeline_charts(
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
