//! Parallel slots on one machine: several configurations at once, each on its own set of GPU
//! ids (`CUDA_VISIBLE_DEVICES`) and its own port range. A slot is handed to a launch when
//! enough GPUs are free, and handed back once its server stopped and its GPUs were released.
//!
//! Ports: SGLang derives further ports from `--port` (the tokenizer/scheduler/detokenizer
//! sockets, the NCCL and distributed-init ports of tp/dp > 1, and the metrics port are chosen
//! at or above it), so slots are spaced [`PORT_STRIDE`] apart.

use crate::plan::expand::RunConfig;
use crate::plan::flags::ParamValue;
use serde::Serialize;

/// Distance between two slots' `--port`s.
pub const PORT_STRIDE: u16 = 100;

/// Where one launch runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Slot {
    /// 0-based, for progress lines and the per-slot port.
    pub index: usize,
    /// GPU ids for `CUDA_VISIBLE_DEVICES` (None: the slot does not set it).
    pub gpus: Option<Vec<String>>,
    /// The server's `--port` (None: a free one, picked at launch).
    pub port: Option<u16>,
}

/// How many launches may run at once, and on which GPUs: `--parallel`, `--gpus`,
/// `--gpus-per-run`.
#[derive(Debug, Clone, Default)]
pub struct SlotSpec {
    /// At most this many launches at once (with GPUs: also bounded by the free GPUs).
    pub parallel: usize,
    /// GPU ids to share out; empty: slots set no CUDA_VISIBLE_DEVICES.
    pub gpus: Vec<String>,
    /// GPUs per launch; None: tp_size × dp_size of its configuration.
    pub gpus_per_run: Option<usize>,
}

impl SlotSpec {
    /// One launch at a time on the whole machine: the sweep as it always ran.
    pub fn serial() -> Self {
        SlotSpec {
            parallel: 1,
            gpus: Vec::new(),
            gpus_per_run: None,
        }
    }

    /// From the command line; the error names the flag and the fix.
    pub fn from_flags(
        parallel: Option<usize>,
        gpus: Option<&str>,
        gpus_per_run: Option<usize>,
    ) -> Result<Self, String> {
        let ids: Vec<String> = match gpus {
            Some(g) => {
                let ids: Vec<String> = g.split(',').map(|s| s.trim().to_string()).collect();
                if ids.iter().any(String::is_empty) {
                    return Err(format!(
                        "--gpus {g:?}: an empty GPU id; give a comma-separated list such as --gpus 0,1,2,3"
                    ));
                }
                for (i, id) in ids.iter().enumerate() {
                    if ids[..i].contains(id) {
                        return Err(format!(
                            "--gpus {g:?}: GPU {id} is listed twice; two slots would share it"
                        ));
                    }
                }
                ids
            }
            None => Vec::new(),
        };
        if gpus_per_run.is_some() && ids.is_empty() {
            return Err("--gpus-per-run needs --gpus (the ids to share out), e.g. --gpus 0,1,2,3 --gpus-per-run 2".into());
        }
        if gpus_per_run == Some(0) {
            return Err("--gpus-per-run 0: a run needs at least one GPU".into());
        }
        if parallel == Some(0) {
            return Err("--parallel 0: at least one run must be able to run".into());
        }
        let parallel = parallel.unwrap_or(if ids.is_empty() { 1 } else { ids.len() });
        Ok(SlotSpec {
            parallel,
            gpus: ids,
            gpus_per_run,
        })
    }

    /// How many launches of `run`'s size these slots hold at once: `parallel`, and with GPUs
    /// no more than the GPUs give out (a guided tune proposes this many at once).
    pub fn width(&self, run: &RunConfig) -> usize {
        let by_gpus = if self.gpus.is_empty() {
            usize::MAX
        } else {
            self.gpus.len() / self.need(run).max(1)
        };
        self.parallel.min(by_gpus).max(1)
    }

    /// More than the one-at-a-time sweep: slots are recorded and shown.
    pub fn is_parallel(&self) -> bool {
        self.parallel > 1 || !self.gpus.is_empty()
    }

    /// GPUs one launch of this configuration takes.
    pub fn need(&self, run: &RunConfig) -> usize {
        self.gpus_per_run
            .unwrap_or_else(|| int_param(run, "tp_size") * int_param(run, "dp_size"))
    }

