//! Overnight-proof sweeps against the fake SGLang: kill -9 / SIGTERM mid-sweep then resume,
//! resume refused when the spec changed, repeats and load points, between-runs hooks, the GPU
//! release check (with a fake nvidia-smi), compare and reproduce.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test may panic: that is its failure

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

fn spec(tag: &str, top: &str, configs: &str, workload: &str) -> String {
    format!(
        r#"name: overnight
{top}server:
  command: [python3, "{fake}"]
  model_path: /nonexistent-model
  env:
    SGTUNE_TEST_TAG: {tag}
    FAKE_SGLANG_STARTUP_S: "0.2"
  args:
    served_model_name: fake
  ready_timeout_s: 20
  stop_timeout_s: 3
configs:
{configs}workload:
  vocab_size: 100
  input_tokens: 4
  output_tokens: 40
  warmup_requests: 0
{workload}"#,
        fake = fake_server()
    )
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p
}

fn spawn_run(spec: &Path, results: &Path) -> Child {
    sgtune()
        .arg("run")
        .arg(spec)
        .arg("--results-dir")
        .arg(results)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn sgtune")
}

fn wait_for_file(results: &Path, rel: &str) -> bool {
    wait_until(Duration::from_secs(30), || {
        std::fs::read_dir(results)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok())
            .is_some_and(|e| e.path().join(rel).exists())
    })
}

fn no_leftovers(tag: &str) {
    assert!(
        wait_until(Duration::from_secs(10), || procs_with_tag(tag).is_empty()),
        "processes left: {:?}",
        procs_with_tag(tag)
    );
}

const THREE: &str = "  - {name: a}\n  - {name: b, fake_fault: slow_stream}\n  - {name: c}\n";
const SHORT: &str = "  concurrency: 2\n  requests: 24\n";

/// A resume while the sweep runs is refused (the folder's lock); kill -9 mid-run, then resume:
/// one ok row per configuration, the killed attempt kept.
#[test]
fn kill_9_in_the_second_run_then_resume_gives_one_ok_row_per_config() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("resume9");
    let spec_path = write(dir.path(), "s.yaml", &spec(&tag, "", THREE, SHORT));
    let results = dir.path().join("results");
    let mut child = spawn_run(&spec_path, &results);
    assert!(
        wait_for_file(&results, "runs/b/requests.csv"),
        "second run never loaded"
    );
    // While it runs, a resume of its folder is refused, naming the process that writes it,
    // and touches nothing: no row set aside, no launch.
    let folder = only_results_folder(&results);
    let out = run(sgtune().arg("resume").arg(&folder));
    assert_refused_by_the_lock_of(&out, child.id());
    assert!(!folder.join("results.superseded.csv").exists());
    assert!(!folder.join("runs/b.attempt-1").exists());
    assert!(child.try_wait().expect("wait").is_none(), "the run goes on");
    child.kill().expect("kill -9");
    let _ = child.wait();
    no_leftovers(&tag);
    let rows = read_rows(&folder.join("results.csv"));
    assert_eq!(rows.len(), 1, "only the first run had finished");

    // The lock went with the killed process.
    let out = run(sgtune().arg("resume").arg(&folder));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows = read_rows(&folder.join("results.csv"));
    let names: Vec<&str> = rows.iter().map(|r| r["run_name"].as_str()).collect();
    assert_eq!(names, ["a", "b", "c"], "exactly one row per configuration");
    assert!(rows.iter().all(|r| r["status"] == "ok"), "{rows:?}");
    assert!(
        folder.join("runs/b.attempt-1/server.log").exists(),
        "the killed attempt is kept"
    );
    let manifest = std::fs::read_to_string(folder.join("manifest.json")).expect("manifest");
    assert!(manifest.contains("\"resumes\": [\n    {"), "{manifest}");
    no_leftovers(&tag);
}

