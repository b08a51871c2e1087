//! The serving engines sgtune launches and reads, and the facts that differ between them, in
//! one place: the name a spec uses, the default launch command, the model flag, how each of
//! the spec's common keys becomes the engine's flag, the keys only SGLang has, the ready line,
//! and the prefix-cache flush. `server/`, `observe/` and the spec's checks ask here instead of
//! matching on the engine themselves.
//!
//! The spec's keys are SGLang's names (sgtune started as an SGLang tuner). Under `engine:
//! vllm` a key with a true vLLM equivalent is renamed ([`VLLM_RENAMES`]), a key only SGLang
//! has is a spec error naming it ([`SGLANG_ONLY`]), and any other key is passed through as the
//! vLLM flag of that name (`max_num_seqs: 8` → `--max-num-seqs 8`). Facts from vLLM 0.32.0's
//! source (`vllm/engine/arg_utils.py`, `vllm/envs.py`, `vllm/entrypoints/serve/dev`).

use serde::{Deserialize, Serialize};

use crate::plan::columns::Column;
use crate::plan::flags::{KnownFlags, ParamValue, known};

/// A serving engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    #[default]
    Sglang,
    Vllm,
}

/// Spec key → vLLM argument (both as `snake_case` keys) where the two mean the same thing.
pub const VLLM_RENAMES: &[(&str, &str)] = &[
    ("tp_size", "tensor_parallel_size"),
    ("dp_size", "data_parallel_size"),
    ("pp_size", "pipeline_parallel_size"),
    ("max_running_requests", "max_num_seqs"),
    ("mem_fraction_static", "gpu_memory_utilization"),
    ("context_length", "max_model_len"),
    ("chunked_prefill_size", "max_num_batched_tokens"),
    ("page_size", "block_size"),
    ("random_seed", "seed"),
];

/// SGLang keys vLLM has no equivalent of, each with what to use under `engine: vllm`.
pub const SGLANG_ONLY: &[(&str, &str)] = &[
    (
        "schedule_conservativeness",
        "vLLM has no admission knob; use max_num_seqs or max_num_batched_tokens",
    ),
    (
        "schedule_policy",
        "vLLM's --scheduling-policy (fcfs, priority) is another knob",
    ),
    (
        "cuda_graph_max_bs",
        "vLLM's graph sizes are --cuda-graph-sizes / --max-cudagraph-capture-size",
    ),
    (
        "disable_cuda_graph",
        "vLLM's enforce_eager: true turns graphs off",
    ),
    (
        "max_total_tokens",
        "vLLM sizes the KV pool with gpu_memory_utilization, kv_cache_memory_bytes or num_gpu_blocks_override",
    ),
    (
        "max_prefill_tokens",
        "use max_num_batched_tokens (chunked_prefill_size)",
    ),
    (
        "enable_dp_attention",
        "vLLM has no DP attention flag; data_parallel_size (dp_size) is plain data parallelism",
    ),
    (
        "enable_hierarchical_cache",
        "vLLM offloads KV with kv_offloading_size / a KV connector",
    ),
    ("model_path", "set server.model_path (vLLM's --model)"),
];

/// Knobs the memory pre-flight may bisect under SGLang: memory settings with an order (higher
/// uses more).
pub const SGLANG_MEMORY_KNOBS: &[&str] = &[
    "mem_fraction_static",
    "max_running_requests",
    "cuda_graph_max_bs",
    "chunked_prefill_size",
    "max_total_tokens",
    "max_prefill_tokens",
];

/// Knobs the memory pre-flight may bisect under vLLM: the common names it has an equivalent of
/// and vLLM's own. In vLLM 0.32 `gpu_memory_utilization` (`mem_fraction_static`) sizes the
/// memory on GPU and, on CPU, is the share of the NUMA node's RAM reserved
/// (`v1/worker/cpu_worker.py`); `kv_cache_memory_bytes` sizes the KV cache directly on both,
/// and when set `gpu_memory_utilization` is ignored (`config/cache.py`).
pub const VLLM_MEMORY_KNOBS: &[&str] = &[
    "mem_fraction_static",
    "gpu_memory_utilization",
    "kv_cache_memory_bytes",
    "max_running_requests",
    "max_num_seqs",
    "chunked_prefill_size",
    "max_num_batched_tokens",
    "num_gpu_blocks_override",
];

