//! `plan.json`: the sweep's plan as it started (written once by `run::execute` before the
//! first launch, every `${VAR}` of the spec already expanded), and read back for its
//! objective (`read_objective`) by `conclude`, `report` and `compare`. One writer, one
//! reader, so the file's field names are spelled once.

use super::ReadError;
use super::store::{self, StoreError};
use crate::plan::columns::Col;
use crate::plan::expand::{RunConfig, RunPlan};
use crate::plan::spec::{Bound, Goal, Objective, SloBound, SweepSpec, WorkloadSpec};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The plan file in the results folder.
pub const FILE: &str = super::layout::PLAN_JSON;

/// plan.json as written: the plan's own types, borrowed.
#[derive(Debug, Serialize)]
pub struct Written<'a> {
    pub sweep: &'a str,
    pub sgtune_version: &'a str,
    pub param_keys: &'a [String],
    pub workload: &'a WorkloadSpec,
    pub repeats: u64,
    pub reuse_server: bool,
    pub objective: Option<&'a Objective>,
    pub runs: &'a [RunConfig],
    /// Each run's launch command, in plan order.
    pub commands: &'a [String],
}

impl<'a> Written<'a> {
    pub fn new(s: &'a SweepSpec, plan: &'a RunPlan, commands: &'a [String]) -> Written<'a> {
        Written {
            sweep: &plan.sweep_name,
            sgtune_version: env!("CARGO_PKG_VERSION"),
            param_keys: &plan.param_keys,
            workload: &s.workload,
            repeats: s.repeats,
            reuse_server: s.reuse_server,
            objective: s.objective.as_ref(),
            runs: &plan.runs,
            commands,
        }
    }
}

/// What is read back from plan.json: the fields a later command uses (the workload and the
/// runs stay in the file for people; the spec's types read the spec's YAML shape, not this).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Plan {
    pub sweep: String,
    #[serde(default)]
    pub sgtune_version: String,
    #[serde(default)]
    pub param_keys: Vec<String>,
    /// None: the spec had no objective (written as `null`).
    #[serde(default, deserialize_with = "objective_or_none")]
    pub objective: Option<Objective>,
    #[serde(default)]
    pub commands: Vec<String>,
}

/// Written through a `serde_json::Value`, whose maps sort their keys: the file reads as it
/// did when it was built with `json!` (keys in name order, the workload's and runs' too).
pub fn write(root: &Path, w: &Written<'_>) -> Result<(), StoreError> {
    let path = root.join(FILE);
    let value = serde_json::to_value(w).map_err(|e| StoreError {
        path: path.display().to_string(),
        source: std::io::Error::other(e),
    })?;
    store::write_json(&path, &value)
}

/// The folder's plan.json; None when there is none.
pub fn read(root: &Path) -> Result<Option<Plan>, ReadError> {
    store::read_json(&root.join(FILE), "a sweep plan")
}

/// An objective as `Objective`'s `Serialize` writes it (`{goal, metric, slo: [{column, bound,
/// limit}], noise, prune}`); `Objective`'s own `Deserialize` reads the spec's YAML shape
/// (`maximize: column`). decision.json's objective is read the same way.
pub fn objective_as_written<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Objective, D::Error> {
    Ok(WrittenObjective::deserialize(d)?.into())
}

fn objective_or_none<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Objective>, D::Error> {
    Ok(Option::<WrittenObjective>::deserialize(d)?.map(Into::into))
}

#[derive(Deserialize)]
struct WrittenSlo {
    column: Col,
    bound: Bound,
    limit: f64,
}

#[derive(Deserialize)]
struct WrittenObjective {
    goal: Goal,
    metric: Col,
    slo: Vec<WrittenSlo>,
    noise: f64,
    // Written since `objective.prune` exists; an older file had no pruning.
    #[serde(default)]
    prune: bool,
}

impl From<WrittenObjective> for Objective {
    fn from(w: WrittenObjective) -> Objective {
        Objective {
            goal: w.goal,
            metric: w.metric,
            slo: w
                .slo
                .into_iter()
                .map(|s| SloBound {
                    column: s.column,
                    bound: s.bound,
                    limit: s.limit,
                })
                .collect(),
            noise: w.noise,
            prune: w.prune,
        }
    }
}

