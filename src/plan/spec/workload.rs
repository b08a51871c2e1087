//! `workload:`: what load is sent (endpoint, lengths, prompts, load points, SLOs) and how
//! long, checked as a whole once read (`TryFrom<RawWorkload>`).

use super::endpoint::Endpoint;
use super::env::Expanded;
use super::lengths::{LengthDist, LengthSpec};
use super::load_points::{LoadPoint, LoadPoints, Rates, default_concurrency};
use super::scalars::{Positive, PositiveF64};
use super::sessions::{RawSessions, SessionsSpec, TraceContext};
use serde::{Deserialize, Serialize};

fn default_warmup() -> u64 {
    2
}
fn default_seed() -> u64 {
    1
}
fn default_true() -> bool {
    true
}
fn default_request_timeout() -> f64 {
    600.0
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, try_from = "RawWorkload")]
pub struct WorkloadSpec {
    pub endpoint: Endpoint,
    /// The concurrency of one load (the first load point until the runner picks one).
    pub concurrency: u64,
    /// Every load point to measure on one server launch: `concurrency: [16, 64, 150]` (closed
    /// loop), or `request_rate: [2, 4, 8]` (open loop, each capped at `concurrency`).
    pub load_points: Vec<LoadPoint>,
    /// Measured requests (after warmup); exclusive with `duration_s`.
    pub requests: Option<u64>,
    /// Measured duration; requests in flight at the deadline are waited for.
    pub duration_s: Option<f64>,
    pub warmup_requests: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub seed: u64,
    /// Token-id range for prompts; default: `vocab_size` of the model's config.json.
    pub vocab_size: Option<u64>,
    /// Model name sent in requests; default: `served_model_name` flag, else the model path.
    pub model: Option<String>,
    pub ignore_eos: bool,
    pub temperature: f64,
    pub request_timeout_s: f64,
    /// Service-level objectives for goodput (a request is good when it meets all given).
    pub slo: Option<Slo>,
    /// Per-request input length distribution (None: every prompt is `input_tokens` long).
    pub input_dist: Option<LengthDist>,
    /// Per-request output length distribution (None: every request asks `output_tokens`).
    pub output_dist: Option<LengthDist>,
    /// Open loop: arrivals per second (gamma-distributed gaps, Poisson when burstiness is 1);
    /// `concurrency` then caps the requests in flight. None: closed loop. (The first load
    /// point's until the runner picks one.)
    pub request_rate: Option<f64>,
    /// Gamma shape of the inter-arrival gaps (1 = Poisson, < 1 burstier, > 1 smoother).
    pub burstiness: f64,
    /// With `duration_s`: what happens to requests still in flight at the deadline.
    pub deadline: DeadlinePolicy,
    /// Extra fields merged into every request body (e.g. `top_p`, `min_tokens`).
    pub extra_body: Option<serde_json::Map<String, serde_json::Value>>,
    /// Prefix-cache experiments: request i starts with group (i mod groups)'s prefix.
    pub shared_prefix: Option<SharedPrefix>,
    /// Prompts from a file (ShareGPT JSON, or JSONL with `prompt` or `messages`), used in
    /// order and cycled; `input_tokens` is then not needed.
    pub dataset: Option<String>,
    /// Multi-turn conversations (`sessions:`): each client sends a session's turns in order,
    /// each prompt the whole history plus the new user message.
    pub sessions: Option<SessionsSpec>,
}

/// G groups of prompts, each group sharing a prefix of K tokens (then each prompt's own
/// `input_tokens`). Or `working_set: W` instead of `groups`: G is then sized after launch so
/// that G × K = W × the KV capacity the server reports (`max_total_num_tokens`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SharedPrefix {
    /// 0 until sized, when `working_set` is given.
    #[serde(default)]
    pub groups: u64,
    pub prefix_tokens: u64,
    /// The distinct prefixes' tokens as a multiple of the KV capacity.
    #[serde(default)]
    pub working_set: Option<f64>,
}

impl SharedPrefix {
    /// The groups for a working set of `working_set` × `capacity` tokens (at least 1).
    pub fn groups_for(&self, working_set: f64, capacity: u64) -> u64 {
        ((working_set * capacity as f64) / self.prefix_tokens.max(1) as f64)
            .ceil()
            .max(1.0) as u64
    }
}

