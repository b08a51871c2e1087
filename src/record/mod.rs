//! Record: the one row per run (`run_record`, each column's value; the column list is
//! `plan::columns`'), the results folder (`store`), results.csv read back (`rows`; the
//! `decode_steps` cell in `decode_steps`, `turn_latency`'s in `turn_latency`), and the
//! provenance manifest and the GPU checks it records.
pub mod command;
pub mod decode_steps;
pub mod effective;
pub mod gpu;
pub mod layout;
pub mod lock;
pub mod metrics;
pub mod outcome;
pub mod plan_file;
pub mod preflight;
pub mod provenance;
pub mod quality;
pub mod requests;
pub mod results_md;
pub mod rows;
pub mod run_record;
pub mod server_info;
pub mod slurm;
pub mod state;
pub mod store;
pub mod summary;
pub mod sweep;
pub mod turn_latency;
pub mod working_set;

pub use run_record::*;

/// A results file that could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Bad { path: String, message: String },
}

impl ReadError {
    pub fn io(path: &std::path::Path, source: std::io::Error) -> ReadError {
        ReadError::Io {
            path: path.display().to_string(),
            source,
        }
    }
    pub fn bad(path: &std::path::Path, message: impl std::fmt::Display) -> ReadError {
        ReadError::Bad {
            path: path.display().to_string(),
            message: message.to_string(),
        }
    }
}
