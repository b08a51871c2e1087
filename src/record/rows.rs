//! Reading results.csv back: for resume, the table, compare and reproduce. The CSV is the
//! record of a sweep; these readers take it as it is on disk, including a last line cut short
//! by a crash (which is reported and ignored).

use super::ReadError;
use super::run_record::{Phase, ProbeResult, RunStatus};
use crate::server::failure::FailureKind;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One results.csv row, by column name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Row(pub BTreeMap<String, String>);

impl Row {
    pub fn get(&self, col: &str) -> &str {
        self.0.get(col).map(String::as_str).unwrap_or("")
    }
    pub fn f64(&self, col: &str) -> Option<f64> {
        self.get(col).parse::<f64>().ok().filter(|x| x.is_finite())
    }
    pub fn u64(&self, col: &str) -> Option<u64> {
        self.get(col).parse::<u64>().ok()
    }
    /// The load point as tables show it: the concurrency, or `<rate>/s` in an open loop.
    pub fn load_point(&self) -> String {
        match self.get("request_rate") {
            "" => self.get("concurrency").to_string(),
            rate => format!("{rate}/s"),
        }
    }
    pub fn is_ok(&self) -> bool {
        self.status() == Some(RunStatus::Ok)
    }
    /// The row's phase. A file from before the `phase` column (or with an empty cell) holds
    /// only fixed load points: `measure`. The typed accessors below are the only place that
    /// spells a phase, status or probe cell, so the rest of the code compares enums.
    pub fn phase(&self) -> Phase {
        Phase::parse(self.get("phase")).unwrap_or_default()
    }
    /// The row's status; `None` for a cell sgtune does not write (an edited file).
    pub fn status(&self) -> Option<RunStatus> {
        RunStatus::parse(self.get("status"))
    }
    /// A probe's standing, or a pre-flight attempt's; `None` on other rows.
    pub fn probe(&self) -> Option<ProbeResult> {
        ProbeResult::parse(self.get("probe"))
    }
    /// Why a failed row failed; `None` when the row did not fail (or an unknown kind).
    pub fn failure_kind(&self) -> Option<FailureKind> {
        FailureKind::parse(self.get("failure_kind"))
    }
    /// Run name, load point, repeat: one row per key in a finished sweep. (Not the run id:
    /// two named configurations may resolve to the same server command.)
    pub fn key(&self) -> crate::record::RowKey {
        (
            self.get("run_name").to_string(),
            self.u64("concurrency").unwrap_or(0),
            self.get("request_rate").to_string(),
            self.u64("repeat").unwrap_or(1),
        )
    }
}

#[derive(Debug, Clone, Default)]
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Row>,
    /// The raw fields of each row, as on disk (kept byte-exact when a resume rewrites the file).
    pub raw: Vec<Vec<String>>,
    /// The file ended in a partial line (a crash in the middle of an append); it was ignored.
    pub partial_tail: bool,
}

/// `DIR` (a results folder) or `DIR/results.csv` → the CSV path.
pub fn csv_path(p: &Path) -> PathBuf {
    if p.is_dir() {
        p.join(super::layout::RESULTS_CSV)
    } else {
        p.to_path_buf()
    }
}

pub fn read(path: &Path) -> Result<Table, ReadError> {
    let bytes = std::fs::read(path).map_err(|e| ReadError::io(path, e))?;
    // Rows are appended whole and fsynced; a file that does not end in a newline was cut in
    // the middle of an append. Drop that partial line.
    let (body, partial_tail) = match bytes.iter().rposition(|&b| b == b'\n') {
        Some(i) if i + 1 < bytes.len() => (&bytes[..=i], true),
        Some(_) => (&bytes[..], false),
        None => (&bytes[..0], !bytes.is_empty()),
    };
    let mut r = csv::ReaderBuilder::new().flexible(true).from_reader(body);
    let header: Vec<String> = r
        .headers()
        .map_err(|e| ReadError::bad(path, e))?
        .iter()
        .map(String::from)
        .collect();
    let mut t = Table {
        header: header.clone(),
        partial_tail,
        ..Default::default()
    };
    for rec in r.records() {
        let rec = rec.map_err(|e| ReadError::bad(path, e))?;
        let fields: Vec<String> = rec.iter().map(String::from).collect();
        if fields.len() != header.len() {
            // sgtune writes every row through one encoder with the header's columns, so a row
            // of another shape means the file was edited or mixed with another sweep: say so
            // rather than judge a sweep on part of its rows.
            let line = rec.position().map_or(0, |p| p.line());
            return Err(ReadError::bad(
                path,
                format!(
                    "line {line} has {} fields but the header has {} (was the file edited, or two sweeps' files joined?)",
                    fields.len(),
                    header.len()
                ),
            ));
        }
        t.rows.push(Row(header
            .iter()
            .cloned()
            .zip(fields.iter().cloned())
            .collect()));
        t.raw.push(fields);
    }
    Ok(t)
}

/// The swept keys of a results table (`param_<key>` columns, in order).
pub fn param_keys(header: &[String]) -> Vec<String> {
    header
        .iter()
        .filter_map(|h| h.strip_prefix("param_").map(String::from))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cells: &[(&str, &str)]) -> Row {
        Row(cells
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect())
    }

    #[test]
    fn typed_cells_read_what_the_writer_spells_and_nothing_else() {
        for p in Phase::ALL {
            assert_eq!(row(&[("phase", p.as_str())]).phase(), p);
        }
        // A results.csv from before the phase column: every row a fixed load point.
        assert_eq!(row(&[]).phase(), Phase::Measure);
        for s in RunStatus::ALL {
            assert_eq!(row(&[("status", s.as_str())]).status(), Some(s));
        }
        assert_eq!(row(&[("status", "OK")]).status(), None);
        assert!(!row(&[("status", "OK")]).is_ok());
        assert!(row(&[("status", "ok")]).is_ok());
        for p in ProbeResult::ALL {
            assert_eq!(row(&[("probe", p.as_str())]).probe(), Some(p));
        }
        assert_eq!(row(&[("probe", "")]).probe(), None);
        for k in FailureKind::ALL {
            assert_eq!(row(&[("failure_kind", k.as_str())]).failure_kind(), Some(k));
        }
        assert_eq!(row(&[]).failure_kind(), None);
    }

    #[test]
    fn a_row_of_another_shape_is_an_error_naming_its_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("results.csv");
        std::fs::write(&p, "run_name,status\na,ok\nb,ok,extra\n").expect("write");
        let e = read(&p).expect_err("short row refused").to_string();
        assert!(e.contains("line 3") && e.contains("3 fields"), "{e}");
    }

    #[test]
    fn partial_last_line_is_dropped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("results.csv");
        std::fs::write(
            &p,
            "run_name,run_id,status,concurrency,repeat\na,1,ok,8,1\nb,2,fai",
        )
        .expect("write");
        let t = read(&p).expect("reads");
        assert!(t.partial_tail);
        assert_eq!(t.rows.len(), 1);
        assert_eq!(t.rows[0].key(), ("a".to_string(), 8, String::new(), 1));
        std::fs::write(
            &p,
            "run_name,run_id,status,concurrency,repeat\na,1,ok,8,1\n",
        )
        .expect("write");
        let t = read(&p).expect("reads");
        assert!(!t.partial_tail);
        assert!(t.rows[0].is_ok());
    }
}
