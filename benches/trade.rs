//! The guided tune on worlds built from how an SGLang server behaves, not from the tune's own
//! rules (issue 42's "harder, fairer bench"): `cargo bench --bench trade`. Deterministic: every
//! world and every launch's noise is seeded. Every stated figure is a [`Check`]: the bench
//! exits 1 when one does not hold. `cargo test` runs it too (`test = true`).
//!
//! One physics for every world, a closed-loop load of C clients, prompts of P tokens, outputs
//! of L tokens, a request holding T = P + L KV tokens:
//!
//! - a decode step takes step(R) = a + b·R ms with CUDA graphs (a 8-20 ms, b 0.2-0.8 ms a
//!   request, seeded), × 1.3-1.5 without them (graphs run while R ≤ `cuda_graph_max_bs`);
//!   the score is output tok/s = R / step(R) × 1000;
//! - TPOT p99 ≈ step(R) × tail (1.1-1.3); TTFT p99 ≈ prefill + k·(C − R)/R·L·step(R) (the
//!   queue's wait by Little's law, k 1-1.5);
//! - R = min(C, `max_running_requests`, pool / T); the pool (`max_total_num_tokens`) grows
//!   linearly with `mem_fraction_static` above a seeded fraction (the weights' share), doubles
//!   with an fp8 KV cache (5% faster, fails the quality guard), and a fraction above a seeded
//!   one dies under load (`oom`). `page_size` has no effect. `hicache_size` (where a family
//!   has it) leaves the pool alone and costs 1-3% speed.
//!
//! Each launch's evidence is the server's as the diagnosis reads it: the `Decode batch` lines'
//! steps by running batch (the ramp at R/4, R/2, 3R/4 and the plateau at R), the pool's size,
//! the SLO's bounds with what the launch measured, running/queue/KV usage, the verdict.
//!
//! Families (a)-(g), 20 asserted seeds each and 3×20 robustness seeds printed: see
//! [`Family`] and docs/benchmarks.md. `TRADE_TRACE=a/3` prints one tune's step log (family
//! letter / seed); `TRADE_EXPORT=<dir>` writes every family's grids with their true values
//! for `scripts/bench/tpe-trade.sh` (Optuna's TPE on the same worlds).

use sgtune::load::prompts::SplitMix64;
use sgtune::observe::diagnose::VerdictKind;
use sgtune::plan::flags::ParamValue;
use sgtune::server::failure::FailureKind;
use sgtune::tune::guide::{
    self, Evidence, Failure, Knob, Next, Observation, Outcome, Point, SloSeen, Space, StepSample,
};
use std::collections::BTreeMap;
use std::fmt::Write as _;

#[path = "common/as_test.rs"]
mod as_test;
#[path = "common/check.rs"]
#[allow(dead_code)]
mod check;
use check::{Check, at_least, at_most};

/// "Reached the optimum": a launched point, truly eligible, whose true score is within this.
const TOLERANCE: f64 = 0.05;
const SEEDS: u64 = 20;
const BUDGET: usize = 16;
const WITHIN: usize = 12;
/// Random search's draws per seed: its reach is the mean over these.
const RANDOM_DRAWS: u64 = 25;
const BUDGETS: std::ops::RangeInclusive<usize> = 5..=20;
/// The noise of a launch's measurements (coefficient of variation), but in family (c).
const CV: f64 = 0.03;

// ------------------------------------------------------------------------------------------
// Seeded draws.

fn unit(rng: &mut SplitMix64) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}
fn uniform(rng: &mut SplitMix64, lo: f64, hi: f64) -> f64 {
    lo + (hi - lo) * unit(rng)
}
fn gauss(rng: &mut SplitMix64) -> f64 {
    let u1 = unit(rng);
    let u2 = unit(rng);
    (-2.0 * u1.max(1e-300).ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}
fn pick<T: Copy>(rng: &mut SplitMix64, v: &[T]) -> T {
    v[rng.below(v.len() as u64) as usize]
}

// ------------------------------------------------------------------------------------------
// The knobs.

const MFS_V: [f64; 8] = [0.80, 0.82, 0.84, 0.86, 0.88, 0.90, 0.92, 0.94];
const DTYPE_V: [&str; 3] = ["auto", "fp8_e5m2", "fp8_e4m3"];
const HICACHE_V: [i64; 4] = [0, 16, 32, 48];
const MRR_V: [i64; 8] = [8, 16, 24, 32, 48, 64, 96, 128];
const CGBS_V: [i64; 8] = [8, 16, 24, 32, 48, 64, 96, 128];
const CPF_V: [i64; 5] = [1024, 2048, 4096, 8192, 16384];
const SC_V: [f64; 4] = [0.3, 0.6, 1.0, 1.5];
const PAGE_V: [i64; 3] = [1, 16, 64];
/// What `schedule_conservativeness` does to admission: the share of the pool the scheduler
/// fills with new requests (above 1 it overshoots and retracts).
const SC_ADMIT: [f64; 4] = [1.15, 1.05, 1.0, 0.9];

#[derive(Clone, Copy, PartialEq, Debug)]
enum K {
    Mfs,
    Dtype,
    Hicache,
    Mrr,
    Cgbs,
    Cpf,
    Sc,
    Page,
}

impl K {
    fn knob(self) -> Knob {
        let ints = |v: &[i64]| v.iter().map(|&x| ParamValue::Int(x)).collect();
        let floats = |v: &[f64]| v.iter().map(|&x| ParamValue::Float(x)).collect();
        let (key, values) = match self {
            K::Mfs => ("mem_fraction_static", floats(&MFS_V)),
            K::Dtype => (
                "kv_cache_dtype",
                DTYPE_V
                    .iter()
                    .map(|s| ParamValue::Str(s.to_string()))
                    .collect(),
            ),
            K::Hicache => ("hicache_size", ints(&HICACHE_V)),
            K::Mrr => ("max_running_requests", ints(&MRR_V)),
            K::Cgbs => ("cuda_graph_max_bs", ints(&CGBS_V)),
            K::Cpf => ("chunked_prefill_size", ints(&CPF_V)),
            K::Sc => ("schedule_conservativeness", floats(&SC_V)),
            K::Page => ("page_size", ints(&PAGE_V)),
        };
        Knob {
            key: key.into(),
            values,
        }
    }
}

/// A point's settings, a knob the family leaves out at SGLang's default (the chunked prefill
/// at 8192, conservativeness 1.0, no HiCache, the KV cache in the model's dtype).
#[derive(Clone, Copy)]
struct Cfg {
    mfs: usize,
    fp8: bool,
    hicache: f64,
    mrr: f64,
    cgbs: f64,
    cpf: usize,
    sc: usize,
}

// ------------------------------------------------------------------------------------------
// The families.

#[derive(Clone, Copy, PartialEq, Debug)]
enum Family {
    /// (a) The best caps the running batch below the start's for a TPOT bound: the start runs
    /// every request at once (compute bound, no queue, TPOT over); a lower cap costs
    /// throughput and queues requests (TTFT).
    Trade,
    /// (b) The KV pool, the running cap and the CUDA graphs are stacked at the start: more KV
    /// alone lets more requests run past the graphs, and that launch is slower with a worse
    /// TTFT than the start; the best lifts all three.
    Unmask,
    /// (c) Noise that grows with the batch (cv 3% to 12%), heavy-tailed p99s (lognormal,
    /// σ 0.15), 5% of launches outliers (score × 0.6-0.8, p99 × 1.5).
    Noise,
    /// (d) The verdict names the wrong knob on 20% of launches.
    Verdict,
    /// (e) `chunked_prefill_size` best in the middle (6% slower steps a value away; TTFT up
    /// at small chunks), and `schedule_conservativeness` (below 1.0 the scheduler overshoots
    /// the pool and retracts).
    Middle,
    /// (f) `hicache_size` as it is: no room for running requests (no prefix reuse in this
    /// load), 1-3% slower; the KV lever is `mem_fraction_static`.
    Hicache,
    /// (g) A TPOT bound that needs ≤ N running and a TTFT bound that needs ≥ M > N: nothing
    /// is eligible.
    Infeasible,
}

const FAMILIES: [Family; 7] = [
    Family::Trade,
    Family::Unmask,
    Family::Noise,
    Family::Verdict,
    Family::Middle,
    Family::Hicache,
    Family::Infeasible,
];

impl Family {
    fn letter(self) -> &'static str {
        match self {
            Family::Trade => "a",
            Family::Unmask => "b",
            Family::Noise => "c",
            Family::Verdict => "d",
            Family::Middle => "e",
            Family::Hicache => "f",
            Family::Infeasible => "g",
        }
    }
    fn name(self) -> &'static str {
        match self {
            Family::Trade => "(a) trade",
            Family::Unmask => "(b) unmask",
            Family::Noise => "(c) noise",
            Family::Verdict => "(d) wrong verdicts",
            Family::Middle => "(e) best in the middle",
            Family::Hicache => "(f) hicache",
            Family::Infeasible => "(g) no eligible point",
        }
    }
    fn knobs(self) -> Vec<K> {
        match self {
            Family::Middle => vec![K::Mfs, K::Mrr, K::Cgbs, K::Cpf, K::Sc],
            Family::Hicache => vec![K::Mfs, K::Hicache, K::Mrr, K::Cgbs, K::Page],
            _ => vec![K::Mfs, K::Dtype, K::Mrr, K::Cgbs, K::Page],
        }
    }
}

