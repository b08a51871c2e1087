//! Snapshots (insta) of what sgtune prints and saves for people to read: the results.md table,
//! `sgtune compare` and `sgtune log`. The inputs are fixed files in tests/fixtures, so the
//! snapshots are exact. The snapshots live in tests/snapshots/.
//!
//! A change in the output fails here until the snapshot is reviewed: `cargo insta review`, or
//! `INSTA_UPDATE=always cargo test --test rendered_outputs` and read the diff in git. CI (CI=true)
//! never writes snapshots, it only compares.

mod common;
use common::*;
use std::collections::HashMap;
use std::path::PathBuf;

fn fixtures(sub: &str) -> PathBuf {
    repo().join("tests/fixtures").join(sub)
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
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = dir.path().join("spec.yaml");
    std::fs::write(
        &spec,
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
  - {name: fp8, kv_cache_dtype: fp8_e4m3}
workload:
  concurrency: [4, 8]
  requests: 8
  vocab_size: 100
  input_tokens: 4
  output_tokens: 8
"#,
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
    insta::assert_snapshot!("results_md", md);
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
