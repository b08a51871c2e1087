//! `sgtune load` against a fake SGLang that is already running: the standalone front door of
//! the same load engine.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test may panic: that is its failure

mod common;
use common::*;
use std::process::Stdio;
use std::time::Duration;

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
    // Linux gives kernel receive timestamps: every streamed read has a read lag, and no
    // client is so late on an idle fake that the lag reaches the stream's length.
    let reqs = read_rows(&out_dir.join("requests.c4.csv"));
    if cfg!(target_os = "linux") {
        let lag = &c["read_lag_ms"];
        assert!(lag["count"].as_u64().unwrap_or(0) > 0, "{lag}");
        let e2e = c["e2e_ms"]["max"].as_f64().expect("e2e");
        assert!(lag["max"].as_f64().expect("lag max") < e2e, "{lag}");
        // Per request too: each one read stamped data, and none of it can have waited longer
        // than the request lasted (it arrived after the send, and was read before the end). A
        // wrong clock or unit (the stamp is CLOCK_REALTIME in ns) breaks this.
        for r in &reqs {
            assert!(!r["read_lag_max_ms"].is_empty(), "no read lag: {r:?}");
            assert!(num(r, "read_lag_max_ms") <= num(r, "end_ms"), "{r:?}");
        }
    }
    assert_eq!(reqs.iter().filter(|r| r["phase"] == "measured").count(), 12);
    assert!(
        reqs.iter()
            .all(|r| num(r, "first_choices_ms") <= num(r, "ttft_ms"))
    );
    // Each content chunk's instant and size, aligned.
    for r in &reqs {
        let chars: Vec<u64> = r["chunk_chars"]
            .split_whitespace()
            .map(|c| c.parse().expect("a count"))
            .collect();
        assert_eq!(chars.len() as f64, num(r, "content_chunks"), "{r:?}");
        assert_eq!(chars.len(), r["chunk_ms"].split_whitespace().count());
        assert!(chars.iter().all(|&c| c > 0), "{r:?}");
    }
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

