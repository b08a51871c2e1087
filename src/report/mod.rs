//! Reports rendered from run records.
pub mod table;
