//! Facts about this machine and this moment.

/// Cores this machine offers (for the client-bound check).
pub fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
