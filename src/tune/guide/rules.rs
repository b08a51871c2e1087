//! What each verdict asks of the knobs (issue 26): an ordered list of moves, in the tuner's own
//! knob names (the keys as in `configs:`), so the rules hold for any engine whose keys they are.
//! A move whose knob is not in the space is simply skipped by the caller.

use crate::observe::diagnose::VerdictKind;

/// Which way a move turns its knob, in the order of the knob's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Up,
    Down,
}

/// One move a rule asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct Move {
    pub key: &'static str,
    pub dir: Dir,
    /// A long move: the evidence says "more" of a resource whose range may be wide, so the
    /// first step goes half way to the end of the range (or to the cliff found) and the
    /// following ones halve again. A short move is one value (a list's next entry, or "a
    /// little less admission").
    pub long: bool,
    /// What the move is for, for the step log ("more KV", "admit fewer").
    pub what: &'static str,
    /// The size the evidence names for the knob, when it names one: the move goes first to
    /// the smallest value at least that (a running cap that holds every offered request, CUDA
    /// graphs captured up to the batch that runs), else as `long` says.
    pub target: Option<Target>,
}

/// A size the evidence names, read from the launch's numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The concurrency the client offered: a cap at least that leaves no request waiting on
    /// the cap.
    Offered,
    /// The most requests that ran at once: graphs captured up to that batch run every step.
    Running,
}

/// The KV capacity knobs: those that size the device pool a running request's KV lives in
/// (`max_total_num_tokens`), in the order the rules try them: the memory fraction first (no
/// quality risk, no speed cost until the cliff), then the other sizes of the pool (the token
/// cap, vLLM's own sizes; its `gpu_memory_utilization` is the memory fraction), and a smaller
/// KV dtype last: it is a quality risk (the guard bans a value that fails it, at the cost of a
/// launch), the one the story's user rejected, so no size of the pool waits behind it. Not the
/// hierarchical cache: see [`HICACHE_KNOBS`].
pub const KV_KNOBS: [&str; 5] = [
    "mem_fraction_static",
    "max_total_tokens",
    "kv_cache_memory_bytes",
    "num_gpu_blocks_override",
    "kv_cache_dtype",
];

/// The prefix cache's host tier (SGLang's HiCache): host memory that keeps the prefixes the
/// device pool evicts, loaded back when a request returns to one. It adds no room for running
/// requests (the pool's size, `max_total_num_tokens`, does not change with it; `model::kv_effect`
/// learns the same of any knob from the launches), so no verdict about the running batch asks
/// for it: only `prefix_cache_evicted` does.
pub const HICACHE_KNOBS: [&str; 2] = ["hicache_size", "hicache_ratio"];

fn more_kv() -> Vec<Move> {
    KV_KNOBS
        .iter()
        .map(|&key| Move {
            key,
            dir: Dir::Up,
            // A dtype list is not ordered by size beyond "auto first": one entry at a time.
            long: key != "kv_cache_dtype",
            what: "more KV",
            target: None,
        })
        .collect()
}

/// A pool that drops reusable prefixes: a larger device pool first (no load cost, and room for
/// the batch too), then the host tier, then the pool's other sizes. Not a smaller KV dtype:
/// its quality risk is not worth a hit rate, and the evidence names pool size and host tier.
fn keep_prefixes() -> Vec<Move> {
    let up = |key, what| Move {
        key,
        dir: Dir::Up,
        long: true,
        what,
        target: None,
    };
    let mut v = vec![up("mem_fraction_static", "a larger pool for prefixes")];
    v.extend(
        HICACHE_KNOBS
            .iter()
            .map(|&k| up(k, "a host tier for evicted prefixes")),
    );
    v.extend(
        [
            "max_total_tokens",
            "kv_cache_memory_bytes",
            "num_gpu_blocks_override",
        ]
        .map(|k| up(k, "a larger pool for prefixes")),
    );
    v
}

/// KV usage at or above which the pool counts as full: admitting more cannot help then.
pub const FULL_KV: f64 = 0.9;

