//! `working_set.json`: how `workload.shared_prefix.working_set` was sized (written by
//! `run::tuning` when a sweep's sessions end), so a resumed sweep keeps the size an earlier
//! session found instead of sizing it again against another server. One writer, one reader.

use super::ReadError;
use super::store::{self, StoreError};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The working-set file in the results folder.
pub const FILE: &str = super::layout::WORKING_SET_JSON;

/// Fields in name order, the order the file had when it was built with `json!`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkingSet {
    /// The KV capacity (tokens) the working set was sized against.
    pub basis_tokens: u64,
    /// The shared-prefix groups it came to.
    pub groups: u64,
    pub prefix_tokens: u64,
    /// `working_set`: a multiple of that capacity.
    pub working_set: f64,
}

pub fn write(root: &Path, w: &WorkingSet) -> Result<(), StoreError> {
    store::write_json(&root.join(FILE), w)
}

/// The folder's working_set.json; None when there is none.
pub fn read(root: &Path) -> Result<Option<WorkingSet>, ReadError> {
    store::read_json(&root.join(FILE), "a working-set sizing")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_working_set_reads_back_as_written() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read(dir.path()).unwrap_or_else(|e| panic!("{e}")), None);
        let w = WorkingSet {
            basis_tokens: 100_000,
            groups: 293,
            prefix_tokens: 512,
            working_set: 1.5,
        };
        write(dir.path(), &w).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read(dir.path()).unwrap_or_else(|e| panic!("{e}")), Some(w));
        // Byte for byte what `json!` wrote before.
        let text = std::fs::read_to_string(dir.path().join(FILE)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            text,
            "{\n  \"basis_tokens\": 100000,\n  \"groups\": 293,\n  \"prefix_tokens\": 512,\n  \"working_set\": 1.5\n}\n"
        );
    }

    /// A working_set.json as sgtune wrote it before this type (serde_json::json! in
    /// run::tuning) still loads; one that is not one is an error, not a silent None.
    #[test]
    fn an_older_working_set_json_still_loads() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let old = r#"{
  "basis_tokens": 250000,
  "groups": 733,
  "prefix_tokens": 512,
  "working_set": 1.5
}
"#;
        std::fs::write(dir.path().join(FILE), old).unwrap_or_else(|e| panic!("{e}"));
        let w = read(dir.path())
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("no working_set.json"));
        assert_eq!((w.basis_tokens, w.groups), (250_000, 733));
        std::fs::write(dir.path().join(FILE), "[]").unwrap_or_else(|e| panic!("{e}"));
        assert!(read(dir.path()).is_err());
    }
}
