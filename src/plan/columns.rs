//! The results.csv columns by name: the one list of the fixed columns (each one's name, which
//! way it improves and what it means, in the file's order), and [`Col`], a column a row is
//! read by (a listed one, or a swept key's `param_<key>`).
//!
//! The list is vocabulary, not I/O, so it sits here, below every stage that names a column:
//! the spec resolves `objective:`'s names to columns as it is read (a wrong name is a spec
//! error at its line), `engine` names the columns vLLM cannot fill, and record fills each
//! column from a run (`record::run_record::cell`, one arm per column: a column added here
//! without its value does not compile) and reads results.csv's rows by [`Col`].

use serde::{Deserialize, Serialize};
use std::fmt;

/// Which way a column improves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    /// Throughputs, goodput, completed requests.
    Higher,
    /// Latencies, failures, lags, retractions.
    Lower,
    /// Not a quality: an identity, a setting, a state (capacity, token usage, verdict).
    Neither,
}

/// The fixed columns, each `Variant = "name", Better, "meaning";`, in results.csv's order:
/// `leading` before the `param_<key>` columns, `trailing` after them.
macro_rules! columns {
    (
        leading: [$($lv:ident = $ln:literal, $lb:ident, $ld:literal;)*]
        trailing: [$($tv:ident = $tn:literal, $tb:ident, $td:literal;)*]
    ) => {
        /// A fixed results.csv column (the `param_<key>` columns are [`Col::Param`]).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Column {
            $($lv,)*
            $($tv,)*
        }

        impl Column {
            /// The columns before the `param_<key>` columns, in order.
            pub const LEADING: &'static [Column] = &[$(Column::$lv,)*];
            /// The columns after the `param_<key>` columns, in order.
            pub const TRAILING: &'static [Column] = &[$(Column::$tv,)*];

            /// Its name in results.csv.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Column::$lv => $ln,)*
                    $(Column::$tv => $tn,)*
                }
            }
            /// Which way it improves (read by compare, reproduce and any ranking).
            pub fn better(self) -> Better {
                match self {
                    $(Column::$lv => Better::$lb,)*
                    $(Column::$tv => Better::$tb,)*
                }
            }
            /// What it means (docs/columns.md, `sgtune columns`).
            pub fn doc(self) -> &'static str {
                match self {
                    $(Column::$lv => $ld,)*
                    $(Column::$tv => $td,)*
                }
            }
        }
    };
}

