//! Conversations for `workload.sessions` (issue 43), as pure data: which session a client
//! holds, the prompt of its next turn (the whole history plus the new user message), and the
//! history once the server's reply is in. No I/O: the driver sends what `next_turn` builds and
//! hands the reply back to `record_reply`.
//!
//! Session `k` of a phase is the same whoever sends it and whenever: its user messages, lengths
//! and system prompt are seeded by (workload seed, phase, k), so every configuration, a resumed
//! sweep and a reproduction get the same sessions; only the replies are the server's.
//!
//! The reusable share is counted here because sgtune built the prompts: a turn's reusable
//! tokens are those an earlier request of its session already sent (the previous prompt, and
//! on the chat endpoint the server's reply, which it sent back), or, for a session's first
//! turn, the shared system prompt once an earlier request has sent it.

use super::dataset::DatasetPrompt;
use super::openai::Prompt;
use super::prompts;
use crate::plan::spec::{Endpoint, SessionSource, WorkloadSpec};
use serde_json::{Value, json};

/// Mixed into every session seed, so sessions never draw the single-request streams.
const SESSION_SALT: u64 = 0x5E55_1043;

/// One user message or system prompt: token ids (completions, synthetic) or text; or an
/// agentic trace's turn: its new messages (user, tool, system), as the file has them.
#[derive(Debug, Clone, PartialEq)]
enum Msg {
    Ids(Vec<u64>),
    Text(String),
    Turn(Vec<Value>),
}

/// The next request of a conversation.
#[derive(Debug)]
pub struct TurnRequest {
    pub prompt: Prompt,
    pub max_tokens: u64,
    /// 0-based turn index in the session.
    pub turn: u32,
    /// The session's last turn (its longest history).
    pub last: bool,
    /// Prompt tokens an earlier request already sent (None: not known, e.g. a chat reply
    /// whose usage the server did not report).
    pub reusable: Option<u64>,
}

/// A conversation in progress.
#[derive(Debug, Clone)]
pub struct Conversation {
    seed: u64,
    vocab: u64,
    system: Option<Msg>,
    /// The system prompt's tokens as counted for reuse (nominal on chat; 0 for a dataset's
    /// own system prompt, which only its conversation sends).
    system_tokens: u64,
    users: Vec<Msg>,
    max_tokens: Vec<u64>,
    next: usize,
    /// Completions with token ids: everything sent so far.
    ids: Vec<u64>,
    /// Otherwise: the messages so far, as sent.
    messages: Vec<Value>,
    /// Tokens of the previous turn's prompt and reply, as the server reported them (exact
    /// lengths for token ids).
    prev_prompt: Option<u64>,
    prev_reply: Option<u64>,
}

/// The seed of session `k` of phase `stream` (0 measured, 1 warmup).
fn session_seed(seed: u64, stream: u64, k: u64) -> u64 {
    prompts::measurement_seed(seed, &[SESSION_SALT, stream, k])
}