/// The sweep's objective as the folder recorded it: plan.json's (written at the start, every
/// `${VAR}` already expanded), else spec.yaml's; None without one (or when neither reads).
pub fn read_objective(root: &Path) -> Option<Objective> {
    // A plan.json that cannot be read falls back to the spec, as one that is missing does.
    let from_plan = read(root).ok().flatten().and_then(|p| p.objective);
    from_plan.or_else(|| {
        crate::plan::spec::load(&root.join(super::layout::SPEC_YAML))
            .ok()
            .and_then(|(s, _)| s.objective)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn objective() -> Objective {
        Objective {
            goal: Goal::Minimize,
            metric: Col::TTFT_MS_P99,
            slo: vec![SloBound {
                column: Col::OUTPUT_TOK_S,
                bound: Bound::AtLeast,
                limit: 100.0,
            }],
            noise: 0.2,
            prune: true,
        }
    }

    #[test]
    fn a_plan_reads_back_as_written() {
        let text = "name: s\nserver: {model_path: /m}\nsweep: {chunked_prefill_size: [1024, 2048]}\nworkload: {concurrency: 1, requests: 1, input_tokens: 3, output_tokens: 7}\nobjective: {minimize: ttft_ms_p99, slo: {output_tok_s: {min: 100}}, noise: 0.2, prune: true}\n";
        let s = crate::plan::spec::parse(text, "s").unwrap_or_else(|e| panic!("{e}"));
        let plan = crate::plan::expand::expand(&s);
        let commands = vec!["cmd a=1".to_string(), "cmd a=2".to_string()];
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read(dir.path()).unwrap_or_else(|e| panic!("{e}")), None);
        write(dir.path(), &Written::new(&s, &plan, &commands)).unwrap_or_else(|e| panic!("{e}"));
        let back = read(dir.path())
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("no plan.json"));
        assert_eq!(back.sweep, plan.sweep_name);
        assert_eq!(back.sgtune_version, env!("CARGO_PKG_VERSION"));
        assert_eq!(back.param_keys, plan.param_keys);
        assert_eq!(back.objective, s.objective);
        assert_eq!(back.commands, commands);
        // Byte for byte what run::execute wrote with `json!` before this type.
        let before = serde_json::json!({
            "sweep": plan.sweep_name,
            "sgtune_version": env!("CARGO_PKG_VERSION"),
            "param_keys": plan.param_keys,
            "workload": s.workload,
            "repeats": s.repeats,
            "reuse_server": s.reuse_server,
            "objective": s.objective,
            "runs": plan.runs,
            "commands": commands,
        });
        let mut bytes = serde_json::to_vec_pretty(&before).unwrap_or_else(|e| panic!("{e}"));
        bytes.push(b'\n');
        let now = std::fs::read(dir.path().join(FILE)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            String::from_utf8_lossy(&now),
            String::from_utf8_lossy(&bytes)
        );
    }

    /// A plan.json as sgtune wrote it before this type (serde_json::json! in run::execute)
    /// still loads: the field names are the file's.
    #[test]
    fn an_older_plan_json_still_loads() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let old = serde_json::json!({
            "sweep": "s",
            "sgtune_version": "0.1.0",
            "param_keys": ["a"],
            "workload": {"input_tokens": 8},
            "repeats": 1,
            "reuse_server": false,
            "objective": {"goal": "minimize", "metric": "ttft_ms_p99",
                "slo": [{"column": "output_tok_s", "bound": "at_least", "limit": 100.0}],
                "noise": 0.2, "prune": true},
            "runs": [{"name": "a-1"}],
            "commands": ["cmd a=1"],
        });
        std::fs::write(dir.path().join(FILE), old.to_string()).unwrap_or_else(|e| panic!("{e}"));
        let p = read(dir.path())
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("no plan.json"));
        assert_eq!(p.objective, Some(objective()));
        assert_eq!(p.param_keys, vec!["a".to_string()]);
        assert_eq!(p.commands, vec!["cmd a=1".to_string()]);
        // Before `prune`, and with no objective at all.
        let older = serde_json::json!({
            "sweep": "s",
            "objective": {"goal": "maximize", "metric": "output_tok_s", "slo": [], "noise": 0.05},
        });
        std::fs::write(dir.path().join(FILE), older.to_string()).unwrap_or_else(|e| panic!("{e}"));
        let p = read(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            p.and_then(|p| p.objective).map(|o| (o.goal, o.prune)),
            Some((Goal::Maximize, false))
        );
        let none = serde_json::json!({"sweep": "s", "objective": null});
        std::fs::write(dir.path().join(FILE), none.to_string()).unwrap_or_else(|e| panic!("{e}"));
        let p = read(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.map(|p| p.objective), Some(None));
        std::fs::write(dir.path().join(FILE), "{").unwrap_or_else(|e| panic!("{e}"));
        assert!(read(dir.path()).is_err());
    }

    /// The objective comes back from plan.json as the sweep wrote it (its `${VAR}`s already
    /// expanded); a folder without one has none.
    #[test]
    fn the_objective_is_read_back_from_plan_json() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read_objective(dir.path()), None);
        let o = Objective {
            goal: Goal::Minimize,
            metric: Col::TTFT_MS_P99,
            slo: vec![SloBound {
                column: Col::OUTPUT_TOK_S,
                bound: Bound::AtLeast,
                limit: 100.0,
            }],
            noise: 0.2,
            prune: true,
        };
        let plan = serde_json::json!({"sweep": "s", "objective": o});
        std::fs::write(dir.path().join("plan.json"), plan.to_string())
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read_objective(dir.path()), Some(o));
    }
}
