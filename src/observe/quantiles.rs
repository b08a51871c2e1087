//! Percentiles in bounded memory: the one structure behind the client's latency summary
//! ([`super::client`]) and the server log's throughput and KV-usage percentiles
//! ([`super::sglang_log::summary`]).
//!
//! [`Quantiles`] keeps every value up to [`EXACT_CAP`]; its percentiles are then numpy's
//! `percentile(..., method="linear")` ([`percentile`]), bit for bit. The next value moves
//! them all into a fixed log-linear histogram that keeps only counts: [`BINS`] bins from
//! [`MIN_VALUE`] (2⁻¹⁰, about a microsecond in ms) to [`MAX_VALUE`] (2³⁰, about 12 days in ms
//! or 1e9 tok/s), whose index is read off the value's `f64` bits (the exponent and the top
//! [`SUB_BITS`] bits of the mantissa). So a value of any unit (ms, tok/s, a 0..1 share, a
//! count) needs no scaling, and pushing one is a compare and a few integer operations, no
//! allocation. A percentile is still numpy's linear interpolation at rank q·(n−1), between the
//! k-th and (k+1)-th smallest values, each read as the middle of its bin (the smallest and
//! largest as themselves); count, mean, min and max stay exact.
//!
//! Error past the cap, for values in [0, [`MAX_VALUE`]]: every percentile is within
//! [`REL_ERROR`] · |exact| + [`MIN_VALUE`] of numpy's on all the values (REL_ERROR = 2⁻¹⁰,
//! under 0.1%). Values below [`MIN_VALUE`] (negative ones too) count as 0, values above
//! [`MAX_VALUE`] as about [`MAX_VALUE`] (the last bin); min and max stay exact all the same.
//! The histogram holds 160 KiB whatever the number of values; before it, the exact values
//! take at most 512 KiB.

/// Values kept exactly; the next one moves them to the histogram. The vector grows by
/// doubling up to exactly this (512 KiB). With this many values a tail percentile's sampling
/// noise already dwarfs the histogram's [`REL_ERROR`].
pub const EXACT_CAP: usize = 1 << 16;
/// Mantissa bits that pick a bin within an octave: 2^SUB_BITS bins per power of two.
pub const SUB_BITS: u32 = 9;
/// Smallest value with its own bin (2⁻¹⁰); anything below, 0 and negatives included, counts
/// as 0.
pub const MIN_VALUE: f64 = 1.0 / 1024.0;
/// Values at or above this (2³⁰, about 1.07e9) fall into the last bin.
pub const MAX_VALUE: f64 = 1_073_741_824.0;
/// Number of bins: 40 octaves from [`MIN_VALUE`] to [`MAX_VALUE`], 2^SUB_BITS each.
pub const BINS: usize = 40 << SUB_BITS;
/// Largest relative distance of a value in [`MIN_VALUE`, [`MAX_VALUE`]) from its bin's middle:
/// half a bin, 2^-(SUB_BITS+1) at the bottom of an octave.
pub const REL_ERROR: f64 = 1.0 / 1024.0;

/// Mantissa bits dropped from a value's bits to get its bin.
const SHIFT: u32 = f64::MANTISSA_DIGITS - 1 - SUB_BITS;

/// numpy.percentile(..., method="linear") on sorted data; q in [0, 100].
pub fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let pos = (q / 100.0).clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    let (a, b) = (sorted.get(lo)?, sorted.get(hi)?);
    Some(a + (b - a) * (pos - lo as f64))
}

/// One quantity's distribution in bounded memory: exact up to [`EXACT_CAP`] values, then a
/// histogram (see the module documentation for its error).
#[derive(Debug, Clone, Default)]
pub struct Quantiles {
    /// Every value so far, until the histogram takes over (then empty, its memory freed).
    exact: Vec<f64>,
    hist: Option<Hist>,
    count: u64,
    sum: f64,
    min: f64,
    max: f64,
}

/// The counts: values below [`MIN_VALUE`], then one per bin.
#[derive(Debug, Clone)]
struct Hist {
    below_min: u64,
    bins: Vec<u64>,
}

