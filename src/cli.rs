//! Command-line interface (clap derive). Every argument's doc comment is its --help text.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Find the best SGLang launch configuration by experiment, and keep the evidence.
///
/// Exit codes: 0 all runs ok, 1 some runs failed, 2 bad input or usage, 130 interrupted.
#[derive(Debug, Parser)]
#[command(name = "sgtune", version, about, long_about = None)]
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
    },
    /// Check a sweep file and print its plan; starts nothing.
    Validate {
        /// The sweep file (YAML).
        spec: PathBuf,
    },
    /// Print the results.csv columns and their meaning (Markdown).
    Columns,
    /// Read SGLang server logs: version hints, capacity, the measured window, stats, and what
    /// limits the server (exit 0; 2 for an unreadable file or bad arguments).
    Log(LogArgs),
    /// Internal: kill server process group PGID when sgtune (PARENT) dies.
    #[command(name = "__reap", hide = true)]
    Reap { parent: i32, pgid: i32 },
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
