//! Prompts from a file, for users with real data: ShareGPT JSON (a list of
//! `{"conversations": [{"from": "human", "value": ...}, ...]}`: the first human turn is the
//! prompt) or JSONL with one object per line carrying `prompt` (text) or `messages` (an
//! OpenAI chat list). Loaded once, before anything is launched.

use super::openai::Prompt;
use crate::plan::spec::Endpoint;
use serde_json::Value;
use std::path::Path;

#[derive(Debug, Clone, PartialEq)]
pub enum DatasetPrompt {
    Text(String),
    Messages(Value),
}

impl DatasetPrompt {
    pub fn to_prompt(&self, endpoint: Endpoint) -> Prompt {
        match (self, endpoint) {
            (DatasetPrompt::Text(t), _) => Prompt::Text(t.clone()),
            (DatasetPrompt::Messages(m), _) => Prompt::Messages(m.clone()),
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
}
