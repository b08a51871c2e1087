//! The end of every sweep (local, resumed, reproduced, or the Slurm merge): the manifest,
//! the quality guard's verdicts, results.md and the table from every row the folder holds, the
//! decision (decision.md, decision.json), report.html, and the exit code; for a local sweep,
//! then, how it ended told (`finish`).

use crate::plan::expand::RunPlan;
use crate::plan::spec::{self, SweepSpec};
use crate::record::command;
use crate::record::outcome::SweepEnd;
use crate::record::provenance::{self, Manifest};
use crate::record::results_md::{self, ResultsMd};
use crate::record::rows;
use crate::record::store::{self, ResultsDir, StoreError};
use crate::record::sweep::Sweep as Loaded;
use crate::record::{Phase, RunStatus};
use crate::report::decision as decision_md;
use crate::report::table;
use crate::run::deadline::Deadline;
use crate::run::decision_file;
use crate::run::finish::{self, ExitCode, Hook};
use crate::tune::decision;
use crate::tune::effective::EffectiveFacts;
use crate::util::{out, say};
use std::path::Path;

/// After the rounds, however they ended (`ran`: interrupted or not, or the error that stopped
/// them): conclude as [`conclude_decided`] does, map the outcome to an exit code, and tell it
/// (`outcome.json`, state.json, the `on_finish` hook), also when a round stopped on an error.
pub async fn end(
    spec: &SweepSpec,
    plan: &RunPlan,
    results: &ResultsDir,
    manifest: &mut Manifest,
    ran: Result<bool, StoreError>,
    deadline: Option<&Deadline>,
    hook: Option<&Hook>,
) -> Result<ExitCode, StoreError> {
    // The folder is read once here: the rows the deadline's leftovers, the conclusion and the
    // outcome's counts are taken from.
    let loaded = load(results);
    let (code, decided, error, missing, all) = match ran {
        Ok(interrupted) => {
            let at_deadline = deadline.is_some_and(|d| d.reached());
            let missing = at_deadline.then(|| not_measured(spec, plan, loaded.rows()));
            let (code, d, all) = conclude_loaded(
                spec,
                plan,
                results,
                manifest,
                loaded,
                interrupted && !at_deadline,
                missing.as_deref(),
            );
            (code, d, None, missing.unwrap_or_default(), all)
        }
        Err(e) => (
            ExitCode::Unwritable,
            None,
            Some(e),
            Vec::new(),
            loaded.table.rows,
        ),
    };
    let mut outcome = outcome(
        &plan.sweep_name,
        results,
        &all,
        code,
        decided.as_ref(),
        error.as_ref(),
    );
    outcome.not_measured = missing;
    if let Err(e) =
        crate::run::state::finished(&results.root, outcome.outcome, &outcome.not_measured)
    {
        say(&format!("warning: {e}"));
    }
    for w in finish::tell(&results.root, &outcome, hook).await {
        say(&format!("warning: {w}"));
    }
    match error {
        Some(e) => Err(e),
        None => Ok(code),
    }
}

/// The decision's sections besides the load points: the memory pre-flight's knob, and the
/// quality guard's report.
struct Sections<'a> {
    preflight_knob: Option<&'a str>,
    quality: Option<crate::tune::quality::QualityReport>,
}

/// With an objective: decide from every row the folder holds. An interrupted sweep is not
/// decided (its rows are incomplete), and an earlier decision in the folder is removed rather
/// than left to contradict the rows.
#[allow(clippy::too_many_arguments)] // each is one thing the decision is made from
fn decide(
    o: &spec::Objective,
    sweep: &str,
    rows: &[rows::Row],
    loaded: &Loaded,
    results: &ResultsDir,
    manifest: &Manifest,
    interrupted: bool,
    sections: Sections<'_>,
) -> Option<decision::Decision> {
    let Sections {
        preflight_knob,
        quality,
    } = sections;
    if interrupted {
        for p in [
            results.root.join(store::DECISION_MD),
            results.root.join(decision_file::FILE),
        ] {
            if let Err(e) = std::fs::remove_file(&p) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    say(&format!("warning: cannot remove {}: {e}", p.display()));
                }
            }
        }
        say("no decision: the sweep was interrupted; `sgtune resume` finishes it and decides");
        return None;
    }
    let mut commands = decision::commands(manifest);
    for r in rows {
        let name = r.run_name();
        if commands.contains_key(name) {
            continue;
        }
        // A folder from before the manifest recorded commands: the launch's own file.
        let found = [name.to_string(), format!("{name}.r1")]
            .iter()
            .find_map(|d| {
                command::read(&store::launch_dir(&results.root, d))
                    .ok()
                    .flatten()
            });
        if let Some(c) = found {
            commands.insert(name.to_string(), c);
        }
    }
    let facts = effective_facts(rows, loaded);
    let mut d = decision::decide_with(sweep, o, rows, &commands, decision::cost(manifest), &facts);
    d.preflight = preflight_knob.and_then(|k| decision::preflight_summary(rows, k));
    d.quality = quality;
    Some(d)
}

