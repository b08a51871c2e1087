//! The confirmation: the launches kept to re-measure, on fresh servers, what can still change
//! the answer: the leader, the best launches within noise of it that differ in a knob that can
//! matter, then a launch at a bound that would lead if eligible; interleaved, until the leader
//! stands alone or the tie is one the budget will not break. Equals over knobs the evidence
//! shows inert are named, not re-measured.

use super::inert::inert_tie;
use super::remeasure::at_bound;
use super::standing::{leader, near_leader};
use super::state::State;
use super::types::{Next, Observation, Outcome, Space, launch};
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

/// The confirmation: another launch, on a fresh server, of what can still change the answer
/// (issue 53 item 2), in this order: the leader; each eligible launch within noise of it that
/// differs from it in a knob that can matter; then a launch at a bound that would lead if
/// eligible (`remeasure::at_bound`). A launch within noise of the leader that differs from it
/// only in knobs the evidence shows inert (`inert`: a host tier with no prefix reuse, ...) is
/// its equal by the server's own account: it gets no repeats, and the stop names the tie over
/// the inert knob, with why. Interleaved (the one with the fewest launches first, so a drift
/// of the machine falls on all alike), until the leader has at least two launches and stands
/// beyond noise of every other that can matter with no launch at a bound left to lead, every
/// one left has [`CONFIRM_MAX_LAUNCHES`], or the budget is spent (an exploration that ends
/// early leaves its launches to the confirmation too). The decision then names a winner, or a
/// tie, from all their rows.
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
    // The ties over inert knobs need no repeats; the others can change the answer.
    let mut equals = Vec::new();
    let mut group = vec![lead];
    for i in near_leader(seen, st.noise, lead) {
        match inert_tie(space, &seen[lead], &seen[i]) {
            Some(why) => equals.push(format!("{} [{why}]", name(space, &seen[i].point))),
            // The best few within noise: spread over many, a small reserve measures each once
            // more and separates none; concentrated, the repeats shrink the noise where the
            // choice is.
            None if group.len() < CONFIRM_GROUP => group.push(i),
            None => {}
        }
    }
    let lead_name = name(space, &seen[lead].point);
    let ties = if equals.is_empty() {
        String::new()
    } else {
        format!(
            "; a tie over knobs the evidence shows inert, not re-measured: {}",
            equals.join(", ")
        )
    };
    // Alone among those that can matter, with two launches: only a launch at a bound that
    // would lead if eligible can change the answer now.
    let alone = group.len() == 1 && seen[lead].launches >= 2;
    let bound = (group.len() < CONFIRM_GROUP)
        .then(|| at_the_bound(seen, lead, st))
        .flatten();
    let pick = match &bound {
        Some((b, _)) if alone => Some(*b),
        _ if alone => {
            return Next::Stop {
                why: format!(
                    "{explored}; confirmed: {lead_name} leads after {} launches, beyond noise of every other eligible launch{}{ties}",
                    seen[lead].launches,
                    if equals.is_empty() {
                        ""
                    } else {
                        " that differs in a knob that can matter"
                    }
                ),
            };
        }
        // Fewest launches first, then the better standing (the group is best first, the
        // launch at the bound last).
        _ => group
            .iter()
            .copied()
            .chain(bound.as_ref().map(|(b, _)| *b))
            .filter(|&i| seen[i].launches < CONFIRM_MAX_LAUNCHES)
            .min_by_key(|&i| seen[i].launches),
    };
    let Some(i) = pick else {
        let names: Vec<String> = group.iter().map(|&i| name(space, &seen[i].point)).collect();
        return Next::Stop {
            why: format!(
                "{explored}; within noise of each other after {CONFIRM_MAX_LAUNCHES} launches each: {}{ties}",
                names.join(", ")
            ),
        };
    };
    let o = &seen[i];
    let why = match &bound {
        _ if i == lead => format!(
            "confirm the leader {} ({} launch(es) so far){ties}",
            lead_name, o.launches
        ),
        Some((b, at)) if *b == i => format!(
            "confirm {}: {at}, it would lead if eligible ({} launch(es) so far)",
            name(space, &o.point),
            o.launches
        ),
        _ => format!(
            "confirm {}, within noise of the leader {lead_name} ({} launch(es) so far)",
            name(space, &o.point),
            o.launches
        ),
    };
    launch(o.point.clone(), why, true)
}

