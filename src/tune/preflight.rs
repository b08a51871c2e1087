//! The memory pre-flight: before the sweep, the highest value of one memory knob (e.g.
//! `mem_fraction_static`) that both launches and survives a worst-case burst.
//!
//! Starting is not enough (vLLM's auto_tune accepts a value because the server started, and it
//! then runs out of memory under load): each attempt launches the first configuration with the
//! knob at a value, then drives the workload's worst case for `burst_s` seconds: its longest
//! inputs and outputs, its highest load, ignore_eos, every request in flight at once. The
//! attempt survives when the server stays up, answers, and shows no retraction storm.
//!
//! The search tries `to` (the hoped-for value) and `from` (the safe one) first, then bisects
//! between the highest survivor and the lowest failure on the grid `from + k·resolution`,
//! so it needs at most ceil(log2(range / resolution)) + 2 launches. It is a pure function of
//! the attempts so far ([`next_attempt`]), so a resumed sweep replays the recorded attempts.
//! `run::preflight` launches what it asks for.

use crate::plan::expand::{self, RunConfig};
use crate::plan::flags::{self, PREFLIGHT_VALUE, ParamValue};
use crate::plan::search::{INTEGER_KNOBS, Preflight};
use crate::plan::spec::{DeadlinePolicy, LoadPoint, SweepSpec};
use crate::record::RunRecord;
use crate::server::failure::FailureKind;
use crate::tune::work::Launch;

pub use crate::record::preflight::{Attempt, Outcome};

/// The search's next move.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step {
    Try(f64),
    /// Finished: the highest survivor (None: not even `from`), and the lowest failure above it
    /// (the margin: the next step up and how it failed).
    Done {
        found: Option<f64>,
        next_up: Option<f64>,
        attempts: usize,
    },
}

/// Value `k` steps above `from`, rounded so that its text is short and stable.
fn grid(p: &Preflight, k: f64) -> f64 {
    let v = p.range.from + k * p.range.resolution;
    (v * 1e9).round() / 1e9
}

pub fn next_attempt(p: &Preflight, history: &[Attempt]) -> Step {
    let r = p.range;
    let seen = |v: f64| {
        history
            .iter()
            .find(|a| (a.value - v).abs() <= 1e-9 * v.abs().max(1.0))
            .map(|a| a.survived)
    };
    let steps = ((r.to - r.from) / r.resolution + 1e-9).floor();
    let top = grid(p, steps);
    let done = |found: Option<f64>, next_up: Option<f64>| Step::Done {
        found,
        next_up,
        attempts: history.len(),
    };
    // Indices on the grid: lo survived, hi failed.
    let (mut lo, mut hi) = (None::<f64>, None::<f64>);
    for (k, v) in [(steps, top), (0.0, r.from)] {
        match seen(v) {
            None if (history.len() as u64) < p.max_attempts => return Step::Try(v),
            None => return done(lo.map(|k| grid(p, k)), hi.map(|k| grid(p, k))),
            Some(true) if k == steps => return done(Some(top), None),
            Some(true) => lo = Some(k),
            Some(false) if k == 0.0 => return done(None, Some(r.from)),
            Some(false) => hi = Some(k),
        }
    }
    let (Some(mut lo), Some(mut hi)) = (lo, hi) else {
        return done(None, None);
    };
    while hi - lo > 1.0 {
        let mid = ((lo + hi) / 2.0).floor();
        match seen(grid(p, mid)) {
            None if (history.len() as u64) < p.max_attempts => return Step::Try(grid(p, mid)),
            None => break,
            Some(true) => lo = mid,
            Some(false) => hi = mid,
        }
    }
    done(Some(grid(p, lo)), Some(grid(p, hi)))
}

/// The knob's value as a flag value: a whole number for the integer knobs.
pub fn value_of(p: &Preflight, v: f64) -> ParamValue {
    if INTEGER_KNOBS.contains(&p.knob.as_str()) {
        ParamValue::Int(v.round() as i64)
    } else {
        ParamValue::Float(v)
    }
}

