//! The output-quality guard (`quality:`): a seeded simulation of its statistics over the pure
//! comparison code, and whole sweeps against the fake SGLang with a known corruption
//! (`--fake-derail`: a share of prompts derailed decisively; `--fake-near-tie`: near-tie flips
//! whenever requests share a batch).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test may panic: that is its failure

mod common;
use common::*;
use sgtune::load::prompts::{SplitMix64, unit};
use sgtune::load::quality::QualitySample;
use sgtune::plan::quality::Quality;
use sgtune::tune::quality::{QualityStatus, judge};
use std::path::Path;

/// One greedy output as the fake server makes it: token i is a hash of (prompt, branch, i);
/// each prompt has one nearly tied position (`flip` takes the other token there, a near tie),
/// and a derailed prompt takes, from a seeded position on, tokens the reference never
/// considered (decisive). After either, the output continues on its own branch.
fn output(prompt: u64, n: usize, flip: bool, derail: bool, run: &str, pass: u32) -> QualitySample {
    let h = |parts: &[u64]| {
        let mut r = SplitMix64::new(prompt.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let mut x = r.next_u64();
        for p in parts {
            x = SplitMix64::new(x ^ p).next_u64();
        }
        x
    };
    let tie_at = (h(&[1]) % n as u64) as usize;
    let derail_at = (h(&[2]) % n as u64) as usize;
    let mut branch = 0u64;
    let mut s = QualitySample {
        run_name: run.into(),
        launch: run.into(),
        pass,
        prompt_id: prompt,
        ..Default::default()
    };
    for i in 0..n {
        let (mut tok, mut alt) = (
            format!("t{}", h(&[3, branch, i as u64]) % 1000),
            format!("a{}", h(&[4, branch, i as u64]) % 1000),
        );
        let (mut own, mut other) = (-0.1, -3.0);
        if i == tie_at && branch == 0 {
            (own, other) = (-0.69, -0.70);
            if flip {
                std::mem::swap(&mut tok, &mut alt);
                branch = 1;
            }
        }
        if derail && i == derail_at && branch == 0 {
            (tok, alt, branch) = (format!("x{i}"), format!("y{i}"), 2);
            (own, other) = (-0.1, -4.0);
        }
        s.tokens.push(tok.clone());
        s.logprobs.push(Some(own));
        s.top.push(vec![(tok, own), (alt, other)]);
    }
    s
}

/// One seeded trial: the baseline's two passes, a configuration identical to it (its repeat)
/// and one that derails `p` of the prompts, every pass with near-tie flips at rate `q`.
fn trial(seed: u64, prompts: u64, p: f64, q: f64) -> (QualityStatus, QualityStatus) {
    let quality: Quality = serde_yaml::from_str("{}").expect("defaults");
    let mut rng = SplitMix64::new(seed);
    let mut samples = Vec::new();
    for (run, pass, derail_rate) in [
        ("base", 1, 0.0),
        ("base", 2, 0.0),
        ("repeat", 1, 0.0),
        ("derailed", 1, p),
    ] {
        for i in 0..prompts {
            let flip = unit(&mut rng) < q;
            let derail = unit(&mut rng) < derail_rate;
            samples.push(output(seed * 100_000 + i, 32, flip, derail, run, pass));
        }
    }
    let names: Vec<String> = ["base", "repeat", "derailed"].map(String::from).to_vec();
    let r = judge(&quality, "base", &samples, &names);
    let st = |n: &str| r.verdict(n).expect("verdict").status;
    (st("repeat"), st("derailed"))
}

/// The done-when of the guard, by seeded simulation over the same comparison and test the
/// sweep uses: 200 prompts, a configuration derailing 5% is rejected in ≥ 19 of 20 trials and
/// the baseline's repeat in ≤ 1 of 20, with 2% near-tie flips on every pass.
#[test]
fn five_percent_derails_are_caught_and_the_repeat_passes_in_seeded_trials() {
    let (mut repeat_rejected, mut derailed_rejected) = (0, 0);
    let trials = 20;
    for seed in 1..=trials {
        let (rep, der) = trial(seed, 200, 0.05, 0.02);
        repeat_rejected += usize::from(rep == QualityStatus::Fail);
        derailed_rejected += usize::from(der == QualityStatus::Fail);
    }
    eprintln!(
        "simulation, 200 prompts, q = 2%: 5% derailed rejected in {derailed_rejected}/{trials}, the baseline's repeat in {repeat_rejected}/{trials}"
    );
    assert!(derailed_rejected >= 19, "{derailed_rejected}/20");
    assert!(repeat_rejected <= 1, "{repeat_rejected}/20");
}

/// The same on 1,000 trials, for the figures in docs/benchmarks.md (about a minute in a debug
/// build: `cargo test --test quality_guard -- --ignored --nocapture`).
#[test]
#[ignore = "the 1,000-trial figures for docs/benchmarks.md"]
fn thousand_trials_for_the_benchmarks_page() {
    let (mut r2, mut d2) = (0, 0);
    for seed in 1000..2000 {
        let (rep, der) = trial(seed, 200, 0.05, 0.02);
        r2 += usize::from(rep == QualityStatus::Fail);
        d2 += usize::from(der == QualityStatus::Fail);
    }
    eprintln!("1,000 trials: derailed rejected {d2}, repeat rejected {r2}");
    assert!(d2 >= 950 && r2 <= 50, "{d2} {r2}");
}

fn spec(tag: &str, extra_args: &str) -> String {
    format!(
        r#"name: quality
server:
  command: [python3, "{fake}"]
  model_path: /nonexistent-model
  env:
    SGTUNE_TEST_TAG: {tag}
    FAKE_SGLANG_STARTUP_S: "0.2"
    FAKE_SGLANG_TOKEN_S: "0.001"
  args:
    served_model_name: fake
    fake_near_tie: 0.02{extra_args}
  ready_timeout_s: 20
  stop_timeout_s: 3
configs:
  - {{name: baseline}}
  - {{name: repeat}}
  - {{name: fp8, fake_derail: 0.3}}
workload:
  vocab_size: 100
  concurrency: 2
  requests: 6
  input_tokens: 8
  output_tokens: 4
  warmup_requests: 0
objective:
  maximize: output_tok_s
  noise: 0.05
quality:
  count: 100
  output_tokens: 12
  batch: 8
"#,
        fake = fake_server()
    )
}

fn check_folder(folder: &Path) {
    let rows = read_rows(&folder.join("results.csv"));
    let verdict = |n: &str| {
        rows.iter()
            .find(|r| r["run_name"] == n)
            .map(|r| r["quality_verdict"].clone())
            .unwrap_or_default()
    };
    assert_eq!(verdict("baseline"), "baseline", "{rows:?}");
    assert_eq!(verdict("repeat"), "pass", "{rows:?}");
    assert_eq!(verdict("fp8"), "fail", "{rows:?}");
    let fp8 = rows.iter().find(|r| r["run_name"] == "fp8").expect("fp8");
    assert!(
        fp8["quality_evidence"].starts_with("derails "),
        "{}",
        fp8["quality_evidence"]
    );
    // Each launch kept its outputs; the baseline's has two passes.
    let lines = |l: &str| {
        std::fs::read_to_string(folder.join("runs").join(l).join("quality.jsonl"))
            .expect("quality.jsonl")
            .lines()
            .count()
    };
    assert_eq!((lines("baseline"), lines("fp8")), (200, 100));
    let d: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(folder.join("decision.json")).expect("decision.json"),
    )
    .expect("json");
    let c = d["points"][0]["configurations"]
        .as_array()
        .expect("configs")
        .iter()
        .find(|c| c["run_name"] == "fp8")
        .expect("fp8 in the decision")
        .clone();
    assert_eq!(c["standing"], "quality_failed", "{c}");
    assert!(
        c["why"].as_str().is_some_and(|w| w.contains("derails")),
        "{c}"
    );
    assert_ne!(d["points"][0]["leader"], "fp8");
    let md = std::fs::read_to_string(folder.join("decision.md")).expect("decision.md");
    assert!(
        md.contains("## Output quality") && md.contains("the baseline's repeat"),
        "{md}"
    );
}

