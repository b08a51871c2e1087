//! requests.csv (`requests<suffix>.csv` in a launch folder, or `sgtune load --output`): one
//! row per request as the client saw it, the raw instants every summary number is computed
//! from. Written as requests finish ([`RequestsCsv`], so a crash keeps the finished lines),
//! read back typed ([`read`], report.html's charts).
//!
//! The sample is the load stage's ([`RequestSample`]); the encoding is here, so the file has one
//! writer and one reader.

use super::ReadError;
use super::store::{CsvFile, StoreError};
use crate::load::sample::{ErrorKind, Phase, RequestSample};
use std::path::Path;

pub const HEADER: &[&str] = &[
    "phase",
    "index",
    "worker",
    "send_s",
    "scheduled_s",
    "headers_ms",
    "ttft_ms",
    "first_choices_ms",
    "last_content_ms",
    "end_ms",
    "content_chunks",
    "prompt_tokens",
    "completion_tokens",
    "finish_reason",
    "http_status",
    "retried",
    "max_tokens",
    "session",
    "turn",
    "reusable_tokens",
    "sched_lag_ms",
    "read_lag_max_ms",
    "error_kind",
    "error",
    "chunk_ms",
    "chunk_chars",
];

/// One row of requests.csv read back. Times as written: milliseconds (3 decimals) after the
/// send, `send_s` and `scheduled_s` in seconds after the measured window opened, `chunk_ms` in
/// hundredths. A cell that is empty, or that a file from an older sgtune lacks, is None (an
/// empty list, 0, false).
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub phase: Phase,
    pub index: u64,
    pub worker: u64,
    /// None for warm-up requests (they have no place in the measured schedule).
    pub send_s: Option<f64>,
    pub scheduled_s: Option<f64>,
    pub headers_ms: Option<f64>,
    pub ttft_ms: Option<f64>,
    pub first_choices_ms: Option<f64>,
    pub last_content_ms: Option<f64>,
    pub end_ms: Option<f64>,
    pub content_chunks: u64,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub finish_reason: Option<String>,
    pub http_status: Option<u16>,
    pub retried: bool,
    pub max_tokens: u64,
    /// `sessions:`: the session's number in its phase, and the turn (1-based).
    pub session: Option<u64>,
    pub turn: Option<u32>,
    /// Prompt tokens an earlier request already sent (the sample's `reusable_tokens`).
    pub reusable_tokens: Option<u64>,
    pub sched_lag_ms: Option<f64>,
    /// The longest a read's data waited in the socket (the sample keeps every read's).
    pub read_lag_max_ms: Option<f64>,
    pub error_kind: Option<ErrorKind>,
    pub error: Option<String>,
    pub chunk_ms: Vec<f64>,
    pub chunk_chars: Vec<u32>,
}

impl Request {
    /// What the file keeps of a sample, to the precision it is written with when the sample's
    /// times already have it: every field as is, the read lags by their maximum, the chunks
    /// counted.
    pub fn of(s: &RequestSample) -> Request {
        let finite = |v: Option<f64>| v.filter(|x| x.is_finite());
        Request {
            phase: s.phase,
            index: s.index,
            worker: s.worker,
            send_s: finite(Some(s.send_s)),
            scheduled_s: finite(s.scheduled_s),
            headers_ms: finite(s.headers_ms),
            ttft_ms: finite(s.ttft_ms),
            first_choices_ms: finite(s.first_choices_ms),
            last_content_ms: finite(s.last_content_ms),
            end_ms: finite(s.end_ms),
            content_chunks: s.chunk_ms.len() as u64,
            prompt_tokens: s.prompt_tokens,
            completion_tokens: s.completion_tokens,
            finish_reason: s.finish_reason.clone().filter(|r| !r.is_empty()),
            http_status: s.http_status,
            retried: s.retried,
            max_tokens: s.max_tokens,
            session: s.turn.map(|t| t.session),
            turn: s.turn.map(|t| t.turn + 1),
            reusable_tokens: s.reusable_tokens,
            sched_lag_ms: finite(s.sched_lag_ms),
            read_lag_max_ms: finite(s.read_lag_ms.iter().copied().reduce(f64::max)),
            error_kind: s.error_kind,
            error: s.error.clone().filter(|e| !e.is_empty()),
            chunk_ms: s.chunk_ms.clone(),
            chunk_chars: s.chunk_chars.clone(),
        }
    }
}

