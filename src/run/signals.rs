//! The one signal policy, for every command that runs a load: the first Ctrl-C / SIGTERM /
//! SIGHUP cancels the token (stop sending, record what was measured, stop the server, keep
//! every finished row); a second one means "now": it kills the server's process group, if
//! any, and exits 130 at once.

use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// The process groups of the servers running now (several when runs share the machine in
/// slots), for the second signal's kill.
#[derive(Debug, Default)]
pub struct Groups(Mutex<Vec<i32>>);

impl Groups {
    pub fn add(&self, pgid: i32) {
        if let Ok(mut g) = self.0.lock() {
            g.push(pgid);
        }
    }

    pub fn remove(&self, pgid: i32) {
        if let Ok(mut g) = self.0.lock() {
            g.retain(|&p| p != pgid);
        }
    }

    pub fn all(&self) -> Vec<i32> {
        self.0.lock().map(|g| g.clone()).unwrap_or_default()
    }
}

/// The exit status of a process stopped by the user (128 + SIGINT), as shells expect.
pub const INTERRUPTED_STATUS: i32 = 130;

/// Install the handler. `first_notice` is said on the first signal; `groups` holds the process
/// groups of the servers now running, killed on the second.
pub fn install(cancel: CancellationToken, groups: Arc<Groups>, first_notice: &'static str) {
    use tokio::signal::unix::{SignalKind, signal};
    tokio::spawn(async move {
        let (Ok(mut int), Ok(mut term), Ok(mut hup)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) else {
            crate::util::say(
                "warning: cannot install signal handlers; Ctrl-C will kill sgtune (and any server) at once",
            );
            return;
        };
        let mut count = 0;
        loop {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
                _ = hup.recv() => {}
            }
            count += 1;
            if count == 1 {
                cancel.cancel();
                crate::util::say(first_notice);
            } else {
                let all = groups.all();
                if !all.is_empty() {
                    for p in all.into_iter().filter(|&p| p > 0) {
                        crate::server::reap::signal_group(p, libc::SIGKILL);
                    }
                    crate::util::say("sgtune: killed the servers' process groups; exiting");
                } else {
                    crate::util::say("sgtune: interrupted again; exiting now");
                }
                std::process::exit(INTERRUPTED_STATUS);
            }
        }
    });
}