// ------------------------------------------------------------------------------------------
// A world: one server and one load.

struct World {
    family: Family,
    seed: u64,
    space: Space,
    keys: Vec<K>,
    clients: f64,
    out_len: f64,
    tokens_per_request: f64,
    /// step(R) = a + b·R ms with graphs; × `nograph` without.
    a: f64,
    b: f64,
    nograph: f64,
    /// TPOT p99 over the step.
    tail: f64,
    prefill_ms: f64,
    /// TTFT p99 over the mean queue wait.
    queue_k: f64,
    /// pool tokens = `pool_per_mfs` × (mfs − `mfs0`), × 2 in fp8.
    pool_per_mfs: f64,
    mfs0: f64,
    /// The highest `mem_fraction_static` index that survives the load.
    safe_mfs: usize,
    tpot_limit: f64,
    ttft_limit: f64,
    /// The best `chunked_prefill_size` index (SGLang's default 8192 where the family has no
    /// such knob).
    best_cpf: usize,
    /// Speed lost per GB of HiCache.
    hicache_cost: f64,
    /// What the start is, for the verbose report.
    note: String,
}

/// What one point truly does, without noise.
#[derive(Clone, Debug)]
struct Phys {
    running: f64,
    graphs: bool,
    step: f64,
    score: f64,
    tpot: f64,
    ttft: f64,
    pool: f64,
    usage: f64,
    queue: f64,
    retractions: u64,
    verdict: VerdictKind,
    quality: bool,
}

impl Phys {
    fn eligible(&self, w: &World) -> bool {
        self.quality && self.tpot <= w.tpot_limit && self.ttft <= w.ttft_limit
    }
}

/// `m0` and the pool's tokens per unit of memory fraction such that the pool holds `s0`
/// requests at `mfs[ms]` and `s1` at `mfs[mx]`, the weights' share at most just below the
/// lowest fraction of the grid.
fn calibrate(ms: usize, s0: f64, mx: usize, s1: f64, t: f64) -> (f64, f64) {
    let (fs, fx) = (MFS_V[ms], MFS_V[mx]);
    let m0 = ((s1 * fs - s0 * fx) / (s1 - s0)).clamp(0.5, MFS_V[0] - 0.005);
    (s0 * t / (fs - m0), m0)
}

