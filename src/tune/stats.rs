//! The statistics the tuner decides with: a configuration's estimate over its repeats (mean,
//! sd, 95% t-interval), the sweep's noise pooled over every configuration × load point that
//! was repeated ([`pooled_noise`]), the leader's margin over another configuration (an
//! interval from that pooled noise, or the noise threshold when the sweep measured none), and
//! the precision rule of `repeats: auto`. Pure numbers in, numbers out.

use crate::plan::spec::Goal;
use serde::Serialize;

/// mean, sample stddev (None for n < 2).
pub fn mean_sd(v: &[f64]) -> Option<(f64, Option<f64>)> {
    if v.is_empty() {
        return None;
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let sd = (v.len() > 1)
        .then(|| (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt());
    Some((mean, sd))
}

/// A two-sided confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct Interval {
    pub low: f64,
    pub high: f64,
}

/// The objective over a configuration's repeats at one load point.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Estimate {
    /// Repeats with a value.
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (None with one repeat).
    pub sd: Option<f64>,
    /// 95% t-interval of the mean (None with one repeat).
    pub ci: Option<Interval>,
}

/// The sweep's own noise: the relative spread of the objective (coefficient of variation,
/// sd ÷ |mean|), pooled over every group of repeats of one configuration at one load point
/// with two or more values: the groups' CV² weighted by their degrees of freedom (n − 1).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct PooledNoise {
    /// √(Σ (nᵢ − 1)·CVᵢ² ÷ Σ (nᵢ − 1)).
    pub cv: f64,
    /// Σ (nᵢ − 1): the degrees of freedom the pool would have if every group were as noisy.
    pub df: usize,
    /// The degrees of freedom the margins' intervals use: Satterthwaite's effective degrees
    /// of freedom of the pooled variance, (Σ kᵢ·CVᵢ²)² ÷ Σ kᵢ·CVᵢ⁴ with kᵢ = nᵢ − 1, rounded
    /// down, at least 1. Equal to `df` when every group is as noisy; as few as one group's
    /// when one group's noise dominates the pool, since the pool then knows that group's noise
    /// only from its own few repeats (issue 24: two configurations at 2% and 20% noise with
    /// the pool's full 2 df gave 11.6% false winners; with these, at most 5%).
    pub effective_df: usize,
    /// How many groups contributed.
    pub groups: usize,
}

/// Pool the relative noise of `groups` (each: one configuration's values at one load point).
/// A group with fewer than two values says nothing about the noise and is skipped, as is one
/// whose mean is 0 while its values differ (no relative spread); identical values are a CV
/// of 0. None when no group contributes.
pub fn pooled_noise<'a>(groups: impl IntoIterator<Item = &'a [f64]>) -> Option<PooledNoise> {
    let (mut weighted, mut weighted_sq, mut df, mut n_groups) = (0.0, 0.0, 0usize, 0usize);
    for g in groups {
        let Some((mean, Some(sd))) = mean_sd(g) else {
            continue;
        };
        let cv2 = if sd == 0.0 {
            0.0
        } else if mean != 0.0 && (sd / mean).is_finite() {
            (sd / mean).powi(2)
        } else {
            continue;
        };
        let k = g.len() - 1;
        weighted += k as f64 * cv2;
        weighted_sq += k as f64 * cv2 * cv2;
        df += k;
        n_groups += 1;
    }
    (df > 0).then(|| PooledNoise {
        cv: (weighted / df as f64).sqrt(),
        df,
        effective_df: effective_df(weighted, weighted_sq, df),
        groups: n_groups,
    })
}

