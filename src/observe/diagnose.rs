//! ClientSummary + ServerSummary → Verdict: what limited this run, the numbers that show it,
//! and which way to turn the knobs; a run's `/metrics` and its flags add what the log does
//! not say ([`Launch`]). A run that failed gets its advice from `observe::failure`.

use crate::observe::client::ClientSummary;
use crate::observe::prom::MetricsSummary;
use crate::observe::sglang_log::ServerSummary;
use serde::{Deserialize, Serialize};

/// What limited a run. One list: results.csv, the table, `sgtune log` and the README use it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    /// Running requests plateau below the offered concurrency, a queue, a full KV pool.
    KvCacheBound,
    /// The KV pool keeps filling up during decode and requests are retracted, often.
    RetractionChurn,
    /// Decode runs without CUDA graphs because the batch is larger than the captured sizes.
    CudaGraphLimited,
    /// A queue while the KV pool has room: a scheduler-side cap.
    QueueWithSpareKv,
    /// The prefix cache keeps far fewer prompt tokens than the workload repeats, on a
    /// prefill-heavy run: the pool drops prefixes that requests come back to.
    PrefixCacheEvicted,
    /// The server had room but the client did not keep it busy.
    ClientBound,
    /// Every offered request was running, no queue: compute bound, i.e. healthy.
    ComputeBound,
    /// Not enough evidence (no server stats lines, or no completed request).
    Unknown,
}

impl VerdictKind {
    pub const ALL: [VerdictKind; 8] = [
        VerdictKind::KvCacheBound,
        VerdictKind::RetractionChurn,
        VerdictKind::CudaGraphLimited,
        VerdictKind::QueueWithSpareKv,
        VerdictKind::PrefixCacheEvicted,
        VerdictKind::ClientBound,
        VerdictKind::ComputeBound,
        VerdictKind::Unknown,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            VerdictKind::KvCacheBound => "kv_cache_bound",
            VerdictKind::RetractionChurn => "retraction_churn",
            VerdictKind::CudaGraphLimited => "cuda_graph_limited",
            VerdictKind::QueueWithSpareKv => "queue_with_spare_kv",
            VerdictKind::PrefixCacheEvicted => "prefix_cache_evicted",
            VerdictKind::ClientBound => "client_bound",
            VerdictKind::ComputeBound => "compute_bound",
            VerdictKind::Unknown => "unknown",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub kind: VerdictKind,
    /// The numbers the verdict rests on.
    pub evidence: String,
    /// What to try next.
    pub hint: String,
    /// The other limits the same launch shows, after the one `kind` names (a queue on the cap
    /// and decode without graphs at once): lifting only the first unmasks the next. Their
    /// numbers follow in `evidence`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<VerdictKind>,
}

/// Share of the offered concurrency below which running requests count as "plateaued".
const PLATEAU: f64 = 0.9;
/// Mean queue length that counts as "a queue".
const QUEUED: f64 = 0.5;
/// Share of intervals with a queue that makes it "persistent".
const PERSISTENT: f64 = 0.5;
/// Token usage that counts as a full KV pool.
const KV_FULL: f64 = 0.8;
/// Token usage below which the pool counts as having room (SGLang's tuning guide).
const KV_ROOM: f64 = 0.9;
/// Retractions per minute above which they are churn (upstream: about one a minute is fine).
const CHURN_PER_MIN: f64 = 1.0;
/// Fewest retractions that can be churn.
const CHURN_MIN: u64 = 3;
/// Share of Decode lines without graphs that makes a run graph-limited.
const GRAPH_OFF: f64 = 0.5;
/// Client tok/s over server gen tok/s below which the client is the limit.
const CLIENT_RATIO: f64 = 0.7;
/// The prefix cache's hit rate counts as "well below" what the workload allows when it is at
/// most this share of it ...
const HIT_SHORT_RATIO: f64 = 0.8;
/// ... and at least this many points (of the prompt tokens) below it: a small shortfall on a
/// small reusable share is noise, not a pool that drops history.
const HIT_SHORT_POINTS: f64 = 0.1;
/// Share of the tokens the server computed (prompt tokens prefilled, not cached, plus output
/// tokens) that prefill must reach for recomputed prefixes to matter (docs/methodology.md).
const PREFILL_HEAVY: f64 = 0.5;

/// What a measured launch adds to its log and client: the window's `/metrics` figures (the
/// log's `#cached-token` counts the device and host tiers' hits together; only `/metrics`
/// splits them) and the flags it was launched with (a log at `--log-level warning` prints no
/// server args). `sgtune log` has neither: [`Launch::default`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Launch<'a> {
    pub metrics: Option<&'a MetricsSummary>,
    /// The launch asked for `disable_radix_cache`.
    pub radix_cache_off: bool,
}

/// Diagnose one run from its log and client alone ([`diagnose_launch`] without a [`Launch`]).
pub fn diagnose(
    concurrency: u64,
    tokens_per_request: u64,
    client: Option<&ClientSummary>,
    server: Option<&ServerSummary>,
) -> Verdict {
    diagnose_launch(
        concurrency,
        tokens_per_request,
        client,
        server,
        Launch::default(),
    )
}

/// Diagnose one run. `concurrency` 0 means unknown: the offered concurrency is then estimated
/// from the log (max over intervals of `#running-req` + `#queue-req`, what a closed-loop
/// client keeps in the server). `tokens_per_request` 0 means unknown: the capacity arithmetic
/// then shows the tokens reserved per running request instead.
pub fn diagnose_launch(
    concurrency: u64,
    tokens_per_request: u64,
    client: Option<&ClientSummary>,
    server: Option<&ServerSummary>,
    launch: Launch<'_>,
) -> Verdict {
    let mut v = diagnose_sglang_terms(concurrency, tokens_per_request, client, server, &launch);
    if let Some(s) = server.filter(|_| v.kind != VerdictKind::Unknown) {
        // The cache was turned off, not short: every verdict says so (no eviction verdict or
        // note was made), with what the workload would have allowed.
        if radix_cache_off(s, &launch) {
            v.evidence = format!("{}; {}", v.evidence, radix_off_text(client, s));
        }
    }
    if server.is_some_and(|s| s.engine == crate::plan::engine::Engine::Vllm) {
        if let Some(h) = vllm_hint(v.kind) {
            v.hint = h.into();
        }
    }
    v
}

/// The radix (prefix) cache is off: by the server args in the log, or by the launch's flags.
fn radix_cache_off(s: &ServerSummary, launch: &Launch<'_>) -> bool {
    s.radix_cache_disabled || launch.radix_cache_off
}

/// "radix cache off (...): every prompt computed, ...; the workload allows a hit rate of X".
fn radix_off_text(client: Option<&ClientSummary>, s: &ServerSummary) -> String {
    let allows = PrefixFigures::of(client, s)
        .map(|f| {
            format!(
                "; the workload allows a hit rate of {:.2} ({} of {} prompt tokens reusable)",
                f.reusable_share,
                f.reusable_tokens(),
                f.prompt_tokens
            )
        })
        .unwrap_or_default();
    format!(
        "radix cache off (disable_radix_cache): every prompt computed, nothing cached to evict{allows}"
    )
}

