//! `tune:`: the guided tune's space as the user wrote it (issue 26). Its knobs (each a list of
//! values or a numeric range `{from, to, step}`), where it starts, and its budget in
//! configurations. The shape and each value are checked inside deserialization, so an error
//! lands on its key's line; what depends on the rest of the spec (the start, the sections a
//! tune cannot run with) is checked in `spec::parse` by [`check`]. `tune::guide` searches the
//! space; this module knows nothing of how.

use crate::plan::engine::Engine;
use crate::plan::flags::{self, ParamValue};
use crate::plan::keyed::tag_key;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The most values one knob may take: a range finer than this is a grid, not a knob.
pub const MAX_VALUES: usize = 1000;

/// One knob: its key (as in `configs:`) and its values, a range already expanded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KnobSpec {
    pub key: String,
    pub values: Vec<ParamValue>,
}

/// `tune:` as read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TuneSpec {
    pub knobs: Vec<KnobSpec>,
    /// `start:` as written (knob key → value); resolved into `start` by [`check`].
    pub start_given: Vec<(String, ParamValue)>,
    /// One index into each knob's values: `start:`, else `server.args`, else the first value.
    pub start: Vec<usize>,
    /// The budget: at most this many launches of configurations, the confirmation's included.
    pub launches: u64,
    /// `confirm:` as written.
    pub confirm_given: Option<u64>,
    /// Launches of the budget kept to confirm the leader at the end (re-launches of it and of
    /// the launches within noise of it): `confirm:`, else a quarter of `launches` (none with a
    /// max-load search, whose probes a re-launch cannot repeat). Resolved by [`check`].
    pub confirm: u64,
}

impl TuneSpec {
    /// How many configurations the space holds: the product of the knobs' value counts.
    pub fn size(&self) -> u128 {
        self.knobs.iter().map(|k| k.values.len() as u128).product()
    }

    /// The knob values of a point, in knob order (indices out of range are left out).
    pub fn params(&self, point: &[usize]) -> Vec<(String, ParamValue)> {
        self.knobs
            .iter()
            .zip(point)
            .filter_map(|(k, &i)| k.values.get(i).map(|v| (k.key.clone(), v.clone())))
            .collect()
    }
}

/// A point's configuration name before `tune::guide` is at hand (`plan` comes first): the
/// grid's convention, as `guide::name` writes it (a test in `run::guided` holds the two equal).
pub fn point_name(t: &TuneSpec, point: &[usize]) -> String {
    t.knobs
        .iter()
        .zip(point)
        .filter_map(|(k, &i)| {
            k.values
                .get(i)
                .map(|v| format!("{}{}", flags::abbreviation(&k.key), flags::value_label(v)))
        })
        .collect::<Vec<_>>()
        .join("_")
}

/// Whether two values are the same knob setting: numbers by value (a range's 0.85 is the
/// start's 0.85, an integer 48 is 48.0), anything else exactly.
pub fn same_value(a: &ParamValue, b: &ParamValue) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0),
        _ => a == b,
    }
}

/// `Err` with "did you mean" when `key` is not one of `engine`'s flags in sgtune's built-in
/// list (`plan::flags::known`): a knob that is not a flag would make every launch fail the same
/// way, so a tune refuses it where a sweep only warns.
pub fn check_knob_key(key: &str, engine: Engine) -> Result<(), String> {
    let known = engine.built_in_flags();
    if engine.knows(key, &known) {
        return Ok(());
    }
    let hint = match engine.nearest_key(key, &known) {
        Some(k) => format!("did you mean `{k}`? "),
        None => String::new(),
    };
    Err(format!(
        "tune knob `{key}` is not in {}: {hint}(a knob is a flag's name without dashes, e.g. mem_fraction_static; a flag the list lacks can still be swept with `sweep:`, which passes it through)",
        known.source.describe(engine.label())
    ))
}

