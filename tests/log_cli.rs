//! `sgtune log` end to end through the binary: table, json, csv, --events jsonl, --follow,
//! and the exit codes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test may panic: that is its failure

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/logs")
        .join(name)
        .display()
        .to_string()
}

fn sgtune(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sgtune"))
        .args(args)
        .output()
        .expect("sgtune runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const KV: &str = "real-0.5.23-cpu-kv-bound.log";
const ROOMY: &str = "real-0.5.23-cpu-roomy.log";

#[test]
fn table_for_the_kv_bound_run() {
    let o = sgtune(&[
        "log",
        &fixture(KV),
        "--since",
        "line:77",
        "--until",
        "line:222",
        "--concurrency",
        "32",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    for want in [
        "real-0.5.23-cpu-kv-bound.log (230 lines, 48.5 KB)",
        "version     from 2026-05-24 (KV alloc line names its dtype) or newer",
        "capacity    max_total_num_tokens 2048, max_running_requests 1024, context_len 4096",
        "kv cache    torch.bfloat16, 0.00 GB K+V per rank; no hierarchical cache",
        "window      stats lines 77-222, 2026-11-30 15:53:30 to 2026-11-30 15:54:04 (34 s); after the ready line (62)",
        "gen tok/s   mean 487.0, median 483.4, p10 419.4, p90 572.3",
        "running     #running-req mean 5.8, max 6",
        "queue       #queue-req mean 18.8, max 26, > 0 in 91% of intervals",
        "kv usage    token usage mean 0.55, p90 0.84, max 0.93",
        "retractions 0 (0 requests retracted)",
        "graph       cpu graph on in 0% of Decode lines (the log says graphs are disabled)",
        "verdict     kv_cache_bound: #running-req max 6 of 32 offered",
        "[offered concurrency 32: --concurrency]",
        "hint        more KV capacity",
    ] {
        assert!(out.contains(want), "missing {want:?} in\n{out}");
    }
    assert!(!out.contains("failure"), "{out}");
}

#[test]
fn json_for_two_files() {
    let o = sgtune(&["log", "--format", "json", &fixture(KV), &fixture(ROOMY)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let reports = v.as_array().expect("an array");
    assert_eq!(reports.len(), 2);
    let kv = &reports[0];
    assert!(kv["file"].as_str().unwrap_or("").ends_with(KV));
    assert_eq!(kv["summary"]["running_req_max"], 6);
    assert_eq!(kv["summary"]["max_total_num_tokens"], 2048);
    assert_eq!(kv["summary"]["ready_line"], 61);
    assert_eq!(kv["verdict"]["kind"], "kv_cache_bound");
    assert_eq!(kv["offered"], 32);
    assert_eq!(
        kv["offered_source"],
        "estimated: max #running-req + #queue-req"
    );
    assert!(kv["failure"].is_null());
    let roomy = &reports[1];
    assert_eq!(roomy["summary"]["running_req_max"], 32);
    assert_eq!(roomy["verdict"]["kind"], "compute_bound");
}

#[test]
fn csv_one_row_per_file() {
    let o = sgtune(&[
        "log",
        "--format",
        "csv",
        &fixture(KV),
        &fixture(ROOMY),
        &fixture("real-0.5.23-cpu-fp8-rejected.log"),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut r = csv::Reader::from_reader(o.stdout.as_slice());
    let header = r.headers().expect("header").clone();
    let col = |name: &str| header.iter().position(|h| h == name).expect(name);
    let rows: Vec<csv::StringRecord> = r.records().map(|x| x.expect("row")).collect();
    assert_eq!(rows.len(), 3);
    assert_eq!(&rows[0][col("verdict")], "kv_cache_bound");
    assert_eq!(&rows[0][col("running_req_max")], "6");
    assert_eq!(&rows[0][col("max_total_num_tokens")], "2048");
    assert_eq!(&rows[1][col("verdict")], "compute_bound");
    assert_eq!(&rows[1][col("running_req_max")], "32");
    // No stats: empty cells, never zeros.
    assert_eq!(&rows[2][col("verdict")], "unknown");
    assert_eq!(&rows[2][col("stats_lines")], "0");
    assert_eq!(&rows[2][col("gen_tput_mean")], "");
    assert_eq!(&rows[2][col("running_req_max")], "");
    assert_eq!(&rows[2][col("failure_kind")], "startup_error");
    assert_eq!(
        &rows[2][col("failure_message")],
        "ValueError: CPU FP8 KV cache requires Intel AMX support."
    );
}

#[test]
fn events_jsonl() {
    let o = sgtune(&["log", "--events", "jsonl", &fixture("v0.3-hhmmss-tp0.log")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let lines: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    assert_eq!(lines.len(), 13);
    let kinds: Vec<&str> = lines.iter().filter_map(|v| v["kind"].as_str()).collect();
    assert_eq!(
        kinds,
        [
            "capacity", "capacity", "prefill", "ready", "prefill", "decode", "decode", "decode",
            "retract", "retract", "decode", "decode", "decode"
        ]
    );
    let mixed = &lines[4];
    assert_eq!(mixed["line"], 9);
    assert_eq!(mixed["timestamp"], "23:59:50");
    assert_eq!(mixed["ranks"], serde_json::json!({"tp": 0}));
    assert_eq!(mixed["fields"]["running_req"], 0);
    assert_eq!(mixed["fields"]["new_token"], 8192);
    assert_eq!(mixed["fields"]["cache_hit_rate_pct"], 0.0);
    let decode = &lines[5];
    assert_eq!(
        decode["fields"],
        serde_json::json!({"running_req": 32, "token": 80000, "token_usage": 0.8,
                           "gen_throughput_token_s": 50.0, "queue_req": 32})
    );
    let retract = &lines[9];
    assert_eq!(retract["ranks"], serde_json::json!({"tp": 1}));
    assert_eq!(retract["fields"]["retracted_reqs"], 1);
    assert_eq!(retract["fields"]["new_token_ratio"], "0.4000 -> 0.5000");

    // A window by time keeps only the events inside it (the v0.1 log has no times at all);
    // with several files each object names its file.
    let o = sgtune(&[
        "log",
        "--events",
        "jsonl",
        "--since",
        "23:59:50",
        "--until",
        "23:59:56",
        &fixture("v0.3-hhmmss-tp0.log"),
        &fixture("v0.1-no-prefix.log"),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let lines: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let got: Vec<(&str, &str)> = lines
        .iter()
        .map(|v| {
            (
                v["kind"].as_str().unwrap_or(""),
                v["timestamp"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("prefill", "23:59:50"),
            ("decode", "23:59:52"),
            ("decode", "23:59:56")
        ]
    );
    assert!(lines.iter().all(|v| {
        v["file"]
            .as_str()
            .unwrap_or("")
            .ends_with("v0.3-hhmmss-tp0.log")
    }));
}

#[test]
fn no_stats_and_startup_failure() {
    let o = sgtune(&["log", &fixture("2026-log-level-warning.log")]);
    assert_eq!(o.status.code(), Some(0));
    let out = stdout(&o);
    assert!(out.contains("stats       no stats lines"), "{out}");
    assert!(
        out.contains("verdict     unknown: no server stats lines"),
        "{out}"
    );
    assert!(!out.contains("mean 0"), "{out}");

    let o = sgtune(&["log", &fixture("real-0.5.23-cpu-fp8-rejected.log")]);
    assert_eq!(o.status.code(), Some(0));
    let out = stdout(&o);
    assert!(
        out.contains(
            "failure     start-up failure (startup_error): ValueError: CPU FP8 KV cache requires Intel AMX support."
        ),
        "{out}"
    );
    assert!(
        out.contains("direction   a platform limit, not a tuning problem"),
        "{out}"
    );
}

#[test]
fn exit_codes() {
    // An unreadable file: the others are still reported, exit 2.
    let o = sgtune(&["log", "/nonexistent/server.log", &fixture(ROOMY)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("/nonexistent/server.log"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).contains("real-0.5.23-cpu-roomy.log"));
    // A folder is not a log.
    let o = sgtune(&["log", env!("CARGO_MANIFEST_DIR")]);
    assert_eq!(o.status.code(), Some(2));
    // Bad arguments, each next to files that exist and parse (so a failure here is the
    // argument check, not an unreadable file): exit 2, nothing reported on stdout, and the
    // message names what was wrong.
    let (roomy, kv, hhmmss) = (fixture(ROOMY), fixture(KV), fixture("v0.3-hhmmss-tp0.log"));
    for (bad, names) in [
        (vec!["log"], "<FILE>"),
        (
            vec!["log", "--since", "yesterday", &roomy],
            "--since `yesterday` is neither a time",
        ),
        (
            vec!["log", "--since", "line:0", &roomy],
            "--since `line:0`: line numbers start at 1",
        ),
        (
            vec!["log", "--since", "line:9", "--until", "line:3", &roomy],
            "--since is after --until",
        ),
        // Without dates a time window cannot wrap midnight: use line:N for that.
        (
            vec!["log", "--since", "23:59:56", "--until", "00:00:00", &hhmmss],
            "--since is after --until",
        ),
        (
            vec!["log", "--format", "xml", &roomy],
            "invalid value 'xml' for '--format",
        ),
        (
            vec!["log", "--concurrency", "0", &roomy],
            "invalid value '0' for '--concurrency",
        ),
        (
            vec!["log", "--follow", &roomy, &kv],
            "--follow reads exactly one file",
        ),
        (
            vec!["log", "--follow", "--events", "jsonl", &roomy],
            "'--follow' cannot be used with '--events",
        ),
    ] {
        let o = sgtune(&bad);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {err}");
        assert!(err.contains(names), "{bad:?}: want {names:?} in {err}");
        assert_eq!(stdout(&o), "", "{bad:?}: nothing is reported");
    }
    // The same files with good arguments are fine: the files were never the problem.
    let o = sgtune(&["log", "--since", "line:3", "--until", "line:9", &roomy]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = sgtune(&["log", "--since", "23:59:50", "--until", "23:59:56", &hhmmss]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// Lines of a child's stdout, as they come.
fn lines_of(child: &mut std::process::Child) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    if let Some(out) = child.stdout.take() {
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
    }
    rx
}

/// Read lines until `want` is among them (what was read is returned either way).
fn wait_for(rx: &mpsc::Receiver<String>, want: &str, timeout: Duration) -> (bool, String) {
    let end = Instant::now() + timeout;
    let mut seen = String::new();
    while let Some(left) = end.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(l) => {
                seen.push_str(&l);
                seen.push('\n');
                if l.contains(want) {
                    return (true, seen);
                }
            }
            Err(_) => break,
        }
    }
    (false, seen)
}

fn decode(t: &str, run: u64, thr: f64, q: u64) -> String {
    format!(
        "[2026-11-30 {t}] Decode batch, #running-req: {run}, #token: 500, token usage: 0.20, cpu graph: False, gen throughput (token/s): {thr:.2}, #queue-req: {q}\n"
    )
}

#[test]
fn follow_a_growing_file_survives_truncation_and_stops_on_ctrl_c() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("server.log");
    let mut f = std::fs::File::create(&log).expect("create");
    f.write_all(b"[2026-11-30 15:00:00] The server is fired up and ready to roll!\n")
        .expect("write");
    let mut child = Command::new(env!("CARGO_BIN_EXE_sgtune"))
        .args(["log", "--follow", "--refresh-ms", "100"])
        .arg(&log)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let rx = lines_of(&mut child);
    let t = Duration::from_secs(20);
    let (ok, seen) = wait_for(&rx, "stats       no stats lines", t);
    assert!(ok, "{seen}");

    // The log grows: the summary follows, a partial last line waits for its newline.
    let mut text = decode("15:00:10", 4, 5.0, 0);
    text += &decode("15:00:11", 8, 400.0, 2);
    text += &decode("15:00:12", 8, 600.0, 2);
    text += "[2026-11-30 15:00:13] Decode batch, #running-req: 8, #tok";
    f.write_all(text.as_bytes()).expect("write");
    f.flush().expect("flush");
    let (ok, seen) = wait_for(&rx, "gen tok/s   mean 500.0", t);
    assert!(ok, "{seen}");
    assert!(seen.contains("decode      2 lines kept"), "{seen}");

    // Truncated and rewritten: read again from the start.
    drop(f);
    let mut f = std::fs::File::create(&log).expect("truncate");
    let mut text =
        String::from("[2026-11-30 16:00:00] The server is fired up and ready to roll!\n");
    text += &decode("16:00:10", 2, 1.0, 0);
    text += &decode("16:00:11", 3, 30.0, 0);
    f.write_all(text.as_bytes()).expect("write");
    f.flush().expect("flush");
    let (ok, seen) = wait_for(&rx, "started over", t);
    assert!(ok, "{seen}");
    let (ok, seen) = wait_for(&rx, "gen tok/s   mean 30.0", t);
    assert!(ok, "{seen}");

    // Ctrl-C ends it, with status 0.
    // SAFETY: kill(2) on the child this test started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let end = Instant::now() + t;
    let status = loop {
        if let Ok(Some(s)) = child.try_wait() {
            break Some(s);
        }
        if Instant::now() > end {
            let _ = child.kill();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.and_then(|s| s.code()), Some(0));
}