/// Session `k` of phase `stream`, or None when the workload has no sessions (or a dataset
/// source without conversations).
pub fn conversation(
    w: &WorkloadSpec,
    vocab: u64,
    dataset: Option<&[DatasetPrompt]>,
    stream: u64,
    k: u64,
) -> Option<Conversation> {
    let spec = w.sessions.as_ref()?;
    let ids = w.endpoint == Endpoint::Completions;
    let mut c = Conversation {
        seed: 0,
        vocab: vocab.max(1),
        system: None,
        system_tokens: 0,
        users: Vec::new(),
        max_tokens: Vec::new(),
        next: 0,
        ids: Vec::new(),
        messages: Vec::new(),
        prev_prompt: None,
        prev_reply: None,
    };
    match &spec.source {
        SessionSource::Synthetic {
            turns,
            user_tokens,
            user_dist,
            system_tokens,
            sessions,
        } => {
            let k = sessions.map_or(k, |s| k % s.max(1));
            c.seed = session_seed(w.seed, stream, k);
            if *system_tokens > 0 {
                // One system prompt for every session of the phase: the prefix they share.
                let s = session_seed(w.seed, stream, u64::MAX);
                c.system = Some(if ids {
                    Msg::Ids(prompts::token_ids(s, 64, 0, *system_tokens, c.vocab))
                } else {
                    Msg::Text(prompts::text(s, 64, 0, *system_tokens))
                });
                c.system_tokens = *system_tokens;
            }
            for t in 0..*turns {
                let len = prompts::length(user_dist.as_ref(), *user_tokens, c.seed, 62, t);
                c.users.push(if ids {
                    Msg::Ids(prompts::token_ids(c.seed, 60, t, len, c.vocab))
                } else {
                    Msg::Text(prompts::text(c.seed, 60, t, len))
                });
            }
        }
        // Its records are single requests at their times (`driver::spawn_trace`).
        SessionSource::Mooncake { .. } => return None,
        SessionSource::Agentic { .. } => {
            let d = dataset.filter(|d| !d.is_empty())?;
            // As a dataset's: the warmup starts half way through the trace.
            let at = (k + stream * (d.len() as u64 / 2)) % d.len() as u64;
            c.seed = session_seed(w.seed, stream, k);
            let DatasetPrompt::Agentic(turns) = &d[at as usize] else {
                return None;
            };
            c.users = turns.iter().cloned().map(Msg::Turn).collect();
        }
        SessionSource::Dataset => {
            let d = dataset.filter(|d| !d.is_empty())?;
            // The warmup starts half way through the file, so the measured sessions do not
            // begin on histories the warmup left in the cache.
            let at = (k + stream * (d.len() as u64 / 2)) % d.len() as u64;
            c.seed = session_seed(w.seed, stream, k);
            let DatasetPrompt::Conversation { system, turns } = &d[at as usize] else {
                return None;
            };
            c.system = system.clone().map(Msg::Text);
            c.users = turns.iter().cloned().map(Msg::Text).collect();
        }
    }
    c.max_tokens = (0..c.users.len() as u64)
        .map(|t| prompts::length(w.output_dist.as_ref(), w.output_tokens, c.seed, 63, t))
        .collect();
    if let Some(Msg::Ids(s)) = &c.system {
        c.ids.extend(s);
    } else if let Some(Msg::Text(s)) = &c.system {
        c.messages.push(json!({"role": "system", "content": s}));
    }
    Some(c)
}

impl Conversation {
    pub fn is_done(&self) -> bool {
        self.next >= self.users.len()
    }

    pub fn turns(&self) -> usize {
        self.users.len()
    }

    /// The next turn's request (None: the session is over). `system_seen`: an earlier request
    /// of the phase has sent the shared system prompt.
    pub fn next_turn(&self, system_seen: bool) -> Option<TurnRequest> {
        let user = self.users.get(self.next)?;
        let turn = u32::try_from(self.next).unwrap_or(u32::MAX);
        let reusable = if self.next == 0 {
            Some(if system_seen { self.system_tokens } else { 0 })
        } else {
            match user {
                // Token ids: the stand-in reply is new to the server, so only the previous
                // prompt repeats.
                Msg::Ids(_) => self.prev_prompt,
                // Text: the server's own reply went back into the history.
                Msg::Text(_) | Msg::Turn(_) => {
                    self.prev_prompt.zip(self.prev_reply).map(|(p, r)| p + r)
                }
            }
        };
        let prompt = match user {
            Msg::Ids(u) => {
                let mut ids = self.ids.clone();
                ids.extend(u);
                Prompt::TokenIds(ids)
            }
            Msg::Text(u) => {
                let mut m = self.messages.clone();
                m.push(json!({"role": "user", "content": u}));
                Prompt::Messages(Value::Array(m))
            }
            Msg::Turn(new) => {
                let mut m = self.messages.clone();
                m.extend(new.iter().cloned());
                Prompt::Messages(Value::Array(m))
            }
        };
        Some(TurnRequest {
            prompt,
            max_tokens: self.max_tokens.get(self.next).copied().unwrap_or(1),
            turn,
            last: self.next + 1 == self.users.len(),
            reusable,
        })
    }