/// A range's values: `from`, `from + step`, ... up to `to` (inclusive, within rounding).
/// Whole numbers stay whole; fractions are rounded to the step's resolution so that 0.80 +
/// 3 × 0.02 is 0.86, not 0.8600000000000001.
pub fn range_values(from: f64, to: f64, step: f64, whole: bool) -> Result<Vec<ParamValue>, String> {
    if !(from.is_finite() && to.is_finite() && step.is_finite()) {
        return Err("a range's from, to and step must be numbers".into());
    }
    if step <= 0.0 {
        return Err(format!(
            "a range's step must be > 0, got {step} (e.g. {{from: 0.80, to: 0.92, step: 0.02}})"
        ));
    }
    if to < from {
        return Err(format!(
            "a range goes up: `from` ({from}) must be at most `to` ({to})"
        ));
    }
    let n = ((to - from) / step + 1e-9).floor() + 1.0;
    if n > MAX_VALUES as f64 {
        return Err(format!(
            "the range from {from} to {to} in steps of {step} has {n} values, more than {MAX_VALUES}: use a larger step (e.g. {})",
            flags::value_label(&ParamValue::Float((to - from) / (MAX_VALUES as f64 / 10.0)))
        ));
    }
    let n = n as usize;
    Ok((0..n)
        .map(|i| {
            let x = from + i as f64 * step;
            if whole {
                ParamValue::Int(x.round() as i64)
            } else {
                ParamValue::Float((x * 1e9).round() / 1e9)
            }
        })
        .collect())
}

/// One knob's values: a list (each checked for its key), a single value, or a range.
struct KnobSeed<'a> {
    key: &'a str,
}

impl<'de> de::DeserializeSeed<'de> for KnobSeed<'_> {
    type Value = Vec<ParamValue>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<ParamValue>, D::Error> {
        let key = self.key;
        let raw = serde_yaml::Value::deserialize(d)?;
        let err = |m: String| de::Error::custom(tag_key(key, &m));
        let values = match raw {
            serde_yaml::Value::Mapping(m) => {
                let mut from = None;
                let mut to = None;
                let mut step = None;
                let mut whole = true;
                for (k, v) in &m {
                    let name = k.as_str().unwrap_or("");
                    let x = match v {
                        serde_yaml::Value::Number(n) => {
                            whole &= n.is_i64() || n.is_u64();
                            n.as_f64()
                        }
                        _ => None,
                    };
                    let slot = match name {
                        "from" => &mut from,
                        "to" => &mut to,
                        "step" => &mut step,
                        other => {
                            return Err(err(format!(
                                "tune knob `{key}`: a range has from, to and step, not `{other}`"
                            )));
                        }
                    };
                    *slot = Some(x.ok_or_else(|| {
                        err(format!("tune knob `{key}`: `{name}` must be a number"))
                    })?);
                }
                let (Some(from), Some(to), Some(step)) = (from, to, step) else {
                    return Err(err(format!(
                        "tune knob `{key}`: a range needs from, to and step, e.g. {{from: 0.80, to: 0.92, step: 0.02}}"
                    )));
                };
                range_values(from, to, step, whole)
                    .map_err(|m| err(format!("tune knob `{key}`: {m}")))?
            }
            serde_yaml::Value::Sequence(items) => items
                .iter()
                .map(|v| scalar(v).ok_or_else(|| err(format!("tune knob `{key}`: each value must be a number, string, true/false or null"))))
                .collect::<Result<Vec<_>, _>>()?,
            other => vec![scalar(&other).ok_or_else(|| {
                err(format!(
                    "tune knob `{key}`: a list of values or a range {{from, to, step}}"
                ))
            })?],
        };
        if values.is_empty() {
            return Err(err(format!(
                "tune knob `{key}` has no values: give at least one"
            )));
        }
        if values.len() > MAX_VALUES {
            return Err(err(format!(
                "tune knob `{key}` has {} values, more than {MAX_VALUES}: give fewer",
                values.len()
            )));
        }
        for (i, v) in values.iter().enumerate() {
            if matches!(v, ParamValue::Str(s) if s == flags::PREFLIGHT_VALUE) {
                return Err(err(format!(
                    "tune knob `{key}`: `{}` is the memory pre-flight's placeholder, which a tune does not run: give the values to try",
                    flags::PREFLIGHT_VALUE
                )));
            }
            flags::check_value(key, v).map_err(&err)?;
            if values[..i].iter().any(|w| same_value(v, w)) {
                return Err(err(format!(
                    "tune knob `{key}` lists `{v}` twice: each value once"
                )));
            }
        }
        Ok(values)
    }
}

