//! Parser for SGLang server logs (`python -m sglang.launch_server` output).
//!
//! [`line`] turns single lines into [`LogEvent`]s; [`summary`] folds a whole log into a
//! [`ServerSummary`]. The parser tolerates every Decode/Prefill format since v0.1, glued-on
//! tqdm bars and wrapper prefixes, truncated and interleaved lines, and never panics.

pub mod line;
pub mod summary;

pub use line::*;
pub use summary::*;
