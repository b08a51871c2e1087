//! The seam between a launch and its server: everything the launch asks of a process or a
//! socket goes through [`Launcher`] (a port, a started process) and [`Server`] (readiness,
//! the control endpoints, one load point, the stop). [`Processes`] is the real one, over
//! `server::supervise` and `server::control`; the unit tests put a scripted server behind
//! the same traits, so every failure-to-row path runs in-process.
//!
//! Native `async fn` in traits (the crate has no `async-trait`): the traits are crate-private
//! and used through generics only, so no boxed futures are needed.

use super::super::session::{self, SessionOutcome, Watch};
use crate::load::http1;
use crate::load::quality::{QualityPrompt, QualitySample};
use crate::load::sample::LoadTarget;
use crate::observe::prom::{self, Scrape};
use crate::plan::quality::Quality;
use crate::plan::spec::WorkloadSpec;
use crate::record::requests::RequestsCsv;
use crate::server::command::LaunchCommand;
use crate::server::control::Control;
use crate::server::failure;
use crate::server::supervise::{self, LogSink, ReadyOutcome, ServerHandle, StopOutcome};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Where a launch gets its port and its server process.
pub(crate) trait Launcher {
    type Server: Server;
    /// A free TCP port on `host` (the kernel's choice).
    fn free_port(&self, host: &str) -> std::io::Result<u16>;
    /// Whether `port` on `host` can be bound now (a fixed port may still be held).
    fn port_free(&self, host: &str, port: u16) -> bool;
    /// Start `cmd`, its output teed to `log_path`; Err: the program could not be started.
    fn start(
        &self,
        cmd: &LaunchCommand,
        host: &str,
        port: u16,
        log_path: &Path,
        ready_line: &'static str,
    ) -> std::io::Result<Self::Server>;
}

/// One quality pass's request: the prompts, and whose rows its samples belong to.
pub(crate) struct QualityAsk<'a> {
    pub q: &'a Quality,
    pub model: &'a str,
    pub prompts: &'a [QualityPrompt],
    pub run_name: &'a str,
    pub launch: &'a str,
    pub pass: u32,
    pub timeout: Duration,
}

/// One load point as driven: the session, and the /metrics scrapes of its measured window.
pub(crate) struct Driven {
    pub session: SessionOutcome,
    pub scrapes: Vec<Scrape>,
}

/// What a launch asks of a started server.
pub(crate) trait Server {
    /// Its process group (for the second-signal kill, and the notes).
    fn pid(&self) -> i32;
    fn port(&self) -> u16;
    fn base_url(&self) -> String;
    /// Its output: server.log, the in-memory tail and the line marks.
    fn log(&self) -> &Arc<LogSink>;
    /// Wait for the ready line and an HTTP answer, or a start failure, or the cancel.
    async fn wait_ready(
        &mut self,
        timeout: Duration,
        cancel: &CancellationToken,
        progress: impl FnMut(f64, &str),
    ) -> ReadyOutcome;
    /// Err: the control-plane client (server info, model, flush, /metrics) cannot be built.
    fn control(&self) -> Result<(), String>;
    async fn server_info(&self) -> Option<serde_json::Value>;
    async fn served_model(&self) -> Option<String>;
    /// One pass of the quality prompts.
    async fn quality_pass(&self, ask: QualityAsk<'_>) -> Vec<QualitySample>;
    /// Flush the prefix cache at `path`, retrying for `patience`; Some(note) when it could not.
    async fn flush_cache(&self, path: &str, patience: Duration) -> Option<String>;
    /// Drive one load point to its end (`run::session`), /metrics scraped inside its window.
    async fn drive(
        &mut self,
        client: &Arc<http1::Client>,
        w: &WorkloadSpec,
        target: &LoadTarget,
        cancel: &CancellationToken,
        requests_csv: Option<RequestsCsv>,
        watch: &mut dyn Watch,
    ) -> Driven;
    /// Some(how it ended) once the process has exited.
    fn exited(&mut self) -> Option<String>;
    /// Stop it within `grace` (then SIGKILL), and check the group and the port.
    async fn stop(&mut self, grace: Duration) -> StopOutcome;
}

/// The real launcher: a process group per server (`server::supervise`).
pub(crate) struct Processes;

/// A supervised server process and the client for its control endpoints.
pub(crate) struct Supervised {
    handle: ServerHandle,
    control: Result<Control, String>,
}

impl Launcher for Processes {
    type Server = Supervised;