/// A YAML scalar as a flag value.
fn scalar(v: &serde_yaml::Value) -> Option<ParamValue> {
    match v {
        serde_yaml::Value::Null => Some(ParamValue::Null),
        serde_yaml::Value::Bool(b) => Some(ParamValue::Bool(*b)),
        serde_yaml::Value::Number(n) => match n.as_i64() {
            Some(i) => Some(ParamValue::Int(i)),
            None => n.as_f64().map(ParamValue::Float),
        },
        serde_yaml::Value::String(s) => Some(ParamValue::Str(s.clone())),
        _ => None,
    }
}

fn knob_key(k: &str) -> Result<String, String> {
    flags::canonical_key(k)
}

/// `start:`: knob → value, each value checked for its flag.
struct Start(Vec<(String, ParamValue)>);

impl<'de> Deserialize<'de> for Start {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = serde_yaml::Mapping::deserialize(d).map_err(|_| {
            de::Error::custom(tag_key(
                "start",
                "tune.start: a mapping of knob to its starting value, e.g. {mem_fraction_static: 0.85}",
            ))
        })?;
        let mut out: Vec<(String, ParamValue)> = Vec::new();
        for (k, v) in &raw {
            let name = k.as_str().unwrap_or("");
            let key =
                flags::canonical_key(name).map_err(|m| de::Error::custom(tag_key(name, &m)))?;
            let value = scalar(v).ok_or_else(|| {
                de::Error::custom(tag_key(
                    name,
                    &format!("tune.start.{key}: one value (a number, string, true/false)"),
                ))
            })?;
            flags::check_value(&key, &value).map_err(|m| de::Error::custom(tag_key(name, &m)))?;
            if out.iter().any(|(o, _)| *o == key) {
                return Err(de::Error::custom(tag_key(
                    name,
                    &format!("tune.start sets `{key}` twice"),
                )));
            }
            out.push((key, value));
        }
        Ok(Start(out))
    }
}

struct Knobs(Vec<KnobSpec>);

impl<'de> Deserialize<'de> for Knobs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Knobs;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a mapping of knob (a server flag) to its values or range, e.g. `hicache_size: [0, 16, 32]`")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Knobs, A::Error> {
                let mut out: Vec<KnobSpec> = Vec::new();
                while let Some(k) = map.next_key::<String>()? {
                    let key = knob_key(&k).map_err(|m| de::Error::custom(tag_key(&k, &m)))?;
                    if out.iter().any(|o| o.key == key) {
                        return Err(de::Error::custom(tag_key(
                            &k,
                            &format!("tune knob `{key}` is given twice"),
                        )));
                    }
                    let values = map.next_value_seed(KnobSeed { key: &key })?;
                    out.push(KnobSpec { key, values });
                }
                if out.is_empty() {
                    return Err(de::Error::custom(
                        "tune.knobs is empty: give at least one knob",
                    ));
                }
                Ok(Knobs(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// The next value of `tune.<key>` as a whole number at least `min`, or an error on its key
/// that says what it is for.
fn whole_at_least<'de, A: MapAccess<'de>>(
    map: &mut A,
    key: &str,
    min: i64,
    what: &str,
) -> Result<u64, A::Error> {
    let n: i64 = map.next_value().map_err(|_| {
        de::Error::custom(tag_key(
            key,
            &format!("tune.{key}: a whole number >= {min} ({what})"),
        ))
    })?;
    if n < min {
        return Err(de::Error::custom(tag_key(
            key,
            &format!("tune.{key} must be at least {min}, got {n}"),
        )));
    }
    Ok(n as u64)
}

impl<'de> Deserialize<'de> for TuneSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = TuneSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a mapping with knobs, launches and (optionally) start")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TuneSpec, A::Error> {
                let mut knobs = None;
                let mut start = None;
                let mut launches = None;
                let mut confirm = None;
                while let Some(k) = map.next_key::<String>()? {
                    match k.as_str() {
                        "knobs" => knobs = Some(map.next_value::<Knobs>()?.0),
                        "start" => start = Some(map.next_value::<Start>()?.0),
                        "launches" => {
                            launches = Some(whole_at_least(
                                &mut map,
                                "launches",
                                1,
                                "the most launches the tune makes",
                            )?);
                        }
                        "confirm" => {
                            confirm = Some(whole_at_least(
                                &mut map,
                                "confirm",
                                0,
                                "the launches kept to confirm the leader at the end",
                            )?);
                        }
                        other => {
                            return Err(de::Error::custom(tag_key(
                                other,
                                &format!(
                                    "unknown key `{other}` in tune: (knobs, start, launches, confirm)"
                                ),
                            )));
                        }
                    }
                }
                let knobs = knobs.ok_or_else(|| {
                    de::Error::custom(
                        "tune: needs `knobs:`, e.g. knobs: {hicache_size: [0, 16, 32]}",
                    )
                })?;
                let launches = launches.ok_or_else(|| {
                    de::Error::custom(
                        "tune: needs `launches:`, the budget in configurations (e.g. launches: 20)",
                    )
                })?;
                Ok(TuneSpec {
                    knobs,
                    start_given: start.unwrap_or_default(),
                    start: Vec::new(),
                    launches,
                    confirm_given: confirm,
                    confirm: 0,
                })
            }
        }
        d.deserialize_map(V)
    }
}

