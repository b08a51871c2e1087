//! Rows, sweeps and a chart's tick labels for the pages' unit tests.
#![allow(clippy::expect_used)]

use super::Sweep;
use crate::record::rows::Row;

pub(super) fn row(pairs: &[(&str, &str)]) -> Row {
    Row::from_cells(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())))
}

/// The x axis' tick labels of the chart `id` on a page: plotters centres them under the
/// axis (`text-anchor="middle"`, `dy="0.76em"`, not rotated as the y axis' title is).
pub(super) fn x_ticks(html: &str, id: &str) -> Vec<String> {
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

pub(super) fn sweep(rows: Vec<Row>) -> Sweep {
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

pub(super) fn measured(name: &str, c: &str, tput: &str, ttft: (&str, &str)) -> Row {
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
