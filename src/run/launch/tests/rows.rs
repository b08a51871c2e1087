//! Rows made by the launch's own rules: a pre-flight attempt's standing, a search's probes,
//! the working set's note, and the rows of launches never started (unlaunched, pruned).

use super::*;
use crate::record::{ProbeResult, RunStatus};
use crate::server::failure::FailureKind;

const PREFLIGHT: &str = "sweep:\n  mem_fraction_static: [preflight]\nworkload:\n  requests: 10\n  input_tokens: 20\n  output_tokens: 20\n  concurrency: 2\nsearch:\n  preflight:\n    mem_fraction_static: {from: 0.5, to: 0.9, resolution: 0.05}\n    max_retractions: 1\n";

fn preflight(load: Load) -> RunRecord {
    let spec = crate::tune::testing::spec(PREFLIGHT);
    let ran = launch(
        &spec,
        Phase::Preflight,
        Script {
            loads: vec![load],
            ..Default::default()
        },
    );
    assert_eq!(ran.records().len(), 1);
    let r = ran.records()[0].clone();
    // Its summary says the same as its row.
    assert_eq!(ran.summary("summary.json").record, r);
    r
}

#[test]
fn a_preflight_attempt_that_survives_its_burst_passes() {
    let r = preflight(Load::default());
    assert_eq!(
        (r.status, r.probe),
        (RunStatus::Ok, Some(ProbeResult::Pass))
    );
    assert_eq!(r.phase, Phase::Preflight);
}

#[test]
fn a_preflight_attempt_with_no_success_fails() {
    let r = preflight(Load {
        completed: 0,
        failed: 2,
        first_error: Some("HTTP 503".into()),
        ..Default::default()
    });
    assert_eq!(r.status, RunStatus::Failed);
    assert_eq!(r.probe, Some(ProbeResult::Fail));
    assert_eq!(message(&r), "no request succeeded (2 failed): HTTP 503");
}

#[test]
fn a_preflight_burst_cut_with_nothing_failed_survives() {
    let r = preflight(Load {
        completed: 0,
        cut_off: 3,
        ..Default::default()
    });
    assert_eq!(
        (r.status, r.probe),
        (RunStatus::Ok, Some(ProbeResult::Pass))
    );
    assert!(r.failure_kind.is_none() && r.failure_message.is_none());
    assert!(r.notes.iter().any(|n| n
        == "pre-flight burst cut at burst_s with 3 request(s) still in flight and none failed: survived"));
}

#[test]
fn a_preflight_attempt_in_a_retraction_storm_fails() {
    let retract = |s: u32| {
        format!(
            "[2026-09-24 01:47:{s:02}] KV cache pool is full. Retract requests. #retracted_reqs: 5, #new_token_ratio: 0.1000 -> 0.6000"
        )
    };
    let mut lines: Vec<String> = (50..54).map(decode_line).collect();
    lines.extend([retract(51), retract(52)]);
    let r = preflight(Load {
        lines,
        ..Default::default()
    });
    assert_eq!(r.status, RunStatus::Failed);
    assert_eq!(r.failure_kind, Some(FailureKind::LoadFailed));
    assert_eq!(r.probe, Some(ProbeResult::Fail));
    assert!(
        message(&r).starts_with("retraction storm under the burst: "),
        "{}",
        message(&r)
    );
    assert!(message(&r).ends_with("(search.preflight.max_retractions is 1)"));
}

#[test]
fn a_preflight_launch_that_never_starts_fails_its_attempt() {
    let spec = crate::tune::testing::spec(PREFLIGHT);
    let ran = launch(
        &spec,
        Phase::Preflight,
        Script {
            start_lines: vec!["torch.OutOfMemoryError: CUDA out of memory.".into()],
            ready: Ready::Fails(Some(1)),
            ..Default::default()
        },
    );
    let r = &ran.records()[0];
    assert_eq!(r.failure_kind, Some(FailureKind::Oom));
    assert_eq!(
        r.probe,
        Some(ProbeResult::Fail),
        "fails unless its burst shows otherwise"
    );
}

const SEARCH: &str = "objective:\n  maximize: output_tok_s\n  slo: {ttft_ms_p99: 250}\n  noise: 0.05\nsearch:\n  max_load:\n    concurrency: {from: 1, to: 32}\n    repeats: 2\n";

#[test]
fn a_search_probes_until_done_and_each_probe_is_a_judged_row() {
    let spec = spec("  concurrency: 1\n", SEARCH);
    let ran = launch(&spec, Phase::Probe, Script::default());
    let rows = ran.records();
    let drives = ran.calls.iter().filter(|c| c.starts_with("drive")).count();
    assert!(drives > 1, "{:?}", ran.calls);
    assert_eq!(rows.len(), drives, "one row per probe made");
    for r in rows {
        assert_eq!(r.phase, Phase::Probe);
        assert!(r.probe.is_some(), "every probe row is judged");
        let sfx = crate::run::suffix(&spec, crate::run::Measurement::of(r));
        assert!(ran.files().contains(&format!("summary{sfx}.json")));
    }
    assert_eq!(
        ran.calls.iter().filter(|c| c.starts_with("flush")).count(),
        drives - 1
    );
}

