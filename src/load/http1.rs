//! The streaming requests' own HTTP/1.1 client.
//!
//! Why not reqwest here: hyper's client hands every HTTP chunk from the connection task to the
//! body reader through a channel, one task wake-up per chunk; servers send one chunk per token,
//! so at high token rates that hand-off was the largest cost in the client (profile in
//! docs/benchmarks.md) and made the client, not the server, the limit. Here the request's own
//! task reads the socket, de-chunks the body in place and hands it to the SSE parser: one
//! syscall and one instant per read, however many tokens the read carries.
//!
//! Reading the socket ourselves also gives the kernel's receive timestamp (SO_TIMESTAMPING):
//! how long data sat in the socket before the client read it, the client's read lag.
//!
//! Scope: plain `http://` (a benchmark client talks to the server directly: no TLS, no proxy),
//! one request per connection at a time, keep-alive reuse with an idle limit under uvicorn's 5 s,
//! and no reuse at all with a server seen closing connections after each response.
//! reqwest stays for everything that is not a measured stream.

use std::io;
use std::os::fd::AsRawFd;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncWriteExt, Interest};
use tokio::net::TcpStream;

/// Read buffer size: big enough that one read takes everything a fast server has sent.
const READ_BUF: usize = 64 * 1024;
/// Response heads larger than this are refused (no real server sends one).
const MAX_HEAD: usize = 64 * 1024;

/// Where requests go, parsed from a base URL such as `http://127.0.0.1:30000`.
#[derive(Debug, Clone)]
pub struct Origin {
    host: String,
    port: u16,
    /// `Host:` header value.
    authority: String,
    /// Path of the base URL, without a trailing `/` (usually empty).
    base_path: String,
}

impl Origin {
    pub fn parse(base_url: &str) -> Result<Origin, String> {
        let url = reqwest::Url::parse(base_url).map_err(|e| {
            format!("`{base_url}` is not a URL ({e}); write e.g. http://127.0.0.1:30000")
        })?;
        if url.scheme() != "http" {
            return Err(format!(
                "`{base_url}`: only http:// is supported for load (a benchmark client talks to \
                 the server directly, without TLS)"
            ));
        }
        let host = url
            .host_str()
            .ok_or_else(|| format!("`{base_url}` has no host"))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = url.port_or_known_default().unwrap_or(80);
        let authority = match url.port() {
            Some(p) if host.contains(':') => format!("[{host}]:{p}"),
            Some(p) => format!("{host}:{p}"),
            None => url.host_str().unwrap_or(&host).to_string(),
        };
        Ok(Origin {
            host,
            port,
            authority,
            base_path: url.path().trim_end_matches('/').to_string(),
        })
    }
}

/// A failure before any response byte: the request may be retried on a fresh connection.
#[derive(Debug)]
pub enum SendError {
    Connect(io::Error),
    /// The connection broke while sending, or closed before the first response byte.
    BeforeResponse(io::Error),
    /// Response bytes arrived but were not an HTTP/1.x response head.
    Malformed(String),
    /// The connection broke after response bytes arrived, inside the head.
    HeadCut(io::Error),
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SendError::Connect(e) => write!(f, "connect: {e}"),
            SendError::BeforeResponse(e) => write!(f, "connection lost before any response: {e}"),
            SendError::Malformed(m) => write!(f, "malformed response: {m}"),
            SendError::HeadCut(e) => write!(f, "connection lost inside the response head: {e}"),
        }
    }
}

impl SendError {
    /// Whether nothing of a response was seen, so a retry cannot double-count anything.
    pub fn before_first_byte(&self) -> bool {
        matches!(self, SendError::Connect(_) | SendError::BeforeResponse(_))
    }
}

/// A failure inside the body.
#[derive(Debug)]
pub enum BodyError {
    Io(io::Error),
    /// The connection closed before the body's declared end.
    Cut(String),
    /// The chunked framing was broken.
    Framing(String),
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyError::Io(e) => write!(f, "stream read failed: {e}"),
            BodyError::Cut(m) => write!(f, "stream cut: {m}"),
            BodyError::Framing(m) => write!(f, "bad chunked framing: {m}"),
        }
    }
}

struct Conn {
    sock: TcpStream,
    buf: Box<[u8]>,
    /// Kernel receive timestamps are on for this socket.
    timestamps: bool,
}

/// One socket read: how many bytes, and how long the newest of them waited in the kernel.
struct Received {
    n: usize,
    lag: Option<Duration>,
}

impl Conn {
    async fn open(o: &Origin) -> io::Result<Conn> {
        let sock = TcpStream::connect((o.host.as_str(), o.port)).await?;
        sock.set_nodelay(true)?;
        let timestamps = rx_timestamps_on(&sock);
        Ok(Conn {
            sock,
            buf: vec![0u8; READ_BUF].into_boxed_slice(),
            timestamps,
        })
    }

