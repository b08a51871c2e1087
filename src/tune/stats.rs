//! The statistics the tuner decides with: a configuration's estimate over its repeats (mean,
//! sd, 95% t-interval), the leader's margin over another configuration (Welch's interval for a
//! difference of means, or the noise threshold with a single repeat), and the precision rule
//! of `repeats: auto`. Pure numbers in, numbers out.

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
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    pub low: f64,
    pub high: f64,
}

/// The objective over a configuration's repeats at one load point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Estimate {
    /// Repeats with a value.
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (None with one repeat).
    pub sd: Option<f64>,
    /// 95% t-interval of the mean (None with one repeat).
    pub ci: Option<Interval>,
}

/// How much better the leader is than another configuration, in the objective's units
/// (positive: the leader is better, whichever the goal).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Margin {
    pub delta: f64,
    /// `delta` over the other configuration's mean (None when that mean is 0).
    pub relative: Option<f64>,
    /// 95% Welch interval of `delta`; None when a side has a single repeat.
    pub ci: Option<Interval>,
    /// Welch–Satterthwaite degrees of freedom of the interval.
    pub df: Option<f64>,
    /// "welch", or "threshold" (a side has one repeat: `delta` against the noise threshold).
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

/// Student's t quantile at 0.975 (a two-sided 95% interval) for `df` degrees of freedom
/// (fractional for Welch): the table below, interpolated linearly in 1/df; values at or
/// above the exact ones (never narrower), accurate to ~0.01 beyond 2 degrees of freedom.
pub fn t975(df: f64) -> f64 {
    const TABLE: &[(f64, f64)] = &[
        (1.0, 12.706),
        (2.0, 4.303),
        (3.0, 3.182),
        (4.0, 2.776),
        (5.0, 2.571),
        (6.0, 2.447),
        (7.0, 2.365),
        (8.0, 2.306),
        (9.0, 2.262),
        (10.0, 2.228),
        (11.0, 2.201),
        (12.0, 2.179),
        (13.0, 2.160),
        (14.0, 2.145),
        (15.0, 2.131),
        (16.0, 2.120),
        (17.0, 2.110),
        (18.0, 2.101),
        (19.0, 2.093),
        (20.0, 2.086),
        (22.0, 2.074),
        (24.0, 2.064),
        (26.0, 2.056),
        (28.0, 2.048),
        (30.0, 2.042),
        (40.0, 2.021),
        (60.0, 2.000),
        (120.0, 1.980),
    ];
    if !df.is_finite() || df >= 120.0 {
        // Between 120 and infinity (1.960), in 1/df.
        let x = if df.is_finite() { 120.0 / df } else { 0.0 };
        return 1.960 + (1.980 - 1.960) * x;
    }
    if df <= 1.0 {
        return TABLE[0].1;
    }
    for w in TABLE.windows(2) {
        let ((d0, t0), (d1, t1)) = (w[0], w[1]);
        if df <= d1 {
            let x = (1.0 / df - 1.0 / d0) / (1.0 / d1 - 1.0 / d0);
            return t0 + (t1 - t0) * x;
        }
    }
    1.980
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

/// The leader's margin over `other` (`goal` says which way is better).
pub fn margin(goal: Goal, leader: &Estimate, other: &Estimate, noise: f64) -> Margin {
    let delta = match goal {
        Goal::Maximize => leader.mean - other.mean,
        Goal::Minimize => other.mean - leader.mean,
    };
    let relative = (other.mean != 0.0).then(|| delta / other.mean.abs());
    match (leader.sd, other.sd) {
        (Some(s1), Some(s2)) => {
            let a = s1 * s1 / leader.n as f64;
            let b = s2 * s2 / other.n as f64;
            let se = (a + b).sqrt();
            let (h, df) = if se > 0.0 {
                let df = (a + b).powi(2)
                    / (a * a / (leader.n - 1) as f64 + b * b / (other.n - 1) as f64);
                (t975(df) * se, Some(df))
            } else {
                // Every repeat on both sides gave the same value: the interval is a point.
                (0.0, None)
            };
            let ci = Interval {
                low: delta - h,
                high: delta + h,
            };
            Margin {
                delta,
                relative,
                ci: Some(ci),
                df,
                basis: "welch".into(),
                separated: ci.low > 0.0,
            }
        }
        _ => Margin {
            delta,
            relative,
            ci: None,
            df: None,
            basis: "threshold".into(),
            separated: match relative {
                Some(r) => r > noise,
                None => delta > 0.0,
            },
        },
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

#[cfg(test)]
mod auto_repeat_tests {
    use super::needs_more_repeats;

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
}