/// The hint in vLLM's knobs (the spec's common name in brackets), where it differs.
fn vllm_hint(kind: VerdictKind) -> Option<&'static str> {
    Some(match kind {
        VerdictKind::KvCacheBound => {
            "more KV capacity: raise gpu_memory_utilization (mem_fraction_static) or kv_cache_memory_bytes (on CPU also VLLM_CPU_KVCACHE_SPACE), a smaller kv_cache_dtype, or lower the concurrency"
        }
        VerdictKind::RetractionChurn => {
            "vLLM preempts and recomputes when the pool fills: lower max_num_seqs (max_running_requests), or add KV capacity (gpu_memory_utilization, kv_cache_memory_bytes)"
        }
        VerdictKind::QueueWithSpareKv => {
            "a scheduler-side limit: check max_num_seqs (max_running_requests) and max_num_batched_tokens (chunked_prefill_size)"
        }
        VerdictKind::ComputeBound => {
            "healthy: everything offered runs and the KV cache is not the limit; for more throughput raise the concurrency or the compute (tensor_parallel_size)"
        }
        VerdictKind::PrefixCacheEvicted => {
            "the pool drops prefixes the workload comes back to: a larger pool keeps more of them (gpu_memory_utilization (mem_fraction_static), kv_cache_memory_bytes)"
        }
        _ => return None,
    })
}

fn diagnose_sglang_terms(
    concurrency: u64,
    tokens_per_request: u64,
    client: Option<&ClientSummary>,
    server: Option<&ServerSummary>,
    launch: &Launch<'_>,
) -> Verdict {
    let unknown = |why: &str| Verdict {
        kind: VerdictKind::Unknown,
        evidence: why.to_string(),
        hint: String::new(),
        also: Vec::new(),
    };
    let Some(s) = server.filter(|s| s.has_stats()) else {
        return unknown(match server {
            Some(s) if s.prefill_lines > 0 => {
                "no Decode lines in the measured window, only Prefill lines (a PD prefill server?)"
            }
            _ => "no server stats lines in the measured window",
        });
    };
    let (Some(run_max), Some(run_mean), Some(q_mean)) =
        (s.running_req_max, s.running_req_mean, s.queue_req_mean)
    else {
        return unknown("server stats lines lack #running-req/#queue-req");
    };
    let usage_max = s.token_usage_max.unwrap_or(0.0);
    let (offered, offered_text, offered_known) = if concurrency > 0 {
        (concurrency, format!("{concurrency} offered"), true)
    } else {
        match s.offered_estimate {
            Some(o) => (
                o,
                format!("≈{o} offered (max #running-req + #queue-req)"),
                false,
            ),
            None => (0, "unknown offered".to_string(), false),
        }
    };
    let client_ratio = client
        .and_then(|c| c.output_tok_s)
        .zip(s.gen_throughput_mean)
        .filter(|(_, g)| *g > 0.0)
        .map(|(c, g)| c / g);
    let ratio_text = client_ratio
        .map(|r| format!("; client/server tok/s {r:.2}"))
        .unwrap_or_default();
    let share_text = s
        .queue_nonzero_share
        .map(|x| format!(" (> 0 in {:.0}% of intervals)", x * 100.0))
        .unwrap_or_default();
    let persistent_queue = q_mean > QUEUED && s.queue_nonzero_share.is_none_or(|x| x >= PERSISTENT);
    let plateau = offered > 0 && (run_max as f64) < PLATEAU * offered as f64;
    let minutes = s.window.seconds.filter(|x| *x > 0.0).map(|x| x / 60.0);
    let per_min = minutes.map(|m| s.retractions as f64 / m);

    // Retraction churn: the pool fills during decode again and again.
    let churn = s.retractions >= CHURN_MIN
        && match per_min {
            Some(r) => r > CHURN_PER_MIN,
            None => s.retractions.saturating_mul(20) >= s.stats_lines as u64,
        };
    // Every limit the launch shows, in the order that names the primary one: a queue on the
    // cap and graphs off at once are two limits (issue 42), and the tune lifts them together.
    let mut found: Vec<Verdict> = Vec::new();
    // With the radix cache off nothing was kept, so nothing was evicted: no prefix figures,
    // no eviction verdict or note (the caller names the cache off instead).
    let figures = PrefixFigures::of(client, s).filter(|_| !radix_cache_off(s, launch));
    let host = HostTier::of(s, launch.metrics);
    let prefix = figures.and_then(|f| prefix_cache_evicted(&f, host.as_ref(), s));
    if churn {
        let rate = match (per_min, s.window.seconds) {
            (Some(r), Some(secs)) => format!(" in {secs:.0} s ({r:.1}/min)"),
            _ => format!(" over {} Decode lines", s.stats_lines),
        };
        found.push(Verdict {
            kind: VerdictKind::RetractionChurn,
            evidence: format!(
                "{} retractions ({} requests){rate}; token usage max {usage_max:.2}; #running-req max {run_max} of {offered_text}, #queue-req mean {q_mean:.1}{ratio_text}",
                s.retractions, s.retracted_requests
            ),
            hint: "the scheduler admits more than the KV pool holds, then retracts: raise schedule_conservativeness (e.g. 1.3) to admit fewer, or add KV capacity (mem_fraction_static, a smaller kv_cache_dtype)".into(),
            also: Vec::new(),
        });
    }

    // The cap, not the pool: running requests pinned at max_running_requests while the pool
    // has room for at least one more request of the workload's size, whatever the usage (a
    // launch at usage 0.91 with room for two more, its running requests exactly at the cap,
    // was once called KV-bound, and the tune then added KV that could not help).
    // Churn is the pool's own limit and its moves include more KV: no queue verdict is named
    // beside it (the queue is what the retractions leave behind).
    let mut queue_named = churn;
    if persistent_queue && !queue_named {
        if let Some((m, room)) = cap_with_room(s, tokens_per_request, run_max, usage_max) {
            queue_named = true;
            found.push(Verdict {
                kind: VerdictKind::QueueWithSpareKv,
                evidence: format!(
                    "#queue-req mean {q_mean:.1}{share_text}; #running-req max {run_max} of {offered_text}, pinned at max_running_requests {m} with room in the pool for {room} more (token usage max {usage_max:.2}){ratio_text}"
                ),
                hint: "the running cap is the limit, not the KV pool: raise max_running_requests"
                    .into(),
                also: Vec::new(),
            });
        }
    }
    if persistent_queue
        && !queue_named
        && (usage_max >= KV_FULL || s.retractions > 0)
        && (plateau || usage_max >= KV_ROOM)
    {
        queue_named = true;
        found.push(Verdict {
            kind: VerdictKind::KvCacheBound,
            evidence: format!(
                "#running-req max {run_max} of {offered_text}, #queue-req mean {q_mean:.1}{share_text}, token usage max {usage_max:.2}, retractions {}{}{ratio_text}",
                if s.retractions_not_logged {
                    "not logged".to_string()
                } else {
                    s.retractions.to_string()
                },
                capacity_arithmetic(s, tokens_per_request, run_max)
            ) + &if prefix.is_none() { prefix_note(figures.as_ref(), host.as_ref()) } else { String::new() },
            // Not the hierarchical cache: its host tier holds evicted prefixes, never a
            // running request's KV, so it adds no room for the batch that waits here.
            hint: "more KV capacity: raise mem_fraction_static (or max_total_tokens), a smaller kv_cache_dtype, or lower the concurrency".into(),
            also: Vec::new(),
        });
    }
    if persistent_queue && !queue_named {
        let cap = s
            .max_running_requests
            .map(|m| {
                if run_max >= m {
                    format!("; #running-req pinned at max_running_requests {m}")
                } else {
                    format!("; max_running_requests {m}")
                }
            })
            .unwrap_or_default();
        found.push(Verdict {
            kind: VerdictKind::QueueWithSpareKv,
            evidence: format!(
                "#queue-req mean {q_mean:.1}{share_text} while token usage max is {usage_max:.2}; #running-req max {run_max} of {offered_text}{cap}{ratio_text}"
            ),
            hint: "a scheduler-side limit: check max_running_requests, lower schedule_conservativeness (e.g. 0.3), chunked_prefill_size".into(),
            also: Vec::new(),
        });
    }
    // After the queues (requests waiting is the first thing to fix, and a larger pool, the
    // KV-bound move, keeps more prefixes too), before the graphs and the client: on a
    // prefill-heavy workload the prefixes recomputed are the work the server could skip.
    found.extend(prefix);
    found.extend(graph_limited(s));
    if let Some(v) = named_with_the_rest(found) {
        return v;
    }
    if (offered_known && run_mean < PLATEAU * offered as f64)
        || client_ratio.is_some_and(|r| r < CLIENT_RATIO)
    {
        return Verdict {
            kind: VerdictKind::ClientBound,
            evidence: format!(
                "no queue, #running-req mean {run_mean:.1} of {offered_text}, token usage max {usage_max:.2}{ratio_text}"
            ),
            hint: "the server had room: the client did not keep the offered concurrency busy (check the client machine, or raise the concurrency)".into(),
            also: Vec::new(),
        };
    }
    Verdict {
        kind: VerdictKind::ComputeBound,
        evidence: format!(
            "#running-req mean {run_mean:.1} of {offered_text}, no queue, token usage max {usage_max:.2}{ratio_text}"
        ),
        hint: "healthy: everything offered runs and the KV cache is not the limit; for more throughput raise the concurrency or the compute (tp_size, cuda graphs)".into(),
        also: Vec::new(),
    }
}

