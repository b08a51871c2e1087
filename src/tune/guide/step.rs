//! Which values of one knob a move tries, in order.
//!
//! Step size: the ranges a tune searches can be wide (a memory fraction at 0.01 from 0.80 to
//! 0.95 is 16 values; a running cap from 16 to 512 in a list), and a launch costs minutes, so
//! moving one value at a time when the evidence says "more" would spend the budget walking. A
//! long move goes half way from the current value to the end of what is allowed (the range's
//! end, or the value below a cliff a failed launch found), and the next long move from there
//! halves what is left, so reaching the end, or the cliff, takes about log2(values) launches
//! (the pre-flight's bisection, for the same reason). A short move is one value: a list whose
//! order is not a size (a KV dtype), a "little less admission", and the generic search's
//! neighbours, which refine around the leader after the long moves.

use super::rules::Dir;
use super::state::State;

/// The value indices of knob `k` (with `len` values) that a move from `from` tries, best
/// first; only those the state allows (not banned, not over a cliff).
pub fn order(st: &State, k: usize, len: usize, from: usize, dir: Dir, long: bool) -> Vec<usize> {
    let mut side: Vec<usize> = match dir {
        Dir::Up => (from + 1..len)
            .take_while(|&i| st.allowed_side(k, i))
            .collect(),
        Dir::Down => (0..from)
            .rev()
            .take_while(|&i| st.allowed_side(k, i))
            .collect(),
    };
    // `side` is nearest first. A long move starts half way to its far end.
    if long && side.len() > 1 {
        let target = side.len().div_ceil(2) - 1;
        side.sort_by_key(|&i| {
            let pos = i.abs_diff(from) - 1;
            (pos.abs_diff(target), pos)
        });
    }
    side.retain(|&i| st.allowed(k, i));
    side
}
