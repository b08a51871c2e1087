//! Launch a server in its own process group with its output teed, line by line, to
//! `server.log`; watch for the ready line; stop it the way SGLang likes to be stopped.
//!
//! Readiness: the ready line `The server is fired up and ready to roll!` (printed by every
//! SGLang since v0.1.18, after the warmup request) and then an HTTP answer from `/v1/models`.
//! We do not rely on `GET /health` alone: before Aug 2025 it answered 200 as soon as uvicorn
//! was up, before warmup, and since then it runs a generation, which competes with the load.

use super::command::LaunchCommand;
use super::control::Control;
use super::failure::{self, FailureKind, StartFailure};
use super::reap::{group_alive, signal_group};
use std::collections::VecDeque;
use std::io::Write;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The substring SGLang prints when it is ready (main process, after warmup).
pub const READY_LINE: &str = "The server is fired up and ready to roll";
// (vLLM's is `Engine::Vllm.ready_line()`; `launch` takes the engine's.)

const TAIL_LINES: usize = 400;

struct SinkState {
    file: std::io::BufWriter<std::fs::File>,
    lines: usize,
    tail: VecDeque<String>,
    write_error: Option<String>,
}

/// Where the server's output goes: the raw log file, a tail kept in memory, a line counter
/// (used to mark the measured window) and the ready flag.
pub struct LogSink {
    state: Mutex<SinkState>,
    ready: watch::Sender<bool>,
    /// The engine's ready line.
    ready_line: &'static str,
}

impl LogSink {
    /// Crate-visible so the launch's unit tests can give a scripted server a real log.
    pub(crate) fn create(path: &Path, ready_line: &'static str) -> std::io::Result<Arc<Self>> {
        let file = std::fs::File::create(path)?;
        let (ready, _) = watch::channel(false);
        Ok(Arc::new(LogSink {
            state: Mutex::new(SinkState {
                file: std::io::BufWriter::new(file),
                lines: 0,
                tail: VecDeque::with_capacity(TAIL_LINES),
                write_error: None,
            }),
            ready,
            ready_line,
        }))
    }

    pub(crate) fn push(&self, line: &str) {
        let Ok(mut st) = self.state.lock() else {
            return;
        };
        let res = st
            .file
            .write_all(line.as_bytes())
            .and_then(|_| st.file.write_all(b"\n"))
            .and_then(|_| st.file.flush());
        if let Err(e) = res {
            if st.write_error.is_none() {
                st.write_error = Some(e.to_string());
            }
        }
        st.lines += 1;
        if st.tail.len() == TAIL_LINES {
            st.tail.pop_front();
        }
        st.tail.push_back(line.to_string());
        drop(st);
        if line.contains(self.ready_line) {
            self.ready.send_replace(true);
        }
    }

    /// Lines written so far: a mark for the measured window.
    pub fn line_count(&self) -> usize {
        self.state.lock().map(|s| s.lines).unwrap_or(0)
    }

