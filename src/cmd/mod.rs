//! One function per subcommand, wiring the stages together and mapping outcomes to exit codes.

pub mod cli;
pub mod load;
pub mod log;

use crate::cmd::cli::{Cli, Command};
use crate::plan::expand::{self, RunPlan};
use crate::plan::spec::{self, Endpoint, SweepSpec};
use crate::record;
use crate::record::provenance::{self, Manifest};
use crate::record::rows;
use crate::record::store::{self, ResultsDir};
use crate::report::compare;
use crate::report::progress::Progress;
use crate::report::table;
use crate::run::{self as runner, RunContext};
use crate::server::command;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use tokio_util::sync::CancellationToken;

pub const EXIT_OK: i32 = 0;
pub const EXIT_RUNS_FAILED: i32 = 1;
pub const EXIT_BAD_INPUT: i32 = 2;
pub const EXIT_INTERRUPTED: i32 = 130;

/// Write to stderr, ignoring errors (a closed terminal must not turn into a panic).
fn say(msg: &str) {
    let _ = writeln!(std::io::stderr(), "{msg}");
}

fn out(msg: &str) {
    let _ = writeln!(std::io::stdout(), "{msg}");
}

pub async fn run(cli: Cli) -> i32 {
    match cli.command {
        Command::Reap { parent, pgid } => {
            crate::server::supervise::reap_loop(parent, pgid);
            EXIT_OK
        }
        Command::Load {
            url,
            model,
            workload,
            sets,
            output,
        } => match crate::cmd::load::build_workload(workload.as_deref(), &sets) {
            Ok(mut w) => {
                if model.is_some() {
                    w.model = model;
                }
                crate::cmd::load::run(&url, w, output.as_deref()).await
            }
            Err(e) => {
                say(&format!("error: {e}"));
                EXIT_BAD_INPUT
            }
        },
        Command::Log(args) => crate::cmd::log::run(args).await,
        Command::Columns => {
            out(&record::columns_markdown());
            EXIT_OK
        }
        Command::Validate { spec } => match load_checked(&spec) {
            Ok((s, _, plan, _)) => {
                print_plan(&s, &plan);
                EXIT_OK
            }
            Err(code) => code,
        },
        Command::Run {
            spec,
            dry_run,
            results_dir,
            resume,
            retry_failed,
            force,
        } => {
            let (s, text, plan, prep) = match load_checked(&spec) {
                Ok(v) => v,
                Err(code) => return code,
            };
            if dry_run {
                print_plan(&s, &plan);
                return EXIT_OK;
            }
            let input = SweepInput {
                spec: &s,
                text: &text,
                spec_path: &spec,
                plan: &plan,
                prep: &prep,
            };
            match resume {
                Some(dir) => resume_sweep(&input, &dir, retry_failed, force).await,
                None => new_sweep(&input, &results_dir).await,
            }
        }
        Command::Resume {
            dir,
            retry_failed,
            force,
        } => {
            let spec = dir.join("spec.yaml");
            let (s, text, plan, prep) = match load_checked(&spec) {
                Ok(v) => v,
                Err(code) => return code,
            };
            let input = SweepInput {
                spec: &s,
                text: &text,
                spec_path: &spec,
                plan: &plan,
                prep: &prep,
            };
            resume_sweep(&input, &dir, retry_failed, force).await
        }
        Command::Compare {
            a,
            b,
            metric,
            format,
            noise,
        } => compare_cmd(&a, &b, metric, format, noise),
        Command::Reproduce {
            dir,
            run,
            results_dir,
            tolerance,
        } => reproduce(&dir, &run, &results_dir, tolerance).await,
    }
}

/// Parse, expand and check everything that can be checked before launching anything.
/// What a sweep needs besides its spec, read before anything is launched.
pub struct Prepared {
    /// Prompt token ids are drawn from [0, vocab) (0: not needed).
    pub vocab: u64,
    /// `workload.dataset`, loaded.
    pub dataset: Option<Arc<Vec<crate::load::dataset::DatasetPrompt>>>,
}

