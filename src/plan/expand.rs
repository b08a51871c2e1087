//! SweepSpec → RunPlan: the cartesian grid, then the explicit configurations. Each run gets a
//! readable name (`mfs0.88_kv-fp8_e4m3_hicache48`) and a stable id (a hash of what is
//! launched: engine, command, model, flags, environment).

use crate::plan::engine::Engine;
use crate::plan::flags::{self, ParamValue};
use crate::plan::spec::{ServerSpec, SweepSpec};
use serde::Serialize;
use sha2::{Digest, Sha256};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunSource {
    Config,
    Grid,
    /// A point of `tune:`'s space.
    Tune,
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

/// Stable id of what is launched: [`run_id_for`] on `server.engine`.
pub fn run_id(spec: &SweepSpec, resolved: &[(String, ParamValue)]) -> String {
    run_id_for(spec, spec.server.engine, resolved)
}

/// Stable id of a configuration of `engine`: sha256 of the canonical JSON of what is launched,
/// first 12 hex digits. That is the engine, the program and its leading arguments, the model,
/// the flags as they go on the command line (each flag with its values; in sorted order, as
/// their order does not matter to the server) and the environment sgtune sets (sorted). Left
/// out: where the server listens (`--host`, `--port`) and what a slot adds
/// (`CUDA_VISIBLE_DEVICES`), so the same configuration has the same id in every slot and every
/// sweep, and configurations launched alike (`hicache_size: 0`, `off`, no key) share one.
pub fn run_id_for(spec: &SweepSpec, engine: Engine, resolved: &[(String, ParamValue)]) -> String {
    let server = &spec.server;
    let mut argv: Vec<String> = server
        .command_for(engine)
        .into_iter()
        .map(|e| e.0)
        .collect();
    argv.extend([engine.model_flag().to_string(), server.model_path.0.clone()]);
    let mut flags: Vec<Vec<String>> = Vec::new();
    for a in flags::flag_args(&engine.map_params(resolved)) {
        match flags.last_mut() {
            Some(flag) if !a.starts_with("--") => flag.push(a),
            _ => flags.push(vec![a]),
        }
    }
    flags.sort();
    let mut env = launch_env(server, engine);
    env.sort();
    hash_id(&serde_json::json!({
        "engine": engine.as_str(),
        "argv": argv,
        "flags": flags,
        "env": env,
    }))
}

/// The run id before it hashed the launched command (it hashed the settings as written), kept
/// only to recognise the results folders recorded with it: [`adopt_recorded_ids`].
pub fn legacy_run_id_for(
    spec: &SweepSpec,
    engine: Engine,
    resolved: &[(String, ParamValue)],
) -> String {
    let mut args: Vec<(&String, &ParamValue)> = resolved.iter().map(|(k, v)| (k, v)).collect();
    args.sort_by(|a, b| a.0.cmp(b.0));
    hash_id(&serde_json::json!({
        "command": spec.server.command_for(engine),
        "model_path": spec.server.model_path,
        "args": args,
        "env": spec.server.env_for(engine),
    }))
}

fn hash_id(canonical: &serde_json::Value) -> String {
    let digest = Sha256::digest(canonical.to_string().as_bytes());
    digest.iter().take(6).map(|b| format!("{b:02x}")).collect()
}

/// A results folder recorded before run ids hashed the launched command keeps its ids: each
/// run whose recorded id (by name) is its [`legacy_run_id_for`] takes that id back, so resume,
/// the Slurm tasks and reproduce see an unchanged plan and the folder's rows stay grouped as
/// they were. Returns how many runs took their recorded id.
pub fn adopt_recorded_ids(
    spec: &SweepSpec,
    plan: &mut RunPlan,
    recorded: &[(String, String)],
) -> usize {
    let mut adopted = 0;
    for r in &mut plan.runs {
        let Some((_, id)) = recorded.iter().find(|(n, _)| *n == r.name) else {
            continue;
        };
        if *id != r.id && *id == legacy_run_id_for(spec, r.engine, &r.resolved) {
            r.id = id.clone();
            adopted += 1;
        }
    }
    adopted
}

/// The environment a configuration of `engine` is launched with, before a slot adds its GPUs:
/// what sgtune sets unless the spec sets it, then the spec's own (`server.env`, and
/// `server.<engine>.env` for a configuration on the other engine).
pub fn launch_env(server: &ServerSpec, engine: Engine) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = Vec::new();
    // Python buffers stdout when it is a pipe; unbuffered keeps server.log line-accurate.
    let defaults = [("PYTHONUNBUFFERED", "1")];
    let spec_env = server.env_for(engine);
    for (k, v) in defaults.iter().chain(engine.default_env()) {
        if !spec_env.contains_key(*k) {
            env.push(((*k).into(), (*v).into()));
        }
    }
    env.extend(spec_env.iter().map(|(k, v)| (k.clone(), v.0.clone())));
    env
}

