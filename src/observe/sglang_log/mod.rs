//! Parser for SGLang server logs (`python -m sglang.launch_server` output).
//!
//! [`scan`] reads one line as bytes (the fast path: no allocation for Decode/Prefill lines,
//! a couple of `memchr` calls for lines of no interest); [`line`] gives the owned
//! [`LogEvent`]s; [`summary`] folds a log into a [`ServerSummary`], streaming, in constant
//! memory ([`crate::observe::quantiles`] bounds the percentiles); [`version`] turns format features into SGLang
//! version hints. The parser tolerates every Decode/Prefill format since v0.1, glued-on tqdm
//! bars and wrapper prefixes, truncated and interleaved lines, and never panics.

pub mod jsonl;
pub mod line;
pub mod scan;
pub mod summary;
pub mod version;

pub use line::*;
pub use summary::*;