    /// Read into `buf[from..]`.
    async fn recv(&mut self, from: usize) -> io::Result<Received> {
        let Conn {
            sock,
            buf,
            timestamps,
        } = self;
        let buf = &mut buf[from..];
        loop {
            sock.readable().await?;
            let got = if *timestamps {
                let fd = sock.as_raw_fd();
                sock.try_io(Interest::READABLE, || recv_stamped(fd, buf))
            } else {
                sock.try_read(buf).map(|n| Received { n, lag: None })
            };
            match got {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                other => return other,
            }
        }
    }
}

/// Kernel receive timestamps (Linux on 64-bit x86, ARM and RISC-V, where SO_TIMESTAMPING has
/// the generic value); elsewhere timestamps are off and reads are plain.
#[cfg(all(
    target_os = "linux",
    any(
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "riscv64"
    )
))]
mod stamp {
    use super::Received;
    use std::io;
    use std::os::fd::AsRawFd;
    use std::time::Duration;
    use tokio::net::TcpStream;

    /// Linux SO_TIMESTAMPING (`SO_TIMESTAMPING_OLD`: 37 on every 64-bit architecture but mips,
    /// sparc and parisc; libc does not export it for linux-gnu).
    const SO_TIMESTAMPING: libc::c_int = 37;

    pub fn rx_timestamps_on(sock: &TcpStream) -> bool {
        let flags: libc::c_uint =
            libc::SOF_TIMESTAMPING_RX_SOFTWARE | libc::SOF_TIMESTAMPING_SOFTWARE;
        // SAFETY: setsockopt reads `size_of::<c_uint>()` bytes from a valid pointer.
        unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                SO_TIMESTAMPING,
                (&flags as *const libc::c_uint).cast(),
                std::mem::size_of::<libc::c_uint>() as libc::socklen_t,
            ) == 0
        }
    }

    /// One non-blocking `recvmsg`, returning the bytes read and the age of the kernel's receive
    /// timestamp (the newest data in this read: a lower bound on how long the read waited).
    pub fn recv_stamped(fd: std::os::fd::RawFd, buf: &mut [u8]) -> io::Result<Received> {
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        // Room for one SCM_TIMESTAMPING message (three timespecs) and then some; u64 for alignment.
        let mut control = [0u64; 16];
        // SAFETY: msghdr is plain data; zeroed is a valid empty header, filled in below.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        // SAFETY: every pointer in `msg` points into live buffers of the stated sizes.
        let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_DONTWAIT) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut stamp: Option<libc::timespec> = None;
        // SAFETY: the CMSG_* walk stays within msg_controllen, as the kernel filled it.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == SO_TIMESTAMPING {
                    // struct scm_timestamping { struct timespec ts[3]; }: ts[0] is software.
                    let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::timespec>());
                    if ts.tv_sec != 0 || ts.tv_nsec != 0 {
                        stamp = Some(ts);
                    }
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        let lag = stamp.and_then(|ts| {
            let now = realtime_now()?;
            let at = Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32);
            // A clock step can put the stamp after now: then there is no lag to report.
            now.checked_sub(at)
        });
        Ok(Received { n: n as usize, lag })
    }

    /// CLOCK_REALTIME (the clock of kernel receive timestamps) since the epoch.
    fn realtime_now() -> Option<Duration> {
        // SAFETY: clock_gettime writes one timespec into the struct we pass.
        let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
        if unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) } != 0 {
            return None;
        }
        Some(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
    }
}

#[cfg(not(all(
    target_os = "linux",
    any(
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "riscv64"
    )
)))]
mod stamp {
    use super::Received;
    use tokio::net::TcpStream;

    pub fn rx_timestamps_on(_sock: &TcpStream) -> bool {
        false
    }

    pub fn recv_stamped(_fd: std::os::fd::RawFd, _buf: &mut [u8]) -> std::io::Result<Received> {
        Err(std::io::Error::other("receive timestamps are Linux-only"))
    }
}
use stamp::{recv_stamped, rx_timestamps_on};

/// A client for one origin, with a pool of idle keep-alive connections.
pub struct Client {
    origin: Origin,
    idle: Mutex<Vec<(Conn, Instant)>>,
    idle_timeout: Duration,
    /// Cleared for good once the server has been seen closing a kept-alive connection (see
    /// [`Client::stop_reuse`]): from then on every request opens its own connection.
    reuse: AtomicBool,
}

/// How a request went out (see [`Client::send`]).
#[derive(Debug, Clone, Copy)]
pub struct Attempt {
    /// When the latest attempt started (before its connect, when it needed one): for a
    /// response, the start of the attempt that got it.
    pub started: Instant,
    /// The first attempt failed before any response byte and the request was sent again.
    pub retried: bool,
}

/// One read of a response body.
#[derive(Debug, Clone, Copy)]
pub struct BodyRead {
    /// When the read returned (every byte it carried arrived by then).
    pub at: Instant,
    /// How long the newest of those bytes had waited in the socket (kernel receive timestamp),
    /// where the platform gives one.
    pub lag: Option<Duration>,
}

