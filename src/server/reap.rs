//! The process-group helpers, and the `__reap` watcher: a tiny second process that kills the
//! server's group if sgtune dies. The parent-death signal reaches only the launcher; real
//! SGLang's children watch their parent, but other servers' children may not.

use std::time::Duration;

/// The watcher's loop: exit when the group is gone; kill the group when `parent` is gone.
pub fn reap_loop(parent: i32, pgid: i32) {
    loop {
        if !group_alive(pgid) {
            return;
        }
        // SAFETY: getppid has no preconditions.
        if unsafe { libc::getppid() } != parent {
            signal_group(pgid, libc::SIGKILL);
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

pub(crate) fn group_alive(pgid: i32) -> bool {
    if pgid <= 0 {
        return false;
    }
    // SAFETY: kill with signal 0 only checks for existence/permission.
    let r = unsafe { libc::kill(-pgid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

pub fn signal_group(pgid: i32, sig: i32) {
    if pgid > 0 {
        // SAFETY: plain kill(2) on our own child's process group.
        unsafe {
            libc::kill(-pgid, sig);
        }
    }
}