/// The moves a verdict asks for, most wanted first, given the launch's peak KV usage. Empty for
/// a verdict that asks for none of its own (compute bound, unknown): the generic search decides.
pub fn moves(verdict: VerdictKind, kv_usage: Option<f64>) -> Vec<Move> {
    let m = |key, dir, long, what| Move {
        key,
        dir,
        long,
        what,
        target: None,
    };
    let sized = |mv: Move, t| Move {
        target: Some(t),
        ..mv
    };
    match verdict {
        VerdictKind::KvCacheBound => more_kv(),
        VerdictKind::QueueWithSpareKv => {
            let mut v = vec![sized(
                m(
                    "max_running_requests",
                    Dir::Up,
                    true,
                    "lift the scheduler cap",
                ),
                Target::Offered,
            )];
            // A less conservative admission fills a pool that has room; with the pool (nearly)
            // full the queue waits on the running cap, and this would only add retractions.
            if kv_usage.is_none_or(|u| u < FULL_KV) {
                v.push(m(
                    "schedule_conservativeness",
                    Dir::Down,
                    false,
                    "admit more",
                ));
            }
            v.push(m(
                "chunked_prefill_size",
                Dir::Up,
                true,
                "lift the scheduler cap",
            ));
            v
        }
        VerdictKind::RetractionChurn => {
            let mut v = vec![
                m("max_running_requests", Dir::Down, false, "admit fewer"),
                m("schedule_conservativeness", Dir::Up, false, "admit fewer"),
            ];
            v.extend(more_kv().into_iter().map(|mv| Move {
                what: "more KV against retractions",
                ..mv
            }));
            v
        }
        VerdictKind::PrefixCacheEvicted => keep_prefixes(),
        VerdictKind::CudaGraphLimited => vec![sized(
            m("cuda_graph_max_bs", Dir::Up, true, "capture larger batches"),
            Target::Running,
        )],
        VerdictKind::ClientBound | VerdictKind::ComputeBound | VerdictKind::Unknown => vec![],
    }
}

/// Whether turning knob `key` in direction `dir` goes against what `verdict` asks (less KV when
/// the pool is full, a lower running cap when a queue waits on it): the generic search makes
/// such a move only after every other, once the rules are spent.
pub fn against(verdict: Option<VerdictKind>, kv_usage: Option<f64>, key: &str, dir: Dir) -> bool {
    verdict.is_some_and(|v| {
        moves(v, kv_usage)
            .iter()
            .any(|m| m.key == key && m.dir != dir)
    })
}

