//! Conversations for `workload.sessions` (issue 43), as pure data: which session a client
//! holds, the prompt of its next turn (the whole history plus the new user message), and the
//! history once the server's reply is in. No I/O: the driver sends what `next_turn` builds and
//! hands the reply back to `record_reply`.
//!
//! Session `k` of a phase is the same whoever sends it and whenever: its user messages, lengths
//! and system prompt are seeded by (workload seed, phase, k), so every configuration, a resumed
//! sweep and a reproduction get the same sessions; only the replies are the server's.
//!
//! The history carries the server's own replies on both endpoints, as a real client's would:
//! on chat the streamed text as the assistant's message; on completions with token ids the
//! reply's own ids (`return_token_ids`, which SGLang and vLLM answer), so the prompt repeats
//! exactly the tokens the server's prefix cache holds; on completions where the server returns
//! no ids the whole session is text, the reply's text appended to the prompt it continued
//! (a token-id prompt cannot be continued by text: the two would not be one sequence of the
//! server's tokens).
//!
//! The reusable share is an upper bound on the server's prefix-cache hit rate, counted in the
//! server's tokens (`Reuse`): a turn's reusable tokens are the previous turn's prompt and
//! reply as the server's `usage` reported them (everything the cache can hold for the session
//! before this turn); a session's first turn shares with the earlier sessions' first turns
//! what their token sequences have in common (`SentPrefixes`); a conversation an earlier
//! session already sent may be served whole.

use super::dataset::DatasetPrompt;
use super::openai::{Prompt, Reply};
use super::prompts;
use crate::plan::spec::{Endpoint, SessionSource, WorkloadSpec};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::hash::Hasher;
use std::ops::Bound;

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

/// How many of a turn's prompt tokens an earlier request already sent, in the server's
/// tokens: what a prefix cache that never evicted could serve, and no more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reuse {
    /// This many: the previous turn's prompt and reply, as the server's `usage` counted them.
    /// Its cache holds at most that much of the session (the prompt and the tokens it
    /// generated); the next prompt repeats it, and anything a re-encoded reply adds or
    /// changes only shortens the match.
    Tokens(u64),
    /// A session's first turn: what its prompt has in common, token for token from the start,
    /// with an earlier session's first turn (a shared system prompt, the chat template's own
    /// tokens around it, a user message that happens to start alike). The driver counts it
    /// with [`SentPrefixes`], from the prompt's ids or the server's own tokenization of it.
    FirstTurn,
    /// The whole prompt (the server's `usage.prompt_tokens`): an earlier session of the load
    /// sent this same conversation, so every turn may be cached, replies included where the
    /// server answers alike.
    Whole,
    /// Not known: the previous turn's `usage` did not come. Left unknown, never guessed.
    Unknown,
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
    pub reusable: Reuse,
}

/// A conversation in progress.
#[derive(Debug, Clone)]
pub struct Conversation {
    system: Option<Msg>,
    users: Vec<Msg>,
    max_tokens: Vec<u64>,
    next: usize,
    /// Completions with token ids: everything sent so far, the server's replies included.
    ids: Vec<u64>,
    /// Completions with text: likewise.
    text: String,
    /// Chat: the messages so far, as sent.
    messages: Vec<Value>,
    /// Completions: text messages make one text (`text`), not a list of messages.
    text_mode: bool,
    /// Tokens of the previous turn's prompt and reply, as the server reported them.
    prev_prompt: Option<u64>,
    prev_reply: Option<u64>,
    /// An earlier session of the load sent this same conversation (`mark_repeat`).
    repeat: bool,
}

/// The seed of session `k` of phase `stream` (0 measured, 1 warmup).
fn session_seed(seed: u64, stream: u64, k: u64) -> u64 {
    prompts::measurement_seed(seed, &[SESSION_SALT, stream, k])
}

