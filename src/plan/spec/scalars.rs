//! The numbers several sections check alike: a whole number >= 1 and a number > 0, with the
//! `deserialize_with` helpers that read them into plain fields.

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use std::fmt;

pub(super) fn positive_f64<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    PositiveF64::deserialize(d).map(|p| p.0)
}

pub(super) fn opt_positive_f64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    PositiveF64::deserialize(d).map(|p| Some(p.0))
}

pub(super) fn positive_u64<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    Positive::deserialize(d).map(|p| p.0)
}

pub(super) fn opt_positive_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Positive::deserialize(d).map(|p| Some(p.0))
}

/// A whole number >= 1.
#[derive(Debug, Clone, Copy)]
pub(super) struct Positive(pub(super) u64);
impl<'de> Deserialize<'de> for Positive {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Positive;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a whole number >= 1")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Positive, E> {
                if v < 1 {
                    return Err(E::custom(format!("expected a whole number >= 1, got {v}")));
                }
                Ok(Positive(v as u64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Positive, E> {
                if v < 1 {
                    return Err(E::custom("expected a whole number >= 1, got 0"));
                }
                Ok(Positive(v))
            }
        }
        d.deserialize_any(V)
    }
}

/// A number > 0.
#[derive(Debug, Clone, Copy)]
pub(super) struct PositiveF64(pub(super) f64);
impl<'de> Deserialize<'de> for PositiveF64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = f64::deserialize(d)?;
        if !v.is_finite() || v <= 0.0 {
            return Err(de::Error::custom(format!("expected a number > 0, got {v}")));
        }
        Ok(PositiveF64(v))
    }
}
