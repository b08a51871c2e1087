//! What every request task of a phase shares (`PhaseCtx`: the client, the workload, the
//! window's start, the stop and abort tokens, the sessions' memory), and how a request or a
//! session's next turn is sent from it. The arrival modes (`load::arrival`) decide when.

use super::http1;
use super::openai::{self, Prompt};
use super::request::{blank_sample, offset_s, one_request, request_for, stream_of};
use super::sample::{LoadTarget, Phase, RequestSample, SessionTurn};
use super::sessions;
use crate::plan::spec::{Endpoint, WorkloadSpec};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// What every request task of a phase shares.
pub(crate) struct PhaseCtx {
    pub(crate) client: Arc<http1::Client>,
    pub(crate) w: Arc<WorkloadSpec>,
    pub(crate) target: Arc<LoadTarget>,
    pub(crate) phase: Phase,
    /// Request path, e.g. `/v1/completions`.
    pub(crate) path: String,
    pub(crate) timeout: Duration,
    pub(crate) window_start: Instant,
    pub(crate) stop: CancellationToken,
    pub(crate) abort: CancellationToken,
    pub(crate) tx: mpsc::UnboundedSender<RequestSample>,
    /// Requests sent and not yet finished (for the `cut` deadline policy).
    pub(crate) in_flight: Arc<AtomicU64>,
    pub(crate) sessions: Arc<SessionMemory>,
}

/// What a load's sessions share, over the warmup and the measurement alike (the server's
/// cache keeps what the warmup sent).
#[derive(Default)]
pub(crate) struct SessionMemory {
    /// Completions: the server returns its replies' token ids (asked once before the load,
    /// `reply_ids_probe`), so synthetic sessions go as token ids; else as text.
    pub(crate) reply_ids: bool,
    /// The sessions' first turns sent, in the server's tokens.
    pub(crate) prefixes: std::sync::Mutex<sessions::SentPrefixes>,
    /// The conversations started (`Conversation::identity`): one seen before is a repeat.
    pub(crate) started: std::sync::Mutex<std::collections::HashSet<u64>>,
}

/// The most a `/tokenize` answer may be: a long history's ids as JSON.
const TOKENIZE_LIMIT: usize = 16 << 20;

impl PhaseCtx {
    /// Send request `index` now; None when aborted.
    pub(crate) async fn send(
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
    pub(crate) fn conversation(&self, k: u64) -> Option<sessions::Conversation> {
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
    pub(crate) async fn first_turn_share(&self, prompt: &Prompt) -> Option<FirstShare> {
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
    pub(crate) async fn send_prompt(
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
pub(crate) struct Turn {
    pub(crate) place: Option<SessionTurn>,
    pub(crate) reusable: Option<u64>,
}

/// A session's first turn's share, counted (`PhaseCtx::first_turn_share`): the share (None:
/// unknown) and the length of the server's tokenization it came from, if it did.
pub(crate) type FirstShare = (Option<u64>, Option<u64>);

/// Send session `k`'s next turn as request `index` (`scheduled`: when it was due, open loop;
/// `counted`: its first turn's share, when counted ahead) and take the reply into its history.
/// Returns the sample and whether the session ends there (a failed turn: its history has no
/// reply to go on with; or a reply whose ids did not come); None when aborted or the session
/// has no turn left.
pub(crate) async fn send_turn(
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
