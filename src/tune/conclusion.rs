//! A sweep's conclusion, worked out once from what its folder holds (read by `run::conclude`
//! before anything is written): the rows with the quality guard's verdicts, the decision, the
//! tune's path (replayed once), what a deadline left, and how the sweep ended. Pure: every file
//! the end of a sweep writes (results.csv's quality cells, results.md, decision.md and .json,
//! report.html, outcome.json, state.json) is then written from this one value, as hyperfine
//! hands one `BenchmarkResult` to each exporter.

use crate::load::quality::QualitySample;
use crate::plan::expand::RunPlan;
use crate::plan::spec::{Objective, SweepSpec};
use crate::record::effective::EffectiveFile;
use crate::record::outcome::SweepEnd;
use crate::record::provenance::Manifest;
use crate::record::rows::Row;
use crate::record::{Phase, RunStatus};
use crate::tune::decision::{self, Decision};
use crate::tune::effective::EffectiveFacts;
use crate::tune::path::{self, Path};
use std::collections::BTreeMap;

/// What a sweep concluded.
#[derive(Debug, Clone)]
pub struct Conclusion {
    /// The sweep's name.
    pub sweep: String,
    /// Every row of the folder, with the quality guard's verdicts in their cells.
    pub rows: Vec<Row>,
    /// The quality guard judged the rows (their cells changed: results.csv is rewritten).
    pub judged: bool,
    /// The objective the decision (or, without one, the leader so far) is by.
    pub objective: Option<Objective>,
    /// The decision: None without an objective, or when the sweep was interrupted.
    pub decision: Option<Decision>,
    /// A guided tune's path, replayed once from the rows in the batches it ran in.
    pub path: Option<Path>,
    /// What a deadline left unmeasured (None: no deadline stopped the sweep).
    pub not_measured: Option<Vec<String>>,
    /// How the sweep ended.
    pub end: SweepEnd,
}

/// What the conclusion is worked out from: the spec and plan, the manifest, and what the
/// folder held (read once, before anything is written).
pub struct Read<'a> {
    pub spec: &'a SweepSpec,
    pub plan: &'a RunPlan,
    pub manifest: &'a Manifest,
    /// results.csv's rows.
    pub rows: Vec<Row>,
    /// Each launch folder's effective_args.json, by folder name.
    pub effective: &'a BTreeMap<String, EffectiveFile>,
    /// command.txt of the configurations the manifest records no command for (a folder from
    /// before the manifest recorded them).
    pub older_commands: BTreeMap<String, String>,
    /// The quality passes: the sweep's own, and a reference sweep's (a re-check's).
    pub quality: (Vec<QualitySample>, Vec<QualitySample>),
    /// Stopped by Ctrl-C (not at the deadline).
    pub interrupted: bool,
    /// Stopped at the deadline.
    pub at_deadline: bool,
}

impl Conclusion {
    /// Work the conclusion out: the deadline's leftovers, the quality guard's verdicts into
    /// the rows (not for an interrupted sweep: its baseline may be missing), the decision (not
    /// for an interrupted sweep either: its rows are incomplete), the tune's path, the end.
    pub fn work_out(r: Read<'_>) -> Conclusion {
        let Read {
            spec,
            plan,
            manifest,
            mut rows,
            effective,
            older_commands,
            quality: (samples, reference),
            interrupted,
            at_deadline,
        } = r;
        let not_measured = at_deadline.then(|| left_at_deadline(spec, plan, &rows));
        let interrupted = interrupted && !at_deadline;
        let mut report = None;
        if let Some(q) = spec.quality.as_ref().filter(|_| !interrupted) {
            let mut names: Vec<String> = plan.runs.iter().map(|r| r.name.clone()).collect();
            // A tune's configurations are the ones its rows name (its plan holds the start
            // only).
            if spec.tune.is_some() {
                for r in &rows {
                    if !names.iter().any(|n| n == r.run_name()) {
                        names.push(r.run_name().to_string());
                    }
                }
            }
            let judged = crate::tune::quality::judge_sweep(q, &names, samples, reference);
            crate::tune::quality::annotate(&mut rows, &judged);
            report = Some(judged);
        }
        let judged = report.is_some();
        let decision = match &spec.objective {
            Some(o) if !interrupted => {
                let mut commands = decision::commands(manifest);
                for (name, c) in older_commands {
                    commands.entry(name).or_insert(c);
                }
                let facts = effective_facts(&rows, effective);
                let mut d = decision::decide_with(
                    &plan.sweep_name,
                    o,
                    &rows,
                    &commands,
                    decision::cost(manifest),
                    &facts,
                );
                d.preflight = spec
                    .search
                    .preflight
                    .as_ref()
                    .and_then(|p| decision::preflight_summary(&rows, &p.knob));
                d.quality = report;
                Some(d)
            }
            _ => None,
        };
        let path = replay(spec, manifest.tune_slots, &rows);
        let end = if not_measured.is_some() {
            SweepEnd::Deadline
        } else if interrupted {
            SweepEnd::Interrupted
        } else if rows.iter().any(|r| {
            !r.is_ok() && r.phase() != Phase::Preflight && r.status() != Some(RunStatus::Pruned)
        }) {
            // A pre-flight attempt that failed, or a pruned measurement, is the search
            // working, not a failed run.
            SweepEnd::RunsFailed
        } else {
            SweepEnd::Done
        };
        Conclusion {
            sweep: plan.sweep_name.clone(),
            rows,
            judged,
            objective: spec.objective.clone(),
            decision,
            path,
            not_measured,
            end,
        }
    }

