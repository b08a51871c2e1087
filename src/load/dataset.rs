//! Prompts from a file, for users with real data: ShareGPT JSON (a list of
//! `{"conversations": [{"from": "human", "value": ...}, ...]}`: the first human turn is the
//! prompt) or JSONL with one object per line carrying `prompt` (text) or `messages` (an
//! OpenAI chat list). Loaded once, before anything is launched.
//!
//! With `sessions: {from_dataset: true}` the same files are read as conversations
//! (`parse_conversations`): every user turn in order, the file's assistant turns dropped (the
//! server's own replies take their place), strictly: a conversation without a user turn or a
//! turn that is not a role and a text is an error naming the entry, not a skipped line.

use super::openai::Prompt;
use crate::plan::spec::Endpoint;
use serde_json::Value;
use std::path::Path;

#[derive(Debug, Clone, PartialEq)]
pub enum DatasetPrompt {
    Text(String),
    Messages(Value),
    /// A conversation for `sessions:`: its system prompt and every user turn, in order.
    Conversation {
        system: Option<String>,
        turns: Vec<String>,
    },
    /// An agentic trace's conversation (`sessions: {from_trace: F, format: agentic}`): per
    /// turn, its new non-assistant messages as the file has them.
    Agentic(super::trace::AgenticConversation),
    /// A mooncake trace's record (`format: mooncake`): sent at its time, its prompt built from
    /// its hash ids (`load::trace::mooncake_prompt`).
    Record(super::trace::MooncakeRecord),
}

impl DatasetPrompt {
    pub fn to_prompt(&self, endpoint: Endpoint) -> Prompt {
        match (self, endpoint) {
            (DatasetPrompt::Text(t), _) => Prompt::Text(t.clone()),
            (DatasetPrompt::Messages(m), _) => Prompt::Messages(m.clone()),
            // Only sessions read conversations; a single request gets the first turn.
            (DatasetPrompt::Conversation { turns, .. }, _) => {
                Prompt::Text(turns.first().cloned().unwrap_or_default())
            }
            (DatasetPrompt::Agentic(turns), _) => {
                Prompt::Messages(Value::Array(turns.first().cloned().unwrap_or_default()))
            }
            // The driver builds a record's token ids itself (it needs the seed and the
            // phase); this only keeps the match whole.
            (DatasetPrompt::Record(_), _) => Prompt::TokenIds(Vec::new()),
        }
    }
}

fn from_object(v: &Value) -> Option<DatasetPrompt> {
    if let Some(p) = v.get("prompt").and_then(Value::as_str) {
        return Some(DatasetPrompt::Text(p.to_string()));
    }
    if let Some(m) = v
        .get("messages")
        .filter(|m| m.as_array().is_some_and(|a| !a.is_empty()))
    {
        return Some(DatasetPrompt::Messages(m.clone()));
    }
    let turns = v.get("conversations").and_then(Value::as_array)?;
    turns
        .iter()
        .find(|t| {
            matches!(
                t.get("from").and_then(Value::as_str),
                Some("human" | "user")
            )
        })
        .and_then(|t| t.get("value").and_then(Value::as_str))
        .map(|s| DatasetPrompt::Text(s.to_string()))
}

/// Parse a dataset's text (JSON array, or JSONL). Entries without a usable prompt are
/// skipped; an empty result is an error.
pub fn parse(text: &str, origin: &str) -> Result<Vec<DatasetPrompt>, String> {
    let trimmed = text.trim_start();
    let prompts: Vec<DatasetPrompt> = if trimmed.starts_with('[') {
        let v: Value =
            serde_json::from_str(text).map_err(|e| format!("{origin}: not valid JSON ({e})"))?;
        v.as_array()
            .map(|a| a.iter().filter_map(from_object).collect())
            .unwrap_or_default()
    } else {
        let mut out = Vec::new();
        for (i, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let v: Value = serde_json::from_str(line)
                .map_err(|e| format!("{origin}:{}: not a JSON object ({e})", i + 1))?;
            out.extend(from_object(&v));
        }
        out
    };
    if prompts.is_empty() {
        return Err(format!(
            "{origin}: no prompts found (expected ShareGPT `conversations`, or JSONL lines with `prompt` or `messages`)"
        ));
    }
    Ok(prompts)
}

