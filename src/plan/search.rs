//! `search:` in a sweep file: the two searches that turn a grid into a tuner.
//! - `max_load`: per configuration, on one running server, the highest concurrency (or request
//!   rate) at which the objective's SLO holds (ramp, then bisect).
//! - `preflight`: before the sweep, the highest value of a memory knob that both launches and
//!   survives a worst-case burst (bisect between `from` and `to`).
//!
//! The structure and value ranges are checked here, inside deserialization, so every error
//! carries file:line:column; what needs the rest of the spec (an SLO to search against, a
//! single load point) is checked in `spec::checks::check_cross_fields`.

use super::engine::Engine;
use super::keyed::tag_key;
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Search {
    #[serde(default)]
    pub max_load: Option<MaxLoad>,
    #[serde(default)]
    pub preflight: Option<Preflight>,
}

/// Which load the max-load search moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Axis {
    /// Closed loop: requests in flight.
    Concurrency,
    /// Open loop: arrivals per second, capped at `workload.concurrency` in flight.
    RequestRate,
}

impl Axis {
    pub fn as_str(self) -> &'static str {
        match self {
            Axis::Concurrency => "concurrency",
            Axis::RequestRate => "request_rate",
        }
    }
}

/// `search.max_load`: `{concurrency: {from: 1, to: 64}, repeats: 3}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MaxLoad {
    pub axis: Axis,
    pub range: Range,
    /// Most measurements of one probe: a probe is repeated while its result is too close to
    /// the SLO to call (within `objective.noise` of a bound, or its repeats straddle it).
    pub repeats: u64,
}

/// `{from, to, resolution}`: a closed interval searched down to `resolution`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Range {
    pub from: f64,
    pub to: f64,
    pub resolution: f64,
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} to {}, step {}", self.from, self.to, self.resolution)
    }
}

/// `search.preflight`: `{mem_fraction_static: {from: 0.80, to: 0.95, resolution: 0.01},
/// max_attempts: 6, burst_s: 60}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Preflight {
    /// The memory knob searched (a flag name, canonical form).
    pub knob: String,
    pub range: Range,
    /// Most launches the search may spend (default: enough for the bisection).
    pub max_attempts: u64,
    /// How long the worst-case burst must be survived, in seconds.
    pub burst_s: f64,
    /// More retraction events than this in the burst is a retraction storm: not survived.
    pub max_retractions: u64,
}

/// Knobs whose values are whole numbers (the search rounds to them).
pub const INTEGER_KNOBS: &[&str] = &[
    "max_running_requests",
    "cuda_graph_max_bs",
    "chunked_prefill_size",
    "max_total_tokens",
    "max_prefill_tokens",
    "kv_cache_memory_bytes",
    "max_num_seqs",
    "max_num_batched_tokens",
    "num_gpu_blocks_override",
];

/// Knobs that are a fraction of memory (at most 1).
pub const FRACTION_KNOBS: &[&str] = &["mem_fraction_static", "gpu_memory_utilization"];

/// Whether some engine's pre-flight may search `knob` (each engine's own list is
/// `Engine::memory_knobs`; which engine a sweep pre-flights on is checked with the spec).
fn is_memory_knob(knob: &str) -> bool {
    Engine::ALL.iter().any(|e| e.memory_knobs().contains(&knob))
}

