//! `next`, the tune's one step: the start first, then the exploration while its budget lasts
//! (each suspect or near-bound launch measured again once before it is read), then (or once
//! the exploration has no move left) the confirmation.

use super::confirm::{confirm, confirm_left, confirmations};
use super::explore::{Explored, explore};
use super::remeasure;
use super::standing::leader;
use super::state::State;
use super::types::{Next, Observation, Space, launch};

/// The next experiment(s) after `seen` (every configuration of this tune so far, in the order
/// first launched), with at most `launches_left` launches of budget left. Deterministic: the
/// same inputs give the same answer, so `resume` replays a tune to the same path.
///
/// Two phases: the exploration spends the budget less `space.confirm`; then (or when it has no
/// move left) the confirmation re-launches the leader and the best launches within noise of it.
pub fn next(space: &Space, seen: &[Observation], launches_left: usize) -> Next {
    next_with(space, seen, launches_left, true)
}

/// [`next`], with a rule's move `compose`d with the limits behind it and the response model's
/// sized moves first (the one-slot tune), or plain: the verdict's rules alone (the first of a
/// batch's hedges, `batch`, whose slots lift those limits separately).
pub(super) fn next_with(
    space: &Space,
    seen: &[Observation],
    launches_left: usize,
    compose: bool,
) -> Next {
    if launches_left == 0 {
        return Next::Stop {
            why: "the launch budget is spent".to_string(),
        };
    }
    if !seen.iter().any(|o| o.point == space.start) {
        if space.start.len() != space.knobs.len()
            || space
                .knobs
                .iter()
                .zip(&space.start)
                .any(|(k, &i)| i >= k.values.len())
        {
            return Next::Stop {
                why: "the start is not a point of the space".to_string(),
            };
        }
        return launch(space.start.clone(), "the start".to_string(), false);
    }
    let st = State::read(space, seen);
    let explore_left = explore_left(space, seen, launches_left);
    // Once a confirmation ran, the exploration is over: its budget was spent, or it had no
    // move left.
    let explored = if explore_left > 0 && confirmations(seen) == 0 {
        // A suspect launch, or one at a bound, is measured again before anything is read
        // from it.
        if let Some(p) = remeasure::again(space, seen, &st) {
            return Next::Launch(vec![p]);
        }
        match explore(space, seen, &st, compose) {
            Explored::Launch(n) => return n,
            Explored::Spent(why) => why,
        }
    } else {
        // The exploration is over: say why it would have stopped, if it would have.
        match explore(space, seen, &st, compose) {
            Explored::Spent(why) => why,
            Explored::Launch(_) => format!(
                "the exploration's budget is spent ({} launch(es) kept to confirm the leader)",
                space.confirm
            ),
        }
    };
    confirm(space, seen, &st, &explored)
}

/// The launches the exploration may still take of `launches_left`: all but the confirmation's
/// reserve. The reserve confirms an eligible leader: while nothing is eligible (and no
/// confirmation ran) there is nothing to confirm, and the exploration goes on with every launch
/// left; it ends early only on the model's numbers (no batch meets the SLO) or with no move
/// left.
pub(super) fn explore_left(space: &Space, seen: &[Observation], launches_left: usize) -> usize {
    let reserve = if leader(space, seen).is_none() && confirmations(seen) == 0 {
        0
    } else {
        confirm_left(space, seen)
    };
    launches_left.saturating_sub(reserve)
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::super::types::{Failure, Outcome, Point};
    use super::*;
    use crate::observe::diagnose::VerdictKind;
    use crate::server::failure::FailureKind;

    #[test]
    fn the_start_comes_first_and_a_spent_budget_stops() {
        let sp = space();
        let p = one(next(&sp, &[], 5));
        assert_eq!((p.point, p.why.as_str()), (sp.start.clone(), "the start"));
        assert!(stop_why(next(&sp, &[], 0)).contains("budget"));
        let seen = [measured(sp.start.clone(), 1.0, VerdictKind::KvCacheBound)];
        assert!(stop_why(next(&sp, &seen, 0)).contains("budget"));
    }

    #[test]
    fn a_start_outside_the_space_stops() {
        let mut sp = space();
        sp.start[MFS] = 99;
        assert!(stop_why(next(&sp, &[], 5)).contains("not a point"));
        sp.start = vec![0];
        assert!(stop_why(next(&sp, &[], 5)).contains("not a point"));
    }

    #[test]
    fn a_tune_never_repeats_a_point_and_replays_the_same_path() {
        let sp = space();
        // A fixed landscape: score by the point's digits, verdict by its running cap.
        let outcome = |p: &Point| -> Outcome {
            if p[MFS] > 5 {
                return Outcome::Failed {
                    kind: Failure::Server(FailureKind::Oom),
                };
            }
            let verdict = match p[MRR] {
                0 | 1 => VerdictKind::QueueWithSpareKv,
                2 => VerdictKind::KvCacheBound,
                3 => VerdictKind::RetractionChurn,
                _ => VerdictKind::ComputeBound,
            };
            let score = 100.0 + (p[MFS] * 7 + p[HICACHE] * 5 + p[MRR] * 11 + p[SC]) as f64;
            Outcome::Measured {
                score,
                cv: None,
                eligible: p[DTYPE] == 0,
                why_not: if p[DTYPE] == 0 { "" } else { "quality: fail" }.into(),
                slo_excess: None,
                evidence: ev(verdict),
                not_in_effect: vec![],
            }
        };
        let run = || {
            let mut seen: Vec<Observation> = Vec::new();
            let mut log = Vec::new();
            loop {
                match next(&sp, &seen, 200 - seen.len()) {
                    Next::Launch(v) => {
                        for p in v {
                            assert!(!seen.iter().any(|o| o.point == p.point), "{}", p.why);
                            log.push(p.why.clone());
                            let o = outcome(&p.point);
                            seen.push(Observation::once(p.point, o));
                        }
                    }
                    Next::Stop { why } => {
                        log.push(why);
                        break;
                    }
                }
            }
            (seen.len(), log)
        };
        let (n, log) = run();
        assert!(n > 5 && n < 200, "{n} launches");
        assert_eq!(run(), (n, log));
    }
}
