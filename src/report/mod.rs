//! Report: every renderer. Each writes to a `W: Write` and never decides anything about a run.
pub mod compare;
pub mod conclusion;
pub mod decision;
pub mod doc;
pub mod effective;
pub mod events;
pub mod html;
pub mod load;
pub mod log;
pub mod plan;
pub mod progress;
pub mod reproduce;
pub mod slurm;
pub mod status;
pub mod table;
