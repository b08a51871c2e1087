//! The guided tune, executed (issue 26): each step reads the rows so far, replays the path
//! from them (`tune::path`, the strategy `tune::guide` asked from the first launch), and
//! launches what the strategy asks for now through the sweep loop, so every launch is a row as
//! in any sweep, failures too. A resume runs the same loop: the rows already there answer the
//! first steps, and the tune goes on from where it stopped, on the same path.

use super::slots::SlotSpec;
use super::{RunContext, run_sweep};
use crate::plan::expand::{self, RunPlan};
use crate::plan::spec::SweepSpec;
use crate::record::provenance::Manifest;
use crate::record::rows::Row;
use crate::record::store;
use crate::record::store::{ResultsDir, StoreError};
use crate::record::{Phase, RunStatus};
use crate::report::events::RunEvent;
use crate::tune::guide::{self, Next, Proposal, Space};
use crate::tune::path::{self, Path};
use crate::tune::work;
use crate::util::say;

/// The step log's line for a proposal: `tune: step N: <why> → <name>`, and for a batch of
/// `k` > 1 launched at once `tune: step N (k at once): ...` on each of its steps.
pub fn step_line(n: usize, why: &str, name: &str) -> String {
    format!("tune: step {n}: {why} → {name}")
}

fn batch_step_line(n: usize, at_once: usize, why: &str, name: &str) -> String {
    if at_once > 1 {
        format!("tune: step {n} ({at_once} at once): {why} → {name}")
    } else {
        step_line(n, why, name)
    }
}

/// The tune's batch width: as recorded at its first step (a resume replays the same batches
/// whatever its own slots), else what these slots hold of the start's size, recorded now.
fn batch_width(
    spec: &SweepSpec,
    space: &Space,
    slots: &SlotSpec,
    manifest: &mut Manifest,
) -> usize {
    if let Some(w) = manifest.tune_slots {
        return w.max(1);
    }
    let start = expand::tune_config(spec, &space.start, guide::name(space, &space.start));
    let w = start.map_or(1, |start| slots.width(&start));
    manifest.tune_slots = Some(w);
    w
}

/// A proposal as the launches of its configuration (one per repeat unless the server is
/// reused; a max-load search continues from the probes its rows hold). A confirmation is one
/// launch of the next repeat, `done` telling how many confirmations the point had and
/// `batch` the proposals before this one in its batch (a batch may confirm one point twice:
/// each its own repeat, or both would be one launch folder, one row, and the next batch
/// would propose, and number, the same steps again).
fn launches_of(
    spec: &SweepSpec,
    space: &Space,
    p: &Proposal,
    rows: &[Row],
    done: &[path::Step],
    batch: &[Proposal],
) -> Vec<work::Launch> {
    let Some(run) = expand::tune_config(spec, &p.point, guide::name(space, &p.point)) else {
        return Vec::new();
    };
    if p.confirm {
        let before = done
            .iter()
            .filter(|s| s.confirm && s.point == p.point)
            .count()
            + batch
                .iter()
                .filter(|q| q.confirm && q.point == p.point)
                .count();
        return vec![work::repeat_launch(
            spec,
            run,
            path::confirm_repeat(spec, before + 1),
        )];
    }
    let plan = RunPlan {
        sweep_name: spec.name.0.clone(),
        param_keys: space.knobs.iter().map(|k| k.key.clone()).collect(),
        runs: vec![run],
    };
    let kept: Vec<&Row> = rows
        .iter()
        .filter(|r| r.status() != Some(RunStatus::Interrupted) && r.phase() == Phase::Probe)
        .collect();
    work::plan_launches(spec, &plan, &|_, _| false, &|run| {
        crate::tune::search::recorded_probes(spec, &kept, run)
    })
}