#[test]
fn sigterm_records_interrupted_and_resume_redoes_only_that() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("resumeterm");
    let spec_path = write(dir.path(), "s.yaml", &spec(&tag, "", THREE, SHORT));
    let results = dir.path().join("results");
    let mut child = spawn_run(&spec_path, &results);
    assert!(
        wait_for_file(&results, "runs/b/requests.csv"),
        "second run never loaded"
    );
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(130));
    no_leftovers(&tag);
    let folder = only_results_folder(&results);
    let rows = read_rows(&folder.join("results.csv"));
    let statuses: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r["run_name"].as_str(), r["status"].as_str()))
        .collect();
    assert_eq!(statuses, [("a", "ok"), ("b", "interrupted")]);

    let out = run(sgtune()
        .arg("run")
        .arg(&spec_path)
        .arg("--resume")
        .arg(&folder));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows = read_rows(&folder.join("results.csv"));
    let statuses: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r["run_name"].as_str(), r["status"].as_str()))
        .collect();
    assert_eq!(statuses, [("a", "ok"), ("b", "ok"), ("c", "ok")]);
    let superseded = read_rows(&folder.join("results.superseded.csv"));
    assert_eq!(superseded.len(), 1);
    assert_eq!(superseded[0]["status"], "interrupted");
    // The finished row was kept byte for byte.
    no_leftovers(&tag);
}

/// A results folder written before run ids hashed the launched command (its manifest and rows
/// hold the earlier ids) still resumes: its runs keep their recorded ids, and the rows it adds
/// carry the same ids as the rows it kept.
#[test]
fn a_folder_recorded_with_the_earlier_run_ids_still_resumes_under_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("oldids");
    let configs = "  - {name: a}\n  - {name: b, max_total_tokens: 800}\n";
    let spec_path = write(
        dir.path(),
        "s.yaml",
        &spec(&tag, "", configs, "  concurrency: 2\n  requests: 4\n"),
    );
    let results = dir.path().join("results");
    let out = run_sweep(&spec_path, &results);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let folder = only_results_folder(&results);
    // Make it a folder of the earlier version: its ids, and b's row not yet written.
    let (s, _) = sgtune::plan::spec::load(&folder.join("spec.yaml")).expect("spec");
    let plan = sgtune::plan::expand::expand(&s);
    let ids: Vec<(String, String)> = plan
        .runs
        .iter()
        .map(|r| {
            let old = sgtune::plan::expand::legacy_run_id_for(&s, r.engine, &r.resolved);
            assert_ne!(old, r.id, "the schemes differ");
            (r.id.clone(), old)
        })
        .collect();
    for f in ["manifest.json", "plan.json", "results.csv"] {
        let path = folder.join(f);
        let mut t = std::fs::read_to_string(&path).expect("read");
        for (new, old) in &ids {
            t = t.replace(new.as_str(), old);
        }
        if f == "results.csv" {
            t = t.lines().take(2).map(|l| format!("{l}\n")).collect();
        }
        std::fs::write(&path, t).expect("write");
    }
    let out = run(sgtune().arg("resume").arg(&folder));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let csv = std::fs::read_to_string(folder.join("results.csv")).expect("csv");
    assert_eq!(csv.lines().count(), 3, "{csv}");
    let b = csv.lines().find(|l| l.starts_with("b,")).expect("b's row");
    assert!(
        b.contains(&ids[1].1),
        "b keeps its recorded id {}: {b}",
        ids[1].1
    );
    no_leftovers(&tag);
}