columns! {
    leading: [
        RunName = "run_name", Neither,
            "Readable run name (explicit config name, or built from the swept values)";
        RunId = "run_id", Neither,
            "Stable id of the server launched: hash of its engine, command line (less --host/--port) and environment (less a slot's GPUs); runs with equal ids launched the same server";
        Engine = "engine", Neither,
            "The serving engine: `sglang` or `vllm` (the configuration's `engine:`, else `server.engine`)";
        Status = "status", Neither,
            "`ok`, `failed`, `interrupted`, or `pruned` (not measured: clearly beaten at the lowest load point, `objective.prune`; the evidence is in failure_message)";
        FailureKind = "failure_kind", Neither,
            "Why it failed: `oom`, `bad_flag`, `startup_error`, `crashed`, `ready_timeout`, `load_failed`, `launch_error`, `interrupted`, `preflight_failed`, `slurm_task`";
        FailureMessage = "failure_message", Neither,
            "The decisive log line or what happened";
    ]
    trailing: [
        Concurrency = "concurrency", Neither,
            "The load point: offered concurrency (closed loop: requests in flight; open loop: the cap on them)";
        RequestRate = "request_rate", Neither,
            "Open loop: the load point's arrival rate (requests/s, `request_rate:`); empty in a closed loop";
        Repeat = "repeat", Neither,
            "Repeat index, 1-based (`repeats:` in the spec)";
        Phase = "phase", Neither,
            "`measure` (a load point of the spec), `probe` (the max-load search's), `preflight` (a memory pre-flight attempt)";
        Probe = "probe", Neither,
            "A probe's standing against the objective's SLO over its repeats: `pass`, `fail` or `uncertain` (its repeats straddle a bound); a pre-flight attempt's: `pass` (survived the burst) or `fail`";
        RequestsCompleted = "requests_completed", Higher,
            "Measured requests that succeeded";
        RequestsFailed = "requests_failed", Lower,
            "Measured requests that failed (any error class)";
        DurationS = "duration_s", Neither,
            "Measured window: first measured send to last completion (s)";
        RequestThroughput = "request_throughput", Higher,
            "Completed requests / duration (req/s)";
        OutputTokS = "output_tok_s", Higher,
            "Client output tokens/s: Σ usage.completion_tokens of successful requests / duration";
        OutputTokSSteady = "output_tok_s_steady", Higher,
            "Output tok/s in the steady state: MSER-5 (batches of five 1-s bins of output tokens, by chunk arrival) trims the warm-up, and this is the mean of the bins after it (empty: a window under 20 s)";
        WarmupTrimmedS = "warmup_trimmed_s", Neither,
            "Seconds of warm-up MSER-5 trimmed from the start of the measured window (the other client columns keep the whole window)";
        TotalTokS = "total_tok_s", Higher,
            "Client (prompt + output) tokens/s over the same window";
        TtftMsMean = "ttft_ms_mean", Lower,
            "Time to first token: send → first chunk with non-empty content (SGLang convention), mean (ms)";
        TtftMsP50 = "ttft_ms_p50", Lower,
            "Time to first token: send → first chunk with non-empty content (SGLang convention), median (ms)";
        TtftMsP90 = "ttft_ms_p90", Lower,
            "Time to first token: send → first chunk with non-empty content (SGLang convention), 90th percentile (ms)";
        TtftMsP95 = "ttft_ms_p95", Lower,
            "Time to first token: send → first chunk with non-empty content (SGLang convention), 95th percentile (ms)";
        TtftMsP99 = "ttft_ms_p99", Lower,
            "Time to first token: send → first chunk with non-empty content (SGLang convention), 99th percentile (ms)";
        ItlMsMean = "itl_ms_mean", Lower,
            "Inter-token latency: gaps between content chunks, pooled over requests, mean (ms)";
        ItlMsP50 = "itl_ms_p50", Lower,
            "Inter-token latency: gaps between content chunks, pooled over requests, median (ms)";
        ItlMsP90 = "itl_ms_p90", Lower,
            "Inter-token latency: gaps between content chunks, pooled over requests, 90th percentile (ms)";
        ItlMsP95 = "itl_ms_p95", Lower,
            "Inter-token latency: gaps between content chunks, pooled over requests, 95th percentile (ms)";
        ItlMsP99 = "itl_ms_p99", Lower,
            "Inter-token latency: gaps between content chunks, pooled over requests, 99th percentile (ms)";
        TpotMsMean = "tpot_ms_mean", Lower,
            "Time per output token: (E2E − TTFT)/(output tokens − 1) per request, mean (ms)";
        TpotMsP50 = "tpot_ms_p50", Lower,
            "Time per output token: (E2E − TTFT)/(output tokens − 1) per request, median (ms)";
        TpotMsP90 = "tpot_ms_p90", Lower,
            "Time per output token: (E2E − TTFT)/(output tokens − 1) per request, 90th percentile (ms)";
        TpotMsP95 = "tpot_ms_p95", Lower,
            "Time per output token: (E2E − TTFT)/(output tokens − 1) per request, 95th percentile (ms)";
        TpotMsP99 = "tpot_ms_p99", Lower,
            "Time per output token: (E2E − TTFT)/(output tokens − 1) per request, 99th percentile (ms)";
        E2eMsMean = "e2e_ms_mean", Lower,
            "End-to-end latency: send → end of stream (SGLang convention), mean (ms)";
        E2eMsP50 = "e2e_ms_p50", Lower,
            "End-to-end latency: send → end of stream (SGLang convention), median (ms)";
        E2eMsP90 = "e2e_ms_p90", Lower,
            "End-to-end latency: send → end of stream (SGLang convention), 90th percentile (ms)";
        E2eMsP95 = "e2e_ms_p95", Lower,
            "End-to-end latency: send → end of stream (SGLang convention), 95th percentile (ms)";
        E2eMsP99 = "e2e_ms_p99", Lower,
            "End-to-end latency: send → end of stream (SGLang convention), 99th percentile (ms)";
        TtftVllmMsMean = "ttft_vllm_ms_mean", Lower,
            "TTFT in vLLM's convention: send → first chunk with choices, even empty (chat's role-only chunk counts), mean (ms)";
        TtftVllmMsP50 = "ttft_vllm_ms_p50", Lower,
            "Same, median (ms)";
        E2eVllmMsMean = "e2e_vllm_ms_mean", Lower,
            "E2E in vLLM's convention: send → last content chunk (the usage chunk and [DONE] excluded), mean (ms)";
        E2eVllmMsP50 = "e2e_vllm_ms_p50", Lower,
            "Same, median (ms)";
        TtftFirstTurnMsP50 = "ttft_first_turn_ms_p50", Lower,
            "`sessions:` TTFT of the sessions' first turns (no history yet), median (ms); empty without sessions";
        TtftLastTurnMsP50 = "ttft_last_turn_ms_p50", Lower,
            "`sessions:` TTFT of the sessions' last turns (the longest history), median (ms); against the first turn's, what the history costs or the prefix cache saves";
        TurnLatency = "turn_latency", Neither,
            "`sessions:` latency by turn, space-separated buckets `turn:ttft_p50_ms:tpot_p50_ms:requests` (turn 1-based; the 24th bucket, written `24+`, holds every later turn; a TPOT the bucket has no data for is empty), e.g. `1:120.5:11.20:40 2:95.0:11.31:40`";
        GoodputShare = "goodput_share", Higher,
            "Share of measured requests meeting every `workload.slo` limit (empty: no SLO)";
        GoodputReqS = "goodput_req_s", Higher,
            "Requests meeting every SLO per second of the measured window";
        SchedLagMsP99 = "sched_lag_ms_p99", Lower,
            "Open loop (`request_rate`): actual minus scheduled send, 99th percentile (ms); empty in closed loop";
        ReadLagMsP99 = "read_lag_ms_p99", Lower,
            "How long streamed data waited in the socket before the client read it (kernel receive timestamp to read, per read), 99th percentile (ms); empty where the OS gives no timestamps";
        CutOff = "cut_off", Lower,
            "Requests abandoned at the `duration_s` deadline under `deadline: cut` (not failures, not in latencies)";
        ClientCpuCores = "client_cpu_cores", Neither,
            "CPU sgtune's client used during the measured window, in cores";
        ClientBound = "client_bound", Neither,
            "Why the client itself may have limited the load (scheduling lag p99 > 10 ms, CPU near the core count); empty when not";
        ServerGenTputMean = "server_gen_tput_mean", Higher,
            "Server `gen throughput (token/s)` from Decode lines in the window (vLLM: `Avg generation throughput` of its stats lines), mean (empty: no stats)";
        ServerGenTputMedian = "server_gen_tput_median", Higher,
            "Same, median";
        RunningReqMean = "running_req_mean", Neither,
            "Server `#running-req` (vLLM: `Running`), mean over Decode lines";
        RunningReqMax = "running_req_max", Neither,
            "Server `#running-req`, max";
        QueueReqMean = "queue_req_mean", Lower,
            "Server `#queue-req` (vLLM: `Waiting`; V0 `Pending` + `Swapped`), mean";
        QueueReqMax = "queue_req_max", Lower,
            "Server `#queue-req`, max";
        TokenUsageMean = "token_usage_mean", Neither,
            "Server KV `token usage` (0-1; vLLM: the device pool's `KV cache usage`), mean";
        TokenUsageMax = "token_usage_max", Neither,
            "Server KV `token usage`, max";
        ServerStatsLines = "server_stats_lines", Neither,
            "Decode lines (vLLM: stats lines) the server stats rest on (0: no stats; the columns above are then empty)";
        DecodeSteps = "decode_steps", Neither,
            "The server's decode steps by running batch size, from the same Decode lines (vLLM: stats lines), each line's step `#running-req` ÷ `gen throughput` (ms): space-separated buckets `running:step_ms:lines[:g|:e]` (mean step of the bucket's lines; `g`: CUDA graphs by the lines' majority, `e`: eager, nothing: the log does not say), at most 24 (more batch sizes are merged into geometric bins, running then their mean), e.g. `4:11.20:12:g 8:12.05:30:e`";
        MetricsGenTput = "metrics_gen_tput", Higher,
            "Server generated tokens/s from a `/metrics` counter's delta over the window: `sglang:realtime_tokens_total{mode=\"decode\"}` where exported, else `sglang:generation_tokens_total` (empty without `--enable-metrics`); vLLM: `vllm:generation_tokens_total`";
        MetricsRunningMean = "metrics_running_mean", Neither,
            "`sglang:num_running_reqs` (vLLM: `vllm:num_requests_running`) from `/metrics`, mean over ~1 s scrapes";
        MetricsQueueMean = "metrics_queue_mean", Neither,
            "`sglang:num_queue_reqs` (vLLM: `vllm:num_requests_waiting`) from `/metrics`, mean over ~1 s scrapes";
        MaxTotalNumTokens = "max_total_num_tokens", Neither,
            "KV pool capacity in tokens (startup capacity line; vLLM: `KV cache size: N tokens`)";
        MaxRunningRequests = "max_running_requests", Neither,
            "Effective running-request cap (startup capacity line; vLLM: `max_num_seqs` from its `non-default args` line)";
        KvCacheDtype = "kv_cache_dtype", Neither,
            "KV cache dtype (`KV Cache is allocated` line)";
        KvCacheGb = "kv_cache_gb", Neither,
            "KV cache size, K + V (GB; vLLM: its `GiB for KV cache` / `Available KV cache memory` line)";
        HicacheHostTokens = "hicache_host_tokens", Neither,
            "HiCache's host pool in tokens, per rank (start-up line `Allocating kv hierarchical KV host pool: N tokens, X GB host memory.`); empty without HiCache or where the line gives GB only";
        CacheHitRate = "cache_hit_rate", Neither,
            "Prefix-cache hit rate in the window: Σ `#cached-token` / Σ (`#new-token` + `#cached-token`) over Prefill lines (vLLM: the window's last `Prefix cache hit rate`, vLLM's rolling rate)";
        PrefixReusableShare = "prefix_reusable_share", Neither,
            "The prefix-cache hit rate the workload allows, a ceiling the server's `cache_hit_rate` cannot beat: Σ reusable ÷ Σ prompt tokens of the successful requests, in the server's tokens, the reusable part of a prompt being what an earlier request already sent: a session's previous prompt and reply as `usage` counted them (`sessions:`), what a session's first turn has in common with an earlier first turn (the shared system prompt and the chat template's tokens, tokenized by the server), the whole prompt of a conversation sent before, a `shared_prefix` group's prefix after the group's first request (on chat in words: nominal there). A server hit rate well below it is history the cache dropped (empty: single synthetic or dataset prompts, or a request whose part is not known)";
        MetricsCacheHitRate = "metrics_cache_hit_rate", Neither,
            "Same from `/metrics`: Δ `sglang:cached_tokens_total` / Δ `sglang:prompt_tokens_total` over the window, each summed over its label sets (the hits come by `cache_source`: device, host, storage) and a series first exported inside the window counted from 0; a server that exports no hit yet, Δ of `sglang:prefill_effective_tokens_total`'s hit modes / Δ all its modes (vLLM: Δ `vllm:prefix_cache_hits_total` / Δ `vllm:prefix_cache_queries_total`)";
        MetricsDeviceHitRate = "metrics_device_hit_rate", Neither,
            "Of the prompt tokens, the share the device pool served: Δ `sglang:prefill_effective_tokens_total{mode=\"device_hit\"}` / Δ its sum over every mode, over the window; with `metrics_host_hit_rate`, the hit rate by tier; empty without the series";
        MetricsHostHitRate = "metrics_host_hit_rate", Neither,
            "Of the prompt tokens, the share HiCache's host tier served: Δ `sglang:prefill_effective_tokens_total{mode=\"host_hit\"}` / Δ its sum over every mode, over the window (the log's `#cached-token` counts device and host hits together); empty without the series";
        MetricsLoadBackTokens = "metrics_load_back_tokens", Neither,
            "HiCache: tokens loaded back from the host pool into the device pool in the window, Δ `sglang:load_back_tokens_total{pool=\"kv\"}` (one TP rank per DP rank: every TP rank counts the same tokens); 0 with HiCache on and the counter not exported yet, empty without HiCache";
        MetricsBackupTokens = "metrics_backup_tokens", Neither,
            "HiCache: tokens backed up from the device pool to the host pool in the window (under the default `write_through`, every prefix inserted), Δ `sglang:hicache_backup_tokens_total{pool=\"kv\"}` (one TP rank per DP rank); 0 with HiCache on and the counter not exported yet, empty without HiCache";
        MetricsEvictedTokens = "metrics_evicted_tokens", Neither,
            "Device KV slots the radix cache freed by eviction in the window, whether HiCache kept a host copy or not, Δ `sglang:evicted_tokens_total` (one TP rank per DP rank); 0 where the server exports `sglang:prefill_effective_tokens_total` but no eviction yet, empty otherwise";
        MetricsHostUsageMax = "metrics_host_usage_max", Neither,
            "HiCache: the host pool's fill, max over ~1 s scrapes of `sglang:hicache_host_used_tokens` / `sglang:hicache_host_total_tokens` (summed over DP ranks; 1: full); empty without HiCache";
        Retractions = "retractions", Lower,
            "KV-pool-full retraction events in the window (vLLM: `Preemptions`, requests preempted)";
        TimeToReadyS = "time_to_ready_s", Lower,
            "Launch → ready line and HTTP answer (s)";
        Verdict = "verdict", Neither,
            "What limited the run: `kv_cache_bound`, `retraction_churn`, `cuda_graph_limited`, `queue_with_spare_kv`, `prefix_cache_evicted`, `client_bound`, `compute_bound`, `unknown`";
        VerdictEvidence = "verdict_evidence", Neither,
            "The numbers behind the verdict (and behind each of `verdict_also`)";
        VerdictAlso = "verdict_also", Neither,
            "The other limits the same launch showed, `+`-joined verdict names (`kv_cache_bound+cuda_graph_limited`): lifting only the verdict's would unmask them";
        NotInEffect = "not_in_effect", Neither,
            "Settings asked for that the server did not run with, `; `-separated: key, value asked, value in effect and the evidence (`/server_info`, or a start-up log line such as \"Cuda graph is disabled because ...\"); each is also a warning in `notes`. The whole comparison is in runs/<launch>/effective_args.json";
        EffectiveArgsId = "effective_args_id", Neither,
            "Hash of the server-relevant arguments the server reported in `/server_info` (less ports, host, names, paths, the random seed, and settings SGLang ignores there, e.g. CUDA graph sizes with CUDA graphs off): configurations with equal ids ran the same server in effect, and the table and decision.md say so (empty: no `/server_info`)";
        Notes = "notes", Neither,
            "Warnings that are not failures, `; `-separated (e.g. a GPU not back to its baseline memory)";
        StartedAt = "started_at", Neither,
            "UTC start of this row's work (RFC 3339): its load point's start, or the server launch for a row that never reached its load";
        FinishedAt = "finished_at", Neither,
            "UTC end of this row's work (RFC 3339)";
        QualityVerdict = "quality_verdict", Neither,
            "Output quality against the baseline (`quality:`): `baseline`, `pass`, `fail` (decisive divergences above the baseline's own floor, with confidence: not eligible) or `unchecked` (no usable comparison: not eligible); empty without `quality:`";
        QualityDecisiveShare = "quality_decisive_share", Lower,
            "Share of quality prompts whose greedy output diverges decisively from the baseline's (not a near tie); the baseline's: its own repeat's";
        QualityDivergedShare = "quality_diverged_share", Lower,
            "Share of quality prompts whose output differs from the baseline's at all (near ties included)";
        QualityPrefixAgreement = "quality_prefix_agreement", Higher,
            "Mean share of each output before its first divergence from the baseline's (1: identical)";
        QualityFloorDecisiveShare = "quality_floor_decisive_share", Neither,
            "The floor: decisive share of the baseline against its own repeat (same server, same batch, and its other launches)";
        QualityPValue = "quality_p_value", Neither,
            "Fisher's exact test, one-sided: how likely a decisive share this far above the floor is by chance";
        QualityAccuracy = "quality_accuracy", Higher,
            "With a prompt file that has answers: share of the prompts whose output's answer (`answer_regex`) is right, on the prompts paired with the baseline's";
        QualityEvidence = "quality_evidence", Neither,
            "The quality verdict in words (how many prompts derail, at which tokens, against the floor)";
    ]
}

