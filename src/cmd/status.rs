//! `sgtune status DIR`: a Slurm submission's tasks (`slurm::status`), or where a local sweep
//! stands, read from its folder alone (state.json, results.csv, spec.yaml, manifest.json),
//! so it works from another shell while the sweep runs and after a crash.

use super::{CmdError, ExitCode, out};
use crate::record::state;
use crate::record::store;
use crate::record::sweep::Sweep;
use crate::report::status::{Liveness, StatusView, render};
use std::path::Path;

pub fn run(dir: &Path) -> Result<ExitCode, CmdError> {
    if crate::record::slurm::submissions_path(dir).exists() {
        return super::slurm::status(dir);
    }
    let Some(st) = state::read(dir).map_err(CmdError::input)? else {
        return Err(CmdError::input(format!(
            "{} has no {} (a local sweep started by this sgtune writes one) and was not submitted to Slurm (no {}/{}): give the results folder of a sweep started with `sgtune run` (a folder from an older sgtune has only its results.csv and results.md)",
            dir.display(),
            state::FILE,
            crate::record::layout::SLURM,
            crate::record::layout::SLURM_SUBMISSIONS
        )));
    };
    let live = if st.finished_at.is_some() {
        Liveness::Finished
    } else if st.host != crate::util::sys::hostname() {
        Liveness::Elsewhere
    } else if crate::util::sys::process_alive(st.pid, st.pid_start) {
        Liveness::Running
    } else {
        Liveness::Gone
    };
    // A row half-written by a crash is dropped by the reader; an unreadable results.csv is
    // no rows (the sweep may not have written it yet).
    let loaded = Sweep::load(dir).unwrap_or_default();
    let all = loaded.rows();
    let spec = crate::plan::spec::load(&dir.join(store::SPEC_YAML)).ok();
    let sweep = spec
        .as_ref()
        .map_or_else(|| dir.display().to_string(), |(s, _)| s.name.0.clone());
    let decided = loaded
        .objective
        .as_ref()
        .map(|o| crate::tune::leader::so_far(o, all));
    let d = dir.display().to_string();
    out(&render(&StatusView {
        dir: &d,
        sweep: &sweep,
        state: &st,
        live,
        rows: all,
        decision: decided.as_ref(),
    }));
    Ok(ExitCode::Ok)
}