impl World {
    fn new(family: Family, seed: u64, confirm: usize) -> World {
        let salt = 0x7EAD_E000 + family.letter().as_bytes()[0] as u64;
        let mut rng = SplitMix64::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt);
        let keys = family.knobs();
        let mut w = World {
            family,
            seed,
            space: Space {
                knobs: keys.iter().map(|k| k.knob()).collect(),
                start: Vec::new(),
                confirm,
            },
            keys,
            clients: 0.0,
            out_len: 0.0,
            tokens_per_request: 0.0,
            a: 0.0,
            b: 0.0,
            nograph: 0.0,
            tail: 0.0,
            prefill_ms: 0.0,
            queue_k: 0.0,
            pool_per_mfs: 0.0,
            mfs0: 0.0,
            safe_mfs: 0,
            tpot_limit: f64::INFINITY,
            ttft_limit: f64::INFINITY,
            best_cpf: 3,
            hicache_cost: 0.0,
            note: String::new(),
        };
        // The server and the load.
        let draw = |w: &mut World, rng: &mut SplitMix64| {
            w.a = uniform(rng, 8.0, 20.0);
            w.b = uniform(rng, 0.2, 0.8);
            w.nograph = uniform(rng, 1.3, 1.5);
            w.tail = uniform(rng, 1.1, 1.3);
            w.clients = pick(rng, &[64.0, 96.0, 128.0]);
            w.out_len = 192.0 + rng.below(321) as f64;
            let prompt = 512.0 + rng.below(1025) as f64;
            w.tokens_per_request = prompt + w.out_len;
            w.prefill_ms = prompt * uniform(rng, 0.08, 0.15);
            w.queue_k = uniform(rng, 1.0, 1.5);
            w.safe_mfs = 4 + rng.below(3) as usize;
            w.hicache_cost = uniform(rng, 0.01, 0.03) / 48.0;
        };
        draw(&mut w, &mut rng);
        // The start's settings (indices), in the family's knobs.
        let mut mfs = 1usize;
        let (mrr, cgbs);
        let idx_ge =
            |v: &[i64], x: f64| v.iter().position(|&y| y as f64 >= x).unwrap_or(v.len() - 1);
        match family {
            Family::Trade => {
                // Everything runs at the start, with graphs; the TPOT bound holds at a cap of
                // 40-75% of the load.
                mfs = 3;
                let s0 = w.clients * uniform(&mut rng, 1.15, 1.4);
                let s1 = s0 * uniform(&mut rng, 1.2, 1.5);
                (w.pool_per_mfs, w.mfs0) = calibrate(mfs, s0, w.safe_mfs, s1, w.tokens_per_request);
                mrr = 7;
                cgbs = idx_ge(&CGBS_V, w.clients);
                let targets: Vec<f64> = MRR_V
                    .iter()
                    .map(|&x| x as f64)
                    .filter(|&x| x >= 0.4 * w.clients && x <= 0.75 * w.clients)
                    .collect();
                let rt = pick(&mut rng, &targets);
                w.tpot_limit = w.tail * w.step(rt, true) * uniform(&mut rng, 1.02, 1.08);
                w.ttft_limit = w.ttft_of(rt, w.step(rt, true)) * uniform(&mut rng, 1.3, 2.0);
                w.note = format!("TPOT holds up to about {rt} running");
            }
            Family::Unmask => {
                // The pool holds R1 at the start, graphs to R1, the cap one value above: more
                // KV alone runs R2 > R1 without graphs, slower and with a worse TTFT. Drawn
                // again until that holds (it is what the family is).
                mfs = 0;
                let mut r1;
                let mut tries = 0;
                loop {
                    tries += 1;
                    w.clients = pick(&mut rng, &[96.0, 128.0]);
                    r1 = pick(&mut rng, &[16.0, 24.0, 48.0]);
                    let r2 = MRR_V[idx_ge(&MRR_V, r1) + 1] as f64;
                    let slower = r2 / w.step(r2, false) < 0.97 * r1 / w.step(r1, true);
                    let worse =
                        w.ttft_of(r2, w.step(r2, false)) > 1.03 * w.ttft_of(r1, w.step(r1, true));
                    if (slower && worse) || tries > 500 {
                        break;
                    }
                    draw(&mut w, &mut rng);
                }
                let s1 = w.clients * uniform(&mut rng, 1.1, 1.4);
                (w.pool_per_mfs, w.mfs0) =
                    calibrate(mfs, r1 + 0.5, w.safe_mfs, s1, w.tokens_per_request);
                cgbs = idx_ge(&CGBS_V, r1);
                mrr = idx_ge(&MRR_V, r1) + 1;
                let targets: Vec<f64> = MRR_V
                    .iter()
                    .map(|&x| x as f64)
                    .filter(|&x| x >= 0.5 * w.clients && x > MRR_V[mrr] as f64)
                    .collect();
                let rt = pick(&mut rng, &targets);
                w.tpot_limit = w.tail * w.step(rt, true) * uniform(&mut rng, 1.02, 1.08);
                w.ttft_limit =
                    w.ttft_of(rt, w.step(rt, true)) * uniform(&mut rng, 1.3, 2.0) + w.prefill_ms;
                w.note = format!(
                    "pool, graphs {r1}, cap {}; TPOT holds up to about {rt} running",
                    MRR_V[mrr]
                );
            }
            _ => {
                // The start breaks the SLO for stacked limits (as the guided bench's hard
                // surfaces): its pool holds 30-70% of the load, its cap is below the load
                // (below or above what the pool holds), its graphs below the load in two
                // seeds of three.
                let s0 = w.clients * uniform(&mut rng, 0.3, 0.7);
                let s1 = w.clients * uniform(&mut rng, 1.1, 1.4);
                (w.pool_per_mfs, w.mfs0) = calibrate(mfs, s0, w.safe_mfs, s1, w.tokens_per_request);
                let below: Vec<usize> = (0..MRR_V.len())
                    .filter(|&i| (MRR_V[i] as f64) < w.clients && MRR_V[i] >= 16)
                    .collect();
                let cap_first = rng.below(2) == 0;
                let choices: Vec<usize> = below
                    .iter()
                    .copied()
                    .filter(|&i| ((MRR_V[i] as f64) < s0) == cap_first)
                    .collect();
                mrr = if choices.is_empty() {
                    pick(&mut rng, &below)
                } else {
                    pick(&mut rng, &choices)
                };
                let cg_below: Vec<usize> = (1..CGBS_V.len())
                    .filter(|&i| (CGBS_V[i] as f64) < w.clients)
                    .collect();
                cgbs = if rng.below(3) < 2 {
                    pick(&mut rng, &cg_below)
                } else {
                    idx_ge(&CGBS_V, w.clients)
                };
                if family == Family::Infeasible {
                    // TPOT holds up to N running, TTFT from M ≈ 1.5 N: never both.
                    let n = pick(&mut rng, &[16.0f64, 24.0, 32.0, 48.0]).min(w.clients / 2.0);
                    w.tpot_limit = w.tail * w.step(n, true) * 1.02;
                    let most = (1..=w.clients as usize)
                        .map(|r| r as f64)
                        .filter(|&r| w.tail * w.step(r, true) <= w.tpot_limit)
                        .fold(1.0, f64::max);
                    let m = (1.5 * most).ceil().min(w.clients - 1.0);
                    w.ttft_limit = w.ttft_of(m, w.step(m, true)) * 0.97;
                    w.note = format!("TPOT needs ≤ {most} running, TTFT ≥ {m}");
                } else {
                    // Half the seeds: the SLO holds with everything running on graphs; the
                    // others: up to 50-75% of the load.
                    let rt = if rng.below(2) == 0 {
                        w.clients
                    } else {
                        let t: Vec<f64> = MRR_V
                            .iter()
                            .map(|&x| x as f64)
                            .filter(|&x| x >= 0.5 * w.clients && x <= 0.75 * w.clients)
                            .collect();
                        pick(&mut rng, &t)
                    };
                    w.tpot_limit = w.tail * w.step(rt, true) * uniform(&mut rng, 1.03, 1.10);
                    w.ttft_limit = w.ttft_of(rt, w.step(rt, true)) * uniform(&mut rng, 1.3, 2.0)
                        + w.prefill_ms;
                    w.note = format!(
                        "pool holds {:.0}, cap {}, graphs {} of {} offered; TPOT holds up to about {rt} running",
                        s0.floor(),
                        MRR_V[mrr],
                        CGBS_V[cgbs],
                        w.clients
                    );
                }
                if family == Family::Middle {
                    w.best_cpf = 1 + rng.below(2) as usize;
                }
            }
        }
        w.space.start = w
            .keys
            .iter()
            .map(|k| match k {
                K::Mfs => mfs,
                K::Mrr => mrr,
                K::Cgbs => cgbs,
                K::Cpf => 3,
                K::Sc => 2,
                _ => 0,
            })
            .collect();
        w
    }

    /// One decode step (ms) at `r` running, graphs on or off, at the default settings.
    fn step(&self, r: f64, graphs: bool) -> f64 {
        (self.a + self.b * r) * if graphs { 1.0 } else { self.nograph }
    }

    /// TTFT p99 (ms) at `r` running with steps of `step` ms, at the default chunked prefill.
    fn ttft_of(&self, r: f64, step: f64) -> f64 {
        self.prefill_ms + self.queue_k * (self.clients - r).max(0.0) / r * self.out_len * step
    }

    fn cfg(&self, p: &Point) -> Cfg {
        let mut c = Cfg {
            mfs: 0,
            fp8: false,
            hicache: 0.0,
            mrr: f64::INFINITY,
            cgbs: 160.0,
            cpf: 3,
            sc: 2,
        };
        for (k, &i) in self.keys.iter().zip(p) {
            match k {
                K::Mfs => c.mfs = i,
                K::Dtype => c.fp8 = i > 0,
                K::Hicache => c.hicache = HICACHE_V[i] as f64,
                K::Mrr => c.mrr = MRR_V[i] as f64,
                K::Cgbs => c.cgbs = CGBS_V[i] as f64,
                K::Cpf => c.cpf = i,
                K::Sc => c.sc = i,
                K::Page => {}
            }
        }
        c
    }

    fn pool(&self, c: &Cfg) -> f64 {
        self.pool_per_mfs * (MFS_V[c.mfs] - self.mfs0) * if c.fp8 { 2.0 } else { 1.0 }
    }

    /// The step time (ms) at `r` running with `c`'s settings.
    fn step_at(&self, c: &Cfg, r: f64) -> f64 {
        let mut s = self.step(r, r <= c.cgbs);
        // A chunk away from the best: prefill chunks stall (too large) or fragment (too
        // small) the decode steps.
        s *= 1.0 + 0.06 * c.cpf.abs_diff(self.best_cpf) as f64;
        s *= 1.0 + self.hicache_cost * c.hicache;
        if c.fp8 {
            s /= 1.05;
        }
        s
    }

    /// What a point truly does; None when it dies (OOM).
    fn phys(&self, p: &Point) -> Option<Phys> {
        let c = self.cfg(p);
        if c.mfs > self.safe_mfs {
            return None;
        }
        let pool = self.pool(&c);
        let t = self.tokens_per_request;
        let kv_cap = (pool / t).floor().max(1.0);
        let want = self.clients.min(c.mrr);
        // The scheduler admits against its estimate of the pool: conservativeness below 1
        // overshoots it and retracts (the retracted requests' work is lost), above 1 leaves
        // room.
        let admit_cap = (kv_cap * SC_ADMIT[c.sc]).floor().max(1.0);
        let admitted = want.min(admit_cap);
        let (running, retractions) = if admitted > kv_cap {
            let over = admitted / kv_cap - 1.0;
            (
                kv_cap * (1.0 - 1.5 * over),
                ((admitted - kv_cap) * 10.0) as u64,
            )
        } else {
            (admitted, 0)
        };
        let running = running.max(1.0);
        let graphs = running <= c.cgbs;
        let step = self.step_at(&c, running);
        let score = running / step * 1000.0;
        let queue = (self.clients - running).max(0.0);
        // Smaller chunks: more prefill passes per prompt.
        let prefill = self.prefill_ms * (CPF_V[3] as f64 / CPF_V[c.cpf] as f64).max(1.0).powf(0.5);
        let ttft = prefill + self.queue_k * queue / running * self.out_len * step;
        let usage = if retractions > 0 {
            0.99
        } else {
            (admitted * t / pool).min(0.99)
        };
        let verdict = if retractions > 0 {
            VerdictKind::RetractionChurn
        } else if queue > 0.0 {
            if usage >= 0.9 {
                VerdictKind::KvCacheBound
            } else {
                VerdictKind::QueueWithSpareKv
            }
        } else if !graphs {
            VerdictKind::CudaGraphLimited
        } else {
            VerdictKind::ComputeBound
        };
        Some(Phys {
            running,
            graphs,
            step,
            score,
            tpot: step * self.tail,
            ttft,
            pool,
            usage,
            queue,
            retractions,
            verdict,
            quality: !c.fp8,
        })
    }

    /// The true score of a point when it is eligible.
    fn eligible_score(&self, p: &Point) -> Option<f64> {
        self.phys(p).filter(|x| x.eligible(self)).map(|x| x.score)
    }

    /// The measurement noise (cv) at `r` running.
    fn cv(&self, r: f64) -> f64 {
        if self.family == Family::Noise {
            0.03 + 0.09 * ((r - 8.0) / 120.0).clamp(0.0, 1.0)
        } else {
            CV
        }
    }

    /// One launch, measured: None when it dies.
    fn launch(&self, p: &Point, rng: &mut SplitMix64) -> Option<Launch> {
        let x = self.phys(p)?;
        let c = self.cfg(p);
        let cv = self.cv(x.running);
        let noisy = self.family == Family::Noise;
        // An outlier launch (a noisy neighbour, a throttled clock): everything slower.
        let slow = if noisy && unit(rng) < 0.05 {
            uniform(rng, 0.6, 0.8)
        } else {
            1.0
        };
        let p99 = |rng: &mut SplitMix64| {
            let heavy = if noisy {
                (0.15 * gauss(rng)).exp()
            } else {
                1.0
            };
            (1.0 + cv * gauss(rng)).max(0.5) * heavy * if slow < 1.0 { 1.5 } else { 1.0 }
        };
        let score = x.score * (1.0 + cv * gauss(rng)).max(0.3) * slow;
        let tpot = x.tpot * p99(rng);
        let ttft = x.ttft * p99(rng);
        // The Decode lines: the ramp and the drain at a quarter, half and three quarters of
        // the plateau (a few lines each), the plateau most.
        let r = x.running;
        let mut steps: Vec<StepSample> = Vec::new();
        for (share, lines) in [
            (0.25, 2 + rng.below(2) as u32),
            (0.5, 2 + rng.below(2) as u32),
            (0.75, 2 + rng.below(3) as u32),
            (1.0, 20 + rng.below(21) as u32),
        ] {
            let rb = (r * share).round().max(1.0);
            if let Some(s) = steps.iter_mut().find(|s| s.running == rb) {
                s.lines += lines;
                continue;
            }
            let ms = self.step_at(&c, rb) / slow * (1.0 + self.cv(rb) * gauss(rng)).max(0.5);
            steps.push(StepSample {
                running: rb,
                step_ms: ms,
                graph: Some(rb <= c.cgbs),
                lines,
            });
        }
        let n: f64 = steps.iter().map(|s| s.lines as f64).sum();
        let running_mean = steps
            .iter()
            .map(|s| s.running * s.lines as f64)
            .sum::<f64>()
            / n;
        let mut verdict = x.verdict;
        if self.family == Family::Verdict && unit(rng) < 0.2 {
            verdict = match verdict {
                VerdictKind::KvCacheBound => VerdictKind::QueueWithSpareKv,
                VerdictKind::QueueWithSpareKv => VerdictKind::KvCacheBound,
                VerdictKind::ComputeBound => VerdictKind::CudaGraphLimited,
                VerdictKind::CudaGraphLimited => VerdictKind::ComputeBound,
                VerdictKind::RetractionChurn => VerdictKind::KvCacheBound,
                v => v,
            };
        }
        // The diagnosis names every limit it sees (issue 42): decode past the graphs beside
        // the verdict's own limit.
        let also = if r > c.cgbs && verdict != VerdictKind::CudaGraphLimited {
            vec![VerdictKind::CudaGraphLimited]
        } else {
            Vec::new()
        };
        Some(Launch {
            score,
            tpot,
            ttft,
            evidence: Evidence {
                verdict: Some(verdict),
                also,
                text: String::new(),
                kv_usage_max: Some((x.usage * (1.0 - 0.02 * unit(rng))).min(1.0)),
                running_mean: Some(running_mean),
                running_max: Some(r),
                queue_mean: Some((x.queue * (1.0 + 0.05 * gauss(rng))).max(0.0)),
                offered: Some(self.clients),
                retractions: Some(x.retractions),
                steps,
                pool_tokens: Some(x.pool.floor()),
                bounds: Vec::new(),
                client_server: None,
                // No load of these worlds reuses a prefix (random prompts); prefill computes
                // the prompt, decode the output.
                prefix_reuse: Some(0.0),
                prefill_share: Some(1.0 - self.out_len / self.tokens_per_request),
                prompt_tokens: Some(self.tokens_per_request - self.out_len),
            },
        })
    }

    /// Every launch of a point so far pooled as the tune's path pools a configuration's rows:
    /// the mean score, the median of each bound; the last launch's evidence.
    fn pooled(&self, p: &Point, launches: &[Launch]) -> Outcome {
        let (Some(x), Some(last)) = (self.phys(p), launches.last()) else {
            return Outcome::Failed {
                kind: Failure::Server(FailureKind::Oom),
            };
        };
        let n = launches.len() as f64;
        let score = launches.iter().map(|l| l.score).sum::<f64>() / n;
        let med = |f: fn(&Launch) -> f64| {
            let mut v: Vec<f64> = launches.iter().map(f).collect();
            v.sort_by(f64::total_cmp);
            let m = v.len() / 2;
            if v.len() % 2 == 1 {
                v[m]
            } else {
                (v[m - 1] + v[m]) / 2.0
            }
        };
        let tpot = med(|l| l.tpot);
        let ttft = med(|l| l.ttft);
        let mut evidence = last.evidence.clone();
        evidence.bounds = vec![
            SloSeen {
                column: "ttft_ms_p99".into(),
                at_most: true,
                limit: self.ttft_limit,
                measured: Some(ttft),
            },
            SloSeen {
                column: "tpot_ms_p99".into(),
                at_most: true,
                limit: self.tpot_limit,
                measured: Some(tpot),
            },
        ];
        let excess = (ttft / self.ttft_limit).max(tpot / self.tpot_limit);
        let slo_ok = excess <= 1.0;
        let mut broken = Vec::new();
        if ttft > self.ttft_limit {
            broken.push("ttft_ms_p99");
        }
        if tpot > self.tpot_limit {
            broken.push("tpot_ms_p99");
        }
        Outcome::Measured {
            score,
            cv: Some(self.cv(x.running)),
            eligible: x.quality && slo_ok,
            why_not: if !x.quality {
                "quality: fail".into()
            } else if !slo_ok {
                format!("SLO not met: {}", broken.join(", "))
            } else {
                String::new()
            },
            slo_excess: (x.quality && !slo_ok).then_some(excess),
            evidence,
            not_in_effect: Vec::new(),
        }
    }

    /// The grid's true values, one line per point, for scripts/bench/tpe-trade.py.
    fn export(&self, grid: &[Point]) -> String {
        let mut out = String::new();
        let keys: Vec<&str> = self.space.knobs.iter().map(|k| k.key.as_str()).collect();
        let noisy = self.family == Family::Noise;
        let _ = writeln!(
            out,
            "# seed {} family {} tolerance {TOLERANCE} outliers {} p99_sigma {}; a point: eligible when ttft_ratio <= 1 and tpot_ratio <= 1 and quality = 1; cv: its measurement noise",
            self.seed,
            self.family.letter(),
            if noisy { 0.05 } else { 0.0 },
            if noisy { 0.15 } else { 0.0 },
        );
        let start: Vec<String> = self.space.start.iter().map(|i| i.to_string()).collect();
        let _ = writeln!(out, "# start {}", start.join(","));
        let _ = writeln!(
            out,
            "{},status,score,ttft_ratio,tpot_ratio,quality,cv",
            keys.join(",")
        );
        for p in grid {
            let idx: Vec<String> = p.iter().map(|i| i.to_string()).collect();
            match self.phys(p) {
                None => {
                    let _ = writeln!(out, "{},failed,,,,,", idx.join(","));
                }
                Some(x) => {
                    let _ = writeln!(
                        out,
                        "{},ok,{:.4},{:.5},{:.5},{},{:.4}",
                        idx.join(","),
                        x.score,
                        x.ttft / self.ttft_limit,
                        x.tpot / self.tpot_limit,
                        u8::from(x.quality),
                        self.cv(x.running)
                    );
                }
            }
        }
        out
    }
}

