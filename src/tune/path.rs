//! A guided tune's path, replayed from results.csv: the rows of each configuration become the
//! `guide::Observation` the strategy sees, and the strategy is asked again, step by step, from
//! the first launch. Pure, so the runner, `resume` (which continues the same path) and the
//! decision's "Tune path" section all read one path from the same rows.

use crate::plan::spec::{Goal, SweepSpec};
use crate::plan::tune::{TuneSpec, same_value};
use crate::record::rows::{Col, Row};
use crate::record::{Phase, RunStatus};
use crate::tune::decision::{self, Standing};
use crate::tune::guide::{self, Evidence, Failure, Next, Observation, Outcome, Point, Space};
use std::collections::BTreeMap;

/// The strategy's space from the spec's `tune:`.
pub fn space(t: &TuneSpec) -> Space {
    Space {
        knobs: t
            .knobs
            .iter()
            .map(|k| guide::Knob {
                key: k.key.clone(),
                values: k.values.clone(),
            })
            .collect(),
        start: t.start.clone(),
        confirm: t.confirm as usize,
    }
}

/// One step of the path: what was proposed, why, and (once its rows are in) what it gave.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub point: Point,
    pub name: String,
    pub why: String,
    /// A confirmation: another launch of a configuration measured before.
    pub confirm: bool,
    /// None: proposed, not measured yet.
    pub outcome: Option<Outcome>,
}

/// The path so far and what the strategy says now.
#[derive(Debug, Clone, PartialEq)]
pub struct Path {
    /// Every step with rows, in order.
    pub done: Vec<Step>,
    /// What to do now: the proposals whose rows are not there yet, or the stop.
    pub next: Next,
}

/// Whether `row` is a launch of `point`: each knob's `param_<key>` cell is the point's value.
pub fn row_is_point(space: &Space, point: &[usize], row: &Row) -> bool {
    point_of_row(space, row).is_some_and(|p| p == point)
}

/// The point a row is a launch of, from its `param_<knob>` cells (None: a value outside the
/// space).
pub fn point_of_row(space: &Space, row: &Row) -> Option<Point> {
    space
        .knobs
        .iter()
        .map(|k| {
            let cell = row.param(&k.key);
            k.values.iter().position(|v| {
                cell == v.to_string()
                    || cell
                        .parse::<f64>()
                        .ok()
                        .is_some_and(|x| same_value(&crate::plan::flags::ParamValue::Float(x), v))
            })
        })
        .collect()
}

/// The rows that count for the tune: finished launches' rows (an interrupted one is redone).
fn counted(rows: &[Row]) -> Vec<&Row> {
    rows.iter()
        .filter(|r| r.status() != Some(RunStatus::Interrupted) && r.phase() != Phase::Preflight)
        .collect()
}