/// requests.csv being written, a row per request as it finishes (flushed every 64 rows, so a
/// killed run leaves most of them). A write error does not stop the load: the first one comes
/// back from [`RequestsCsv::finish`] for the row's notes.
pub struct RequestsCsv(CsvFile);

impl RequestsCsv {
    /// Create the file with its header.
    pub fn create(path: &Path) -> Result<RequestsCsv, StoreError> {
        CsvFile::create(path, HEADER).map(RequestsCsv)
    }

    /// Append a finished request.
    pub fn add(&mut self, s: &RequestSample) {
        self.0.row(cells(s));
    }

    /// Flush, and say whether every row reached the file.
    pub fn finish(self) -> Result<(), StoreError> {
        self.0.finish()
    }
}

fn opt_f(v: Option<f64>) -> String {
    v.filter(|x| x.is_finite())
        .map(|x| format!("{x:.3}"))
        .unwrap_or_default()
}

/// A sample's cells, in [`HEADER`]'s order.
fn cells(s: &RequestSample) -> [String; 26] {
    [
        match s.phase {
            Phase::Warmup => "warmup".into(),
            Phase::Measured => "measured".into(),
        },
        s.index.to_string(),
        s.worker.to_string(),
        opt_f(Some(s.send_s)),
        opt_f(s.scheduled_s),
        opt_f(s.headers_ms),
        opt_f(s.ttft_ms),
        opt_f(s.first_choices_ms),
        opt_f(s.last_content_ms),
        opt_f(s.end_ms),
        s.chunk_ms.len().to_string(),
        s.prompt_tokens.map(|v| v.to_string()).unwrap_or_default(),
        s.completion_tokens
            .map(|v| v.to_string())
            .unwrap_or_default(),
        s.finish_reason.clone().unwrap_or_default(),
        s.http_status.map(|v| v.to_string()).unwrap_or_default(),
        s.retried.to_string(),
        s.max_tokens.to_string(),
        s.turn.map(|t| t.session.to_string()).unwrap_or_default(),
        s.turn.map(|t| (t.turn + 1).to_string()).unwrap_or_default(),
        s.reusable_tokens.map(|v| v.to_string()).unwrap_or_default(),
        opt_f(s.sched_lag_ms),
        opt_f(s.read_lag_ms.iter().copied().reduce(f64::max)),
        s.error_kind
            .map(|k| k.as_str().to_string())
            .unwrap_or_default(),
        s.error.clone().unwrap_or_default(),
        chunk_list(&s.chunk_ms),
        count_list(&s.chunk_chars),
    ]
}

/// "12.34 15.02 ..." in one buffer (this runs for every token of every request).
fn chunk_list(ms: &[f64]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(ms.len() * 8);
    for (i, m) in ms.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        // Hundredths as an integer: float formatting per token was a visible cost.
        let v = (m * 100.0).round();
        if (0.0..1e15).contains(&v) {
            let v = v as u64;
            let _ = write!(out, "{}.{:02}", v / 100, v % 100);
        } else {
            let _ = write!(out, "{m:.2}");
        }
    }
    out
}

/// "3 1 4 ...": content characters per chunk, aligned with `chunk_list`.
fn count_list(counts: &[u32]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(counts.len() * 3);
    for (i, c) in counts.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let _ = write!(out, "{c}");
    }
    out
}

/// A requests.csv read back, every row in file order; Ok(None) when there is none (a launch
/// that never reached its load). Columns are found by name, so a file from an older sgtune
/// (fewer columns) reads, its missing cells empty; a row cut by a crash (fewer cells than the
/// header) or not CSV is left out, as is any row whose `index` is not a number. A file that is not CSV at all is an
/// error naming it.
pub fn read(path: &Path) -> Result<Option<Vec<Request>>, ReadError> {
    let Some(mut rd) = super::store::open_csv(path)? else {
        return Ok(None);
    };
    let header = rd
        .headers()
        .map_err(|e| ReadError::bad(path, format!("not a requests.csv ({e})")))?
        .clone();
    let cols = Columns(
        HEADER
            .iter()
            .map(|name| header.iter().position(|h| h == *name))
            .collect(),
    );
    let mut out = Vec::new();
    for rec in rd.records() {
        let Ok(rec) = rec else { continue };
        // Every row is written whole: a shorter one is the last line of a crashed run.
        if rec.len() < header.len() {
            continue;
        }
        if let Some(r) = parse_row(&|name| cols.cell(&rec, name)) {
            out.push(r);
        }
    }
    Ok(Some(out))
}

