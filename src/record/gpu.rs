//! GPUs as nvidia-smi reports them: for the provenance manifest, and to check between runs that
//! a stopped server gave its GPU memory back. On machines without nvidia-smi everything here
//! answers "none" and the checks are skipped.

use serde::{Deserialize, Serialize};
use std::process::Command;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gpu {
    pub index: u32,
    pub name: String,
    pub memory_total_mib: u64,
    pub memory_used_mib: u64,
    pub driver_version: String,
    pub uuid: String,
}

const QUERY: &str = "--query-gpu=index,name,memory.total,memory.used,driver_version,uuid";

/// Parse `nvidia-smi --query-gpu=... --format=csv,noheader,nounits` output.
pub fn parse_query(text: &str) -> Vec<Gpu> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').map(str::trim).collect();
            if f.len() < 6 {
                return None;
            }
            Some(Gpu {
                index: f[0].parse().ok()?,
                name: f[1].to_string(),
                memory_total_mib: f[2].parse().ok()?,
                memory_used_mib: f[3].parse().ok()?,
                driver_version: f[4].to_string(),
                uuid: f[5].to_string(),
            })
        })
        .collect()
}

/// The GPUs, or None when there is no nvidia-smi (or it fails: no driver).
pub fn query() -> Option<Vec<Gpu>> {
    let out = Command::new("nvidia-smi")
        .args([QUERY, "--format=csv,noheader,nounits"])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let gpus = parse_query(&String::from_utf8_lossy(&out.stdout));
    (!gpus.is_empty()).then_some(gpus)
}

/// `CUDA Version: 12.4` from nvidia-smi's banner.
pub fn cuda_version() -> Option<String> {
    let out = Command::new("nvidia-smi").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let rest = text.split("CUDA Version:").nth(1)?;
    rest.split_whitespace()
        .next()
        .map(|v| v.trim_end_matches('|').to_string())
}

/// Memory a GPU may hold above its sweep-start baseline and still count as released.
const SLACK_MIB: u64 = 512;

/// Wait until every GPU is back to its baseline memory (+ slack). Returns one note per GPU
/// still holding memory at the timeout; empty when released or when there are no GPUs.
pub fn wait_released(baseline: &[Gpu], timeout: Duration) -> Vec<String> {
    if baseline.is_empty() {
        return Vec::new();
    }
    let t0 = Instant::now();
    loop {
        let now = query().unwrap_or_default();
        let held: Vec<String> = now
            .iter()
            .filter_map(|g| {
                let base = baseline.iter().find(|b| b.uuid == g.uuid)?;
                (g.memory_used_mib > base.memory_used_mib + SLACK_MIB).then(|| {
                    format!(
                        "GPU {} ({}) still used {} MiB, {} MiB above its baseline, {:.0} s after the server stopped",
                        g.index,
                        g.uuid,
                        g.memory_used_mib,
                        g.memory_used_mib - base.memory_used_mib,
                        t0.elapsed().as_secs_f64()
                    )
                })
            })
            .collect();
        if held.is_empty() || t0.elapsed() >= timeout {
            return held;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_nvidia_smi_csv() {
        let text = "0, NVIDIA H200, 143771, 1, 570.86.15, GPU-aaaa\n1, NVIDIA H200, 143771, 120000, 570.86.15, GPU-bbbb\nbad line\n";
        let g = parse_query(text);
        assert_eq!(g.len(), 2);
        assert_eq!(g[1].memory_used_mib, 120000);
        assert_eq!(g[0].name, "NVIDIA H200");
        assert_eq!(g[1].uuid, "GPU-bbbb");
    }
}
