//! decision.json: the decision, typed, in the results folder. Its one writer (`write`, called
//! by `run::conclude`); its one reader is the loaded sweep's (`record::sweep::Sweep::decision`,
//! parsed into this `Decision`; the round trip: report/table.rs and run/report.rs's tests).

use crate::record::store::{self, StoreError};
use crate::tune::decision::Decision;
use std::path::Path;

/// The file's name in the results folder.
pub const FILE: &str = store::DECISION_JSON;

/// Write the decision (atomically: a reader sees the old file or the new one).
pub fn write(root: &Path, d: &Decision) -> Result<(), StoreError> {
    store::write_json(&root.join(FILE), d)
}
