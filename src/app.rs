//! One function per subcommand, wiring the stages together and mapping outcomes to exit codes.

use crate::cancel::Cancel;
use crate::cli::{Cli, Command};
use crate::expand::{self, RunPlan};
use crate::progress::Progress;
use crate::record;
use crate::report::table;
use crate::runner::{self, RunContext};
use crate::server::command;
use crate::spec::{self, Endpoint, SweepSpec};
use crate::store::{self, ResultsDir};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

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
        Command::Log(args) => crate::logcmd::run(args).await,
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
        } => {
            let (s, text, plan, vocab) = match load_checked(&spec) {
                Ok(v) => v,
                Err(code) => return code,
            };
            if dry_run {
                print_plan(&s, &plan);
                return EXIT_OK;
            }
            run_sweep(&s, &text, &plan, vocab, &results_dir).await
        }
    }
}

/// Parse, expand and check everything that can be checked before launching anything.
fn load_checked(path: &Path) -> Result<(SweepSpec, String, RunPlan, u64), i32> {
    let (s, text) = spec::load(path).map_err(|e| {
        say(&format!("error: {e}"));
        EXIT_BAD_INPUT
    })?;
    let plan = expand::expand(&s);
    let vocab = resolve_vocab(&s).map_err(|e| {
        say(&format!("error: {}: {e}", path.display()));
        EXIT_BAD_INPUT
    })?;
    Ok((s, text, plan, vocab))
}

/// Token ids for completions prompts are drawn from [0, vocab_size): from the spec, else the
/// model's config.json (also `text_config.vocab_size` for multimodal configs).
pub fn resolve_vocab(s: &SweepSpec) -> Result<u64, String> {
    if let Some(v) = s.workload.vocab_size {
        return Ok(v);
    }
    if s.workload.endpoint == Endpoint::Chat {
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

async fn run_sweep(
    s: &SweepSpec,
    text: &str,
    plan: &RunPlan,
    vocab: u64,
    results_dir: &Path,
) -> i32 {
    let results = match ResultsDir::create(results_dir, &plan.sweep_name, &plan.param_keys) {
        Ok(r) => r,
        Err(e) => {
            say(&format!("error: cannot create the results folder: {e}"));
            return EXIT_BAD_INPUT;
        }
    };
    let commands: Vec<String> = plan
        .runs
        .iter()
        .map(|r| command::build(&s.server, r, s.server.port).display())
        .collect();
    let setup = store::write_atomic(&results.root.join("spec.yaml"), text.as_bytes())
        .and_then(|_| {
            store::write_json(
                &results.root.join("plan.json"),
                &serde_json::json!({
                    "sweep": plan.sweep_name,
                    "sgtune_version": env!("CARGO_PKG_VERSION"),
                    "param_keys": plan.param_keys,
                    "workload": s.workload,
                    "runs": plan.runs,
                    "commands": commands,
                }),
            )
        })
        .and_then(|_| results.init_csv());
    if let Err(e) = setup {
        say(&format!("error: cannot write the results folder: {e}"));
        return EXIT_BAD_INPUT;
    }

    let cancel = Cancel::new();
    let pgid = Arc::new(AtomicI32::new(0));
    spawn_signal_handler(cancel.clone(), pgid.clone());

    let ctx = RunContext {
        spec: s,
        param_keys: &plan.param_keys,
        vocab_size: vocab,
        cancel: &cancel,
        current_pgid: &pgid,
    };
    let mut progress = Progress::new();
    let outcome = runner::run_sweep(&ctx, plan, &results, &mut |ev| progress.handle(&ev)).await;
    progress.finish();
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            say(&format!("error: {e}"));
            return EXIT_BAD_INPUT;
        }
    };
    let table = table::render(&outcome.records, &plan.param_keys);
    let md = format!(
        "# {}\n\nResults folder: `{}`\n\n{table}",
        plan.sweep_name,
        results.root.display()
    );
    if let Err(e) = store::write_atomic(&results.root.join("results.md"), md.as_bytes()) {
        say(&format!("warning: cannot write results.md: {e}"));
    }
    out(&format!("\n{table}"));
    out(&format!("results: {}", results.root.display()));
    if outcome.interrupted {
        say("interrupted: every finished run is in results.csv");
        EXIT_INTERRUPTED
    } else if outcome
        .records
        .iter()
        .any(|r| r.status != record::RunStatus::Ok)
    {
        EXIT_RUNS_FAILED
    } else {
        EXIT_OK
    }
}

/// First Ctrl-C / SIGTERM / SIGHUP: stop issuing requests, record the current run as
/// interrupted, stop its server, write what is finished, exit 130. A second signal kills the
/// server's process group at once and exits.
fn spawn_signal_handler(cancel: Cancel, pgid: Arc<AtomicI32>) {
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
