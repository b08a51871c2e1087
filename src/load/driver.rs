//! Closed-loop load at fixed concurrency: N workers, each sends its next request when its
//! previous one ends. Warmup requests go first (recorded, excluded from the summary); the
//! measured window starts just before the first measured send and ends at the last
//! completion.

use super::http1;
use super::openai::{self, Prompt};
use super::prompts;
use super::sessions;
use crate::plan::spec::{Endpoint, WorkloadSpec};
use serde::Serialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

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

/// Build the streaming client for `base_url`: one HTTP/1.1 connection per in-flight stream, no
/// Nagle delay, idle connections dropped before uvicorn's 5 s keep-alive limit closes them
/// under us.
pub fn http_client(base_url: &str) -> Result<Arc<http1::Client>, String> {
    http1::Client::new(base_url, Duration::from_secs(4)).map(Arc::new)
}

fn stream_of(phase: Phase) -> u64 {
    match phase {
        Phase::Measured => 0,
        Phase::Warmup => 1,
    }
}

/// `sessions: {from_trace: F, format: mooncake}`: its block size and slowdown.
fn mooncake(w: &WorkloadSpec) -> Option<(u64, f64)> {
    match w.sessions.as_ref().map(|s| &s.source) {
        Some(crate::plan::spec::SessionSource::Mooncake {
            block_tokens,
            slowdown,
            ..
        }) => Some((*block_tokens, *slowdown)),
        _ => None,
    }
}

/// Request `index`'s prompt and output length (seeded per request: the same whichever worker
/// sends it, open or closed loop).
/// The third value is the prompt's reusable tokens where the workload knows them: a
/// `shared_prefix` group's prefix for every request after the group's first (None otherwise).
fn request_for(
    w: &WorkloadSpec,
    target: &LoadTarget,
    phase: Phase,
    index: u64,
) -> (Prompt, u64, Option<u64>) {
    let stream = stream_of(phase);
    let input = prompts::length(
        w.input_dist.as_ref(),
        w.input_tokens,
        w.seed,
        10 + stream,
        index,
    );
    let output = prompts::length(
        w.output_dist.as_ref(),
        w.output_tokens,
        w.seed,
        20 + stream,
        index,
    );
    if let Some(d) = target.dataset.as_ref().filter(|d| !d.is_empty()) {
        let p = &d[(index as usize) % d.len()];
        if let (super::dataset::DatasetPrompt::Record(r), Some(block)) =
            (p, mooncake(w).map(|m| m.0))
        {
            // A mooncake record: its hash blocks as token ids, its own output length, and the
            // tokens an earlier record already sent (exact: counted when the trace was read).
            let ids =
                super::trace::mooncake_prompt(r, w.seed, stream, block, index, target.vocab_size);
            return (Prompt::TokenIds(ids), r.output, Some(r.reusable));
        }
        return (p.to_prompt(w.endpoint), output, None);
    }
    let prefix = w.shared_prefix.as_ref();
    // groups is ≥ 1 once a working set is sized; max(1) keeps an unsized one from dividing by 0.
    let group = prefix.map(|sp| index % sp.groups.max(1));
    // The group's first request sends its prefix; every later one can find it cached. The
    // warm-up requests (0.., the same groups, after the same flush) come first: a measured
    // request of a group a warm-up already sent finds it too.
    let reusable = prefix.map(|sp| {
        let warmed = phase == Phase::Measured && index < w.warmup_requests;
        if index >= sp.groups.max(1) || warmed {
            sp.prefix_tokens
        } else {
            0
        }
    });
    let prompt = match w.endpoint {
        Endpoint::Completions => {
            let mut ids = match (prefix, group) {
                (Some(sp), Some(g)) => {
                    prompts::token_ids(w.seed, 30, g, sp.prefix_tokens, target.vocab_size)
                }
                _ => Vec::new(),
            };
            ids.extend(prompts::token_ids(
                w.seed,
                stream,
                index,
                input,
                target.vocab_size,
            ));
            Prompt::TokenIds(ids)
        }
        Endpoint::Chat => {
            let mut text = match (prefix, group) {
                (Some(sp), Some(g)) => prompts::text(w.seed, 30, g, sp.prefix_tokens) + " ",
                _ => String::new(),
            };
            text.push_str(&prompts::text(w.seed, stream, index, input));
            Prompt::Text(text)
        }
    };
    (prompt, output, reusable)
}

fn blank_sample(
    phase: Phase,
    index: u64,
    worker: u64,
    send_s: f64,
    max_tokens: u64,
) -> RequestSample {
    RequestSample {
        phase,
        index,
        worker,
        send_s,
        headers_ms: None,
        ttft_ms: None,
        last_content_ms: None,
        first_choices_ms: None,
        end_ms: None,
        chunk_ms: Vec::new(),
        chunk_chars: Vec::new(),
        read_lag_ms: Vec::new(),
        prompt_tokens: None,
        completion_tokens: None,
        finish_reason: None,
        http_status: None,
        retried: false,
        error_kind: None,
        error: None,
        scheduled_s: None,
        sched_lag_ms: None,
        max_tokens,
        turn: None,
        reusable_tokens: None,
        reply: None,
    }
}

fn offset_s(now: Instant, window_start: Instant) -> f64 {
    if now >= window_start {
        (now - window_start).as_secs_f64()
    } else {
        -(window_start - now).as_secs_f64()
    }
}

