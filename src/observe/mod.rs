//! Observe: what a run looked like from both sides. The server's log (`sglang_log`) and its
//! `/metrics` (`prom`), the client's samples folded into a summary (`client`), and the verdict
//! drawn from both (`diagnose`). `timeline` is a launch's server timeline from either
//! engine's log, for report.html. `quantiles` is the one bounded percentile structure that
//! `client` and `sglang_log` share; `window` the one accumulator of a window's stats that
//! `sglang_log` and `vllm_log` both feed, `steps` the decode steps by running batch they both
//! bucket.
pub mod client;
pub mod diagnose;
pub mod effective;
pub mod engine_log;
pub mod failure;
pub mod log_scope;
pub mod prom;
pub mod quantiles;
pub mod sglang_log;
pub mod steps;
pub mod timeline;
pub mod vllm_log;
pub mod window;