/// The bin of `v`, or None when it counts as 0 (below [`MIN_VALUE`]).
fn bin_of(v: f64) -> Option<usize> {
    if v.is_nan() || v < MIN_VALUE {
        return None;
    }
    // Positive floats order like their bits, so the bin index grows with the value.
    let i = (v.to_bits() >> SHIFT) - (MIN_VALUE.to_bits() >> SHIFT);
    Some(usize::try_from(i).map_or(BINS - 1, |i| i.min(BINS - 1)))
}

/// The middle of bin `i`: halfway between its lower edge and the next bin's.
fn bin_middle(i: usize) -> f64 {
    let first = MIN_VALUE.to_bits() >> SHIFT;
    let edge = |k: u64| f64::from_bits((first + k) << SHIFT);
    let lo = edge(i as u64);
    lo + (edge(i as u64 + 1) - lo) / 2.0
}

impl Hist {
    fn new() -> Hist {
        Hist {
            below_min: 0,
            bins: vec![0; BINS],
        }
    }

    fn add(&mut self, v: f64) {
        match bin_of(v).and_then(|i| self.bins.get_mut(i)) {
            Some(c) => *c += 1,
            None => self.below_min += 1,
        }
    }

    /// The `k`-th smallest value (0-based) as its bin's middle (0 below [`MIN_VALUE`]).
    fn value_at(&self, k: u64) -> Option<f64> {
        let mut seen = self.below_min;
        if k < seen {
            return Some(0.0);
        }
        for (i, &c) in self.bins.iter().enumerate() {
            seen += c;
            if k < seen {
                return Some(bin_middle(i));
            }
        }
        None
    }
}

impl Quantiles {
    /// Add one value; NaN and infinities are ignored. O(1), and allocation-free once the
    /// histogram has taken over.
    pub fn push(&mut self, v: f64) {
        if !v.is_finite() {
            return;
        }
        self.count += 1;
        self.sum += v;
        if self.count == 1 {
            (self.min, self.max) = (v, v);
        } else {
            self.min = self.min.min(v);
            self.max = self.max.max(v);
        }
        match &mut self.hist {
            Some(h) => h.add(v),
            None if self.exact.len() < EXACT_CAP => {
                let len = self.exact.len();
                if len == self.exact.capacity() {
                    // Double, but never past the cap.
                    self.exact.reserve_exact(len.max(16).min(EXACT_CAP - len));
                }
                self.exact.push(v);
            }
            None => {
                let mut h = Hist::new();
                for &x in &self.exact {
                    h.add(x);
                }
                h.add(v);
                self.exact = Vec::new();
                self.hist = Some(h);
            }
        }
    }

