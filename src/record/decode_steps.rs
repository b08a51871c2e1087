//! results.csv's `decode_steps` cell, written and read here only: the server's decode steps by
//! running batch ([`DecodeSteps`], `observe::steps`), space-separated buckets
//! `running:step_ms:lines[:g|:e]` (`g`: CUDA graphs ran them, `e`: eager, nothing: the log does
//! not say), running with up to 2 decimals and step_ms with 2, e.g. `4:11.20:12:g 8:12.05:30:e`.

use crate::observe::steps::DecodeSteps;

/// The cell of these buckets (empty: none).
pub fn cell(steps: &[DecodeSteps]) -> String {
    steps
        .iter()
        .filter(|s| s.running.is_finite() && s.step_ms.is_finite())
        .map(|s| {
            let running = format!("{:.2}", s.running);
            let running = running.trim_end_matches('0').trim_end_matches('.');
            let graph = match s.graph {
                Some(true) => ":g",
                Some(false) => ":e",
                None => "",
            };
            format!("{running}:{:.2}:{}{graph}", s.step_ms, s.lines)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// One bucket of a cell; None when it is not one (a part missing or not a number, a negative
/// or non-finite number, an unknown graph mark).
fn bucket(text: &str) -> Option<DecodeSteps> {
    let mut parts = text.split(':');
    let num = |p: Option<&str>| {
        p.and_then(|p| p.parse::<f64>().ok())
            .filter(|x| x.is_finite() && *x >= 0.0)
    };
    let running = num(parts.next())?;
    let step_ms = num(parts.next())?;
    let lines = parts.next()?.parse::<u32>().ok()?;
    let graph = match parts.next() {
        None => None,
        Some("g") => Some(true),
        Some("e") => Some(false),
        Some(_) => return None,
    };
    if parts.next().is_some() {
        return None;
    }
    Some(DecodeSteps {
        running,
        step_ms,
        lines,
        graph,
    })
}

/// The buckets of a cell, as far as it reads: an empty cell (a row without server stats, a
/// file from before the column) has none, and a malformed bucket is skipped.
pub fn parse(text: &str) -> Vec<DecodeSteps> {
    text.split_whitespace().filter_map(bucket).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(running: f64, step_ms: f64, lines: u32, graph: Option<bool>) -> DecodeSteps {
        DecodeSteps {
            running,
            step_ms,
            lines,
            graph,
        }
    }

    #[test]
    fn a_cell_reads_back_as_written() {
        let buckets = vec![
            steps(4.0, 11.2, 12, Some(true)),
            steps(8.0, 12.054, 30, Some(false)),
            steps(181.5, 30.0, 40, None),
        ];
        let text = cell(&buckets);
        assert_eq!(text, "4:11.20:12:g 8:12.05:30:e 181.5:30.00:40");
        let back = parse(&text);
        assert_eq!(
            back,
            vec![
                steps(4.0, 11.2, 12, Some(true)),
                steps(8.0, 12.05, 30, Some(false)),
                steps(181.5, 30.0, 40, None),
            ]
        );
        assert_eq!(cell(&back), text);
        assert_eq!(cell(&[]), "");
        assert!(parse("").is_empty());
    }

    #[test]
    fn a_malformed_cell_gives_the_buckets_it_can() {
        let got = parse(
            "  4:11.20:12:g x:1:2 8:12:3:q 9:1 10:2:-1 11:NaN:2 12:2:3:e:z 16:20.5:7  20:inf:2 ",
        );
        assert_eq!(
            got,
            vec![steps(4.0, 11.2, 12, Some(true)), steps(16.0, 20.5, 7, None)]
        );
        assert!(parse("not a cell at all").is_empty());
        assert!(parse(":::").is_empty());
    }
}