/// results.csv columns vLLM's server does not report, each with why (a clause that follows
/// "Empty for vLLM"): its rows leave them empty, never zero, and `sgtune columns`
/// (docs/columns.md) states the reason under each. The client-side and `/metrics` columns are
/// filled for both engines, bar SGLang's cache tiers.
pub const VLLM_UNREPORTED: &[(Column, &str)] = &[
    (
        Column::MaxTotalNumTokens,
        " on the V0 engine (to 0.10), whose log gives the pool in blocks, not tokens",
    ),
    (
        Column::MaxRunningRequests,
        " unless `max_num_seqs` (`max_running_requests`) is set: vLLM does not log its default",
    ),
    (
        Column::KvCacheDtype,
        ": its log does not print the KV cache dtype",
    ),
    (
        Column::Retractions,
        " on the V0 engine (to 0.10), whose stats lines carry no preemption count (V1 prints `Preemptions: N` when N > 0)",
    ),
    (
        Column::HicacheHostTokens,
        ": SGLang's hierarchical cache, which vLLM does not have",
    ),
    (
        Column::MetricsDeviceHitRate,
        ": its `/metrics` does not split the prefix cache's hits by tier",
    ),
    (
        Column::MetricsHostHitRate,
        ": its `/metrics` does not split the prefix cache's hits by tier",
    ),
    (
        Column::MetricsLoadBackTokens,
        ": SGLang's hierarchical cache, which vLLM does not have",
    ),
    (
        Column::MetricsBackupTokens,
        ": SGLang's hierarchical cache, which vLLM does not have",
    ),
    (
        Column::MetricsEvictedTokens,
        ": sgtune reads no eviction counter of vLLM's",
    ),
    (
        Column::MetricsHostUsageMax,
        ": SGLang's hierarchical cache, which vLLM does not have",
    ),
    (
        Column::NotInEffect,
        ": its `/server_info` is its whole config as text, not SGLang's `ServerArgs`, so what was in effect is not checked",
    ),
    (
        Column::EffectiveArgsId,
        ": its `/server_info` is its whole config as text, not SGLang's `ServerArgs`, so there is nothing to hash",
    ),
];

impl Engine {
    pub const ALL: [Engine; 2] = [Engine::Sglang, Engine::Vllm];

    /// SGLang, the default: a server summary leaves its engine out then (its serialized form
    /// from before vLLM).
    pub fn is_sglang(&self) -> bool {
        *self == Engine::Sglang
    }

