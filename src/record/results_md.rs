//! `results.md`: the sweep's comparison table as Markdown beside results.csv, under a title
//! (the sweep's name) and the results folder it describes. The table is rendered by
//! `report::table` (from results.csv, as stdout shows it); this module only lays out and reads
//! back the file around it.

use super::ReadError;
use super::layout::RESULTS_MD;
use super::store::{self, StoreError};
use std::path::Path;

/// What results.md holds.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultsMd {
    /// The sweep's name: the title.
    pub sweep: String,
    /// The results folder as the sweep named it (as given, so relative when it was).
    pub folder: String,
    /// The comparison table, rendered, with the lines under it.
    pub table: String,
}

impl ResultsMd {
    fn text(&self) -> String {
        format!(
            "# {}\n\nResults folder: `{}`\n\n{}",
            self.sweep, self.folder, self.table
        )
    }

    fn parse(text: &str) -> Option<ResultsMd> {
        let (title, rest) = text.split_once("\n\n")?;
        let (folder, table) = rest.split_once("\n\n")?;
        Some(ResultsMd {
            sweep: title.strip_prefix("# ")?.to_string(),
            folder: folder
                .strip_prefix("Results folder: `")?
                .strip_suffix('`')?
                .to_string(),
            table: table.to_string(),
        })
    }
}

/// Write `root`'s results.md, atomically.
pub fn write(root: &Path, md: &ResultsMd) -> Result<(), StoreError> {
    store::write_atomic(&root.join(RESULTS_MD), md.text().as_bytes())
}

/// `root`'s results.md; None when there is none (a sweep not concluded yet).
pub fn read(root: &Path) -> Result<Option<ResultsMd>, ReadError> {
    let path = root.join(RESULTS_MD);
    match std::fs::read_to_string(&path) {
        Ok(t) => ResultsMd::parse(&t)
            .map(Some)
            .ok_or_else(|| ReadError::bad(&path, "not a results table (title, folder, table)")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ReadError::io(&path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_md_reads_back_as_written() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read(dir.path()).ok(), Some(None), "none yet");
        let md = ResultsMd {
            sweep: "kv-cache".into(),
            folder: "results/kv-cache-20261130T154200Z".into(),
            table: "| run | status |\n|---|---|\n| a | ok |\n\nBest: a\n".into(),
        };
        write(dir.path(), &md).unwrap_or_else(|e| panic!("{e}"));
        let text =
            std::fs::read_to_string(dir.path().join(RESULTS_MD)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            text,
            "# kv-cache\n\nResults folder: `results/kv-cache-20261130T154200Z`\n\n| run | status |\n|---|---|\n| a | ok |\n\nBest: a\n"
        );
        assert_eq!(read(dir.path()).ok().flatten(), Some(md));
        std::fs::write(dir.path().join(RESULTS_MD), "no title").unwrap_or_else(|e| panic!("{e}"));
        assert!(read(dir.path()).is_err());
    }

    /// The demo's results.md as sgtune wrote it: title, folder and the table, which writes back
    /// to the same bytes.
    #[test]
    fn the_demo_fixture_reads_and_writes_back_the_same() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/results/cpu-demo");
        let md = read(&root)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("no fixture"));
        assert_eq!(md.sweep, "cpu-demo");
        assert_eq!(md.folder, "results/cpu-demo-20261201T142218Z");
        assert!(md.table.starts_with("| run "), "{}", md.table);
        let text = std::fs::read_to_string(root.join(RESULTS_MD)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(md.text(), text);
    }
}
