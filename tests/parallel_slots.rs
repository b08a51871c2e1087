//! Parallel slots on one machine, against the fake SGLang with fake GPU ids: while the sweep
//! runs, no two live servers share a GPU id (their real CUDA_VISIBLE_DEVICES, read from /proc)
//! or a port; afterwards the recorded commands and configs say the same, and results.csv has
//! one well-formed row per run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test may panic: that is its failure

mod common;
use common::*;
use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::time::Duration;

fn spec(tag: &str, port_line: &str, configs: &str) -> String {
    format!(
        r#"name: slots
server:
  command: [python3, "{fake}"]
  model_path: /nonexistent-model
{port_line}  env:
    SGTUNE_TEST_TAG: {tag}
    FAKE_SGLANG_STARTUP_S: "0.6"
    FAKE_SGLANG_TOKEN_S: "0.01"
  args:
    served_model_name: fake
  ready_timeout_s: 20
  stop_timeout_s: 3
configs:
{configs}workload:
  vocab_size: 100
  input_tokens: 4
  output_tokens: 20
  warmup_requests: 0
  concurrency: 2
  requests: 8
"#,
        fake = fake_server()
    )
}

/// A live fake server of this test: (pid, GPU ids, port).
struct Live {
    pid: i32,
    gpus: Vec<String>,
    port: String,
}

/// The fake servers of this test that are alive, without a server's own children (a fork
/// shows its parent's command line until it execs).
fn live_servers(tag: &str) -> Vec<Live> {
    let all = fakes(tag);
    let pids: Vec<i32> = all.iter().map(|l| l.pid).collect();
    all.into_iter()
        .filter(|l| {
            let status =
                std::fs::read_to_string(format!("/proc/{}/status", l.pid)).unwrap_or_default();
            let field = |k: &str| {
                status
                    .lines()
                    .find_map(|x| x.strip_prefix(k))
                    .map(|v| v.trim().to_string())
            };
            let ppid = field("PPid:").and_then(|p| p.parse::<i32>().ok());
            // A fork between fork and exec (seen once as `bash`) is not a server.
            field("Name:").is_some_and(|n| n.starts_with("python"))
                && !ppid.is_some_and(|p| pids.contains(&p))
        })
        .collect()
}