/// The first limit found is the verdict; the others are named after it, each with its own
/// numbers, so one launch's evidence shows every limit the tune must lift at once. None when
/// no limit was found.
fn named_with_the_rest(found: Vec<Verdict>) -> Option<Verdict> {
    let mut it = found.into_iter();
    let mut v = it.next()?;
    for o in it {
        v.evidence = format!("{}; also {}: {}", v.evidence, o.kind.as_str(), o.evidence);
        v.also.push(o.kind);
    }
    Some(v)
}

/// The prefix cache's figures: the hit rate the workload allows (the client's reusable share
/// of the prompt tokens), the one the server's Prefill lines report, and the prompt, cached,
/// newly prefilled and generated tokens behind them. None without the client's reusable share
/// or without Prefill lines (vLLM's log has no per-batch prompt counts).
#[derive(Debug, Clone, Copy, PartialEq)]
struct PrefixFigures {
    reusable_share: f64,
    cached_share: f64,
    prompt_tokens: u64,
    cached_tokens: u64,
    new_tokens: u64,
    output_tokens: u64,
}

impl PrefixFigures {
    fn of(client: Option<&ClientSummary>, s: &ServerSummary) -> Option<PrefixFigures> {
        let c = client?;
        let reusable_share = c
            .reusable_prompt_share
            .filter(|r| r.is_finite())?
            .clamp(0.0, 1.0);
        let prompt_tokens = s.prefill_new_tokens.saturating_add(s.prefill_cached_tokens);
        if prompt_tokens == 0 {
            return None;
        }
        Some(PrefixFigures {
            reusable_share,
            cached_share: s.prefill_cached_tokens as f64 / prompt_tokens as f64,
            prompt_tokens,
            cached_tokens: s.prefill_cached_tokens,
            new_tokens: s.prefill_new_tokens,
            output_tokens: c.output_tokens,
        })
    }

    /// The reusable prompt tokens: the workload's share of what the server prefilled.
    fn reusable_tokens(&self) -> u64 {
        (self.reusable_share * self.prompt_tokens as f64).round() as u64
    }

    /// Prefill's share of the tokens the server computed (new prompt tokens + output tokens).
    fn prefill_share(&self) -> f64 {
        let work = self.new_tokens.saturating_add(self.output_tokens);
        if work == 0 {
            0.0
        } else {
            self.new_tokens as f64 / work as f64
        }
    }

    /// The hit rate is well below what the workload allows: at most 80% of it and at least 10
    /// points under it.
    fn short(&self) -> bool {
        self.cached_share <= HIT_SHORT_RATIO * self.reusable_share
            && self.reusable_share - self.cached_share >= HIT_SHORT_POINTS
    }

    fn text(&self, pool: Option<u64>) -> String {
        let pool = pool
            .map(|p| format!("; pool max_total_num_tokens {p}"))
            .unwrap_or_default();
        format!(
            "prefix cache hit rate {:.2} where the workload allows {:.2}: {} of {} reusable prompt tokens cached ({} prompt tokens); prefill computed {} new tokens against {} generated ({:.0}% of the tokens){pool}",
            self.cached_share,
            self.reusable_share,
            self.cached_tokens,
            self.reusable_tokens(),
            self.prompt_tokens,
            self.new_tokens,
            self.output_tokens,
            self.prefill_share() * 100.0
        )
    }
}

/// `prefix_cache_evicted`: the hit rate well below the workload's while prefill is at least
/// half the tokens computed (a decode-heavy run loses little to a recomputed prefix). The
/// hit rate is the log's, which counts both tiers' hits: with HiCache on, a host tier that
/// brings it up to what the workload allows leaves no verdict.
fn prefix_cache_evicted(
    f: &PrefixFigures,
    host: Option<&HostTier>,
    s: &ServerSummary,
) -> Option<Verdict> {
    if !(f.short() && f.prefill_share() >= PREFILL_HEAVY) {
        return None;
    }
    let mut evidence = f.text(s.max_total_num_tokens);
    let hint = match host {
        None => "the pool drops prefixes the workload comes back to: a larger device pool (mem_fraction_static, max_total_tokens) keeps more of them, or a host tier keeps the evicted ones in RAM at a load cost per token (enable_hierarchical_cache with hicache_ratio or hicache_size; it adds no room for running requests)".to_string(),
        Some(h) => {
            evidence = format!("{evidence}; {}", h.text(f));
            match h.usage_max.filter(|u| *u >= KV_ROOM) {
                Some(u) => format!(
                    "the host tier is on and filled up (usage max {u:.2}): a larger host pool (hicache_ratio or hicache_size) keeps more of the evicted prefixes, a larger device pool (mem_fraction_static, max_total_tokens) more of them without a load-back"
                ),
                None => "the host tier is on and the prefixes still fall short: a larger device pool (mem_fraction_static, max_total_tokens) keeps more of them; a larger host pool (hicache_ratio or hicache_size) helps where it fills up".to_string(),
            }
        }
    };
    Some(Verdict {
        kind: VerdictKind::PrefixCacheEvicted,
        evidence,
        hint,
        also: Vec::new(),
    })
}

/// The prefix figures added to another verdict's evidence when the hit rate falls short (a
/// KV-bound pool that also drops history: its larger pool is both moves).
fn prefix_note(f: Option<&PrefixFigures>, host: Option<&HostTier>) -> String {
    let Some(f) = f.filter(|f| f.short()) else {
        return String::new();
    };
    match host {
        Some(h) => format!("; {}; {}", f.text(None), h.text(f)),
        None => format!("; {}", f.text(None)),
    }
}

/// HiCache's host tier, when the launch has one (the server args, the log's host pool line,
/// or the host pool's gauges in `/metrics`), with what `/metrics` says it did.
#[derive(Debug, Clone, Copy, PartialEq)]
struct HostTier {
    /// Per rank, from the log's host pool line.
    pool_tokens: Option<u64>,
    host_hit_rate: Option<f64>,
    device_hit_rate: Option<f64>,
    load_back_tokens: Option<u64>,
    usage_max: Option<f64>,
}