fn ms_since(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64() * 1000.0
}

/// Send one streaming request and record what happened.
async fn one_request(
    client: &http1::Client,
    path: &str,
    body: &[u8],
    timeout: Duration,
    mut sample: RequestSample,
) -> RequestSample {
    let fail = |mut s: RequestSample, kind: ErrorKind, msg: String| {
        s.error_kind = Some(kind);
        s.error = Some(msg);
        s
    };
    let first = Instant::now();
    // The timeout bounds the whole request, a retry included.
    let deadline = first + timeout;
    let mut attempt = http1::Attempt {
        started: first,
        retried: false,
    };
    // A connection that dies before any response byte (e.g. a pooled keep-alive connection
    // the server just closed) is retried once on a fresh connection.
    let sent =
        tokio::time::timeout_at(deadline.into(), client.send(path, body, &mut attempt)).await;
    // Every time below (headers, TTFT, chunks, E2E) is measured from the start of the attempt
    // that got the response, not from the first attempt. A failed attempt ended before any
    // response byte (typically a kept-alive connection the server closed under it), so no
    // part of the answer was produced in it: its time is the client's connection trouble, not
    // the server's latency, and charging it would inflate TTFT and E2E by however long the
    // close took to show. Timing from the answered attempt is also what SGLang's and vLLM's
    // benchmark clients, which do not retry, measure. The retry stays counted in `retried`
    // (and the summary's retry count), so the trouble is not hidden.
    let t0 = attempt.started;
    sample.retried = attempt.retried;
    let mut resp = match sent {
        Err(_) => {
            return fail(
                sample,
                ErrorKind::Timeout,
                format!("no response in {timeout:?}"),
            );
        }
        Ok(Err(e)) => {
            let kind = match e {
                http1::SendError::Connect(_) | http1::SendError::BeforeResponse(_) => {
                    ErrorKind::Connect
                }
                http1::SendError::HeadCut(_) => ErrorKind::StreamCut,
                http1::SendError::Malformed(_) => ErrorKind::MalformedHttp,
            };
            return fail(sample, kind, e.to_string());
        }
        Ok(Ok(r)) => r,
    };
    sample.headers_ms = Some(ms_since(t0));
    let status = resp.status;
    sample.http_status = Some(status);
    if !(200..300).contains(&status) {
        let text = tokio::time::timeout(Duration::from_secs(5), resp.text(64 * 1024))
            .await
            .unwrap_or_default();
        let shown: String = text.chars().take(200).collect();
        return fail(
            sample,
            ErrorKind::HttpStatus,
            format!("HTTP {status}: {shown}"),
        );
    }
    let mut parser = super::sse::SseParser::new();
    let mut done = false;
    // One timer for the whole stream (not one per read: that would be a timer-wheel insert
    // per read on the hot path).
    let expiry = tokio::time::sleep_until(deadline.into());
    tokio::pin!(expiry);
    loop {
        let mut problem: Option<(ErrorKind, String)> = None;
        let read = {
            let mut on_body = |r: http1::BodyRead, bytes: &[u8]| {
                let at = r.at.saturating_duration_since(t0).as_secs_f64() * 1000.0;
                parser.push_with(bytes, |data| {
                    on_event(data, at, &mut sample, &mut done, &mut problem);
                })
            };
            tokio::select! {
                biased;
                r = resp.read(&mut on_body) => Some(r),
                _ = &mut expiry => None,
            }
        };
        let Some(read) = read else {
            return fail(
                sample,
                ErrorKind::Timeout,
                format!("stream not finished in {timeout:?}"),
            );
        };
        match read {
            Err(e) => return fail(sample, ErrorKind::StreamCut, e.to_string()),
            Ok(None) => break,
            Ok(Some(r)) => {
                if let Some(lag) = r.lag {
                    sample.read_lag_ms.push(lag.as_secs_f64() * 1000.0);
                }
            }
        }
        if let Some((kind, msg)) = problem {
            return fail(sample, kind, msg);
        }
    }
    if let Some(data) = parser.finish() {
        if data.trim() == "[DONE]" {
            done = true;
        }
    }
    sample.end_ms = Some(ms_since(t0));
    if !done && sample.finish_reason.is_none() {
        return fail(
            sample,
            ErrorKind::StreamCut,
            "stream ended before [DONE] or a finish_reason".into(),
        );
    }
    if sample.chunk_ms.is_empty() && sample.completion_tokens.unwrap_or(0) == 0 {
        return fail(
            sample,
            ErrorKind::Empty,
            "stream had neither content nor usage".into(),
        );
    }
    sample
}

/// One SSE event's payload, arrived `at` ms after the send: fold it into the sample.
fn on_event(
    data: &str,
    at: f64,
    sample: &mut RequestSample,
    done: &mut bool,
    problem: &mut Option<(ErrorKind, String)>,
) {
    if problem.is_some() {
        return;
    }
    if data.trim() == "[DONE]" {
        *done = true;
        return;
    }
    let info = match openai::parse_chunk_reply(data, sample.reply.as_mut()) {
        Ok(i) => i,
        Err(msg) => {
            *problem = Some((ErrorKind::MalformedSse, msg));
            return;
        }
    };
    if let Some(msg) = info.error {
        *problem = Some((ErrorKind::ServerError, msg));
        return;
    }
    if info.choices > 0 && sample.first_choices_ms.is_none() {
        sample.first_choices_ms = Some(at);
    }
    if info.content_chars > 0 {
        if sample.ttft_ms.is_none() {
            sample.ttft_ms = Some(at);
        }
        sample.last_content_ms = Some(at);
        sample.chunk_ms.push(at);
        sample
            .chunk_chars
            .push(u32::try_from(info.content_chars).unwrap_or(u32::MAX));
    }
    if info.finish_reason.is_some() {
        sample.finish_reason = info.finish_reason;
    }
    if info.completion_tokens.is_some() {
        sample.completion_tokens = info.completion_tokens;
        sample.prompt_tokens = info.prompt_tokens;
    }
}

