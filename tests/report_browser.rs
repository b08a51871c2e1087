//! The report as a person sees it: headless Chromium loads report.html made from the committed
//! demo sweep (tests/fixtures/results/cpu-demo, a real CPU SGLang run): no console messages,
//! every expected chart is there with drawn lines, and the screenshot is far from blank. And a
//! sessions sweep's page (tests/fixtures/results/sessions) with its two charts drawn.
//!
//! Needs Chromium (`apt-get install chromium`; `.ci/run` installs it). Without it this test
//! fails and says so: it is not skipped. SGTUNE_CHROMIUM names another binary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test may panic: that is its failure

use std::path::{Path, PathBuf};
use std::process::Command;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/results/cpu-demo"
);

fn chromium() -> PathBuf {
    if let Ok(p) = std::env::var("SGTUNE_CHROMIUM") {
        assert!(Path::new(&p).exists(), "SGTUNE_CHROMIUM={p}: no such file");
        return PathBuf::from(p);
    }
    for name in ["chromium", "chromium-browser", "google-chrome", "chrome"] {
        if let Ok(out) = Command::new("sh")
            .args(["-c", &format!("command -v {name}")])
            .output()
        {
            let p = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if out.status.success() && !p.is_empty() {
                return PathBuf::from(p);
            }
        }
    }
    panic!(
        "the report's browser test needs Chromium and found none on PATH: install it \
         (Debian: `apt-get install chromium`; .ci/run does this) or set SGTUNE_CHROMIUM"
    );
}

/// Run headless Chromium on a local file with `args`; returns (stdout, stderr).
fn browse(file: &Path, profile: &Path, args: &[&str]) -> (String, String) {
    let out = Command::new("timeout")
        .arg("120")
        .arg(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", file.display()))
        .output()
        .expect("run chromium");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "chromium failed: {stderr}");
    (stdout, stderr)
}

fn console_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

fn make_report(dir: &Path) -> PathBuf {
    let out = dir.join("report.html");
    let st = Command::new(env!("CARGO_BIN_EXE_sgtune"))
        .args(["report", FIXTURE, "-o"])
        .arg(&out)
        .status()
        .unwrap();
    assert!(st.success());
    out
}

/// The `<figure id=ID>` element's markup in the dumped DOM.
fn figure<'a>(dom: &'a str, id: &str) -> Option<&'a str> {
    let start = dom.find(&format!("<figure class=\"chart\" id=\"{id}\""))?;
    let len = dom[start..].find("</figure>")?;
    Some(&dom[start..start + len])
}

/// Lines drawn with at least two distinct points (polyline `points` or path `d`).
fn drawn_lines(fig: &str) -> usize {
    let mut n = 0;
    for attr in ["points=\"", " d=\""] {
        for (i, _) in fig.match_indices(attr) {
            let rest = &fig[i + attr.len()..];
            let val = &rest[..rest.find('"').unwrap_or(0)];
            let pts: std::collections::BTreeSet<&str> = val
                .split(|c: char| c.is_whitespace() || c.is_ascii_alphabetic())
                .filter(|s| !s.is_empty())
                .collect();
            if pts.len() >= 2 {
                n += 1;
            }
        }
    }
    n
}

#[test]
fn console_check_is_not_vacuous() {
    // The same harness on a page that logs: the check must see it.
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.html");
    std::fs::write(
        &bad,
        "<html><body><script>console.error('boom')</script></body></html>",
    )
    .unwrap();
    let (_, stderr) = browse(&bad, &tmp.path().join("profile"), &["--dump-dom"]);
    assert_eq!(console_lines(&stderr).len(), 1, "{stderr}");
}

#[test]
fn demo_report_in_a_real_browser() {
    let tmp = tempfile::tempdir().unwrap();
    let report = make_report(tmp.path());
    let html = std::fs::read_to_string(&report).unwrap();
    // Self-contained: nothing fetched, no script.
    for bad in ["<script", "src=\"http", "href=\"http", "@import", "url("] {
        assert!(!html.contains(bad), "report.html contains {bad}");
    }

    let (dom, stderr) = browse(&report, &tmp.path().join("profile"), &["--dump-dom"]);
    assert!(
        console_lines(&stderr).is_empty(),
        "console messages: {:?}",
        console_lines(&stderr)
    );
    assert!(dom.contains("sgtune report: cpu-demo"));
    assert!(dom.contains("kv_cache_bound") && dom.contains("compute_bound"));
    assert!(dom.contains("Winner: mtt32768") || dom.contains("<strong>Winner: mtt32768</strong>"));
    assert!(dom.contains("fp8-kv-rejected"));
    let mut expected: Vec<String> = ["tput", "ttft", "tpot", "pareto"]
        .iter()
        .map(|c| format!("cfg-{c}"))
        .collect();
    for run in ["mtt2048", "mtt32768"] {
        for c in ["tput", "reqs", "kv", "ttft-cdf", "e2e-cdf"] {
            expected.push(format!("run-{run}-{c}"));
        }
    }
    for id in &expected {
        let fig = figure(&dom, id).unwrap_or_else(|| panic!("chart {id} missing"));
        assert!(fig.contains("<svg"), "chart {id} has no SVG");
        assert!(fig.contains("<figcaption>"), "chart {id} has no title");
        assert!(drawn_lines(fig) >= 2, "chart {id} has no drawn lines");
    }
    // The KV-bound run shows its plateau under the offered load: running 6, offered 32.
    let reqs = figure(&dom, "run-mtt2048-reqs").unwrap();
    assert!(reqs.contains("offered concurrency") && reqs.contains("#queue-req"));

    let shot = tmp.path().join("shot.png");
    browse(
        &report,
        &tmp.path().join("profile2"),
        &[
            "--window-size=1400,3000",
            &format!("--screenshot={}", shot.display()),
        ],
    );
    let (w, h, px) = decode(&shot);
    assert_eq!((w, h), (1400, 3000));
    let n = (w * h) as usize;
    let white = px.chunks(3).filter(|p| p.iter().all(|c| *c > 245)).count();
    let colors: std::collections::BTreeSet<[u8; 3]> = px
        .chunks(3)
        .step_by(7)
        .map(|p| [p[0] & 0xF0, p[1] & 0xF0, p[2] & 0xF0])
        .collect();
    let inked = 1.0 - white as f64 / n as f64;
    assert!(
        inked > 0.08,
        "screenshot nearly blank: {:.1}% inked",
        inked * 100.0
    );
    assert!(colors.len() > 20, "screenshot has {} colours", colors.len());
}

