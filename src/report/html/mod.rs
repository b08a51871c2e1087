//! `report.html`: one self-contained page (inline SVG and CSS, no script, nothing fetched) with
//! the sweep's overview, its per-configuration charts, and each launch's server timeline and
//! client side. Pure: the caller reads the files into a [`Sweep`]; everything here turns data
//! into a String. [`data`] has the numbers behind each chart, [`chart`] draws one chart.

pub mod chart;
mod compare;
mod configs;
pub mod data;
mod launch;
mod log;
mod style;
mod sweep;
#[cfg(test)]
mod testing;
mod timeline;

pub use compare::compare_page;
pub use log::log_page;
pub use sweep::sweep_page;

use crate::record::rows::Row;
use data::{ClientRequest, Timeline};

pub use crate::report::doc::esc;

/// One load point (and repeat) of a launch, as the client saw it.
#[derive(Debug, Clone, Default)]
pub struct PointClient {
    /// e.g. `c32`, `c32 r2`.
    pub label: String,
    pub requests: Vec<ClientRequest>,
}

/// One server launch (a `runs/<name>/` folder).
#[derive(Debug, Clone, Default)]
pub struct Launch {
    pub name: String,
    /// The server's timeline; None without a readable server.log.
    pub timeline: Option<Timeline>,
    pub points: Vec<PointClient>,
    /// Files that could not be read, said on the page.
    pub notes: Vec<String>,
}

/// Everything the page shows about one sweep.
#[derive(Debug, Clone, Default)]
pub struct Sweep {
    pub name: String,
    /// The results folder, as given.
    pub dir: String,
    pub rows: Vec<Row>,
    pub param_keys: Vec<String>,
    /// The decision (decision.json), when the sweep had an objective and one was made.
    pub decision: Option<crate::tune::decision::Decision>,
    /// The sections decision.md has under the decision, built from what they say (the
    /// effective arguments from the rows, what a deadline left unmeasured, a tune's path).
    pub decision_sections: Vec<crate::report::doc::Block>,
    /// What the table stars, from decision.json (None without one: the best output tok/s).
    pub decision_marks: Option<crate::report::table::DecisionMarks>,
    pub launches: Vec<Launch>,
    /// A guided tune's path (`tune:`), step by step; None for a sweep.
    pub tune: Option<TunePath>,
    pub notes: Vec<String>,
}

/// A guided tune's path through its space, for its chart: each launched step in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TunePath {
    /// The objective's column (e.g. `output_tok_s`) and whether higher is better.
    pub metric: String,
    pub maximize: bool,
    pub steps: Vec<TuneStep>,
    /// Why the tune stopped, or that it is not finished.
    pub end: String,
}

/// One launched step of a tune.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TuneStep {
    pub name: String,
    /// The objective's value as measured (None: the launch failed).
    pub value: Option<f64>,
    /// The SLO and the quality guard allow it.
    pub eligible: bool,
    /// The verdict, or the failure kind.
    pub verdict: String,
    /// A confirmation: the configuration launched again on a fresh server (its value then
    /// pools its launches).
    pub confirm: bool,
}

/// How many points each timeline series keeps: fewer when there are many launches, so the
/// page stays small (about 2 MB for 20 launches of 10 load points).
pub fn points_per_series(launches: usize) -> usize {
    (6000 / launches.max(1)).clamp(120, 600)
}
