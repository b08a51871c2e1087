//! Moves sized to the SLO (issue 42), both ways: the running batch the response model
//! (`model`) says the SLO allows at the offered load, and the knobs that give it, turned at
//! once from the base: the running cap down to trade throughput for a TPOT bound, or up (with
//! the pool and the CUDA graphs behind it) to drain a queue for a TTFT bound or to take the
//! throughput the bounds leave. When no batch meets both bounds, the exploration ends saying
//! so, with the model's numbers and the best trade-off measured.

use super::model::{self, AIM, Band, Model};
use super::rules::{self, Dir};
use super::state::{Dropped, State};
use super::types::{Observation, Point, Space, evidence_of};
use super::words::{name, said};

/// The knob that caps the running batch, and the one that sizes the CUDA graphs.
const CAP: &str = "max_running_requests";
const GRAPHS: &str = "cuda_graph_max_bs";

/// How far apart the band's edges must be for an empty band to end the exploration: the
/// TTFT floor above the TPOT top by this factor.
const EMPTY_BY: f64 = 1.15;

/// What the model says from the base.
#[derive(Debug)]
pub enum Sized {
    /// Launch this point, for this reason; `trade`: it lowers the running batch for a latency
    /// bound (a move that still counts when the client is what limits throughput).
    Launch(Point, String, bool),
    /// No running batch meets every bound: the exploration is over, for this reason.
    Empty(String),
}

fn knob(space: &Space, st: &State, key: &str) -> Option<usize> {
    let k = space.knobs.iter().position(|kn| kn.key == key)?;
    (st.dropped[k] != Some(Dropped::NotInEffect)).then_some(k)
}

/// The numeric values of knob `k` with their indices, those the state allows, ascending.
fn values(space: &Space, st: &State, k: usize) -> Vec<(usize, f64)> {
    let mut v: Vec<(usize, f64)> = space.knobs[k]
        .values
        .iter()
        .enumerate()
        .filter(|&(i, _)| st.allowed(k, i))
        .filter_map(|(i, v)| v.as_f64().map(|x| (i, x)))
        .collect();
    v.sort_by(|a, b| a.1.total_cmp(&b.1));
    v
}