/// Where each of [`HEADER`]'s columns stands in the file read (None: the file lacks it).
struct Columns(Vec<Option<usize>>);

impl Columns {
    fn cell<'r>(&self, rec: &'r csv::StringRecord, name: &str) -> &'r str {
        HEADER
            .iter()
            .position(|h| *h == name)
            .and_then(|i| self.0.get(i).copied().flatten())
            .and_then(|i| rec.get(i))
            .unwrap_or("")
    }
}

/// One row from its cells by column name; None when it is not a request's row.
fn parse_row<'r>(cell: &dyn Fn(&str) -> &'r str) -> Option<Request> {
    let f = |name: &str| cell(name).trim().parse::<f64>().ok();
    let u = |name: &str| cell(name).trim().parse::<u64>().ok();
    let text = |name: &str| Some(cell(name).to_string()).filter(|t| !t.is_empty());
    let list = |name: &str| -> Vec<f64> {
        cell(name)
            .split_ascii_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect()
    };
    Some(Request {
        // Anything but a warm-up row is measured (older files wrote no other phase).
        phase: if cell("phase") == "warmup" {
            Phase::Warmup
        } else {
            Phase::Measured
        },
        index: u("index")?,
        worker: u("worker").unwrap_or(0),
        send_s: f("send_s"),
        scheduled_s: f("scheduled_s"),
        headers_ms: f("headers_ms"),
        ttft_ms: f("ttft_ms"),
        first_choices_ms: f("first_choices_ms"),
        last_content_ms: f("last_content_ms"),
        end_ms: f("end_ms"),
        content_chunks: u("content_chunks").unwrap_or(0),
        prompt_tokens: u("prompt_tokens"),
        completion_tokens: u("completion_tokens"),
        finish_reason: text("finish_reason"),
        http_status: cell("http_status").trim().parse().ok(),
        retried: cell("retried") == "true",
        max_tokens: u("max_tokens").unwrap_or(0),
        session: u("session"),
        turn: cell("turn").trim().parse().ok(),
        reusable_tokens: u("reusable_tokens"),
        sched_lag_ms: f("sched_lag_ms"),
        read_lag_max_ms: f("read_lag_max_ms"),
        error_kind: ErrorKind::parse(cell("error_kind")),
        error: text("error"),
        chunk_ms: list("chunk_ms"),
        chunk_chars: cell("chunk_chars")
            .split_ascii_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_list_is_space_separated() {
        assert_eq!(count_list(&[3, 1, 12]), "3 1 12");
        assert_eq!(count_list(&[]), "");
    }

    #[test]
    fn chunk_list_is_hundredths_of_a_millisecond() {
        let ms = [0.0, 0.004, 0.006, 1.5, 12.345_6, 99.999, 123_456.789];
        let out = chunk_list(&ms);
        assert_eq!(out, "0.00 0.00 0.01 1.50 12.35 100.00 123456.79");
        for (text, v) in out.split(' ').zip(ms) {
            let back: f64 = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
            assert!((back - v).abs() <= 0.005 + 1e-9, "{text} vs {v}");
        }
    }

    /// A measured request with every cell set, at the file's precision.
    fn measured() -> RequestSample {
        RequestSample {
            phase: Phase::Measured,
            index: 7,
            worker: 3,
            send_s: 1.25,
            headers_ms: Some(10.5),
            ttft_ms: Some(20.125),
            last_content_ms: Some(99.5),
            first_choices_ms: Some(19.75),
            end_ms: Some(100.25),
            chunk_ms: vec![20.25, 40.5, 99.5],
            chunk_chars: vec![4, 1, 12],
            read_lag_ms: vec![0.5, 2.25, 1.0],
            prompt_tokens: Some(64),
            completion_tokens: Some(3),
            finish_reason: Some("length".into()),
            http_status: Some(200),
            retried: true,
            error_kind: None,
            error: None,
            scheduled_s: Some(1.125),
            sched_lag_ms: Some(125.0),
            max_tokens: 256,
            turn: Some(crate::load::sample::SessionTurn {
                session: 5,
                turn: 1,
                last: false,
            }),
            reusable_tokens: Some(48),
            reply: Some(crate::load::openai::Reply {
                text: "not written".into(),
                ids: Some(vec![1, 2]),
            }),
        }
    }

    /// A warm-up request that failed: no place in the schedule (NaN), nothing timed, an error
    /// with a comma and a quote in it.
    fn failed_warmup() -> RequestSample {
        RequestSample {
            phase: Phase::Warmup,
            index: 0,
            worker: 0,
            send_s: f64::NAN,
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
            http_status: Some(503),
            retried: false,
            error_kind: Some(ErrorKind::HttpStatus),
            error: Some("HTTP 503: \"busy\", retry later".into()),
            scheduled_s: None,
            sched_lag_ms: None,
            max_tokens: 16,
            turn: None,
            reusable_tokens: None,
            reply: None,
        }
    }

    /// Written as requests finish, read back: each row is the sample as the file keeps it.
    #[test]
    fn requests_read_back_as_written() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("requests.csv");
        let samples = [failed_warmup(), measured()];
        let mut w = RequestsCsv::create(&path).unwrap_or_else(|e| panic!("{e}"));
        for s in &samples {
            w.add(s);
        }
        w.finish().unwrap_or_else(|e| panic!("{e}"));
        let back = read(&path)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("no file"));
        let want: Vec<Request> = samples.iter().map(Request::of).collect();
        assert_eq!(back, want);
        assert_eq!(back[0].send_s, None, "a warm-up has no send time");
        assert_eq!(back[1].read_lag_max_ms, Some(2.25));
        // A session's place, its turn written 1-based.
        assert_eq!(
            (back[1].session, back[1].turn, back[1].reusable_tokens),
            (Some(5), Some(2), Some(48))
        );
        assert_eq!(read(&dir.path().join("none.csv")).ok(), Some(None));
    }

    /// A crash mid-row leaves a partial last line: the finished rows still read.
    #[test]
    fn a_cut_last_line_is_left_out() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("requests.csv");
        let mut w = RequestsCsv::create(&path).unwrap_or_else(|e| panic!("{e}"));
        w.add(&measured());
        w.finish().unwrap_or_else(|e| panic!("{e}"));
        let mut text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
        text.push_str("measured,8,");
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
        let back = read(&path).ok().flatten().unwrap_or_default();
        assert_eq!(back, vec![Request::of(&measured())]);
    }

    /// The demo's requests.csv as sgtune wrote it then: every row reads, warm-up and measured.
    #[test]
    fn the_demo_fixture_reads() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/results/cpu-demo/runs/mtt2048/requests.csv");
        let rows = read(&path)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("no fixture"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(rows.len(), text.lines().count() - 1);
        let first = &rows[0];
        assert_eq!(
            (first.phase, first.index, first.send_s),
            (Phase::Warmup, 0, None)
        );
        assert_eq!(first.ttft_ms, Some(306.815));
        assert_eq!(first.completion_tokens, Some(256));
        assert_eq!(first.finish_reason.as_deref(), Some("length"));
        assert_eq!(first.content_chunks, 256);
        assert_eq!(first.chunk_ms.len(), 256);
        assert!(
            rows.iter()
                .any(|r| r.phase == Phase::Measured && r.send_s.is_some())
        );
    }

    /// An older, narrower file: columns by name, the missing ones empty.
    #[test]
    fn an_older_file_with_fewer_columns_reads() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("requests.csv");
        std::fs::write(
            &path,
            "phase,index,send_s,ttft_ms,end_ms,completion_tokens\nmeasured,0,0.5,100,1100,4\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let rows = read(&path).ok().flatten().unwrap_or_default();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].send_s, Some(0.5));
        assert_eq!(rows[0].completion_tokens, Some(4));
        assert!(rows[0].chunk_ms.is_empty());
        assert_eq!(rows[0].error_kind, None);
    }
}