    pub fn tail(&self) -> Vec<String> {
        self.state
            .lock()
            .map(|s| s.tail.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Whether a line containing `needle` was written after line mark `since` (looked for in
    /// the in-memory tail; false when the tail no longer reaches back that far).
    pub fn seen_since(&self, since: usize, needle: &str) -> bool {
        let Ok(s) = self.state.lock() else {
            return false;
        };
        let new = s.lines.saturating_sub(since).min(s.tail.len());
        s.tail.iter().rev().take(new).any(|l| l.contains(needle))
    }

    pub fn last_line(&self) -> String {
        self.state
            .lock()
            .ok()
            .and_then(|s| s.tail.iter().rev().find(|l| !l.trim().is_empty()).cloned())
            .unwrap_or_default()
    }

    pub fn is_ready(&self) -> bool {
        *self.ready.borrow()
    }

    /// First error writing server.log, if any (the run's log is then incomplete).
    pub fn write_error(&self) -> Option<String> {
        self.state.lock().ok().and_then(|s| s.write_error.clone())
    }
}

async fn pump(reader: impl AsyncRead + Unpin, sink: Arc<LogSink>) {
    let mut r = BufReader::new(reader);
    let mut buf = Vec::with_capacity(4096);
    loop {
        buf.clear();
        match r.read_until(b'\n', &mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                while matches!(buf.last(), Some(b'\n' | b'\r')) {
                    buf.pop();
                }
                sink.push(&String::from_utf8_lossy(&buf));
            }
        }
    }
}

/// A live server process group.
pub struct ServerHandle {
    child: tokio::process::Child,
    pub pid: i32,
    pub host: String,
    pub port: u16,
    pub log: Arc<LogSink>,
    readers: Vec<JoinHandle<()>>,
    pub started: Instant,
    exit: Option<ExitStatus>,
}

/// Pick a free TCP port on `host`, below the kernel's range for outgoing connections (released
/// before the server binds it).
pub fn free_port(host: &str) -> std::io::Result<u16> {
    // Not a port the kernel hands out for outgoing connections: the port is free when checked
    // and bound by the server a second later, and in between the load generator's own
    // connections (and any other process's) take their local ports from the ephemeral range,
    // so a port from that range can be taken in the gap (seen: "address already in use" while
    // tests ran beside each other). Below the range, only a listener takes a port.
    free_port_below(host, ephemeral_range().0, &reserved_dir())
}

/// A free port in [`PORTS_FROM`, `low`), or one the kernel gives (port 0) when that range is
/// empty or has no free port in 64 tries.
fn free_port_below(host: &str, low: u16, reserved: &std::path::Path) -> std::io::Result<u16> {
    let below = low.saturating_sub(PORTS_FROM);
    if below > 0 {
        let mut x = seed();
        for _ in 0..64 {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let port = PORTS_FROM + ((x >> 33) % u64::from(below)) as u16;
            if std::net::TcpListener::bind((host, port)).is_ok() && reserve(reserved, port) {
                return Ok(port);
            }
        }
    }
    let l = std::net::TcpListener::bind((host, 0))?;
    Ok(l.local_addr()?.port())
}

/// How long a port handed out stays reserved for its server: longer than a server takes to
/// bind it (SGLang binds its HTTP port after loading the model; vLLM before).
const RESERVED_FOR: std::time::Duration = std::time::Duration::from_secs(600);

/// Where the reservations of every sgtune on this machine are kept: one empty file per port.
fn reserved_dir() -> std::path::PathBuf {
    std::env::temp_dir().join("sgtune-ports")
}

/// Reserve `port` for a server about to start, unless another sgtune (another sweep, another
/// test beside this one) reserved it within [`RESERVED_FOR`]: a port is free when checked and
/// bound by the server seconds later, and two processes that check in that gap would both
/// pick it (seen: an SGLang server's warm-up answered by a vLLM server's 404 on its port, in
/// two test binaries run side by side). Where nothing can be written, the port is taken
/// unreserved, as before.
fn reserve(dir: &std::path::Path, port: u16) -> bool {
    if std::fs::create_dir_all(dir).is_err() {
        return true;
    }
    let f = dir.join(port.to_string());
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&f)
    {
        Ok(_) => true,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let stale = std::fs::metadata(&f)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > RESERVED_FOR);
            // A stale reservation is taken over (written again: a fresh time).
            stale && std::fs::write(&f, b"").is_ok()
        }
        Err(_) => true,
    }
}

/// The lowest port [`free_port`] picks (below: well-known and registered services).
const PORTS_FROM: u16 = 10_000;

/// The kernel's range of ports for outgoing connections (Linux's default when unreadable).
fn ephemeral_range() -> (u16, u16) {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|t| parse_port_range(&t))
        .unwrap_or((32_768, 60_999))
}

fn parse_port_range(text: &str) -> Option<(u16, u16)> {
    let mut it = text.split_whitespace().map(str::parse::<u16>);
    match (it.next(), it.next()) {
        (Some(Ok(a)), Some(Ok(b))) if a <= b => Some((a, b)),
        _ => None,
    }
}

/// A seed that differs between processes and calls: two sgtune (or two tests) picking at the
/// same moment start from different ports.
fn seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    t ^ (u64::from(std::process::id()) << 32)
}