/// An earlier attempt's folder of a launch about to run again is kept, renamed, as evidence
/// (as `resume` does for a sweep's launches).
pub fn set_aside(results: &ResultsDir, dir_name: &str) -> Result<(), StoreError> {
    let runs = store::runs_dir(&results.root);
    let d = runs.join(dir_name);
    if !d.exists() {
        return Ok(());
    }
    let mut n = 1;
    while runs.join(format!("{dir_name}.attempt-{n}")).exists() {
        n += 1;
    }
    std::fs::rename(&d, runs.join(format!("{dir_name}.attempt-{n}"))).map_err(|source| StoreError {
        path: d.display().to_string(),
        source,
    })
}

/// The next batch of a tune at `width`, as a Slurm wave submits it: the steps already
/// measured, and either why the tune stops or the step lines, the launches and each launch's
/// step number. A pure function of the rows and the width (the tune's driver and each of the
/// wave's tasks compute the same launches from the same rows).
pub struct Wave {
    pub done: Vec<path::Step>,
    pub stop: Option<String>,
    pub lines: Vec<String>,
    pub launches: Vec<work::Launch>,
    /// launch folder name -> its step (1-based).
    pub steps: std::collections::BTreeMap<String, usize>,
}

pub fn wave(spec: &SweepSpec, rows: &[Row], width: usize) -> Wave {
    let mut w = Wave {
        done: Vec::new(),
        stop: None,
        lines: Vec::new(),
        launches: Vec::new(),
        steps: Default::default(),
    };
    let Some(t) = &spec.tune else {
        w.stop = Some("the spec has no `tune:`".into());
        return w;
    };
    let space = path::space(t);
    let path::Batched {
        path: Path { done, next },
        ..
    } = path::replay_batched(spec, &space, t.launches as usize, width.max(1), rows);
    match next {
        Next::Stop { why } => w.stop = Some(why),
        Next::Launch(proposals) => {
            for (i, p) in proposals.iter().enumerate() {
                let n = done.len() + i + 1;
                let name = guide::name(&space, &p.point);
                w.lines
                    .push(batch_step_line(n, proposals.len(), &p.why, &name));
                for l in launches_of(spec, &space, p, rows, &done, &proposals[..i]) {
                    w.steps.insert(l.dir_name.clone(), n);
                    w.launches.push(l);
                }
            }
            if w.launches.is_empty() {
                w.stop = Some("the strategy's proposals plan no launch".into());
            }
        }
    }
    w.done = done;
    w
}

/// The lines a tune continued in a folder says of the steps its rows already answer.
pub fn recorded_lines(spec: &SweepSpec, done: &[path::Step]) -> Vec<String> {
    done.iter()
        .enumerate()
        .map(|(i, s)| {
            let measured = s
                .outcome
                .as_ref()
                .map(|o| path::measured_text(spec, o))
                .unwrap_or_default();
            format!(
                "{} (recorded: {measured})",
                step_line(i + 1, &s.why, &s.name)
            )
        })
        .collect()
}

