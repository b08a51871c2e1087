//! Effective server arguments: what a configuration asked for against what the server says it
//! runs with. The evidence is `/server_info` (the resolved `ServerArgs`, SGLang 0.5.x) and the
//! start-up log's override lines (for example "Cuda graph is disabled because of using torch
//! native attention backend", which `/server_info` does not show: it keeps
//! `disable_cuda_graph: false`). Pure: the caller reads both and writes what comes out.
//!
//! Two things come out of [`check`]:
//! - the settings that did not take effect ([`Finding`]: key, value asked, value in effect,
//!   and the evidence), each a warning on the run's rows;
//! - an id of the server-relevant effective arguments (ports, host, names, paths, secrets,
//!   the random seed and SGLang's run-time state left out, and so are settings SGLang ignores
//!   in that configuration), so that two configurations that ran the same server can be told
//!   apart from two that did not ([`same_in_effect`]).

use crate::plan::flags::{self, ParamValue};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// One setting that did not take effect (read back from effective_args.json by
/// `record::effective::read`, so the decision takes the key from here, not from prose).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// The spec key, as written (`cuda_graph_max_bs_decode`).
    pub key: String,
    /// The value asked for, as on the command line.
    pub asked: String,
    /// What the server runs with instead.
    pub in_effect: String,
    /// Where that comes from: `/server_info`, or a start-up log line.
    pub evidence: String,
}

impl Finding {
    /// One line for a note, a table or decision.md: key, asked, in effect, evidence. Never
    /// contains `; ` (the notes column's separator).
    pub fn text(&self) -> String {
        format!(
            "`{}` asked {}, in effect {} ({})",
            self.key, self.asked, self.in_effect, self.evidence
        )
        .replace("; ", ", ")
    }
}

/// Everything the check found, for one server launch.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Effective {
    /// Hash of the server-relevant effective arguments (12 hex digits); None without
    /// `/server_info`.
    pub id: Option<String>,
    /// Settings that did not take effect.
    pub not_in_effect: Vec<Finding>,
    /// Start-up log lines where SGLang says it changed a setting on its own.
    pub override_lines: Vec<String>,
    /// Asked keys `/server_info` has no field for (an alias, a flag of another version): not
    /// checked against it.
    pub unchecked: Vec<String>,
    /// The server-relevant effective arguments the id is the hash of.
    pub args: BTreeMap<String, Value>,
}

/// What a row keeps of it: the id and the settings not in effect.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EffectiveArgs {
    pub id: Option<String>,
    pub not_in_effect: Vec<Finding>,
}

impl Effective {
    pub fn for_row(&self) -> EffectiveArgs {
        EffectiveArgs {
            id: self.id.clone(),
            not_in_effect: self.not_in_effect.clone(),
        }
    }
}

/// `/server_info`'s key of the KV pool SGLang made, in tokens (results.csv's
/// `max_total_num_tokens` took its name, and the start-up log's).
pub const SERVER_INFO_POOL_TOKENS: &str = "max_total_num_tokens";

/// `/server_info` keys that are run-time state or derived sizes, not arguments.
const RUNTIME_KEYS: &[&str] = &[
    "internal_states",
    "startup_time",
    "status",
    "launch_command",
    "max_req_input_len",
    SERVER_INFO_POOL_TOKENS,
    "effective_max_running_requests_per_dp",
    "hicache_object_layout",
    "step_time_dict",
    "last_gen_throughput",
    "kv_events",
    "frontend",
];

/// Whether a `/server_info` key says where or under which name the server runs, rather than
/// how: ports, hosts, addresses, names, paths of logs and dumps, secrets.
fn is_identity(key: &str) -> bool {
    let words: Vec<&str> = key.split('_').collect();
    let has = |w: &str| words.contains(&w);
    let last = words.last().copied().unwrap_or("");
    has("port")
        || has("ports")
        || matches!(
            last,
            "host"
                | "addr"
                | "ip"
                | "url"
                | "urls"
                | "endpoint"
                | "endpoints"
                | "name"
                | "dir"
                | "folder"
                | "target"
        )
        || key.contains("api_key")
        || key.starts_with("watermark_key")
        || key.starts_with("ssl_")
        || key.starts_with("log_")
        || key == "random_seed"
}

/// What SGLang said in its start-up log about changing settings on its own.
#[derive(Debug, Default)]
struct LogOverrides {
    /// The line that says CUDA graphs are off, if any.
    cuda_graph_off: Option<String>,
    lines: Vec<String>,
}

