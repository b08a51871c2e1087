//! Snapshots (insta) of what sgtune prints and saves for people to read: the results.md table,
//! decision.md, `sgtune compare`, `sgtune log`, `sgtune load`, and `sgtune report`'s page (its
//! outline, and the whole page byte for byte). The
//! inputs are fixed files in tests/fixtures, so the snapshots are exact; where a live server is
//! needed (load), measured numbers are normalised to their printed shape. The snapshots live in
//! tests/snapshots/.
//!
//! A change in the output fails here until the snapshot is reviewed: `cargo insta review`, or
//! `INSTA_UPDATE=always cargo test --test rendered_outputs` and read the diff in git. CI (CI=true)
//! never writes snapshots, it only compares.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test may panic: that is its failure

mod common;
use common::*;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn fixtures(sub: &str) -> PathBuf {
    repo().join("tests/fixtures").join(sub)
}

/// Every decimal number (digits '.' digits) turned into its printed shape, `N.NN`: the
/// precision the renderer chose stays in the snapshot, the measured value does not.
/// Percentages (a decimal right before `%`) are kept: the ones printed here are exact.
fn decimals_to_shape(s: &str) -> String {
    let c: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < c.len() {
        // A number starts after neither a letter, a digit nor a dot (v0.5.3 is a name).
        if c[i].is_ascii_digit()
            && (i == 0 || !(c[i - 1].is_ascii_alphanumeric() || c[i - 1] == '.'))
        {
            let start = i;
            while i < c.len() && c[i].is_ascii_digit() {
                i += 1;
            }
            if i + 1 < c.len() && c[i] == '.' && c[i + 1].is_ascii_digit() {
                let dot = i;
                i += 1;
                while i < c.len() && c[i].is_ascii_digit() {
                    i += 1;
                }
                if c.get(i) != Some(&'%') {
                    out.push('N');
                    out.push('.');
                    out.extend(std::iter::repeat_n('N', i - dot - 1));
                    continue;
                }
            }
            out.extend(&c[start..i]);
            continue;
        }
        out.push(c[i]);
        i += 1;
    }
    out
}

#[test]
fn decimals_to_shape_keeps_integers_names_and_percentages() {
    assert_eq!(
        decimals_to_shape("p50 43.55  p99 0.4 in 12 of 3.000 s, 100.0% ok, v0.5.3 x1.5"),
        "p50 N.NN  p99 N.N in 12 of N.NNN s, 100.0% ok, v0.5.3 x1.5"
    );
}

/// The results.md table, rendered from fixed rows: a sweep is created (its server is `false`,
/// so nothing really runs), its results.csv replaced with the rows of
/// tests/fixtures/results/table-rows.csv (columns it does not name left empty), and
/// `sgtune resume` finds nothing left to launch and renders the table again from those rows.
/// The rows cover two repeats (mean ± sd and CV), two load points, the best run, a group with
/// one failed repeat, rows without server stats, a configuration that always fails, and
/// verdict evidence.
#[test]
fn results_md_table() {
    results_md_from_fixture_rows("", "results_md");
}

/// The same rows under an objective: the star follows the decision at each load point, not
/// the highest output tok/s (mtt16384 at 8, whose other repeat failed), and a line under the
/// table says why that one is not starred.
#[test]
fn results_md_table_with_an_objective() {
    let md = results_md_from_fixture_rows(
        "objective: {maximize: output_tok_s}\n",
        "results_md_with_an_objective",
    );
    assert!(!md.contains("(best)"), "{md}");
}