/// The spec an attempt runs: the workload's worst case for `burst_s` seconds. Longest inputs
/// and outputs, the highest load point (or the max-load search's top), closed loop,
/// ignore_eos, no warmup; requests still in flight at the end are cut.
pub fn burst_spec(spec: &SweepSpec, p: &Preflight) -> SweepSpec {
    let mut s = spec.clone();
    let w = &mut s.workload;
    let top_search = spec
        .search
        .max_load
        .as_ref()
        .filter(|m| m.axis == crate::plan::search::Axis::Concurrency)
        .map_or(0, |m| m.range.to as u64);
    let top = w
        .load_points
        .iter()
        .map(|l| l.concurrency)
        .max()
        .unwrap_or(w.concurrency)
        .max(top_search)
        .max(1);
    w.input_tokens = w
        .input_dist
        .as_ref()
        .map_or(w.input_tokens, |d| d.bounds().1);
    w.output_tokens = w
        .output_dist
        .as_ref()
        .map_or(w.output_tokens, |d| d.bounds().1);
    w.input_dist = None;
    w.output_dist = None;
    w.dataset = None;
    w.concurrency = top;
    w.request_rate = None;
    w.load_points = vec![LoadPoint {
        concurrency: top,
        request_rate: None,
    }];
    w.requests = None;
    w.duration_s = Some(p.burst_s);
    w.deadline = DeadlinePolicy::Cut;
    w.warmup_requests = 0;
    w.ignore_eos = true;
    s.search.max_load = None;
    s.repeats = 1;
    s
}

/// More than `max_retractions` retractions under the burst is a retraction storm: the
/// attempt did not survive (the pool admits more than it holds, then evicts, again and again).
/// Exactly `max_retractions` is still survived.
pub fn retraction_storm(retractions: u64, max_retractions: u64) -> bool {
    retractions > max_retractions
}

/// Why an attempt whose server stayed up through the burst still failed: the retraction storm
/// its log shows (None: it survived).
pub fn storm(r: &RunRecord, max_retractions: u64) -> Option<String> {
    let n = r.server.as_ref().map_or(0, |s| s.retractions);
    retraction_storm(n, max_retractions).then(|| {
        format!(
            "retraction storm under the burst: {n} retractions (search.preflight.max_retractions is {max_retractions})"
        )
    })
}

/// A burst cut at `burst_s` before any request could finish (long prompts on a slow machine)
/// is survived when the server is up and nothing failed: the question is memory, not speed.
/// For such a record (failed as "no request succeeded", every request cut, none failed), the
/// requests still in flight at the cut; else None.
pub fn cut_but_alive(r: &RunRecord) -> Option<u64> {
    let c = r.client.as_ref()?;
    let cut = r.failure_kind == Some(FailureKind::LoadFailed)
        && c.completed == 0
        && c.failed == 0
        && c.cut_off > 0
        && r.failure_message
            .as_deref()
            .is_some_and(|m| m.starts_with("no request succeeded"));
    cut.then_some(c.cut_off)
}

/// The configuration an attempt launches: the first planned one with the knob set.
pub fn attempt_config(spec: &SweepSpec, base: &RunConfig, p: &Preflight, v: f64) -> RunConfig {
    let value = value_of(p, v);
    let mut params = base.params.clone();
    match params.iter_mut().find(|(k, _)| *k == p.knob) {
        Some(slot) => slot.1 = value.clone(),
        None => params.push((p.knob.clone(), value.clone())),
    }
    let mut resolved = base.resolved.clone();
    match resolved.iter_mut().find(|(k, _)| *k == p.knob) {
        Some(slot) => slot.1 = value.clone(),
        None => resolved.push((p.knob.clone(), value.clone())),
    }
    RunConfig {
        name: format!(
            "preflight-{}{}",
            flags::abbreviation(&p.knob),
            flags::value_label(&value)
        ),
        id: expand::run_id_for(spec, base.engine, &resolved),
        source: base.source,
        params,
        resolved,
        engine: base.engine,
    }
}

