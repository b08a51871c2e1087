//! What the load generator records and says: a request's sample (its timings, tokens and
//! error), its phase and place in a session, the server it targets, the events a caller sees
//! as the load runs, and the outcome at its end.

use super::openai;
use serde::Serialize;
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Warmup,
    Measured,
}

/// Error classes, one list (requests.csv `error_kind`, summary counts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    Connect,
    Timeout,
    HttpStatus,
    StreamCut,
    MalformedSse,
    ServerError,
    /// Response bytes that were not an HTTP/1.x response.
    MalformedHttp,
    /// HTTP 200 but no generated content and no usage.
    Empty,
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 8] = [
        ErrorKind::Connect,
        ErrorKind::Timeout,
        ErrorKind::HttpStatus,
        ErrorKind::StreamCut,
        ErrorKind::MalformedSse,
        ErrorKind::ServerError,
        ErrorKind::MalformedHttp,
        ErrorKind::Empty,
    ];

    /// The kind named by `as_str` (requests.csv `error_kind` read back).
    pub fn parse(s: &str) -> Option<ErrorKind> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Connect => "connect",
            ErrorKind::Timeout => "timeout",
            ErrorKind::HttpStatus => "http_status",
            ErrorKind::StreamCut => "stream_cut",
            ErrorKind::MalformedSse => "malformed_sse",
            ErrorKind::ServerError => "server_error",
            ErrorKind::MalformedHttp => "malformed_http",
            ErrorKind::Empty => "empty",
        }
    }
}

/// One request as the client saw it. Times are milliseconds after the send of the attempt
/// that got the response (a request retried before any response byte is timed from its
/// retry), except `send_s` (seconds after the measured window's start, at the request's first
/// attempt: its place in the schedule; NaN for warmup).
#[derive(Debug, Clone, Serialize)]
pub struct RequestSample {
    pub phase: Phase,
    pub index: u64,
    pub worker: u64,
    pub send_s: f64,
    pub headers_ms: Option<f64>,
    /// First chunk with non-empty content (SGLang's TTFT convention).
    pub ttft_ms: Option<f64>,
    /// Last chunk with content (vLLM's E2E end point).
    pub last_content_ms: Option<f64>,
    /// First chunk with a non-empty `choices` list, content or not (vLLM's TTFT trigger; it
    /// differs from `ttft_ms` when the server sends a role-only first chunk, as chat does).
    pub first_choices_ms: Option<f64>,
    /// End of the stream (`[DONE]` or close): SGLang's E2E convention.
    pub end_ms: Option<f64>,
    /// Arrival of every chunk with content, ms after send (the instant the socket read that
    /// carried it returned).
    pub chunk_ms: Vec<f64>,
    /// Characters of content in each of those chunks (aligned with `chunk_ms`).
    pub chunk_chars: Vec<u32>,
    /// Per body read: how long the newest data of the read had waited in the socket (kernel
    /// receive timestamp to read), where the platform gives one.
    pub read_lag_ms: Vec<f64>,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub finish_reason: Option<String>,
    pub http_status: Option<u16>,
    pub retried: bool,
    pub error_kind: Option<ErrorKind>,
    pub error: Option<String>,
    /// Open loop: when the request was due, seconds after the measured window's start.
    pub scheduled_s: Option<f64>,
    /// Open loop: actual send minus scheduled send (ms); the client's own lateness.
    pub sched_lag_ms: Option<f64>,
    /// The output length asked of the server (`max_tokens`).
    pub max_tokens: u64,
    /// `sessions:`: which turn of which session this request was.
    pub turn: Option<SessionTurn>,
    /// Prompt tokens an earlier request already sent (a session's history, the shared system
    /// prompt, a `shared_prefix` group's prefix): what the prefix cache could serve. None: not
    /// known for this workload.
    pub reusable_tokens: Option<u64>,
    /// `sessions:`: the streamed reply (its text, and its token ids where the server sent
    /// them), kept to go back into the history (None: not collected, as for single requests).
    #[serde(skip)]
    pub reply: Option<openai::Reply>,
}

/// A request's place in its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SessionTurn {
    pub session: u64,
    /// 0-based.
    pub turn: u32,
    /// The session's last turn.
    pub last: bool,
}

impl RequestSample {
    pub fn ok(&self) -> bool {
        self.error_kind.is_none()
    }
    /// Output tokens: server `usage` when present, else content chunks (flagged by
    /// `usage_missing`).
    pub fn output_tokens(&self) -> u64 {
        self.completion_tokens.unwrap_or(self.chunk_ms.len() as u64)
    }
    pub fn usage_missing(&self) -> bool {
        self.completion_tokens.is_none()
    }
    /// Gaps between consecutive content chunks (pooled into ITL).
    pub fn itl_ms(&self) -> impl Iterator<Item = f64> + '_ {
        self.chunk_ms.windows(2).map(|w| w[1] - w[0])
    }
    /// Whether every given SLO is met (TPOT counts as 0 for a single-token output, as in
    /// vLLM's goodput).
    pub fn meets(&self, slo: &crate::plan::spec::Slo) -> bool {
        let ok = |limit: Option<f64>, v: Option<f64>| match limit {
            None => true,
            Some(l) => v.is_some_and(|v| v <= l),
        };
        let tpot = if self.output_tokens() > 1 {
            self.tpot_ms()
        } else {
            Some(0.0)
        };
        self.ok()
            && ok(slo.ttft_ms, self.ttft_ms)
            && ok(slo.tpot_ms, tpot)
            && ok(slo.e2e_ms, self.end_ms)
    }
    /// (E2E − TTFT) / (output tokens − 1), for requests with more than one token.
    pub fn tpot_ms(&self) -> Option<f64> {
        let out = self.output_tokens();
        match (self.end_ms, self.ttft_ms) {
            (Some(e), Some(t)) if out > 1 => Some((e - t) / (out - 1) as f64),
            _ => None,
        }
    }
}

/// Where and what to load.
#[derive(Debug, Clone)]
pub struct LoadTarget {
    pub base_url: String,
    pub model: String,
    pub vocab_size: u64,
    /// Prompts from `workload.dataset`, loaded once (None: synthetic prompts).
    pub dataset: Option<Arc<Vec<super::dataset::DatasetPrompt>>>,
}

/// What the driver reports while it runs.
pub enum LoadEvent<'a> {
    /// Warmup is over; the measured window starts now.
    MeasureStart,
    Sample(&'a RequestSample),
    /// The last measured request finished (or the load was stopped).
    MeasureEnd,
}

/// How a load ended. The samples themselves went to `on_event` as they finished (the driver
/// keeps none: memory stays flat with run length).
#[derive(Debug, Default)]
pub struct LoadOutcome {
    pub warmup_ok: u64,
    pub warmup_failed: u64,
    /// Requests abandoned at the deadline under `deadline: cut` (not failures).
    pub cut_off: u64,
    /// Synthetic sessions on completions: whether the server returned its replies' token ids,
    /// so the sessions went as token ids (false: as text). None: no such sessions.
    pub session_reply_ids: Option<bool>,
    /// Measured window: first send to last completion.
    pub duration_s: f64,
    /// The load was stopped before it finished (interrupt or server death).
    pub stopped: bool,
}