/// Session `k` of phase `stream`, or None when the workload has no sessions (or a dataset
/// source without conversations). `reply_ids`: on completions, the server returns its replies'
/// token ids (the driver asked it once); else a synthetic session is sent as text.
pub fn conversation(
    w: &WorkloadSpec,
    vocab: u64,
    dataset: Option<&[DatasetPrompt]>,
    stream: u64,
    k: u64,
    reply_ids: bool,
) -> Option<Conversation> {
    let spec = w.sessions.as_ref()?;
    let ids = w.endpoint == Endpoint::Completions && reply_ids;
    let vocab = vocab.max(1);
    let mut c = Conversation {
        system: None,
        users: Vec::new(),
        max_tokens: Vec::new(),
        next: 0,
        ids: Vec::new(),
        text: String::new(),
        messages: Vec::new(),
        text_mode: w.endpoint == Endpoint::Completions,
        prev_prompt: None,
        prev_reply: None,
        repeat: false,
    };
    let seed;
    match &spec.source {
        SessionSource::Synthetic {
            turns,
            user_tokens,
            user_dist,
            system_tokens,
            sessions,
        } => {
            let k = sessions.map_or(k, |s| k % s.max(1));
            seed = session_seed(w.seed, stream, k);
            if *system_tokens > 0 {
                // One system prompt for every session of the phase: the prefix they share.
                let s = session_seed(w.seed, stream, u64::MAX);
                c.system = Some(if ids {
                    Msg::Ids(prompts::token_ids(s, 64, 0, *system_tokens, vocab))
                } else {
                    Msg::Text(prompts::text(s, 64, 0, *system_tokens))
                });
            }
            for t in 0..*turns {
                let len = prompts::length(user_dist.as_ref(), *user_tokens, seed, 62, t);
                c.users.push(if ids {
                    Msg::Ids(prompts::token_ids(seed, 60, t, len, vocab))
                } else {
                    Msg::Text(prompts::text(seed, 60, t, len))
                });
            }
        }
        // Its records are single requests at their times (`load::arrival::replay`).
        SessionSource::Mooncake { .. } => return None,
        SessionSource::Agentic { .. } => {
            let d = dataset.filter(|d| !d.is_empty())?;
            // As a dataset's: the warmup starts half way through the trace.
            let at = (k + stream * (d.len() as u64 / 2)) % d.len() as u64;
            seed = session_seed(w.seed, stream, k);
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
            seed = session_seed(w.seed, stream, k);
            let DatasetPrompt::Conversation { system, turns } = &d[at as usize] else {
                return None;
            };
            c.system = system.clone().map(Msg::Text);
            c.users = turns.iter().cloned().map(Msg::Text).collect();
        }
    }
    c.max_tokens = (0..c.users.len() as u64)
        .map(|t| prompts::length(w.output_dist.as_ref(), w.output_tokens, seed, 63, t))
        .collect();
    match &c.system {
        Some(Msg::Ids(s)) => c.ids.extend(s),
        // Completions with text: the system prompt starts the text.
        Some(Msg::Text(s)) if c.text_mode => c.text.push_str(s),
        Some(Msg::Text(s)) => c.messages.push(json!({"role": "system", "content": s})),
        _ => {}
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

    /// What the conversation says, as a hash of its system prompt and user messages: two
    /// sessions with the same identity send the same conversation (a `sessions: N` cycle, a
    /// dataset read round again or by the warmup too).
    pub fn identity(&self) -> u64 {
        // SipHash with fixed keys: the same within a run, which is all this is compared in.
        let mut h = std::hash::DefaultHasher::new();
        for m in self.system.iter().chain(&self.users) {
            match m {
                Msg::Ids(v) => {
                    h.write_u8(0);
                    v.iter().for_each(|&x| h.write_u64(x));
                    h.write_usize(v.len());
                }
                Msg::Text(t) => {
                    h.write_u8(1);
                    h.write(t.as_bytes());
                    h.write_usize(t.len());
                }
                Msg::Turn(v) => {
                    h.write_u8(2);
                    for x in v {
                        let t = x.to_string();
                        h.write(t.as_bytes());
                        h.write_usize(t.len());
                    }
                }
            }
        }
        h.write_u8(u8::from(self.system.is_some()));
        h.finish()
    }

    /// An earlier session of the load sent this conversation already: each of its turns may
    /// find its whole prompt cached.
    pub fn mark_repeat(&mut self) {
        self.repeat = true;
    }

    /// The next turn's request (None: the session is over).
    pub fn next_turn(&self) -> Option<TurnRequest> {
        let user = self.users.get(self.next)?;
        let turn = u32::try_from(self.next).unwrap_or(u32::MAX);
        let reusable = if self.repeat {
            Reuse::Whole
        } else if self.next == 0 {
            Reuse::FirstTurn
        } else {
            match (self.prev_prompt, self.prev_reply) {
                (Some(p), Some(r)) => Reuse::Tokens(p + r),
                _ => Reuse::Unknown,
            }
        };
        let prompt = match user {
            Msg::Ids(u) => {
                let mut ids = self.ids.clone();
                ids.extend(u);
                Prompt::TokenIds(ids)
            }
            Msg::Text(u) if self.text_mode => Prompt::Text(self.text_with(u)),
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

    /// The history so far, a blank line, and the new user message.
    fn text_with(&self, user: &str) -> String {
        if self.text.is_empty() {
            user.to_string()
        } else {
            format!("{}\n\n{user}", self.text)
        }
    }

    /// The server answered the current turn: its user message and the reply join the history.
    /// `prompt_tokens` and `completion_tokens` are the server's `usage`. On completions with
    /// token ids the reply goes back as its ids; returns false when the server sent none (the
    /// history cannot go on as the server's tokens: the session ends there).
    pub fn record_reply(
        &mut self,
        reply: &Reply,
        prompt_tokens: Option<u64>,
        completion_tokens: Option<u64>,
    ) -> bool {
        let Some(user) = self.users.get(self.next) else {
            return false;
        };
        match user {
            Msg::Ids(u) => {
                let Some(reply_ids) = &reply.ids else {
                    return false;
                };
                self.ids.extend(u);
                // Token ids are the server's tokens: exact where `usage` is missing.
                self.prev_prompt = prompt_tokens.or(Some(self.ids.len() as u64));
                self.ids.extend(reply_ids);
                self.prev_reply = completion_tokens.or(Some(reply_ids.len() as u64));
            }
            Msg::Text(u) if self.text_mode => {
                // The reply continues the prompt it answered, so it follows it directly.
                self.text = self.text_with(u) + &reply.text;
                self.prev_prompt = prompt_tokens;
                self.prev_reply = completion_tokens;
            }
            Msg::Text(u) => {
                self.messages.push(json!({"role": "user", "content": u}));
                self.messages
                    .push(json!({"role": "assistant", "content": reply.text}));
                self.prev_prompt = prompt_tokens;
                self.prev_reply = completion_tokens;
            }
            Msg::Turn(new) => {
                self.messages.extend(new.iter().cloned());
                self.messages
                    .push(json!({"role": "assistant", "content": reply.text}));
                self.prev_prompt = prompt_tokens;
                self.prev_reply = completion_tokens;
            }
        }
        self.next += 1;
        true
    }
}

/// The token sequences of the sessions' first turns sent so far in one load (warmup and
/// measurement: the server keeps the warmup's prefixes too), in the server's tokens, to count
/// what a new first turn has in common with them. Only first turns are kept: a later turn's
/// own history is longer than anything another session's first turn shares with it.
#[derive(Debug, Default)]
pub struct SentPrefixes {
    seen: BTreeSet<Vec<u32>>,
    /// A first turn went out whose tokens are not known: see [`SentPrefixes::lose`].
    lost: bool,
}

impl SentPrefixes {
    /// The tokens `ids` shares, from the start, with the earlier first turn it matches
    /// longest; `ids` then joins them. None once one was lost. In sorted order the longest
    /// common prefix with any member is the one with a neighbour of `ids`, so two look-ups do.
    pub fn share(&mut self, ids: &[u32]) -> Option<u64> {
        if self.lost {
            return None;
        }
        let below = self
            .seen
            .range::<[u32], _>((Bound::Unbounded, Bound::Included(ids)))
            .next_back();
        let above = self
            .seen
            .range::<[u32], _>((Bound::Excluded(ids), Bound::Unbounded))
            .next();
        let n = below
            .into_iter()
            .chain(above)
            .map(|s| common_prefix(s, ids))
            .max()
            .unwrap_or(0);
        if !self.seen.contains(ids) {
            self.seen.insert(ids.to_vec());
        }
        Some(n as u64)
    }

    /// A first turn went out whose tokens are not known (the server's tokenization failed, or
    /// disagreed with the `usage` of the request it tokenized): a later first turn may share
    /// any part of it unseen, so from then on a first turn's share is unknown, never guessed.
    pub fn lose(&mut self) {
        self.lost = true;
    }
}

fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
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

    fn reply(text: &str, ids: Option<&[u64]>) -> Reply {
        Reply {
            text: text.into(),
            ids: ids.map(<[u64]>::to_vec),
        }
    }

    #[test]
    fn sessions_are_the_same_for_a_seed_and_differ_between_sessions_and_phases() {
        let w = workload("completions", ", system_tokens: 5");
        let first = |w: &WorkloadSpec, stream, k| {
            conversation(w, 100, None, stream, k, true)
                .and_then(|c| c.next_turn())
                .map(|t| ids(&t.prompt))
                .unwrap_or_default()
        };
        let a = first(&w, 0, 3);
        assert_eq!(a, first(&w, 0, 3));
        assert_eq!(a.len(), 15, "system 5 + user 10");
        let other = first(&w, 0, 4);
        assert_eq!(a[..5], other[..5], "the system prompt is shared");
        assert_ne!(a[5..], other[5..], "the user messages are not");
        assert_ne!(a, first(&w, 1, 3), "the warmup has its own sessions");
        // `sessions: 2` cycles: session 3 is session 1, and says so by its identity.
        let w2 = workload("completions", ", sessions: 2");
        assert_eq!(first(&w2, 0, 3), first(&w2, 0, 1));
        assert_ne!(first(&w2, 0, 2), first(&w2, 0, 1));
        let id = |k| conversation(&w2, 100, None, 0, k, true).map(|c| c.identity());
        assert_eq!(id(3), id(1));
        assert_ne!(id(2), id(1));
    }

    #[test]
    fn on_completions_the_history_carries_the_servers_reply_ids() {
        let w = workload("completions", ", system_tokens: 5");
        let mut c = conversation(&w, 100, None, 0, 0, true).expect("sessions");
        assert_eq!(c.turns(), 3);
        let t0 = c.next_turn().expect("turn 0");
        assert_eq!(
            (t0.turn, t0.last, t0.reusable, t0.max_tokens),
            (0, false, Reuse::FirstTurn, 4)
        );
        let p0 = ids(&t0.prompt);
        assert!(c.record_reply(&reply(" a b c d", Some(&[7, 8, 9, 10])), Some(15), Some(4)));
        let t1 = c.next_turn().expect("turn 1");
        let p1 = ids(&t1.prompt);
        // The previous prompt, the server's own 4 reply ids, then 10 new user tokens.
        assert_eq!(p1.len(), 15 + 4 + 10);
        assert_eq!(p1[..15], p0[..]);
        assert_eq!(p1[15..19], [7, 8, 9, 10]);
        assert_eq!(
            t1.reusable,
            Reuse::Tokens(19),
            "the prompt and the reply, as usage counted them"
        );
        // Without usage, token ids are their own count.
        assert!(c.record_reply(&reply("", Some(&[1, 2])), None, None));
        let t2 = c.next_turn().expect("turn 2");
        assert!(t2.last);
        assert_eq!(t2.reusable, Reuse::Tokens(29 + 2));
        assert_eq!(ids(&t2.prompt).len(), 29 + 2 + 10);
        // A reply whose ids did not come cannot go on as the server's tokens.
        assert!(!c.record_reply(&reply("text only", None), Some(41), Some(4)));
        assert!(!c.is_done(), "the turn was not taken in");
    }

    #[test]
    fn on_completions_without_reply_ids_the_session_is_text_with_the_replies_in_it() {
        let w = workload("completions", ", system_tokens: 5");
        let mut c = conversation(&w, 100, None, 0, 0, false).expect("sessions");
        let t0 = c.next_turn().expect("turn 0");
        let Prompt::Text(p0) = &t0.prompt else {
            panic!("text prompts: {:?}", t0.prompt)
        };
        // The system prompt's 5 words, a blank line, the user's 10.
        let (system, user) = p0.split_once("\n\n").expect("two parts");
        assert_eq!(
            (system.split(' ').count(), user.split(' ').count()),
            (5, 10)
        );
        assert_eq!(t0.reusable, Reuse::FirstTurn);
        assert!(c.record_reply(&reply(" the reply", None), Some(21), Some(3)));
        let t1 = c.next_turn().expect("turn 1");
        let Prompt::Text(p1) = &t1.prompt else {
            panic!("text prompts")
        };
        // The reply follows the prompt it continued, as the server generated it.
        assert!(p1.starts_with(&format!("{p0} the reply\n\n")), "{p1}");
        assert_eq!(t1.reusable, Reuse::Tokens(24));
        // Without usage the next share is unknown, not guessed.
        assert!(c.record_reply(&reply(" r", None), None, Some(3)));
        assert_eq!(c.next_turn().map(|t| t.reusable), Some(Reuse::Unknown));
    }

    #[test]
    fn chat_sends_the_servers_reply_back_and_counts_it_reusable() {
        let w = workload("chat", "");
        let mut c = conversation(&w, 0, None, 0, 0, true).expect("sessions");
        let t0 = c.next_turn().expect("turn 0");
        assert_eq!(t0.reusable, Reuse::FirstTurn);
        assert!(c.record_reply(&reply("the reply", None), Some(30), Some(4)));
        let t1 = c.next_turn().expect("turn 1");
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
            Reuse::Tokens(34),
            "the prompt and the reply, as the server counted them"
        );
        // A reply without usage leaves the next turn's share unknown, not guessed.
        assert!(c.record_reply(&reply("r2", None), None, None));
        assert_eq!(c.next_turn().map(|t| t.reusable), Some(Reuse::Unknown));
    }

    #[test]
    fn a_conversation_sent_before_may_be_served_whole() {
        let w = workload("chat", ", sessions: 2");
        let mut c = conversation(&w, 0, None, 0, 2, true).expect("sessions");
        c.mark_repeat();
        assert_eq!(c.next_turn().map(|t| t.reusable), Some(Reuse::Whole));
        assert!(c.record_reply(&reply("r", None), Some(30), Some(4)));
        assert_eq!(c.next_turn().map(|t| t.reusable), Some(Reuse::Whole));
    }

    #[test]
    fn a_first_turn_shares_what_it_has_in_common_with_an_earlier_first_turn() {
        let mut p = SentPrefixes::default();
        assert_eq!(p.share(&[1, 2, 3, 4]), Some(0), "nothing sent before");
        // Its closest earlier first turn decides, whichever side of it in sorted order.
        assert_eq!(p.share(&[1, 2, 9, 9, 9]), Some(2));
        assert_eq!(p.share(&[1, 2, 3, 7]), Some(3));
        assert_eq!(p.share(&[1, 2, 3, 0]), Some(3));
        assert_eq!(p.share(&[5]), Some(0));
        assert_eq!(
            p.share(&[1, 2, 9, 9, 9]),
            Some(5),
            "the same prompt again: whole"
        );
        assert_eq!(p.share(&[1, 2, 9]), Some(3), "a prefix of an earlier one");
        assert_eq!(p.share(&[]), Some(0));
        // One that went out unseen: a later share could be anything up to its prompt.
        p.lose();
        assert_eq!(p.share(&[1, 2, 3, 4]), None);
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
        let mut c = conversation(&w, 0, Some(&d), 0, 0, true).expect("sessions");
        assert_eq!(c.turns(), 2);
        let t0 = c.next_turn().expect("turn 0");
        // Its own system prompt may still share the template's tokens with another's.
        assert_eq!((t0.reusable, t0.last), (Reuse::FirstTurn, false));
        let Prompt::Messages(m0) = &t0.prompt else {
            panic!("messages")
        };
        assert_eq!(m0.as_array().map(Vec::len), Some(2));
        assert!(c.record_reply(&reply("the reply", None), Some(6), Some(2)));
        let t1 = c.next_turn().expect("turn 1");
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
        assert_eq!(t1.reusable, Reuse::Tokens(8), "the prompt and the reply");
        assert!(t1.last);
        // A mooncake trace has no conversations: its records are single requests.
        let text = "name: t\nserver: {model_path: /m}\nworkload:\n  endpoint: completions\n  concurrency: 1\n  requests: 4\n  sessions: {from_trace: m.jsonl, format: mooncake}\n";
        let w = parse(text, "t.yaml").map(|s| s.workload).expect("valid");
        assert!(conversation(&w, 10, Some(&d), 0, 0, true).is_none());
    }

    #[test]
    fn a_dataset_session_replays_its_user_turns() {
        let spec = |endpoint: &str| {
            let text = format!(
                "name: t\nserver: {{model_path: /m}}\nworkload:\n  endpoint: {endpoint}\n  concurrency: 1\n  requests: 4\n  output_tokens: 8\n  dataset: d.jsonl\n  sessions: {{from_dataset: true}}\n"
            );
            parse(&text, "t.yaml").map(|s| s.workload).expect("valid")
        };
        let d = vec![DatasetPrompt::Conversation {
            system: Some("sys".into()),
            turns: vec!["a".into(), "b".into()],
        }];
        let mut c = conversation(&spec("chat"), 0, Some(&d), 0, 0, true).expect("sessions");
        assert!(c.record_reply(&reply("ra", None), Some(5), Some(2)));
        let t = c.next_turn().expect("turn 1");
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
        // On completions: one text, each reply right after the prompt it continued.
        let mut c = conversation(&spec("completions"), 0, Some(&d), 0, 0, true).expect("sessions");
        assert_eq!(
            c.next_turn().map(|t| t.prompt),
            Some(Prompt::Text("sys\n\na".into()))
        );
        assert!(c.record_reply(&reply(" ra", None), Some(5), Some(2)));
        assert_eq!(
            c.next_turn().map(|t| t.prompt),
            Some(Prompt::Text("sys\n\na ra\n\nb".into()))
        );
    }
}