fn load_checked(path: &Path) -> Result<(SweepSpec, String, RunPlan, Prepared), i32> {
    let (s, text) = spec::load(path).map_err(|e| {
        say(&format!("error: {e}"));
        EXIT_BAD_INPUT
    })?;
    let plan = expand::expand(&s);
    let vocab = resolve_vocab(&s).map_err(|e| {
        say(&format!("error: {}: {e}", path.display()));
        EXIT_BAD_INPUT
    })?;
    let dataset = match &s.workload.dataset {
        Some(d) => match crate::load::dataset::load(Path::new(d)) {
            Ok(p) => Some(Arc::new(p)),
            Err(e) => {
                say(&format!("error: {}: {e}", path.display()));
                return Err(EXIT_BAD_INPUT);
            }
        },
        None => None,
    };
    Ok((s, text, plan, Prepared { vocab, dataset }))
}

/// Token ids for completions prompts are drawn from [0, vocab_size): from the spec, else the
/// model's config.json (also `text_config.vocab_size` for multimodal configs).
pub fn resolve_vocab(s: &SweepSpec) -> Result<u64, String> {
    if let Some(v) = s.workload.vocab_size {
        return Ok(v);
    }
    if s.workload.endpoint == Endpoint::Chat || s.workload.dataset.is_some() {
        return Ok(0);
    }
    let path = Path::new(&s.server.model_path.0).join("config.json");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "workload.vocab_size is not set and {} cannot be read ({e}): set workload.vocab_size",
            path.display()
        )
    })?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{} is not valid JSON ({e}): set workload.vocab_size",
            path.display()
        )
    })?;
    v.get("vocab_size")
        .or_else(|| v.get("text_config").and_then(|t| t.get("vocab_size")))
        .and_then(serde_json::Value::as_u64)
        .filter(|&n| n > 0)
        .ok_or_else(|| {
            format!(
                "{} has no vocab_size: set workload.vocab_size",
                path.display()
            )
        })
}

fn print_plan(s: &SweepSpec, plan: &RunPlan) {
    let w = &s.workload;
    let amount = match (w.requests, w.duration_s) {
        (Some(n), _) => format!("{n} requests"),
        (None, Some(d)) => format!("{d} s"),
        _ => String::new(),
    };
    out(&format!(
        "plan {}: {} run(s); workload {:?} at concurrency {}, {amount} after {} warmup, {} input / {} output tokens, seed {}",
        plan.sweep_name,
        plan.runs.len(),
        w.endpoint,
        w.concurrency,
        w.warmup_requests,
        w.input_tokens,
        w.output_tokens,
        w.seed
    ));
    for (i, r) in plan.runs.iter().enumerate() {
        let cmd = command::build(&s.server, r, s.server.port);
        out(&format!(
            "{:>3}. {}  [{}]  {}",
            i + 1,
            r.name,
            r.id,
            cmd.display()
        ));
    }
}

/// A checked sweep, ready to run.
struct SweepInput<'a> {
    spec: &'a SweepSpec,
    text: &'a str,
    spec_path: &'a Path,
    plan: &'a RunPlan,
    prep: &'a Prepared,
}

fn write_plan(s: &SweepSpec, plan: &RunPlan, root: &Path) -> Result<(), store::StoreError> {
    let commands: Vec<String> = plan
        .runs
        .iter()
        .map(|r| command::build(&s.server, r, s.server.port).display())
        .collect();
    store::write_json(
        &root.join("plan.json"),
        &serde_json::json!({
            "sweep": plan.sweep_name,
            "sgtune_version": env!("CARGO_PKG_VERSION"),
            "param_keys": plan.param_keys,
            "workload": s.workload,
            "repeats": s.repeats,
            "reuse_server": s.reuse_server,
            "runs": plan.runs,
            "commands": commands,
        }),
    )
}

/// A new results folder, its spec copy, plan, manifest and CSV header; then the sweep.
async fn new_sweep(input: &SweepInput<'_>, results_dir: &Path) -> i32 {
    let Some((results, mut manifest)) = create_results(input, results_dir, &input.plan.sweep_name)
    else {
        return EXIT_BAD_INPUT;
    };
    let launches = runner::plan_launches(input.spec, input.plan, &|_, _| false);
    execute(input, &results, &launches, &mut manifest).await
}

