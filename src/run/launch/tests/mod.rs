//! The launch's failure-to-row paths, in-process: a scripted server behind the seam's traits
//! (no process, no socket, no sleep), each test asserting the rows and the files in
//! runs/<launch>/.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test may panic: that is its failure

mod before_load;
mod during_load;
mod notes;
mod rows;

use super::seam::{Driven, Launcher, QualityAsk, Server};
use super::{LaunchOutcome, launch_with};
use crate::load::http1;
use crate::load::quality::QualitySample;
use crate::load::sample::{LoadOutcome, LoadTarget};
use crate::observe::client::ClientSummary;
use crate::observe::prom::{Sample, Scrape};
use crate::plan::spec::{SweepSpec, WorkloadSpec};
use crate::record::requests::RequestsCsv;
use crate::record::summary::Summary;
use crate::record::{Phase, RunRecord};
use crate::report::events::RunEvent;
use crate::run::session::{StopReason, Watch};
use crate::run::{Launch, RunContext, signals};
use crate::server::command::LaunchCommand;
use crate::server::failure;
use crate::server::supervise::{LogSink, ReadyOutcome, StopHow, StopOutcome};
use std::cell::RefCell;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How waiting for readiness ends.
#[derive(Clone)]
pub enum Ready {
    // `Ready::Ready` reads as ReadyOutcome::Ready does.
    #[allow(clippy::enum_variant_names)]
    Ready,
    /// Exited with this code before ready (None: still running at the timeout); the decision
    /// is `server::failure::classify`'s, on the script's log.
    Fails(Option<i32>),
    Interrupted,
}

/// One load point as the scripted server plays it.
#[derive(Clone)]
pub struct Load {
    pub completed: u64,
    pub failed: u64,
    pub cut_off: u64,
    pub first_error: Option<String>,
    pub connect_errors: u64,
    /// The time to first token's p99 (ms): what a max-load search judges.
    pub ttft_p99: Option<f64>,
    pub stop: StopReason,
    /// Lines the server logs inside the measured window.
    pub lines: Vec<String>,
    /// Cancel the sweep (an interrupt, or the deadline's guard) during this load.
    pub cancel: bool,
    pub scrapes: Vec<Scrape>,
    /// Warmup requests that succeeded.
    pub warmup_ok: u64,
}

impl Default for Load {
    fn default() -> Self {
        Load {
            completed: 10,
            failed: 0,
            cut_off: 0,
            first_error: None,
            connect_errors: 0,
            ttft_p99: Some(100.0),
            stop: StopReason::Completed,
            lines: (50..54).map(decode_line).collect(),
            cancel: false,
            scrapes: Vec::new(),
            warmup_ok: 0,
        }
    }
}

/// An SGLang Decode line at second `s` of a minute, at 100 tok/s.
pub fn decode_line(s: u32) -> String {
    format!(
        "[2026-09-24 01:47:{s:02}] Decode batch, #running-req: 4, #token: 500, token usage: 0.20, cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 0"
    )
}

/// Everything the scripted server will do, asked in order.
pub struct Script {
    /// A folder made where this launch file goes, so that writing it fails.
    pub blocked: Option<&'static str>,
    /// None: no free port can be had.
    pub free_port: Option<u16>,
    /// A fixed port is still held by someone else.
    pub port_taken: bool,
    /// The program cannot be started (this error).
    pub spawn_error: Option<&'static str>,
    /// Where its log goes instead of server.log (e.g. /dev/full: every write fails).
    pub log_to: Option<PathBuf>,
    /// What it logs while it starts.
    pub start_lines: Vec<String>,
    pub ready: Ready,
    pub base_url: String,
    pub control: Result<(), String>,
    pub server_info: Option<serde_json::Value>,
    pub model: Option<String>,
    /// Every quality prompt's answer fails with this error.
    pub quality_error: Option<String>,
    /// The flush is refused with this note.
    pub flush_refused: Option<String>,
    /// The flush's success line shows in the log.
    pub flush_logged: bool,
    pub loads: Vec<Load>,
    /// What `exited` says (after the load).
    pub exited: Option<String>,
    pub stop: StopOutcome,
}

impl Default for Script {
    fn default() -> Self {
        Script {
            blocked: None,
            free_port: Some(30000),
            port_taken: false,
            spawn_error: None,
            log_to: None,
            start_lines: vec![
                "max_total_num_tokens=4096".into(),
                "The server is fired up and ready to roll!".into(),
            ],
            ready: Ready::Ready,
            base_url: "http://127.0.0.1:30000".into(),
            control: Ok(()),
            server_info: None,
            model: Some("served".into()),
            quality_error: None,
            flush_refused: None,
            flush_logged: true,
            loads: Vec::new(),
            exited: None,
            stop: StopOutcome {
                how: StopHow::Terminated,
                secs: 0.5,
                group_left: false,
                port_free: true,
                exit: Some("exit code 0".into()),
            },
        }
    }
}

