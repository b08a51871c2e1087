//! decision.json: the decision, typed, in the results folder. Its one writer (`write`, called
//! by `run::conclude`) and its one reader (`read`, for report.html), side by side so that the
//! file's shape has one home.

use crate::record::ReadError;
use crate::record::store::{self, StoreError};
use crate::tune::decision::Decision;
use std::path::Path;

/// The file's name in the results folder.
pub const FILE: &str = store::DECISION_JSON;

/// Write the decision (atomically: a reader sees the old file or the new one).
pub fn write(root: &Path, d: &Decision) -> Result<(), StoreError> {
    store::write_json(&root.join(FILE), d)
}

/// decision.json read back as the `Decision` it was written from; `Ok(None)` when the folder
/// has none (an interrupted sweep). A file this version cannot read (hand-edited, or written
/// by a version whose decision had other fields) is an error naming the file.
pub fn read(root: &Path) -> Result<Option<Decision>, ReadError> {
    let path = root.join(FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ReadError::io(&path, e)),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| ReadError::bad(&path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No file is no decision; a file this version cannot read is an error naming it, not a
    /// decision made up of defaults. (The round trip of a real decision: report/table.rs.)
    #[test]
    fn decision_json_absent_or_unreadable_is_said_plainly() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(matches!(read(dir.path()), Ok(None)));
        std::fs::write(dir.path().join(FILE), r#"{"sweep": "s"}"#).expect("write");
        let e = read(dir.path()).expect_err("missing fields").to_string();
        assert!(e.contains("decision.json"), "{e}");
    }
}
