//! Command-line interface (clap derive). Every argument's doc comment is its --help text.

use clap::{Parser, Subcommand};
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
    /// Internal: kill server process group PGID when sgtune (PARENT) dies.
    #[command(name = "__reap", hide = true)]
    Reap { parent: i32, pgid: i32 },
}
