//! `sgtune log FILE...`: read SGLang logs (streaming, constant memory) and print, per file,
//! version hints, capacity, the measured window, the stats summary, the verdict and, when the
//! log ends in one, the failure with the direction to go. `--events jsonl` prints the event
//! lines instead; `--follow` keeps reading one growing file.
//!
//! Exit status: 0, or 2 when a file cannot be read or the arguments are bad.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, IsTerminal, Write};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use crate::cmd::cli::{EventsFormat, LogArgs, LogFormat};
use crate::cmd::{EXIT_BAD_INPUT, EXIT_OK};
use crate::observe::diagnose::{self, Verdict};
use crate::observe::sglang_log::jsonl::{format_ts, line_event};
use crate::observe::sglang_log::scan::parse_datetime;
use crate::observe::sglang_log::{
    IDLE_GAP_SECS, LineReader, LogWindow, Scope, ServerSummary, Summarizer, Timestamp, cmp_ts,
    summarize_reader,
};
use crate::server::failure::{FailureKind, StartFailure};

fn say(msg: &str) {
    let _ = writeln!(io::stderr(), "{msg}");
}

/// A `--since`/`--until` value.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Bound {
    /// 1-based line number.
    Line(usize),
    /// A time; the bool says it had a fraction of a second.
    Time(Timestamp, bool),
}

fn parse_bound(s: &str) -> Result<Bound, String> {
    let t = s.trim();
    if let Some(n) = t.strip_prefix("line:") {
        let n: usize = n
            .trim()
            .parse()
            .map_err(|_| format!("`{s}`: line:N needs a line number"))?;
        if n == 0 {
            return Err(format!("`{s}`: line numbers start at 1"));
        }
        return Ok(Bound::Line(n));
    }
    // Accept ISO's `T` between date and time.
    let b: String = t
        .char_indices()
        .map(|(i, c)| if i == 10 && c == 'T' { ' ' } else { c })
        .collect();
    match parse_datetime(b.as_bytes(), 0, false) {
        Some((ts, end, frac)) if end == b.len() => Ok(Bound::Time(ts, frac)),
        _ => Err(format!(
            "`{s}` is neither a time (HH:MM:SS, YYYY-MM-DD HH:MM:SS[.mmm]) nor line:N"
        )),
    }
}

/// The window from `--since`/`--until`: lines [since, until], times [since, until].
fn build_scope(since: Option<&str>, until: Option<&str>) -> Result<Scope, String> {
    let mut scope = Scope::default();
    let mut lines: Option<LogWindow> = None;
    if let Some(s) = since {
        match parse_bound(s).map_err(|e| format!("--since {e}"))? {
            Bound::Line(n) => {
                lines = Some(LogWindow {
                    start_line: n - 1,
                    end_line: usize::MAX,
                })
            }
            Bound::Time(t, _) => scope.since = Some(t),
        }
    }
    if let Some(u) = until {
        match parse_bound(u).map_err(|e| format!("--until {e}"))? {
            Bound::Line(n) => {
                lines
                    .get_or_insert(LogWindow {
                        start_line: 0,
                        end_line: usize::MAX,
                    })
                    .end_line = n;
            }
            Bound::Time(mut t, frac) => {
                // Inclusive: up to the end of the second (or just past the given fraction).
                t.secs_of_day += if frac { 1e-6 } else { 1.0 };
                scope.until = Some(t);
            }
        }
    }
    if lines.is_some_and(|w| w.start_line >= w.end_line) {
        return Err("--since is after --until".into());
    }
    if let (Some(a), Some(b)) = (scope.since, scope.until) {
        if cmp_ts(&a, &b) != std::cmp::Ordering::Less {
            return Err("--since is after --until".into());
        }
    }
    scope.lines = lines;
    Ok(scope)
}

/// A failure the log ends in.
#[derive(Debug, Clone, Serialize)]
pub struct FailureReport {
    /// `start-up` (no ready line) or `after ready`.
    pub phase: &'static str,
    pub kind: FailureKind,
    /// The decisive log line.
    pub message: String,
    /// Which way to turn the knobs.
    pub direction: String,
    /// The lines around it.
    pub evidence: Vec<String>,
}