/// How the body's end is known.
#[derive(Debug)]
enum Framing {
    Chunked(Dechunker),
    Length(u64),
    UntilClose,
}

/// A response whose head has been read; the body is read with [`Response::read`].
pub struct Response<'c> {
    pub status: u16,
    client: &'c Client,
    conn: Option<Conn>,
    framing: Framing,
    reusable: bool,
    /// Body bytes that came with the head: (start, end) in the connection buffer, and the
    /// head's read.
    early: Option<(usize, usize, BodyRead)>,
    done: bool,
}

impl Client {
    /// `idle_timeout`: pooled connections older than this are closed rather than reused
    /// (uvicorn closes idle keep-alive connections at 5 s).
    pub fn new(base_url: &str, idle_timeout: Duration) -> Result<Client, String> {
        Ok(Client {
            origin: Origin::parse(base_url)?,
            idle: Mutex::new(Vec::new()),
            idle_timeout,
            reuse: AtomicBool::new(true),
        })
    }

    /// Whether idle connections are still reused (false once the server was seen closing
    /// them).
    pub fn reuses_connections(&self) -> bool {
        self.reuse.load(Ordering::Relaxed)
    }

    /// The server closed a connection it had left open after a complete response: it
    /// advertises keep-alive but closes after each stream (llama.cpp's server does). Whether
    /// the close is seen in time depends on a race with its FIN (the check in
    /// [`Client::take_idle`] misses most), and a miss costs a failed send and a retry, so
    /// stop reusing this server's connections for the rest of the run: a connect per request
    /// is cheap next to a retry.
    fn stop_reuse(&self) {
        if self.reuse.swap(false, Ordering::Relaxed) {
            if let Ok(mut idle) = self.idle.lock() {
                idle.clear();
            }
        }
    }

    /// The path part of the base URL followed by `path` (e.g. `/v1/completions`).
    pub fn path(&self, path: &str) -> String {
        format!("{}{path}", self.origin.base_path)
    }

