//! One launch's section of the sweep page: its verdicts and failures, its server timeline with
//! the client's tokens and requests on the same clock, and the client's TTFT and latency CDFs.

use std::fmt::Write as _;

use super::chart::{self, Chart, Line};
use super::data::{self, Timeline};
use super::timeline::timeline_charts;
use super::{Launch, esc};
use crate::record::rows::Row;
use crate::server::failure::FailureKind;

/// Offset of each load point's requests on the launch's timeline clock: its measured
/// window's start (matched by label).
fn client_offset(t: Option<&Timeline>, label: &str) -> Option<f64> {
    t?.windows.iter().find(|w| w.label == label).map(|w| w.t0)
}

pub(super) fn launch_section(l: &Launch, rows: &[Row], budget: usize, prefix: &str) -> String {
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

fn slug(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}
