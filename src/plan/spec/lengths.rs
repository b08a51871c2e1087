//! `input_tokens` and `output_tokens`: a fixed length or a distribution per request.

use super::scalars::Positive;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::fmt;

/// How `input_tokens` / `output_tokens` vary between requests (seeded per request).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "dist", rename_all = "snake_case")]
pub enum LengthDist {
    /// Uniform integers: SGLang's semantics [max(1, floor(L·r)), L], or vLLM's
    /// [floor(L·(1−r)), ceil(L·(1+r))].
    Uniform {
        mean: u64,
        range_ratio: f64,
        range_semantics: RangeSemantics,
    },
    /// round(N(mean, stddev)) clipped to [min, max].
    Normal {
        mean: f64,
        stddev: f64,
        min: u64,
        max: u64,
    },
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RangeSemantics {
    #[default]
    Sglang,
    Vllm,
}

impl LengthDist {
    /// The (inclusive) range a uniform draws from.
    pub fn bounds(&self) -> (u64, u64) {
        match *self {
            LengthDist::Uniform {
                mean: l,
                range_ratio: r,
                range_semantics: RangeSemantics::Sglang,
            } => (((l as f64 * r).floor() as u64).max(1), l.max(1)),
            LengthDist::Uniform {
                mean: l,
                range_ratio: r,
                range_semantics: RangeSemantics::Vllm,
            } => (
                ((l as f64 * (1.0 - r)).floor() as u64).max(1),
                ((l as f64 * (1.0 + r)).ceil() as u64).max(1),
            ),
            LengthDist::Normal { min, max, .. } => (min.max(1), max.max(1)),
        }
    }

    /// The length for one request, from two uniform draws in [0, 1).
    pub fn sample(&self, u1: f64, u2: f64) -> u64 {
        let (lo, hi) = self.bounds();
        match *self {
            LengthDist::Uniform { .. } => lo + ((u1 * (hi - lo + 1) as f64) as u64).min(hi - lo),
            LengthDist::Normal { mean, stddev, .. } => {
                // Box-Muller.
                let z = (-2.0 * (1.0 - u1).ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
                ((mean + stddev * z).round().max(0.0) as u64).clamp(lo, hi)
            }
        }
    }

    pub fn mean(&self) -> f64 {
        match *self {
            LengthDist::Uniform { .. } => {
                let (lo, hi) = self.bounds();
                (lo + hi) as f64 / 2.0
            }
            LengthDist::Normal { mean, .. } => mean,
        }
    }
}

/// `input_tokens: 512`, or a distribution.
#[derive(Debug, Clone)]
pub(super) enum LengthSpec {
    Fixed(Positive),
    Dist(RawDist),
}

impl<'de> Deserialize<'de> for LengthSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LengthSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a whole number >= 1, or a distribution such as {dist: uniform, mean: 512, range_ratio: 0.5} or {dist: normal, mean: 512, stddev: 128}",
                )
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<LengthSpec, E> {
                if v < 1 {
                    return Err(E::custom(format!("expected a whole number >= 1, got {v}")));
                }
                Ok(LengthSpec::Fixed(Positive(v as u64)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<LengthSpec, E> {
                self.visit_i64(i64::try_from(v).unwrap_or(i64::MAX))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<LengthSpec, A::Error> {
                RawDist::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(LengthSpec::Dist)
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDist {
    dist: String,
    mean: f64,
    #[serde(default)]
    range_ratio: Option<f64>,
    #[serde(default)]
    range_semantics: Option<RangeSemantics>,
    #[serde(default)]
    stddev: Option<f64>,
    #[serde(default)]
    min: Option<u64>,
    #[serde(default)]
    max: Option<u64>,
}

impl LengthSpec {
    /// (nominal length, distribution) or what is wrong, for `key`.
    pub(super) fn resolve(self, key: &str) -> Result<(u64, Option<LengthDist>), String> {
        let d = match self {
            LengthSpec::Fixed(p) => return Ok((p.0, None)),
            LengthSpec::Dist(d) => d,
        };
        if !(d.mean.is_finite() && d.mean >= 1.0) {
            return Err(format!("workload.{key}.mean must be >= 1"));
        }
        let dist = match d.dist.as_str() {
            "uniform" => {
                let r = d.range_ratio.unwrap_or(0.0);
                if !(0.0..=1.0).contains(&r) {
                    return Err(format!("workload.{key}.range_ratio must be in [0, 1]"));
                }
                LengthDist::Uniform {
                    mean: d.mean.round() as u64,
                    range_ratio: r,
                    range_semantics: d.range_semantics.unwrap_or_default(),
                }
            }
            "normal" => {
                let stddev = d.stddev.ok_or_else(|| {
                    format!("workload.{key}: a normal distribution needs `stddev`")
                })?;
                let (min, max) = (
                    d.min.unwrap_or(1).max(1),
                    d.max.unwrap_or((d.mean * 4.0).ceil() as u64),
                );
                if !(stddev.is_finite() && stddev >= 0.0) || min > max {
                    return Err(format!("workload.{key}: need stddev >= 0 and min <= max"));
                }
                LengthDist::Normal {
                    mean: d.mean,
                    stddev,
                    min,
                    max,
                }
            }
            other => {
                return Err(format!(
                    "workload.{key}.dist `{other}`: expected uniform or normal"
                ));
            }
        };
        Ok((dist.mean().round().max(1.0) as u64, Some(dist)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::spec::DeadlinePolicy;
    use crate::plan::spec::fixtures::{GOOD, err_of};
    use crate::plan::spec::parse;

    #[test]
    fn length_distributions_open_loop_and_policies() {
        let text = GOOD
            .replace("input_tokens: 2000", "input_tokens: {dist: uniform, mean: 1000, range_ratio: 0.5}")
            .replace("output_tokens: 2000", "output_tokens: {dist: normal, mean: 200, stddev: 50, min: 10, max: 400}\n  request_rate: 4.5\n  burstiness: 0.5\n  deadline: cut\n  extra_body: {top_p: 0.9}");
        let s = parse(&text, "s.yaml").expect("parses");
        let w = &s.workload;
        let din = w.input_dist.clone().expect("dist");
        assert_eq!(din.bounds(), (500, 1000), "SGLang semantics: [L*r, L]");
        assert_eq!(w.input_tokens, 750, "nominal = the distribution's mean");
        assert_eq!(w.output_dist.as_ref().map(|d| d.bounds()), Some((10, 400)));
        assert_eq!(
            (w.request_rate, w.burstiness, w.deadline),
            (Some(4.5), 0.5, DeadlinePolicy::Cut)
        );
        assert_eq!(
            w.extra_body.as_ref().and_then(|b| b.get("top_p")),
            Some(&serde_json::json!(0.9))
        );
        let v = LengthDist::Uniform {
            mean: 100,
            range_ratio: 0.2,
            range_semantics: RangeSemantics::Vllm,
        };
        assert_eq!(v.bounds(), (80, 120));
        assert_eq!(v.sample(0.0, 0.5), 80);
        assert_eq!(v.sample(0.999_999, 0.5), 120);
        let e = err_of(&GOOD.replace("input_tokens: 2000", "input_tokens: {dist: zipf, mean: 3}"));
        assert!(
            e.message.contains("uniform or normal") || e.message.contains("did not match"),
            "{e}"
        );
    }
}
