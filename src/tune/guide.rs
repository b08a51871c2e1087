//! The guided tune (issue 26): the next experiment chosen from the evidence of the launches so
//! far, as the engineer in the story did (the log said the KV cache was full, so the memory
//! knobs came first, then the hierarchical cache). Pure: a function from the space and what
//! was measured so far to the next launches, so `run/` executes it, `resume` replays it from
//! the rows to the same path, and `reproduce --decision` re-checks it.
//!
//! The types and the four functions below are the contract between the strategy and its callers
//! (`plan/` reads the `tune:` section into a `Space`, `run/` turns rows into `Observation`s and
//! each `Proposal` into a launch).
//!
//! The strategy (docs/methodology.md, "The guided tune"): the start first; then, from the
//! leader (or the start while nothing leads), the leader's verdict names the knobs to turn
//! (`rules`: KV capacity when the pool is full, the scheduler caps when a queue waits with KV
//! to spare, fewer admissions or more capacity against retractions, larger CUDA graphs); when
//! no rule's move is left, or the verdict asks for none (compute bound), a coordinate search
//! tries the leader's neighbours on the remaining knobs. A failed launch makes that direction
//! on its knob a cliff, an ineligible one bans the knob value, a knob not in effect or without
//! a response beyond the noise is dropped (`state`). Long moves first, then one value
//! (`step`). A client-bound leader stops the tune: the client, not the server, is the limit.

mod batch;
pub mod model;
mod rules;
mod sized;
mod state;
mod step;

pub use batch::next_batch;

use rules::Dir;
use state::{Dropped, State};

use crate::observe::diagnose::VerdictKind;
use crate::plan::flags::ParamValue;

/// One knob: the tuner's own key (as in `configs:`, e.g. `mem_fraction_static`; the engine's
/// flag comes from `plan::flags`/`plan::engine`) and its values in increasing order (a range
/// already expanded at its resolution; a list in the order the user wrote it).
#[derive(Debug, Clone, PartialEq)]
pub struct Knob {
    pub key: String,
    pub values: Vec<ParamValue>,
}

/// The space a tune searches: its knobs and where it starts (the user's current flags).
#[derive(Debug, Clone, PartialEq)]
pub struct Space {
    pub knobs: Vec<Knob>,
    /// One index into each knob's `values`, in `knobs` order.
    pub start: Point,
    /// Launches of the budget kept to confirm the leader at the end (`tune.confirm`): repeats
    /// of the leader and of every launch within noise of it, on fresh servers.
    pub confirm: usize,
}

/// A configuration of the space: one value index per knob, in `Space::knobs` order.
pub type Point = Vec<usize>;

/// The numbers the server's own evidence gave for one launch (from its rows' columns).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Evidence {
    pub verdict: Option<VerdictKind>,
    /// The other limits the launch showed (results.csv `verdict_also`): their rules' moves
    /// follow the verdict's once those are spent.
    pub also: Vec<VerdictKind>,
    /// The verdict's evidence sentence, as results.csv's `verdict_evidence` holds it.
    pub text: String,
    pub kv_usage_max: Option<f64>,
    pub running_mean: Option<f64>,
    pub running_max: Option<f64>,
    pub queue_mean: Option<f64>,
    /// The concurrency the client offered.
    pub offered: Option<f64>,
    pub retractions: Option<u64>,
    /// The server's decode steps by running batch (results.csv `decode_steps`, from every
    /// `Decode batch` line of the window): what the response model fits step time on.
    pub steps: Vec<StepSample>,
    /// The KV pool's size in tokens (`max_total_num_tokens`): what a knob does to capacity is
    /// learned from it, not assumed.
    pub pool_tokens: Option<f64>,
    /// The objective's SLO bounds with what this launch measured (the decision's medians).
    pub bounds: Vec<SloSeen>,
}

/// The decode steps the server logged with one running batch size (one bucket of
/// results.csv's `decode_steps`).
#[derive(Debug, Clone, PartialEq)]
pub struct StepSample {
    /// `#running-req` of the bucket's Decode lines (their mean when a bucket merges sizes).
    pub running: f64,
    /// The mean time of one decode step (ms): running ÷ gen throughput, since each running
    /// request gains one token a step.
    pub step_ms: f64,
    /// Whether CUDA graphs ran the bucket's steps; None where the log does not say (vLLM).
    pub graph: Option<bool>,
    /// How many Decode lines the bucket holds: the fit's weight.
    pub lines: u32,
}

/// One bound of the objective's SLO, and what a launch measured of it.
#[derive(Debug, Clone, PartialEq)]
pub struct SloSeen {
    /// The column bounded, as the spec names it (`tpot_ms_p99`, `ttft_ms_p99`, ...).
    pub column: String,
    /// An upper bound (`at most`); false: a lower bound.
    pub at_most: bool,
    pub limit: f64,
    /// The median over the launch's repeats; None when no repeat has a value.
    pub measured: Option<f64>,
}

/// What the launches of one point gave.
// One per configuration of a tune (tens at most): boxing the evidence would cost every match
// on it a deref for no memory worth saving.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// No measurement: the server never became ready, or died (results.csv `failure_kind`,
    /// e.g. `oom`, `startup_error`), or the launch was cancelled.
    Failed { kind: String },
    Measured {
        /// The objective's value, oriented so that higher is better (the caller negates a
        /// minimised one); the mean over the launch's repeats.
        score: f64,
        /// Relative noise of `score` (coefficient of variation) when repeats measured it.
        cv: Option<f64>,
        /// The objective's SLO and the quality guard both allow it (an ineligible point is
        /// never the leader while an eligible one exists).
        eligible: bool,
        /// Why it is not eligible, in a few words (e.g. `quality: fail`), empty when it is.
        why_not: String,
        /// When it is ineligible for its SLO alone: how far from eligible, the worst ratio of
        /// a broken bound's measured value to its limit (≥ 1; `ttft_ms_p99` 13,000 against
        /// 5,000 is 2.6). None when eligible, or ineligible for anything else (the quality
        /// guard, a failed repeat): such a launch never leads.
        slo_excess: Option<f64>,
        evidence: Evidence,
        /// Keys of knobs that the effective-arguments check found not in effect.
        not_in_effect: Vec<String>,
    },
}

/// One configuration of the tune so far, in the order they were first launched, with what
/// all its launches gave together.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    pub point: Point,
    pub outcome: Outcome,
    /// How many launches of the point the outcome pools: 1, and one more per confirmation.
    pub launches: usize,
}

impl Observation {
    /// One launch of `point`.
    pub fn once(point: Point, outcome: Outcome) -> Observation {
        Observation {
            point,
            outcome,
            launches: 1,
        }
    }
}

/// One experiment the strategy asks for, and why (one line of the step log, e.g.
/// "mfs0.88: kv_cache_bound (usage 0.93, 18.8 queued) → more KV: hicache_size 0 → 48").
#[derive(Debug, Clone, PartialEq)]
pub struct Proposal {
    pub point: Point,
    pub why: String,
    /// A confirmation: another launch of a point already measured, on a fresh server.
    pub confirm: bool,
}