#[test]
fn open_loop_with_length_distributions_records_lag_and_lengths() {
    let (_fake, port) = start_fake();
    let dir = tempfile::tempdir().expect("tempdir");
    let out_dir = dir.path().join("out");
    let out = run(sgtune()
        .args(["load", "--url", &format!("http://127.0.0.1:{port}")])
        .args([
            "-w",
            "request_rate=40",
            "-w",
            "burstiness=0.5",
            "-w",
            "concurrency=8",
        ])
        .args([
            "-w",
            "requests=40",
            "-w",
            "vocab_size=1000",
            "-w",
            "output_tokens=8",
        ])
        .args([
            "-w",
            "input_tokens={dist: uniform, mean: 16, range_ratio: 0.5}",
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
    assert!(stdout.contains("sched lag ms"), "{stdout}");
    let reqs = read_rows(&out_dir.join("requests.csv"));
    let measured: Vec<_> = reqs.iter().filter(|r| r["phase"] == "measured").collect();
    assert_eq!(measured.len(), 40);
    for r in &measured {
        // Every open-loop request has a lag (num() panics on an empty cell), and
        // actual send = scheduled send + lag (the seconds columns are rounded to 1 ms).
        let expect = num(r, "scheduled_s") + num(r, "sched_lag_ms") / 1000.0;
        assert!((num(r, "send_s") - expect).abs() < 0.002, "{r:?}");
        assert_eq!(r["max_tokens"], "8");
        let p = num(r, "prompt_tokens");
        assert!(
            (8.0..=16.0).contains(&p),
            "prompt {p} outside the uniform [8, 16]"
        );
    }
    // Open loop: sends spread over ~1 s (40 at 40/s), not all at once.
    let last_send = measured
        .iter()
        .map(|r| num(r, "send_s"))
        .fold(0.0, f64::max);
    assert!(
        last_send > 0.3,
        "arrivals spread out: last send at {last_send} s"
    );
    // The schedule is fixed in advance, in request order, from the window's start: it is not
    // the send instant under another name.
    let mut by_index = measured.clone();
    by_index.sort_by_key(|r| num(r, "index") as u64);
    let scheduled: Vec<f64> = by_index.iter().map(|r| num(r, "scheduled_s")).collect();
    assert!(
        scheduled.windows(2).all(|w| w[0] <= w[1]),
        "scheduled sends in request order: {scheduled:?}"
    );
}

/// Open loop with one slot and arrivals far faster than the fake can serve: each arrival
/// waits for the previous request to end, and that wait is its scheduling lag.
#[test]
fn open_loop_waits_for_a_slot_and_reports_the_wait_as_lag() {
    let (_fake, port) = start_fake();
    let dir = tempfile::tempdir().expect("tempdir");
    let out_dir = dir.path().join("out");
    // 20 tokens at the fake's 2 ms per decode step: every request takes at least 40 ms, while
    // arrivals come ~1 ms apart.
    let out = run(sgtune()
        .args(["load", "--url", &format!("http://127.0.0.1:{port}")])
        .args(["-w", "request_rate=1000", "-w", "concurrency=1"])
        .args(["-w", "requests=5", "-w", "warmup_requests=0"])
        .args(["-w", "vocab_size=1000", "-w", "input_tokens=4"])
        .args(["-w", "output_tokens=20"])
        .arg("--output")
        .arg(&out_dir));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mut reqs = read_rows(&out_dir.join("requests.csv"));
    reqs.sort_by_key(|r| num(r, "index") as u64);
    assert_eq!(reqs.len(), 5);
    for pair in reqs.windows(2) {
        let (prev, r) = (&pair[0], &pair[1]);
        assert!(
            num(prev, "end_ms") >= 38.0,
            "20 tokens take 40 ms: {prev:?}"
        );
        // The slot frees when the previous request ends; only then does this one go out, and
        // its lag is at least how long after its scheduled instant that was (1 ms rounding
        // on each seconds column).
        let prev_end = num(prev, "send_s") + num(prev, "end_ms") / 1000.0;
        assert!(num(r, "send_s") >= prev_end - 0.002, "{prev:?}\n{r:?}");
        let waited_ms = (prev_end - num(r, "scheduled_s")) * 1000.0;
        assert!(
            num(r, "sched_lag_ms") >= waited_ms - 2.0,
            "lag {} < wait for the slot {waited_ms}: {r:?}",
            num(r, "sched_lag_ms")
        );
    }
    // Four requests of >= 40 ms ahead of it, against ~4 ms of schedule.
    let last = num(&reqs[4], "sched_lag_ms");
    assert!(
        last > 100.0,
        "the last arrival waited for four requests: {last} ms"
    );
}

#[test]
fn deadline_cut_abandons_and_counts_requests_in_flight() {
    let (_fake, port) = start_fake();
    let dir = tempfile::tempdir().expect("tempdir");
    let out_dir = dir.path().join("out");
    // Each request needs ~4 s of tokens; the deadline comes at 1 s.
    let out = run(sgtune()
        .args(["load", "--url", &format!("http://127.0.0.1:{port}")])
        .args([
            "-w",
            "concurrency=3",
            "-w",
            "duration_s=1",
            "-w",
            "deadline=cut",
        ])
        .args([
            "-w",
            "warmup_requests=0",
            "-w",
            "vocab_size=1000",
            "-w",
            "input_tokens=4",
        ])
        .args(["-w", "output_tokens=2000"])
        .arg("--output")
        .arg(&out_dir));
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "nothing completed: {stdout}");
    assert!(stdout.contains("cut off        3 requests"), "{stdout}");
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out_dir.join("summary.json")).expect("summary"),
    )
    .expect("json");
    let c = &summary["load_points"][0]["client"];
    assert_eq!(c["cut_off"], 3);
    assert_eq!(c["failed"], 0, "cut-off requests are not failures");
    let d = c["duration_s"].as_f64().expect("duration");
    assert!(
        (0.9..1.5).contains(&d),
        "the window ends at the deadline: {d}"
    );
}