/// A folder written before the `decode_steps` column resumes: its rows are written again
/// under today's header (their cells kept, the new one empty), the new run's row fills it, and
/// results.superseded.csv, from before the column too, keeps one header.
#[test]
fn a_folder_from_before_a_new_column_resumes_under_todays_header() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("oldcols");
    let configs = "  - {name: a}\n  - {name: b}\n";
    let spec_path = write(
        dir.path(),
        "s.yaml",
        &spec(&tag, "", configs, "  concurrency: 2\n  requests: 4\n"),
    );
    let results = dir.path().join("results");
    let out = run_sweep(&spec_path, &results);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let folder = only_results_folder(&results);
    let csv_path = folder.join("results.csv");
    let today = sgtune::record::rows::read(&csv_path).expect("read");
    // The earlier sgtune's files: no decode_steps column, b interrupted, and an earlier
    // attempt of b set aside.
    let old_header: Vec<String> = today
        .header
        .iter()
        .filter(|h| *h != "decode_steps")
        .cloned()
        .collect();
    assert!(old_header.len() + 1 == today.header.len());
    let a = today.rows.iter().find(|r| r.run_name() == "a").expect("a");
    let b = today.rows.iter().find(|r| r.run_name() == "b").expect("b");
    let b_cut = sgtune::record::rows::Row::from_cells(
        today
            .header
            .iter()
            .zip(b.cells_under(&today.header))
            .map(|(h, v)| match h.as_str() {
                "status" => (h.clone(), "interrupted".to_string()),
                _ => (h.clone(), v),
            }),
    );
    sgtune::record::store::rewrite_table(&folder, &old_header, &[a.clone(), b_cut.clone()])
        .expect("rewrite");
    let superseded = folder.join("results.superseded.csv");
    let mut w = csv::Writer::from_path(&superseded).expect("superseded");
    w.write_record(&old_header).expect("header");
    w.write_record(b_cut.cells_under(&old_header)).expect("row");
    w.flush().expect("flush");
    drop(w);
    let a_cells = a.cells_under(&old_header);

    let out = run(sgtune().arg("resume").arg(&folder));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("written before the column(s) decode_steps"),
        "{}",
        text(&out.stderr)
    );
    let t = sgtune::record::rows::read(&csv_path).expect("results.csv reads");
    assert_eq!(t.header, today.header);
    let names: Vec<&str> = t.rows.iter().map(|r| r.run_name()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(
        t.rows[0].cells_under(&old_header),
        a_cells,
        "a's cells kept"
    );
    assert!(t.rows[0].decode_steps().is_empty());
    assert!(!t.rows[1].decode_steps().is_empty(), "{:?}", t.rows[1]);
    let s = sgtune::record::rows::read(&superseded).expect("superseded reads");
    assert_eq!(s.header, today.header);
    let set_aside: Vec<(&str, &str)> = s
        .rows
        .iter()
        .map(|r| (r.run_name(), r.status().map_or("", |s| s.as_str())))
        .collect();
    assert_eq!(set_aside, [("b", "interrupted"), ("b", "interrupted")]);
    no_leftovers(&tag);
}

#[test]
fn resume_is_refused_when_the_sweep_changed_and_force_records_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("refuse");
    let configs = "  - {name: a}\n  - {name: b, max_total_tokens: 800}\n";
    let spec_path = write(
        dir.path(),
        "s.yaml",
        &spec(&tag, "", configs, "  concurrency: 2\n  requests: 4\n"),
    );
    let results = dir.path().join("results");
    let out = run_sweep(&spec_path, &results);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let folder = only_results_folder(&results);
    let before = std::fs::read(folder.join("results.csv")).expect("csv");

    let changed = spec(
        &tag,
        "",
        &configs.replace("800", "900"),
        "  concurrency: 2\n  requests: 4\n",
    )
    .replace("output_tokens: 40", "output_tokens: 50");
    let changed_path = write(dir.path(), "changed.yaml", &changed);
    let out = run(sgtune()
        .arg("run")
        .arg(&changed_path)
        .arg("--resume")
        .arg(&folder));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("run `b` changed"), "{err}");
    assert!(err.contains("output_tokens: 40 → 50"), "{err}");
    assert_eq!(
        std::fs::read(folder.join("results.csv")).expect("csv"),
        before,
        "nothing touched"
    );

    // Same spec: nothing left to do, rows untouched.
    let out = run(sgtune().arg("resume").arg(&folder));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read(folder.join("results.csv")).expect("csv"),
        before
    );

    // A workload-only change with --force: accepted and recorded.
    let wl = spec(&tag, "", configs, "  concurrency: 2\n  requests: 4\n")
        .replace("output_tokens: 40", "output_tokens: 50");
    let wl_path = write(dir.path(), "wl.yaml", &wl);
    let out = run(sgtune()
        .arg("run")
        .arg(&wl_path)
        .arg("--resume")
        .arg(&folder)
        .arg("--force"));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let manifest = std::fs::read_to_string(folder.join("manifest.json")).expect("manifest");
    assert!(manifest.contains("output_tokens: 40 → 50"), "{manifest}");
    no_leftovers(&tag);
}

