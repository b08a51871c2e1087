//! `quality:` in a sweep file: the output-quality guard. Every configuration's server answers
//! the same greedy prompts once per launch (the baseline's twice, for the noise floor); at
//! decision time a configuration whose outputs derail decisively more often than the
//! baseline's own repeat, with the stated confidence, is not eligible (`tune::quality`).
//!
//! Values are checked here, inside deserialization, so every error carries file:line:column;
//! whether `baseline` names a configuration of the plan is checked once the plan is expanded.

use super::keyed::tag_key;
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

/// Where the quality prompts come from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum QualityPrompts {
    /// Seeded token-id prompts (SplitMix64, the workload's `vocab_size`): any model.
    Builtin,
    /// A JSONL file, one `{"prompt": "..."}` (text or a list of token ids) per line, with an
    /// optional `"answer"`: then each output's answer (`answer_regex`) is checked too.
    File(String),
}

/// `quality:` with its defaults filled in.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Quality {
    /// The configuration every other is compared with (None: `baseline` if the plan has a
    /// configuration of that name, else the plan's first).
    pub baseline: Option<String>,
    pub prompts: QualityPrompts,
    /// Prompts per pass (a file's first `count` lines).
    pub count: u64,
    /// Built-in prompts' length in tokens.
    pub input_tokens: u64,
    /// Greedy tokens generated per prompt.
    pub output_tokens: u64,
    /// Alternatives returned with each token's log-probability.
    pub top_logprobs: u64,
    /// Requests in flight during a pass: the same for every configuration and the baseline's
    /// repeat, because batching alone changes numerics.
    pub batch: u64,
    /// The seed of the built-in prompts and of every request.
    pub seed: u64,
    /// A divergence is a near tie (numerical noise) when each side's token is in the other's
    /// top-k and, on each side, the two tokens' log-probabilities differ by at most this (nats).
    pub near_tie_logprob_gap: f64,
    /// The decisive-divergence share a configuration may exceed the baseline's floor by.
    pub max_decisive_excess: f64,
    /// One-sided confidence that a failing configuration is worse than the floor.
    pub confidence: f64,
    /// How an answer is read from an output: the last match; its first group if it has one.
    /// Default (prompts with answers): the last number.
    pub answer_regex: Option<String>,
    /// Set by `reproduce --decision` (never in a file): the sweep being re-checked, whose
    /// baseline outputs the re-check's launches are compared with.
    #[serde(skip)]
    pub reference_dir: Option<String>,
}