/// Phrases SGLang 0.5.x uses when it changes a setting on its own (its `logger.warning`s in
/// `srt/arg_groups/` and the KV configurator), lower case.
const OVERRIDE_PHRASES: &[&str] = &[
    "is disabled because",
    "fall back to",
    "fallback to",
    "falling back to",
    "switching to",
    "changing ",
    "setting ",
    "overridden",
    "overriding",
    "use the profiled value instead",
    "automatically set",
    " resolves --",
    "will be ignored",
    "is ignored",
];

/// The message of a log line, without its `[timestamp rank]` prefix.
fn message(line: &str) -> &str {
    let t = line.trim();
    match (t.starts_with('['), t.find("] ")) {
        (true, Some(i)) => &t[i + 2..],
        _ => t,
    }
}

fn read_log(lines: &[&str]) -> LogOverrides {
    let mut o = LogOverrides::default();
    for line in lines {
        let m = message(line);
        let lower = m.to_ascii_lowercase();
        if lower.contains("the server is fired up") {
            break;
        }
        if !line.trim_start().starts_with('[') || m.starts_with("server_args=") {
            continue; // tracebacks, Python warnings, progress bars, the arguments dump
        }
        if lower.starts_with("cuda graph is disabled") && o.cuda_graph_off.is_none() {
            o.cuda_graph_off = Some(m.to_string());
        }
        if OVERRIDE_PHRASES.iter().any(|p| lower.contains(p)) && !o.lines.iter().any(|l| l == m) {
            o.lines.push(m.to_string());
        }
    }
    o
}

/// Keys of the CUDA graph family, which mean nothing once CUDA graphs are off.
fn is_cuda_graph_key(key: &str) -> bool {
    key.contains("cuda_graph") || key == "enable_cudagraph_gc"
}

/// A CUDA graph setting that asks for no graph: in effect when graphs are off.
fn asks_no_cuda_graph(key: &str, value: &ParamValue) -> bool {
    match value {
        ParamValue::Bool(true) => key.starts_with("disable_"),
        ParamValue::Bool(false) => !key.starts_with("disable_"),
        ParamValue::Str(s) => s == "disabled",
        _ => false,
    }
}

/// Whether `/server_info` says both phases' CUDA graphs are off (0.5.23's `cuda_graph_config`).
fn info_says_cuda_graph_off(info: &serde_json::Map<String, Value>) -> bool {
    let backend = |phase: &str| {
        info.get("cuda_graph_config")
            .and_then(|c| c.get(phase))
            .and_then(|p| p.get("backend"))
            .and_then(Value::as_str)
    };
    backend("decode") == Some("disabled") && backend("prefill") == Some("disabled")
}

/// The per-phase CUDA graph flags 0.5.23 folds into `cuda_graph_config` (whose resolved value
/// is what runs: `/server_info` keeps the flag's own field as asked even when the resolution
/// changed it, e.g. `cuda_graph_max_bs_decode: 8` beside a decode `max_bs` of 32 on CPU).
fn folded_cuda_graph_field(key: &str) -> Option<(&'static str, &'static str)> {
    Some(match key {
        "cuda_graph_max_bs_decode" => ("decode", "max_bs"),
        "cuda_graph_max_bs_prefill" => ("prefill", "max_bs"),
        "cuda_graph_backend_decode" => ("decode", "backend"),
        "cuda_graph_backend_prefill" => ("prefill", "backend"),
        "cuda_graph_bs_decode" => ("decode", "bs"),
        "cuda_graph_bs_prefill" => ("prefill", "bs"),
        "cuda_graph_max_seq_len_prefill" => ("prefill", "max_seq_len"),
        _ => return None,
    })
}

