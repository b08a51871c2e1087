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

/// Levenshtein distance between two names: the one measure behind every "did you mean"
/// (results.csv columns, tunable flags).
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    #[test]
    fn edit_distance() {
        assert_eq!(super::edit_distance("kitten", "sitting"), 3);
        assert_eq!(super::edit_distance("", "ab"), 2);
        assert_eq!(super::edit_distance("same", "same"), 0);
    }
}
