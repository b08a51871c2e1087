//! The decision end to end (`decide`, `decide_rows`: the rule and its words together, as
//! decision.json and decision.md carry them), and the simulations that hold the rule to its
//! error rates. The words alone are tested in `words.rs`.

// The whole file is test code (mod.rs includes it under cfg(test)), which tests/layers.rs
// leaves out: the test below renders decision.md (report/, a later stage) from a decision.
use super::*;
use crate::load::prompts::{SplitMix64, unit};
use crate::plan::spec::Goal;
use crate::report::decision::render_md;
use crate::tune::stats::t975;

pub(super) fn objective(goal: Goal, metric: &str, slo: &[(&str, Bound, f64)]) -> Objective {
    crate::plan::spec::Objective::for_test(goal, metric, slo)
}

pub(super) fn row(name: &str, repeat: u64, cells: &[(&str, &str)]) -> Row {
    let mut m: BTreeMap<String, String> = [
        ("run_name", name.to_string()),
        ("status", "ok".to_string()),
        ("concurrency", "8".to_string()),
        ("request_rate", String::new()),
        ("repeat", repeat.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    for (k, v) in cells {
        m.insert(k.to_string(), v.to_string());
    }
    Row::from_cells(m)
}

/// Rows of configurations with these objective values (one row per repeat).
fn rows_of(configs: &[(&str, &[f64])]) -> Vec<Row> {
    configs
        .iter()
        .flat_map(|(name, values)| {
            values
                .iter()
                .enumerate()
                .map(|(i, v)| row(name, i as u64 + 1, &[("output_tok_s", &v.to_string())]))
        })
        .collect()
}

fn decide_rows(o: &Objective, rows: &[Row]) -> Decision {
    decide("s", o, rows, &BTreeMap::new(), Cost::default())
}

#[test]
fn t_quantiles() {
    assert!((t975(1.0) - 12.706).abs() < 5e-4);
    assert!((t975(2.0) - 4.303).abs() < 5e-4);
    assert!((t975(10.0) - 2.228).abs() < 5e-4);
    assert!((t975(f64::INFINITY) - 1.960).abs() < 5e-4);
    // Fractional degrees of freedom: between the neighbours.
    let t = t975(3.5);
    assert!(t < 3.182 && t > 2.776, "{t}");
    assert!(t975(21.0) > 2.074 && t975(21.0) < 2.086);
    assert!((t975(0.5) - 12.706).abs() < 5e-4);
    assert!(t975(500.0) > 1.960 && t975(500.0) < 1.980);
}

#[test]
fn a_clear_winner_is_claimed_with_its_margin() {
    let o = objective(Goal::Maximize, "output_tok_s", &[]);
    let d = decide_rows(
        &o,
        &rows_of(&[
            ("slow", &[1000.0, 1010.0, 990.0]),
            ("fast", &[1200.0, 1190.0, 1210.0]),
        ]),
    );
    let p = &d.points[0];
    assert_eq!(p.outcome, Outcome::Winner);
    assert_eq!(p.winner.as_deref(), Some("fast"));
    assert_eq!(p.runner_up.as_deref(), Some("slow"));
    let m = p.margin.as_ref().expect("a margin");
    assert!((m.delta - 200.0).abs() < 1e-9);
    // sd 10 on both sides: CVs 1% and 0.83%, pooled over 2 + 2 degrees of freedom, 3.87
    // effective (the CVs differ), so 3; the pooled standard error
    // CV·√(1200²/3 + 1000²/3) = 8.30 beats their own √(200/3) = 8.165.
    assert_eq!((m.basis.as_str(), m.df), ("pooled", Some(3.0)));
    let cv = ((1e-4 + (10.0f64 / 1200.0).powi(2)) / 2.0).sqrt();
    let se = cv * (1200.0f64.powi(2) / 3.0 + 1000.0f64.powi(2) / 3.0).sqrt();
    assert!((m.half_width() - t975(3.0) * se).abs() < 1e-6, "{m:?}");
    let noise = p.noise.expect("the sweep's noise");
    assert_eq!((noise.df, noise.effective_df, noise.groups), (4, 3, 2));
    assert!((noise.cv - cv).abs() < 1e-12);
    assert_eq!(p.configurations[0].run_name, "fast");
    assert_eq!(p.configurations[0].rank, Some(1));
    assert_eq!(
        p.configurations[0].why,
        "best mean, separated from every other eligible configuration"
    );
    assert!(
        p.configurations[1].why
            == "behind the winner by 200 ± 26.4 (20.0%; 95% CI, pooled noise, 3 df)",
        "{}",
        p.configurations[1].why
    );
    assert!(
            d.summary.contains(
                "fast wins: mean output_tok_s 1200 against the runner-up slow's 1000, better by 200 ± 26.4"
            ),
            "{}",
            d.summary
        );
    assert!(
            render_md(&d).contains(
                "**Winner: fast**: ahead of the runner-up slow by 200 ± 26.4 (20.0%; 95% CI, pooled noise, 3 df)."
            ),
            "{}",
            render_md(&d)
        );
    let e = p.configurations[0].estimate.as_ref().expect("estimate");
    let ci = e.ci.expect("an interval");
    // mean 1200, sd 10, n 3: ± t(2) × 10 / √3.
    assert!((ci.high - 1200.0 - t975(2.0) * 10.0 / 3f64.sqrt()).abs() < 1e-6);
    assert!((1200.0 - ci.low - t975(2.0) * 10.0 / 3f64.sqrt()).abs() < 1e-6);
}

#[test]
fn overlapping_repeats_are_a_tie_and_say_so() {
    let o = objective(Goal::Maximize, "output_tok_s", &[]);
    let d = decide_rows(
        &o,
        &rows_of(&[
            ("a", &[1000.0, 1100.0, 900.0]),
            ("b", &[1050.0, 950.0, 1150.0]),
        ]),
    );
    let p = &d.points[0];
    assert_eq!(p.outcome, Outcome::TieWithinNoise);
    assert_eq!(p.winner, None);
    assert_eq!(p.leader.as_deref(), Some("b"));
    assert_eq!(p.tied_with, vec!["a".to_string()]);
    assert!(d.summary.contains("tie within noise"), "{}", d.summary);
    let md = render_md(&d);
    assert!(
            md.contains("**Tie within noise** between b and a: no winner is claimed (b leads: ahead of the runner-up a by 50.0 ± 260 (5.0%; "),
            "{md}"
        );
    assert!(md.contains("## Rule"), "{md}");
}

#[test]
fn minimize_ranks_the_lowest_first() {
    let o = objective(Goal::Minimize, "ttft_ms_p99", &[]);
    let rows: Vec<Row> = [("a", [50.0, 51.0]), ("b", [80.0, 81.0])]
        .iter()
        .flat_map(|(n, v)| {
            v.iter()
                .enumerate()
                .map(move |(i, x)| row(n, i as u64 + 1, &[("ttft_ms_p99", &x.to_string())]))
        })
        .collect();
    let p = &decide_rows(&o, &rows).points[0];
    assert_eq!(p.winner.as_deref(), Some("a"));
    assert!(p.margin.as_ref().is_some_and(|m| m.delta > 0.0));
}

#[test]
fn one_repeat_names_a_leader_never_a_winner() {
    let o = objective(Goal::Maximize, "output_tok_s", &[]);
    let d = decide_rows(&o, &rows_of(&[("a", &[1000.0]), ("b", &[1040.0])]));
    let p = &d.points[0];
    assert_eq!(p.outcome, Outcome::TieWithinNoise, "4% < 5%");
    assert_eq!(p.noise, None);
    let m = p.margin.as_ref().expect("margin");
    assert_eq!((m.basis.as_str(), m.ci), ("threshold", None));
    assert!(d.rule.contains("When the sweep measured no noise"));
    assert_eq!(
        p.configurations[1].why,
        "within noise of the leader: behind by 40.0 (4.0%; no noise measured: no interval), which does not separate from zero"
    );
    // The independent check's case: four configurations equal by construction that
    // spread 26% on one repeat each, the best 5.05% ahead of the next. No noise was
    // measured, so no winner, however the margin compares with objective.noise.
    let d = decide_rows(
        &o,
        &rows_of(&[
            ("w", &[990.0]),
            ("x", &[1040.0]),
            ("y", &[900.0]),
            ("z", &[825.0]),
        ]),
    );
    let p = &d.points[0];
    assert_eq!(p.outcome, Outcome::Unconfirmed);
    assert_eq!(
        (p.winner.as_deref(), p.leader.as_deref()),
        (None, Some("x"))
    );
    assert_eq!(p.configurations[0].standing, Standing::Leader);
    assert_eq!(
        p.configurations[0].why,
        "best mean, ahead of every other eligible configuration by more than 5.0%, but the sweep measured no noise: not claimed as the winner"
    );
    assert!(
        p.configurations[1..]
            .iter()
            .all(|c| c.standing == Standing::Behind),
        "{p:#?}"
    );
    assert_eq!(
        p.configurations[1].why,
        "behind the leader by 50.0 (5.1%; no noise measured: no interval)"
    );
    assert!(
            d.summary.contains("At concurrency 8, x leads: mean output_tok_s 1040 against the runner-up w's 990, better by 50.0 (5.1%; no noise measured: no interval); it is not claimed as the winner, as the sweep measured no noise (every configuration ran once). To confirm it, repeat (`repeats: 2` or more, or `repeats: auto`) or re-check with `sgtune reproduce DIR --decision`."),
            "{}",
            d.summary
        );
    let md = render_md(&d);
    for part in [
        "**Leader: x** (not claimed as the winner): ahead of the runner-up w by 50.0",
        "`sgtune reproduce DIR --decision`",
        "Noise: not measured: no configuration × load point of the sweep has two or more repeats",
        "[one repeat]",
    ] {
        assert!(md.contains(part), "{part:?} in\n{md}");
    }
    assert!(!md.contains("Winner"), "{md}");
    // One eligible configuration needs no comparison: it wins as the only one.
    let d = decide_rows(&o, &rows_of(&[("only", &[1000.0])]));
    assert_eq!(d.points[0].outcome, Outcome::Winner);
}

/// The real SGLang sweep (experiments/cpu-tuning.yaml): the 4,096-token pool carried 583
/// and 530 tok/s, the 1,024-token pool 296 and 298. The pool's nominal 2 degrees of
/// freedom (t = 4.30) once claimed the winner; but the two spreads differ 14-fold (CV
/// 6.7% and 0.5%), so what the pool knows of the noisier one is its own single degree of
/// freedom: 1 effective (t = 12.7), a tie, and the decision asks for more repeats. The
/// simulation behind this (issue 24): two equal configurations at 2% and 20% noise, 2
/// repeats each, got 11.6% false winners from the nominal df. A third repeat alike
/// separates them.
#[test]
fn two_repeats_of_unequal_spread_are_a_tie_a_third_separates() {
    let o = objective(Goal::Maximize, "output_tok_s", &[]);
    let rows = rows_of(&[("mtt1024", &[296.0, 298.0]), ("mtt4096", &[583.0, 530.0])]);
    let d = decide_rows(&o, &rows);
    let p = &d.points[0];
    assert_eq!(p.outcome, Outcome::TieWithinNoise, "{}", d.summary);
    assert_eq!(p.leader.as_deref(), Some("mtt4096"));
    let m = p.margin.as_ref().expect("margin");
    // The pair's own spread (√(37.48²/2 + 1.414²/2) = 26.5) is above the pooled CV's
    // (4.77% × √(556.5²/2 + 297²/2) = 21.3): it sets the width, at 1 effective df.
    assert_eq!((m.basis.as_str(), m.df), ("own", Some(1.0)));
    let own = (53.0f64.powi(2) / 2.0 / 2.0 + 2.0f64.powi(2) / 2.0 / 2.0).sqrt();
    assert!((m.half_width() - t975(1.0) * own).abs() < 1e-6, "{m:?}");
    assert!(
        d.summary.contains(
            "its margin over the runner-up being 260 ± 337 (87.4%; 95% CI, own spread, 1 df)"
        ),
        "{}",
        d.summary
    );
    let noise = p.noise.expect("noise");
    assert_eq!((noise.df, noise.effective_df), (2, 1));
    // A third repeat of each, alike: 4 nominal df, 3 effective, and the margin separates.
    let rows = rows_of(&[
        ("mtt1024", &[296.0, 298.0, 297.0]),
        ("mtt4096", &[583.0, 530.0, 560.0]),
    ]);
    let d = decide_rows(&o, &rows);
    let p = &d.points[0];
    assert_eq!(p.outcome, Outcome::Winner, "{}", d.summary);
    assert_eq!(p.winner.as_deref(), Some("mtt4096"));
    // A re-check decides its own rows by the same rule.
    let refs: Vec<&Row> = rows.iter().collect();
    let again = super::decide_rows(&o, "re-check", &refs, &BTreeMap::new());
    assert_eq!(again.outcome, Outcome::Winner);
    assert_eq!(again.noise, p.noise);
}

/// The leader is compared with every eligible configuration, not only the runner-up: here
/// the runner-up (3 repeats) separates, but the third, one repeat whose mean is lower, has
/// a wider interval and does not, so there is no winner.
#[test]
fn every_eligible_configuration_is_compared_with_the_leader() {
    let o = objective(Goal::Maximize, "output_tok_s", &[]);
    let d = decide_rows(
        &o,
        &rows_of(&[
            ("third", &[970.0]),
            ("leader", &[995.0, 1005.0, 1015.0]),
            ("runner-up", &[965.0, 975.0, 985.0]),
        ]),
    );
    let p = &d.points[0];
    let standing = |n: &str| {
        p.configurations
            .iter()
            .find(|c| c.run_name == n)
            .map(|c| (c.standing, c.rank, c.margin.as_ref().map(|m| m.separated)))
    };
    assert_eq!(
        standing("runner-up"),
        Some((Standing::Behind, Some(2), Some(true)))
    );
    assert_eq!(
        standing("third"),
        Some((Standing::WithinNoise, Some(3), Some(false)))
    );
    assert_eq!(p.outcome, Outcome::TieWithinNoise);
    assert_eq!(p.tied_with, vec!["third".to_string()]);
    assert_eq!(p.runner_up.as_deref(), Some("runner-up"));
}

#[test]
fn configurations_measured_alike_measure_the_noise() {
    let o = objective(Goal::Maximize, "output_tok_s", &[]);
    let with_id = |name: &str, id: &str, v: f64| {
        row(name, 1, &[("output_tok_s", &v.to_string()), ("run_id", id)])
    };
    // a and b are one server command under two names: one repeat each, yet two
    // measurements of the same thing, so the sweep has a noise (1 df) and c can win.
    let rows = vec![
        with_id("a", "id-same", 1000.0),
        with_id("b", "id-same", 1010.0),
        with_id("c", "id-other", 1300.0),
    ];
    let d = decide_rows(&o, &rows);
    let p = &d.points[0];
    let noise = p.noise.expect("measured alike");
    assert_eq!((noise.df, noise.groups), (1, 1));
    assert_eq!(p.outcome, Outcome::Winner, "{}", d.summary);
    // Under different ids the same numbers measure nothing: a leader only.
    let rows = vec![
        with_id("a", "id-a", 1000.0),
        with_id("b", "id-b", 1010.0),
        with_id("c", "id-c", 1300.0),
    ];
    assert_eq!(
        decide_rows(&o, &rows).points[0].outcome,
        Outcome::Unconfirmed
    );
}

#[test]
fn the_pool_spans_load_points_and_leaves_out_failures_and_preflight_bursts() {
    let o = objective(Goal::Maximize, "output_tok_s", &[]);
    let mut rows = rows_of(&[("a", &[1000.0]), ("b", &[1200.0])]);
    // Another load point, repeated: its spread is the noise the first point is judged by.
    for r in rows_of(&[("a", &[500.0, 510.0, 490.0])]) {
        let mut r = r;
        r.set_cell("concurrency", "64");
        rows.push(r);
    }
    // Neither a failed repeat nor a pre-flight attempt is noise.
    let mut failed = row("b", 2, &[("output_tok_s", "9000")]);
    failed.set_cell("concurrency", "64");
    failed.set_cell("status", "failed");
    rows.push(failed);
    let mut burst = row("b", 1, &[("output_tok_s", "1"), ("phase", "preflight")]);
    burst.set_cell("concurrency", "64");
    rows.push(burst);
    rows.push(row(
        "b",
        2,
        &[("output_tok_s", "7000"), ("phase", "preflight")],
    ));
    let d = decide_rows(&o, &rows);
    let p = &d.points[0];
    let noise = p.noise.expect("pooled from concurrency 64");
    assert_eq!((noise.df, noise.groups), (2, 1));
    assert!((noise.cv - 0.02).abs() < 1e-12, "{noise:?}");
    assert_eq!(p.outcome, Outcome::Winner, "{}", d.summary);
    assert_eq!(p.winner.as_deref(), Some("b"));
    // The same noise judges every point.
    assert_eq!(d.points[1].noise, p.noise);
    assert!(
            render_md(&d).contains("Noise: output_tok_s varies by 2.0% run to run (coefficient of variation pooled over 1 configuration × load point group(s) with repeats, 2 degrees of freedom)."),
            "{}",
            render_md(&d)
        );
}

/// The case the quality guard's pruning test met on a busy machine: a derailing configuration
/// (its outputs vary in length, so its speed varies 11%) dominated the pooled noise, its
/// degrees of freedom fell to one, and a configuration 4x slower than the leader was not
/// separated from it. Outputs that failed the guard are not the measurement's noise.
#[test]
fn outputs_that_failed_the_quality_guard_are_not_the_noise() {
    let o = objective(Goal::Maximize, "output_tok_s", &[]);
    let mut rows = rows_of(&[
        ("baseline", &[395.0, 398.0, 393.0, 396.0]),
        ("slow", &[100.0, 100.5]),
    ]);
    let derailing = rows_of(&[("fp8", &[560.0, 500.0])]);
    for mut r in derailing {
        r.set_cell("quality_verdict", "fail");
        r.set_cell("quality_evidence", "derails 30%");
        rows.push(r);
    }
    let d = decide_rows(&o, &rows);
    let p = &d.points[0];
    let noise = p.noise.expect("pooled from baseline and slow");
    assert_eq!((noise.df, noise.groups), (4, 2), "{noise:?}");
    assert!(noise.cv < 0.01, "{noise:?}");
    assert_eq!(p.winner.as_deref(), Some("baseline"), "{}", d.summary);
    // The same rows, fp8 passing the guard: its spread is noise again, and it leads.
    let mut passing = rows.clone();
    for r in passing.iter_mut().filter(|r| r.run_name() == "fp8") {
        r.set_cell("quality_verdict", "pass");
    }
    let noise = decide_rows(&o, &passing).points[0]
        .noise
        .expect("pooled over three");
    assert_eq!((noise.df, noise.groups), (5, 3), "{noise:?}");
    assert!(noise.cv > 0.03, "{noise:?}");
}

#[test]
fn slo_failures_and_verdicts_say_why_each_lost() {
    let o = objective(
        Goal::Maximize,
        "output_tok_s",
        &[("ttft_ms_p99", Bound::AtMost, 2000.0)],
    );
    let ok = |n: &str, r: u64, tok: &str, ttft: &str| {
        row(
            n,
            r,
            &[
                ("output_tok_s", tok),
                ("ttft_ms_p99", ttft),
                ("verdict", "kv_cache_bound"),
                ("verdict_evidence", "running 56 of 150, queue 94"),
            ],
        )
    };
    let mut failed = row("oom", 1, &[]);
    failed.set_cell("status", "failed");
    failed.set_cell("failure_kind", "oom");
    failed.set_cell("failure_message", "Not enough memory");
    let rows = vec![
        ok("fast-but-slow-ttft", 1, "2000", "2400"),
        ok("fast-but-slow-ttft", 2, "2010", "1900"),
        ok("fast-but-slow-ttft", 3, "1990", "2450"),
        ok("steady", 1, "1500", "900"),
        ok("steady", 2, "1510", "950"),
        ok("steady", 3, "1490", "3000"),
        failed,
    ];
    let d = decide_rows(&o, &rows);
    let p = &d.points[0];
    // One repeat's p99 over the bound does not disqualify: the median holds.
    assert_eq!(p.winner.as_deref(), Some("steady"));
    assert!(p.configurations[0].slo[0].holds);
    let why = |n: &str| {
        p.configurations
            .iter()
            .find(|c| c.run_name == n)
            .map(|c| (c.standing, c.why.clone()))
            .expect("present")
    };
    assert_eq!(
        why("fast-but-slow-ttft"),
        (
            Standing::SloNotMet,
            "SLO violated: ttft_ms_p99 median 2400 > 2000".to_string()
        )
    );
    assert_eq!(
        why("oom"),
        (
            Standing::Failed,
            "failed in 1 of 1 repeats (oom): Not enough memory".to_string()
        )
    );
    assert_eq!(why("steady").1, "the only eligible configuration");
    let md = render_md(&d);
    assert!(
        md.contains("- steady: kv_cache_bound: running 56 of 150, queue 94"),
        "{md}"
    );
    assert!(
        d.summary.contains("1 violated the SLO, 1 failed"),
        "{}",
        d.summary
    );
    // A bound whose column is empty cannot be shown to hold.
    let o = objective(
        Goal::Maximize,
        "output_tok_s",
        &[("goodput_share", Bound::AtLeast, 0.9)],
    );
    let p = &decide_rows(&o, &rows_of(&[("a", &[1.0])])).points[0];
    assert_eq!(p.outcome, Outcome::NoEligibleConfiguration);
    assert!(
        p.configurations[0]
            .why
            .contains("goodput_share has no value")
    );
}

#[test]
fn every_load_point_is_decided_on_its_own() {
    let o = objective(Goal::Maximize, "output_tok_s", &[]);
    let mut rows = rows_of(&[("a", &[100.0, 101.0]), ("b", &[200.0, 201.0])]);
    for r in rows_of(&[("a", &[300.0, 301.0]), ("b", &[150.0, 151.0])]) {
        let mut r = r;
        r.set_cell("concurrency", "64");
        rows.push(r);
    }
    let mut commands = BTreeMap::new();
    commands.insert(
        "a".to_string(),
        "python -m sglang.launch_server --a".to_string(),
    );
    let d = decide("s", &o, &rows, &commands, Cost::default());
    assert_eq!(d.points.len(), 2);
    assert_eq!(d.points[0].winner.as_deref(), Some("b"));
    assert_eq!(d.points[0].command, None);
    assert_eq!(d.points[1].label, "concurrency 64");
    assert_eq!(d.points[1].winner.as_deref(), Some("a"));
    assert_eq!(
        d.points[1].command.as_deref(),
        Some("python -m sglang.launch_server --a")
    );
    assert!(render_md(&d).contains("```sh\npython -m sglang.launch_server --a\n```"));
    let json = serde_json::to_value(&d).expect("serializes");
    assert_eq!(json["points"][1]["winner"], "a");
    assert_eq!(json["points"][1]["outcome"], "winner");
}

#[test]
fn cost_sums_the_launches() {
    let mut m = Manifest::default();
    for (k, a, b) in [
        ("x", "2026-01-01T00:00:00Z", "2026-01-01T00:30:00Z"),
        ("y", "2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z"),
        ("z", "", ""),
    ] {
        m.launches.insert(
            k.into(),
            crate::record::provenance::LaunchRecord {
                started_at: a.into(),
                finished_at: b.into(),
                ..Default::default()
            },
        );
    }
    let c = cost(&m);
    assert_eq!((c.launches, c.launches_without_times), (3, 1));
    assert!((c.server_hours - 1.5).abs() < 1e-9);
}

#[test]
fn the_pre_flight_summary_is_the_highest_pass_and_the_failure_above_it() {
    let attempt = |v: &str, probe: &str, kind: &str| {
        row(
            "pf",
            1,
            &[
                ("phase", "preflight"),
                ("param_mem_fraction_static", v),
                ("probe", probe),
                ("failure_kind", kind),
                ("failure_message", if kind.is_empty() { "" } else { "boom" }),
            ],
        )
    };
    let rows = vec![
        attempt("0.95", "fail", "oom"),
        attempt("0.80", "pass", ""),
        attempt("0.91", "fail", "crashed"),
        attempt("0.87", "pass", ""),
        attempt("0.89", "fail", "oom"),
        attempt("0.70", "fail", "oom"), // below the value found: not its margin
        attempt("0.87", "fail", "crashed"), // at it (a retry that failed): not above it
        attempt("", "pass", ""),        // no value: not an attempt
        row("measured", 1, &[("param_mem_fraction_static", "0.99")]),
    ];
    let p = preflight_summary(&rows, "mem_fraction_static").expect("a pre-flight");
    assert_eq!(p.knob, "mem_fraction_static");
    assert_eq!((p.found, p.next_up), (Some(0.87), Some(0.89)));
    assert_eq!(p.next_up_failure.as_deref(), Some("oom: boom"));
    assert_eq!(p.attempts, 7);
    // Nothing passed: the lowest failure is the margin.
    let p = preflight_summary(&rows[..1], "mem_fraction_static").expect("a pre-flight");
    assert_eq!((p.found, p.next_up), (None, Some(0.95)));
    assert_eq!(preflight_summary(&rows[8..], "mem_fraction_static"), None);
}

#[test]
fn commands_and_cost_from_the_manifest() {
    use crate::record::provenance::LaunchRecord;
    let mut m = Manifest::default();
    for (dir, run, cmd, a, b) in [
        (
            "a.r1",
            "a",
            "cmd a1",
            "2026-01-01T00:00:00Z",
            "2026-01-01T00:00:00Z",
        ),
        (
            "a.r2",
            "a",
            "cmd a2",
            "2026-01-01T02:00:00Z",
            "2026-01-01T01:00:00Z",
        ),
        ("b", "b", "", "x", "2026-01-01T01:00:00Z"),
        (
            "b.r2",
            "b",
            "cmd b2",
            "2026-01-01T00:00:00Z",
            "2026-01-01T00:06:00Z",
        ),
    ] {
        m.launches.insert(
            dir.into(),
            LaunchRecord {
                run_name: run.into(),
                command: cmd.into(),
                started_at: a.into(),
                finished_at: b.into(),
                ..Default::default()
            },
        );
    }
    let c = commands(&m);
    assert_eq!(c.len(), 2);
    assert_eq!(c["a"], "cmd a1", "the first launch folder by name");
    assert_eq!(c["b"], "cmd b2", "an empty command is skipped");
    let c = cost(&m);
    // A launch that stopped when it started counts 0 hours; one whose stop is before its
    // start, or whose time does not parse, counts no hours and is said.
    assert_eq!((c.launches, c.launches_without_times), (4, 2));
    assert!((c.server_hours - 0.1).abs() < 1e-9, "{c:?}");
}

#[test]
fn why_a_configuration_has_no_standing() {
    let o = objective(
        Goal::Maximize,
        "output_tok_s",
        &[("goodput_share", Bound::AtLeast, 0.9)],
    );
    let long = "x".repeat(200);
    let mut failed = row("crash", 1, &[("failure_kind", "crashed")]);
    failed.set_cell("status", "failed");
    failed.set_cell("failure_message", long.clone());
    let mut failed2 = row("crash", 2, &[("failure_kind", "oom")]);
    failed2.set_cell("status", "failed");
    let mut pruned = row("pruned", 1, &[]);
    pruned.set_cell("status", "pruned");
    pruned.set_cell("failure_message", "pruned: clearly beaten");
    let mut interrupted = row("cut", 1, &[]);
    interrupted.set_cell("status", "interrupted");
    let rows = vec![
        failed,
        failed2,
        row("crash", 3, &[("output_tok_s", "5"), ("goodput_share", "1")]),
        pruned,
        interrupted,
        row("empty", 1, &[("goodput_share", "1")]),
        row("low", 1, &[("output_tok_s", "9"), ("goodput_share", "0.8")]),
        row("ok", 1, &[("output_tok_s", "1"), ("goodput_share", "0.95")]),
    ];
    let p = &decide_rows(&o, &rows).points[0];
    let why = |n: &str| {
        p.configurations
            .iter()
            .find(|c| c.run_name == n)
            .map(|c| (c.standing, c.why.clone()))
            .expect("present")
    };
    let (standing, w) = why("crash");
    assert_eq!(standing, Standing::Failed);
    assert_eq!(
        w,
        format!(
            "failed in 2 of 3 repeats (crashed, oom): {}…",
            "x".repeat(160)
        )
    );
    assert_eq!(
        why("pruned"),
        (Standing::NoValue, "pruned: clearly beaten".into())
    );
    assert_eq!(why("cut"), (Standing::NoValue, "no finished repeat".into()));
    assert_eq!(
        why("empty"),
        (
            Standing::NoValue,
            "no value of output_tok_s in its repeats".into()
        )
    );
    assert_eq!(
        why("low"),
        (
            Standing::SloNotMet,
            "SLO violated: goodput_share median 0.800 < 0.9".into()
        )
    );
    assert_eq!(p.winner.as_deref(), Some("ok"));
    // Read in order: the eligible, then SLO misses, failures, no value.
    let order: Vec<&str> = p
        .configurations
        .iter()
        .map(|c| c.run_name.as_str())
        .collect();
    assert_eq!(order, ["ok", "low", "crash", "pruned", "cut", "empty"]);
    assert_eq!(
        p.sentence,
        "At concurrency 8, ok wins as the only eligible configuration (mean output_tok_s 1.00); of the other configurations, 1 violated the SLO, 1 failed, 3 had no value."
    );
    // Nothing eligible: the sentence says what became of each.
    let p = &decide_rows(&o, &rows[..5]).points[0];
    assert_eq!(p.outcome, Outcome::NoEligibleConfiguration);
    assert_eq!(
        p.sentence,
        "At concurrency 8, no configuration is eligible: 1 failed, 2 had no value."
    );
    assert_eq!((p.leader.as_deref(), p.command.as_deref()), (None, None));
    let d = decide_rows(&o, &[]);
    assert!(d.points.is_empty());
    assert!(
            d.summary.starts_with("Decision (maximize output_tok_s subject to goodput_share ≥ 0.9): no rows to decide on. Cost: 0 server launch(es), 0.00 server-hours."),
            "{}",
            d.summary
        );
}

#[test]
fn an_open_loop_point_is_named_by_its_rate() {
    let o = objective(Goal::Maximize, "output_tok_s", &[]);
    let mut rows = rows_of(&[("a", &[100.0, 101.0]), ("b", &[200.0, 202.0])]);
    for r in &mut rows {
        r.set_cell("request_rate", "2.5");
    }
    let d = decide_rows(&o, &rows);
    assert_eq!(d.points[0].load_point, "2.5/s");
    assert_eq!(
        d.points[0].label,
        "request rate 2.5/s (at most 8 in flight)"
    );
}

/// The tie's sentence and the leader's line name every configuration it does not separate
/// from, and the ranks follow the means.
#[test]
fn a_tie_names_everything_within_noise() {
    let o = objective(Goal::Maximize, "output_tok_s", &[]);
    let d = decide_rows(
        &o,
        &rows_of(&[
            ("c", &[950.0, 1050.0]),
            ("a", &[1000.0, 1100.0]),
            ("far", &[100.0, 101.0]),
            ("b", &[900.0, 1100.0]),
        ]),
    );
    let p = &d.points[0];
    assert_eq!(p.outcome, Outcome::TieWithinNoise);
    assert_eq!(p.tied_with, vec!["c".to_string(), "b".to_string()]);
    let ranks: Vec<(&str, Option<usize>, Standing)> = p
        .configurations
        .iter()
        .map(|c| (c.run_name.as_str(), c.rank, c.standing))
        .collect();
    assert_eq!(
        ranks,
        [
            ("a", Some(1), Standing::Leader),
            ("c", Some(2), Standing::WithinNoise),
            ("b", Some(3), Standing::WithinNoise),
            ("far", Some(4), Standing::Behind),
        ]
    );
    assert_eq!(
        p.configurations[0].why,
        "best mean, but within noise of c, b: no winner claimed"
    );
    assert!(
        p.configurations[3]
            .why
            .starts_with("behind the leader by 950 ± "),
        "{}",
        p.configurations[3].why
    );
    assert!(
            p.sentence.starts_with(
                "At concurrency 8, tie within noise: a leads (mean output_tok_s 1050) but is not separated from c, b, its margin over the runner-up being 50.0 ± "
            ),
            "{}",
            p.sentence
        );
    assert!(
        p.sentence
            .ends_with("; more repeats would narrow the intervals.")
    );
}

fn probe(name: &str, c: &str, repeat: u64, standing: &str, tok: &str, good: &str) -> Row {
    let mut r = row(
        name,
        repeat,
        &[
            ("phase", "probe"),
            ("probe", standing),
            ("output_tok_s", tok),
            ("goodput_req_s", good),
            ("request_throughput", "99"),
        ],
    );
    r.set_cell("concurrency", c);
    r
}

#[test]
fn a_max_load_search_is_decided_at_each_configurations_highest_passing_load() {
    let o = objective(Goal::Maximize, "output_tok_s", &[]);
    let mut oom = probe("oom", "2", 1, "fail", "", "");
    oom.set_cell("status", "failed");
    oom.set_cell("failure_kind", "oom");
    let rows = vec![
        probe("small", "2", 1, "pass", "100", "1.0"),
        probe("small", "4", 1, "pass", "180", "2.0"),
        probe("small", "4", 2, "pass", "184", "3.0"),
        probe("small", "8", 1, "fail", "300", "1.0"),
        probe("large", "2", 1, "pass", "100", ""),
        probe("large", "4", 1, "pass", "200", ""),
        probe("large", "8", 1, "pass", "390", ""),
        probe("large", "8", 2, "pass", "400", ""),
        probe("none", "2", 1, "fail", "50", "0.1"),
        probe("none", "4", 1, "fail", "60", "0.1"),
        probe("unjudged", "2", 1, "", "50", "0.1"),
        oom,
        row("plain", 1, &[("output_tok_s", "10")]),
    ];
    let d = decide_rows(&o, &rows);
    assert_eq!(d.points.len(), 2, "the plain point, then the search's");
    let p = &d.points[1];
    assert_eq!(p.load_point, "max_load_at_slo");
    assert_eq!(
        p.label,
        "each configuration's highest load within the SLO (max-load search)"
    );
    assert_eq!(p.winner.as_deref(), Some("large"), "{}", p.sentence);
    assert!(p.sentence.starts_with("At each configuration's highest load within the SLO (max-load search), large wins: mean output_tok_s 395 against the runner-up small's 182"), "{}", p.sentence);
    assert!(
        p.sentence
            .ends_with("; of the other configurations, 2 violated the SLO, 1 failed."),
        "{}",
        p.sentence
    );
    let c = |n: &str| {
        p.configurations
            .iter()
            .find(|c| c.run_name == n)
            .expect("present")
    };
    assert_eq!(c("large").max_load_at_slo.as_deref(), Some("8"));
    assert_eq!(
        c("large").goodput_at_max_load,
        Some(99.0),
        "request_throughput"
    );
    assert_eq!(c("small").max_load_at_slo.as_deref(), Some("4"));
    assert_eq!(c("small").goodput_at_max_load, Some(2.5), "the median");
    assert_eq!(c("small").repeats, 2);
    assert_eq!(
        (c("none").standing, c("none").why.as_str()),
        (
            Standing::SloNotMet,
            "no load within the SLO: the lowest probe (concurrency 2) was fail"
        )
    );
    assert_eq!(c("none").max_load_at_slo, None);
    assert_eq!(
        c("unjudged").why,
        "no load within the SLO: the lowest probe (concurrency 2) was not judged"
    );
    assert_eq!(
        (c("oom").standing, c("oom").why.as_str()),
        (
            Standing::Failed,
            "no load within the SLO: failed in 1 of 1 repeats (oom)"
        )
    );
    // The noise is the sweep's: the repeated probes at 4 and 8.
    assert_eq!(p.noise.map(|n| n.df), Some(2));
    // With an SLO the lowest probe's own miss is said too.
    let o = objective(
        Goal::Maximize,
        "output_tok_s",
        &[("goodput_req_s", Bound::AtLeast, 0.5)],
    );
    let p = decide_rows(&o, &rows[8..10]).points.remove(0);
    assert_eq!(
        p.configurations[0].why,
        "no load within the SLO: the lowest probe (concurrency 2) was fail (SLO violated: goodput_req_s median 0.100 < 0.5)"
    );
    // Failed outputs stay the reason when no load passed either: they hold at any load.
    let mut bad = probe("derails", "2", 1, "fail", "500", "0.1");
    bad.set_cell("quality_verdict", "fail");
    bad.set_cell("quality_evidence", "derails 9%");
    let p = decide_rows(&o, &[bad, rows[4].clone()]).points.remove(0);
    let c = p
        .configurations
        .iter()
        .find(|c| c.run_name == "derails")
        .expect("present");
    assert_eq!(
        (c.standing, c.why.as_str()),
        (
            Standing::QualityFailed,
            "no load within the SLO: output quality fail: derails 9%"
        )
    );
}

/// A draw from N(0, 1) (Box–Muller on two SplitMix64 uniforms).
fn normal(rng: &mut SplitMix64) -> f64 {
    let u1 = unit(rng);
    let u2 = unit(rng);
    (-2.0 * (1.0 - u1).ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

#[derive(Clone, Copy, Debug)]
enum Noise {
    /// Each repeat is the true value × (1 + N(0, cv)).
    Gaussian(f64),
    /// Each repeat is the true value × (1 + U(−w, +w)).
    Uniform(f64),
}

/// `trials` sweeps of configurations with these true values, `repeats` each, under
/// `noise`; the decisions.
fn simulate(
    seed: u64,
    truths: &[(&str, f64)],
    repeats: usize,
    noise: Noise,
    trials: usize,
) -> Vec<PointDecision> {
    let o = objective(Goal::Maximize, "output_tok_s", &[]);
    let mut rng = SplitMix64::new(seed);
    (0..trials)
        .map(|_| {
            let rows: Vec<Row> = truths
                .iter()
                .flat_map(|(name, truth)| {
                    (1..=repeats)
                        .map(|k| {
                            let e = match noise {
                                Noise::Gaussian(cv) => cv * normal(&mut rng),
                                Noise::Uniform(w) => w * (2.0 * unit(&mut rng) - 1.0),
                            };
                            row(
                                name,
                                k as u64,
                                &[("output_tok_s", &(truth * (1.0 + e)).to_string())],
                            )
                        })
                        .collect::<Vec<_>>()
                })
                .collect();
            decide_rows(&o, &rows).points.remove(0)
        })
        .collect()
}

const ONE_BETTER: &[(&str, f64)] = &[
    ("base-a", 1000.0),
    ("best", 1150.0),
    ("base-b", 1000.0),
    ("base-c", 1000.0),
];
const TWO_EQUAL: &[(&str, f64)] = &[("x", 1000.0), ("y", 1000.0)];

fn named_best(ds: &[PointDecision]) -> usize {
    ds.iter()
        .filter(|d| d.outcome == Outcome::Winner && d.winner.as_deref() == Some("best"))
        .count()
}
fn ties(ds: &[PointDecision]) -> usize {
    ds.iter()
        .filter(|d| d.outcome == Outcome::TieWithinNoise)
        .count()
}

/// 20 seeded sweeps, 3 repeats each, ~5% noise: one configuration truly 15% better
/// than three others is named the winner in at least 19; two truly equal ones are a tie
/// in most. No trial names a wrong winner.
#[test]
fn simulation_names_the_true_winner_and_ties_equals() {
    {
        let noise = Noise::Uniform(0.05);
        let ds = simulate(1, ONE_BETTER, 3, noise, 20);
        let wrong = ds
            .iter()
            .filter(|d| d.outcome == Outcome::Winner && d.winner.as_deref() != Some("best"))
            .count();
        eprintln!(
            "{noise:?}: 15% better named in {} of 20 (wrong winner {wrong}, tie {})",
            named_best(&ds),
            ties(&ds)
        );
        assert!(named_best(&ds) >= 19, "{noise:?}: {}", named_best(&ds));
        assert_eq!(wrong, 0);
        let ds = simulate(2, TWO_EQUAL, 3, noise, 20);
        eprintln!("{noise:?}: equal configurations tie in {} of 20", ties(&ds));
        assert!(ties(&ds) >= 17, "{noise:?}: {}", ties(&ds));
    }
}

/// Gaussian noise (a coefficient of variation): with 5% and 3 repeats, no rule that
/// claims a false winner at most 5% of the time can name a 15% better one in 19 of 20
/// (even with the variance known, one comparison's power is Φ(3.41 − 1.96) = 93%); the
/// rule then says "tie" rather than guess. Checked here: it never names a wrong winner,
/// it ties equals, and more repeats or less noise restore the power. (`--nocapture`
/// prints the counts; docs/benchmarks.md records them.)
#[test]
fn simulation_under_gaussian_noise_never_names_a_wrong_winner() {
    for (cv, repeats, at_least) in [(0.05, 3, 5), (0.05, 5, 17), (0.03, 3, 14)] {
        let ds = simulate(1, ONE_BETTER, repeats, Noise::Gaussian(cv), 20);
        let eq = simulate(2, TWO_EQUAL, repeats, Noise::Gaussian(cv), 20);
        eprintln!(
            "Gaussian {cv}, {repeats} repeats: 15% better named in {} of 20 (tie {}); equal: tie in {} of 20",
            named_best(&ds),
            ties(&ds),
            ties(&eq)
        );
        assert!(
            ds.iter()
                .all(|d| d.winner.as_deref().is_none_or(|w| w == "best"))
        );
        assert!(
            named_best(&ds) >= at_least,
            "{cv} {repeats}: {}",
            named_best(&ds)
        );
        assert!(ties(&eq) >= 17, "{cv} {repeats}: {}", ties(&eq));
    }
}

const FOUR_EQUAL: &[(&str, f64)] = &[("a", 1000.0), ("b", 1000.0), ("c", 1000.0), ("d", 1000.0)];
const TEN_PERCENT_BETTER: &[(&str, f64)] = &[
    ("a", 1000.0),
    ("best", 1100.0),
    ("c", 1000.0),
    ("d", 1000.0),
];

/// What the rule does over `trials` seeded sweeps of four configurations under Gaussian
/// noise of coefficient of variation `cv`, `repeats` each.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Rates {
    trials: usize,
    /// Four equal configurations: a winner was claimed (any winner is false).
    false_winner: usize,
    /// One truly 10% better than three equal ones: it was claimed the winner.
    named: usize,
    /// The same: no winner was claimed (a tie, or a leader not confirmed).
    false_tie: usize,
    /// The same: another configuration was claimed the winner.
    wrong_winner: usize,
    /// The same: the truly better one leads (claimed or not).
    leads: usize,
}

fn rates(cv: f64, repeats: usize, trials: usize) -> Rates {
    let seed = 1000 * repeats as u64 + (cv * 1000.0).round() as u64;
    let eq = simulate(seed, FOUR_EQUAL, repeats, Noise::Gaussian(cv), trials);
    let ap = simulate(
        seed + 1,
        TEN_PERCENT_BETTER,
        repeats,
        Noise::Gaussian(cv),
        trials,
    );
    let count = |ds: &[PointDecision], f: &dyn Fn(&PointDecision) -> bool| {
        ds.iter().filter(|d| f(d)).count()
    };
    Rates {
        trials,
        false_winner: count(&eq, &|d| d.outcome == Outcome::Winner),
        named: count(&ap, &|d| d.winner.as_deref() == Some("best")),
        false_tie: count(&ap, &|d| d.outcome != Outcome::Winner),
        wrong_winner: count(&ap, &|d| d.winner.as_deref().is_some_and(|w| w != "best")),
        leads: count(&ap, &|d| d.leader.as_deref() == Some("best")),
    }
}

/// The rule's error rates at 1, 2 and 3 repeats, Gaussian noise of 5% (400 trials each;
/// `rule_rates_as_documented` has the 4,000-trial figures of docs/benchmarks.md). One
/// repeat never claims a winner, false or true; two and three keep false winners under
/// the 5% a 95% interval allows, and more repeats name the better one more often.
#[test]
fn simulation_false_winners_and_false_ties_at_one_two_and_three_repeats() {
    let r: Vec<Rates> = (1..=3).map(|k| rates(0.05, k, 400)).collect();
    for (k, x) in r.iter().enumerate() {
        eprintln!("{} repeat(s), CV 5%: {x:?}", k + 1);
    }
    assert_eq!((r[0].false_winner, r[0].named, r[0].false_tie), (0, 0, 400));
    assert!(r[0].leads > 200, "{:?}", r[0]);
    for x in &r[1..] {
        assert!(x.false_winner <= 20, "{x:?}");
        assert!(x.wrong_winner <= 4, "{x:?}");
        assert_eq!(x.named + x.wrong_winner + x.false_tie, 400);
    }
    assert!(r[2].named > r[1].named && r[1].named > 0, "{r:?}");
}