/// What the rows of one configuration say, for the strategy: the objective (oriented so
/// higher is better), eligibility by the decision's own rule (failures, SLO, quality guard),
/// the verdict's evidence, and which knobs were not in effect. None without rows. `launches`:
/// the first launch and the confirmations up to `launches` in all (the rows of a later
/// confirmation were not there when the path took the steps before it).
pub fn observe(
    spec: &SweepSpec,
    space: &Space,
    point: &[usize],
    launches: usize,
    rows: &[&Row],
) -> Option<Outcome> {
    let last_repeat = confirm_repeat(spec, launches.saturating_sub(1));
    let mine: Vec<&Row> = rows
        .iter()
        .copied()
        .filter(|r| row_is_point(space, point, r))
        .filter(|r| r.repeat().is_none_or(|k| k <= last_repeat))
        .collect();
    let first = mine.first()?;
    let measured: Vec<&Row> = mine.iter().copied().filter(|r| r.is_ok()).collect();
    if measured.is_empty() {
        let kind = mine
            .iter()
            .find_map(|r| r.failure_kind().map(Failure::Server))
            .unwrap_or_else(|| first.status().map_or(Failure::Unknown, Failure::Status));
        return Some(Outcome::Failed { kind });
    }
    let Some(o) = &spec.objective else {
        return Some(Outcome::Failed {
            kind: Failure::NoObjective,
        });
    };
    // The decision's rule on this configuration alone: the last load point decided (the
    // highest load, or the max-load search's result) is what the strategy compares.
    let owned: Vec<Row> = mine.iter().map(|r| (*r).clone()).collect();
    let d = decision::decide(
        "tune",
        o,
        &owned,
        &BTreeMap::new(),
        decision::Cost::default(),
    );
    let point = d.points.last();
    let c = point.and_then(|p| p.configurations.first());
    // The evidence is that of the load the decision judged (a max-load search's highest load
    // within the SLO, else the last load point), not a mix of every probe's.
    let judged_at = c
        .and_then(|c| c.max_load_at_slo.clone())
        .or_else(|| point.map(|p| p.load_point.clone()));
    let at_load: Vec<&Row> = measured
        .iter()
        .copied()
        .filter(|r| judged_at.as_deref() == Some(r.load_point().as_str()))
        .collect();
    let measured = if at_load.is_empty() {
        measured
    } else {
        at_load
    };
    let sign = match o.goal {
        Goal::Maximize => 1.0,
        Goal::Minimize => -1.0,
    };
    let (score, cv, eligible, why_not, slo_excess) = match c {
        Some(c) => {
            let eligible = matches!(
                c.standing,
                Standing::Winner | Standing::Leader | Standing::WithinNoise | Standing::Behind
            );
            let score = c.estimate.as_ref().map(|e| sign * e.mean);
            let cv = c
                .estimate
                .as_ref()
                .and_then(|e| e.sd.map(|sd| sd / e.mean.abs().max(f64::MIN_POSITIVE)));
            let why = if eligible {
                String::new()
            } else {
                match c.standing {
                    Standing::QualityFailed => "quality: fail".to_string(),
                    Standing::SloNotMet => {
                        let broken: Vec<String> = c
                            .slo
                            .iter()
                            .filter(|s| !s.holds)
                            .map(|s| s.column.name())
                            .collect();
                        format!("SLO not met: {}", broken.join(", "))
                    }
                    Standing::Failed => format!("a repeat failed ({})", c.failure_kinds.join(", ")),
                    _ => "no value of the objective".to_string(),
                }
            };
            let excess = (c.standing == Standing::SloNotMet)
                .then(|| slo_excess(&c.slo))
                .flatten();
            (score, cv, eligible, why, excess)
        }
        None => (None, None, false, "not decided".to_string(), None),
    };
    let Some(score) = score else {
        return Some(Outcome::Failed {
            kind: Failure::NoValue,
        });
    };
    let last = measured.last().copied().unwrap_or(first);
    let verdict = last.verdict();
    let max = |col: Col| {
        measured
            .iter()
            .filter_map(|r| r.metric(&col))
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
    };
    let mean = |col: Col| {
        let xs: Vec<f64> = measured.iter().filter_map(|r| r.metric(&col)).collect();
        (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
    };
    // The client's prompt and output tok/s: what prefill and decode computed.
    let prompt_out = mean(Col::TOTAL_TOK_S)
        .zip(mean(Col::OUTPUT_TOK_S))
        .map(|(total, out)| ((total - out).max(0.0), out));
    let evidence = Evidence {
        verdict,
        also: last.verdict_also(),
        text: last.verdict_evidence().to_string(),
        kv_usage_max: max(Col::TOKEN_USAGE_MAX),
        running_mean: mean(Col::RUNNING_REQ_MEAN),
        running_max: max(Col::RUNNING_REQ_MAX),
        queue_mean: mean(Col::QUEUE_REQ_MEAN),
        offered: max(Col::CONCURRENCY),
        retractions: measured
            .iter()
            .filter_map(|r| r.count(&Col::RETRACTIONS))
            .max(),
        // Every bucket of every row at the judged load: the fit weighs them by their lines.
        steps: measured
            .iter()
            .flat_map(|r| r.decode_steps())
            .map(|s| guide::StepSample {
                running: s.running,
                step_ms: s.step_ms,
                graph: s.graph,
                lines: s.lines,
            })
            .collect(),
        pool_tokens: max(Col::MAX_TOTAL_NUM_TOKENS),
        // The diagnosis's client/server tok/s, over the repeats pooled.
        client_server: mean(Col::OUTPUT_TOK_S)
            .zip(mean(Col::SERVER_GEN_TPUT_MEAN))
            .filter(|(_, g)| *g > 0.0)
            .map(|(c, g)| c / g),
        prefix_reuse: [Col::CACHE_HIT_RATE, Col::PREFIX_REUSABLE_SHARE]
            .into_iter()
            .filter_map(mean)
            .reduce(f64::max),
        prefill_share: prompt_out.map(|(prompt, out)| {
            let new = prompt * (1.0 - mean(Col::CACHE_HIT_RATE).unwrap_or(0.0).clamp(0.0, 1.0));
            if new + out > 0.0 {
                new / (new + out)
            } else {
                0.0
            }
        }),
        prompt_tokens: prompt_out
            .zip(mean(Col::REQUEST_THROUGHPUT).filter(|r| *r > 0.0))
            .map(|((prompt, _), rps)| prompt / rps),
        bounds: c
            .map(|c| {
                c.slo
                    .iter()
                    .map(|s| guide::SloSeen {
                        column: s.column.name(),
                        at_most: s.bound == crate::plan::spec::Bound::AtMost,
                        limit: s.limit,
                        measured: s.median,
                    })
                    .collect()
            })
            .unwrap_or_default(),
    };
    let not_in_effect: Vec<String> = space
        .knobs
        .iter()
        .filter(|k| {
            let asked = format!("`{}`", k.key);
            measured
                .iter()
                .any(|r| r.not_in_effect().any(|f| f.contains(&asked)))
        })
        .map(|k| k.key.clone())
        .collect();
    Some(Outcome::Measured {
        score,
        cv,
        eligible,
        why_not,
        slo_excess,
        evidence,
        not_in_effect,
    })
}

/// How far a configuration is from meeting its SLO: the worst ratio, over the broken bounds, of
/// the measured median to the limit (an upper bound: measured ÷ limit; a lower bound: limit ÷
/// measured), ≥ 1. None when a broken bound has no value, or a ratio is not a finite number
/// (a zero limit): then nearness to eligibility cannot be told.
pub fn slo_excess(checks: &[decision::SloCheck]) -> Option<f64> {
    let mut worst: Option<f64> = None;
    for c in checks.iter().filter(|c| !c.holds) {
        let m = c.median?;
        let r = match c.bound {
            crate::plan::spec::Bound::AtMost => m / c.limit,
            crate::plan::spec::Bound::AtLeast => c.limit / m,
        };
        if !r.is_finite() {
            return None;
        }
        worst = Some(worst.map_or(r, |w: f64| w.max(r)));
    }
    worst.map(|w| w.max(1.0))
}

/// The repeat index a configuration's `n`-th confirmation launch records: after the spec's own
/// repeats (`repeats: 2` makes the first confirmation repeat 3).
pub fn confirm_repeat(spec: &SweepSpec, n: usize) -> u64 {
    spec.repeats.max(1) + n as u64
}

/// Whether the rows hold the `n`-th confirmation of `point`: a row of its repeat.
fn has_repeat(spec: &SweepSpec, space: &Space, point: &[usize], n: usize, rows: &[&Row]) -> bool {
    let want = confirm_repeat(spec, n);
    rows.iter()
        .any(|r| r.repeat() == Some(want) && row_is_point(space, point, r))
}

/// The path the rows show: ask the strategy from the start, answer each proposal from its
/// rows, and stop at the first proposals without rows (what to launch now) or at its stop.
/// A proposal of a configuration already measured is answered from the same rows and costs
/// no launch; a round of only those ends the tune (the strategy would ask forever).
pub fn replay(spec: &SweepSpec, space: &Space, budget: usize, rows: &[Row]) -> Path {
    replay_batched(spec, space, budget, 1, rows).path
}

/// A path replayed in batches of launches at once (issue 37).
#[derive(Debug, Clone, PartialEq)]
pub struct Batched {
    pub path: Path,
    /// For each step of `path.done`, the batch it was proposed in (0-based, in order): the
    /// steps of one batch were chosen together, from the steps of the batches before.
    pub batch: Vec<usize>,
    /// The batch `path.next`'s launches belong to: the one after the last done step's, or the
    /// same one when a batch is partly measured (a resumed tune launches the rest of it).
    pub next_index: usize,
}

/// [`replay`] with `slots` launches at once: each batch is `guide::next_batch` of the
/// observations of the batches before it, answered from the rows in the batch's order, so a
/// resumed tune re-derives the same batches (the same boundaries, the same launches) from the
/// rows, whatever order its launches finished in. The runner must replay with the slot count
/// the tune ran with. With one slot it is the one-launch path.
pub fn replay_batched(
    spec: &SweepSpec,
    space: &Space,
    budget: usize,
    slots: usize,
    rows: &[Row],
) -> Batched {
    let rows = counted(rows);
    let mut done: Vec<Step> = Vec::new();
    let mut batch: Vec<usize> = Vec::new();
    let mut seen: Vec<Observation> = Vec::new();
    // Every round that goes on measured at least one step: the batches are numbered 0, 1, ...
    let mut round = 0usize;
    let finish = |done: Vec<Step>, batch: Vec<usize>, next: Next, at: usize| Batched {
        path: Path { done, next },
        batch,
        next_index: at,
    };
    loop {
        let left = budget.saturating_sub(done.len());
        let props = match guide::next_batch(space, &seen, left, slots) {
            Next::Stop { why } => {
                return finish(done, batch, Next::Stop { why }, round);
            }
            Next::Launch(p) => p,
        };
        let mut pending = Vec::new();
        let mut fresh = 0;
        for p in props {
            let inside = p.point.len() == space.knobs.len()
                && p.point
                    .iter()
                    .zip(&space.knobs)
                    .all(|(&i, k)| i < k.values.len());
            if !inside {
                // A strategy's bug must not launch nonsense or loop: the tune ends, saying so.
                let why = format!(
                    "the strategy proposed {:?}, which is not a point of the space",
                    p.point
                );
                return finish(done, batch, Next::Stop { why }, round);
            }
            let known = seen.iter().position(|o| o.point == p.point);
            if known.is_some() != p.confirm {
                // A confirmation of a configuration never launched, or a new step that repeats
                // one: the latter is answered by its rows already; the former is a bug.
                if p.confirm {
                    let why = format!(
                        "the strategy asked to confirm {:?}, which was never launched",
                        p.point
                    );
                    return finish(done, batch, Next::Stop { why }, round);
                }
                continue;
            }
            if fresh >= left {
                break;
            }
            fresh += 1;
            let name = guide::name(space, &p.point);
            if let Some(i) = known {
                let n = seen[i].launches;
                if !has_repeat(spec, space, &p.point, n, &rows) {
                    pending.push(p);
                    continue;
                }
                let outcome = observe(spec, space, &p.point, n + 1, &rows);
                if let Some(o) = &outcome {
                    seen[i].outcome = o.clone();
                }
                seen[i].again(&p);
                batch.push(round);
                done.push(Step {
                    point: p.point,
                    name,
                    why: p.why,
                    confirm: true,
                    outcome,
                });
                continue;
            }
            match observe(spec, space, &p.point, 1, &rows) {
                Some(outcome) => {
                    seen.push(Observation::once(p.point.clone(), outcome.clone()));
                    batch.push(round);
                    done.push(Step {
                        point: p.point,
                        name,
                        why: p.why,
                        confirm: false,
                        outcome: Some(outcome),
                    });
                }
                None => pending.push(p),
            }
        }
        if !pending.is_empty() {
            return finish(done, batch, Next::Launch(pending), round);
        }
        if fresh == 0 {
            let why = if left == 0 {
                "the launch budget is spent".to_string()
            } else {
                "the strategy proposed only configurations already measured".to_string()
            };
            return finish(done, batch, Next::Stop { why }, round);
        }
        round += 1;
    }
}

/// One step's measurement in a few words, for the step log and decision.md.
pub fn measured_text(spec: &SweepSpec, outcome: &Outcome) -> String {
    match outcome {
        Outcome::Failed { kind } => format!("failed ({kind})"),
        Outcome::Measured {
            score,
            eligible,
            why_not,
            evidence,
            ..
        } => {
            let (metric, value) = match &spec.objective {
                Some(o) if o.goal == Goal::Minimize => (o.metric.name(), -score),
                Some(o) => (o.metric.name(), *score),
                None => ("score".to_string(), *score),
            };
            let verdict = evidence.verdict.map_or("no verdict", |v| v.as_str());
            let mut s = format!("{metric} {}, {verdict}", decision::num(value));
            if let Some(u) = evidence.kv_usage_max {
                s.push_str(&format!(", KV usage max {}", decision::num(u)));
            }
            if let Some(q) = evidence.queue_mean {
                s.push_str(&format!(", queue mean {}", decision::num(q)));
            }
            if !eligible {
                s.push_str(&format!("; not eligible: {why_not}"));
            }
            s
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::observe::diagnose::VerdictKind;
    use crate::server::failure::FailureKind;
    use crate::tune::testing::{row, spec};

    fn tuned() -> SweepSpec {
        spec(
            "workload: {concurrency: 8, requests: 8, input_tokens: 4, output_tokens: 4, vocab_size: 10}\nobjective: {maximize: output_tok_s, slo: {ttft_ms_p99: 1000}}\ntune:\n  knobs:\n    max_total_tokens: [2048, 8192]\n    schedule_conservativeness: [0.5, 1.0]\n  start: {max_total_tokens: 2048, schedule_conservativeness: 1.0}\n  launches: 3\n",
        )
    }

    #[test]
    fn rows_become_the_observation_of_their_configuration() {
        let s = tuned();
        let sp = space(s.tune.as_ref().unwrap());
        assert_eq!(sp.start, vec![0, 1]);
        let ok = row(&[
            ("run_name", "mtt2048_sc1"),
            ("status", "ok"),
            ("phase", "measure"),
            ("concurrency", "8"),
            ("repeat", "1"),
            ("param_max_total_tokens", "2048"),
            ("param_schedule_conservativeness", "1"),
            ("output_tok_s", "120"),
            ("total_tok_s", "200"),
            ("request_throughput", "2"),
            ("cache_hit_rate", "0.25"),
            ("prefix_reusable_share", "0.5"),
            ("server_gen_tput_mean", "200"),
            ("ttft_ms_p99", "4000"),
            ("verdict", "kv_cache_bound"),
            ("verdict_also", "cuda_graph_limited+no_such_limit"),
            ("token_usage_max", "0.97"),
            ("queue_req_mean", "12.5"),
            ("decode_steps", "2:10.00:5:g 7.5:14.50:20:e"),
            (
                "not_in_effect",
                "`schedule_conservativeness` asked 1, in effect 0.3 (log)",
            ),
        ]);
        let failed = row(&[
            ("run_name", "mtt8192_sc1"),
            ("status", "failed"),
            ("failure_kind", "oom"),
            ("param_max_total_tokens", "8192"),
            ("param_schedule_conservativeness", "1.0"),
        ]);
        let rows = vec![&ok, &failed];
        match observe(&s, &sp, &[0, 1], 1, &rows) {
            Some(Outcome::Measured {
                score,
                eligible,
                why_not,
                evidence,
                not_in_effect,
                ..
            }) => {
                assert_eq!(score, 120.0);
                assert!(!eligible);
                assert!(why_not.contains("ttft_ms_p99"), "{why_not}");
                assert_eq!(evidence.verdict, Some(VerdictKind::KvCacheBound));
                assert_eq!(evidence.also, vec![VerdictKind::CudaGraphLimited]);
                assert_eq!(evidence.kv_usage_max, Some(0.97));
                assert_eq!(evidence.queue_mean, Some(12.5));
                assert_eq!(evidence.offered, Some(8.0));
                // The diagnosis's client/server tok/s: 120 of the 200 the server made.
                assert_eq!(evidence.client_server, Some(0.6));
                // The load's prefix reuse: the larger of the hit rate and the share allowed.
                assert_eq!(evidence.prefix_reuse, Some(0.5));
                // 80 prompt tok/s at 2 req/s: 40 tokens a prompt; a quarter of them cached,
                // 60 computed against 120 generated: a third.
                assert_eq!(evidence.prompt_tokens, Some(40.0));
                assert!((evidence.prefill_share.unwrap() - 1.0 / 3.0).abs() < 1e-12);
                let step = |running, step_ms, graph, lines| guide::StepSample {
                    running,
                    step_ms,
                    graph,
                    lines,
                };
                assert_eq!(
                    evidence.steps,
                    vec![
                        step(2.0, 10.0, Some(true), 5),
                        step(7.5, 14.5, Some(false), 20)
                    ]
                );
                assert_eq!(not_in_effect, vec!["schedule_conservativeness".to_string()]);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            observe(&s, &sp, &[1, 1], 1, &rows),
            Some(Outcome::Failed {
                kind: Failure::Server(FailureKind::Oom)
            })
        );
        assert_eq!(observe(&s, &sp, &[1, 0], 1, &rows), None);
        // Without the client's totals nor a hit rate: none of the three; with the hit rate
        // alone, the reuse is the hit rate, and a hit rate above 1 is read as 1.
        let bare = row(&[
            ("run_name", "mtt2048_sc0.5"),
            ("status", "ok"),
            ("phase", "measure"),
            ("concurrency", "8"),
            ("repeat", "1"),
            ("param_max_total_tokens", "2048"),
            ("param_schedule_conservativeness", "0.5"),
            ("output_tok_s", "120"),
            ("ttft_ms_p99", "400"),
        ]);
        let e = |rows: &[&Row]| match observe(&s, &sp, &[0, 0], 1, rows) {
            Some(Outcome::Measured { evidence, .. }) => evidence,
            other => panic!("{other:?}"),
        };
        let got = e(&[&bare]);
        assert_eq!(
            (got.prefix_reuse, got.prefill_share, got.prompt_tokens),
            (None, None, None)
        );
        let mut hit = bare.clone();
        hit.set_cell("cache_hit_rate", "1.5");
        hit.set_cell("total_tok_s", "180");
        let got = e(&[&hit]);
        assert_eq!(got.prefix_reuse, Some(1.5));
        // All 60 prompt tok/s cached: prefill computes none; no req/s, no prompt size.
        assert_eq!((got.prefill_share, got.prompt_tokens), (Some(0.0), None));
        // Nothing computed at all: a share of 0, not a division by zero.
        let mut idle = bare.clone();
        idle.set_cell("total_tok_s", "0");
        idle.set_cell("output_tok_s", "0");
        idle.set_cell("request_throughput", "0");
        let got = e(&[&idle]);
        assert_eq!((got.prefill_share, got.prompt_tokens), (Some(0.0), None));
    }

    #[test]
    fn with_a_max_load_search_the_evidence_is_that_of_the_load_judged() {
        let s = spec(
            "workload: {concurrency: 2, duration_s: 1, input_tokens: 4, output_tokens: 4, vocab_size: 10}\nobjective: {maximize: output_tok_s, slo: {ttft_ms_p99: 1000}}\nsearch: {max_load: {concurrency: {from: 2, to: 8}}}\ntune:\n  knobs:\n    max_total_tokens: [2048, 8192]\n  launches: 2\n",
        );
        let sp = space(s.tune.as_ref().unwrap());
        let probe = |c: &str, pass: &str, ttft: &str, verdict: &str, queue: &str, steps: &str| {
            row(&[
                ("run_name", "mtt2048"),
                ("status", "ok"),
                ("phase", "probe"),
                ("probe", pass),
                ("concurrency", c),
                ("repeat", "1"),
                ("param_max_total_tokens", "2048"),
                ("output_tok_s", "100"),
                ("ttft_ms_p99", ttft),
                ("verdict", verdict),
                ("queue_req_mean", queue),
                ("decode_steps", steps),
            ])
        };
        let low = probe(
            "2",
            "pass",
            "200",
            "compute_bound",
            "0",
            "1:9.00:4:g 2:9.50:6:g",
        );
        let high = probe("4", "fail", "3000", "kv_cache_bound", "3", "4:12.00:9:g");
        match observe(&s, &sp, &[0], 1, &[&low, &high]) {
            Some(Outcome::Measured {
                eligible, evidence, ..
            }) => {
                assert!(eligible);
                assert_eq!(evidence.verdict, Some(VerdictKind::ComputeBound));
                assert_eq!(evidence.offered, Some(2.0));
                assert_eq!(evidence.queue_mean, Some(0.0));
                // The steps too are the judged load's: the failing probe's are not among them.
                let runs: Vec<(f64, u32)> = evidence
                    .steps
                    .iter()
                    .map(|s| (s.running, s.lines))
                    .collect();
                assert_eq!(runs, vec![(1.0, 4), (2.0, 6)]);
            }
            other => panic!("{other:?}"),
        }
    }

    /// A minimised objective is carried as a negated score (higher is better inside the
    /// tuner); the step log shows the metric as measured, not its negation.
    #[test]
    fn a_minimised_metric_is_shown_as_measured() {
        let measured = |score: f64| Outcome::Measured {
            score,
            cv: None,
            eligible: false,
            why_not: "quality: fail".into(),
            slo_excess: None,
            evidence: Evidence::default(),
            not_in_effect: Vec::new(),
        };
        let min = spec(
            "workload: {concurrency: 8, requests: 8, input_tokens: 4, output_tokens: 4, vocab_size: 10}\nobjective: {minimize: ttft_ms_p99}\n",
        );
        assert_eq!(
            measured_text(&min, &measured(-250.0)),
            "ttft_ms_p99 250, no verdict; not eligible: quality: fail"
        );
        let max = tuned();
        assert_eq!(
            measured_text(&max, &measured(120.0)),
            "output_tok_s 120, no verdict; not eligible: quality: fail"
        );
        assert_eq!(
            measured_text(
                &max,
                &Outcome::Failed {
                    kind: Failure::Server(FailureKind::Oom)
                }
            ),
            "failed (oom)"
        );
    }

    #[test]
    fn replay_starts_at_the_start_and_answers_it_from_its_rows() {
        let s = tuned();
        let sp = space(s.tune.as_ref().unwrap());
        let nothing = replay(&s, &sp, 3, &[]);
        assert!(nothing.done.is_empty());
        match &nothing.next {
            Next::Launch(p) => assert_eq!(p[0].point, sp.start),
            other => panic!("{other:?}"),
        }
        // The start's launch was interrupted: it is launched again.
        let interrupted = row(&[
            ("status", "interrupted"),
            ("param_max_total_tokens", "2048"),
            ("param_schedule_conservativeness", "1"),
        ]);
        assert_eq!(replay(&s, &sp, 3, &[interrupted]).next, nothing.next);
        let failed = row(&[
            ("status", "failed"),
            ("failure_kind", "startup_error"),
            ("param_max_total_tokens", "2048"),
            ("param_schedule_conservativeness", "1"),
        ]);
        let p = replay(&s, &sp, 3, &[failed]);
        assert_eq!(p.done.len(), 1);
        assert_eq!(p.done[0].name, "mtt2048_sc1");
        assert_eq!(
            p.done[0].outcome,
            Some(Outcome::Failed {
                kind: Failure::Server(FailureKind::StartupError)
            })
        );
        // Whatever the strategy does next, it never exceeds the budget.
        let zero = replay(&s, &sp, 0, &[]);
        assert!(matches!(zero.next, Next::Stop { .. }));
        assert!(zero.done.is_empty());
    }

    #[test]
    fn a_confirmation_is_answered_by_the_next_repeat_and_earlier_steps_keep_their_rows() {
        let s = spec(
            "workload: {concurrency: 8, requests: 8, input_tokens: 4, output_tokens: 4, vocab_size: 10}\nobjective: {maximize: output_tok_s}\ntune:\n  knobs:\n    chunked_prefill_size: [2048, 8192]\n  start: {chunked_prefill_size: 2048}\n  launches: 4\n  confirm: 1\n",
        );
        let sp = space(s.tune.as_ref().unwrap());
        assert_eq!(sp.confirm, 1);
        let r = |mtt: &str, repeat: &str, tok: &str| {
            row(&[
                (
                    "run_name",
                    if mtt == "2048" { "cps2048" } else { "cps8192" },
                ),
                ("status", "ok"),
                ("phase", "measure"),
                ("concurrency", "8"),
                ("repeat", repeat),
                ("param_chunked_prefill_size", mtt),
                ("output_tok_s", tok),
                ("verdict", "compute_bound"),
            ])
        };
        let mut rows = vec![r("2048", "1", "100"), r("8192", "1", "200")];
        let p = replay(&s, &sp, 4, &rows);
        assert_eq!(p.done.len(), 2, "{p:#?}");
        match &p.next {
            Next::Launch(v) => {
                assert_eq!(v.len(), 1);
                assert!(v[0].confirm, "{:?}", v[0]);
                assert_eq!(v[0].point, vec![1]);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(confirm_repeat(&s, 1), 2);
        rows.push(r("8192", "2", "180"));
        let p = replay(&s, &sp, 4, &rows);
        assert_eq!(p.done.len(), 3, "{:#?}", p.done);
        assert!(p.done[2].confirm && !p.done[1].confirm);
        let score = |o: &Option<Outcome>| match o {
            Some(Outcome::Measured { score, .. }) => *score,
            other => panic!("{other:?}"),
        };
        // The first launch's step saw its own repeat only; the confirmation pools both.
        assert_eq!(score(&p.done[1].outcome), 200.0);
        assert_eq!(score(&p.done[2].outcome), 190.0);
        // A repeat of a configuration the path never confirmed is not a step.
        rows.push(r("2048", "3", "50"));
        assert_eq!(replay(&s, &sp, 4, &rows).done.len(), 3);
    }

    /// The rows one launch of `point` gives on a made-up server: more memory fraction holds
    /// more requests, the running cap and the graphs limit the batch, 64 offered.
    fn launch_rows(sp: &Space, point: &Point, repeat: usize) -> Row {
        let kv = 8.0 * (point[0] as f64 + 2.0);
        let cap = [16.0, 32.0, 64.0, 128.0][point[1]];
        let running: f64 = kv.min(cap).min(64.0);
        let graphs = [16.0, 32.0, 64.0, 128.0][point[2]] >= running;
        let verdict = if running < 64.0 && running >= cap && kv > cap {
            "queue_with_spare_kv"
        } else if running < 64.0 {
            "kv_cache_bound"
        } else if !graphs {
            "cuda_graph_limited"
        } else {
            "compute_bound"
        };
        let tok = running * if graphs { 10.0 } else { 7.0 } + repeat as f64;
        let ttft = 200.0 + 2000.0 * (64.0 - running) / running;
        let cells: Vec<(String, String)> = [
            ("run_name", guide::name(sp, point)),
            ("status", "ok".into()),
            ("phase", "measure".into()),
            ("concurrency", "64".into()),
            ("repeat", repeat.to_string()),
            ("output_tok_s", tok.to_string()),
            ("ttft_ms_p99", ttft.to_string()),
            ("verdict", verdict.into()),
            ("token_usage_max", (running / kv).min(1.0).to_string()),
            ("running_req_mean", running.to_string()),
            ("running_req_max", running.to_string()),
            ("queue_req_mean", (64.0 - running).to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .chain(
            sp.knobs
                .iter()
                .zip(point)
                .map(|(k, &i)| (format!("param_{}", k.key), k.values[i].to_string())),
        )
        .collect();
        Row::from_cells(cells)
    }

    #[test]
    fn a_replay_in_batches_re_derives_the_live_batches_from_the_rows() {
        let s = spec(
            "workload: {concurrency: 64, requests: 64, input_tokens: 4, output_tokens: 4, vocab_size: 10}\nobjective: {maximize: output_tok_s, slo: {ttft_ms_p99: 1000}}\ntune:\n  knobs:\n    mem_fraction_static: [0.80, 0.82, 0.84, 0.86, 0.88, 0.90]\n    max_running_requests: [16, 32, 64, 128]\n    cuda_graph_max_bs: [16, 32, 64, 128]\n  start: {mem_fraction_static: 0.82, max_running_requests: 16, cuda_graph_max_bs: 16}\n  launches: 14\n  confirm: 4\n",
        );
        let sp = space(s.tune.as_ref().unwrap());
        let budget = 14;
        // The live tune: each batch launched at once, its rows written as the launches end
        // (the last first: a batch's rows are not in its order in results.csv).
        let mut rows: Vec<Row> = Vec::new();
        let mut live: Vec<Vec<(Point, bool)>> = Vec::new();
        let mut launches: BTreeMap<Point, usize> = BTreeMap::new();
        loop {
            let b = replay_batched(&s, &sp, budget, 4, &rows);
            assert_eq!(b.next_index, live.len());
            let Next::Launch(props) = b.path.next else {
                break;
            };
            let mut out = Vec::new();
            for p in &props {
                let n = launches.entry(p.point.clone()).or_default();
                *n += 1;
                out.push(launch_rows(&sp, &p.point, *n));
            }
            // Halfway through a batch, a resumed tune launches the rest of that batch only.
            if props.len() > 1 {
                let mut half = rows.clone();
                half.push(out[0].clone());
                let r = replay_batched(&s, &sp, budget, 4, &half);
                assert_eq!(r.next_index, live.len());
                match r.path.next {
                    Next::Launch(rest) => assert_eq!(rest, props[1..].to_vec()),
                    other => panic!("{other:?}"),
                }
            }
            out.reverse();
            rows.extend(out);
            live.push(props.iter().map(|p| (p.point.clone(), p.confirm)).collect());
        }
        assert!(live.iter().any(|b| b.len() > 1), "{live:?}");
        assert!(live.iter().map(Vec::len).sum::<usize>() <= budget);
        // The replay of the finished rows: the same steps in the same batches.
        let b = replay_batched(&s, &sp, budget, 4, &rows);
        assert_eq!(b.batch.len(), b.path.done.len());
        let mut replayed: Vec<Vec<(Point, bool)>> = Vec::new();
        for (step, &i) in b.path.done.iter().zip(&b.batch) {
            if replayed.len() <= i {
                replayed.push(Vec::new());
            }
            replayed[i].push((step.point.clone(), step.confirm));
        }
        assert_eq!(replayed, live);
        // One slot reads the same rows as a one-launch path: each step its own batch.
        let one = replay_batched(&s, &sp, budget, 1, &rows);
        assert_eq!(one.path, replay(&s, &sp, budget, &rows));
        assert!(one.batch.iter().enumerate().all(|(i, &b)| i == b));
    }

    #[test]
    fn the_slo_excess_is_the_worst_broken_bound_as_a_ratio() {
        use crate::plan::spec::Bound;
        let c = |bound, limit, median: Option<f64>, holds| decision::SloCheck {
            column: Col::TTFT_MS_P99,
            bound,
            limit,
            median,
            holds,
        };
        assert_eq!(slo_excess(&[]), None);
        assert_eq!(
            slo_excess(&[c(Bound::AtMost, 100.0, Some(50.0), true)]),
            None
        );
        assert_eq!(
            slo_excess(&[
                c(Bound::AtMost, 5000.0, Some(13000.0), false),
                c(Bound::AtLeast, 100.0, Some(50.0), false),
                c(Bound::AtMost, 1.0, Some(99.0), true),
            ]),
            Some(2.6)
        );
        assert_eq!(
            slo_excess(&[c(Bound::AtLeast, 100.0, Some(25.0), false)]),
            Some(4.0)
        );
        assert_eq!(slo_excess(&[c(Bound::AtMost, 100.0, None, false)]), None);
        assert_eq!(slo_excess(&[c(Bound::AtMost, 0.0, Some(5.0), false)]), None);
        // Broken by rounding at the limit: at least 1.
        assert_eq!(
            slo_excess(&[c(Bound::AtMost, 100.0, Some(100.0), false)]),
            Some(1.0)
        );
    }
}