/// The launch at a bound that would lead if eligible, and why (`remeasure::at_bound`), the best
/// score first, while it has fewer than [`CONFIRM_MAX_LAUNCHES`].
fn at_the_bound(seen: &[Observation], lead: usize, st: &State) -> Option<(usize, String)> {
    (0..seen.len())
        .filter(|&i| i != lead && seen[i].launches < CONFIRM_MAX_LAUNCHES)
        .filter_map(|i| {
            let why = at_bound(seen, i, st)?;
            let Outcome::Measured { score, .. } = seen[i].outcome else {
                return None;
            };
            Some((i, why, score))
        })
        .max_by(|a, b| a.2.total_cmp(&b.2))
        .map(|(i, why, _)| (i, why))
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::super::next;
    use super::super::types::{Knob, Point, Proposal, SloSeen};
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

    /// A launch at the TPOT bound of 40 ms (40.004: within one measurement's noise, ±1% here)
    /// that would lead if eligible, measured twice already (the exploration's re-measure).
    fn at_the_40ms_bound(point: Point, score: f64) -> Observation {
        let mut o = spare(point, score);
        o.launches = 2;
        o.remeasured = true;
        if let Outcome::Measured {
            eligible,
            why_not,
            slo_excess,
            evidence,
            ..
        } = &mut o.outcome
        {
            *eligible = false;
            *why_not = "SLO not met: tpot_ms_p99".into();
            *slo_excess = Some(40.004 / 40.0);
            evidence.bounds = vec![SloSeen {
                column: "tpot_ms_p99".into(),
                at_most: true,
                limit: 40.0,
                measured: Some(40.004),
            }];
        }
        o
    }

    /// Runs the confirmation alone on `seen` (each launch measuring the same again), `n` times
    /// or to its stop: the indices confirmed, in order, and the stop if it came.
    fn confirm_n(sp: &Space, seen: &mut [Observation], n: usize) -> (Vec<usize>, Option<String>) {
        let mut order = Vec::new();
        for _ in 0..n {
            let st = State::read(sp, seen);
            match confirm(sp, seen, &st, "explored") {
                Next::Stop { why } => return (order, Some(why)),
                Next::Launch(v) => {
                    let p = &v[0];
                    assert!(p.confirm && !p.remeasure, "{}", p.why);
                    let i = seen.iter().position(|o| o.point == p.point).unwrap();
                    seen[i].again(p);
                    order.push(i);
                }
            }
        }
        (order, None)
    }

    #[test]
    fn a_host_cache_on_a_load_that_reuses_no_prefix_gets_no_confirmation_and_the_tie_is_named() {
        let sp = Space {
            confirm: 6,
            ..space()
        };
        let lead = spare(sp.start.clone(), 1000.0);
        // Within noise of the leader, the host tier its only difference, no prefix reused.
        let host = spare(with(&sp.start, HICACHE, 1), 990.0);
        let host_name = name(&sp, &host.point);
        let mut seen = vec![lead, host.clone()];
        let st = State::read(&sp, &seen);
        let p = one(confirm(&sp, &seen, &st, "explored"));
        assert_eq!(p.point, sp.start);
        assert_eq!(
            p.why,
            format!(
                "confirm the leader {} (1 launch(es) so far); a tie over knobs the evidence shows inert, not re-measured: {host_name} [hicache_size 0 → 16: a host tier keeps evicted prefixes, and the load reuses none (prefix reuse 0.00 and 0.00)]",
                name(&sp, &sp.start)
            )
        );
        // The leader's one more launch is the whole confirmation: the equal is named.
        let (order, why) = confirm_n(&sp, &mut seen, 6);
        assert_eq!(order, vec![0]);
        assert_eq!(
            why.unwrap(),
            format!(
                "explored; confirmed: {} leads after 2 launches, beyond noise of every other eligible launch that differs in a knob that can matter; a tie over knobs the evidence shows inert, not re-measured: {host_name} [hicache_size 0 → 16: a host tier keeps evicted prefixes, and the load reuses none (prefix reuse 0.00 and 0.00)]",
                name(&sp, &sp.start)
            )
        );
        // The same neighbour on a load that reuses prefixes: the host tier can matter, and it
        // is confirmed in turn with the leader.
        let mut reused = vec![spare(sp.start.clone(), 1000.0), host];
        for o in &mut reused {
            if let Outcome::Measured { evidence, .. } = &mut o.outcome {
                evidence.prefix_reuse = Some(0.3);
            }
        }
        let (order, _) = confirm_n(&sp, &mut reused, 4);
        assert_eq!(order, vec![0, 1, 0, 1]);
    }

    #[test]
    fn the_confirmation_goes_to_the_leader_then_the_ties_that_can_matter_then_a_launch_at_the_bound()
     {
        let sp = Space {
            confirm: 8,
            ..space()
        };
        let s = sp.start.clone();
        let mut seen = vec![
            spare(s.clone(), 1000.0),
            // Within noise, another running cap: it can matter.
            spare(with(&s, MRR, 2), 985.0),
            // Within noise, the host tier alone: inert on this load.
            spare(with(&s, HICACHE, 2), 995.0),
            // At the bound, 10% ahead: it would lead if eligible.
            at_the_40ms_bound(with(&s, MRR, 4), 1100.0),
        ];
        let st = State::read(&sp, &seen);
        assert!(at_bound(&seen, 3, &st).is_some());
        // A tie that can matter says so, with a launch at the bound waiting behind it.
        seen[0].launches = 2;
        let st = State::read(&sp, &seen);
        let p = one(confirm(&sp, &seen, &st, "explored"));
        assert_eq!(p.point, with(&s, MRR, 2));
        assert!(
            p.why.ends_with(&format!(
                ", within noise of the leader {} (1 launch(es) so far)",
                name(&sp, &s)
            )),
            "{}",
            p.why
        );
        seen[0].launches = 1;
        let (order, why) = confirm_n(&sp, &mut seen, 6);
        // Fewest launches first, in that order of priority; the inert tie never.
        assert_eq!(order, vec![0, 1, 0, 1, 3, 0], "{why:?}");
        // With the leader confirmed and alone among those that can matter, the launch at the
        // bound is next, and says why.
        let mut seen = vec![
            spare(s.clone(), 1000.0),
            spare(with(&s, HICACHE, 2), 995.0),
            at_the_40ms_bound(with(&s, MRR, 4), 1100.0),
        ];
        seen[0].launches = 2;
        let st = State::read(&sp, &seen);
        let p = one(confirm(&sp, &seen, &st, "explored"));
        assert_eq!(p.point, with(&s, MRR, 4));
        assert_eq!(
            p.why,
            format!(
                "confirm {}: tpot_ms_p99 40.004 ms, within the noise (±1%) of the 40 ms bound, it would lead if eligible (2 launch(es) so far)",
                name(&sp, &p.point)
            )
        );
        // Measured to the most launches and still at the bound: the confirmation is over.
        let (order, why) = confirm_n(&sp, &mut seen, 6);
        assert_eq!(order, vec![2, 2]);
        let why = why.unwrap();
        assert!(why.contains("confirmed: "), "{why}");
        assert!(
            why.contains("a tie over knobs the evidence shows inert"),
            "{why}"
        );
        // The best of two at the bound; a launch at the bound with no room left in the group
        // (three ties that can matter) waits.
        let mut two = vec![
            spare(s.clone(), 1000.0),
            at_the_40ms_bound(with(&s, MRR, 4), 1100.0),
            at_the_40ms_bound(with(&s, MRR, 3), 1080.0),
        ];
        two[0].launches = 2;
        let st = State::read(&sp, &two);
        assert_eq!(
            one(confirm(&sp, &two, &st, "explored")).point,
            with(&s, MRR, 4)
        );
        let mut full = vec![
            spare(s.clone(), 1000.0),
            spare(with(&s, MRR, 0), 990.0),
            spare(with(&s, MRR, 2), 990.0),
            spare(with(&s, SC, 1), 990.0),
            at_the_40ms_bound(with(&s, MRR, 4), 1100.0),
        ];
        // To the end of the confirmation: each of the four to the most launches.
        let (order, why) = confirm_n(&sp, &mut full, 20);
        assert!(!order.contains(&4), "{order:?}");
        assert!(why.unwrap().contains("after 4 launches each"));
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
