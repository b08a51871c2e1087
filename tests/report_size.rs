//! report.html stays small: a synthetic sweep of 20 configurations × 10 load points, each
//! launch with a long server log (an hour of stats lines per load point's window, a
//! saw-toothing KV pool, retractions) and 100 requests per load point, renders under 2 MB.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Write as _;

use sgtune::observe::timeline::{self, WindowLines};
use sgtune::record::rows::Row;
use sgtune::report::html::data::ClientRequest;
use sgtune::report::html::{Launch, PointClient, Sweep, sweep_page};

const CONFIGS: usize = 20;
const POINTS: usize = 10;
const LINES_PER_POINT: usize = 3600;
const LOADS: [usize; POINTS] = [1, 2, 4, 8, 16, 24, 32, 48, 64, 128];

fn hms(s: usize) -> String {
    format!("{:02}:{:02}:{:02}", (s / 3600) % 24, (s / 60) % 60, s % 60)
}

/// A server log: ready, then per load point a window of decode lines (one a second), with a
/// retraction now and then. Returns the text and the windows by line number.
fn log(cfg: usize) -> (String, Vec<WindowLines>) {
    let mut s = String::new();
    let mut line = 0;
    let mut sec = 0;
    s.push_str("[2026-12-01 00:00:00] The server is fired up and ready to roll!\n");
    line += 1;
    let mut windows = Vec::new();
    for c in LOADS {
        let start = line;
        for i in 0..LINES_PER_POINT {
            sec += 1;
            let usage = (i % 97) as f64 / 100.0;
            let running = c.min(6 + cfg % 5);
            let queue = c - running;
            let _ = writeln!(
                s,
                "[2026-12-01 {}] Decode batch, #running-req: {running}, #token: {}, token usage: {usage:.2}, cpu graph: False, gen throughput (token/s): {:.2}, #queue-req: {queue}",
                hms(sec),
                i * 3,
                100.0 + (i % 13) as f64 * 7.0 + cfg as f64,
            );
            line += 1;
            if i % 500 == 250 {
                let _ = writeln!(
                    s,
                    "[2026-12-01 {}] KV cache pool is full. Retract requests. #retracted_reqs: 1, #new_token_ratio: 0.1 -> 0.6",
                    hms(sec)
                );
                line += 1;
            }
        }
        windows.push(WindowLines {
            start_line: start,
            end_line: line,
            label: format!("c{c}"),
            offered: Some(c as f64),
        });
        sec += 30;
    }
    (s, windows)
}

fn requests(p: usize) -> Vec<ClientRequest> {
    (0..100)
        .map(|i| ClientRequest {
            send_s: i as f64 * 30.0,
            ttft_ms: Some(100.0 + ((i * 37 + p) % 100) as f64 * 10.0),
            end_ms: Some(20_000.0 + ((i * 53) % 100) as f64 * 100.0),
            completion_tokens: Some(256.0),
            chunk_ms: (0..256).map(|k| 100.0 + k as f64 * 80.0).collect(),
        })
        .collect()
}

fn row(cfg: usize, p: usize) -> Row {
    let c = LOADS[p];
    let f = |x: f64| format!("{x:.2}");
    let pairs: Vec<(&str, String)> = vec![
        ("run_name", format!("config-{cfg:02}")),
        ("run_id", format!("{cfg:012}")),
        ("status", "ok".into()),
        ("param_max_total_tokens", (2048 * (cfg + 1)).to_string()),
        ("concurrency", c.to_string()),
        ("request_rate", String::new()),
        ("repeat", "1".into()),
        (
            "output_tok_s",
            f(100.0 + (c as f64).sqrt() * 50.0 + cfg as f64),
        ),
        ("ttft_ms_p50", f(100.0 * c as f64)),
        ("ttft_ms_p99", f(300.0 * c as f64)),
        ("tpot_ms_p50", f(20.0 + c as f64)),
        ("tpot_ms_p99", f(40.0 + c as f64)),
        ("e2e_ms_p50", f(5000.0 + c as f64)),
        ("goodput_req_s", f(1.0 + cfg as f64 / 10.0)),
        ("server_gen_tput_mean", f(120.0)),
        ("verdict", "kv_cache_bound".into()),
        (
            "verdict_evidence",
            "#running-req max 6 of 32 offered, #queue-req mean 18.8".into(),
        ),
    ];
    Row::from_cells(pairs.into_iter().map(|(k, v)| (k.to_string(), v)))
}

#[test]
fn twenty_configs_by_ten_load_points_stay_under_two_megabytes() {
    let mut sweep = Sweep {
        name: "big".into(),
        dir: "results/big".into(),
        param_keys: vec!["max_total_tokens".into()],
        ..Default::default()
    };
    for cfg in 0..CONFIGS {
        for p in 0..POINTS {
            sweep.rows.push(row(cfg, p));
        }
        let (text, windows) = log(cfg);
        let timeline = timeline::read(
            text.as_bytes(),
            &windows,
            Some(sgtune::plan::engine::Engine::Sglang),
        )
        .unwrap();
        assert_eq!(timeline.gen_tok_s.len(), POINTS * LINES_PER_POINT);
        sweep.launches.push(Launch {
            name: format!("config-{cfg:02}"),
            timeline: Some(timeline),
            points: windows
                .iter()
                .enumerate()
                .map(|(p, w)| PointClient {
                    label: w.label.clone(),
                    requests: requests(p),
                })
                .collect(),
            notes: Vec::new(),
        });
    }
    let html = sweep_page(&sweep);
    let mb = html.len() as f64 / 1e6;
    eprintln!("synthetic 20×10 sweep: report.html is {:.2} MB", mb);
    if let Ok(p) = std::env::var("SGTUNE_REPORT_SIZE_OUT") {
        std::fs::write(p, &html).unwrap();
    }
    assert!(mb < 2.0, "report.html is {mb:.2} MB");
    // Every launch still has its charts.
    for cfg in 0..CONFIGS {
        assert!(html.contains(&format!("id=\"run-config-{cfg:02}-reqs\"")));
    }
}