/// One entry as a conversation: ShareGPT `conversations` (`from`/`value`) or OpenAI
/// `messages` (`role`/`content`). Err: what is wrong with it.
fn conversation_of(v: &Value) -> Result<DatasetPrompt, String> {
    let (list, role_key, text_key) = if let Some(c) = v.get("conversations") {
        (c, "from", "value")
    } else if let Some(m) = v.get("messages") {
        (m, "role", "content")
    } else {
        return Err("has neither `conversations` (ShareGPT) nor `messages` (OpenAI)".into());
    };
    let list = list
        .as_array()
        .ok_or_else(|| format!("`{role_key}` list expected, got {list}"))?;
    let (mut system, mut turns) = (None, Vec::new());
    for (i, t) in list.iter().enumerate() {
        let role = t.get(role_key).and_then(Value::as_str);
        let text = t.get(text_key).and_then(Value::as_str);
        let (Some(role), Some(text)) = (role, text) else {
            return Err(format!(
                "turn {} is malformed: it needs a `{role_key}` and a text `{text_key}`",
                i + 1
            ));
        };
        match role {
            "human" | "user" => turns.push(text.to_string()),
            "system" if turns.is_empty() => system = Some(text.to_string()),
            // The file's replies are replaced by the server's own.
            "gpt" | "assistant" | "chatgpt" | "bing" | "bard" | "model" => {}
            other => {
                return Err(format!(
                    "turn {} has the unknown role `{other}` (expected user/human, assistant/gpt or a leading system)",
                    i + 1
                ));
            }
        }
    }
    if turns.is_empty() {
        return Err("is an empty conversation: no user turn".into());
    }
    Ok(DatasetPrompt::Conversation { system, turns })
}

/// A dataset's text read as conversations (`sessions: {from_dataset: true}`). Every entry
/// must be a conversation with at least one user turn: a bad one is an error naming it.
pub fn parse_conversations(text: &str, origin: &str) -> Result<Vec<DatasetPrompt>, String> {
    let trimmed = text.trim_start();
    let mut out = Vec::new();
    if trimmed.starts_with('[') {
        let v: Value =
            serde_json::from_str(text).map_err(|e| format!("{origin}: not valid JSON ({e})"))?;
        for (i, e) in v.as_array().into_iter().flatten().enumerate() {
            out.push(conversation_of(e).map_err(|m| format!("{origin}: entry {}: {m}", i + 1))?);
        }
    } else {
        for (i, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let v: Value = serde_json::from_str(line)
                .map_err(|e| format!("{origin}:{}: not a JSON object ({e})", i + 1))?;
            out.push(conversation_of(&v).map_err(|m| format!("{origin}:{}: {m}", i + 1))?);
        }
    }
    if out.is_empty() {
        return Err(format!("{origin}: no conversations found"));
    }
    Ok(out)
}

/// [`load`] as conversations, for `sessions: {from_dataset: true}`.
pub fn load_conversations(path: &Path) -> Result<Vec<DatasetPrompt>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("workload.dataset {}: {e}", path.display()))?;
    parse_conversations(&text, &format!("workload.dataset {}", path.display()))
}

/// The workload's `dataset:`, read the way it uses it: conversations for
/// `sessions: {from_dataset: true}`, prompts otherwise (None: no dataset).
pub fn load_for(w: &crate::plan::spec::WorkloadSpec) -> Option<Result<Vec<DatasetPrompt>, String>> {
    if let Some(source) = w.sessions.as_ref().map(|s| &s.source) {
        if let Some(path) = source.trace_path() {
            return Some(load_trace(source, Path::new(path)));
        }
    }
    let path = Path::new(w.dataset.as_deref()?);
    let sessions = w
        .sessions
        .as_ref()
        .is_some_and(|s| s.source == crate::plan::spec::SessionSource::Dataset);
    Some(if sessions {
        load_conversations(path)
    } else {
        load(path)
    })
}