struct Launch {
    score: f64,
    tpot: f64,
    ttft: f64,
    evidence: Evidence,
}

fn grid(sp: &Space) -> Vec<Point> {
    let mut out: Vec<Point> = vec![vec![]];
    for k in &sp.knobs {
        out = out
            .into_iter()
            .flat_map(|p| {
                (0..k.values.len()).map(move |i| {
                    let mut q = p.clone();
                    q.push(i);
                    q
                })
            })
            .collect();
    }
    out
}

// ------------------------------------------------------------------------------------------
// The tune and random search.

struct Trial {
    /// The launch (1-based) that first hit a point within tolerance of the optimum.
    reached: Option<usize>,
    launches: usize,
    stop: String,
    /// Confirmation launches of a point that differs from the leader only in knobs the evidence
    /// marks inert (`guide::inert_tie`): a winner named among equals (issue 53 item 2).
    inert_confirms: usize,
}

fn show(n: Option<usize>) -> String {
    n.map_or("never".into(), |n| n.to_string())
}

/// The tune on `w` at `budget`; `traced`: the run that `TRADE_TRACE` may print.
fn guided(w: &World, opt: f64, budget: usize, traced: bool) -> Trial {
    let sp = &w.space;
    let mut rng = SplitMix64::new(w.seed ^ 0x1A0C_4E5D);
    let mut seen: Vec<Observation> = Vec::new();
    let mut runs: BTreeMap<Point, Vec<Launch>> = BTreeMap::new();
    let mut reached = None;
    let mut launched = 0;
    let mut inert_confirms = 0;
    let trace = std::env::var("TRADE_TRACE")
        .is_ok_and(|t| t == format!("{}/{}", w.family.letter(), w.seed))
        && traced;
    let within = |p: &Point| {
        opt > 0.0
            && w.eligible_score(p)
                .is_some_and(|v| v >= opt * (1.0 - TOLERANCE))
    };
    if trace {
        println!(
            "  {} seed {}: {} offered, {}; TPOT ≤ {:.1} ms, TTFT ≤ {:.0} ms; optimum {opt:.0} tok/s",
            w.family.name(),
            w.seed,
            w.clients,
            w.note,
            w.tpot_limit,
            w.ttft_limit
        );
    }
    let stop = loop {
        match guide::next(sp, &seen, budget - launched) {
            Next::Stop { why } => break why,
            Next::Launch(ps) => {
                for p in ps {
                    let known = seen.iter().position(|o| o.point == p.point);
                    assert_eq!(known.is_some(), p.confirm, "{}", p.why);
                    if let (Some(i), Some(lead), false) =
                        (known, guide::leader(sp, &seen), p.remeasure)
                    {
                        if i != lead && guide::inert_tie(sp, &seen[lead], &seen[i]).is_some() {
                            inert_confirms += 1;
                        }
                    }
                    launched += 1;
                    let l = w.launch(&p.point, &mut rng);
                    let list = runs.entry(p.point.clone()).or_default();
                    if let Some(l) = l {
                        list.push(l);
                    }
                    let outcome = w.pooled(&p.point, list);
                    if trace {
                        let truth = match w.phys(&p.point) {
                            None => "dies (oom)".to_string(),
                            Some(x) => format!(
                                "R {:.0}{}, step {:.1} ms, {}, true {:.0} of {opt:.0}{}",
                                x.running,
                                if x.graphs { "" } else { " no graphs" },
                                x.step,
                                x.verdict.as_str(),
                                x.score,
                                if x.eligible(w) { "" } else { " (ineligible)" }
                            ),
                        };
                        println!("    {launched}. {} [{truth}]", p.why);
                    }
                    match known {
                        Some(i) => {
                            seen[i].outcome = outcome;
                            seen[i].again(&p);
                        }
                        None => seen.push(Observation::once(p.point.clone(), outcome)),
                    }
                    if reached.is_none() && within(&p.point) {
                        reached = Some(launched);
                    }
                }
            }
        }
    };
    if trace {
        println!("    stop after {launched} launches: {stop}");
    }
    Trial {
        reached,
        launches: launched,
        stop,
        inert_confirms,
    }
}

