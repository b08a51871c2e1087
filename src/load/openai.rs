//! OpenAI-compatible request bodies and streamed-chunk reading.

use crate::plan::spec::{Endpoint, WorkloadSpec};
use serde_json::{Value, json};

/// What a prompt is made of.
#[derive(Debug, Clone, PartialEq)]
pub enum Prompt {
    TokenIds(Vec<u64>),
    Text(String),
    /// A chat conversation as given (dataset prompts).
    Messages(Value),
}

/// The prompt as the endpoint takes it: the body's key (`prompt` or `messages`) and value.
/// One place, so a tokenization of the prompt (`tokenize_body`) sees what the request sends.
fn prompt_field(endpoint: Endpoint, prompt: Prompt) -> (&'static str, Value) {
    match (endpoint, prompt) {
        (Endpoint::Completions, Prompt::TokenIds(ids)) => ("prompt", json!(ids)),
        (Endpoint::Completions, Prompt::Text(t)) => ("prompt", json!(t)),
        (Endpoint::Chat, Prompt::Text(t)) => ("messages", json!([{"role": "user", "content": t}])),
        (Endpoint::Chat, Prompt::Messages(m)) => ("messages", m),
        (Endpoint::Completions, Prompt::Messages(m)) => {
            // A conversation on the completions endpoint: its turns' text, in order.
            let text: Vec<&str> = m
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|t| t.get("content").and_then(Value::as_str))
                        .collect()
                })
                .unwrap_or_default();
            ("prompt", json!(text.join("\n")))
        }
        (Endpoint::Chat, Prompt::TokenIds(ids)) => {
            let t: Vec<String> = ids.iter().map(|i| i.to_string()).collect();
            (
                "messages",
                json!([{"role": "user", "content": t.join(" ")}]),
            )
        }
    }
}

/// The streaming request body. `ignore_eos` makes every request produce exactly `max_tokens`.
pub fn request_body(w: &WorkloadSpec, model: &str, prompt: Prompt, max_tokens: u64) -> Value {
    let (key, value) = prompt_field(w.endpoint, prompt);
    let mut body = json!({ key: value });
    if let Some(obj) = body.as_object_mut() {
        obj.insert("model".into(), json!(model));
        obj.insert("max_tokens".into(), json!(max_tokens));
        obj.insert("temperature".into(), json!(w.temperature));
        obj.insert("stream".into(), json!(true));
        obj.insert("stream_options".into(), json!({"include_usage": true}));
        obj.insert("ignore_eos".into(), json!(w.ignore_eos));
        // The user's extra fields win: they are the point of `extra_body`.
        if let Some(extra) = &w.extra_body {
            for (k, v) in extra {
                obj.insert(k.clone(), v.clone());
            }
        }
    }
    body
}

/// Ask the completions endpoint for the reply's token ids beside its text, so a session's next
/// turn can carry the reply as the server generated it. SGLang 0.5.23 and vLLM both take
/// `return_token_ids` on `/v1/completions` and then put each chunk's new ids in
/// `choices[].token_ids` (the first chunk also has `prompt_token_ids`); a server without it
/// ignores the field. A user's own `return_token_ids` in `extra_body` stays as given.
pub fn ask_reply_ids(body: &mut Value) {
    if let Some(obj) = body.as_object_mut() {
        obj.entry("return_token_ids").or_insert(json!(true));
    }
}

/// A `/tokenize` request for `prompt` as the endpoint would receive it: the server renders
/// messages through the chat template exactly as for a chat completion (SGLang 0.5.23's
/// `/tokenize` and vLLM's both do when `add_generation_prompt` is left out), and encodes text
/// as a completion's prompt is encoded. The `extra_body` keys that change the rendering
/// (`chat_template_kwargs`, `tools`, `reasoning_effort`) go along.
pub fn tokenize_body(w: &WorkloadSpec, model: &str, prompt: Prompt) -> Value {
    let (key, value) = prompt_field(w.endpoint, prompt);
    let mut body = json!({ key: value, "model": model });
    if let (Some(obj), Some(extra)) = (body.as_object_mut(), &w.extra_body) {
        for k in [
            "chat_template_kwargs",
            "tools",
            "tool_choice",
            "reasoning_effort",
        ] {
            if let Some(v) = extra.get(k) {
                obj.insert(k.into(), v.clone());
            }
        }
    }
    body
}

