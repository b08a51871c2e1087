//! Seeded prompts. The generator is SplitMix64, written out here rather than taken from a
//! crate so that a seed recorded today gives the same prompts with any future build (crate
//! RNGs do not promise stable streams across versions). Request `i` always gets the same
//! prompt, whichever worker sends it.

/// SplitMix64 (Steele, Lea, Flood 2014): tiny, fast, good enough for synthetic prompts.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, n) (n > 0), by rejection so there is no modulo bias.
    pub fn below(&mut self, n: u64) -> u64 {
        let n = n.max(1);
        let zone = u64::MAX - (u64::MAX % n);
        loop {
            let x = self.next_u64();
            if x < zone {
                return x % n;
            }
        }
    }
}

/// The seed of one measurement: the workload's seed mixed with the measurement's identity
/// (its load point and repeat), so that every measurement on a server gets prompts no earlier
/// one sent, and a missed cache flush cannot make one point run on the previous point's cache;
/// while every configuration still gets the same prompts at the same point and repeat.
pub fn measurement_seed(seed: u64, parts: &[u64]) -> u64 {
    let mut rng = SplitMix64::new(seed);
    let mut out = rng.next_u64();
    for &p in parts {
        out = SplitMix64::new(out ^ p.wrapping_mul(0xD1B5_4A32_D192_ED03)).next_u64();
    }
    out
}

