//! The step log's words: a configuration's name, what a launch's evidence said, and why the
//! exploration ends.

use super::state::{Dropped, State};
use super::types::{Outcome, Point, Space};
use crate::observe::diagnose::VerdictKind;

/// A point's configuration name, in the grid's convention (`plan::flags::abbreviation` and
/// value labels, `_`-joined, e.g. `mfs0.88_hicache48`), so a tune's rows read like a sweep's.
pub fn name(space: &Space, point: &Point) -> String {
    space
        .knobs
        .iter()
        .zip(point)
        .filter_map(|(k, &i)| {
            k.values.get(i).map(|v| {
                format!(
                    "{}{}",
                    crate::plan::flags::abbreviation(&k.key),
                    crate::plan::flags::value_label(v)
                )
            })
        })
        .collect::<Vec<_>>()
        .join("_")
}

/// What the evidence of a launch said, for the step log: the verdict and its numbers, e.g.
/// `kv_cache_bound (usage 0.93, 18.8 queued, 5.8 running of 32)`.
pub(super) fn said(outcome: &Outcome) -> String {
    let (evidence, eligible, why_not) = match outcome {
        Outcome::Failed { kind } => return format!("failed ({kind})"),
        Outcome::Measured {
            evidence,
            eligible,
            why_not,
            ..
        } => (evidence, *eligible, why_not),
    };
    let mut nums = Vec::new();
    if let Some(u) = evidence.kv_usage_max {
        nums.push(format!("usage {u:.2}"));
    }
    if let Some(q) = evidence.queue_mean {
        nums.push(format!("{q:.1} queued"));
    }
    match (evidence.running_mean, evidence.offered) {
        (Some(r), Some(o)) => nums.push(format!("{r:.1} running of {o}")),
        (Some(r), None) => nums.push(format!("{r:.1} running")),
        _ => {}
    }
    if let Some(n) = evidence.retractions.filter(|&n| n > 0) {
        nums.push(format!("{n} retractions"));
    }
    if !eligible {
        nums.push(format!("ineligible: {why_not}"));
    }
    let mut verdict = evidence
        .verdict
        .map_or("no verdict", VerdictKind::as_str)
        .to_string();
    for v in &evidence.also {
        verdict = format!("{verdict} + {}", v.as_str());
    }
    if nums.is_empty() {
        verdict.to_string()
    } else {
        format!("{verdict} ({})", nums.join(", "))
    }
}

/// Why the exploration ends when no move is left: what closed each knob.
pub(super) fn stop_reason(space: &Space, st: &State, head: &str) -> String {
    let keys = |d: Dropped| -> Vec<&str> {
        space
            .knobs
            .iter()
            .zip(&st.dropped)
            .filter(|(_, x)| **x == Some(d))
            .map(|(k, _)| k.key.as_str())
            .collect()
    };
    let mut why = format!(
        "{head}: no step from the leader is left to beat it beyond the noise (±{:.0}%): every rule's move and every neighbour is launched, banned or over a cliff",
        st.noise * 100.0
    );
    let flat: Vec<&str> = space
        .knobs
        .iter()
        .enumerate()
        .filter(|&(k, _)| st.without_response(k))
        .map(|(_, kn)| kn.key.as_str())
        .collect();
    if !flat.is_empty() {
        why.push_str(&format!("; no response within noise: {}", flat.join(", ")));
    }
    let off = keys(Dropped::NotInEffect);
    if !off.is_empty() {
        why.push_str(&format!("; not in effect: {}", off.join(", ")));
    }
    why
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::super::next;
    use super::super::types::{Evidence, Failure, Knob};
    use super::*;
    use crate::server::failure::FailureKind;

    #[test]
    fn the_log_line_says_a_failure_and_an_ineligible_launch() {
        assert_eq!(
            said(&Outcome::Failed {
                kind: Failure::Server(FailureKind::Oom)
            }),
            "failed (oom)"
        );
        let sp = space();
        let mut o = ineligible(sp.start.clone(), 1.0, "quality: fail");
        if let Outcome::Measured { evidence, .. } = &mut o.outcome {
            evidence.retractions = Some(7);
            evidence.offered = None;
        }
        assert_eq!(
            said(&o.outcome),
            "kv_cache_bound (usage 0.93, 18.8 queued, 5.8 running, 7 retractions, ineligible: quality: fail)"
        );
        let bare = Outcome::Measured {
            score: 1.0,
            cv: None,
            eligible: true,
            why_not: String::new(),
            slo_excess: None,
            evidence: Evidence::default(),
            not_in_effect: vec![],
        };
        assert_eq!(said(&bare), "no verdict");
    }

    #[test]
    fn no_retractions_are_not_in_the_log_line() {
        let sp = space();
        let mut o = measured(sp.start.clone(), 1.0, VerdictKind::ComputeBound);
        if let Outcome::Measured { evidence, .. } = &mut o.outcome {
            evidence.retractions = Some(0);
        }
        assert_eq!(
            said(&o.outcome),
            "compute_bound (usage 0.93, 18.8 queued, 5.8 running of 32)"
        );
    }

    #[test]
    fn the_stop_line_names_the_knobs_without_response_and_only_those() {
        let tiny = Space {
            knobs: vec![Knob {
                key: "page_size".into(),
                values: ints(&[1, 16]),
            }],
            start: vec![0],
            confirm: 0,
        };
        let flat = [
            measured(vec![0], 100.0, VerdictKind::Unknown),
            measured(vec![1], 100.5, VerdictKind::Unknown),
        ];
        let why = stop_why(next(&tiny, &flat, 5));
        assert!(
            why.ends_with("; no response within noise: page_size"),
            "{why}"
        );
        let moved = [
            measured(vec![0], 100.0, VerdictKind::Unknown),
            measured(vec![1], 50.0, VerdictKind::Unknown),
        ];
        let why = stop_why(next(&tiny, &moved, 5));
        assert!(why.ends_with("banned or over a cliff"), "{why}");
    }
}