#[test]
fn dataset_prompts_and_shared_prefixes() {
    let (_fake, port) = start_fake();
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("d.jsonl");
    std::fs::write(
        &data,
        "{\"prompt\": \"one two three four\"}\n{\"messages\": [{\"role\": \"user\", \"content\": \"hello there friend\"}]}\n",
    )
    .expect("write");
    let url = format!("http://127.0.0.1:{port}");
    for endpoint in ["completions", "chat"] {
        let out = run(sgtune()
            .args(["load", "--url", &url, "-w", &format!("endpoint={endpoint}")])
            .args([
                "-w",
                "concurrency=2",
                "-w",
                "requests=6",
                "-w",
                "output_tokens=4",
            ])
            .arg("-w")
            .arg(format!("dataset={}", data.display())));
        assert_eq!(
            out.status.code(),
            Some(0),
            "{endpoint}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stdout).contains("6 completed, 0 failed"),
            "{}",
            text(&out.stdout)
        );
    }
    // Shared prefix: 2 groups of 32-token prefixes before each prompt's own 8 tokens.
    let out_dir = dir.path().join("sp");
    let out = run(sgtune()
        .args([
            "load",
            "--url",
            &url,
            "-w",
            "concurrency=2",
            "-w",
            "requests=6",
        ])
        .args([
            "-w",
            "input_tokens=8",
            "-w",
            "output_tokens=4",
            "-w",
            "vocab_size=1000",
        ])
        .args([
            "-w",
            "shared_prefix={groups: 2, prefix_tokens: 32}",
            "--output",
        ])
        .arg(&out_dir));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let reqs = read_rows(&out_dir.join("requests.csv"));
    assert!(
        reqs.iter()
            .filter(|r| r["phase"] == "measured")
            .all(|r| r["prompt_tokens"] == "40"),
        "prefix + own tokens: {reqs:?}"
    );
    let out = run(sgtune().args([
        "load",
        "--url",
        &url,
        "-w",
        "requests=1",
        "-w",
        "output_tokens=1",
        "-w",
        "dataset=/nonexistent.jsonl",
    ]));
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("/nonexistent.jsonl"));
}

