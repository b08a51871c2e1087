//! requests.csv: one row per request as the client saw it (the raw instants every summary
//! number is computed from), written as requests finish; plus the client's own CPU clock.

use super::driver::{Phase, RequestSample};

/// CPU time (user + system) this process has used, in seconds.
pub fn process_cpu_s() -> Option<f64> {
    // SAFETY: getrusage fills the struct we pass; zeroed is a valid initial value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return None;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some(tv(ru.ru_utime) + tv(ru.ru_stime))
}

fn opt_f(v: Option<f64>) -> String {
    v.filter(|x| x.is_finite())
        .map(|x| format!("{x:.3}"))
        .unwrap_or_default()
}

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
    "sched_lag_ms",
    "read_lag_max_ms",
    "error_kind",
    "error",
    "chunk_ms",
    "chunk_chars",
];

pub fn row(s: &RequestSample) -> Vec<String> {
    vec![
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

#[cfg(test)]
mod tests {
    use super::{chunk_list, count_list};

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
            let back: f64 = text.parse().expect("a number");
            assert!((back - v).abs() <= 0.005 + 1e-9, "{text} vs {v}");
        }
    }
}