impl HostTier {
    fn of(s: &ServerSummary, m: Option<&MetricsSummary>) -> Option<HostTier> {
        let on = s.launch_arg("enable_hierarchical_cache") == Some("True")
            || s.hicache_host_gb.is_some()
            || m.is_some_and(|m| m.host_total_tokens.is_some());
        on.then(|| HostTier {
            pool_tokens: s.hicache_host_tokens,
            host_hit_rate: m.and_then(|m| m.host_hit_rate),
            device_hit_rate: m.and_then(|m| m.device_hit_rate),
            load_back_tokens: m.and_then(|m| m.load_back_tokens),
            usage_max: m.and_then(|m| m.host_usage_max),
        })
    }

    /// The host tier's part in the hit rate, and what still misses: "HiCache on (host pool
    /// 8800 tokens): the host tier served 0.37 of the prompt tokens and the device pool 0.44
    /// (/metrics), 12000 tokens loaded back, host pool usage max 0.95; still missed: 4000 of
    /// the reusable prompt tokens (0.05 of the prompt tokens)".
    fn text(&self, f: &PrefixFigures) -> String {
        let pool = self
            .pool_tokens
            .map(|t| format!(" (host pool {t} tokens per rank)"))
            .unwrap_or_default();
        let mut parts = Vec::new();
        match (self.host_hit_rate, self.device_hit_rate) {
            (Some(h), Some(d)) => parts.push(format!(
                "the host tier served {h:.2} of the prompt tokens and the device pool {d:.2} (/metrics)"
            )),
            (Some(h), None) => parts.push(format!(
                "the host tier served {h:.2} of the prompt tokens (/metrics)"
            )),
            _ => parts.push("no /metrics to split the hits by tier".to_string()),
        }
        if let Some(t) = self.load_back_tokens {
            parts.push(format!("{t} tokens loaded back"));
        }
        if let Some(u) = self.usage_max {
            parts.push(format!("host pool usage max {u:.2}"));
        }
        // The server may beat the share the workload allows (the share is counted apart from
        // the server's tokens): nothing then misses.
        let missed = f.reusable_tokens().saturating_sub(f.cached_tokens);
        let missed_share = (f.reusable_share - f.cached_share).max(0.0);
        format!(
            "HiCache on{pool}: {}; still missed: {missed} of the reusable prompt tokens ({missed_share:.2} of the prompt tokens)",
            parts.join(", ")
        )
    }
}

/// When `#running-req` is pinned at `max_running_requests` (its max at the cap) and the pool
/// has room for at least one more request: the cap and how many more requests the pool holds.
/// The request's size is the workload's (`tokens_per_request`), else what each running request
/// held at the peak (usage × capacity ÷ running). None without the cap or the pool's size.
fn cap_with_room(
    s: &ServerSummary,
    tokens_per_request: u64,
    run_max: u64,
    usage_max: f64,
) -> Option<(u64, u64)> {
    let m = s.max_running_requests?;
    if m == 0 || run_max < m {
        return None;
    }
    let total = s
        .max_total_num_tokens?
        .saturating_mul(s.dp_ranks.max(1) as u64) as f64;
    let usage = usage_max.clamp(0.0, 1.0);
    let per = if tokens_per_request > 0 {
        tokens_per_request as f64
    } else {
        usage * total / run_max as f64
    };
    if !(per > 0.0 && total > 0.0) {
        return None;
    }
    let room = ((1.0 - usage) * total / per).floor();
    (room >= 1.0).then_some((m, room as u64))
}

/// "capacity 2048 tokens ÷ 320 tokens per request ≈ 6 requests" (or, without the request
/// size, the tokens the plateau implies per request). Capacity is per DP rank.
fn capacity_arithmetic(s: &ServerSummary, tokens_per_request: u64, run_max: u64) -> String {
    let Some(cap) = s.max_total_num_tokens else {
        return String::new();
    };
    let dp = s.dp_ranks.max(1) as u64;
    let (total, per) = if dp > 1 {
        (
            cap.saturating_mul(dp),
            format!(" × {dp} DP ranks = {}", cap.saturating_mul(dp)),
        )
    } else {
        (cap, String::new())
    };
    if let Some(n) = total.checked_div(tokens_per_request) {
        format!(
            "; capacity {cap} tokens{per} ÷ {tokens_per_request} tokens per request ≈ {n} requests"
        )
    } else if let Some(n) = total.checked_div(run_max) {
        format!(
            "; capacity {cap} tokens{per} ÷ plateau {run_max} ≈ {n} tokens held per running request"
        )
    } else {
        String::new()
    }
}

