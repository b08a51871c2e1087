//! The one place that knows how a sweep key becomes SGLang launch flags.
//!
//! `key_name: value` → `--key-name value`; `true` → bare `--key-name`; `false`/null → omitted;
//! a list → `--key-name v1 v2 ...` (argparse `nargs`).
//!
//! The hierarchical cache is one knob set: SGLang ignores every `--hicache-*` flag unless
//! `--enable-hierarchical-cache` is on (0.5.23's `handle_hicache` returns early), so any
//! `hicache_*` key implies that flag, once. `hicache_size: 0` or `hicache_ratio: 0` (or `off`)
//! means the cache is off for that configuration, and then no `--hicache-*` flag is passed.
//! [`requested`] is that meaning as `(key, value)` pairs: what the command line asks the server
//! for, which the effective-argument check compares with what the server says it runs.
//!
//! It also holds the early sanity checks for flags whose nonsense values we can spot before
//! launching anything, the warnings `validate` prints for settings SGLang would not honour,
//! and the short labels used in run names. [`known`] is the one list of flags per engine
//! (built in, or the installed engine's `--help`), which every key of `sweep:`, `configs:`,
//! `server.args` and `tune:` is checked against.

pub mod known;

pub use known::{FlagSource, KnownFlags};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The value a sweep writes for a knob the pre-flight decides: `mem_fraction_static:
/// [preflight]`.
pub const PREFLIGHT_VALUE: &str = "preflight";

/// A flag value as written in the sweep file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

/// The host pool size in GB (0 = off here; SGLang: "Overrides --hicache-ratio").
pub const HICACHE_SIZE: &str = "hicache_size";
/// The host pool as a multiple of the device pool (0 or `off` = off here).
pub const HICACHE_RATIO: &str = "hicache_ratio";
/// The flag every `hicache_*` key needs.
pub const ENABLE_HICACHE: &str = "enable_hierarchical_cache";
/// The radix cache off: SGLang refuses it together with the hierarchical cache.
pub const DISABLE_RADIX_CACHE: &str = "disable_radix_cache";
/// What the `hicache_*` keys share: SGLang 0.5.23's HiCache knobs are `hicache_ratio`,
/// `hicache_size`, `hicache_host_memory_mode`, `hicache_host_memory_fraction`,
/// `hicache_write_policy`, `hicache_io_backend`, `hicache_mem_layout`,
/// `hicache_storage_backend`, `hicache_storage_prefetch_policy`,
/// `hicache_storage_backend_extra_config` and `hicache_storage_prefetch_retry_*`; a later one
/// with the same prefix is treated the same way.
pub const HICACHE_PREFIX: &str = "hicache_";

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
            _ if is_off_word(value) => Ok(()),
            _ => Err(need_num(
                "a whole number of GB >= 0, or `off` (0 = hierarchical cache off)",
            )),
        },
        HICACHE_RATIO => match num {
            Some(x) if x >= 0.0 => Ok(()),
            _ if is_off_word(value) => Ok(()),
            _ => Err(need_num(
                "a number >= 0, or `off` (0 = hierarchical cache off)",
            )),
        },
        "schedule_conservativeness" => match num {
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

/// `off` (any case) as a value: the hierarchical cache's sizing keys take it for "off".
fn is_off_word(value: &ParamValue) -> bool {
    matches!(value, ParamValue::Str(s) if s.eq_ignore_ascii_case("off"))
}

/// A sizing key's value that means "no hierarchical cache": 0, `off`, false.
fn is_off(value: &ParamValue) -> bool {
    match value {
        ParamValue::Int(0) | ParamValue::Bool(false) => true,
        ParamValue::Float(x) => *x == 0.0,
        other => is_off_word(other),
    }
}

pub fn is_hicache_key(key: &str) -> bool {
    key.starts_with(HICACHE_PREFIX)
}

/// Settings under which SGLang reads the `hicache_*` keys without the hierarchical cache (a
/// PD-disaggregation decode server's host pool, its KV offload, the unified-cache linker,
/// which SGLang refuses together with `--enable-hierarchical-cache`): there the keys pass
/// through as written and imply nothing.
fn hicache_without_enable(params: &[(String, ParamValue)]) -> bool {
    params.iter().any(|(k, v)| match (k.as_str(), v) {
        ("disaggregation_mode", ParamValue::Str(s)) => s == "decode",
        (
            "disaggregation_decode_enable_offload_kvcache" | "enable_unified_cache_external_linker",
            ParamValue::Bool(b),
        ) => *b,
        _ => false,
    })
}

/// Whether one configuration runs the hierarchical cache, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hicache {
    /// No `hicache_*` key and no `enable_hierarchical_cache`: nothing to do.
    Untouched,
    /// `enable_hierarchical_cache: false` said so, or a sizing key is 0/`off` and none sizes it.
    Off,
    /// On: set by the user, or implied by a `hicache_*` key.
    On,
    /// A decode server or the unified linker: the keys pass through, nothing is implied.
    PassThrough,
}