/// Everything `sgtune log` says about one file.
#[derive(Debug, Clone, Serialize)]
pub struct FileReport {
    pub file: String,
    pub bytes: u64,
    /// The offered concurrency the verdict used, and where it came from.
    pub offered: Option<u64>,
    pub offered_source: &'static str,
    pub restricted: bool,
    pub summary: ServerSummary,
    pub verdict: Verdict,
    pub failure: Option<FailureReport>,
}

fn failure_report(f: StartFailure, ready_seen: bool) -> FailureReport {
    let decisive = f
        .evidence
        .iter()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.trim().to_string());
    let message = match (f.kind, decisive) {
        (FailureKind::Crashed, Some(last)) => {
            format!("the server died after the ready line; last log line: {last}")
        }
        (_, Some(line)) => line,
        (_, None) => f.message.clone(),
    };
    FailureReport {
        phase: if ready_seen {
            "after ready"
        } else {
            "start-up"
        },
        kind: f.kind,
        direction: diagnose::failure_direction(f.kind, &message),
        message,
        evidence: f.evidence,
    }
}

/// The report for a log that has been read into `s`.
pub fn file_report(
    file: &str,
    bytes: u64,
    s: &Summarizer,
    concurrency: Option<u64>,
    restricted: bool,
) -> FileReport {
    let summary = s.summary();
    let verdict = diagnose::diagnose(concurrency.unwrap_or(0), 0, None, Some(&summary));
    let failure = diagnose::log_failure(&s.tail(), summary.ready_seen)
        .map(|f| failure_report(f, summary.ready_seen));
    let (offered, offered_source) = match (concurrency, summary.offered_estimate) {
        (Some(c), _) => (Some(c), "--concurrency"),
        (None, Some(e)) => (Some(e), "estimated: max #running-req + #queue-req"),
        (None, None) => (None, "unknown"),
    };
    FileReport {
        file: file.to_string(),
        bytes,
        offered,
        offered_source,
        restricted,
        summary,
        verdict,
        failure,
    }
}

fn num(v: Option<f64>, prec: usize) -> String {
    v.map_or("-".into(), |x| format!("{x:.prec$}"))
}

fn int<T: ToString>(v: Option<T>) -> String {
    v.map_or("-".into(), |x| x.to_string())
}

fn pct(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{:.0}%", x * 100.0))
}

fn human_bytes(b: u64) -> String {
    let b = b as f64;
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} KB", b / 1e3)
    } else {
        format!("{b} B")
    }
}

fn row(o: &mut String, label: &str, text: &str) {
    let _ = writeln!(o, "{label:<12}{text}");
}

fn window_text(r: &FileReport) -> String {
    let s = &r.summary;
    let w = &s.window;
    let mut t = match (w.first_line, w.last_line) {
        (Some(a), Some(b)) => format!("stats lines {}-{}", a + 1, b + 1),
        _ => "no stats lines".to_string(),
    };
    if let (Some(a), Some(b)) = (w.start, w.end) {
        let _ = write!(t, ", {} to {}", format_ts(&a), format_ts(&b));
        if let Some(secs) = w.seconds {
            let _ = write!(t, " ({secs:.0} s)");
        }
    }
    match s.ready_line {
        Some(l) => {
            let _ = write!(t, "; after the ready line ({})", l + 1);
        }
        None => t.push_str("; no ready line, so nothing is excluded as warmup"),
    }
    if w.first_line.is_some() || s.warmup_stats_lines > 0 {
        let first = s.excluded_decode_lines.saturating_sub(s.idle_gap_lines);
        let _ = write!(
            t,
            "; excluded: {} warmup stats lines, {first} first Decode line(s), {} after idle gaps > {IDLE_GAP_SECS:.0} s",
            s.warmup_stats_lines, s.idle_gap_lines
        );
    }
    if r.restricted {
        t.push_str("; restricted by --since/--until");
    }
    t
}