/// The fewest launches a bisection of `range` needs: the two ends, then halving the gap down
/// to the resolution.
pub fn bisection_launches(range: &Range) -> u64 {
    let steps = ((range.to - range.from) / range.resolution).max(1.0);
    steps.log2().ceil() as u64 + 2
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRange {
    from: f64,
    to: f64,
    #[serde(default)]
    resolution: Option<f64>,
}

/// Check a range; `integer`: the values are whole numbers (resolution ≥ 1, default 1).
fn range(key: &str, r: RawRange, integer: bool) -> Result<Range, String> {
    let finite_pos = |x: f64| x.is_finite() && x > 0.0;
    if !finite_pos(r.from) || !finite_pos(r.to) {
        return Err(format!(
            "{key}: `from` and `to` must be numbers > 0, got from {} to {}",
            r.from, r.to
        ));
    }
    if r.from >= r.to {
        return Err(format!(
            "{key}: `from` ({}) must be below `to` ({}): the search goes up from `from`",
            r.from, r.to
        ));
    }
    if integer && (r.from.fract() != 0.0 || r.to.fract() != 0.0) {
        return Err(format!(
            "{key}: `from` and `to` must be whole numbers, got from {} to {}",
            r.from, r.to
        ));
    }
    let default = if integer { 1.0 } else { (r.to - r.from) / 16.0 };
    let resolution = r.resolution.unwrap_or(default);
    if !finite_pos(resolution) || resolution > r.to - r.from {
        return Err(format!(
            "{key}: `resolution` must be > 0 and at most to − from ({}), got {resolution}",
            r.to - r.from
        ));
    }
    if integer && resolution.fract() != 0.0 {
        return Err(format!(
            "{key}: `resolution` must be a whole number here, got {resolution}"
        ));
    }
    Ok(Range {
        from: r.from,
        to: r.to,
        resolution,
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMaxLoad {
    #[serde(default)]
    concurrency: Option<RawRange>,
    #[serde(default)]
    request_rate: Option<RawRange>,
    #[serde(default)]
    repeats: Option<u64>,
}

impl<'de> Deserialize<'de> for MaxLoad {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let r = RawMaxLoad::deserialize(d)?;
        let (axis, raw) = match (r.concurrency, r.request_rate) {
            (Some(c), None) => (Axis::Concurrency, c),
            (None, Some(q)) => (Axis::RequestRate, q),
            (Some(_), Some(_)) => {
                return Err(de::Error::custom(tag_key(
                    "max_load.request_rate",
                    "max_load: search `concurrency` or `request_rate`, not both",
                )));
            }
            (None, None) => {
                return Err(de::Error::custom(
                    "max_load: give the load to search, e.g. `concurrency: {from: 1, to: 64}` or `request_rate: {from: 0.5, to: 16}`",
                ));
            }
        };
        let key = format!("max_load.{}", axis.as_str());
        let range = range(&key, raw, axis == Axis::Concurrency)
            .map_err(|m| de::Error::custom(tag_key(&key, &m)))?;
        let repeats = r.repeats.unwrap_or(3);
        if repeats == 0 {
            return Err(de::Error::custom(tag_key(
                "max_load.repeats",
                "max_load.repeats must be at least 1",
            )));
        }
        Ok(MaxLoad {
            axis,
            range,
            repeats,
        })
    }
}

impl<'de> Deserialize<'de> for Preflight {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = serde_yaml::Mapping::deserialize(d)?;
        let mut knob: Option<(String, RawRange)> = None;
        let mut max_attempts: Option<u64> = None;
        let mut burst_s = 60.0;
        let mut max_retractions = 2;
        let bad =
            |key: &str, msg: String| de::Error::custom(tag_key(&format!("preflight.{key}"), &msg));
        for (k, v) in map {
            let Some(name) = k.as_str().map(str::to_string) else {
                return Err(de::Error::custom(
                    "preflight: keys must be names, e.g. mem_fraction_static",
                ));
            };
            match name.as_str() {
                "max_attempts" => {
                    let n = v.as_u64().filter(|&n| n >= 2).ok_or_else(|| {
                        bad(&name, "preflight.max_attempts must be a whole number ≥ 2 (the two ends of the range)".into())
                    })?;
                    max_attempts = Some(n);
                }
                "burst_s" => {
                    burst_s = v
                        .as_f64()
                        .filter(|x| x.is_finite() && *x > 0.0)
                        .ok_or_else(|| {
                            bad(
                                &name,
                                "preflight.burst_s must be a number of seconds > 0".into(),
                            )
                        })?;
                }
                "max_retractions" => {
                    max_retractions = v.as_u64().ok_or_else(|| {
                        bad(
                            &name,
                            "preflight.max_retractions must be a whole number ≥ 0".into(),
                        )
                    })?;
                }
                other => {
                    let canon = other.replace('-', "_");
                    if !is_memory_knob(&canon) {
                        let lists: Vec<String> = Engine::ALL
                            .iter()
                            .map(|e| format!("{}: {}", e.label(), e.memory_knobs().join(", ")))
                            .collect();
                        return Err(bad(
                            other,
                            format!(
                                "preflight: `{other}` is not a memory knob the pre-flight can search ({}), nor one of max_attempts, burst_s, max_retractions",
                                lists.join("; ")
                            ),
                        ));
                    }
                    if let Some((first, _)) = &knob {
                        return Err(bad(
                            other,
                            format!("preflight searches one knob: `{first}` is already given"),
                        ));
                    }
                    let raw: RawRange = serde_yaml::from_value(v).map_err(|e| {
                        bad(
                            other,
                            format!(
                                "preflight.{other}: {e}; write {{from: A, to: B, resolution: R}}"
                            ),
                        )
                    })?;
                    knob = Some((canon, raw));
                }
            }
        }
        let Some((knob, raw)) = knob else {
            return Err(de::Error::custom(
                "preflight: name the knob to search, e.g. `mem_fraction_static: {from: 0.80, to: 0.95, resolution: 0.01}`",
            ));
        };
        let integer = INTEGER_KNOBS.contains(&knob.as_str());
        let key = format!("preflight.{knob}");
        let range = range(&key, raw, integer).map_err(|m| bad(&knob, m))?;
        if FRACTION_KNOBS.contains(&knob.as_str()) && range.to > 1.0 {
            return Err(bad(
                &knob,
                format!(
                    "{key}: `to` must be at most 1 (a fraction of memory), got {}",
                    range.to
                ),
            ));
        }
        let needed = bisection_launches(&range);
        let max_attempts = max_attempts.unwrap_or(needed);
        Ok(Preflight {
            knob,
            range,
            max_attempts,
            burst_s,
            max_retractions,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bisection_launch_count_is_the_done_when_bound() {
        let r = Range {
            from: 0.80,
            to: 0.95,
            resolution: 0.01,
        };
        // 15 steps: ceil(log2 15) = 4, plus the two ends.
        assert_eq!(bisection_launches(&r), 6);
        let r = Range {
            from: 1.0,
            to: 64.0,
            resolution: 1.0,
        };
        assert_eq!(bisection_launches(&r), 8);
    }
}