/// Random search: the draw (1-based) at which distinct random grid points first hit a good
/// point, within `n` draws.
fn random_reach(good: &[bool], n: usize, seed: u64) -> Option<usize> {
    let mut rng = SplitMix64::new(seed ^ 0x00AB_5E17);
    let mut idx: Vec<usize> = (0..good.len()).collect();
    (0..n.min(idx.len())).find_map(|i| {
        let j = i + rng.below((idx.len() - i) as u64) as usize;
        idx.swap(i, j);
        good[idx[i]].then_some(i + 1)
    })
}

// ------------------------------------------------------------------------------------------
/// Optuna's TPE on the same worlds (`scripts/bench/tpe-trade.sh target/trade-worlds --repeats
/// 20 --jobs 2`, optuna 5.1.0, 20 Optuna seeds a world, the start enqueued as trial 1, the
/// family's noise): per family (a)-(f), at budgets 5..=20, the best of its four variants at
/// each budget (constrained TPE with 10 or 3 start-up trials, a penalty, FAIL; the 3 start-up
/// c-TPE nearly everywhere), in worlds reached (mean over the Optuna seeds). Measured by that
/// script, documented in docs/benchmarks.md; the bench checks the tune against these, since
/// the test command runs no Python. Re-measure them whenever a world's physics changes.
const TPE_BEST: [[f64; 16]; 6] = [
    // (a) trade
    [
        1.1, 1.9, 2.5, 3.2, 3.6, 4.0, 4.3, 4.8, 5.0, 5.5, 5.8, 6.3, 6.5, 7.0, 7.4, 7.8,
    ],
    // (b) unmask
    [
        0.7, 0.8, 1.1, 1.1, 1.3, 1.6, 1.8, 2.0, 2.4, 2.7, 2.9, 3.5, 3.8, 4.1, 4.5, 4.7,
    ],
    // (c) noise
    [
        0.9, 1.4, 1.9, 2.4, 2.8, 3.1, 3.5, 4.0, 4.2, 4.7, 5.1, 5.4, 5.9, 6.5, 6.9, 7.2,
    ],
    // (d) wrong verdicts
    [
        0.9, 1.3, 1.7, 2.0, 2.5, 3.0, 3.5, 3.8, 4.1, 4.3, 4.8, 4.8, 5.1, 5.5, 5.7, 5.9,
    ],
    // (e) best in the middle
    [
        0.6, 0.7, 0.8, 1.1, 1.2, 1.6, 1.7, 1.8, 1.9, 2.1, 2.4, 2.6, 2.7, 3.0, 3.4, 3.6,
    ],
    // (f) hicache
    [
        2.7, 3.4, 4.2, 4.6, 5.4, 5.8, 6.7, 7.1, 7.7, 8.5, 8.7, 9.2, 9.7, 9.9, 10.2, 10.7,
    ],
];