#[test]
fn repeats_and_load_points_give_one_row_each() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("repeats");
    // Fresh server per repeat.
    let spec_path = write(
        dir.path(),
        "s.yaml",
        &spec(
            &tag,
            "repeats: 2\n",
            "  - {name: a}\n",
            "  concurrency: [2, 4]\n  requests: 8\n",
        ),
    );
    let results = dir.path().join("results");
    let out = run_sweep(&spec_path, &results);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let folder = only_results_folder(&results);
    let rows = read_rows(&folder.join("results.csv"));
    let keys: Vec<(String, String)> = rows
        .iter()
        .map(|r| (r["concurrency"].clone(), r["repeat"].clone()))
        .collect();
    assert_eq!(
        keys,
        [("2", "1"), ("4", "1"), ("2", "2"), ("4", "2")]
            .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    for f in [
        "runs/a.r1/requests.c2.csv",
        "runs/a.r1/requests.c4.csv",
        "runs/a.r2/summary.c4.json",
        "runs/a.r2/server.log",
    ] {
        assert!(folder.join(f).exists(), "missing {f}");
    }
    let table = text(&out.stdout);
    assert!(
        table.contains("ok ×2") && table.contains(" ± ") && table.contains("CV"),
        "{table}"
    );
    assert!(table.contains("| concurrency |"), "{table}");

    // One server for all repeats and points.
    let spec_path = write(
        dir.path(),
        "r.yaml",
        &spec(
            &tag,
            "repeats: 2\nreuse_server: true\n",
            "  - {name: a}\n",
            "  concurrency: [2, 4]\n  requests: 8\n",
        ),
    );
    let results = dir.path().join("results-reuse");
    let out = run_sweep(&spec_path, &results);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let folder = only_results_folder(&results);
    assert_eq!(read_rows(&folder.join("results.csv")).len(), 4);
    assert!(folder.join("runs/a/requests.c4.r2.csv").exists());
    let log = std::fs::read_to_string(folder.join("runs/a/server.log")).expect("log");
    assert_eq!(
        log.matches("The server is fired up").count(),
        1,
        "one launch"
    );
    assert!(
        log.contains("POST /flush_cache"),
        "cache flushed between load points"
    );
    no_leftovers(&tag);
}

#[test]
fn request_rates_are_load_points_with_their_own_rows_and_resume() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("rates");
    let spec_path = write(
        dir.path(),
        "s.yaml",
        &spec(
            &tag,
            "",
            "  - {name: a}\n",
            "  concurrency: 4\n  request_rate: [20, 40.5]\n  requests: 8\n",
        ),
    );
    let results = dir.path().join("results");
    let out = run_sweep(&spec_path, &results);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let folder = only_results_folder(&results);
    let rows = read_rows(&folder.join("results.csv"));
    let keys: Vec<(&str, &str, &str)> = rows
        .iter()
        .map(|r| {
            (
                r["concurrency"].as_str(),
                r["request_rate"].as_str(),
                r["status"].as_str(),
            )
        })
        .collect();
    assert_eq!(keys, [("4", "20", "ok"), ("4", "40.5", "ok")]);
    for f in ["runs/a/requests.rate20.csv", "runs/a/summary.rate40.5.json"] {
        assert!(folder.join(f).exists(), "missing {f}");
    }
    for (r, rate) in rows.iter().zip(["20", "40.5"]) {
        // Open loop: the p99 scheduling lag is the one of this load point's own requests.
        // With 8 requests any p99 lies between the two largest lags in its requests.csv
        // (rounded there to 1 µs, here to 0.1 µs).
        let mut lags: Vec<f64> = read_rows(&folder.join(format!("runs/a/requests.rate{rate}.csv")))
            .iter()
            .filter(|q| q["phase"] == "measured")
            .map(|q| num(q, "sched_lag_ms"))
            .collect();
        lags.sort_by(f64::total_cmp);
        assert_eq!(lags.len(), 8, "{lags:?}");
        let p99 = num(r, "sched_lag_ms_p99");
        assert!(
            lags[6] - 0.001 <= p99 && p99 <= lags[7] + 0.001,
            "rate {rate}: p99 {p99} vs request lags {lags:?}"
        );
    }
    let table = text(&out.stdout);
    assert!(
        table.contains("| load point |") && table.contains("40.5/s"),
        "{table}"
    );
    // A finished rate sweep resumes to nothing left to do: both rows are recognized as done.
    let out = run(sgtune().arg("resume").arg(&folder));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(read_rows(&folder.join("results.csv")).len(), 2);
    assert!(!folder.join("runs/a.attempt-1").exists(), "nothing redone");
    no_leftovers(&tag);
}

