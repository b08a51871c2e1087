//! `sgtune report` and `sgtune log --html` from the command line: where the page goes, that
//! `report A B` judges every change exactly as `sgtune compare` does, and the errors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test may panic: that is its failure

use std::path::Path;
use std::process::{Command, Output};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/results");

fn sgtune(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sgtune"))
        .args(args)
        .output()
        .unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn report_defaults_to_the_folder_and_says_where() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cpu-demo");
    let st = Command::new("cp")
        .args(["-r", &format!("{FIXTURES}/cpu-demo"), s(&dir)])
        .status()
        .unwrap();
    assert!(st.success());
    std::fs::remove_file(dir.join("report.html")).ok();
    let out = sgtune(&["report", s(&dir)]);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("report.html"), "{stdout}");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("id=\"run-mtt2048-reqs\""));
    // With an objective, the table's star is the decision's (decision.json), as in results.md.
    assert!(html.contains(">★ mtt32768 (winner)</td>"), "{html}");
    assert!(!html.contains("(best)"));
    // results.csv alone works too (no runs/ folder next to it is needed).
    let out = sgtune(&[
        "report",
        &format!("{FIXTURES}/compare-a/results.csv"),
        "-o",
        s(&tmp.path().join("a.html")),
    ]);
    assert!(out.status.success(), "{out:?}");
}

/// A folder without decision.json (an interrupted sweep) stars the leader so far by the
/// decision's rule, from spec.yaml's objective: not the fastest, which broke the SLO.
#[test]
fn without_decision_json_the_star_is_the_leader_so_far() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cpu-demo");
    let st = Command::new("cp")
        .args(["-r", &format!("{FIXTURES}/cpu-demo"), s(&dir)])
        .status()
        .unwrap();
    assert!(st.success());
    std::fs::remove_file(dir.join("decision.json")).unwrap();
    std::fs::remove_file(dir.join("decision.md")).unwrap();
    // The KV-bound pool (TTFT p99 over the SLO of 5,000 ms) made the fastest.
    let csv = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    let mut lines: Vec<String> = csv.lines().map(String::from).collect();
    let col = lines[0]
        .split(',')
        .position(|c| c == "output_tok_s")
        .unwrap();
    for l in lines.iter_mut().skip(1) {
        if l.starts_with("mtt2048,") {
            let mut cells: Vec<&str> = l.split(',').collect();
            cells[col] = "9999.0";
            *l = cells.join(",");
        }
    }
    std::fs::write(dir.join("results.csv"), lines.join("\n") + "\n").unwrap();
    let page = tmp.path().join("r.html");
    let out = sgtune(&["report", s(&dir), "-o", s(&page)]);
    assert!(out.status.success(), "{out:?}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains(">★ mtt32768 (leader so far)</td>"), "{html}");
    assert!(!html.contains("(best)"));
    assert!(html.contains("is not starred: SLO violated"));
}

