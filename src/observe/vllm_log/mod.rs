//! Parser for vLLM server logs (`vllm serve` / `python -m vllm.entrypoints.openai.api_server`).
//!
//! [`line`](mod@line) reads one line: vLLM's prefix and the periodic stats line of the V0 and
//! V1 engines, the start-up capacity, the ready line, the version and the non-default
//! arguments. [`summary`] folds a log into the same `ServerSummary` that SGLang's parser
//! gives, so the verdicts, the table and `sgtune log` read either engine. It reuses
//! `sglang_log`'s pieces that know nothing of SGLang's format (the timestamp, the summary
//! struct, the tail of lines, the `{...}` argument reader); `engine_log` picks the parser.
//!
//! `line` → `summary`.

pub mod line;
pub mod summary;

pub use line::{Capacity, Event, Stats, StatsFormat, parse_line};
pub use summary::Summarizer;
