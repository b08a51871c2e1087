//! `runs/<launch>/command.txt`: the launch's exact command line as a shell would run it
//! (`LaunchCommand::display`: its environment first, every word quoted where needed), written
//! before the server starts so a launch that never started still says what it ran. Read back by
//! the decision for a folder whose manifest predates recorded commands.

use super::ReadError;
use super::layout::COMMAND_TXT;
use super::store::{self, StoreError};
use crate::server::command::LaunchCommand;
use std::path::Path;

pub fn write(run_dir: &Path, cmd: &LaunchCommand) -> Result<(), StoreError> {
    store::write_atomic(
        &run_dir.join(COMMAND_TXT),
        format!("{}\n", cmd.display()).as_bytes(),
    )
}

/// A launch's command line as written (without the newline); None when it has no command.txt.
pub fn read(run_dir: &Path) -> Result<Option<String>, ReadError> {
    let path = run_dir.join(COMMAND_TXT);
    match std::fs::read_to_string(&path) {
        Ok(t) => Ok(Some(t.trim_end().to_string())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ReadError::io(&path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_reads_back_as_written() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read(dir.path()).ok(), Some(None), "none yet");
        let cmd = LaunchCommand {
            program: "/opt/venv/bin/python".into(),
            args: vec![
                "-m".into(),
                "sglang.launch_server".into(),
                "--served-model-name".into(),
                "my model".into(),
            ],
            env: vec![("CUDA_VISIBLE_DEVICES".into(), "0,1".into())],
        };
        write(dir.path(), &cmd).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read(dir.path()).ok().flatten(), Some(cmd.display()));
        let text =
            std::fs::read_to_string(dir.path().join(COMMAND_TXT)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            text,
            format!("{}\n", cmd.display()),
            "one line, newline-ended"
        );
    }

    #[test]
    fn the_demo_fixture_reads() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/results/cpu-demo/runs/mtt2048");
        let line = read(&dir)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("no fixture"));
        assert!(line.starts_with("PYTHONUNBUFFERED=1 "), "{line}");
        assert!(line.ends_with("--max-total-tokens 2048"), "{line}");
        assert!(!line.contains('\n'));
    }
}