/// Start `sgtune load` on requests that take ~20 s each, wait until they are in flight, send
/// SIGINT `signals` times (1 s apart), and return (exit status, seconds from the first signal
/// to exit, stderr).
fn interrupt_load(signals: usize) -> (Option<i32>, f64, String) {
    let (_fake, port) = start_fake_with(0.1);
    let child = sgtune()
        .args(["load", "--url", &format!("http://127.0.0.1:{port}")])
        .args([
            "-w",
            "endpoint=chat",
            "-w",
            "concurrency=2",
            "-w",
            "requests=4",
            "-w",
            "warmup_requests=0",
            "-w",
            "input_tokens=8",
            "-w",
            "output_tokens=200",
            "-w",
            "ignore_eos=true",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sgtune load starts");
    std::thread::sleep(Duration::from_secs(2));
    let t0 = std::time::Instant::now();
    for i in 0..signals {
        if i > 0 {
            std::thread::sleep(Duration::from_secs(1));
        }
        // SAFETY: kill(2) on the child we started.
        unsafe {
            libc::kill(child.id() as i32, libc::SIGINT);
        }
    }
    let out = child.wait_with_output().expect("sgtune load exits");
    (
        out.status.code(),
        t0.elapsed().as_secs_f64(),
        text(&out.stderr),
    )
}

#[test]
fn a_first_ctrl_c_waits_for_requests_in_flight_and_a_second_quits_now() {
    // One signal: stop sending, give the requests in flight the 10 s grace, then report.
    let (code, secs, err) = interrupt_load(1);
    assert_eq!(code, Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert!(
        secs >= 9.0,
        "the first Ctrl-C lets requests in flight finish for up to 10 s; exited after {secs:.1} s"
    );
    // Two signals: exit at once, not after the grace.
    let (code, secs, err) = interrupt_load(2);
    assert_eq!(code, Some(130), "{err}");
    assert!(
        secs < 5.0,
        "a second Ctrl-C must exit at once; exited after {secs:.1} s: {err}"
    );
}

/// The prompts a two-turn session sent to a fake started with `env`, on `endpoint` (the
/// fake's prompt log, in order), and what `sgtune load` printed.
fn session_prompts(env: &[(&str, &str)], endpoint: &str) -> (Vec<serde_json::Value>, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("prompts.log");
    let log_s = log.display().to_string();
    let mut env = env.to_vec();
    env.extend([
        ("FAKE_SGLANG_PROMPT_LOG", log_s.as_str()),
        ("FAKE_SGLANG_PROMPT_FULL", "1"),
    ]);
    let (_fake, port) = start_fake_env(0.002, &env);
    let url = format!("http://127.0.0.1:{port}");
    let out = run(sgtune()
        .args(["load", "--url", &url, "-w", &format!("endpoint={endpoint}")])
        .args([
            "-w",
            "concurrency=1",
            "-w",
            "requests=2",
            "-w",
            "warmup_requests=0",
        ])
        .args(["-w", "vocab_size=1000"])
        .args(["-w", "sessions={turns: 2, user_tokens: 5, reply_tokens: 3}"]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("2 completed, 0 failed"),
        "{}",
        text(&out.stdout)
    );
    let sent = std::fs::read_to_string(&log)
        .expect("prompt log")
        .lines()
        .filter_map(|l| l.strip_prefix("prompt-json "))
        .map(|j| serde_json::from_str(j).expect("json"))
        .collect();
    (sent, text(&out.stdout))
}

/// `sessions:` (issue 43) against the fake: the second turn's prompt is the first turn's
/// prompt, the server's own reply and the next user message, on both endpoints; chat sends
/// the reply's text back, completions the reply's own token ids (`return_token_ids`, which
/// the fake answers as SGLang 0.5.23 does).
#[test]
fn a_sessions_second_turn_sends_the_first_reply_back() {
    let (chat, stdout) = session_prompts(&[], "chat");
    assert!(stdout.contains("TTFT p50 ms by turn  1: "), "{stdout}");
    assert_eq!(chat.len(), 2, "{chat:?}");
    let (first, second) = (&chat[0], &chat[1]);
    let roles: Vec<&str> = second
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["role"].as_str())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user"], "{second}");
    assert_eq!(second[0], first[0], "the first user message again");
    // The fake's reply: three " tokN" pieces, as it streamed them.
    let reply = second[1]["content"].as_str().expect("reply text");
    assert_eq!(reply.matches(" tok").count(), 3, "{reply:?}");
    assert_ne!(second[2], first[0], "a new user message");
    let (comp, stdout) = session_prompts(&[], "completions");
    assert!(
        stdout.contains("the server's replies go back as its token ids"),
        "{stdout}"
    );
    // Turn 2 of 13 tokens repeats turn 1's 5 and the 3-token reply: 8 / (5 + 13).
    assert!(
        stdout.contains("reusable       44.4% of prompt tokens"),
        "{stdout}"
    );
    // First the question whether the server returns reply ids (8 ids, one token), then
    // the session.
    assert_eq!(comp.len(), 3, "{comp:?}");
    assert_eq!(comp[0].as_array().map(Vec::len), Some(8));
    let (a, b) = (
        comp[1].as_array().expect("ids"),
        comp[2].as_array().expect("ids"),
    );
    assert_eq!(a.len(), 5);
    assert_eq!(
        b.len(),
        5 + 3 + 5,
        "prompt, the 3-token reply, a new message"
    );
    assert_eq!(b[..5], a[..], "the history starts the second prompt");
    // The fake's reply to a 5-token prompt is ids (5 x 31 + 7i) mod 32000: the server's own.
    assert_eq!(b[5..8], [155, 162, 169], "{b:?}");
}

/// A server that returns no reply ids (as llama.cpp's /v1/completions): a token-id prompt
/// cannot be continued by text, so the sessions go as text, each reply's text right after the
/// prompt it continued.
#[test]
fn a_server_without_reply_ids_gets_its_completions_sessions_as_text() {
    let (comp, stdout) = session_prompts(&[("FAKE_SGLANG_NO_TOKEN_IDS", "1")], "completions");
    assert!(
        stdout.contains("the server returned no reply token ids: the sessions went as text"),
        "{stdout}"
    );
    assert_eq!(comp.len(), 3, "the question, then two turns: {comp:?}");
    let (a, b) = (
        comp[1].as_str().expect("text"),
        comp[2].as_str().expect("text"),
    );
    assert_eq!(a.split(' ').count(), 5, "{a}");
    let rest = b
        .strip_prefix(a)
        .expect("the history starts the second prompt");
    let (reply, user) = rest
        .split_once("\n\n")
        .expect("the reply, then the next message");
    assert_eq!(reply.matches(" tok").count(), 3, "{reply:?}");
    assert_eq!(user.split(' ').count(), 5, "{user}");
    // No /tokenize either: the first turns' share is unknown, so none is claimed.
    assert!(!stdout.contains("reusable "), "{stdout}");
}

/// `sessions: {from_dataset: true}`: a file's conversation replayed turn by turn, its own
/// assistant turns replaced by the server's replies, its system prompt kept.
#[test]
fn a_dataset_conversation_is_replayed_with_the_servers_replies() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("prompts.log");
    let log_s = log.display().to_string();
    let (_fake, port) = start_fake_env(
        0.002,
        &[
            ("FAKE_SGLANG_PROMPT_LOG", log_s.as_str()),
            ("FAKE_SGLANG_PROMPT_FULL", "1"),
        ],
    );
    let data = dir.path().join("convs.json");
    std::fs::write(
        &data,
        r#"[{"conversations": [{"from": "system", "value": "be brief"}, {"from": "human", "value": "first question"}, {"from": "gpt", "value": "the file's answer"}, {"from": "human", "value": "second question"}]}]"#,
    )
    .expect("write");
    let out = run(sgtune()
        .args(["load", "--url", &format!("http://127.0.0.1:{port}")])
        .args([
            "-w",
            "endpoint=chat",
            "-w",
            "concurrency=1",
            "-w",
            "requests=2",
        ])
        .args(["-w", "warmup_requests=0", "-w", "output_tokens=3"])
        .args(["-w", &format!("dataset={}", data.display())])
        .args(["-w", "sessions={from_dataset: true}"]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let sent: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .expect("prompt log")
        .lines()
        .filter_map(|l| l.strip_prefix("prompt-json "))
        .map(|j| serde_json::from_str(j).expect("json"))
        .collect();
    assert_eq!(sent.len(), 2, "{sent:?}");
    let contents: Vec<&str> = sent[1]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(contents.len(), 4, "{contents:?}");
    assert_eq!(
        (contents[0], contents[1], contents[3]),
        ("be brief", "first question", "second question")
    );
    assert_ne!(
        contents[2], "the file's answer",
        "the server's reply, not the file's"
    );
    assert_eq!(contents[2].matches(" tok").count(), 3, "{contents:?}");
}

/// Open loop with `sessions:`: sessions arrive at the rate, each sends its turns in order,
/// every turn after the first due when its previous reply came back (no think time here).
#[test]
fn open_loop_sessions_arrive_at_the_rate_and_keep_their_turns_in_order() {
    let (_fake, port) = start_fake();
    let dir = tempfile::tempdir().expect("tempdir");
    let out_dir = dir.path().join("out");
    let out = run(sgtune()
        .args(["load", "--url", &format!("http://127.0.0.1:{port}")])
        .args([
            "-w",
            "request_rate=20",
            "-w",
            "concurrency=4",
            "-w",
            "requests=9",
        ])
        .args(["-w", "warmup_requests=0", "-w", "vocab_size=1000"])
        .args(["-w", "sessions={turns: 3, user_tokens: 5, reply_tokens: 2}"])
        .arg("--output")
        .arg(&out_dir));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let reqs = read_rows(&out_dir.join("requests.csv"));
    let measured: Vec<_> = reqs.iter().filter(|r| r["phase"] == "measured").collect();
    assert_eq!(measured.len(), 9, "{reqs:?}");
    let mut sessions = std::collections::BTreeMap::<u64, Vec<(f64, u64, u64)>>::new();
    for r in &measured {
        assert!(!r["scheduled_s"].is_empty(), "open loop: a due time {r:?}");
        let num = |c: &str| {
            r[c].parse::<f64>()
                .unwrap_or_else(|_| panic!("{c} in {r:?}"))
        };
        sessions.entry(num("session") as u64).or_default().push((
            num("send_s"),
            num("turn") as u64,
            num("prompt_tokens") as u64,
        ));
    }
    for (k, mut turns) in sessions {
        turns.sort_by(|a, b| a.0.total_cmp(&b.0));
        let got: Vec<(u64, u64)> = turns.iter().map(|t| (t.1, t.2)).collect();
        // Each turn's prompt: the history (previous prompt + a 2-token reply) + 5 new tokens.
        let want: Vec<(u64, u64)> = [(1, 5), (2, 12), (3, 19)][..got.len()].to_vec();
        assert_eq!(got, want, "session {k}");
    }
}

/// The example traces under tests/fixtures/traces/.
fn trace_fixture(name: &str) -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/traces")
        .join(name)
        .display()
        .to_string()
}

/// `sessions: {from_trace: F, format: agentic}`: bench_serving's agentic-trace shape replayed
/// round by round; the second round is the first round's messages, the server's own reply,
/// then the round's new (tool) message, kept as the file has it.
#[test]
fn an_agentic_traces_second_round_carries_the_servers_first_reply() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("prompts.log");
    let log_s = log.display().to_string();
    let (_fake, port) = start_fake_env(
        0.002,
        &[
            ("FAKE_SGLANG_PROMPT_LOG", log_s.as_str()),
            ("FAKE_SGLANG_PROMPT_FULL", "1"),
        ],
    );
    let trace = trace_fixture("agentic.json");
    let out = run(sgtune()
        .args(["load", "--url", &format!("http://127.0.0.1:{port}")])
        .args([
            "-w",
            "endpoint=chat",
            "-w",
            "concurrency=1",
            "-w",
            "requests=3",
        ])
        .args(["-w", "warmup_requests=0", "-w", "output_tokens=3"])
        .args([
            "-w",
            &format!("sessions={{from_trace: {trace}, format: agentic}}"),
        ]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("3 completed, 0 failed"),
        "{}",
        text(&out.stdout)
    );
    let sent: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .expect("prompt log")
        .lines()
        .filter_map(|l| l.strip_prefix("prompt-json "))
        .map(|j| serde_json::from_str(j).expect("json"))
        .collect();
    assert_eq!(sent.len(), 3, "{sent:?}");
    let roles = |v: &serde_json::Value| -> Vec<String> {
        v.as_array()
            .expect("messages")
            .iter()
            .filter_map(|m| m["role"].as_str().map(String::from))
            .collect()
    };
    assert_eq!(roles(&sent[0]), ["system", "user"]);
    assert_eq!(roles(&sent[1]), ["system", "user", "assistant", "tool"]);
    let (first, second) = (
        sent[0].as_array().expect("messages"),
        sent[1].as_array().expect("messages"),
    );
    assert_eq!(second[..2], first[..], "round 1's messages start round 2");
    let reply = sent[1][2]["content"].as_str().expect("reply text");
    assert_eq!(
        reply.matches(" tok").count(),
        3,
        "the server's reply as it streamed it: {reply:?}"
    );
    assert_eq!(sent[1][3]["tool_call_id"], "call_1", "{}", sent[1]);
    assert_eq!(
        roles(&sent[2]),
        ["system", "user", "assistant", "tool", "assistant", "user"]
    );
    assert_eq!(sent[2][5]["content"], "Now run the whole suite");
}

/// `sessions: {from_trace: F, format: mooncake}`: each record is sent at its timestamp
/// (relative to the first, times `slowdown`), and records with equal leading hash ids send
/// equal leading token blocks; the reusable share is the trace's, exactly.
#[test]
fn a_mooncake_trace_is_replayed_at_its_times_with_shared_blocks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("prompts.log");
    let log_s = log.display().to_string();
    let (_fake, port) = start_fake_env(
        0.002,
        &[
            ("FAKE_SGLANG_PROMPT_LOG", log_s.as_str()),
            ("FAKE_SGLANG_PROMPT_FULL", "1"),
        ],
    );
    let trace = trace_fixture("mooncake.jsonl");
    let out_dir = dir.path().join("out");
    let out = run(sgtune()
        .args(["load", "--url", &format!("http://127.0.0.1:{port}")])
        .args([
            "-w",
            "endpoint=completions",
            "-w",
            "concurrency=4",
            "-w",
            "requests=4",
        ])
        .args(["-w", "warmup_requests=0", "-w", "vocab_size=1000"])
        .args([
            "-w",
            &format!(
                "sessions={{from_trace: {trace}, format: mooncake, block_tokens: 4, slowdown: 2}}"
            ),
        ])
        .arg("--output")
        .arg(&out_dir));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("4 completed, 0 failed"), "{stdout}");
    // Reusable: record 2 shares blocks 1 and 2 (8 tokens), record 4 blocks 1 and 2 and the 2
    // tokens of block 3 record 1 sent: 18 of 37 prompt tokens.
    assert!(
        stdout.contains("reusable       48.6% of prompt tokens"),
        "{stdout}"
    );
    let reqs = read_rows(&out_dir.join("requests.csv"));
    let mut measured: Vec<_> = reqs.iter().filter(|r| r["phase"] == "measured").collect();
    measured.sort_by_key(|r| r["index"].parse::<u64>().unwrap_or(u64::MAX));
    assert_eq!(measured.len(), 4, "{reqs:?}");
    let num = |r: &std::collections::HashMap<String, String>, c: &str| -> f64 {
        r[c].parse::<f64>()
            .unwrap_or_else(|_| panic!("{c} in {r:?}"))
    };
    // The trace's gaps (0, 100, 250, 500 ms) doubled.
    for (r, want) in measured.iter().zip([0.0, 0.2, 0.5, 1.0]) {
        let (due, sent) = (num(r, "scheduled_s"), num(r, "send_s"));
        assert!((due - want).abs() < 1e-3, "due {due}, want {want}: {r:?}");
        assert!(
            sent >= due - 1e-3 && sent < due + 0.4,
            "sent at {sent}, due {due}: {r:?}"
        );
    }
    let sent: Vec<Vec<u64>> = std::fs::read_to_string(&log)
        .expect("prompt log")
        .lines()
        .filter_map(|l| l.strip_prefix("prompt-json "))
        .map(|j| serde_json::from_str(j).expect("token ids"))
        .collect();
    assert_eq!(
        sent.iter().map(Vec::len).collect::<Vec<_>>(),
        [10, 9, 6, 12],
        "each record's input_length"
    );
    assert_eq!(sent[1][..8], sent[0][..8], "hash ids 1, 2: equal blocks");
    assert_ne!(sent[1][8..9], sent[0][8..9], "hash 4 is not hash 3");
    assert_eq!(sent[3][..10], sent[0][..], "hash ids 1, 2, 3 again");
    assert_ne!(sent[2][..4], sent[0][..4], "hash 5 is not hash 1");
}
