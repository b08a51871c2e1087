//! Where a key of a sweep file is in its text, by its path (`configs`, item 1, `hicache_size`),
//! in block and flow YAML styles alike, for errors found after the spec is read: serde_yaml
//! keeps no positions once a value is parsed. The one home of finding a key in a sweep file's
//! text: by its path (here), from where serde_yaml placed an error (`key`), and inside
//! `objective:` (`objective`).

mod key;
mod objective;

pub use key::{locate_key, locate_text, locate_var, relocate_to_key, relocate_to_key_name};
pub use objective::{ObjectiveKey, locate_objective};

/// One step of a path: a mapping's key (written with `_` or `-`, quoted or not) or a list's
/// item (0-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seg<'a> {
    Key(&'a str),
    Item(usize),
}

/// A node of the document: where its contents start (0-based line, byte column).
#[derive(Debug, Clone, Copy)]
enum Node {
    /// A `{` or `[` at this place.
    Flow(usize, usize),
    /// A block mapping whose keys are at this column, its first on this line.
    BlockMap(usize, usize),
    /// A block sequence whose `-` are at this column, its first on this line.
    BlockSeq(usize, usize),
    /// Anything else (a scalar): it has no keys or items.
    Leaf,
}

/// 1-based (line, column) of the last step of `path` (a key: its first character; an item:
/// its first character after the `- ` or the `[`/`,`), or None when the text does not hold it.
pub fn locate_path(text: &str, path: &[Seg<'_>]) -> Option<(usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut node = root(&lines)?;
    let mut at = None;
    for seg in path {
        let (pos, next) = match (*seg, node) {
            (Seg::Key(k), Node::BlockMap(l, c)) => block_key(&lines, l, c, k)?,
            (Seg::Item(i), Node::BlockSeq(l, c)) => block_item(&lines, l, c, i)?,
            (seg, Node::Flow(l, c)) => flow_entry(&lines, l, c, seg)?,
            _ => return None,
        };
        at = Some(pos);
        node = next;
    }
    let (l, c) = at?;
    let col = lines
        .get(l)
        .map_or(c, |s| s.get(..c).map_or(c, |p| p.chars().count()));
    Some((l + 1, col + 1))
}

fn is_blank(l: &str) -> bool {
    let t = l.trim_start();
    t.is_empty() || t.starts_with('#') || t == "---"
}

fn indent(l: &str) -> usize {
    l.len() - l.trim_start_matches(' ').len()
}

/// `-` that starts a sequence item (followed by a space or the end of the line).
fn is_dash(rest: &str) -> bool {
    rest == "-" || rest.starts_with("- ")
}

fn root(lines: &[&str]) -> Option<Node> {
    let (i, l) = lines.iter().enumerate().find(|(_, l)| !is_blank(l))?;
    Some(node_at(i, indent(l), &l[indent(l)..]))
}

/// The node whose text starts at (line, col) with `rest`.
fn node_at(line: usize, col: usize, rest: &str) -> Node {
    if rest.starts_with(['{', '[']) {
        Node::Flow(line, col)
    } else if is_dash(rest) {
        Node::BlockSeq(line, col)
    } else if rest.is_empty() {
        Node::Leaf
    } else {
        Node::BlockMap(line, col)
    }
}

/// The value of a key of a block mapping at column `key_col`, whose `:` ends at (line, after).
fn block_value(lines: &[&str], line: usize, after: usize, key_col: usize) -> Node {
    let l = lines[line];
    let rest = l.get(after..).unwrap_or("");
    let skipped = rest.len() - rest.trim_start().len();
    let rest = rest.trim_start();
    if !rest.is_empty() && !rest.starts_with('#') {
        return if rest.starts_with(['{', '[']) {
            Node::Flow(line, after + skipped)
        } else {
            Node::Leaf
        };
    }
    let Some((j, next)) = lines
        .iter()
        .enumerate()
        .skip(line + 1)
        .find(|(_, l)| !is_blank(l))
    else {
        return Node::Leaf;
    };
    let ind = indent(next);
    let body = &next[ind..];
    // A block sequence may sit at its key's own indent; anything else is deeper.
    if (is_dash(body) && ind >= key_col) || ind > key_col {
        node_at(j, ind, body)
    } else {
        Node::Leaf
    }
}

/// Byte index just past `key:` when `s` starts with the key (either spelling, quoted or not).
fn key_here(s: &str, key: &str) -> Option<usize> {
    let quote = s.chars().next().filter(|c| matches!(c, '"' | '\''));
    let start = quote.map_or(0, char::len_utf8);
    let name = s.get(start..start + key.len())?;
    let same = name
        .bytes()
        .zip(key.bytes())
        .all(|(a, b)| a == b || (matches!(a, b'-' | b'_') && matches!(b, b'-' | b'_')));
    if !same {
        return None;
    }
    let mut end = start + key.len();
    if let Some(q) = quote {
        end += s.get(end..)?.strip_prefix(q).map(|_| q.len_utf8())?;
    }
    let after = s.get(end..)?.strip_prefix(':')?;
    let plain_end = after.is_empty() || after.starts_with([' ', '\t', ',', '}', ']']);
    (quote.is_some() || plain_end).then_some(end + 1)
}

/// `key:` in the block mapping whose keys are at column `col`, from `line` on.
fn block_key(lines: &[&str], line: usize, col: usize, key: &str) -> Option<((usize, usize), Node)> {
    for (j, l) in lines.iter().enumerate().skip(line) {
        if is_blank(l) {
            continue;
        }
        // The first line may start with the item's `- ` before the key.
        if j > line {
            let ind = indent(l);
            if ind < col {
                return None;
            }
            if ind > col || is_dash(&l[ind..]) {
                continue;
            }
        }
        if let Some(after) = l.get(col..).and_then(|s| key_here(s, key)) {
            return Some(((j, col), block_value(lines, j, col + after, col)));
        }
    }
    None
}

/// Item `n` of the block sequence whose `-` are at column `col`, from `line` on.
fn block_item(lines: &[&str], line: usize, col: usize, n: usize) -> Option<((usize, usize), Node)> {
    let mut count = 0;
    for (j, l) in lines.iter().enumerate().skip(line) {
        if is_blank(l) {
            continue;
        }
        let ind = indent(l);
        if ind < col {
            return None;
        }
        if ind > col {
            continue;
        }
        let body = &l[ind..];
        if !is_dash(body) {
            return None;
        }
        if count == n {
            let content = body[1..].trim_start();
            let c = l.len() - content.len();
            if content.is_empty() || content.starts_with('#') {
                // The item's contents start on the next line.
                return Some(((j, ind), block_value(lines, j, ind + 1, ind)));
            }
            return Some(((j, c), node_at(j, c, content)));
        }
        count += 1;
    }
    None
}

/// A key or an item directly inside the flow collection that opens at (line, col).
fn flow_entry(
    lines: &[&str],
    line: usize,
    col: usize,
    seg: Seg<'_>,
) -> Option<((usize, usize), Node)> {
    let mut depth = 0usize;
    let mut quote: Option<u8> = None;
    let mut entry_start = false;
    let mut item = 0usize;
    for (j, l) in lines.iter().enumerate().skip(line) {
        let b = l.as_bytes();
        let from = if j == line { col } else { 0 };
        for k in from..b.len() {
            let c = b[k];
            if let Some(q) = quote {
                if c == q {
                    quote = None;
                }
                continue;
            }
            if depth == 1 && entry_start && c != b' ' && c != b'\t' {
                entry_start = false;
                let rest = &l[k..];
                match seg {
                    Seg::Key(key) => {
                        if let Some(after) = key_here(rest, key) {
                            return Some(((j, k), flow_value(lines, j, k + after)));
                        }
                    }
                    Seg::Item(n) => {
                        if n == item {
                            return Some(((j, k), flow_value(lines, j, k)));
                        }
                        item += 1;
                    }
                }
            }
            match c {
                b'"' | b'\'' => quote = Some(c),
                b'#' if k == 0 || b[k - 1] == b' ' => break,
                b'{' | b'[' => {
                    depth += 1;
                    entry_start = depth == 1;
                }
                b'}' | b']' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return None;
                    }
                }
                b',' if depth == 1 => entry_start = true,
                _ => {}
            }
        }
    }
    None
}