/// What the launch asked, in order (`start`, `flush`, `drive`, `quality`, `stop`).
type Calls = Rc<RefCell<Vec<String>>>;

struct Scripted {
    script: RefCell<Option<Script>>,
    calls: Calls,
}

struct ScriptedServer {
    s: Script,
    log: Arc<LogSink>,
    calls: Calls,
}

impl Launcher for Scripted {
    type Server = ScriptedServer;

    fn free_port(&self, _host: &str) -> std::io::Result<u16> {
        let s = self.script.borrow();
        s.as_ref()
            .and_then(|s| s.free_port)
            .ok_or_else(|| std::io::Error::other("all ports taken"))
    }

    fn port_free(&self, _host: &str, _port: u16) -> bool {
        !self.script.borrow().as_ref().is_some_and(|s| s.port_taken)
    }

    fn start(
        &self,
        _cmd: &LaunchCommand,
        _host: &str,
        _port: u16,
        log_path: &Path,
        ready_line: &'static str,
    ) -> std::io::Result<ScriptedServer> {
        let s = self.script.borrow_mut().take().expect("started once");
        self.calls.borrow_mut().push("start".into());
        // As `supervise::launch`: the log file first, then the process.
        let log = LogSink::create(s.log_to.as_deref().unwrap_or(log_path), ready_line)?;
        if let Some(e) = s.spawn_error {
            return Err(std::io::Error::new(std::io::ErrorKind::NotFound, e));
        }
        for l in &s.start_lines {
            log.push(l);
        }
        Ok(ScriptedServer {
            s,
            log,
            calls: self.calls.clone(),
        })
    }
}

impl Server for ScriptedServer {
    fn pid(&self) -> i32 {
        4242
    }

    fn port(&self) -> u16 {
        30000
    }

    fn base_url(&self) -> String {
        self.s.base_url.clone()
    }

    fn log(&self) -> &Arc<LogSink> {
        &self.log
    }

    async fn wait_ready(
        &mut self,
        _timeout: Duration,
        _cancel: &CancellationToken,
        mut progress: impl FnMut(f64, &str),
    ) -> ReadyOutcome {
        progress(0.25, &self.log.last_line());
        match self.s.ready {
            Ready::Ready => ReadyOutcome::Ready { secs: 1.5 },
            Ready::Interrupted => ReadyOutcome::Interrupted,
            Ready::Fails(code) => {
                let exit = code.map(|c| std::process::ExitStatus::from_raw(c << 8));
                ReadyOutcome::Failed(failure::classify(
                    exit.as_ref(),
                    &self.log.tail(),
                    code.is_none(),
                ))
            }
        }
    }

    fn control(&self) -> Result<(), String> {
        self.s.control.clone()
    }

    async fn server_info(&self) -> Option<serde_json::Value> {
        self.s.server_info.clone()
    }

    async fn served_model(&self) -> Option<String> {
        self.s.model.clone()
    }

    async fn quality_pass(&self, a: QualityAsk<'_>) -> Vec<QualitySample> {
        self.calls.borrow_mut().push(format!("quality {}", a.pass));
        a.prompts
            .iter()
            .map(|p| QualitySample {
                run_name: a.run_name.into(),
                launch: a.launch.into(),
                pass: a.pass,
                prompt_id: p.id,
                text: "ok".into(),
                error: self.s.quality_error.clone(),
                ..Default::default()
            })
            .collect()
    }

    async fn flush_cache(&self, path: &str, _patience: Duration) -> Option<String> {
        self.calls.borrow_mut().push(format!("flush {path}"));
        if self.s.flush_refused.is_some() {
            return self.s.flush_refused.clone();
        }
        if self.s.flush_logged {
            self.log.push("Cache flushed successfully!");
        }
        None
    }

    async fn drive(
        &mut self,
        _client: &Arc<http1::Client>,
        w: &WorkloadSpec,
        target: &LoadTarget,
        cancel: &CancellationToken,
        requests_csv: Option<RequestsCsv>,
        watch: &mut dyn Watch,
    ) -> Driven {
        self.calls.borrow_mut().push(format!(
            "drive c{} {} seed {}",
            w.concurrency, target.model, w.seed
        ));
        let l = if self.s.loads.is_empty() {
            Load::default()
        } else {
            self.s.loads.remove(0)
        };
        watch.window(true);
        for line in &l.lines {
            self.log.push(line);
        }
        watch.window(false);
        if l.cancel {
            cancel.cancel();
        }
        let mut client = ClientSummary {
            completed: l.completed,
            failed: l.failed,
            cut_off: l.cut_off,
            first_error: l.first_error.clone(),
            ttft_ms: crate::observe::client::Stats {
                count: l.completed as usize,
                p99: l.ttft_p99,
                ..Default::default()
            },
            ..Default::default()
        };
        if l.connect_errors > 0 {
            client.errors.insert("connect".into(), l.connect_errors);
        }
        Driven {
            session: crate::run::session::SessionOutcome {
                client,
                load: LoadOutcome {
                    cut_off: l.cut_off,
                    warmup_ok: l.warmup_ok,
                    stopped: !l.stop.is_completed(),
                    ..Default::default()
                },
                stop: l.stop,
                requests_csv_error: requests_csv.and_then(|f| f.finish().err()),
            },
            scrapes: l.scrapes,
        }
    }

