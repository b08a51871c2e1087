//! What the launches so far say about the space, derived afresh from `seen` on every call (no
//! state kept between calls, so `resume` replays a tune to the same path): the noise, which
//! knob each launch changed, the cliffs, the banned values, and the knobs dropped.

use std::collections::BTreeSet;

use super::types::{differs, single_change};
use super::{Observation, Outcome, Point, Space};

/// The relative noise assumed when no launch reported its coefficient of variation.
pub const DEFAULT_NOISE: f64 = 0.05;

/// Why a knob is not turned any more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dropped {
    /// The effective-arguments check found it not in effect: the server ignores it, so no
    /// rule and no search turns it.
    NotInEffect,
    /// Changing it alone moved the score by no more than the noise, up and down, and no change
    /// of it ever moved it beyond: the generic search leaves it (a rule still may, when the
    /// evidence names it as the limit, because a knob flat under one limit can matter under
    /// another: a larger `max_running_requests` does nothing while the KV pool is full). Flat
    /// one way only, the other way is still tried ([`State::flat`]): a knob whose best value
    /// is in the middle (a chunked prefill too large one way, too small the other) is flat or
    /// worse on one side of it.
    NoResponse,
}

/// The launches so far, read for the strategy.
#[derive(Debug, Clone)]
pub struct State {
    /// Relative noise: 2 × the pooled (root-mean-square) cv of the launches that reported one,
    /// else [`DEFAULT_NOISE`]. A difference within it is no difference.
    pub noise: f64,
    pub seen: BTreeSet<Point>,
    /// Per knob, the value indices never to try again (they made a point ineligible).
    pub banned: Vec<BTreeSet<usize>>,
    /// Per knob, the lowest index that failed going up: that index and above are a cliff.
    pub ceiling: Vec<Option<usize>>,
    /// Per knob, the highest index that failed going down: that index and below are a cliff.
    pub floor: Vec<Option<usize>>,
    pub dropped: Vec<Option<Dropped>>,
    /// Per knob: the value intervals (lower index, higher index) a single change measured
    /// flat and none measured moving. The generic search does not step from a value into a
    /// flat interval it bounds. Kept per interval, not dropped with the knob's first response:
    /// one eligibility flip at the bound elsewhere (noise, or a real effect on another
    /// interval) says nothing of this one, and re-measuring it from each new base was what
    /// spent a best-in-the-middle tune's launches.
    pub flat: Vec<Vec<(usize, usize)>>,
    /// Per knob: some single change of it moved something beyond the noise.
    pub responded: Vec<bool>,
    /// Per knob: the single changes (from index, to index) measured worse beyond the noise,
    /// from whatever base. The generic search does not make the same change again from
    /// another base: with one launch a point, a neighbour that lost once is re-measured only
    /// when the evidence (a rule) asks for it.
    pub worse: Vec<Vec<(usize, usize)>>,
    /// Per knob: a KV knob whose change left the pool's size the same (`model::kv_effect`):
    /// no move for more KV turns it.
    pub kv_flat: Vec<bool>,
    /// The most running requests the response model says the TPOT bound allows at the base's
    /// load (`model::Model::ceiling`): no move lifts the running cap past it.
    pub run_ceiling: Option<f64>,
    /// The response model those two come from, read once per call (`sized` moves from it).
    pub model: super::model::Model,
}

/// The launch a launch stepped from: the base of the launches before it (the leader, else the
/// launch nearest to eligible, else the start) when it differs from that in one knob (the
/// strategy always steps from the base), else the latest earlier measured launch that differs
/// in one knob (a near tie's move, or a caller that launched other points). With the knob that
/// changed.
pub fn parent(space: &Space, seen: &[Observation], i: usize) -> Option<(usize, usize)> {
    let me = &seen.get(i)?.point;
    let before = &seen[..i];
    if !before.is_empty() {
        let b = super::standing::base(space, before, noise_of(before));
        if let Some(k) = single_change(&before[b].point, me) {
            return Some((b, k));
        }
    }
    before
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, o)| matches!(o.outcome, Outcome::Measured { .. }))
        .find_map(|(j, o)| single_change(&o.point, me).map(|k| (j, k)))
}