/// The human-readable block for one file.
pub fn render_table(r: &FileReport) -> String {
    let s = &r.summary;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "== {} ({} lines, {})",
        r.file,
        s.lines,
        human_bytes(r.bytes)
    );
    row(&mut o, "version", &s.version.one_line());
    if !s.version.hints.is_empty() {
        row(&mut o, "", &format!("from: {}", s.version.hints.join("; ")));
    }
    let mut cap = Vec::new();
    if let Some(v) = s.max_total_num_tokens {
        cap.push(format!("max_total_num_tokens {v}"));
    }
    if let Some(v) = s.max_running_requests {
        cap.push(format!("max_running_requests {v}"));
    }
    if let Some(v) = s.context_len {
        cap.push(format!("context_len {v}"));
    }
    if let Some(v) = s.chunked_prefill_size {
        cap.push(format!("chunked_prefill_size {v}"));
    }
    if let Some(v) = s.available_mem_gb {
        cap.push(format!("available mem {v:.2} GB"));
    }
    row(
        &mut o,
        "capacity",
        &if cap.is_empty() {
            "no capacity line".to_string()
        } else {
            format!("{} (per DP rank)", cap.join(", "))
        },
    );
    let kv = format!(
        "{}, {}; {}",
        s.kv_cache_dtype.as_deref().unwrap_or("dtype not printed"),
        s.kv_cache_gb.map_or("size not printed".into(), |g| format!(
            "{g:.2} GB K+V per rank"
        )),
        s.hicache_host_gb
            .map_or("no hierarchical cache".into(), |g| format!(
                "hierarchical cache host pool {g:.2} GB per rank"
            ))
    );
    row(&mut o, "kv cache", &kv);
    if !s.launch_args.is_empty() {
        let args: Vec<String> = s
            .launch_args
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        row(&mut o, "server args", &args.join(" "));
    }
    row(&mut o, "window", &window_text(r));
    if s.has_stats() {
        let dp = if s.dp_ranks > 1 {
            format!(", summed over {} DP ranks per interval", s.dp_ranks)
        } else {
            String::new()
        };
        row(
            &mut o,
            "decode",
            &format!(
                "{} lines kept in {} intervals{dp}{}",
                s.stats_lines,
                s.intervals,
                if s.percentiles_approx {
                    "; percentiles from a histogram (±0.2%)"
                } else {
                    ""
                }
            ),
        );
        row(
            &mut o,
            "gen tok/s",
            &format!(
                "mean {}, median {}, p10 {}, p90 {}",
                num(s.gen_throughput_mean, 1),
                num(s.gen_throughput_median, 1),
                num(s.gen_throughput_p10, 1),
                num(s.gen_throughput_p90, 1)
            ),
        );
        row(
            &mut o,
            "running",
            &format!(
                "#running-req mean {}, max {}",
                num(s.running_req_mean, 1),
                int(s.running_req_max)
            ),
        );
        row(
            &mut o,
            "queue",
            &format!(
                "#queue-req mean {}, max {}, > 0 in {} of intervals",
                num(s.queue_req_mean, 1),
                int(s.queue_req_max),
                pct(s.queue_nonzero_share)
            ),
        );
        row(
            &mut o,
            "kv usage",
            &format!(
                "token usage mean {}, p90 {}, max {}",
                num(s.token_usage_mean, 2),
                num(s.token_usage_p90, 2),
                num(s.token_usage_max, 2)
            ),
        );
        row(
            &mut o,
            "retractions",
            &format!(
                "{} ({} requests retracted)",
                s.retractions, s.retracted_requests
            ),
        );
        let graph = match &s.graph_label {
            Some(l) => {
                let mut g = format!("{l} on in {} of Decode lines", pct(s.graph_on_share));
                if s.graphs_disabled {
                    g.push_str(" (the log says graphs are disabled)");
                }
                if let Some(bs) = s.cuda_graph_max_bs {
                    let _ = write!(g, "; captured batch sizes up to {bs}");
                }
                g
            }
            None => "no graph field".to_string(),
        };
        row(&mut o, "graph", &graph);
        if s.garbled_stats_lines > 0 {
            row(
                &mut o,
                "garbled",
                &format!(
                    "{} Decode lines without numbers skipped",
                    s.garbled_stats_lines
                ),
            );
        }
    } else {
        row(
            &mut o,
            "stats",
            &format!(
                "{}{}",
                if s.prefill_lines > 0 {
                    "no Decode lines"
                } else {
                    "no stats lines"
                },
                if s.warmup_stats_lines > 0 {
                    format!(
                        " ({} warmup stats lines before the ready line)",
                        s.warmup_stats_lines
                    )
                } else {
                    String::new()
                }
            ),
        );
    }
    if s.prefill_lines > 0 {
        row(
            &mut o,
            "prefill",
            &format!(
                "{} lines, input tok/s mean {}, cached tokens {} of {} prefill tokens",
                s.prefill_lines,
                num(s.prefill_input_throughput_mean, 1),
                pct(s.cached_token_share),
                s.prefill_new_tokens.saturating_add(s.prefill_cached_tokens)
            ),
        );
    }
    let offered = match r.offered {
        Some(c) => format!(" [offered concurrency {c}: {}]", r.offered_source),
        None => String::new(),
    };
    row(
        &mut o,
        "verdict",
        &format!(
            "{}: {}{offered}",
            r.verdict.kind.as_str(),
            r.verdict.evidence
        ),
    );
    if !r.verdict.hint.is_empty() {
        row(&mut o, "hint", &r.verdict.hint);
    }
    if let Some(f) = &r.failure {
        row(
            &mut o,
            "failure",
            &format!("{} failure ({}): {}", f.phase, f.kind.as_str(), f.message),
        );
        row(&mut o, "direction", &f.direction);
    }
    o
}

