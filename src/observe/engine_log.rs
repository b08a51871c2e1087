//! Either engine's log through one door: [`LogSummarizer`] reads a log with SGLang's parser or
//! vLLM's, as told ([`LogSummarizer::for_engine`], `sgtune run`, which knows the engine) or as
//! the log shows ([`LogSummarizer::detect`], `sgtune log`): both parsers read the lines until
//! one of them sees a line only its engine prints, and the other is dropped.

use std::io::{self, Read};
use std::path::Path;

use memchr::memmem;

use crate::observe::sglang_log::{self, LineReader, Scope, ServerSummary};
use crate::observe::vllm_log;
use crate::plan::engine::Engine;

/// Lines only SGLang prints (stats, capacity, arguments, ready).
const SGLANG_MARKERS: [&[u8]; 6] = [
    b"Decode batch",
    b"gen throughput (token/s)",
    b"Prefill batch",
    b"server_args=",
    b"max_total_num_tokens=",
    b"The server is fired up",
];

fn sglang_signature(line: &[u8]) -> bool {
    SGLANG_MARKERS
        .iter()
        .any(|m| memmem::find(line, m).is_some())
}

#[derive(Debug, Clone)]
enum State {
    Unknown(Box<(sglang_log::Summarizer, vllm_log::Summarizer)>),
    Sglang(Box<sglang_log::Summarizer>),
    Vllm(Box<vllm_log::Summarizer>),
}

/// A streaming summary of a log of either engine.
#[derive(Debug, Clone)]
pub struct LogSummarizer {
    state: State,
}

impl LogSummarizer {
    /// Read the log with the engine's own parser.
    pub fn for_engine(engine: Engine, scope: Scope) -> LogSummarizer {
        let state = match engine {
            Engine::Sglang => State::Sglang(Box::new(sglang_log::Summarizer::new(scope))),
            Engine::Vllm => State::Vllm(Box::new(vllm_log::Summarizer::new(scope))),
        };
        LogSummarizer { state }
    }

    /// Find the engine from the log itself.
    pub fn detect(scope: Scope) -> LogSummarizer {
        LogSummarizer {
            state: State::Unknown(Box::new((
                sglang_log::Summarizer::new(scope),
                vllm_log::Summarizer::new(scope),
            ))),
        }
    }

    /// The engine, once known (a log with no line of either engine's own stays unknown).
    pub fn engine(&self) -> Option<Engine> {
        match self.state {
            State::Unknown(_) => None,
            State::Sglang(_) => Some(Engine::Sglang),
            State::Vllm(_) => Some(Engine::Vllm),
        }
    }

    pub fn feed_line(&mut self, line: &[u8]) {
        let decided = match &mut self.state {
            State::Sglang(s) => {
                s.feed_line(line);
                None
            }
            State::Vllm(v) => {
                v.feed_line(line);
                None
            }
            State::Unknown(both) => {
                both.0.feed_line(line);
                both.1.feed_line(line);
                if both.1.signature_lines() > 0 {
                    Some(Engine::Vllm)
                } else if sglang_signature(line) {
                    Some(Engine::Sglang)
                } else {
                    None
                }
            }
        };
        if let Some(e) = decided {
            let old = std::mem::replace(&mut self.state, State::Sglang(Box::default()));
            if let State::Unknown(both) = old {
                let (s, v) = *both;
                self.state = match e {
                    Engine::Sglang => State::Sglang(Box::new(s)),
                    Engine::Vllm => State::Vllm(Box::new(v)),
                };
            }
        }
    }

    pub fn lines(&self) -> usize {
        match &self.state {
            State::Unknown(b) => b.0.lines(),
            State::Sglang(s) => s.lines(),
            State::Vllm(v) => v.lines(),
        }
    }

    /// The last non-stats lines, oldest first (for the failure a log ends in).
    pub fn tail(&self) -> Vec<String> {
        match &self.state {
            State::Unknown(b) => b.0.tail(),
            State::Sglang(s) => s.tail(),
            State::Vllm(v) => v.tail(),
        }
    }

    pub fn summary(&self) -> ServerSummary {
        match &self.state {
            State::Unknown(b) => b.0.summary(),
            State::Sglang(s) => s.summary(),
            State::Vllm(v) => v.summary(),
        }
    }
}

/// Summarise a whole log from a reader, streaming; `engine` None finds it from the log.
pub fn summarize_reader<R: Read>(
    mut r: R,
    scope: Scope,
    engine: Option<Engine>,
) -> io::Result<LogSummarizer> {
    let mut s = match engine {
        Some(e) => LogSummarizer::for_engine(e, scope),
        None => LogSummarizer::detect(scope),
    };
    let mut lr = LineReader::new();
    lr.read_available(&mut r, &mut |l| s.feed_line(l))?;
    lr.finish(&mut |l| s.feed_line(l));
    Ok(s)
}

/// Summarise a log file, streaming.
pub fn summarize_file(
    path: &Path,
    scope: Scope,
    engine: Option<Engine>,
) -> io::Result<LogSummarizer> {
    summarize_reader(std::fs::File::open(path)?, scope, engine)
}
