//! One writer per results folder. `sgtune run` (from the folder's creation), `sgtune resume`
//! and a Slurm tune's driver hold an exclusive lock on `<folder>/.sgtune.lock` while they
//! write the folder, so a second `resume` of a sweep that is still running is refused with
//! the holder's pid, host and command, instead of setting aside the live run's rows and
//! launching the same configurations again (on the same GPUs, or as a second wave of the same
//! tune on Slurm).
//!
//! The lock is the kernel's (`flock`, through `File::try_lock`): it goes with the process,
//! so a sweep killed with `kill -9` leaves nothing to clean up and the next `resume` takes
//! it. Rust opens files close-on-exec, so the servers and hooks sgtune starts do not inherit
//! it. A file system that cannot lock (some network mounts) is said once and the sweep goes
//! on without the lock, as before it existed.

use crate::record::layout::LOCK_FILE;
use crate::util::say;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::Path;

/// Held while this process writes the folder; the lock is released when it is dropped or
/// the process ends.
#[derive(Debug)]
pub struct FolderLock {
    _file: Option<File>,
}

/// Another process holds the folder's lock.
#[derive(Debug, thiserror::Error)]
#[error(
    "{dir} is being written by another sgtune ({holder}): wait for it to end, or stop it first (Ctrl-C or kill; on Slurm its driver: `sgtune cancel {dir}`), then resume"
)]
pub struct Held {
    pub dir: String,
    /// What the holder wrote of itself (pid, host, since, command), or a plain description
    /// when it wrote nothing yet.
    pub holder: String,
}

impl FolderLock {
    /// Take the lock of the results folder `dir`, or say who holds it. A folder that is not
    /// there, or where the lock file cannot be created, is not locked: what the caller does
    /// next reports that folder's own error (not a results folder, not writable).
    pub fn take(dir: &Path) -> Result<FolderLock, Held> {
        let path = dir.join(LOCK_FILE);
        let opened = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path);
        let Ok(mut file) = opened else {
            return Ok(FolderLock { _file: None });
        };
        match file.try_lock() {
            Ok(()) => {
                // Who holds it, for the refusal a second process prints. Best effort: the lock
                // itself is what excludes.
                let _ = file
                    .set_len(0)
                    .and_then(|_| file.rewind())
                    .and_then(|_| file.write_all(holder_line().as_bytes()));
                Ok(FolderLock { _file: Some(file) })
            }
            Err(TryLockError::WouldBlock) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                let holder = text.trim();
                Err(Held {
                    dir: dir.display().to_string(),
                    holder: if holder.is_empty() {
                        "a process that has not said which yet".to_string()
                    } else {
                        holder.to_string()
                    },
                })
            }
            Err(TryLockError::Error(e)) => {
                say(&format!(
                    "warning: {} cannot be locked ({e}): nothing stops a second sgtune from writing this folder at the same time; resume it only once this one has ended",
                    path.display()
                ));
                Ok(FolderLock { _file: None })
            }
        }
    }
}

/// `pid 4242 on node-3 since 2026-12-05T07:12:00Z: sgtune resume results/x`.
fn holder_line() -> String {
    let args: Vec<String> = std::env::args().collect();
    format!(
        "pid {} on {} since {}: {}\n",
        std::process::id(),
        crate::util::sys::hostname(),
        chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ"),
        args.join(" ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel's lock is per open file: a second take in this same process is refused as
    /// another process's would be, naming the holder; once the first is dropped it is free.
    #[test]
    fn a_held_folder_is_refused_with_its_holder_and_free_once_dropped() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let first = FolderLock::take(tmp.path()).unwrap_or_else(|e| panic!("{e}"));
        assert!(first._file.is_some(), "a local folder is locked");
        let held = match FolderLock::take(tmp.path()) {
            Err(h) => h,
            Ok(_) => panic!("a second writer was let in"),
        };
        let me = format!("pid {} on ", std::process::id());
        assert!(held.holder.starts_with(&me), "{}", held.holder);
        let msg = held.to_string();
        assert!(msg.contains("is being written by another sgtune"), "{msg}");
        assert!(msg.contains(&tmp.path().display().to_string()), "{msg}");
        drop(first);
        let again = FolderLock::take(tmp.path()).unwrap_or_else(|e| panic!("{e}"));
        assert!(again._file.is_some());
    }

    /// A folder that is not there is not created by the lock: the caller's own check says
    /// what is wrong with it.
    #[test]
    fn a_missing_folder_is_left_to_the_caller() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let missing = tmp.path().join("nope");
        let lock = FolderLock::take(&missing).unwrap_or_else(|e| panic!("{e}"));
        assert!(lock._file.is_none());
        assert!(!missing.exists());
    }
}
