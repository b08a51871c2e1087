//! results.csv's `turn_latency` cell (`sessions:`), written and read here only: latency by
//! turn, space-separated buckets `turn:ttft_p50_ms:tpot_p50_ms:requests` (turn 1-based; the
//! last bucket, [`TURN_BUCKETS`], written `24+`, holds every later turn; a TPOT the bucket has
//! no data for is empty), e.g. `1:120.5:11.20:40 2:95.0:11.31:40`. The writer and the reader
//! live together so the report reads exactly what the row wrote.

use crate::observe::client::{TURN_BUCKETS, TurnStats};

/// The cell of these turn buckets (empty without sessions).
pub fn cell(turns: &[TurnStats]) -> String {
    turns
        .iter()
        .map(|t| {
            let plus = if t.turn >= TURN_BUCKETS { "+" } else { "" };
            let ttft = t.ttft_ms.p50.map(|v| format!("{v:.1}")).unwrap_or_default();
            let tpot = t.tpot_ms.p50.map(|v| format!("{v:.2}")).unwrap_or_default();
            format!("{}{plus}:{ttft}:{tpot}:{}", t.turn, t.ttft_ms.count)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// One bucket of the cell, read back.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TurnLatency {
    /// 1-based turn.
    pub turn: u32,
    /// The last bucket: this turn and every later one (`24+`).
    pub and_later: bool,
    /// TTFT p50 (ms); None when the bucket has none.
    pub ttft_p50_ms: Option<f64>,
    /// TPOT p50 (ms); None when the bucket has none (one-token replies).
    pub tpot_p50_ms: Option<f64>,
    /// The requests in the bucket.
    pub requests: u64,
}

/// One bucket; None when it is not one (a part missing or not a number, turn 0, a negative or
/// non-finite latency, a `+` on a turn other than the last bucket's).
fn bucket(text: &str) -> Option<TurnLatency> {
    let mut parts = text.split(':');
    let turn_text = parts.next()?;
    let (turn_text, and_later) = match turn_text.strip_suffix('+') {
        Some(t) => (t, true),
        None => (turn_text, false),
    };
    let turn = turn_text.parse::<u32>().ok().filter(|t| *t >= 1)?;
    if and_later && turn != TURN_BUCKETS {
        return None;
    }
    // An empty latency is "no data", anything else must be a finite, non-negative number.
    let ms = |p: Option<&str>| -> Option<Option<f64>> {
        match p? {
            "" => Some(None),
            t => t
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .map(Some),
        }
    };
    let ttft_p50_ms = ms(parts.next())?;
    let tpot_p50_ms = ms(parts.next())?;
    let requests = parts.next()?.parse::<u64>().ok()?;
    if parts.next().is_some() {
        return None;
    }
    Some(TurnLatency {
        turn,
        and_later,
        ttft_p50_ms,
        tpot_p50_ms,
        requests,
    })
}

/// The buckets of a cell, as far as it reads: an empty cell (no sessions, a file from before
/// the column) has none, and a malformed bucket is skipped.
pub fn parse(text: &str) -> Vec<TurnLatency> {
    text.split_whitespace().filter_map(bucket).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::client::Stats;

    fn stats(p50: Option<f64>, count: usize) -> Stats {
        Stats {
            p50,
            count,
            ..Default::default()
        }
    }

    #[test]
    fn a_cell_reads_back_as_written() {
        let turns = vec![
            TurnStats {
                turn: 1,
                ttft_ms: stats(Some(120.54), 40),
                tpot_ms: stats(Some(11.2), 40),
            },
            TurnStats {
                turn: 2,
                ttft_ms: stats(Some(95.0), 38),
                tpot_ms: stats(None, 0),
            },
            TurnStats {
                turn: TURN_BUCKETS,
                ttft_ms: stats(Some(300.0), 3),
                tpot_ms: stats(Some(12.0), 3),
            },
        ];
        let c = cell(&turns);
        assert_eq!(c, "1:120.5:11.20:40 2:95.0::38 24+:300.0:12.00:3");
        assert_eq!(
            parse(&c),
            vec![
                TurnLatency {
                    turn: 1,
                    and_later: false,
                    ttft_p50_ms: Some(120.5),
                    tpot_p50_ms: Some(11.2),
                    requests: 40
                },
                TurnLatency {
                    turn: 2,
                    and_later: false,
                    ttft_p50_ms: Some(95.0),
                    tpot_p50_ms: None,
                    requests: 38
                },
                TurnLatency {
                    turn: 24,
                    and_later: true,
                    ttft_p50_ms: Some(300.0),
                    tpot_p50_ms: Some(12.0),
                    requests: 3
                },
            ]
        );
        assert_eq!(cell(&[]), "");
    }

    #[test]
    fn what_does_not_read_is_skipped() {
        assert!(parse("").is_empty());
        let got: Vec<u32> =
            parse("0:1:1:1 3+:1:1:1 x:1:1:1 2:-1:1:1 2:nan:1:1 2:1:1 2:1:1:1:1 2:1:1:x 4:7.5::2")
                .iter()
                .map(|t| t.turn)
                .collect();
        assert_eq!(got, vec![4]);
    }
}