    /// A sweep whose rounds stopped on an error: its rows as they are, nothing decided.
    pub fn cut_short(sweep: &str, rows: Vec<Row>) -> Conclusion {
        Conclusion {
            sweep: sweep.to_string(),
            rows,
            judged: false,
            objective: None,
            decision: None,
            path: None,
            not_measured: None,
            end: SweepEnd::Error,
        }
    }
}

/// A guided tune's path, replayed from the rows in the batches it ran in (`width`: manifest
/// tune_slots); None for a sweep without `tune:`.
pub fn replay(spec: &SweepSpec, width: Option<usize>, rows: &[Row]) -> Option<Path> {
    let t = spec.tune.as_ref()?;
    let space = path::space(t);
    let width = width.unwrap_or(1).max(1);
    Some(path::replay_batched(spec, &space, t.launches as usize, width, rows).path)
}

/// What the plan still lacks after a deadline stopped it (`tune::deadline::not_measured`); when
/// the plan's own measurements are all there, the rounds the tuner would have added.
fn left_at_deadline(spec: &SweepSpec, plan: &RunPlan, rows: &[Row]) -> Vec<String> {
    let mut left = crate::tune::deadline::not_measured(spec, plan, rows);
    if left.is_empty() {
        left.push(
            "the further rounds the tuner would have run (repeats: auto, or the search's next probes)"
                .to_string(),
        );
    }
    left
}

/// What the effective arguments say, for the decision: the keys not in effect from each
/// launch's effective_args.json (the typed findings; the rows' `not_in_effect` column is prose
/// for people and is not parsed), the same servers from the rows' `effective_args_id`.
pub fn effective_facts(
    rows: &[Row],
    effective: &BTreeMap<String, EffectiveFile>,
) -> EffectiveFacts {
    let mut keys = Vec::new();
    let mut seen: Vec<(&str, String)> = Vec::new();
    for r in rows {
        let name = r.run_name();
        // A row's launch folder: its configuration's name, or `<name>.r<k>` when each repeat
        // had a launch of its own (tune::work, tune::repeats).
        for dir in [
            name.to_string(),
            format!(
                "{name}.r{}",
                r.repeat().map_or(String::new(), |k| k.to_string())
            ),
        ] {
            if seen.iter().any(|(n, d)| *n == name && *d == dir) {
                continue;
            }
            // No file: a folder from before effective_args.json, or a launch that wrote none
            // (vLLM, a server never ready). No key is known for it, and none is guessed from
            // the prose column. (One that could not be read is among the loaded sweep's
            // problems, said when it was loaded.)
            if let Some(f) = effective.get(&dir) {
                keys.extend(
                    f.found
                        .not_in_effect
                        .iter()
                        .map(|f| (name.to_string(), f.key.clone())),
                );
            }
            seen.push((name, dir));
        }
    }
    EffectiveFacts::new(rows, keys)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::rows;
    use crate::record::sweep::Sweep as Loaded;

    fn row(name: &str, repeat: &str) -> rows::Row {
        let mut m = BTreeMap::new();
        for (k, v) in [
            ("run_name", name),
            ("repeat", repeat),
            ("phase", "measure"),
            ("effective_args_id", "aaa"),
            // Prose that names no key: the key comes from the file.
            ("not_in_effect", "asked something, in effect something else"),
        ] {
            m.insert(k.to_string(), v.to_string());
        }
        rows::Row::from_cells(m)
    }

    fn write(root: &std::path::Path, dir: &str, keys: &[&str]) {
        let d = root.join("runs").join(dir);
        std::fs::create_dir_all(&d).expect("launch folder");
        let found: Vec<serde_json::Value> = keys
            .iter()
            .map(|k| serde_json::json!({"key": k, "asked": "8", "in_effect": "1", "evidence": "/server_info"}))
            .collect();
        let file = serde_json::json!({"asked": [], "id": "aaa", "not_in_effect": found});
        std::fs::write(d.join(crate::record::effective::FILE), file.to_string()).expect("written");
    }

    #[test]
    fn the_keys_come_from_each_launch_folder() {
        let dir = tempfile::tempdir().expect("temp dir");
        // `a` in one launch; `b` one launch per repeat; `c` wrote no file (an older folder).
        write(dir.path(), "a", &["page_size"]);
        write(dir.path(), "b.r1", &["cuda_graph_max_bs_decode"]);
        write(dir.path(), "b.r2", &["cuda_graph_max_bs_decode", "dtype"]);
        let rows = vec![
            row("a", "1"),
            row("a", "2"),
            row("b", "1"),
            row("b", "2"),
            row("c", "1"),
        ];
        // The loaded folder reads every launch's effective_args.json once.
        std::fs::write(dir.path().join("results.csv"), "run_name\n").expect("results.csv");
        let loaded = Loaded::load(dir.path()).expect("loads");
        let facts = effective_facts(&rows, &loaded.effective);
        let pair = |n: &str, k: &str| (n.to_string(), k.to_string());
        assert_eq!(
            facts.not_in_effect,
            vec![
                pair("a", "page_size"),
                pair("b", "cuda_graph_max_bs_decode"),
                pair("b", "dtype"),
            ]
        );
        assert_eq!(
            facts.same_server,
            vec![(
                "aaa".to_string(),
                vec!["a".to_string(), "b".to_string(), "c".to_string()]
            )]
        );
    }
}