/// What to do next.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Launch these (independent of each other: slots may run them at once).
    Launch(Vec<Proposal>),
    /// Nothing is left worth a launch; why, for the step log and decision.md.
    Stop { why: String },
}

/// The most launches one point gets in the confirmation: past this, points still within
/// noise of each other are a tie the budget will not break.
pub const CONFIRM_MAX_LAUNCHES: usize = 4;

/// The most configurations the confirmation re-measures at once: the leader and the best of
/// those within noise of it.
pub const CONFIRM_GROUP: usize = 4;

/// The launches the confirmation may still take: the reserve less the confirmations made.
fn confirm_left(space: &Space, seen: &[Observation]) -> usize {
    space.confirm.saturating_sub(confirmations(seen))
}

/// Confirmation launches made so far: every launch of a point after its first.
pub fn confirmations(seen: &[Observation]) -> usize {
    seen.iter().map(|o| o.launches.saturating_sub(1)).sum()
}

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
fn next_with(space: &Space, seen: &[Observation], launches_left: usize, compose: bool) -> Next {
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
    let explore_left = launches_left.saturating_sub(confirm_left(space, seen));
    // Once a confirmation ran, the exploration is over: its budget was spent, or it had no
    // move left.
    let explored = if explore_left > 0 && confirmations(seen) == 0 {
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

/// What the exploration says.
enum Explored {
    Launch(Next),
    /// No move left, for this reason: the confirmation comes next.
    Spent(String),
}

fn launch(point: Point, why: String, confirm: bool) -> Next {
    Next::Launch(vec![Proposal {
        point,
        why,
        confirm,
    }])
}

/// The exploration: from the base (the leader, else the launch nearest to eligible, else the
/// start), the base's verdict's moves, then those of the launches within noise of it, then the
/// generic search.
fn explore(space: &Space, seen: &[Observation], st: &State, compose: bool) -> Explored {
    let base_i = base(space, seen, st.noise);
    let base = &seen[base_i];
    let verdict = verdict_of(base);
    let head = format!("{}: {}", name(space, &base.point), said(&base.outcome));
    // The client is the limit: no server knob can show more. The confirmation still follows:
    // the limit falls on every configuration alike, and the decision between them still
    // wants repeats.
    // The SLO sized by the response model, both ways: a TPOT bound that only a smaller batch
    // meets, a TTFT bound that needs the queue drained, the throughput the bounds leave; or
    // no batch meets them all, and the exploration is over. A trade for a latency bound still
    // counts when the client limits throughput: the batch the client keeps is too large.
    // (The plain path is the batch's hedges: the rules' own moves, beside the model's.)
    let sized = if compose {
        sized::from_base(space, seen, st, base_i)
    } else {
        None
    };
    if let Some(sized::Sized::Launch(p, why, true)) = &sized {
        return Explored::Launch(launch(p.clone(), why.clone(), false));
    }
    if verdict == Some(VerdictKind::ClientBound) {
        return Explored::Spent(format!(
            "{head}: the client is the limit (the server had room it did not fill): raise the load's concurrency or rate, not the server's knobs"
        ));
    }
    match sized {
        Some(sized::Sized::Launch(p, why, _)) => return Explored::Launch(launch(p, why, false)),
        Some(sized::Sized::Empty(why)) => return Explored::Spent(why),
        None => {}
    }
    // The verdict's own moves, most wanted first: the base's, then those of the launches
    // within noise of it (ordered by standing), since the strategy cannot tell those from the
    // base and their evidence may name the next limit (a larger running cap that measured
    // within noise of the leader, but whose pool is now full, asks for more KV).
    // A queue the TPOT bound keeps (the running cap at the model's ceiling) is the SLO's price,
    // not a limit: the queue's moves (lift the cap, admit more, a larger chunked prefill) are
    // moot there.
    let priced =
        verdict == Some(VerdictKind::QueueWithSpareKv) && sized::cap_at_ceiling(space, st, base);
    if !priced {
        if let Some(n) = rule_moves(space, seen, st, base, compose) {
            return Explored::Launch(n);
        }
    }
    for tie in near_ties(seen, st, base_i) {
        if let Some(n) = rule_moves(space, seen, st, &seen[tie], compose) {
            return Explored::Launch(n);
        }
    }
    // The generic search: the base's nearest allowed neighbour each way on each knob left;
    // a move against the verdict (less KV when the pool is full) only after every other.
    let what = match verdict {
        Some(VerdictKind::ComputeBound) => "compute bound, trade latency for throughput",
        Some(v) if !rules::moves(v, None).is_empty() => "no rule's move left, the neighbours",
        _ => "no rule for this verdict, the neighbours",
    };
    let usage = evidence_of(base).and_then(|e| e.kv_usage_max);
    for against in [false, true] {
        for (k, knob) in space.knobs.iter().enumerate() {
            if st.dropped[k].is_some() || rules::generic_skips(verdict, &knob.key) {
                continue;
            }
            for dir in [Dir::Up, Dir::Down] {
                if sized::moot(space, seen, st, base_i, k, dir) {
                    continue;
                }
                if rules::against(verdict, usage, &knob.key, dir) != against {
                    continue;
                }
                let first = step::order(st, k, knob.values.len(), base.point[k], dir, false)
                    .first()
                    .copied()
                    .filter(|&to| !st.over_ceiling(space, k, to))
                    .filter(|&to| !st.enters_flat(k, base.point[k], to))
                    .filter(|&to| !st.measured_worse(k, base.point[k], to));
                let what = if against {
                    "the rules are spent, against the verdict"
                } else {
                    what
                };
                if let Some(n) = first.and_then(|to| propose(space, st, base, k, to, what)) {
                    return Explored::Launch(n);
                }
            }
        }
    }
    // Last, the response model's own edge: the running cap one value past what it allowed,
    // once, before the exploration ends with launches left (its ceiling is a fit through
    // noisy tails, not a measurement).
    for (k, dir) in sized::model_edges(space, seen, st, base_i) {
        let len = space.knobs[k].values.len();
        let first = step::order(st, k, len, base.point[k], dir, false)
            .first()
            .copied()
            .filter(|&to| !st.enters_flat(k, base.point[k], to));
        let Some(p) = first.and_then(|to| sized::edge_point(space, seen, st, base_i, k, to)) else {
            continue;
        };
        if st.seen.contains(&p) {
            continue;
        }
        let why = format!(
            "{head} → every other move is spent: the model's edge on the running cap, tested once: {}",
            sized::changes(space, &base.point, &p)
        );
        return Explored::Launch(launch(p, why, false));
    }
    Explored::Spent(stop_reason(space, st, &head))
}

/// The confirmation: another launch, on a fresh server, of the leader and of each eligible
/// launch within noise of it, interleaved (the one with the fewest launches first, so a drift
/// of the machine falls on all alike), until the leader stands beyond noise of every other
/// with at least two launches, every one left has [`CONFIRM_MAX_LAUNCHES`], or the budget
/// is spent (an exploration that ends early leaves its launches to the confirmation too).
/// The decision then names a winner, or a tie, from all their rows.
fn confirm(space: &Space, seen: &[Observation], st: &State, explored: &str) -> Next {
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
        near_leader(seen, st, lead)
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

/// The verdict of a measured launch.
fn verdict_of(o: &Observation) -> Option<VerdictKind> {
    evidence_of(o).and_then(|e| e.verdict)
}

fn evidence_of(o: &Observation) -> Option<&Evidence> {
    match &o.outcome {
        Outcome::Measured { evidence, .. } => Some(evidence),
        Outcome::Failed { .. } => None,
    }
}

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
        if !state::differs(excess, least, noise) && best.is_none_or(|(_, b)| score > b) {
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
            !state::differs(x, y, n)
        }
        (Standing::Slo { excess: x, .. }, Standing::Slo { excess: y, .. }) => {
            !state::differs(x, y, n)
        }
        _ => false,
    }
}

/// The launches other than `lead` whose standing is within noise of its standing and whose
/// verdict differs from its verdict (one with the same verdict would ask for the same moves
/// again, each a launch, and spend the budget on the noise), best first (ties by launch order).
fn near_ties(seen: &[Observation], st: &State, lead: usize) -> Vec<usize> {
    let Some(me) = seen.get(lead).and_then(standing) else {
        return Vec::new();
    };
    let mut ties: Vec<(usize, Standing)> = seen
        .iter()
        .enumerate()
        .filter(|&(i, o)| i != lead && verdict_of(o) != verdict_of(&seen[lead]))
        .filter_map(|(i, o)| standing(o).map(|s| (i, s)))
        .filter(|&(_, s)| within_noise(s, me, st.noise))
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
fn near_leader(seen: &[Observation], st: &State, lead: usize) -> Vec<usize> {
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
                let noise = st.noise * (1.0 / n + 1.0 / m).sqrt();
                (!state::differs(score, best, noise)).then_some((i, score))
            }
            _ => None,
        })
        .collect();
    near.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    near.into_iter().map(|(i, _)| i).collect()
}