/// Render the table of tests/fixtures/results/table-rows.csv under a spec with `extra`, and
/// snapshot results.md as `name`.
fn results_md_from_fixture_rows(extra: &str, name: &str) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = dir.path().join("spec.yaml");
    std::fs::write(
        &spec,
        format!(
            r#"name: table-snapshot
repeats: 2
server:
  command: ["false"]
  model_path: /nonexistent-model
  args:
    served_model_name: fake
  ready_timeout_s: 5
  stop_timeout_s: 1
sweep:
  max_total_tokens: [4096, 16384]
configs:
  - {{name: fp8, kv_cache_dtype: fp8_e4m3}}
workload:
  concurrency: [4, 8]
  requests: 8
  vocab_size: 100
  input_tokens: 4
  output_tokens: 8
{extra}"#
        ),
    )
    .expect("write spec");
    let results = dir.path().join("results");
    let out = run_sweep(&spec, &results);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let folder = only_results_folder(&results);
    let csv_path = folder.join("results.csv");

    // This sgtune's own header and run ids; the fixture's values in its columns.
    let mut r = csv::Reader::from_path(&csv_path).expect("results.csv");
    let header: Vec<String> = r
        .headers()
        .expect("header")
        .iter()
        .map(String::from)
        .collect();
    let ids: HashMap<String, String> = read_rows(&csv_path)
        .into_iter()
        .map(|row| (row["run_name"].clone(), row["run_id"].clone()))
        .collect();
    let fixture = fixtures("results/table-rows.csv");
    let mut f = csv::Reader::from_path(&fixture).expect("fixture");
    let fixture_cols: Vec<String> = f
        .headers()
        .expect("header")
        .iter()
        .map(String::from)
        .collect();
    let unknown: Vec<&String> = fixture_cols
        .iter()
        .filter(|c| !header.contains(c))
        .collect();
    assert!(
        unknown.is_empty(),
        "{} names columns results.csv no longer has: {unknown:?}",
        fixture.display()
    );
    let mut w = csv::Writer::from_path(&csv_path).expect("rewrite results.csv");
    w.write_record(&header).expect("header");
    let mut n = 0;
    for rec in f.records() {
        let rec = rec.expect("fixture row");
        let given: HashMap<&str, &str> = fixture_cols
            .iter()
            .map(String::as_str)
            .zip(rec.iter())
            .collect();
        let row: Vec<String> = header
            .iter()
            .map(|col| match (given.get(col.as_str()), col.as_str()) {
                (Some(v), _) => v.to_string(),
                (None, "run_id") => ids.get(given["run_name"]).cloned().unwrap_or_default(),
                (None, _) => String::new(),
            })
            .collect();
        w.write_record(&row).expect("row");
        n += 1;
    }
    w.flush().expect("flush");
    drop(w);
    assert_eq!(n, 12, "one fixture row per run, load point and repeat");

    let out = run(sgtune().arg("resume").arg(&folder));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(
        out.status.code(),
        Some(1),
        "failed rows: exit 1\n{stdout}\n{stderr}"
    );
    assert!(stderr.contains("0 server launch(es) to go"), "{stderr}");
    let md = std::fs::read_to_string(folder.join("results.md")).expect("results.md");
    let md = md.replace(&folder.display().to_string(), "[RESULTS]");
    // The terminal gets the same table as the file.
    let table = md
        .split_once("\n\n")
        .and_then(|(_, t)| t.split_once("\n\n"))
        .map(|(_, t)| t);
    let table = table.expect("heading, folder line, then the table");
    assert!(
        stdout.contains(table),
        "stdout:\n{stdout}\nresults.md:\n{md}"
    );
    assert_eq!(debug_formatting(&md), Vec::<String>::new(), "{md}");
    insta::assert_snapshot!(name, md);
    md
}