/// A `sessions: {from_trace: ...}` file, read and checked the way its `format` says.
fn load_trace(
    source: &crate::plan::spec::SessionSource,
    path: &Path,
) -> Result<Vec<DatasetPrompt>, String> {
    use crate::plan::spec::SessionSource;
    let origin = format!("workload.sessions.from_trace {}", path.display());
    let text = std::fs::read_to_string(path).map_err(|e| format!("{origin}: {e}"))?;
    match source {
        SessionSource::Mooncake { block_tokens, .. } => {
            super::trace::parse_mooncake(&text, &origin, *block_tokens)
                .map(|r| r.into_iter().map(DatasetPrompt::Record).collect())
        }
        _ => super::trace::parse_agentic(&text, &origin)
            .map(|c| c.into_iter().map(DatasetPrompt::Agentic).collect()),
    }
}

pub fn load(path: &Path) -> Result<Vec<DatasetPrompt>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("workload.dataset {}: {e}", path.display()))?;
    parse(&text, &path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sharegpt_and_jsonl() {
        let sg = r#"[{"id": "a", "conversations": [{"from": "human", "value": "hi there"}, {"from": "gpt", "value": "hello"}]},
                     {"id": "b", "conversations": [{"from": "gpt", "value": "no human turn"}]}]"#;
        assert_eq!(
            parse(sg, "sg.json"),
            Ok(vec![DatasetPrompt::Text("hi there".into())])
        );
        let jl = "{\"prompt\": \"p1\"}\n\n{\"messages\": [{\"role\": \"user\", \"content\": \"m1\"}]}\n{\"other\": 1}\n";
        let p = parse(jl, "d.jsonl").expect("valid");
        assert_eq!(p.len(), 2);
        assert!(matches!(&p[1], DatasetPrompt::Messages(_)));
        let e = parse("{\"prompt\": \"x\"}\nnot json\n", "d.jsonl").expect_err("bad line");
        assert!(e.starts_with("d.jsonl:2:"), "{e}");
        assert!(parse("[]", "e.json").is_err());
    }

    #[test]
    fn conversations_keep_every_user_turn_and_refuse_bad_ones() {
        let sg = r#"[{"conversations": [{"from": "human", "value": "a"}, {"from": "gpt", "value": "r"}, {"from": "human", "value": "b"}]}]"#;
        assert_eq!(
            parse_conversations(sg, "sg.json"),
            Ok(vec![DatasetPrompt::Conversation {
                system: None,
                turns: vec!["a".into(), "b".into()]
            }])
        );
        let jl = r#"{"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}]}"#;
        assert_eq!(
            parse_conversations(jl, "d.jsonl"),
            Ok(vec![DatasetPrompt::Conversation {
                system: Some("s".into()),
                turns: vec!["q".into()]
            }])
        );
        let empty =
            "{\"messages\": [{\"role\": \"user\", \"content\": \"q\"}]}\n{\"messages\": []}\n";
        let e = parse_conversations(empty, "d.jsonl").expect_err("empty");
        assert!(
            e.starts_with("d.jsonl:2:") && e.contains("empty conversation"),
            "{e}"
        );
        let bad = r#"{"messages": [{"role": "user", "content": 3}]}"#;
        let e = parse_conversations(bad, "d.jsonl").expect_err("malformed");
        assert!(e.contains("turn 1 is malformed"), "{e}");
        let e = parse_conversations(r#"[{"prompt": "x"}]"#, "p.json").expect_err("no turns");
        assert!(e.starts_with("p.json: entry 1:"), "{e}");
    }
}
