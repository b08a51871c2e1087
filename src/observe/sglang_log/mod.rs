//! Parser for SGLang server logs (`python -m sglang.launch_server` output).
//!
//! [`fields`] reads a value's leading number and splits a message into `key: value` pairs;
//! [`prefix`] finds the `[timestamp ranks]` prefix ([`Timestamp`]); [`line`](mod@line) gives the owned
//! [`LogEvent`]s and parses the rare start-up, retraction and error lines; [`scan`] reads one
//! line as bytes (the fast path: no allocation for Decode/Prefill lines, a couple of `memchr`
//! calls for lines of no interest) and gives [`parse_line`]; [`version`] turns format
//! features into SGLang version hints; [`jsonl`] writes events as JSON lines; [`skeleton`] is
//! what SGLang's and vLLM's summaries share, free of any format (the window, the tail, the
//! driver that decides which stats lines count); [`summary`]
//! folds a log into a [`ServerSummary`], streaming, in constant memory
//! ([`crate::observe::quantiles`] bounds the percentiles). The parser tolerates every
//! Decode/Prefill format since v0.1, glued-on tqdm bars and wrapper prefixes, truncated and
//! interleaved lines, and never panics.
//!
//! Each module uses only modules before it in this order (`fields` and `prefix` are leaves),
//! so the dependencies have no cycle:
//! `fields`, `prefix` → `skeleton` → `line` → `scan` → `version` → `jsonl`, `summary`.

pub mod fields;
pub mod jsonl;
pub mod line;
pub mod prefix;
pub mod scan;
pub mod skeleton;
pub mod summary;
pub mod version;

pub use line::*;
pub use prefix::Timestamp;
pub use scan::parse_line;
pub use summary::*;

#[cfg(test)]
mod tests {
    /// The modules in the order of the module documentation, with their source.
    const ORDER: [(&str, &str); 8] = [
        ("fields", include_str!("fields.rs")),
        ("prefix", include_str!("prefix.rs")),
        ("skeleton", include_str!("skeleton.rs")),
        ("line", include_str!("line.rs")),
        ("scan", include_str!("scan.rs")),
        ("version", include_str!("version.rs")),
        ("jsonl", include_str!("jsonl.rs")),
        ("summary", include_str!("summary.rs")),
    ];

    #[test]
    fn modules_only_use_the_ones_before_them() {
        for (i, (name, src)) in ORDER.iter().enumerate() {
            for (later, _) in ORDER.iter().skip(i + 1) {
                for path in [format!("super::{later}"), format!("sglang_log::{later}")] {
                    assert!(!src.contains(&path), "{name} uses {later} ({path})");
                }
            }
        }
    }
}
