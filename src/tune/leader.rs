//! The leader so far: what [`decide`] would name from the rows a folder holds now, with the
//! spec's objective, eligibility (SLO, quality verdicts the rows carry, failures) included.
//! One rule for the table and report.html of a folder without a decision (an interrupted
//! sweep, a folder without decision.json) and for `sgtune status`, so none of them stars or
//! names a configuration the decision would pass over.

use crate::plan::spec::Objective;
use crate::record::rows::Row;
use crate::tune::decision::{Decision, Outcome, decide};

/// The decision's leader at one load point (or at each configuration's highest load within
/// the SLO, for a max-load search).
#[derive(Debug, Clone, PartialEq)]
pub struct Leader {
    /// The load point in words ("concurrency 8", or the max-load search's label).
    pub label: String,
    /// The eligible configuration with the best mean; None: none is eligible yet.
    pub run_name: Option<String>,
    /// The load point of the leader's row (results.csv's: a concurrency or `<rate>/s`); with
    /// a max-load search, its highest load within the SLO.
    pub load_point: String,
    pub outcome: Outcome,
    /// Eligible configurations not separated from the leader.
    pub tied_with: Vec<String>,
}

impl Leader {
    /// The leader in words: "b (a winner by the decision's rule)", "none eligible yet", ...
    pub fn text(&self) -> String {
        match (&self.run_name, self.outcome) {
            (Some(l), Outcome::Winner) => format!("{l} (a winner by the decision's rule)"),
            (Some(l), Outcome::TieWithinNoise) => {
                format!("{l} (tied within noise with {})", self.tied_with.join(", "))
            }
            (Some(l), _) => format!("{l} (the leader; no noise measured, no winner claimed)"),
            (None, _) => "no eligible configuration yet".to_string(),
        }
    }
}

/// The decision over the rows so far (no launch commands, no cost: only who leads and why).
pub fn so_far(objective: &Objective, rows: &[Row]) -> Decision {
    decide("", objective, rows, &Default::default(), Default::default())
}

/// Each load point's leader in a decision, in its order.
pub fn leaders(d: &Decision) -> Vec<Leader> {
    d.points
        .iter()
        .map(|p| {
            let load_point = p
                .leader
                .as_ref()
                .and_then(|l| p.configurations.iter().find(|c| &c.run_name == l))
                .and_then(|c| c.max_load_at_slo.clone())
                .unwrap_or_else(|| p.load_point.clone());
            Leader {
                label: p.label.clone(),
                run_name: p.leader.clone(),
                load_point,
                outcome: p.outcome,
                tied_with: p.tied_with.clone(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::spec::{Bound, Goal};
    use crate::tune::testing::row;

    fn r(name: &str, conc: &str, tok: &str, ttft: &str) -> Row {
        row(&[
            ("run_name", name),
            ("run_id", name),
            ("concurrency", conc),
            ("repeat", "1"),
            ("status", "ok"),
            ("output_tok_s", tok),
            ("ttft_ms_p99", ttft),
        ])
    }

    /// The case: the fastest broke the SLO, so the leader so far is the other one.
    #[test]
    fn the_fastest_that_broke_the_slo_is_not_the_leader() {
        let o = crate::plan::spec::Objective::for_test(
            Goal::Maximize,
            "output_tok_s",
            &[("ttft_ms_p99", Bound::AtMost, 5000.0)],
        );
        let rows = [
            r("mtt2048", "32", "457.7", "44516"),
            r("mtt32768", "32", "314.7", "1867"),
        ];
        let l = leaders(&so_far(&o, &rows));
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].run_name.as_deref(), Some("mtt32768"));
        assert_eq!(l[0].load_point, "32");
        assert_eq!(l[0].label, "concurrency 32");
        // A single eligible configuration wins as the only one.
        assert_eq!(l[0].outcome, Outcome::Winner);
        assert_eq!(
            l[0].text(),
            "mtt32768 (a winner by the decision's rule)",
            "{l:?}"
        );
        // Nothing eligible: no leader, said so.
        let rows = [r("mtt2048", "32", "457.7", "44516")];
        let l = leaders(&so_far(&o, &rows));
        assert_eq!(l[0].run_name, None);
        assert_eq!(l[0].text(), "no eligible configuration yet");
    }

    /// One repeat each: a leader, not a winner, and said so; a tie names the tied ones.
    #[test]
    fn a_leader_without_measured_noise_is_named_as_such() {
        let o = crate::plan::spec::Objective::for_test(Goal::Maximize, "output_tok_s", &[]);
        let rows = [r("a", "8", "100", "1"), r("b", "8", "150", "1")];
        let l = leaders(&so_far(&o, &rows));
        assert_eq!(l[0].run_name.as_deref(), Some("b"));
        assert_eq!(l[0].outcome, Outcome::Unconfirmed);
        assert_eq!(
            l[0].text(),
            "b (the leader; no noise measured, no winner claimed)"
        );
        let rows = [r("a", "8", "100", "1"), r("b", "8", "101", "1")];
        let l = leaders(&so_far(&o, &rows));
        assert_eq!(l[0].outcome, Outcome::TieWithinNoise);
        assert_eq!(l[0].text(), "b (tied within noise with a)");
    }

    /// With a max-load search the leader's load point is its own highest within the SLO.
    #[test]
    fn with_a_max_load_search_the_load_point_is_the_leaders_max_load() {
        let o = crate::plan::spec::Objective::for_test(Goal::Maximize, "output_tok_s", &[]);
        let probe = |name: &str, conc: &str, tok: &str, pass: &str| {
            let mut x = r(name, conc, tok, "1");
            x.set_cell("phase", "probe");
            x.set_cell("probe", pass);
            x
        };
        let rows = [
            probe("a", "8", "100", "pass"),
            probe("a", "16", "180", "pass"),
            probe("a", "32", "190", "fail"),
            probe("b", "8", "90", "pass"),
        ];
        let l = leaders(&so_far(&o, &rows));
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].run_name.as_deref(), Some("a"));
        assert_eq!(l[0].load_point, "16");
    }
}
