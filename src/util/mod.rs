//! Small helpers every stage may use; nothing here knows about SGLang.
pub mod sys;

use std::io::Write;

/// The one way sgtune talks to the person at the terminal: a line on stderr. A closed terminal
/// must not turn into a panic, so write errors are ignored here, and only here.
pub fn say(msg: &str) {
    let _ = writeln!(std::io::stderr(), "{msg}");
}

/// Results go to stdout; write errors (a closed pipe) are ignored, as `say` does for stderr.
pub fn out(msg: &str) {
    let _ = writeln!(std::io::stdout(), "{msg}");
}