    /// The server answered the current turn: its user message and the reply join the history.
    /// `reply_text` is the streamed content (chat and text prompts); on completions with token
    /// ids, which return no ids, a seeded stand-in of `completion_tokens` ids takes the reply's
    /// place. `prompt_tokens` and `completion_tokens` are the server's `usage`.
    pub fn record_reply(
        &mut self,
        reply_text: &str,
        prompt_tokens: Option<u64>,
        completion_tokens: Option<u64>,
    ) {
        let Some(user) = self.users.get(self.next) else {
            return;
        };
        match user {
            Msg::Ids(u) => {
                self.ids.extend(u);
                // Exact: sgtune built this prompt.
                self.prev_prompt = Some(self.ids.len() as u64);
                let n = completion_tokens.unwrap_or(0);
                self.ids.extend(prompts::token_ids(
                    self.seed,
                    61,
                    self.next as u64,
                    n,
                    self.vocab,
                ));
                self.prev_reply = Some(n);
            }
            Msg::Text(u) => {
                self.messages.push(json!({"role": "user", "content": u}));
                self.messages
                    .push(json!({"role": "assistant", "content": reply_text}));
                self.prev_prompt = prompt_tokens;
                self.prev_reply = completion_tokens;
            }
            Msg::Turn(new) => {
                self.messages.extend(new.iter().cloned());
                self.messages
                    .push(json!({"role": "assistant", "content": reply_text}));
                self.prev_prompt = prompt_tokens;
                self.prev_reply = completion_tokens;
            }
        }
        self.next += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::spec::parse;

    fn workload(endpoint: &str, extra: &str) -> WorkloadSpec {
        let text = format!(
            "name: t\nserver: {{model_path: /m}}\nworkload:\n  endpoint: {endpoint}\n  concurrency: 2\n  requests: 8\n  seed: 7\n  sessions: {{turns: 3, user_tokens: 10, reply_tokens: 4{extra}}}\n"
        );
        match parse(&text, "t.yaml") {
            Ok(s) => s.workload,
            Err(e) => panic!("{e}"),
        }
    }

    fn ids(p: &Prompt) -> Vec<u64> {
        match p {
            Prompt::TokenIds(v) => v.clone(),
            _ => Vec::new(),
        }
    }

    #[test]
    fn sessions_are_the_same_for_a_seed_and_differ_between_sessions_and_phases() {
        let w = workload("completions", ", system_tokens: 5");
        let a = conversation(&w, 100, None, 0, 3).map(|c| c.next_turn(false));
        let b = conversation(&w, 100, None, 0, 3).map(|c| c.next_turn(false));
        let (a, b) = (a.flatten(), b.flatten());
        assert_eq!(
            a.as_ref().map(|t| ids(&t.prompt)),
            b.map(|t| ids(&t.prompt))
        );
        let a = a.map(|t| ids(&t.prompt)).unwrap_or_default();
        assert_eq!(a.len(), 15, "system 5 + user 10");
        let other = conversation(&w, 100, None, 0, 4)
            .and_then(|c| c.next_turn(false))
            .map(|t| ids(&t.prompt))
            .unwrap_or_default();
        assert_eq!(a[..5], other[..5], "the system prompt is shared");
        assert_ne!(a[5..], other[5..], "the user messages are not");
        let warm = conversation(&w, 100, None, 1, 3)
            .and_then(|c| c.next_turn(false))
            .map(|t| ids(&t.prompt))
            .unwrap_or_default();
        assert_ne!(a, warm, "the warmup has its own sessions");
        // `sessions: 2` cycles: session 3 is session 1.
        let w2 = workload("completions", ", sessions: 2");
        let p = |k| {
            conversation(&w2, 100, None, 0, k)
                .and_then(|c| c.next_turn(false))
                .map(|t| ids(&t.prompt))
        };
        assert_eq!(p(3), p(1));
        assert_ne!(p(2), p(1));
    }

    #[test]
    fn the_history_grows_by_each_turn_and_its_reply() {
        let w = workload("completions", ", system_tokens: 5");
        let mut c = conversation(&w, 100, None, 0, 0).expect("sessions");
        assert_eq!(c.turns(), 3);
        let t0 = c.next_turn(true).expect("turn 0");
        assert_eq!(
            (t0.turn, t0.last, t0.reusable, t0.max_tokens),
            (0, false, Some(5), 4)
        );
        let p0 = ids(&t0.prompt);
        c.record_reply("", Some(15), Some(4));
        let t1 = c.next_turn(true).expect("turn 1");
        let p1 = ids(&t1.prompt);
        // The previous prompt, a 4-token stand-in reply, then 10 new user tokens.
        assert_eq!(p1.len(), 15 + 4 + 10);
        assert_eq!(p1[..15], p0[..]);
        assert_eq!(t1.reusable, Some(15));
        c.record_reply("", Some(29), Some(4));
        let t2 = c.next_turn(true).expect("turn 2");
        assert!(t2.last);
        assert_eq!(t2.reusable, Some(29));
        c.record_reply("", None, Some(4));
        assert!(c.is_done() && c.next_turn(true).is_none());
    }

    #[test]
    fn chat_sends_the_servers_reply_back_and_counts_it_reusable() {
        let w = workload("chat", "");
        let mut c = conversation(&w, 0, None, 0, 0).expect("sessions");
        let t0 = c.next_turn(false).expect("turn 0");
        assert_eq!(t0.reusable, Some(0));
        c.record_reply("the reply", Some(30), Some(4));
        let t1 = c.next_turn(false).expect("turn 1");
        let Prompt::Messages(m) = &t1.prompt else {
            panic!("chat prompts are messages")
        };
        let roles: Vec<&str> = m
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|x| x["role"].as_str())
            .collect();
        assert_eq!(roles, ["user", "assistant", "user"]);
        assert_eq!(m[1]["content"], "the reply");
        assert_eq!(
            t1.reusable,
            Some(34),
            "the prompt and the reply, as the server counted them"
        );
        // A reply without usage leaves the next turn's share unknown, not guessed.
        c.record_reply("r2", None, None);
        assert_eq!(c.next_turn(false).and_then(|t| t.reusable), None);
    }

