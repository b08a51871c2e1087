//! `runs/<launch>/effective_args.json`: what a launch's configuration asked for against what its
//! server runs with (`observe::effective`'s finding, with the settings as asked), written once
//! the server is ready by `run::effective`.

use super::ReadError;
use super::store::{self, StoreError};
use crate::observe::effective::Effective;
use crate::plan::flags::ParamValue;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The per-launch file.
pub const FILE: &str = "effective_args.json";

/// The file: the settings as asked, then the finding's fields at the top level.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EffectiveFile {
    /// The settings as the command line asks for them (the hierarchical cache resolved).
    #[serde(default)]
    pub asked: Vec<(String, ParamValue)>,
    #[serde(flatten)]
    pub found: Effective,
}

pub fn write(run_dir: &Path, f: &EffectiveFile) -> Result<(), StoreError> {
    store::write_json(&run_dir.join(FILE), f)
}

/// A launch's effective_args.json; None when it has none (its server never got ready).
pub fn read(run_dir: &Path) -> Result<Option<EffectiveFile>, ReadError> {
    store::read_json(&run_dir.join(FILE), "an effective-arguments check")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::effective::Finding;

    #[test]
    fn an_effective_file_reads_back_as_written() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read(dir.path()).unwrap_or_else(|e| panic!("{e}")), None);
        let f = EffectiveFile {
            asked: vec![
                ("mem_fraction_static".into(), ParamValue::Float(0.85)),
                ("enable_mixed_chunk".into(), ParamValue::Bool(true)),
            ],
            found: Effective {
                id: Some("0123456789ab".into()),
                not_in_effect: vec![Finding {
                    key: "cuda_graph_max_bs".into(),
                    asked: "64".into(),
                    in_effect: "32".into(),
                    evidence: "/server_info".into(),
                }],
                override_lines: vec!["Cuda graph is disabled".into()],
                unchecked: vec!["alias".into()],
                args: [("tp_size".to_string(), serde_json::json!(1))]
                    .into_iter()
                    .collect(),
            },
        };
        write(dir.path(), &f).unwrap_or_else(|e| panic!("{e}"));
        let text = std::fs::read_to_string(dir.path().join(FILE)).unwrap_or_else(|e| panic!("{e}"));
        let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
        // The documented layout: the finding's fields beside `asked`, not nested.
        assert_eq!(v["id"], "0123456789ab");
        assert_eq!(read(dir.path()).unwrap_or_else(|e| panic!("{e}")), Some(f));
    }

    /// A file without the later fields loads with their defaults; one that is not a check is
    /// an error naming the file.
    #[test]
    fn an_older_effective_file_loads_and_a_bad_one_names_its_file() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(
            dir.path().join(FILE),
            r#"{"asked": [["k", 1]], "id": null, "not_in_effect": []}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let f = read(dir.path())
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("a file"));
        assert_eq!(f.asked, vec![("k".to_string(), ParamValue::Int(1))]);
        assert!(f.found.override_lines.is_empty());
        std::fs::write(dir.path().join(FILE), r#"{"asked": 3}"#).unwrap_or_else(|e| panic!("{e}"));
        let e = read(dir.path()).expect_err("not a check");
        assert!(e.to_string().contains(FILE), "{e}");
    }
}