#[test]
fn a_derailing_configuration_is_not_eligible_and_the_repeat_is() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("quality");
    let p = dir.path().join("s.yaml");
    std::fs::write(&p, spec(&tag, "")).expect("write");
    let results = dir.path().join("results");
    let out = run_sweep(&p, &results);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    check_folder(&only_results_folder(&results));
}

#[test]
fn the_guard_judges_the_same_when_launches_run_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("quality-par");
    let p = dir.path().join("s.yaml");
    std::fs::write(&p, spec(&tag, "")).expect("write");
    let results = dir.path().join("results");
    let out = run(sgtune()
        .arg("run")
        .arg(&p)
        .arg("--results-dir")
        .arg(&results)
        .arg("--parallel")
        .arg("3"));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    check_folder(&only_results_folder(&results));
}

#[test]
fn validate_says_what_the_check_adds_and_refuses_an_unknown_baseline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("s.yaml");
    std::fs::write(&p, spec("v", "")).expect("write");
    let out = run(sgtune().arg("validate").arg(&p));
    let o = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{o}{}", text(&out.stderr));
    assert!(
        o.contains("quality:") && o.contains("(1200 tokens, 8 in flight)"),
        "{o}"
    );
    let bad = spec("v", "").replace("quality:\n", "quality:\n  baseline: nope\n");
    std::fs::write(&p, bad).expect("write");
    let out = run(sgtune().arg("validate").arg(&p));
    let e = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(e.contains("s.yaml:") && e.contains("`nope`"), "{e}");
}

/// `reproduce --decision` relaunches the leader and the runner-up, which answer the quality
/// prompts again and are judged against the original sweep's baseline outputs and floor (the
/// baseline itself is not relaunched here: it is the slowest).
#[test]
fn the_recheck_judges_quality_against_the_original_baseline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tag = unique_tag("quality-recheck");
    let p = dir.path().join("s.yaml");
    let yaml = spec(&tag, "").replace(
        "  - {name: baseline}\n  - {name: repeat}\n",
        "  - {name: baseline, fake_fault: slow_stream}\n  - {name: repeat}\n  - {name: other}\n",
    );
    std::fs::write(&p, yaml).expect("write");
    let results = dir.path().join("results");
    let out = run_sweep(&p, &results);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let folder = only_results_folder(&results);
    let again = dir.path().join("again");
    let out = run(sgtune()
        .arg("reproduce")
        .arg(&folder)
        .arg("--decision")
        .arg("--results-dir")
        .arg(&again));
    let t = text(&out.stdout);
    assert!(
        t.contains("re-checking the decision"),
        "{t}\n{}",
        text(&out.stderr)
    );
    let rows = read_rows(&only_results_folder(&again).join("results.csv"));
    assert_eq!(rows.len(), 4, "{rows:?}");
    for r in &rows {
        assert!(
            ["repeat", "other"].contains(&r["run_name"].as_str()),
            "{r:?}"
        );
        assert_eq!(r["quality_verdict"], "pass", "{r:?}");
        assert!(
            r["quality_evidence"].contains("the baseline's repeat: 0% decisive (0/100)"),
            "{r:?}"
        );
    }
}