/// What every request task of a phase shares.
struct PhaseCtx {
    client: Arc<http1::Client>,
    w: Arc<WorkloadSpec>,
    target: Arc<LoadTarget>,
    phase: Phase,
    /// Request path, e.g. `/v1/completions`.
    path: String,
    timeout: Duration,
    window_start: Instant,
    stop: CancellationToken,
    abort: CancellationToken,
    tx: mpsc::UnboundedSender<RequestSample>,
    /// Requests sent and not yet finished (for the `cut` deadline policy).
    in_flight: Arc<AtomicU64>,
    sessions: Arc<SessionMemory>,
}

/// What a load's sessions share, over the warmup and the measurement alike (the server's
/// cache keeps what the warmup sent).
#[derive(Default)]
struct SessionMemory {
    /// Completions: the server returns its replies' token ids (asked once before the load,
    /// `reply_ids_probe`), so synthetic sessions go as token ids; else as text.
    reply_ids: bool,
    /// The sessions' first turns sent, in the server's tokens.
    prefixes: std::sync::Mutex<sessions::SentPrefixes>,
    /// The conversations started (`Conversation::identity`): one seen before is a repeat.
    started: std::sync::Mutex<std::collections::HashSet<u64>>,
}

/// The most a `/tokenize` answer may be: a long history's ids as JSON.
const TOKENIZE_LIMIT: usize = 16 << 20;

impl PhaseCtx {
    /// Send request `index` now; None when aborted.
    async fn send(
        &self,
        index: u64,
        worker: u64,
        scheduled: Option<Instant>,
    ) -> Option<RequestSample> {
        let (prompt, max_tokens, reusable) = request_for(&self.w, &self.target, self.phase, index);
        let turn = Turn {
            place: None,
            reusable,
        };
        self.send_prompt(index, worker, scheduled, prompt, max_tokens, turn)
            .await
    }

    /// Session `k` of this phase, marked a repeat when an earlier session of the load (either
    /// phase) sent the same conversation.
    fn conversation(&self, k: u64) -> Option<sessions::Conversation> {
        let dataset = self.target.dataset.as_deref().map(Vec::as_slice);
        let mut c = sessions::conversation(
            &self.w,
            self.target.vocab_size,
            dataset,
            stream_of(self.phase),
            k,
            self.sessions.reply_ids,
        )?;
        let fresh = match self.sessions.started.lock() {
            Ok(mut seen) => seen.insert(c.identity()),
            // A poisoned set: claim the most, as a repeat does.
            Err(_) => false,
        };
        if !fresh {
            c.mark_repeat();
        }
        Some(c)
    }

    /// What a session's first turn shares with the earlier first turns, in the server's
    /// tokens: token-id prompts are the server's tokens already; text and messages are
    /// tokenized by the server itself (`/tokenize`, the renderer its chat completions use).
    /// Counted before the send, so the first turns join `prefixes` in the order they go out.
    /// Returns the share (None: unknown) and, for a server tokenization, its length, which
    /// the request's own `usage` must confirm. None: aborted.
    async fn first_turn_share(&self, prompt: &Prompt) -> Option<FirstShare> {
        let (ids, tokenized) = match prompt {
            Prompt::TokenIds(ids) if self.w.endpoint == Endpoint::Completions => {
                let ids: Option<Vec<u32>> = ids.iter().map(|&x| u32::try_from(x).ok()).collect();
                (ids, false)
            }
            _ => {
                let got = tokio::select! {
                    t = self.tokenize(prompt) => t,
                    _ = self.abort.cancelled() => return None,
                };
                (got, true)
            }
        };
        let Ok(mut prefixes) = self.sessions.prefixes.lock() else {
            return Some((None, None));
        };
        match ids {
            Some(ids) => {
                let share = prefixes.share(&ids);
                Some((share, tokenized.then_some(ids.len() as u64)))
            }
            None => {
                prefixes.lose();
                Some((None, None))
            }
        }
    }

    /// The server's token ids for `prompt` (`POST /tokenize`, which SGLang 0.5.23 and vLLM
    /// serve). None: no such endpoint, an error, or an answer that is not a tokenization.
    async fn tokenize(&self, prompt: &Prompt) -> Option<Vec<u32>> {
        let body = openai::tokenize_body(&self.w, &self.target.model, prompt.clone());
        let body = serde_json::to_vec(&body).ok()?;
        let path = self.client.path("/tokenize");
        let mut attempt = http1::Attempt {
            started: Instant::now(),
            retried: false,
        };
        let ask = async {
            let r = self.client.send(&path, &body, &mut attempt).await.ok()?;
            if !(200..300).contains(&r.status) {
                return None;
            }
            Some(r.text(TOKENIZE_LIMIT).await)
        };
        let text = tokio::time::timeout(self.timeout, ask).await.ok()??;
        openai::parse_tokenize(&text)
    }

