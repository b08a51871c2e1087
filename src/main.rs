//! Thin binary: parse the command line, build the runtime, run, exit with the app's code.

use clap::Parser;

fn main() {
    let cli = sgtune::cmd::cli::Cli::parse();
    if let sgtune::cmd::cli::Command::Reap { parent, pgid } = cli.command {
        // The watcher needs no runtime: a loop of two syscalls every 200 ms.
        sgtune::server::reap::reap_loop(parent, pgid);
        return;
    }
    // The runner is driven by `block_on` on this (main) thread: servers are forked from it, and
    // their parent-death signal is tied to the forking thread, which must outlive them.
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            sgtune::util::say(&format!("error: cannot start the async runtime: {e}"));
            std::process::exit(1);
        }
    };
    let code = rt.block_on(sgtune::cmd::run(cli));
    std::process::exit(code.code());
}