    /// Every launch must fit in the GPUs given, and the slots' ports below 65536.
    pub fn check(&self, runs: &[RunConfig], fixed_port: Option<u16>) -> Result<(), String> {
        if !self.gpus.is_empty() {
            for run in runs {
                let need = self.need(run);
                if need > self.gpus.len() {
                    return Err(format!(
                        "configuration {} needs {need} GPU(s) (tp_size × dp_size, or --gpus-per-run) but --gpus gives {}: list more GPU ids or lower its tp_size/dp_size",
                        run.name,
                        self.gpus.len()
                    ));
                }
            }
        }
        if let Some(p) = fixed_port {
            let top =
                u32::from(p) + (self.parallel.saturating_sub(1) as u32) * u32::from(PORT_STRIDE);
            if top > 65_535 {
                return Err(format!(
                    "server.port {p} with --parallel {}: the last slot's port would be {top} (slots are {PORT_STRIDE} apart); use a lower server.port",
                    self.parallel
                ));
            }
        }
        Ok(())
    }
}

fn int_param(run: &RunConfig, key: &str) -> usize {
    match run.param(key) {
        Some(ParamValue::Int(n)) if *n >= 1 => *n as usize,
        _ => 1,
    }
}

/// The free GPUs, slot indexes and ports while a sweep runs.
pub struct Pool {
    spec: SlotSpec,
    free_gpus: Vec<String>,
    busy: Vec<Option<Slot>>,
    fixed_port: Option<u16>,
    host: String,
}

impl Pool {
    pub fn new(spec: &SlotSpec, fixed_port: Option<u16>, host: &str) -> Self {
        Pool {
            spec: spec.clone(),
            free_gpus: spec.gpus.clone(),
            busy: vec![None; spec.parallel.max(1)],
            fixed_port,
            host: host.to_string(),
        }
    }

    pub fn running(&self) -> usize {
        self.busy.iter().filter(|b| b.is_some()).count()
    }

    /// A slot for this configuration, if one is free and enough GPUs are; None: wait.
    pub fn take(&mut self, run: &RunConfig) -> Option<Slot> {
        let index = self.busy.iter().position(Option::is_none)?;
        let gpus = if self.spec.gpus.is_empty() {
            None
        } else {
            let need = self.spec.need(run);
            if need > self.free_gpus.len() {
                return None;
            }
            Some(self.free_gpus.drain(..need).collect::<Vec<_>>())
        };
        let port = match self.fixed_port {
            Some(p) => Some(p + (index as u16) * PORT_STRIDE),
            None if self.spec.is_parallel() => self.free_port_apart(),
            None => None,
        };
        let slot = Slot { index, gpus, port };
        self.busy[index] = Some(slot.clone());
        Some(slot)
    }

    /// A free port at least [`PORT_STRIDE`] away from every running slot's port (a free port
    /// per launch otherwise, picked by the launch itself).
    fn free_port_apart(&self) -> Option<u16> {
        let taken: Vec<u16> = self.busy.iter().flatten().filter_map(|s| s.port).collect();
        for _ in 0..64 {
            let p = crate::server::supervise::free_port(&self.host).ok()?;
            let clear = taken.iter().all(|&t| t.abs_diff(p) >= PORT_STRIDE);
            if clear && u32::from(p) + u32::from(PORT_STRIDE) <= 65_535 {
                return Some(p);
            }
        }
        None
    }