    /// Send `prompt` as request `index` now; None when aborted.
    async fn send_prompt(
        &self,
        index: u64,
        worker: u64,
        scheduled: Option<Instant>,
        prompt: Prompt,
        max_tokens: u64,
        turn: Turn,
    ) -> Option<RequestSample> {
        // A session's token-id turn asks for the reply's ids, to send them back.
        let ask_ids = turn.place.is_some()
            && self.w.endpoint == Endpoint::Completions
            && matches!(prompt, Prompt::TokenIds(_));
        let mut body = openai::request_body(&self.w, &self.target.model, prompt, max_tokens);
        if ask_ids {
            openai::ask_reply_ids(&mut body);
        }
        // Serialized before the send instant: building the body is not the server's time.
        let body = serde_json::to_vec(&body).unwrap_or_default();
        let now = Instant::now();
        let mut sample = blank_sample(
            self.phase,
            index,
            worker,
            offset_s(now, self.window_start),
            max_tokens,
        );
        sample.turn = turn.place;
        sample.reusable_tokens = turn.reusable;
        // A session's reply goes back into its history: keep the streamed text (and ids).
        sample.reply = turn.place.map(|_| openai::Reply::default());
        sample.scheduled_s = scheduled.map(|t| offset_s(t, self.window_start));
        sample.sched_lag_ms =
            scheduled.map(|t| now.saturating_duration_since(t).as_secs_f64() * 1000.0);
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        let out = tokio::select! {
            s = one_request(&self.client, &self.path, &body, self.timeout, sample) => Some(s),
            _ = self.abort.cancelled() => None,
        };
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        out
    }
}

/// What a request is in its workload beyond its prompt.
struct Turn {
    place: Option<SessionTurn>,
    reusable: Option<u64>,
}

/// A session's first turn's share, counted (`PhaseCtx::first_turn_share`): the share (None:
/// unknown) and the length of the server's tokenization it came from, if it did.
type FirstShare = (Option<u64>, Option<u64>);

/// Send session `k`'s next turn as request `index` (`scheduled`: when it was due, open loop;
/// `counted`: its first turn's share, when counted ahead) and take the reply into its history.
/// Returns the sample and whether the session ends there (a failed turn: its history has no
/// reply to go on with; or a reply whose ids did not come); None when aborted or the session
/// has no turn left.
async fn send_turn(
    ctx: &PhaseCtx,
    index: u64,
    worker: u64,
    k: u64,
    conv: &mut sessions::Conversation,
    scheduled: Option<Instant>,
    counted: Option<FirstShare>,
) -> Option<(RequestSample, bool)> {
    let t = conv.next_turn()?;
    let place = SessionTurn {
        session: k,
        turn: t.turn,
        last: t.last,
    };
    let first = match (t.reusable, counted) {
        (sessions::Reuse::FirstTurn, Some(f)) => Some(f),
        (sessions::Reuse::FirstTurn, None) => Some(ctx.first_turn_share(&t.prompt).await?),
        _ => None,
    };
    let turn = Turn {
        place: Some(place),
        reusable: None,
    };
    let mut s = ctx
        .send_prompt(index, worker, scheduled, t.prompt, t.max_tokens, turn)
        .await?;
    s.reusable_tokens = match (t.reusable, first) {
        (sessions::Reuse::Tokens(n), _) => Some(n),
        (sessions::Reuse::Whole, _) => s.prompt_tokens,
        (sessions::Reuse::FirstTurn, Some((share, Some(tokenized)))) => {
            match s.prompt_tokens {
                Some(p) if p == tokenized => share,
                // The server's tokenization is not what it counted for the request: neither
                // this share nor a later first turn's can be trusted.
                Some(_) => {
                    if let Ok(mut prefixes) = ctx.sessions.prefixes.lock() {
                        prefixes.lose();
                    }
                    None
                }
                None => None,
            }
        }
        (sessions::Reuse::FirstTurn, Some((share, None))) => share,
        _ => None,
    };
    let reply = s.reply.take().unwrap_or_default();
    if s.ok() {
        // The server's own counts: a count of content chunks is no count of tokens (a chunk
        // may carry several), and a ceiling must not guess low.
        let went_on = conv.record_reply(&reply, s.prompt_tokens, s.completion_tokens);
        return Some((s, !went_on));
    }
    if s.http_status == Some(400) && place.turn > 0 {
        // The likeliest cause past the first turn: the history outgrew the model's context.
        let e = s.error.take().unwrap_or_default();
        s.error = Some(format!(
            "{e} [session turn {}: a history the server refused may exceed the model's context: fewer `sessions.turns` or shorter messages]",
            place.turn + 1
        ));
    }
    Some((s, true))
}