/// `sgtune compare` on two fixed results folders (tests/fixtures/results/compare-{a,b}):
/// repeats judged by their spread, single runs by the 5% threshold, an open-loop load point, a
/// metric missing on one side, runs on one side only, and a run with no ok row in A.
#[test]
fn compare_two_fixed_sweeps() {
    let compare = |extra: &[&str]| {
        let out = run(sgtune()
            .current_dir(fixtures("results"))
            .args(["compare", "compare-a", "compare-b"])
            .args(extra));
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    insta::assert_snapshot!("compare_table", compare(&[]));
    insta::assert_snapshot!("compare_json", compare(&["--format", "json"]));
}

/// `compare --fail-on`: exit 4 with each gate's reason on stderr when B trips it, 0 when it
/// does not; a folder against itself is the same in everything and trips nothing.
#[test]
fn compare_fail_on_exits_4_and_a_folder_against_itself_is_same() {
    let compare = |a: &str, b: &str, gates: &str| {
        let out = run(sgtune().current_dir(fixtures("results")).args([
            "compare",
            a,
            b,
            "--fail-on",
            gates,
        ]));
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    };
    // compare-a → compare-b: the same leaders, base at 16 slower beyond noise, fp8 eligible
    // now (it failed in A).
    let (code, _, err) = compare("compare-a", "compare-b", "decision,ineligible");
    assert_eq!(code, Some(0), "{err}");
    let (code, out, err) = compare("compare-a", "compare-b", "winner-regressed");
    assert_eq!(code, Some(4), "{err}");
    // The paragraph a ticket quotes names the same regression.
    assert!(
        out.contains("Same decision at concurrency 16: base (winner) in both, but its output_tok_s fell 13% (1500 → 1300), beyond the noise (±4.1%)"),
        "{out}"
    );
    assert!(
        err.contains("--fail-on winner-regressed: base @16 output_tok_s: 1500.00 ± 50.00 → 1300.00 ± 20.00 (repeats)"),
        "{err}"
    );
    // The other way round fp8 becomes ineligible (it fails in the new side).
    let (code, _, err) = compare("compare-b", "compare-a", "ineligible");
    assert_eq!(code, Some(4), "{err}");
    assert!(
        err.contains("--fail-on ineligible: fp8 @8 was eligible in A and is not in B"),
        "{err}"
    );
    // Itself: every gate asked, none tripped, and said so.
    let (code, out, err) = compare(
        "cpu-demo",
        "cpu-demo",
        "decision,winner-regressed,ineligible",
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("Decision: Same decision at concurrency 32: mtt32768 (winner) in both. Nothing the decision rests on changed."),
        "{out}"
    );
    assert!(out.contains("No metric changed beyond noise."), "{out}");
    // The real demo against a real rerun of it, on a machine too busy for any server to
    // become ready (docs/benchmarks.md): the winner is gone, beyond noise.
    let (code, out, err) = compare("cpu-demo", "cpu-demo-rerun", "decision");
    assert_eq!(code, Some(4), "{err}");
    assert!(
        out.contains("Decision: The decision changed at concurrency 32: mtt32768 (winner) in A, none eligible in B (beyond noise). Standing changed: mtt2048 SLO violated → failed; mtt32768 eligible → failed."),
        "{out}"
    );
    // A gate that does not exist is a usage error.
    let (code, _, _) = compare("cpu-demo", "cpu-demo", "everything");
    assert_eq!(code, Some(2));
}

/// The checker below finds an Option printed with `{:?}`, and only that.
#[test]
fn the_debug_formatting_check_sees_an_option() {
    let text = "CPU: Some(\"AMD EPYC\") x2 → Some(\"Intel(R) Xeon(R) Processor\") x2\nhost: None\nPre-flight: none → 0.9; Nonetheless (None)\nall good\n";
    assert_eq!(
        debug_formatting(text),
        [
            "CPU: Some(\"AMD EPYC\") x2 → Some(\"Intel(R) Xeon(R) Processor\") x2",
            "host: None",
            "Pre-flight: none → 0.9; Nonetheless (None)",
        ]
    );
    assert!(debug_formatting("none eligible; Nonetheless; NoneSuch").is_empty());
}

/// What people read shows values, never Rust's `Some("...")` / `None`: `compare` (table and
/// Markdown) of the demo against its rerun, whose manifests name another CPU on each side (the
/// provenance line issue 36 found printed as `CPU: Some("AMD EPYC") x2 → ...`), and of the
/// compare fixtures; report.html of one sweep and of two; `validate`'s plan. results.md and
/// `status` are checked where they are made (results_md_from_fixture_rows,
/// tests/status_local.rs).
#[test]
fn no_debug_formatting_in_what_people_read() {
    let sgtune_in = |args: &[&str]| {
        let out = run(sgtune().current_dir(fixtures("results")).args(args));
        assert!(
            matches!(out.status.code(), Some(0) | Some(4)),
            "{args:?}: {}",
            text(&out.stderr)
        );
        format!("{}{}", text(&out.stdout), text(&out.stderr))
    };
    let demo = sgtune_in(&["compare", "cpu-demo", "cpu-demo-rerun"]);
    assert!(
        demo.contains("CPU: AMD EPYC x2 → Intel(R) Xeon(R) Processor x2"),
        "the provenance case is in the output: {demo}"
    );
    let tmp = tempfile::tempdir().expect("tempdir");
    let (one, two) = (tmp.path().join("one.html"), tmp.path().join("two.html"));
    let mut outputs = vec![
        ("compare demo", demo),
        (
            "compare demo --format markdown --all",
            sgtune_in(&[
                "compare",
                "cpu-demo",
                "cpu-demo-rerun",
                "--format",
                "markdown",
                "--all",
            ]),
        ),
        (
            "compare fixtures",
            sgtune_in(&["compare", "compare-a", "compare-b", "--all"]),
        ),
    ];
    sgtune_in(&["report", "cpu-demo", "-o", &one.display().to_string()]);
    sgtune_in(&[
        "report",
        "cpu-demo",
        "cpu-demo-rerun",
        "-o",
        &two.display().to_string(),
    ]);
    for page in [&one, &two] {
        let html = std::fs::read_to_string(page).expect("the page was written");
        // The page's text, and its escaped quotes back as quotes (`Some(&quot;` is `Some("`).
        outputs.push(("report.html", html.replace("&quot;", "\"")));
    }
    let spec = tmp.path().join("spec.yaml");
    std::fs::write(
        &spec,
        "name: plain\nserver: {command: [\"false\"], model_path: /nonexistent-model}\n\
         sweep: {max_total_tokens: [4096, 16384]}\n\
         workload: {concurrency: [4, 8], requests: 8, vocab_size: 100, input_tokens: 4, output_tokens: 8}\n\
         objective: {maximize: output_tok_s, slo: {ttft_ms_p99: 2000}}\n",
    )
    .expect("write spec");
    let validate = run(sgtune().arg("validate").arg(&spec));
    assert_eq!(
        validate.status.code(),
        Some(0),
        "{}",
        text(&validate.stderr)
    );
    outputs.push(("validate", text(&validate.stdout)));
    for (what, out) in &outputs {
        assert_eq!(
            debug_formatting(out),
            Vec::<String>::new(),
            "{what}:\n{out}"
        );
    }
}

/// `sgtune log FILE` on every log in tests/fixtures/logs, one snapshot each, and the CSV of all
/// of them. Run from that folder with relative names, so no path of this machine shows.
#[test]
fn log_report_for_every_fixture() {
    let logs = fixtures("logs");
    let mut names: Vec<String> = std::fs::read_dir(&logs)
        .expect("fixtures/logs")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".log"))
        .collect();
    names.sort();
    assert!(names.len() >= 20, "{names:?}");
    let log = |args: &[&str]| {
        let out = run(sgtune().current_dir(&logs).arg("log").args(args));
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&out.stderr)
        );
        text(&out.stdout)
    };
    for name in &names {
        let snap = format!("log__{}", name.trim_end_matches(".log").replace('.', "_"));
        insta::assert_snapshot!(snap, log(&[name]));
    }
    let mut args = vec!["--format", "csv"];
    args.extend(names.iter().map(String::as_str));
    insta::assert_snapshot!("log_csv_all_fixtures", log(&args));
}