/// The value that starts at or after (line, from) inside a flow collection.
fn flow_value(lines: &[&str], line: usize, from: usize) -> Node {
    for (j, l) in lines.iter().enumerate().skip(line) {
        let start = if j == line { from } else { 0 };
        let Some(rest) = l.get(start..) else {
            return Node::Leaf;
        };
        let t = rest.trim_start();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let c = l.len() - t.len();
        return if t.starts_with(['{', '[']) {
            Node::Flow(j, c)
        } else {
            Node::Leaf
        };
    }
    Node::Leaf
}

#[cfg(test)]
mod tests {
    use super::Seg::{Item, Key};
    use super::*;

    #[test]
    fn finds_keys_and_items_in_block_and_flow_styles() {
        let text = "\
# a comment
name: t
server:
  vllm:
    args: {max_num_seqs: 4}
  args:
    max-num-seqs: 2
configs:
  - name: a
    tp_size: 1

  - {name: b, \"tp_size\": 2}
  -
    name: c
    tp_size: 3
sweep: [{x: 1}, {x: [1, 2], 'y': 3}]
";
        let at = |p: &[Seg<'_>]| locate_path(text, p);
        assert_eq!(
            at(&[Key("server"), Key("args"), Key("max_num_seqs")]),
            Some((7, 5))
        );
        assert_eq!(
            at(&[Key("server"), Key("vllm"), Key("args"), Key("max_num_seqs")]),
            Some((5, 12))
        );
        assert_eq!(
            at(&[Key("configs"), Item(0), Key("tp_size")]),
            Some((10, 5))
        );
        assert_eq!(
            at(&[Key("configs"), Item(1), Key("tp_size")]),
            Some((12, 15))
        );
        assert_eq!(
            at(&[Key("configs"), Item(2), Key("tp_size")]),
            Some((15, 5))
        );
        assert_eq!(at(&[Key("configs"), Item(3)]), None);
        assert_eq!(at(&[Key("sweep"), Item(1), Key("y")]), Some((16, 29)));
        assert_eq!(
            at(&[Key("sweep"), Item(1), Key("x"), Item(1)]),
            Some((16, 25))
        );
        assert_eq!(at(&[Key("configs"), Item(0), Key("engine")]), None);
        assert_eq!(at(&[Key("name"), Key("x")]), None);
        assert_eq!(at(&[Key("nam")]), None);
    }

    #[test]
    fn a_sequence_at_its_keys_indent_and_a_comment_with_a_colon() {
        let text = "configs:\n- name: a # tp_size: 9\n  tp_size: 1\n- name: b\nworkload: {}\n";
        let at = |p: &[Seg<'_>]| locate_path(text, p);
        assert_eq!(at(&[Key("configs"), Item(0), Key("tp_size")]), Some((3, 3)));
        assert_eq!(at(&[Key("configs"), Item(1), Key("name")]), Some((4, 3)));
        assert_eq!(at(&[Key("configs"), Item(1), Key("tp_size")]), None);
        assert_eq!(at(&[Key("workload")]), Some((5, 1)));
    }
}