    /// The knobs the memory pre-flight may bisect with this engine (spec names).
    pub fn memory_knobs(self) -> &'static [&'static str] {
        match self {
            Engine::Sglang => SGLANG_MEMORY_KNOBS,
            Engine::Vllm => VLLM_MEMORY_KNOBS,
        }
    }

    /// Why this engine's pre-flight cannot bisect `knob` in a configuration with these resolved
    /// flags and this extra environment, if it cannot: a knob the engine does not have, or one
    /// it ignores there (vLLM ignores `gpu_memory_utilization` once `kv_cache_memory_bytes` or,
    /// on CPU, `VLLM_CPU_KVCACHE_SPACE` sizes the KV cache, and that variable overrides
    /// `kv_cache_memory_bytes`: `platforms/cpu.py`).
    pub fn preflight_refuses(
        self,
        knob: &str,
        resolved: &[(String, ParamValue)],
        env: &[(&str, &str)],
    ) -> Option<String> {
        if !self.memory_knobs().contains(&knob) {
            return Some(format!(
                "`{knob}` is not a memory knob {} has for the pre-flight (one of {})",
                self.label(),
                self.memory_knobs().join(", ")
            ));
        }
        if self != Engine::Vllm {
            return None;
        }
        // The knob under its other name (`gpu_memory_utilization` beside a pre-flighted
        // `mem_fraction_static`): one flag passed twice, and the pre-flight's value would win
        // only by coming last.
        let flag = self.key_name(knob);
        if let Some((other, _)) = resolved
            .iter()
            .find(|(k, _)| k != knob && self.key_name(k) == flag)
        {
            return Some(format!(
                "`{knob}` and `{other}` are one vLLM flag (--{}): this configuration sets it as `{other}`, so the pre-flight's value would be passed beside it; drop `{other}`",
                flag.replace('_', "-")
            ));
        }
        let env_space = env
            .iter()
            .find(|(k, v)| *k == "VLLM_CPU_KVCACHE_SPACE" && !v.is_empty())
            .map(|(_, v)| *v);
        let sets_bytes = resolved.iter().any(|(k, v)| {
            k == "kv_cache_memory_bytes"
                && !matches!(v, ParamValue::Str(s) if s == crate::plan::flags::PREFLIGHT_VALUE)
        });
        match self.key_name(knob) {
            "gpu_memory_utilization" if sets_bytes => Some(format!(
                "vLLM ignores `{knob}` (--gpu-memory-utilization) when kv_cache_memory_bytes sizes the KV cache, as this configuration's flags do: pre-flight kv_cache_memory_bytes instead, or drop it"
            )),
            "gpu_memory_utilization" => env_space.map(|v| format!(
                "vLLM on CPU ignores `{knob}` (--gpu-memory-utilization) when VLLM_CPU_KVCACHE_SPACE ({v} GiB here) sizes the KV cache: pre-flight kv_cache_memory_bytes without that variable instead"
            )),
            "kv_cache_memory_bytes" => env_space.map(|v| format!(
                "vLLM on CPU replaces kv_cache_memory_bytes with VLLM_CPU_KVCACHE_SPACE ({v} GiB here): unset the variable to pre-flight kv_cache_memory_bytes"
            )),
            _ => None,
        }
    }

    /// The results.csv columns this engine's rows leave empty, each with why (a clause that
    /// follows "Empty for <engine>").
    pub fn unreported_columns(self) -> &'static [(Column, &'static str)] {
        match self {
            Engine::Sglang => &[],
            Engine::Vllm => VLLM_UNREPORTED,
        }
    }

    /// The name a spec and results use.
    pub fn as_str(self) -> &'static str {
        match self {
            Engine::Sglang => "sglang",
            Engine::Vllm => "vllm",
        }
    }

    /// The name for people.
    pub fn label(self) -> &'static str {
        match self {
            Engine::Sglang => "SGLang",
            Engine::Vllm => "vLLM",
        }
    }

    /// `server.command` when the spec gives none.
    pub fn default_command(self) -> &'static [&'static str] {
        match self {
            Engine::Sglang => &["python", "-m", "sglang.launch_server"],
            // `vllm serve` is the same server; the module form needs no console script.
            Engine::Vllm => &["python", "-m", "vllm.entrypoints.openai.api_server"],
        }
    }

    /// The flag that names the model.
    pub fn model_flag(self) -> &'static str {
        match self {
            Engine::Sglang => "--model-path",
            Engine::Vllm => "--model",
        }
    }

    /// The substring of the line the server prints when it is ready: SGLang's after its
    /// warmup request, vLLM's uvicorn line once the routes are up.
    pub fn ready_line(self) -> &'static str {
        match self {
            Engine::Sglang => "The server is fired up and ready to roll",
            Engine::Vllm => "Application startup complete",
        }
    }

    /// The POST that empties the prefix cache between load points.
    pub fn flush_path(self) -> &'static str {
        match self {
            Engine::Sglang => "/flush_cache",
            // Registered only with VLLM_SERVER_DEV_MODE=1 (see [`Engine::default_env`]).
            Engine::Vllm => "/reset_prefix_cache",
        }
    }

    /// The line the server logs when the flush took effect.
    pub fn flushed_line(self) -> &'static str {
        match self {
            Engine::Sglang => "Cache flushed successfully",
            Engine::Vllm => "Successfully reset prefix cache",
        }
    }

    /// Whether `/server_info` is SGLang's resolved `ServerArgs` (vLLM's dev-mode route of that
    /// name answers its whole config as text: not comparable key by key).
    pub fn has_server_args_info(self) -> bool {
        self == Engine::Sglang
    }

    /// Environment sgtune sets unless the spec sets it: vLLM's dev mode (for the flush route)
    /// and a 2 s stats interval (the default 10 s leaves a short window with one or two lines).
    pub fn default_env(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Engine::Sglang => &[],
            Engine::Vllm => &[
                ("VLLM_SERVER_DEV_MODE", "1"),
                ("VLLM_LOG_STATS_INTERVAL", "2"),
            ],
        }
    }

    /// Why a spec key cannot be used with this engine, if it cannot.
    pub fn refuses(self, key: &str) -> Option<String> {
        if self != Engine::Vllm {
            return None;
        }
        if key.starts_with(crate::plan::flags::HICACHE_PREFIX) {
            return Some(format!(
                "`{key}` is SGLang's hierarchical cache, which vLLM does not have (vLLM offloads KV with kv_offloading_size / a KV connector)"
            ));
        }
        SGLANG_ONLY
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, instead)| {
                format!("`{key}` is an SGLang flag with no vLLM equivalent: {instead}")
            })
    }

    /// sgtune's built-in list of this engine's flags (`plan::flags::known`), in the engine's
    /// own names.
    pub fn built_in_flags(self) -> KnownFlags {
        KnownFlags::built_in(match self {
            Engine::Sglang => known::SGLANG_BUILT_IN,
            Engine::Vllm => known::VLLM_BUILT_IN,
        })
    }

    /// Whether a spec key is one of this engine's flags in `known` (the engine's own names):
    /// the key itself, or the engine's name for it (`mem_fraction_static` under vLLM is
    /// `gpu_memory_utilization`).
    pub fn knows(self, key: &str, known: &KnownFlags) -> bool {
        known.contains(self.key_name(key))
    }

    /// The spec key nearest to one this engine does not know, if one is near enough: among
    /// the engine's own names in `known` and, under vLLM, the common names it renames.
    pub fn nearest_key<'a>(self, key: &str, known: &'a KnownFlags) -> Option<&'a str> {
        let common = match self {
            Engine::Sglang => &[][..],
            Engine::Vllm => VLLM_RENAMES,
        };
        let renamed = common
            .iter()
            .filter(|(_, v)| known.contains(v))
            .map(|(k, _)| *k);
        known::nearest(key, known.names().chain(renamed))
    }

    /// The engine's own key for a spec key (the key itself when the names agree).
    pub fn key_name(self, key: &str) -> &str {
        match self {
            Engine::Sglang => key,
            Engine::Vllm => VLLM_RENAMES
                .iter()
                .find(|(k, _)| *k == key)
                .map_or(key, |(_, v)| v),
        }
    }

    /// The spec key that this engine key is the equivalent of, when it is one.
    pub fn common_key(self, engine_key: &str) -> Option<&'static str> {
        match self {
            Engine::Sglang => None,
            Engine::Vllm => VLLM_RENAMES
                .iter()
                .find(|(_, v)| *v == engine_key)
                .map(|(k, _)| *k),
        }
    }

    /// The resolved parameters of a run as this engine's own keys and values, in order.
    pub fn map_params(self, params: &[(String, ParamValue)]) -> Vec<(String, ParamValue)> {
        if self == Engine::Sglang {
            return params.to_vec();
        }
        params
            .iter()
            .map(|(k, v)| match (k.as_str(), v) {
                // SGLang's -1 turns chunked prefill off; vLLM says so with a flag of its own.
                ("chunked_prefill_size", ParamValue::Int(n)) if *n < 0 => (
                    "no_enable_chunked_prefill".to_string(),
                    ParamValue::Bool(true),
                ),
                ("kv_cache_dtype", ParamValue::Str(s)) if s == "bf16" => {
                    (k.clone(), ParamValue::Str("bfloat16".into()))
                }
                _ => (self.key_name(k).to_string(), v.clone()),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_keys_become_vllm_flags() {
        let params = vec![
            ("tp_size".to_string(), ParamValue::Int(2)),
            ("max_running_requests".to_string(), ParamValue::Int(8)),
            ("mem_fraction_static".to_string(), ParamValue::Float(0.8)),
            ("kv_cache_dtype".to_string(), ParamValue::Str("bf16".into())),
            ("chunked_prefill_size".to_string(), ParamValue::Int(-1)),
            ("enforce_eager".to_string(), ParamValue::Bool(true)),
        ];
        let m = Engine::Vllm.map_params(&params);
        let keys: Vec<&str> = m.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "tensor_parallel_size",
                "max_num_seqs",
                "gpu_memory_utilization",
                "kv_cache_dtype",
                "no_enable_chunked_prefill",
                "enforce_eager"
            ]
        );
        assert_eq!(m[3].1, ParamValue::Str("bfloat16".into()));
        assert_eq!(Engine::Sglang.map_params(&params), params);
        assert_eq!(
            Engine::Vllm.common_key("max_num_seqs"),
            Some("max_running_requests")
        );
        assert_eq!(Engine::Sglang.common_key("max_num_seqs"), None);
    }

    #[test]
    fn the_preflight_knob_must_be_one_the_engine_honours() {
        let none: [(&str, &str); 0] = [];
        let bytes = vec![(
            "kv_cache_memory_bytes".to_string(),
            ParamValue::Int(1 << 26),
        )];
        let placeholder = vec![(
            "kv_cache_memory_bytes".to_string(),
            ParamValue::Str("preflight".into()),
        )];
        // Each engine's own knobs, and not the other's.
        assert_eq!(
            Engine::Vllm.preflight_refuses("kv_cache_memory_bytes", &[], &none),
            None
        );
        assert_eq!(
            Engine::Vllm.preflight_refuses("mem_fraction_static", &[], &none),
            None
        );
        assert_eq!(
            Engine::Sglang.preflight_refuses("mem_fraction_static", &bytes, &none),
            None
        );
        for (e, k) in [
            (Engine::Vllm, "cuda_graph_max_bs"),
            (Engine::Vllm, "max_total_tokens"),
            (Engine::Sglang, "kv_cache_memory_bytes"),
            (Engine::Sglang, "gpu_memory_utilization"),
        ] {
            let why = e.preflight_refuses(k, &[], &none).unwrap_or_default();
            assert!(
                why.contains(&format!("`{k}` is not a memory knob {}", e.label())),
                "{why}"
            );
        }
        // vLLM ignores gpu_memory_utilization once the KV size is given in bytes or by the
        // CPU variable, and the variable overrides kv_cache_memory_bytes.
        for knob in ["mem_fraction_static", "gpu_memory_utilization"] {
            let why = Engine::Vllm
                .preflight_refuses(knob, &bytes, &none)
                .unwrap_or_default();
            assert!(
                why.contains("vLLM ignores") && why.contains("pre-flight kv_cache_memory_bytes"),
                "{why}"
            );
            let why = Engine::Vllm
                .preflight_refuses(knob, &[], &[("VLLM_CPU_KVCACHE_SPACE", "4")])
                .unwrap_or_default();
            assert!(why.contains("VLLM_CPU_KVCACHE_SPACE (4 GiB here)"), "{why}");
        }
        assert_eq!(
            Engine::Vllm.preflight_refuses("mem_fraction_static", &placeholder, &none),
            None
        );
        let why = Engine::Vllm
            .preflight_refuses(
                "kv_cache_memory_bytes",
                &placeholder,
                &[("VLLM_CPU_KVCACHE_SPACE", "4")],
            )
            .unwrap_or_default();
        assert!(why.contains("unset the variable"), "{why}");
        assert_eq!(
            Engine::Vllm.preflight_refuses(
                "kv_cache_memory_bytes",
                &[],
                &[("VLLM_CPU_KVCACHE_SPACE", "")]
            ),
            None
        );
        // The knob under its other name is one flag twice: refused, whichever name is the knob.
        for (knob, other) in [
            ("mem_fraction_static", "gpu_memory_utilization"),
            ("gpu_memory_utilization", "mem_fraction_static"),
            ("max_running_requests", "max_num_seqs"),
        ] {
            let both = vec![
                (knob.to_string(), ParamValue::Str("preflight".into())),
                (other.to_string(), ParamValue::Float(0.5)),
            ];
            let why = Engine::Vllm
                .preflight_refuses(knob, &both, &none)
                .unwrap_or_default();
            assert!(
                why.contains(&format!("`{knob}` and `{other}` are one vLLM flag"))
                    && why.contains(&format!("drop `{other}`")),
                "{why}"
            );
        }
        // The knob itself in the configuration (its placeholder) is not a second name.
        let own = vec![(
            "max_num_seqs".to_string(),
            ParamValue::Str("preflight".into()),
        )];
        assert_eq!(
            Engine::Vllm.preflight_refuses("max_num_seqs", &own, &none),
            None
        );
    }

    #[test]
    fn sglang_only_keys_are_refused_under_vllm() {
        assert!(Engine::Vllm.refuses("hicache_size").is_some());
        let why = Engine::Vllm
            .refuses("schedule_conservativeness")
            .unwrap_or_default();
        assert!(why.contains("`schedule_conservativeness`"), "{why}");
        assert_eq!(Engine::Vllm.refuses("max_num_seqs"), None);
        assert_eq!(Engine::Sglang.refuses("hicache_size"), None);
    }
}
