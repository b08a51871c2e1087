//! The error rates of the rules that decide (docs/benchmarks.md, "Error rates of the
//! decisions"): the real `tune::decision::decide`, `tune::prune::beaten_on_speed` and
//! `tune::quality::judge` on seeded draws with known truths, at 1, 2 and 3 repeats, under
//! equal and unequal noise. Deterministic: every trial is seeded, so each figure is exact for
//! this code, and a change of rule shows as a changed figure.
//!
//! Every figure docs/benchmarks.md states is a bound here ([`Check`]): the bench prints each
//! one with what it measured and exits 1 when one no longer holds. It runs in the test command
//! (`test = true` in Cargo.toml: `cargo test` runs it in the debug build, about a minute) and
//! with `cargo bench --bench decisions`.
//!
//! What counts as an error:
//! - **false winner**: among configurations that are truly equal, a winner is claimed;
//! - **false tie**: one configuration truly 10% better than three equal ones is not claimed;
//! - **false prune**: among truly equal configurations, pruning drops any of them;
//! - **false quality reject**: a configuration whose outputs differ from the baseline's only
//!   by near ties (2% of prompts per pass, at random) fails the guard;
//! - **quality detection**: a configuration that derails 5% of the prompts decisively fails it.

use sgtune::load::prompts::{SplitMix64, unit};
use sgtune::load::quality::QualitySample;
use sgtune::plan::quality::Quality;
use sgtune::plan::spec::{Goal, Objective};
use sgtune::record::rows::{Col, Row};
use sgtune::tune::decision::{self, Cost, Outcome, PointDecision};
use sgtune::tune::prune;
use sgtune::tune::quality::{QualityStatus, judge};
use std::collections::BTreeMap;

/// Trials per row of the speed rules; per row of the quality guard.
const TRIALS: usize = 2000;
const QUALITY_TRIALS: usize = 300;

#[path = "common/check.rs"]
mod check;
use check::{Check, at_least, at_most};

