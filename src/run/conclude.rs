//! The end of every sweep (local, resumed, reproduced, or the Slurm merge), in three steps:
//! the folder read once (`read`: results.csv, the manifest, the effective arguments, the
//! quality passes, what report.html shows of each launch), the conclusion worked out once from
//! it (`tune::conclusion`: the rows judged, the decision, the tune's path, the end), then each
//! file written from that one conclusion (`write`: results.csv's quality cells, manifest.json,
//! results.md and the table, decision.md and decision.json, report.html); for a local sweep
//! (`end`), then outcome.json, state.json and the `on_finish` hook.

use crate::load::quality::QualitySample;
use crate::plan::expand::RunPlan;
use crate::plan::spec::SweepSpec;
use crate::record::provenance::{self, Manifest};
use crate::record::results_md::{self, ResultsMd};
use crate::record::rows::Col;
use crate::record::store::{self, ResultsDir, StoreError};
use crate::record::sweep::Sweep as Loaded;
use crate::record::{outcome as outcome_file, quality, state};
use crate::report::conclusion::{self as shown, Frame};
use crate::report::html::Launch;
use crate::run::deadline::Deadline;
use crate::run::finish::{self, ExitCode, Hook, SweepEnd};
use crate::tune::conclusion::{Conclusion, Read};
use crate::util::{out, say};
use std::path::Path;

/// After the rounds, however they ended (`ran`: interrupted or not, or the error that stopped
/// them): conclude as [`conclude`] does, map the outcome to an exit code, and tell it
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
    // The clock, read once: the manifest's and outcome.json's end.
    let now = provenance::now_rfc3339();
    let (c, error) = match ran {
        Ok(interrupted) => {
            let at_deadline = deadline.is_some_and(|d| d.reached());
            let c = concluded(
                spec,
                plan,
                results,
                manifest,
                interrupted,
                at_deadline,
                &now,
            );
            (c, None)
        }
        // The rounds stopped on an error: the rows as they are, told; nothing concluded.
        Err(e) => (
            Conclusion::cut_short(&plan.sweep_name, read_rows(results).table.rows),
            Some(e),
        ),
    };
    let code = exit_code(c.end);
    let outcome = outcome(&c, results, code, error.as_ref(), now);
    if let Err(e) = state::finished(
        &results.root,
        outcome.outcome,
        &outcome.not_measured,
        &outcome.finished_at,
    ) {
        say(&format!("warning: {e}"));
    }
    if let Err(e) = outcome_file::write(&results.root, &outcome) {
        say(&format!(
            "warning: cannot write {}: {e}",
            results.root.join(finish::FILE).display()
        ));
    }
    if let Some(h) = hook {
        if let Some(w) = finish::hook(&results.root, &outcome, h).await {
            say(&format!("warning: {w}"));
        }
    }
    match error {
        Some(e) => Err(e),
        None => Ok(code),
    }
}

/// After the runs (here, or the Slurm merge): the folder read, the conclusion worked out and
/// written (the manifest, results.md and the table, the decision, report.html); its exit code.
pub fn conclude(
    spec: &SweepSpec,
    plan: &RunPlan,
    results: &ResultsDir,
    manifest: &mut Manifest,
    interrupted: bool,
) -> ExitCode {
    let now = provenance::now_rfc3339();
    exit_code(concluded(spec, plan, results, manifest, interrupted, false, &now).end)
}

/// Read, work out, write: the conclusion every file was written from.
fn concluded(
    spec: &SweepSpec,
    plan: &RunPlan,
    results: &ResultsDir,
    manifest: &mut Manifest,
    interrupted: bool,
    at_deadline: bool,
    now: &str,
) -> Conclusion {
    let judge = spec.quality.is_some() && (at_deadline || !interrupted);
    let folder = read(spec, results, judge);
    let c = Conclusion::work_out(Read {
        spec,
        plan,
        manifest,
        rows: folder.loaded.table.rows.clone(),
        effective: &folder.loaded.effective,
        older_commands: folder.loaded.older_commands.clone(),
        quality: folder.quality.clone(),
        interrupted,
        at_deadline,
    });
    write(&c, spec, plan, results, manifest, folder, now);
    c
}

/// The exit code of how a sweep ended.
fn exit_code(end: SweepEnd) -> ExitCode {
    match end {
        SweepEnd::Done => ExitCode::Ok,
        SweepEnd::RunsFailed => ExitCode::RunsFailed,
        SweepEnd::Interrupted => ExitCode::Interrupted,
        SweepEnd::Deadline => ExitCode::Deadline,
        SweepEnd::Error => ExitCode::Unwritable,
    }
}

/// What the end of a sweep reads, each file once, before anything is written.
struct Folder {
    /// results.csv, manifest.json, the objective, effective_args.json, decision.json.
    loaded: Loaded,
    /// The quality passes: the sweep's own and, for a re-check, its reference's.
    quality: (Vec<QualitySample>, Vec<QualitySample>),
    /// What report.html shows of each launch (its measurements, the server's timeline).
    launches: Vec<Launch>,
    /// decision.md was there (a folder concluded without an objective keeps an older one).
    decision_md: bool,
}