/// The token ids of a `/tokenize` answer (`{"tokens": [...], "count": n}`, SGLang's and
/// vLLM's shape). None: not that shape, or an id that is not a token id (a server that
/// answered something else must not be read as an empty prompt).
pub fn parse_tokenize(text: &str) -> Option<Vec<u32>> {
    let v: Value = serde_json::from_str(text).ok()?;
    let tokens = v.get("tokens")?.as_array()?;
    let ids: Vec<u32> = tokens
        .iter()
        .map(|t| t.as_u64().and_then(|x| u32::try_from(x).ok()))
        .collect::<Option<_>>()?;
    // The count, where given, must agree: a partial list is no tokenization.
    match v.get("count").and_then(Value::as_u64) {
        Some(n) if n != ids.len() as u64 => None,
        _ => Some(ids),
    }
}

/// A session turn's reply as it streamed: its text and, where the server sent them
/// (`return_token_ids`), its token ids (None: no chunk carried any).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Reply {
    pub text: String,
    pub ids: Option<Vec<u64>>,
}

/// What one streamed chunk carried.
#[derive(Debug, Default, PartialEq)]
pub struct ChunkInfo {
    /// Number of entries in `choices`.
    pub choices: usize,
    /// Characters of generated content (completions `text`, chat `delta.content`).
    pub content_chars: usize,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub finish_reason: Option<String>,
    /// The server sent an error object instead of a chunk.
    pub error: Option<String>,
}

// The shape of a streamed chunk, borrowed from the payload: this runs once per token, so it
// avoids building a generic JSON tree (allocation per key and string) on the hot path.
#[derive(serde::Deserialize)]
struct RawChunk<'a> {
    #[serde(default, borrow)]
    object: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    message: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default, borrow)]
    choices: Option<Vec<RawChoice<'a>>>,
    #[serde(default)]
    usage: Option<RawUsage>,
}

#[derive(serde::Deserialize)]
struct RawChoice<'a> {
    #[serde(default, borrow)]
    text: Option<std::borrow::Cow<'a, str>>,
    /// The chunk's new reply ids, when the request asked for them (`return_token_ids`).
    #[serde(default)]
    token_ids: Option<Vec<u64>>,
    #[serde(default, borrow)]
    delta: Option<RawDelta<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<std::borrow::Cow<'a, str>>,
}

#[derive(serde::Deserialize)]
struct RawDelta<'a> {
    #[serde(default, borrow)]
    content: Option<std::borrow::Cow<'a, str>>,
}

#[derive(serde::Deserialize)]
struct RawUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
}

/// Read one `data:` payload (not `[DONE]`), keeping no reply: the tests' form of
/// [`parse_chunk_reply`].
#[cfg(test)]
pub fn parse_chunk(data: &str) -> Result<ChunkInfo, String> {
    parse_chunk_reply(data, None)
}

