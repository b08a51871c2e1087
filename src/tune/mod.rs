//! The tuner: every decision the sweep makes from what it measured, as pure functions of rows
//! and specs (no I/O, no clock, no server). `run/` executes the work these functions ask for;
//! `report/` renders the decision they hand it.
//!
//! - `objective`: whether a spec's objective and SLO name results.csv columns the right way.
//! - `stats`: estimates over repeats, the pooled noise and the margins, t quantiles, the
//!   `repeats: auto` rule.
//! - `decision`: the decision rule: eligibility, the leader, its margins, why each lost.
//! - `effective`: configurations that ran the same server in effect, and what the decision
//!   says about them and about settings not in effect.
//! - `search`: the max-load search's next probe and each probe's judgement.
//! - `preflight`: the memory pre-flight's next attempt and the burst it runs.
//! - `prune`: successive halving, which configurations the lowest load point rules out.
//! - `repeats`: the next round of `repeats: auto`.
//! - `work`: the launches a plan still needs (`Launch`, `Measurement`).
//! - `estimate`: how long the launches will take, expected and at worst.
//! - `deadline`: reading a deadline, the order that decides early, the fits rule, what is
//!   not measured.

pub mod deadline;
pub mod decision;
pub mod effective;
pub mod estimate;
pub mod objective;
pub mod preflight;
pub mod prune;
pub mod quality;
pub mod repeats;
pub mod search;
pub mod stats;
pub mod work;