#[test]
fn between_runs_hooks_and_the_gpu_release_check() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("between");
    // A fake nvidia-smi whose GPU keeps 20 GB "used" after the first server stops.
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    let used = dir.path().join("used");
    std::fs::write(&used, "100").expect("write");
    let smi = bin.join("nvidia-smi");
    std::fs::write(
        &smi,
        format!(
            "#!/bin/sh\nif [ \"$1\" = \"\" ]; then echo '| NVIDIA-SMI 570.86.15   Driver Version: 570.86.15   CUDA Version: 12.8 |'; exit 0; fi\necho \"0, Fake GPU, 81559, $(cat {}), 570.86.15, GPU-fake-0\"\n",
            used.display()
        ),
    )
    .expect("write smi");
    // SAFETY-free: plain chmod through std.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&smi, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let marker = dir.path().join("between.log");
    let top = format!(
        "between_runs:\n  command: \"echo stopped >> {m}; echo 20000 > {u}; exit 3\"\n  sleep_s: 0.2\n",
        m = marker.display(),
        u = used.display()
    );
    let text_spec = spec(
        &tag,
        &top,
        "  - {name: a}\n  - {name: b}\n",
        "  concurrency: 1\n  requests: 2\n",
    )
    .replace(
        "stop_timeout_s: 3",
        "stop_timeout_s: 3\n  gpu_release_timeout_s: 1",
    );
    let spec_path = write(dir.path(), "s.yaml", &text_spec);
    let results = dir.path().join("results");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = run(sgtune()
        .arg("run")
        .arg(&spec_path)
        .arg("--results-dir")
        .arg(&results)
        .env("PATH", path));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(&marker)
            .expect("marker")
            .lines()
            .count(),
        2,
        "ran after each server"
    );
    let folder = only_results_folder(&results);
    let rows = read_rows(&folder.join("results.csv"));
    assert_eq!(rows[0]["notes"], "", "{:?}", rows[0]);
    assert!(
        rows[1]["notes"].contains("GPU 0 (GPU-fake-0) still used 20000 MiB"),
        "{:?}",
        rows[1]
    );
    assert!(
        rows[1]["notes"].contains("between_runs.command exited with exit code 3"),
        "{:?}",
        rows[1]
    );
    let manifest = std::fs::read_to_string(folder.join("manifest.json")).expect("manifest");
    assert!(
        manifest.contains("Fake GPU") && manifest.contains("\"cuda_version\": \"12.8\""),
        "{manifest}"
    );
    assert!(manifest.contains("gpu_not_released"), "{manifest}");
    no_leftovers(&tag);
}

#[test]
fn manifest_records_provenance() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("manifest");
    let spec_path = write(
        dir.path(),
        "s.yaml",
        &spec(
            &tag,
            "",
            "  - {name: a}\n",
            "  concurrency: 1\n  requests: 2\n",
        ),
    );
    let results = dir.path().join("results");
    let out = run_sweep(&spec_path, &results);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let folder = only_results_folder(&results);
    let m: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(folder.join("manifest.json")).expect("manifest"),
    )
    .expect("json");
    assert_eq!(m["sgtune_version"], env!("CARGO_PKG_VERSION"));
    assert!(m["spec_sha256"].as_str().is_some_and(|s| s.len() == 64));
    assert!(m["host"]["cpu_count"].as_u64().is_some_and(|n| n >= 1));
    assert!(
        m["software"]["python"].as_str().is_some(),
        "{}",
        m["software"]
    );
    assert!(m["finished_at"].as_str().is_some());
    let launch = &m["launches"]["a"];
    assert!(
        launch["command"]
            .as_str()
            .is_some_and(|c| c.contains("--served-model-name fake"))
    );
    assert!(launch["env"].to_string().contains("SGTUNE_TEST_TAG"));
    assert_eq!(launch["effective"]["served_model_name"], "fake", "{launch}");
    assert!(folder.join("runs/a/server_info.json").exists());
    no_leftovers(&tag);
}