impl Quality {
    /// Model tokens one pass costs: prompts × output tokens (the prompts' prefill aside).
    pub fn tokens_per_pass(&self) -> u64 {
        self.count * self.output_tokens
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawQuality {
    #[serde(default)]
    baseline: Option<String>,
    #[serde(default)]
    prompts: Option<serde_yaml::Value>,
    #[serde(default)]
    count: Option<u64>,
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    top_logprobs: Option<u64>,
    #[serde(default)]
    batch: Option<u64>,
    #[serde(default)]
    seed: Option<u64>,
    #[serde(default)]
    near_tie_logprob_gap: Option<f64>,
    #[serde(default)]
    max_decisive_excess: Option<f64>,
    #[serde(default)]
    confidence: Option<f64>,
    #[serde(default)]
    answer_regex: Option<String>,
}

/// An error placed on `quality.<key>`'s line (serde_yaml places it at the enclosing mapping,
/// the document's top level).
fn bad<E: de::Error>(key: &str, msg: &str) -> E {
    E::custom(tag_key(&format!("quality.{key}"), msg))
}

fn at_least<E: de::Error>(key: &str, v: Option<u64>, default: u64, min: u64) -> Result<u64, E> {
    let n = v.unwrap_or(default);
    if n < min {
        return Err(bad(
            key,
            &format!("quality.{key} must be a whole number ≥ {min}, got {n}"),
        ));
    }
    Ok(n)
}

impl<'de> Deserialize<'de> for Quality {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let r = RawQuality::deserialize(d)?;
        let prompts = match &r.prompts {
            None => QualityPrompts::Builtin,
            Some(serde_yaml::Value::String(s)) if s == "builtin" => QualityPrompts::Builtin,
            Some(serde_yaml::Value::Mapping(m)) if m.len() == 1 => {
                match m.get("file").and_then(serde_yaml::Value::as_str) {
                    Some(f) if !f.trim().is_empty() => QualityPrompts::File(f.to_string()),
                    _ => {
                        return Err(bad(
                            "prompts",
                            "quality.prompts: write `builtin` or `{file: prompts.jsonl}` (one {\"prompt\": ...} per line)",
                        ));
                    }
                }
            }
            Some(_) => {
                return Err(bad(
                    "prompts",
                    "quality.prompts: write `builtin` or `{file: prompts.jsonl}` (one {\"prompt\": ...} per line)",
                ));
            }
        };
        if let Some(b) = &r.baseline {
            if b.trim().is_empty() {
                return Err(bad(
                    "baseline",
                    "quality.baseline must name a configuration, e.g. `baseline`",
                ));
            }
        }
        let count = at_least("count", r.count, 64, 2)?;
        let input_tokens = at_least("input_tokens", r.input_tokens, 32, 1)?;
        let output_tokens = at_least("output_tokens", r.output_tokens, 32, 1)?;
        let top_logprobs = at_least("top_logprobs", r.top_logprobs, 5, 2)?;
        if top_logprobs > 20 {
            return Err(bad(
                "top_logprobs",
                &format!(
                    "quality.top_logprobs must be at most 20 (the OpenAI API's limit), got {top_logprobs}"
                ),
            ));
        }
        let batch = at_least("batch", r.batch, 8, 1)?;
        let gap = r.near_tie_logprob_gap.unwrap_or(0.5);
        if !(gap.is_finite() && gap > 0.0) {
            return Err(bad(
                "near_tie_logprob_gap",
                &format!(
                    "quality.near_tie_logprob_gap must be a number of nats > 0, e.g. 0.5; got {gap}"
                ),
            ));
        }
        let excess = r.max_decisive_excess.unwrap_or(0.0);
        if !(excess.is_finite() && (0.0..1.0).contains(&excess)) {
            return Err(bad(
                "max_decisive_excess",
                &format!(
                    "quality.max_decisive_excess must be a share in [0, 1), e.g. 0.02 for 2 points above the floor; got {excess}"
                ),
            ));
        }
        let confidence = r.confidence.unwrap_or(0.95);
        if !(0.5..1.0).contains(&confidence) {
            return Err(bad(
                "confidence",
                &format!("quality.confidence must be in [0.5, 1), e.g. 0.95; got {confidence}"),
            ));
        }
        if let Some(re) = &r.answer_regex {
            if let Err(e) = regex::Regex::new(re) {
                return Err(bad(
                    "answer_regex",
                    &format!("quality.answer_regex is not a regular expression: {e}"),
                ));
            }
        }
        Ok(Quality {
            answer_regex: r.answer_regex,
            baseline: r.baseline,
            prompts,
            count,
            input_tokens,
            output_tokens,
            top_logprobs,
            batch,
            seed: r.seed.unwrap_or(1),
            near_tie_logprob_gap: gap,
            max_decisive_excess: excess,
            confidence,
            reference_dir: None,
        })
    }
}

/// The answer pattern when `answer_regex` is not given: the last number in the output.
pub const DEFAULT_ANSWER_REGEX: &str = r"(-?[0-9]+(?:\.[0-9]+)?)";

/// The baseline's name among the plan's configuration names: the one given, else `baseline`
/// if there is one, else the first. Err: the given name is not in the plan.
pub fn baseline_name<'a>(q: &'a Quality, names: &'a [String]) -> Result<&'a str, String> {
    match &q.baseline {
        Some(b) => names
            .iter()
            .find(|n| *n == b)
            .map(String::as_str)
            .ok_or_else(|| {
                format!(
                    "quality.baseline `{b}` is not a configuration of this plan (its configurations: {})",
                    names.join(", ")
                )
            }),
        None => names
            .iter()
            .find(|n| *n == "baseline")
            .or_else(|| names.first())
            .map(String::as_str)
            .ok_or_else(|| "quality: the plan has no configuration to be the baseline".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(y: &str) -> Result<Quality, String> {
        serde_yaml::from_str::<Quality>(y).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_and_prompt_sources() {
        let q = parse("{}").expect("defaults");
        assert_eq!(q.prompts, QualityPrompts::Builtin);
        assert_eq!(
            (q.count, q.output_tokens, q.top_logprobs, q.batch),
            (64, 32, 5, 8)
        );
        assert_eq!(q.tokens_per_pass(), 64 * 32);
        let q = parse("{prompts: {file: p.jsonl}, baseline: base}").expect("file");
        assert_eq!(q.prompts, QualityPrompts::File("p.jsonl".into()));
        assert_eq!(q.baseline.as_deref(), Some("base"));
    }

    #[test]
    fn bad_values_name_the_key_and_the_fix() {
        for (y, want) in [
            ("{count: 1}", "quality.count"),
            ("{top_logprobs: 50}", "at most 20"),
            ("{confidence: 1.0}", "quality.confidence"),
            ("{max_decisive_excess: -0.1}", "max_decisive_excess"),
            ("{near_tie_logprob_gap: 0}", "near_tie_logprob_gap"),
            ("{prompts: wiki}", "builtin"),
            ("{batch: 0}", "quality.batch"),
            ("{answer_regex: \"(\"}", "not a regular expression"),
            ("{nonsense: 1}", "unknown field"),
        ] {
            let e = parse(y).expect_err(y);
            assert!(e.contains(want), "{y}: {e}");
        }
    }

    #[test]
    fn the_baseline_defaults_to_one_named_baseline_else_the_first() {
        let names: Vec<String> = ["a", "baseline", "c"].map(String::from).to_vec();
        let q = parse("{}").expect("q");
        assert_eq!(baseline_name(&q, &names), Ok("baseline"));
        assert_eq!(baseline_name(&q, &names[2..]), Ok("c"));
        let q = parse("{baseline: zz}").expect("q");
        let e = baseline_name(&q, &names).expect_err("unknown");
        assert!(e.contains("`zz`") && e.contains("a, baseline, c"), "{e}");
    }
}