    /// A pooled connection that is fresh enough and still open. When the server's FIN is
    /// already here, one non-blocking read sees it: the request goes out on a new connection
    /// instead of failing and being retried, and the server is marked as one that closes.
    fn take_idle(&self) -> Option<Conn> {
        loop {
            if !self.reuses_connections() {
                return None;
            }
            let (c, since) = self.idle.lock().ok()?.pop()?;
            if since.elapsed() >= self.idle_timeout {
                continue;
            }
            let mut probe = [0u8; 1];
            match c.sock.try_read(&mut probe) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Some(c),
                // Unexpected bytes: this connection is confused, not the server's habit.
                Ok(n) if n > 0 => continue,
                // Closed (0) or reset, within the idle limit.
                _ => self.stop_reuse(),
            }
        }
    }

    fn put_idle(&self, c: Conn) {
        if !self.reuses_connections() {
            return;
        }
        if let Ok(mut idle) = self.idle.lock() {
            idle.push((c, Instant::now()));
        }
    }

    /// POST as [`Client::post`], sent again once on a fresh connection when the first attempt
    /// failed before any response byte (nothing of a response was seen, so nothing can be
    /// counted twice; the usual cause is a kept-alive connection the server had just closed).
    /// `attempt` says which attempt the result belongs to; it is updated as the attempts go,
    /// so it is right even when the caller abandons this future at a timeout.
    pub async fn send(
        &self,
        path: &str,
        json: &[u8],
        attempt: &mut Attempt,
    ) -> Result<Response<'_>, SendError> {
        attempt.started = Instant::now();
        attempt.retried = false;
        match self.post(path, json, false).await {
            Err(e) if e.before_first_byte() => {
                attempt.started = Instant::now();
                attempt.retried = true;
                self.post(path, json, true).await
            }
            other => other,
        }
    }

    /// POST a JSON body and read the response head. A pooled connection is used when one is
    /// fresh enough, else a new one. No retry here: the caller decides (see
    /// [`SendError::before_first_byte`]); `fresh` forces a new connection.
    pub async fn post(
        &self,
        path: &str,
        json: &[u8],
        fresh: bool,
    ) -> Result<Response<'_>, SendError> {
        let pooled = if fresh { None } else { self.take_idle() };
        let reused = pooled.is_some();
        let conn = match pooled {
            Some(c) => c,
            None => Conn::open(&self.origin).await.map_err(SendError::Connect)?,
        };
        let sent = self.send_on(conn, path, json).await;
        if reused && matches!(&sent, Err(e) if e.before_first_byte()) {
            // A kept-alive connection closed under us: the close the idle check missed.
            self.stop_reuse();
        }
        sent
    }

    async fn send_on(
        &self,
        mut conn: Conn,
        path: &str,
        json: &[u8],
    ) -> Result<Response<'_>, SendError> {
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: text/event-stream\r\nContent-Length: {}\r\n\r\n",
            self.origin.authority,
            json.len()
        );
        let mut req = Vec::with_capacity(head.len() + json.len());
        req.extend_from_slice(head.as_bytes());
        req.extend_from_slice(json);
        conn.sock
            .write_all(&req)
            .await
            .map_err(SendError::BeforeResponse)?;
        self.read_head(conn).await
    }

    async fn read_head(&self, mut conn: Conn) -> Result<Response<'_>, SendError> {
        let mut filled = 0;
        let mut seen_any = false;
        let mut need_read = true;
        let mut read = BodyRead {
            at: Instant::now(),
            lag: None,
        };
        loop {
            if need_read {
                if filled == MAX_HEAD.min(conn.buf.len()) {
                    return Err(SendError::Malformed(format!(
                        "response head over {MAX_HEAD} bytes"
                    )));
                }
                let lost = |e: io::Error| {
                    if seen_any {
                        SendError::HeadCut(e)
                    } else {
                        SendError::BeforeResponse(e)
                    }
                };
                let got = conn.recv(filled).await.map_err(lost)?;
                read = BodyRead {
                    at: Instant::now(),
                    lag: got.lag,
                };
                if got.n == 0 {
                    return Err(lost(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "connection closed",
                    )));
                }
                seen_any = true;
                filled += got.n;
            }
            need_read = true;
            let mut headers = [httparse::EMPTY_HEADER; 64];
            let mut resp = httparse::Response::new(&mut headers);
            let head_len = match resp.parse(&conn.buf[..filled]) {
                Ok(httparse::Status::Complete(n)) => n,
                Ok(httparse::Status::Partial) => continue,
                Err(e) => {
                    let shown = String::from_utf8_lossy(&conn.buf[..filled.min(80)]).into_owned();
                    return Err(SendError::Malformed(format!("{e}: {shown:?}")));
                }
            };
            let status = resp.code.unwrap_or(0);
            // 1xx (e.g. 100 Continue) heads precede the real one: skip them.
            if (100..200).contains(&status) {
                conn.buf.copy_within(head_len..filled, 0);
                filled -= head_len;
                // The real head may have come in the same read.
                need_read = filled == 0;
                continue;
            }
            let mut framing = Framing::UntilClose;
            let mut keep_alive = resp.version == Some(1);
            for h in resp.headers.iter() {
                let v = String::from_utf8_lossy(h.value).to_ascii_lowercase();
                if h.name.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked") {
                    framing = Framing::Chunked(Dechunker::default());
                } else if h.name.eq_ignore_ascii_case("content-length")
                    && !matches!(framing, Framing::Chunked(_))
                {
                    let n = v
                        .trim()
                        .parse()
                        .map_err(|_| SendError::Malformed(format!("bad Content-Length {v:?}")))?;
                    framing = Framing::Length(n);
                } else if h.name.eq_ignore_ascii_case("connection") {
                    if v.contains("close") {
                        keep_alive = false;
                    } else if v.contains("keep-alive") {
                        keep_alive = true;
                    }
                }
            }
            // These never have a body, whatever the headers say (RFC 9112 §6.3).
            if status == 204 || status == 304 {
                framing = Framing::Length(0);
            }
            let reusable = keep_alive && !matches!(framing, Framing::UntilClose);
            let early = (head_len < filled).then_some((head_len, filled, read));
            return Ok(Response {
                status,
                client: self,
                conn: Some(conn),
                framing,
                reusable,
                early,
                done: false,
            });
        }
    }
}

impl Response<'_> {
    /// Read the next part of the body, handing the de-framed bytes to `f` with the read they
    /// came in (at most once per call). `Ok(None)`: the body is complete (the connection went
    /// back to the pool when it can be reused).
    pub async fn read(
        &mut self,
        f: &mut impl FnMut(BodyRead, &[u8]),
    ) -> Result<Option<BodyRead>, BodyError> {
        if self.done {
            return Ok(None);
        }
        let Some(conn) = self.conn.as_mut() else {
            return Ok(None);
        };
        let (start, end, read) = match self.early.take() {
            Some(e) => e,
            None => {
                let got = conn.recv(0).await.map_err(BodyError::Io)?;
                let read = BodyRead {
                    at: Instant::now(),
                    lag: got.lag,
                };
                if got.n == 0 {
                    return match &self.framing {
                        Framing::UntilClose => {
                            self.finish(false);
                            Ok(None)
                        }
                        Framing::Length(left) => Err(BodyError::Cut(format!(
                            "connection closed with {left} body bytes still to come"
                        ))),
                        Framing::Chunked(_) => Err(BodyError::Cut(
                            "connection closed before the last chunk".into(),
                        )),
                    };
                }
                (0, got.n, read)
            }
        };
        let buf = &mut conn.buf[start..end];
        let (body_len, complete, leftover) = match &mut self.framing {
            Framing::UntilClose => (buf.len(), false, false),
            Framing::Length(left) => {
                let take = (*left).min(buf.len() as u64) as usize;
                *left -= take as u64;
                (take, *left == 0, take < buf.len())
            }
            Framing::Chunked(d) => {
                let (len, used) = d.decode_in_place(buf).map_err(BodyError::Framing)?;
                (len, d.is_done(), used < buf.len())
            }
        };
        if body_len > 0 {
            f(read, &buf[..body_len]);
        }
        if complete {
            // Bytes after the end would be a second response we never asked for: do not reuse.
            self.finish(!leftover);
        }
        Ok(Some(read))
    }

    fn finish(&mut self, clean: bool) {
        self.done = true;
        if let Some(c) = self.conn.take() {
            if clean && self.reusable {
                self.client.put_idle(c);
            }
        }
    }

    /// The rest of the body as text, up to `limit` bytes (error responses).
    pub async fn text(mut self, limit: usize) -> String {
        let mut out = Vec::new();
        while out.len() < limit {
            match self.read(&mut |_, b: &[u8]| out.extend_from_slice(b)).await {
                Ok(Some(_)) => {}
                _ => break,
            }
        }
        out.truncate(limit);
        String::from_utf8_lossy(&out).into_owned()
    }
}