impl Column {
    /// Every fixed column, in results.csv's order.
    pub fn all() -> impl Iterator<Item = Column> {
        Column::LEADING.iter().chain(Column::TRAILING).copied()
    }

    /// The fixed column of this name; None for any other name (`param_<key>` included).
    pub fn named(name: &str) -> Option<Column> {
        Column::all().find(|c| c.name() == name)
    }

    /// The fixed columns' names closest to `name` (at most 3 edits away), nearest first: the
    /// "did you mean" of a name that is none.
    pub fn nearest(name: &str) -> Vec<Column> {
        let mut near: Vec<(usize, &str, Column)> = Column::all()
            .map(|c| (crate::util::edit_distance(name, c.name()), c.name(), c))
            .filter(|(d, _, _)| *d <= 3)
            .collect();
        near.sort();
        near.into_iter().map(|(_, _, c)| c).collect()
    }
}

impl fmt::Display for Column {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A column a row is read by: one of the list's, or a swept key's `param_<key>`. The spec's
/// objective and SLO columns are resolved to one as the spec is read; [`Col::named`] turns
/// any other results.csv name into one, and an unknown name is no column at all. Written
/// (serde, `Display`) as its results.csv name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Col {
    Listed(Column),
    Param(String),
}

impl Col {
    pub const DURATION_S: Col = Col::Listed(Column::DurationS);
    pub const REQUEST_THROUGHPUT: Col = Col::Listed(Column::RequestThroughput);
    pub const OUTPUT_TOK_S: Col = Col::Listed(Column::OutputTokS);
    pub const TOTAL_TOK_S: Col = Col::Listed(Column::TotalTokS);
    pub const GOODPUT_REQ_S: Col = Col::Listed(Column::GoodputReqS);
    pub const RUNNING_REQ_MEAN: Col = Col::Listed(Column::RunningReqMean);
    pub const RETRACTIONS: Col = Col::Listed(Column::Retractions);
    pub const MAX_TOTAL_NUM_TOKENS: Col = Col::Listed(Column::MaxTotalNumTokens);
    pub const TIME_TO_READY_S: Col = Col::Listed(Column::TimeToReadyS);
    pub const TOKEN_USAGE_MAX: Col = Col::Listed(Column::TokenUsageMax);
    pub const RUNNING_REQ_MAX: Col = Col::Listed(Column::RunningReqMax);
    pub const QUEUE_REQ_MEAN: Col = Col::Listed(Column::QueueReqMean);
    pub const CONCURRENCY: Col = Col::Listed(Column::Concurrency);
    pub const TTFT_MS_P50: Col = Col::Listed(Column::TtftMsP50);
    pub const TTFT_MS_P99: Col = Col::Listed(Column::TtftMsP99);
    pub const TPOT_MS_P50: Col = Col::Listed(Column::TpotMsP50);
    pub const TPOT_MS_P99: Col = Col::Listed(Column::TpotMsP99);
    pub const E2E_MS_P50: Col = Col::Listed(Column::E2eMsP50);
    pub const SERVER_STATS_LINES: Col = Col::Listed(Column::ServerStatsLines);
    pub const SERVER_GEN_TPUT_MEAN: Col = Col::Listed(Column::ServerGenTputMean);
    pub const QUEUE_REQ_MAX: Col = Col::Listed(Column::QueueReqMax);
    pub const TTFT_FIRST_TURN_MS_P50: Col = Col::Listed(Column::TtftFirstTurnMsP50);
    pub const TTFT_LAST_TURN_MS_P50: Col = Col::Listed(Column::TtftLastTurnMsP50);
    pub const CACHE_HIT_RATE: Col = Col::Listed(Column::CacheHitRate);
    pub const PREFIX_REUSABLE_SHARE: Col = Col::Listed(Column::PrefixReusableShare);
    pub const QUALITY_VERDICT: Col = Col::Listed(Column::QualityVerdict);
    pub const QUALITY_DECISIVE_SHARE: Col = Col::Listed(Column::QualityDecisiveShare);
    pub const QUALITY_PREFIX_AGREEMENT: Col = Col::Listed(Column::QualityPrefixAgreement);

