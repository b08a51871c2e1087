//! The guided tune on real SGLang 0.5.23 on CPU (issues 42, 44), `#[ignore]`d like
//! tests/real_sglang.rs: the moves composed to an eligible confirmed leader, and the trade to a
//! TPOT bound (alone on the machine: scripts/lib/run-tests.sh). A binary of its own so that
//! scripts/lib/run-tests.sh can weigh the two real-server streams of its first step: it runs in
//! real_sglang's, which was the shorter one at the last full run (1,011 s against about 1,500).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test may panic: that is its failure

mod common;
use common::real::*;
use common::*;
use std::sync::Mutex;

/// One server at a time from this binary (each test starts its own; libtest runs a binary's
/// tests in parallel threads).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The guided tune in experiments/cpu-tune.yaml, as a user runs it: a start that breaks the
/// TTFT SLO for two reasons at once (a 2,048-token pool holds 6 of 32 concurrent requests of
/// 64 + 256 tokens, and a running cap of 16 would hold half even with a larger pool). The moves
/// compose in one launch (issue 42): more KV from the start's evidence, with the cap behind it
/// lifted too; the last launch confirms the leader on a fresh server, and the decision names
/// an eligible leader that is neither limit's.
#[test]
#[ignore = "needs real SGLang on CPU: run scripts/test.sh"]
fn the_guided_tune_composes_the_pool_and_the_cap_to_an_eligible_confirmed_leader() {
    let _env = real_env();
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run_sweep(&repo().join("experiments/cpu-tune.yaml"), dir.path());
    let log = text(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(0) | Some(1)),
        "{}\n{log}",
        text(&out.stdout)
    );
    let folder = only_results_folder(dir.path());
    let rows = read_rows(&folder.join("results.csv"));
    let steps: Vec<&str> = log
        .lines()
        .filter(|l| l.starts_with("tune: step "))
        .collect();
    let mut names: Vec<String> = Vec::new();
    for r in &rows {
        if !names.contains(&r["run_name"]) {
            names.push(r["run_name"].clone());
        }
    }
    // Within the budget of 3 launches, every launch a row.
    assert!(steps.len() <= 3, "{steps:#?}");
    assert_eq!(rows.len(), steps.len(), "{log}");
    assert_eq!(names[0], "mtt2048_mrr16_cps2048", "the start first");
    let row_of = |name: &str| {
        rows.iter()
            .find(|r| r["run_name"] == name)
            .unwrap_or_else(|| panic!("no row of {name}: {rows:?}"))
    };
    let start = row_of(&names[0]);
    assert_eq!(start["verdict"], "kv_cache_bound", "{start:?}");
    // Step 2: from the start's evidence, more KV with the cap behind it lifted in the same
    // launch (issue 42: the response model sizes the lift to the TTFT bound, and the pool's
    // usage says the pool holds 6 of the 32 offered).
    assert!(
        steps
            .get(1)
            .is_some_and(|l| l.contains(": kv_cache_bound (usage ")
                && l.contains("max_running_requests 16 → 32")
                && l.contains("more KV: max_total_tokens 2048 → 12288")
                && l.ends_with("→ mtt12288_mrr32_cps2048")),
        "{steps:#?}"
    );
    // There neither limit binds: the server's log says so.
    let both = row_of("mtt12288_mrr32_cps2048");
    assert_ne!(both["verdict"], "kv_cache_bound", "{both:?}");
    assert_ne!(both["verdict"], "queue_with_spare_kv", "{both:?}");
    // The last step confirms the leader: the same configuration on a fresh server, repeat 2.
    let last = steps.last().copied().unwrap_or_default();
    assert!(
        last.contains(": confirm the leader mtt12288_mrr32_cps"),
        "{steps:#?}"
    );
    let leader = last
        .rsplit_once(" → ")
        .map(|(_, n)| n.split(" (").next().unwrap_or(n).to_string())
        .unwrap_or_default();
    let repeats: Vec<&str> = rows
        .iter()
        .filter(|r| r["run_name"] == leader)
        .map(|r| r["repeat"].as_str())
        .collect();
    assert_eq!(repeats, vec!["1", "2"], "{leader}: {rows:?}");
    assert!(log.contains("tune: stop: "), "{log}");
    // The decision: that configuration leads, eligible, from both its launches.
    let d: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("decision.json")).unwrap())
            .unwrap();
    assert!(
        d["points"][0]["leader"]
            .as_str()
            .is_some_and(|l| l.starts_with("mtt12288_mrr32_cps")),
        "{d}"
    );
    let md = std::fs::read_to_string(folder.join("decision.md")).expect("decision.md");
    assert!(md.contains("## Tune path"), "{md}");
    assert!(md.contains("Chosen: confirm the leader"), "{md}");
}