/// The first unlaunched move that `base`'s verdict asks for, if any.
fn rule_moves(
    space: &Space,
    seen: &[Observation],
    st: &State,
    base: &Observation,
    compose: bool,
) -> Option<Next> {
    let first = verdict_of(base)?;
    let usage = evidence_of(base).and_then(|e| e.kv_usage_max);
    // The verdict's moves first, then those of every other limit the launch showed: a move
    // the first limit's rules have spent leaves the next limit still to lift.
    let also = evidence_of(base)
        .map(|e| e.also.clone())
        .unwrap_or_default();
    let asked = std::iter::once(first)
        .chain(also)
        .flat_map(|v| rules::moves(v, usage).into_iter().map(move |mv| (v, mv)));
    for (verdict, mv) in asked {
        let Some(k) = space.knobs.iter().position(|kn| kn.key == mv.key) else {
            continue;
        };
        if st.dropped[k] == Some(Dropped::NotInEffect)
            || (st.kv_flat[k] && rules::KV_KNOBS.contains(&mv.key) && mv.dir == Dir::Up)
        {
            continue;
        }
        let len = space.knobs[k].values.len();
        let from = *base.point.get(k)?;
        // A short shortfall asks for a short move: with nearly every offered request running
        // (a queue under a tenth of the offered load), half way to the end of a range
        // overshoots what is missing, and a larger pool or cache can cost speed.
        let near = evidence_of(base).is_some_and(|e| {
            matches!((e.running_mean, e.offered), (Some(r), Some(o)) if o > 0.0 && r >= 0.9 * o)
        });
        // (Not for prefixes: every request runs when the pool evicts them, and the shortfall
        // there is the hit rate's, not the batch's.)
        let near = near && verdict != VerdictKind::PrefixCacheEvicted;
        let long = mv.long && !(near && rules::KV_KNOBS.contains(&mv.key));
        let mut order = step::order(st, k, len, from, mv.dir, long);
        // A move the evidence sizes goes first to the smallest value that covers the size.
        if let Some(i) = mv
            .target
            .and_then(|t| sized_value(&space.knobs[k], base, t))
            .and_then(|want| order.iter().position(|&i| i == want))
        {
            let v = order.remove(i);
            order.insert(0, v);
        }
        // A short move is the next value or nothing: walking on past a launched neighbour
        // would turn "a little less" into "much less". (A sized move is a long one.)
        let take = if long { order.len() } else { 1 };
        for to in order.into_iter().take(take) {
            if st.over_ceiling(space, k, to) {
                continue;
            }
            if let Some(n) = propose(space, st, base, k, to, mv.what) {
                // Only a lift composes: a move down lifts no limit, and a churning pool wants
                // fewer admissions, not the caps lifted behind more KV; a pool that keeps
                // more prefixes lifts no limit on the batch either.
                let lifts = mv.dir == Dir::Up
                    && !matches!(
                        verdict,
                        VerdictKind::RetractionChurn | VerdictKind::PrefixCacheEvicted
                    );
                if !(compose && lifts) {
                    return Some(n);
                }
                match composed(space, st, base, seen, n) {
                    Some(n) => return Some(n),
                    // Measured already with its limits lifted: the plain move is no new
                    // experiment (it measures the limits the composed launch lifted), so
                    // the move goes on to its next value.
                    None => continue,
                }
            }
        }
    }
    None
}

/// A rule's move with the limits the evidence already shows behind it lifted in the same
/// launch (issue 42): a sized cap below the offered load binds as soon as the limit in front
/// of it is gone, and a pool that holds fewer requests than offered binds once the cap is
/// lifted. One launch at a time, lifting them one by one would read each step's unmasked limit
/// as no progress (more KV lets the batch run past the graphs: slower), and never compose them.
/// None when that composed point was launched and measured (a composed launch that failed
/// leaves the plain move to try: the lifted limits may be what failed).
fn composed(
    space: &Space,
    st: &State,
    base: &Observation,
    seen: &[Observation],
    n: Next,
) -> Option<Next> {
    let Next::Launch(v) = &n else { return Some(n) };
    let [p] = v.as_slice() else { return Some(n) };
    let Some(lifted) = batch::Lift::read(space, st, base).apply(space, st, &p.point, false) else {
        return Some(n);
    };
    if lifted == p.point {
        return Some(n);
    }
    if st.seen.contains(&lifted) {
        let measured = seen
            .iter()
            .any(|o| o.point == lifted && matches!(o.outcome, Outcome::Measured { .. }));
        return (!measured).then_some(n);
    }
    let extra = sized::changes(space, &p.point, &lifted);
    Some(launch(
        lifted,
        format!("{}, and the limits behind it: {extra}", p.why),
        false,
    ))
}