fn create_results(
    input: &SweepInput<'_>,
    results_dir: &Path,
    name: &str,
) -> Option<(ResultsDir, Manifest)> {
    let results = match ResultsDir::create(results_dir, name, &input.plan.param_keys) {
        Ok(r) => r,
        Err(e) => {
            say(&format!("error: cannot create the results folder: {e}"));
            return None;
        }
    };
    let manifest = provenance::collect(
        input.spec,
        &input.spec_path.display().to_string(),
        input.text,
        input.plan,
    );
    let setup = store::write_atomic(&results.root.join("spec.yaml"), input.text.as_bytes())
        .and_then(|_| write_plan(input.spec, input.plan, &results.root))
        .and_then(|_| store::write_json(&results.root.join(provenance::FILE), &manifest))
        .and_then(|_| results.init_csv());
    if let Err(e) = setup {
        say(&format!("error: cannot write the results folder: {e}"));
        return None;
    }
    Some((results, manifest))
}

/// Continue a sweep: keep its finished rows, redo interrupted (and, asked, failed) ones, run
/// what never started. Refused when the inputs changed, unless forced.
async fn resume_sweep(input: &SweepInput<'_>, dir: &Path, retry_failed: bool, force: bool) -> i32 {
    let mut recorded = match provenance::read(dir) {
        Ok(m) => m,
        Err(e) => {
            say(&format!(
                "error: cannot resume {}: {e} (is it a results folder written by sgtune run?)",
                dir.display()
            ));
            return EXIT_BAD_INPUT;
        }
    };
    let now = provenance::collect(
        input.spec,
        &input.spec_path.display().to_string(),
        input.text,
        input.plan,
    );
    let diffs = provenance::differences(&recorded, &now);
    if !diffs.is_empty() && !force {
        say(&format!(
            "error: refusing to resume {}: the sweep changed since it was recorded:",
            dir.display()
        ));
        for d in &diffs {
            say(&format!("  - {d}"));
        }
        say(
            "  (resume with the recorded spec: `sgtune resume DIR`; or accept the changes with --force, which records them in manifest.json)",
        );
        return EXIT_BAD_INPUT;
    }
    let csv_path = dir.join("results.csv");
    let table = match rows::read(&csv_path) {
        Ok(t) => t,
        Err(e) => {
            say(&format!("error: cannot resume: {e}"));
            return EXIT_BAD_INPUT;
        }
    };
    let results = ResultsDir::open(dir, &input.plan.param_keys);
    if table.header != results.header() {
        say(&format!(
            "error: cannot resume: {} has other columns than this sweep writes (was it written by another sgtune version?)",
            csv_path.display()
        ));
        return EXIT_BAD_INPUT;
    }
    if table.partial_tail {
        say(
            "resume: results.csv ended in a partial row (sgtune was killed while writing it); that row is dropped and its run redone",
        );
    }
    // Keep finished rows; set aside the ones to redo.
    let mut keep_raw = Vec::new();
    let mut redo_raw = Vec::new();
    let mut kept: Vec<crate::record::RowKey> = Vec::new();
    for (row, raw) in table.rows.iter().zip(&table.raw) {
        let finished = row.is_ok() || (row.get("status") == "failed" && !retry_failed);
        if finished && !kept.contains(&row.key()) {
            kept.push(row.key());
            keep_raw.push(raw.clone());
        } else {
            redo_raw.push(raw.clone());
        }
    }
    if let Err(e) = results
        .append_superseded(&table.header, &redo_raw)
        .and_then(|_| results.rewrite_csv(&keep_raw))
    {
        say(&format!("error: cannot update the results folder: {e}"));
        return EXIT_BAD_INPUT;
    }
    let launches = runner::plan_launches(input.spec, input.plan, &|run, m| {
        kept.contains(&(
            run.name.clone(),
            m.point.concurrency,
            crate::plan::spec::rate_text(m.point.request_rate),
            m.repeat,
        ))
    });
    // A launch folder left by an earlier attempt is kept, renamed, as evidence.
    for l in &launches {
        let d = dir.join("runs").join(&l.dir_name);
        if d.exists() {
            let mut n = 1;
            while dir
                .join("runs")
                .join(format!("{}.attempt-{n}", l.dir_name))
                .exists()
            {
                n += 1;
            }
            let _ = std::fs::rename(
                &d,
                dir.join("runs").join(format!("{}.attempt-{n}", l.dir_name)),
            );
        }
    }
    recorded.resumes.push(provenance::ResumeNote {
        at: provenance::now_rfc3339(),
        forced_differences: diffs,
        retry_failed,
    });
    recorded.finished_at = None;
    say(&format!(
        "resume: {} row(s) kept, {} set aside in results.superseded.csv, {} server launch(es) to go",
        keep_raw.len(),
        redo_raw.len(),
        launches.len()
    ));
    execute(input, &results, &launches, &mut recorded).await
}