// ------------------------------------------------------------------------------------------
// The figures.

/// One family's worlds, seeds `base..base + SEEDS`: the grid's truths and the optimum.
struct Seeded {
    world: World,
    opt: f64,
    good: Vec<bool>,
}

fn seeded(family: Family, seed: u64, grid: &[Point]) -> Seeded {
    let world = World::new(family, seed, BUDGET / 4);
    let scores: Vec<Option<f64>> = grid.iter().map(|p| world.eligible_score(p)).collect();
    let opt = scores.iter().flatten().copied().fold(0.0, f64::max);
    let good = scores
        .iter()
        .map(|s| opt > 0.0 && s.is_some_and(|v| v >= opt * (1.0 - TOLERANCE)))
        .collect();
    Seeded { world, opt, good }
}

/// Sanity of a world: what its family promises holds of its truths.
fn sane(s: &Seeded) {
    let w = &s.world;
    let f = w.family;
    let start = w.phys(&w.space.start);
    assert!(start.is_some(), "{f:?} seed {}: the start dies", w.seed);
    let Some(start) = start else { return };
    if f == Family::Infeasible {
        assert_eq!(s.opt, 0.0, "{f:?} seed {}: an eligible point", w.seed);
        return;
    }
    assert!(s.opt > 0.0, "{f:?} seed {}: nothing eligible", w.seed);
    match f {
        Family::Trade => {
            assert_eq!(start.verdict, VerdictKind::ComputeBound, "seed {}", w.seed);
            assert!(start.tpot > w.tpot_limit, "seed {}", w.seed);
        }
        Family::Unmask => {
            // The start with the most KV that survives: slower, worse TTFT.
            let mut p = w.space.start.clone();
            p[0] = w.safe_mfs;
            let more = w.phys(&p);
            assert!(more.is_some(), "seed {}: more KV dies", w.seed);
            let Some(more) = more else { return };
            assert!(!more.graphs && start.graphs, "seed {}", w.seed);
            assert!(
                more.score < start.score && more.ttft > start.ttft,
                "seed {}: more KV is not slower and worse",
                w.seed
            );
        }
        _ => {}
    }
}