/// The results folder, loaded once (`record::sweep`); a folder whose results.csv does not read
/// concludes with no rows, and says so.
fn read_rows(results: &ResultsDir) -> Loaded {
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

/// Everything the conclusion and its files are made from: the folder loaded, the quality
/// passes (when `judge`), each launch's page data; an older folder's commands come with the load.
fn read(spec: &SweepSpec, results: &ResultsDir, judge: bool) -> Folder {
    let loaded = read_rows(results);
    let root = &results.root;
    let quality = if judge {
        let reference = spec
            .quality
            .as_ref()
            .and_then(|q| q.reference_dir.as_deref())
            .map(Path::new);
        quality::read_sweep(root, reference)
    } else {
        (Vec::new(), Vec::new())
    };
    let launches = crate::run::report::launches(root, loaded.manifest.as_ref(), loaded.rows());
    Folder {
        quality,
        launches,
        decision_md: root.join(store::DECISION_MD).is_file(),
        loaded,
    }
}

/// Each file of the conclusion, written from it: results.csv's quality cells, manifest.json,
/// results.md (and the table on stdout), decision.md and decision.json (or, interrupted, both
/// removed), report.html. A file that cannot be written loses nothing (the rows are in
/// results.csv): it is said, and the rest is written.
fn write(
    c: &Conclusion,
    spec: &SweepSpec,
    plan: &RunPlan,
    results: &ResultsDir,
    manifest: &mut Manifest,
    folder: Folder,
    now: &str,
) {
    let root = &results.root;
    let stopped = matches!(c.end, SweepEnd::Interrupted | SweepEnd::Deadline);
    if !stopped {
        manifest.finished_at = Some(now.to_string());
    }
    if let Err(e) = provenance::write(root, manifest) {
        say(&format!("warning: cannot write manifest.json: {e}"));
    }
    // The quality guard's verdicts, into results.csv (a header without the quality columns,
    // from an older sgtune, is left as it is).
    let table = &folder.loaded.table;
    if c.judged && table.has_column(&Col::QUALITY_VERDICT) {
        if let Err(e) = store::rewrite_table(root, &table.header, &c.rows) {
            say(&format!(
                "warning: cannot write the quality verdicts into results.csv: {e}"
            ));
        }
    }
    // An interrupted sweep is not decided, and an earlier decision in the folder is removed
    // rather than left to contradict the rows.
    if c.end == SweepEnd::Interrupted && c.objective.is_some() {
        for p in [
            root.join(store::DECISION_MD),
            root.join(store::DECISION_JSON),
        ] {
            if let Err(e) = std::fs::remove_file(&p) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    say(&format!("warning: cannot remove {}: {e}", p.display()));
                }
            }
        }
        say("no decision: the sweep was interrupted; `sgtune resume` finishes it and decides");
    }
    // The texts, from the one conclusion: the table and the page star the same picks, and
    // decision.md and the page carry the same sections under the decision.
    let Folder {
        loaded,
        launches,
        decision_md,
        ..
    } = folder;
    let mut notes = loaded.problems.clone();
    if c.decision.is_none() && c.objective.is_none() && decision_md {
        notes.push(crate::run::report::NO_DECISION_JSON.to_string());
    }
    let frame = Frame {
        name: loaded.name(),
        dir: root.display().to_string(),
        param_keys: loaded.param_keys(),
        launches,
        notes,
    };
    let shown = shown::render(c, spec, &plan.param_keys, root, frame);
    let md = ResultsMd {
        sweep: plan.sweep_name.clone(),
        folder: root.display().to_string(),
        table: shown.table.clone(),
    };
    if let Err(e) = results_md::write(root, &md) {
        say(&format!("warning: cannot write results.md: {e}"));
    }
    out(&format!("\n{}", shown.table));
    if let (Some(d), Some(md)) = (&c.decision, &shown.decision_md) {
        let written = store::write_atomic(&root.join(store::DECISION_MD), md.as_bytes())
            .and_then(|_| store::write_json(&root.join(store::DECISION_JSON), d));
        if let Err(e) = written {
            say(&format!("warning: cannot write the decision: {e}"));
        }
        out(&format!("{}\n", d.summary));
    }
    // The page: one that cannot be written loses nothing (the rows are in results.csv).
    let html = root.join(store::REPORT_HTML);
    match store::write_atomic(&html, shown.html.as_bytes()) {
        Ok(()) => out(&format!("report: {}", html.display())),
        Err(e) => say(&format!("warning: cannot write report.html: {e}")),
    }
    out(&format!("results: {}", root.display()));
    if let Some(left) = &c.not_measured {
        say(&format!(
            "deadline: decided from what was measured; {} launch(es) not measured before the deadline; continue with `sgtune resume {}`",
            left.len(),
            root.display()
        ));
    } else if c.end == SweepEnd::Interrupted {
        say(&format!(
            "interrupted: every finished run is in results.csv; continue with `sgtune resume {}`",
            root.display()
        ));
    }
}

/// How the sweep ended, for outcome.json, state.json and the hook: from the conclusion.
fn outcome(
    c: &Conclusion,
    results: &ResultsDir,
    code: ExitCode,
    error: Option<&StoreError>,
    finished_at: String,
) -> finish::Outcome {
    let all = &c.rows;
    let sweep = &c.sweep;
    let word = c.end;
    let ok = all.iter().filter(|r| r.is_ok()).count();
    // One winner for the hook: the same configuration won at every load point decided.
    let d = c.decision.as_ref();
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
        not_measured: c.not_measured.clone().unwrap_or_default(),
        error: error.map(|e| e.to_string()),
        finished_at,
    }
}