/// What `tune:` asks of the rest of the spec, with the key each problem is placed on (a path
/// from the top of the file). `Ok` resolves the start.
pub struct Problem {
    pub path: Vec<String>,
    pub message: String,
}

fn problem(path: &[&str], message: String) -> Problem {
    Problem {
        path: path.iter().map(|s| s.to_string()).collect(),
        message,
    }
}

/// The start (each knob's index) and the checks that span sections.
#[allow(clippy::too_many_arguments)]
pub fn check(
    t: &mut TuneSpec,
    engine: Engine,
    server_args: &[(String, ParamValue)],
    has_grid: bool,
    has_configs: bool,
    has_objective: bool,
    prune: bool,
    auto_repeats: bool,
    max_load: bool,
) -> Result<(), Problem> {
    if has_grid || has_configs {
        let section = if has_grid { "sweep" } else { "configs" };
        return Err(problem(
            &["tune"],
            format!(
                "tune: searches its own knobs and cannot run beside `{section}:`: move the {section} values into tune.knobs (or run them as a separate sweep)"
            ),
        ));
    }
    if !has_objective {
        return Err(problem(
            &["tune"],
            "a tune needs an `objective:` to know what is better, e.g. objective: {maximize: output_tok_s, slo: {ttft_ms_p99: 2000}}".into(),
        ));
    }
    if prune {
        return Err(problem(
            &["objective", "prune"],
            "objective.prune does not apply to a tune: the tune already chooses what to launch next; leave prune out".into(),
        ));
    }
    if auto_repeats {
        return Err(problem(
            &["repeats"],
            "`repeats: auto` is not supported with tune: yet: give a fixed number of repeats (e.g. repeats: 2)".into(),
        ));
    }
    for k in &t.knobs {
        if let Some(why) = engine.refuses(&k.key) {
            return Err(problem(
                &["tune", "knobs", &k.key],
                format!("{why} (server.engine is {})", engine.as_str()),
            ));
        }
        check_knob_key(&k.key, engine).map_err(|m| problem(&["tune", "knobs", &k.key], m))?;
    }
    for (key, _) in &t.start_given {
        if !t.knobs.iter().any(|k| &k.key == key) {
            return Err(problem(
                &["tune", "start", key],
                format!(
                    "tune.start sets `{key}`, which is not a knob of tune.knobs ({}); a fixed flag goes in server.args",
                    t.knobs
                        .iter()
                        .map(|k| k.key.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    let mut start = Vec::with_capacity(t.knobs.len());
    for k in &t.knobs {
        let given = t
            .start_given
            .iter()
            .find(|(key, _)| key == &k.key)
            .map(|(_, v)| (v, vec!["tune", "start", k.key.as_str()], "tune.start"))
            .or_else(|| {
                server_args
                    .iter()
                    .find(|(key, _)| key == &k.key)
                    .map(|(_, v)| (v, vec!["server", "args", k.key.as_str()], "server.args"))
            });
        let i = match given {
            None => 0,
            Some((v, path, origin)) => k
                .values
                .iter()
                .position(|w| same_value(v, w))
                .ok_or_else(|| {
                    problem(
                        &path,
                        format!(
                            "{origin} sets {} = {v}, which is not among the knob's values ({}): start at one of them, or add it to tune.knobs.{}",
                            k.key,
                            values_text(&k.values),
                            k.key
                        ),
                    )
                })?,
        };
        start.push(i);
    }
    t.start = start;
    t.confirm = match t.confirm_given {
        Some(n) if n > 0 && max_load => {
            return Err(problem(
                &["tune", "confirm"],
                "tune.confirm re-launches the leader at its load points, and a max-load search has none fixed: set confirm: 0 (or leave it out) with search.max_load".into(),
            ));
        }
        Some(n) if n >= t.launches => {
            return Err(problem(
                &["tune", "confirm"],
                format!(
                    "tune.confirm ({n}) must leave launches to explore: at most {} with launches: {}",
                    t.launches - 1,
                    t.launches
                ),
            ));
        }
        Some(n) => n,
        None if max_load => 0,
        None => t.launches / 4,
    };
    Ok(())
}

/// A knob's values for an error message (a long range shortened).
fn values_text(values: &[ParamValue]) -> String {
    let all: Vec<String> = values.iter().map(|v| v.to_string()).collect();
    if all.len() <= 8 {
        all.join(", ")
    } else {
        format!(
            "{}, ..., {} ({} values)",
            all[..3].join(", "),
            all[all.len() - 1],
            all.len()
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn tune(yaml: &str) -> Result<TuneSpec, String> {
        serde_yaml::from_str::<TuneSpec>(yaml).map_err(|e| e.to_string())
    }

    #[test]
    fn a_list_and_a_range_expand_to_their_values() {
        let t = tune("knobs:\n  hicache_size: [0, 16, 32]\n  mem_fraction_static: {from: 0.80, to: 0.86, step: 0.02}\n  max_running_requests: {from: 64, to: 256, step: 64}\nlaunches: 5\n").unwrap();
        assert_eq!(t.knobs[0].values.len(), 3);
        assert_eq!(
            t.knobs[1].values,
            vec![
                ParamValue::Float(0.8),
                ParamValue::Float(0.82),
                ParamValue::Float(0.84),
                ParamValue::Float(0.86)
            ]
        );
        assert_eq!(
            t.knobs[2].values,
            vec![
                ParamValue::Int(64),
                ParamValue::Int(128),
                ParamValue::Int(192),
                ParamValue::Int(256)
            ]
        );
        assert_eq!(t.size(), 48);
        assert_eq!(t.launches, 5);
    }

    #[test]
    fn a_range_of_more_than_a_thousand_values_is_refused_with_the_fix() {
        let e = tune(
            "knobs:\n  mem_fraction_static: {from: 0.1, to: 0.9, step: 0.0001}\nlaunches: 5\n",
        )
        .unwrap_err();
        assert!(e.contains("more than 1000"), "{e}");
        assert!(e.contains("larger step"), "{e}");
    }

    #[test]
    fn a_bad_range_says_which_part() {
        let e =
            tune("knobs:\n  max_running_requests: {from: 256, to: 64, step: 64}\nlaunches: 5\n")
                .unwrap_err();
        assert!(e.contains("must be at most `to`"), "{e}");
        let e = tune("knobs:\n  max_running_requests: {from: 64, to: 256, step: 0}\nlaunches: 5\n")
            .unwrap_err();
        assert!(e.contains("step must be > 0"), "{e}");
        let e =
            tune("knobs:\n  max_running_requests: {from: 64, to: 256}\nlaunches: 5\n").unwrap_err();
        assert!(e.contains("needs from, to and step"), "{e}");
    }

    #[test]
    fn an_unknown_knob_gets_did_you_mean_from_its_engines_list() {
        let on = |engine: Engine, knob: &str| {
            let mut t = tune(&format!("knobs:\n  {knob}: [1]\nlaunches: 5\n")).unwrap();
            check(&mut t, engine, &[], false, false, true, false, false, false)
                .map_err(|p| (p.path.join("."), p.message))
        };
        let (at, e) = on(Engine::Sglang, "mem_fraction_statik").unwrap_err();
        assert_eq!(at, "tune.knobs.mem_fraction_statik");
        assert!(e.contains("did you mean `mem_fraction_static`"), "{e}");
        assert!(
            e.contains("is not in sgtune's built-in list of SGLang flags"),
            "{e}"
        );
        let (_, e) = on(Engine::Sglang, "zzzzzzzzzzzz_qqqq").unwrap_err();
        assert!(!e.contains("did you mean"), "{e}");
        // Each engine its own names: vLLM's under SGLang are not flags, and under vLLM both
        // its own and the common names it renames are.
        let (_, e) = on(Engine::Sglang, "max_num_seqs").unwrap_err();
        assert!(e.contains("SGLang"), "{e}");
        assert!(on(Engine::Vllm, "max_num_seqs").is_ok());
        assert!(on(Engine::Vllm, "max_running_requests").is_ok());
        let (_, e) = on(Engine::Vllm, "gpu_memory_utilisation").unwrap_err();
        assert!(e.contains("did you mean `gpu_memory_utilization`"), "{e}");
    }

    #[test]
    fn each_value_is_checked_for_its_flag() {
        let e = tune("knobs:\n  kv_cache_dtype: [auto, fp8]\nlaunches: 5\n").unwrap_err();
        assert!(e.contains("kv_cache_dtype"), "{e}");
        let e = tune("knobs:\n  mem_fraction_static: [0.8, 1.5]\nlaunches: 5\n").unwrap_err();
        assert!(e.contains("(0, 1]"), "{e}");
        let e = tune("knobs:\n  hicache_size: [0, 0]\nlaunches: 5\n").unwrap_err();
        assert!(e.contains("twice"), "{e}");
        let e = tune("knobs:\n  mem_fraction_static: [preflight]\nlaunches: 5\n").unwrap_err();
        assert!(e.contains("placeholder"), "{e}");
    }

    #[test]
    fn launches_and_knobs_are_required() {
        assert!(
            tune("knobs:\n  hicache_size: [0]\n")
                .unwrap_err()
                .contains("launches")
        );
        assert!(
            tune("knobs:\n  hicache_size: [0]\nlaunches: 0\n")
                .unwrap_err()
                .contains("at least 1")
        );
        assert!(tune("launches: 3\n").unwrap_err().contains("knobs"));
        assert!(
            tune("knobs: {hicache_size: [0]}\nlaunches: 3\nbudget: 2\n")
                .unwrap_err()
                .contains("unknown key `budget`")
        );
    }

    fn checked(t: &mut TuneSpec, args: &[(String, ParamValue)]) -> Result<(), String> {
        check(
            t,
            Engine::Sglang,
            args,
            false,
            false,
            true,
            false,
            false,
            false,
        )
        .map_err(|p| p.message)
    }

    #[test]
    fn the_start_comes_from_start_then_server_args_then_the_first_value() {
        let text = "knobs:\n  mem_fraction_static: {from: 0.80, to: 0.92, step: 0.02}\n  hicache_size: [0, 16, 32]\n  max_running_requests: [64, 128]\nstart: {mem_fraction_static: 0.86}\nlaunches: 4\n";
        let mut t = tune(text).unwrap();
        let args = vec![("hicache_size".to_string(), ParamValue::Int(16))];
        checked(&mut t, &args).unwrap();
        assert_eq!(t.start, vec![3, 1, 0]);
    }

    #[test]
    fn a_start_outside_the_knobs_values_is_named() {
        let mut t =
            tune("knobs:\n  hicache_size: [0, 16]\nstart: {hicache_size: 48}\nlaunches: 4\n")
                .unwrap();
        let e = checked(&mut t, &[]).unwrap_err();
        assert!(e.contains("hicache_size = 48"), "{e}");
        assert!(e.contains("0, 16"), "{e}");
        let mut t = tune(
            "knobs:\n  hicache_size: [0, 16]\nstart: {max_running_requests: 4}\nlaunches: 4\n",
        )
        .unwrap();
        assert!(checked(&mut t, &[]).unwrap_err().contains("not a knob"));
        let mut t = tune("knobs:\n  hicache_size: [0, 16]\nlaunches: 4\n").unwrap();
        let args = vec![("hicache_size".to_string(), ParamValue::Int(8))];
        assert!(checked(&mut t, &args).unwrap_err().contains("server.args"));
    }

    #[test]
    fn confirm_defaults_to_a_quarter_of_the_launches_and_is_checked() {
        let resolve = |text: &str, max_load: bool| {
            let mut t = tune(text)?;
            check(
                &mut t,
                Engine::Sglang,
                &[],
                false,
                false,
                true,
                false,
                false,
                max_load,
            )
            .map(|()| t.confirm)
            .map_err(|p| format!("{}: {}", p.path.join("."), p.message))
        };
        let k = "knobs:\n  hicache_size: [0, 16]\n";
        assert_eq!(resolve(&format!("{k}launches: 16\n"), false), Ok(4));
        assert_eq!(resolve(&format!("{k}launches: 3\n"), false), Ok(0));
        assert_eq!(resolve(&format!("{k}launches: 16\n"), true), Ok(0));
        assert_eq!(
            resolve(&format!("{k}launches: 6\nconfirm: 2\n"), false),
            Ok(2)
        );
        assert_eq!(
            resolve(&format!("{k}launches: 6\nconfirm: 0\n"), true),
            Ok(0)
        );
        let e = resolve(&format!("{k}launches: 6\nconfirm: 6\n"), false).unwrap_err();
        assert!(
            e.starts_with("tune.confirm: ") && e.contains("at most 5"),
            "{e}"
        );
        let e = resolve(&format!("{k}launches: 6\nconfirm: 1\n"), true).unwrap_err();
        assert!(e.contains("max-load"), "{e}");
        assert!(tune(&format!("{k}launches: 6\nconfirm: -1\n")).is_err());
        assert!(tune(&format!("{k}launches: 6\nconfirm: many\n")).is_err());
    }

    #[test]
    fn what_a_tune_cannot_run_with_is_refused() {
        let t = tune("knobs:\n  hicache_size: [0, 16]\nlaunches: 4\n").unwrap();
        let run = |grid, configs, objective, prune, auto| {
            check(
                &mut t.clone(),
                Engine::Sglang,
                &[],
                grid,
                configs,
                objective,
                prune,
                auto,
                false,
            )
            .map_err(|p| (p.path.join("."), p.message))
        };
        let (at, m) = run(true, false, true, false, false).unwrap_err();
        assert_eq!(at, "tune");
        assert!(m.contains("sweep:"), "{m}");
        assert!(
            run(false, true, true, false, false)
                .unwrap_err()
                .1
                .contains("configs:")
        );
        assert!(
            run(false, false, false, false, false)
                .unwrap_err()
                .1
                .contains("objective")
        );
        assert_eq!(
            run(false, false, true, true, false).unwrap_err().0,
            "objective.prune"
        );
        assert!(
            run(false, false, true, false, true)
                .unwrap_err()
                .1
                .contains("not supported")
        );
        assert!(run(false, false, true, false, false).is_ok());
        let mut v = tune("knobs:\n  schedule_conservativeness: [0.5, 1.0]\nlaunches: 4\n").unwrap();
        let e = check(
            &mut v,
            Engine::Vllm,
            &[],
            false,
            false,
            true,
            false,
            false,
            false,
        )
        .err()
        .unwrap();
        assert!(e.message.contains("vllm"), "{}", e.message);
    }

    #[test]
    fn numbers_are_the_same_setting_whatever_their_type() {
        assert!(same_value(&ParamValue::Int(48), &ParamValue::Float(48.0)));
        assert!(same_value(
            &ParamValue::Float(0.8 + 3.0 * 0.02),
            &ParamValue::Float(0.86)
        ));
        assert!(!same_value(
            &ParamValue::Float(0.86),
            &ParamValue::Float(0.88)
        ));
        assert!(!same_value(
            &ParamValue::Str("auto".into()),
            &ParamValue::Str("fp8_e5m2".into())
        ));
    }
}