    #[test]
    fn an_agentic_trace_conversation_sends_each_rounds_new_messages_after_the_history() {
        let text = "name: t\nserver: {model_path: /m}\nworkload:\n  endpoint: chat\n  concurrency: 1\n  requests: 4\n  output_tokens: 8\n  sessions: {from_trace: a.json, format: agentic}\n";
        let w = parse(text, "t.yaml").map(|s| s.workload).expect("valid");
        let d = vec![DatasetPrompt::Agentic(vec![
            vec![
                json!({"role": "system", "content": "s"}),
                json!({"role": "user", "content": "q"}),
            ],
            vec![json!({"role": "tool", "content": "out", "tool_call_id": "c"})],
        ])];
        let mut c = conversation(&w, 0, Some(&d), 0, 0).expect("sessions");
        assert_eq!(c.turns(), 2);
        let t0 = c.next_turn(true).expect("turn 0");
        // A conversation's own system prompt is new to the server: nothing reusable yet.
        assert_eq!((t0.reusable, t0.last), (Some(0), false));
        let Prompt::Messages(m0) = &t0.prompt else {
            panic!("messages")
        };
        assert_eq!(m0.as_array().map(Vec::len), Some(2));
        c.record_reply("the reply", Some(6), Some(2));
        let t1 = c.next_turn(true).expect("turn 1");
        let Prompt::Messages(m1) = &t1.prompt else {
            panic!("messages")
        };
        let roles: Vec<&str> = m1
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|x| x["role"].as_str())
            .collect();
        assert_eq!(roles, ["system", "user", "assistant", "tool"]);
        assert_eq!(m1[2]["content"], "the reply");
        assert_eq!(m1[3]["tool_call_id"], "c", "the file's message as it is");
        assert_eq!(t1.reusable, Some(8), "the prompt and the reply, as counted");
        assert!(t1.last);
        // A mooncake trace has no conversations: its records are single requests.
        let text = "name: t\nserver: {model_path: /m}\nworkload:\n  endpoint: completions\n  concurrency: 1\n  requests: 4\n  sessions: {from_trace: m.jsonl, format: mooncake}\n";
        let w = parse(text, "t.yaml").map(|s| s.workload).expect("valid");
        assert!(conversation(&w, 10, Some(&d), 0, 0).is_none());
    }

    #[test]
    fn a_dataset_session_replays_its_user_turns() {
        let text = "name: t\nserver: {model_path: /m}\nworkload:\n  endpoint: chat\n  concurrency: 1\n  requests: 4\n  output_tokens: 8\n  dataset: d.jsonl\n  sessions: {from_dataset: true}\n";
        let w = parse(text, "t.yaml").map(|s| s.workload).expect("valid");
        let d = vec![DatasetPrompt::Conversation {
            system: Some("sys".into()),
            turns: vec!["a".into(), "b".into()],
        }];
        let mut c = conversation(&w, 0, Some(&d), 0, 0).expect("sessions");
        c.record_reply("ra", Some(5), Some(2));
        let t = c.next_turn(true).expect("turn 1");
        let Prompt::Messages(m) = &t.prompt else {
            panic!("messages")
        };
        let texts: Vec<&str> = m
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|x| x["content"].as_str())
            .collect();
        assert_eq!(texts, ["sys", "a", "ra", "b"]);
        assert!(t.last);
    }
}
