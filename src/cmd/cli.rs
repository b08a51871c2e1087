//! Command-line interface (clap derive). Every argument's doc comment is its --help text.

use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// The argument groups and value lists the subcommands share (`args`).
pub use super::args::*;

/// Find the best SGLang launch configuration by experiment, and keep the evidence.
#[derive(Debug, Parser)]
#[command(name = "sgtune", version, about, long_about = None, after_help = crate::run::finish::EXIT_CODES_HELP)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a sweep: launch each configuration, load it, record one row per run.
    Run {
        /// The sweep file (YAML).
        spec: PathBuf,
        /// Print the plan (every run's exact command and environment) and start nothing.
        #[arg(long)]
        dry_run: bool,
        /// Folder that receives `<sweep>-<UTC timestamp>/`.
        #[arg(long, default_value = "results")]
        results_dir: PathBuf,
        /// Continue the sweep in this results folder instead of starting a new one.
        #[arg(long, value_name = "DIR")]
        resume: Option<PathBuf>,
        /// With --resume: run again the configurations recorded as failed.
        #[arg(long, requires = "resume")]
        retry_failed: bool,
        /// With --resume: resume even though the plan, workload, versions or model changed
        /// (the differences are recorded in the manifest).
        #[arg(long, requires = "resume")]
        force: bool,
        #[command(flatten)]
        slots: SlotArgs,
        #[command(flatten)]
        end: EndArgs,
        /// Where the runs happen: here, or as a Slurm job array (one task per server launch,
        /// and a merge job after them; see docs/slurm.md).
        #[arg(long, value_enum, default_value_t = Executor::Local)]
        executor: Executor,
        #[command(flatten)]
        slurm: SlurmArgs,
    },
    /// Continue an interrupted sweep from its results folder (uses the folder's spec.yaml).
    Resume {
        /// The results folder of the sweep.
        dir: PathBuf,
        /// Run again the configurations recorded as failed.
        #[arg(long)]
        retry_failed: bool,
        /// Resume even though the plan, workload, versions or model changed.
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        slots: SlotArgs,
        #[command(flatten)]
        end: EndArgs,
        /// Where the runs happen: here, or as a Slurm job array (one task per server launch,
        /// and a merge job after them; see docs/slurm.md).
        #[arg(long, value_enum, default_value_t = Executor::Local)]
        executor: Executor,
        #[command(flatten)]
        slurm: SlurmArgs,
    },
    /// Compare two sweeps (results folders or results.csv files): the decision diff first,
    /// then run by run.
    Compare {
        /// The baseline: a results folder or its results.csv.
        a: PathBuf,
        /// The candidate: a results folder or its results.csv.
        b: PathBuf,
        /// Metrics (results.csv column names), comma-separated. Default: output_tok_s,
        /// request_throughput, ttft_ms_p50, ttft_ms_p99, tpot_ms_p50, e2e_ms_p50,
        /// server_gen_tput_mean (those present in both files).
        #[arg(long, value_delimiter = ',')]
        metric: Option<Vec<String>>,
        /// Output format.
        #[arg(long, value_enum, default_value = "table")]
        format: CompareFormat,
        /// Relative change counted as noise when there are no repeats to judge by (and the
        /// decision's noise threshold for a folder without an objective).
        #[arg(long, default_value_t = 0.05)]
        noise: f64,
        /// Show every per-metric row, also those within noise (table and markdown; csv and
        /// json always carry every row).
        #[arg(long)]
        all: bool,
        /// Exit 4 when B shows one of these against A, comma-separated: `decision` (the
        /// leader changed at some load point), `winner-regressed` (a metric of A's leader got
        /// worse beyond noise), `ineligible` (a configuration eligible in A is not in B).
        #[arg(long, value_enum, value_delimiter = ',')]
        fail_on: Vec<FailOn>,
    },
    /// Relaunch one recorded run (same command, environment, workload and seed) into a new
    /// results folder and say whether it reproduced.
    Reproduce {
        /// The results folder that recorded the run.
        dir: PathBuf,
        /// The run's name (results.csv `run_name`).
        #[arg(
            long,
            required_unless_present = "decision",
            conflicts_with = "decision"
        )]
        run: Option<String>,
        /// Re-check the sweep's decision instead: relaunch its leader and runner-up in ABBA
        /// order (two launches each, at the loads they were judged at) and decide again.
        #[arg(long)]
        decision: bool,
        /// Folder that receives the new results folder.
        #[arg(long, default_value = "results")]
        results_dir: PathBuf,
        /// With --run: relative difference still counted as reproduced (without repeats to
        /// judge by); default 0.2. Not with --decision, which decides again by the
        /// objective's own rule.
        #[arg(long)]
        tolerance: Option<f64>,
    },
    /// Write one self-contained HTML page (inline SVG and CSS, opens offline) of a sweep:
    /// the overview, charts per configuration, and per run the server's timeline from
    /// server.log beside the client's side. With DIR2: the two sweeps side by side, each change
    /// judged as `compare` does.
    Report {
        /// The results folder (or its results.csv); with DIR2, the baseline A.
        dir: PathBuf,
        /// A second results folder: the candidate B.
        dir2: Option<PathBuf>,
        /// Where to write the page (default: DIR/report.html; with DIR2,
        /// DIR2/report-compare.html).
        #[arg(short = 'o', long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// With DIR2: relative change counted as noise when there are no repeats to judge by.
        #[arg(long, default_value_t = 0.05)]
        noise: f64,
    },
    /// Check a sweep file and print its plan; starts nothing.
    Validate {
        /// The sweep file (YAML).
        spec: PathBuf,
        /// Where earlier sweeps are, whose measured start-up times the estimate uses.
        #[arg(long, default_value = "results")]
        results_dir: PathBuf,
        /// Say whether the plan fits before this time (as `run --deadline`); the spec's
        /// `deadline:`/`budget:` is checked without it.
        #[arg(long, value_name = "TIME", conflicts_with = "budget")]
        deadline: Option<String>,
        /// As --deadline, counted from now: 8h, 90m, 30s, 1h30m.
        #[arg(long, value_name = "DURATION")]
        budget: Option<String>,
        /// Where the runs would happen: `slurm` also refuses what a Slurm submission cannot
        /// run (`repeats: auto`, `objective.prune`, search.preflight, a deadline).
        #[arg(long, value_enum, default_value_t = Executor::Local)]
        executor: Executor,
    },
    /// Drive a workload against a server that is already running and print the client's
    /// numbers (the same engine and measurements as `sgtune run`).
    Load {
        /// Base URL of the OpenAI-compatible server, e.g. http://127.0.0.1:30000
        #[arg(long)]
        url: String,
        /// Model name to send (default: the first id the server lists at /v1/models); the same
        /// as -w model=NAME.
        #[arg(long, value_name = "NAME")]
        model: Option<String>,
        /// A YAML file with the workload: a whole sweep file (its `workload:`) or the section
        /// alone.
        #[arg(long, value_name = "FILE")]
        workload: Option<PathBuf>,
        /// A workload key, as in the spec's `workload:` section (repeatable; overrides the
        /// file), e.g. -w concurrency=8 -w requests=200 -w input_tokens=512
        #[arg(short = 'w', long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// Write requests.csv and summary.json into this folder.
        #[arg(long, value_name = "DIR")]
        output: Option<PathBuf>,
    },
    /// Print the results.csv columns and their meaning (Markdown).
    Columns,
    /// Read SGLang server logs: version hints, capacity, the measured window, stats, and what
    /// limits the server (exit 0; 2 for an unreadable file or bad arguments).
    Log(LogArgs),
    /// Where a sweep stands. Local: whether sgtune still runs it, the launch and load point in
    /// progress, rows done and failed, launches left, the leader so far and the ETA (from the
    /// results folder alone). Slurm: per run ok, failed, pending, running or cancelled (from
    /// the results folder, squeue and sacct or the jobcomp log).
    Status {
        /// The results folder of the sweep.
        dir: PathBuf,
    },
    /// Cancel a sweep submitted to Slurm (scancel); the merge job still records every run's
    /// state (a tune: its driver merges the wave and stops), and `sgtune resume DIR
    /// --executor slurm` submits what is missing.
    Cancel {
        /// The results folder of the sweep.
        dir: PathBuf,
    },
    /// Internal (a Slurm task): run one server launch of a submitted sweep into its folder.
    #[command(name = "run-one", hide = true)]
    RunOne {
        dir: PathBuf,
        #[arg(long)]
        launch: String,
        #[arg(long)]
        marker: String,
    },
    /// Internal (the Slurm merge job): assemble results.csv, results.md and the decision from
    /// the tasks' files; safe to run again.
    #[command(hide = true)]
    Merge { dir: PathBuf },
    /// Internal: kill server process group PGID when sgtune (PARENT) dies.
    #[command(name = "__reap", hide = true)]
    Reap { parent: i32, pgid: i32 },
}