/// For a launch that failed, or that the quality guard failed, and that changed several knobs
/// from the base before it (a composed move, issue 42): that base and the knob to blame. A
/// failure is memory's (an OOM, a graph capture that does not fit): the first changed knob of
/// the pool's, then the graphs', then the cap's; a quality failure is the KV dtype's when it
/// changed. None for a measured launch: a response is only read from a single change.
pub fn blamed(space: &Space, seen: &[Observation], i: usize) -> Option<(usize, usize)> {
    let me = seen.get(i)?;
    let quality = match &me.outcome {
        Outcome::Failed { .. } => false,
        Outcome::Measured {
            eligible: false,
            slo_excess: None,
            ..
        } => true,
        Outcome::Measured { .. } => return None,
    };
    let before = &seen[..i];
    if before.is_empty() {
        return None;
    }
    let b = super::standing::base(space, before, noise_of(before));
    let from = &before[b].point;
    let changed = |key: &str| {
        space
            .knobs
            .iter()
            .position(|kn| kn.key == key)
            .filter(|&k| from.get(k) != me.point.get(k))
    };
    let order: Vec<&str> = if quality {
        vec!["kv_cache_dtype"]
    } else {
        // The host tier's knobs are memory too (host RAM): blamed after the pool's.
        super::rules::KV_KNOBS
            .iter()
            .chain(super::rules::HICACHE_KNOBS.iter())
            .copied()
            .chain(["cuda_graph_max_bs", "max_running_requests"])
            .collect()
    };
    order.into_iter().find_map(changed).map(|k| (b, k))
}

/// Relative noise: 2 × the pooled (root-mean-square) cv of the launches that reported one,
/// else [`DEFAULT_NOISE`].
pub fn noise_of(seen: &[Observation]) -> f64 {
    let cvs: Vec<f64> = seen
        .iter()
        .filter_map(|o| match o.outcome {
            Outcome::Measured { cv: Some(c), .. } if c.is_finite() && c >= 0.0 => Some(c),
            _ => None,
        })
        .collect();
    if cvs.is_empty() {
        DEFAULT_NOISE
    } else {
        2.0 * (cvs.iter().map(|c| c * c).sum::<f64>() / cvs.len() as f64).sqrt()
    }
}

/// What a launch's change is compared by: an eligible score, or an SLO excess (how far from
/// eligible) with the score; None for a failure or another ineligibility.
fn compared(o: &Observation) -> Option<(bool, f64, f64)> {
    match o.outcome {
        Outcome::Measured {
            score,
            eligible: true,
            ..
        } => Some((true, score, worst_ratio(o).unwrap_or(1.0))),
        Outcome::Measured {
            score,
            eligible: false,
            slo_excess: Some(x),
            ..
        } => Some((false, score, x)),
        _ => None,
    }
}

/// An eligible launch's nearest SLO bound as a ratio of measured to limit (≤ 1; inverted for
/// a lower bound), the same scale as an ineligible one's `slo_excess`: a flip of eligibility
/// is then a move across the bound that can be told from a wobble at it.
fn worst_ratio(o: &Observation) -> Option<f64> {
    super::types::evidence_of(o)?
        .bounds
        .iter()
        .filter_map(|b| {
            let m = b.measured?;
            let r = if b.at_most { m / b.limit } else { b.limit / m };
            r.is_finite().then_some(r)
        })
        .fold(None, |w: Option<f64>, r| Some(w.map_or(r, |w| w.max(r))))
}

/// Whether a single change from `before` to `after` moved something beyond the noise: the
/// score, or, across the bound, how far the SLO is broken. Two eligible launches compare by
/// score alone (how far under its bound each ran is not what the tune ranks). A flip of
/// eligibility whose two launches sat within noise of the bound is the noise's, not the
/// knob's (a TPOT p99 at 0.98 then 1.03 of its bound, the same point's two draws).
fn moved(after: (bool, f64, f64), before: (bool, f64, f64), noise: f64) -> bool {
    let at_bound = |x: f64| !differs(x, 1.0, noise);
    differs(after.1, before.1, noise)
        || match (after.0, before.0) {
            (true, true) => false,
            (false, false) => differs(after.2, before.2, noise),
            _ => !(at_bound(after.2) && at_bound(before.2)),
        }
}