fn results_folder_with(dir: &Path, name: &str, csv: &str) -> PathBuf {
    let d = dir.join(name);
    std::fs::create_dir_all(&d).expect("mkdir");
    std::fs::write(d.join("results.csv"), csv).expect("write");
    d
}

#[test]
fn compare_shows_changes_side_by_side() {
    let dir = tempfile::tempdir().expect("tempdir");
    let h = "run_name,run_id,status,concurrency,repeat,output_tok_s,ttft_ms_p50\n";
    let a = results_folder_with(
        dir.path(),
        "a",
        &format!("{h}x,1,ok,8,1,100,50\ny,2,ok,8,1,100,50\ngone,3,ok,8,1,1,1\n"),
    );
    let b = results_folder_with(
        dir.path(),
        "b",
        &format!("{h}x,1,ok,8,1,180,49\ny,2,ok,8,1,60,90\nnew,4,ok,8,1,1,1\n"),
    );
    let out = run(sgtune()
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .args(["--metric", "output_tok_s,ttft_ms_p50"]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let t = text(&out.stdout);
    assert!(
        t.contains(
            "| x   | 8           | output_tok_s | 100.00 | 180.00 | +80.00 | +80.0% | better"
        ),
        "{t}"
    );
    assert!(t.contains("within noise") && t.contains("worse"), "{t}");
    assert!(
        t.contains("Only in A:\n- gone @8") && t.contains("Only in B:\n- new @8"),
        "{t}"
    );
    let out = run(sgtune()
        .arg("compare")
        .arg(a.join("results.csv"))
        .arg(&b)
        .args(["--format", "json"]));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json output");
    assert_eq!(v["joined"].as_array().map(|j| j.len()), Some(2));
    let out = run(sgtune()
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .args(["--metric", "no_such_col"]));
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn reproduce_relaunches_a_run_and_gives_a_verdict() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("repro");
    let configs = "  - {name: ok-run}\n  - {name: fp8, kv_cache_dtype: fp8_e4m3}\n";
    let spec_path = write(
        dir.path(),
        "s.yaml",
        &spec(&tag, "", configs, "  concurrency: 2\n  requests: 8\n"),
    );
    let results = dir.path().join("results");
    let out = run_sweep(&spec_path, &results);
    assert_eq!(out.status.code(), Some(1));
    let folder = only_results_folder(&results);
    let again = dir.path().join("again");
    // A failed run reproduces when it fails the same way: deterministic.
    let out = run(sgtune()
        .arg("reproduce")
        .arg(&folder)
        .args(["--run", "fp8", "--results-dir"])
        .arg(&again));
    let t = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{t}\n{}", text(&out.stderr));
    assert!(
        t.contains("Failed again, as recorded (startup_error)")
            && t.contains("Verdict: reproduced"),
        "{t}"
    );
    // An ok run: timings on a shared machine vary, so a tolerance wide enough for any of
    // them must give `reproduced`: --tolerance is what the verdict uses.
    let out = run(sgtune()
        .arg("reproduce")
        .arg(&folder)
        .args(["--run", "ok-run", "--tolerance", "100", "--results-dir"])
        .arg(&again));
    let t = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(
        t.contains("output_tok_s") && t.contains("Verdict: reproduced (key metrics within 10000%"),
        "{t}"
    );
    let out = run(sgtune()
        .arg("reproduce")
        .arg(&folder)
        .args(["--run", "nope"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("runs: ok-run, fp8"));
    no_leftovers(&tag);
}

#[test]
fn unwritable_results_folder_is_a_clear_error_and_launches_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("unwritable");
    let spec_path = write(
        dir.path(),
        "s.yaml",
        &spec(
            &tag,
            "",
            "  - {name: a}\n",
            "  concurrency: 1\n  requests: 1\n",
        ),
    );
    let blocker = dir.path().join("a-file");
    std::fs::write(&blocker, "not a folder").expect("write");
    let out = run(sgtune()
        .arg("run")
        .arg(&spec_path)
        .arg("--results-dir")
        .arg(blocker.join("results")));
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("cannot create the results folder") && err.contains("a-file"),
        "{err}"
    );
    assert!(procs_with_tag(&tag).is_empty());
}