/// What the effective arguments say, for the decision: the keys not in effect from each
/// launch's effective_args.json (the typed findings; the rows' `not_in_effect` column is prose
/// for people and is not parsed), the same servers from the rows' `effective_args_id`.
fn effective_facts(rows: &[rows::Row], loaded: &Loaded) -> EffectiveFacts {
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
            if let Some(f) = loaded.effective.get(&dir) {
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

/// decision.md (with the sections the renderer of the decision does not know: the same
/// servers in effect, what a deadline left unmeasured) and decision.json, and the summary
/// after the table.
fn write_decision(d: &decision::Decision, rows: &[rows::Row], extra: &str, results: &ResultsDir) {
    let md = decision_md::render_md(d) + &crate::report::effective::decision_section(rows) + extra;
    let written = store::write_atomic(&results.root.join(store::DECISION_MD), md.as_bytes())
        .and_then(|_| decision_file::write(&results.root, d));
    if let Err(e) = written {
        say(&format!("warning: cannot write the decision: {e}"));
    }
    out(&format!("{}\n", d.summary));
}

/// What the plan still lacks after a deadline stopped it (`tune::deadline::not_measured`); when
/// the plan's own measurements are all there, the rounds the tuner would have added.
fn not_measured(spec: &SweepSpec, plan: &RunPlan, all: &[rows::Row]) -> Vec<String> {
    let mut left = crate::tune::deadline::not_measured(spec, plan, all);
    if left.is_empty() {
        left.push(
            "the further rounds the tuner would have run (repeats: auto, or the search's next probes)"
                .to_string(),
        );
    }
    left
}

/// How the sweep ended, from its exit code, its rows and its decision.
fn outcome(
    sweep: &str,
    results: &ResultsDir,
    all: &[rows::Row],
    code: ExitCode,
    d: Option<&decision::Decision>,
    error: Option<&StoreError>,
) -> finish::Outcome {
    let ok = all.iter().filter(|r| r.is_ok()).count();
    let word = match (code, error) {
        (_, Some(_)) => SweepEnd::Error,
        (ExitCode::Ok, _) => SweepEnd::Done,
        (ExitCode::RunsFailed, _) => SweepEnd::RunsFailed,
        (ExitCode::Interrupted, _) => SweepEnd::Interrupted,
        (ExitCode::Deadline, _) => SweepEnd::Deadline,
        (
            ExitCode::BadInput | ExitCode::Gated | ExitCode::Unwritable | ExitCode::ProgramNotFound,
            _,
        ) => SweepEnd::Error,
    };
    // One winner for the hook: the same configuration won at every load point decided.
    let points = d.map_or(&[][..], |d| d.points.as_slice());
    let winner = points
        .first()
        .and_then(|p| p.winner.clone())
        .filter(|w| points.iter().all(|p| p.winner.as_ref() == Some(w)));
    let winner_command = winner
        .as_ref()
        .and_then(|_| points.first().and_then(|p| p.command.clone()));
    let mut summary = format!(
        "{sweep}: {word} (exit {}), {} row(s), {ok} ok, {} not ok",
        code.code(),
        all.len(),
        all.len() - ok
    );
    match (&winner, d) {
        (Some(w), _) => summary.push_str(&format!("; winner {w}")),
        (None, Some(_)) => summary.push_str("; no single winner (decision.md)"),
        (None, None) => {}
    }
    if let Some(e) = error {
        summary.push_str(&format!("; error: {e}"));
    }
    finish::Outcome {
        outcome: word,
        exit_code: code.code(),
        sweep: sweep.to_string(),
        results_dir: results.root.display().to_string(),
        rows: all.len(),
        rows_ok: ok,
        rows_failed: all.len() - ok,
        winner,
        winner_command,
        summary,
        not_measured: Vec::new(),
        error: error.map(|e| e.to_string()),
        finished_at: provenance::now_rfc3339(),
    }
}

/// After the runs (here, or the Slurm merge): the manifest, results.md and the table from every
/// row the folder holds, the decision, and the exit code.
pub fn conclude(
    spec: &SweepSpec,
    plan: &RunPlan,
    results: &ResultsDir,
    manifest: &mut Manifest,
    interrupted: bool,
) -> ExitCode {
    let loaded = load(results);
    conclude_loaded(spec, plan, results, manifest, loaded, interrupted, None).0
}

/// The results folder, loaded once (`record::sweep`); a folder whose results.csv does not read
/// concludes with no rows, and says so.
fn load(results: &ResultsDir) -> Loaded {
    let loaded = Loaded::load(&results.root).unwrap_or_else(|e| {
        say(&format!(
            "warning: cannot read results.csv back for the table: {e}"
        ));
        Loaded::empty(&results.root)
    });
    for p in &loaded.problems {
        say(&format!("warning: {p}"));
    }
    loaded
}

/// [`conclude`] of a loaded folder, with the decision it wrote (None without an objective, or
/// interrupted) and the rows as the quality guard left them.
fn conclude_loaded(
    spec: &SweepSpec,
    plan: &RunPlan,
    results: &ResultsDir,
    manifest: &mut Manifest,
    mut loaded: Loaded,
    interrupted: bool,
    not_measured: Option<&[String]>,
) -> (ExitCode, Option<decision::Decision>, Vec<rows::Row>) {
    if !interrupted && not_measured.is_none() {
        manifest.finished_at = Some(provenance::now_rfc3339());
    }
    if let Err(e) = provenance::write(&results.root, manifest) {
        say(&format!("warning: cannot write manifest.json: {e}"));
    }
    let csv_table = std::mem::take(&mut loaded.table);
    // The quality guard's verdicts go into the rows (and results.csv) before anything reads
    // them; an interrupted sweep is not judged (its baseline may be missing).
    let mut names: Vec<String> = plan.runs.iter().map(|r| r.name.clone()).collect();
    // A tune's configurations are the ones its rows name (its plan holds the start only).
    if spec.tune.is_some() {
        for r in &csv_table.rows {
            if !names.iter().any(|n| n == r.run_name()) {
                names.push(r.run_name().to_string());
            }
        }
    }
    let reference = spec
        .quality
        .as_ref()
        .and_then(|q| q.reference_dir.as_deref())
        .map(Path::new);
    let (quality, all) = if interrupted {
        (None, csv_table.rows)
    } else {
        crate::run::quality::apply(spec, &names, &results.root, csv_table, reference)
    };
    // Decided first, so that the table stars the decision's pick; printed after the table.
    let decided = if let Some(o) = &spec.objective {
        decide(
            o,
            &plan.sweep_name,
            &all,
            &loaded,
            results,
            manifest,
            interrupted,
            Sections {
                preflight_knob: spec.search.preflight.as_ref().map(|p| p.knob.as_str()),
                quality,
            },
        )
    } else {
        None
    };
    let marks = table::marks(spec.objective.as_ref(), decided.as_ref(), &all);
    let table = table::render(&all, &plan.param_keys, marks.as_ref());
    let md = ResultsMd {
        sweep: plan.sweep_name.clone(),
        folder: results.root.display().to_string(),
        table: table.clone(),
    };
    if let Err(e) = results_md::write(&results.root, &md) {
        say(&format!("warning: cannot write results.md: {e}"));
    }
    out(&format!("\n{table}"));
    if let Some(d) = &decided {
        // After a deadline, decision.md says what the decision could not use.
        let extra = not_measured
            .map(|left| decision_md::deadline_section(left, &results.root))
            .unwrap_or_default()
            + &crate::run::guided::path_section(spec, &all, manifest.tune_slots.unwrap_or(1));
        write_decision(d, &all, &extra, results);
    }
    // The pictures: a report that cannot be written loses nothing (the rows are in
    // results.csv); say so and carry on.
    // The page is drawn from the loaded folder as this conclusion left it: the rows with the
    // quality guard's cells, and the decision just written (or removed).
    loaded.table.rows = all;
    loaded.set_decision(decided.as_ref());
    let deadline = crate::run::report::Deadline::Now(not_measured);
    let page = crate::run::report::page_of(&loaded, deadline);
    let all = loaded.table.rows;
    match crate::run::report::write_page(&page, None) {
        Ok(p) => out(&format!("report: {}", p.display())),
        Err(e) => say(&format!("warning: cannot write report.html: {e}")),
    }
    out(&format!("results: {}", results.root.display()));
    if let Some(left) = not_measured {
        say(&format!(
            "deadline: decided from what was measured; {} launch(es) not measured before the deadline; continue with `sgtune resume {}`",
            left.len(),
            results.root.display()
        ));
        (ExitCode::Deadline, decided, all)
    } else if interrupted {
        say(&format!(
            "interrupted: every finished run is in results.csv; continue with `sgtune resume {}`",
            results.root.display()
        ));
        (ExitCode::Interrupted, decided, all)
    } else if all.iter().any(|r| {
        !r.is_ok() && r.phase() != Phase::Preflight && r.status() != Some(RunStatus::Pruned)
    }) {
        // A pre-flight attempt that failed, or a pruned measurement, is the search working,
        // not a failed run.
        (ExitCode::RunsFailed, decided, all)
    } else {
        (ExitCode::Ok, decided, all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

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

    fn write(root: &Path, dir: &str, keys: &[&str]) {
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
        let facts = effective_facts(&rows, &loaded);
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
