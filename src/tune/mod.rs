//! The tuner: every decision the sweep makes from what it measured, as pure functions of rows
//! and specs (no I/O, no clock, no server). `run/` executes the work these functions ask for;
//! `report/` renders the decision they hand it.
//!
//! - `stats`: estimates over repeats, the pooled noise and the margins, t quantiles, the
//!   `repeats: auto` rule.
//! - `decision`: the decision rule: eligibility, the leader, its margins, why each lost.
//! - `diff`: two sweeps' decisions side by side (`compare A B`): what changed that matters.
//! - `leader`: the leader so far, the decision's rule on the rows a folder holds now.
//! - `effective`: configurations that ran the same server in effect, and what the decision
//!   says about them and about settings not in effect.
//! - `search`: the max-load search's next probe and each probe's judgement.
//! - `preflight`: the memory pre-flight's next attempt and the burst it runs.
//! - `prune`: successive halving, which configurations the lowest load point rules out.
//! - `repeats`: the next round of `repeats: auto`.
//! - `work`: the launches a plan still needs (`Launch`, `Measurement`).
//! - `guide`: the guided tune, the next experiment chosen from the evidence (issue 26).
//! - `path`: a guided tune's path replayed from its rows (the observations, the next step).
//! - `estimate`: how long the launches will take, expected and at worst.
//! - `conclusion`: a sweep's conclusion worked out once (rows judged, decision, path, end),
//!   which every file the end of a sweep writes is written from.
//! - `deadline`: reading a deadline, the order that decides early, the fits rule, what is
//!   not measured.

pub mod compare;
pub mod conclusion;
pub mod deadline;
pub mod decision;
pub mod diff;
pub mod effective;
pub mod estimate;
pub mod guide;
pub mod leader;
pub mod path;
pub mod preflight;
pub mod prune;
pub mod quality;
pub mod repeats;
pub mod search;
pub mod stats;
pub mod work;

/// Specs and rows for the tuner's unit tests.
#[cfg(test)]
pub(crate) mod testing {
    use crate::plan::engine::Engine;
    use crate::plan::spec::SweepSpec;
    use crate::record::RunRecord;
    use crate::record::rows::Row;

    /// A sweep spec from the YAML that follows its `server:` section (configs, workload,
    /// objective, search, ...). The server is never launched.
    pub fn spec(rest: &str) -> SweepSpec {
        let text = format!(
            "name: t\nserver:\n  command: [python3, fake.py]\n  model_path: /nonexistent-model\n{rest}"
        );
        crate::plan::spec::parse(&text, "t.yaml").unwrap_or_else(|e| panic!("{e}\n{text}"))
    }

    /// A results.csv row from (column, value) cells.
    pub fn row(cells: &[(&str, &str)]) -> Row {
        Row::from_cells(cells.iter().map(|(k, v)| (k.to_string(), v.to_string())))
    }

    /// An ok record of `run_name` at concurrency 8, repeat 1, with nothing measured.
    pub fn record(run_name: &str) -> RunRecord {
        let point = crate::plan::spec::LoadPoint {
            concurrency: 8,
            request_rate: None,
        };
        RunRecord::new(run_name, "id", Engine::Sglang, Vec::new(), point, 1)
    }
}
