//! The load points of `workload:`: `concurrency` (closed loop) and `request_rate` (open loop),
//! one value or a list of distinct ones.

use super::scalars::{Positive, PositiveF64};
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::fmt;

pub(super) fn default_concurrency() -> LoadPoints {
    LoadPoints(vec![1])
}

/// One concurrency or a list of distinct ones.
#[derive(Debug, Clone)]
pub(super) struct LoadPoints(pub(super) Vec<u64>);

impl<'de> Deserialize<'de> for LoadPoints {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LoadPoints;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a whole number >= 1, or a list of them (load points)")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<LoadPoints, E> {
                if v < 1 {
                    return Err(E::custom(format!("expected a whole number >= 1, got {v}")));
                }
                Ok(LoadPoints(vec![v as u64]))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<LoadPoints, E> {
                self.visit_i64(i64::try_from(v).unwrap_or(i64::MAX))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<LoadPoints, A::Error> {
                let mut out: Vec<u64> = Vec::new();
                while let Some(p) = seq.next_element::<Positive>()? {
                    if out.contains(&p.0) {
                        return Err(de::Error::custom(format!(
                            "load point {} is listed twice",
                            p.0
                        )));
                    }
                    out.push(p.0);
                }
                if out.is_empty() {
                    return Err(de::Error::custom(
                        "concurrency: give at least one load point",
                    ));
                }
                Ok(LoadPoints(out))
            }
        }
        d.deserialize_any(V)
    }
}
/// One request rate (arrivals per second) or a list of distinct ones.
#[derive(Debug, Clone)]
pub(super) struct Rates(pub(super) Vec<f64>);

impl<'de> Deserialize<'de> for Rates {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum OneOrMany {
            One(PositiveF64),
            Many(Vec<PositiveF64>),
        }
        let rates: Vec<f64> = match OneOrMany::deserialize(d).map_err(|_| {
            de::Error::custom("expected a number > 0 (requests per second), or a list of them")
        })? {
            OneOrMany::One(r) => vec![r.0],
            OneOrMany::Many(v) => v.into_iter().map(|r| r.0).collect(),
        };
        if rates.is_empty() {
            return Err(de::Error::custom("request_rate: give at least one rate"));
        }
        for (i, r) in rates.iter().enumerate() {
            if rates[..i].contains(r) {
                return Err(de::Error::custom(format!(
                    "request rate {r} is listed twice"
                )));
            }
        }
        Ok(Rates(rates))
    }
}

/// One load to measure: a closed loop at `concurrency`, or an open loop at `request_rate`
/// with `concurrency` capping the requests in flight.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LoadPoint {
    pub concurrency: u64,
    pub request_rate: Option<f64>,
}

// Rates are finite and > 0 (checked when read), so comparing their bits is comparing them.
impl Eq for LoadPoint {}
impl std::hash::Hash for LoadPoint {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.concurrency.hash(h);
        self.request_rate.map(f64::to_bits).hash(h);
    }
}

impl fmt::Display for LoadPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.request_rate {
            Some(r) => write!(
                f,
                "request rate {r}/s (at most {} in flight)",
                self.concurrency
            ),
            None => write!(f, "concurrency {}", self.concurrency),
        }
    }
}

impl LoadPoint {
    /// `c8`, or `rate2.5` in an open loop: for file names.
    pub fn label(&self) -> String {
        match self.request_rate {
            Some(r) => format!("rate{}", rate_text(Some(r))),
            None => format!("c{}", self.concurrency),
        }
    }
}

/// A request rate as written in results.csv and row keys ("" for a closed loop): the shortest
/// text that reads back as the same number.
pub fn rate_text(rate: Option<f64>) -> String {
    rate.map(|r| r.to_string()).unwrap_or_default()
}

/// A load point as tables and the decision name it: the concurrency, or `<rate>/s` in an open
/// loop; from the cells as results.csv holds them (`rate`: the `request_rate` cell, None or
/// empty in a closed loop). The one place this label is spelled.
pub fn point_label(concurrency: &str, rate: Option<&str>) -> String {
    match rate.filter(|r| !r.is_empty()) {
        None => concurrency.to_string(),
        Some(rate) => format!("{rate}/s"),
    }
}

impl LoadPoint {
    /// The label of [`point_label`] (rows of this point have this `load_point()`).
    pub fn table_label(&self) -> String {
        let rate = self.request_rate.map(|r| rate_text(Some(r)));
        point_label(&self.concurrency.to_string(), rate.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use crate::plan::spec::fixtures::{GOOD, err_of};
    use crate::plan::spec::parse;

    #[test]
    fn request_rates_as_load_points() {
        let text = GOOD.replace(
            "concurrency: 150",
            "concurrency: 64\n  request_rate: [2, 4.5, 8]",
        );
        let s = parse(&text, "s.yaml").expect("parses");
        let points: Vec<(u64, Option<f64>)> = s
            .workload
            .load_points
            .iter()
            .map(|p| (p.concurrency, p.request_rate))
            .collect();
        assert_eq!(
            points,
            vec![(64, Some(2.0)), (64, Some(4.5)), (64, Some(8.0))]
        );
        // The workload starts at the first point.
        assert_eq!(
            (s.workload.concurrency, s.workload.request_rate),
            (64, Some(2.0))
        );
        assert_eq!(s.workload.load_points[1].label(), "rate4.5");
        assert_eq!(s.workload.load_points[0].label(), "rate2");
        // One rate with several concurrencies: each concurrency caps that rate.
        let text = GOOD.replace(
            "concurrency: 150",
            "concurrency: [8, 16]\n  request_rate: 3",
        );
        let s = parse(&text, "s.yaml").expect("parses");
        assert!(
            s.workload
                .load_points
                .iter()
                .all(|p| p.request_rate == Some(3.0))
        );
        for (bad, says) in [
            ("concurrency: [8, 16]\n  request_rate: [1, 2]", "not both"),
            ("concurrency: 8\n  request_rate: [1, 1]", "listed twice"),
            ("concurrency: 8\n  request_rate: [1, 0]", "number > 0"),
            ("concurrency: 8\n  request_rate: []", "at least one"),
            (
                "concurrency: 8\n  request_rate: fast",
                "requests per second",
            ),
        ] {
            let e = err_of(&GOOD.replace("concurrency: 150", bad));
            assert!(e.message.contains(says), "{bad}: {e}");
        }
    }
}