struct FamilyFigures {
    within: usize,
    /// Confirmation launches over inert knobs, every seed and budget run.
    inert_confirms: usize,
    guided_at: Vec<usize>,
    random_at: Vec<f64>,
    random_within: f64,
}

fn run_family(
    family: Family,
    base: u64,
    grid: &[Point],
    budgets: bool,
    verbose: bool,
    export: Option<&str>,
) -> FamilyFigures {
    let bs: Vec<usize> = BUDGETS.collect();
    let mut fig = FamilyFigures {
        within: 0,
        inert_confirms: 0,
        guided_at: vec![0; bs.len()],
        random_at: vec![0.0; bs.len()],
        random_within: 0.0,
    };
    for seed in base..base + SEEDS {
        let s = seeded(family, seed, grid);
        sane(&s);
        if let Some(dir) = export {
            let _ = std::fs::write(
                format!("{dir}/{}-seed-{seed}.csv", family.letter()),
                s.world.export(grid),
            );
        }
        let t = guided(&s.world, s.opt, BUDGET, base == 1);
        fig.within += usize::from(t.reached.is_some_and(|r| r <= WITHIN));
        fig.inert_confirms += t.inert_confirms;
        let good_n = s.good.iter().filter(|&&g| g).count();
        if verbose {
            println!(
                "  seed {seed}: {} offered, {}; {good_n} points within 5%; reached at launch {}, {} launches; stop: {}",
                s.world.clients,
                s.world.note,
                show(t.reached),
                t.launches,
                t.stop
            );
        }
        let draws: Vec<Option<usize>> = (0..RANDOM_DRAWS)
            .map(|d| random_reach(&s.good, *bs.last().unwrap_or(&20), seed * 1000 + d))
            .collect();
        let share = |b: usize| {
            draws.iter().filter(|r| r.is_some_and(|x| x <= b)).count() as f64 / RANDOM_DRAWS as f64
        };
        fig.random_within += share(WITHIN);
        if budgets {
            for (i, &b) in bs.iter().enumerate() {
                let wb = World::new(family, seed, b / 4);
                let r = guided(&wb, s.opt, b, false);
                fig.guided_at[i] += usize::from(r.reached.is_some_and(|x| x <= b));
                fig.inert_confirms += r.inert_confirms;
                fig.random_at[i] += share(b);
            }
        }
    }
    fig
}

/// What the strategy measured at its last change (docs/benchmarks.md), per family (a)-(f):
/// seeds reaching within 5% within 12 launches. The bench fails when one no longer holds;
/// issue 42's targets (19 of 20, ahead of random and TPE at every budget) are printed beside
/// them, met or not, and are not yet met.
const WITHIN_FLOOR: [f64; 6] = [20.0, 20.0, 20.0, 20.0, 19.0, 19.0];
/// (g): seeds stopping before the budget, measured.
const EARLY_FLOOR: f64 = 20.0;