/// A human-readable number as SGLang takes it (`25.6k`, `1M`, `1Mi`).
fn human_number(s: &str) -> Option<f64> {
    let s = s.trim();
    let (digits, mult) = [
        ("Ki", 1024.0),
        ("Mi", 1024.0 * 1024.0),
        ("Gi", 1024.0 * 1024.0 * 1024.0),
        ("k", 1e3),
        ("K", 1e3),
        ("M", 1e6),
        ("G", 1e9),
    ]
    .iter()
    .find_map(|(suffix, m)| s.strip_suffix(suffix).map(|d| (d, *m)))
    .unwrap_or((s, 1.0));
    digits
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
        .map(|x| x * mult)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// Spellings SGLang treats as one (dtype names).
fn same_word(a: &str, b: &str) -> bool {
    const ALIASES: &[&[&str]] = &[
        &["bf16", "bfloat16"],
        &["fp16", "float16", "half"],
        &["fp32", "float32", "float"],
    ];
    a.eq_ignore_ascii_case(b)
        || ALIASES.iter().any(|group| {
            group.iter().any(|x| x.eq_ignore_ascii_case(a))
                && group.iter().any(|x| x.eq_ignore_ascii_case(b))
        })
}

/// Whether the server's value is the one asked: Some(true/false), or None when the two are
/// not comparable (another representation: then nothing is claimed).
fn same(asked: &ParamValue, server: &Value) -> Option<bool> {
    match (asked, server) {
        (_, Value::Null) => Some(matches!(asked, ParamValue::Null | ParamValue::Bool(false))),
        (ParamValue::Bool(a), Value::Bool(b)) => Some(a == b),
        (ParamValue::Int(_) | ParamValue::Float(_), Value::Number(n)) => {
            Some(close(asked.as_f64()?, n.as_f64()?))
        }
        (ParamValue::Str(a), Value::String(b)) => Some(
            same_word(a, b)
                || matches!((human_number(a), human_number(b)), (Some(x), Some(y)) if close(x, y)),
        ),
        (ParamValue::Str(a), Value::Number(n)) => Some(close(human_number(a)?, n.as_f64()?)),
        (ParamValue::Int(_) | ParamValue::Float(_), Value::String(b)) => {
            Some(close(asked.as_f64()?, human_number(b)?))
        }
        (ParamValue::List(items), Value::Array(values)) => {
            if items.len() != values.len() {
                return Some(false);
            }
            let mut all = true;
            for (a, v) in items.iter().zip(values) {
                all &= same(a, v)?;
            }
            Some(all)
        }
        // A scalar for an argparse `nargs` list: `cuda_graph_bs: 8`.
        (scalar, Value::Array(values)) if values.len() == 1 => same(scalar, &values[0]),
        _ => None,
    }
}

/// A server value as a finding shows it.
fn shown(v: &Value) -> String {
    match v {
        Value::Null => "unset (null)".to_string(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The `/server_info` field a spec key is checked against: the key, or the one field it is a
/// unique prefix of (argparse takes unique prefixes: `tp` → `tp_size`).
fn field_for<'a>(key: &str, info: &'a serde_json::Map<String, Value>) -> Option<&'a str> {
    if let Some((k, _)) = info.get_key_value(key) {
        return Some(k.as_str());
    }
    let mut prefixed = info.keys().filter(|k| k.starts_with(key));
    match (prefixed.next(), prefixed.next()) {
        (Some(only), None) => Some(only.as_str()),
        _ => None,
    }
}

/// Whether a log line names this key (`key_name` or `--key-name`, as a whole word).
fn names_key(line: &str, key: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let dashed = format!("--{}", key.replace('_', "-"));
    [key, dashed.as_str()].iter().any(|needle| {
        line.match_indices(needle).any(|(i, _)| {
            let before = line[..i].chars().next_back();
            let after = line[i + needle.len()..].chars().next();
            let bounded_before = needle.starts_with("--") || !before.is_some_and(word);
            bounded_before && !after.is_some_and(word)
        })
    })
}

/// Compare one configuration's request with what the server runs. `asked`: the settings as
/// the command line asks for them ([`flags::requested`] of the run's resolved settings);
/// `info`: `/server_info`'s JSON; `log`: the server's log lines up to the ready line.
pub fn check(asked: &[(String, ParamValue)], info: Option<&Value>, log: &[&str]) -> Effective {
    let empty = serde_json::Map::new();
    let info_map = info.and_then(Value::as_object);
    let map = info_map.unwrap_or(&empty);
    let overrides = read_log(log);
    let cuda_off = overrides.cuda_graph_off.clone().or_else(|| {
        info_says_cuda_graph_off(map)
            .then(|| "/server_info: cuda_graph_config has both phases disabled".to_string())
    });
    let hicache_on = map.get(flags::ENABLE_HICACHE).and_then(Value::as_bool);
    let hicache_size = map
        .get(flags::HICACHE_SIZE)
        .and_then(Value::as_f64)
        .unwrap_or(0.0);
    let dp_attention = asked
        .iter()
        .any(|(k, v)| k == "enable_dp_attention" && *v == ParamValue::Bool(true));
    let mut out = Effective {
        override_lines: overrides.lines.clone(),
        ..Default::default()
    };
    for (key, value) in asked {
        if *value == ParamValue::Null
            || matches!(value, ParamValue::Str(s) if s == flags::PREFLIGHT_VALUE)
        {
            continue;
        }
        let mut finding = |in_effect: String, evidence: String| {
            out.not_in_effect.push(Finding {
                key: key.clone(),
                asked: value.to_string(),
                in_effect,
                evidence,
            });
        };
        if is_cuda_graph_key(key) {
            if let Some(why) = &cuda_off {
                if !asks_no_cuda_graph(key, value) {
                    finding("no CUDA graph".into(), log_evidence(why));
                }
                continue;
            }
        }
        if let Some((phase, part)) = folded_cuda_graph_field(key) {
            let resolved = map
                .get("cuda_graph_config")
                .and_then(|c| c.get(phase))
                .and_then(|p| p.get(part));
            if let Some(v) = resolved {
                // The resolved config is what runs, whatever the flag's own field says.
                if same(value, v) == Some(false) {
                    finding(
                        shown(v),
                        format!("/server_info cuda_graph_config.{phase}.{part}"),
                    );
                }
                continue;
            }
        }
        if flags::is_hicache_key(key) && info_map.is_some() && hicache_on == Some(false) {
            finding(
                "ignored: the hierarchical cache is off".into(),
                "/server_info: enable_hierarchical_cache false".into(),
            );
            continue;
        }
        if key == flags::HICACHE_RATIO && hicache_on == Some(true) && hicache_size > 0.0 {
            finding(
                format!("ignored: hicache_size {hicache_size} GB sizes the host pool"),
                "/server_info: hicache_size overrides --hicache-ratio".into(),
            );
            continue;
        }
        // `--dp-size N --enable-dp-attention` is `attn_dp_size N, dp_size 1` in 0.5.23.
        let field = if key == "dp_size" && dp_attention && map.contains_key("attn_dp_size") {
            Some("attn_dp_size")
        } else {
            field_for(key, map)
        };
        let Some(field) = field.filter(|_| info_map.is_some()) else {
            if info_map.is_some() {
                out.unchecked.push(key.clone());
            }
            // No field to check against: only an override line naming the key tells.
            if let Some(line) = overrides.lines.iter().find(|l| names_key(l, key)) {
                finding("see the log line".into(), log_evidence(line));
            }
            continue;
        };
        let server = map.get(field).unwrap_or(&Value::Null);
        if same(value, server) == Some(false) {
            let named = if field == key {
                String::new()
            } else {
                format!(" {field}")
            };
            let line = overrides
                .lines
                .iter()
                .find(|l| names_key(l, key) || names_key(l, field) || l.contains(&shown(server)));
            let evidence = match line {
                Some(l) => format!("/server_info{named}, {}", log_evidence(l)),
                None => format!("/server_info{named}"),
            };
            finding(shown(server), evidence);
            continue;
        }
        // The pool SGLang really made: a max_total_tokens above the profiled capacity is
        // capped ("Use the profiled value instead"), and the pool is whole pages.
        if key == "max_total_tokens" {
            let page = map
                .get("page_size")
                .and_then(Value::as_f64)
                .unwrap_or(1.0)
                .max(1.0);
            let per_dp = map
                .get("attn_dp_size")
                .and_then(Value::as_f64)
                .is_some_and(|d| d > 1.0);
            if let (Some(want), Some(got), false) = (
                value.as_f64(),
                map.get(SERVER_INFO_POOL_TOKENS).and_then(Value::as_f64),
                per_dp,
            ) {
                if got + page <= want {
                    let line = overrides.lines.iter().find(|l| names_key(l, key));
                    finding(
                        format!("{got} tokens"),
                        match line {
                            Some(l) => {
                                format!("/server_info max_total_num_tokens, {}", log_evidence(l))
                            }
                            None => "/server_info max_total_num_tokens".into(),
                        },
                    );
                }
            }
        }
    }
    if let Some(map) = info_map {
        out.args = server_relevant(map, asked, cuda_off.is_some());
        out.id = Some(id_of(&out.args));
    }
    out
}

fn log_evidence(line: &str) -> String {
    let short: String = line.chars().take(200).collect();
    if short.len() < line.len() {
        format!("start-up log: \"{short}…\"")
    } else {
        format!("start-up log: \"{short}\"")
    }
}

/// The arguments that make the server what it is: `/server_info` less run-time state,
/// identity (ports, host, names, paths, secrets) and the random seed unless asked, and less
/// what SGLang ignores in this configuration (the `hicache_*` knobs with the hierarchical
/// cache off, `hicache_ratio` when `hicache_size` sizes the pool, the CUDA graph settings when
/// graphs are off).
pub fn server_relevant(
    info: &serde_json::Map<String, Value>,
    asked: &[(String, ParamValue)],
    cuda_graph_off: bool,
) -> BTreeMap<String, Value> {
    let asked_key = |k: &str| asked.iter().any(|(a, _)| a == k);
    let hicache_on = info
        .get(flags::ENABLE_HICACHE)
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let sized = info
        .get(flags::HICACHE_SIZE)
        .and_then(Value::as_f64)
        .is_some_and(|s| s > 0.0);
    let mut out = BTreeMap::new();
    for (k, v) in info {
        let drop = RUNTIME_KEYS.contains(&k.as_str())
            || k.starts_with('_')
            || (is_identity(k) && !(k == "random_seed" && asked_key(k)))
            || (flags::is_hicache_key(k) && !hicache_on)
            || (k == flags::HICACHE_RATIO && sized)
            || (k == "hicache_host_memory_fraction" && sized)
            || (is_cuda_graph_key(k) && cuda_graph_off);
        if !drop {
            out.insert(k.clone(), canonical(v));
        }
    }
    if cuda_graph_off {
        out.insert("cuda_graph".into(), Value::String("off".into()));
    }
    out
}

/// The same value with every object's keys sorted (whatever serde_json's map keeps).
fn canonical(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let sorted: BTreeMap<&String, Value> =
                m.iter().map(|(k, v)| (k, canonical(v))).collect();
            Value::Object(sorted.into_iter().map(|(k, v)| (k.clone(), v)).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// sha256 of the arguments' canonical JSON, first 12 hex digits.
pub fn id_of(args: &BTreeMap<String, Value>) -> String {
    let mut text = String::from("{");
    for (i, (k, v)) in args.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        text.push_str(&Value::String(k.clone()).to_string());
        text.push(':');
        text.push_str(&canonical(v).to_string());
    }
    text.push('}');
    let digest = Sha256::digest(text.as_bytes());
    digest.iter().take(6).map(|b| format!("{b:02x}")).collect()
}

/// Configurations that ran the same server in effect: from `(configuration, effective id)`
/// pairs (one per row, in any number), the groups of two or more configurations that share an
/// id, each in first-appearance order, groups in the order of their first member. Rows
/// without an id say nothing.
pub fn same_in_effect<'a>(
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Vec<(String, Vec<String>)> {
    let mut by_id: Vec<(String, Vec<String>)> = Vec::new();
    for (name, id) in pairs {
        if id.is_empty() || name.is_empty() {
            continue;
        }
        match by_id.iter_mut().find(|(i, _)| i == id) {
            Some((_, names)) => {
                if !names.iter().any(|n| n == name) {
                    names.push(name.to_string());
                }
            }
            None => by_id.push((id.to_string(), vec![name.to_string()])),
        }
    }
    by_id.retain(|(_, names)| names.len() > 1);
    by_id
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(k: &str, v: ParamValue) -> (String, ParamValue) {
        (k.to_string(), v)
    }

    /// A /server_info as real SGLang 0.5.23 on CPU answers it (the fields that matter here,
    /// from tests/fixtures/results/cpu-demo), with the port and seed of one launch.
    fn info(port: u64, seed: u64) -> Value {
        json!({
            "model_path": "/models/tiny", "served_model_name": "tiny", "host": "127.0.0.1",
            "port": port, "random_seed": seed, "nccl_port": null, "device": "cpu",
            "attention_backend": "torch_native", "mem_fraction_static": 0.716,
            "max_total_tokens": 4096, "max_total_num_tokens": 4096, "page_size": 1,
            "dtype": "bfloat16", "kv_cache_dtype": "auto", "tp_size": 1, "dp_size": 1,
            "disable_cuda_graph": false, "cuda_graph_max_bs_decode": null,
            "cuda_graph_config": {"decode": {"backend": "disabled", "max_bs": 32},
                                  "prefill": {"backend": "disabled", "max_bs": 4096}},
            "enable_hierarchical_cache": false, "hicache_ratio": 2.0, "hicache_size": 0,
            "hicache_write_policy": "write_through", "disable_overlap_schedule": true,
            "sleep_on_idle": true, "enable_metrics": true, "log_level": "info",
            "launch_command": format!("--port {port}"), "startup_time": {"total": 30.1},
            "internal_states": [{"last_gen_throughput": 12.5}], "version": "0.5.23",
            "api_key": null, "status": "ready"
        })
    }

    const CUDA_OFF: &str = "[2026-11-30 15:54:32] Cuda graph is disabled because of using torch native attention backend";

    fn with(mut v: Value, key: &str, value: Value) -> Value {
        if let Some(m) = v.as_object_mut() {
            m.insert(key.to_string(), value);
        }
        v
    }

    #[test]
    fn a_setting_the_server_runs_otherwise_is_a_finding_naming_key_asked_and_in_effect() {
        // 0.5.23 on a CPU without AMX: intel_amx falls back to torch_native.
        let asked = [p("attention_backend", ParamValue::Str("intel_amx".into()))];
        let log = [
            "[2026-12-01 10:00:01] The current platform does not support Intel AMX, will fallback to torch_native backend.",
        ];
        let e = check(&asked, Some(&info(30001, 7)), &log);
        assert_eq!(e.not_in_effect.len(), 1, "{e:?}");
        let f = &e.not_in_effect[0];
        assert_eq!(
            (f.key.as_str(), f.asked.as_str(), f.in_effect.as_str()),
            ("attention_backend", "intel_amx", "torch_native")
        );
        assert!(
            f.evidence
                .starts_with("/server_info, start-up log: \"The current platform")
        );
        assert_eq!(
            f.text(),
            "`attention_backend` asked intel_amx, in effect torch_native (/server_info, start-up log: \"The current platform does not support Intel AMX, will fallback to torch_native backend.\")"
        );
    }

    #[test]
    fn settings_that_took_effect_give_nothing() {
        let asked = [
            p("max_total_tokens", ParamValue::Int(4096)),
            p("attention_backend", ParamValue::Str("torch_native".into())),
            p("dtype", ParamValue::Str("bf16".into())),
            p("device", ParamValue::Str("cpu".into())),
            p("served_model_name", ParamValue::Str("tiny".into())),
            p("disable_overlap_schedule", ParamValue::Bool(true)),
            p("enable_hierarchical_cache", ParamValue::Bool(false)),
            p("enable_metrics", ParamValue::Bool(true)),
            p("mem_fraction", ParamValue::Str("0.716".into())), // a unique prefix, a string
            p("tp", ParamValue::Int(1)),
            p("no_such_flag_here", ParamValue::Int(1)),
        ];
        let e = check(&asked, Some(&info(30001, 7)), &[CUDA_OFF]);
        assert!(e.not_in_effect.is_empty(), "{:?}", e.not_in_effect);
        assert_eq!(e.unchecked, ["no_such_flag_here"]);
    }

    #[test]
    fn cuda_graph_settings_are_not_in_effect_when_the_log_says_graphs_are_off() {
        let asked = [
            p("cuda_graph_max_bs_decode", ParamValue::Int(8)),
            p("disable_cuda_graph", ParamValue::Bool(true)), // asks for what is so
        ];
        let server = with(info(30001, 7), "cuda_graph_max_bs_decode", json!(8));
        let e = check(&asked, Some(&server), &[CUDA_OFF]);
        assert_eq!(e.not_in_effect.len(), 1, "{e:?}");
        assert_eq!(
            e.not_in_effect[0].text(),
            "`cuda_graph_max_bs_decode` asked 8, in effect no CUDA graph (start-up log: \"Cuda graph is disabled because of using torch native attention backend\")"
        );
        assert_eq!(e.override_lines.len(), 1);
        // Without the log line, /server_info's cuda_graph_config says the same.
        let e = check(&asked, Some(&server), &[]);
        assert_eq!(e.not_in_effect[0].in_effect, "no CUDA graph");
        assert!(e.not_in_effect[0].evidence.contains("cuda_graph_config"));
    }

    #[test]
    fn a_folded_cuda_graph_flag_is_checked_against_the_resolved_config() {
        // Real 0.5.23 on CPU with `--attention-backend intel_amx --cuda-graph-max-bs-decode 8`:
        // no "Cuda graph is disabled" line, the field kept as asked, the decode max_bs 32.
        let server = with(
            with(info(1, 1), "cuda_graph_max_bs_decode", json!(8)),
            "cuda_graph_config",
            json!({"decode": {"backend": "full", "max_bs": 32}, "prefill": {"backend": "disabled"}}),
        );
        let asked = [p("cuda_graph_max_bs_decode", ParamValue::Int(8))];
        let e = check(&asked, Some(&server), &[]);
        assert_eq!(e.not_in_effect.len(), 1, "{e:?}");
        assert_eq!(e.not_in_effect[0].in_effect, "32");
        assert_eq!(
            e.not_in_effect[0].evidence,
            "/server_info cuda_graph_config.decode.max_bs"
        );
        let asked = [p("cuda_graph_max_bs_decode", ParamValue::Int(32))];
        assert!(check(&asked, Some(&server), &[]).not_in_effect.is_empty());
    }

    #[test]
    fn hicache_settings_are_checked_as_sglang_reads_them() {
        // Asked on (the implied flag), the server runs without it: both say so.
        let asked = flags::requested(&[p("hicache_ratio", ParamValue::Int(4))]);
        let e = check(&asked, Some(&info(1, 1)), &[]);
        let keys: Vec<&str> = e.not_in_effect.iter().map(|f| f.key.as_str()).collect();
        assert_eq!(
            keys,
            ["enable_hierarchical_cache", "hicache_ratio"],
            "{e:?}"
        );
        assert_eq!(
            e.not_in_effect[1].in_effect,
            "ignored: the hierarchical cache is off"
        );
        // Both sizes set: SGLang takes the size, and the ratio is said to be ignored.
        let asked = flags::requested(&[
            p("hicache_ratio", ParamValue::Int(4)),
            p("hicache_size", ParamValue::Int(8)),
        ]);
        let on = with(
            with(
                with(info(1, 1), "enable_hierarchical_cache", json!(true)),
                "hicache_size",
                json!(8),
            ),
            "hicache_ratio",
            json!(4.0),
        );
        let e = check(&asked, Some(&on), &[]);
        assert_eq!(e.not_in_effect.len(), 1, "{e:?}");
        assert_eq!(e.not_in_effect[0].key, "hicache_ratio");
        assert!(e.not_in_effect[0].in_effect.contains("hicache_size 8 GB"));
    }

    #[test]
    fn a_capped_kv_pool_is_a_finding() {
        let asked = [p("max_total_tokens", ParamValue::Int(1_000_000))];
        let server = with(info(1, 1), "max_total_tokens", json!(1_000_000));
        let log = [
            "[2026-12-01 10:00:09] max_total_tokens=1000000 is larger than the profiled value 4096. Use the profiled value instead.",
        ];
        let e = check(&asked, Some(&server), &log);
        assert_eq!(e.not_in_effect.len(), 1, "{e:?}");
        assert_eq!(e.not_in_effect[0].in_effect, "4096 tokens");
        assert!(
            e.not_in_effect[0]
                .evidence
                .contains("Use the profiled value instead")
        );
    }

    #[test]
    fn dp_attention_is_checked_against_attn_dp_size() {
        let asked = [
            p("dp_size", ParamValue::Int(2)),
            p("enable_dp_attention", ParamValue::Bool(true)),
        ];
        let server = with(
            with(
                with(info(1, 1), "dp_size", json!(1)),
                "attn_dp_size",
                json!(2),
            ),
            "enable_dp_attention",
            json!(true),
        );
        assert!(check(&asked, Some(&server), &[]).not_in_effect.is_empty());
    }

    #[test]
    fn values_are_compared_by_meaning_not_spelling() {
        assert_eq!(same(&ParamValue::Int(2), &json!(2.0)), Some(true));
        assert_eq!(
            same(&ParamValue::Str("25.6k".into()), &json!(25600)),
            Some(true)
        );
        assert_eq!(
            same(&ParamValue::Str("bf16".into()), &json!("bfloat16")),
            Some(true)
        );
        assert_eq!(
            same(
                &ParamValue::List(vec![ParamValue::Int(1), ParamValue::Int(8)]),
                &json!([1, 8])
            ),
            Some(true)
        );
        assert_eq!(same(&ParamValue::Int(8), &json!(null)), Some(false));
        assert_eq!(same(&ParamValue::Bool(false), &json!(null)), Some(true));
        assert_eq!(same(&ParamValue::Bool(true), &json!("x")), None);
        assert_eq!(
            same(&ParamValue::Str("{\"a\":1}".into()), &json!({"a": 1})),
            None
        );
    }

    #[test]
    fn no_server_info_gives_no_id_and_only_log_findings() {
        let asked = [p("page_size", ParamValue::Int(16))];
        let log = [
            "[2026-12-01 10:00:01] FA4 backend only supports page size 128 for non-MLA model architectures, changing page_size from 16 to 128.",
        ];
        let e = check(&asked, None, &log);
        assert_eq!(e.id, None);
        assert_eq!(e.not_in_effect.len(), 1);
        assert_eq!(e.not_in_effect[0].in_effect, "see the log line");
        assert!(e.unchecked.is_empty());
    }

    #[test]
    fn the_id_ignores_ports_seeds_names_and_what_sglang_ignores() {
        let a = check(&[], Some(&info(30001, 1)), &[CUDA_OFF]);
        let b = check(
            &[],
            Some(&with(
                with(
                    with(info(30002, 2), "served_model_name", json!("other")),
                    "cuda_graph_max_bs_decode",
                    json!(16),
                ),
                "hicache_ratio",
                json!(4.0),
            )),
            &[CUDA_OFF],
        );
        assert!(a.id.is_some());
        assert_eq!(a.id, b.id, "{:?}", a.args);
        assert!(!a.args.contains_key("port") && !a.args.contains_key("launch_command"));
        // A setting that matters does change it.
        let c = check(
            &[],
            Some(&with(info(30001, 1), "max_total_tokens", json!(8192))),
            &[CUDA_OFF],
        );
        assert_ne!(a.id, c.id);
        // So does a seed that was asked for.
        let seeded = [p("random_seed", ParamValue::Int(1))];
        let d = check(&seeded, Some(&info(30001, 1)), &[CUDA_OFF]);
        let e = check(&seeded, Some(&info(30001, 2)), &[CUDA_OFF]);
        assert_ne!(d.id, e.id);
    }

    #[test]
    fn the_log_is_read_up_to_the_ready_line_and_only_its_own_lines() {
        let log = [
            "Traceback: switching to nothing",
            "[2026-12-01 10:00:01] The server is fired up and ready to roll!",
            "[2026-12-01 10:00:02] Cuda graph is disabled because of whatever",
        ];
        let o = read_log(&log);
        assert!(o.lines.is_empty() && o.cuda_graph_off.is_none(), "{o:?}");
    }

    /// The demo's settings on real CPU SGLang (tests/fixtures/results/cpu-demo/spec.yaml).
    fn demo_args(backend: &str, mtt: i64) -> Vec<(String, ParamValue)> {
        vec![
            p("served_model_name", ParamValue::Str("tiny".into())),
            p("device", ParamValue::Str("cpu".into())),
            p("attention_backend", ParamValue::Str(backend.into())),
            p("disable_overlap_schedule", ParamValue::Bool(true)),
            p("sleep_on_idle", ParamValue::Bool(true)),
            p("dtype", ParamValue::Str("bfloat16".into())),
            p("max_total_tokens", ParamValue::Int(mtt)),
        ]
    }

    fn json_file(text: &str) -> Value {
        serde_json::from_str(text).unwrap_or(Value::Null)
    }

    #[test]
    fn real_cpu_sglang_runs_the_demo_settings_as_asked() {
        let small = json_file(include_str!(
            "../../tests/fixtures/results/cpu-demo/runs/mtt2048/server_info.json"
        ));
        let roomy = json_file(include_str!(
            "../../tests/fixtures/results/cpu-demo/runs/mtt32768/server_info.json"
        ));
        let log: Vec<&str> = include_str!("../../tests/fixtures/logs/real-0.5.23-cpu-roomy.log")
            .lines()
            .collect();
        let a = check(&demo_args("torch_native", 2048), Some(&small), &log);
        let b = check(&demo_args("torch_native", 32768), Some(&roomy), &log);
        assert!(a.not_in_effect.is_empty(), "{:?}", a.not_in_effect);
        assert!(b.not_in_effect.is_empty(), "{:?}", b.not_in_effect);
        assert!(a.unchecked.is_empty(), "{:?}", a.unchecked);
        assert_ne!(a.id, b.id, "the pools differ");
        assert_eq!(
            a.override_lines,
            ["Cuda graph is disabled because of using torch native attention backend"]
        );
        assert_eq!(a.args.get("cuda_graph"), Some(&json!("off")));
        // The same server as the small pool's, had it run at another port with another seed:
        // the same id (its random_seed and port differ from the roomy run's already).
        let mut moved = small.clone();
        if let Some(m) = moved.as_object_mut() {
            m.insert("port".into(), json!(1));
            m.insert("random_seed".into(), json!(2));
        }
        assert_eq!(
            check(&demo_args("torch_native", 2048), Some(&moved), &log).id,
            a.id
        );
    }

    #[test]
    fn real_cpu_sglang_overrides_intel_amx_and_the_decode_graph_size() {
        // `--attention-backend intel_amx --cuda-graph-max-bs-decode 8` on a CPU without AMX.
        let info = json_file(include_str!(
            "../../tests/fixtures/effective/real-0.5.23-cpu-intel-amx.server_info.json"
        ));
        let log: Vec<&str> =
            include_str!("../../tests/fixtures/effective/real-0.5.23-cpu-intel-amx.log")
                .lines()
                .collect();
        let mut asked = demo_args("intel_amx", 4096);
        asked.push(p("cuda_graph_max_bs_decode", ParamValue::Int(8)));
        let e = check(&asked, Some(&info), &log);
        let texts: Vec<String> = e.not_in_effect.iter().map(Finding::text).collect();
        assert_eq!(
            texts,
            [
                "`attention_backend` asked intel_amx, in effect torch_native (/server_info, start-up log: \"The current platform does not support Intel AMX, will fallback to torch_native backend.\")",
                "`cuda_graph_max_bs_decode` asked 8, in effect 32 (/server_info cuda_graph_config.decode.max_bs)",
            ]
        );
    }

    #[test]
    fn same_in_effect_groups_configurations_by_id() {
        let pairs = [
            ("a", "x1"),
            ("a", "x1"),
            ("b", "x1"),
            ("c", "x2"),
            ("d", ""),
            ("e", ""),
            ("f", "x3"),
            ("g", "x3"),
            ("f", "x3"),
        ];
        assert_eq!(
            same_in_effect(pairs),
            [
                ("x1".to_string(), vec!["a".to_string(), "b".to_string()]),
                ("x3".to_string(), vec!["f".to_string(), "g".to_string()]),
            ]
        );
    }
}
