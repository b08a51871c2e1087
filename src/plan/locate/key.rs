//! Where a key is in the text found from a place serde_yaml reported (`relocate_to_key`: the
//! start of the mapping that holds it), or from the text alone (`locate_key`, `locate_text`,
//! `locate_var`).

/// Move an error reported at a mapping's start onto the line of `key` inside that mapping, at
/// its value (at the key when the value starts on a later line).
/// `key` may be a dotted path (`objective.minimize`): each further part is looked for inside
/// the value of the part before it, in block or flow style.
pub fn relocate_to_key(text: &str, line: usize, column: usize, key: &str) -> (usize, usize) {
    match relocate(text, line, column, key) {
        Some(at) => (at.line, at.value_column.unwrap_or(at.column)),
        None => (line, column),
    }
}

/// As [`relocate_to_key`], at the key's own name rather than its value: for a key that is
/// itself wrong (an SLO bound on a column that is none).
pub fn relocate_to_key_name(text: &str, line: usize, column: usize, key: &str) -> (usize, usize) {
    match relocate(text, line, column, key) {
        Some(at) => (at.line, at.column),
        None => (line, column),
    }
}

fn relocate(text: &str, line: usize, column: usize, key: &str) -> Option<KeyAt> {
    let lines: Vec<&str> = text.lines().collect();
    let mut parts = key.split('.');
    let first = parts.next()?;
    let mut at =
        block_key(&lines, line, column, first).or_else(|| flow_key(&lines, line, column, first))?;
    for part in parts {
        let inner = match at.value_column {
            Some(vc) => flow_key(&lines, at.line, vc, part),
            None => block_child(&lines, &at, part),
        };
        match inner {
            Some(found) => at = found,
            None => break,
        }
    }
    Some(at)
}

/// A key found in the text: 1-based line and column, and the column of its value when the
/// value starts on the same line.
struct KeyAt {
    line: usize,
    column: usize,
    value_column: Option<usize>,
}

/// The parts of a line of a block mapping: indent (0-based column of the key) and the text
/// from the key on, past a leading `- `.
fn key_body(l: &str) -> (usize, &str) {
    let body = l.trim_start();
    match body.strip_prefix("- ") {
        Some(rest) => (l.len() - rest.trim_start().len(), rest.trim_start()),
        None => (l.len() - body.len(), body),
    }
}

/// `key: value` on `line` (0-based index) at `indent`, if that line holds it.
fn key_on_line(lines: &[&str], i: usize, key: &str) -> Option<KeyAt> {
    let (indent, body) = key_body(lines.get(i)?);
    let after = body.strip_prefix(key)?.strip_prefix(':')?;
    let value_column = (!after.trim().is_empty() && !after.trim_start().starts_with('#'))
        .then(|| indent + key.len() + 1 + (after.len() - after.trim_start().len()) + 1);
    Some(KeyAt {
        line: i + 1,
        column: indent + 1,
        value_column,
    })
}

/// `key:` in the block mapping whose first key is at (line, column).
fn block_key(lines: &[&str], line: usize, column: usize, key: &str) -> Option<KeyAt> {
    for i in line.saturating_sub(1)..lines.len() {
        let (indent, _) = key_body(lines[i]);
        if indent + 1 < column && i + 1 > line {
            break; // left the mapping
        }
        if indent + 1 == column {
            if let Some(k) = key_on_line(lines, i, key) {
                return Some(k);
            }
        }
    }
    None
}

/// `key:` among the children of a block key (the lines below it, indented deeper).
fn block_child(lines: &[&str], parent: &KeyAt, key: &str) -> Option<KeyAt> {
    for i in parent.line..lines.len() {
        let l = lines[i];
        let t = l.trim_start();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let (indent, _) = key_body(l);
        if indent < parent.column {
            break;
        }
        if let Some(k) = key_on_line(lines, i, key) {
            return Some(k);
        }
    }
    None
}

/// `key:` directly inside the flow mapping that opens at (line, column) with `{`.
fn flow_key(lines: &[&str], line: usize, column: usize, key: &str) -> Option<KeyAt> {
    let first = lines.get(line.checked_sub(1)?)?;
    if first.as_bytes().get(column.checked_sub(1)?) != Some(&b'{') {
        return None;
    }
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut depth = 0usize;
    for (i, l) in lines.iter().enumerate().skip(line - 1) {
        let b = l.as_bytes();
        let from = if i + 1 == line { column - 1 } else { 0 };
        for j in from..b.len() {
            match b[j] {
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return None;
                    }
                }
                b'#' if j == 0 || b[j - 1] == b' ' => break,
                _ if depth == 1 && b[j..].starts_with(key.as_bytes()) => {
                    let before = j.checked_sub(1).map(|k| b[k]);
                    let end = j + key.len();
                    let mut k = end;
                    if matches!(before, Some(b'"' | b'\''))
                        && matches!(b.get(k), Some(b'"' | b'\''))
                    {
                        k += 1;
                    }
                    let boundary =
                        !before.is_some_and(ident) && !b.get(end).is_some_and(|&c| ident(c));
                    if boundary && b.get(k) == Some(&b':') {
                        let value = k + 1 + (b.len() - k - 1 - l[k + 1..].trim_start().len());
                        return Some(KeyAt {
                            line: i + 1,
                            column: j + 1,
                            value_column: (value < b.len()).then_some(value + 1),
                        });
                    }
                }
                _ => {}
            }
        }
    }
    None
}

/// Position of the first `${NAME` in the text.
pub fn locate_var(text: &str, name: &str) -> Option<(usize, usize)> {
    let needle = format!("${{{name}");
    text.lines()
        .enumerate()
        .find_map(|(i, l)| l.find(&needle).map(|c| (i + 1, c + 1)))
}

/// 1-based (line, column) of the first occurrence of `needle` outside comments.
pub fn locate_text(text: &str, needle: &str) -> Option<(usize, usize)> {
    text.lines().enumerate().find_map(|(i, l)| {
        let code = l.split(" #").next().unwrap_or(l);
        code.find(needle).map(|c| (i + 1, c + 1))
    })
}

/// 1-based (line, column) of the first `key:` in the text, for errors found after parsing.
pub fn locate_key(text: &str, key: &str) -> Option<(usize, usize)> {
    let needle = format!("{key}:");
    text.lines().enumerate().find_map(|(i, l)| {
        let trimmed = l.trim_start();
        let col = l.len() - trimmed.len();
        let t = trimmed.trim_start_matches("- ");
        t.starts_with(&needle)
            .then(|| (i + 1, col + 1 + (trimmed.len() - t.len())))
    })
}