    /// The slot's server stopped and its GPUs were checked: they go back to the pool.
    pub fn give_back(&mut self, slot: &Slot) {
        if let Some(b) = self.busy.get_mut(slot.index) {
            *b = None;
        }
        if let Some(g) = &slot.gpus {
            self.free_gpus.extend(g.iter().cloned());
            // Keep the order stable so the same configuration tends to get the same GPUs.
            let order = &self.spec.gpus;
            self.free_gpus
                .sort_by_key(|id| order.iter().position(|o| o == id).unwrap_or(usize::MAX));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tune's batch is as wide as the slots hold launches of the start's size: `parallel`,
    /// and with GPUs no more than they give out.
    #[test]
    fn the_width_is_the_launches_the_slots_hold_at_once() {
        let all = runs();
        let (run, four) = (&all[0], &all[2]);
        assert_eq!(SlotSpec::serial().width(run), 1);
        let two = SlotSpec::from_flags(Some(2), None, None).expect("slots");
        assert_eq!(two.width(run), 2);
        let gpus = SlotSpec::from_flags(None, Some("0,1,2,3"), Some(2)).expect("slots");
        assert_eq!(gpus.width(run), 2, "4 GPUs, 2 a launch");
        let by_size = SlotSpec::from_flags(None, Some("0,1,2,3"), None).expect("slots");
        assert_eq!((by_size.width(run), by_size.width(four)), (4, 1), "tp x dp");
        let capped = SlotSpec::from_flags(Some(1), Some("0,1,2,3"), Some(1)).expect("slots");
        assert_eq!(capped.width(run), 1);
        let short = SlotSpec::from_flags(None, Some("0"), Some(2)).expect("slots");
        assert_eq!(short.width(run), 1, "never below one");
    }
    use crate::plan::expand::expand;
    use crate::plan::spec::parse;

    fn runs() -> Vec<RunConfig> {
        let text = "name: t\nserver:\n  model_path: /m\nconfigs:\n  - {name: one}\n  - {name: two, tp_size: 2}\n  - {name: four, tp_size: 2, dp_size: 2}\nworkload: {concurrency: 1, requests: 1, input_tokens: 1, output_tokens: 1, vocab_size: 10}\n";
        expand(&parse(text, "t").expect("valid")).runs
    }

    #[test]
    fn gpus_are_sized_by_tp_times_dp_and_never_shared() {
        let r = runs();
        let spec = SlotSpec::from_flags(None, Some("0,1,2,3"), None).expect("flags");
        assert_eq!(spec.parallel, 4);
        assert_eq!(
            r.iter().map(|c| spec.need(c)).collect::<Vec<_>>(),
            [1, 2, 4]
        );
        let mut pool = Pool::new(&spec, Some(30000), "127.0.0.1");
        let a = pool.take(&r[0]).expect("one free");
        let b = pool.take(&r[1]).expect("two free");
        assert_eq!(a.gpus.as_deref(), Some(&["0".to_string()][..]));
        assert_eq!(
            b.gpus.as_deref(),
            Some(&["1".to_string(), "2".to_string()][..])
        );
        assert_eq!((a.port, b.port), (Some(30000), Some(30100)));
        assert!(pool.take(&r[2]).is_none(), "only one GPU left");
        pool.give_back(&a);
        pool.give_back(&b);
        let c = pool.take(&r[2]).expect("all four free again");
        assert_eq!(c.gpus.map(|g| g.len()), Some(4));
        assert_eq!(pool.running(), 1);
    }

    #[test]
    fn bad_flags_and_oversized_configs_are_refused_with_the_fix() {
        assert!(
            SlotSpec::from_flags(None, Some("0,0"), None)
                .expect_err("dup")
                .contains("twice")
        );
        assert!(
            SlotSpec::from_flags(None, None, Some(2))
                .expect_err("no gpus")
                .contains("--gpus")
        );
        assert!(SlotSpec::from_flags(Some(0), None, None).is_err());
        let spec = SlotSpec::from_flags(None, Some("0,1"), None).expect("flags");
        let launches = runs();
        let e = spec.check(&launches, None).expect_err("four > two");
        assert!(e.contains("configuration four needs 4 GPU(s)"), "{e}");
        let spec = SlotSpec::from_flags(Some(8), None, None).expect("flags");
        assert!(spec.check(&launches, Some(65000)).is_err());
        assert!(spec.check(&launches, Some(30000)).is_ok());
    }

    #[test]
    fn parallel_free_ports_are_spaced() {
        let spec = SlotSpec::from_flags(Some(3), None, None).expect("flags");
        let r = runs();
        let mut pool = Pool::new(&spec, None, "127.0.0.1");
        let ports: Vec<u16> = (0..3)
            .filter_map(|_| pool.take(&r[0]).and_then(|s| s.port))
            .collect();
        assert_eq!(ports.len(), 3);
        for (i, a) in ports.iter().enumerate() {
            for b in &ports[i + 1..] {
                assert!(a.abs_diff(*b) >= PORT_STRIDE, "{ports:?}");
            }
        }
    }
}