/// Run the tune into `results` until the strategy stops, the budget is spent, or it is
/// interrupted (returned, as the other rounds do). `rows` reads the folder's rows with the
/// quality guard's verdicts so far.
pub async fn run(
    ctx: &RunContext<'_>,
    slots: &SlotSpec,
    results: &ResultsDir,
    manifest: &mut Manifest,
    rows: &dyn Fn() -> Vec<Row>,
    emit: &mut dyn FnMut(RunEvent<'_>),
) -> Result<bool, StoreError> {
    let spec = ctx.spec;
    let Some(t) = &spec.tune else {
        return Ok(false);
    };
    let space = path::space(t);
    let budget = t.launches as usize;
    // Up to `width` launches at once, each batch chosen from the batches before it (a pure
    // function of the rows and the width: tune::path::replay_batched), so the slots run them
    // together and a resume re-derives the same batches.
    let width = batch_width(spec, &space, slots, manifest);
    if width > 1 {
        say(&format!(
            "tune: up to {width} launches at once (each batch chosen from the ones before it)"
        ));
    }
    let mut first = true;
    loop {
        let now = rows();
        let path::Batched {
            path: Path { done, next },
            ..
        } = path::replay_batched(spec, &space, budget, width, &now);
        if first && !done.is_empty() {
            say(&format!(
                "tune: {} step(s) already measured in this folder: continuing the same path",
                done.len()
            ));
            for (i, s) in done.iter().enumerate() {
                let measured = s
                    .outcome
                    .as_ref()
                    .map(|o| path::measured_text(spec, o))
                    .unwrap_or_default();
                say(&format!(
                    "{} (recorded: {measured})",
                    step_line(i + 1, &s.why, &s.name)
                ));
            }
        }
        first = false;
        let proposals = match next {
            Next::Stop { why } => {
                say(&format!("tune: stop: {why}"));
                return Ok(false);
            }
            Next::Launch(p) => p,
        };
        let mut launches = Vec::new();
        for (i, p) in proposals.iter().enumerate() {
            let name = guide::name(&space, &p.point);
            say(&batch_step_line(
                done.len() + i + 1,
                proposals.len(),
                &p.why,
                &name,
            ));
            for l in launches_of(spec, &space, p, &now, &done, &proposals[..i]) {
                set_aside(results, &l.dir_name)?;
                launches.push(l);
            }
        }
        if launches.is_empty() {
            say("tune: stop: the strategy's proposals plan no launch");
            return Ok(false);
        }
        let before = now.len();
        let out = run_sweep(ctx, slots, &launches, results, manifest, emit).await?;
        if out.interrupted {
            return Ok(true);
        }
        // A launch that wrote no row (a deadline that no longer admits it) would be proposed
        // again forever: the tune ends there.
        if rows().len() <= before {
            say("tune: stop: no launch was admitted (the deadline leaves no time for another)");
            return Ok(false);
        }
    }
}

/// A tune's plan with every configuration its rows hold (its own plan has the start only), for
/// what reads a finished tune back by configuration name (`reproduce --decision`).
pub fn plan_with_rows(spec: &SweepSpec, plan: &RunPlan, rows: &[Row]) -> RunPlan {
    let mut plan = plan.clone();
    let Some(t) = &spec.tune else {
        return plan;
    };
    let space = path::space(t);
    for r in rows {
        if plan.runs.iter().any(|c| c.name == r.run_name()) {
            continue;
        }
        if let Some(c) = path::point_of_row(&space, r)
            .and_then(|p| expand::tune_config(spec, &p, guide::name(&space, &p)))
        {
            if c.name == r.run_name() {
                plan.runs.push(c);
            }
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    /// A Slurm wave is the batch the local tune would launch: the same proposals from the same
    /// rows at the same width, each launch numbered with its step.
    #[test]
    fn a_wave_is_the_next_batch_of_the_path_with_its_step_numbers() {
        let s = crate::tune::testing::spec(
            "workload: {concurrency: 8, requests: 8, input_tokens: 4, output_tokens: 4, vocab_size: 10}\nobjective: {maximize: output_tok_s}\ntune:\n  knobs:\n    max_total_tokens: [100, 400, 1600]\n    kv_cache_dtype: [auto, fp8_e5m2]\n  start: {max_total_tokens: 100, kv_cache_dtype: auto}\n  launches: 5\n",
        );
        let w = wave(&s, &[], 2);
        assert_eq!(w.stop, None);
        assert!(w.done.is_empty());
        assert_eq!(w.lines, ["tune: step 1: the start → mtt100_kv-auto"]);
        let names: Vec<&str> = w.launches.iter().map(|l| l.dir_name.as_str()).collect();
        assert_eq!(names, ["mtt100_kv-auto"]);
        assert_eq!(w.steps.get("mtt100_kv-auto"), Some(&1));

        // The start failed to start: the next wave is the path's next batch, steps 2 and on.
        let failed = crate::tune::testing::row(&[
            ("run_name", "mtt100_kv-auto"),
            ("status", "failed"),
            ("failure_kind", "startup_error"),
            ("concurrency", "8"),
            ("repeat", "1"),
            ("phase", "measure"),
            ("param_max_total_tokens", "100"),
            ("param_kv_cache_dtype", "auto"),
        ]);
        let rows = vec![failed];
        let w = wave(&s, &rows, 2);
        assert_eq!(w.done.len(), 1);
        let t = s.tune.as_ref().unwrap();
        let space = path::space(t);
        let want = path::replay_batched(&s, &space, 5, 2, &rows).path.next;
        match (&w.stop, want) {
            (None, Next::Launch(props)) => {
                assert!(!props.is_empty() && props.len() <= 2);
                assert_eq!(w.lines.len(), props.len());
                for (i, p) in props.iter().enumerate() {
                    let name = guide::name(&space, &p.point);
                    assert_eq!(w.steps.get(&name), Some(&(i + 2)), "{name}");
                    assert!(w.lines[i].starts_with(&format!("tune: step {}", i + 2)));
                }
                assert_eq!(w.launches.len(), props.len());
            }
            (Some(why), Next::Stop { why: want }) => assert_eq!(why, &want),
            (got, want) => panic!("{got:?} vs {want:?}"),
        }
        // A tune's task recomputes the same launches from the same rows.
        let again = wave(&s, &rows, 2);
        assert_eq!(again.steps, w.steps);

        let sweep = crate::tune::testing::spec(
            "configs: [{name: a}]\nworkload: {concurrency: 8, requests: 8, input_tokens: 4, output_tokens: 4, vocab_size: 10}\n",
        );
        assert!(
            wave(&sweep, &[], 2).stop.is_some(),
            "no tune: nothing to wave"
        );
    }

    /// Issue 44: a 4-wide tune whose confirmation batch confirms two configurations twice
    /// each. Driven wave by wave from made-up rows (two configurations within noise of each
    /// other), every step is numbered once, every launch is its own repeat, and the rows
    /// answer every step: before, the two confirmations of one point in one batch were one
    /// launch folder, and the next wave proposed and numbered the same steps again.
    #[test]
    fn a_wide_confirmation_batch_numbers_each_step_once_and_each_is_its_own_repeat() {
        let s = crate::tune::testing::spec(
            "workload: {concurrency: 8, requests: 8, input_tokens: 4, output_tokens: 4, vocab_size: 10}\nobjective: {maximize: output_tok_s}\ntune:\n  knobs:\n    max_total_tokens: [100, 400, 1600]\n    max_running_requests: [4, 8]\n  start: {max_total_tokens: 100, max_running_requests: 8}\n  launches: 8\n  confirm: 4\n",
        );
        // Two configurations within 1% of each other lead; the rest are well behind.
        let score = |mtt: &str, mrr: &str| match (mtt, mrr) {
            ("400", "8") => 200.0,
            ("1600", "8") => 201.0,
            ("100", _) => 100.0,
            _ => 150.0,
        };
        let mut rows: Vec<Row> = Vec::new();
        let mut numbers: Vec<usize> = Vec::new();
        let mut confirmed_twice = false;
        for _ in 0..12 {
            let w = wave(&s, &rows, 4);
            if w.stop.is_some() {
                break;
            }
            let mut in_wave: Vec<usize> = w.steps.values().copied().collect();
            in_wave.sort_unstable();
            in_wave.dedup();
            numbers.extend(in_wave);
            let mut names: Vec<&str> = w.launches.iter().map(|l| l.run.name.as_str()).collect();
            let n = names.len();
            names.sort_unstable();
            names.dedup();
            confirmed_twice |= names.len() < n;
            for l in &w.launches {
                let mtt = l.run.param("max_total_tokens").map(|v| v.to_string());
                let mrr = l.run.param("max_running_requests").map(|v| v.to_string());
                let (mtt, mrr) = (mtt.unwrap_or_default(), mrr.unwrap_or_default());
                for m in &l.measurements {
                    let repeat = m.repeat.to_string();
                    let tok = format!("{}", score(&mtt, &mrr) * (1.0 + 0.001 * m.repeat as f64));
                    rows.push(crate::tune::testing::row(&[
                        ("run_name", l.run.name.as_str()),
                        ("status", "ok"),
                        ("phase", "measure"),
                        ("concurrency", "8"),
                        ("repeat", repeat.as_str()),
                        ("param_max_total_tokens", mtt.as_str()),
                        ("param_max_running_requests", mrr.as_str()),
                        ("output_tok_s", tok.as_str()),
                        ("verdict", "compute_bound"),
                    ]));
                }
            }
        }
        assert!(confirmed_twice, "no wave confirmed one configuration twice");
        assert_eq!(numbers, (1..=numbers.len()).collect::<Vec<_>>());
        assert!(numbers.len() <= 8, "{numbers:?}");
        let mut keys: Vec<(String, Option<u64>)> = rows
            .iter()
            .map(|r| (r.run_name().to_string(), r.repeat()))
            .collect();
        let n = keys.len();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), n, "a launch folder twice: {keys:?}");
        assert_eq!(n, numbers.len());
    }

    #[test]
    fn the_plans_start_is_named_as_the_strategy_names_it() {
        let s = crate::tune::testing::spec(
            "workload: {concurrency: 8, requests: 8, input_tokens: 4, output_tokens: 4, vocab_size: 10}\nobjective: {maximize: output_tok_s}\ntune:\n  knobs:\n    mem_fraction_static: {from: 0.80, to: 0.92, step: 0.02}\n    kv_cache_dtype: [auto, fp8_e5m2]\n    hicache_size: [0, 16, 32, 48]\n  start: {mem_fraction_static: 0.86, hicache_size: 32}\n  launches: 4\n",
        );
        let t = s.tune.as_ref().unwrap();
        let space = path::space(t);
        let plan = expand::expand(&s);
        assert_eq!(plan.runs.len(), 1);
        assert_eq!(plan.runs[0].name, guide::name(&space, &space.start));
        assert_eq!(plan.runs[0].name, "mfs0.86_kv-auto_hicache32");
        assert_eq!(
            plan.param_keys,
            vec!["mem_fraction_static", "kv_cache_dtype", "hicache_size"]
        );
        for point in [vec![0, 0, 0], vec![6, 1, 3], vec![3, 1, 1]] {
            assert_eq!(
                crate::plan::tune::point_name(t, &point),
                guide::name(&space, &point)
            );
        }
        let p = Proposal {
            point: vec![6, 1, 3],
            why: "test".into(),
            confirm: false,
            remeasure: false,
        };
        let l = launches_of(&s, &space, &p, &[], &[], &[]);
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].run.name, "mfs0.92_kv-fp8_e5m2_hicache48");
        assert_eq!(
            l[0].run.param("mem_fraction_static"),
            Some(&crate::plan::flags::ParamValue::Float(0.92))
        );
        // A confirmation: one launch of the next repeat, on a server of its own.
        let c = Proposal {
            confirm: true,
            ..p.clone()
        };
        let step = path::Step {
            point: p.point.clone(),
            name: l[0].run.name.clone(),
            why: String::new(),
            confirm: true,
            outcome: None,
        };
        let first = launches_of(&s, &space, &c, &[], &[], &[]);
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].dir_name, "mfs0.92_kv-fp8_e5m2_hicache48.r2");
        assert!(first[0].measurements.iter().all(|m| m.repeat == 2));
        assert_eq!(first[0].measurements.len(), s.workload.load_points.len());
        let second = launches_of(&s, &space, &c, &[], std::slice::from_ref(&step), &[]);
        assert_eq!(second[0].dir_name, "mfs0.92_kv-fp8_e5m2_hicache48.r3");
        // Two confirmations of one point in one batch: the second is the repeat after the
        // first's, not the same launch folder again (issue 44: the steps were numbered twice).
        let in_batch = launches_of(&s, &space, &c, &[], &[step], &[p.clone(), c.clone()]);
        assert_eq!(in_batch[0].dir_name, "mfs0.92_kv-fp8_e5m2_hicache48.r4");
        assert!(in_batch[0].measurements.iter().all(|m| m.repeat == 4));
    }
}