/// Whether a change that moved something (`moved`) left `after` worse than `before`: eligible
/// lost, or within the same side, a lower score (eligible) or a bound broken further
/// (ineligible), each beyond the noise.
fn worse(after: (bool, f64, f64), before: (bool, f64, f64), noise: f64) -> bool {
    match (after.0, before.0) {
        (false, true) => true,
        (true, false) => false,
        (true, true) => after.1 < before.1 && differs(after.1, before.1, noise),
        (false, false) => {
            if differs(after.2, before.2, noise) {
                after.2 > before.2
            } else {
                after.1 < before.1 && differs(after.1, before.1, noise)
            }
        }
    }
}

impl State {
    pub fn read(space: &Space, seen: &[Observation]) -> State {
        let n = space.knobs.len();
        let noise = noise_of(seen);
        let mut st = State {
            noise,
            seen: seen.iter().map(|o| o.point.clone()).collect(),
            banned: vec![BTreeSet::new(); n],
            ceiling: vec![None; n],
            floor: vec![None; n],
            dropped: vec![None; n],
            flat: vec![Vec::new(); n],
            responded: vec![false; n],
            worse: vec![Vec::new(); n],
            kv_flat: Vec::new(),
            run_ceiling: None,
            model: super::model::Model::read(space, seen),
        };
        st.kv_flat = st.model.no_kv_effect.clone();
        // Per knob: the intervals changed within noise (low, high, went up), and those a
        // change moved something beyond it.
        type Flat = Vec<(usize, usize, bool)>;
        let mut response: Vec<(Flat, Vec<(usize, usize)>)> = vec![(Vec::new(), Vec::new()); n];
        for (i, o) in seen.iter().enumerate() {
            if let Outcome::Measured { not_in_effect, .. } = &o.outcome {
                for key in not_in_effect {
                    if let Some(k) = space.knobs.iter().position(|kn| &kn.key == key) {
                        st.dropped[k] = Some(Dropped::NotInEffect);
                    }
                }
            }
            let Some((p, k)) = parent(space, seen, i).or_else(|| blamed(space, seen, i)) else {
                continue;
            };
            let (from, to) = (seen[p].point[k], o.point[k]);
            match &o.outcome {
                Outcome::Failed { .. } => {
                    // A cliff: nothing at or beyond this value, that way, is tried again.
                    if to > from {
                        st.ceiling[k] = Some(st.ceiling[k].map_or(to, |c| c.min(to)));
                    } else {
                        st.floor[k] = Some(st.floor[k].map_or(to, |f| f.max(to)));
                    }
                }
                // Ineligible for anything but its SLO (the quality guard, a failed repeat): the
                // value is the cause, never tried again. An SLO miss is not the value's fault
                // alone (the other limits may be what breaks it), so it bans nothing.
                Outcome::Measured {
                    eligible: false,
                    slo_excess: None,
                    ..
                } => {
                    st.banned[k].insert(to);
                }
                Outcome::Measured { .. } => {
                    // A response: the change moved the score, the excess or the eligibility
                    // beyond the noise.
                    if let (Some(a), Some(b)) = (compared(o), compared(&seen[p])) {
                        if moved(a, b, noise) {
                            response[k].1.push((from.min(to), from.max(to)));
                            if worse(a, b, noise) {
                                st.worse[k].push((from, to));
                            }
                        } else {
                            response[k].0.push((from.min(to), from.max(to), to > from));
                        }
                    }
                }
            }
        }
        if !seen.is_empty() {
            let b = super::standing::base(space, seen, noise);
            st.run_ceiling = st.model.ceiling(seen, b);
        }
        for (k, (flat, moved)) in response.into_iter().enumerate() {
            st.responded[k] = !moved.is_empty();
            let up = flat.iter().any(|f| f.2);
            let down = flat.iter().any(|f| !f.2);
            if moved.is_empty() && st.dropped[k].is_none() && up && down {
                st.dropped[k] = Some(Dropped::NoResponse);
            }
            let mut kept: Vec<(usize, usize)> = flat
                .into_iter()
                .map(|(lo, hi, _)| (lo, hi))
                .filter(|f| !moved.contains(f))
                .collect();
            kept.dedup();
            st.flat[k] = kept;
        }
        st
    }