fn family_figures(
    family: Family,
    checks: &mut Vec<Check>,
    floors: &mut Vec<Check>,
    verbose: bool,
    export: Option<&str>,
) {
    let grid = grid(&World::new(family, 1, 0).space);
    println!(
        "\n{}: {} knobs, {} points; budget {BUDGET} ({} to confirm)",
        family.name(),
        World::new(family, 1, 0).space.knobs.len(),
        grid.len(),
        BUDGET / 4
    );
    let f = run_family(family, 1, &grid, true, verbose, export);
    let fi = FAMILIES.iter().position(|&x| x == family).unwrap_or(0);
    println!(
        "  seeds 1..={SEEDS}: a point within 5% launched within {WITHIN} launches in {}/{SEEDS} (random search: {:.1})",
        f.within, f.random_within
    );
    println!("  budget | guided | random | TPE (best variant, documented)");
    for (i, b) in BUDGETS.enumerate() {
        let tpe = TPE_BEST[fi][i];
        println!(
            "  {b:>6} | {:>6} | {:>6.1} | {tpe:>6.1}",
            f.guided_at[i], f.random_at[i]
        );
        at_least(
            checks,
            format!("{}: guided ≥ random search at budget {b}", family.name()),
            f.guided_at[i] as f64,
            f.random_at[i],
        );
        at_least(
            checks,
            format!("{}: guided ≥ Optuna's TPE at budget {b}", family.name()),
            f.guided_at[i] as f64,
            tpe,
        );
    }
    at_least(
        checks,
        format!(
            "{}: seeds reaching within 5% within {WITHIN} launches (of {SEEDS})",
            family.name()
        ),
        f.within as f64,
        19.0,
    );
    at_least(
        floors,
        format!(
            "{}: seeds reaching within 5% within {WITHIN} launches (of {SEEDS}), documented",
            family.name()
        ),
        f.within as f64,
        WITHIN_FLOOR[fi],
    );
    let mut inert = f.inert_confirms;
    for base in [1001, 2001, 3001] {
        let r = run_family(family, base, &grid, false, false, None);
        inert += r.inert_confirms;
        println!(
            "  robustness, seeds {base}..{}: within {WITHIN} launches {}/{SEEDS}; random search {:.1}/{SEEDS}",
            base + SEEDS - 1,
            r.within,
            r.random_within
        );
    }
    println!(
        "  confirmation launches of a point that differs from the leader only in knobs the evidence marks inert: {inert} (every tune above)"
    );
    at_most(
        floors,
        format!(
            "{}: confirmation launches over knobs the evidence marks inert (every tune), documented",
            family.name()
        ),
        inert as f64,
        0.0,
    );
}

fn infeasible(checks: &mut Vec<Check>, floors: &mut Vec<Check>, verbose: bool) {
    let family = Family::Infeasible;
    let grid = grid(&World::new(family, 1, 0).space);
    println!(
        "\n{}: {} points, nothing eligible; budget {BUDGET} ({} to confirm)",
        family.name(),
        grid.len(),
        BUDGET / 4
    );
    let run = |base: u64, print: usize| {
        let (mut early, mut before_confirm) = (0, 0);
        for seed in base..base + SEEDS {
            let s = seeded(family, seed, &grid);
            sane(&s);
            let t = guided(&s.world, 0.0, BUDGET, base == 1);
            early += usize::from(t.launches < BUDGET);
            before_confirm += usize::from(t.launches < BUDGET - BUDGET / 4);
            if verbose || seed < base + print as u64 {
                println!(
                    "  seed {seed}: {}; stopped after {} launches: {}",
                    s.world.note, t.launches, t.stop
                );
            }
        }
        (early, before_confirm)
    };
    let (early, before) = run(1, 3);
    println!(
        "  seeds 1..={SEEDS}: stopped before the budget ({BUDGET}) in {early}/{SEEDS}; before the exploration's share ({}) in {before}/{SEEDS}",
        BUDGET - BUDGET / 4
    );
    at_least(
        checks,
        format!(
            "{}: seeds stopping before the budget (of {SEEDS})",
            family.name()
        ),
        early as f64,
        19.0,
    );
    at_least(
        floors,
        format!(
            "{}: seeds stopping before the budget (of {SEEDS}), documented",
            family.name()
        ),
        early as f64,
        EARLY_FLOOR,
    );
    for base in [1001, 2001, 3001] {
        let (e, b) = run(base, 0);
        println!(
            "  robustness, seeds {base}..{}: before the budget {e}/{SEEDS}; before the exploration's share {b}/{SEEDS}",
            base + SEEDS - 1
        );
    }
}

fn main() {
    if !as_test::selected("trade") {
        return;
    }
    let verbose = std::env::args().any(|a| a == "--bench");
    let export = std::env::var("TRADE_EXPORT").ok();
    if let Some(dir) = &export {
        let _ = std::fs::create_dir_all(dir);
    }
    let mut checks: Vec<Check> = Vec::new();
    let mut floors: Vec<Check> = Vec::new();
    // `TRADE_ONLY=a` runs one family (a trace's quick look); the checks then cover it alone.
    let only = std::env::var("TRADE_ONLY").ok();
    for family in FAMILIES {
        if only.as_deref().is_some_and(|o| o != family.letter()) {
            continue;
        }
        if family == Family::Infeasible {
            infeasible(&mut checks, &mut floors, verbose);
        } else {
            family_figures(family, &mut checks, &mut floors, verbose, export.as_deref());
        }
    }
    if let Some(dir) = &export {
        println!("\nworlds exported to {dir}/<family>-seed-N.csv (scripts/bench/tpe-trade.sh)");
    }
    // Each target fails the bench when it does not hold (issue 51): a comparison printed as a
    // target is a claim, not a note.
    println!("\nissue 42's targets (each fails the bench when it does not hold):");
    let mut unmet = 0;
    for c in &checks {
        let ok = c.holds();
        unmet += usize::from(!ok);
        println!(
            "  {} {}: {} (target: {} {})",
            if ok { "met    " } else { "NOT MET" },
            c.what,
            c.measured,
            if c.at_least { "at least" } else { "at most" },
            c.limit
        );
    }
    println!("  {unmet} of {} not met", checks.len());
    println!("\nthe figures of docs/benchmarks.md:");
    let mut failed = 0;
    for c in &floors {
        let ok = c.holds();
        failed += usize::from(!ok);
        println!(
            "  {} {}: {} (documented: {} {})",
            if ok { "ok    " } else { "FAILED" },
            c.what,
            c.measured,
            if c.at_least { "at least" } else { "at most" },
            c.limit
        );
    }
    if unmet > 0 {
        eprintln!("{unmet} target(s) of issue 42 no longer hold: fix the strategy or the target");
    }
    if failed > 0 {
        eprintln!("{failed} documented figure(s) no longer hold: fix the strategy or the document");
    }
    if failed > 0 || unmet > 0 {
        std::process::exit(1);
    }
}
