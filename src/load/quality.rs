//! The quality pass: the same greedy prompts sent to a configuration's server, outside any
//! measured window, with each output token's log-probability and top-k alternatives, kept in
//! `runs/<launch>/quality.jsonl` (one line per prompt and pass) for `tune::quality` to compare
//! with the baseline's at decision time.
//!
//! Requests go to `/v1/completions` (token-id prompts need it), non-streaming, temperature 0,
//! a fixed seed, `logprobs: k`; `batch` of them in flight at once. SGLang (0.5.23) answers
//! `choices[0].logprobs` as `{tokens, token_logprobs, top_logprobs: [{token: logprob}], ...}`.

use crate::load::prompts::token_ids;
use crate::plan::quality::{Quality, QualityPrompts};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;

/// The prompt stream of the built-in quality prompts (0 and 1 are the load's).
const QUALITY_STREAM: u64 = 7;

/// One quality prompt: its index in the set and what is sent as `prompt`.
#[derive(Debug, Clone, PartialEq)]
pub struct QualityPrompt {
    pub id: u64,
    /// A string, or a list of token ids.
    pub prompt: serde_json::Value,
    /// The expected answer (a prompt file's `"answer"`), for the accuracy check.
    pub answer: Option<String>,
}

/// One prompt's greedy output on one pass: a quality.jsonl line.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QualitySample {
    pub run_name: String,
    /// The launch folder's name (`<run>`, `<run>.r2`, ...).
    pub launch: String,
    /// 1-based; the baseline's launches make two passes.
    pub pass: u32,
    pub prompt_id: u64,
    #[serde(default)]
    pub prompt: serde_json::Value,
    /// The expected answer, when the prompt set has answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Output tokens as the server names them (`logprobs.tokens`).
    #[serde(default)]
    pub tokens: Vec<String>,
    /// Each output token's log-probability (None where the server gave none).
    #[serde(default)]
    pub logprobs: Vec<Option<f64>>,
    /// Each position's top-k alternatives with their log-probabilities, best first.
    #[serde(default)]
    pub top: Vec<Vec<(String, f64)>>,
    #[serde(default)]
    pub text: String,
    /// The whole pass's wall time in seconds (the same on each of its lines): its cost.
    #[serde(default)]
    pub pass_s: f64,
    /// Why this prompt has no output (an HTTP error, a reply without logprobs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The quality prompts: the built-in seeded token ids, or the first `count` lines of a file.
pub fn prompts(q: &Quality, vocab: u64) -> Result<Vec<QualityPrompt>, String> {
    match &q.prompts {
        QualityPrompts::Builtin => {
            if vocab == 0 {
                return Err(
                    "quality.prompts: builtin token-id prompts need workload.vocab_size (or the model's config.json)".into(),
                );
            }
            Ok((0..q.count)
                .map(|i| QualityPrompt {
                    id: i,
                    answer: None,
                    prompt: serde_json::json!(token_ids(
                        q.seed,
                        QUALITY_STREAM,
                        i,
                        q.input_tokens,
                        vocab
                    )),
                })
                .collect())
        }
        QualityPrompts::File(f) => file_prompts(Path::new(f), q.count),
    }
}

/// A JSONL of `{"prompt": "text"}` or `{"prompt": [token ids]}`, one per line; the first
/// `count` are used (fewer is an error: every configuration must answer the same set).
pub fn file_prompts(path: &Path, count: u64) -> Result<Vec<QualityPrompt>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("quality.prompts: cannot read {}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        if out.len() as u64 == count {
            break;
        }
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| {
            format!(
                "quality.prompts: {}:{}: not JSON ({e}); write one {{\"prompt\": ...}} per line",
                path.display(),
                i + 1
            )
        })?;
        let prompt = v.get("prompt").cloned().unwrap_or_default();
        let ok = prompt.is_string()
            || prompt
                .as_array()
                .is_some_and(|a| !a.is_empty() && a.iter().all(|t| t.as_u64().is_some()));
        if !ok {
            return Err(format!(
                "quality.prompts: {}:{}: needs \"prompt\": a string or a list of token ids",
                path.display(),
                i + 1
            ));
        }
        let answer = match v.get("answer") {
            None | Some(serde_json::Value::Null) => None,
            Some(serde_json::Value::String(a)) => Some(a.clone()),
            Some(other) => Some(other.to_string()),
        };
        out.push(QualityPrompt {
            id: out.len() as u64,
            prompt,
            answer,
        });
    }
    if (out.len() as u64) < count {
        return Err(format!(
            "quality.prompts: {} has {} prompts but quality.count is {count}: lower count or add prompts",
            path.display(),
            out.len()
        ));
    }
    Ok(out)
}

/// The request body of one quality prompt.
pub fn body(q: &Quality, model: &str, p: &QualityPrompt) -> serde_json::Value {
    serde_json::json!({
        "model": model,
        "prompt": p.prompt,
        "max_tokens": q.output_tokens,
        "temperature": 0,
        "seed": q.seed,
        "logprobs": q.top_logprobs,
        "stream": false,
    })
}

