//! sgtune: find the best SGLang launch configuration by experiment, and keep the evidence.
//!
//! One folder per stage, in data-flow order; a module only uses the folders listed before it
//! (docs/architecture.md has the picture):
//! `util` → `plan` (spec → configurations) → `server` (launch, ready, stop, control plane) →
//! `load` (drive the workload) → `observe` (server log, /metrics, client metrics, verdicts) →
//! `record` (rows, results folder, provenance) → `tune` (every decision, pure) → `report`
//! (renderers) → `run` (the sweep loop, executing what `tune` asks) → `cmd` (one front-end per
//! subcommand).
pub mod cmd;
pub mod load;
pub mod observe;
pub mod plan;
pub mod record;
pub mod report;
pub mod run;
pub mod server;
pub mod tune;
pub mod util;