const CSV_HEADER: [&str; 44] = [
    "file",
    "lines",
    "ready_line",
    "warmup_stats_lines",
    "stats_lines",
    "prefill_lines",
    "excluded_decode_lines",
    "window_first_line",
    "window_last_line",
    "window_start",
    "window_end",
    "window_seconds",
    "gen_tput_mean",
    "gen_tput_median",
    "gen_tput_p10",
    "gen_tput_p90",
    "running_req_mean",
    "running_req_max",
    "queue_req_mean",
    "queue_req_max",
    "queue_nonzero_share",
    "token_usage_mean",
    "token_usage_p90",
    "token_usage_max",
    "retractions",
    "retracted_requests",
    "graph_label",
    "graph_on_share",
    "prefill_input_tput_mean",
    "cached_token_share",
    "max_total_num_tokens",
    "max_running_requests",
    "context_len",
    "kv_cache_dtype",
    "kv_cache_gb",
    "hicache_host_gb",
    "available_mem_gb",
    "version",
    "offered",
    "verdict",
    "verdict_evidence",
    "failure_kind",
    "failure_message",
    "failure_direction",
];

fn csv_row(r: &FileReport) -> Vec<String> {
    let s = &r.summary;
    let f = |v: Option<f64>| v.map(|x| format!("{x:.4}")).unwrap_or_default();
    let u = |v: Option<u64>| v.map(|x| x.to_string()).unwrap_or_default();
    let line1 = |v: Option<usize>| v.map(|x| (x + 1).to_string()).unwrap_or_default();
    let ts = |t: Option<Timestamp>| t.map(|t| format_ts(&t)).unwrap_or_default();
    vec![
        r.file.clone(),
        s.lines.to_string(),
        line1(s.ready_line),
        s.warmup_stats_lines.to_string(),
        s.stats_lines.to_string(),
        s.prefill_lines.to_string(),
        s.excluded_decode_lines.to_string(),
        line1(s.window.first_line),
        line1(s.window.last_line),
        ts(s.window.start),
        ts(s.window.end),
        f(s.window.seconds),
        f(s.gen_throughput_mean),
        f(s.gen_throughput_median),
        f(s.gen_throughput_p10),
        f(s.gen_throughput_p90),
        f(s.running_req_mean),
        u(s.running_req_max),
        f(s.queue_req_mean),
        u(s.queue_req_max),
        f(s.queue_nonzero_share),
        f(s.token_usage_mean),
        f(s.token_usage_p90),
        f(s.token_usage_max),
        s.retractions.to_string(),
        s.retracted_requests.to_string(),
        s.graph_label.clone().unwrap_or_default(),
        f(s.graph_on_share),
        f(s.prefill_input_throughput_mean),
        f(s.cached_token_share),
        u(s.max_total_num_tokens),
        u(s.max_running_requests),
        u(s.context_len),
        s.kv_cache_dtype.clone().unwrap_or_default(),
        f(s.kv_cache_gb),
        f(s.hicache_host_gb),
        f(s.available_mem_gb),
        s.version.one_line(),
        u(r.offered),
        r.verdict.kind.as_str().to_string(),
        r.verdict.evidence.clone(),
        r.failure
            .as_ref()
            .map(|x| x.kind.as_str().to_string())
            .unwrap_or_default(),
        r.failure
            .as_ref()
            .map(|x| x.message.clone())
            .unwrap_or_default(),
        r.failure
            .as_ref()
            .map(|x| x.direction.clone())
            .unwrap_or_default(),
    ]
}

