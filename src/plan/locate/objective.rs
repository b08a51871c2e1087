//! Where a key of `objective:` is in the text, for the checks made once the whole spec is read
//! (`spec::checks`: a goodput column against `workload.slo`).

/// A key of `objective:` that a check after parsing can point at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObjectiveKey {
    /// The column after `maximize:` or `minimize:`.
    Metric,
    /// The key of this column under `slo:`.
    Slo(String),
}

/// 1-based (line, column) of an objective key in the spec text, for checks made after
/// parsing. Falls back to the `objective:` line, then to 1:1.
pub fn locate_objective(text: &str, key: &ObjectiveKey) -> (usize, usize) {
    let Some(start) = text.lines().position(|l| l.starts_with("objective:")) else {
        return (1, 1);
    };
    // The section: its own line and every following line that is indented, blank or a
    // comment, up to the next top-level key.
    let section: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .skip(start)
        .take_while(|(i, l)| {
            *i == start || l.is_empty() || l.starts_with([' ', '\t', '#', '}', ']'])
        })
        .collect();
    let find_word = |word: &str, from: (usize, usize)| -> Option<(usize, usize)> {
        section
            .iter()
            .filter(|(i, _)| *i >= from.0)
            .find_map(|(i, l)| {
                let code = l.split(" #").next().unwrap_or(l);
                let skip = if *i == from.0 { from.1 } else { 0 };
                find_whole_word(code, word, skip).map(|c| (*i, c))
            })
    };
    let found = match key {
        ObjectiveKey::Metric => ["maximize", "minimize"]
            .iter()
            .find_map(|k| find_word(k, (start, 0)))
            .and_then(|(i, c)| {
                // The value after `maximize:`.
                let line = section.iter().find(|(j, _)| *j == i)?.1;
                let rest = &line[c..];
                let colon = rest.find(':')?;
                let after = &rest[colon + 1..];
                let value = after.len() - after.trim_start_matches([' ', '"', '\'']).len();
                Some((i, c + colon + 1 + value))
            }),
        ObjectiveKey::Slo(column) => {
            find_word("slo", (start, 0)).and_then(|(i, c)| find_word(column, (i, c + 3)))
        }
    };
    match found {
        Some((i, c)) => (i + 1, c + 1),
        None => (start + 1, 1),
    }
}

/// Byte offset of `word` in `line` at or after `from`, not part of a longer identifier.
fn find_whole_word(line: &str, word: &str, from: usize) -> Option<usize> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut at = from;
    while let Some(pos) = line.get(at..).and_then(|r| r.find(word)) {
        let begin = at + pos;
        let end = begin + word.len();
        let before_ok = !line[..begin].chars().next_back().is_some_and(ident);
        let after_ok = !line[end..].chars().next().is_some_and(ident);
        if before_ok && after_ok {
            return Some(begin);
        }
        at = end;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objective_keys_are_located_for_later_checks() {
        let text = "name: x\nobjective: {maximize: output_tokps, slo: {ttft_ms_p99: 1, \"tpot\": 2}}\nworkload: {}\n";
        assert_eq!(locate_objective(text, &ObjectiveKey::Metric), (2, 23));
        assert_eq!(
            locate_objective(text, &ObjectiveKey::Slo("ttft_ms_p99".into())),
            (2, 43)
        );
        assert_eq!(
            locate_objective(text, &ObjectiveKey::Slo("tpot".into())),
            (2, 60)
        );
        // Block style; the same column as the metric and as an SLO key.
        let text = "name: x\nobjective:\n  # ttft_ms_p99 is in a comment\n  minimize: ttft_ms_p99\n  slo:\n    ttft_ms_p99: 9   # ttft\nworkload:\n  slo: {ttft_ms_p99: 1}\n";
        assert_eq!(locate_objective(text, &ObjectiveKey::Metric), (4, 13));
        assert_eq!(
            locate_objective(text, &ObjectiveKey::Slo("ttft_ms_p99".into())),
            (6, 5)
        );
        // Not found: the objective line.
        assert_eq!(
            locate_objective(text, &ObjectiveKey::Slo("e2e_ms_p99".into())),
            (2, 1)
        );
        assert_eq!(locate_objective("name: x\n", &ObjectiveKey::Metric), (1, 1));
    }
}
