//! Ranking the launches: where each stands (eligible with its score, or this far from its
//! SLO), the leader, the base the exploration steps from, and the launches within noise of
//! one (its ties).

use super::types::{self, Observation, Outcome, Space, verdict_of};

/// Where a launch stands for the strategy: eligible with its score, or ineligible for its SLO
/// alone, this far from eligible; None for a failure or any other ineligibility.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Standing {
    Eligible { score: f64 },
    Slo { excess: f64, score: f64 },
}

fn standing(o: &Observation) -> Option<Standing> {
    match o.outcome {
        Outcome::Measured {
            score,
            eligible: true,
            ..
        } => Some(Standing::Eligible { score }),
        Outcome::Measured {
            score,
            eligible: false,
            slo_excess: Some(excess),
            ..
        } if excess.is_finite() => Some(Standing::Slo { excess, score }),
        _ => None,
    }
}

/// The launch the exploration steps from: the leader; while nothing is eligible, the launch
/// nearest to eligible (its SLO excess least, within noise the better score, then the
/// earlier); while no launch is even that (failures, quality failures), the start.
pub fn base(space: &Space, seen: &[Observation], noise: f64) -> usize {
    leader(space, seen)
        .or_else(|| nearest(seen, noise))
        .or_else(|| seen.iter().position(|o| o.point == space.start))
        .unwrap_or(0)
}

/// The index in `seen` of the best eligible measured launch, if any (of equal scores, the
/// first).
pub fn leader(_space: &Space, seen: &[Observation]) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for (i, o) in seen.iter().enumerate() {
        if let Outcome::Measured {
            score,
            eligible: true,
            ..
        } = o.outcome
        {
            if best.is_none_or(|(_, b)| score > b) {
                best = Some((i, score));
            }
        }
    }
    best.map(|(i, _)| i)
}

/// Among the launches ineligible for their SLO alone, the one nearest to eligible: the least
/// excess, and among those within `noise` of it, the best score (then the earliest).
fn nearest(seen: &[Observation], noise: f64) -> Option<usize> {
    let slo: Vec<(usize, f64, f64)> = seen
        .iter()
        .enumerate()
        .filter_map(|(i, o)| match standing(o) {
            Some(Standing::Slo { excess, score }) => Some((i, excess, score)),
            _ => None,
        })
        .collect();
    let least = slo.iter().map(|s| s.1).fold(f64::INFINITY, f64::min);
    let mut best: Option<(usize, f64)> = None;
    for &(i, excess, score) in &slo {
        if !types::differs(excess, least, noise) && best.is_none_or(|(_, b)| score > b) {
            best = Some((i, score));
        }
    }
    best.map(|(i, _)| i)
}

/// Whether two standings are within noise of each other: two eligible scores, or two SLO
/// excesses, each one noisy measurement (√2 × the noise apart at most).
fn within_noise(a: Standing, b: Standing, noise: f64) -> bool {
    let n = noise * std::f64::consts::SQRT_2;
    match (a, b) {
        (Standing::Eligible { score: x }, Standing::Eligible { score: y }) => {
            !types::differs(x, y, n)
        }
        (Standing::Slo { excess: x, .. }, Standing::Slo { excess: y, .. }) => {
            !types::differs(x, y, n)
        }
        _ => false,
    }
}

/// The launches other than `lead` whose standing is within noise of its standing and whose
/// verdict differs from its verdict (one with the same verdict would ask for the same moves
/// again, each a launch, and spend the budget on the noise), best first (ties by launch order).
pub(super) fn near_ties(seen: &[Observation], noise: f64, lead: usize) -> Vec<usize> {
    let Some(me) = seen.get(lead).and_then(standing) else {
        return Vec::new();
    };
    let mut ties: Vec<(usize, Standing)> = seen
        .iter()
        .enumerate()
        .filter(|&(i, o)| i != lead && verdict_of(o) != verdict_of(&seen[lead]))
        .filter_map(|(i, o)| standing(o).map(|s| (i, s)))
        .filter(|&(_, s)| within_noise(s, me, noise))
        .collect();
    ties.sort_by(|a, b| better(b.1, a.1).then(a.0.cmp(&b.0)));
    ties.into_iter().map(|(i, _)| i).collect()
}

/// Orders two standings: eligible above ineligible, a higher score, a smaller excess.
fn better(a: Standing, b: Standing) -> std::cmp::Ordering {
    match (a, b) {
        (Standing::Eligible { score: x }, Standing::Eligible { score: y }) => x.total_cmp(&y),
        (Standing::Eligible { .. }, Standing::Slo { .. }) => std::cmp::Ordering::Greater,
        (Standing::Slo { .. }, Standing::Eligible { .. }) => std::cmp::Ordering::Less,
        (Standing::Slo { excess: x, .. }, Standing::Slo { excess: y, .. }) => y.total_cmp(&x),
    }
}

