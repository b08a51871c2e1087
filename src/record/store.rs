//! The results folder: layout, atomic writes, and results.csv appended and flushed per run.
//!
//! ```text
//! results/<sweep>-<UTC timestamp>/
//!   spec.yaml  plan.json  results.csv  results.md  (decision.md decision.json: run::conclude)
//!   runs/<run>/config.json command.txt server.log requests.csv summary.json
//! ```

use crate::record::lock::FolderLock;
use crate::record::rows::Row;
use crate::record::{self, RunRecord};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

pub use super::layout::*;

#[derive(Debug, thiserror::Error)]
#[error("{path}: {source} (check that the folder exists, is writable and has free space)")]
pub struct StoreError {
    pub path: String,
    #[source]
    pub source: std::io::Error,
}

fn err(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError {
        path: path.display().to_string(),
        source,
    }
}

/// Write a whole file atomically: a temporary name in the same folder, fsync, rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let tmp = path.with_extension(format!(
        "{}.tmp",
        path.extension().and_then(|e| e.to_str()).unwrap_or("")
    ));
    let mut f = File::create(&tmp).map_err(err(&tmp))?;
    f.write_all(bytes).map_err(err(&tmp))?;
    f.sync_all().map_err(err(&tmp))?;
    fs::rename(&tmp, path).map_err(err(path))?;
    Ok(())
}