    /// Whether stepping knob `k` from value `from` toward `to` enters an interval measured
    /// flat that `from` bounds: the generic search has its answer there already.
    pub fn enters_flat(&self, k: usize, from: usize, to: usize) -> bool {
        self.flat.get(k).is_some_and(|f| {
            f.iter()
                .any(|&(lo, hi)| (to > from && lo == from) || (to < from && hi == from))
        })
    }

    /// Whether changing knob `k` from `from` to `to` was measured worse beyond the noise from
    /// some base.
    pub fn measured_worse(&self, k: usize, from: usize, to: usize) -> bool {
        self.worse.get(k).is_some_and(|w| w.contains(&(from, to)))
    }

    /// Whether knob `k` was measured flat and never moved anything beyond the noise (the stop
    /// line names it), dropped or flat one way.
    pub fn without_response(&self, k: usize) -> bool {
        self.dropped.get(k) == Some(&Some(Dropped::NoResponse))
            || (self.responded.get(k) == Some(&false)
                && self.flat.get(k).is_some_and(|f| !f.is_empty()))
    }

    /// Whether value `idx` of knob `k` may be launched: not banned, not over a cliff.
    pub fn allowed(&self, k: usize, idx: usize) -> bool {
        !self.banned[k].contains(&idx) && self.allowed_side(k, idx)
    }

    /// Whether value `idx` of knob `k` is a running cap above what the TPOT bound allows.
    pub fn over_ceiling(&self, space: &Space, k: usize, idx: usize) -> bool {
        let Some(c) = self.run_ceiling else {
            return false;
        };
        space.knobs.get(k).is_some_and(|kn| {
            kn.key == "max_running_requests"
                && kn
                    .values
                    .get(idx)
                    .and_then(|v| v.as_f64())
                    .is_some_and(|x| x > c)
        })
    }

    /// Whether value `idx` of knob `k` is on this side of its cliffs (a banned value is a hole,
    /// a cliff is a wall: a move skips the one and stops at the other).
    pub fn allowed_side(&self, k: usize, idx: usize) -> bool {
        self.ceiling[k].is_none_or(|c| idx < c) && self.floor[k].is_none_or(|f| idx > f)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Evidence, Failure, Knob};
    use super::*;
    use crate::plan::flags::ParamValue;
    use crate::server::failure::FailureKind;

    fn space() -> Space {
        let k = |key: &str| Knob {
            key: key.into(),
            values: (0..4).map(ParamValue::Int).collect(),
        };
        Space {
            knobs: vec![k("a"), k("b")],
            start: vec![1, 1],
            confirm: 0,
        }
    }

    fn m(point: Point, score: f64, eligible: bool) -> Observation {
        Observation::once(
            point,
            Outcome::Measured {
                score,
                cv: None,
                eligible,
                why_not: String::new(),
                slo_excess: None,
                evidence: Evidence::default(),
                not_in_effect: vec![],
            },
        )
    }

    #[test]
    fn single_change_names_the_one_knob_that_differs() {
        assert_eq!(single_change(&vec![1, 1], &vec![1, 2]), Some(1));
        assert_eq!(single_change(&vec![1, 1], &vec![0, 1]), Some(0));
        assert_eq!(single_change(&vec![1, 1], &vec![1, 1]), None);
        assert_eq!(single_change(&vec![1, 1], &vec![2, 2]), None);
        assert_eq!(single_change(&vec![1, 1], &vec![1]), None);
    }

    #[test]
    fn the_noise_pools_the_finite_non_negative_cvs_only() {
        let with_cv = |cv: Option<f64>| {
            let mut o = m(vec![1, 1], 100.0, true);
            if let Outcome::Measured { cv: c, .. } = &mut o.outcome {
                *c = cv;
            }
            o
        };
        assert_eq!(noise_of(&[]), DEFAULT_NOISE);
        assert_eq!(noise_of(&[with_cv(None)]), DEFAULT_NOISE);
        assert_eq!(noise_of(&[with_cv(Some(f64::NAN))]), DEFAULT_NOISE);
        assert_eq!(noise_of(&[with_cv(Some(-0.5))]), DEFAULT_NOISE);
        assert_eq!(noise_of(&[with_cv(Some(f64::INFINITY))]), DEFAULT_NOISE);
        let n = noise_of(&[
            with_cv(Some(0.03)),
            with_cv(Some(f64::NAN)),
            with_cv(Some(-1.0)),
        ]);
        assert!((n - 0.06).abs() < 1e-12, "{n}");
        // A cv of 0 is a measurement: no noise.
        assert_eq!(noise_of(&[with_cv(Some(0.0))]), 0.0);
    }