/// Satterthwaite's degrees of freedom of Σ kᵢ·CVᵢ² from the sums Σ kᵢ·CVᵢ² and Σ kᵢ·CVᵢ⁴,
/// rounded down (rounding down keeps the interval at or above its nominal cover when the df
/// are themselves estimated from few repeats), within [1, df]. Every group at CV 0: `df`.
fn effective_df(weighted: f64, weighted_sq: f64, df: usize) -> usize {
    if weighted_sq <= 0.0 || !weighted_sq.is_finite() {
        return df;
    }
    // The tolerance: groups with equal CVs whose squares differ in the last bits.
    let eff = (weighted * weighted / weighted_sq + 1e-9).floor();
    // Cauchy–Schwarz bounds it by df; the clamp guards the rounding of near-equal CVs.
    (eff.max(1.0) as usize).min(df)
}

/// How much better the leader is than another configuration, in the objective's units
/// (positive: the leader is better, whichever the goal).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Margin {
    pub delta: f64,
    /// `delta` over the other configuration's mean (None when that mean is 0).
    pub relative: Option<f64>,
    /// The interval of `delta` (at `level`); None when the sweep measured no noise.
    pub ci: Option<Interval>,
    /// The interval's two-sided confidence: 0.95 for the decision; higher for pruning, which
    /// holds its error rate over every pair it compares.
    pub level: f64,
    /// Degrees of freedom of the interval: the pooled noise's effective ones.
    pub df: Option<f64>,
    /// "pooled" (the standard error from the pooled CV), "own" (the two configurations' own
    /// standard deviations gave the larger standard error), or "threshold" (no noise was
    /// measured: `delta` against the objective's noise threshold, no interval).
    pub basis: String,
    /// The leader is better beyond noise: the interval lies above zero, or (no interval) the
    /// relative margin exceeds the noise threshold.
    pub separated: bool,
}

impl Margin {
    /// Half the width of the interval (0 when there is none).
    pub fn half_width(&self) -> f64 {
        self.ci.map_or(0.0, |c| (c.high - c.low) / 2.0)
    }
}

/// Student's t quantile at probability `p` for `df` degrees of freedom (fractional allowed;
/// below 1 taken as 1, not finite as the normal's). From statrs' inverse CDF: exact, where
/// the old table interpolated and could not give the tails a Bonferroni correction needs.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal, StudentsT};
    let df = if df.is_nan() {
        f64::INFINITY
    } else {
        df.max(1.0)
    };
    let q = if df.is_finite() {
        StudentsT::new(0.0, 1.0, df).map(|t| t.inverse_cdf(p))
    } else {
        Err(statrs::distribution::StudentsTError::FreedomInvalid)
    };
    match q {
        Ok(q) if q.is_finite() => q,
        // Infinite degrees of freedom (or a distribution statrs refuses): the normal's.
        _ => Normal::standard().inverse_cdf(p),
    }
}

/// Student's t quantile at 0.975 (a two-sided 95% interval) for `df` degrees of freedom.
pub fn t975(df: f64) -> f64 {
    t_quantile(0.975, df)
}

/// Mean, standard deviation and 95% t-interval of a configuration's values.
pub fn estimate(values: &[f64]) -> Option<Estimate> {
    let (mean, sd) = mean_sd(values)?;
    let n = values.len();
    let ci = sd.map(|sd| {
        let h = t975((n - 1) as f64) * sd / (n as f64).sqrt();
        Interval {
            low: mean - h,
            high: mean + h,
        }
    });
    Some(Estimate { n, mean, sd, ci })
}

/// The leader's margin over `other` (`goal` says which way is better), at the 95% level
/// ([`margin_at`]).
pub fn margin(
    goal: Goal,
    leader: &Estimate,
    other: &Estimate,
    noise: Option<PooledNoise>,
    threshold: f64,
) -> Margin {
    margin_at(0.95, goal, leader, other, noise, threshold)
}