/// Read an OpenAI completions answer into a sample's output fields.
pub fn parse_reply(v: &serde_json::Value, s: &mut QualitySample) -> Result<(), String> {
    let choice = v
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or("the reply has no choices")?;
    s.text = choice
        .get("text")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
        .to_string();
    let lp = choice
        .get("logprobs")
        .filter(|l| !l.is_null())
        .ok_or("the reply has no logprobs (does the server support `logprobs`?)")?;
    let tokens = lp
        .get("tokens")
        .and_then(serde_json::Value::as_array)
        .ok_or("logprobs.tokens is missing")?;
    s.tokens = tokens
        .iter()
        .map(|t| {
            t.as_str()
                .map(String::from)
                .unwrap_or_else(|| t.to_string())
        })
        .collect();
    let empty = Vec::new();
    let lps = lp
        .get("token_logprobs")
        .and_then(serde_json::Value::as_array)
        .unwrap_or(&empty);
    s.logprobs = (0..s.tokens.len())
        .map(|i| lps.get(i).and_then(serde_json::Value::as_f64))
        .collect();
    let tops = lp
        .get("top_logprobs")
        .and_then(serde_json::Value::as_array)
        .unwrap_or(&empty);
    s.top = (0..s.tokens.len())
        .map(|i| {
            let mut alts: Vec<(String, f64)> = tops
                .get(i)
                .and_then(serde_json::Value::as_object)
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| v.as_f64().map(|x| (k.clone(), x)))
                        .collect()
                })
                .unwrap_or_default();
            alts.sort_by(|a, b| b.1.total_cmp(&a.1));
            alts
        })
        .collect();
    Ok(())
}

/// Send every prompt once (`batch` in flight) and return one sample per prompt, in prompt
/// order. A prompt that fails keeps its error in the sample; the pass itself never fails.
#[allow(clippy::too_many_arguments)]
pub async fn run_pass(
    base_url: &str,
    q: &Quality,
    model: &str,
    prompts: &[QualityPrompt],
    run_name: &str,
    launch: &str,
    pass: u32,
    timeout: Duration,
) -> Vec<QualitySample> {
    let client = match reqwest::Client::builder()
        .timeout(timeout)
        .no_proxy()
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            return prompts
                .iter()
                .map(|p| QualitySample {
                    run_name: run_name.into(),
                    launch: launch.into(),
                    pass,
                    prompt_id: p.id,
                    prompt: p.prompt.clone(),
                    answer: p.answer.clone(),
                    error: Some(format!("cannot build an HTTP client: {e}")),
                    ..Default::default()
                })
                .collect();
        }
    };
    let url = format!("{}/v1/completions", base_url.trim_end_matches('/'));
    let one = |p: &QualityPrompt| {
        let (client, url) = (client.clone(), url.clone());
        let body = body(q, model, p);
        let mut s = QualitySample {
            run_name: run_name.into(),
            launch: launch.into(),
            pass,
            prompt_id: p.id,
            prompt: p.prompt.clone(),
            answer: p.answer.clone(),
            ..Default::default()
        };
        async move {
            let res = async {
                let r = client
                    .post(&url)
                    .json(&body)
                    .send()
                    .await
                    .map_err(|e| e.to_string())?;
                let status = r.status();
                let v: serde_json::Value = r.json().await.map_err(|e| e.to_string())?;
                if !status.is_success() {
                    return Err(format!("HTTP {status}: {v}"));
                }
                parse_reply(&v, &mut s)
            }
            .await;
            if let Err(e) = res {
                s.error = Some(e);
            }
            s
        }
    };
    let mut out: Vec<QualitySample> = futures_util::stream::iter(prompts.iter().map(one))
        .buffer_unordered(q.batch.max(1) as usize)
        .collect()
        .await;
    out.sort_by_key(|s| s.prompt_id);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sglang_reply_is_read_with_its_top_k() {
        let v = serde_json::json!({"choices": [{"text": " a b", "logprobs": {
            "tokens": [" a", " b"], "token_logprobs": [-0.1, -0.7],
            "top_logprobs": [{" a": -0.1, " c": -2.5}, {" d": -0.69, " b": -0.7}]}}]});
        let mut s = QualitySample::default();
        parse_reply(&v, &mut s).expect("parses");
        assert_eq!(s.tokens, vec![" a", " b"]);
        assert_eq!(s.logprobs, vec![Some(-0.1), Some(-0.7)]);
        assert_eq!(s.top[1][0], (" d".to_string(), -0.69));
        let e = parse_reply(
            &serde_json::json!({"choices": [{"text": "x", "logprobs": null}]}),
            &mut s,
        )
        .expect_err("no logprobs");
        assert!(e.contains("logprobs"), "{e}");
    }

    #[test]
    fn builtin_prompts_are_seeded_and_in_the_vocabulary() {
        let q: Quality = serde_yaml::from_str("{count: 3, input_tokens: 5}").expect("q");
        let a = prompts(&q, 100).expect("a");
        assert_eq!(a, prompts(&q, 100).expect("b"));
        assert_eq!(a.len(), 3);
        assert!(
            a[0].prompt.as_array().is_some_and(
                |t| t.len() == 5 && t.iter().all(|x| x.as_u64().is_some_and(|x| x < 100))
            )
        );
        assert!(prompts(&q, 0).is_err());
    }

    #[test]
    fn a_prompt_file_needs_enough_prompts() {
        let dir = tempfile::tempdir().expect("dir");
        let p = dir.path().join("p.jsonl");
        std::fs::write(
            &p,
            "{\"prompt\": \"hi\", \"answer\": 42}\n\n{\"prompt\": [1, 2]}\n",
        )
        .expect("w");
        let two = file_prompts(&p, 2).expect("two");
        assert_eq!((two.len(), two[0].answer.as_deref()), (2, Some("42")));
        let e = file_prompts(&p, 3).expect_err("three");
        assert!(e.contains("has 2 prompts"), "{e}");
        std::fs::write(&p, "{\"text\": 1}\n").expect("w");
        let e = file_prompts(&p, 1).expect_err("bad");
        assert!(e.contains(":1:"), "{e}");
    }
}
