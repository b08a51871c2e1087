//! The guided tune (issue 26): the next experiment chosen from the evidence of the launches so
//! far, as the engineer in the story did (the log said the KV cache was full, so the memory
//! knobs came first, then the hierarchical cache). Pure: a function from the space and what
//! was measured so far to the next launches, so `run/` executes it, `resume` replays it from
//! the rows to the same path, and `reproduce --decision` re-checks it.
//!
//! The types and the four functions re-exported below are the contract between the strategy and
//! its callers (`plan/` reads the `tune:` section into a `Space`, `run/` turns rows into
//! `Observation`s and each `Proposal` into a launch).
//!
//! The strategy (docs/methodology.md, "The guided tune"): the start first; then, from the
//! leader (or the start while nothing leads), the leader's verdict names the knobs to turn
//! (`rules`: KV capacity when the pool is full, the scheduler caps when a queue waits with KV
//! to spare, fewer admissions or more capacity against retractions, larger CUDA graphs); when
//! no rule's move is left, or the verdict asks for none (compute bound), a coordinate search
//! tries the leader's neighbours on the remaining knobs. A failed launch makes that direction
//! on its knob a cliff, an ineligible one bans the knob value, a knob not in effect or without
//! a response beyond the noise is dropped (`state`). Long moves first, then one value
//! (`step`). A client-bound leader stops the tune: the client, not the server, is the limit.
//! Before the exploration reasons from a launch whose evidence is suspect, or whose SLO figure
//! lies within the noise of a bound, that launch is measured again once (`remeasure`).

mod batch;
mod confirm;
mod explore;
#[cfg(test)]
mod fixtures;
mod inert;
pub mod model;
mod moves;
mod phases;
mod remeasure;
mod rules;
mod sized;
mod standing;
mod state;
mod step;
mod types;
mod words;

pub use batch::next_batch;
pub use confirm::{CONFIRM_GROUP, CONFIRM_MAX_LAUNCHES, confirmations};
pub use inert::inert_tie;
pub use phases::next;
pub use standing::{base, leader};
pub use types::{
    Evidence, Failure, Knob, Next, Observation, Outcome, Point, Proposal, SloSeen, Space,
    StepSample,
};
pub use words::name;