/// A guided tune where the SLO asks for a trade (issue 42), on real SGLang: the start runs all
/// 32 requests at once (compute bound, no queue) and the TPOT bound is one that only a smaller
/// running batch meets. CPU speed varies by machine, so the test measures the start first (the
/// tune with one launch) and sets the bound where its own fit of the server's decode steps puts
/// a batch of 10: a cap of 8 meets it, 12 does not, by the fit. The tune then resumes that
/// folder with the bound (its start is the row measured, not launched again), as a user who
/// measured first and then wrote the SLO does. The tune must trade the cap
/// down (not stop with nothing eligible, as before issue 42) and launch an eligible point within
/// its 5 launches (issue 42 asks for 6). Seen here (2026-12-06): the start's TPOT p99 41 ms at
/// 32 running against a bound of 25.5; 16 (25.7 ms), 12 (28.5 ms: the machine's noise), 8
/// (22.2 ms, eligible) at the fourth launch.
#[test]
#[ignore = "needs real SGLang on CPU: run scripts/test.sh"]
fn a_tpot_bound_only_a_smaller_batch_meets_is_traded_for_within_five_launches() {
    use sgtune::tune::guide::StepSample;
    use sgtune::tune::guide::model;
    let _env = real_env();
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("tempdir");
    let text_of = std::fs::read_to_string(repo().join("experiments/cpu-tune-tpot.yaml"))
        .expect("the experiment");
    // The start alone.
    let one = text_of.replace("  launches: 5\n  confirm: 1", "  launches: 1\n  confirm: 0");
    assert_ne!(one, text_of, "the experiment's budget lines moved");
    let spec = dir.path().join("start.yaml");
    std::fs::write(&spec, one).expect("spec");
    let out = run_sweep(&spec, &dir.path().join("start"));
    assert!(
        matches!(out.status.code(), Some(0) | Some(1)),
        "{}",
        text(&out.stderr)
    );
    let folder = only_results_folder(&dir.path().join("start"));
    let rows = read_rows(&folder.join("results.csv"));
    let start = &rows[0];
    assert_eq!(start["status"], "ok", "{start:?}");
    let steps: Vec<StepSample> = start["decode_steps"]
        .split_whitespace()
        .filter_map(|b| {
            let f: Vec<&str> = b.split(':').collect();
            Some(StepSample {
                running: f.first()?.parse().ok()?,
                step_ms: f.get(1)?.parse().ok()?,
                lines: f.get(2)?.parse().ok()?,
                graph: None,
            })
        })
        .collect();
    let fit = model::fit(&steps.iter().collect::<Vec<_>>()).expect("a fit of the start's steps");
    assert!(
        fit.measured_slope() && fit.b > 0.0,
        "{fit:?} from {}",
        start["decode_steps"]
    );
    let ratio = num(start, "tpot_ms_p99") / fit.at(num(start, "running_req_mean"));
    let bound = ratio * fit.at(10.0);
    eprintln!(
        "start: tpot_ms_p99 {} at {} running; fit {fit:?}; bound {bound:.2} ms",
        start["tpot_ms_p99"], start["running_req_mean"]
    );
    // The tune, with that bound, resumed from the start's folder as a user who has just set
    // the SLO would: the start's row is the tune's step 1, so the start is not launched twice.
    let tuned = text_of.replace(
        "slo: {tpot_ms_p99: 30}",
        &format!("slo: {{tpot_ms_p99: {bound:.2}}}"),
    );
    assert_ne!(tuned, text_of, "the experiment's SLO line moved");
    let spec = dir.path().join("tune.yaml");
    std::fs::write(&spec, tuned).expect("spec");
    let out = run(sgtune().arg("run").arg(&spec).arg("--resume").arg(&folder));
    let log = text(&out.stderr);
    assert!(matches!(out.status.code(), Some(0) | Some(1)), "{log}");
    let rows = read_rows(&folder.join("results.csv"));
    assert!(rows.len() <= 5, "{rows:?}");
    assert_eq!(rows[0]["run_name"], "mrr32_cps2048", "{rows:?}");
    let steps: Vec<&str> = log
        .lines()
        .filter(|l| l.starts_with("tune: step "))
        .collect();
    // Step 2 trades: the running cap down to what the fit names, with the numbers. A start
    // whose evidence contradicts itself (disturbed by other work: client/server tok/s far from
    // 1, issue 51) is measured again first, and the trade is step 3.
    let trade = |l: &&&str| {
        l.contains("trade to the SLO's band")
            && l.contains("tpot_ms_p99 ≤")
            && l.contains("max_running_requests 32 → ")
    };
    let step = |n: usize| {
        steps
            .iter()
            .find(move |l| l.starts_with(&format!("tune: step {n}:")))
    };
    let remeasured = step(2).is_some_and(|l| {
        l.contains("the measurement is suspect: measured again") && l.ends_with("→ mrr32_cps2048")
    });
    assert!(
        step(2).is_some_and(|l| trade(&l)) || (remeasured && step(3).is_some_and(|l| trade(&l))),
        "{steps:#?}\n{log}"
    );
    // An eligible launch: the decision names a leader within the SLO.
    let d: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("decision.json")).unwrap())
            .unwrap();
    let leader = d["points"][0]["leader"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        !leader.is_empty() && leader != "mrr32_cps2048",
        "{d}\n{log}"
    );
    let lead_row = rows
        .iter()
        .find(|r| r["run_name"] == leader)
        .expect("the leader's row");
    assert!(num(lead_row, "tpot_ms_p99") <= bound, "{lead_row:?}");
    assert!(!log.contains("no step from the leader is left"), "{log}");
}