    #[test]
    fn a_flip_of_eligibility_at_the_bound_is_the_noise_and_one_across_it_is_a_response() {
        // (eligible, score, ratio to the bound)
        let n = 0.06;
        // 0.97 then 1.04 of the bound, the same score: two draws of one point.
        assert!(!moved((true, 100.0, 0.97), (false, 100.0, 1.04), n));
        assert!(!moved((false, 100.0, 1.04), (true, 100.0, 0.97), n));
        // 0.8 then 1.04: the change moved the latency across the bound.
        assert!(moved((true, 100.0, 0.8), (false, 100.0, 1.04), n));
        assert!(moved((false, 100.0, 1.10), (true, 100.0, 0.97), n));
        // Two eligible launches compare by score alone.
        assert!(!moved((true, 100.0, 0.5), (true, 100.0, 0.9), n));
        assert!(moved((true, 110.0, 0.9), (true, 100.0, 0.9), n));
        // Two ineligible ones by score and by excess.
        assert!(moved((false, 100.0, 1.5), (false, 100.0, 1.2), n));
        assert!(!moved((false, 100.0, 1.22), (false, 100.0, 1.2), n));
    }

    #[test]
    fn worse_is_eligibility_lost_a_lower_score_or_a_bound_broken_further() {
        let n = 0.06;
        assert!(worse((false, 100.0, 1.2), (true, 100.0, 0.9), n));
        assert!(!worse((true, 100.0, 0.9), (false, 100.0, 1.2), n));
        assert!(worse((true, 90.0, 0.9), (true, 100.0, 0.9), n));
        assert!(!worse((true, 97.0, 0.9), (true, 100.0, 0.9), n));
        assert!(!worse((true, 110.0, 0.9), (true, 100.0, 0.9), n));
        // Ineligible: the excess first, then the score.
        assert!(worse((false, 120.0, 1.5), (false, 100.0, 1.2), n));
        assert!(!worse((false, 80.0, 1.1), (false, 100.0, 1.3), n));
        assert!(worse((false, 80.0, 1.2), (false, 100.0, 1.21), n));
        assert!(!worse((false, 120.0, 1.2), (false, 100.0, 1.21), n));
    }

    #[test]
    fn differs_is_beyond_the_relative_noise() {
        assert!(!differs(105.0, 100.0, 0.05));
        assert!(differs(105.1, 100.0, 0.05));
        assert!(differs(94.9, 100.0, 0.05));
        assert!(!differs(-105.0, -100.0, 0.05));
    }

    #[test]
    fn a_parent_is_the_leader_before_or_else_the_latest_one_knob_away() {
        let sp = space();
        let seen = vec![
            m(vec![1, 1], 100.0, true),
            m(vec![2, 1], 120.0, true),
            m(vec![2, 2], 90.0, true),
            // Two knobs from the leader [2, 1], one from [1, 1] and from [2, 2]: the latest.
            m(vec![1, 2], 90.0, true),
        ];
        assert_eq!(parent(&sp, &seen, 0), None);
        assert_eq!(parent(&sp, &seen, 1), Some((0, 0)));
        assert_eq!(parent(&sp, &seen, 2), Some((1, 1)));
        assert_eq!(parent(&sp, &seen, 3), Some((2, 0)));
        assert_eq!(parent(&sp, &seen, 9), None);
    }

