//! The one signal policy, for every command that runs a load: the first Ctrl-C / SIGTERM /
//! SIGHUP cancels the token (stop sending, record what was measured, stop the server, keep
//! every finished row); a second one means "now": it kills the server's process group, if
//! any, and exits 130 at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use tokio_util::sync::CancellationToken;

/// The exit status of a process stopped by the user (128 + SIGINT), as shells expect.
pub const INTERRUPTED_STATUS: i32 = 130;

/// Install the handler. `first_notice` is said on the first signal; `pgid` holds the process
/// group of the server now running (0: none) for the second.
pub fn install(cancel: CancellationToken, pgid: Arc<AtomicI32>, first_notice: &'static str) {
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
                let p = pgid.load(Ordering::SeqCst);
                if p > 0 {
                    crate::server::reap::signal_group(p, libc::SIGKILL);
                    crate::util::say("sgtune: killed the server's process group; exiting");
                } else {
                    crate::util::say("sgtune: interrupted again; exiting now");
                }
                std::process::exit(INTERRUPTED_STATUS);
            }
        }
    });
}
