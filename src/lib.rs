//! sgtune: find the best SGLang launch configuration by experiment, and keep the evidence.
//!
//! Data flow: sweep.yaml → `spec` → `expand` → per run: `server::command` → `server::supervise`
//! (launch, ready, stop) → `load` (drive the workload) → `metrics` (client summary) +
//! `sglang_log` (server summary) → `diagnose` → `record` → `store` (results.csv) → `report`.
pub mod app;
pub mod cancel;
pub mod cli;
pub mod compare;
pub mod diagnose;
pub mod events;
pub mod expand;
pub mod flags;
pub mod gpu;
pub mod load;
pub mod loadcmd;
pub mod logcmd;
pub mod metrics;
pub mod progress;
pub mod prom;
pub mod provenance;
pub mod record;
pub mod report;
pub mod rows;
pub mod runner;
pub mod server;
pub mod sglang_log;
pub mod spec;
pub mod store;