/// Incremental `Transfer-Encoding: chunked` decoder, fed bytes split anywhere.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
enum Chunk {
    /// Reading a size line: the value so far, digits seen, inside an extension.
    #[default]
    SizeStart,
    Size {
        n: u64,
        digits: u8,
        ext: bool,
    },
    SizeLf {
        n: u64,
    },
    Data(u64),
    DataCr,
    DataLf,
    /// After the last chunk: trailer lines until an empty one. `line_start`: at a line start.
    Trailer {
        line_start: bool,
    },
    Done,
}

#[derive(Debug, Default)]
pub struct Dechunker {
    state: Chunk,
}

impl Dechunker {
    pub fn is_done(&self) -> bool {
        self.state == Chunk::Done
    }

    /// Decode `buf` in place: the body bytes it held are moved to its front. Returns (body
    /// bytes, input bytes used); input after the terminating chunk is left unused.
    pub fn decode_in_place(&mut self, buf: &mut [u8]) -> Result<(usize, usize), String> {
        let (mut i, mut w) = (0usize, 0usize);
        while i < buf.len() {
            let b = buf[i];
            self.state = match self.state {
                Chunk::Done => return Ok((w, i)),
                Chunk::SizeStart => match hex(b) {
                    Some(h) => Chunk::Size {
                        n: h,
                        digits: 1,
                        ext: false,
                    },
                    None => return Err(format!("expected a chunk size, got byte {b:#04x}")),
                },
                Chunk::Size { n, digits, ext } => match (b, hex(b)) {
                    (b'\r', _) => Chunk::SizeLf { n },
                    (b'\n', _) => Self::after_size(n),
                    (_, _) if ext => Chunk::Size { n, digits, ext },
                    (_, Some(h)) => {
                        if digits >= 15 {
                            return Err("chunk size too large".into());
                        }
                        Chunk::Size {
                            n: n * 16 + h,
                            digits: digits + 1,
                            ext: false,
                        }
                    }
                    (b';' | b' ' | b'\t', None) => Chunk::Size {
                        n,
                        digits,
                        ext: true,
                    },
                    (_, None) => {
                        return Err(format!("bad byte {b:#04x} in a chunk size"));
                    }
                },
                Chunk::SizeLf { n } => match b {
                    b'\n' => Self::after_size(n),
                    _ => return Err("chunk size line not ended by CRLF".into()),
                },
                Chunk::Data(left) => {
                    let take = (left as usize).min(buf.len() - i);
                    buf.copy_within(i..i + take, w);
                    w += take;
                    i += take;
                    let left = left - take as u64;
                    self.state = if left == 0 {
                        Chunk::DataCr
                    } else {
                        Chunk::Data(left)
                    };
                    continue;
                }
                Chunk::DataCr => match b {
                    b'\r' => Chunk::DataLf,
                    b'\n' => Chunk::SizeStart,
                    _ => return Err("chunk data not followed by CRLF".into()),
                },
                Chunk::DataLf => match b {
                    b'\n' => Chunk::SizeStart,
                    _ => return Err("chunk data not followed by CRLF".into()),
                },
                Chunk::Trailer { line_start } => match b {
                    b'\r' => Chunk::Trailer { line_start },
                    b'\n' if line_start => Chunk::Done,
                    b'\n' => Chunk::Trailer { line_start: true },
                    _ => Chunk::Trailer { line_start: false },
                },
            };
            i += 1;
        }
        Ok((w, i))
    }

    fn after_size(n: u64) -> Chunk {
        if n == 0 {
            Chunk::Trailer { line_start: true }
        } else {
            Chunk::Data(n)
        }
    }
}

