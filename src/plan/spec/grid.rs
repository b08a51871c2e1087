//! The flags: `server.args` (`ParamMap`), the `sweep:` grid (`ParamGrid`) and the explicit
//! `configs:` (`ConfigSpec`), each value checked for its key as it is read.

use super::check_name;
use super::env::expand_env;
use crate::plan::engine::Engine;
use crate::plan::flags::{self, ParamValue};
use crate::plan::keyed::tag_key;
use serde::Serialize;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// Ordered `key → value` flags (user order kept: it is the order on the command line).
#[derive(Debug, Clone, Default, Serialize)]
#[serde(transparent)]
pub struct ParamMap(pub Vec<(String, ParamValue)>);

/// Ordered `key → [values]` grid.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(transparent)]
pub struct ParamGrid(pub Vec<(String, Vec<ParamValue>)>);

/// An explicit configuration: a `name` plus flags.
#[derive(Debug, Clone, Serialize)]
pub struct ConfigSpec {
    pub name: String,
    /// `engine: vllm` in a configuration: this one runs on that engine (default:
    /// `server.engine`), from `server.vllm:`'s command and flags.
    pub engine: Option<Engine>,
    pub params: ParamMap,
}

/// Deserialize one flag value (scalar or list of scalars), checked for its key.
struct ValueSeed<'a> {
    key: &'a str,
}

impl<'de> de::DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = ParamValue;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<ParamValue, D::Error> {
        let v = d.deserialize_any(ValueVisitor)?;
        flags::check_value(self.key, &v).map_err(|m| de::Error::custom(tag_key(self.key, &m)))?;
        Ok(v)
    }
}

/// Deserialize a sweep entry: a list of values (each checked), or a single value.
struct GridSeed<'a> {
    key: &'a str,
}

