//! Rows that stand, with notes (the quality pass, the flush, /metrics, a file not written),
//! and what each row is read from (its own log window, the request's size).

use super::*;
use crate::record::RunStatus;

const TWO: &str = "  concurrency: [2, 4]\n";

#[test]
fn a_failing_quality_pass_is_a_note_and_its_outputs_are_kept() {
    let ran = launch(
        &spec(
            "  concurrency: 2\n",
            "quality:\n  count: 2\n  baseline: a\n",
        ),
        Phase::Measure,
        Script {
            quality_error: Some("HTTP 500".into()),
            ..Default::default()
        },
    );
    let rows = ran.records();
    assert_eq!(rows.len(), 1);
    assert_eq!(
        rows[0].status,
        RunStatus::Ok,
        "the judgement comes at decision time"
    );
    let note = "quality pass: 4 of 4 prompts got no usable answer (first: HTTP 500)";
    assert!(
        rows[0].notes.iter().any(|n| n == note),
        "{:?}",
        rows[0].notes
    );
    // The baseline's launch makes two passes, then flushes before the first load point.
    assert_eq!(
        ran.calls[1..4],
        names(&["quality 1", "quality 2", "flush /flush_cache"])
    );
    let jsonl = std::fs::read_to_string(ran.launch_dir().join("quality.jsonl")).unwrap();
    assert_eq!(jsonl.lines().count(), 4);
}

/// A pre-flight launch only tries a memory setting under a burst: no quality pass, even with
/// `quality:` set (the launches after it answer the prompts).
#[test]
fn a_preflight_launch_makes_no_quality_pass() {
    let ran = launch(
        &spec(
            "  concurrency: 2\n",
            "quality:\n  count: 2\n  baseline: a\n",
        ),
        Phase::Preflight,
        Script::default(),
    );
    assert!(
        !ran.calls.iter().any(|c| c.starts_with("quality")),
        "{:?}",
        ran.calls
    );
    assert!(!ran.files().contains(&"quality.jsonl".to_string()));
}

#[test]
fn quality_prompts_that_cannot_be_made_are_a_note_and_no_pass() {
    let spec = spec("  concurrency: 2\n", "quality:\n  count: 2\n");
    let plan = crate::plan::expand::expand(&spec);
    let l =
        crate::tune::work::plan_launches(&spec, &plan, &|_, _| false, &|_| Vec::new()).remove(0);
    let ran = launch_this(&spec, &plan.param_keys, l, Script::default(), 0);
    let rows = ran.records();
    assert_eq!(rows.len(), 1);
    assert!(
        rows[0]
            .notes
            .iter()
            .any(|n| n
                .starts_with("no quality pass: quality.prompts: builtin token-id prompts need")),
        "{:?}",
        rows[0].notes
    );
    assert!(!ran.calls.iter().any(|c| c.starts_with("quality")));
    assert!(!ran.files().contains(&"quality.jsonl".to_string()));
}

#[test]
fn a_refused_flush_is_a_note_and_the_next_point_is_still_measured() {
    let refused = "could not flush the prefix cache before this load point (HTTP 400)";
    let ran = launch(
        &spec(TWO, ""),
        Phase::Measure,
        Script {
            flush_refused: Some(refused.into()),
            ..Default::default()
        },
    );
    let rows = ran.records();
    assert_eq!(rows.len(), 2);
    for r in rows {
        assert_eq!(r.status, RunStatus::Ok);
        assert!(r.notes.iter().any(|n| n == refused), "{:?}", r.notes);
    }
}

#[test]
fn a_flush_answered_without_its_log_line_is_a_note() {
    let ran = launch(
        &spec(TWO, ""),
        Phase::Measure,
        Script {
            flush_logged: false,
            ..Default::default()
        },
    );
    let rows = ran.records();
    assert_eq!(rows.len(), 2);
    let note = rows[1]
        .notes
        .iter()
        .find(|n| n.starts_with("the prefix-cache flush was answered, but server.log shows no \"Cache flushed successfully"));
    assert!(note.is_some(), "{:?}", rows[1].notes);
}

#[test]
fn metrics_that_disagree_with_the_log_are_a_note() {
    let ran = launch(
        &spec("  concurrency: 2\n", ""),
        Phase::Measure,
        Script {
            loads: vec![Load {
                // 400 tok/s by the counter against the log's 100.
                scrapes: vec![scrape(0.0, 0.0), scrape(1.0, 400.0)],
                ..Default::default()
            }],
            ..Default::default()
        },
    );
    let r = &ran.records()[0];
    assert!(
        r.notes.iter().any(|n| n
            == "server gen throughput disagrees: log Decode lines 100.0 tok/s, /metrics counter 400.0 tok/s"),
        "{:?}",
        r.notes
    );
    let csv = std::fs::read_to_string(ran.launch_dir().join("metrics.csv")).unwrap();
    assert_eq!(csv.lines().count(), 3, "{csv}");
}

