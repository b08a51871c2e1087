//! How well the two searches do against servers with a known answer, with noise: the numbers
//! for docs/benchmarks.md (`cargo bench --bench tuner`). Deterministic: every trial is seeded.
//!
//! - The memory pre-flight against every threshold on the grid of the story's range
//!   (0.80..0.95, step 0.01): the value found and the launches it took.
//! - The max-load search against a TTFT curve with a knee (flat below it, the queue above it),
//!   with Gaussian noise on every measurement: how far from the knee it lands, and how many
//!   probes (measurements) it spends, over many seeded trials.

use sgtune::load::prompts::SplitMix64;
use sgtune::plan::search::{Axis, MaxLoad, Preflight, Range, bisection_launches};
use sgtune::plan::spec::{Bound, SloBound};
use sgtune::tune::preflight::{self, Attempt};
use sgtune::tune::search::{self, ProbeRun, Step};

fn gauss(rng: &mut SplitMix64) -> f64 {
    let u1 = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let u2 = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    (-2.0 * u1.max(1e-300).ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

fn preflight_table() {
    let p = Preflight {
        knob: "mem_fraction_static".into(),
        range: Range {
            from: 0.80,
            to: 0.95,
            resolution: 0.01,
        },
        max_attempts: 6,
        burst_s: 60.0,
        max_retractions: 2,
    };
    let bound = bisection_launches(&p.range);
    let (mut worst, mut exact) = (0usize, 0usize);
    let total = 16;
    for k in 0..total {
        let safe = 0.80 + k as f64 * 0.01;
        let mut h: Vec<Attempt> = Vec::new();
        let found = loop {
            match preflight::next_attempt(&p, &h) {
                preflight::Step::Try(v) => h.push(Attempt {
                    value: v,
                    survived: v <= safe + 1e-9,
                }),
                preflight::Step::Done { found, .. } => break found,
            }
        };
        worst = worst.max(h.len());
        if found.is_some_and(|f| (f - safe).abs() < 1e-9) {
            exact += 1;
        }
    }
    println!(
        "preflight 0.80..0.95 step 0.01: threshold found exactly in {exact}/{total}; launches at most {worst} (bound ceil(log2(15)) + 2 = {bound})"
    );
}

fn max_load_table() {
    let ml = MaxLoad {
        axis: Axis::Concurrency,
        range: Range {
            from: 1.0,
            to: 128.0,
            resolution: 1.0,
        },
        repeats: 3,
    };
    let bounds = [SloBound {
        column: "ttft_ms_p99".into(),
        bound: Bound::AtMost,
        limit: 2000.0,
    }];
    for cv in [0.0, 0.05, 0.10] {
        let trials = 200;
        let (mut exact, mut within_one, mut above, mut probes, mut worst_probes) =
            (0, 0, 0, 0usize, 0usize);
        for t in 0..trials {
            let mut rng = SplitMix64::new(1000 + t);
            let knee = 2.0 + (rng.next_u64() % 120) as f64;
            // Below the knee TTFT is 500 ms; past it, requests wait a whole request (8 s)
            // for a slot, more the further past.
            let ttft = |c: f64| {
                if c <= knee {
                    500.0
                } else {
                    8000.0 * (c - knee).min(3.0)
                }
            };
            let mut h: Vec<ProbeRun> = Vec::new();
            let got = loop {
                match search::next_step(&ml, &bounds, 0.05, &h) {
                    Step::Probe { load, .. } => {
                        let v = ttft(load) * (1.0 + cv * gauss(&mut rng));
                        h.push(ProbeRun {
                            load,
                            failed: false,
                            values: vec![Some(v)],
                        });
                    }
                    Step::Done { max_load } => break max_load.unwrap_or(0.0),
                }
            };
            probes += h.len();
            worst_probes = worst_probes.max(h.len());
            if got == knee {
                exact += 1;
            }
            if (got - knee).abs() <= 1.0 {
                within_one += 1;
            }
            if got > knee {
                above += 1;
            }
        }
        println!(
            "max_load 1..128 step 1, knee uniform in 2..121, TTFT noise {:.0}% CV: knee exact {exact}/{trials}, within one step {within_one}/{trials}, above the knee {above}/{trials}; probes mean {:.1}, max {worst_probes} (a grid would measure 128)",
            cv * 100.0,
            probes as f64 / trials as f64
        );
    }
    // A curve that rises through the bound (no cliff): noise near the knee is what repeats and
    // `uncertain` are for.
    for cv in [0.03, 0.10] {
        let trials = 200;
        let (mut within_one, mut above, mut probes) = (0, 0, 0usize);
        let mut worst_over: f64 = 0.0;
        for t in 0..trials {
            let mut rng = SplitMix64::new(5000 + t);
            let knee = 10.0 + (rng.next_u64() % 100) as f64;
            let slope = 2000.0 / knee;
            let mut h: Vec<ProbeRun> = Vec::new();
            let got = loop {
                match search::next_step(&ml, &bounds, 0.05, &h) {
                    Step::Probe { load, .. } => {
                        let v = slope * load * (1.0 + cv * gauss(&mut rng));
                        h.push(ProbeRun {
                            load,
                            failed: false,
                            values: vec![Some(v)],
                        });
                    }
                    Step::Done { max_load } => break max_load.unwrap_or(0.0),
                }
            };
            probes += h.len();
            if (got - knee).abs() <= 1.0 {
                within_one += 1;
            }
            if got > knee + 1e-9 {
                above += 1;
                worst_over = worst_over.max((got - knee) / knee);
            }
        }
        println!(
            "max_load on a linear TTFT curve through the bound, {:.0}% CV: within one step {within_one}/{trials}, above the true knee {above}/{trials} (by at most {:.1}% of the knee); probes mean {:.1}",
            cv * 100.0,
            worst_over * 100.0,
            probes as f64 / trials as f64
        );
    }
}

fn main() {
    preflight_table();
    max_load_table();
}