impl<'de> de::DeserializeSeed<'de> for GridSeed<'_> {
    type Value = Vec<ParamValue>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<ParamValue>, D::Error> {
        let v = d.deserialize_any(ValueVisitor)?;
        let values = match v {
            ParamValue::List(items) => items,
            single => vec![single],
        };
        if values.is_empty() {
            return Err(de::Error::custom(tag_key(
                self.key,
                &format!("sweep `{}` has no values: give at least one", self.key),
            )));
        }
        for v in &values {
            flags::check_value(self.key, v)
                .map_err(|m| de::Error::custom(tag_key(self.key, &m)))?;
        }
        Ok(values)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = ParamValue;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a flag value: a number, string, true/false, null, or a list of those")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<ParamValue, E> {
        Ok(ParamValue::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<ParamValue, E> {
        Ok(ParamValue::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<ParamValue, E> {
        i64::try_from(v)
            .map(ParamValue::Int)
            .map_err(|_| E::custom(format!("{v} is too large")))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<ParamValue, E> {
        Ok(ParamValue::Float(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<ParamValue, E> {
        expand_env(v, |k| std::env::var(k).ok())
            .map(ParamValue::Str)
            .map_err(E::custom)
    }
    fn visit_unit<E: de::Error>(self) -> Result<ParamValue, E> {
        Ok(ParamValue::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<ParamValue, E> {
        Ok(ParamValue::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ParamValue, A::Error> {
        let mut items = Vec::new();
        while let Some(v) = seq.next_element_seed(ScalarSeed)? {
            items.push(v);
        }
        Ok(ParamValue::List(items))
    }
}

/// List elements: scalars, or (in a sweep) lists of scalars for list-valued flags.
struct ScalarSeed;
impl<'de> de::DeserializeSeed<'de> for ScalarSeed {
    type Value = ParamValue;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<ParamValue, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

fn next_canonical_key<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Option<String>, A::Error> {
    match map.next_key::<String>()? {
        None => Ok(None),
        Some(k) => flags::canonical_key(&k)
            .map(Some)
            .map_err(de::Error::custom),
    }
}

impl<'de> Deserialize<'de> for ParamMap {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ParamMap;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a mapping of flag name to value, e.g. `tp_size: 8`")
            }
            fn visit_unit<E: de::Error>(self) -> Result<ParamMap, E> {
                Ok(ParamMap::default())
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ParamMap, A::Error> {
                let mut out: Vec<(String, ParamValue)> = Vec::new();
                while let Some(key) = next_canonical_key(&mut map)? {
                    if out.iter().any(|(k, _)| *k == key) {
                        return Err(de::Error::custom(format!("flag `{key}` is given twice")));
                    }
                    let v = map.next_value_seed(ValueSeed { key: &key })?;
                    out.push((key, v));
                }
                Ok(ParamMap(out))
            }
        }
        d.deserialize_map(V)
    }
}

impl<'de> Deserialize<'de> for ParamGrid {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ParamGrid;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a mapping of flag name to a list of values, e.g. `mem_fraction_static: [0.85, 0.88]`")
            }
            fn visit_unit<E: de::Error>(self) -> Result<ParamGrid, E> {
                Ok(ParamGrid::default())
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ParamGrid, A::Error> {
                let mut out: Vec<(String, Vec<ParamValue>)> = Vec::new();
                while let Some(key) = next_canonical_key(&mut map)? {
                    if out.iter().any(|(k, _)| *k == key) {
                        return Err(de::Error::custom(format!(
                            "sweep key `{key}` is given twice"
                        )));
                    }
                    let v = map.next_value_seed(GridSeed { key: &key })?;
                    out.push((key, v));
                }
                Ok(ParamGrid(out))
            }
        }
        d.deserialize_map(V)
    }
}

impl<'de> Deserialize<'de> for ConfigSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ConfigSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a configuration: `name: ...` plus flags, e.g. `{name: baseline, mem_fraction_static: 0.85}`")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ConfigSpec, A::Error> {
                let mut name = None;
                let mut engine = None;
                let mut out: Vec<(String, ParamValue)> = Vec::new();
                while let Some(raw) = map.next_key::<String>()? {
                    if raw == "name" {
                        let n: String = map.next_value()?;
                        check_name(&n).map_err(de::Error::custom)?;
                        name = Some(n);
                        continue;
                    }
                    if raw == "engine" {
                        engine = Some(map.next_value::<Engine>()?);
                        continue;
                    }
                    let key = flags::canonical_key(&raw).map_err(de::Error::custom)?;
                    if out.iter().any(|(k, _)| *k == key) {
                        return Err(de::Error::custom(format!("flag `{key}` is given twice")));
                    }
                    let v = map.next_value_seed(ValueSeed { key: &key })?;
                    out.push((key, v));
                }
                let name = name.ok_or_else(|| {
                    de::Error::custom(
                        "a configuration needs a `name:` (it names its results folder)",
                    )
                })?;
                Ok(ConfigSpec {
                    name,
                    engine,
                    params: ParamMap(out),
                })
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use crate::plan::spec::fixtures::{GOOD, err_of};

    #[test]
    fn bad_values_are_located_at_the_value() {
        let text = GOOD.replace("[0.85, 0.88]", "[0.85, 1.5]");
        let e = err_of(&text);
        assert_eq!((e.line, e.column), (15, 24), "{e}");
        assert!(e.message.contains("(0, 1]"), "{e}");
        assert!(e.message.starts_with("sweep: `mem_fraction_static`"), "{e}");
        let e = err_of(&GOOD.replace("[0, 48]", "[0, -4]"));
        assert_eq!(e.line, 17, "{e}");
        let e = err_of(&GOOD.replace("[auto, fp8_e4m3]", "[auto, fp8]"));
        assert!(e.message.contains("fp8_e4m3"), "{e}");
        let e = err_of(&GOOD.replace(
            "    mem_fraction_static: 0.85",
            "    mem_fraction_static: 2",
        ));
        assert_eq!((e.line, e.column), (20, 26), "{e}");
    }

    #[test]
    fn reserved_and_duplicate_keys() {
        let e = err_of(&GOOD.replace("    tp_size: 8", "    port: 8"));
        assert!(e.message.contains("server.port"), "{e}");
        let e = err_of(&GOOD.replace("requests: 1000", "requests: 1000\n  duration_s: 60"));
        assert!(e.message.contains("not both"), "{e}");
        let e = err_of(&GOOD.replace("requests: 1000", "concurrency_x: 1"));
        assert!(e.message.contains("concurrency_x"), "{e}");
    }
}
