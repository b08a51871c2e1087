//! After a server is ready: compare what its configuration asked for with what it runs
//! (`observe::effective`, pure), from the `/server_info` already fetched and the start-up part
//! of server.log, and keep the result in runs/<launch>/effective_args.json.

use crate::observe::effective::{self, EffectiveArgs, Finding};
use crate::plan::flags::{self, ParamValue};
use crate::record::effective::EffectiveFile;
use crate::record::store;
use crate::record::store::StoreError;
use std::io::{BufRead, Read};
use std::path::Path;

pub use crate::record::effective::FILE;

/// At most this much of server.log is read for the start-up override lines (the log up to the
/// ready line is a few hundred KB at most).
const LOG_LIMIT_BYTES: u64 = 16 << 20;

/// What the launch keeps: the row's part, the warnings for its notes, and whether the file
/// could be written.
pub struct Checked {
    pub row: EffectiveArgs,
    pub warnings: Vec<String>,
    pub written: Result<(), StoreError>,
}

/// Check one ready server. `resolved`: the run's settings; `info`: its `/server_info` (None
/// when it answered none); `dir`: the launch folder, holding server.log.
pub fn check_launch(
    dir: &Path,
    resolved: &[(String, ParamValue)],
    info: Option<&serde_json::Value>,
) -> Checked {
    let asked = flags::requested(resolved);
    let lines = startup_lines(&dir.join(store::SERVER_LOG));
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let found = effective::check(&asked, info, &refs);
    let warnings = found
        .not_in_effect
        .iter()
        .map(|f| format!("not in effect: {}", f.text()))
        .collect();
    let row = found.for_row();
    let written = crate::record::effective::write(dir, &EffectiveFile { asked, found });
    Checked {
        row,
        warnings,
        written,
    }
}

/// The settings not in effect that launch folder `dir`'s effective_args.json records, read
/// through the file's one reader (`record::effective::read`). Ok(None): no file (a folder
/// from before it, or a launch that wrote none); Err: a file that cannot be read or is not
/// the file [`check_launch`] writes.
pub fn read(dir: &Path) -> Result<Option<Vec<Finding>>, String> {
    crate::record::effective::read(dir)
        .map(|f| f.map(|f| f.found.not_in_effect))
        .map_err(|e| e.to_string())
}

/// server.log's lines up to the ready line (an unreadable log: none; lines that are not UTF-8
/// are read lossily).
fn startup_lines(path: &Path) -> Vec<String> {
    let Ok(file) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut reader = std::io::BufReader::new(file).take(LOG_LIMIT_BYTES);
    let mut buf = Vec::new();
    while let Ok(n) = reader.read_until(b'\n', &mut buf) {
        if n == 0 {
            break;
        }
        let line = String::from_utf8_lossy(&buf).trim_end().to_string();
        buf.clear();
        let ready = line.contains(crate::server::supervise::READY_LINE);
        out.push(line);
        if ready {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(key: &str) -> Finding {
        Finding {
            key: key.into(),
            asked: "8".into(),
            in_effect: "no CUDA graph".into(),
            evidence: "start-up log: \"Cuda graph is disabled\"".into(),
        }
    }

    #[test]
    fn the_findings_are_read_back_as_written() {
        let dir = tempfile::tempdir().expect("temp dir");
        assert_eq!(read(dir.path()), Ok(None));
        let found = effective::Effective {
            id: Some("aaa".into()),
            not_in_effect: vec![finding("cuda_graph_max_bs_decode"), finding("page_size")],
            ..Default::default()
        };
        let asked = vec![("page_size".to_string(), ParamValue::Int(8))];
        crate::record::effective::write(
            dir.path(),
            &EffectiveFile {
                asked,
                found: found.clone(),
            },
        )
        .expect("written");
        assert_eq!(read(dir.path()), Ok(Some(found.not_in_effect.clone())));
        std::fs::write(dir.path().join(FILE), "{\"not_in_effect\": 3}").expect("written");
        assert!(read(dir.path()).is_err());
    }
}