fn load(port: u16, keys: &[&str], out_dir: &Path) -> String {
    let mut cmd = sgtune();
    cmd.args(["load", "--url", &format!("http://127.0.0.1:{port}")]);
    for k in keys {
        cmd.args(["-w", k]);
    }
    let out = run(cmd.arg("--output").arg(out_dir));
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    // Whether this client was late (a lag p99 over 10 ms) depends on how busy the machine
    // is: that judgement line is left out, the lag lines it rests on are kept.
    let kept: Vec<&str> = stdout
        .lines()
        .filter(|l| !l.trim_start().starts_with("CLIENT-BOUND"))
        .collect();
    decimals_to_shape(&(kept.join("\n") + "\n"))
}

/// `sgtune load` against the fake SGLang: which lines, labels, counts and units it prints,
/// with every measured number reduced to its shape. Linux only: the read-lag line needs kernel
/// receive timestamps.
#[cfg(target_os = "linux")]
#[test]
fn load_report_against_the_fake() {
    let (_fake, port) = start_fake();
    let dir = tempfile::tempdir().expect("tempdir");
    // Closed loop, chat, two load points, an SLO every request meets.
    let closed = load(
        port,
        &[
            "endpoint=chat",
            "concurrency=[2, 4]",
            "requests=6",
            "warmup_requests=1",
            "input_tokens=8",
            "output_tokens=16",
            "slo={ttft_ms: 60000}",
        ],
        &dir.path().join("closed"),
    );
    insta::assert_snapshot!("load_closed_loop_chat", closed);
    // Open loop, completions with token ids: the scheduling-lag line appears. The cap is
    // never reached (10 requests, 10 slots), so no arrival waits for a slot.
    let open = load(
        port,
        &[
            "request_rate=50",
            "concurrency=10",
            "requests=10",
            "warmup_requests=0",
            "vocab_size=1000",
            "input_tokens=8",
            "output_tokens=8",
        ],
        &dir.path().join("open"),
    );
    insta::assert_snapshot!("load_open_loop", open);
}

/// The report page's outline for the demo sweep: every heading and every chart (id, title, legend
/// entries, or "no data"), in page order. The SVG itself is left out (plotters' pixel output is
/// not the point); what a reader finds where is pinned.
#[test]
fn report_html_outline() {
    insta::assert_snapshot!("report_html_outline", report_outline("results/cpu-demo"));
}

