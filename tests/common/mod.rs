//! Helpers shared by the integration tests: run the real `sgtune` binary, find processes by a
//! tag in their environment, read result CSVs.
#![allow(dead_code)]

pub mod real;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn sgtune() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sgtune"))
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn fake_server() -> String {
    repo()
        .join("tests/fake_sglang/fake_sglang.py")
        .display()
        .to_string()
}

pub fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("sgtune runs")
}

/// `sgtune run SPEC --results-dir RESULTS`, to completion.
pub fn run_sweep(spec: &Path, results: &Path) -> Output {
    run(sgtune()
        .arg("run")
        .arg(spec)
        .arg("--results-dir")
        .arg(results))
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A unique tag to put into a server's environment, so its processes can be found.
pub fn unique_tag(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{name}-{}-{nanos}", std::process::id())
}

/// PIDs of live (non-zombie) processes whose environment contains `SGTUNE_TEST_TAG=<tag>`.
pub fn procs_with_tag(tag: &str) -> Vec<i32> {
    let needle = format!("SGTUNE_TEST_TAG={tag}");
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in entries.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z'))
        {
            continue;
        }
        if let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) {
            if env.split(|&b| b == 0).any(|kv| kv == needle.as_bytes()) {
                out.push(pid);
            }
        }
    }
    out
}

pub fn wait_until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < timeout {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    f()
}

/// The single results folder under `results_dir`.
pub fn only_results_folder(results_dir: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(results_dir)
        .expect("results dir exists")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(dirs.len(), 1, "one results folder: {dirs:?}");
    dirs.into_iter().next().expect("one folder")
}

/// results.csv as one map per row.
pub fn read_rows(csv_path: &Path) -> Vec<HashMap<String, String>> {
    let mut r = csv::Reader::from_path(csv_path).expect("csv opens");
    let header: Vec<String> = r
        .headers()
        .expect("header")
        .iter()
        .map(String::from)
        .collect();
    r.records()
        .map(|rec| {
            let rec = rec.expect("row parses");
            header
                .iter()
                .cloned()
                .zip(rec.iter().map(String::from))
                .collect()
        })
        .collect()
}

pub fn num(row: &HashMap<String, String>, col: &str) -> f64 {
    row.get(col)
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("column {col} is not a number: {:?}", row.get(col)))
}

/// A running fake SGLang (tests/fake_sglang), killed when dropped.
pub struct Fake(Child);
impl Drop for Fake {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A fake SGLang already past its start-up, on a free port.
pub fn start_fake() -> (Fake, u16) {
    start_fake_with(0.002)
}

/// A fake whose every decode step takes `token_s` seconds.
pub fn start_fake_with(token_s: f64) -> (Fake, u16) {
    start_fake_env(token_s, &[])
}

/// [`start_fake_with`], with extra environment for the fake (e.g. its prompt log).
pub fn start_fake_env(token_s: f64, env: &[(&str, &str)]) -> (Fake, u16) {
    // sgtune's own free port: below the kernel's ephemeral range and reserved across
    // processes. A port the kernel hands out (bind to 0) is free when checked, and in the gap
    // before the fake binds it any test's outgoing connection can take it (seen under a load
    // of 6: the fake never listened).
    let port = sgtune::server::supervise::free_port("127.0.0.1").expect("free port");
    let child = Command::new("python3")
        .arg(fake_server())
        .args([
            "--model-path",
            "/nonexistent",
            "--served-model-name",
            "fake",
            "--port",
        ])
        .arg(port.to_string())
        .env("FAKE_SGLANG_STARTUP_S", "0.1")
        .env("FAKE_SGLANG_TOKEN_S", token_s.to_string())
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start fake");
    // Owned before the check: a fake that never listens is killed when the test fails,
    // not left running.
    let fake = Fake(child);
    let up = wait_until(Duration::from_secs(20), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    assert!(up, "fake server did not listen");
    std::thread::sleep(Duration::from_millis(500)); // past its warmup
    (fake, port)
}

/// With `SGTUNE_KEEP_QUALITY` set, copy a test's results folder to `keep` (replacing it) for
/// the figures in docs/benchmarks.md; otherwise nothing.
pub fn keep_when_asked(folder: &Path, keep: &str) {
    if std::env::var("SGTUNE_KEEP_QUALITY").is_err() {
        return;
    }
    let _ = std::fs::remove_dir_all(keep);
    let _ = Command::new("cp").arg("-a").arg(folder).arg(keep).status();
}

/// The lines of `text`, something printed or saved for a person to read, that show Rust's
/// debug formatting of an Option: `Some(` or `None` as a word (not "none", not "Nonetheless").
/// Empty when the text is clean.
pub fn debug_formatting(text: &str) -> Vec<String> {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    text.lines()
        .filter(|l| {
            l.contains("Some(")
                || l.match_indices("None").any(|(at, _)| {
                    !word(l[..at].chars().next_back()) && !word(l[at + 4..].chars().next())
                })
        })
        .map(str::to_string)
        .collect()
}

/// A resume refused because process `pid` holds the results folder's lock: exit 2, naming it.
pub fn assert_refused_by_the_lock_of(out: &Output, pid: u32) {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "is being written by another sgtune (pid {pid} on "
        )),
        "{err}"
    );
}

/// No measurement has two rows: each (run_name, concurrency, repeat) once in results.csv's
/// `rows` (a resume or a rerun wave must not measure a launch again).
pub fn assert_each_measured_once(rows: &[HashMap<String, String>]) {
    let mut keys: Vec<(&str, &str, &str)> = rows
        .iter()
        .map(|r| {
            let cell = |c: &str| r.get(c).map_or("", String::as_str);
            (cell("run_name"), cell("concurrency"), cell("repeat"))
        })
        .collect();
    let n = keys.len();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), n, "a measurement twice: {rows:?}");
}
