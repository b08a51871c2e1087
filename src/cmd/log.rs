//! `sgtune log FILE...`: read SGLang or vLLM logs (the engine found from the log; streaming, constant memory) and print, per file,
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

use crate::cmd::cli::{EventsFormat, LogArgs};
use crate::cmd::{CmdError, ExitCode};
use crate::observe::engine_log::{LogSummarizer, summarize_reader};
use crate::observe::log_scope::build_scope;
use crate::observe::sglang_log::jsonl::line_event;
use crate::observe::sglang_log::{LineReader, Scope};
use crate::report::log::{file_report, render};

use crate::util::say;

fn read_file(path: &Path, scope: Scope) -> io::Result<(LogSummarizer, u64)> {
    let f = File::open(path)?;
    let bytes = f.metadata()?.len();
    Ok((summarize_reader(f, scope, None)?, bytes))
}

/// `sgtune log`.
pub async fn run(args: LogArgs) -> Result<ExitCode, CmdError> {
    let scope =
        build_scope(args.since.as_deref(), args.until.as_deref()).map_err(CmdError::input)?;
    if let Some(out) = &args.html {
        let [file] = args.files.as_slice() else {
            return Err(CmdError::input("--html draws exactly one file"));
        };
        return crate::cmd::report::log_html(file, out);
    }
    if args.follow {
        if args.files.len() != 1 {
            return Err(CmdError::input("--follow reads exactly one file"));
        }
        return follow(&args, scope).await;
    }
    if args.events == Some(EventsFormat::Jsonl) {
        return Ok(events(&args, scope));
    }
    let mut code = ExitCode::Ok;
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
                code = ExitCode::BadInput;
            }
        }
    }
    if !reports.is_empty() {
        let _ = io::stdout().write_all(render(&reports, args.format.into()).as_bytes());
    }
    Ok(code)
}

/// `--events jsonl`: one JSON object per event line, in file order.
fn events(args: &LogArgs, scope: Scope) -> ExitCode {
    let multi = args.files.len() > 1;
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let mut code = ExitCode::Ok;
    for path in &args.files {
        let name = path.display().to_string();
        let mut file = match File::open(path) {
            Ok(f) => f,
            Err(e) => {
                say(&format!("error: {name}: {e}"));
                code = ExitCode::BadInput;
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
            code = ExitCode::BadInput;
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
async fn follow(args: &LogArgs, scope: Scope) -> Result<ExitCode, CmdError> {
    let Some(path) = args.files.first() else {
        return Err(CmdError::input("--follow needs a file"));
    };
    let name = path.display().to_string();
    let open = |p: &Path| -> io::Result<(File, u64)> {
        let f = File::open(p)?;
        let ino = f.metadata()?.ino();
        Ok((f, ino))
    };
    let (mut file, mut ino) = open(path).map_err(|e| CmdError::input(format!("{name}: {e}")))?;
    let refresh = Duration::from_millis(args.refresh_ms.max(50));
    let tty = io::stdout().is_terminal();
    let mut s = LogSummarizer::detect(scope);
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
                    s = LogSummarizer::detect(scope);
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
            text.push_str(&render(&[report], args.format.into()));
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
    Ok(ExitCode::Ok)
}
