//! The confirmation: the launches kept to re-measure the leader and the best launches within
//! noise of it on fresh servers, interleaved, until the leader stands alone or the tie is
//! one the budget will not break.

use super::standing::{leader, near_leader};
use super::state::State;
use super::types::{Next, Observation, Space, launch};
use super::words::name;

/// The most launches one point gets in the confirmation: past this, points still within
/// noise of each other are a tie the budget will not break.
pub const CONFIRM_MAX_LAUNCHES: usize = 4;

/// The most configurations the confirmation re-measures at once: the leader and the best of
/// those within noise of it.
pub const CONFIRM_GROUP: usize = 4;

/// The launches the confirmation may still take: the reserve less the confirmations made.
pub(super) fn confirm_left(space: &Space, seen: &[Observation]) -> usize {
    space.confirm.saturating_sub(confirmations(seen))
}

/// Confirmation launches made so far: every launch of a point after its first, less its
/// re-measure (`remeasure`), which the exploration spent.
pub fn confirmations(seen: &[Observation]) -> usize {
    seen.iter()
        .map(|o| o.launches.saturating_sub(1 + usize::from(o.remeasured)))
        .sum()
}

/// The confirmation: another launch, on a fresh server, of the leader and of each eligible
/// launch within noise of it, interleaved (the one with the fewest launches first, so a drift
/// of the machine falls on all alike), until the leader stands beyond noise of every other
/// with at least two launches, every one left has [`CONFIRM_MAX_LAUNCHES`], or the budget
/// is spent (an exploration that ends early leaves its launches to the confirmation too).
/// The decision then names a winner, or a tie, from all their rows.
pub(super) fn confirm(space: &Space, seen: &[Observation], st: &State, explored: &str) -> Next {
    if space.confirm == 0 {
        return Next::Stop {
            why: explored.to_string(),
        };
    }
    let Some(lead) = leader(space, seen) else {
        return Next::Stop {
            why: format!("{explored}; nothing eligible to confirm"),
        };
    };
    let mut group = vec![lead];
    // The best few within noise: spread over many, a small reserve measures each once more and
    // separates none; concentrated, the repeats shrink the noise where the choice is.
    group.extend(
        near_leader(seen, st.noise, lead)
            .into_iter()
            .take(CONFIRM_GROUP - 1),
    );
    let lead_name = name(space, &seen[lead].point);
    if group.len() == 1 && seen[lead].launches >= 2 {
        return Next::Stop {
            why: format!(
                "{explored}; confirmed: {lead_name} leads after {} launches, beyond noise of every other eligible launch",
                seen[lead].launches
            ),
        };
    }
    // Fewest launches first, then the better standing (the group is best first).
    let pick = group
        .iter()
        .copied()
        .filter(|&i| seen[i].launches < CONFIRM_MAX_LAUNCHES)
        .min_by_key(|&i| seen[i].launches);
    let Some(i) = pick else {
        let names: Vec<String> = group.iter().map(|&i| name(space, &seen[i].point)).collect();
        return Next::Stop {
            why: format!(
                "{explored}; within noise of each other after {CONFIRM_MAX_LAUNCHES} launches each: {}",
                names.join(", ")
            ),
        };
    };
    let o = &seen[i];
    let why = if i == lead {
        format!(
            "confirm the leader {} ({} launch(es) so far)",
            lead_name, o.launches
        )
    } else {
        format!(
            "confirm {}, within noise of the leader {lead_name} ({} launch(es) so far)",
            name(space, &o.point),
            o.launches
        )
    };
    launch(o.point.clone(), why, true)
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::super::next;
    use super::super::types::{Knob, Point, Proposal};
    use super::*;
    use crate::observe::diagnose::VerdictKind;

    #[test]
    fn the_confirmation_keeps_its_launches_and_re_measures_the_leader_and_its_near_ties() {
        let sp = Space {
            confirm: 2,
            ..stacked()
        };
        // A steep surface: every step is better, so the exploration would go on; the last two
        // launches are kept, and one confirms a leader that stands alone.
        let steep = |p: &Point| 1000.0 * (1.0 + (p[1] + p[2]) as f64);
        let (log, seen, why) = drive(&sp, 6, &steep, &[0.0]);
        assert_eq!(log.len(), 5, "{log:#?}");
        assert!(log[..4].iter().all(|p| !p.confirm), "{log:#?}");
        assert!(log[4].confirm);
        let lead = leader(&sp, &seen).unwrap();
        assert_eq!(log[4].point, seen[lead].point);
        assert!(
            why.starts_with("the exploration's budget is spent (2 launch(es) kept"),
            "{why}"
        );
        assert!(why.contains("; confirmed: "), "{why}");
        // A flat surface: the exploration ends by itself after three launches (from a start
        // at the top of the graphs' range, each knob has one way to go), and the rest of the
        // budget confirms the three, interleaved: fewest launches first, the leader first.
        let sp = Space {
            start: vec![1, 0, 3],
            ..sp
        };
        let flat = |p: &Point| 1000.0 + 10.0 * p[2] as f64;
        let (log, seen, why) = drive(&sp, 10, &flat, &[0.0]);
        assert_eq!(log.iter().filter(|p| !p.confirm).count(), 3, "{log:#?}");
        let lead = seen[leader(&sp, &seen).unwrap()].point.clone();
        let order: Vec<&Point> = log.iter().filter(|p| p.confirm).map(|p| &p.point).collect();
        assert_eq!(order.len(), 7);
        assert_eq!(order[0], &lead);
        assert_eq!(order[3], &lead);
        assert_eq!(order[6], &lead);
        assert_eq!(order[1], order[4]);
        assert_eq!(order[2], order[5]);
        assert!(order[1] != &lead && order[2] != &lead && order[1] != order[2]);
        assert!(
            log[3].why.starts_with("confirm the leader"),
            "{}",
            log[3].why
        );
        assert!(
            log[4].why.contains("within noise of the leader"),
            "{}",
            log[4].why
        );
        assert_eq!(why, "the launch budget is spent");
        // Without a reserve, no confirmation: the exploration's stop is the tune's.
        let none = Space {
            confirm: 0,
            ..stacked()
        };
        let (log, _, why) = drive(&none, 10, &flat, &[0.0]);
        assert!(log.iter().all(|p| !p.confirm));
        assert!(why.contains("no step from the leader is left"), "{why}");
    }

    #[test]
    fn a_leader_beyond_noise_of_every_other_is_confirmed_by_one_more_launch() {
        let mut sp = stacked();
        sp.confirm = 4;
        let tiny = Space {
            knobs: vec![sp.knobs[2].clone()],
            start: vec![0],
            confirm: 4,
        };
        // One knob, the top value far ahead: the exploration ends by itself, then one repeat.
        let score = |p: &Point| [100.0, 200.0, 400.0, 800.0][p[0]];
        let (log, seen, why) = drive(&tiny, 20, &score, &[0.0]);
        let confirms: Vec<&Proposal> = log.iter().filter(|p| p.confirm).collect();
        assert_eq!(confirms.len(), 1, "{log:#?}");
        assert_eq!(confirms[0].point, vec![3]);
        assert_eq!(seen[leader(&tiny, &seen).unwrap()].launches, 2);
        assert!(
            why.contains("confirmed: cgbs128 leads after 2 launches"),
            "{why}"
        );
        assert!(why.starts_with("cgbs128: compute_bound"), "{why}");
        // A tie that does not break: each gets CONFIRM_MAX_LAUNCHES, then the stop says so.
        let flat = |_: &Point| 100.0;
        let (log, seen, why) = drive(&tiny, 40, &flat, &[0.0]);
        assert!(
            why.contains("within noise of each other after 4 launches each"),
            "{why}"
        );
        assert!(
            seen.iter().all(|o| o.launches == CONFIRM_MAX_LAUNCHES),
            "{seen:#?}"
        );
        assert_eq!(log.len(), seen.len() * CONFIRM_MAX_LAUNCHES);
        let _ = sp;
    }

    #[test]
    fn the_confirmation_re_measures_at_most_the_leader_and_the_three_best_near_it() {
        let six = Space {
            knobs: vec![Knob {
                key: "chunked_prefill_size".into(),
                values: ints(&[512, 1024, 2048, 4096, 8192, 16384]),
            }],
            start: vec![2],
            confirm: 8,
        };
        // Six launched, all within noise, the higher values a little better; the budget left
        // is the reserve: only confirmations.
        let e = || evidence(VerdictKind::ComputeBound, 64.0, 64.0, 0.5);
        let mut seen: Vec<Observation> = (0..6)
            .map(|i| measured_with(vec![i], 1000.0 + i as f64, e()))
            .collect();
        let mut confirmed = Vec::new();
        for left in (1..=8).rev() {
            let p = one(next(&six, &seen, left));
            assert!(p.confirm, "{}", p.why);
            let i = seen.iter().position(|o| o.point == p.point).unwrap();
            seen[i].launches += 1;
            confirmed.push(p.point[0]);
        }
        // The four best, twice each, interleaved, the leader first.
        assert_eq!(confirmed, vec![5, 4, 3, 2, 5, 4, 3, 2]);
    }

    #[test]
    fn once_the_confirmation_began_the_exploration_is_over() {
        let sp = Space {
            confirm: 2,
            ..stacked()
        };
        let mut seen = vec![measured_with(
            sp.start.clone(),
            100.0,
            evidence(VerdictKind::ComputeBound, 64.0, 64.0, 0.5),
        )];
        seen[0].launches = 2;
        // Nothing but the start, confirmed: though the knobs have neighbours, no step explores.
        let why = stop_why(next(&sp, &seen, 10));
        assert!(why.contains("exploration's budget is spent"), "{why}");
        assert!(
            why.contains("confirmed: mfs0.82_mrr16_cgbs16 leads after 2 launches"),
            "{why}"
        );
        // Nothing eligible: nothing to confirm, so the reserve explores (issue 51) and the
        // next launch is the evidence's move, not a stop.
        let e = evidence(VerdictKind::KvCacheBound, 12.0, 64.0, 0.97);
        let only_slo = vec![slo(sp.start.clone(), 600.0, 3.0, e.clone())];
        let p = one(next(&sp, &only_slo, 2));
        assert!(!p.confirm && p.point != sp.start, "{}", p.why);
        // With no move left either, the stop says there is nothing eligible to confirm.
        let tiny = Space {
            knobs: vec![Knob {
                key: "page_size".into(),
                values: ints(&[1]),
            }],
            start: vec![0],
            confirm: 2,
        };
        let why = stop_why(next(&tiny, &[slo(vec![0], 600.0, 3.0, e)], 2));
        assert!(why.ends_with("nothing eligible to confirm"), "{why}");
        // With the reserve larger than what is left, the confirmation takes what is left.
        let p = one(next(
            &sp,
            &seen[..1]
                .iter()
                .cloned()
                .map(|mut o| {
                    o.launches = 1;
                    o
                })
                .collect::<Vec<_>>(),
            1,
        ));
        assert!(p.confirm && p.point == sp.start, "{}", p.why);
    }

    #[test]
    fn a_client_bound_leader_ends_the_exploration_and_the_confirmation_follows() {
        let sp = Space {
            confirm: 3,
            ..stacked()
        };
        let mut seen = vec![measured_with(
            sp.start.clone(),
            100.0,
            evidence(VerdictKind::ClientBound, 20.0, 64.0, 0.2),
        )];
        let p = one(next(&sp, &seen, 10));
        assert!(p.confirm && p.point == sp.start, "{}", p.why);
        seen[0].launches = 2;
        let why = stop_why(next(&sp, &seen, 9));
        assert!(why.contains("the client is the limit"), "{why}");
        assert!(why.contains("; confirmed: mfs0.82_mrr16_cgbs16"), "{why}");
    }
}
