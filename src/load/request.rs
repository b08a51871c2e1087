//! One request: its prompt and length from the workload (`request_for`), its streaming send and
//! the sample its response makes (`one_request`), timed from the attempt that got the response.

use super::http1;
use super::openai::{self, Prompt};
use super::prompts;
use super::sample::{ErrorKind, LoadTarget, Phase, RequestSample};
use crate::plan::spec::{Endpoint, WorkloadSpec};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Build the streaming client for `base_url`: one HTTP/1.1 connection per in-flight stream, no
/// Nagle delay, idle connections dropped before uvicorn's 5 s keep-alive limit closes them
/// under us.
pub fn http_client(base_url: &str) -> Result<Arc<http1::Client>, String> {
    http1::Client::new(base_url, Duration::from_secs(4)).map(Arc::new)
}

pub(crate) fn stream_of(phase: Phase) -> u64 {
    match phase {
        Phase::Measured => 0,
        Phase::Warmup => 1,
    }
}

/// `sessions: {from_trace: F, format: mooncake}`: its block size and slowdown.
pub(crate) fn mooncake(w: &WorkloadSpec) -> Option<(u64, f64)> {
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
pub(crate) fn request_for(
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

pub(crate) fn blank_sample(
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

pub(crate) fn offset_s(now: Instant, window_start: Instant) -> f64 {
    if now >= window_start {
        (now - window_start).as_secs_f64()
    } else {
        -(window_start - now).as_secs_f64()
    }
}

pub(crate) fn ms_since(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64() * 1000.0
}

/// Send one streaming request and record what happened.
pub(crate) async fn one_request(
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
pub(crate) fn on_event(
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