#[test]
fn report_a_b_judges_changes_as_compare_does() {
    let tmp = tempfile::tempdir().unwrap();
    let page = tmp.path().join("ab.html");
    let (a, b) = (
        format!("{FIXTURES}/compare-a"),
        format!("{FIXTURES}/compare-b"),
    );
    let out = sgtune(&["report", &a, &b, "-o", s(&page)]);
    assert!(out.status.success(), "{out:?}");
    let html = std::fs::read_to_string(&page).unwrap();
    let out = sgtune(&["compare", &a, &b, "--format", "csv"]);
    assert!(out.status.success());
    let csv = String::from_utf8(out.stdout).unwrap();
    let mut judged = 0;
    for line in csv.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        if f.len() < 8 {
            continue; // the blank line at the end
        }
        let (run, lp, metric, judgement) = (f[0], f[1], f[2], f[f.len() - 1]);
        if metric.starts_with("decision_") {
            continue; // the decision diff's rows: checked below as the page's opening
        }
        let cell = format!("<td>{run}</td><td>{lp}</td><td><code>{metric}</code></td>");
        let at = html
            .find(&cell)
            .unwrap_or_else(|| panic!("{run} @{lp} {metric} missing from the page"));
        let row_end = at + html[at..].find("</tr>").unwrap();
        assert!(
            html[at..row_end].contains(&format!("<td>{judgement}</td>")),
            "{run} @{lp} {metric}: compare says {judgement}; page row: {}",
            &html[at..row_end]
        );
        judged += 1;
    }
    assert!(judged > 10, "{csv}");
    assert!(html.contains("<tr class=\"better\">") && html.contains("<tr class=\"worse\">"));
    // The page opens with the same decision diff as `compare`: its paragraph, before the
    // per-metric table, which shows the changes beyond noise and folds the rest.
    let out = sgtune(&["compare", &a, &b]);
    let table = String::from_utf8(out.stdout).unwrap();
    let paragraph = table
        .lines()
        .find_map(|l| l.strip_prefix("Decision: "))
        .unwrap();
    assert!(
        paragraph.contains("Standing changed: fp8 failed → eligible."),
        "{table}"
    );
    let diff = html.find("<section id=\"decision-diff\">").unwrap();
    assert!(html[diff..].starts_with(&format!(
        "<section id=\"decision-diff\"><h2>Decision: what changed</h2><p>Decision: {paragraph}</p>"
    )));
    assert!(diff < html.find("id=\"changes\"").unwrap());
    assert!(html.contains("<details id=\"within-noise\">"));
    // Both sweeps' pages are there, their ids apart.
    assert!(html.contains("id=\"a-cfg-tput\"") && html.contains("id=\"b-cfg-tput\""));
}

#[test]
fn log_html_draws_any_log() {
    let tmp = tempfile::tempdir().unwrap();
    let page = tmp.path().join("log.html");
    let log = format!("{FIXTURES}/cpu-demo/runs/mtt2048/server.log");
    let out = sgtune(&["log", &log, "--html", s(&page)]);
    assert!(out.status.success(), "{out:?}");
    let html = std::fs::read_to_string(&page).unwrap();
    for id in ["log-tput", "log-reqs", "log-kv"] {
        assert!(html.contains(&format!("id=\"{id}\"")), "{id}");
    }
    assert!(html.contains("<polyline"));
    // One file only; and it must exist.
    let out = sgtune(&["log", &log, &log, "--html", s(&page)]);
    assert_eq!(out.status.code(), Some(2));
    let out = sgtune(&["log", "/nonexistent/server.log", "--html", s(&page)]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn report_of_a_missing_folder_is_bad_input() {
    let out = sgtune(&["report", "/nonexistent/sweep"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("error:"));
}

/// The demo on a fresh machine: the KV-bound pool had the higher output tok/s but broke the
/// SLO, and the table starred it "(best)" above a decision that named the roomy pool. The page
/// stars the decision's winner and says why the faster one is not starred.
#[test]
fn the_pages_star_follows_the_decision_not_the_highest_output() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cpu-demo");
    let st = Command::new("cp")
        .args(["-r", &format!("{FIXTURES}/cpu-demo"), s(&dir)])
        .status()
        .unwrap();
    assert!(st.success());
    let csv = dir.join("results.csv");
    let mut r = csv::Reader::from_path(&csv).unwrap();
    let header = r.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let (name, tok) = (col("run_name"), col("output_tok_s"));
    let rows: Vec<Vec<String>> = r
        .records()
        .map(|rec| {
            let mut v: Vec<String> = rec.unwrap().iter().map(String::from).collect();
            if v[name] == "mtt2048" {
                v[tok] = "457.7".into();
            }
            v
        })
        .collect();
    let mut w = csv::Writer::from_path(&csv).unwrap();
    w.write_record(&header).unwrap();
    for v in rows {
        w.write_record(&v).unwrap();
    }
    w.flush().unwrap();
    let page = tmp.path().join("r.html");
    let out = sgtune(&["report", s(&dir), "-o", s(&page)]);
    assert!(out.status.success(), "{out:?}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains(">★ mtt32768 (winner)</td>"), "{html}");
    assert!(!html.contains("★ mtt2048"), "{html}");
    assert!(
        html.contains("The highest output tok/s, mtt2048 (457.7), is not starred: SLO violated: ttft_ms_p99 median 44516 &gt; 5000."),
        "{html}"
    );
}
