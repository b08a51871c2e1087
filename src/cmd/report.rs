//! `sgtune report DIR [DIR2] [-o FILE]`: the self-contained report.html of one sweep, or of two
//! compared; `run::report` reads a results folder into what the page shows.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::{CmdError, ExitCode, out};
use crate::observe::timeline;
use crate::record::provenance;
use crate::record::rows::{Col, Row};
use crate::record::store;
use crate::record::sweep::Sweep as Loaded;
use crate::report::html;
use crate::run::report::{page_of, write_sweep_report};
use crate::tune::compare;

/// `sgtune report DIR [DIR2] [-o FILE]`.
pub fn run(
    a: &Path,
    b: Option<&Path>,
    out_file: Option<&Path>,
    noise: f64,
) -> Result<ExitCode, CmdError> {
    let path = match b {
        None => write_sweep_report(a, out_file)?,
        Some(b) => {
            let (la, lb) = (Loaded::load(a)?, Loaded::load(b)?);
            let sa = page_of(&la);
            let sb = page_of(&lb);
            let has = |c: &&Col| {
                let has = |r: &Row| r.has(c);
                sa.rows.first().is_none_or(has) && sb.rows.first().is_none_or(has)
            };
            let metrics: Vec<Col> = compare::DEFAULT_METRICS
                .iter()
                .filter(has)
                .cloned()
                .collect();
            let mut c = compare::compare(&sa.rows, &sb.rows, &metrics, noise);
            if let (Some(ma), Some(mb)) = (&la.manifest, &lb.manifest) {
                c.context = provenance::context_differences(ma, mb);
            }
            c.set_decision(super::compare::decision_diff(&la, &lb, noise));
            let path = out_file
                .map(Path::to_path_buf)
                .unwrap_or_else(|| PathBuf::from(&sb.dir).join("report-compare.html"));
            store::write_atomic(&path, html::compare_page(&sa, &sb, &c).as_bytes())?;
            path
        }
    };
    out(&format!("report: {}", path.display()));
    Ok(ExitCode::Ok)
}

/// `sgtune log FILE --html OUT`: the timeline of one log (no windows: the whole file).
pub fn log_html(file: &Path, out_file: &Path) -> Result<ExitCode, CmdError> {
    let f = File::open(file).map_err(|e| CmdError::input(format!("{}: {e}", file.display())))?;
    let t = timeline::read(std::io::BufReader::new(f), &[], None)
        .map_err(|e| CmdError::input(format!("{}: {e}", file.display())))?;
    let page = html::log_page(&file.display().to_string(), &t);
    store::write_atomic(out_file, page.as_bytes())?;
    out(&format!("report: {}", out_file.display()));
    Ok(ExitCode::Ok)
}