/// The eligible launches other than `lead` within noise of it, the noise of each mean shrinking
/// with its launches (two means of n and m launches differ by up to noise × √(1/n + 1/m)),
/// best first.
pub(super) fn near_leader(seen: &[Observation], noise: f64, lead: usize) -> Vec<usize> {
    let Some(Standing::Eligible { score: best }) = seen.get(lead).and_then(standing) else {
        return Vec::new();
    };
    let n = seen[lead].launches.max(1) as f64;
    let mut near: Vec<(usize, f64)> = seen
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != lead)
        .filter_map(|(i, o)| match standing(o) {
            Some(Standing::Eligible { score }) => {
                let m = o.launches.max(1) as f64;
                let noise = noise * (1.0 / n + 1.0 / m).sqrt();
                (!types::differs(score, best, noise)).then_some((i, score))
            }
            _ => None,
        })
        .collect();
    near.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    near.into_iter().map(|(i, _)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::super::next;
    use super::*;
    use crate::observe::diagnose::VerdictKind;

    #[test]
    fn of_equal_scores_the_first_leads() {
        let sp = space();
        let seen = [
            measured(sp.start.clone(), 100.0, VerdictKind::Unknown),
            measured(with(&sp.start, MRR, 2), 100.0, VerdictKind::Unknown),
            failed(with(&sp.start, MRR, 3), "oom"),
        ];
        assert_eq!(leader(&sp, &seen), Some(0));
        assert_eq!(leader(&sp, &seen[2..]), None);
    }

    #[test]
    fn the_nearest_launch_is_the_least_excess_and_within_noise_the_better_score() {
        let sp = stacked();
        let e = || evidence(VerdictKind::KvCacheBound, 12.0, 64.0, 0.97);
        let seen = vec![
            slo(vec![1, 0, 0], 600.0, 3.0, e()),
            slo(vec![2, 0, 0], 500.0, 2.0, e()),
            // Within 2% of the least excess, with a better score.
            slo(vec![3, 0, 0], 700.0, 2.03, e()),
            // Far nearer, but the quality guard failed it: never a base.
            ineligible(vec![4, 0, 0], 900.0, "quality: fail"),
            failed(vec![5, 0, 0], "oom"),
        ];
        assert_eq!(nearest(&seen, 0.02), Some(2));
        assert_eq!(base(&sp, &seen, 0.02), 2);
        // An eligible launch leads, however low its score.
        let mut with_eligible = seen.clone();
        with_eligible.push(measured(vec![6, 0, 0], 10.0, VerdictKind::ComputeBound));
        assert_eq!(base(&sp, &with_eligible, 0.02), 5);
        // Only failures: the start.
        let fails = vec![failed(vec![1, 0, 0], "oom"), failed(vec![2, 0, 0], "oom")];
        assert_eq!(base(&sp, &fails, 0.02), 0);
        // Equal excess and score: the earlier.
        let twins = vec![
            slo(vec![1, 0, 0], 600.0, 2.0, e()),
            slo(vec![2, 0, 0], 600.0, 2.0, e()),
        ];
        assert_eq!(nearest(&twins, 0.02), Some(0));
        // A non-finite excess is no standing.
        let nan = vec![slo(vec![1, 0, 0], 600.0, f64::NAN, e())];
        assert_eq!(nearest(&nan, 0.02), None);
    }

    #[test]
    fn near_the_leader_is_within_the_noise_of_two_means_which_shrinks_with_their_launches() {
        let e = || evidence(VerdictKind::ComputeBound, 64.0, 64.0, 0.5);
        // Noise 2% (cv 1%): one launch each, two means differ by up to 2% × √2 = 2.83%.
        let mut seen = vec![
            measured_with(vec![1, 0, 0], 1000.0, e()),
            measured_with(vec![2, 0, 0], 975.0, e()),
            measured_with(vec![3, 0, 0], 969.0, e()),
        ];
        // The noise the state reads from these launches (their cv of 1%, doubled).
        let noise = 0.02;
        assert_eq!(near_leader(&seen, noise, 0), vec![1]);
        // Two launches each: 2% × √(1/2 + 1/2) = 2%; 2.5% is beyond it.
        seen[0].launches = 2;
        seen[1].launches = 2;
        assert!(near_leader(&seen, noise, 0).is_empty());
        // The leader at 4 launches, the other at 1: 2% × √(1/4 + 1) = 2.24%.
        seen[0].launches = 4;
        seen[1].launches = 1;
        assert!(near_leader(&seen, noise, 0).is_empty());
        seen[1] = measured_with(vec![2, 0, 0], 978.0, e());
        assert_eq!(near_leader(&seen, noise, 0), vec![1]);
    }

    #[test]
    fn while_nothing_is_eligible_the_moves_compose_from_the_launch_nearest_to_it() {
        let sp = stacked();
        let s = sp.start.clone();
        // The start: the pool holds 12 of 64, the cap is 16: KV first.
        let mut seen = vec![slo(
            s.clone(),
            600.0,
            9.0,
            evidence(VerdictKind::KvCacheBound, 12.0, 64.0, 0.97),
        )];
        let p = one(next(&sp, &seen, 10));
        // With the cap and the graphs behind the pool lifted in the same launch (issue 42).
        assert_eq!(p.point, vec![4, 3, 2], "{}", p.why);
        // The pool still binds, at 40 of 64: nearer to eligible.
        seen.push(slo(
            p.point,
            1780.0,
            2.0,
            evidence(VerdictKind::KvCacheBound, 40.0, 64.0, 0.97),
        ));
        assert_eq!(base(&sp, &seen, 0.02), 1);
        let p = one(next(&sp, &seen, 10));
        // From that launch, not from the start: more KV again.
        assert!(p.point[0] > 4 && p.point[1..] == [3, 2], "{}", p.why);
        assert!(
            p.why.starts_with("mfs0.88_mrr64_cgbs64: kv_cache_bound"),
            "{}",
            p.why
        );
    }

    #[test]
    fn a_launch_within_noise_with_another_verdict_is_followed_too() {
        let mut sp = space();
        let s = with(&with(&sp.start, MFS, 7), MRR, 3);
        sp.start = s.clone();
        // The leader's queue waits on the running cap; lifting it measured within noise, and
        // there the pool is full: its "more KV" is the next move, not a neighbour search.
        let mut seen = vec![
            measured(s.clone(), 100.0, VerdictKind::QueueWithSpareKv),
            measured(with(&s, MRR, 4), 99.0, VerdictKind::KvCacheBound),
        ];
        if let Outcome::Measured { evidence, .. } = &mut seen[0].outcome {
            evidence.kv_usage_max = Some(0.95);
        }
        // The leader's own moves: chunked prefill is not in this space, conservativeness is
        // skipped with a full pool, so the tie's moves come next (the memory fraction at its
        // top, the dtype's next entry; the host tier is no KV for the batch).
        let p = one(next(&sp, &seen, 5));
        assert_eq!(p.point, with(&with(&s, MRR, 4), DTYPE, 1), "{}", p.why);
        assert!(
            p.why.starts_with("mfs0.94_kv-auto_hicache0_mrr256"),
            "{}",
            p.why
        );
    }

    #[test]
    fn only_launches_within_noise_of_the_leader_with_another_verdict_are_followed() {
        let mut sp = space();
        let s = with(&with(&sp.start, MFS, 7), MRR, 4);
        sp.start = s.clone();
        let full = |mut o: Observation, usage: f64| {
            if let Outcome::Measured { evidence, .. } = &mut o.outcome {
                evidence.kv_usage_max = Some(usage);
            }
            o
        };
        // The leader's moves are spent (the cap at its top, the pool full); the generic search
        // from the leader starts with the memory fraction down (it is at its top).
        let from_leader = with(&s, MFS, 6);
        let lead = full(
            measured(s.clone(), 100.0, VerdictKind::QueueWithSpareKv),
            0.95,
        );
        // Within √2 × 2% (cv 1%), but beyond 2%: a tie, followed.
        let tie = measured(with(&s, HICACHE, 1), 97.5, VerdictKind::KvCacheBound);
        let p = one(next(&sp, &[lead.clone(), tie], 5));
        assert_eq!(p.point, with(&with(&s, HICACHE, 1), DTYPE, 1), "{}", p.why);
        // Far below: not a tie.
        let far = measured(with(&s, HICACHE, 1), 50.0, VerdictKind::KvCacheBound);
        let p = one(next(&sp, &[lead.clone(), far], 5));
        assert_eq!(p.point, from_leader, "{}", p.why);
        // Within noise but with the leader's own verdict: its moves would be the same again.
        let same = full(
            measured(with(&s, HICACHE, 1), 99.5, VerdictKind::QueueWithSpareKv),
            0.5,
        );
        let p = one(next(&sp, &[lead, same], 5));
        assert_eq!(p.point, from_leader, "{}", p.why);
    }

    #[test]
    fn while_nothing_is_eligible_a_launch_within_noise_of_the_base_excess_has_its_moves_followed() {
        let sp = Space {
            start: vec![4, 1, 3],
            ..stacked()
        };
        let kv = evidence(VerdictKind::KvCacheBound, 30.0, 64.0, 0.97);
        let queue = evidence(VerdictKind::QueueWithSpareKv, 48.0, 64.0, 0.6);
        let base = slo(vec![4, 1, 3], 700.0, 2.0, kv);
        // More KV died: the base's rule is spent.
        let cliff = failed(vec![5, 1, 3], "oom");
        // Within √2 × 2% of the base's excess, another verdict: its move is next.
        let tie = slo(vec![3, 2, 3], 600.0, 2.05, queue.clone());
        let p = one(next(&sp, &[base.clone(), cliff.clone(), tie], 10));
        assert_eq!(p.point, vec![3, 3, 3], "{}", p.why);
        assert!(
            p.why
                .starts_with("mfs0.86_mrr48_cgbs128: queue_with_spare_kv"),
            "{}",
            p.why
        );
        // 10% away: not a tie; the generic search from the base.
        let far = slo(vec![3, 2, 3], 600.0, 2.2, queue);
        let p = one(next(&sp, &[base, cliff, far], 10));
        assert_eq!(p.point, vec![4, 2, 3], "{}", p.why);
        assert!(
            p.why.contains("no rule's move left, the neighbours"),
            "{}",
            p.why
        );
    }
}