/// Open loop with `sessions:`: sessions arrive at `rate` per second (gamma gaps of shape
/// `burstiness`, seeded as single requests' arrivals are), and each runs its turns in order,
/// the next one due `think_time_s` after the previous reply. At most `cap` requests are in
/// flight: a due turn waits for a slot, and that wait shows as its scheduling lag. Until
/// `count` requests (turns) or the `deadline`.
fn spawn_open_sessions(
    ctx: &Arc<PhaseCtx>,
    rate: f64,
    burstiness: f64,
    cap: u64,
    count: Option<u64>,
    deadline: Option<Instant>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let ctx = ctx.clone();
    let dispatcher = tokio::spawn(async move {
        let slots = Arc::new(tokio::sync::Semaphore::new(cap.max(1) as usize));
        let next = Arc::new(AtomicU64::new(0));
        let mut rng = prompts::SplitMix64::new(ctx.w.seed ^ 0xA5A5_5A5A_0F0F_F0F0);
        let think = ctx
            .w
            .sessions
            .as_ref()
            .map_or(0.0, |s| s.think_time_s.max(0.0));
        let think = Duration::from_secs_f64(think);
        let mut at = ctx.window_start;
        let mut tasks = Vec::new();
        for k in 0.. {
            let sent = next.load(Ordering::Relaxed);
            if count.is_some_and(|c| sent >= c)
                || deadline.is_some_and(|d| at >= d)
                || ctx.stop.is_cancelled()
            {
                break;
            }
            let Some(mut conv) = ctx.conversation(k) else {
                break;
            };
            // The first turn's share is counted before the session's arrival: a tokenization
            // by the server must not show as the turn's lateness. The sessions still join the
            // first turns in their order, which is the order they are sent in.
            let mut counted = match conv.next_turn() {
                Some(t) if t.reusable == sessions::Reuse::FirstTurn => {
                    let Some(f) = ctx.first_turn_share(&t.prompt).await else {
                        break;
                    };
                    Some(f)
                }
                _ => None,
            };
            tokio::select! {
                _ = tokio::time::sleep_until(at.into()) => {}
                _ = ctx.stop.cancelled() => break,
            }
            let (ctx2, slots, next) = (ctx.clone(), slots.clone(), next.clone());
            let arrival = at;
            tasks.push(tokio::spawn(async move {
                let mut due = arrival;
                while !conv.is_done() {
                    if ctx2.stop.is_cancelled() || deadline.is_some_and(|d| Instant::now() >= d) {
                        break;
                    }
                    let permit = tokio::select! {
                        p = slots.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
                        _ = ctx2.stop.cancelled() => break,
                    };
                    // Numbered when sent, so `count` is the turns sent.
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if count.is_some_and(|c| index >= c) {
                        break;
                    }
                    let Some((s, failed)) =
                        send_turn(&ctx2, index, k, k, &mut conv, Some(due), counted.take()).await
                    else {
                        break;
                    };
                    drop(permit);
                    if ctx2.tx.send(s).is_err() || failed {
                        break;
                    }
                    due = Instant::now() + think;
                    if !conv.is_done() && !think.is_zero() {
                        tokio::select! {
                            _ = tokio::time::sleep_until(due.into()) => {}
                            _ = ctx2.stop.cancelled() => break,
                        }
                    }
                }
            }));
            at += Duration::from_secs_f64(prompts::gamma_gap(&mut rng, rate, burstiness));
        }
        for t in tasks {
            let _ = t.await;
        }
    });
    vec![dispatcher]
}

/// Closed loop with `sessions:`: `workers` clients, each holding one conversation and sending
/// its turns in order (each prompt the history so far plus the next user message, waiting
/// `think_time_s` after a reply), then taking the next session, until `count` requests or the
/// `deadline`. Sessions are numbered as clients take them; session k is the same whoever takes
/// it (`load::sessions`). A failed turn ends its session: its history has no reply to go on
/// with.
fn spawn_sessions(
    ctx: &Arc<PhaseCtx>,
    workers: u64,
    count: Option<u64>,
    deadline: Option<Instant>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let next = Arc::new(AtomicU64::new(0));
    let next_session = Arc::new(AtomicU64::new(0));
    let think = ctx
        .w
        .sessions
        .as_ref()
        .map_or(0.0, |s| s.think_time_s.max(0.0));
    let think = Duration::from_secs_f64(think);
    (0..workers)
        .map(|worker| {
            let (ctx, next, next_session) = (ctx.clone(), next.clone(), next_session.clone());
            tokio::spawn(async move {
                let mut held: Option<(u64, sessions::Conversation)> = None;
                loop {
                    if ctx.stop.is_cancelled() || deadline.is_some_and(|d| Instant::now() >= d) {
                        break;
                    }
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if count.is_some_and(|c| index >= c) {
                        break;
                    }
                    if held.as_ref().is_none_or(|(_, c)| c.is_done()) {
                        let k = next_session.fetch_add(1, Ordering::Relaxed);
                        held = ctx.conversation(k).map(|c| (k, c));
                    }
                    let Some((k, conv)) = held.as_mut() else {
                        break;
                    };
                    let Some((s, failed)) =
                        send_turn(&ctx, index, worker, *k, conv, None, None).await
                    else {
                        break;
                    };
                    if failed {
                        held = None;
                    }
                    let more = held.as_ref().is_some_and(|(_, c)| !c.is_done());
                    if ctx.tx.send(s).is_err() {
                        break;
                    }
                    if more && !think.is_zero() {
                        tokio::select! {
                            _ = tokio::time::sleep(think) => {}
                            _ = ctx.stop.cancelled() => break,
                        }
                    }
                }
            })
        })
        .collect()
}