fn hicache_state(params: &[(String, ParamValue)]) -> Hicache {
    let explicit = params.iter().find_map(|(k, v)| match (k.as_str(), v) {
        (ENABLE_HICACHE, ParamValue::Bool(b)) => Some(*b),
        _ => None,
    });
    let keys: Vec<&ParamValue> = params
        .iter()
        .filter(|(k, v)| is_hicache_key(k) && *v != ParamValue::Null)
        .map(|(_, v)| v)
        .collect();
    if hicache_without_enable(params) {
        return Hicache::PassThrough;
    }
    let sizing = |on: bool| {
        params.iter().any(|(k, v)| {
            (k == HICACHE_SIZE || k == HICACHE_RATIO) && *v != ParamValue::Null && is_off(v) != on
        })
    };
    match explicit {
        Some(true) => Hicache::On,
        Some(false) => Hicache::Off,
        None if keys.is_empty() => Hicache::Untouched,
        None if sizing(false) && !sizing(true) => Hicache::Off,
        None => Hicache::On,
    }
}

/// What one configuration's command line asks the server for, as `(key, value)` pairs in
/// command-line order: the hierarchical cache resolved (the implied
/// `enable_hierarchical_cache: true` before the first `hicache_*` key, `false` in place of
/// an off value, the family's keys dropped when it is off, 0/`off` sizes omitted).
/// [`flag_args`] renders exactly this; the effective-argument check compares it with
/// `/server_info`.
pub fn requested(params: &[(String, ParamValue)]) -> Vec<(String, ParamValue)> {
    let state = hicache_state(params);
    let mut out: Vec<(String, ParamValue)> = Vec::new();
    let mut enable_said = false;
    let mut say_enable = |out: &mut Vec<(String, ParamValue)>, on: bool| {
        if !enable_said {
            out.push((ENABLE_HICACHE.to_string(), ParamValue::Bool(on)));
            enable_said = true;
        }
    };
    for (key, value) in params {
        let sizing = key == HICACHE_SIZE || key == HICACHE_RATIO;
        if key == ENABLE_HICACHE && state != Hicache::PassThrough {
            say_enable(&mut out, state == Hicache::On);
            continue;
        }
        if !is_hicache_key(key) || *value == ParamValue::Null {
            out.push((key.clone(), value.clone()));
            continue;
        }
        match state {
            Hicache::Off => say_enable(&mut out, false),
            Hicache::On => {
                say_enable(&mut out, true);
                if !(sizing && is_off(value)) {
                    out.push((key.clone(), value.clone()));
                }
            }
            Hicache::PassThrough | Hicache::Untouched => {
                if !(sizing && is_off(value)) {
                    out.push((key.clone(), value.clone()));
                }
            }
        }
    }
    out
}