/// Whether the generic search leaves knob `key` alone under `verdict`: once compute bound,
/// more KV capacity buys nothing, nor does a host tier for prefixes (compute bound is only
/// called when the prefix cache is not found short), so only the knobs that trade latency for
/// throughput remain.
pub fn generic_skips(verdict: Option<VerdictKind>, key: &str) -> bool {
    verdict == Some(VerdictKind::ComputeBound)
        && (KV_KNOBS.contains(&key) || HICACHE_KNOBS.contains(&key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kv_cache_bound_asks_for_kv_capacity_first_by_the_memory_fraction() {
        let v = moves(VerdictKind::KvCacheBound, None);
        assert_eq!(v[0].key, "mem_fraction_static");
        assert!(
            v.iter()
                .all(|m| m.dir == Dir::Up && KV_KNOBS.contains(&m.key))
        );
        assert!(!v.iter().find(|m| m.key == "kv_cache_dtype").unwrap().long);
    }

    #[test]
    fn the_host_tier_is_a_prefix_knob_never_more_kv_for_the_batch() {
        assert!(KV_KNOBS.iter().all(|k| !HICACHE_KNOBS.contains(k)));
        for v in [VerdictKind::KvCacheBound, VerdictKind::RetractionChurn] {
            let m = moves(v, None);
            assert!(
                m.iter().all(|m| !HICACHE_KNOBS.contains(&m.key)),
                "{v:?}: {m:?}"
            );
        }
        // So a KV-bound launch does not hold a smaller host tier against it either.
        let kv = Some(VerdictKind::KvCacheBound);
        assert!(!against(kv, None, "hicache_size", Dir::Down));
        // Compute bound: neither capacity nor a host tier is searched.
        let cb = Some(VerdictKind::ComputeBound);
        assert!(generic_skips(cb, "hicache_size") && generic_skips(cb, "hicache_ratio"));
        assert!(!generic_skips(
            Some(VerdictKind::PrefixCacheEvicted),
            "hicache_size"
        ));
    }

    #[test]
    fn an_evicted_prefix_cache_asks_for_a_larger_pool_then_the_host_tier() {
        let v = moves(VerdictKind::PrefixCacheEvicted, Some(0.5));
        let keys: Vec<&str> = v.iter().map(|m| m.key).collect();
        assert_eq!(
            keys,
            [
                "mem_fraction_static",
                "hicache_size",
                "hicache_ratio",
                "max_total_tokens",
                "kv_cache_memory_bytes",
                "num_gpu_blocks_override"
            ]
        );
        // All up, long (a pool's range is wide), unsized; no dtype (a quality risk for a hit
        // rate); the step log says what each is for.
        assert!(
            v.iter()
                .all(|m| m.dir == Dir::Up && m.long && m.target.is_none())
        );
        assert_eq!(v[1].what, "a host tier for evicted prefixes");
        assert_eq!(v[0].what, "a larger pool for prefixes");
        let e = Some(VerdictKind::PrefixCacheEvicted);
        assert!(against(e, None, "hicache_ratio", Dir::Down));
        assert!(against(e, None, "mem_fraction_static", Dir::Down));
        assert!(!against(e, None, "kv_cache_dtype", Dir::Down));
    }

    #[test]
    fn a_queue_with_spare_kv_lifts_the_running_cap_and_churn_lowers_it() {
        let q = moves(VerdictKind::QueueWithSpareKv, Some(0.5));
        assert_eq!((q[0].key, q[0].dir), ("max_running_requests", Dir::Up));
        assert_eq!(
            (q[1].key, q[1].dir),
            ("schedule_conservativeness", Dir::Down)
        );
        // With the pool full, admitting more is no move.
        let full = moves(VerdictKind::QueueWithSpareKv, Some(FULL_KV));
        assert!(full.iter().all(|m| m.key != "schedule_conservativeness"));
        assert_eq!(full.len(), q.len() - 1);
        let c = moves(VerdictKind::RetractionChurn, None);
        assert_eq!((c[0].key, c[0].dir), ("max_running_requests", Dir::Down));
        assert_eq!((c[1].key, c[1].dir), ("schedule_conservativeness", Dir::Up));
        assert!(
            c.iter()
                .any(|m| m.key == "mem_fraction_static" && m.dir == Dir::Up)
        );
        // The step log says why a churning server gets more KV.
        assert!(
            c.iter()
                .filter(|m| KV_KNOBS.contains(&m.key))
                .all(|m| m.what == "more KV against retractions")
        );
        let g = moves(VerdictKind::CudaGraphLimited, None);
        assert_eq!((g[0].key, g[0].dir), ("cuda_graph_max_bs", Dir::Up));
        // The evidence sizes the cap and the graphs; KV capacity it cannot size.
        assert_eq!(g[0].target, Some(Target::Running));
        assert_eq!(q[0].target, Some(Target::Offered));
        assert!(q[1..].iter().all(|m| m.target.is_none()));
        assert!(
            moves(VerdictKind::KvCacheBound, None)
                .iter()
                .all(|m| m.target.is_none())
        );
        assert!(moves(VerdictKind::ComputeBound, None).is_empty());
    }

    #[test]
    fn a_move_against_the_verdict_is_the_opposite_of_one_it_asks_for() {
        let kv = Some(VerdictKind::KvCacheBound);
        assert!(against(kv, None, "mem_fraction_static", Dir::Down));
        assert!(!against(kv, None, "mem_fraction_static", Dir::Up));
        assert!(!against(kv, None, "page_size", Dir::Down));
        let q = Some(VerdictKind::QueueWithSpareKv);
        assert!(against(q, Some(0.5), "max_running_requests", Dir::Down));
        assert!(against(q, Some(0.5), "schedule_conservativeness", Dir::Up));
        // With a full pool the queue rule asks nothing of the conservativeness.
        assert!(!against(
            q,
            Some(0.95),
            "schedule_conservativeness",
            Dir::Up
        ));
        assert!(!against(None, None, "mem_fraction_static", Dir::Down));
        assert!(!against(
            Some(VerdictKind::ComputeBound),
            None,
            "mem_fraction_static",
            Dir::Down
        ));
    }

    #[test]
    fn compute_bound_leaves_the_capacity_knobs_out_of_the_generic_search() {
        assert!(generic_skips(
            Some(VerdictKind::ComputeBound),
            "mem_fraction_static"
        ));
        assert!(!generic_skips(
            Some(VerdictKind::ComputeBound),
            "chunked_prefill_size"
        ));
        assert!(!generic_skips(
            Some(VerdictKind::KvCacheBound),
            "mem_fraction_static"
        ));
        assert!(!generic_skips(None, "mem_fraction_static"));
    }
}