/// CUDA-graph limited: a device graph (not the CPU one), not disabled, off in most Decode lines,
/// and the batch on those lines is above the captured batch size.
fn graph_limited(s: &ServerSummary) -> Option<Verdict> {
    let label = s.graph_label.as_deref()?;
    if label == "cpu graph" || s.graphs_disabled || s.graph_lines == 0 {
        return None;
    }
    let off = s.graph_lines - s.graph_on_lines;
    let off_share = off as f64 / s.graph_lines as f64;
    if off_share < GRAPH_OFF {
        return None;
    }
    let off_mean = s.graph_off_running_mean?;
    let (above, bound) = match s.cuda_graph_max_bs {
        Some(bs) => (off_mean > bs as f64, format!("captured batch size {bs}")),
        None => match (s.graph_off_running_min, s.graph_on_running_max) {
            (Some(lo), Some(hi)) => (
                lo > hi,
                format!("#running-req max {hi} on lines with graphs"),
            ),
            _ => (false, String::new()),
        },
    };
    if !above {
        return None;
    }
    let target = s.graph_off_running_max.unwrap_or(off_mean.ceil() as u64);
    Some(Verdict {
        kind: VerdictKind::CudaGraphLimited,
        evidence: format!(
            "{label}: False in {:.0}% of Decode lines; #running-req on those mean {off_mean:.1} (max {target}) > {bound}",
            off_share * 100.0
        ),
        hint: format!(
            "decode runs without graphs at this batch size: raise cuda_graph_max_bs to about {target} (memory permitting; lower mem_fraction_static a little if capture runs out), or cap max_running_requests at the captured size"
        ),
        also: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::sglang_log::WindowSpan;

    fn server() -> ServerSummary {
        ServerSummary {
            stats_lines: 100,
            intervals: 100,
            running_req_mean: Some(32.0),
            running_req_max: Some(32),
            queue_req_mean: Some(0.0),
            queue_req_max: Some(0),
            queue_nonzero_share: Some(0.0),
            token_usage_max: Some(0.3),
            gen_throughput_mean: Some(1000.0),
            offered_estimate: Some(32),
            max_total_num_tokens: Some(32768),
            window: WindowSpan {
                seconds: Some(60.0),
                ..WindowSpan::default()
            },
            ..ServerSummary::default()
        }
    }

    /// Without Decode lines the verdict is unknown, and says whether the log had Prefill lines
    /// (a PD prefill server) or no stats at all.
    #[test]
    fn no_decode_lines_is_unknown_and_says_which_lines_there_were() {
        let prefill_only = ServerSummary {
            prefill_lines: 3,
            ..ServerSummary::default()
        };
        let v = diagnose(8, 0, None, Some(&prefill_only));
        assert_eq!(v.kind, VerdictKind::Unknown);
        assert!(v.evidence.contains("only Prefill lines"), "{}", v.evidence);
        for s in [
            ServerSummary::default(),
            ServerSummary {
                prefill_lines: 1,
                ..ServerSummary::default()
            },
        ] {
            let v = diagnose(8, 0, None, Some(&s));
            assert_eq!(v.kind, VerdictKind::Unknown);
            let want = if s.prefill_lines > 0 {
                "only Prefill lines"
            } else {
                "no server stats lines in the measured window"
            };
            assert!(v.evidence.contains(want), "{}", v.evidence);
        }
        let v = diagnose(8, 0, None, Some(&ServerSummary::default()));
        assert_eq!(v.evidence, "no server stats lines in the measured window");
    }

    #[test]
    fn verdict_names_are_one_list() {
        let names: Vec<&str> = VerdictKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(names.len(), 8);
        // That the results.csv column reference lists them is tested in record, the layer
        // that owns the columns.
        for k in VerdictKind::ALL {
            let json = serde_json::to_string(&k).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", k.as_str()));
        }
    }

    #[test]
    fn healthy_and_client_bound() {
        let s = server();
        assert_eq!(
            diagnose(32, 320, None, Some(&s)).kind,
            VerdictKind::ComputeBound
        );
        // Unknown concurrency: estimated from the log.
        let v = diagnose(0, 0, None, Some(&s));
        assert_eq!(v.kind, VerdictKind::ComputeBound);
        assert!(v.evidence.contains("≈32 offered"), "{}", v.evidence);
        // Offered 64 but only 32 running, no queue: the client did not keep up.
        assert_eq!(
            diagnose(64, 320, None, Some(&s)).kind,
            VerdictKind::ClientBound
        );
        // Client tok/s far below the server's.
        let c = ClientSummary {
            output_tok_s: Some(500.0),
            ..ClientSummary::default()
        };
        let v = diagnose(32, 320, Some(&c), Some(&s));
        assert_eq!(v.kind, VerdictKind::ClientBound);
        assert!(
            v.evidence.contains("client/server tok/s 0.50"),
            "{}",
            v.evidence
        );
        assert_eq!(diagnose(32, 320, None, None).kind, VerdictKind::Unknown);
    }

    #[test]
    fn kv_bound_with_arithmetic_and_spare_kv() {
        let s = ServerSummary {
            running_req_max: Some(6),
            running_req_mean: Some(5.9),
            queue_req_mean: Some(18.8),
            queue_req_max: Some(26),
            queue_nonzero_share: Some(0.93),
            token_usage_max: Some(0.93),
            offered_estimate: Some(32),
            max_total_num_tokens: Some(2048),
            ..server()
        };
        let v = diagnose(32, 320, None, Some(&s));
        assert_eq!(v.kind, VerdictKind::KvCacheBound);
        assert!(
            v.evidence
                .contains("capacity 2048 tokens ÷ 320 tokens per request ≈ 6 requests"),
            "{}",
            v.evidence
        );
        let v = diagnose(0, 0, None, Some(&s));
        assert_eq!(v.kind, VerdictKind::KvCacheBound);
        assert!(
            v.evidence.contains("÷ plateau 6 ≈ 341 tokens"),
            "{}",
            v.evidence
        );
        // DP attention: capacity is per rank.
        let dp = ServerSummary {
            dp_ranks: 2,
            ..s.clone()
        };
        assert!(
            diagnose(32, 320, None, Some(&dp))
                .evidence
                .contains("× 2 DP ranks = 4096 ÷ 320 tokens per request ≈ 12")
        );
        // A queue with room in the pool.
        let spare = ServerSummary {
            token_usage_max: Some(0.4),
            max_running_requests: Some(6),
            ..s.clone()
        };
        let v = diagnose(32, 320, None, Some(&spare));
        assert_eq!(v.kind, VerdictKind::QueueWithSpareKv);
        assert!(v.evidence.contains("pinned at max_running_requests 6"));
        // A short burst of queue is not persistent.
        let burst = ServerSummary {
            queue_nonzero_share: Some(0.1),
            running_req_max: Some(32),
            running_req_mean: Some(31.0),
            ..s
        };
        assert_eq!(
            diagnose(32, 320, None, Some(&burst)).kind,
            VerdictKind::ComputeBound
        );
    }

    /// Issue 35: running requests exactly at max_running_requests, usage 0.91, room in the pool
    /// for two more requests of the workload's size: the cap is the limit, not the pool.
    #[test]
    fn pinned_at_the_cap_with_room_in_the_pool_is_the_cap() {
        let s = ServerSummary {
            running_req_max: Some(30),
            running_req_mean: Some(30.0),
            queue_req_mean: Some(34.0),
            queue_req_max: Some(34),
            queue_nonzero_share: Some(1.0),
            token_usage_max: Some(0.91),
            offered_estimate: Some(64),
            max_total_num_tokens: Some(32768),
            max_running_requests: Some(30),
            ..server()
        };
        // 9% of 32,768 tokens free = 2,949: two more requests of 1,000.
        let v = diagnose(64, 1000, None, Some(&s));
        assert_eq!(v.kind, VerdictKind::QueueWithSpareKv, "{}", v.evidence);
        assert!(
            v.evidence
                .contains("pinned at max_running_requests 30 with room in the pool for 2 more"),
            "{}",
            v.evidence
        );
        assert!(v.hint.contains("max_running_requests"), "{}", v.hint);
        // Without the workload's size, each running request's share of the peak: 30 requests
        // held 29,819 tokens, 994 each; 2,949 free hold 2 more.
        let v = diagnose(0, 0, None, Some(&s));
        assert_eq!(v.kind, VerdictKind::QueueWithSpareKv);
        assert!(
            v.evidence.contains("room in the pool for 2 more"),
            "{}",
            v.evidence
        );
        // Room for less than one more: the pool is the limit after all.
        let full = ServerSummary {
            token_usage_max: Some(0.98),
            ..s.clone()
        };
        assert_eq!(
            diagnose(64, 1000, None, Some(&full)).kind,
            VerdictKind::KvCacheBound
        );
        // Below the cap: the pool.
        let below = ServerSummary {
            max_running_requests: Some(48),
            ..s.clone()
        };
        assert_eq!(
            diagnose(64, 1000, None, Some(&below)).kind,
            VerdictKind::KvCacheBound
        );
        // No cap in the log, or no pool size: as before.
        let no_cap = ServerSummary {
            max_running_requests: None,
            ..s.clone()
        };
        assert_eq!(
            diagnose(64, 1000, None, Some(&no_cap)).kind,
            VerdictKind::KvCacheBound
        );
        let no_pool = ServerSummary {
            max_total_num_tokens: None,
            ..s.clone()
        };
        assert_eq!(
            diagnose(64, 1000, None, Some(&no_pool)).kind,
            VerdictKind::KvCacheBound
        );
        // The workload's size when given (500 tokens: 5 more), else each running request's
        // share of the peak (16 running at usage 0.5 of 32,768: 1,024 each, 16 more).
        assert_eq!(cap_with_room(&s, 500, 30, 0.91), Some((30, 5)));
        let half = ServerSummary {
            max_running_requests: Some(16),
            ..s.clone()
        };
        assert_eq!(cap_with_room(&half, 0, 16, 0.5), Some((16, 16)));
        // An empty pool with no request size: no size to count in, no claim.
        assert_eq!(cap_with_room(&half, 0, 16, 0.0), None);
        // DP ranks multiply the pool: 2 × 32,768 at usage 0.5 holds 32 more of 1,024.
        let dp = ServerSummary {
            dp_ranks: 2,
            ..half.clone()
        };
        assert_eq!(cap_with_room(&dp, 1024, 16, 0.5), Some((16, 32)));
        // Exactly one more fits: the cap.
        let one = ServerSummary {
            token_usage_max: Some(0.96),
            ..s
        };
        let v = diagnose(64, 1000, None, Some(&one));
        assert_eq!(v.kind, VerdictKind::QueueWithSpareKv);
        assert!(
            v.evidence.contains("room in the pool for 1 more"),
            "{}",
            v.evidence
        );
    }

    /// A prefill-heavy run whose Prefill lines cached a quarter of the prompt tokens where the
    /// workload repeats three quarters of them.
    fn evicting() -> (ClientSummary, ServerSummary) {
        let c = ClientSummary {
            output_tokens: 8_000,
            reusable_prompt_share: Some(0.75),
            ..ClientSummary::default()
        };
        let s = ServerSummary {
            prefill_lines: 200,
            prefill_new_tokens: 60_000,
            prefill_cached_tokens: 20_000,
            cached_token_share: Some(0.25),
            ..server()
        };
        (c, s)
    }

    #[test]
    fn prefix_cache_evicted_names_the_shares_the_tokens_the_pool_and_both_moves() {
        let (c, s) = evicting();
        let v = diagnose(32, 0, Some(&c), Some(&s));
        assert_eq!(v.kind, VerdictKind::PrefixCacheEvicted, "{}", v.evidence);
        assert_eq!(
            v.evidence,
            "prefix cache hit rate 0.25 where the workload allows 0.75: 20000 of 60000 reusable prompt tokens cached (80000 prompt tokens); prefill computed 60000 new tokens against 8000 generated (88% of the tokens); pool max_total_num_tokens 32768"
        );
        for knob in [
            "mem_fraction_static",
            "max_total_tokens",
            "enable_hierarchical_cache",
            "hicache_ratio",
            "hicache_size",
        ] {
            assert!(v.hint.contains(knob), "{knob}: {}", v.hint);
        }
        assert!(
            v.hint.contains("no room for running requests"),
            "{}",
            v.hint
        );
        // vLLM's words: its pool's knobs, no SGLang host tier.
        let vllm = ServerSummary {
            engine: crate::plan::engine::Engine::Vllm,
            ..s.clone()
        };
        let v = diagnose(32, 0, Some(&c), Some(&vllm));
        assert_eq!(v.kind, VerdictKind::PrefixCacheEvicted);
        assert!(v.hint.contains("gpu_memory_utilization") && !v.hint.contains("hicache"));
    }

    #[test]
    fn prefix_cache_evicted_needs_the_workloads_share_a_real_shortfall_and_prefill_work() {
        let (c, s) = evicting();
        let kind = |c: &ClientSummary, s: &ServerSummary| diagnose(32, 0, Some(c), Some(s)).kind;
        // Without the workload's share (every workload but sessions): never.
        let unknown = ClientSummary {
            reusable_prompt_share: None,
            ..c.clone()
        };
        assert_eq!(kind(&unknown, &s), VerdictKind::ComputeBound);
        assert_eq!(
            diagnose(32, 0, None, Some(&s)).kind,
            VerdictKind::ComputeBound
        );
        // Without Prefill counts (vLLM's log, or none in the window): never.
        let no_prefill = ServerSummary {
            prefill_new_tokens: 0,
            prefill_cached_tokens: 0,
            ..s.clone()
        };
        assert_eq!(kind(&c, &no_prefill), VerdictKind::ComputeBound);
        // Decode-heavy: 60,000 new prompt tokens against 61,000 generated is under half.
        let decode = ClientSummary {
            output_tokens: 61_000,
            ..c.clone()
        };
        assert_eq!(kind(&decode, &s), VerdictKind::ComputeBound);
        let half = ClientSummary {
            output_tokens: 60_000,
            ..c.clone()
        };
        assert_eq!(kind(&half, &s), VerdictKind::PrefixCacheEvicted);
        // The hit rate at 80% of the allowed share or more is no shortfall (0.6 of 0.75 is
        // exactly 80%: still short; 0.61 is not).
        let at = |cached: u64| ServerSummary {
            prefill_new_tokens: 80_000 - cached,
            prefill_cached_tokens: cached,
            ..s.clone()
        };
        assert_eq!(kind(&c, &at(48_000)), VerdictKind::PrefixCacheEvicted);
        assert_eq!(kind(&c, &at(48_800)), VerdictKind::ComputeBound);
        // A small reusable share: under 10 points short is noise, even with nothing cached.
        let small = |r: f64| ClientSummary {
            reusable_prompt_share: Some(r),
            ..c.clone()
        };
        assert_eq!(kind(&small(0.09), &at(0)), VerdictKind::ComputeBound);
        assert_eq!(kind(&small(0.1), &at(0)), VerdictKind::PrefixCacheEvicted);
        // A share out of range is clamped, not trusted past 1; NaN is no share.
        assert_eq!(kind(&small(f64::NAN), &s), VerdictKind::ComputeBound);
        assert_eq!(kind(&small(7.0), &s), VerdictKind::PrefixCacheEvicted);
    }

    /// The KV-bound launch of `evicting`: a queue on a full pool.
    fn full(s: &ServerSummary) -> ServerSummary {
        ServerSummary {
            running_req_max: Some(6),
            running_req_mean: Some(5.9),
            queue_req_mean: Some(18.8),
            queue_req_max: Some(26),
            queue_nonzero_share: Some(0.93),
            token_usage_max: Some(0.93),
            max_total_num_tokens: Some(2048),
            ..s.clone()
        }
    }

    /// Issue 50: `--disable-radix-cache` computes every prompt by the user's choice. Nothing
    /// was evicted: no eviction verdict, note or HiCache hint; the evidence names the cache
    /// off and what the workload would have allowed. The log's server args say so, or, where
    /// the log prints none, the launch's flags.
    #[test]
    fn the_radix_cache_off_is_named_and_never_evicted() {
        let (c, s) = evicting();
        let off = ServerSummary {
            prefill_new_tokens: 80_000,
            prefill_cached_tokens: 0,
            cached_token_share: Some(0.0),
            radix_cache_disabled: true,
            ..s.clone()
        };
        let named = "radix cache off (disable_radix_cache): every prompt computed, nothing cached to evict; the workload allows a hit rate of 0.75 (60000 of 80000 prompt tokens reusable)";
        let by_flag = Launch {
            radix_cache_off: true,
            ..Launch::default()
        };
        let on = ServerSummary {
            radix_cache_disabled: false,
            ..off.clone()
        };
        for (server, launch) in [(&off, Launch::default()), (&on, by_flag)] {
            let v = diagnose_launch(32, 0, Some(&c), Some(server), launch);
            assert_eq!(v.kind, VerdictKind::ComputeBound, "{}", v.evidence);
            assert!(v.evidence.ends_with(named), "{}", v.evidence);
            assert!(!v.hint.contains("hicache"), "{}", v.hint);
            // A KV-bound launch: no eviction beside it, no prefix note, the cache named off.
            let v = diagnose_launch(32, 0, Some(&c), Some(&full(server)), launch);
            assert_eq!(v.kind, VerdictKind::KvCacheBound, "{}", v.evidence);
            assert!(v.also.is_empty(), "{:?}", v.also);
            assert!(
                !v.evidence.contains("prefix cache hit rate"),
                "{}",
                v.evidence
            );
            assert!(v.evidence.ends_with(named), "{}", v.evidence);
            assert!(!v.hint.contains("hicache"), "{}", v.hint);
        }
        // The same launch with the cache on is evicting.
        assert_eq!(
            diagnose(32, 0, Some(&c), Some(&on)).kind,
            VerdictKind::PrefixCacheEvicted
        );
        // Without the workload's share the cache is named off all the same.
        let v = diagnose(32, 0, None, Some(&off));
        assert!(
            v.evidence
                .ends_with("radix cache off (disable_radix_cache): every prompt computed, nothing cached to evict"),
            "{}",
            v.evidence
        );
        // No stats: unknown, with nothing to add.
        let v = diagnose(32, 0, Some(&c), Some(&ServerSummary::default()));
        assert!(!v.evidence.contains("radix"), "{}", v.evidence);
    }

    /// The `/metrics` figures of a HiCache launch (SGLang 0.5.23's tiers).
    fn tiers(host: f64, device: f64, usage: f64) -> MetricsSummary {
        MetricsSummary {
            cache_hit_rate: Some(host + device),
            host_hit_rate: Some(host),
            device_hit_rate: Some(device),
            load_back_tokens: Some(8_000),
            backup_tokens: Some(70_000),
            evicted_tokens: Some(50_000),
            host_usage_max: Some(usage),
            host_total_tokens: Some(8_800),
            ..MetricsSummary::default()
        }
    }

    /// Issue 50: with HiCache on, `prefix_cache_evicted` shows the host tier's part (its
    /// hits, loads, fill) and what still misses; its hint is the pools' sizes, not HiCache.
    #[test]
    fn prefix_cache_evicted_with_hicache_shows_the_host_tiers_part() {
        let (c, s) = evicting();
        let hicache = ServerSummary {
            launch_args: vec![("enable_hierarchical_cache".into(), "True".into())],
            hicache_host_gb: Some(0.01),
            hicache_host_tokens: Some(8_800),
            ..s.clone()
        };
        let m = tiers(0.1, 0.15, 0.97);
        let launch = Launch {
            metrics: Some(&m),
            ..Launch::default()
        };
        let v = diagnose_launch(32, 0, Some(&c), Some(&hicache), launch);
        assert_eq!(v.kind, VerdictKind::PrefixCacheEvicted, "{}", v.evidence);
        assert!(
            v.evidence.ends_with(
                "; HiCache on (host pool 8800 tokens per rank): the host tier served 0.10 of the prompt tokens and the device pool 0.15 (/metrics), 8000 tokens loaded back, host pool usage max 0.97; still missed: 40000 of the reusable prompt tokens (0.50 of the prompt tokens)"
            ),
            "{}",
            v.evidence
        );
        // A full host pool: a larger one first; never "enable" what is on.
        assert!(v.hint.contains("filled up (usage max 0.97)"), "{}", v.hint);
        assert!(v.hint.contains("hicache_ratio"), "{}", v.hint);
        assert!(!v.hint.contains("enable_hierarchical_cache"), "{}", v.hint);
        let roomy = tiers(0.1, 0.15, 0.5);
        let v = diagnose_launch(
            32,
            0,
            Some(&c),
            Some(&hicache),
            Launch {
                metrics: Some(&roomy),
                ..Launch::default()
            },
        );
        assert!(
            v.hint.starts_with(
                "the host tier is on and the prefixes still fall short: a larger device pool"
            ),
            "{}",
            v.hint
        );
        // HiCache on by the log alone (`sgtune log`): on, no split to show.
        let v = diagnose(32, 0, Some(&c), Some(&hicache));
        assert!(
            v.evidence.contains("HiCache on (host pool 8800 tokens per rank): no /metrics to split the hits by tier; still missed: 40000"),
            "{}",
            v.evidence
        );
        // A KV-bound launch short of the share and not prefill-heavy: the note has it too.
        let light = ClientSummary {
            output_tokens: 200_000,
            ..c.clone()
        };
        let v = diagnose_launch(32, 0, Some(&light), Some(&full(&hicache)), launch);
        assert_eq!(v.kind, VerdictKind::KvCacheBound);
        assert!(
            v.evidence.contains(
                "; HiCache on (host pool 8800 tokens per rank): the host tier served 0.10"
            ),
            "{}",
            v.evidence
        );
        // Without HiCache (no host pool's gauges either) the tiers' figures add nothing.
        let plain = MetricsSummary {
            host_usage_max: None,
            host_total_tokens: None,
            load_back_tokens: None,
            ..tiers(0.0, 0.25, 0.0)
        };
        let launch = Launch {
            metrics: Some(&plain),
            ..Launch::default()
        };
        let v = diagnose_launch(32, 0, Some(&c), Some(&s), launch);
        assert_eq!(v.kind, VerdictKind::PrefixCacheEvicted);
        assert!(!v.evidence.contains("HiCache"), "{}", v.evidence);
    }

    /// The log's hit rate counts both tiers' hits: when the host tier brings it up to what the
    /// workload allows, or past it, nothing was evicted that the launch could not get back.
    #[test]
    fn a_host_tier_that_brings_the_hit_rate_up_to_the_share_is_no_eviction() {
        let (c, s) = evicting();
        let at = |cached: u64| ServerSummary {
            launch_args: vec![("enable_hierarchical_cache".into(), "True".into())],
            prefill_new_tokens: 80_000 - cached,
            prefill_cached_tokens: cached,
            ..s.clone()
        };
        let m = tiers(0.37, 0.44, 0.6);
        let launch = Launch {
            metrics: Some(&m),
            ..Launch::default()
        };
        // 0.73 and 0.81 of the prompt tokens where the workload allows 0.75.
        for cached in [58_400, 64_800] {
            let v = diagnose_launch(32, 0, Some(&c), Some(&at(cached)), launch);
            assert_eq!(v.kind, VerdictKind::ComputeBound, "{}", v.evidence);
            assert!(!v.evidence.contains("prefix"), "{}", v.evidence);
            let v = diagnose_launch(32, 0, Some(&c), Some(&full(&at(cached))), launch);
            assert_eq!(v.kind, VerdictKind::KvCacheBound, "{}", v.evidence);
            assert!(
                v.also.is_empty() && !v.evidence.contains("HiCache"),
                "{}",
                v.evidence
            );
        }
        // A hit rate past the share leaves nothing missed, never a negative count.
        let f = PrefixFigures {
            reusable_share: 0.75,
            cached_share: 0.81,
            prompt_tokens: 80_000,
            cached_tokens: 64_800,
            new_tokens: 15_200,
            output_tokens: 8_000,
        };
        let h = HostTier::of(&at(64_800), Some(&m));
        assert!(
            h.is_some_and(|h| h.text(&f).ends_with(
                "still missed: 0 of the reusable prompt tokens (0.00 of the prompt tokens)"
            )),
            "{h:?}"
        );
    }

    #[test]
    fn a_queue_on_a_full_pool_stays_kv_bound_and_says_the_prefixes_fall_short() {
        let (c, s) = evicting();
        let full = ServerSummary {
            running_req_max: Some(6),
            running_req_mean: Some(5.9),
            queue_req_mean: Some(18.8),
            queue_req_max: Some(26),
            queue_nonzero_share: Some(0.93),
            token_usage_max: Some(0.93),
            max_total_num_tokens: Some(2048),
            ..s
        };
        let v = diagnose(32, 0, Some(&c), Some(&full));
        assert_eq!(v.kind, VerdictKind::KvCacheBound);
        // Prefill-heavy: the prefixes dropped are a limit of their own, named beside it.
        assert_eq!(v.also, vec![VerdictKind::PrefixCacheEvicted]);
        assert!(
            v.evidence
                .contains("; also prefix_cache_evicted: prefix cache hit rate 0.25 where the workload allows 0.75: 20000 of 60000 reusable prompt tokens cached (80000 prompt tokens); prefill computed 60000 new tokens against 8000 generated (88% of the tokens)"),
            "{}",
            v.evidence
        );
        // Short of the share but not prefill-heavy: no limit of its own, the figures follow
        // the KV verdict's.
        let light = ClientSummary {
            output_tokens: 200_000,
            ..c.clone()
        };
        let v = diagnose(32, 0, Some(&light), Some(&full));
        assert!(v.also.is_empty(), "{:?}", v.also);
        assert!(
            v.evidence
                .contains("; prefix cache hit rate 0.25 where the workload allows 0.75"),
            "{}",
            v.evidence
        );
        // Its hint asks for room for the batch, which the host tier does not give.
        assert!(!v.hint.contains("hicache"), "{}", v.hint);
        // Without a shortfall, nothing is added.
        let fine = ServerSummary {
            prefill_new_tokens: 22_000,
            prefill_cached_tokens: 58_000,
            ..full.clone()
        };
        assert!(
            !diagnose(32, 0, Some(&c), Some(&fine))
                .evidence
                .contains("prefix")
        );
        // A queue with room in the pool: the scheduler's cap comes first too.
        let spare = ServerSummary {
            token_usage_max: Some(0.4),
            ..full
        };
        assert_eq!(
            diagnose(32, 0, Some(&c), Some(&spare)).kind,
            VerdictKind::QueueWithSpareKv
        );
    }

    #[test]
    fn retraction_churn() {
        let s = ServerSummary {
            retractions: 12,
            retracted_requests: 20,
            token_usage_max: Some(0.99),
            ..server()
        };
        let v = diagnose(32, 320, None, Some(&s));
        assert_eq!(v.kind, VerdictKind::RetractionChurn);
        assert!(
            v.evidence
                .contains("12 retractions (20 requests) in 60 s (12.0/min)")
        );
        assert!(v.hint.contains("schedule_conservativeness"));
        // One a minute is fine.
        let calm = ServerSummary {
            retractions: 1,
            ..s
        };
        assert_ne!(
            diagnose(32, 320, None, Some(&calm)).kind,
            VerdictKind::RetractionChurn
        );
    }

    #[test]
    fn retraction_churn_thresholds() {
        let with = |retractions: u64, seconds: Option<f64>, lines: usize| {
            let s = ServerSummary {
                retractions,
                retracted_requests: retractions,
                stats_lines: lines,
                token_usage_max: Some(0.99),
                window: WindowSpan {
                    seconds,
                    ..WindowSpan::default()
                },
                ..server()
            };
            diagnose(32, 320, None, Some(&s)).kind == VerdictKind::RetractionChurn
        };
        // At least 3 retractions, more than one a minute.
        assert!(with(3, Some(60.0), 100));
        assert!(!with(2, Some(60.0), 100), "fewer than 3 is never churn");
        assert!(!with(3, Some(180.0), 100), "exactly one a minute is fine");
        assert!(with(3, Some(179.0), 100));
        // No window length: one retraction per 20 Decode lines or more.
        assert!(with(3, None, 60));
        assert!(!with(3, None, 61));
        assert!(
            with(3, Some(0.0), 60),
            "a zero-length window counts as unknown"
        );
        assert!(!with(2, None, 10));
        // Its evidence without a window names the Decode lines.
        let s = ServerSummary {
            retractions: 4,
            retracted_requests: 9,
            stats_lines: 50,
            window: WindowSpan::default(),
            ..server()
        };
        let v = diagnose(32, 320, None, Some(&s));
        assert!(
            v.evidence
                .starts_with("4 retractions (9 requests) over 50 Decode lines"),
            "{}",
            v.evidence
        );
    }

    /// Issue 42: a launch whose requests queue on the running cap while decode runs without
    /// graphs shows two limits; the verdict names the first and the evidence both, so the tune
    /// lifts them in one launch instead of unmasking the second a launch later.
    #[test]
    fn every_limit_a_launch_shows_is_named() {
        let graphs_off = ServerSummary {
            graph_label: Some("cuda graph".into()),
            graph_lines: 100,
            graph_on_lines: 10,
            graph_on_running_max: Some(16),
            graph_off_running_min: Some(24),
            graph_off_running_mean: Some(31.0),
            graph_off_running_max: Some(32),
            cuda_graph_max_bs: Some(16),
            ..server()
        };
        let on_the_cap = ServerSummary {
            running_req_max: Some(32),
            running_req_mean: Some(31.0),
            queue_req_mean: Some(30.0),
            queue_req_max: Some(32),
            queue_nonzero_share: Some(1.0),
            token_usage_max: Some(0.4),
            offered_estimate: Some(64),
            max_running_requests: Some(32),
            ..graphs_off.clone()
        };
        let v = diagnose(64, 320, None, Some(&on_the_cap));
        assert_eq!(v.kind, VerdictKind::QueueWithSpareKv, "{}", v.evidence);
        assert_eq!(v.also, vec![VerdictKind::CudaGraphLimited]);
        assert!(
            v.evidence.contains("pinned at max_running_requests 32"),
            "{}",
            v.evidence
        );
        assert!(
            v.evidence
                .contains("; also cuda_graph_limited: cuda graph: False in 90% of Decode lines"),
            "{}",
            v.evidence
        );
        // The pool full behind the queue: KV first, graphs after it.
        let full = ServerSummary {
            token_usage_max: Some(0.97),
            max_running_requests: Some(256),
            ..on_the_cap.clone()
        };
        let v = diagnose(64, 320, None, Some(&full));
        assert_eq!(v.kind, VerdictKind::KvCacheBound, "{}", v.evidence);
        assert_eq!(v.also, vec![VerdictKind::CudaGraphLimited]);
        // Churn with the queue on a full pool: churn is the pool's own limit (its moves add
        // KV), so the full pool is not named again; the graphs are.
        let churning = ServerSummary {
            retractions: 30,
            retracted_requests: 30,
            ..full.clone()
        };
        let v = diagnose(64, 320, None, Some(&churning));
        assert_eq!(v.kind, VerdictKind::RetractionChurn, "{}", v.evidence);
        assert_eq!(v.also, vec![VerdictKind::CudaGraphLimited]);
        // One limit alone names nothing else, and the verdicts that are no limit never do.
        let graphs_only = diagnose(32, 320, None, Some(&graphs_off));
        assert_eq!(graphs_only.kind, VerdictKind::CudaGraphLimited);
        assert!(graphs_only.also.is_empty());
        assert!(diagnose(32, 320, None, Some(&server())).also.is_empty());
        // A queue named once: the cap with room is not also a scheduler-side queue.
        let v = diagnose(
            64,
            320,
            None,
            Some(&ServerSummary {
                graph_label: None,
                ..on_the_cap
            }),
        );
        assert!(v.also.is_empty(), "{:?}", v.also);
    }

    #[test]
    fn cuda_graph_limited_only_for_device_graphs() {
        let s = ServerSummary {
            running_req_max: Some(200),
            running_req_mean: Some(190.0),
            offered_estimate: Some(200),
            graph_label: Some("cuda graph".into()),
            graph_lines: 100,
            graph_on_lines: 10,
            graph_on_running_max: Some(160),
            graph_off_running_min: Some(170),
            graph_off_running_mean: Some(190.0),
            graph_off_running_max: Some(200),
            cuda_graph_max_bs: Some(160),
            ..server()
        };
        let v = diagnose(200, 0, None, Some(&s));
        assert_eq!(v.kind, VerdictKind::CudaGraphLimited);
        assert!(
            v.evidence.contains("> captured batch size 160"),
            "{}",
            v.evidence
        );
        assert!(v.hint.contains("cuda_graph_max_bs to about 200"));
        // Without the captured size: compared with the lines that had graphs.
        let no_bs = ServerSummary {
            cuda_graph_max_bs: None,
            ..s.clone()
        };
        assert_eq!(
            diagnose(200, 0, None, Some(&no_bs)).kind,
            VerdictKind::CudaGraphLimited
        );
        // CPU graphs, or graphs disabled: not applicable.
        for other in [
            ServerSummary {
                graph_label: Some("cpu graph".into()),
                ..s.clone()
            },
            ServerSummary {
                graphs_disabled: true,
                ..s.clone()
            },
        ] {
            assert_eq!(
                diagnose(200, 0, None, Some(&other)).kind,
                VerdictKind::ComputeBound
            );
        }
    }
}