/// The /metrics note's threshold is "more than 25 % off": exactly 25 % is no note.
#[test]
fn metrics_exactly_a_quarter_off_the_log_are_no_note() {
    let ran = launch(
        &spec("  concurrency: 2\n", ""),
        Phase::Measure,
        Script {
            loads: vec![Load {
                scrapes: vec![scrape(0.0, 0.0), scrape(1.0, 125.0)],
                ..Default::default()
            }],
            ..Default::default()
        },
    );
    let r = &ran.records()[0];
    assert_eq!(
        r.metrics.as_ref().and_then(|m| m.gen_tput_from_counter),
        Some(125.0)
    );
    assert!(
        !r.notes.iter().any(|n| n.contains("disagrees")),
        "{:?}",
        r.notes
    );
}

/// Each row's server side is its own window of server.log, not the whole file.
#[test]
fn each_point_is_read_from_its_own_log_window() {
    let at = |tput: &str| -> Vec<String> {
        (50..54)
            .map(|s| decode_line(s).replace("100.00", tput))
            .collect()
    };
    let ran = launch(
        &spec(TWO, ""),
        Phase::Measure,
        Script {
            loads: vec![
                Load {
                    lines: at("100.00"),
                    warmup_ok: 2,
                    ..Default::default()
                },
                Load {
                    lines: at("300.00"),
                    ..Default::default()
                },
            ],
            ..Default::default()
        },
    );
    let tput: Vec<_> = ran
        .records()
        .iter()
        .map(|r| r.server.as_ref().and_then(|s| s.gen_throughput_mean))
        .collect();
    assert_eq!(tput, vec![Some(100.0), Some(300.0)]);
    assert_eq!(ran.summary("summary.c2.json").warmup_ok, 2);
    assert_eq!(ran.summary("summary.c4.json").warmup_ok, 0);
}

/// A file of the launch that cannot be written is a note on every row, and the launch goes on.
#[test]
fn a_launch_file_that_cannot_be_written_is_a_note() {
    let ran = launch(
        &spec(TWO, ""),
        Phase::Measure,
        Script {
            // A folder where config.json goes: its write fails.
            blocked: Some("config.json"),
            ..Default::default()
        },
    );
    assert_eq!(ran.records().len(), 2);
    for r in ran.records() {
        assert_eq!(r.status, RunStatus::Ok);
        assert!(
            r.notes
                .iter()
                .any(|n| n.starts_with("config.json could not be written: ")),
            "{:?}",
            r.notes
        );
    }
}

/// The verdict is made with the request's size (input + output tokens): a KV-bound window
/// says how many requests the capacity holds.
#[test]
fn the_verdict_sizes_a_request_as_its_input_and_output_tokens() {
    let full = |s: u32| {
        format!(
            "[2026-09-24 01:47:{s:02}] Decode batch, #running-req: 4, #token: 4000, token usage: 0.99, cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 6"
        )
    };
    let ran = launch(
        &spec("  concurrency: 10\n", ""),
        Phase::Measure,
        Script {
            start_lines: vec![
                "[2026-09-24 01:47:00] max_total_num_tokens=4096, chunked_prefill_size=4096, max_prefill_tokens=16384, max_running_requests=1024, context_len=4096".into(),
                "The server is fired up and ready to roll!".into(),
            ],
            loads: vec![Load {
                lines: (50..56).map(full).collect(),
                ..Default::default()
            }],
            ..Default::default()
        },
    );
    let v = ran.records()[0].verdict.as_ref().unwrap();
    // 20 input + 20 output tokens per request.
    assert!(
        v.evidence
            .contains("4096 tokens ÷ 40 tokens per request ≈ 102 requests"),
        "{v:?}"
    );
}

/// No /metrics note against a log that shows no throughput (nothing to be 25 % off).
#[test]
fn metrics_against_a_log_at_zero_throughput_are_no_note() {
    let ran = launch(
        &spec("  concurrency: 2\n", ""),
        Phase::Measure,
        Script {
            loads: vec![Load {
                lines: (50..54)
                    .map(|s| decode_line(s).replace("100.00", "0.00"))
                    .collect(),
                scrapes: vec![scrape(0.0, 0.0), scrape(1.0, 100.0)],
                ..Default::default()
            }],
            ..Default::default()
        },
    );
    let r = &ran.records()[0];
    assert_eq!(
        r.server.as_ref().and_then(|s| s.gen_throughput_mean),
        Some(0.0)
    );
    assert!(
        !r.notes.iter().any(|n| n.contains("disagrees")),
        "{:?}",
        r.notes
    );
}
