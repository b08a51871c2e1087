//! Knobs the evidence shows inert between two launches (issue 53 item 2). Two launches within
//! noise of each other that differ only in such knobs are equals by the server's own account:
//! re-measuring them names a winner among equals and spends the budget the answer needs
//! elsewhere, so the confirmation does not re-measure them and names the tie, with why.
//!
//! A knob is inert between two launches when the evidence of **both** shows it cannot act:
//! - the prefix cache's host tier ([`HICACHE_KNOBS`]) when the load reuses no prefix (the
//!   server's hit rate and the share the workload allows both under [`NO_REUSE`], and no verdict
//!   names evicted prefixes): a host tier keeps prefixes the device pool evicts, for requests
//!   that come back to them, and none does;
//! - `chunked_prefill_size` when prefill is a small share of the server's work (prefill computes
//!   under [`PREFILL_SMALL`] of the tokens) and a prompt fits in either chunk: the chunk splits
//!   a prompt longer than it, and none is;
//! - a size of the KV pool ([`KV_KNOBS`] but the dtype, which changes the speed and the quality
//!   too) when the pool holds more than the batch uses: KV usage under [`FULL_KV`], no
//!   retraction, no verdict that names the pool, and no prefix reuse (a larger pool keeps more
//!   prefixes).
//!
//! And any knob the effective-arguments check found not in effect on both launches: the server
//! ran its own value on each. Where the evidence is missing (an engine whose log does not say),
//! a knob can matter.

use super::rules::{FULL_KV, HICACHE_KNOBS, KV_KNOBS};
use super::types::{Evidence, Observation, Outcome, Space, evidence_of};
use crate::observe::diagnose::VerdictKind;

/// Prefix reuse under this (the server's prefix-cache hit rate, the workload's reusable share)
/// is none: random prompts still share a chat template's few tokens.
const NO_REUSE: f64 = 0.05;

/// Prefill's share of the tokens the server computes under this is small: the decode steps
/// are most of the work (the diagnosis calls a load prefill-heavy from a half up).
const PREFILL_SMALL: f64 = 0.5;

/// Why launches `a` and `b` differ only in knobs the evidence of both shows inert: one clause
/// per knob that differs (`hicache_size 0 → 16: ...`). None when they are the same point, when
/// either is not measured, or when any knob that differs can matter.
pub fn inert_tie(space: &Space, a: &Observation, b: &Observation) -> Option<String> {
    let (ea, eb) = (evidence_of(a)?, evidence_of(b)?);
    let off = |o: &Observation, key: &str| match &o.outcome {
        Outcome::Measured { not_in_effect, .. } => not_in_effect.iter().any(|k| k == key),
        Outcome::Failed { .. } => false,
    };
    let mut why = Vec::new();
    for (k, knob) in space.knobs.iter().enumerate() {
        let (&ia, &ib) = (a.point.get(k)?, b.point.get(k)?);
        if ia == ib {
            continue;
        }
        let (va, vb) = (knob.values.get(ia)?, knob.values.get(ib)?);
        let reason = if off(a, &knob.key) && off(b, &knob.key) {
            "not in effect on either launch (the effective-arguments check)".to_string()
        } else {
            inert(&knob.key, ea, eb, va.as_f64(), vb.as_f64())?
        };
        why.push(format!(
            "{} {} → {}: {reason}",
            knob.key,
            crate::plan::flags::value_label(va),
            crate::plan::flags::value_label(vb)
        ));
    }
    (!why.is_empty()).then(|| why.join("; "))
}

/// Why knob `key` (at `va` on the launch of `a`, `vb` on that of `b`) is inert between the two,
/// if both launches' evidence shows it.
fn inert(
    key: &str,
    a: &Evidence,
    b: &Evidence,
    va: Option<f64>,
    vb: Option<f64>,
) -> Option<String> {
    if HICACHE_KNOBS.contains(&key) {
        let (ra, rb) = (no_reuse(a)?, no_reuse(b)?);
        return Some(format!(
            "a host tier keeps evicted prefixes, and the load reuses none (prefix reuse {ra:.2} and {rb:.2})"
        ));
    }
    if key == "chunked_prefill_size" {
        let (sa, sb) = (small_prefill(a)?, small_prefill(b)?);
        let chunk = va?.min(vb?);
        let prompt = a.prompt_tokens?.max(b.prompt_tokens?);
        if prompt > chunk {
            return None;
        }
        return Some(format!(
            "prefill computes {:.0}% and {:.0}% of the tokens, and a prompt ({prompt:.0} tokens) fits in either chunk",
            sa * 100.0,
            sb * 100.0
        ));
    }
    if KV_KNOBS.contains(&key) && key != "kv_cache_dtype" {
        let (ua, ub) = (spare_pool(a)?, spare_pool(b)?);
        return Some(format!(
            "the pool holds more than the batch uses (KV usage {ua:.2} and {ub:.2}, no retraction, no prefix reuse)"
        ));
    }
    None
}