/// A failed attempt's kind and message, for the margin.
pub fn why(r: &RunRecord) -> String {
    match (&r.failure_kind, &r.failure_message) {
        (Some(k), Some(m)) => format!("{}: {m}", k.as_str()),
        (Some(k), None) => k.as_str().to_string(),
        _ => String::new(),
    }
}

pub fn outcome(
    p: &Preflight,
    history: &[(Attempt, String)],
    found: Option<f64>,
    next_up: Option<f64>,
    interrupted: bool,
) -> Outcome {
    let next_up_failure = next_up.and_then(|n| {
        history
            .iter()
            .find(|(a, _)| (a.value - n).abs() <= 1e-9 * n.abs().max(1.0))
            .map(|(_, w)| w.clone())
    });
    Outcome {
        knob: p.knob.clone(),
        found,
        next_up,
        next_up_failure,
        attempts: history.iter().map(|(a, _)| *a).collect(),
        max_attempts: p.max_attempts,
        interrupted,
    }
}

/// Put the value found into every launch whose knob was `preflight`.
pub fn substitute(launch: &mut Launch, p: &Preflight, v: f64) {
    let value = value_of(p, v);
    for (k, x) in launch
        .run
        .params
        .iter_mut()
        .chain(launch.run.resolved.iter_mut())
    {
        if *k == p.knob && matches!(x, ParamValue::Str(s) if s == PREFLIGHT_VALUE) {
            *x = value.clone();
        }
    }
}

