//! `sgtune status DIR` for a local sweep: what runs now, what is done, the leader so far and
//! the expected end, from the results folder alone (state.json, results.csv, the decision
//! over the rows so far).

use crate::record::RunStatus;
use crate::record::outcome::SweepEnd;
use crate::record::rows::Row;
use crate::record::state::SweepState;
use crate::tune::decision::Decision;

/// Whether the sgtune that wrote state.json still runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    Running,
    /// Its process is gone without marking the sweep finished (kill -9, a crash, a reboot).
    Gone,
    /// It ran on another host: its process cannot be checked from here.
    Elsewhere,
    Finished,
}

pub struct StatusView<'a> {
    pub dir: &'a str,
    pub sweep: &'a str,
    pub state: &'a SweepState,
    pub live: Liveness,
    pub rows: &'a [Row],
    /// The decision over the rows so far (`tune::leader::so_far`).
    pub decision: Option<&'a Decision>,
}

pub fn render(v: &StatusView<'_>) -> String {
    let s = v.state;
    let mut out = Vec::new();
    let head = match v.live {
        Liveness::Running => format!(
            "{}: running (sgtune pid {} on {}, since {}; updated {})",
            v.sweep, s.pid, s.host, s.started_at, s.updated_at
        ),
        Liveness::Elsewhere => format!(
            "{}: {} on {} (pid {}; not checkable from this host; updated {})",
            v.sweep, s.phase, s.host, s.pid, s.updated_at
        ),
        Liveness::Finished => format!(
            "{}: finished, {} at {}",
            v.sweep,
            s.outcome.map_or("?", SweepEnd::as_str),
            s.finished_at.as_deref().unwrap_or("?")
        ),
        Liveness::Gone => format!(
            "{}: not running: sgtune (pid {} on {}) is gone without finishing (killed or crashed); its last update was at {}",
            v.sweep, s.pid, s.host, s.updated_at
        ),
    };
    out.push(head);
    if let (Some(l), Liveness::Running | Liveness::Elsewhere | Liveness::Gone) = (&s.launch, v.live)
    {
        let now = if v.live == Liveness::Gone {
            "last"
        } else {
            "now"
        };
        let point = s
            .point
            .as_deref()
            .map_or(String::new(), |p| format!(" at {p}"));
        out.push(format!(
            "{now}: launch {}/{} {l}: {}{point} (since {})",
            s.launch_index,
            s.round_launches,
            s.phase,
            s.phase_since.as_deref().unwrap_or("?")
        ));
    }
    let ok = v.rows.iter().filter(|r| r.is_ok()).count();
    let interrupted = v
        .rows
        .iter()
        .filter(|r| r.status() == Some(RunStatus::Interrupted))
        .count();
    let failed = v.rows.len() - ok - interrupted;
    let mut rows = format!("rows: {} ({ok} ok, {failed} failed", v.rows.len());
    if interrupted > 0 {
        rows.push_str(&format!(", {interrupted} interrupted"));
    }
    rows.push(')');
    out.push(rows);
    if v.live != Liveness::Finished {
        let left = s.round_launches.saturating_sub(s.round_done);
        out.push(format!(
            "launches: {} done this session of {} planned at its start; {left} left in this round (a search or repeats: auto may add rounds)",
            s.launches_done, s.planned_launches
        ));
    }
    if let Some(d) = v.decision {
        if d.points.is_empty() {
            out.push("leader so far: none yet (no configuration measured)".to_string());
        }
        for l in crate::tune::leader::leaders(d) {
            out.push(format!("leader so far at {}: {}", l.label, l.text()));
        }
    }
    match (v.live, &s.eta) {
        (Liveness::Running | Liveness::Elsewhere, Some(eta)) => out.push(format!(
            "ETA: {eta} ({})",
            s.eta_basis.as_deref().unwrap_or("estimate")
        )),
        (Liveness::Running | Liveness::Elsewhere, None) => {
            out.push("ETA: not known until the first launch ends".to_string())
        }
        _ => {}
    }
    if let (Some(d), false) = (&s.deadline, v.live == Liveness::Finished) {
        out.push(format!("deadline: {d}"));
    }
    if !s.not_measured.is_empty() {
        out.push(format!(
            "not measured before the deadline ({} launch(es)): {}",
            s.not_measured.len(),
            s.not_measured.join("; ")
        ));
    }
    match v.live {
        Liveness::Gone => out.push(format!(
            "continue it with `sgtune resume {}` (finished rows are kept; the launch in progress is redone)",
            v.dir
        )),
        Liveness::Finished
            if matches!(s.outcome, Some(SweepEnd::Interrupted | SweepEnd::Deadline)) =>
        {
            out.push(format!("continue it with `sgtune resume {}`", v.dir))
        }
        _ => {}
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::spec::{Bound, Goal};

    fn row(name: &str, tok: &str, ttft: &str) -> Row {
        Row::from_cells(
            [
                ("run_name", name),
                ("run_id", name),
                ("concurrency", "8"),
                ("repeat", "1"),
                ("status", "ok"),
                ("output_tok_s", tok),
                ("ttft_ms_p99", ttft),
            ]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string())),
        )
    }

    fn said(rows: &[Row], slo: &[(&str, Bound, f64)]) -> String {
        let o = crate::plan::spec::Objective::for_test(Goal::Maximize, "output_tok_s", slo);
        let d = crate::tune::leader::so_far(&o, rows);
        let state = SweepState::default();
        render(&StatusView {
            dir: "d",
            sweep: "s",
            state: &state,
            live: Liveness::Gone,
            rows,
            decision: Some(&d),
        })
    }

    /// The leader so far is the decision's: with one repeat each, a leader (not "none
    /// eligible"); the fastest that broke the SLO is passed over.
    #[test]
    fn the_leader_so_far_is_the_decisions() {
        let rows = [row("a", "100", "10"), row("b", "150", "10")];
        let t = said(&rows, &[]);
        assert!(
            t.contains(
                "leader so far at concurrency 8: b (the leader; no noise measured, no winner claimed)"
            ),
            "{t}"
        );
        let rows = [row("a", "100", "10"), row("b", "150", "44516")];
        let t = said(&rows, &[("ttft_ms_p99", Bound::AtMost, 5000.0)]);
        assert!(
            t.contains("leader so far at concurrency 8: a (a winner by the decision's rule)"),
            "{t}"
        );
    }
}