/// Start the command in a new process group with its output teed to `log_path`.
///
/// The child gets `PR_SET_PDEATHSIG(SIGKILL)`: if sgtune dies for any reason (kill -9, OOM
/// killer, closed terminal) the launcher is killed by the kernel, and SGLang's own children
/// die with it (they set the same signal on their parent). The signal is tied to the thread
/// that forks, so `launch` must be called from a thread that lives as long as the sweep (the
/// runtime's main or worker threads, never a `spawn_blocking` thread).
pub fn launch(
    cmd: &LaunchCommand,
    host: &str,
    port: u16,
    log_path: &Path,
    ready_line: &'static str,
) -> std::io::Result<ServerHandle> {
    let sink = LogSink::create(log_path, ready_line)?;
    let mut c = tokio::process::Command::new(&cmd.program);
    c.args(&cmd.args)
        .envs(cmd.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(false);
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: only async-signal-safe calls (prctl, getppid, _exit) between fork and exec.
    unsafe {
        c.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl: then nobody would kill us.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    let mut child = c.spawn()?;
    let pid = child.id().map(|p| p as i32).unwrap_or(0);
    spawn_reaper(pid);
    let mut readers = Vec::new();
    if let Some(out) = child.stdout.take() {
        readers.push(tokio::spawn(pump(out, sink.clone())));
    }
    if let Some(err) = child.stderr.take() {
        readers.push(tokio::spawn(pump(err, sink.clone())));
    }
    Ok(ServerHandle {
        child,
        pid,
        host: host.to_string(),
        port,
        log: sink,
        readers,
        started: Instant::now(),
        exit: None,
    })
}

/// Defence in depth for the parent-death signal: a tiny watcher process (`sgtune __reap`, in
/// its own process group so a terminal's Ctrl-C does not reach it) that SIGKILLs the server's
/// whole group if sgtune disappears. The parent-death signal only reaches the launcher; a
/// server whose children do not watch their parent would otherwise leave them running.
/// Best effort: if the watcher cannot start, the parent-death signal still applies.
fn spawn_reaper(pgid: i32) {
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    if pgid <= 0 || exe.file_stem().and_then(|s| s.to_str()) != Some("sgtune") {
        return;
    }
    let spawned = tokio::process::Command::new(exe)
        .args(["__reap", &std::process::id().to_string(), &pgid.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn();
    if let Ok(mut child) = spawned {
        tokio::spawn(async move {
            let _ = child.wait().await;
        });
    }
}

/// How waiting for readiness ended.
#[derive(Debug)]
pub enum ReadyOutcome {
    Ready { secs: f64 },
    Failed(StartFailure),
    Interrupted,
}

fn port_free(host: &str, port: u16) -> bool {
    std::net::TcpListener::bind((host, port)).is_ok()
}

impl ServerHandle {
    pub fn base_url(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        format!("http://{host}:{}", self.port)
    }

    /// The exit status if the launcher has exited (non-blocking).
    pub fn try_exit(&mut self) -> Option<ExitStatus> {
        if self.exit.is_none() {
            if let Ok(Some(st)) = self.child.try_wait() {
                self.exit = Some(st);
            }
        }
        self.exit
    }

    /// Wait for the ready line and an HTTP answer; report progress about once a second.
    pub async fn wait_ready(
        &mut self,
        timeout: Duration,
        cancel: &CancellationToken,
        mut progress: impl FnMut(f64, &str),
    ) -> ReadyOutcome {
        let control = match Control::new(&self.base_url()) {
            Ok(c) => c,
            Err(e) => {
                return ReadyOutcome::Failed(StartFailure {
                    kind: FailureKind::LaunchError,
                    message: e.to_string(),
                    evidence: vec![],
                });
            }
        };
        let deadline = self.started + timeout;
        loop {
            if cancel.is_cancelled() {
                return ReadyOutcome::Interrupted;
            }
            if let Some(st) = self.try_exit() {
                self.drain_readers().await;
                return ReadyOutcome::Failed(failure::classify(Some(&st), &self.log.tail(), false));
            }
            if Instant::now() >= deadline {
                return ReadyOutcome::Failed(failure::classify(None, &self.log.tail(), true));
            }
            if self.log.is_ready() && control.models_ok().await {
                return ReadyOutcome::Ready {
                    secs: self.started.elapsed().as_secs_f64(),
                };
            }
            progress(self.started.elapsed().as_secs_f64(), &self.log.last_line());
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(250)) => {}
                _ = cancel.cancelled() => {}
            }
        }
    }

    async fn drain_readers(&mut self) {
        for r in self.readers.drain(..) {
            // The pipes close when the whole group is gone; don't wait forever on a
            // grandchild that still holds them.
            let _ = tokio::time::timeout(Duration::from_secs(5), r).await;
        }
    }

    /// Stop the server: SIGTERM to the launcher only (it shuts its children down itself;
    /// signalling the whole group makes SGLang log a crash), wait up to `grace`, then SIGKILL
    /// the whole group; finally confirm that no process of the group is left and the port is
    /// free. The caller stops the load first: under load SGLang keeps serving after SIGTERM.
    pub async fn stop(&mut self, grace: Duration) -> StopOutcome {
        let t0 = Instant::now();
        let mut how = if self.try_exit().is_some() {
            StopHow::AlreadyExited
        } else {
            // SAFETY: kill(2) on our own child.
            unsafe {
                libc::kill(self.pid, libc::SIGTERM);
            }
            match tokio::time::timeout(grace, self.child.wait()).await {
                Ok(Ok(st)) => {
                    self.exit = Some(st);
                    StopHow::Terminated
                }
                _ => {
                    signal_group(self.pid, libc::SIGKILL);
                    if let Ok(st) = self.child.wait().await {
                        self.exit = Some(st);
                    }
                    StopHow::Killed
                }
            }
        };
        // Children the launcher left behind (or all of them, when it crashed).
        let leftovers_deadline = Instant::now() + Duration::from_secs(5);
        while group_alive(self.pid) && Instant::now() < leftovers_deadline {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        if group_alive(self.pid) {
            signal_group(self.pid, libc::SIGKILL);
            if how != StopHow::AlreadyExited {
                how = StopHow::Killed;
            }
            let deadline = Instant::now() + Duration::from_secs(5);
            while group_alive(self.pid) && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        self.drain_readers().await;
        let port_deadline = Instant::now() + Duration::from_secs(10);
        while !port_free(&self.host, self.port) && Instant::now() < port_deadline {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        StopOutcome {
            how,
            secs: t0.elapsed().as_secs_f64(),
            group_left: group_alive(self.pid),
            port_free: port_free(&self.host, self.port),
            exit: self.exit.as_ref().map(failure::describe_exit),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopHow {
    AlreadyExited,
    Terminated,
    Killed,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StopOutcome {
    pub how: StopHow,
    pub secs: f64,
    /// A process of the group survived even SIGKILL (should never happen).
    pub group_left: bool,
    pub port_free: bool,
    pub exit: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A free port comes from below the kernel's range for outgoing connections, where no
    /// client connection can take it between the check and the server's bind.
    #[test]
    fn a_free_port_is_below_the_ephemeral_range() {
        let (low, _) = ephemeral_range();
        for _ in 0..20 {
            let p = free_port("127.0.0.1").expect("a free port");
            if low > PORTS_FROM {
                assert!(
                    (PORTS_FROM..low).contains(&p),
                    "{p} not in {PORTS_FROM}..{low}"
                );
            }
            // Free: it binds.
            std::net::TcpListener::bind(("127.0.0.1", p)).expect("binds");
        }
        // No room below the range (a kernel range starting at or under 10000): the kernel's
        // choice, not a division by zero.
        let reserved = tempfile::tempdir().expect("tempdir");
        for low in [0, PORTS_FROM] {
            let p = free_port_below("127.0.0.1", low, reserved.path()).expect("a free port");
            assert!(p > 0);
        }
        if std::net::TcpListener::bind(("127.0.0.1", PORTS_FROM)).is_ok() {
            let p = free_port_below("127.0.0.1", PORTS_FROM + 1, reserved.path()).expect("a port");
            assert_eq!(p, PORTS_FROM, "the one port below");
        }
        assert_eq!(parse_port_range("32768\t60999\n"), Some((32768, 60999)));
        // A port reserved is not handed out again while the reservation is fresh; a stale one
        // is taken over; where nothing can be written the port is taken as before.
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(reserve(dir.path(), 12345));
        assert!(
            !reserve(dir.path(), 12345),
            "reserved within the last minutes"
        );
        assert!(reserve(dir.path(), 12346));
        let f = std::fs::File::options()
            .write(true)
            .open(dir.path().join("12345"))
            .expect("the reservation");
        let old = std::time::SystemTime::now() - RESERVED_FOR - std::time::Duration::from_secs(5);
        f.set_modified(old).expect("set its time");
        assert!(
            reserve(dir.path(), 12345),
            "a stale reservation is taken over"
        );
        assert!(!reserve(dir.path(), 12345));
        let not_a_dir = dir.path().join("12346");
        assert!(
            reserve(&not_a_dir, 1),
            "nothing can be written there: taken unreserved"
        );
        assert_eq!(parse_port_range("9 1"), None);
        assert_eq!(parse_port_range(""), None);
    }
}