#[test]
fn a_search_whose_server_dies_stops_probing_with_a_failed_probe() {
    let spec = spec("  concurrency: 1\n", SEARCH);
    let ran = launch(
        &spec,
        Phase::Probe,
        Script {
            loads: vec![
                Load::default(),
                Load {
                    stop: StopReason::ServerDied("exit code 1".into()),
                    ..Default::default()
                },
                Load::default(),
            ],
            ..Default::default()
        },
    );
    let rows = ran.records();
    assert_eq!(
        rows.len(),
        2,
        "no probe after the death, and none left unmeasured"
    );
    assert_eq!(rows[1].failure_kind, Some(FailureKind::LoadFailed));
    assert_eq!(rows[1].probe, Some(ProbeResult::Fail));
}

#[test]
fn the_working_set_is_sized_from_the_servers_capacity_and_noted() {
    let spec = spec(
        "  concurrency: 2\n  shared_prefix: {prefix_tokens: 256, working_set: 1.5}\n",
        "",
    );
    let sized = launch(
        &spec,
        Phase::Measure,
        Script {
            server_info: Some(serde_json::json!({"max_total_num_tokens": 4096})),
            ..Default::default()
        },
    );
    let r = &sized.records()[0];
    assert_eq!(r.status, RunStatus::Ok);
    assert!(
        r.notes.iter().any(|n| n.starts_with(
            "working set 1.5 x 4096 tokens (the first configuration's KV capacity): "
        )),
        "{:?}",
        r.notes
    );
    let unsized_ = launch(
        &spec,
        Phase::Measure,
        Script {
            start_lines: vec!["The server is fired up and ready to roll!".into()],
            ..Default::default()
        },
    );
    assert!(unsized_.records()[0].notes.iter().any(|n| n
        == "working set not sized: the server reported no KV capacity (max_total_num_tokens); one shared prefix used"));
}

fn planned(spec: &SweepSpec) -> (Vec<String>, Launch) {
    let plan = crate::plan::expand::expand(spec);
    let l = crate::tune::work::plan_launches(spec, &plan, &|_, _| false, &|_| Vec::new()).remove(0);
    (plan.param_keys, l)
}

fn detached_ctx<'a>(
    spec: &'a SweepSpec,
    keys: &'a [String],
    cancel: &'a CancellationToken,
    groups: &'a signals::Groups,
    basis: &'a std::sync::Mutex<Option<u64>>,
) -> RunContext<'a> {
    RunContext {
        spec,
        param_keys: keys,
        vocab_size: 1000,
        dataset: None,
        cancel,
        working_set_basis: basis,
        groups,
        slot: None,
        deadline: None,
    }
}

#[test]
fn an_unlaunched_launch_fails_every_measurement_with_the_given_kind() {
    let spec = spec(
        "  concurrency: [2, 4]\n",
        "repeats: 2\nreuse_server: true\n",
    );
    let (keys, l) = planned(&spec);
    let (cancel, groups, basis) = (
        CancellationToken::new(),
        signals::Groups::default(),
        std::sync::Mutex::new(None),
    );
    let ctx = detached_ctx(&spec, &keys, &cancel, &groups, &basis);
    let rows = super::super::unlaunched(&ctx, &l, FailureKind::PreflightFailed, "no safe value");
    assert_eq!(rows.len(), 4);
    let made: Vec<_> = rows.iter().map(crate::run::Measurement::of).collect();
    assert_eq!(made, l.measurements);
    for r in &rows {
        assert_eq!(r.status, RunStatus::Failed);
        assert_eq!(r.failure_kind, Some(FailureKind::PreflightFailed));
        assert_eq!(message(r), "no safe value");
        assert_eq!(r.run_name, "a");
        assert!(!r.started_at.is_empty() && !r.finished_at.is_empty());
        assert!(r.params.iter().all(|(_, v)| v.is_some()));
    }
}

#[test]
fn a_pruned_launch_is_a_pruned_row_per_measurement_with_its_evidence() {
    let spec = spec("  concurrency: [2, 4]\n", "");
    let (keys, l) = planned(&spec);
    let (cancel, groups, basis) = (
        CancellationToken::new(),
        signals::Groups::default(),
        std::sync::Mutex::new(None),
    );
    let ctx = detached_ctx(&spec, &keys, &cancel, &groups, &basis);
    let rows = super::super::pruned(&ctx, &l, "below the median after round 1");
    assert_eq!(rows.len(), 2);
    for r in &rows {
        assert_eq!(r.status, RunStatus::Pruned);
        assert!(r.failure_kind.is_none());
        assert_eq!(message(r), "below the median after round 1");
        assert!(!r.finished_at.is_empty());
    }
}
