//! The one place that knows how a sweep key becomes SGLang launch flags.
//!
//! `key_name: value` → `--key-name value`; `true` → bare `--key-name`; `false`/null → omitted;
//! a list → `--key-name v1 v2 ...` (argparse `nargs`); `hicache_size: 0` → hierarchical cache
//! off, `hicache_size: N > 0` → `--enable-hierarchical-cache --hicache-size N`.
//! It also holds the early sanity checks for flags whose nonsense values we can spot before
//! launching anything, and the short labels used in run names.

use serde::Serialize;
use std::fmt;

/// The value a sweep writes for a knob the pre-flight decides: `mem_fraction_static:
/// [preflight]`.
pub const PREFLIGHT_VALUE: &str = "preflight";

/// A flag value as written in the sweep file.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ParamValue {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<ParamValue>),
}

impl fmt::Display for ParamValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamValue::Null => f.write_str("null"),
            ParamValue::Bool(b) => write!(f, "{b}"),
            ParamValue::Int(i) => write!(f, "{i}"),
            ParamValue::Float(x) => write!(f, "{x}"),
            ParamValue::Str(s) => f.write_str(s),
            ParamValue::List(items) => {
                let parts: Vec<String> = items.iter().map(|v| v.to_string()).collect();
                f.write_str(&parts.join(","))
            }
        }
    }
}

impl ParamValue {
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            ParamValue::Int(i) => Some(*i as f64),
            ParamValue::Float(x) => Some(*x),
            _ => None,
        }
    }
}

/// Keys the spec sets elsewhere (`server.model_path`, `server.host`, `server.port`).
pub const RESERVED_KEYS: &[&str] = &["model_path", "host", "port"];

/// The key that expands into two flags.
pub const HICACHE_SIZE: &str = "hicache_size";

/// `--kv-cache-dtype` choices at SGLang HEAD (2026-05); there is no plain `fp8`.
pub const KV_CACHE_DTYPES: &[&str] = &[
    "auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "fp4_e2m1",
];

/// Turn a user key (`mem-fraction-static` or `mem_fraction_static`) into the canonical form.
pub fn canonical_key(key: &str) -> Result<String, String> {
    if key.is_empty()
        || !key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(format!(
            "`{key}` is not a flag name: use the flag's name without the leading dashes, e.g. mem_fraction_static"
        ));
    }
    let k = key.trim_start_matches('-').replace('-', "_");
    if RESERVED_KEYS.contains(&k.as_str()) {
        return Err(format!(
            "`{key}` is set under `server:` (server.{k}), not as a flag"
        ));
    }
    Ok(k)
}

/// Sanity checks for well-known flags; `Err` says what is allowed.
pub fn check_value(key: &str, value: &ParamValue) -> Result<(), String> {
    let num = value.as_f64();
    let int = match value {
        ParamValue::Int(i) => Some(*i),
        _ => None,
    };
    let need_num = |what: &str| format!("`{key}` must be {what}, got `{value}`");
    // `mem_fraction_static: [preflight]`: the pre-flight decides it (checked against
    // `search.preflight` once the whole spec is read).
    if matches!(value, ParamValue::Str(s) if s == PREFLIGHT_VALUE) {
        return Ok(());
    }
    match key {
        "mem_fraction_static" => match num {
            Some(x) if x > 0.0 && x <= 1.0 => Ok(()),
            _ => Err(need_num("a number in (0, 1]")),
        },
        HICACHE_SIZE => match int {
            Some(i) if i >= 0 => Ok(()),
            _ => Err(need_num(
                "a whole number of GB >= 0 (0 = hierarchical cache off)",
            )),
        },
        "hicache_ratio" | "schedule_conservativeness" => match num {
            Some(x) if x > 0.0 => Ok(()),
            _ => Err(need_num("a number > 0")),
        },
        "tp_size"
        | "dp_size"
        | "pp_size"
        | "ep_size"
        | "max_running_requests"
        | "max_total_tokens"
        | "max_prefill_tokens"
        | "context_length"
        | "cuda_graph_max_bs"
        | "decode_log_interval"
        | "max_queued_requests" => match int {
            Some(i) if i >= 1 => Ok(()),
            _ => Err(need_num("a whole number >= 1")),
        },
        "chunked_prefill_size" => match int {
            Some(i) if i >= 1 || i == -1 => Ok(()),
            _ => Err(need_num(
                "a whole number >= 1, or -1 to disable chunked prefill",
            )),
        },
        "kv_cache_dtype" => match value {
            ParamValue::Str(s) if KV_CACHE_DTYPES.contains(&s.as_str()) => Ok(()),
            _ => Err(format!(
                "`kv_cache_dtype` must be one of {} (SGLang has no plain `fp8`), got `{value}`",
                KV_CACHE_DTYPES.join(", ")
            )),
        },
        _ => match value {
            ParamValue::List(items) if items.iter().any(|v| matches!(v, ParamValue::List(_))) => {
                Err(format!(
                    "`{key}`: a flag value can be a list of scalars, not a list of lists"
                ))
            }
            _ => Ok(()),
        },
    }
}

fn flag_name(key: &str) -> String {
    format!("--{}", key.replace('_', "-"))
}

