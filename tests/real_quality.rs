//! The output-quality guard end to end on a real trained model (SmolLM2-135M-Instruct, made by
//! scripts/setup-cpu-sglang.sh) served by real SGLang 0.5.23 on CPU. Slow (three starts of the
//! trained model) and `#[ignore]`d like tests/real_sglang.rs; scripts/test.sh runs it, in its
//! own binary so that it runs beside real_sglang's tests rather than after them (the two cores
//! are not saturated by one real server's test: docs/development.md).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test may panic: that is its failure

mod common;
use common::real::*;
use common::*;
use std::time::Duration;

/// The rope base the breaking configuration gives SmolLM2-135M-Instruct, whose own is 100,000.
const BREAKING_ROPE_THETA: &str = "1000.0";

/// `count` (at most 81) different single-digit sums in SmolLM2's ChatML template, each with its known answer
/// (deterministic: the same questions on every run).
fn sum_prompts(count: u64) -> String {
    (0..count)
        .map(|i| {
            // 29 is prime to 81, so the first 81 pairs are all different.
            let k = (29 * i + 7) % 81;
            let (a, b) = (1 + k / 9, 1 + k % 9);
            let prompt = format!(
                "<|im_start|>user\nWhat is {a} + {b}? Answer with the number only.<|im_end|>\n<|im_start|>assistant\n"
            );
            format!(
                "{}\n",
                serde_json::json!({"prompt": prompt, "answer": (a + b).to_string()})
            )
        })
        .collect()
}

/// The quality guard on a real trained model (SmolLM2-135M-Instruct, `SGTUNE_TRAINED_MODEL`):
/// bf16 as the baseline (its own second pass is the floor), `dtype: float32`, which changes
/// only the numerics and must pass, and a wrong rope base, which must fail. Every pass answers
/// single-digit sums with known answers, so accuracy is measured and paired (McNemar).
///
/// The breaking configuration is `--json-model-override-args` with `rope_theta` 1,000 instead
/// of the model's 100,000: a real SGLang flag, and a real mistake (a config that loses its rope
/// base gets a default). The server starts and answers normally, but every position is rotated
/// at the wrong frequency, so the attention the model learned misreads the prompt: the numerics
/// are corrupted, not the request refused. A too small `context_length` or `max_total_tokens`
/// would instead reject or truncate the request (an error, not a worse answer), and a wrong
/// head or layer count fails to load the weights. Greedy outputs on CPU can differ run to run
/// at near ties, so the assertions are on verdicts and on margins no near tie reaches.
#[test]
#[ignore = "needs real SGLang on CPU: run scripts/test.sh"]
fn the_quality_guard_on_a_trained_model_passes_float32_and_fails_a_wrong_rope_base() {
    let env = real_env();
    let trained = std::env::var("SGTUNE_TRAINED_MODEL").unwrap_or_else(|_| {
        panic!("SGTUNE_TRAINED_MODEL is not set: run `scripts/test.sh` (or `. \"$(scripts/setup-cpu-sglang.sh)\"` first)")
    });
    let started = std::time::Instant::now();
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("trained");
    let count = 16;
    let prompts = dir.path().join("sums.jsonl");
    std::fs::write(&prompts, sum_prompts(count)).expect("write prompts");
    let body = format!(
        r#"configs:
  - {{name: baseline}}
  - {{name: fp32, dtype: float32}}
  - {{name: rope1k, json_model_override_args: '{{"rope_parameters": {{"rope_type": "default", "rope_theta": {BREAKING_ROPE_THETA}}}}}'}}
workload:
  concurrency: 2
  requests: 2
  warmup_requests: 0
  input_tokens: 16
  output_tokens: 4
objective:
  maximize: output_tok_s
quality:
  prompts: {{file: {prompts}}}
  count: {count}
  output_tokens: 32
  batch: {count}
"#,
        prompts = prompts.display()
    );
    // The trained model's start-up takes ~2.3 minutes on two cores, longer when they are shared.
    let text_spec = spec(&env, &tag, &body)
        .replace(
            &format!("model_path: {}\n", env.model),
            &format!("model_path: {trained}\n"),
        )
        .replace("ready_timeout_s: 480", "ready_timeout_s: 600")
        .replace(
            "    enable_metrics: true\n",
            "    enable_metrics: true\n    max_total_tokens: 4096\n",
        );
    assert!(text_spec.contains(&trained), "{text_spec}");
    let spec_path = dir.path().join("trained.yaml");
    std::fs::write(&spec_path, &text_spec).expect("write spec");
    let results = dir.path().join("results");
    let out = run_sweep(&spec_path, &results);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        wait_until(Duration::from_secs(10), || procs_with_tag(&tag).is_empty()),
        "server processes left"
    );
    let folder = only_results_folder(&results);
    let rows = read_rows(&folder.join("results.csv"));
    let row = |n: &str| rows.iter().find(|r| r["run_name"] == n).expect(n).clone();
    for n in ["baseline", "fp32", "rope1k"] {
        let r = row(n);
        eprintln!(
            "{n}: {} accuracy {} decisive {} diverged {}: {}",
            r["quality_verdict"],
            r["quality_accuracy"],
            r["quality_decisive_share"],
            r["quality_diverged_share"],
            r["quality_evidence"]
        );
    }
    // The model answers: it is a trained model, not the random-weight one.
    let base = row("baseline");
    assert_eq!(base["quality_verdict"], "baseline", "{base:?}");
    let base_acc: f64 = base["quality_accuracy"].parse().expect("baseline accuracy");
    // 10 of 16 measured; 6 leaves room for near ties that flip run to run.
    assert!(base_acc >= 0.375, "the baseline answers sums: {base:?}");
    // A numerics-only change passes against the baseline's own repeat.
    let fp32 = row("fp32");
    assert_eq!(fp32["quality_verdict"], "pass", "{fp32:?}");
    let fp32_acc: f64 = fp32["quality_accuracy"].parse().expect("fp32 accuracy");
    assert!(fp32_acc >= 0.375, "{fp32:?}");
    // A wrong rope base fails, decisively, with fewer right answers on the same questions.
    let broken = row("rope1k");
    assert_eq!(broken["quality_verdict"], "fail", "{broken:?}");
    let decisive: f64 = broken["quality_decisive_share"]
        .parse()
        .expect("decisive share");
    // 11 of 16 measured, at tokens 1-8; float32's were 0-1 of 16.
    assert!(decisive >= 0.25, "{broken:?}");
    let broken_acc: f64 = broken["quality_accuracy"].parse().expect("rope1k accuracy");
    assert!(broken_acc < base_acc, "{broken:?}");
    assert!(
        broken["quality_evidence"].contains("McNemar exact one-sided p"),
        "{broken:?}"
    );
    let md = std::fs::read_to_string(folder.join("decision.md")).expect("decision.md");
    assert!(md.contains("## Output quality"), "{md}");
    assert!(
        md.contains("1 failed the output-quality check") && md.contains("output quality fail"),
        "{md}"
    );
    eprintln!("wall time {:.0} s", started.elapsed().as_secs_f64());
    keep_when_asked(&folder, "/tmp/sgtune-quality-trained");
}