fn hex(b: u8) -> Option<u64> {
    (b as char).to_digit(16).map(u64::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_split(input: &[u8], cut: usize) -> Result<(Vec<u8>, bool, usize), String> {
        let mut d = Dechunker::default();
        let mut out = Vec::new();
        let mut used_total = 0;
        for part in [&input[..cut], &input[cut..]] {
            let mut buf = part.to_vec();
            let (n, used) = d.decode_in_place(&mut buf)?;
            out.extend_from_slice(&buf[..n]);
            used_total += used;
            if d.is_done() {
                break;
            }
        }
        Ok((out, d.is_done(), used_total))
    }

    #[test]
    fn dechunks_split_anywhere() {
        let body = b"5\r\nhello\r\n7;name=v\r\n, world\r\nA \r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n";
        for cut in 0..=body.len() {
            let (out, done, used) = decode_split(body, cut).expect("valid framing");
            assert_eq!(out, b"hello, world0123456789", "cut at {cut}");
            assert!(done, "cut at {cut}");
            assert_eq!(used, body.len());
        }
    }

    #[test]
    fn stops_at_the_last_chunk_and_leaves_the_rest() {
        let mut buf = b"3\nabc\n0\n\nHTTP/1.1 200".to_vec();
        let mut d = Dechunker::default();
        let (n, used) = d.decode_in_place(&mut buf).expect("valid");
        assert_eq!(&buf[..n], b"abc");
        assert!(d.is_done());
        assert_eq!(&b"3\nabc\n0\n\nHTTP/1.1 200"[used..], b"HTTP/1.1 200");
    }

    #[test]
    fn rejects_broken_framing() {
        for bad in [
            &b"zz\r\n"[..],
            b"3\r\nabcX",
            b"3\rX",
            b"ffffffffffffffff1\r\n",
        ] {
            let mut buf = bad.to_vec();
            assert!(
                Dechunker::default().decode_in_place(&mut buf).is_err(),
                "{bad:?}"
            );
        }
    }

    /// `body` in chunks of the given sizes (cycled), with an extension on each size line if
    /// `ext`, bare LF line ends unless `crlf`, and a trailer if `trailer`.
    fn chunked(body: &[u8], sizes: &[usize], ext: bool, crlf: bool, trailer: bool) -> Vec<u8> {
        let eol: &[u8] = if crlf { b"\r\n" } else { b"\n" };
        let ext: &[u8] = if ext { b";x=y" } else { b"" };
        let mut out = Vec::new();
        let mut rest = body;
        for &n in sizes.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (chunk, after) = rest.split_at(n.min(rest.len()));
            out.extend_from_slice(format!("{:x}", chunk.len()).as_bytes());
            out.extend_from_slice(ext);
            out.extend_from_slice(eol);
            out.extend_from_slice(chunk);
            out.extend_from_slice(eol);
            rest = after;
        }
        out.push(b'0');
        out.extend_from_slice(eol);
        if trailer {
            out.extend_from_slice(b"X-T: 1");
            out.extend_from_slice(eol);
        }
        out.extend_from_slice(eol);
        out
    }

    mod props {
        use super::*;
        use proptest::collection::vec;
        use proptest::prelude::*;
        use proptest::sample::{Index, select};

        /// The bytes chunked framing is made of, so that random input gets deep into it.
        const FRAMING: &[u8] = b"0123456789abcdefXYZ;\r\n \t";

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]

            #[test]
            fn random_bytes_never_panic_the_dechunker(
                mut buf in prop_oneof![vec(select(FRAMING), 0..64), vec(any::<u8>(), 0..64)],
            ) {
                let len = buf.len();
                let mut d = Dechunker::default();
                if let Ok((n, used)) = d.decode_in_place(&mut buf) {
                    prop_assert!(n <= used && used <= len, "n {n}, used {used}, len {len}");
                }
            }
        }

        proptest! {
            #[test]
            fn chunked_bodies_decode_however_they_are_chunked_and_read(
                body in vec(any::<u8>(), 0..600),
                sizes in vec(1usize..300, 1..8),
                cuts in vec(any::<Index>(), 0..6),
                ext: bool,
                crlf: bool,
                trailer: bool,
            ) {
                let wire = chunked(&body, &sizes, ext, crlf, trailer);
                // Followed by the start of a response nobody asked for, which must be left.
                let mut input = wire.clone();
                input.extend_from_slice(b"HTTP/1.1 200");
                let mut cuts: Vec<usize> = cuts.iter().map(|i| i.index(input.len() + 1)).collect();
                cuts.extend([0, input.len()]);
                cuts.sort_unstable();
                let mut d = Dechunker::default();
                let (mut out, mut used_total) = (Vec::new(), 0);
                for w in cuts.windows(2) {
                    let mut part = input[w[0]..w[1]].to_vec();
                    let (n, used) = d.decode_in_place(&mut part).map_err(TestCaseError::fail)?;
                    out.extend_from_slice(&part[..n]);
                    used_total += used;
                    if d.is_done() {
                        break;
                    }
                }
                prop_assert!(d.is_done());
                prop_assert_eq!(out, body);
                prop_assert_eq!(used_total, wire.len());
            }
        }
    }

    #[test]
    fn origin_parsing() {
        let o = Origin::parse("http://127.0.0.1:30000/").expect("valid");
        assert_eq!((o.host.as_str(), o.port), ("127.0.0.1", 30000));
        assert_eq!(o.authority, "127.0.0.1:30000");
        assert_eq!(o.base_path, "");
        let o = Origin::parse("http://[::1]:8000/proxy/").expect("valid");
        assert_eq!(
            (o.host.as_str(), o.port, o.base_path.as_str()),
            ("::1", 8000, "/proxy")
        );
        let o = Origin::parse("http://localhost").expect("valid");
        assert_eq!((o.port, o.authority.as_str()), (80, "localhost"));
        assert!(Origin::parse("https://example.com").is_err());
        assert!(Origin::parse("not a url").is_err());
    }

    /// A tiny server: answers each request with `responses` in turn (an empty one: close
    /// without answering), and closes the connection after the last.
    async fn serve(responses: Vec<Vec<u8>>) -> (String, tokio::task::JoinHandle<usize>) {
        use tokio::io::AsyncReadExt;
        let l = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", l.local_addr().expect("addr"));
        let h = tokio::spawn(async move {
            let mut accepted = 0;
            let mut it = responses.into_iter().peekable();
            while let Ok((mut s, _)) = l.accept().await {
                accepted += 1;
                loop {
                    let mut b = [0u8; 4096];
                    match s.read(&mut b).await {
                        Ok(n) if n > 0 => {}
                        _ => break,
                    }
                    let Some(r) = it.next() else { return accepted };
                    if r.is_empty() || s.write_all(&r).await.is_err() {
                        break;
                    }
                    if it.peek().is_none() {
                        return accepted;
                    }
                }
            }
            accepted
        });
        (url, h)
    }

    async fn body_of(r: &mut Response<'_>) -> Result<Vec<u8>, BodyError> {
        let mut out = Vec::new();
        while r
            .read(&mut |_, b: &[u8]| out.extend_from_slice(b))
            .await?
            .is_some()
        {}
        Ok(out)
    }

    #[tokio::test]
    async fn reads_chunked_and_length_bodies_and_reuses_the_connection() {
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\ndata: \r\n2\r\nhi\r\n0\r\n\r\n".to_vec();
        let length = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 4\r\n\r\nnope".to_vec();
        let (url, server) = serve(vec![chunked, length]).await;
        let c = Client::new(&url, Duration::from_secs(4)).expect("url");
        let mut r = c.post("/v1/completions", b"{}", false).await.expect("head");
        assert_eq!(r.status, 200);
        assert_eq!(body_of(&mut r).await.expect("body"), b"data: hi");
        drop(r);
        let r = c.post("/v1/completions", b"{}", false).await.expect("head");
        assert_eq!(r.status, 400);
        assert_eq!(r.text(1000).await, "nope");
        drop(c);
        assert_eq!(
            server.await.expect("server"),
            1,
            "both requests on one connection"
        );
    }

    #[tokio::test]
    async fn an_interim_100_continue_in_the_same_read_is_skipped() {
        let both =
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".to_vec();
        let (url, _server) = serve(vec![both]).await;
        let c = Client::new(&url, Duration::from_secs(4)).expect("url");
        let mut r = tokio::time::timeout(Duration::from_secs(5), c.post("/", b"{}", false))
            .await
            .expect("no hang")
            .expect("head");
        assert_eq!(r.status, 200);
        assert_eq!(body_of(&mut r).await.expect("body"), b"ok");
    }

    #[tokio::test]
    async fn a_connection_the_server_closed_is_not_reused() {
        use tokio::io::AsyncReadExt;
        let l = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", l.local_addr().expect("addr"));
        // Like llama.cpp: keep-alive by HTTP/1.1 default, but closed after each response.
        let server = tokio::spawn(async move {
            let mut accepted = 0;
            while let Ok((mut s, _)) = l.accept().await {
                accepted += 1;
                let mut b = [0u8; 4096];
                let _ = s.read(&mut b).await;
                let _ = s.write_all(OK_2).await;
                if accepted == 2 {
                    return accepted;
                }
            }
            accepted
        });
        let c = Client::new(&url, Duration::from_secs(4)).expect("url");
        for _ in 0..2 {
            let mut r = c
                .post("/", b"{}", false)
                .await
                .expect("a response, no retry");
            assert_eq!(body_of(&mut r).await.expect("body"), b"ok");
            drop(r);
            // Let the server's FIN arrive before the next request.
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(server.await.expect("server"), 2);
        assert!(!c.reuses_connections(), "a seen close stops reuse");
    }

    const OK_2: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

    /// `n` requests one after another through [`Client::send`]: how many were retried.
    async fn send_sequentially(c: &Client, n: usize) -> usize {
        let mut retries = 0;
        for i in 0..n {
            let mut a = Attempt {
                started: Instant::now(),
                retried: false,
            };
            let mut r = tokio::time::timeout(Duration::from_secs(5), c.send("/", b"{}", &mut a))
                .await
                .expect("no hang")
                .unwrap_or_else(|e| panic!("request {i}: {e}"));
            assert_eq!(body_of(&mut r).await.expect("body"), b"ok", "request {i}");
            retries += usize::from(a.retried);
        }
        retries
    }

    #[tokio::test]
    async fn a_server_that_closes_after_each_response_costs_at_most_one_retry() {
        use tokio::io::AsyncReadExt;
        const N: usize = 8;
        let l = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", l.local_addr().expect("addr"));
        // Like llama.cpp under load: keep-alive by HTTP/1.1 default, but each connection is
        // closed a moment after its response, too late for the check before reuse to see it:
        // a reused connection takes the next request and is then closed under it.
        let server = tokio::spawn(async move {
            let mut accepted = 0;
            while let Ok((mut s, _)) = l.accept().await {
                accepted += 1;
                let mut b = [0u8; 4096];
                let _ = s.read(&mut b).await;
                let _ = s.write_all(OK_2).await;
                tokio::time::sleep(Duration::from_millis(30)).await;
                drop(s);
            }
            accepted
        });
        let c = Client::new(&url, Duration::from_secs(4)).expect("url");
        let retries = send_sequentially(&c, N).await;
        assert!(retries <= 1, "{retries} retries over {N} requests");
        assert!(!c.reuses_connections(), "the closes were not noticed");
        server.abort();
    }

    #[tokio::test]
    async fn a_keep_alive_server_keeps_its_connection_reused() {
        const N: usize = 8;
        let (url, server) = serve(vec![OK_2.to_vec(); N]).await;
        let c = Client::new(&url, Duration::from_secs(4)).expect("url");
        assert_eq!(send_sequentially(&c, N).await, 0, "no retries");
        assert!(c.reuses_connections());
        drop(c);
        assert_eq!(
            server.await.expect("server"),
            1,
            "all requests on one connection"
        );
    }

    #[tokio::test]
    async fn connection_close_in_the_head_is_honoured() {
        use tokio::io::AsyncReadExt;
        let l = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", l.local_addr().expect("addr"));
        // Says `Connection: close` but leaves the socket open and reads no further request: a
        // client that reused it would wait for an answer that never comes.
        let server = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((mut s, _)) = l.accept().await {
                let mut b = [0u8; 4096];
                let _ = s.read(&mut b).await;
                let _ = s
                    .write_all(
                        b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
                    )
                    .await;
                held.push(s);
            }
        });
        let c = Client::new(&url, Duration::from_secs(4)).expect("url");
        assert_eq!(send_sequentially(&c, 3).await, 0, "no retries");
        server.abort();
    }

    #[tokio::test]
    async fn a_close_before_any_byte_is_retryable_and_a_cut_body_is_not() {
        let cut = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\ndata: \r\n".to_vec();
        let (url, _server) = serve(vec![Vec::new()]).await;
        let c = Client::new(&url, Duration::from_secs(4)).expect("url");
        let e = c.post("/", b"{}", false).await.err().expect("closed");
        assert!(e.before_first_byte(), "{e}");
        let (url, _server) = serve(vec![cut]).await;
        let c = Client::new(&url, Duration::from_secs(4)).expect("url");
        let mut r = c.post("/", b"{}", false).await.expect("head");
        match body_of(&mut r).await {
            Err(BodyError::Cut(m)) => assert!(m.contains("last chunk"), "{m}"),
            other => panic!("expected a cut stream, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn kernel_receive_timestamps_show_how_long_data_waited() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = l.local_addr().expect("addr");
        let server = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((mut s, _)) = l.accept().await {
                let _ = s.write_all(b"ping").await;
                held.push(s);
            }
        });
        let o = Origin::parse(&format!("http://{addr}")).expect("url");
        // The kernel switches receive timestamping on lazily (a deferred static key) when the
        // first socket asks for it, so the first packets can come without one: hold a socket
        // that asked, give the switch time, then measure on fresh connections.
        let _first = Conn::open(&o).await.expect("connect");
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut stamps = Vec::new();
        for _ in 0..3 {
            let mut conn = Conn::open(&o).await.expect("connect");
            tokio::time::sleep(Duration::from_millis(60)).await;
            let got = conn.recv(0).await.expect("read");
            assert_eq!(&conn.buf[..got.n], b"ping");
            if cfg!(all(target_os = "linux", target_arch = "x86_64")) {
                assert!(conn.timestamps, "SO_TIMESTAMPING was refused");
            } else if !conn.timestamps {
                return; // a platform without receive timestamps: nothing to check
            }
            stamps.extend(got.lag);
        }
        server.abort();
        assert!(!stamps.is_empty(), "no receive timestamp in 3 reads");
        for lag in stamps {
            // The data waited at least the 60 ms we slept before reading.
            assert!(lag >= Duration::from_millis(50), "{lag:?}");
        }
    }
}