/// Map resolved `(key, value)` pairs to argv pieces, in the given order.
pub fn flag_args(params: &[(String, ParamValue)]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let push_flag = |out: &mut Vec<String>, flag: String| {
        // A bare flag can arrive twice (user's `enable_hierarchical_cache: true` plus
        // `hicache_size: 48`); argparse would accept it, but the command line reads better once.
        if !out.contains(&flag) {
            out.push(flag);
        }
    };
    for (key, value) in params {
        if key == HICACHE_SIZE {
            match value {
                ParamValue::Int(0) | ParamValue::Null | ParamValue::Bool(false) => {}
                other => {
                    push_flag(&mut out, "--enable-hierarchical-cache".to_string());
                    out.push("--hicache-size".to_string());
                    out.push(other.to_string());
                }
            }
            continue;
        }
        match value {
            ParamValue::Null | ParamValue::Bool(false) => {}
            ParamValue::Bool(true) => push_flag(&mut out, flag_name(key)),
            ParamValue::List(items) => {
                if items.is_empty() {
                    continue;
                }
                out.push(flag_name(key));
                out.extend(items.iter().map(|v| v.to_string()));
            }
            // Not a value yet: the pre-flight decides it before this configuration launches.
            ParamValue::Str(s) if s == PREFLIGHT_VALUE => {
                out.push(flag_name(key));
                out.push(format!("<{s}>"));
            }
            other => {
                out.push(flag_name(key));
                out.push(other.to_string());
            }
        }
    }
    out
}

/// Short label for a key in run names: `mem_fraction_static` → `mfs`.
pub fn abbreviation(key: &str) -> String {
    match key {
        "mem_fraction_static" => "mfs".into(),
        "kv_cache_dtype" => "kv-".into(),
        HICACHE_SIZE => "hicache".into(),
        "max_running_requests" => "mrr".into(),
        "max_total_tokens" => "mtt".into(),
        "chunked_prefill_size" => "cps".into(),
        "schedule_conservativeness" => "sc".into(),
        "tp_size" => "tp".into(),
        "dp_size" => "dp".into(),
        "cuda_graph_max_bs" => "cgbs".into(),
        "schedule_policy" => "sp-".into(),
        "page_size" => "ps".into(),
        other => {
            let initials: String = other.split('_').filter_map(|w| w.chars().next()).collect();
            format!("{initials}-")
        }
    }
}

/// Run-name fragment for a value: booleans become on/off, lists join with `-`.
pub fn value_label(value: &ParamValue) -> String {
    match value {
        ParamValue::Bool(true) => "on".into(),
        ParamValue::Bool(false) => "off".into(),
        ParamValue::Null => "none".into(),
        ParamValue::List(items) => items.iter().map(value_label).collect::<Vec<_>>().join("-"),
        other => other
            .to_string()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-' {
                    c
                } else {
                    '-'
                }
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(k: &str, v: ParamValue) -> (String, ParamValue) {
        (k.to_string(), v)
    }

    #[test]
    fn maps_scalars_bools_lists_and_hicache() {
        let args = flag_args(&[
            p("mem_fraction_static", ParamValue::Float(0.88)),
            p("trust_remote_code", ParamValue::Bool(true)),
            p("disable_radix_cache", ParamValue::Bool(false)),
            p("chat_template", ParamValue::Null),
            p(
                "cuda_graph_bs",
                ParamValue::List(vec![ParamValue::Int(1), ParamValue::Int(8)]),
            ),
            p("hicache_size", ParamValue::Int(48)),
            p("kv_cache_dtype", ParamValue::Str("fp8_e4m3".into())),
        ]);
        assert_eq!(
            args,
            [
                "--mem-fraction-static",
                "0.88",
                "--trust-remote-code",
                "--cuda-graph-bs",
                "1",
                "8",
                "--enable-hierarchical-cache",
                "--hicache-size",
                "48",
                "--kv-cache-dtype",
                "fp8_e4m3"
            ]
        );
    }

    #[test]
    fn hicache_zero_means_off_and_enable_flag_is_not_doubled() {
        assert!(flag_args(&[p("hicache_size", ParamValue::Int(0))]).is_empty());
        let args = flag_args(&[
            p("enable_hierarchical_cache", ParamValue::Bool(true)),
            p("hicache_size", ParamValue::Int(4)),
        ]);
        assert_eq!(args, ["--enable-hierarchical-cache", "--hicache-size", "4"]);
    }

    #[test]
    fn checks_obvious_nonsense() {
        assert!(check_value("mem_fraction_static", &ParamValue::Float(1.5)).is_err());
        assert!(check_value("mem_fraction_static", &ParamValue::Float(0.0)).is_err());
        assert!(check_value("mem_fraction_static", &ParamValue::Int(1)).is_ok());
        assert!(check_value("hicache_size", &ParamValue::Int(-1)).is_err());
        assert!(check_value("kv_cache_dtype", &ParamValue::Str("fp8".into())).is_err());
        assert!(check_value("max_running_requests", &ParamValue::Int(0)).is_err());
        assert!(check_value("chunked_prefill_size", &ParamValue::Int(-1)).is_ok());
        assert!(check_value("some_new_flag", &ParamValue::Str("x".into())).is_ok());
    }

    #[test]
    fn canonical_keys() {
        assert_eq!(
            canonical_key("mem-fraction-static").as_deref(),
            Ok("mem_fraction_static")
        );
        assert!(canonical_key("port").is_err());
        assert!(canonical_key("bad key").is_err());
    }

    #[test]
    fn labels() {
        assert_eq!(abbreviation("mem_fraction_static"), "mfs");
        assert_eq!(abbreviation("enable_mixed_chunk"), "emc-");
        assert_eq!(value_label(&ParamValue::Str("a/b".into())), "a-b");
    }
}