/// Run the launches into `results`, then print and save the table of every row the folder
/// holds, and map the outcome to an exit code.
async fn execute(
    input: &SweepInput<'_>,
    results: &ResultsDir,
    launches: &[runner::Launch],
    manifest: &mut Manifest,
) -> i32 {
    let cancel = CancellationToken::new();
    let pgid = Arc::new(AtomicI32::new(0));
    spawn_signal_handler(cancel.clone(), pgid.clone());
    let ctx = RunContext {
        spec: input.spec,
        param_keys: &input.plan.param_keys,
        vocab_size: input.prep.vocab,
        dataset: input.prep.dataset.clone(),
        cancel: &cancel,
        current_pgid: &pgid,
    };
    let mut progress = Progress::new();
    let outcome = runner::run_sweep(&ctx, launches, results, manifest, &mut |ev| {
        progress.handle(&ev)
    })
    .await;
    progress.finish();
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            say(&format!("error: {e}"));
            return EXIT_BAD_INPUT;
        }
    };
    if !outcome.interrupted {
        manifest.finished_at = Some(provenance::now_rfc3339());
    }
    if let Err(e) = store::write_json(&results.root.join(provenance::FILE), manifest) {
        say(&format!("warning: cannot write manifest.json: {e}"));
    }
    let all = rows::read(&results.results_csv())
        .map(|t| t.rows)
        .unwrap_or_default();
    let table = table::render(&all, &input.plan.param_keys);
    let md = format!(
        "# {}\n\nResults folder: `{}`\n\n{table}",
        input.plan.sweep_name,
        results.root.display()
    );
    if let Err(e) = store::write_atomic(&results.root.join("results.md"), md.as_bytes()) {
        say(&format!("warning: cannot write results.md: {e}"));
    }
    out(&format!("\n{table}"));
    out(&format!("results: {}", results.root.display()));
    if outcome.interrupted {
        say(&format!(
            "interrupted: every finished run is in results.csv; continue with `sgtune resume {}`",
            results.root.display()
        ));
        EXIT_INTERRUPTED
    } else if all.iter().any(|r| !r.is_ok()) {
        EXIT_RUNS_FAILED
    } else {
        EXIT_OK
    }
}

fn read_side(p: &Path) -> Result<(Vec<rows::Row>, Option<Manifest>), String> {
    let csv = rows::csv_path(p);
    let t = rows::read(&csv)?;
    let manifest = csv.parent().and_then(|d| provenance::read(d).ok());
    Ok((t.rows, manifest))
}