/// All reports in one format.
pub fn render(reports: &[FileReport], format: LogFormat) -> String {
    match format {
        LogFormat::Table => reports
            .iter()
            .map(render_table)
            .collect::<Vec<_>>()
            .join("\n"),
        LogFormat::Json => serde_json::to_string_pretty(reports).unwrap_or_default() + "\n",
        LogFormat::Csv => {
            let mut w = csv::Writer::from_writer(Vec::new());
            let _ = w.write_record(CSV_HEADER);
            for r in reports {
                let _ = w.write_record(csv_row(r));
            }
            w.into_inner()
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default()
        }
    }
}

fn read_file(path: &Path, scope: Scope) -> io::Result<(Summarizer, u64)> {
    let f = File::open(path)?;
    let bytes = f.metadata()?.len();
    Ok((summarize_reader(f, scope)?, bytes))
}

/// `sgtune log`.
pub async fn run(args: LogArgs) -> i32 {
    let scope = match build_scope(args.since.as_deref(), args.until.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            say(&format!("error: {e}"));
            return EXIT_BAD_INPUT;
        }
    };
    if args.follow {
        if args.files.len() != 1 {
            say("error: --follow reads exactly one file");
            return EXIT_BAD_INPUT;
        }
        return follow(&args, scope).await;
    }
    if args.events == Some(EventsFormat::Jsonl) {
        return events(&args, scope);
    }
    let mut code = EXIT_OK;
    let mut reports = Vec::new();
    for path in &args.files {
        match read_file(path, scope) {
            Ok((s, bytes)) => reports.push(file_report(
                &path.display().to_string(),
                bytes,
                &s,
                args.concurrency,
                scope.is_restricted(),
            )),
            Err(e) => {
                say(&format!("error: {}: {e}", path.display()));
                code = EXIT_BAD_INPUT;
            }
        }
    }
    if !reports.is_empty() {
        let _ = io::stdout().write_all(render(&reports, args.format).as_bytes());
    }
    code
}

/// `--events jsonl`: one JSON object per event line, in file order.
fn events(args: &LogArgs, scope: Scope) -> i32 {
    let multi = args.files.len() > 1;
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let mut code = EXIT_OK;
    for path in &args.files {
        let name = path.display().to_string();
        let mut file = match File::open(path) {
            Ok(f) => f,
            Err(e) => {
                say(&format!("error: {name}: {e}"));
                code = EXIT_BAD_INPUT;
                continue;
            }
        };
        let mut idx = 0usize;
        let mut last_ts = None;
        let mut closed = false;
        let mut handle = |l: &[u8]| {
            let i = idx;
            idx += 1;
            if closed {
                return;
            }
            let Some(e) = line_event(l) else {
                return;
            };
            if e.ts.is_some() {
                last_ts = e.ts;
            }
            if !scope.contains(i, e.ts.or(last_ts)) {
                return;
            }
            let v = e.to_json(i + 1, multi.then_some(name.as_str()));
            if serde_json::to_writer(&mut out, &v).is_err() || out.write_all(b"\n").is_err() {
                closed = true; // stdout closed (e.g. `| head`): stop quietly.
            }
        };
        let mut lr = LineReader::new();
        if let Err(e) = lr.read_available(&mut file, &mut handle) {
            say(&format!("error: {name}: {e}"));
            code = EXIT_BAD_INPUT;
        }
        lr.finish(&mut handle);
        if closed {
            return code;
        }
    }
    let _ = out.flush();
    code
}