/// Read one `data:` payload (not `[DONE]`), also appending the chunk's content and reply ids
/// to `reply` when given (a session keeps its replies; single requests pass None and copy
/// nothing on this per-token path). Err: not JSON (malformed SSE).
pub fn parse_chunk_reply(data: &str, mut reply: Option<&mut Reply>) -> Result<ChunkInfo, String> {
    let c: RawChunk<'_> = serde_json::from_str(data).map_err(|e| {
        let shown: String = data.chars().take(80).collect();
        format!("malformed SSE data ({e}): {shown}")
    })?;
    let mut info = ChunkInfo::default();
    if c.object.as_deref() == Some("error") || c.error.is_some() {
        let msg = c
            .message
            .map(|m| m.into_owned())
            .or_else(|| {
                c.error.as_ref().and_then(|e| {
                    e.get("message")
                        .and_then(Value::as_str)
                        .or_else(|| e.as_str())
                        .map(String::from)
                })
            })
            .unwrap_or_else(|| data.chars().take(200).collect());
        info.error = Some(msg);
        return Ok(info);
    }
    if let Some(choices) = &c.choices {
        info.choices = choices.len();
        for ch in choices {
            let content = ch
                .text
                .as_deref()
                .or_else(|| ch.delta.as_ref().and_then(|d| d.content.as_deref()))
                .unwrap_or("");
            info.content_chars += content.chars().count();
            if let Some(r) = reply.as_deref_mut() {
                r.text.push_str(content);
                if let Some(ids) = &ch.token_ids {
                    r.ids.get_or_insert_with(Vec::new).extend(ids);
                }
            }
            if let Some(fr) = &ch.finish_reason {
                info.finish_reason = Some(fr.to_string());
            }
        }
    }
    if let Some(u) = c.usage {
        info.prompt_tokens = u.prompt_tokens;
        info.completion_tokens = u.completion_tokens;
    }
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sglang_completion_chunks() {
        let c = parse_chunk(r#"{"id":"x","object":"text_completion","created":1,"model":"tiny","choices":[{"index":0,"text":")')'","logprobs":null,"finish_reason":null,"matched_stop":null}],"usage":null}"#).expect("json");
        assert_eq!(
            (c.choices, c.content_chars, c.completion_tokens),
            (1, 4, None)
        );
        let u = parse_chunk(r#"{"id":"x","choices":[],"usage":{"prompt_tokens":5,"total_tokens":10,"completion_tokens":5}}"#).expect("json");
        assert_eq!(
            (u.choices, u.prompt_tokens, u.completion_tokens),
            (0, Some(5), Some(5))
        );
    }

    #[test]
    fn chat_role_chunk_has_no_content_and_errors_are_seen() {
        let c =
            parse_chunk(r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#)
                .expect("json");
        assert_eq!((c.choices, c.content_chars), (1, 0));
        let e = parse_chunk(r#"{"object":"error","message":"boom","code":500}"#).expect("json");
        assert_eq!(e.error.as_deref(), Some("boom"));
        let e = parse_chunk(r#"{"error":{"message":"nested","type":"x"}}"#).expect("json");
        assert_eq!(e.error.as_deref(), Some("nested"));
        // Escapes in the text are decoded before counting.
        let c = parse_chunk(r#"{"choices":[{"text":"a\nb\u00e9"}]}"#).expect("json");
        assert_eq!(c.content_chars, 4);
        // usage: null on content chunks.
        let c = parse_chunk(r#"{"choices":[{"text":"x","finish_reason":null}],"usage":null}"#)
            .expect("json");
        assert_eq!((c.completion_tokens, c.finish_reason), (None, None));
        assert!(parse_chunk("{not json").is_err());
    }

    #[test]
    fn body_has_streaming_usage_and_exact_lengths() {
        let text = "name: t\nserver: {model_path: /m}\nworkload: {concurrency: 1, requests: 1, input_tokens: 3, output_tokens: 7}\n";
        let spec = crate::plan::spec::parse(text, "t").expect("valid");
        let b = request_body(&spec.workload, "tiny", Prompt::TokenIds(vec![1, 2, 3]), 7);
        assert_eq!(b["prompt"], json!([1, 2, 3]));
        assert_eq!(b["max_tokens"], 7);
        assert_eq!(b["stream_options"]["include_usage"], true);
        assert_eq!(b["ignore_eos"], true);
        assert_eq!(b["temperature"], 0.0);
        let text = text.replace(
            "output_tokens: 7}",
            "output_tokens: 7, extra_body: {top_p: 0.5, temperature: 0.7}}",
        );
        let spec = crate::plan::spec::parse(&text, "t").expect("valid");
        let b = request_body(&spec.workload, "tiny", Prompt::TokenIds(vec![1]), 7);
        assert_eq!(b["top_p"], 0.5);
        assert_eq!(b["temperature"], 0.7, "extra_body wins");
    }

    #[test]
    fn a_sessions_reply_keeps_its_text_and_the_ids_sglang_streams() {
        // SGLang 0.5.23 with `return_token_ids`: the first chunk also carries the prompt's ids
        // (not the reply's), every chunk its new reply ids, the usage chunk none.
        let mut r = Reply::default();
        for data in [
            r#"{"id":"x","object":"text_completion","choices":[{"index":0,"text":" a","logprobs":null,"finish_reason":null,"matched_stop":null,"token_ids":[11],"prompt_token_ids":[1,2,3]}],"usage":null}"#,
            r#"{"id":"x","object":"text_completion","choices":[{"index":0,"text":" b c","finish_reason":"length","token_ids":[12,13]}],"usage":null}"#,
            r#"{"id":"x","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":3,"total_tokens":6}}"#,
        ] {
            parse_chunk_reply(data, Some(&mut r)).expect("json");
        }
        assert_eq!(r.text, " a b c");
        assert_eq!(r.ids, Some(vec![11, 12, 13]));
        // A server that sends no ids leaves them unknown, not empty.
        let mut r = Reply::default();
        parse_chunk_reply(r#"{"choices":[{"text":" a"}]}"#, Some(&mut r)).expect("json");
        assert_eq!((r.text.as_str(), r.ids), (" a", None));
    }

    #[test]
    fn a_token_id_turn_asks_for_the_reply_ids_unless_the_user_said_otherwise() {
        let text = "name: t\nserver: {model_path: /m}\nworkload: {concurrency: 1, requests: 1, input_tokens: 3, output_tokens: 7}\n";
        let spec = crate::plan::spec::parse(text, "t").expect("valid");
        let mut b = request_body(&spec.workload, "tiny", Prompt::TokenIds(vec![1]), 7);
        ask_reply_ids(&mut b);
        assert_eq!(b["return_token_ids"], true);
        let text = text.replace(
            "output_tokens: 7}",
            "output_tokens: 7, extra_body: {return_token_ids: false}}",
        );
        let spec = crate::plan::spec::parse(&text, "t").expect("valid");
        let mut b = request_body(&spec.workload, "tiny", Prompt::TokenIds(vec![1]), 7);
        ask_reply_ids(&mut b);
        assert_eq!(b["return_token_ids"], false);
    }

    #[test]
    fn tokenize_asks_for_the_prompt_as_the_request_sends_it() {
        let text = "name: t\nserver: {model_path: /m}\nworkload: {endpoint: chat, concurrency: 1, requests: 1, input_tokens: 3, output_tokens: 7, extra_body: {chat_template_kwargs: {enable_thinking: false}, top_p: 0.5}}\n";
        let spec = crate::plan::spec::parse(text, "t").expect("valid");
        let m = json!([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]);
        let b = tokenize_body(&spec.workload, "tiny", Prompt::Messages(m.clone()));
        let sent = request_body(&spec.workload, "tiny", Prompt::Messages(m), 7);
        assert_eq!(b["messages"], sent["messages"]);
        assert_eq!(b["model"], "tiny");
        assert_eq!(b["chat_template_kwargs"]["enable_thinking"], false);
        assert!(b.get("top_p").is_none() && b.get("add_generation_prompt").is_none());
        // SGLang's and vLLM's answer; anything else is no tokenization.
        assert_eq!(
            parse_tokenize(r#"{"tokens":[5,6,7],"count":3,"max_model_len":2048}"#),
            Some(vec![5, 6, 7])
        );
        assert_eq!(parse_tokenize(r#"{"tokens":[5,6],"count":3}"#), None);
        assert_eq!(parse_tokenize(r#"{"tokens":[[5,6]],"count":[2]}"#), None);
        assert_eq!(parse_tokenize(r#"{"detail":"Not Found"}"#), None);
        assert_eq!(parse_tokenize("Not Found"), None);
        assert_eq!(parse_tokenize(r#"{"tokens":[-1]}"#), None);
    }
}