/// Closed loop: `workers` workers, each sending its next request when its previous one ends,
/// until `count` requests or the `deadline`.
fn spawn_closed(
    ctx: &Arc<PhaseCtx>,
    workers: u64,
    count: Option<u64>,
    deadline: Option<Instant>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let next = Arc::new(AtomicU64::new(0));
    (0..workers)
        .map(|worker| {
            let (ctx, next) = (ctx.clone(), next.clone());
            tokio::spawn(async move {
                loop {
                    if ctx.stop.is_cancelled() || deadline.is_some_and(|d| Instant::now() >= d) {
                        break;
                    }
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if count.is_some_and(|c| index >= c) {
                        break;
                    }
                    let Some(s) = ctx.send(index, worker, None).await else {
                        break;
                    };
                    if ctx.tx.send(s).is_err() {
                        break;
                    }
                }
            })
        })
        .collect()
}

/// Open loop: arrivals at `rate` per second with gamma gaps of shape `burstiness` (1 =
/// Poisson), seeded; at most `cap` in flight (an arrival waits for a slot, and that wait
/// shows as scheduling lag). The first request goes at the start.
fn spawn_open(
    ctx: &Arc<PhaseCtx>,
    rate: f64,
    burstiness: f64,
    cap: u64,
    count: Option<u64>,
    deadline: Option<Instant>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let ctx = ctx.clone();
    let dispatcher = tokio::spawn(async move {
        let slots = Arc::new(tokio::sync::Semaphore::new(cap.max(1) as usize));
        let mut rng = prompts::SplitMix64::new(ctx.w.seed ^ 0xA5A5_5A5A_0F0F_F0F0);
        let mut at = ctx.window_start;
        let mut tasks = Vec::new();
        for index in 0.. {
            if count.is_some_and(|c| index >= c)
                || deadline.is_some_and(|d| at >= d)
                || ctx.stop.is_cancelled()
            {
                break;
            }
            tokio::select! {
                _ = tokio::time::sleep_until(at.into()) => {}
                _ = ctx.stop.cancelled() => break,
            }
            let permit = tokio::select! {
                p = slots.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
                _ = ctx.stop.cancelled() => break,
            };
            let (ctx2, scheduled) = (ctx.clone(), at);
            tasks.push(tokio::spawn(async move {
                if let Some(s) = ctx2.send(index, index, Some(scheduled)).await {
                    let _ = ctx2.tx.send(s);
                }
                drop(permit);
            }));
            at += Duration::from_secs_f64(prompts::gamma_gap(&mut rng, rate, burstiness));
        }
        for t in tasks {
            let _ = t.await;
        }
    });
    vec![dispatcher]
}

/// A mooncake trace's replay: record i is sent at its timestamp (relative to the trace's
/// first, times `slowdown`) after the window's start, whether or not earlier ones are done (an
/// open loop: the trace's times are its arrivals). At most `cap` requests in flight: a record
/// that waits for a slot shows that wait as its scheduling lag. Until the trace ends, `count`
/// requests or the `deadline`.
fn spawn_trace(
    ctx: &Arc<PhaseCtx>,
    slowdown: f64,
    cap: u64,
    count: Option<u64>,
    deadline: Option<Instant>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let ctx = ctx.clone();
    let dispatcher = tokio::spawn(async move {
        let slots = Arc::new(tokio::sync::Semaphore::new(cap.max(1) as usize));
        let times: Vec<f64> = ctx
            .target
            .dataset
            .iter()
            .flat_map(|d| d.iter())
            .filter_map(|p| match p {
                super::dataset::DatasetPrompt::Record(r) => Some(r.at_ms),
                _ => None,
            })
            .collect();
        let mut tasks = Vec::new();
        for (index, at_ms) in (0u64..).zip(times) {
            let at =
                ctx.window_start + Duration::from_secs_f64((at_ms * slowdown / 1000.0).max(0.0));
            if count.is_some_and(|c| index >= c)
                || deadline.is_some_and(|d| at >= d)
                || ctx.stop.is_cancelled()
            {
                break;
            }
            tokio::select! {
                _ = tokio::time::sleep_until(at.into()) => {}
                _ = ctx.stop.cancelled() => break,
            }
            let permit = tokio::select! {
                p = slots.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
                _ = ctx.stop.cancelled() => break,
            };
            let ctx2 = ctx.clone();
            tasks.push(tokio::spawn(async move {
                if let Some(s) = ctx2.send(index, index, Some(at)).await {
                    let _ = ctx2.tx.send(s);
                }
                drop(permit);
            }));
        }
        for t in tasks {
            let _ = t.await;
        }
    });
    vec![dispatcher]
}

/// Synthetic `sessions:` (not a dataset's or a trace's conversations).
fn synthetic_sessions(w: &WorkloadSpec) -> bool {
    matches!(
        w.sessions.as_ref().map(|s| &s.source),
        Some(crate::plan::spec::SessionSource::Synthetic { .. })
    )
}

/// Whether the server returns a completion's token ids when asked (`return_token_ids`): one
/// streamed request of the prompt `ids` and one output token. None: it did not answer.
async fn reply_ids_probe(
    client: &http1::Client,
    w: &WorkloadSpec,
    target: &LoadTarget,
    ids: Vec<u64>,
    path: &str,
    timeout: Duration,
) -> Option<bool> {
    let mut body = openai::request_body(w, &target.model, Prompt::TokenIds(ids), 1);
    openai::ask_reply_ids(&mut body);
    let body = serde_json::to_vec(&body).ok()?;
    let mut sample = blank_sample(Phase::Warmup, 0, 0, f64::NAN, 1);
    sample.reply = Some(openai::Reply::default());
    let s = one_request(client, path, &body, timeout, sample).await;
    s.ok().then(|| {
        s.reply
            .is_some_and(|r| r.ids.is_some_and(|v| !v.is_empty()))
    })
}