fn fakes(tag: &str) -> Vec<Live> {
    procs_with_tag(tag)
        .into_iter()
        .filter_map(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let args: Vec<String> = cmdline
                .split(|&b| b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            if !args.iter().any(|a| a.ends_with("fake_sglang.py")) {
                return None;
            }
            let port = args
                .iter()
                .position(|a| a == "--port")
                .and_then(|i| args.get(i + 1))
                .cloned()?;
            let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
            let gpus = env
                .split(|&b| b == 0)
                .find_map(|kv| kv.strip_prefix(b"CUDA_VISIBLE_DEVICES="))
                .map(|v| {
                    String::from_utf8_lossy(v)
                        .split(',')
                        .filter(|s| !s.is_empty())
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default();
            Some(Live { pid, gpus, port })
        })
        .collect()
}

/// Run the sweep, sampling the live servers every 20 ms; returns the exit status, the most
/// servers seen at once, and panics on any shared GPU id or port.
fn run_watched(tag: &str, spec_path: &Path, results: &Path, flags: &[&str]) -> (i32, usize) {
    let mut child = sgtune()
        .arg("run")
        .arg(spec_path)
        .arg("--results-dir")
        .arg(results)
        .args(flags)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn sgtune");
    let mut most = 0;
    let t0 = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        assert!(t0.elapsed() < Duration::from_secs(120), "sweep hangs");
        let live = live_servers(tag);
        most = most.max(live.len());
        let mut gpus = BTreeSet::new();
        let mut ports = BTreeSet::new();
        for l in &live {
            assert!(ports.insert(l.port.clone()), "port {} shared", l.port);
            for g in &l.gpus {
                assert!(gpus.insert(g.clone()), "GPU {g} shared by two live servers");
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    use std::io::Read;
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .expect("read");
    assert!(err.contains("[slot "), "progress shows the slots:\n{err}");
    (status.code().unwrap_or(-1), most)
}

fn read_json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).expect("read")).expect("json")
}

#[test]
fn gpu_slots_never_share_a_gpu_or_a_port_and_record_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("slots-gpu");
    let configs = "  - {name: a}\n  - {name: b, tp_size: 2}\n  - {name: c}\n  - {name: d, tp_size: 2}\n  - {name: e}\n";
    let spec_path = dir.path().join("s.yaml");
    std::fs::write(&spec_path, spec(&tag, "", configs)).expect("write");
    let results = dir.path().join("results");
    let (code, most) = run_watched(&tag, &spec_path, &results, &["--gpus", "0,1,2,3"]);
    assert_eq!(code, 0);
    assert!(most >= 2, "runs overlapped (at most {most} at once)");
    let folder = only_results_folder(&results);
    let rows = read_rows(&folder.join("results.csv"));
    let names: BTreeSet<&str> = rows.iter().map(|r| r["run_name"].as_str()).collect();
    assert_eq!(rows.len(), 5, "{rows:?}");
    assert_eq!(names.len(), 5);
    assert!(rows.iter().all(|r| r["status"] == "ok"), "{rows:?}");
    // The recorded commands and configs: each run's GPU count is its tp_size, the command
    // carries the same CUDA_VISIBLE_DEVICES, and the config its slot.
    let want: HashMap<&str, usize> = [("a", 1), ("b", 2), ("c", 1), ("d", 2), ("e", 1)].into();
    for (name, n) in want {
        let run = folder.join("runs").join(name);
        let config = read_json(&run.join("config.json"));
        let gpus: Vec<String> = config["slot"]["gpus"]
            .as_array()
            .expect("slot gpus recorded")
            .iter()
            .map(|g| g.as_str().expect("id").to_string())
            .collect();
        assert_eq!(gpus.len(), n, "{name}: {gpus:?}");
        let command = std::fs::read_to_string(run.join("command.txt")).expect("command");
        assert!(
            command.contains(&format!("CUDA_VISIBLE_DEVICES={}", gpus.join(","))),
            "{command}"
        );
        let port = config["server"]["port"].as_u64().expect("port");
        assert!(command.contains(&format!("--port {port}")), "{command}");
    }
    assert!(
        wait_until(Duration::from_secs(10), || procs_with_tag(&tag).is_empty()),
        "servers left behind"
    );
}

#[test]
fn parallel_cpu_slots_space_fixed_ports_and_keep_every_row() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("slots-cpu");
    let base = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
        .min(60_000);
    let configs = "  - {name: a}\n  - {name: b, fake_fault: exit_before_ready}\n  - {name: c}\n  - {name: d}\n";
    let spec_path = dir.path().join("s.yaml");
    std::fs::write(
        &spec_path,
        spec(&tag, &format!("  port: {base}\n"), configs) + "slots: {parallel: 2}\n",
    )
    .expect("write");
    let results = dir.path().join("results");
    // The spec's `slots:` key this time (the other test uses the flags).
    let (code, most) = run_watched(&tag, &spec_path, &results, &[]);
    assert_eq!(code, 1, "one configuration fails");
    assert!(most <= 2, "never more than two at once ({most})");
    let folder = only_results_folder(&results);
    let rows = read_rows(&folder.join("results.csv"));
    assert_eq!(rows.len(), 4, "{rows:?}");
    let failed: Vec<&str> = rows
        .iter()
        .filter(|r| r["status"] != "ok")
        .map(|r| r["run_name"].as_str())
        .collect();
    assert_eq!(failed, ["b"]);
    for name in ["a", "b", "c", "d"] {
        let config = read_json(&folder.join("runs").join(name).join("config.json"));
        let port = config["server"]["port"].as_u64().expect("port");
        assert!(
            port == u64::from(base) || port == u64::from(base) + 100,
            "{name}: port {port}, slots at {base} and {}",
            u64::from(base) + 100
        );
        assert!(config["slot"]["gpus"].is_null(), "no GPUs given");
    }
}
