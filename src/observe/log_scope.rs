//! `sgtune log --since/--until`: a value read as a line number or a time (`parse_bound`), and
//! the two read into the window a summary keeps to (`build_scope`).

use crate::observe::sglang_log::prefix::parse_datetime;
use crate::observe::sglang_log::{LogWindow, Scope, Timestamp, cmp_ts};

/// A `--since`/`--until` value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    /// 1-based line number.
    Line(usize),
    /// A time; the bool says it had a fraction of a second.
    Time(Timestamp, bool),
}

pub fn parse_bound(s: &str) -> Result<Bound, String> {
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
pub fn build_scope(since: Option<&str>, until: Option<&str>) -> Result<Scope, String> {
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