/// Runs launched alike (the same [`RunConfig::id`]): each id shared by two or more runs, with
/// their names, in plan order. They measure one server; `validate` names them.
pub fn same_servers(plan: &RunPlan) -> Vec<(String, Vec<String>)> {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for r in &plan.runs {
        match groups.iter_mut().find(|(id, _)| *id == r.id) {
            Some((_, names)) => names.push(r.name.clone()),
            None => groups.push((r.id.clone(), vec![r.name.clone()])),
        }
    }
    groups.retain(|(_, names)| names.len() > 1);
    groups
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

/// A point of the tune's space as a configuration: the knobs' values over `server.args`, named
/// `name` (`tune::guide::name`). The tune's rows carry a `param_<knob>` column per knob, as a
/// grid's do.
pub fn tune_config(spec: &SweepSpec, point: &[usize], name: String) -> Option<RunConfig> {
    let t = spec.tune.as_ref()?;
    let params = t.params(point);
    if params.len() != t.knobs.len() {
        return None;
    }
    let resolved = overlay(&spec.server.args.0, &params);
    Some(RunConfig {
        name,
        id: run_id(spec, &resolved),
        source: RunSource::Tune,
        params,
        resolved,
        engine: spec.server.engine,
    })
}

/// Expand a sweep into its run plan. A tune's plan holds its start only: the strategy picks
/// the rest as it goes (`run::guided`).
pub fn expand(spec: &SweepSpec) -> RunPlan {
    if let Some(t) = &spec.tune {
        let runs = tune_config(spec, &t.start, crate::plan::tune::point_name(t, &t.start))
            .into_iter()
            .collect();
        return RunPlan {
            sweep_name: spec.name.0.clone(),
            param_keys: t.knobs.iter().map(|k| k.key.clone()).collect(),
            runs,
        };
    }
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

    /// Grid points and configurations whose launched command is the same: hicache_size 0 and
    /// `off`, hicache_ratio 0, no key, and `enable_hierarchical_cache: false`.
    const SAME: &str = "name: t\nserver:\n  model_path: /m\n  env: {A: \"1\"}\n  args:\n    tp_size: 2\n    mem_fraction_static: 0.8\nsweep:\n  hicache_size: [0, \"off\", 48]\nconfigs:\n  - {name: ratio0, hicache_ratio: 0}\n  - {name: plain}\n  - {name: offflag, enable_hierarchical_cache: false}\n  - {name: vl, engine: vllm, max_running_requests: 4}\nworkload: {concurrency: 4, requests: 8, input_tokens: 8, output_tokens: 8, vocab_size: 100}\n";

    fn id_of(plan: &RunPlan, name: &str) -> String {
        plan.runs
            .iter()
            .find(|r| r.name == name)
            .map(|r| r.id.clone())
            .expect("a run of that name")
    }

    #[test]
    fn configurations_launching_the_same_command_share_an_id() {
        let plan = expand(&parse(SAME, "t.yaml").expect("valid"));
        let id = |n: &str| id_of(&plan, n);
        for n in ["hicacheoff", "ratio0", "plain", "offflag"] {
            assert_eq!(id(n), id("hicache0"), "{n}");
        }
        assert_ne!(id("hicache48"), id("hicache0"));
        assert_ne!(id("vl"), id("hicache0"));
        // Where the server listens is not what it is: a fixed port leaves the ids alone.
        let fixed = SAME.replace("  model_path: /m\n", "  model_path: /m\n  port: 31000\n");
        let fixed = expand(&parse(&fixed, "t.yaml").expect("valid"));
        assert_eq!(id_of(&fixed, "hicache0"), id("hicache0"));
        // Its environment is.
        let env = expand(&parse(&SAME.replace("A: \"1\"", "A: \"2\""), "t.yaml").expect("valid"));
        assert_ne!(id_of(&env, "hicache0"), id("hicache0"));
    }

    #[test]
    fn an_id_follows_each_flag_with_its_values_not_their_order() {
        let s = spec(
            "",
            "configs:\n  - {name: a, max_running_requests: 8, cuda_graph_max_bs: 16}\n  - {name: b, cuda_graph_max_bs: 16, max_running_requests: 8}\n  - {name: c, max_running_requests: 16, cuda_graph_max_bs: 8}\n",
        );
        let plan = expand(&s);
        // The same flags in another order: the same server.
        assert_eq!(id_of(&plan, "a"), id_of(&plan, "b"));
        // The values swapped between the flags: another server.
        assert_ne!(id_of(&plan, "a"), id_of(&plan, "c"));
    }

    #[test]
    fn runs_launched_alike_are_named_together() {
        let plan = expand(&parse(SAME, "t.yaml").expect("valid"));
        let same = same_servers(&plan);
        assert_eq!(same.len(), 1, "{same:?}");
        assert_eq!(same[0].0, id_of(&plan, "hicache0"));
        assert_eq!(
            same[0].1,
            ["hicache0", "hicacheoff", "ratio0", "plain", "offflag"]
        );
    }

    #[test]
    fn a_folder_recorded_with_the_earlier_ids_keeps_them() {
        let s = parse(SAME, "t.yaml").expect("valid");
        let mut plan = expand(&s);
        let plain = id_of(&plan, "plain");
        // The ids sgtune gave these runs before run ids hashed the launched command (pinned
        // from that version's `validate`), and one that is no run's earlier id.
        let recorded: Vec<(String, String)> = [
            ("hicache0", "c43e48bca13d"),
            ("hicache48", "43ae7a18e613"),
            ("vl", "86f80493f460"),
            ("plain", "0123456789ab"),
        ]
        .iter()
        .map(|(n, i)| (n.to_string(), i.to_string()))
        .collect();
        assert_eq!(adopt_recorded_ids(&s, &mut plan, &recorded), 3);
        assert_eq!(id_of(&plan, "hicache0"), "c43e48bca13d");
        assert_eq!(id_of(&plan, "hicache48"), "43ae7a18e613");
        assert_eq!(id_of(&plan, "vl"), "86f80493f460");
        // A changed run is still seen as changed; the others keep today's ids.
        assert_eq!(id_of(&plan, "plain"), plain);
        assert_eq!(id_of(&plan, "ratio0"), plain);
        // A folder recorded with today's ids is left as it is.
        let mut again = expand(&s);
        let now: Vec<(String, String)> = again
            .runs
            .iter()
            .map(|r| (r.name.clone(), r.id.clone()))
            .collect();
        assert_eq!(adopt_recorded_ids(&s, &mut again, &now), 0);
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