fn compare_cmd(
    a: &Path,
    b: &Path,
    metrics: Option<Vec<String>>,
    format: compare::Format,
    noise: f64,
) -> i32 {
    let (ra, ma) = match read_side(a) {
        Ok(v) => v,
        Err(e) => {
            say(&format!("error: {e}"));
            return EXIT_BAD_INPUT;
        }
    };
    let (rb, mb) = match read_side(b) {
        Ok(v) => v,
        Err(e) => {
            say(&format!("error: {e}"));
            return EXIT_BAD_INPUT;
        }
    };
    let has = |m: &String| {
        ra.first().is_none_or(|r| r.0.contains_key(m))
            && rb.first().is_none_or(|r| r.0.contains_key(m))
    };
    let metrics: Vec<String> = match metrics {
        Some(given) => {
            if let Some(bad) = given.iter().find(|m| !has(m)) {
                say(&format!(
                    "error: --metric {bad}: not a column of both results.csv files (see `sgtune columns`)"
                ));
                return EXIT_BAD_INPUT;
            }
            given
        }
        None => compare::DEFAULT_METRICS
            .iter()
            .map(|m| m.to_string())
            .filter(|m| has(m))
            .collect(),
    };
    let mut c = compare::compare(&ra, &rb, &metrics, noise);
    if let (Some(ma), Some(mb)) = (&ma, &mb) {
        c.context = provenance::context_differences(ma, mb);
    }
    if format != compare::Format::Json && format != compare::Format::Csv {
        out(&format!("A: {}\nB: {}\n", a.display(), b.display()));
    }
    out(&compare::render(&c, format));
    EXIT_OK
}

/// Relaunch one recorded run and judge whether it reproduced.
async fn reproduce(dir: &Path, run_name: &str, results_dir: &Path, tolerance: f64) -> i32 {
    let spec_path = dir.join("spec.yaml");
    let (s, text, plan, prep) = match load_checked(&spec_path) {
        Ok(v) => v,
        Err(code) => return code,
    };
    let recorded_rows: Vec<rows::Row> = match rows::read(&dir.join("results.csv")) {
        Ok(t) => t
            .rows
            .into_iter()
            .filter(|r| r.get("run_name") == run_name)
            .collect(),
        Err(e) => {
            say(&format!("error: {e}"));
            return EXIT_BAD_INPUT;
        }
    };
    let Some(run) = plan.runs.iter().find(|r| r.name == run_name) else {
        let names: Vec<&str> = plan.runs.iter().map(|r| r.name.as_str()).collect();
        say(&format!(
            "error: no run named `{run_name}` in {} (runs: {})",
            dir.display(),
            names.join(", ")
        ));
        return EXIT_BAD_INPUT;
    };
    if recorded_rows.is_empty() {
        say(&format!(
            "error: `{run_name}` has no recorded row in {}/results.csv to reproduce",
            dir.display()
        ));
        return EXIT_BAD_INPUT;
    }
    let mut notes: Vec<String> = Vec::new();
    if let Some(r) = recorded_rows.first() {
        if r.get("run_id") != run.id {
            notes.push(format!(
                "the run's resolved configuration differs from the recorded one (id {} → {}): an environment variable in spec.yaml may expand differently here",
                r.get("run_id"),
                run.id
            ));
        }
    }
    let one = RunPlan {
        sweep_name: format!("{}-reproduce-{run_name}", plan.sweep_name),
        param_keys: plan.param_keys.clone(),
        runs: vec![run.clone()],
    };
    let input = SweepInput {
        spec: &s,
        text: &text,
        spec_path: &spec_path,
        plan: &one,
        prep: &prep,
    };
    let Some((results, mut manifest)) = create_results(&input, results_dir, &one.sweep_name) else {
        return EXIT_BAD_INPUT;
    };
    let launches = runner::plan_launches(&s, &one, &|_, _| false);
    let code = execute(&input, &results, &launches, &mut manifest).await;
    if code == EXIT_INTERRUPTED {
        return code;
    }
    let new_rows = rows::read(&results.results_csv())
        .map(|t| t.rows)
        .unwrap_or_default();
    let context = provenance::read(dir)
        .map(|m| provenance::context_differences(&m, &manifest))
        .unwrap_or_default();
    let (reproduced, report) =
        reproduction_verdict(&recorded_rows, &new_rows, tolerance, &context, &notes);
    let _ = store::write_atomic(&results.root.join("reproduce.md"), report.as_bytes());
    out(&report);
    if reproduced {
        EXIT_OK
    } else {
        EXIT_RUNS_FAILED
    }
}

const REPRODUCE_METRICS: &[&str] = &["output_tok_s", "ttft_ms_p50", "tpot_ms_p50", "e2e_ms_p50"];