/// The leader's margin over `other` with a two-sided interval of confidence `level`. With the
/// sweep's pooled noise: delta ± t(effective df) × se, se the larger of the pooled CV's
/// standard error, CV·√(m₁²/n₁ + m₂²/n₂), and (both with two or more repeats) the pair's own,
/// √(s₁²/n₁ + s₂²/n₂), so a pair noisier than the pool is judged by its own spread. Without
/// (the sweep measured no noise), no interval: the relative margin against `threshold`.
pub fn margin_at(
    level: f64,
    goal: Goal,
    leader: &Estimate,
    other: &Estimate,
    noise: Option<PooledNoise>,
    threshold: f64,
) -> Margin {
    let delta = match goal {
        Goal::Maximize => leader.mean - other.mean,
        Goal::Minimize => other.mean - leader.mean,
    };
    let relative = (other.mean != 0.0).then(|| delta / other.mean.abs());
    let Some(p) = noise else {
        return Margin {
            delta,
            relative,
            ci: None,
            level,
            df: None,
            basis: "threshold".into(),
            separated: match relative {
                Some(r) => r > threshold,
                None => delta > 0.0,
            },
        };
    };
    let var_of_mean = |m: f64, n: usize| m * m / n as f64;
    let pooled_se =
        p.cv * (var_of_mean(leader.mean, leader.n) + var_of_mean(other.mean, other.n)).sqrt();
    let own_se = match (leader.sd, other.sd) {
        (Some(s1), Some(s2)) => (var_of_mean(s1, leader.n) + var_of_mean(s2, other.n)).sqrt(),
        _ => 0.0,
    };
    let (se, basis) = if own_se > pooled_se {
        (own_se, "own")
    } else {
        (pooled_se, "pooled")
    };
    let df = p.effective_df as f64;
    let h = t_quantile(1.0 - (1.0 - level) / 2.0, df) * se;
    let ci = Interval {
        low: delta - h,
        high: delta + h,
    };
    Margin {
        delta,
        relative,
        ci: Some(ci),
        level,
        df: Some(df),
        basis: basis.into(),
        separated: ci.low > 0.0,
    }
}

pub fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    Some(if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    })
}

/// `repeats: auto`: whether `values` (one configuration's repeats at one load point) are
/// still too spread: fewer than two, or a 95% half-width above `precision` × |mean|.
pub fn needs_more_repeats(values: &[f64], precision: f64) -> bool {
    match estimate(values) {
        Some(Estimate {
            mean, ci: Some(ci), ..
        }) => (ci.high - ci.low) / 2.0 > precision * mean.abs(),
        _ => true,
    }
}

// The exact tests the quality guard uses: counts of outputs, not timings.

/// ln(n!) for n = 0..=max.
fn ln_factorials(max: usize) -> Vec<f64> {
    let mut v = Vec::with_capacity(max + 1);
    let mut acc = 0.0;
    v.push(0.0);
    for i in 1..=max {
        acc += (i as f64).ln();
        v.push(acc);
    }
    v
}

/// Fisher's exact test, one-sided: the probability, with the row and column totals fixed, of
/// a table at least as extreme as `k1` of `n1` against `k0` of `n0` in the direction "the
/// first rate is higher".
pub fn fisher_greater(k1: usize, n1: usize, k0: usize, n0: usize) -> f64 {
    let (n, k) = (n1 + n0, k1 + k0);
    if n1 == 0 || n0 == 0 || k == 0 {
        return 1.0;
    }
    let lf = ln_factorials(n);
    let ln_choose = |a: usize, b: usize| lf[a] - lf[b] - lf[a - b];
    let denom = ln_choose(n, n1);
    let hi = k.min(n1);
    let mut p = 0.0;
    for x in k1..=hi {
        if k - x > n0 {
            continue;
        }
        p += (ln_choose(k, x) + ln_choose(n - k, n1 - x) - denom).exp();
    }
    p.min(1.0)
}

/// P(X ≥ k) for X ~ Binomial(n, 1/2): the exact one-sided McNemar test on n discordant pairs,
/// k of them going one way.
pub fn binomial_half_upper(k: usize, n: usize) -> f64 {
    if k == 0 {
        return 1.0;
    }
    if k > n {
        return 0.0;
    }
    let lf = ln_factorials(n);
    let half = (0.5f64).ln() * n as f64;
    (k..=n)
        .map(|x| (lf[n] - lf[x] - lf[n - x] + half).exp())
        .sum::<f64>()
        .min(1.0)
}