    fn free_port(&self, host: &str) -> std::io::Result<u16> {
        supervise::free_port(host)
    }

    fn port_free(&self, host: &str, port: u16) -> bool {
        std::net::TcpListener::bind((host, port)).is_ok()
    }

    fn start(
        &self,
        cmd: &LaunchCommand,
        host: &str,
        port: u16,
        log_path: &Path,
        ready_line: &'static str,
    ) -> std::io::Result<Supervised> {
        let handle = supervise::launch(cmd, host, port, log_path, ready_line)?;
        let control = Control::new(&handle.base_url()).map_err(|e| e.to_string());
        Ok(Supervised { handle, control })
    }
}

/// The launch's watch, plus what only the process knows: whether it exited, and the
/// scraper's switch (on only inside the measured window).
struct ProcessWatch<'a> {
    inner: &'a mut dyn Watch,
    handle: &'a mut ServerHandle,
    measuring: Arc<AtomicBool>,
}

impl Watch for ProcessWatch<'_> {
    fn window(&mut self, open: bool) {
        self.inner.window(open);
        self.measuring.store(open, Ordering::SeqCst);
    }

    fn server_exit(&mut self) -> Option<String> {
        self.handle.try_exit().map(|s| failure::describe_exit(&s))
    }

    fn progress(&mut self, p: session::Progress) {
        self.inner.progress(p);
    }
}

impl Server for Supervised {
    fn pid(&self) -> i32 {
        self.handle.pid
    }

    fn port(&self) -> u16 {
        self.handle.port
    }

    fn base_url(&self) -> String {
        self.handle.base_url()
    }

    fn log(&self) -> &Arc<LogSink> {
        &self.handle.log
    }

    async fn wait_ready(
        &mut self,
        timeout: Duration,
        cancel: &CancellationToken,
        progress: impl FnMut(f64, &str),
    ) -> ReadyOutcome {
        self.handle.wait_ready(timeout, cancel, progress).await
    }

    fn control(&self) -> Result<(), String> {
        self.control.as_ref().map(|_| ()).map_err(Clone::clone)
    }

    async fn server_info(&self) -> Option<serde_json::Value> {
        self.control.as_ref().ok()?.server_info().await
    }

    async fn served_model(&self) -> Option<String> {
        self.control.as_ref().ok()?.served_model().await
    }

    async fn quality_pass(&self, a: QualityAsk<'_>) -> Vec<QualitySample> {
        let base_url = self.base_url();
        crate::load::quality::run_pass(
            &base_url, a.q, a.model, a.prompts, a.run_name, a.launch, a.pass, a.timeout,
        )
        .await
    }

    async fn flush_cache(&self, path: &str, patience: Duration) -> Option<String> {
        match &self.control {
            Ok(c) => c.flush_cache(path, patience).await,
            Err(e) => Some(e.clone()),
        }
    }

    async fn drive(
        &mut self,
        client: &Arc<http1::Client>,
        w: &WorkloadSpec,
        target: &LoadTarget,
        cancel: &CancellationToken,
        requests_csv: Option<RequestsCsv>,
        watch: &mut dyn Watch,
    ) -> Driven {
        // The second source: /metrics, scraped once a second during the measured window.
        let measuring = Arc::new(AtomicBool::new(false));
        let scrape_done = cancel.child_token();
        let scraper = self.control.as_ref().ok().map(|c| {
            tokio::spawn(prom::scrape_loop(
                c.clone(),
                measuring.clone(),
                scrape_done.clone(),
                Duration::from_secs(1),
            ))
        });
        let mut watch = ProcessWatch {
            inner: watch,
            handle: &mut self.handle,
            measuring,
        };
        let session = session::run(client, w, target, cancel, requests_csv, &mut watch).await;
        scrape_done.cancel();
        let scrapes = match scraper {
            Some(s) => s.await.unwrap_or_default(),
            None => Vec::new(),
        };
        Driven { session, scrapes }
    }

    fn exited(&mut self) -> Option<String> {
        self.handle.try_exit().map(|s| failure::describe_exit(&s))
    }

    async fn stop(&mut self, grace: Duration) -> StopOutcome {
        self.handle.stop(grace).await
    }
}