/// Whether a launch waits on the pre-flight's value.
pub fn needs_value(launch: &Launch, p: &Preflight) -> bool {
    launch
        .run
        .resolved
        .iter()
        .any(|(k, x)| *k == p.knob && matches!(x, ParamValue::Str(s) if s == PREFLIGHT_VALUE))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::search::Range;

    fn pf(from: f64, to: f64, resolution: f64, max_attempts: u64) -> Preflight {
        Preflight {
            knob: "mem_fraction_static".into(),
            range: Range {
                from,
                to,
                resolution,
            },
            max_attempts,
            burst_s: 10.0,
            max_retractions: 2,
        }
    }

    /// Run the search against a threshold: values ≤ `safe` survive.
    fn search(p: &Preflight, safe: f64) -> (Option<f64>, Option<f64>, usize) {
        let mut h = Vec::new();
        loop {
            match next_attempt(p, &h) {
                Step::Try(v) => h.push(Attempt {
                    value: v,
                    survived: v <= safe + 1e-12,
                }),
                Step::Done {
                    found,
                    next_up,
                    attempts,
                } => return (found, next_up, attempts),
            }
        }
    }

    #[test]
    fn finds_the_threshold_within_the_launch_bound() {
        let p = pf(0.80, 0.95, 0.01, 6);
        for k in 0..=15 {
            let safe = 0.80 + k as f64 * 0.01;
            let (found, next_up, n) = search(&p, safe);
            let found = found.unwrap_or(f64::NAN);
            assert!((found - safe).abs() < 1e-9, "safe {safe}: found {found}");
            assert!(n <= 6, "safe {safe}: {n} launches");
            if k < 15 {
                let up = next_up.unwrap_or(f64::NAN);
                assert!((up - safe - 0.01).abs() < 1e-9, "safe {safe}: next up {up}");
            }
        }
        // Nothing survives: one failure at `from` after `to`.
        assert_eq!(search(&p, 0.5), (None, Some(0.80), 2));
    }

    #[test]
    fn max_attempts_bounds_the_search_and_keeps_the_best_so_far() {
        let p = pf(0.80, 0.95, 0.01, 3);
        let (found, _, n) = search(&p, 0.88);
        assert_eq!(n, 3);
        // 0.95 failed, 0.80 survived, 0.87 survived: the best shown so far.
        assert_eq!(found, Some(0.87));
    }

    #[test]
    fn integer_knobs_search_whole_numbers() {
        let mut p = pf(8.0, 256.0, 8.0, 10);
        p.knob = "cuda_graph_max_bs".into();
        let (found, _, _) = search(&p, 100.0);
        assert_eq!(found, Some(96.0));
        assert_eq!(value_of(&p, 96.0), ParamValue::Int(96));
    }

    #[test]
    fn a_retraction_storm_is_more_than_max_retractions() {
        assert!(!retraction_storm(0, 0));
        assert!(retraction_storm(1, 0));
        assert!(!retraction_storm(2, 2), "exactly the limit is survived");
        assert!(retraction_storm(3, 2));
        let mut r = crate::tune::testing::record("preflight-mfs0.9");
        assert_eq!(storm(&r, 2), None, "no server summary: no retractions");
        r.server = Some(crate::observe::sglang_log::ServerSummary {
            retractions: 3,
            ..Default::default()
        });
        assert_eq!(
            storm(&r, 2).as_deref(),
            Some(
                "retraction storm under the burst: 3 retractions (search.preflight.max_retractions is 2)"
            )
        );
        assert_eq!(storm(&r, 3), None);
    }

    #[test]
    fn a_cut_burst_with_nothing_failed_is_alive() {
        use crate::observe::client::ClientSummary;
        let cut = RunRecord {
            status: crate::record::RunStatus::Failed,
            failure_kind: Some(FailureKind::LoadFailed),
            failure_message: Some("no request succeeded (0 failed): ".into()),
            client: Some(ClientSummary {
                cut_off: 16,
                ..Default::default()
            }),
            ..crate::tune::testing::record("a")
        };
        assert_eq!(cut_but_alive(&cut), Some(16));
        let with = |f: &dyn Fn(&mut RunRecord)| {
            let mut r = cut.clone();
            f(&mut r);
            cut_but_alive(&r)
        };
        // Anything else is not a cut burst: a failed request, a finished one, nothing cut,
        // another failure, another message, no client side.
        let client = |f: fn(&mut ClientSummary)| {
            move |r: &mut RunRecord| {
                if let Some(c) = r.client.as_mut() {
                    f(c)
                }
            }
        };
        assert_eq!(with(&client(|c| c.failed = 1)), None);
        assert_eq!(with(&client(|c| c.completed = 1)), None);
        assert_eq!(with(&client(|c| c.cut_off = 0)), None);
        assert_eq!(with(&|r| r.failure_kind = Some(FailureKind::Oom)), None);
        assert_eq!(
            with(&|r| r.failure_message = Some("the server died".into())),
            None
        );
        assert_eq!(with(&|r| r.failure_message = None), None);
        assert_eq!(with(&|r| r.client = None), None);
    }

    /// A sweep with `mem_fraction_static: [preflight]` and a second key; `workload` and
    /// `search_extra` are YAML lines under `workload:` and `search:`.
    fn pf_spec(workload: &str, search_extra: &str) -> SweepSpec {
        crate::tune::testing::spec(&format!(
            "  args: {{tp_size: 2}}\nsweep:\n  mem_fraction_static: [preflight]\n  chunked_prefill_size: [512]\nworkload:\n  vocab_size: 100\n  input_tokens: 10\n  output_tokens: 20\n{workload}objective:\n  maximize: output_tok_s\n  slo: {{ttft_ms_p99: 250}}\nsearch:\n  preflight:\n    mem_fraction_static: {{from: 0.8, to: 0.95, resolution: 0.01}}\n    burst_s: 7\n{search_extra}"
        ))
    }

    #[test]
    fn the_burst_is_the_workloads_worst_case() {
        let s = pf_spec(
            "  concurrency: [2, 8, 4]\n  requests: 40\n  warmup_requests: 3\n",
            "",
        );
        let p = s.search.preflight.clone().expect("preflight");
        let b = burst_spec(&s, &p);
        let w = &b.workload;
        assert_eq!(
            w.load_points,
            vec![LoadPoint {
                concurrency: 8,
                request_rate: None
            }]
        );
        assert_eq!(w.concurrency, 8);
        assert_eq!((w.input_tokens, w.output_tokens), (10, 20));
        assert_eq!(w.duration_s, Some(7.0));
        assert_eq!(w.requests, None);
        assert_eq!(w.deadline, DeadlinePolicy::Cut);
        assert_eq!(w.warmup_requests, 0);
        assert!(w.ignore_eos);
        assert_eq!(w.request_rate, None);
        assert_eq!(b.repeats, 1);
        assert!(b.search.max_load.is_none());

        // The longest of a length distribution; the max-load search's top when higher.
        let s = pf_spec(
            "  concurrency: 2\n  duration_s: 5\n",
            "  max_load:\n    concurrency: {from: 1, to: 48}\n",
        );
        let s = SweepSpec {
            workload: crate::plan::spec::WorkloadSpec {
                input_dist: Some(crate::plan::spec::LengthDist::Normal {
                    mean: 100.0,
                    stddev: 10.0,
                    min: 50,
                    max: 300,
                }),
                ..s.workload.clone()
            },
            ..s
        };
        let p = s.search.preflight.clone().expect("preflight");
        let b = burst_spec(&s, &p);
        assert_eq!(b.workload.concurrency, 48);
        assert_eq!(b.workload.input_tokens, 300);
        assert!(b.workload.input_dist.is_none() && b.workload.output_dist.is_none());
        assert!(b.workload.dataset.is_none());
        assert!(b.search.max_load.is_none());
    }

    /// Under vLLM an attempt's value reaches vLLM's own flag: kv_cache_memory_bytes as whole
    /// bytes, mem_fraction_static as --gpu-memory-utilization.
    #[test]
    fn a_vllm_attempt_sets_vllms_own_flag() {
        let spec = |knob: &str, range: &str| {
            crate::tune::testing::spec(&format!(
                "  engine: vllm\n  args: {{max_model_len: 512}}\nsweep:\n  {knob}: [preflight]\nworkload:\n  vocab_size: 100\n  concurrency: 2\n  requests: 4\n  input_tokens: 10\n  output_tokens: 20\nsearch:\n  preflight:\n    {knob}: {range}\n    burst_s: 5\n"
            ))
        };
        let s = spec(
            "kv_cache_memory_bytes",
            "{from: 8388608, to: 67108864, resolution: 8388608}",
        );
        let p = s.search.preflight.clone().expect("preflight");
        let plan = crate::plan::expand::expand(&s);
        let c = attempt_config(&s, &plan.runs[0], &p, 33554432.0);
        assert_eq!(
            c.param("kv_cache_memory_bytes"),
            Some(&ParamValue::Int(33554432))
        );
        let cmd = crate::server::command::build(&s.server, &c, Some(1))
            .args
            .join(" ");
        assert!(cmd.contains("--kv-cache-memory-bytes 33554432"), "{cmd}");
        assert!(cmd.contains("--max-model-len 512"), "{cmd}");

        let s = spec(
            "mem_fraction_static",
            "{from: 0.5, to: 0.9, resolution: 0.05}",
        );
        let p = s.search.preflight.clone().expect("preflight");
        let plan = crate::plan::expand::expand(&s);
        let c = attempt_config(&s, &plan.runs[0], &p, 0.75);
        let cmd = crate::server::command::build(&s.server, &c, Some(1))
            .args
            .join(" ");
        assert!(cmd.contains("--gpu-memory-utilization 0.75"), "{cmd}");
        assert!(!cmd.contains("--mem-fraction-static"), "{cmd}");
    }

    #[test]
    fn an_attempt_sets_the_knob_on_the_first_configuration() {
        let s = pf_spec("  concurrency: 2\n  requests: 4\n", "");
        let p = s.search.preflight.clone().expect("preflight");
        let plan = crate::plan::expand::expand(&s);
        let base = &plan.runs[0];
        let c = attempt_config(&s, base, &p, 0.88);
        assert_eq!(c.name, "preflight-mfs0.88");
        assert_eq!(
            c.param("mem_fraction_static"),
            Some(&ParamValue::Float(0.88))
        );
        assert_eq!(
            c.params
                .iter()
                .filter(|(k, _)| k == "mem_fraction_static")
                .count(),
            1,
            "replaced, not added: {:?}",
            c.params
        );
        assert_eq!(
            c.param("chunked_prefill_size"),
            base.param("chunked_prefill_size")
        );
        assert_eq!(c.param("tp_size"), Some(&ParamValue::Int(2)));
        assert_eq!(c.id, expand::run_id(&s, &c.resolved));
        assert_ne!(c.id, attempt_config(&s, base, &p, 0.9).id);
        // A knob the configuration does not set is added.
        let mut bare = base.clone();
        bare.params.retain(|(k, _)| k != "mem_fraction_static");
        bare.resolved.retain(|(k, _)| k != "mem_fraction_static");
        let c = attempt_config(&s, &bare, &p, 0.81);
        assert_eq!(
            c.param("mem_fraction_static"),
            Some(&ParamValue::Float(0.81))
        );
        assert!(
            c.params
                .iter()
                .any(|(k, v)| k == "mem_fraction_static" && *v == ParamValue::Float(0.81))
        );
    }

    #[test]
    fn the_value_found_replaces_preflight_in_waiting_launches() {
        let s = pf_spec("  concurrency: 2\n  requests: 4\n", "");
        let p = s.search.preflight.clone().expect("preflight");
        let plan = crate::plan::expand::expand(&s);
        let mut l =
            crate::tune::work::plan_launches(&s, &plan, &|_, _| false, &|_| Vec::new()).remove(0);
        assert!(needs_value(&l, &p));
        substitute(&mut l, &p, 0.9);
        assert!(!needs_value(&l, &p));
        assert_eq!(
            l.run.param("mem_fraction_static"),
            Some(&ParamValue::Float(0.9))
        );
        assert!(
            l.run
                .params
                .iter()
                .any(|(k, v)| k == "mem_fraction_static" && *v == ParamValue::Float(0.9))
        );
        // Other keys, and a value that is not `preflight`, are left alone.
        assert_eq!(
            l.run.param("chunked_prefill_size"),
            Some(&ParamValue::Int(512))
        );
        substitute(&mut l, &p, 0.5);
        assert_eq!(
            l.run.param("mem_fraction_static"),
            Some(&ParamValue::Float(0.9))
        );
        let mut other = p.clone();
        other.knob = "chunked_prefill_size".into();
        assert!(!needs_value(&l, &other));
    }

    #[test]
    fn attempts_and_their_failures_are_recorded() {
        let row = |v: &str, probe: &str| {
            crate::tune::testing::row(&[("param_mem_fraction_static", v), ("probe", probe)])
        };
        assert_eq!(
            Attempt::of_row(&row("0.9", "pass"), "mem_fraction_static"),
            Some(Attempt {
                value: 0.9,
                survived: true
            })
        );
        assert_eq!(
            Attempt::of_row(&row("0.95", "fail"), "mem_fraction_static"),
            Some(Attempt {
                value: 0.95,
                survived: false
            })
        );
        assert_eq!(
            Attempt::of_row(&row("", "pass"), "mem_fraction_static"),
            None
        );
        assert_eq!(
            Attempt::of_row(&row("0.9", "pass"), "max_total_tokens"),
            None
        );

        let mut r = crate::tune::testing::record("a");
        assert_eq!(why(&r), "");
        r.failure_kind = Some(FailureKind::Oom);
        assert_eq!(why(&r), "oom");
        r.failure_message = Some("CUDA out of memory".into());
        assert_eq!(why(&r), "oom: CUDA out of memory");
        r.failure_kind = None;
        assert_eq!(why(&r), "");

        let p = pf(0.80, 0.95, 0.01, 6);
        let h = vec![
            (
                Attempt {
                    value: 0.95,
                    survived: false,
                },
                "oom: at start".to_string(),
            ),
            (
                Attempt {
                    value: 0.8,
                    survived: true,
                },
                String::new(),
            ),
            (
                Attempt {
                    value: 0.88,
                    survived: false,
                },
                "load_failed: retraction storm".to_string(),
            ),
        ];
        let o = outcome(&p, &h, Some(0.87), Some(0.88), false);
        assert_eq!(o.knob, "mem_fraction_static");
        assert_eq!((o.found, o.next_up), (Some(0.87), Some(0.88)));
        assert_eq!(
            o.next_up_failure.as_deref(),
            Some("load_failed: retraction storm")
        );
        assert_eq!(o.attempts.len(), 3);
        assert_eq!(o.attempts[2].value, 0.88);
        assert_eq!(o.max_attempts, 6);
        assert!(!o.interrupted);
        let o = outcome(&p, &h, None, None, true);
        assert_eq!(o.next_up_failure, None);
        assert!(o.interrupted);
    }

    #[test]
    fn running_out_of_attempts_early_keeps_what_was_shown() {
        // One attempt: `to` failed, nothing survived yet.
        let p = pf(0.80, 0.95, 0.01, 1);
        assert_eq!(next_attempt(&p, &[]), Step::Try(0.95));
        let h = [Attempt {
            value: 0.95,
            survived: false,
        }];
        assert_eq!(
            next_attempt(&p, &h),
            Step::Done {
                found: None,
                next_up: Some(0.95),
                attempts: 1
            }
        );
        // Two: `to` failed, `from` survived, no bisection left.
        let p = pf(0.80, 0.95, 0.01, 2);
        assert_eq!(next_attempt(&p, &h), Step::Try(0.8));
        let h2 = [
            h[0],
            Attempt {
                value: 0.8,
                survived: true,
            },
        ];
        assert_eq!(
            next_attempt(&p, &h2),
            Step::Done {
                found: Some(0.8),
                next_up: Some(0.95),
                attempts: 2
            }
        );
        // `to` survives: done at once, nothing above it to report.
        assert_eq!(
            next_attempt(
                &p,
                &[Attempt {
                    value: 0.95,
                    survived: true
                }]
            ),
            Step::Done {
                found: Some(0.95),
                next_up: None,
                attempts: 1
            }
        );
        // A range of one value.
        let one = pf(0.9, 0.9, 0.01, 6);
        assert_eq!(next_attempt(&one, &[]), Step::Try(0.9));
        assert_eq!(
            next_attempt(
                &one,
                &[Attempt {
                    value: 0.9,
                    survived: false
                }]
            ),
            Step::Done {
                found: None,
                next_up: Some(0.9),
                attempts: 1
            }
        );
    }

    #[test]
    fn the_bisection_tries_the_midpoint_on_the_grid() {
        // 0.95 failed, 0.80 survived: the next is 0.87 (k = 7 of 15), then by halves.
        let p = pf(0.80, 0.95, 0.01, 10);
        let mut h = vec![
            Attempt {
                value: 0.95,
                survived: false,
            },
            Attempt {
                value: 0.8,
                survived: true,
            },
        ];
        assert_eq!(next_attempt(&p, &h), Step::Try(0.87));
        h.push(Attempt {
            value: 0.87,
            survived: false,
        });
        assert_eq!(next_attempt(&p, &h), Step::Try(0.83));
        h.push(Attempt {
            value: 0.83,
            survived: true,
        });
        assert_eq!(next_attempt(&p, &h), Step::Try(0.85));
        assert_eq!(grid(&p, 3.0), 0.83);
        assert_eq!(value_of(&p, 0.83), ParamValue::Float(0.83));
    }
}