/// Requests in flight when `duration_s` runs out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeadlinePolicy {
    /// Wait for them; the window ends at the last completion.
    #[default]
    Wait,
    /// Abandon them at the deadline: counted as `cut_off`, not as failures, and left out of
    /// every latency; the window ends at the deadline.
    Cut,
}

/// Goodput SLOs in milliseconds (TTFT and E2E in SGLang's convention).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Slo {
    #[serde(default)]
    pub ttft_ms: Option<f64>,
    #[serde(default)]
    pub tpot_ms: Option<f64>,
    #[serde(default)]
    pub e2e_ms: Option<f64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkload {
    #[serde(default = "default_endpoint")]
    endpoint: Endpoint,
    #[serde(default = "default_concurrency")]
    concurrency: LoadPoints,
    #[serde(default)]
    requests: Option<Positive>,
    #[serde(default)]
    duration_s: Option<PositiveF64>,
    #[serde(default = "default_warmup")]
    warmup_requests: u64,
    #[serde(default)]
    input_tokens: Option<LengthSpec>,
    #[serde(default)]
    output_tokens: Option<LengthSpec>,
    #[serde(default)]
    sessions: Option<RawSessions>,
    #[serde(default)]
    shared_prefix: Option<SharedPrefix>,
    #[serde(default)]
    dataset: Option<Expanded>,
    #[serde(default = "default_seed")]
    seed: u64,
    #[serde(default)]
    vocab_size: Option<Positive>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default = "default_true")]
    ignore_eos: bool,
    #[serde(default)]
    temperature: f64,
    #[serde(default = "default_request_timeout")]
    request_timeout_s: f64,
    #[serde(default)]
    slo: Option<Slo>,
    #[serde(default)]
    request_rate: Option<Rates>,
    #[serde(default = "default_burstiness")]
    burstiness: f64,
    #[serde(default)]
    deadline: DeadlinePolicy,
    #[serde(default)]
    extra_body: Option<serde_json::Map<String, serde_json::Value>>,
}

fn default_burstiness() -> f64 {
    1.0
}

fn default_endpoint() -> Endpoint {
    Endpoint::Completions
}