/// N(0, 1) by Box–Muller on two SplitMix64 uniforms.
fn normal(rng: &mut SplitMix64) -> f64 {
    let (u1, u2) = (unit(rng), unit(rng));
    (-2.0 * (1.0 - u1).ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

fn objective() -> Objective {
    Objective {
        goal: Goal::Maximize,
        metric: Col::OUTPUT_TOK_S,
        slo: Vec::new(),
        noise: 0.05,
        prune: true,
    }
}

fn row(name: &str, repeat: usize, value: f64) -> Row {
    Row::from_cells(BTreeMap::from(
        [
            ("run_name", name.to_string()),
            ("status", "ok".to_string()),
            ("phase", "measure".to_string()),
            ("concurrency", "8".to_string()),
            ("request_rate", String::new()),
            ("repeat", repeat.to_string()),
            ("output_tok_s", value.to_string()),
        ]
        .map(|(k, v)| (k.to_string(), v)),
    ))
}

/// A configuration in a simulated sweep: its name, true value and noise (coefficient of
/// variation of each repeat).
type Truth = (&'static str, f64, f64);

/// One seeded sweep of `truths`, `repeats` each: the decision at its one load point.
fn sweep(rng: &mut SplitMix64, truths: &[Truth], repeats: usize) -> PointDecision {
    let rows: Vec<Row> = truths
        .iter()
        .flat_map(|&(name, truth, cv)| {
            (1..=repeats)
                .map(|k| row(name, k, truth * (1.0 + cv * normal(rng))))
                .collect::<Vec<_>>()
        })
        .collect();
    let mut d = decision::decide(
        "sim",
        &objective(),
        &rows,
        &BTreeMap::new(),
        Cost::default(),
    );
    d.points.remove(0)
}

fn equal(n: usize, cvs: &[f64]) -> Vec<Truth> {
    const NAMES: [&str; 8] = ["a", "b", "c", "d", "e", "f", "g", "h"];
    (0..n)
        .map(|i| (NAMES[i], 1000.0, cvs[i.min(cvs.len() - 1)]))
        .collect()
}

struct Rates {
    false_winner: f64,
    false_prune: f64,
}

/// Among equal configurations: how often a winner is claimed, and how often pruning at this
/// point would drop one.
fn equal_rates(seed: u64, truths: &[Truth], repeats: usize) -> Rates {
    let mut rng = SplitMix64::new(seed);
    let o = objective();
    let (mut winners, mut pruned) = (0, 0);
    for _ in 0..TRIALS {
        let d = sweep(&mut rng, truths, repeats);
        winners += usize::from(d.outcome == Outcome::Winner && truths.len() > 1);
        pruned += usize::from(!prune::beaten_on_speed(&o, &d, "8").is_empty());
    }
    Rates {
        false_winner: winners as f64 / TRIALS as f64,
        false_prune: pruned as f64 / TRIALS as f64,
    }
}

/// One configuration truly 10% better than three equal ones, all at `cv`: how often it is
/// named the winner, how often no winner is claimed, how often another is claimed, and how
/// often pruning drops the better one.
fn power(seed: u64, cv: f64, repeats: usize) -> (f64, f64, f64, f64) {
    let truths: [Truth; 4] = [
        ("a", 1000.0, cv),
        ("best", 1100.0, cv),
        ("c", 1000.0, cv),
        ("d", 1000.0, cv),
    ];
    let mut rng = SplitMix64::new(seed);
    let o = objective();
    let (mut named, mut tie, mut wrong, mut best_pruned) = (0, 0, 0, 0);
    for _ in 0..TRIALS {
        let d = sweep(&mut rng, &truths, repeats);
        match d.winner.as_deref() {
            Some("best") => named += 1,
            Some(_) => wrong += 1,
            None => tie += 1,
        }
        best_pruned += usize::from(
            prune::beaten_on_speed(&o, &d, "8")
                .iter()
                .any(|(n, _)| n == "best"),
        );
    }
    let r = |k: usize| k as f64 / TRIALS as f64;
    (r(named), r(tie), r(wrong), r(best_pruned))
}

/// One prompt's greedy output: 16 tokens; a near tie at one position (`flip` takes the other
/// of the two nearly tied tokens there) and a decisive derail from another (`derail`: a token
/// the reference never considered).
fn output(
    run: &str,
    launch: &str,
    pass: u32,
    prompt: u64,
    flip: bool,
    derail: bool,
) -> QualitySample {
    let n = 16;
    let tie_at = (prompt % 7) as usize + 2;
    let derail_at = (prompt % 5) as usize + 8;
    let mut s = QualitySample {
        run_name: run.into(),
        launch: launch.into(),
        pass,
        prompt_id: prompt,
        ..Default::default()
    };
    let mut branch = "";
    for i in 0..n {
        let (mut tok, mut alt, mut own, mut other) =
            (format!("t{i}{branch}"), format!("u{i}{branch}"), -0.1, -3.0);
        if i == tie_at && branch.is_empty() {
            (own, other) = (-0.69, -0.70);
            if flip {
                std::mem::swap(&mut tok, &mut alt);
                branch = "f";
            }
        }
        if derail && i == derail_at && branch != "d" {
            (tok, alt, own, other) = (format!("x{i}"), format!("y{i}"), -0.1, -4.0);
            branch = "d";
        }
        s.tokens.push(tok.clone());
        s.logprobs.push(Some(own));
        s.top.push(vec![(tok, own), (alt, other)]);
    }
    s
}

/// One seeded quality trial of 200 prompts and `repeats` launches of each configuration (the
/// baseline's launches make two passes, as in a sweep): the verdicts of a configuration alike
/// the baseline (near ties at 2% per pass) and of one that derails a fixed 5% of the prompts
/// in every launch (a numerics change is deterministic per prompt).
fn quality_trial(seed: u64, repeats: usize) -> (QualityStatus, QualityStatus) {
    let Ok(q) = serde_yaml::from_str::<Quality>("{}") else {
        eprintln!("the quality guard's defaults do not parse");
        std::process::exit(2);
    };
    let mut rng = SplitMix64::new(seed);
    let prompts = 200u64;
    let derailing: Vec<bool> = (0..prompts).map(|_| unit(&mut rng) < 0.05).collect();
    let mut samples = Vec::new();
    for k in 1..=repeats {
        let passes: [(&str, u32, bool); 4] = [
            ("base", 1, false),
            ("base", 2, false),
            ("alike", 1, false),
            ("derails", 1, true),
        ];
        for (run, pass, derails) in passes {
            let launch = format!("{run}.r{k}");
            for p in 0..prompts {
                let flip = unit(&mut rng) < 0.02;
                let derail = derails && derailing[p as usize];
                samples.push(output(run, &launch, pass, p, flip, derail));
            }
        }
    }
    let names: Vec<String> = ["base", "alike", "derails"].map(String::from).to_vec();
    let r = judge(&q, "base", &samples, &names);
    let st = |n: &str| r.verdict(n).map_or(QualityStatus::Unchecked, |v| v.status);
    (st("alike"), st("derails"))
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

#[path = "common/as_test.rs"]
mod as_test;

fn main() {
    if !as_test::selected("decisions") {
        return;
    }
    let mut checks = Vec::new();

    println!(
        "## The speed decision and pruning among equal configurations ({TRIALS} trials a row)"
    );
    println!("| configurations (noise) | repeats | false winner | false prune |");
    println!("|---|---|---|---|");
    let scenarios: Vec<(&str, Vec<Truth>)> = vec![
        ("4 equal (2%)", equal(4, &[0.02])),
        ("4 equal (5%)", equal(4, &[0.05])),
        ("4 equal (10%)", equal(4, &[0.10])),
        ("2 equal (5%)", equal(2, &[0.05])),
        ("2 equal (2%, 20%)", equal(2, &[0.02, 0.20])),
        ("4 equal (2%, 2%, 2%, 20%)", {
            let mut v = equal(4, &[0.02]);
            v[3].2 = 0.20;
            v
        }),
        ("8 equal (7 at 3%, 1 at 15%)", {
            let mut v = equal(8, &[0.03]);
            v[7].2 = 0.15;
            v
        }),
    ];
    for (si, (what, truths)) in scenarios.iter().enumerate() {
        for repeats in 1..=3 {
            let r = equal_rates(1000 * si as u64 + repeats as u64, truths, repeats);
            println!(
                "| {what} | {repeats} | {} | {} |",
                pct(r.false_winner),
                pct(r.false_prune)
            );
            let at = format!("{what}, {repeats} repeat(s)");
            at_most(
                &mut checks,
                format!("false winner, {at}"),
                r.false_winner,
                0.05,
            );
            at_most(
                &mut checks,
                format!("false prune, {at}"),
                r.false_prune,
                0.05,
            );
            if repeats == 1 {
                // One repeat measures no noise: never a winner, never a prune on speed.
                at_most(
                    &mut checks,
                    format!("no winner at all, {at}"),
                    r.false_winner,
                    0.0,
                );
                at_most(
                    &mut checks,
                    format!("no prune at all, {at}"),
                    r.false_prune,
                    0.0,
                );
            }
        }
    }

    println!();
    println!("## One configuration 10% better than three equal ones ({TRIALS} trials a row)");
    println!(
        "| noise | repeats | named the winner | no winner claimed | wrong winner | the better one pruned |"
    );
    println!("|---|---|---|---|---|---|");
    // The power documented: at least these shares named (a floor a little under each figure
    // measured when the rule was set, so a rule that loses power fails here).
    let floors: [(f64, usize, f64); 6] = [
        (0.02, 2, 0.25),
        (0.02, 3, 0.90),
        (0.05, 2, 0.02),
        (0.05, 3, 0.15),
        (0.10, 2, 0.0),
        (0.10, 3, 0.015),
    ];
    for (i, cv) in [0.02, 0.05, 0.10].into_iter().enumerate() {
        for repeats in 1..=3 {
            let (named, tie, wrong, best_pruned) =
                power(50_000 + 10 * i as u64 + repeats as u64, cv, repeats);
            println!(
                "| {:.0}% | {repeats} | {} | {} | {} | {} |",
                cv * 100.0,
                pct(named),
                pct(tie),
                pct(wrong),
                pct(best_pruned)
            );
            let at = format!(
                "10% better at {:.0}% noise, {repeats} repeat(s)",
                cv * 100.0
            );
            at_most(&mut checks, format!("wrong winner, {at}"), wrong, 0.05);
            at_most(
                &mut checks,
                format!("the better one pruned, {at}"),
                best_pruned,
                0.05,
            );
            if let Some((_, _, floor)) = floors.iter().find(|(c, r, _)| *c == cv && *r == repeats) {
                at_least(
                    &mut checks,
                    format!("named the winner, {at}"),
                    named,
                    *floor,
                );
            }
        }
    }

    println!();
    println!("## The output-quality guard, 200 prompts ({QUALITY_TRIALS} trials a row)");
    println!("| launches of each | false reject (near ties only) | detection (5% derail) |");
    println!("|---|---|---|");
    for repeats in 1..=3 {
        let (mut false_reject, mut detected) = (0, 0);
        for t in 0..QUALITY_TRIALS {
            let (alike, derails) =
                quality_trial(900_000 + 1000 * repeats as u64 + t as u64, repeats);
            false_reject += usize::from(alike == QualityStatus::Fail);
            detected += usize::from(derails == QualityStatus::Fail);
        }
        let (fr, det) = (
            false_reject as f64 / QUALITY_TRIALS as f64,
            detected as f64 / QUALITY_TRIALS as f64,
        );
        println!("| {repeats} | {} | {} |", pct(fr), pct(det));
        at_most(
            &mut checks,
            format!("quality false reject, {repeats} launch(es)"),
            fr,
            0.05,
        );
        at_least(
            &mut checks,
            format!("quality detection of a 5% derail, {repeats} launch(es)"),
            det,
            0.95,
        );
    }

    println!();
    let failed: Vec<&Check> = checks.iter().filter(|c| !c.holds()).collect();
    for c in &failed {
        println!(
            "NO LONGER HOLDS: {}: measured {} where docs/benchmarks.md says {} {}",
            c.what,
            pct(c.measured),
            if c.at_least { "at least" } else { "at most" },
            pct(c.limit)
        );
    }
    println!(
        "decisions bench: {} of {} documented figures hold",
        checks.len() - failed.len(),
        checks.len()
    );
    if !failed.is_empty() {
        std::process::exit(1);
    }
}