    /// Values pushed (non-finite ones not counted).
    pub fn len(&self) -> u64 {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Whether every value is still kept, so percentiles are exact (at most [`EXACT_CAP`]).
    pub fn is_exact(&self) -> bool {
        self.hist.is_none()
    }

    /// Every value in the order pushed, while the percentiles are exact.
    pub fn exact_values(&self) -> Option<&[f64]> {
        self.is_exact().then_some(self.exact.as_slice())
    }

    /// Mean of every value pushed (exact in both modes).
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum / self.count as f64)
    }

    pub fn min(&self) -> Option<f64> {
        (self.count > 0).then_some(self.min)
    }

    pub fn max(&self) -> Option<f64> {
        (self.count > 0).then_some(self.max)
    }

    /// The `k`-th smallest value (0-based) from the histogram: min and max exact, the rest
    /// bin middles, never outside [min, max] (which can only bring them closer).
    fn hist_value(&self, h: &Hist, k: u64) -> Option<f64> {
        if k == 0 {
            Some(self.min)
        } else if k + 1 >= self.count {
            Some(self.max)
        } else {
            h.value_at(k).map(|v| v.max(self.min).min(self.max))
        }
    }

    /// Percentiles `qs` (each in [0, 100]): numpy's linear interpolation, on the exact values
    /// while there are at most [`EXACT_CAP`], else on the histogram.
    pub fn percentiles(&self, qs: &[f64]) -> Vec<Option<f64>> {
        let Some(h) = &self.hist else {
            let mut s = self.exact.clone();
            s.sort_by(f64::total_cmp);
            return qs.iter().map(|q| percentile(&s, *q)).collect();
        };
        qs.iter()
            .map(|q| {
                if self.count == 0 {
                    return None;
                }
                let pos = (q / 100.0).clamp(0.0, 1.0) * (self.count - 1) as f64;
                let lo = pos.floor();
                let k = lo as u64;
                let a = self.hist_value(h, k)?;
                let b = self.hist_value(h, (k + 1).min(self.count - 1))?;
                Some(a + (b - a) * (pos - lo))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(v: &[f64]) -> Vec<f64> {
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        s
    }

    #[test]
    fn numpy_linear_percentiles() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&v, 50.0), Some(2.5));
        assert_eq!(percentile(&v, 90.0), Some(3.7));
        assert!((percentile(&v, 99.0).unwrap_or(0.0) - 3.97).abs() < 1e-12);
        // numpy.percentile([1, 2, 3, 4], 95) == 3.85
        assert!((percentile(&v, 95.0).unwrap_or(0.0) - 3.85).abs() < 1e-12);
        assert_eq!(percentile(&v, 0.0), Some(1.0));
        assert_eq!(percentile(&v, 100.0), Some(4.0));
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&[5.0], 99.0), Some(5.0));
    }

    #[test]
    fn bins_cover_the_range_at_the_stated_error() {
        let span = (MAX_VALUE.to_bits() >> SHIFT) - (MIN_VALUE.to_bits() >> SHIFT);
        assert_eq!(span, BINS as u64);
        assert_eq!(REL_ERROR, 0.5 / f64::from(1u32 << SUB_BITS));
        assert_eq!(bin_of(MIN_VALUE), Some(0));
        assert_eq!(bin_of(MIN_VALUE * 0.999), None);
        assert_eq!(bin_of(0.0), None);
        assert_eq!(bin_of(-5.0), None);
        assert_eq!(bin_of(MAX_VALUE * 0.999_999), Some(BINS - 1));
        assert_eq!(bin_of(f64::MAX), Some(BINS - 1));
        // Every bin's middle is within REL_ERROR of both its edges (so of every value in it),
        // and the bins tile the range without gaps.
        for i in 0..BINS {
            let m = bin_middle(i);
            assert_eq!(bin_of(m), Some(i));
            let lo = f64::from_bits(((MIN_VALUE.to_bits() >> SHIFT) + i as u64) << SHIFT);
            let hi = f64::from_bits(((MIN_VALUE.to_bits() >> SHIFT) + i as u64 + 1) << SHIFT);
            assert_eq!(bin_of(lo), Some(i));
            assert!(
                (m - lo) / lo <= REL_ERROR && (hi - m) / hi <= REL_ERROR,
                "bin {i}"
            );
        }
    }

    #[test]
    fn exact_then_bounded() {
        let mut q = Quantiles::default();
        assert_eq!(q.percentiles(&[50.0]), vec![None]);
        assert_eq!((q.mean(), q.min(), q.max()), (None, None, None));
        for v in [4.0, 1.0, 3.0, 2.0] {
            q.push(v);
        }
        assert_eq!(
            q.percentiles(&[0.0, 50.0, 90.0, 100.0]),
            vec![Some(1.0), Some(2.5), Some(3.7), Some(4.0)]
        );

        let mut q = Quantiles::default();
        let n = 3 * EXACT_CAP;
        for i in 0..n {
            // 1 .. 1000, evenly.
            q.push(1.0 + 999.0 * i as f64 / (n - 1) as f64);
        }
        q.push(f64::NAN);
        q.push(f64::INFINITY);
        assert!(!q.is_exact());
        assert_eq!(q.exact_values(), None);
        assert_eq!(q.len(), n as u64);
        let p = q.percentiles(&[10.0, 50.0, 90.0]);
        for (got, want) in p.iter().zip([100.9, 500.5, 900.1]) {
            let got = got.unwrap_or(0.0);
            assert!((got - want).abs() / want < 0.003, "{got} vs {want}");
        }
        assert_eq!(q.percentiles(&[0.0, 100.0]), vec![Some(1.0), Some(1000.0)]);
        // Zeros and huge values do not break it; min and max stay exact.
        q.push(0.0);
        q.push(-5.0);
        q.push(1e300);
        assert_eq!(q.percentiles(&[0.0, 100.0]), vec![Some(-5.0), Some(1e300)]);
        assert!(q.percentiles(&[1.0, 99.9]).iter().all(Option::is_some));
    }

    /// numpy's percentile on every value, and what the structure says, for `values`.
    fn check(values: &[f64], qs: &[f64]) {
        let mut q = Quantiles::default();
        for &v in values {
            q.push(v);
        }
        let s = sorted(values);
        let got = q.percentiles(qs);
        assert_eq!(q.len(), values.len() as u64);
        assert_eq!(q.min(), s.first().copied());
        assert_eq!(q.max(), s.last().copied());
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        assert!((q.mean().unwrap_or(f64::NAN) - mean).abs() <= 1e-9 * mean.abs().max(1.0));
        for (&p, got) in qs.iter().zip(got) {
            let want = percentile(&s, p);
            if values.len() <= EXACT_CAP {
                // Below the bound: numpy's number, to the bit.
                assert!(q.is_exact());
                assert_eq!(got, want, "q={p} over {} values", values.len());
            } else {
                assert!(!q.is_exact());
                let (got, want) = (got.unwrap_or(f64::NAN), want.unwrap_or(f64::NAN));
                let bound = REL_ERROR * want.abs() + MIN_VALUE + 1e-12 * want.abs();
                assert!(
                    (got - want).abs() <= bound,
                    "q={p}: {got} vs {want} (bound {bound}) over {} values",
                    values.len()
                );
            }
        }
    }

    /// `n` values spread evenly in log scale over `decades` decades from `lo`, in a scrambled
    /// order (the golden-ratio sequence, shifted by `shift`).
    fn spread(n: usize, lo: f64, decades: f64, shift: f64) -> Vec<f64> {
        (0..n)
            .map(|i| {
                let u = (i as f64 * 0.618_033_988_749_894_8 + shift).fract();
                lo * 10f64.powf(u * decades)
            })
            .collect()
    }

    #[test]
    fn exact_below_the_bound_and_within_the_error_above() {
        let qs = [
            0.0, 0.1, 1.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 100.0,
        ];
        for n in [
            1,
            2,
            3,
            1000,
            EXACT_CAP - 1,
            EXACT_CAP,
            EXACT_CAP + 1,
            EXACT_CAP + 5000,
        ] {
            // Latencies in ms over six decades.
            check(&spread(n, 0.01, 6.0, 0.1), &qs);
        }
        let n = EXACT_CAP + 3000;
        // Token usage as the log prints it: 0.00 .. 1.00, two decimals (0 included).
        let usage: Vec<f64> = (0..n).map(|i| ((i * 37) % 101) as f64 / 100.0).collect();
        check(&usage, &qs);
        // Throughput in tok/s, and counts (integers, many ties).
        check(&spread(n, 100.0, 5.0, 0.3), &qs);
        let counts: Vec<f64> = (0..n).map(|i| ((i * 7919) % 257) as f64).collect();
        check(&counts, &qs);
        // A narrow distribution: everything within one bin's width of 500.
        let narrow: Vec<f64> = (0..n).map(|i| 500.0 + (i % 100) as f64 * 1e-3).collect();
        check(&narrow, &qs);
    }

    #[test]
    fn memory_is_released_when_the_histogram_takes_over() {
        let mut q = Quantiles::default();
        for i in 0..EXACT_CAP {
            q.push(i as f64);
        }
        assert!(q.is_exact());
        assert_eq!(
            q.exact.capacity(),
            EXACT_CAP,
            "the vector never over-allocates"
        );
        q.push(1.0);
        assert!(!q.is_exact());
        assert_eq!(q.exact.capacity(), 0);
        assert_eq!(q.hist.as_ref().map(|h| h.bins.len()), Some(BINS));
    }
}