fn num(x: f64) -> String {
    if x.is_infinite() {
        "any".to_string()
    } else if (x - x.round()).abs() < 1e-9 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// The band in words: each bound and the running batch it asks for.
fn band_words(m: &Model, band: &Band, offered: f64, fit: Option<model::StepFit>) -> String {
    let mut parts = Vec::new();
    if let Some(t) = &m.tpot {
        match band.hi {
            Some(h) if h.is_finite() => parts.push(format!(
                "{} ≤ {} needs ≤ {} running",
                t.column,
                num(t.limit),
                num(h)
            )),
            Some(_) => parts.push(format!(
                "{} ≤ {} holds at any batch",
                t.column,
                num(t.limit)
            )),
            None => parts.push(format!(
                "{} ≤ {} is not met even by one running request",
                t.column,
                num(t.limit)
            )),
        }
    }
    if let Some(t) = &m.ttft {
        if band.lo.is_finite() && band.lo > 1.0 {
            parts.push(format!(
                "{} ≤ {} needs ≥ {} running at this load ({} offered)",
                t.column,
                num(t.limit),
                num(band.lo),
                num(offered)
            ));
        } else if band.lo.is_infinite() {
            parts.push(format!(
                "{} ≤ {} is not met by any batch at this load ({} offered)",
                t.column,
                num(t.limit),
                num(offered)
            ));
        }
    }
    if let Some(f) = fit {
        parts.push(format!(
            "decode step {:.2} + {:.3} × running ms over {} Decode lines at {} batch sizes",
            f.a, f.b, f.lines, f.sizes
        ));
    }
    parts.join("; ")
}

/// The SLO-sized move from `seen[base_i]`, if the model has a bound to size for and the
/// numbers to size it: None leaves the move to the verdict's rules.
pub fn from_base(space: &Space, seen: &[Observation], st: &State, base_i: usize) -> Option<Sized> {
    let m = &st.model;
    if m.tpot.is_none() && m.ttft.is_none() {
        return None;
    }
    let b = seen.get(base_i)?;
    let e = evidence_of(b)?;
    let offered = e.offered.filter(|o| *o >= 1.0)?;
    let running = e.running_mean?;
    let cap_k = knob(space, st, CAP);
    let graph_k = knob(space, st, GRAPHS);
    // The mode the target runs in: with a graph knob to turn, graphs (they are lifted with the
    // batch); else the base's own.
    let base_graphs = model::ran_with_graphs(e) != Some(false);
    let graphs = if graph_k.is_some() && m.graphs.is_some() {
        true
    } else {
        base_graphs
    };
    let fit = if graphs {
        m.graphs.or(m.eager)
    } else {
        m.eager.or(m.graphs)
    };
    // The stop is judged on the bounds themselves; the moves keep `AIM`'s room.
    let strict = m.band_kind(base_i, graphs, offered, 1.0);
    // An empty band is a finding once the model knows enough, and when its edges are apart by
    // more than a fit's extrapolation misses by (a line through batches of 30 and 48 read at 64
    // was 15% off on the trade bench's noisy worlds).
    let apart = strict
        .hi
        .is_none_or(|h| strict.lo > (h * EMPTY_BY).max(h + 1.0));
    if strict.empty() {
        if strict.known && apart {
            return Some(Sized::Empty(format!(
                "{}: no point of this space meets the SLO at this load: {}; the best trade-off measured is {}: {}",
                name(space, &b.point),
                band_words(m, &strict, offered, fit),
                name(space, &b.point),
                said(&b.outcome)
            )));
        }
    }
    // The band the fit's centre gives; empty there but open on its kind edge, the kind one:
    // its top is a batch the evidence does not rule out, and a launch there settles it.
    let central = m.band(base_i, graphs, offered, AIM);
    let band = if central.empty() && !strict.empty() {
        strict
    } else {
        central
    };
    // A band that looks empty before the model knows enough is tested, not believed: a launch
    // between its edges either meets the SLO (a noisy tail misled the fit) or measures the
    // numbers that make the finding.
    let probe = strict.empty();
    let (hi, lo) = if probe {
        // The TPOT edge tested from just above: the smallest cap at least the band's top (it
        // meets the TTFT floor where anything does), else the load.
        let top = band.hi.unwrap_or(1.0).max(1.0);
        let above = cap_k
            .and_then(|k| {
                values(space, st, k)
                    .into_iter()
                    .map(|(_, x)| x)
                    .find(|&x| x >= top)
            })
            .unwrap_or(offered);
        (above.min(offered), 1.0)
    } else {
        let hi = band.hi.unwrap_or(0.0).min(offered);
        (hi, band.lo.min(hi.max(1.0)))
    };
    let pool_requests = pool_requests(e);
    let cap_now = cap_k.and_then(|k| model::value(space, &b.point, &space.knobs[k].key));
    // Over the top by the batch that ran at its peak (the TPOT tail's), under the floor by the
    // mean (the queue's).
    let peak = e.running_max.unwrap_or(running).max(running);
    let over_top = peak > hi + 0.5;
    let up = running + 0.5 < lo || (running + 0.5 < hi && (e.queue_mean.unwrap_or(0.0) > 0.5));
    if !over_top && !up {
        return None;
    }
    let words = band_words(m, &band, offered, fit);
    let head = format!("{}: {}", name(space, &b.point), said(&b.outcome));
    // The caps to try, best first. Where the band reaches the load, the smallest cap that
    // covers the load (every request runs), then those below it; else the largest inside the
    // band, then smaller ones down to its floor. The base's own cap is "no change" (the pool
    // or the graphs are what hold the batch then).
    let mut caps: Vec<Option<usize>> = Vec::new();
    if let Some(k) = cap_k {
        let vals = values(space, st, k);
        let mut order: Vec<(usize, f64)> = Vec::new();
        if hi >= offered {
            order.extend(vals.iter().copied().find(|&(_, x)| x >= offered));
            order.extend(
                vals.iter()
                    .copied()
                    .filter(|&(_, x)| x < offered && x >= lo)
                    .rev(),
            );
        } else {
            order.extend(
                vals.iter()
                    .copied()
                    .filter(|&(_, x)| x <= hi && x >= lo)
                    .rev(),
            );
        }
        let now_i = b.point.get(k).copied();
        caps.extend(
            order
                .into_iter()
                .map(|(i, _)| (Some(i) != now_i).then_some(i)),
        );
    } else if up {
        caps.push(None);
    }
    for cap in caps {
        let mut p = b.point.clone();
        let cap_value = match (cap_k, cap) {
            (Some(k), Some(i)) => {
                p[k] = i;
                space.knobs[k].values.get(i)?.as_f64()
            }
            _ => cap_now,
        };
        cover(
            space,
            st,
            &b.point,
            &mut p,
            cap_value,
            offered,
            pool_requests,
        );
        if p == b.point {
            continue;
        }
        let down = cap_value.is_some_and(|c| cap_now.is_some_and(|n| c < n));
        // A batch that wants to grow (below the band's top, with a queue) is never answered
        // with a smaller cap: the band's caps below the base's own are for a batch over the
        // top. (A tune once traded 64 → 48 four times from bases that wanted more running.)
        if down && !over_top {
            continue;
        }
        if let Some(o) = seen.iter().find(|o| o.point == p) {
            // Measured: going down, a launch that met the TPOT bound ends the walk (lower only
            // costs throughput); going up, one that broke it does.
            let tpot_ok = evidence_of(o).and_then(|e| {
                e.bounds
                    .iter()
                    .find(|x| Some(&x.column) == m.tpot.as_ref().map(|t| &t.column))
                    .and_then(|x| x.measured.map(|v| v <= x.limit))
            });
            match (down, tpot_ok) {
                (true, Some(true)) | (false, Some(false)) => return None,
                _ => continue,
            }
        }
        // The KV part of the move named as the rules name it.
        let kv: Vec<usize> = (0..space.knobs.len())
            .filter(|&k| {
                p[k] != b.point[k] && rules::KV_KNOBS.contains(&space.knobs[k].key.as_str())
            })
            .collect();
        let mut kv_only = b.point.clone();
        let mut rest = p.clone();
        for &k in &kv {
            kv_only[k] = p[k];
            rest[k] = b.point[k];
        }
        let changes = match (kv.is_empty(), rest == b.point) {
            (true, _) => changes(space, &b.point, &p),
            (false, true) => format!("more KV: {}", changes(space, &b.point, &kv_only)),
            (false, false) => format!(
                "{}, more KV: {}",
                changes(space, &b.point, &rest),
                changes(space, &b.point, &kv_only)
            ),
        };
        let dir = match (probe, down) {
            (true, _) => "test the band, which looks empty, between its edges",
            (false, true) => "trade to the SLO's band",
            (false, false) => "lift to the SLO's band",
        };
        return Some(Sized::Launch(
            p,
            format!("{head} → {dir} ({words}): {changes}"),
            down && !probe,
        ));
    }
    None
}

/// Whether the base's running cap sits at the response model's TPOT ceiling: no value above
/// it is allowed (a queue waiting on it is what the bound costs).
pub fn cap_at_ceiling(space: &Space, st: &State, base: &Observation) -> bool {
    let (Some(c), Some(k)) = (st.run_ceiling, knob(space, st, CAP)) else {
        return false;
    };
    let Some(&at) = base.point.get(k) else {
        return false;
    };
    space.knobs[k]
        .values
        .iter()
        .enumerate()
        .filter(|&(i, _)| i > at && st.allowed(k, i))
        .filter_map(|(_, v)| v.as_f64())
        .all(|x| x > c)
}

/// Whether the generic search's move of knob `k` in `dir` from the base is one the response
/// model already answers, so no launch: the running cap (the model sizes it: up is over the
/// TPOT ceiling or covered by the load, down only gives throughput away, unless the base met
/// its TPOT bound within the noise), the CUDA graphs
/// while they cover the peak batch (larger captures change nothing, smaller ones drop
/// graphs), and a KV knob while the pool is not what binds (usage under 0.9: more changes
/// nothing, less only risks binding it). Only with an SLO the model sizes and the server's
/// decode steps to fit.
pub fn moot(
    space: &Space,
    seen: &[Observation],
    st: &State,
    base_i: usize,
    k: usize,
    dir: Dir,
) -> bool {
    let Some(b) = seen.get(base_i) else {
        return false;
    };
    let Some(e) = evidence_of(b) else {
        return false;
    };
    if e.steps.is_empty() || e.bounds.is_empty() {
        return false;
    }
    let key = space.knobs[k].key.as_str();
    let peak = e.running_max.or(e.running_mean).unwrap_or(0.0);
    match key {
        // Down is moot unless the base meets its TPOT bound only within the noise: one
        // measurement under the bound by less than the noise may be the noise's (a heavy
        // p99 tail read low), and the value below is then the hedge the model cannot size.
        CAP => dir == Dir::Up || !tpot_met_within_noise(st, e),
        GRAPHS => {
            model::value(space, &b.point, GRAPHS).is_some_and(|g| g >= peak) || dir == Dir::Down
        }
        _ if rules::KV_KNOBS.contains(&key) => {
            e.kv_usage_max.is_some_and(|u| u < rules::FULL_KV) && !st.kv_flat[k]
        }
        _ => false,
    }
}

/// The pool, in requests, at a launch: what ran over the share of it they used (None where
/// the usage is too small to divide by).
fn pool_requests(e: &super::Evidence) -> Option<f64> {
    match (e.running_max.or(e.running_mean), e.kv_usage_max) {
        (Some(r), Some(u)) if u > 0.05 => Some(r / u),
        _ => None,
    }
}

/// `p`, whose running cap is `cap_value`, with what the batch it lets run needs: more KV when
/// the pool (`pool_requests`, in requests, at the base `from`) holds fewer, and CUDA graphs
/// that cover it.
fn cover(
    space: &Space,
    st: &State,
    from: &Point,
    p: &mut Point,
    cap_value: Option<f64>,
    offered: f64,
    pool_requests: Option<f64>,
) {
    let want = model::running_at(cap_value, None, offered);
    // The pool must hold the batch: more KV, on the knobs that move the pool.
    if pool_requests.is_some_and(|pr| pr + 0.5 < want) {
        more_kv(space, st, p, from, false);
    }
    // The graphs must cover it.
    if let Some(gk) = knob(space, st, GRAPHS) {
        let now = model::value(space, p, GRAPHS).unwrap_or(f64::INFINITY);
        if now < want {
            if let Some(&(i, _)) = values(space, st, gk).iter().find(|&&(_, x)| x >= want) {
                p[gk] = i;
            }
        }
    }
}

/// The base's running cap at value `to`, with the pool and the graphs the batch needs (as a
/// sized move composes them): the model's edge move, for `model_edges`.
pub fn edge_point(
    space: &Space,
    seen: &[Observation],
    st: &State,
    base_i: usize,
    k: usize,
    to: usize,
) -> Option<Point> {
    let b = seen.get(base_i)?;
    let e = evidence_of(b)?;
    let offered = e.offered.filter(|o| *o >= 1.0)?;
    let pool_requests = pool_requests(e);
    let mut p = b.point.clone();
    *p.get_mut(k)? = to;
    let cap_value = space.knobs.get(k)?.values.get(to)?.as_f64();
    cover(
        space,
        st,
        &b.point,
        &mut p,
        cap_value,
        offered,
        pool_requests,
    );
    Some(p)
}

/// Whether launch evidence `e` met the TPOT bound the model sizes for, but by less than the
/// noise: one heavy p99 tail read low would have broken it.
fn tpot_met_within_noise(st: &State, e: &super::Evidence) -> bool {
    st.model.tpot.as_ref().is_some_and(|t| {
        e.bounds.iter().any(|x| {
            x.column == t.column
                && x.measured
                    .is_some_and(|v| v <= x.limit && v > x.limit * (1.0 - st.noise))
        })
    })
}

/// The running cap's moves the model's ceiling and sizing kept from the generic search, for
/// when no other move is left and launches remain (issue 42: no early stop while the budget
/// lasts). The ceiling is a fit through noisy p99 tails (on the trade bench's heavy-tailed
/// worlds it read 38 where 48 held), so its edge is tested once rather than trusted: the knob
/// and the directions to try: up (past the ceiling), and first down when the base met its TPOT
/// bound only within the noise (else down only gives throughput away).
pub fn model_edges(
    space: &Space,
    seen: &[Observation],
    st: &State,
    base_i: usize,
) -> Vec<(usize, Dir)> {
    let (Some(k), Some(e)) = (knob(space, st, CAP), seen.get(base_i).and_then(evidence_of)) else {
        return Vec::new();
    };
    if st.model.tpot.is_none() || e.steps.is_empty() {
        return Vec::new();
    }
    if tpot_met_within_noise(st, e) {
        vec![(k, Dir::Down), (k, Dir::Up)]
    } else {
        vec![(k, Dir::Up)]
    }
}

/// More KV in `p`, unless a KV knob of it already moved from `from`: the first long move up on
/// a KV knob that moves the pool (not one not in effect, not one learned to leave the pool the
/// same), or with `all` one on every such knob.
pub(super) fn more_kv(space: &Space, st: &State, p: &mut Point, from: &Point, all: bool) {
    let moved = space
        .knobs
        .iter()
        .enumerate()
        .any(|(k, kn)| rules::KV_KNOBS.contains(&kn.key.as_str()) && p.get(k) != from.get(k));
    if moved {
        return;
    }
    for mv in rules::moves(crate::observe::diagnose::VerdictKind::KvCacheBound, None) {
        if !mv.long {
            continue;
        }
        let Some(k) = space.knobs.iter().position(|kn| kn.key == mv.key) else {
            continue;
        };
        if st.dropped[k] == Some(Dropped::NotInEffect) || st.kv_flat[k] {
            continue;
        }
        let len = space.knobs[k].values.len();
        if let Some(&to) = super::step::order(st, k, len, p[k], Dir::Up, true).first() {
            p[k] = to;
            if !all {
                return;
            }
        }
    }
}

/// "k a → b, k2 c → d" for the knobs `to` changes from `from`.
pub fn changes(space: &Space, from: &Point, to: &Point) -> String {
    space
        .knobs
        .iter()
        .zip(from.iter().zip(to))
        .filter(|(_, (a, b))| a != b)
        .filter_map(|(k, (&a, &b))| {
            Some(format!(
                "{} {} → {}",
                k.key,
                k.values.get(a)?,
                k.values.get(b)?
            ))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::super::{Evidence, Knob, Next, Outcome, SloSeen, StepSample, next};
    use super::*;
    use crate::observe::diagnose::VerdictKind;
    use crate::plan::flags::ParamValue;

    const MRR: usize = 0;
    const HICACHE: usize = 1;
    const MFS: usize = 2;

    fn space() -> Space {
        let ints = |v: &[i64]| v.iter().map(|&x| ParamValue::Int(x)).collect();
        Space {
            knobs: vec![
                Knob {
                    key: CAP.into(),
                    values: ints(&[8, 16, 24, 32, 48, 64]),
                },
                Knob {
                    key: "hicache_size".into(),
                    values: ints(&[0, 16, 32, 48]),
                },
                Knob {
                    key: "mem_fraction_static".into(),
                    values: [0.80, 0.84, 0.88, 0.92]
                        .iter()
                        .map(|&x| ParamValue::Float(x))
                        .collect(),
                },
            ],
            start: vec![5, 0, 1],
            confirm: 0,
        }
    }

    /// step = 10 + 0.5 × running ms; the ramp's sizes and the settled one.
    fn steps(running: f64) -> Vec<StepSample> {
        [0.25, 0.5, 0.75, 1.0]
            .iter()
            .map(|f| {
                let r = (running * f).round().max(1.0);
                StepSample {
                    running: r,
                    step_ms: 10.0 + 0.5 * r,
                    graph: Some(false),
                    lines: if *f == 1.0 { 40 } else { 4 },
                }
            })
            .collect()
    }

    /// A launch with `running` of 64 offered: TPOT p99 1.2 × the step, TTFT p99 from the queue.
    fn launch(point: Point, running: f64, tpot_limit: f64, ttft_limit: f64) -> Observation {
        let step = 10.0 + 0.5 * running;
        let tpot = 1.2 * step;
        let queue = 64.0 - running;
        let ttft = 200.0 + 256.0 * queue / running * step;
        let bounds = vec![
            SloSeen {
                column: "tpot_ms_p99".into(),
                at_most: true,
                limit: tpot_limit,
                measured: Some(tpot),
            },
            SloSeen {
                column: "ttft_ms_p99".into(),
                at_most: true,
                limit: ttft_limit,
                measured: Some(ttft),
            },
        ];
        let excess = (tpot / tpot_limit).max(ttft / ttft_limit);
        Observation::once(
            point,
            Outcome::Measured {
                score: running / step * 1000.0,
                cv: Some(0.02),
                eligible: excess <= 1.0,
                why_not: String::new(),
                slo_excess: (excess > 1.0).then_some(excess),
                evidence: Evidence {
                    verdict: Some(if queue > 0.0 {
                        VerdictKind::QueueWithSpareKv
                    } else {
                        VerdictKind::ComputeBound
                    }),
                    kv_usage_max: Some(running / 100.0),
                    running_mean: Some(running),
                    running_max: Some(running),
                    queue_mean: Some(queue),
                    offered: Some(64.0),
                    steps: steps(running),
                    pool_tokens: Some(100_000.0),
                    bounds,
                    ..Default::default()
                },
                not_in_effect: vec![],
            },
        )
    }

    /// `o` with the pool used to `usage` and every decode step on CUDA graphs.
    fn on_graphs(mut o: Observation, usage: f64) -> Observation {
        if let Outcome::Measured { evidence, .. } = &mut o.outcome {
            evidence.kv_usage_max = Some(usage);
            for st in &mut evidence.steps {
                st.graph = Some(true);
            }
        }
        o
    }

    fn proposal(n: Next) -> (Point, String) {
        match n {
            Next::Launch(v) => (v[0].point.clone(), v[0].why.clone()),
            Next::Stop { why } => panic!("stopped: {why}"),
        }
    }

    #[test]
    fn a_tpot_bound_the_whole_batch_breaks_trades_the_cap_down_to_the_fit() {
        let sp = space();
        // Every request runs at once (compute bound, no queue); TPOT p99 50.4 over 40.
        let seen = vec![launch(sp.start.clone(), 64.0, 40.0, 100_000.0)];
        let (p, why) = proposal(next(&sp, &seen, 10));
        // 1.2 × (10 + 0.5 R) ≤ 40 → R ≤ 46: the largest cap under it is 32.
        assert_eq!(p, vec![3, 0, 1], "{why}");
        assert!(why.contains("trade"), "{why}");
        assert!(why.contains("tpot_ms_p99 ≤ 40 needs ≤ 46 running"), "{why}");
        assert!(why.contains("max_running_requests 64 → 32"), "{why}");
        // Measured there and eligible: no cap above the fit's ceiling is tried next (48
        // would run 1.2 × 34 = 40.8 ms), whatever the queue's rule asks; only once every other
        // move is spent, the model's edge is tested, once (its ceiling is a fit, not a
        // measurement).
        let mut seen = seen;
        seen.push(launch(p, 32.0, 40.0, 100_000.0));
        let mut edge = 0;
        let mut again = 0;
        for _ in 0..6 {
            match next(&sp, &seen, 10) {
                Next::Launch(v) => {
                    let q = v[0].point.clone();
                    // The edge measured 40.8 ms, within the noise of the bound, and would lead
                    // if eligible: it is measured again (issue 53), the same draw here.
                    if v[0].remeasure {
                        again += 1;
                        assert_eq!(q[MRR], 4, "{:?}: {}", q, v[0].why);
                        assert!(
                            v[0].why.contains(
                                "tpot_ms_p99 40.8 ms, within the noise (±2%) of the 40 ms bound: measured again"
                            ),
                            "{}",
                            v[0].why
                        );
                        let i = seen.iter().position(|o| o.point == q).unwrap();
                        seen[i].again(&v[0]);
                        continue;
                    }
                    if v[0]
                        .why
                        .contains("the model's edge on the running cap, tested once")
                    {
                        edge += 1;
                        assert_eq!(q[MRR], 4, "{:?}: {}", q, v[0].why);
                    } else {
                        assert!(q[MRR] <= 3, "{:?}: {}", q, v[0].why);
                    }
                    let r = [8.0, 16.0, 24.0, 32.0, 48.0, 64.0][q[MRR]];
                    seen.push(launch(q, r, 40.0, 100_000.0));
                }
                Next::Stop { .. } => break,
            }
        }
        assert_eq!(edge, 1, "the edge is tested once");
        assert_eq!(again, 1, "the edge at the bound is measured again once");
    }

    /// A TPOT bound alone (no TTFT bound in the SLO) is sized as well.
    #[test]
    fn a_tpot_bound_alone_is_sized() {
        let sp = space();
        let mut o = launch(sp.start.clone(), 64.0, 40.0, 100_000.0);
        if let Outcome::Measured { evidence, .. } = &mut o.outcome {
            evidence.bounds.retain(|b| b.column == "tpot_ms_p99");
        }
        let (p, why) = proposal(next(&sp, &[o], 10));
        assert_eq!(p, vec![3, 0, 1], "{why}");
        assert!(
            why.contains("trade to the SLO's band (tpot_ms_p99 ≤ 40 needs ≤ 46 running"),
            "{why}"
        );
    }

    /// The fit a move is sized from is the mode the batch will run in: with no graph knob to
    /// turn, the base's own. Here the small batches of the ramp ran on CUDA graphs (a nearly
    /// flat step) and the settled batch of 64 without them: the trade is sized from the eager
    /// line, as if no graph line were there.
    #[test]
    fn a_trade_is_sized_from_the_fit_of_the_mode_the_base_ran_in() {
        let sp = space();
        let mut o = launch(sp.start.clone(), 64.0, 40.0, 100_000.0);
        if let Outcome::Measured { evidence, .. } = &mut o.outcome {
            for r in [4.0, 8.0, 12.0] {
                evidence.steps.push(StepSample {
                    running: r,
                    step_ms: 8.0 + 0.02 * r,
                    graph: Some(true),
                    lines: 4,
                });
            }
        }
        let st = State::read(&sp, std::slice::from_ref(&o));
        assert!(st.model.graphs.is_some() && st.model.eager.is_some());
        let (p, why) = proposal(next(&sp, &[o], 10));
        assert_eq!(p, vec![3, 0, 1], "{why}");
        assert!(why.contains("tpot_ms_p99 ≤ 40 needs ≤ 46 running"), "{why}");
    }

    /// The cap's edge past the model's sizing: up always; down first, and not moot for the
    /// generic search, only when the base met its TPOT bound by less than the noise (a heavy
    /// tail read low may be all that made it eligible).
    #[test]
    fn the_caps_edges_are_tested_down_only_when_the_bound_was_met_within_noise() {
        let sp = space();
        // 48 running: TPOT p99 1.2 × 34 = 40.8; noise 2 × 2% = 4%.
        let close = vec![launch(vec![4, 0, 1], 48.0, 41.5, 100_000.0)];
        let st = State::read(&sp, &close);
        assert_eq!(
            model_edges(&sp, &close, &st, 0),
            vec![(MRR, Dir::Down), (MRR, Dir::Up)]
        );
        assert!(!moot(&sp, &close, &st, 0, MRR, Dir::Down));
        assert!(moot(&sp, &close, &st, 0, MRR, Dir::Up));
        let margin = vec![launch(vec![4, 0, 1], 48.0, 50.0, 100_000.0)];
        let st = State::read(&sp, &margin);
        assert_eq!(model_edges(&sp, &margin, &st, 0), vec![(MRR, Dir::Up)]);
        assert!(moot(&sp, &margin, &st, 0, MRR, Dir::Down));
        // Broken (over the bound): the model sizes the trade itself; down stays moot here.
        let broken = vec![launch(vec![4, 0, 1], 48.0, 40.0, 100_000.0)];
        let st = State::read(&sp, &broken);
        assert!(moot(&sp, &broken, &st, 0, MRR, Dir::Down));
        // No TPOT bound (a TTFT bound alone), or no decode steps to fit: no edge of the model's.
        let mut ttft_only = margin.clone();
        let mut no_steps = margin.clone();
        if let Outcome::Measured { evidence, .. } = &mut ttft_only[0].outcome {
            evidence.bounds.retain(|b| b.column != "tpot_ms_p99");
        }
        if let Outcome::Measured { evidence, .. } = &mut no_steps[0].outcome {
            evidence.steps.clear();
        }
        for seen in [ttft_only, no_steps] {
            let st = State::read(&sp, &seen);
            assert!(model_edges(&sp, &seen, &st, 0).is_empty());
        }
    }

    /// The band in the step log's words: a TPOT bound the step never breaks holds at any
    /// batch; a TTFT bound that asks for no more than one running request says nothing.
    #[test]
    fn the_band_in_words() {
        let b = |column: &str, limit| {
            Some(model::LatencyBound {
                column: column.into(),
                limit,
            })
        };
        let mut m = Model::default();
        m.tpot = b("tpot_ms_p99", 40.0);
        m.ttft = b("ttft_ms_p99", 2000.0);
        let band = |lo, hi| Band {
            lo,
            hi,
            known: true,
        };
        let w = band_words(&m, &band(1.0, Some(f64::INFINITY)), 64.0, None);
        assert_eq!(w, "tpot_ms_p99 ≤ 40 holds at any batch");
        let w = band_words(&m, &band(24.0, Some(46.0)), 64.0, None);
        assert_eq!(
            w,
            "tpot_ms_p99 ≤ 40 needs ≤ 46 running; ttft_ms_p99 ≤ 2000 needs ≥ 24 running at this load (64 offered)"
        );
        let w = band_words(&m, &band(f64::INFINITY, None), 64.0, None);
        assert!(
            w.starts_with("tpot_ms_p99 ≤ 40 is not met even by one running request"),
            "{w}"
        );
        assert_eq!(num(12.25), "12.2");
    }

    /// A batch below the band's top with a queue wants to grow: the model has no smaller cap
    /// for it (a tune once proposed "trade 64 → 48" four times from such bases, each a launch
    /// slower than its base).
    #[test]
    fn a_batch_that_wants_to_grow_is_never_traded_down() {
        let sp = space();
        // At the cap of 48, 44 running and 20 queued; TPOT ≤ 45 allows 1.2 × (10 + 0.5 R) ≤
        // 45 → R ≤ 55: no cap between 48 and 55, so nothing to size.
        let seen = vec![launch(vec![4, 0, 1], 44.0, 45.0, 100_000.0)];
        let st = State::read(&sp, &seen);
        match from_base(&sp, &seen, &st, 0) {
            None => {}
            Some(Sized::Launch(p, why, trade)) => {
                assert!(!trade && p[MRR] >= 4, "{p:?}: {why}");
            }
            Some(Sized::Empty(why)) => panic!("{why}"),
        }
        // Over the top (TPOT ≤ 36 allows R ≤ 40): a trade, below the base's cap.
        let seen = vec![launch(vec![4, 0, 1], 44.0, 36.0, 100_000.0)];
        let st = State::read(&sp, &seen);
        match from_base(&sp, &seen, &st, 0) {
            Some(Sized::Launch(p, why, trade)) => assert!(trade && p[MRR] < 4, "{p:?}: {why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_trade_goes_on_when_the_client_is_what_limits_throughput() {
        let sp = space();
        // The drain of a short load reads as client bound (running mean under 0.9 of the
        // offered); the batch the client keeps still breaks the TPOT bound.
        let mut o = launch(sp.start.clone(), 64.0, 40.0, 100_000.0);
        if let Outcome::Measured { evidence, .. } = &mut o.outcome {
            evidence.verdict = Some(VerdictKind::ClientBound);
        }
        // Client bound while the TPOT bound breaks, with the client seeing what the server
        // made: no sign the measurement is suspect (remeasure.rs), the trade at once (real
        // SGLang on CPU: a start that ran 27 of 32 offered broke a TPOT bound as its fit says).
        let (p, why) = proposal(next(&sp, &[o.clone()], 10));
        assert_eq!(p[MRR], 3, "{why}");
        // Within the bound (eligible: it leads), the client's limit still ends the
        // exploration: no lift.
        if let Outcome::Measured {
            evidence,
            eligible,
            slo_excess,
            ..
        } = &mut o.outcome
        {
            evidence.bounds[0].limit = 1000.0;
            *eligible = true;
            *slo_excess = None;
        }
        assert!(matches!(next(&sp, &[o], 10), Next::Stop { .. }));
    }

    #[test]
    fn a_tpot_bound_met_below_the_start_is_reached_when_the_fit_misses_by_a_value() {
        let sp = space();
        // The p99 tail is 1.5 × the step at the cap the fit first names: one value lower.
        let mut seen = vec![launch(sp.start.clone(), 64.0, 40.0, 100_000.0)];
        let (p, _) = proposal(next(&sp, &seen, 10));
        assert_eq!(p[MRR], 3);
        let mut o = launch(p, 32.0, 40.0, 100_000.0);
        if let Outcome::Measured {
            evidence,
            eligible,
            slo_excess,
            ..
        } = &mut o.outcome
        {
            evidence.bounds[0].measured = Some(1.6 * 26.0);
            *eligible = false;
            *slo_excess = Some(1.6 * 26.0 / 40.0);
        }
        seen.push(o);
        let (p, why) = proposal(next(&sp, &seen, 10));
        assert_eq!(p[MRR], 2, "{why}");
    }

    #[test]
    fn no_batch_meets_both_bounds_and_the_exploration_stops_with_the_numbers() {
        let sp = space();
        // TPOT ≤ 25 needs ≤ 21 running; TTFT ≤ 3000 needs most of the 64 to run.
        let seen = vec![
            launch(sp.start.clone(), 64.0, 25.0, 3000.0),
            launch(vec![3, 0, 1], 32.0, 25.0, 3000.0),
        ];
        let why = match next(&sp, &seen, 10) {
            Next::Stop { why } => why,
            Next::Launch(v) => panic!("launched {:?}: {}", v[0].point, v[0].why),
        };
        assert!(
            why.contains("no point of this space meets the SLO"),
            "{why}"
        );
        assert!(why.contains("tpot_ms_p99 ≤ 25 needs ≤"), "{why}");
        assert!(why.contains("ttft_ms_p99 ≤ 3000 needs ≥"), "{why}");
        assert!(why.contains("the best trade-off measured is"), "{why}");
        assert!(why.contains("Decode lines"), "{why}");
    }

    /// Issue 51: with launches left and nothing eligible, a client-bound base ends nothing by
    /// itself. Measured again (its evidence is suspect: the client's limit while the SLO
    /// breaks) and still client bound, the tune goes on with the model's sized move; it stops
    /// early only where the model shows, with numbers, that no batch meets the SLO.
    #[test]
    fn with_nothing_eligible_only_the_models_numbers_stop_the_tune() {
        let sp = Space {
            confirm: 3,
            ..space()
        };
        let client = |mut o: Observation| {
            if let Outcome::Measured { evidence, .. } = &mut o.outcome {
                evidence.verdict = Some(VerdictKind::ClientBound);
            }
            let again = super::super::Proposal {
                point: o.point.clone(),
                why: String::new(),
                confirm: true,
                remeasure: true,
            };
            o.again(&again);
            o
        };
        // TPOT 50.4 over 40: the trade, though the client is the limit and the reserve is 3.
        let seen = vec![client(launch(sp.start.clone(), 64.0, 40.0, 100_000.0))];
        let (p, why) = proposal(next(&sp, &seen, 4));
        assert_eq!(p, vec![3, 0, 1], "{why}");
        assert!(why.contains("trade to the SLO's band"), "{why}");
        // TPOT 12 against a tail of 1.2 × a 10 ms step at one request: the band looks empty
        // from one launch, which is no finding yet; the model tests it (before issue 51 the
        // client's limit ended the tune here, at launch 2 of 10).
        let seen = vec![client(launch(sp.start.clone(), 64.0, 12.0, 100_000.0))];
        let (p, why) = proposal(next(&sp, &seen, 9));
        assert_eq!(p[MRR], 0, "{why}");
        assert!(why.contains("test the band, which looks empty"), "{why}");
        // TPOT ≤ 25 needs ≤ 21 running, TTFT ≤ 3000 most of the 64: the stop, with numbers.
        let seen = vec![
            client(launch(sp.start.clone(), 64.0, 25.0, 3000.0)),
            launch(vec![3, 0, 1], 32.0, 25.0, 3000.0),
        ];
        let why = match next(&sp, &seen, 10) {
            Next::Stop { why } => why,
            Next::Launch(v) => panic!("launched {:?}: {}", v[0].point, v[0].why),
        };
        assert!(
            why.contains("no point of this space meets the SLO"),
            "{why}"
        );
        assert!(why.contains("tpot_ms_p99 ≤ 25 needs ≤ 21 running"), "{why}");
        assert!(why.contains("ttft_ms_p99 ≤ 3000 needs ≥"), "{why}");
        assert!(
            why.contains("decode step 10.00 + 0.500 × running ms"),
            "{why}"
        );
    }

    #[test]
    fn a_band_empty_on_the_line_but_open_on_its_kind_edge_is_tested_not_believed() {
        let sp = space();
        // TPOT ≤ 36 needs ≤ 40 running on the line (1.2 × (10 + 0.5 R)); TTFT ≤ 3200 needs
        // ≥ 48 of the 64: empty, and apart by more than a fit misses by. Clean buckets: a stop.
        let clean = vec![
            launch(sp.start.clone(), 64.0, 36.0, 3200.0),
            launch(vec![3, 0, 1], 32.0, 36.0, 3200.0),
        ];
        assert!(
            matches!(next(&sp, &clean, 10), Next::Stop { ref why } if why.contains("no point of this space meets")),
            "{:?}",
            next(&sp, &clean, 10)
        );
        // The same launches with their buckets scattered ±15% about the line (each bucket
        // one draw of a launch's noise): the line alone says the same, its kind edge does
        // not rule 48 out, and the next launch is there.
        let scatter = [1.15, 0.85, 1.15, 0.85, 1.0];
        let scattered: Vec<Observation> = clean
            .into_iter()
            .map(|mut o| {
                if let Outcome::Measured { evidence, .. } = &mut o.outcome {
                    for (s, f) in evidence.steps.iter_mut().zip(scatter) {
                        s.step_ms *= f;
                    }
                }
                o
            })
            .collect();
        let m = Model::read(&sp, &scattered);
        let line = m.band(0, false, 64.0, 1.0);
        let kind = m.band_kind(0, false, 64.0, 1.0);
        assert!(line.empty() && !kind.empty(), "{line:?} {kind:?}");
        let (p, why) = proposal(next(&sp, &scattered, 10));
        assert_eq!(p[0], 4, "{why}");
    }

    /// An empty band ends the exploration only when its edges are apart by more than a fit's
    /// extrapolation misses by: the TTFT floor above the TPOT top by 15%, and by more than one
    /// request. Closer, a launch between them is the test.
    #[test]
    fn a_band_empty_by_less_than_a_fits_miss_is_tested_not_a_finding() {
        let sp = space();
        // (TPOT bound, TTFT bound, the band's top and floor, whether it ends the exploration)
        for (tpot, ttft, hi, lo, ends) in [
            (25.0, 8_000.0, 21.0, 29.0, true),   // 29 > 21 × 1.15
            (25.0, 10_000.0, 21.0, 24.0, false), // 24 < 24.15
            (14.6, 30_000.0, 4.0, 7.0, true),    // 7 > 4 + 1
            (14.6, 40_000.0, 4.0, 5.0, false),   // 5 = 4 + 1
        ] {
            let seen = vec![
                launch(sp.start.clone(), 64.0, tpot, ttft),
                launch(vec![3, 0, 1], 32.0, tpot, ttft),
            ];
            let st = State::read(&sp, &seen);
            let band = st.model.band_kind(1, false, 64.0, 1.0);
            assert_eq!((band.hi, band.lo), (Some(hi), lo), "{tpot} {ttft}");
            match next(&sp, &seen, 10) {
                Next::Stop { why } => {
                    assert!(ends, "{tpot} {ttft}: {why}");
                    assert!(
                        why.contains("no point of this space meets the SLO"),
                        "{why}"
                    );
                }
                Next::Launch(v) => {
                    assert!(!ends, "{tpot} {ttft}: {}", v[0].why);
                    assert!(
                        v[0].why.contains("test the band, which looks empty"),
                        "{}",
                        v[0].why
                    );
                }
            }
        }
    }

    #[test]
    fn a_band_that_is_empty_before_the_queue_is_measured_is_no_finding() {
        let sp = space();
        // Only the start: TTFT has no queue to calibrate on, so nothing is known to stop on.
        let seen = vec![launch(sp.start.clone(), 64.0, 25.0, 3000.0)];
        assert!(matches!(next(&sp, &seen, 10), Next::Launch(_)));
    }

    #[test]
    fn a_kv_knob_that_leaves_the_pool_the_same_is_no_more_kv() {
        let sp = space();
        let mut a = launch(vec![5, 0, 1], 20.0, 1000.0, 100_000.0);
        let mut b = launch(vec![5, 2, 1], 20.0, 1000.0, 100_000.0);
        for o in [&mut a, &mut b] {
            if let Outcome::Measured { evidence, .. } = &mut o.outcome {
                evidence.verdict = Some(VerdictKind::KvCacheBound);
                evidence.kv_usage_max = Some(0.97);
                evidence.bounds.clear();
            }
        }
        let seen = vec![a, b];
        let st = State::read(&sp, &seen);
        assert!(st.kv_flat[HICACHE] && !st.kv_flat[MFS]);
        // More KV goes to the memory fraction, never the host cache again.
        let (p, why) = proposal(next(&sp, &seen, 10));
        assert!(p[MFS] > 1 && p[HICACHE] == 0, "{p:?}: {why}");
    }

    /// A space with the cap, the graphs and the memory fraction.
    fn lifted() -> Space {
        let ints = |v: &[i64]| v.iter().map(|&x| ParamValue::Int(x)).collect();
        Space {
            knobs: vec![
                Knob {
                    key: CAP.into(),
                    values: ints(&[8, 16, 24, 32, 48, 64]),
                },
                Knob {
                    key: GRAPHS.into(),
                    values: ints(&[16, 32, 64]),
                },
                Knob {
                    key: "mem_fraction_static".into(),
                    values: [0.80, 0.84, 0.88, 0.92]
                        .iter()
                        .map(|&x| ParamValue::Float(x))
                        .collect(),
                },
            ],
            start: vec![1, 0, 0],
            confirm: 0,
        }
    }

    #[test]
    fn a_ttft_bound_lifts_the_cap_with_the_pool_and_the_graphs_it_needs() {
        let sp = lifted();
        // 16 of 64 run (the cap), the pool 16 / 0.8 = 20 requests, graphs to 16; TTFT broken by
        // the queue, TPOT far under its bound (the band's top above the load).
        let o = on_graphs(launch(sp.start.clone(), 16.0, 1000.0, 1000.0), 0.8);
        let (p, why) = proposal(next(&sp, &[o], 10));
        // The cap to the load (64), the graphs to cover it (64), more KV half way.
        assert_eq!(p, vec![5, 2, 2], "{why}");
        assert!(why.contains("lift to the SLO's band"), "{why}");
        assert!(
            why.contains("more KV: mem_fraction_static 0.8 → 0.88"),
            "{why}"
        );
        assert!(why.contains("ttft_ms_p99 ≤ 1000 needs ≥"), "{why}");
    }

    /// Where the band reaches the load, the cap that covers it goes first; measured already
    /// (within the TPOT bound), the lift goes on to the largest cap under the load that the
    /// TTFT floor (29 running) allows: 48.
    #[test]
    fn a_lift_whose_covering_cap_was_measured_goes_on_to_the_largest_cap_in_the_band() {
        let sp = lifted();
        let start = |o: &mut Observation| {
            if let Outcome::Measured { evidence, .. } = &mut o.outcome {
                evidence.kv_usage_max = Some(0.8);
                for st in &mut evidence.steps {
                    st.graph = Some(true);
                }
            }
        };
        let mut a = launch(sp.start.clone(), 16.0, 1000.0, 8000.0);
        start(&mut a);
        let mut b = launch(vec![5, 2, 2], 64.0, 1000.0, 8000.0);
        start(&mut b);
        let seen = vec![a, b];
        let st = State::read(&sp, &seen);
        assert_eq!(st.model.band(0, true, 64.0, AIM).lo, 29.0);
        let Some(Sized::Launch(p, why, trade)) = from_base(&sp, &seen, &st, 0) else {
            panic!("no sized move");
        };
        assert_eq!(p, vec![4, 2, 2], "{why}");
        assert!(!trade && why.contains("lift to the SLO's band"), "{why}");
        // Launched and measured within the bounds, then 32: no cap under the floor (24) is a
        // lift to the band.
        let mut seen = seen;
        let mut caps = Vec::new();
        while let Some(Sized::Launch(p, _, _)) = from_base(&sp, &seen, &State::read(&sp, &seen), 0)
        {
            assert!(caps.len() < 4, "{caps:?}");
            caps.push(p[MRR]);
            let mut o = launch(p, 48.0, 1000.0, 8000.0);
            start(&mut o);
            seen.push(o);
        }
        assert_eq!(caps, vec![4, 3], "48, then 32");
    }

    /// A cap that already covers the load is no change: the lift is the pool and the graphs
    /// that hold the batch back (not a trade, not skipped as one).
    #[test]
    fn a_lift_with_the_cap_already_over_the_load_moves_the_pool_and_the_graphs() {
        let sp = Space {
            start: vec![5, 0, 0],
            ..lifted()
        };
        let mut o = on_graphs(launch(sp.start.clone(), 16.0, 1000.0, 1000.0), 0.8);
        let (p, why) = proposal(next(&sp, &[o.clone()], 10));
        assert_eq!(p, vec![5, 2, 2], "{why}");
        assert!(why.contains("lift to the SLO's band"), "{why}");
        assert!(!why.contains("max_running_requests"), "{why}");
        // With the graphs already over the load, the pool alone, named as more KV.
        let sp = Space {
            start: vec![5, 2, 0],
            ..sp
        };
        o.point = sp.start.clone();
        let (p, why) = proposal(next(&sp, &[o], 10));
        assert_eq!(p, vec![5, 2, 2], "{why}");
        assert!(
            why.contains("): more KV: mem_fraction_static 0.8 → 0.88"),
            "{why}"
        );
    }

    /// A pool that holds the whole load (16 running in a quarter of it: 64 requests, 64
    /// offered) is no reason for more KV: the lift is the cap and the graphs alone.
    #[test]
    fn a_lift_brings_no_more_kv_when_the_pool_holds_the_load() {
        let sp = lifted();
        let o = on_graphs(launch(sp.start.clone(), 16.0, 1000.0, 1000.0), 0.25);
        let (p, why) = proposal(next(&sp, &[o], 10));
        assert_eq!(p, vec![5, 2, 0], "{why}");
        assert!(why.contains("lift to the SLO's band"), "{why}");
    }

    #[test]
    fn a_lift_stops_below_a_cap_the_tpot_bound_breaks() {
        let sp = Space {
            start: vec![1, 2, 3],
            ..lifted()
        };
        // TPOT ≤ 40 allows 46; a queue waits at 16: the largest cap in the band is 32.
        let mut o = launch(vec![1, 2, 3], 16.0, 40.0, 100_000.0);
        if let Outcome::Measured { evidence, .. } = &mut o.outcome {
            evidence.kv_usage_max = Some(0.2);
        }
        let (p, why) = proposal(next(&sp, &[o], 10));
        assert_eq!(p, vec![3, 2, 3], "{why}");
        // The model's move (the queue's rule, capped by the TPOT ceiling, would launch the same
        // point), with the band in its words.
        assert!(
            why.contains("lift to the SLO's band (tpot_ms_p99 ≤ 40 needs ≤ 46 running"),
            "{why}"
        );
    }

    /// A batch at the TTFT floor or above it, with no queue, is no lift of the model's: at
    /// the floor itself (16 running, the floor 16 at a TTFT bound of 14.5 s), under twice it
    /// (the floor 11), and far above it (a loose bound). The band's top (1,646) is far off.
    #[test]
    fn a_batch_at_or_over_the_ttft_floor_without_a_queue_is_not_lifted_by_the_model() {
        let sp = lifted();
        for (limit, floor) in [(14_500.0, 16.0), (20_000.0, 11.0), (1e9, 1.0)] {
            let mut o = launch(sp.start.clone(), 16.0, 1000.0, limit);
            if let Outcome::Measured { evidence, .. } = &mut o.outcome {
                evidence.kv_usage_max = Some(0.8);
                evidence.queue_mean = Some(0.0);
                for st in &mut evidence.steps {
                    st.graph = Some(true);
                }
            }
            let seen = [o];
            let st = State::read(&sp, &seen);
            assert_eq!(st.model.band(0, true, 64.0, AIM).lo, floor, "{limit}");
            assert!(from_base(&sp, &seen, &st, 0).is_none(), "{limit}");
        }
    }

    /// A batch under the TTFT floor is lifted even when the server's queue reads empty (the
    /// requests wait in the client, or the queue's mean rounds to nothing): the floor alone
    /// asks for the batch.
    #[test]
    fn a_batch_under_the_ttft_floor_is_lifted_without_a_queue_in_the_log() {
        let sp = lifted();
        let mut o = launch(sp.start.clone(), 16.0, 1000.0, 1000.0);
        if let Outcome::Measured { evidence, .. } = &mut o.outcome {
            evidence.kv_usage_max = Some(0.8);
            evidence.queue_mean = Some(0.0);
            for st in &mut evidence.steps {
                st.graph = Some(true);
            }
        }
        let (p, why) = proposal(next(&sp, &[o], 10));
        assert_eq!(p, vec![5, 2, 2], "{why}");
        assert!(why.contains("lift to the SLO's band"), "{why}");
    }

    #[test]
    fn the_walk_up_ends_at_a_measured_cap_that_broke_the_bound() {
        let sp = space();
        // The fit allows 46, but 32 measured over the bound: no lift to it again, and none
        // past it.
        let start = launch(vec![1, 0, 1], 16.0, 40.0, 100_000.0);
        let mut over = launch(vec![3, 0, 1], 32.0, 40.0, 100_000.0);
        if let Outcome::Measured {
            evidence,
            eligible,
            slo_excess,
            ..
        } = &mut over.outcome
        {
            evidence.bounds[0].measured = Some(41.0);
            *eligible = false;
            *slo_excess = Some(41.0 / 40.0);
        }
        let seen = vec![start, over];
        let st = State::read(&sp, &seen);
        // The walk ends there: no lift to it or past it, and none to a cap between (24: the
        // model sized 32 and was wrong; what is between is the generic search's to try).
        assert!(
            from_base(&sp, &seen, &st, 0).is_none(),
            "lifted past, or around, a cap measured over its bound"
        );
    }

    /// Going down, a cap measured within the TPOT bound ends the walk: lower only costs
    /// throughput.
    #[test]
    fn the_walk_down_ends_at_a_measured_cap_that_met_the_bound() {
        let sp = space();
        let seen = vec![
            launch(sp.start.clone(), 64.0, 40.0, 100_000.0),
            launch(vec![3, 0, 1], 32.0, 40.0, 100_000.0),
        ];
        let st = State::read(&sp, &seen);
        assert!(
            from_base(&sp, &seen, &st, 0).is_none(),
            "traded below a cap measured within its bound"
        );
    }

    /// The model answers the cap, the graphs and the KV knobs; another knob (here the host
    /// cache, which adds no room for running requests) is the generic search's to move, however
    /// little of the pool was used.
    #[test]
    fn a_knob_the_model_does_not_size_is_never_moot() {
        let sp = space();
        let seen = vec![launch(sp.start.clone(), 32.0, 40.0, 100_000.0)];
        let st = State::read(&sp, &seen);
        for dir in [Dir::Up, Dir::Down] {
            assert!(!moot(&sp, &seen, &st, 0, HICACHE, dir));
        }
        assert!(moot(&sp, &seen, &st, 0, MFS, Dir::Up), "an unbound pool");
    }

    /// More KV passes over a KV knob learned to leave the pool the same, and one the server
    /// does not take in effect, for the next KV knob.
    #[test]
    fn more_kv_passes_over_a_knob_that_moves_no_pool() {
        let sp = Space {
            knobs: vec![
                Knob {
                    key: "mem_fraction_static".into(),
                    values: [0.80, 0.84, 0.88, 0.92]
                        .iter()
                        .map(|&x| ParamValue::Float(x))
                        .collect(),
                },
                Knob {
                    key: "max_total_tokens".into(),
                    values: [4096, 8192, 16384]
                        .iter()
                        .map(|&x| ParamValue::Int(x))
                        .collect(),
                },
            ],
            start: vec![0, 0],
            confirm: 0,
        };
        let from = sp.start.clone();
        let st = State::read(&sp, &[]);
        let mut p = from.clone();
        more_kv(&sp, &st, &mut p, &from, false);
        assert!(p[0] > 0 && p[1] == 0, "{p:?}");
        let mut flat = State::read(&sp, &[]);
        flat.kv_flat[0] = true;
        let mut not_in_effect = State::read(&sp, &[]);
        not_in_effect.dropped[0] = Some(Dropped::NotInEffect);
        for st in [flat, not_in_effect] {
            let mut p = from.clone();
            more_kv(&sp, &st, &mut p, &from, false);
            assert!(p[0] == 0 && p[1] > 0, "{p:?}");
        }
    }

    /// The pool in requests: what ran over the share used, unless that share is too small to
    /// divide by (a few tokens of a pool say nothing of its size in requests).
    #[test]
    fn the_pool_in_requests_needs_a_share_to_divide_by() {
        let e = |running: f64, usage: f64| Evidence {
            running_max: Some(running),
            kv_usage_max: Some(usage),
            ..Default::default()
        };
        assert_eq!(pool_requests(&e(8.0, 0.5)), Some(16.0));
        assert_eq!(pool_requests(&e(1.0, 0.03)), None);
        assert_eq!(pool_requests(&e(1.0, 0.05)), None);
        assert_eq!(pool_requests(&e(1.0, 0.0)), None);
    }

    #[test]
    fn a_cap_at_the_ceiling_prices_the_queue_and_the_model_answers_the_neighbours() {
        let sp = lifted();
        let mut o = launch(vec![3, 2, 1], 32.0, 40.0, 100_000.0);
        if let Outcome::Measured { evidence, .. } = &mut o.outcome {
            evidence.kv_usage_max = Some(0.5);
            evidence.running_max = Some(32.0);
        }
        let seen = vec![o];
        let st = State::read(&sp, &seen);
        // TPOT ≤ 40: 46 at most; the next cap (48) is over it.
        assert_eq!(st.run_ceiling, Some(46.0));
        assert!(cap_at_ceiling(&sp, &st, &seen[0]));
        let mut below = seen[0].clone();
        below.point = vec![2, 2, 1];
        assert!(!cap_at_ceiling(&sp, &st, &below), "32 is under the ceiling");
        // A ceiling at a value allows it: 48 is a cap the bound allows.
        let mut at_48 = State::read(&sp, &seen);
        at_48.run_ceiling = Some(48.0);
        assert!(!cap_at_ceiling(&sp, &at_48, &seen[0]));
        // The cap, graphs that cover the peak (64 ≥ 32) and an unbound pool: moot both ways.
        for dir in [Dir::Up, Dir::Down] {
            assert!(moot(&sp, &seen, &st, 0, 0, dir));
            assert!(moot(&sp, &seen, &st, 0, 1, dir));
            assert!(moot(&sp, &seen, &st, 0, 2, dir));
        }
        // Graphs below the peak: up is a move, down is moot.
        let mut short = seen.clone();
        short[0].point = vec![3, 0, 1];
        assert!(!moot(&sp, &short, &st, 0, 1, Dir::Up));
        assert!(moot(&sp, &short, &st, 0, 1, Dir::Down));
        // A full pool: the memory fraction is a move.
        let mut full = seen.clone();
        if let Outcome::Measured { evidence, .. } = &mut full[0].outcome {
            evidence.kv_usage_max = Some(0.95);
        }
        assert!(!moot(&sp, &full, &st, 0, 2, Dir::Up));
        // A pool used to the line of full is full: the memory fraction is a move there too.
        if let Outcome::Measured { evidence, .. } = &mut full[0].outcome {
            evidence.kv_usage_max = Some(rules::FULL_KV);
        }
        assert!(!moot(&sp, &full, &st, 0, 2, Dir::Up));
        // Without the server's steps the model answers nothing.
        let mut bare = seen.clone();
        if let Outcome::Measured { evidence, .. } = &mut bare[0].outcome {
            evidence.steps.clear();
        }
        assert!(!moot(&sp, &bare, &st, 0, 0, Dir::Up));
    }

    #[test]
    fn a_band_that_looks_empty_is_tested_from_just_above_its_tpot_edge() {
        let sp = space();
        // One launch: TPOT ≤ 25 allows 25 running (1.2 × (10 + 0.5 R) ≤ 25: R ≤ 21.7, 21);
        // TTFT ≤ 3000 needs most of the 64 offered. Not known yet: the probe is the smallest
        // cap at least 21, 24.
        let sp = Space {
            start: vec![3, 0, 1],
            ..sp
        };
        let seen = vec![launch(vec![3, 0, 1], 32.0, 25.0, 3000.0)];
        let (p, why) = proposal(next(&sp, &seen, 10));
        assert_eq!(p[MRR], 2, "{why}");
        assert!(why.contains("test the band, which looks empty"), "{why}");
        // A test of the band, not a trade: it lowers the cap, but the bounds' batch is not
        // known to be below it.
        let st = State::read(&sp, &seen);
        assert!(matches!(
            from_base(&sp, &seen, &st, 0),
            Some(Sized::Launch(_, _, false))
        ));
    }

    #[test]
    fn a_batch_beside_the_models_launch_takes_the_rules_own_moves() {
        let sp = lifted();
        let mut o = launch(sp.start.clone(), 16.0, 1000.0, 1000.0);
        if let Outcome::Measured { evidence, .. } = &mut o.outcome {
            evidence.kv_usage_max = Some(0.8);
            evidence.verdict = Some(VerdictKind::KvCacheBound);
        }
        let seen = [o];
        let one = proposal(next(&sp, &seen, 10)).0;
        let Next::Launch(v) = super::super::next_batch(&sp, &seen, 10, 2) else {
            panic!("a batch")
        };
        assert_eq!(v.len(), 2, "{v:?}");
        assert_eq!(v[0].point, one);
        assert_ne!(v[1].point, one);
    }
}