#[cfg(test)]
mod auto_repeat_tests {
    use super::{needs_more_repeats, t975};

    #[test]
    fn repeats_until_the_interval_is_narrow_enough() {
        assert!(
            needs_more_repeats(&[100.0], 0.05),
            "one repeat has no interval"
        );
        // Two close values: t(1) = 12.7 makes even a 1% spread wide.
        assert!(needs_more_repeats(&[100.0, 101.0], 0.03));
        // Five values within ±1%: the half-width is about 1.2% of the mean.
        assert!(!needs_more_repeats(
            &[99.0, 100.0, 101.0, 100.5, 99.5],
            0.03
        ));
        assert!(needs_more_repeats(&[90.0, 110.0, 95.0, 105.0, 100.0], 0.03));
    }

    /// The rule at its edge: the half-width of [98, 100, 102] is 4.303 × 2 / √3 = 4.969,
    /// 4.969% of the mean; a precision just above stops, just below goes on.
    #[test]
    fn the_precision_is_held_against_the_half_width() {
        let v = [98.0, 100.0, 102.0];
        let h = t975(2.0) * 2.0 / 3f64.sqrt() / 100.0;
        assert!(!needs_more_repeats(&v, h + 1e-6));
        assert!(needs_more_repeats(&v, h - 1e-6));
        // A negative mean: the precision is relative to |mean|.
        let n = [-98.0, -100.0, -102.0];
        assert!(!needs_more_repeats(&n, h + 1e-6));
        assert!(needs_more_repeats(&n, h - 1e-6));
        // Identical repeats meet any precision, even 0: the half-width is not above it.
        assert!(!needs_more_repeats(&[5.0, 5.0], 0.0));
        assert!(needs_more_repeats(&[], 0.5));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(values: &[f64]) -> Estimate {
        estimate(values).expect("values")
    }

    #[test]
    fn mean_sd_and_the_estimates_interval() {
        assert_eq!(mean_sd(&[]), None);
        assert_eq!(mean_sd(&[4.0]), Some((4.0, None)));
        let (m, sd) = mean_sd(&[2.0, 4.0, 9.0]).expect("values");
        assert!((m - 5.0).abs() < 1e-12);
        // Σ (x − 5)² = 9 + 1 + 16 = 26, over n − 1 = 2.
        assert!((sd.expect("sd") - 13f64.sqrt()).abs() < 1e-12);
        let e = est(&[2.0, 4.0, 9.0]);
        assert_eq!((e.n, e.mean), (3, 5.0));
        let ci = e.ci.expect("an interval");
        let h = t975(2.0) * 13f64.sqrt() / 3f64.sqrt();
        assert!((ci.low - (5.0 - h)).abs() < 1e-9 && (ci.high - (5.0 + h)).abs() < 1e-9);
        assert_eq!(est(&[7.0]).ci, None);
        assert_eq!(estimate(&[]), None);
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }

    #[test]
    fn t_quantiles_match_the_tables() {
        // Printed tables of Student's t, two-sided 95%, and the Bonferroni tails.
        for (df, t) in [
            (1.0, 12.706),
            (2.0, 4.303),
            (3.0, 3.182),
            (6.0, 2.447),
            (10.0, 2.228),
            (30.0, 2.042),
            (120.0, 1.980),
        ] {
            assert!((t975(df) - t).abs() < 5e-4, "{df}: {}", t975(df));
        }
        assert!((t_quantile(0.995, 4.0) - 4.604).abs() < 5e-4);
        assert!((t_quantile(0.9975, 2.0) - 14.089).abs() < 5e-3);
        // Below one degree of freedom is one; infinitely many (or NaN) is the normal.
        assert!((t975(0.2) - 12.706).abs() < 5e-4);
        assert!((t975(f64::INFINITY) - 1.960).abs() < 5e-4);
        assert!((t975(f64::NAN) - 1.960).abs() < 5e-4);
        // Fractional degrees of freedom lie between their neighbours.
        assert!(t975(1.5) < t975(1.0) && t975(1.5) > t975(2.0));
        // Monotone: more degrees of freedom, a narrower interval.
        let mut last = f64::INFINITY;
        for k in 1..400 {
            let t = t975(k as f64 * 0.5);
            assert!(t <= last, "{k}");
            last = t;
        }
    }

    #[test]
    fn the_pool_weights_each_groups_cv_by_its_degrees_of_freedom() {
        // 100 and 120 (mean 110, sd √200: one degree of freedom), two degrees of freedom of
        // identical values, a single value (skipped), and a zero mean with spread (skipped).
        let g1 = [100.0, 120.0];
        let g2 = [50.0, 50.0, 50.0];
        let groups: Vec<&[f64]> = vec![&g1, &g2, &[7.0], &[-1.0, 1.0]];
        let p = pooled_noise(groups).expect("a pool");
        let cv1 = 200f64.sqrt() / 110.0;
        assert_eq!((p.df, p.groups), (3, 2));
        // One group of spread and two of none: all the pool knows of the noise is that one
        // group's single degree of freedom.
        assert_eq!(p.effective_df, 1);
        assert!((p.cv - (cv1 * cv1 / 3.0).sqrt()).abs() < 1e-12, "{p:?}");
        // Zeros measured alike are a CV of 0, not nothing.
        let zeros = [0.0, 0.0];
        let p = pooled_noise(vec![&zeros[..]]).expect("a pool");
        assert_eq!((p.cv, p.df, p.effective_df, p.groups), (0.0, 1, 1, 1));
        // Every group without spread: nothing to discount, the nominal df (cargo-mutants).
        let p = pooled_noise(vec![&zeros[..], &[5.0, 5.0, 5.0][..]]).expect("a pool");
        assert_eq!((p.cv, p.df, p.effective_df), (0.0, 3, 3));
        let single = [3.0];
        assert_eq!(pooled_noise(vec![&single[..]]), None);
        assert_eq!(pooled_noise(Vec::<&[f64]>::new()), None);
        // Negative means: the CV is relative to |mean|.
        let neg = [-100.0, -120.0];
        let p = pooled_noise(vec![&neg[..]]).expect("a pool");
        assert!((p.cv - cv1).abs() < 1e-12);
    }

    /// Satterthwaite: groups as noisy as each other keep the pool's degrees of freedom; one
    /// group far noisier than the rest leaves about its own.
    #[test]
    fn the_pools_effective_degrees_of_freedom() {
        // Three groups of two, each CV 0.1 exactly (mean 100, sd 10·√2/√2 … built directly).
        let g = [100.0 - 10.0 / 2f64.sqrt(), 100.0 + 10.0 / 2f64.sqrt()];
        let p = pooled_noise(vec![&g[..], &g[..], &g[..]]).expect("a pool");
        assert_eq!((p.df, p.effective_df), (3, 3));
        // The case: 2% and 20% noise, two repeats each: 1 effective, not 2.
        let quiet = [1000.0 - 20.0 / 2f64.sqrt(), 1000.0 + 20.0 / 2f64.sqrt()];
        let loud = [1000.0 - 200.0 / 2f64.sqrt(), 1000.0 + 200.0 / 2f64.sqrt()];
        let p = pooled_noise(vec![&quiet[..], &loud[..]]).expect("a pool");
        // (0.02² + 0.2²)² ÷ (0.02⁴ + 0.2⁴) = 1.0198…: rounded down to 1.
        assert_eq!((p.df, p.effective_df), (2, 1));
        // Three repeats of the loud one and four quiet groups of three: mostly the loud one's.
        let q3 = [980.0, 1000.0, 1020.0];
        let l3 = [800.0, 1000.0, 1200.0];
        let p = pooled_noise(vec![&q3[..], &q3[..], &q3[..], &q3[..], &l3[..]]).expect("pool");
        // k = 2 each; CV² 0.0004 ×4 and 0.04: (4·2·0.0004 + 2·0.04)² ÷ (4·2·0.0004² + 2·0.04²)
        // = 0.0832² ÷ 0.00320128 = 2.162…: 2.
        assert_eq!((p.df, p.effective_df), (10, 2));
        // Equal CVs at other means: the rounding of CV² does not cost a degree of freedom.
        let a = [99.0, 101.0];
        let b = [990.0, 1010.0];
        let c = [9.9, 10.1];
        let p = pooled_noise(vec![&a[..], &b[..], &c[..]]).expect("a pool");
        assert_eq!((p.df, p.effective_df), (3, 3));
        // Rounded down, never up: CVs of 1% and 1.5% give 1.923… → 1.
        let d = [98.5, 101.5];
        let p = pooled_noise(vec![&a[..], &d[..]]).expect("a pool");
        assert_eq!((p.df, p.effective_df), (2, 1));
    }

    #[test]
    fn a_margin_from_the_pooled_noise() {
        let pool = PooledNoise {
            cv: 0.05,
            df: 6,
            effective_df: 6,
            groups: 3,
        };
        // One repeat each: only the pool knows the noise.
        let m = margin(
            Goal::Maximize,
            &est(&[1100.0]),
            &est(&[1000.0]),
            Some(pool),
            0.5,
        );
        let se = 0.05 * (1100f64.powi(2) + 1000f64.powi(2)).sqrt();
        assert_eq!((m.basis.as_str(), m.df), ("pooled", Some(6.0)));
        assert!((m.half_width() - t975(6.0) * se).abs() < 1e-9, "{m:?}");
        assert!((m.delta - 100.0).abs() < 1e-12);
        assert!((m.relative.expect("relative") - 0.1).abs() < 1e-12);
        // 100 − 2.447 × 74.3 < 0: not separated, whatever the threshold says.
        assert!(!m.separated);
        let ci = m.ci.expect("ci");
        assert!((ci.low - (100.0 - t975(6.0) * se)).abs() < 1e-9);
        assert!((ci.high - (100.0 + t975(6.0) * se)).abs() < 1e-9);
        // The interval takes the pool's effective degrees of freedom, not its nominal ones.
        let fewer = PooledNoise {
            effective_df: 2,
            ..pool
        };
        let m2 = margin(
            Goal::Maximize,
            &est(&[1100.0]),
            &est(&[1000.0]),
            Some(fewer),
            0.5,
        );
        assert_eq!(m2.df, Some(2.0));
        assert!((m2.half_width() - t975(2.0) * se).abs() < 1e-9, "{m2:?}");
        // A wider level, a wider interval, on the same degrees of freedom.
        let m3 = margin_at(
            0.99,
            Goal::Maximize,
            &est(&[1100.0]),
            &est(&[1000.0]),
            Some(pool),
            0.5,
        );
        assert!((m3.half_width() - t_quantile(0.995, 6.0) * se).abs() < 1e-9);
        // Two repeats each with a tight pool: the pair's own wider spread sets the width.
        let tight = PooledNoise { cv: 0.001, ..pool };
        let (a, b) = (est(&[1300.0, 1100.0]), est(&[900.0, 910.0]));
        let m = margin(Goal::Maximize, &a, &b, Some(tight), 0.05);
        let own = (200f64.powi(2) / 2.0 / 2.0 + 50.0 / 2.0).sqrt();
        assert_eq!(m.basis, "own");
        assert!((m.half_width() - t975(6.0) * own).abs() < 1e-9, "{m:?}");
        assert!(m.separated, "295 − 2.447 × 100.1 > 0: {m:?}");
        // Minimize: lower is better, and the margin is still positive for the leader.
        let m = margin(
            Goal::Minimize,
            &est(&[90.0, 91.0]),
            &est(&[120.0, 121.0]),
            Some(tight),
            0.05,
        );
        assert!((m.delta - 30.0).abs() < 1e-12 && m.separated, "{m:?}");
        // A pool with no spread at all: a point interval, separated by any lead.
        let zero = PooledNoise { cv: 0.0, ..pool };
        let m = margin(Goal::Maximize, &est(&[5.0]), &est(&[4.0]), Some(zero), 0.5);
        assert_eq!((m.half_width(), m.separated), (0.0, true));
        let m = margin(Goal::Maximize, &est(&[5.0]), &est(&[5.0]), Some(zero), 0.5);
        assert!(!m.separated);
    }

    #[test]
    fn without_noise_the_margin_meets_only_the_threshold() {
        let m = margin(Goal::Maximize, &est(&[1060.0]), &est(&[1000.0]), None, 0.05);
        assert_eq!((m.basis.as_str(), m.ci, m.df), ("threshold", None, None));
        assert_eq!(m.half_width(), 0.0);
        assert!(m.separated, "6% > 5%");
        let m = margin(Goal::Maximize, &est(&[1040.0]), &est(&[1000.0]), None, 0.05);
        assert!(!m.separated, "4% < 5%");
        // Exactly at the threshold is not beyond it.
        let m = margin(Goal::Maximize, &est(&[3.0]), &est(&[2.0]), None, 0.5);
        assert!(!m.separated, "{m:?}");
        // The other's mean is 0: no relative margin, any lead separates.
        let m = margin(Goal::Maximize, &est(&[1.0]), &est(&[0.0]), None, 0.05);
        assert_eq!((m.relative, m.separated), (None, true));
        let m = margin(Goal::Minimize, &est(&[1.0]), &est(&[0.0]), None, 0.05);
        assert_eq!((m.relative, m.separated), (None, false));
        // Relative to |mean|, for a negative other.
        let m = margin(Goal::Maximize, &est(&[-90.0]), &est(&[-100.0]), None, 0.05);
        assert!((m.relative.expect("relative") - 0.1).abs() < 1e-12);
    }
}

#[cfg(test)]
mod exact_tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn fisher_matches_known_values() {
        // 10/200 against 0/200: C(200,10)/C(400,10).
        let p = fisher_greater(10, 200, 0, 200);
        assert!((p - 0.000_870_26).abs() < 1e-7, "{p}");
        assert!((fisher_greater(0, 10, 0, 10) - 1.0).abs() < 1e-12);
        // The lady tasting tea: 3 of 4 against 1 of 4, one-sided p = 17/70.
        assert!((fisher_greater(3, 4, 1, 4) - 17.0 / 70.0).abs() < 1e-9);
    }

    #[test]
    fn binomial_half_matches_known_values() {
        assert_eq!(binomial_half_upper(1, 2), 0.75);
        assert!((binomial_half_upper(12, 12) - 0.5f64.powi(12)).abs() < 1e-15);
        assert_eq!(binomial_half_upper(0, 5), 1.0);
        assert_eq!(binomial_half_upper(6, 5), 0.0);
    }

    proptest! {
        #[test]
        fn fisher_is_a_probability_and_monotone(k1 in 0usize..30, n1 in 30usize..60, k0 in 0usize..30, n0 in 30usize..60) {
            let p = fisher_greater(k1, n1, k0, n0);
            prop_assert!((0.0..=1.0 + 1e-9).contains(&p));
            if k1 < n1 && k0 > 0 {
                // More decisive divergences in the candidate can only lower the p-value.
                prop_assert!(fisher_greater(k1 + 1, n1, k0 - 1, n0) <= p + 1e-12);
            }
        }
    }
}