/// "reproduced", or what differs (and what in the provenance may explain it).
fn reproduction_verdict(
    recorded: &[rows::Row],
    new: &[rows::Row],
    tolerance: f64,
    context: &[String],
    notes: &[String],
) -> (bool, String) {
    let mut report = String::from("## Reproduction\n\n");
    let rec_ok = recorded.iter().any(|r| r.is_ok());
    let new_ok = new.iter().any(|r| r.is_ok());
    let mut differs: Vec<String> = Vec::new();
    match (rec_ok, new_ok) {
        (true, true) => {
            let metrics: Vec<String> = REPRODUCE_METRICS.iter().map(|m| m.to_string()).collect();
            let c = compare::compare(recorded, new, &metrics, tolerance);
            report.push_str(&compare::render(&c, compare::Format::Table));
            report.push('\n');
            for j in &c.joined {
                for cell in &j.cells {
                    if matches!(
                        cell.judgement,
                        compare::Judgement::Better | compare::Judgement::Worse
                    ) {
                        differs.push(format!(
                            "{} @{}: {} {} ({})",
                            j.run_name,
                            j.concurrency,
                            cell.metric,
                            cell.relative
                                .map_or("-".into(), |r| format!("{:+.1}%", r * 100.0)),
                            cell.judgement.as_str()
                        ));
                    }
                }
            }
            differs.extend(c.only_a.iter().map(|x| format!("not measured again: {x}")));
        }
        (false, false) => {
            let kinds = |rs: &[rows::Row]| {
                let mut k: Vec<String> = rs
                    .iter()
                    .map(|r| r.get("failure_kind").to_string())
                    .collect();
                k.sort();
                k.dedup();
                k
            };
            if kinds(recorded) != kinds(new) {
                differs.push(format!(
                    "failed again, but as {:?} instead of {:?}",
                    kinds(new),
                    kinds(recorded)
                ));
            } else {
                report.push_str(&format!(
                    "Failed again, as recorded ({}).\n\n",
                    kinds(new).join(", ")
                ));
            }
        }
        (true, false) => differs.push(format!(
            "the recorded run was ok; this time it failed: {}",
            new.first()
                .map(|r| format!("{} — {}", r.get("failure_kind"), r.get("failure_message")))
                .unwrap_or_default()
        )),
        (false, true) => {
            differs.push("the recorded run failed; this time it succeeded".to_string())
        }
    }
    if !context.is_empty() || !notes.is_empty() {
        report.push_str("Provenance differences that may explain a difference:\n");
        for d in context.iter().chain(notes) {
            report.push_str(&format!("- {d}\n"));
        }
        report.push('\n');
    }
    let reproduced = differs.is_empty();
    if reproduced {
        report.push_str(&format!(
            "Verdict: reproduced (key metrics within {:.0}% or the repeats' noise).\n",
            tolerance * 100.0
        ));
    } else {
        report.push_str("Verdict: not reproduced:\n");
        for d in &differs {
            report.push_str(&format!("- {d}\n"));
        }
    }
    (reproduced, report)
}

/// First Ctrl-C / SIGTERM / SIGHUP: stop issuing requests, record the current run as
/// interrupted, stop its server, write what is finished, exit 130. A second signal kills the
/// server's process group at once and exits.
fn spawn_signal_handler(cancel: CancellationToken, pgid: Arc<AtomicI32>) {
    use tokio::signal::unix::{SignalKind, signal};
    tokio::spawn(async move {
        let (Ok(mut int), Ok(mut term), Ok(mut hup)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) else {
            say(
                "warning: cannot install signal handlers; Ctrl-C will kill sgtune and its server at once",
            );
            return;
        };
        let mut count = 0;
        loop {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
                _ = hup.recv() => {}
            }
            count += 1;
            if count == 1 {
                cancel.cancel();
                say(
                    "sgtune: interrupted; recording the current run and stopping its server (signal again to kill it now)",
                );
            } else {
                let p = pgid.load(Ordering::SeqCst);
                if p > 0 {
                    // SAFETY: kill(2) on the process group sgtune created.
                    unsafe {
                        libc::kill(-p, libc::SIGKILL);
                    }
                }
                say("sgtune: killed the server's process group; exiting");
                std::process::exit(EXIT_INTERRUPTED);
            }
        }
    });
}
