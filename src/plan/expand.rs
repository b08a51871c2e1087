//! SweepSpec → RunPlan: the cartesian grid, then the explicit configurations. Each run gets a
//! readable name (`mfs0.88_kv-fp8_e4m3_hicache48`) and a stable id (a hash of its canonical
//! resolved form: command, model, flags, environment).

use crate::plan::engine::Engine;
use crate::plan::flags::{self, ParamValue};
use crate::plan::spec::SweepSpec;
use serde::Serialize;
use sha2::{Digest, Sha256};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunSource {
    Config,
    Grid,
}

/// One server configuration to launch.
#[derive(Debug, Clone, Serialize)]
pub struct RunConfig {
    pub name: String,
    pub id: String,
    pub source: RunSource,
    /// The values this run sets for the plan's swept keys (a subset of `resolved`).
    pub params: Vec<(String, ParamValue)>,
    /// `server.args` overlaid with `params`: exactly what goes on the command line.
    pub resolved: Vec<(String, ParamValue)>,
    /// The engine it runs on: the configuration's `engine:`, else `server.engine`.
    pub engine: Engine,
}

impl RunConfig {
    pub fn param(&self, key: &str) -> Option<&ParamValue> {
        self.resolved.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

/// Everything that will run, in order.
#[derive(Debug, Clone, Serialize)]
pub struct RunPlan {
    pub sweep_name: String,
    /// Keys set by the grid or by any explicit configuration: one `param_<key>` column each.
    pub param_keys: Vec<String>,
    pub runs: Vec<RunConfig>,
}

fn overlay(
    base: &[(String, ParamValue)],
    over: &[(String, ParamValue)],
) -> Vec<(String, ParamValue)> {
    let mut out: Vec<(String, ParamValue)> = base.to_vec();
    for (k, v) in over {
        match out.iter_mut().find(|(bk, _)| bk == k) {
            Some(slot) => slot.1 = v.clone(),
            None => out.push((k.clone(), v.clone())),
        }
    }
    out
}

fn cartesian(grid: &[(String, Vec<ParamValue>)]) -> Vec<Vec<(String, ParamValue)>> {
    let mut points: Vec<Vec<(String, ParamValue)>> = vec![Vec::new()];
    for (key, values) in grid {
        let mut next = Vec::with_capacity(points.len() * values.len());
        for p in &points {
            for v in values {
                let mut q = p.clone();
                q.push((key.clone(), v.clone()));
                next.push(q);
            }
        }
        points = next;
    }
    points
}

fn grid_name(point: &[(String, ParamValue)], varying: &[&str]) -> String {
    let parts: Vec<String> = point
        .iter()
        .filter(|(k, _)| varying.is_empty() || varying.contains(&k.as_str()))
        .map(|(k, v)| format!("{}{}", flags::abbreviation(k), flags::value_label(v)))
        .collect();
    if parts.is_empty() {
        "default".to_string()
    } else {
        parts.join("_")
    }
}

/// Stable id: sha256 of the canonical JSON of what defines the server, first 12 hex digits.
pub fn run_id(spec: &SweepSpec, resolved: &[(String, ParamValue)]) -> String {
    run_id_for(spec, spec.server.engine, resolved)
}

/// [`run_id`] of a configuration of `engine` (its command and environment).
pub fn run_id_for(spec: &SweepSpec, engine: Engine, resolved: &[(String, ParamValue)]) -> String {
    let mut args: Vec<(&String, &ParamValue)> = resolved.iter().map(|(k, v)| (k, v)).collect();
    args.sort_by(|a, b| a.0.cmp(b.0));
    let canonical = serde_json::json!({
        "command": spec.server.command_for(engine),
        "model_path": spec.server.model_path,
        "args": args,
        "env": spec.server.env_for(engine),
    });
    let digest = Sha256::digest(canonical.to_string().as_bytes());
    digest.iter().take(6).map(|b| format!("{b:02x}")).collect()
}

/// `flags::warnings` for a whole plan, each once, naming the runs it concerns (printed by
/// `validate` and the dry run).
pub fn warnings(plan: &RunPlan) -> Vec<String> {
    let mut seen: Vec<(String, Vec<&str>)> = Vec::new();
    for r in &plan.runs {
        for w in flags::warnings(&r.resolved) {
            match seen.iter_mut().find(|(x, _)| *x == w) {
                Some((_, runs)) => runs.push(&r.name),
                None => seen.push((w, vec![&r.name])),
            }
        }
    }
    seen.into_iter()
        .map(|(w, runs)| format!("{}: {w}", runs.join(", ")))
        .collect()
}

/// Why the memory pre-flight cannot bisect its knob on this plan, if it cannot: the engine of
/// the first planned configuration (the attempts launch it), or of one taking the value found,
/// does not have the knob or ignores it there (`Engine::preflight_refuses`). Checked on the
/// expanded plan, where each configuration's engine, flags and environment are known.
pub fn preflight_refusal(spec: &SweepSpec, plan: &RunPlan) -> Option<String> {
    use crate::plan::flags::PREFLIGHT_VALUE;
    let p = spec.search.preflight.as_ref()?;
    let takes_value = |r: &RunConfig| {
        r.resolved
            .iter()
            .any(|(k, v)| *k == p.knob && matches!(v, ParamValue::Str(s) if s == PREFLIGHT_VALUE))
    };
    plan.runs
        .iter()
        .enumerate()
        .filter(|(i, r)| *i == 0 || takes_value(r))
        .find_map(|(i, run)| {
            let env = spec.server.env_for(run.engine);
            let env: Vec<(&str, &str)> = env
                .iter()
                .map(|(k, v)| (k.as_str(), v.0.as_str()))
                .collect();
            let why = run.engine.preflight_refuses(&p.knob, &run.resolved, &env)?;
            let whose = if i == 0 {
                "the pre-flight launches"
            } else {
                "takes the pre-flight's value"
            };
            Some(format!(
                "search.preflight.{}: {why} ({}, which {whose}, runs on {})",
                p.knob,
                run.name,
                run.engine.label()
            ))
        })
}

/// Expand a sweep into its run plan.
pub fn expand(spec: &SweepSpec) -> RunPlan {
    let base = &spec.server.args.0;
    let mut param_keys: Vec<String> = Vec::new();
    for (k, _) in &spec.sweep.0 {
        if !param_keys.contains(k) {
            param_keys.push(k.clone());
        }
    }
    for c in &spec.configs {
        for (k, _) in &c.params.0 {
            if !param_keys.contains(k) {
                param_keys.push(k.clone());
            }
        }
    }

    // The pre-flight's knob gets a column even when no configuration sweeps it: its
    // attempts' rows differ in it, and resume reads it back from there.
    if let Some(p) = &spec.search.preflight {
        if !param_keys.contains(&p.knob) {
            param_keys.push(p.knob.clone());
        }
    }

    let mut runs: Vec<RunConfig> = Vec::new();
    let grid_present = !spec.sweep.0.is_empty();
    if grid_present || spec.configs.is_empty() {
        let varying: Vec<&str> = spec
            .sweep
            .0
            .iter()
            .filter(|(_, vs)| vs.len() > 1)
            .map(|(k, _)| k.as_str())
            .collect();
        for point in cartesian(&spec.sweep.0) {
            let resolved = overlay(base, &point);
            runs.push(RunConfig {
                name: grid_name(&point, &varying),
                id: run_id(spec, &resolved),
                source: RunSource::Grid,
                params: point,
                resolved,
                engine: spec.server.engine,
            });
        }
    }
    for c in &spec.configs {
        let engine = c.engine.unwrap_or(spec.server.engine);
        let resolved = overlay(spec.server.args_for(engine), &c.params.0);
        runs.push(RunConfig {
            name: c.name.clone(),
            id: run_id_for(spec, engine, &resolved),
            source: RunSource::Config,
            params: c.params.0.clone(),
            resolved,
            engine,
        });
    }
    // Names become folder names: make them unique, keeping the first as is.
    let mut seen: Vec<String> = Vec::new();
    for r in &mut runs {
        let mut name = r.name.clone();
        let mut n = 2;
        while seen.contains(&name) {
            name = format!("{}-{n}", r.name);
            n += 1;
        }
        r.name = name.clone();
        seen.push(name);
    }
    RunPlan {
        sweep_name: spec.name.0.clone(),
        param_keys,
        runs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::spec::parse;

    fn spec(sweep: &str, configs: &str) -> SweepSpec {
        let text = format!(
            "name: t\nserver:\n  model_path: /m\n  args:\n    tp_size: 2\n    mem_fraction_static: 0.8\n{sweep}{configs}workload:\n  concurrency: 4\n  requests: 8\n  input_tokens: 8\n  output_tokens: 8\n"
        );
        parse(&text, "t.yaml").expect("valid spec")
    }

    #[test]
    fn grid_times_lists_plus_configs() {
        let s = spec(
            "sweep:\n  mem_fraction_static: [0.85, 0.88]\n  kv_cache_dtype: [auto, fp8_e4m3]\n  hicache_size: [0, 48]\n",
            "configs:\n  - name: baseline\n    mem_fraction_static: 0.85\n",
        );
        let plan = expand(&s);
        assert_eq!(plan.runs.len(), 9);
        assert_eq!(plan.runs[8].name, "baseline");
        assert_eq!(plan.runs[8].source, RunSource::Config);
        let names: Vec<&str> = plan.runs.iter().map(|r| r.name.as_str()).collect();
        assert!(
            names.contains(&"mfs0.88_kv-fp8_e4m3_hicache48"),
            "{names:?}"
        );
        assert_eq!(
            plan.param_keys,
            ["mem_fraction_static", "kv_cache_dtype", "hicache_size"]
        );
        // The run value overrides server.args and keeps its position.
        let last = &plan.runs[7];
        assert_eq!(
            last.resolved[1],
            ("mem_fraction_static".into(), ParamValue::Float(0.88))
        );
        assert_eq!(last.resolved[0].0, "tp_size");
    }

    #[test]
    fn ids_are_stable_and_distinct() {
        let s = spec("sweep:\n  mem_fraction_static: [0.85, 0.88]\n", "");
        let a = expand(&s);
        let b = expand(&s);
        assert_eq!(a.runs[0].id, b.runs[0].id);
        assert_ne!(a.runs[0].id, a.runs[1].id);
        assert_eq!(a.runs[0].id.len(), 12);
        // A config equal to a grid point has the same id (same server), a different name.
        let c = spec(
            "sweep:\n  mem_fraction_static: [0.85]\n",
            "configs:\n  - name: same\n    mem_fraction_static: 0.85\n",
        );
        let plan = expand(&c);
        assert_eq!(plan.runs[0].id, plan.runs[1].id);
        assert_eq!(plan.runs[1].name, "same");
    }

    #[test]
    fn no_sweep_gives_one_default_run_and_names_are_unique() {
        let plan = expand(&spec("", ""));
        assert_eq!(plan.runs.len(), 1);
        assert_eq!(plan.runs[0].name, "default");
        let plan = expand(&spec(
            "sweep:\n  mem_fraction_static: [0.85]\n",
            "configs:\n  - name: mfs0.85\n    tp_size: 1\n",
        ));
        assert_eq!(plan.runs[1].name, "mfs0.85-2");
    }
}
