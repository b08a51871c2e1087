//! Plan: the YAML sweep (`spec`, its keys' places in the text: `locate`), the one flag mapping
//! (`flags`), the results.csv columns' names (`columns`), the guided tune's space (`tune`) and
//! the expansion of grid and explicit configurations into runs (`expand`). Pure: nothing here
//! starts a process.
pub mod columns;
pub mod engine;
pub mod expand;
pub mod flags;
pub mod keyed;
pub mod locate;
pub mod quality;
pub mod search;
pub mod spec;
pub mod tune;