/// Map resolved `(key, value)` pairs to argv pieces, in the given order (through
/// [`requested`], so the hierarchical cache's keys imply its flag).
pub fn flag_args(params: &[(String, ParamValue)]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let push_flag = |out: &mut Vec<String>, flag: String| {
        // A bare flag can arrive twice (a key and its `--key-name` spelling); argparse would
        // accept it, but the command line reads better once.
        if !out.contains(&flag) {
            out.push(flag);
        }
    };
    for (key, value) in requested(params) {
        match &value {
            ParamValue::Null | ParamValue::Bool(false) => {}
            ParamValue::Bool(true) => push_flag(&mut out, flag_name(&key)),
            ParamValue::List(items) => {
                if items.is_empty() {
                    continue;
                }
                out.push(flag_name(&key));
                out.extend(items.iter().map(|v| v.to_string()));
            }
            // Not a value yet: the pre-flight decides it before this configuration launches.
            ParamValue::Str(s) if s == PREFLIGHT_VALUE => {
                out.push(flag_name(&key));
                out.push(format!("<{s}>"));
            }
            other => {
                out.push(flag_name(&key));
                out.push(other.to_string());
            }
        }
    }
    out
}

/// What `validate` and the dry run warn about in one configuration's settings: the ones SGLang
/// would not honour as written (checked against SGLang 0.5.23's argument handling).
pub fn warnings(params: &[(String, ParamValue)]) -> Vec<String> {
    let get = |key: &str| {
        params
            .iter()
            .find(|(k, v)| k == key && *v != ParamValue::Null)
            .map(|(_, v)| v)
    };
    let mut out = Vec::new();
    fn on(v: Option<&ParamValue>) -> Option<&ParamValue> {
        v.filter(|v| !is_off(v))
    }
    match hicache_state(params) {
        Hicache::On => {
            // SGLang 0.5.23 refuses the pair at start-up (server_args: "The arguments
            // enable-hierarchical-cache and disable-radix-cache are mutually exclusive"): the
            // host tier is the radix cache's, so the launch would only fail.
            if get(DISABLE_RADIX_CACHE) == Some(&ParamValue::Bool(true)) {
                out.push(
                    "the hierarchical cache is on (a `hicache_*` key or `enable_hierarchical_cache: true`) with `disable_radix_cache: true`: SGLang refuses the pair at start-up (they are mutually exclusive: the host tier extends the radix cache); turn one off in this configuration".to_string(),
                );
            }
            if let (Some(size), Some(ratio)) = (on(get(HICACHE_SIZE)), on(get(HICACHE_RATIO))) {
                out.push(format!(
                    "`hicache_size: {size}` and `hicache_ratio: {ratio}` are both set: SGLang sizes the host pool by hicache_size (it overrides --hicache-ratio), so hicache_ratio has no effect"
                ));
            }
            if get(ENABLE_HICACHE) == Some(&ParamValue::Bool(true)) {
                for key in [HICACHE_SIZE, HICACHE_RATIO] {
                    if let Some(v) = get(key).filter(|v| is_off(v)) {
                        out.push(format!(
                            "`{key}: {v}` means off, but `enable_hierarchical_cache: true` keeps the hierarchical cache on (sized by {})",
                            if key == HICACHE_SIZE && on(get(HICACHE_RATIO)).is_some() {
                                "hicache_ratio"
                            } else {
                                "SGLang's default hicache_ratio"
                            }
                        ));
                    }
                }
            }
        }
        Hicache::Off if get(ENABLE_HICACHE) == Some(&ParamValue::Bool(false)) => {
            let ignored: Vec<String> = params
                .iter()
                .filter(|(k, v)| is_hicache_key(k) && *v != ParamValue::Null && !is_off(v))
                .map(|(k, _)| k.clone())
                .collect();
            if !ignored.is_empty() {
                out.push(format!(
                    "`enable_hierarchical_cache: false` turns the hierarchical cache off, so {} {} not passed",
                    ignored.join(", "),
                    if ignored.len() == 1 { "is" } else { "are" }
                ));
            }
        }
        _ => {}
    }
    out
}

