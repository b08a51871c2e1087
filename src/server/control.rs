//! The control plane: every request to a server that is not part of the measured load
//! (`/v1/models`, `/server_info`, `/flush_cache`, `/metrics`). One client, built once per
//! server, so timeouts and proxy rules are set in one place. The measured streams use
//! `load::http1` instead, for timing reasons given there.

use std::time::Duration;

/// Why a control-plane client could not be built.
#[derive(Debug, thiserror::Error)]
#[error("cannot build an HTTP client: {0}")]
pub struct ControlError(#[from] reqwest::Error);

/// A client for one server's control endpoints.
#[derive(Clone)]
pub struct Control {
    client: reqwest::Client,
    base_url: String,
}

/// Long enough for a busy server to answer, short enough that a hung one does not stall a sweep.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

impl Control {
    pub fn new(base_url: &str) -> Result<Control, ControlError> {
        // Servers run on this machine or a cluster node: never through a proxy.
        let client = reqwest::Client::builder()
            .timeout(DEFAULT_TIMEOUT)
            .no_proxy()
            .build()?;
        Ok(Control {
            client,
            base_url: base_url.trim_end_matches('/').to_string(),
        })
    }

    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    async fn get(&self, path: &str, timeout: Duration) -> Option<reqwest::Response> {
        let r = self
            .client
            .get(format!("{}{path}", self.base_url))
            .timeout(timeout)
            .send()
            .await
            .ok()?;
        r.status().is_success().then_some(r)
    }

    /// `GET /v1/models` answered with success: the HTTP side of readiness.
    pub async fn models_ok(&self) -> bool {
        self.get("/v1/models", Duration::from_secs(5))
            .await
            .is_some()
    }

    /// The model id the server serves (`GET /v1/models`, first entry).
    pub async fn served_model(&self) -> Option<String> {
        let v: serde_json::Value = self
            .get("/v1/models", DEFAULT_TIMEOUT)
            .await?
            .json()
            .await
            .ok()?;
        v.get("data")?.get(0)?.get("id")?.as_str().map(String::from)
    }

    /// `GET /server_info` (`/get_server_info` before Nov 2025): the effective settings.
    pub async fn server_info(&self) -> Option<serde_json::Value> {
        for path in ["/server_info", "/get_server_info"] {
            if let Some(r) = self.get(path, DEFAULT_TIMEOUT).await {
                if let Ok(v) = r.json::<serde_json::Value>().await {
                    return Some(v);
                }
            }
        }
        None
    }

    /// `GET /metrics` as text; None when the server exports none (no `--enable-metrics`).
    pub async fn metrics_text(&self) -> Option<String> {
        self.get("/metrics", Duration::from_secs(2))
            .await?
            .text()
            .await
            .ok()
    }

    /// Clear the prefix cache so one load point does not warm the next. SGLang refuses to
    /// flush while requests are running, so retrying for up to `patience` also waits for the
    /// server to be idle. Returns a note when it could not.
    /// `path`: the engine's route (`/flush_cache`, vLLM's `/reset_prefix_cache`, which
    /// answers 200 with `{"success": false}` while blocks are held: retried like a refusal).
    pub async fn flush_cache(&self, path: &str, patience: Duration) -> Option<String> {
        let deadline = tokio::time::Instant::now() + patience;
        let mut last = String::new();
        while tokio::time::Instant::now() < deadline {
            match self
                .client
                .post(format!("{}{path}", self.base_url))
                .send()
                .await
            {
                Ok(r) if r.status().is_success() => {
                    let body = r.text().await.unwrap_or_default();
                    let refused: String = body.chars().filter(|c| !c.is_whitespace()).collect();
                    if !refused.contains("\"success\":false") {
                        return None;
                    }
                    last = format!("answered {}", body.trim());
                }
                Ok(r) => last = format!("HTTP {}", r.status()),
                Err(e) => last = e.to_string(),
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        Some(format!(
            "could not flush the prefix cache before this load point ({last})"
        ))
    }
}
