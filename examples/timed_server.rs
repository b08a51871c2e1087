//! A fake OpenAI-compatible streaming server with known timing, for measuring clients (not part
//! of the shipped binary: an example, built only for benchmarks). Every POST streams `tokens`
//! chunks: the first `ttft_ms` after the request arrived, then one every `itl_ms`, then a
//! usage chunk and `[DONE]`. With both at 0 it streams as fast as it can (capacity tests).
//!
//!     cargo run --release --example timed_server -- PORT TTFT_MS ITL_MS TOKENS
//!
//! Minimal HTTP/1.1 with keep-alive and chunked encoding; GET /v1/models answers for model
//! lookups. Requests are read (to honour Content-Length) and otherwise ignored.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test may panic: that is its failure

use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

#[derive(Clone, Copy)]
struct Timing {
    ttft: Duration,
    itl: Duration,
    tokens: u64,
}

fn chunk(out: &mut Vec<u8>, data: &str) {
    let payload = format!("data: {data}\n\n");
    out.extend_from_slice(format!("{:x}\r\n", payload.len()).as_bytes());
    out.extend_from_slice(payload.as_bytes());
    out.extend_from_slice(b"\r\n");
}

async fn serve(stream: TcpStream, t: Timing) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let (r, mut w) = stream.into_split();
    let mut r = BufReader::new(r);
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        let arrived = Instant::now();
        let post = line.starts_with("POST");
        let mut len = 0usize;
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).await? == 0 {
                return Ok(());
            }
            if h == "\r\n" || h == "\n" {
                break;
            }
            if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0u8; len];
        r.read_exact(&mut body).await?;
        if !post {
            let b = r#"{"object":"list","data":[{"id":"timed","object":"model"}]}"#;
            let resp = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{b}",
                b.len()
            );
            w.write_all(resp.as_bytes()).await?;
            continue;
        }
        w.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n").await?;
        // Timed: one write per token, at its instant. Untimed (capacity runs): the whole stream
        // in large writes, so the server's syscalls are not what limits the client.
        let timed = !t.ttft.is_zero() || !t.itl.is_zero();
        let mut pending = Vec::with_capacity(if timed { 256 } else { 1 << 16 });
        for k in 0..t.tokens {
            if timed {
                tokio::time::sleep_until(arrived + t.ttft + t.itl * k as u32).await;
            }
            let finish = if k + 1 == t.tokens {
                "\"length\""
            } else {
                "null"
            };
            chunk(
                &mut pending,
                &format!(
                    r#"{{"id":"x","object":"text_completion","model":"timed","choices":[{{"index":0,"text":" t{k}","finish_reason":{finish}}}],"usage":null}}"#
                ),
            );
            if timed || pending.len() >= 1 << 16 {
                w.write_all(&pending).await?;
                pending.clear();
            }
        }
        w.write_all(&pending).await?;
        let mut out = Vec::new();
        // Like SGLang: the usage-only chunk (choices: []) only when the client asked for it;
        // bench_serving does not ask and cannot read one.
        let wants_usage = String::from_utf8_lossy(&body)
            .replace(' ', "")
            .contains("\"include_usage\":true");
        if wants_usage {
            chunk(
                &mut out,
                &format!(
                    r#"{{"id":"x","object":"text_completion","model":"timed","choices":[],"usage":{{"prompt_tokens":8,"completion_tokens":{},"total_tokens":{}}}}}"#,
                    t.tokens,
                    t.tokens + 8
                ),
            );
        }
        chunk(&mut out, "[DONE]");
        out.extend_from_slice(b"0\r\n\r\n");
        w.write_all(&out).await?;
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let a: Vec<String> = std::env::args().collect();
    let num = |i: usize, d: u64| a.get(i).and_then(|s| s.parse().ok()).unwrap_or(d);
    let port = num(1, 31999);
    let t = Timing {
        ttft: Duration::from_millis(num(2, 50)),
        itl: Duration::from_millis(num(3, 10)),
        tokens: num(4, 64),
    };
    let listener = TcpListener::bind(("127.0.0.1", port as u16)).await?;
    eprintln!("timed_server on 127.0.0.1:{port}");
    loop {
        let (s, _) = listener.accept().await?;
        tokio::spawn(async move {
            let _ = serve(s, t).await;
        });
    }
}