    fn exited(&mut self) -> Option<String> {
        self.s.exited.clone()
    }

    async fn stop(&mut self, _grace: Duration) -> StopOutcome {
        self.calls.borrow_mut().push("stop".into());
        self.s.stop.clone()
    }
}

/// A spec: one configuration `a`, the workload below, and anything after it.
pub fn spec(workload: &str, rest: &str) -> SweepSpec {
    spec_in("", workload, rest)
}

/// `spec`, with `server` lines added to the server section.
pub fn spec_in(server: &str, workload: &str, rest: &str) -> SweepSpec {
    crate::tune::testing::spec(&format!(
        "{server}configs:\n  - {{name: a, mem_fraction_static: 0.8}}\nworkload:\n  requests: 10\n  input_tokens: 20\n  output_tokens: 20\n{workload}{rest}"
    ))
}

/// What one scripted launch did.
pub struct Ran {
    pub out: LaunchOutcome,
    pub dir: tempfile::TempDir,
    pub launch: Launch,
    pub calls: Vec<String>,
    /// Warnings the launch emitted.
    pub warnings: Vec<String>,
    /// Process groups still registered for the second-signal kill.
    pub groups_left: Vec<i32>,
    pub cancelled: bool,
}

impl Ran {
    pub fn records(&self) -> &[RunRecord] {
        &self.out.records
    }

    pub fn launch_dir(&self) -> PathBuf {
        self.dir.path().join(&self.launch.dir_name)
    }

    /// The files written under runs/<launch>/, sorted.
    pub fn files(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.launch_dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    pub fn summary(&self, name: &str) -> Summary {
        crate::record::summary::read(&self.launch_dir().join(name)).unwrap()
    }
}

/// The first launch the spec plans, as `phase`, run against `script`.
pub fn launch(spec: &SweepSpec, phase: Phase, script: Script) -> Ran {
    let plan = crate::plan::expand::expand(spec);
    let mut launches =
        crate::tune::work::plan_launches(spec, &plan, &|_, _| false, &|_| Vec::new());
    let mut l = launches.remove(0);
    l.phase = phase;
    launch_this(spec, &plan.param_keys, l, script, 1000)
}

pub fn launch_this(
    spec: &SweepSpec,
    param_keys: &[String],
    launch: Launch,
    script: Script,
    vocab_size: u64,
) -> Ran {
    let dir = tempfile::tempdir().unwrap();
    let launch_dir = dir.path().join(&launch.dir_name);
    std::fs::create_dir_all(&launch_dir).unwrap();
    if let Some(b) = script.blocked {
        std::fs::create_dir_all(launch_dir.join(b)).unwrap();
    }
    let cancel = CancellationToken::new();
    let groups = signals::Groups::default();
    let basis = std::sync::Mutex::new(None);
    let ctx = RunContext {
        spec,
        param_keys,
        vocab_size,
        dataset: None,
        cancel: &cancel,
        working_set_basis: &basis,
        groups: &groups,
        slot: None,
        deadline: None,
    };
    let calls: Calls = Rc::default();
    let launcher = Scripted {
        script: RefCell::new(Some(script)),
        calls: calls.clone(),
    };
    let mut warnings = Vec::new();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let out = rt.block_on(launch_with(
        &launcher,
        &ctx,
        &launch,
        &launch_dir,
        &mut |ev| {
            if let RunEvent::Warning { message } = ev {
                warnings.push(message.to_string());
            }
        },
    ));
    let calls = calls.borrow().clone();
    Ran {
        out,
        dir,
        launch,
        calls,
        warnings,
        groups_left: groups.all(),
        cancelled: cancel.is_cancelled(),
    }
}

/// A /metrics scrape with the generation counter at `tokens`.
pub fn scrape(t_s: f64, tokens: f64) -> Scrape {
    Scrape {
        t_s,
        samples: vec![Sample {
            name: "sglang:generation_tokens_total".into(),
            labels: String::new(),
            value: tokens,
        }],
    }
}

/// The message of a row, which must be there.
pub fn message(r: &RunRecord) -> &str {
    r.failure_message.as_deref().unwrap()
}

/// Strings as owned, for comparing file lists.
pub fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}
