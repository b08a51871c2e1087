//! `workload.sessions:`: multi-turn conversations instead of single requests (issue 43). Each
//! client holds a conversation and sends its turns in order, every turn's prompt being the
//! whole history (earlier user messages and the server's own replies) plus the new user
//! message. Synthetic (seeded), from the `dataset:` file's conversations, or from a trace
//! (`from_trace:`): an agentic trace in the shape SGLang's bench_serving reads
//! (`--dataset-name agentic-trace`), or a mooncake trace replayed at its timestamps.
//!
//! The nominal shape (`shape`) is pure arithmetic on the spec: `validate` prints it and the
//! context-length check reads it, so both say the same thing before anything is launched.

use super::endpoint::Endpoint;
use super::env::Expanded;
use super::lengths::{LengthDist, LengthSpec};
use serde::{Deserialize, Serialize};

/// Where the conversations come from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "source")]
pub enum SessionSource {
    /// Seeded by `workload.seed`: the same sessions for every configuration.
    Synthetic {
        turns: u64,
        /// Nominal tokens of each user message (words on the chat endpoint).
        user_tokens: u64,
        user_dist: Option<LengthDist>,
        /// Tokens of a system prompt shared by every session (0: none).
        system_tokens: u64,
        /// Distinct sessions, then they cycle (None: every session is new).
        sessions: Option<u64>,
    },
    /// `workload.dataset`'s conversations, every user turn in order.
    Dataset,
    /// `from_trace:` with `format: agentic`: bench_serving's agentic-trace JSON, each turn's
    /// new non-assistant messages sent in order with the server's replies in the history.
    Agentic { path: String },
    /// `from_trace:` with `format: mooncake`: one request per JSONL record at its timestamp
    /// (times `slowdown`), its prompt token blocks built from its `hash_ids`.
    Mooncake {
        path: String,
        /// Tokens per hash block (mooncake's traces use 512).
        block_tokens: u64,
        /// Multiplies the trace's gaps: 2 replays it at half speed.
        slowdown: f64,
    },
}

/// Mooncake's block size: its published traces hash prompts in blocks of 512 tokens.
pub const MOONCAKE_BLOCK_TOKENS: u64 = 512;