/// The launch's prefix reuse when it is none: the larger of what the server hit and what the
/// workload allows, under [`NO_REUSE`], and no verdict naming evicted prefixes.
fn no_reuse(e: &Evidence) -> Option<f64> {
    let r = e.prefix_reuse.filter(|r| *r < NO_REUSE)?;
    (!names(e, VerdictKind::PrefixCacheEvicted)).then_some(r)
}

/// The launch's prefill share when it is small ([`PREFILL_SMALL`]).
fn small_prefill(e: &Evidence) -> Option<f64> {
    e.prefill_share.filter(|s| *s < PREFILL_SMALL)
}

/// The launch's peak KV usage when its pool held more than the batch used: under [`FULL_KV`],
/// no retraction, no verdict about the pool, no prefix reuse.
fn spare_pool(e: &Evidence) -> Option<f64> {
    let u = e.kv_usage_max.filter(|u| *u < FULL_KV)?;
    no_reuse(e)?;
    let pool_named = [VerdictKind::KvCacheBound, VerdictKind::RetractionChurn]
        .iter()
        .any(|&v| names(e, v));
    (e.retractions.unwrap_or(0) == 0 && !pool_named).then_some(u)
}

/// Whether the launch's verdict, or one of the other limits it showed, is `v`.
fn names(e: &Evidence, v: VerdictKind) -> bool {
    e.verdict == Some(v) || e.also.contains(&v)
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::super::types::{Knob, Outcome, Point};
    use super::*;

    fn quiet(point: Point) -> Observation {
        spare(point, 1000.0)
    }

    fn edit(mut o: Observation, f: impl Fn(&mut Evidence)) -> Observation {
        if let Outcome::Measured { evidence, .. } = &mut o.outcome {
            f(evidence);
        }
        o
    }

    #[test]
    fn a_host_cache_on_a_load_that_reuses_no_prefix_is_inert() {
        let sp = space();
        let a = quiet(sp.start.clone());
        let b = quiet(with(&sp.start, HICACHE, 1));
        let why = inert_tie(&sp, &a, &b).unwrap();
        assert_eq!(
            why,
            "hicache_size 0 → 16: a host tier keeps evicted prefixes, and the load reuses none (prefix reuse 0.00 and 0.00)"
        );
        // Reuse on either launch, or unknown, or evicted prefixes named: the host tier can matter.
        let reuse = edit(b.clone(), |e| e.prefix_reuse = Some(0.3));
        assert_eq!(inert_tie(&sp, &a, &reuse), None);
        let unknown = edit(b.clone(), |e| e.prefix_reuse = None);
        assert_eq!(inert_tie(&sp, &a, &unknown), None);
        let evicted = edit(b.clone(), |e| {
            e.also = vec![VerdictKind::PrefixCacheEvicted]
        });
        assert_eq!(inert_tie(&sp, &evicted, &a), None);
        let evicted = edit(b.clone(), |e| {
            e.verdict = Some(VerdictKind::PrefixCacheEvicted)
        });
        assert_eq!(inert_tie(&sp, &a, &evicted), None);
        // Just under the threshold is none; at it, some.
        let little = edit(b.clone(), |e| e.prefix_reuse = Some(0.049));
        assert!(inert_tie(&sp, &a, &little).is_some());
        let some = edit(b, |e| e.prefix_reuse = Some(NO_REUSE));
        assert_eq!(inert_tie(&sp, &a, &some), None);
    }

    #[test]
    fn a_neighbour_that_also_differs_in_a_knob_that_can_matter_is_no_inert_tie() {
        let sp = space();
        let a = quiet(sp.start.clone());
        // The host tier and the running cap: the cap can matter.
        let b = quiet(with(&with(&sp.start, HICACHE, 1), MRR, 2));
        assert_eq!(inert_tie(&sp, &a, &b), None);
        // The same point is no tie over any knob; the KV dtype is never inert.
        assert_eq!(inert_tie(&sp, &a, &a.clone()), None);
        assert_eq!(inert_tie(&sp, &a, &quiet(with(&sp.start, DTYPE, 1))), None);
        // A failed launch has no evidence.
        assert_eq!(
            inert_tie(&sp, &a, &failed(with(&sp.start, HICACHE, 1), "oom")),
            None
        );
        // A knob no rule here knows (the page size) can matter, unless it is in effect on
        // neither launch.
        let page = quiet(with(&sp.start, PAGE, 1));
        assert_eq!(inert_tie(&sp, &a, &page), None);
        let off = |mut o: Observation| {
            if let Outcome::Measured { not_in_effect, .. } = &mut o.outcome {
                not_in_effect.push("page_size".into());
            }
            o
        };
        assert_eq!(inert_tie(&sp, &off(a.clone()), &page), None);
        assert_eq!(inert_tie(&sp, &a, &off(page.clone())), None);
        assert_eq!(
            inert_tie(&sp, &off(a.clone()), &off(page)).unwrap(),
            "page_size 1 → 16: not in effect on either launch (the effective-arguments check)"
        );
        // Two inert knobs at once: both named.
        let two = quiet(with(&with(&sp.start, HICACHE, 2), MFS, 3));
        let why = inert_tie(&sp, &a, &two).unwrap();
        assert!(
            why.starts_with("mem_fraction_static 0.82 → 0.86: the pool holds more"),
            "{why}"
        );
        assert!(why.contains("; hicache_size 0 → 32: a host tier"), "{why}");
    }

    #[test]
    fn a_pool_above_what_the_batch_uses_is_inert() {
        let sp = space();
        let a = quiet(sp.start.clone());
        let b = quiet(with(&sp.start, MFS, 4));
        assert_eq!(
            inert_tie(&sp, &a, &b).unwrap(),
            "mem_fraction_static 0.82 → 0.88: the pool holds more than the batch uses (KV usage 0.50 and 0.50, no retraction, no prefix reuse)"
        );
        // A full pool, retractions, a verdict about the pool, or prefix reuse: it can matter.
        let full = edit(b.clone(), |e| e.kv_usage_max = Some(FULL_KV));
        assert_eq!(inert_tie(&sp, &full, &a), None);
        let unknown = edit(b.clone(), |e| e.kv_usage_max = None);
        assert_eq!(inert_tie(&sp, &a, &unknown), None);
        let churn = edit(b.clone(), |e| e.retractions = Some(3));
        assert_eq!(inert_tie(&sp, &a, &churn), None);
        let no_count = edit(b.clone(), |e| e.retractions = None);
        assert!(inert_tie(&sp, &a, &no_count).is_some());
        for v in [VerdictKind::KvCacheBound, VerdictKind::RetractionChurn] {
            let named = edit(b.clone(), |e| e.verdict = Some(v));
            assert_eq!(inert_tie(&sp, &a, &named), None, "{v:?}");
            let also = edit(b.clone(), |e| e.also = vec![v]);
            assert_eq!(inert_tie(&sp, &a, &also), None, "{v:?}");
        }
        let reuse = edit(b, |e| e.prefix_reuse = Some(0.4));
        assert_eq!(inert_tie(&sp, &a, &reuse), None);
    }

    #[test]
    fn chunked_prefill_is_inert_when_prefill_is_small_and_a_prompt_fits_either_chunk() {
        let sp = Space {
            knobs: vec![
                Knob {
                    key: "max_running_requests".into(),
                    values: ints(&[8, 16, 32]),
                },
                Knob {
                    key: "chunked_prefill_size".into(),
                    values: ints(&[64, 512, 2048]),
                },
            ],
            start: vec![2, 2],
            confirm: 2,
        };
        let a = quiet(vec![2, 2]);
        let b = quiet(vec![2, 1]);
        assert_eq!(
            inert_tie(&sp, &a, &b).unwrap(),
            "chunked_prefill_size 2048 → 512: prefill computes 30% and 30% of the tokens, and a prompt (64 tokens) fits in either chunk"
        );
        // A prompt just fits the smaller chunk; one token more is split.
        assert!(inert_tie(&sp, &a, &quiet(vec![2, 0])).is_some());
        let longer = edit(b.clone(), |e| e.prompt_tokens = Some(513.0));
        assert_eq!(inert_tie(&sp, &a, &longer), None);
        let longer = edit(b.clone(), |e| e.prompt_tokens = Some(512.0));
        assert!(inert_tie(&sp, &longer, &a).is_some());
        // Prefill half the tokens or more, or not known: it can matter.
        let heavy = edit(b.clone(), |e| e.prefill_share = Some(PREFILL_SMALL));
        assert_eq!(inert_tie(&sp, &a, &heavy), None);
        let unknown = edit(b.clone(), |e| e.prefill_share = None);
        assert_eq!(inert_tie(&sp, &unknown, &a), None);
        let unknown = edit(b, |e| e.prompt_tokens = None);
        assert_eq!(inert_tie(&sp, &a, &unknown), None);
    }
}
