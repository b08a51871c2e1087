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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn st(ceiling: Option<usize>, floor: Option<usize>, banned: &[usize]) -> State {
        State {
            noise: 0.05,
            seen: BTreeSet::new(),
            banned: vec![banned.iter().copied().collect()],
            ceiling: vec![ceiling],
            floor: vec![floor],
            dropped: vec![None],
            flat: vec![Vec::new()],
            responded: vec![false],
            worse: vec![Vec::new()],
            kv_flat: vec![false],
            run_ceiling: None,
            model: Default::default(),
        }
    }

    #[test]
    fn a_long_move_goes_half_way_then_nearer_then_farther() {
        let s = st(None, None, &[]);
        // From 1 of 8: 2..=7 above (six), half way is the third (4).
        assert_eq!(order(&s, 0, 8, 1, Dir::Up, true), vec![4, 3, 5, 2, 6, 7]);
        assert_eq!(order(&s, 0, 8, 1, Dir::Up, false), vec![2, 3, 4, 5, 6, 7]);
        assert_eq!(order(&s, 0, 8, 6, Dir::Down, true), vec![3, 4, 2, 5, 1, 0]);
        assert_eq!(order(&s, 0, 8, 7, Dir::Up, true), Vec::<usize>::new());
        assert_eq!(order(&s, 0, 8, 6, Dir::Up, true), vec![7]);
    }

    #[test]
    fn a_cliff_is_a_wall_and_a_banned_value_a_hole() {
        let s = st(Some(5), Some(1), &[3]);
        assert_eq!(order(&s, 0, 8, 2, Dir::Up, false), vec![4]);
        assert_eq!(order(&s, 0, 8, 2, Dir::Down, false), Vec::<usize>::new());
        assert_eq!(order(&s, 0, 8, 4, Dir::Down, false), vec![2]);
        // The half way point is measured before the banned value is taken out.
        let s = st(None, None, &[4]);
        assert_eq!(order(&s, 0, 8, 1, Dir::Up, true), vec![3, 5, 2, 6, 7]);
    }
}
