//! Record: the one row per run (`run_record`, with the one column list), the results folder
//! (`store`), results.csv read back (`rows`), the provenance manifest and the GPU checks it
//! records.
pub mod gpu;
pub mod provenance;
pub mod rows;
pub mod run_record;
pub mod store;

pub use run_record::*;