/// The index of the smallest numeric value of `knob` that is at least the size `t` names in
/// `base`'s evidence (the offered concurrency, the most requests running), if the evidence has
/// it and a value covers it.
fn sized_value(knob: &Knob, base: &Observation, t: rules::Target) -> Option<usize> {
    let e = evidence_of(base)?;
    let size = match t {
        rules::Target::Offered => e.offered?,
        rules::Target::Running => e.running_max.or(e.running_mean)?,
    };
    knob.values
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.as_f64().map(|x| (i, x)))
        .filter(|&(_, x)| x >= size)
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _)| i)
}

/// `base` with knob `k` at value `to`, unless that point was launched already.
fn propose(
    space: &Space,
    st: &State,
    base: &Observation,
    k: usize,
    to: usize,
    what: &str,
) -> Option<Next> {
    let mut p = base.point.clone();
    let from = *p.get(k)?;
    *p.get_mut(k)? = to;
    if st.seen.contains(&p) {
        return None;
    }
    let knob = space.knobs.get(k)?;
    let why = format!(
        "{}: {} → {what}: {} {} → {}",
        name(space, &base.point),
        said(&base.outcome),
        knob.key,
        knob.values.get(from)?,
        knob.values.get(to)?
    );
    Some(launch(p, why, false))
}

