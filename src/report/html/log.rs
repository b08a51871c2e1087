//! The one-log page (`sgtune log FILE --html OUT`): the server timeline of any SGLang or vLLM
//! log.

use std::fmt::Write as _;

use super::data::{self, Timeline};
use super::esc;
use super::style::{FOOT, head};
use super::timeline::timeline_charts;

/// `sgtune log FILE --html OUT`: the server timeline of any SGLang or vLLM log.
pub fn log_page(name: &str, t: &Timeline) -> String {
    let mut o = head(&format!("sgtune log: {name}"));
    let _ = write!(
        o,
        "<h1>Server log: {}</h1><p class=\"sub\">{} lines, {} throughput stats lines, {} \
         retractions or preemptions.</p>",
        esc(name),
        t.lines,
        t.gen_tok_s.len(),
        t.retractions.len()
    );
    if t.is_empty() {
        o.push_str("<p class=\"nodata\">No stats lines: nothing to draw.</p>");
    } else {
        let budget = 1500;
        let t = data::downsampled(t.clone(), budget);
        o.push_str("<div class=\"grid\">");
        o.push_str(&timeline_charts("log", &t, &[], &[], budget));
        o.push_str("</div>");
    }
    o.push_str(FOOT);
    o
}