/// The stream for request `index` of phase `stream` (0 measured, 1 warmup).
fn rng_for(seed: u64, stream: u64, index: u64) -> SplitMix64 {
    let mut mix = SplitMix64::new(seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03));
    let base = mix.next_u64();
    SplitMix64::new(base ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// `len` token ids drawn uniformly from [0, vocab).
pub fn token_ids(seed: u64, stream: u64, index: u64, len: u64, vocab: u64) -> Vec<u64> {
    let mut rng = rng_for(seed, stream, index);
    (0..len).map(|_| rng.below(vocab)).collect()
}

/// Uniform in [0, 1) with 53 random bits.
pub fn unit(rng: &mut SplitMix64) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// Request `index`'s length: `nominal` when there is no distribution, else a seeded draw.
pub fn length(
    dist: Option<&crate::plan::spec::LengthDist>,
    nominal: u64,
    seed: u64,
    stream: u64,
    index: u64,
) -> u64 {
    match dist {
        None => nominal,
        Some(d) => {
            let mut rng = rng_for(seed, stream, index);
            let (u1, u2) = (unit(&mut rng), unit(&mut rng));
            d.sample(u1, u2)
        }
    }
}

/// A standard normal draw (Box-Muller).
fn normal(rng: &mut SplitMix64) -> f64 {
    let (u1, u2) = (unit(rng), unit(rng));
    (-2.0 * (1.0 - u1).ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// Gamma(shape, 1) by Marsaglia and Tsang (2000), boosted for shape < 1.
fn gamma(rng: &mut SplitMix64, shape: f64) -> f64 {
    if shape < 1.0 {
        let u = unit(rng).max(f64::MIN_POSITIVE);
        return gamma(rng, shape + 1.0) * u.powf(1.0 / shape);
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = normal(rng);
        let v = (1.0 + c * x).powi(3);
        if v <= 0.0 {
            continue;
        }
        let u = unit(rng);
        if u < 1.0 - 0.0331 * x.powi(4)
            || u.max(f64::MIN_POSITIVE).ln() < 0.5 * x * x + d * (1.0 - v + v.ln())
        {
            return d * v;
        }
    }
}

/// Seconds to the next arrival at `rate` per second: gamma with shape `burstiness` and mean
/// 1/rate (burstiness 1 = exponential gaps = Poisson arrivals; vLLM's definition).
pub fn gamma_gap(rng: &mut SplitMix64, rate: f64, burstiness: f64) -> f64 {
    gamma(rng, burstiness) / (rate * burstiness)
}

const WORDS: &[&str] = &[
    "time", "person", "year", "way", "day", "thing", "man", "world", "life", "hand", "part",
    "child", "eye", "woman", "place", "work", "week", "case", "point", "number", "group",
    "problem", "fact", "water", "river", "stone", "light", "paper", "music", "garden", "city",
    "market", "story", "question", "answer", "window", "mountain", "engine", "system", "table",
    "language", "memory", "signal", "harbor", "forest", "winter", "summer", "bridge", "letter",
    "machine", "circle", "planet", "school", "doctor", "animal", "moment", "picture", "voice",
    "field", "morning", "evening", "road", "ocean", "island",
];

/// About `len` words of seeded text for chat prompts (word count, not exact tokens: the server
/// reports the real prompt length in `usage`, which is what is recorded).
pub fn text(seed: u64, stream: u64, index: u64, len: u64) -> String {
    let mut rng = rng_for(seed, stream, index);
    let mut out = String::with_capacity(len as usize * 7);
    for i in 0..len {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_measurement_gets_its_own_seed() {
        // Measurements differ from each other and from the plain seed.
        let a = measurement_seed(1, &[8, 0, 1]);
        assert_ne!(a, measurement_seed(1, &[8, 0, 2]));
        assert_ne!(a, measurement_seed(1, &[16, 0, 1]));
        assert_ne!(a, measurement_seed(2, &[8, 0, 1]));
        assert_eq!(a, measurement_seed(1, &[8, 0, 1]));
    }

    #[test]
    fn splitmix_reference_values() {
        // First outputs for seed 0, as published with the algorithm.
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn arrivals_have_the_requested_rate_and_shape() {
        for (rate, shape) in [(10.0, 1.0), (4.0, 0.5), (2.0, 4.0)] {
            let mut rng = SplitMix64::new(7);
            let gaps: Vec<f64> = (0..40_000)
                .map(|_| gamma_gap(&mut rng, rate, shape))
                .collect();
            let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
            let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
            // Gamma(k, θ): mean kθ = 1/rate, CV² = 1/k.
            assert!(
                (mean * rate - 1.0).abs() < 0.03,
                "rate {rate}: mean gap {mean}"
            );
            let cv2 = var / (mean * mean);
            assert!((cv2 * shape - 1.0).abs() < 0.08, "shape {shape}: CV² {cv2}");
            assert!(gaps.iter().all(|g| *g >= 0.0 && g.is_finite()));
        }
    }

    #[test]
    fn lengths_follow_their_distribution_and_are_reproducible() {
        use crate::plan::spec::{LengthDist, RangeSemantics};
        let d = LengthDist::Uniform {
            mean: 100,
            range_ratio: 0.5,
            range_semantics: RangeSemantics::Sglang,
        };
        let v: Vec<u64> = (0..5000).map(|i| length(Some(&d), 100, 1, 10, i)).collect();
        assert!(v.iter().all(|&x| (50..=100).contains(&x)));
        assert!(v.contains(&50) && v.contains(&100), "both ends reached");
        assert_eq!(
            length(Some(&d), 100, 1, 10, 42),
            length(Some(&d), 100, 1, 10, 42)
        );
        assert_eq!(length(None, 77, 1, 10, 3), 77);
        let n = LengthDist::Normal {
            mean: 200.0,
            stddev: 20.0,
            min: 150,
            max: 260,
        };
        let v: Vec<u64> = (0..5000).map(|i| length(Some(&n), 200, 1, 10, i)).collect();
        let mean = v.iter().sum::<u64>() as f64 / v.len() as f64;
        assert!((mean - 200.0).abs() < 2.0, "{mean}");
        assert!(v.iter().all(|&x| (150..=260).contains(&x)));
    }

    #[test]
    fn prompts_are_exact_length_in_range_and_reproducible() {
        let a = token_ids(1, 0, 7, 500, 8192);
        assert_eq!(a.len(), 500);
        assert!(a.iter().all(|&t| t < 8192));
        assert_eq!(a, token_ids(1, 0, 7, 500, 8192));
        assert_ne!(a, token_ids(1, 0, 8, 500, 8192));
        assert_ne!(a, token_ids(2, 0, 7, 500, 8192));
        assert_ne!(a, token_ids(1, 1, 7, 500, 8192));
        let t = text(1, 0, 3, 20);
        assert_eq!(t.split(' ').count(), 20);
        assert_eq!(t, text(1, 0, 3, 20));
    }
}