/// What the evidence of a launch said, for the step log: the verdict and its numbers, e.g.
/// `kv_cache_bound (usage 0.93, 18.8 queued, 5.8 running of 32)`.
fn said(outcome: &Outcome) -> String {
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
fn stop_reason(space: &Space, st: &State, head: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn floats(v: &[f64]) -> Vec<ParamValue> {
        v.iter().map(|&x| ParamValue::Float(x)).collect()
    }
    fn ints(v: &[i64]) -> Vec<ParamValue> {
        v.iter().map(|&x| ParamValue::Int(x)).collect()
    }

    const MFS: usize = 0;
    const DTYPE: usize = 1;
    const HICACHE: usize = 2;
    const MRR: usize = 3;
    const SC: usize = 4;
    const PAGE: usize = 5;

    fn space() -> Space {
        let k = |key: &str, values| Knob {
            key: key.into(),
            values,
        };
        Space {
            knobs: vec![
                k(
                    "mem_fraction_static",
                    floats(&[0.80, 0.82, 0.84, 0.86, 0.88, 0.90, 0.92, 0.94]),
                ),
                k(
                    "kv_cache_dtype",
                    ["auto", "fp8_e5m2", "fp8_e4m3"]
                        .iter()
                        .map(|s| ParamValue::Str(s.to_string()))
                        .collect(),
                ),
                k("hicache_size", ints(&[0, 16, 32, 48, 64])),
                k("max_running_requests", ints(&[16, 32, 64, 128, 256])),
                k("schedule_conservativeness", floats(&[0.3, 0.6, 1.0, 1.5])),
                k("page_size", ints(&[1, 16, 64])),
            ],
            start: vec![1, 0, 0, 1, 2, 0],
            confirm: 0,
        }
    }

    fn ev(verdict: VerdictKind) -> Evidence {
        Evidence {
            verdict: Some(verdict),
            kv_usage_max: Some(0.93),
            running_mean: Some(5.8),
            queue_mean: Some(18.8),
            offered: Some(32.0),
            ..Default::default()
        }
    }

    fn measured(point: Point, score: f64, verdict: VerdictKind) -> Observation {
        Observation::once(
            point,
            Outcome::Measured {
                score,
                cv: Some(0.01),
                eligible: true,
                why_not: String::new(),
                slo_excess: None,
                evidence: ev(verdict),
                not_in_effect: vec![],
            },
        )
    }

    fn ineligible(point: Point, score: f64, why_not: &str) -> Observation {
        let mut o = measured(point, score, VerdictKind::KvCacheBound);
        if let Outcome::Measured {
            eligible,
            why_not: w,
            ..
        } = &mut o.outcome
        {
            *eligible = false;
            *w = why_not.into();
        }
        o
    }

    fn failed(point: Point, kind: &str) -> Observation {
        Observation::once(point, Outcome::Failed { kind: kind.into() })
    }

    fn with(base: &Point, k: usize, v: usize) -> Point {
        let mut p = base.clone();
        p[k] = v;
        p
    }

    fn one(n: Next) -> Proposal {
        match n {
            Next::Launch(mut v) => {
                assert_eq!(v.len(), 1);
                v.remove(0)
            }
            Next::Stop { why } => panic!("stopped: {why}"),
        }
    }

    fn stop_why(n: Next) -> String {
        match n {
            Next::Stop { why } => why,
            Next::Launch(v) => panic!("launched {v:?}"),
        }
    }

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
    fn kv_cache_bound_turns_the_memory_fraction_up_half_way_with_the_evidence_in_the_log() {
        let sp = space();
        let seen = [measured(sp.start.clone(), 100.0, VerdictKind::KvCacheBound)];
        let p = one(next(&sp, &seen, 5));
        // From index 1 of 8: six values above, half way is the third (0.88).
        assert_eq!(p.point, with(&sp.start, MFS, 4));
        assert_eq!(
            p.why,
            "mfs0.82_kv-auto_hicache0_mrr32_sc1_ps1: kv_cache_bound (usage 0.93, 18.8 queued, 5.8 running of 32) → more KV: mem_fraction_static 0.82 → 0.88"
        );
    }

    /// Issue 42: the diagnosis names every limit a launch shows; once the verdict's own moves
    /// are spent, the next limit's rules move, and the step log names both.
    #[test]
    fn a_limit_named_beside_the_verdict_moves_once_the_verdicts_moves_are_spent() {
        let mut sp = space();
        // The running cap at its largest, admission at its least conservative: the queue's
        // rules have nothing left.
        sp.start = vec![1, 0, 0, 4, 0, 0];
        let mut o = measured(sp.start.clone(), 100.0, VerdictKind::QueueWithSpareKv);
        if let Outcome::Measured { evidence, .. } = &mut o.outcome {
            evidence.also = vec![VerdictKind::KvCacheBound];
        }
        let p = one(next(&sp, &[o], 5));
        assert!(p.point[MFS] > 1, "{:?}: {}", p.point, p.why);
        assert!(
            p.why.contains(
                "queue_with_spare_kv + kv_cache_bound (usage 0.93, 18.8 queued, 5.8 running of 32) → more KV: mem_fraction_static 0.82 →"
            ),
            "{}",
            p.why
        );
        // Without the second limit named, no rule moves: the generic search does, and says so.
        let plain = measured(sp.start.clone(), 100.0, VerdictKind::QueueWithSpareKv);
        let q = one(next(&sp, &[plain], 5));
        assert!(!q.why.contains("more KV"), "{}", q.why);
    }

    #[test]
    fn an_evicted_prefix_cache_grows_the_pool_then_the_host_tier_in_long_moves() {
        let sp = space();
        // Every offered request runs (the batch is not short): the moves stay long.
        let evicted = |point: Point| {
            let mut o = measured(point, 100.0, VerdictKind::PrefixCacheEvicted);
            if let Outcome::Measured { evidence, .. } = &mut o.outcome {
                evidence.running_mean = Some(32.0);
                evidence.queue_mean = Some(0.0);
                evidence.kv_usage_max = Some(0.5);
            }
            o
        };
        let p = one(next(&sp, &[evicted(sp.start.clone())], 5));
        assert_eq!(p.point, with(&sp.start, MFS, 4), "{}", p.why);
        assert!(
            p.why
                .contains("→ a larger pool for prefixes: mem_fraction_static 0.82 → 0.88"),
            "{}",
            p.why
        );
        // The memory fraction at its top: the host tier, half way (0 → 32 GB).
        let mut sp = sp;
        let top = with(&sp.start, MFS, 7);
        sp.start = top.clone();
        let p = one(next(&sp, &[evicted(top.clone())], 5));
        assert_eq!(p.point, with(&top, HICACHE, 2), "{}", p.why);
        assert!(
            p.why
                .contains("→ a host tier for evicted prefixes: hicache_size 0 → 32"),
            "{}",
            p.why
        );
        // A KV-bound launch at the same point asks for the dtype, not the host tier.
        let p = one(next(
            &sp,
            &[measured(top.clone(), 100.0, VerdictKind::KvCacheBound)],
            5,
        ));
        assert_eq!(p.point, with(&top, DTYPE, 1), "{}", p.why);
    }

    #[test]
    fn an_oom_is_a_cliff_the_search_never_crosses() {
        let sp = space();
        let s = sp.start.clone();
        let seen = vec![
            measured(s.clone(), 100.0, VerdictKind::KvCacheBound),
            failed(with(&s, MFS, 4), "oom"),
        ];
        let p = one(next(&sp, &seen, 5));
        // Below the cliff: half way from 0.82 to 0.86 is 0.84, then 0.86.
        assert_eq!(p.point, with(&s, MFS, 2));
        let mut seen = seen;
        seen.push(measured(p.point, 110.0, VerdictKind::KvCacheBound));
        let p = one(next(&sp, &seen, 5));
        assert_eq!(p.point, with(&s, MFS, 3));
        seen.push(measured(p.point, 120.0, VerdictKind::KvCacheBound));
        // No memory fraction left under the cliff: the next KV knob, the dtype's next entry;
        // not the hierarchical cache, whose host tier holds prefixes, not the running batch.
        let p = one(next(&sp, &seen, 5));
        assert_eq!(p.point[MFS], 3);
        assert_eq!(p.point[HICACHE], 0);
        assert!(
            p.why.contains("kv_cache_dtype auto → fp8_e5m2"),
            "{}",
            p.why
        );
        // Nothing over the cliff, ever, from any base.
        for _ in 0..30 {
            match next(&sp, &seen, 30) {
                Next::Launch(v) => {
                    for p in v {
                        assert!(p.point[MFS] < 4, "{}", p.why);
                        seen.push(measured(p.point, 50.0, VerdictKind::KvCacheBound));
                    }
                }
                Next::Stop { .. } => break,
            }
        }
    }

    #[test]
    fn a_failure_going_down_is_a_floor() {
        let mut sp = space();
        let s = with(&sp.start, MRR, 3);
        sp.start = s.clone();
        let seen = vec![
            measured(s.clone(), 100.0, VerdictKind::RetractionChurn),
            failed(with(&s, MRR, 2), "startup_error"),
        ];
        let st = State::read(&sp, &seen);
        assert_eq!(st.floor[MRR], Some(2));
        assert_eq!(st.ceiling[MRR], None);
        assert!(!st.allowed(MRR, 1) && !st.allowed(MRR, 2) && st.allowed(MRR, 4));
        // The churn rule's "admit fewer" on the running cap is closed: the next one, the
        // conservativeness up.
        let p = one(next(&sp, &seen, 5));
        assert_eq!(p.point, with(&s, SC, 3));
    }

    #[test]
    fn a_quality_failed_dtype_is_never_tried_again() {
        let mut sp = space();
        let s = with(&with(&sp.start, MFS, 7), HICACHE, 4);
        sp.start = s.clone();
        let mut seen = vec![measured(s.clone(), 100.0, VerdictKind::KvCacheBound)];
        let p = one(next(&sp, &seen, 5));
        assert_eq!(p.point, with(&s, DTYPE, 1));
        seen.push(ineligible(p.point, 130.0, "quality: fail"));
        // The ineligible point does not lead, though it scored higher.
        assert_eq!(leader(&sp, &seen), Some(0));
        let p = one(next(&sp, &seen, 5));
        assert_eq!(p.point, with(&s, DTYPE, 2));
        for _ in 0..40 {
            match next(&sp, &seen, 40) {
                Next::Launch(v) => {
                    for p in v {
                        assert_ne!(p.point[DTYPE], 1, "{}", p.why);
                        seen.push(measured(p.point, 90.0, VerdictKind::KvCacheBound));
                    }
                }
                Next::Stop { .. } => break,
            }
        }
    }

    #[test]
    fn a_knob_not_in_effect_is_dropped() {
        let sp = space();
        let mut start = measured(sp.start.clone(), 100.0, VerdictKind::Unknown);
        if let Outcome::Measured { not_in_effect, .. } = &mut start.outcome {
            not_in_effect.push("page_size".into());
        }
        let mut seen = vec![start];
        assert_eq!(
            State::read(&sp, &seen).dropped[PAGE],
            Some(Dropped::NotInEffect)
        );
        let mut last = String::new();
        for _ in 0..60 {
            match next(&sp, &seen, 60) {
                Next::Launch(v) => {
                    for p in v {
                        assert_eq!(p.point[PAGE], 0, "{}", p.why);
                        seen.push(measured(p.point, 90.0, VerdictKind::Unknown));
                    }
                }
                Next::Stop { why } => {
                    last = why;
                    break;
                }
            }
        }
        assert!(last.contains("not in effect: page_size"), "{last}");
    }

    #[test]
    fn a_knob_without_response_leaves_the_generic_search() {
        let sp = space();
        let s = sp.start.clone();
        let seen = vec![
            measured(s.clone(), 100.0, VerdictKind::ComputeBound),
            // The running cap up: within noise (2 × 1% cv).
            measured(with(&s, MRR, 2), 101.0, VerdictKind::ComputeBound),
        ];
        let st = State::read(&sp, &seen);
        assert!((st.noise - 0.02).abs() < 1e-12);
        // Flat one way: the other way is still to try (a knob's best may be in its middle),
        // but not back into the interval measured flat.
        assert_eq!(st.dropped[MRR], None);
        assert_eq!(st.flat[MRR], vec![(1, 2)]);
        let p = one(next(&sp, &seen, 5));
        assert_eq!(p.point[MRR], 3, "{}", p.why);
        // Flat on the next value too: the leader (101) sits between two flat intervals, and
        // the next step turns another knob.
        let mut both = seen.clone();
        both.push(measured(with(&s, MRR, 3), 100.5, VerdictKind::ComputeBound));
        let st = State::read(&sp, &both);
        assert_eq!(st.flat[MRR], vec![(1, 2), (2, 3)]);
        let p = one(next(&sp, &both, 5));
        assert!(p.why.contains("schedule_conservativeness"), "{}", p.why);
        // Measured flat going up and going down: dropped.
        let mut down = both.clone();
        down.push(measured(with(&s, MRR, 0), 100.0, VerdictKind::ComputeBound));
        assert_eq!(
            State::read(&sp, &down).dropped[MRR],
            Some(Dropped::NoResponse)
        );
        // From below: the start (1) stepped up to 2, flat; down from the start is the other
        // way, and it is tried.
        let below = vec![
            measured(s.clone(), 101.0, VerdictKind::ComputeBound),
            measured(with(&s, MRR, 2), 100.0, VerdictKind::ComputeBound),
        ];
        let p = one(next(&sp, &below, 5));
        assert_eq!(p.point[MRR], 0, "{}", p.why);
        // A response beyond noise keeps a knob in, even after a flat one; the interval
        // measured flat stays flat (the response was on another), and the knob is not
        // one "without response".
        let mut seen = seen;
        seen.push(measured(with(&s, MRR, 0), 50.0, VerdictKind::ComputeBound));
        let st = State::read(&sp, &seen);
        assert_eq!(st.dropped[MRR], None);
        assert_eq!(st.flat[MRR], vec![(1, 2)]);
        assert!(st.responded[MRR] && !st.without_response(MRR));
        // ... and that change (from the leader, 101 at 2), measured worse, is not made again
        // from another base; the flat ones are not "worse".
        assert!(st.measured_worse(MRR, 2, 0));
        assert!(!st.measured_worse(MRR, 1, 2) && !st.measured_worse(MRR, 0, 2));
    }

    #[test]
    fn compute_bound_searches_only_the_knobs_that_are_not_kv_capacity() {
        let sp = space();
        let mut seen = vec![measured(sp.start.clone(), 100.0, VerdictKind::ComputeBound)];
        for _ in 0..20 {
            match next(&sp, &seen, 20) {
                Next::Launch(v) => {
                    for p in v {
                        assert_eq!(p.point[MFS], sp.start[MFS], "{}", p.why);
                        assert_eq!(p.point[HICACHE], sp.start[HICACHE], "{}", p.why);
                        assert_eq!(p.point[DTYPE], sp.start[DTYPE], "{}", p.why);
                        assert!(p.why.contains("compute bound"), "{}", p.why);
                        seen.push(measured(p.point, 60.0, VerdictKind::ComputeBound));
                    }
                }
                Next::Stop { why } => {
                    assert!(why.contains("no step from the leader"), "{why}");
                    break;
                }
            }
        }
        // mrr both ways, sc both ways, page both ways (page_size has one value below: none).
        assert_eq!(seen.len(), 1 + 2 + 2 + 1);
    }

    #[test]
    fn a_client_bound_leader_stops_the_tune() {
        let sp = space();
        let seen = [measured(sp.start.clone(), 100.0, VerdictKind::ClientBound)];
        let why = stop_why(next(&sp, &seen, 10));
        assert!(why.contains("the client is the limit"), "{why}");
        assert!(why.starts_with("mfs0.82_"), "{why}");
    }

    #[test]
    fn a_queue_with_spare_kv_lifts_the_running_cap_and_churn_lowers_it_one_value() {
        let sp = space();
        let seen = [measured(
            sp.start.clone(),
            100.0,
            VerdictKind::QueueWithSpareKv,
        )];
        let p = one(next(&sp, &seen, 5));
        // From 32 (index 1 of 5): three values above, half way is 128; the pool, which holds
        // 6 of the 32 offered (5.8 running at 0.93 usage), grows with it (composed, issue 42).
        assert_eq!(p.point, with(&with(&sp.start, MRR, 3), MFS, 4));
        let s = with(&sp.start, MRR, 4);
        let sp = Space {
            start: s.clone(),
            ..sp
        };
        let seen = [measured(s.clone(), 100.0, VerdictKind::RetractionChurn)];
        let p = one(next(&sp, &seen, 5));
        assert_eq!(p.point, with(&s, MRR, 3));
        assert!(p.why.contains("admit fewer"), "{}", p.why);
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
    fn a_tune_never_repeats_a_point_and_replays_the_same_path() {
        let sp = space();
        // A fixed landscape: score by the point's digits, verdict by its running cap.
        let outcome = |p: &Point| -> Outcome {
            if p[MFS] > 5 {
                return Outcome::Failed { kind: "oom".into() };
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
    fn the_log_line_says_a_failure_and_an_ineligible_launch() {
        assert_eq!(
            said(&Outcome::Failed { kind: "oom".into() }),
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
    fn a_failed_start_steps_from_the_start_by_the_generic_search() {
        let sp = space();
        let seen = [failed(sp.start.clone(), "oom")];
        let p = one(next(&sp, &seen, 5));
        assert_eq!(p.point, with(&sp.start, MFS, 2));
        assert!(p.why.starts_with("mfs0.82"), "{}", p.why);
        assert!(p.why.contains("failed (oom)"), "{}", p.why);
        // A single-value space has nothing left after its start.
        let tiny = Space {
            knobs: vec![Knob {
                key: "page_size".into(),
                values: ints(&[1]),
            }],
            start: vec![0],
            confirm: 0,
        };
        let seen = [measured(vec![0], 1.0, VerdictKind::ComputeBound)];
        assert!(stop_why(next(&tiny, &seen, 5)).contains("no step"));
    }

    #[test]
    fn with_nothing_leading_the_search_steps_from_the_start() {
        let sp = space();
        let seen = [
            failed(sp.start.clone(), "oom"),
            failed(with(&sp.start, MFS, 2), "oom"),
        ];
        // Up from the start is a cliff now: down, from the start, not from the later failure.
        let p = one(next(&sp, &seen, 5));
        assert_eq!(p.point, with(&sp.start, MFS, 0));
        assert!(p.why.starts_with("mfs0.82_"), "{}", p.why);
    }

    #[test]
    fn the_generic_search_says_why_it_searches() {
        let sp = space();
        let seen = [measured(sp.start.clone(), 100.0, VerdictKind::Unknown)];
        let p = one(next(&sp, &seen, 5));
        assert!(
            p.why
                .contains("unknown (usage 0.93, 18.8 queued, 5.8 running of 32) → no rule for this verdict, the neighbours: mem_fraction_static 0.82 → 0.84"),
            "{}",
            p.why
        );
        // A verdict with rules whose moves are all spent: the same search, said so.
        let tiny = Space {
            knobs: vec![Knob {
                key: "page_size".into(),
                values: ints(&[1, 16]),
            }],
            start: vec![0],
            confirm: 0,
        };
        let seen = [measured(vec![0], 100.0, VerdictKind::KvCacheBound)];
        let p = one(next(&tiny, &seen, 5));
        assert!(
            p.why
                .contains("→ no rule's move left, the neighbours: page_size 1 → 16"),
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

    // ---- issue 35: progress while nothing is eligible, sized moves, the confirmation ----

    /// A launch ineligible for its SLO alone, `excess` from eligible, with its evidence.
    fn slo(point: Point, score: f64, excess: f64, evidence: Evidence) -> Observation {
        Observation::once(
            point,
            Outcome::Measured {
                score,
                cv: Some(0.01),
                eligible: false,
                why_not: "SLO not met: ttft_ms_p99".into(),
                slo_excess: Some(excess),
                evidence,
                not_in_effect: vec![],
            },
        )
    }

    fn evidence(verdict: VerdictKind, running: f64, offered: f64, usage: f64) -> Evidence {
        Evidence {
            verdict: Some(verdict),
            kv_usage_max: Some(usage),
            running_mean: Some(running),
            running_max: Some(running),
            queue_mean: Some(offered - running),
            offered: Some(offered),
            ..Default::default()
        }
    }

    /// The space of the case: the pool, the cap and the graphs.
    fn stacked() -> Space {
        let k = |key: &str, values| Knob {
            key: key.into(),
            values,
        };
        Space {
            knobs: vec![
                k(
                    "mem_fraction_static",
                    floats(&[0.80, 0.82, 0.84, 0.86, 0.88, 0.90, 0.92, 0.94]),
                ),
                k("max_running_requests", ints(&[16, 32, 48, 64, 96, 128])),
                k("cuda_graph_max_bs", ints(&[16, 32, 64, 128])),
            ],
            start: vec![1, 0, 0],
            confirm: 0,
        }
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
    fn a_move_measured_with_its_limits_lifted_is_not_launched_again_without_them() {
        let sp = stacked();
        let s = sp.start.clone();
        let kv = |r| evidence(VerdictKind::KvCacheBound, r, 64.0, 0.97);
        // The start, KV bound; its first KV move went out with the cap and the graphs behind
        // it (4, 3, 2) and measured further from eligible: the start stays the base.
        let mut seen = vec![
            slo(s.clone(), 600.0, 2.0, kv(12.0)),
            slo(vec![4, 3, 2], 500.0, 3.0, kv(30.0)),
        ];
        assert_eq!(base(&sp, &seen, 0.02), 0);
        let p = one(next(&sp, &seen, 10));
        // The same value of the pool without the lifts (4, 0, 0) would measure only what the
        // composed launch lifted: the move goes on to its next value, composed.
        assert_ne!(p.point, vec![4, 0, 0], "{}", p.why);
        assert!(p.point[0] != 4 && p.point[0] > 1, "{}", p.why);
        assert!(p.why.contains("and the limits behind it"), "{}", p.why);
        // A composed launch that died leaves its plain move to the cliff's rule, not to this:
        // nothing at or past the blamed pool value again.
        seen[1] = failed(vec![4, 3, 2], "oom");
        let p = one(next(&sp, &seen, 10));
        assert!(p.point[0] < 4, "{}", p.why);
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

    #[test]
    fn a_long_move_that_made_progress_and_a_cliff_past_it_are_not_back_filled() {
        let sp = Space {
            start: vec![1, 1, 3],
            ..stacked()
        };
        let kv = |r: f64| evidence(VerdictKind::KvCacheBound, r, 64.0, 0.97);
        // The start, then half way up (progress), then the next long move died under load.
        let seen = vec![
            slo(vec![1, 1, 3], 600.0, 5.0, kv(20.0)),
            slo(vec![4, 1, 3], 800.0, 3.0, kv(30.0)),
            failed(vec![6, 1, 3], "oom"),
        ];
        let p = one(next(&sp, &seen, 10));
        // Between the progress and the cliff, never back toward the start; the cap of 32
        // behind the pool lifted with it.
        assert_eq!(p.point, vec![5, 3, 3], "{}", p.why);
        let mut seen = seen;
        seen.push(slo(p.point, 820.0, 2.9, kv(31.0)));
        // Whatever comes next, nothing goes back between the start and the progress.
        for _ in 0..12 {
            match next(&sp, &seen, 20) {
                Next::Launch(v) => {
                    for p in v {
                        assert!(!(2..=3).contains(&p.point[MFS]), "{}", p.why);
                        seen.push(slo(p.point, 500.0, 4.0, kv(20.0)));
                    }
                }
                Next::Stop { .. } => break,
            }
        }
    }

    #[test]
    fn a_move_against_the_verdict_comes_after_every_other_neighbour() {
        let sp = Space {
            start: vec![3, 1, 1],
            ..stacked()
        };
        let kv = evidence(VerdictKind::KvCacheBound, 20.0, 64.0, 0.97);
        // More KV died: the rules are spent.
        let mut seen = vec![
            slo(vec![3, 1, 1], 600.0, 5.0, kv.clone()),
            failed(vec![4, 1, 1], "oom"),
        ];
        let mut order = Vec::new();
        while let Next::Launch(v) = next(&sp, &seen, 20) {
            for p in v {
                order.push(p.why.clone());
                seen.push(slo(p.point, 500.0, 6.0, kv.clone()));
            }
        }
        assert_eq!(order.len(), 5, "{order:#?}");
        assert!(
            order[..4]
                .iter()
                .all(|w| w.contains("no rule's move left, the neighbours")),
            "{order:#?}"
        );
        assert!(
            order[4].ends_with(
                "→ the rules are spent, against the verdict: mem_fraction_static 0.86 → 0.84"
            ),
            "{order:#?}"
        );
    }

    #[test]
    fn a_small_shortfall_of_kv_asks_for_one_value_more_not_half_the_range() {
        let sp = Space {
            start: vec![1, 3, 3],
            ..stacked()
        };
        let near = vec![slo(
            vec![1, 3, 3],
            600.0,
            1.2,
            evidence(VerdictKind::KvCacheBound, 60.0, 64.0, 0.97),
        )];
        assert_eq!(one(next(&sp, &near, 10)).point, vec![2, 3, 3]);
        let far = vec![slo(
            vec![1, 3, 3],
            600.0,
            1.2,
            evidence(VerdictKind::KvCacheBound, 40.0, 64.0, 0.97),
        )];
        assert_eq!(one(next(&sp, &far, 10)).point, vec![4, 3, 3]);
    }

    #[test]
    fn a_long_move_walks_past_a_value_launched_already_and_a_short_one_does_not() {
        let sp = stacked();
        let kv = |r: f64| evidence(VerdictKind::KvCacheBound, r, 64.0, 0.97);
        // Half way (0.88) was launched and did worse: the long move's next value, 0.86.
        let seen = vec![
            slo(vec![1, 0, 0], 600.0, 3.0, kv(20.0)),
            slo(vec![4, 0, 0], 500.0, 4.0, kv(20.0)),
        ];
        assert_eq!(one(next(&sp, &seen, 10)).point, vec![3, 3, 2]);
        // A small shortfall: one value up, launched already: no more KV from the memory
        // fraction; the neighbours come next.
        let seen = vec![
            slo(vec![1, 0, 0], 600.0, 1.2, kv(60.0)),
            slo(vec![2, 0, 0], 500.0, 1.5, kv(60.0)),
        ];
        let p = one(next(&sp, &seen, 10));
        assert_eq!(p.point, vec![1, 1, 0], "{}", p.why);
    }

    #[test]
    fn a_sized_move_falls_back_to_the_long_order_when_its_value_is_taken() {
        let mut sp = Space {
            start: vec![1, 0, 3],
            ..stacked()
        };
        let q = |r: f64| evidence(VerdictKind::QueueWithSpareKv, r, 64.0, 0.4);
        let mut seen = vec![slo(vec![1, 0, 3], 600.0, 5.0, q(16.0))];
        // The cap to the offered 64; the pool (16 at 0.4: 40 requests) grows with it.
        assert_eq!(one(next(&sp, &seen, 10)).point, vec![4, 3, 3]);
        // That failed to start: the memory fraction is blamed (a composed move's failure is
        // memory's), the cap's sized value still goes, with less KV.
        seen.push(failed(vec![4, 3, 3], "startup_error"));
        let st = State::read(&sp, &seen);
        assert_eq!((st.ceiling[0], st.ceiling[1]), (Some(4), None));
        let p = one(next(&sp, &seen, 10)).point;
        assert!(p[0] < 4 && p[1] == 3, "{p:?}");
        // The plain cap of 64 failed to start: half way below the cliff (32 and 48 left: 32
        // first), the pool lifted with it.
        let mut seen = vec![slo(vec![1, 0, 3], 600.0, 5.0, q(16.0))];
        seen.push(failed(vec![1, 3, 3], "startup_error"));
        assert_eq!(one(next(&sp, &seen, 10)).point[1], 1);
        // An offered load above every value: the sized move has no value, the long order goes.
        let huge = vec![slo(
            vec![1, 0, 3],
            600.0,
            5.0,
            evidence(VerdictKind::QueueWithSpareKv, 16.0, 500.0, 0.4),
        )];
        assert_eq!(one(next(&sp, &huge, 10)).point[1], 3);
        // 40 offered: 48 covers it, where the long move would go to 64.
        let forty = vec![slo(
            vec![1, 0, 3],
            600.0,
            5.0,
            evidence(VerdictKind::QueueWithSpareKv, 16.0, 40.0, 0.4),
        )];
        assert_eq!(one(next(&sp, &forty, 10)).point, vec![1, 2, 3]);
        // Graphs: the smallest capture at least the batch that ran.
        sp.start = vec![1, 3, 0];
        let g = vec![measured_with(
            vec![1, 3, 0],
            2000.0,
            evidence(VerdictKind::CudaGraphLimited, 40.0, 40.0, 0.5),
        )];
        assert_eq!(one(next(&sp, &g, 10)).point, vec![1, 3, 2]);
    }

    fn measured_with(point: Point, score: f64, evidence: Evidence) -> Observation {
        Observation::once(
            point,
            Outcome::Measured {
                score,
                cv: Some(0.01),
                eligible: true,
                why_not: String::new(),
                slo_excess: None,
                evidence,
                not_in_effect: vec![],
            },
        )
    }

    /// Runs the strategy to its stop on fixed outcomes: `score` of a point, each launch of it
    /// measuring `score × (1 + wobble)`, the wobbles taken in turn.
    fn drive(
        sp: &Space,
        budget: usize,
        score: &dyn Fn(&Point) -> f64,
        wobble: &[f64],
    ) -> (Vec<Proposal>, Vec<Observation>, String) {
        let mut seen: Vec<Observation> = Vec::new();
        let mut sums: Vec<f64> = Vec::new();
        let mut log = Vec::new();
        let mut w = wobble.iter().cycle();
        loop {
            let used = log.len();
            match next(sp, &seen, budget - used) {
                Next::Stop { why } => return (log, seen, why),
                Next::Launch(v) => {
                    for p in v {
                        let x = score(&p.point) * (1.0 + w.next().copied().unwrap_or(0.0));
                        match seen.iter().position(|o| o.point == p.point) {
                            Some(i) => {
                                assert!(p.confirm, "{}", p.why);
                                sums[i] += x;
                                seen[i].launches += 1;
                                let mean = sums[i] / seen[i].launches as f64;
                                if let Outcome::Measured { score, .. } = &mut seen[i].outcome {
                                    *score = mean;
                                }
                            }
                            None => {
                                assert!(!p.confirm, "{}", p.why);
                                sums.push(x);
                                seen.push(measured_with(
                                    p.point.clone(),
                                    x,
                                    evidence(VerdictKind::ComputeBound, 64.0, 64.0, 0.5),
                                ));
                            }
                        }
                        log.push(p);
                    }
                }
            }
        }
    }

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

    #[test]
    fn near_the_leader_is_within_the_noise_of_two_means_which_shrinks_with_their_launches() {
        let sp = stacked();
        let e = || evidence(VerdictKind::ComputeBound, 64.0, 64.0, 0.5);
        // Noise 2% (cv 1%): one launch each, two means differ by up to 2% × √2 = 2.83%.
        let mut seen = vec![
            measured_with(vec![1, 0, 0], 1000.0, e()),
            measured_with(vec![2, 0, 0], 975.0, e()),
            measured_with(vec![3, 0, 0], 969.0, e()),
        ];
        let st = State::read(&sp, &seen);
        assert_eq!(near_leader(&seen, &st, 0), vec![1]);
        // Two launches each: 2% × √(1/2 + 1/2) = 2%; 2.5% is beyond it.
        seen[0].launches = 2;
        seen[1].launches = 2;
        assert!(near_leader(&seen, &st, 0).is_empty());
        // The leader at 4 launches, the other at 1: 2% × √(1/4 + 1) = 2.24%.
        seen[0].launches = 4;
        seen[1].launches = 1;
        assert!(near_leader(&seen, &st, 0).is_empty());
        seen[1] = measured_with(vec![2, 0, 0], 978.0, e());
        assert_eq!(near_leader(&seen, &st, 0), vec![1]);
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
        // Nothing eligible to confirm: the stop says so.
        let e = evidence(VerdictKind::KvCacheBound, 12.0, 64.0, 0.97);
        let only_slo = vec![slo(sp.start.clone(), 600.0, 3.0, e)];
        let why = stop_why(next(&sp, &only_slo, 2));
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