    /// The column of this results.csv name: a listed column, or `param_<key>` for any key.
    pub fn named(name: &str) -> Option<Col> {
        if let Some(key) = name.strip_prefix("param_") {
            return (!key.is_empty()).then(|| Col::Param(key.to_string()));
        }
        Column::named(name).map(Col::Listed)
    }
    /// A swept key's column.
    pub fn param(key: &str) -> Col {
        Col::Param(key.to_string())
    }
    /// Its name in results.csv.
    pub fn name(&self) -> String {
        match self {
            Col::Listed(c) => c.name().to_string(),
            Col::Param(k) => format!("param_{k}"),
        }
    }
    /// Which way it improves: a swept key's column has no direction.
    pub fn better(&self) -> Better {
        match self {
            Col::Listed(c) => c.better(),
            Col::Param(_) => Better::Neither,
        }
    }
}

impl From<Column> for Col {
    fn from(c: Column) -> Col {
        Col::Listed(c)
    }
}

impl fmt::Display for Col {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Col::Listed(c) => f.write_str(c.name()),
            Col::Param(k) => write!(f, "param_{k}"),
        }
    }
}

impl Serialize for Col {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A column as written (plan.json's and decision.json's objective): by its name; a name that
/// is no column is an error naming it.
impl<'de> Deserialize<'de> for Col {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Col, D::Error> {
        let name = String::deserialize(d)?;
        Col::named(&name).ok_or_else(|| {
            serde::de::Error::custom(format!("`{name}` is not a results.csv column"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names are unique, each names its own column back, and the constants are the list's.
    #[test]
    fn names_are_unique_and_read_back() {
        let mut names: Vec<&str> = Column::all().map(Column::name).collect();
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n, "duplicate column names");
        for c in Column::all() {
            assert_eq!(Column::named(c.name()), Some(c));
            assert_eq!(Col::named(c.name()), Some(Col::Listed(c)));
            assert!(!c.name().starts_with("param_"), "{c}");
        }
        assert_eq!(Col::TTFT_MS_P99.name(), "ttft_ms_p99");
        assert_eq!(Col::named("ttft_ms_p99x"), None);
        assert_eq!(Col::named("param_"), None);
        assert_eq!(Col::named("param_dtype"), Some(Col::param("dtype")));
        assert_eq!(Col::param("dtype").better(), Better::Neither);
        assert_eq!(Col::OUTPUT_TOK_S.better(), Better::Higher);
        assert_eq!(Col::TTFT_MS_P99.better(), Better::Lower);
    }

    /// A column is written as its name and read back from it; an unknown name is refused.
    #[test]
    fn a_column_is_written_as_its_name() {
        for c in [Col::OUTPUT_TOK_S, Col::param("tp_size")] {
            let json = serde_json::to_string(&c).expect("serializes");
            assert_eq!(json, format!("\"{c}\""));
            assert_eq!(serde_json::from_str::<Col>(&json).expect("reads"), c);
        }
        let e = serde_json::from_str::<Col>("\"output_tokps\"").expect_err("no such column");
        assert!(e.to_string().contains("`output_tokps` is not"), "{e}");
    }

    #[test]
    fn the_nearest_names_come_first() {
        let near: Vec<&str> = Column::nearest("output_tokps")
            .into_iter()
            .map(Column::name)
            .collect();
        assert_eq!(near.first(), Some(&"output_tok_s"), "{near:?}");
        assert!(Column::nearest("zzzzzzzzzzzz").is_empty());
    }
}
