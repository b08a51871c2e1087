//! `sgtune load` against a fake SGLang that is already running: the standalone front door of
//! the same load engine.

mod common;
use common::*;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

struct Fake(Child);
impl Drop for Fake {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_fake() -> (Fake, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port");
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
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start fake");
    let up = wait_until(Duration::from_secs(20), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    assert!(up, "fake server did not listen");
    std::thread::sleep(Duration::from_millis(500)); // past its warmup
    (Fake(child), port)
}

#[test]
fn load_measures_a_running_server_with_both_conventions_and_goodput() {
    let (_fake, port) = start_fake();
    let dir = tempfile::tempdir().expect("tempdir");
    let out_dir = dir.path().join("out");
    let out = run(sgtune()
        .args(["load", "--url", &format!("http://127.0.0.1:{port}")])
        .args([
            "-w",
            "endpoint=chat",
            "-w",
            "concurrency=[2, 4]",
            "-w",
            "requests=12",
        ])
        .args([
            "-w",
            "input_tokens=8",
            "-w",
            "output_tokens=16",
            "-w",
            "slo={ttft_ms: 60000}",
        ])
        .arg("--output")
        .arg(&out_dir));
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(
        stdout.contains("load point: concurrency 2")
            && stdout.contains("load point: concurrency 4"),
        "{stdout}"
    );
    assert!(stdout.contains("12 completed, 0 failed"), "{stdout}");
    assert!(stdout.contains("goodput        100.0%"), "{stdout}");
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out_dir.join("summary.json")).expect("summary"),
    )
    .expect("json");
    let c = &summary["load_points"][1]["client"];
    assert_eq!(c["completed"], 12);
    assert_eq!(c["output_tokens"], 12 * 16);
    // Chat sends a role-only first chunk: vLLM's TTFT (first choices chunk) starts no later
    // than SGLang's (first content).
    let (v, s) = (
        c["ttft_first_choices_ms"]["mean"]
            .as_f64()
            .expect("vllm ttft"),
        c["ttft_ms"]["mean"].as_f64().expect("sglang ttft"),
    );
    assert!(v <= s, "vLLM TTFT {v} > SGLang TTFT {s}");
    let reqs = read_rows(&out_dir.join("requests.c4.csv"));
    assert_eq!(reqs.iter().filter(|r| r["phase"] == "measured").count(), 12);
    assert!(
        reqs.iter()
            .all(|r| num(r, "first_choices_ms") <= num(r, "ttft_ms"))
    );
}

#[test]
fn load_rejects_bad_workload_keys_and_missing_vocab() {
    let out = run(sgtune().args([
        "load",
        "--url",
        "http://127.0.0.1:9",
        "-w",
        "requests=1",
        "-w",
        "input_tokens=1",
        "-w",
        "output_tokens=1",
        "-w",
        "concurency=2",
    ]));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("unknown field `concurency`"),
        "{}",
        text(&out.stderr)
    );
    let out = run(sgtune().args([
        "load",
        "--url",
        "http://127.0.0.1:9",
        "-w",
        "requests=1",
        "-w",
        "input_tokens=1",
        "-w",
        "output_tokens=1",
    ]));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("vocab_size"),
        "{}",
        text(&out.stderr)
    );
}