/// A CSV artifact of the folder opened for reading (requests.csv, metrics.csv), `CsvFile`'s
/// other half: Ok(None) when the file is not there, an error naming it when it cannot be
/// opened. Rows of another length are the reader's to judge (a cut last line).
pub fn open_csv(
    path: &Path,
) -> Result<Option<csv::Reader<std::io::BufReader<File>>>, record::ReadError> {
    match File::open(path) {
        Ok(f) => Ok(Some(
            csv::ReaderBuilder::new()
                .flexible(true)
                .from_reader(std::io::BufReader::new(f)),
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(record::ReadError::io(path, e)),
    }
}

/// A JSON file of the folder read back as `T`, `write_json`'s other half; Ok(None) when the file
/// is not there (each file says what its absence means), an error naming the file when it
/// cannot be read or is not `what`.
pub fn read_json<T: serde::de::DeserializeOwned>(
    path: &Path,
    what: &str,
) -> Result<Option<T>, record::ReadError> {
    match fs::read_to_string(path) {
        Ok(t) => serde_json::from_str(&t)
            .map(Some)
            .map_err(|e| record::ReadError::bad(path, format!("not {what} ({e})"))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(record::ReadError::io(path, e)),
    }
}

pub fn write_json(path: &Path, value: &impl serde::Serialize) -> Result<(), StoreError> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|e| StoreError {
        path: path.display().to_string(),
        source: std::io::Error::other(e),
    })?;
    bytes.push(b'\n');
    write_atomic(path, &bytes)
}

/// A CSV artifact written row by row as a run goes (requests.csv, metrics.csv). A write error
/// does not stop the run: the first one is kept and handed back by [`CsvFile::finish`], so the
/// caller records it on the row instead of losing it.
pub struct CsvFile {
    path: PathBuf,
    w: Option<csv::Writer<File>>,
    error: Option<StoreError>,
    rows: u64,
}

impl CsvFile {
    pub fn create<T: AsRef<[u8]>>(
        path: &Path,
        header: impl IntoIterator<Item = T>,
    ) -> Result<CsvFile, StoreError> {
        let file = File::create(path).map_err(err(path))?;
        let mut f = CsvFile {
            path: path.to_path_buf(),
            w: Some(csv::Writer::from_writer(file)),
            error: None,
            rows: 0,
        };
        f.row(header);
        match f.error.take() {
            Some(e) => Err(e),
            None => Ok(f),
        }
    }

    /// Append one row; flushed to the OS every 64 rows so a killed run leaves most of them.
    pub fn row<T: AsRef<[u8]>>(&mut self, fields: impl IntoIterator<Item = T>) {
        let Some(w) = self.w.as_mut() else {
            return;
        };
        let mut res = w.write_record(fields).map_err(csv_io);
        self.rows += 1;
        if res.is_ok() && self.rows.is_multiple_of(64) {
            res = w.flush();
        }
        if let Err(source) = res {
            self.fail(source);
        }
    }

    fn fail(&mut self, source: std::io::Error) {
        // Stop writing after the first error: later rows would only repeat it.
        self.w = None;
        self.error.get_or_insert(StoreError {
            path: self.path.display().to_string(),
            source,
        });
    }

    /// Flush, and say whether every row reached the file.
    pub fn finish(mut self) -> Result<(), StoreError> {
        if let Some(mut w) = self.w.take() {
            if let Err(e) = w.flush() {
                self.fail(e);
            }
        }
        match self.error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

fn csv_io(e: csv::Error) -> std::io::Error {
    match e.into_kind() {
        csv::ErrorKind::Io(e) => e,
        other => std::io::Error::other(format!("{other:?}")),
    }
}

pub struct ResultsDir {
    pub root: PathBuf,
    header: Vec<String>,
    /// A folder this process created is locked from its creation to its end: a `resume` of
    /// it meanwhile is refused (`record::lock`). An opened one is locked by its command.
    _lock: Option<FolderLock>,
}

/// `kv-cache-tuning-20261130T154200Z`.
pub fn folder_name(sweep: &str, now: chrono::DateTime<chrono::Utc>) -> String {
    format!("{sweep}-{}", now.format("%Y%m%dT%H%M%SZ"))
}

impl ResultsDir {
    /// Create a new results folder under `parent` (never reuses an existing one).
    pub fn create(parent: &Path, sweep: &str, param_keys: &[String]) -> Result<Self, StoreError> {
        fs::create_dir_all(parent).map_err(err(parent))?;
        let base = folder_name(sweep, chrono::Utc::now());
        let mut root = parent.join(&base);
        let mut n = 2;
        loop {
            match fs::create_dir(&root) {
                Ok(()) => break,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    root = parent.join(format!("{base}-{n}"));
                    n += 1;
                }
                Err(e) => return Err(err(&root)(e)),
            }
        }
        let runs = root.join(RUNS);
        fs::create_dir(&runs).map_err(err(&runs))?;
        // Nobody else knows this new folder's name yet: the lock cannot be held elsewhere.
        let lock = FolderLock::take(&root).ok();
        Ok(ResultsDir {
            root,
            header: record::header(param_keys),
            _lock: lock,
        })
    }

    /// An existing results folder, whose results.csv has this header: for a resume (its
    /// command holds the folder's lock, `cmd::sweep::start`), a Slurm task or a merge.
    pub fn open(root: &Path, param_keys: &[String]) -> Self {
        ResultsDir {
            root: root.to_path_buf(),
            header: record::header(param_keys),
            _lock: None,
        }
    }

    pub fn header(&self) -> &[String] {
        &self.header
    }

    /// Replace results.csv with the header and these rows (fields as read), atomically: a
    /// resume drops the rows it will redo. Rows it keeps are written back unchanged.
    pub fn rewrite_csv(&self, rows: &[Vec<String>]) -> Result<(), StoreError> {
        rewrite_results(&self.root, &self.header, rows)
    }

    /// Keep superseded rows (interrupted, or failed ones being retried), their fields under
    /// this folder's header, as evidence. A results.superseded.csv written before a column was
    /// added is first written again under today's header (its rows' new cells empty), so the
    /// file keeps one header.
    pub fn append_superseded(&self, rows: &[Vec<String>]) -> Result<(), StoreError> {
        if rows.is_empty() {
            return Ok(());
        }
        let path = self.root.join(SUPERSEDED_CSV);
        let exists = path.exists();
        if exists {
            if let Ok(old) = super::rows::read(&path) {
                if old.header != self.header && old.columns_added_by(&self.header).is_some() {
                    let fields = old.fields_under(&self.header);
                    let all = std::iter::once(&self.header).chain(&fields);
                    write_atomic(&path, &csv_bytes(&path, all)?)?;
                }
            }
        }
        let records = std::iter::once(&self.header)
            .filter(|_| !exists)
            .chain(rows);
        append_synced(&path, &csv_bytes(&path, records)?, true)
    }

    pub fn run_dir(&self, run_name: &str) -> Result<PathBuf, StoreError> {
        let d = self.root.join(RUNS).join(run_name);
        fs::create_dir_all(&d).map_err(err(&d))?;
        Ok(d)
    }

    pub fn results_csv(&self) -> PathBuf {
        self.root.join(RESULTS_CSV)
    }

    /// Write the header now, so even a sweep killed during its first run leaves a valid CSV.
    pub fn init_csv(&self) -> Result<(), StoreError> {
        let path = self.results_csv();
        write_atomic(&path, &csv_bytes(&path, std::iter::once(&self.header))?)
    }

    /// Write these records, with the header, as a CSV of their own (a Slurm task's
    /// runs/<launch>/rows.csv), atomically.
    pub fn write_rows(&self, path: &Path, records: &[RunRecord]) -> Result<(), StoreError> {
        let rows: Vec<Vec<String>> = records.iter().map(record::row).collect();
        let all = std::iter::once(&self.header).chain(&rows);
        write_atomic(path, &csv_bytes(path, all)?)
    }

    /// Append one row and force it to disk before the next run starts. Finished rows are
    /// never rewritten.
    pub fn append(&self, r: &RunRecord) -> Result<(), StoreError> {
        let path = self.results_csv();
        let row = record::row(r);
        append_synced(&path, &csv_bytes(&path, std::iter::once(&row))?, false)
    }
}

/// Replace `root`'s results.csv with `header` and these rows read back (each cell by its
/// column; absent: empty), atomically: the quality guard writes its verdicts into the rows it
/// read, under the header the folder was written with.
pub fn rewrite_table(root: &Path, header: &[String], rows: &[Row]) -> Result<(), StoreError> {
    let cells: Vec<Vec<String>> = rows.iter().map(|r| r.cells_under(header)).collect();
    rewrite_results(root, header, &cells)
}

/// The one place results.csv is replaced whole (a resume, the quality verdicts).
fn rewrite_results(root: &Path, header: &[String], rows: &[Vec<String>]) -> Result<(), StoreError> {
    let path = root.join(RESULTS_CSV);
    let head = header.to_vec();
    let records = std::iter::once(&head).chain(rows);
    write_atomic(&path, &csv_bytes(&path, records)?)
}

/// CSV-encode records (errors name `path`, the file they are for).
fn csv_bytes<'a>(
    path: &Path,
    records: impl IntoIterator<Item = &'a Vec<String>>,
) -> Result<Vec<u8>, StoreError> {
    let fail = |e: String| StoreError {
        path: path.display().to_string(),
        source: std::io::Error::other(e),
    };
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in records {
        w.write_record(r).map_err(|e| fail(e.to_string()))?;
    }
    w.into_inner().map_err(|e| fail(e.to_string()))
}

/// Append bytes and fsync them before returning.
fn append_synced(path: &Path, bytes: &[u8], create: bool) -> Result<(), StoreError> {
    let mut f = OpenOptions::new()
        .create(create)
        .append(true)
        .open(path)
        .map_err(err(path))?;
    f.write_all(bytes).map_err(err(path))?;
    f.sync_data().map_err(err(path))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn csv_file_reports_its_first_write_error() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let p = tmp.path().join("ok.csv");
        let mut f = CsvFile::create(&p, ["a", "b"]).expect("create");
        f.row(["1", "2"]);
        f.finish().expect("all rows written");
        assert_eq!(fs::read_to_string(&p).expect("read"), "a,b\n1,2\n");
        // A row of another length is a CSV error: kept, not dropped.
        let mut f = CsvFile::create(&tmp.path().join("bad.csv"), ["a", "b"]).expect("create");
        f.row(["1"]);
        let e = f.finish().expect_err("the short row is reported");
        assert!(e.path.ends_with("bad.csv"), "{e}");
        // /dev/full: every flush fails with ENOSPC, as on a full disk.
        if Path::new("/dev/full").exists() {
            let mut f = CsvFile::create(Path::new("/dev/full"), ["a"]).expect("open");
            for _ in 0..100 {
                f.row(["x"]);
            }
            let e = f.finish().expect_err("full disk reported");
            assert_eq!(e.source.raw_os_error(), Some(libc::ENOSPC), "{e}");
        }
    }

    #[test]
    fn folder_names_are_utc_stamped() {
        let t = chrono::Utc
            .with_ymd_and_hms(2026, 11, 30, 15, 42, 0)
            .single()
            .expect("valid");
        assert_eq!(folder_name("kv", t), "kv-20261130T154200Z");
    }

    #[test]
    fn create_never_reuses_and_atomic_write_leaves_no_temp() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let a = ResultsDir::create(tmp.path(), "s", &[]).expect("create");
        let b = ResultsDir::create(tmp.path(), "s", &[]).expect("create");
        assert_ne!(a.root, b.root);
        let p = a.root.join("plan.json");
        write_json(&p, &serde_json::json!({"a": 1})).expect("write");
        let names: Vec<String> = fs::read_dir(&a.root)
            .expect("read")
            .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect();
        assert!(names.contains(&"plan.json".to_string()));
        assert!(!names.iter().any(|n| n.ends_with(".tmp")), "{names:?}");
    }

    /// results.csv replaced from rows read back: each cell under its column, a column a row
    /// lacks left empty, and it reads back as written.
    #[test]
    fn rewrite_table_writes_rows_under_the_header_and_reads_back() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let header: Vec<String> = ["run_name", "status", "quality_verdict"]
            .map(String::from)
            .to_vec();
        let row =
            |pairs: &[(&str, &str)]| crate::record::rows::Row::from_cells(pairs.iter().copied());
        let rows = vec![
            row(&[
                ("run_name", "a"),
                ("status", "ok"),
                ("quality_verdict", "same"),
            ]),
            row(&[("run_name", "b, c"), ("status", "failed")]),
        ];
        rewrite_table(dir.path(), &header, &rows).unwrap_or_else(|e| panic!("{e}"));
        let t = crate::record::rows::read(&dir.path().join(RESULTS_CSV))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.header, header);
        assert_eq!(t.rows.len(), 2);
        assert_eq!(t.rows[0].text("quality_verdict"), "same");
        assert_eq!(t.rows[1].run_name(), "b, c");
        assert_eq!(t.rows[1].text("quality_verdict"), "");
    }
}