/// Short label for a key in run names: `mem_fraction_static` → `mfs`.
pub fn abbreviation(key: &str) -> String {
    match key {
        "mem_fraction_static" => "mfs".into(),
        "kv_cache_dtype" => "kv-".into(),
        HICACHE_SIZE => "hicache".into(),
        HICACHE_RATIO => "hicache-ratio".into(),
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

    fn args(params: &[(&str, ParamValue)]) -> Vec<String> {
        let owned: Vec<(String, ParamValue)> =
            params.iter().map(|(k, v)| p(k, v.clone())).collect();
        flag_args(&owned)
    }

    fn enables(argv: &[String]) -> usize {
        argv.iter()
            .filter(|a| *a == "--enable-hierarchical-cache")
            .count()
    }

    #[test]
    fn hicache_zero_means_off_and_enable_flag_is_not_doubled() {
        assert!(args(&[("hicache_size", ParamValue::Int(0))]).is_empty());
        let a = args(&[
            ("enable_hierarchical_cache", ParamValue::Bool(true)),
            ("hicache_size", ParamValue::Int(4)),
        ]);
        assert_eq!(a, ["--enable-hierarchical-cache", "--hicache-size", "4"]);
    }

    #[test]
    fn every_hicache_key_implies_the_enable_flag_exactly_once() {
        // The story's case: a ratio alone used to go out without the flag SGLang needs.
        let a = args(&[("hicache_ratio", ParamValue::Int(2))]);
        assert_eq!(a, ["--enable-hierarchical-cache", "--hicache-ratio", "2"]);
        for key in [
            "hicache_storage_backend",
            "hicache_io_backend",
            "hicache_write_policy",
            "hicache_mem_layout",
            "hicache_host_memory_mode",
            "hicache_storage_prefetch_policy",
        ] {
            let a = args(&[(key, ParamValue::Str("x".into()))]);
            assert_eq!(enables(&a), 1, "{key}: {a:?}");
            assert_eq!(a[0], "--enable-hierarchical-cache", "{key}: {a:?}");
        }
        // Many keys, the user's own flag among them, in any order: still once, and first.
        let a = args(&[
            ("mem_fraction_static", ParamValue::Float(0.8)),
            ("hicache_write_policy", ParamValue::Str("write_back".into())),
            ("hicache_ratio", ParamValue::Float(1.5)),
            ("enable_hierarchical_cache", ParamValue::Bool(true)),
            ("hicache_io_backend", ParamValue::Str("direct".into())),
        ]);
        assert_eq!(
            a,
            [
                "--mem-fraction-static",
                "0.8",
                "--enable-hierarchical-cache",
                "--hicache-write-policy",
                "write_back",
                "--hicache-ratio",
                "1.5",
                "--hicache-io-backend",
                "direct"
            ]
        );
        assert_eq!(enables(&a), 1);
    }

    #[test]
    fn hicache_off_values_turn_the_whole_family_off() {
        for off in [
            ParamValue::Int(0),
            ParamValue::Float(0.0),
            ParamValue::Str("off".into()),
            ParamValue::Str("OFF".into()),
            ParamValue::Bool(false),
        ] {
            for key in ["hicache_ratio", "hicache_size"] {
                let a = args(&[
                    (key, off.clone()),
                    ("hicache_write_policy", ParamValue::Str("write_back".into())),
                    ("max_total_tokens", ParamValue::Int(4096)),
                ]);
                assert_eq!(a, ["--max-total-tokens", "4096"], "{key}: {off:?}");
                let asked = requested(&[p(key, off.clone())]);
                assert_eq!(
                    asked,
                    [p("enable_hierarchical_cache", ParamValue::Bool(false))]
                );
            }
        }
        // An explicit false wins over every other key, which is then not passed (and said).
        let params = [
            p("enable_hierarchical_cache", ParamValue::Bool(false)),
            p("hicache_ratio", ParamValue::Int(2)),
        ];
        assert!(flag_args(&params).is_empty());
        assert!(warnings(&params)[0].contains("hicache_ratio is not passed"));
    }

    #[test]
    fn hicache_both_sizes_pass_and_say_that_size_wins() {
        let params = [
            p("hicache_ratio", ParamValue::Int(2)),
            p("hicache_size", ParamValue::Int(48)),
        ];
        assert_eq!(
            flag_args(&params),
            [
                "--enable-hierarchical-cache",
                "--hicache-ratio",
                "2",
                "--hicache-size",
                "48"
            ]
        );
        let w = warnings(&params);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("SGLang sizes the host pool by hicache_size")
                && w[0].contains("hicache_ratio has no effect"),
            "{w:?}"
        );
        // One size off and the other on: the one that is on sizes it, no warning.
        let params = [
            p("hicache_size", ParamValue::Int(0)),
            p("hicache_ratio", ParamValue::Int(3)),
        ];
        assert_eq!(
            flag_args(&params),
            ["--enable-hierarchical-cache", "--hicache-ratio", "3"]
        );
        assert!(warnings(&params).is_empty());
        // Off by value but on by the user's flag: on, at SGLang's default size, and said.
        let params = [
            p("enable_hierarchical_cache", ParamValue::Bool(true)),
            p("hicache_ratio", ParamValue::Str("off".into())),
        ];
        assert_eq!(flag_args(&params), ["--enable-hierarchical-cache"]);
        assert!(warnings(&params)[0].contains("keeps the hierarchical cache on"));
    }

    /// HiCache with the radix cache off is said before launch (SGLang dies on it at start);
    /// with HiCache off, disabling the radix cache is no warning.
    #[test]
    fn hicache_without_the_radix_cache_is_said() {
        let on = [
            p("hicache_size", ParamValue::Int(80)),
            p("disable_radix_cache", ParamValue::Bool(true)),
        ];
        let w = warnings(&on);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("mutually exclusive"), "{w:?}");
        for off in [
            [
                p("hicache_size", ParamValue::Int(0)),
                p("disable_radix_cache", ParamValue::Bool(true)),
            ],
            [
                p("hicache_size", ParamValue::Int(80)),
                p("disable_radix_cache", ParamValue::Bool(false)),
            ],
        ] {
            assert!(warnings(&off).is_empty(), "{off:?}");
        }
    }

    #[test]
    fn hicache_keys_of_a_decode_server_pass_through_unchanged() {
        let params = [
            p("disaggregation_mode", ParamValue::Str("decode".into())),
            p("hicache_storage_backend", ParamValue::Str("file".into())),
            p("hicache_ratio", ParamValue::Int(0)),
        ];
        assert_eq!(
            flag_args(&params),
            [
                "--disaggregation-mode",
                "decode",
                "--hicache-storage-backend",
                "file"
            ]
        );
        assert!(warnings(&params).is_empty());
    }

    #[test]
    fn unknown_keys_still_pass_through() {
        assert_eq!(
            args(&[("hicache_new_knob_of_2027", ParamValue::Int(7))]),
            [
                "--enable-hierarchical-cache",
                "--hicache-new-knob-of-2027",
                "7"
            ]
        );
        assert_eq!(
            args(&[("some_new_flag", ParamValue::Str("x".into()))]),
            ["--some-new-flag", "x"]
        );
    }

    #[test]
    fn checks_obvious_nonsense() {
        assert!(check_value("mem_fraction_static", &ParamValue::Float(1.5)).is_err());
        assert!(check_value("mem_fraction_static", &ParamValue::Float(0.0)).is_err());
        assert!(check_value("mem_fraction_static", &ParamValue::Int(1)).is_ok());
        assert!(check_value("hicache_size", &ParamValue::Int(-1)).is_err());
        assert!(check_value("hicache_size", &ParamValue::Str("off".into())).is_ok());
        assert!(check_value("hicache_ratio", &ParamValue::Int(0)).is_ok());
        assert!(check_value("hicache_ratio", &ParamValue::Str("off".into())).is_ok());
        assert!(check_value("hicache_ratio", &ParamValue::Float(-1.0)).is_err());
        assert!(check_value("hicache_ratio", &ParamValue::Str("two".into())).is_err());
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