/// Drive the workload. `stop` ends it early: no new request is sent and the requests in
/// flight are waited for (an interrupt). `abort` abandons the requests in flight too (a dead
/// server, or an interrupt whose grace ran out). Either sets `stopped`.
pub async fn drive(
    client: &Arc<http1::Client>,
    workload: &WorkloadSpec,
    target: &LoadTarget,
    stop: &CancellationToken,
    abort: &CancellationToken,
    on_event: &mut dyn FnMut(LoadEvent<'_>),
) -> LoadOutcome {
    let w = Arc::new(workload.clone());
    let target = Arc::new(target.clone());
    let n = w.concurrency.max(1);
    let mut outcome = LoadOutcome {
        warmup_ok: 0,
        warmup_failed: 0,
        cut_off: 0,
        duration_s: 0.0,
        stopped: false,
        session_reply_ids: None,
    };

    // Warmup: excluded from every number, but written to requests.csv as evidence.
    // Our own abort, so the `cut` deadline can abandon requests without touching the caller's.
    let inner_abort = CancellationToken::new();
    let forward = {
        let (outer, inner) = (abort.clone(), inner_abort.clone());
        tokio::spawn(async move {
            outer.cancelled().await;
            inner.cancel();
        })
    };
    let in_flight = Arc::new(AtomicU64::new(0));
    // Synthetic sessions on completions go as token ids when the server returns its replies'
    // ids, else as text: one question before the load decides, for every session alike.
    let mut prefixes = sessions::SentPrefixes::default();
    let reply_ids = if synthetic_sessions(&w) && w.endpoint == Endpoint::Completions {
        // Its own seed stream: nothing a session's prompt starts with, but the server caches
        // it like any prompt, so the first turns count what they share with it too.
        let probe = prompts::token_ids(w.seed, 0x1D5, 0, 8, target.vocab_size.max(1));
        let probe_tokens: Vec<u32> = probe
            .iter()
            .map(|&x| u32::try_from(x).unwrap_or(u32::MAX))
            .collect();
        let _ = prefixes.share(&probe_tokens);
        let path = client.path(w.endpoint.path());
        let timeout = Duration::from_secs_f64(w.request_timeout_s);
        let got = tokio::select! {
            g = reply_ids_probe(client, &w, &target, probe, &path, timeout) => g,
            _ = abort.cancelled() => None,
        };
        // Not answered: as SGLang and vLLM answer (a reply without ids then ends its session).
        got.unwrap_or(true)
    } else {
        true
    };
    outcome.session_reply_ids =
        (synthetic_sessions(&w) && w.endpoint == Endpoint::Completions).then_some(reply_ids);
    let memory = Arc::new(SessionMemory {
        reply_ids,
        prefixes: std::sync::Mutex::new(prefixes),
        ..SessionMemory::default()
    });
    let phase_ctx =
        |phase: Phase, window_start: Instant, tx: mpsc::UnboundedSender<RequestSample>| {
            Arc::new(PhaseCtx {
                client: client.clone(),
                w: w.clone(),
                target: target.clone(),
                phase,
                path: client.path(w.endpoint.path()),
                timeout: Duration::from_secs_f64(w.request_timeout_s),
                window_start,
                stop: stop.clone(),
                abort: inner_abort.clone(),
                tx,
                in_flight: in_flight.clone(),
                sessions: memory.clone(),
            })
        };
    if w.warmup_requests > 0 {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let far = Instant::now() + Duration::from_secs(86_400 * 365);
        // Warmup is always closed loop: it only has to warm the server.
        let warm = phase_ctx(Phase::Warmup, far, tx);
        let (workers, count) = (n.min(w.warmup_requests), Some(w.warmup_requests));
        // A mooncake trace's warmup sends its first records closed loop, in the warmup's own
        // blocks (`load::trace::mooncake_prompt`), so it leaves nothing the measurement reuses.
        let handles = if w.sessions.is_some() && mooncake(&w).is_none() {
            spawn_sessions(&warm, workers, count, None)
        } else {
            spawn_closed(&warm, workers, count, None)
        };
        drop(warm);
        while let Some(mut s) = rx.recv().await {
            // Warmup happens before the measured window: no offset in it (empty in the CSV).
            s.send_s = f64::NAN;
            if s.ok() {
                outcome.warmup_ok += 1;
            } else {
                outcome.warmup_failed += 1;
            }
            on_event(LoadEvent::Sample(&s));
        }
        for h in handles {
            let _ = h.await;
        }
        if stop.is_cancelled() || abort.is_cancelled() {
            outcome.stopped = true;
            forward.abort();
            return outcome;
        }
    }

    on_event(LoadEvent::MeasureStart);
    let start = Instant::now();
    let deadline = w.duration_s.map(|d| start + Duration::from_secs_f64(d));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let ctx = phase_ctx(Phase::Measured, start, tx);
    let handles = match w.request_rate {
        // The spec refuses a rate with a trace: its records carry their own times.
        _ if mooncake(&w).is_some() => {
            let slowdown = mooncake(&w).map_or(1.0, |m| m.1);
            spawn_trace(&ctx, slowdown, n, w.requests, deadline)
        }
        Some(rate) if w.sessions.is_some() => {
            spawn_open_sessions(&ctx, rate, w.burstiness, n, w.requests, deadline)
        }
        Some(rate) => spawn_open(&ctx, rate, w.burstiness, n, w.requests, deadline),
        None if w.sessions.is_some() => spawn_sessions(&ctx, n, w.requests, deadline),
        None => spawn_closed(&ctx, n, w.requests, deadline),
    };
    drop(ctx);
    let mut last_end = start;
    let cut_at = deadline.filter(|_| w.deadline == crate::plan::spec::DeadlinePolicy::Cut);
    loop {
        tokio::select! {
            _ = tokio::time::sleep_until(cut_at.unwrap_or(start).into()), if cut_at.is_some() && !inner_abort.is_cancelled() => {
                // The deadline, with `cut`: what is still in flight is abandoned and counted.
                outcome.cut_off = in_flight.load(Ordering::SeqCst);
                inner_abort.cancel();
                last_end = cut_at.unwrap_or(last_end);
            }
            s = rx.recv() => match s {
                Some(s) => {
                    last_end = Instant::now();
                    on_event(LoadEvent::Sample(&s));
                }
                None => break,
            },
            _ = abort.cancelled() => {
                // Anything still in flight is abandoned.
                inner_abort.cancel();
                for h in &handles {
                    h.abort();
                }
                while let Ok(s) = rx.try_recv() {
                    on_event(LoadEvent::Sample(&s));
                }
                break;
            }
        }
    }
    for h in handles {
        let _ = h.await;
    }
    forward.abort();
    outcome.stopped = stop.is_cancelled() || abort.is_cancelled();
    outcome.duration_s = (last_end - start).as_secs_f64();
    on_event(LoadEvent::MeasureEnd);
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn a_shared_prefix_is_reusable_after_its_groups_first_request() {
        let text = "name: t\nserver: {model_path: /m}\nworkload: {concurrency: 1, requests: 4, warmup_requests: 0, input_tokens: 8, output_tokens: 2, vocab_size: 100, shared_prefix: {groups: 2, prefix_tokens: 32}}\n";
        let w = crate::plan::spec::parse(text, "t").map(|s| s.workload);
        let w = w.unwrap_or_else(|e| panic!("{e}"));
        let target = LoadTarget {
            base_url: String::new(),
            model: "m".into(),
            vocab_size: 100,
            dataset: None,
        };
        let reusable: Vec<Option<u64>> = (0..4)
            .map(|i| request_for(&w, &target, Phase::Measured, i).2)
            .collect();
        // Requests 0 and 1 send their groups' prefixes first; 2 and 3 find them sent.
        assert_eq!(reusable, vec![Some(0), Some(0), Some(32), Some(32)]);
        // One warm-up request sent group 0's prefix before the measured ones (after the same
        // flush): measured request 0 finds it; group 1's first is still the first. The
        // warm-up itself is the first of its group.
        let warm = WorkloadSpec {
            warmup_requests: 1,
            ..w.clone()
        };
        let reusable: Vec<Option<u64>> = (0..4)
            .map(|i| request_for(&warm, &target, Phase::Measured, i).2)
            .collect();
        assert_eq!(reusable, vec![Some(32), Some(0), Some(32), Some(32)]);
        assert_eq!(request_for(&warm, &target, Phase::Warmup, 0).2, Some(0));
        let plain = w.clone();
        let plain = WorkloadSpec {
            shared_prefix: None,
            ..plain
        };
        assert_eq!(request_for(&plain, &target, Phase::Measured, 3).2, None);
    }

    #[tokio::test]
    async fn a_retried_request_is_timed_from_the_attempt_that_got_the_response() {
        const STALL: Duration = Duration::from_millis(400);
        let l = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", l.local_addr().expect("addr"));
        let events = "data: {\"choices\":[{\"index\":0,\"text\":\"hi\",\"finish_reason\":\"length\"}]}\n\n\
                      data: [DONE]\n\n";
        let answer = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\n\r\n{events}",
            events.len()
        );
        let server = tokio::spawn(async move {
            let mut b = [0u8; 4096];
            // First connection: takes the request, stalls, closes without a byte (the retry
            // is allowed because nothing of a response was seen).
            let (mut s, _) = l.accept().await?;
            let _ = s.read(&mut b).await?;
            tokio::time::sleep(STALL).await;
            drop(s);
            // Second connection: answers at once.
            let (mut s, _) = l.accept().await?;
            let _ = s.read(&mut b).await?;
            s.write_all(answer.as_bytes()).await?;
            std::io::Result::Ok(s)
        });
        let client = http_client(&url).expect("url");
        let sample = one_request(
            &client,
            "/v1/completions",
            b"{}",
            Duration::from_secs(10),
            blank_sample(Phase::Measured, 0, 0, 0.0, 1),
        )
        .await;
        assert!(sample.ok(), "{:?}", sample.error);
        assert!(sample.retried, "the retry is still counted");
        let stall_ms = STALL.as_secs_f64() * 1000.0;
        for (what, v) in [
            ("headers", sample.headers_ms),
            ("TTFT", sample.ttft_ms),
            ("E2E", sample.end_ms),
        ] {
            let v = v.unwrap_or_else(|| panic!("no {what}"));
            assert!(
                v < stall_ms / 2.0,
                "{what} {v:.1} ms includes the failed attempt ({stall_ms} ms)"
            );
        }
        assert!(server.await.expect("server").is_ok());
    }
}