impl TryFrom<RawWorkload> for WorkloadSpec {
    type Error = String;
    fn try_from(r: RawWorkload) -> Result<Self, String> {
        let (requests, duration_s) = match (r.requests, r.duration_s) {
            (Some(_), Some(_)) => {
                return Err(
                    "workload: give either `requests` or `duration_s`, not both".to_string()
                );
            }
            (None, None) => {
                return Err(
                    "workload: missing `requests` (a count) or `duration_s` (seconds): give one"
                        .to_string(),
                );
            }
            (rq, d) => (rq.map(|p| p.0), d.map(|p| p.0)),
        };
        if r.request_timeout_s.is_nan() || r.request_timeout_s <= 0.0 {
            return Err("workload: `request_timeout_s` must be > 0".to_string());
        }
        if let Some(slo) = &r.slo {
            let all = [slo.ttft_ms, slo.tpot_ms, slo.e2e_ms];
            if all.iter().all(Option::is_none) {
                return Err("workload.slo: give at least one of ttft_ms, tpot_ms, e2e_ms".into());
            }
            if all.iter().flatten().any(|v| !v.is_finite() || *v <= 0.0) {
                return Err(
                    "workload.slo: every limit must be a number of milliseconds > 0".into(),
                );
            }
        }
        if !(0.0..=2.0).contains(&r.temperature) {
            return Err("workload: `temperature` must be in [0, 2]".to_string());
        }
        if !(r.burstiness.is_finite() && r.burstiness > 0.0) {
            return Err("workload: `burstiness` must be > 0 (1 = Poisson)".to_string());
        }
        let had_input = r.input_tokens.is_some();
        let (input_tokens, input_dist) = match (r.input_tokens, &r.dataset) {
            (Some(l), _) => l.resolve("input_tokens")?,
            // Prompts from a file have their own lengths.
            (None, Some(_)) => (1, None),
            // A session's user messages have theirs (`sessions.user_tokens`).
            (None, None) if r.sessions.is_some() => (1, None),
            (None, None) => {
                return Err(
                    "workload: missing `input_tokens` (or give `dataset:` prompts)".to_string(),
                );
            }
        };
        if let Some(sp) = &r.shared_prefix {
            match (sp.groups, sp.working_set) {
                (0, None) => {
                    return Err("workload.shared_prefix: give `groups` (>= 1), or `working_set` (a multiple of the KV capacity, e.g. 1.5)".into());
                }
                (g, Some(_)) if g > 0 => {
                    return Err(
                        "workload.shared_prefix: give `groups` or `working_set`, not both".into(),
                    );
                }
                (_, Some(w)) if !(w.is_finite() && w > 0.0) => {
                    return Err(format!(
                        "workload.shared_prefix.working_set must be a multiple of the KV capacity > 0, e.g. 1.5; got {w}"
                    ));
                }
                _ => {}
            }
            if sp.prefix_tokens == 0 {
                return Err("workload.shared_prefix: `prefix_tokens` must be >= 1".into());
            }
            if r.dataset.is_some() {
                return Err("workload: `shared_prefix` and `dataset` cannot be combined".into());
            }
        }
        let mut sessions_raw = r.sessions;
        let reply = sessions_raw.as_mut().and_then(|s| s.reply_tokens.take());
        let has_output = reply.is_some() || r.output_tokens.is_some();
        let mooncake = sessions_raw.as_ref().is_some_and(RawSessions::is_mooncake);
        let (output_tokens, output_dist) = match (reply, r.output_tokens) {
            (Some(_), Some(_)) => {
                return Err("workload: give `sessions.reply_tokens` or `output_tokens`, not both (they are the same length)".into());
            }
            (Some(l), None) => l.resolve("sessions.reply_tokens")?,
            (None, Some(l)) => l.resolve("output_tokens")?,
            // Each mooncake record has its own output length; 1 only stands in where a nominal
            // length is printed (giving one is refused with the block, below).
            (None, None) if mooncake => (1, None),
            (None, None) => {
                let what = if sessions_raw.is_some() {
                    "`sessions.reply_tokens`"
                } else {
                    "`output_tokens`"
                };
                return Err(format!("workload: missing {what} (the reply's length)"));
            }
        };
        // Errors about the block are placed on its `sessions:` line.
        let at_sessions = |m: &str| crate::plan::keyed::tag_key("workload.sessions", m);
        let sessions = match sessions_raw {
            None => None,
            Some(raw) => {
                if r.shared_prefix.is_some() {
                    return Err(at_sessions(
                        "workload: `sessions` and `shared_prefix` cannot be combined (a session's history is its shared prefix; use `sessions.system_tokens` for a prefix every session shares)",
                    ));
                }
                if had_input {
                    return Err(at_sessions(if raw.from_trace.is_some() {
                        "workload.sessions: a trace's prompts are its own: drop `input_tokens`"
                    } else {
                        "workload.sessions: the user messages' length is `sessions.user_tokens`: drop `input_tokens`"
                    }));
                }
                let cx = TraceContext {
                    has_dataset: r.dataset.is_some(),
                    endpoint: r.endpoint,
                    has_rate: r.request_rate.is_some(),
                    has_output,
                };
                Some(raw.resolve(cx).map_err(|e| at_sessions(&e))?)
            }
        };
        let rates = r.request_rate.map(|r| r.0).unwrap_or_default();
        let load_points: Vec<LoadPoint> = match (r.concurrency.0.as_slice(), rates.as_slice()) {
            (cs, rs) if cs.len() > 1 && rs.len() > 1 => {
                return Err(
                    "workload: give a list for `concurrency` or for `request_rate`, \
                     not both (a rate sweep keeps one concurrency cap)"
                        .into(),
                );
            }
            (cs, []) => cs
                .iter()
                .map(|&c| LoadPoint {
                    concurrency: c,
                    request_rate: None,
                })
                .collect(),
            ([c], rs) => rs
                .iter()
                .map(|&rate| LoadPoint {
                    concurrency: *c,
                    request_rate: Some(rate),
                })
                .collect(),
            (cs, [rate]) => cs
                .iter()
                .map(|&c| LoadPoint {
                    concurrency: c,
                    request_rate: Some(*rate),
                })
                .collect(),
            _ => return Err("workload: give at least one load point".into()),
        };
        // A session's nominal user message stands for a prompt length the server did not
        // report (the client summary's fallback).
        let input_tokens = match sessions.as_ref().map(|s| &s.source) {
            Some(super::sessions::SessionSource::Synthetic { user_tokens, .. }) => *user_tokens,
            _ => input_tokens,
        };
        Ok(WorkloadSpec {
            endpoint: r.endpoint,
            concurrency: load_points.first().map_or(1, |p| p.concurrency),
            request_rate: load_points.first().and_then(|p| p.request_rate),
            load_points,
            requests,
            duration_s,
            warmup_requests: r.warmup_requests,
            input_tokens,
            output_tokens,
            seed: r.seed,
            vocab_size: r.vocab_size.map(|p| p.0),
            model: r.model,
            ignore_eos: r.ignore_eos,
            temperature: r.temperature,
            request_timeout_s: r.request_timeout_s,
            slo: r.slo,
            input_dist,
            output_dist,
            burstiness: r.burstiness,
            deadline: r.deadline,
            extra_body: r.extra_body,
            shared_prefix: r.shared_prefix,
            dataset: r.dataset.map(|e| e.0),
            sessions,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::plan::spec::fixtures::{GOOD, err_of};
    use crate::plan::spec::parse;

    #[test]
    fn dataset_replaces_input_tokens_and_shared_prefix_is_checked() {
        let text = GOOD.replace("  input_tokens: 2000\n", "  dataset: prompts.jsonl\n");
        let s = parse(&text, "s.yaml").expect("parses");
        assert_eq!(s.workload.dataset.as_deref(), Some("prompts.jsonl"));
        let e = err_of(&GOOD.replace("  input_tokens: 2000\n", ""));
        assert!(e.message.contains("input_tokens"), "{e}");
        let sp = GOOD.replace(
            "  seed: 1",
            "  seed: 1\n  shared_prefix: {groups: 4, prefix_tokens: 512}",
        );
        let s = parse(&sp, "s.yaml").expect("parses");
        assert_eq!(
            s.workload
                .shared_prefix
                .map(|p| (p.groups, p.prefix_tokens)),
            Some((4, 512))
        );
        let e = err_of(&GOOD.replace(
            "  seed: 1",
            "  seed: 1\n  shared_prefix: {groups: 0, prefix_tokens: 512}",
        ));
        assert!(e.message.contains("shared_prefix"), "{e}");
    }

    #[test]
    fn sessions_are_checked_against_the_rest_of_the_workload() {
        let with =
            |block: &str| GOOD.replace("  input_tokens: 2000\n  output_tokens: 2000\n", block);
        let s = parse(
            &with("  sessions: {turns: 3, user_tokens: 50, reply_tokens: 20, think_time_s: 1.5}\n"),
            "s.yaml",
        )
        .expect("parses");
        let ss = s.workload.sessions.expect("sessions");
        assert_eq!(ss.think_time_s, 1.5);
        assert_eq!(
            (s.workload.output_tokens, s.workload.input_tokens),
            (20, 50)
        );
        for (block, want) in [
            (
                "  output_tokens: 9\n  sessions: {turns: 3, user_tokens: 5, reply_tokens: 2}\n",
                "not both",
            ),
            (
                "  sessions: {turns: 3, user_tokens: 5}\n",
                "missing `sessions.reply_tokens`",
            ),
            (
                "  sessions: {user_tokens: 5, reply_tokens: 2}\n",
                "missing `turns`",
            ),
            (
                "  output_tokens: 9\n  sessions: {from_dataset: true}\n",
                "give `dataset:`",
            ),
            (
                "  output_tokens: 9\n  dataset: d.jsonl\n  sessions: {turns: 2, user_tokens: 5}\n",
                "add `from_dataset: true`",
            ),
            (
                "  output_tokens: 9\n  shared_prefix: {groups: 2, prefix_tokens: 8}\n  sessions: {turns: 2, user_tokens: 5}\n",
                "cannot be combined",
            ),
            (
                "  input_tokens: 9\n  sessions: {turns: 2, user_tokens: 5, reply_tokens: 2}\n",
                "drop `input_tokens`",
            ),
            (
                "  sessions: {turns: 2, user_tokens: 5, reply_tokens: 2, think_time_s: -1}\n",
                "think_time_s",
            ),
        ] {
            let e = err_of(&with(block));
            assert!(e.message.contains(want), "{block}: {e}");
        }
        // Open loop: sessions arrive at the rate.
        let s = parse(
            &with("  request_rate: 2\n  sessions: {turns: 2, user_tokens: 5, reply_tokens: 2}\n"),
            "s.yaml",
        )
        .expect("open loop with sessions");
        assert_eq!(s.workload.request_rate, Some(2.0));
    }

    #[test]
    fn trace_sources_are_checked_against_the_endpoint_and_the_rest() {
        use crate::plan::spec::SessionSource;
        // Each case names its endpoint.
        let with = |block: &str| {
            GOOD.replace("  endpoint: completions\n", "")
                .replace("  input_tokens: 2000\n  output_tokens: 2000\n", block)
        };
        let s = parse(
            &with("  endpoint: completions\n  sessions: {from_trace: m.jsonl, format: mooncake, slowdown: 2}\n"),
            "s.yaml",
        )
        .expect("mooncake parses");
        assert_eq!(
            s.workload.sessions.map(|x| x.source),
            Some(SessionSource::Mooncake {
                path: "m.jsonl".into(),
                block_tokens: 512,
                slowdown: 2.0
            })
        );
        let s = parse(
            &with("  endpoint: chat\n  output_tokens: 64\n  sessions: {from_trace: a.json, format: agentic}\n"),
            "s.yaml",
        )
        .expect("agentic parses");
        assert_eq!(
            s.workload.sessions.map(|x| x.source),
            Some(SessionSource::Agentic {
                path: "a.json".into()
            })
        );
        for (block, want) in [
            (
                "  endpoint: chat\n  output_tokens: 9\n  sessions: {from_trace: a.json}\n",
                "needs `format: agentic`",
            ),
            (
                "  endpoint: completions\n  output_tokens: 9\n  sessions: {from_trace: a.json, format: agentic}\n",
                "set `endpoint: chat`",
            ),
            (
                "  endpoint: chat\n  sessions: {from_trace: m.jsonl, format: mooncake}\n",
                "set `endpoint: completions`",
            ),
            (
                "  endpoint: completions\n  request_rate: 2\n  sessions: {from_trace: m.jsonl, format: mooncake}\n",
                "drop `request_rate`",
            ),
            (
                "  endpoint: completions\n  output_tokens: 9\n  sessions: {from_trace: m.jsonl, format: mooncake}\n",
                "gives its own `output_length`",
            ),
            (
                "  endpoint: completions\n  sessions: {from_trace: m.jsonl, format: mooncake, block_tokens: 0}\n",
                "block_tokens must be >= 1",
            ),
            (
                "  endpoint: completions\n  sessions: {from_trace: m.jsonl, format: mooncake, slowdown: 0}\n",
                "slowdown must be a number > 0",
            ),
            (
                "  endpoint: chat\n  output_tokens: 9\n  sessions: {from_trace: a.json, format: csv}\n",
                "unknown trace format `csv`",
            ),
            (
                "  endpoint: chat\n  output_tokens: 9\n  sessions: {turns: 2, user_tokens: 5, format: agentic}\n",
                "add `from_trace: FILE`",
            ),
            (
                "  endpoint: chat\n  input_tokens: 9\n  output_tokens: 9\n  sessions: {from_trace: a.json, format: agentic}\n",
                "a trace's prompts are its own: drop `input_tokens`",
            ),
            (
                "  endpoint: chat\n  output_tokens: 9\n  sessions: {from_trace: a.json, format: agentic, turns: 2}\n",
                "drop `turns`",
            ),
        ] {
            let e = err_of(&with(block));
            assert!(e.message.contains(want), "{block}: {e}");
        }
    }
}
