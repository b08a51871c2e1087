//! Server: build the command (`command`), launch it in its own process group, wait until it
//! is ready and stop it cleanly (`supervise`), classify why it never was ready (`failure`),
//! make sure nothing outlives sgtune (`reap`), and talk to its control endpoints (`control`).
//! `flags` asks the installed engine for its own list of flags (its `--help`).
pub mod command;
pub mod control;
pub mod failure;
pub mod flags;
pub mod reap;
pub mod supervise;