    #[test]
    fn an_ineligible_launch_bans_its_value_and_failures_keep_the_nearest_cliff() {
        let sp = space();
        let fail = |point: Point| {
            Observation::once(
                point,
                Outcome::Failed {
                    kind: Failure::Server(FailureKind::Oom),
                },
            )
        };
        let seen = vec![
            m(vec![1, 1], 100.0, true),
            m(vec![1, 2], 100.0, false),
            fail(vec![3, 1]),
            fail(vec![2, 1]),
            fail(vec![0, 1]),
        ];
        let st = State::read(&sp, &seen);
        assert_eq!(st.banned[1].iter().copied().collect::<Vec<_>>(), vec![2]);
        assert!(st.banned[0].is_empty());
        assert_eq!((st.ceiling[0], st.floor[0]), (Some(2), Some(0)));
        assert!(st.allowed(0, 1) && !st.allowed(0, 2) && !st.allowed(0, 0));
        assert!(!st.allowed(1, 2) && st.allowed_side(1, 2) && st.allowed(1, 3));
        // An ineligible change is not a response: the knob stays in.
        assert_eq!(st.dropped, vec![None, None]);
    }

    /// The state the tune reads on the strategy's own test space and launches (`fixtures`).
    mod on_the_tune_space {
        use super::super::super::fixtures::*;
        use super::super::super::state;
        use super::super::{Outcome, State};
        use crate::observe::diagnose::VerdictKind;

        #[test]
        fn the_default_noise_is_five_percent_and_a_pooled_cv_doubles() {
            let sp = space();
            let mut o = measured(sp.start.clone(), 100.0, VerdictKind::Unknown);
            if let Outcome::Measured { cv, .. } = &mut o.outcome {
                *cv = None;
            }
            assert!((State::read(&sp, &[o.clone()]).noise - state::DEFAULT_NOISE).abs() < 1e-12);
            let mut a = measured(with(&sp.start, MRR, 0), 100.0, VerdictKind::Unknown);
            if let Outcome::Measured { cv, .. } = &mut a.outcome {
                *cv = Some(0.03);
            }
            let mut b = a.clone();
            b.point = with(&sp.start, MRR, 2);
            if let Outcome::Measured { cv, .. } = &mut b.outcome {
                *cv = Some(0.04);
            }
            // sqrt((0.03² + 0.04²) / 2) × 2.
            let want = 2.0 * ((0.0009 + 0.0016) / 2.0f64).sqrt();
            assert!((State::read(&sp, &[o, a, b]).noise - want).abs() < 1e-12);
        }

        #[test]
        fn an_slo_miss_bans_nothing_and_a_quality_failure_bans_its_value() {
            let sp = stacked();
            let e = || evidence(VerdictKind::KvCacheBound, 12.0, 64.0, 0.97);
            let seen = vec![
                slo(vec![1, 0, 0], 600.0, 3.0, e()),
                slo(vec![4, 0, 0], 700.0, 2.0, e()),
                ineligible(vec![4, 1, 0], 900.0, "quality: fail"),
            ];
            let st = State::read(&sp, &seen);
            assert!(st.banned[MFS].is_empty());
            assert_eq!(st.banned[1].iter().copied().collect::<Vec<_>>(), vec![1]);
            // The SLO miss moved the excess beyond noise: a response, the knob stays.
            assert_eq!(st.dropped[MFS], None);
            // The same excess and score: no response that way (and the other way from 4 on).
            let flat = vec![
                slo(vec![1, 0, 0], 600.0, 3.0, e()),
                slo(vec![4, 0, 0], 600.0, 3.0, e()),
            ];
            let st = State::read(&sp, &flat);
            assert_eq!(st.dropped[MFS], None);
            assert_eq!(st.flat[MFS], vec![(1, 4)]);
            assert!(st.enters_flat(MFS, 4, 3) && st.enters_flat(MFS, 1, 2));
            assert!(!st.enters_flat(MFS, 4, 5) && !st.enters_flat(MFS, 1, 0));
            // Only the excess moved (the score did not): a response.
            let moved = vec![
                slo(vec![1, 0, 0], 600.0, 3.0, e()),
                slo(vec![4, 0, 0], 600.0, 2.0, e()),
            ];
            assert_eq!(State::read(&sp, &moved).dropped[MFS], None);
            // Eligible after an SLO miss, at the same score: a response.
            let made_it = vec![
                slo(vec![1, 0, 0], 600.0, 1.01, e()),
                measured_with(vec![4, 0, 0], 600.0, e()),
            ];
            assert_eq!(State::read(&sp, &made_it).dropped[MFS], None);
        }
    }
}
