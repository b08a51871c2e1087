//! The argument groups (`--executor` and Slurm's flags, the end of a session, slots, `log`'s
//! flags) and value lists of the command line, which `cli` flattens into its subcommands.
//! Every argument's doc comment is its --help text.

use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// Where a sweep's runs happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Executor {
    /// On this machine (one at a time, or in --parallel / --gpus slots).
    Local,
    /// As a Slurm job array submitted from here (a guided tune: one array per batch, from a
    /// driver that runs here until the tune ends).
    Slurm,
}

/// sbatch options for --executor slurm; each overrides the spec's `slurm:` key.
#[derive(Debug, Args, Clone, Default)]
pub struct SlurmArgs {
    /// sbatch --partition.
    #[arg(long, value_name = "NAME", help_heading = "Slurm")]
    pub partition: Option<String>,
    /// sbatch --account.
    #[arg(long, value_name = "NAME", help_heading = "Slurm")]
    pub account: Option<String>,
    /// sbatch --time of each task, e.g. 2:00:00.
    #[arg(long, value_name = "TIME", help_heading = "Slurm")]
    pub time: Option<String>,
    /// sbatch --qos.
    #[arg(long, value_name = "NAME", help_heading = "Slurm")]
    pub qos: Option<String>,
    /// At most N tasks of the array at once (--array=...%N); a guided tune's batch width
    /// (default 4).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..), help_heading = "Slurm")]
    pub max_running: Option<u64>,
    /// Another sbatch option, as on its command line (repeatable), e.g. --sbatch-opt=--constraint=h100
    #[arg(long, value_name = "OPT", help_heading = "Slurm")]
    pub sbatch_opt: Vec<String>,
}

/// How a local sweep ends: the hook told of it.
#[derive(Debug, Args, Clone, Default)]
pub struct EndArgs {
    /// A shell command (`sh -c`) run once when the sweep ends, however it ends (done,
    /// interrupted, failed runs, an error): the outcome is in its environment (SGTUNE_OUTCOME,
    /// SGTUNE_EXIT_CODE, SGTUNE_RESULTS_DIR, SGTUNE_WINNER, SGTUNE_WINNER_COMMAND,
    /// SGTUNE_SUMMARY) and in DIR/outcome.json. Overrides the spec's `on_finish.command`.
    #[arg(long, value_name = "CMD")]
    pub on_finish: Option<String>,
    /// Stop by this time with the best decision so far: HH:MM (local, today or tomorrow) or
    /// RFC 3339. Launches that no longer fit are not started, a running one is stopped in time
    /// for its server to be down, and the sweep exits 3; `sgtune resume` measures the rest.
    /// Overrides the spec's `deadline:`/`budget:` (which a resume does not reuse).
    #[arg(long, value_name = "TIME", conflicts_with = "budget")]
    pub deadline: Option<String>,
    /// As --deadline, counted from now: 8h, 90m, 30s, 1h30m.
    #[arg(long, value_name = "DURATION")]
    pub budget: Option<String>,
}

/// Several configurations at once on one machine.
#[derive(Debug, Args, Clone, Default)]
pub struct SlotArgs {
    /// Run up to N configurations at the same time (CPU servers, or with --gpus), each with
    /// its own port range (slots are 100 ports apart: SGLang uses ports above --port).
    #[arg(long, value_name = "N")]
    pub parallel: Option<usize>,
    /// GPU ids to share out, e.g. 0,1,2,3: each run gets its own CUDA_VISIBLE_DEVICES, sized by
    /// tp_size × dp_size of its configuration (or --gpus-per-run); no two runs share a GPU.
    #[arg(long, value_name = "IDS")]
    pub gpus: Option<String>,
    /// GPUs per run, instead of tp_size × dp_size.
    #[arg(long, value_name = "K")]
    pub gpus_per_run: Option<usize>,
}

#[derive(Debug, Args)]
pub struct LogArgs {
    /// SGLang log files (e.g. a run's `server.log`).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Start of the window: a time as in the log (`HH:MM:SS`, `YYYY-MM-DD HH:MM:SS[.mmm]`) or
    /// `line:N` (1-based). Stats before the ready line never count.
    #[arg(long, value_name = "T")]
    pub since: Option<String>,
    /// End of the window, inclusive: same forms as --since.
    #[arg(long, value_name = "T")]
    pub until: Option<String>,
    /// How to print the summary.
    #[arg(long, value_enum, default_value_t = LogFormat::Table)]
    pub format: LogFormat,
    /// Print one JSON object per event line instead of the summary (kinds: decode, prefill,
    /// retract, capacity, kv_alloc, hicache_alloc, ready, error).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub events: Option<EventsFormat>,
    /// Keep reading one growing file and reprint the summary every few seconds (starts over if
    /// the file is truncated); Ctrl-C stops.
    #[arg(long, conflicts_with = "events")]
    pub follow: bool,
    /// Offered concurrency, for the verdict (default: estimated from the log as the max of
    /// `#running-req` + `#queue-req`).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub concurrency: Option<u64>,
    /// Write the server's timeline (gen throughput, running and queued requests, token
    /// usage, cache-hit rate, retractions) as a self-contained HTML page to OUT (one FILE).
    #[arg(long, value_name = "OUT", conflicts_with_all = ["events", "follow"])]
    pub html: Option<PathBuf>,
    /// --follow refresh interval in milliseconds.
    #[arg(long, default_value_t = 2000, hide = true)]
    pub refresh_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Table,
    Json,
    Csv,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EventsFormat {
    Jsonl,
}

/// `sgtune compare --fail-on`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    Decision,
    WinnerRegressed,
    Ineligible,
}

impl From<FailOn> for crate::tune::compare::Gate {
    fn from(f: FailOn) -> Self {
        use crate::tune::compare::Gate;
        match f {
            FailOn::Decision => Gate::Decision,
            FailOn::WinnerRegressed => Gate::WinnerRegressed,
            FailOn::Ineligible => Gate::Ineligible,
        }
    }
}

/// `sgtune compare --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompareFormat {
    Table,
    Markdown,
    Json,
    Csv,
}

impl From<CompareFormat> for crate::report::compare::Format {
    fn from(f: CompareFormat) -> Self {
        use crate::report::compare::Format;
        match f {
            CompareFormat::Table => Format::Table,
            CompareFormat::Markdown => Format::Markdown,
            CompareFormat::Json => Format::Json,
            CompareFormat::Csv => Format::Csv,
        }
    }
}

impl From<LogFormat> for crate::report::log::Format {
    fn from(f: LogFormat) -> Self {
        use crate::report::log::Format;
        match f {
            LogFormat::Table => Format::Table,
            LogFormat::Json => Format::Json,
            LogFormat::Csv => Format::Csv,
        }
    }
}