impl SessionSource {
    /// The trace file (`from_trace:`), if this source reads one.
    pub fn trace_path(&self) -> Option<&str> {
        match self {
            SessionSource::Agentic { path } | SessionSource::Mooncake { path, .. } => Some(path),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionsSpec {
    pub source: SessionSource,
    /// Seconds a client waits after a reply before it sends the session's next turn.
    pub think_time_s: f64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSessions {
    #[serde(default)]
    turns: Option<u64>,
    #[serde(default)]
    user_tokens: Option<LengthSpec>,
    /// The reply's length; the workload's `output_tokens` when not given.
    #[serde(default)]
    pub(super) reply_tokens: Option<LengthSpec>,
    #[serde(default)]
    system_tokens: u64,
    #[serde(default)]
    sessions: Option<u64>,
    #[serde(default)]
    think_time_s: f64,
    #[serde(default)]
    from_dataset: bool,
    /// A trace file (`format:` says which kind).
    #[serde(default)]
    pub(super) from_trace: Option<Expanded>,
    #[serde(default)]
    format: Option<String>,
    #[serde(default)]
    block_tokens: Option<u64>,
    #[serde(default)]
    slowdown: Option<f64>,
}

const SYNTHETIC_FIX: &str = "e.g. `sessions: {turns: 4, user_tokens: 64, reply_tokens: 32}`, or `sessions: {from_dataset: true}` with `dataset:`";

/// How the rest of the workload constrains a trace source.
#[derive(Debug, Clone, Copy)]
pub(super) struct TraceContext {
    pub has_dataset: bool,
    pub endpoint: Endpoint,
    pub has_rate: bool,
    pub has_output: bool,
}

impl RawSessions {
    /// Whether this block replays a mooncake trace (its records carry their output lengths).
    pub(super) fn is_mooncake(&self) -> bool {
        self.from_trace.is_some() && self.format.as_deref() == Some("mooncake")
    }

    /// `from_trace:`: the checked trace source. The file itself is read before launch
    /// (`load::trace`), where its records are checked.
    fn trace_source(&self, path: &str, cx: TraceContext) -> Result<SessionSource, String> {
        if self.from_dataset || cx.has_dataset {
            return Err("workload.sessions: give `from_trace:` or `dataset:` with `from_dataset: true`, not both".into());
        }
        if self.turns.is_some()
            || self.user_tokens.is_some()
            || self.system_tokens > 0
            || self.sessions.is_some()
        {
            return Err("workload.sessions: with `from_trace:` the conversations come from the file: drop `turns`, `user_tokens`, `system_tokens` and `sessions`".into());
        }
        let format = self.format.as_deref().ok_or_else(|| {
            "workload.sessions: `from_trace:` needs `format: agentic` (bench_serving's agentic-trace JSON) or `format: mooncake` (mooncake's JSONL with timestamps and hash_ids)".to_string()
        })?;
        match format {
            "agentic" => {
                if self.block_tokens.is_some() || self.slowdown.is_some() {
                    return Err("workload.sessions: `block_tokens` and `slowdown` are for `format: mooncake`; drop them for an agentic trace".into());
                }
                // The trace's messages are chat messages; rendering them as text without the
                // model's chat template would send the server a prompt no client sends.
                if cx.endpoint != Endpoint::Chat {
                    return Err("workload.sessions: an agentic trace is chat messages (user, tool, system): set `endpoint: chat`".into());
                }
                Ok(SessionSource::Agentic {
                    path: path.to_string(),
                })
            }
            "mooncake" => {
                if cx.endpoint != Endpoint::Completions {
                    return Err("workload.sessions: a mooncake trace is replayed as token-id prompts (equal hash ids, equal token blocks): set `endpoint: completions`".into());
                }
                if cx.has_rate {
                    return Err("workload.sessions: a mooncake trace arrives at its own timestamps: drop `request_rate` (use `sessions.slowdown` to stretch or squeeze the trace)".into());
                }
                if self.think_time_s > 0.0 {
                    return Err("workload.sessions: a mooncake record is one request, with no next turn to wait for: drop `think_time_s`".into());
                }
                if cx.has_output {
                    return Err("workload.sessions: each mooncake record gives its own `output_length`: drop `output_tokens` / `reply_tokens`".into());
                }
                let block_tokens = self.block_tokens.unwrap_or(MOONCAKE_BLOCK_TOKENS);
                if block_tokens == 0 {
                    return Err("workload.sessions.block_tokens must be >= 1 (tokens per hash block; mooncake's traces use 512)".into());
                }
                let slowdown = self.slowdown.unwrap_or(1.0);
                if !(slowdown.is_finite() && slowdown > 0.0) {
                    return Err(format!(
                        "workload.sessions.slowdown must be a number > 0 (2 replays the trace at half speed), got {slowdown}"
                    ));
                }
                Ok(SessionSource::Mooncake {
                    path: path.to_string(),
                    block_tokens,
                    slowdown,
                })
            }
            other => Err(format!(
                "workload.sessions.format: unknown trace format `{other}`: `agentic` or `mooncake`"
            )),
        }
    }

    /// The checked block.
    pub(super) fn resolve(self, cx: TraceContext) -> Result<SessionsSpec, String> {
        let has_dataset = cx.has_dataset;
        if !(self.think_time_s.is_finite() && self.think_time_s >= 0.0) {
            return Err(format!(
                "workload.sessions.think_time_s must be seconds >= 0, got {}",
                self.think_time_s
            ));
        }
        if self.from_trace.is_none()
            && (self.format.is_some() || self.block_tokens.is_some() || self.slowdown.is_some())
        {
            return Err("workload.sessions: `format`, `block_tokens` and `slowdown` describe a trace: add `from_trace: FILE`".into());
        }
        let source = if let Some(path) = &self.from_trace {
            self.trace_source(&path.0, cx)?
        } else if self.from_dataset {
            if !has_dataset {
                return Err("workload.sessions.from_dataset: give `dataset:` (ShareGPT JSON or OpenAI-messages JSONL) in the workload".into());
            }
            if self.turns.is_some()
                || self.user_tokens.is_some()
                || self.system_tokens > 0
                || self.sessions.is_some()
            {
                return Err("workload.sessions: with `from_dataset: true` the conversations come from the file: drop `turns`, `user_tokens`, `system_tokens` and `sessions`".into());
            }
            SessionSource::Dataset
        } else {
            if has_dataset {
                return Err("workload.sessions: `dataset:` is given: add `from_dataset: true` to replay its conversations, or drop `dataset:` for synthetic sessions".into());
            }
            let turns = match self.turns {
                None => {
                    return Err(format!(
                        "workload.sessions: missing `turns`; {SYNTHETIC_FIX}"
                    ));
                }
                Some(0) => {
                    return Err(
                        "workload.sessions.turns must be >= 1 (a session of zero turns sends nothing), e.g. `turns: 4`".into(),
                    );
                }
                Some(t) => t,
            };
            let Some(user) = self.user_tokens else {
                return Err(format!(
                    "workload.sessions: missing `user_tokens`; {SYNTHETIC_FIX}"
                ));
            };
            let (user_tokens, user_dist) = user.resolve("sessions.user_tokens")?;
            if self.sessions == Some(0) {
                return Err("workload.sessions.sessions must be >= 1 (distinct sessions before they cycle), or left out (every session new)".into());
            }
            SessionSource::Synthetic {
                turns,
                user_tokens,
                user_dist,
                system_tokens: self.system_tokens,
                sessions: self.sessions,
            }
        };
        Ok(SessionsSpec {
            source,
            think_time_s: self.think_time_s,
        })
    }
}

/// One turn of a synthetic session at its nominal lengths.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NominalTurn {
    /// The whole prompt: system, history and the new user message.
    pub prompt: u64,
    /// The part of it an earlier request of the session (or the shared system prompt)
    /// already sent, as sgtune counts it (`load::sessions`).
    pub reusable: u64,
    pub reply: u64,
}

impl SessionsSpec {
    /// A synthetic session's turns at the nominal lengths (`user_max`: take each length
    /// distribution's upper bound instead, for the context check), or None for a dataset.
    /// Each turn after the first reuses the previous prompt and the server's reply, which the
    /// history carries back on both endpoints; the first, the shared system prompt (a run
    /// counts it in the server's tokens, the template's included: `load::sessions`).
    pub fn nominal_turns(
        &self,
        reply_tokens: u64,
        reply_max: u64,
        use_max: bool,
    ) -> Option<Vec<NominalTurn>> {
        let SessionSource::Synthetic {
            turns,
            user_tokens,
            user_dist,
            system_tokens,
            ..
        } = &self.source
        else {
            return None;
        };
        let user = match (use_max, user_dist) {
            (true, Some(d)) => d.bounds().1,
            _ => *user_tokens,
        };
        let reply = if use_max { reply_max } else { reply_tokens };
        let mut out = Vec::new();
        let mut prompt = *system_tokens;
        let mut reusable = *system_tokens;
        for t in 0..*turns {
            if t > 0 {
                let prev = out.last().map_or(0, |p: &NominalTurn| p.prompt);
                reusable = prev + reply;
                prompt += reply;
            }
            prompt += user;
            out.push(NominalTurn {
                prompt,
                reusable,
                reply,
            });
        }
        Some(out)
    }
}

/// The reusable share of a session's prompt tokens: Σ reusable ÷ Σ prompt.
pub fn reusable_share(turns: &[NominalTurn]) -> Option<f64> {
    let prompt: u64 = turns.iter().map(|t| t.prompt).sum();
    let reusable: u64 = turns.iter().map(|t| t.reusable.min(t.prompt)).sum();
    (prompt > 0).then(|| reusable as f64 / prompt as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn synthetic(turns: u64, user: u64, system: u64) -> SessionsSpec {
        SessionsSpec {
            source: SessionSource::Synthetic {
                turns,
                user_tokens: user,
                user_dist: None,
                system_tokens: system,
                sessions: None,
            },
            think_time_s: 0.0,
        }
    }

    #[test]
    fn nominal_turns_grow_by_the_history_and_count_what_repeats() {
        // 3 turns of 10 user tokens, replies of 5, a 20-token system prompt.
        let s = synthetic(3, 10, 20);
        let c = s.nominal_turns(5, 5, false).unwrap_or_default();
        let got: Vec<(u64, u64)> = c.iter().map(|t| (t.prompt, t.reusable)).collect();
        // Prompts 30, 45, 60; the history carries the server's own reply back on both
        // endpoints, so the previous prompt and the reply repeat; the first turn its system
        // prompt.
        assert_eq!(got, vec![(30, 20), (45, 35), (60, 50)]);
        assert_eq!(reusable_share(&c), Some(105.0 / 135.0));
        assert_eq!(reusable_share(&[]), None);
    }
}