/// The outline of a sessions sweep's page (tests/fixtures/results/sessions: results.csv only,
/// hand-written after the real CPU run of experiments/cpu-sessions.yaml, whose radix cache hit
/// 0.53 of the 0.58 allowed and whose last turns took 63 ms against 377 ms without it): the
/// per-configuration charts, then TTFT by turn and the hit rate beside the share allowed.
#[test]
fn report_html_outline_of_a_sessions_sweep() {
    insta::assert_snapshot!(
        "report_html_outline_sessions",
        report_outline("results/sessions")
    );
}

/// The whole of report.html, byte for byte (its SVG included), for the demo sweep (a decision,
/// three launches with their server timelines and client requests), a sessions sweep, and the
/// two-sweep page; and `sgtune log --html`'s page for one real SGLang log. The outlines above
/// say what a reader finds where; these prove that moving the page's code around changed
/// nothing. Run from tests/fixtures with relative names, so no path of this machine shows: the
/// page names its folders as given.
#[test]
fn report_html_pages_byte_for_byte() {
    insta::assert_snapshot!("report_html_page", report_html(&["results/cpu-demo"]));
    insta::assert_snapshot!(
        "report_html_page_sessions",
        report_html(&["results/sessions"])
    );
    insta::assert_snapshot!(
        "report_html_compare_page",
        report_html(&["results/compare-a", "results/compare-b"])
    );
    let tmp = tempfile::tempdir().unwrap();
    let page = tmp.path().join("log.html");
    let out = run(sgtune()
        .current_dir(fixtures("logs"))
        .args(["log", "real-0.5.23-cpu-kv-bound.log", "--html"])
        .arg(&page));
    assert!(out.status.success(), "{out:?}");
    insta::assert_snapshot!("log_html_page", std::fs::read_to_string(&page).unwrap());
}

/// decision.md as rendered from the demo's decision.json (`report::decision::render_md`, the
/// renderer the end of a sweep writes it with).
#[test]
fn decision_md_of_the_demo_sweep() {
    let json = std::fs::read_to_string(fixtures("results/cpu-demo/decision.json")).unwrap();
    let d: sgtune::tune::decision::Decision = serde_json::from_str(&json).unwrap();
    insta::assert_snapshot!("decision_md", sgtune::report::decision::render_md(&d));
}

/// `sgtune report` on fixture folders (one, or two to compare), run from tests/fixtures: the
/// page it writes.
fn report_html(fixtures_given: &[&str]) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let page = tmp.path().join("report.html");
    let out = run(sgtune()
        .current_dir(fixtures(""))
        .arg("report")
        .args(fixtures_given)
        .arg("-o")
        .arg(&page));
    assert!(out.status.success(), "{out:?}");
    std::fs::read_to_string(&page).unwrap()
}

/// `sgtune report` on a fixture folder: the page's headings and charts, one line each.
fn report_outline(fixture: &str) -> String {
    let html = report_html(&[fixture]);
    let strip = |s: &str| {
        let mut o = String::new();
        let mut in_tag = false;
        for ch in s.chars() {
            match ch {
                '<' => in_tag = true,
                '>' => in_tag = false,
                _ if !in_tag => o.push(ch),
                _ => {}
            }
        }
        o
    };
    let mut outline = Vec::new();
    let mut rest = html.as_str();
    while let Some(i) = rest.find('<') {
        rest = &rest[i..];
        let tag_end = rest.find('>').unwrap_or(rest.len());
        let tag = &rest[..tag_end];
        if let Some(level) = ["<h1", "<h2", "<h3", "<h4"].iter().position(|h| tag == *h) {
            let end = rest.find("</h").unwrap();
            outline.push(format!("{}{}", "  ".repeat(level), strip(&rest[..end])));
        } else if tag.starts_with("<figure class=\"chart\" id=\"") {
            let end = rest.find("</figure>").unwrap();
            let fig = &rest[..end];
            let id = tag.split('"').nth(3).unwrap_or("");
            let caption = fig
                .split("<figcaption>")
                .nth(1)
                .and_then(|c| c.split("</figcaption>").next())
                .unwrap_or("");
            let legend: Vec<String> = fig
                .split("<li>")
                .skip(1)
                .map(|l| strip(l.split("</li>").next().unwrap_or("")))
                .collect();
            let drawn = if fig.contains("<svg") {
                "svg"
            } else {
                "no data"
            };
            outline.push(format!(
                "        [{id}] {caption} ({drawn}; legend: {})",
                legend.join(" | ")
            ));
        }
        rest = &rest[1..];
    }
    outline.join("\n")
}
