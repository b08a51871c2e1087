//! Server supervision: build the command, launch in its own process group, wait until ready,
//! classify start-up failures, stop cleanly.
pub mod command;
pub mod failure;
pub mod supervise;