/// RGB pixels of a PNG.
fn decode(p: &Path) -> (u32, u32, Vec<u8>) {
    let dec = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(p).unwrap()));
    let mut r = dec.read_info().unwrap();
    let mut buf = vec![0; r.output_buffer_size().unwrap()];
    let info = r.next_frame(&mut buf).unwrap();
    let ch = info.color_type.samples();
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    let px: Vec<u8> = buf[..info.buffer_size()]
        .chunks(ch)
        .flat_map(|c| [c[0], c[1 % ch], c[2 % ch]])
        .collect();
    (info.width, info.height, px)
}

/// `sgtune report A B` in a real browser: the page opens with the decision diff (the same
/// paragraph `sgtune compare` prints), before the per-metric changes, with no console
/// messages; the within-noise rows are folded (closed) under the table.
#[test]
fn compare_report_opens_with_the_decision_diff_in_a_real_browser() {
    let tmp = tempfile::tempdir().unwrap();
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/results");
    let (a, b) = (
        format!("{fixtures}/compare-a"),
        format!("{fixtures}/compare-b"),
    );
    let page = tmp.path().join("ab.html");
    let st = Command::new(env!("CARGO_BIN_EXE_sgtune"))
        .args(["report", &a, &b, "-o"])
        .arg(&page)
        .status()
        .unwrap();
    assert!(st.success());
    let out = Command::new(env!("CARGO_BIN_EXE_sgtune"))
        .args(["compare", &a, &b])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout).to_string();
    let paragraph = table
        .lines()
        .find_map(|l| l.strip_prefix("Decision: "))
        .unwrap();
    let (dom, stderr) = browse(&page, &tmp.path().join("profile"), &["--dump-dom"]);
    assert!(
        console_lines(&stderr).is_empty(),
        "console messages: {:?}",
        console_lines(&stderr)
    );
    let diff = dom
        .find("<section id=\"decision-diff\">")
        .expect("the decision diff");
    let h1 = dom.find("<h1>").unwrap();
    let changes = dom.find("Changes from A to B").unwrap();
    assert!(h1 < diff && diff < changes, "the diff opens the page");
    assert!(
        dom[diff..changes].contains(&format!("<p>Decision: {paragraph}</p>")),
        "{}",
        &dom[diff..changes]
    );
    assert!(dom[diff..changes].contains("<td>fp8</td>"));
    // Folded: the details element is closed.
    let folded = dom
        .find("<details id=\"within-noise\">")
        .expect("folded rows");
    assert!(folded > changes);
}

/// A sessions sweep's page (tests/fixtures/results/sessions) in a real browser: no console
/// messages, TTFT by turn drawn as one line per configuration, and the hit-rate bars drawn.
#[test]
fn sessions_report_in_a_real_browser() {
    let tmp = tempfile::tempdir().unwrap();
    let page = tmp.path().join("report.html");
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/results/sessions"
    );
    let st = Command::new(env!("CARGO_BIN_EXE_sgtune"))
        .args(["report", fixture, "-o"])
        .arg(&page)
        .status()
        .unwrap();
    assert!(st.success());
    let (dom, stderr) = browse(&page, &tmp.path().join("profile"), &["--dump-dom"]);
    assert!(
        console_lines(&stderr).is_empty(),
        "console messages: {:?}",
        console_lines(&stderr)
    );
    let turns = figure(&dom, "cfg-turns").expect("the TTFT-by-turn chart");
    assert!(drawn_lines(turns) >= 2, "radix and no-radix: {turns}");
    let cache = figure(&dom, "cfg-prefix-cache").expect("the hit-rate chart");
    assert!(cache.contains("<svg"), "{cache}");
    assert!(cache.contains("0.53 / 0.58"), "{cache}");
}
