//! `runs/<launch>/server_info.json`: GET /server_info right after ready, kept as the server
//! answered it (the server's JSON, untyped: its keys change with every release), written by
//! `run::launch` for an engine that has the endpoint.

use super::ReadError;
use super::layout::SERVER_INFO_JSON;
use super::store::{self, StoreError};
use std::path::Path;

pub fn write(run_dir: &Path, info: &serde_json::Value) -> Result<(), StoreError> {
    store::write_json(&run_dir.join(SERVER_INFO_JSON), info)
}

/// A launch's server_info.json; None when it has none (a server that never got ready, or an
/// engine without the endpoint).
pub fn read(run_dir: &Path) -> Result<Option<serde_json::Value>, ReadError> {
    store::read_json(&run_dir.join(SERVER_INFO_JSON), "a /server_info answer")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_info_reads_back_as_written() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read(dir.path()).ok(), Some(None), "none yet");
        let info = serde_json::json!({
            "max_total_num_tokens": 2048,
            "mem_fraction_static": 0.88,
            "kv_cache_dtype": "auto",
            "admin_api_key": null,
            "allowed_media_domains": [],
            "internal_states": [{"last_gen_throughput": 12.5}],
        });
        write(dir.path(), &info).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read(dir.path()).ok().flatten(), Some(info));
        std::fs::write(dir.path().join(SERVER_INFO_JSON), "{ cut")
            .unwrap_or_else(|e| panic!("{e}"));
        let e = read(dir.path()).expect_err("not JSON");
        assert!(e.to_string().contains("server_info.json"), "{e}");
    }

    /// The demo's file as SGLang 0.5.23 answered it: it reads, with the values the effective
    /// check uses.
    #[test]
    fn the_demo_fixture_reads() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/results/cpu-demo/runs/mtt2048");
        let info = read(&dir)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("no fixture"));
        assert_eq!(info["max_total_tokens"], serde_json::json!(2048));
        assert_eq!(info["allowed_media_domains"], serde_json::json!([]));
    }
}
