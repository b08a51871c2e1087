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
    fn splitmix_reference_values() {
        // First outputs for seed 0, as published with the algorithm.
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
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