/// `--follow`: read what is there, print the summary, then every `refresh_ms` read what was
/// added and print it again when something was. A file that shrank or was replaced is read
/// again from the start. Ctrl-C ends it (exit 0).
async fn follow(args: &LogArgs, scope: Scope) -> i32 {
    let Some(path) = args.files.first() else {
        return EXIT_BAD_INPUT;
    };
    let name = path.display().to_string();
    let open = |p: &Path| -> io::Result<(File, u64)> {
        let f = File::open(p)?;
        let ino = f.metadata()?.ino();
        Ok((f, ino))
    };
    let (mut file, mut ino) = match open(path) {
        Ok(x) => x,
        Err(e) => {
            say(&format!("error: {name}: {e}"));
            return EXIT_BAD_INPUT;
        }
    };
    let refresh = Duration::from_millis(args.refresh_ms.max(50));
    let tty = io::stdout().is_terminal();
    let mut s = Summarizer::new(scope);
    let mut lr = LineReader::new();
    let mut offset = 0u64;
    let mut dirty = true;
    let mut note = "";
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let mut ctrl_c_ok = true;
    loop {
        if let Ok(m) = std::fs::metadata(path) {
            if m.ino() != ino || m.len() < offset {
                if let Ok((f, i)) = open(path) {
                    file = f;
                    ino = i;
                    s = Summarizer::new(scope);
                    lr.reset();
                    offset = 0;
                    dirty = true;
                    note = " (the file was truncated or replaced: started over)";
                }
            }
        }
        match lr.read_available(&mut file, &mut |l| s.feed_line(l)) {
            Ok(n) => {
                offset += n;
                dirty |= n > 0;
            }
            Err(e) => say(&format!("warning: {name}: {e}")),
        }
        if dirty {
            let report = file_report(&name, offset, &s, args.concurrency, scope.is_restricted());
            let mut text = String::new();
            if tty {
                text.push_str("\x1b[H\x1b[2J");
            }
            let _ = writeln!(
                text,
                "-- sgtune log --follow {name}: {} lines at {}{note}; Ctrl-C stops",
                s.lines(),
                chrono::Local::now().format("%H:%M:%S")
            );
            text.push_str(&render(&[report], args.format));
            let mut out = io::stdout().lock();
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
            dirty = false;
            note = "";
        }
        tokio::select! {
            r = &mut ctrl_c, if ctrl_c_ok => {
                if r.is_ok() {
                    break;
                }
                ctrl_c_ok = false;
            }
            _ = tokio::time::sleep(refresh) => {}
        }
    }
    EXIT_OK
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds() {
        assert_eq!(parse_bound("line:77"), Ok(Bound::Line(77)));
        assert!(parse_bound("line:0").is_err());
        assert!(parse_bound("line:x").is_err());
        assert!(parse_bound("yesterday").is_err());
        assert!(parse_bound("15:53:30 extra").is_err());
        let Ok(Bound::Time(t, false)) = parse_bound("2026-11-30T15:53:30") else {
            panic!()
        };
        assert_eq!(t.date, Some((2026, 11, 30)));
        let Ok(Bound::Time(t, true)) = parse_bound("15:53:30.250") else {
            panic!()
        };
        assert!((t.secs_of_day - 57210.25).abs() < 1e-9);

        let s = build_scope(Some("line:77"), Some("line:222")).unwrap_or_default();
        assert_eq!(
            s.lines,
            Some(LogWindow {
                start_line: 76,
                end_line: 222
            })
        );
        let s = build_scope(None, Some("15:53:30")).unwrap_or_default();
        assert!(s.contains(
            5,
            parse_bound("15:53:30.999").ok().and_then(|b| match b {
                Bound::Time(t, _) => Some(t),
                Bound::Line(_) => None,
            })
        ));
        assert!(build_scope(Some("line:10"), Some("line:9")).is_err());
        assert!(build_scope(Some("15:00:00"), Some("14:00:00")).is_err());
    }
}
