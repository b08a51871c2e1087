//! The house rule of docs/architecture.md, checked: `src/` has one folder per stage, in
//! data-flow order, and code only uses the folders before its own (arrows point down). A
//! `use crate::report` inside `src/observe` fails here, naming the file and the line. With
//! the same reading of the code: no circle among the files of any folder, at any depth; no
//! `pub` item without a caller outside tests; and outside `record/` no row cell of an enum,
//! no sweep outcome compared as text, and no results.csv column named by its text (the names
//! are `plan::columns`' list). Test code is left out of every rule. Each rule is shown
//! failing on a planted violation.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test may panic: that is its failure

use std::path::{Path, PathBuf};

/// The layers, lowest first. Keep in step with docs/architecture.md and src/lib.rs.
const LAYERS: &[&str] = &[
    "util", "plan", "server", "load", "observe", "record", "tune", "report", "run", "cmd",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("src is readable") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `text` cut before its first `#[cfg(test)]` line (unit tests sit at the end of a file, and
/// what they use is not the module's dependency), with its comments blanked, and its string
/// and character literals too when `strings` is false. Every blanked character becomes one
/// space (a newline stays), so a position in the result is the same character in `text` and
/// line numbers hold.
fn code_of(text: &str, strings: bool) -> Vec<char> {
    let mut cut = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        cut.push_str(line);
        cut.push('\n');
    }
    blanked(&cut, strings)
}

/// `text` with its comments blanked, and its string and character literals too when
/// `strings` is false, each blanked character one space (a newline stays): [`code_of`]
/// without the cut.
fn blanked(text: &str, strings: bool) -> Vec<char> {
    let c: Vec<char> = text.chars().collect();
    let mut out = c.clone();
    let blank = |out: &mut Vec<char>, from: usize, to: usize| {
        for x in &mut out[from..to.min(c.len())] {
            if *x != '\n' {
                *x = ' ';
            }
        }
    };
    let ident = |i: usize| i < c.len() && (c[i].is_alphanumeric() || c[i] == '_');
    let mut i = 0;
    while i < c.len() {
        let next = c.get(i + 1).copied();
        if c[i] == '/' && next == Some('/') {
            let end = (i..c.len()).find(|&j| c[j] == '\n').unwrap_or(c.len());
            blank(&mut out, i, end);
            i = end;
        } else if c[i] == '/' && next == Some('*') {
            // Block comments nest.
            let (mut depth, mut j) = (1, i + 2);
            while j < c.len() && depth > 0 {
                if c[j] == '/' && c.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 1;
                } else if c[j] == '*' && c.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 1;
                }
                j += 1;
            }
            blank(&mut out, i, j);
            i = j;
        } else if c[i] == 'r'
            && !(i > 0 && ident(i - 1))
            && matches!(next, Some('"') | Some('#'))
            && c[i + 1..].iter().find(|&&x| x != '#') == Some(&'"')
        {
            // A raw string: r"..." or r#"..."#, closed by a quote and as many hashes.
            let hashes = c[i + 1..].iter().take_while(|&&x| x == '#').count();
            let body = i + 1 + hashes + 1;
            let mut j = body;
            while j < c.len()
                && !(c[j] == '"'
                    && c[j + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&x| x == '#')
                        .count()
                        == hashes)
            {
                j += 1;
            }
            if !strings {
                blank(&mut out, body, j);
            }
            i = j + 1 + hashes;
        } else if c[i] == '"' {
            let mut j = i + 1;
            while j < c.len() && c[j] != '"' {
                j += if c[j] == '\\' { 2 } else { 1 };
            }
            if !strings {
                blank(&mut out, i + 1, j);
            }
            i = j + 1;
        } else if c[i] == '\'' {
            // A character literal ('x', '\n', '\u{7f}'), else a lifetime ('a).
            let end = if next == Some('\\') {
                (i + 2..c.len()).find(|&j| c[j] == '\'')
            } else {
                (c.get(i + 2) == Some(&'\'')).then_some(i + 2)
            };
            match end {
                Some(e) => {
                    if !strings {
                        blank(&mut out, i + 1, e);
                    }
                    i = e + 1;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    out
}

/// A token of code: an identifier, `::`, or one other character; with its line.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Id(String),
    Path,
    P(char),
}

fn tokens(code: &[char]) -> Vec<(Tok, usize)> {
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < code.len() {
        let ch = code[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch.is_alphabetic() || ch == '_' {
            let from = i;
            while i < code.len() && (code[i].is_alphanumeric() || code[i] == '_') {
                i += 1;
            }
            out.push((Tok::Id(code[from..i].iter().collect()), line));
        } else if ch == ':' && code.get(i + 1) == Some(&':') {
            out.push((Tok::Path, line));
            i += 2;
        } else {
            out.push((Tok::P(ch), line));
            i += 1;
        }
    }
    out
}

/// One name a `use` brings in: its path as written (`self` in a group already folded into
/// its prefix), the name it binds (None for a glob), and its line.
struct UseLeaf {
    path: Vec<String>,
    binds: Option<String>,
    line: usize,
}

/// The use tree starting at `t[*i]` under `prefix` (`a::b`, `a::{b, c::d as e}`, `a::*`).
fn use_tree(t: &[(Tok, usize)], i: &mut usize, prefix: Vec<String>, out: &mut Vec<UseLeaf>) {
    let mut path = prefix;
    while let Some((tok, line)) = t.get(*i) {
        match tok {
            Tok::P('{') => {
                *i += 1;
                loop {
                    use_tree(t, i, path.clone(), out);
                    match t.get(*i).map(|x| &x.0) {
                        Some(Tok::P(',')) => *i += 1,
                        Some(Tok::P('}')) => {
                            *i += 1;
                            return;
                        }
                        _ => return,
                    }
                    if matches!(t.get(*i).map(|x| &x.0), Some(Tok::P('}'))) {
                        *i += 1; // a trailing comma
                        return;
                    }
                }
            }
            Tok::P('*') => {
                *i += 1;
                out.push(UseLeaf {
                    path,
                    binds: None,
                    line: *line,
                });
                return;
            }
            Tok::Id(name) if name != "as" => {
                *i += 1;
                if name != "self" {
                    path.push(name.clone());
                }
                if t.get(*i).map(|x| &x.0) == Some(&Tok::Path) {
                    *i += 1;
                    continue;
                }
                let mut binds = path.last().cloned();
                if t.get(*i).map(|x| &x.0) == Some(&Tok::Id("as".into())) {
                    if let Some((Tok::Id(alias), _)) = t.get(*i + 1) {
                        binds = Some(alias.clone());
                    }
                    *i += 2;
                }
                out.push(UseLeaf {
                    path,
                    binds,
                    line: *line,
                });
                return;
            }
            _ => return,
        }
    }
}

/// Every path a file's non-test code ([`live_code`]: a `#[cfg(test)]` item anywhere in the
/// file is left out, not only from the first one on) names, resolved to where it points from the crate root
/// (`["record", "plan_file", "read"]`), with its line. `module` is the file's own module path
/// (`["record", "store"]` for src/record/store.rs, `["run", "launch"]` for its mod.rs). Any
/// form a path can take resolves: `crate::record::x`, `super::x` and `super::super::x`,
/// `self::x`, a group `use super::{a, b::C}`, and a name a `use` bound (`use crate::record;`
/// then `record::x`, `use crate::record::{self as r}` then `r::x`); inside an inline
/// `mod m { ... }`, `super` and `self` start from `m`. Paths into other crates are left out.
fn resolved_paths(text: &str, module: &[String]) -> Vec<(usize, Vec<String>)> {
    resolved_file(text, module).0
}

/// The names a file's `use` declarations bind, each to the path it resolves to from the crate
/// root (`Lift` -> `["tune", "guide", "moves", "Lift"]` for guide/mod.rs's `pub use
/// moves::Lift`): what a child's `super::Lift` reaches through it. Globs bind no name.
fn use_bindings(text: &str, module: &[String]) -> Bindings {
    resolved_file(text, module).1
}

/// [`resolved_paths`] and [`use_bindings`], from one reading of the file.
fn resolved_file(text: &str, module: &[String]) -> (Vec<(usize, Vec<String>)>, Bindings) {
    let t = tokens(&live_code(text));
    // The inline modules each token sits in (`mod stamp { use super::Received; }`).
    let mut inline: Vec<Vec<String>> = Vec::with_capacity(t.len());
    let (mut stack, mut depth): (Vec<(String, usize)>, usize) = (Vec::new(), 0);
    for (k, (tok, _)) in t.iter().enumerate() {
        match tok {
            Tok::P('{') => {
                depth += 1;
                if let (Some((Tok::Id(m), _)), Some((Tok::Id(name), _))) =
                    (t.get(k.wrapping_sub(2)), t.get(k.wrapping_sub(1)))
                {
                    if m == "mod" {
                        stack.push((name.clone(), depth));
                    }
                }
            }
            Tok::P('}') => {
                if stack.last().is_some_and(|(_, d)| *d == depth) {
                    stack.pop();
                }
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
        inline.push(stack.iter().map(|(n, _)| n.clone()).collect());
    }
    let here = |k: usize| -> Vec<String> {
        let mut m = module.to_vec();
        m.extend(inline[k].iter().cloned());
        m
    };
    // The `use` declarations, and where each is, so the scan below skips them.
    let mut leaves: Vec<(usize, UseLeaf)> = Vec::new();
    let mut in_use = vec![false; t.len()];
    let mut k = 0;
    while k < t.len() {
        let starts = t[k].0 == Tok::Id("use".into())
            && !matches!(
                t.get(k.wrapping_sub(1)).map(|x| &x.0),
                Some(Tok::Path | Tok::P('.'))
            );
        if !starts {
            k += 1;
            continue;
        }
        let mut i = k + 1;
        if t.get(i).map(|x| &x.0) == Some(&Tok::Path) {
            i += 1; // `use ::std::x`
        }
        let mut found = Vec::new();
        use_tree(&t, &mut i, Vec::new(), &mut found);
        for x in in_use.iter_mut().take(i.min(t.len())).skip(k) {
            *x = true;
        }
        leaves.extend(found.into_iter().map(|l| (k, l)));
        k = i.max(k + 1);
    }
    let resolve = |path: &[String],
                   at: usize,
                   bound: &std::collections::BTreeMap<String, Vec<String>>|
     -> Option<Vec<String>> {
        let first = path.first()?;
        let mut base = match first.as_str() {
            "crate" => Vec::new(),
            "self" => here(at),
            "super" => {
                let mut m = here(at);
                m.pop()?;
                m
            }
            // A name no `use` bound: the module's own child (`pub use moves::Lift` in a
            // mod.rs, as paths read since the 2018 edition), else another crate, a type or a
            // prelude name, which lands inside the file's own module and so names no other.
            other => bound.get(other).cloned().unwrap_or_else(|| {
                let mut m = here(at);
                m.push(other.to_string());
                m
            }),
        };
        let mut rest = path[1..].iter().peekable();
        if first == "super" {
            while rest.peek().is_some_and(|s| *s == "super") {
                rest.next();
                base.pop()?;
            }
        }
        base.extend(rest.cloned());
        Some(base)
    };
    // What each `use` binds; twice, for a `use` that names one declared below it.
    let mut bound = Bindings::new();
    for _ in 0..2 {
        for (at, l) in &leaves {
            if let (Some(name), Some(abs)) = (&l.binds, resolve(&l.path, *at, &bound)) {
                bound.insert(name.clone(), abs);
            }
        }
    }
    let mut out: Vec<(usize, Vec<String>)> = leaves
        .iter()
        .filter_map(|(at, l)| resolve(&l.path, *at, &bound).map(|p| (l.line, p)))
        .collect();
    // The paths in the code: `a::b::c` not inside a `use` and not itself after `::`.
    let mut k = 0;
    while k < t.len() {
        let (Tok::Id(first), line) = &t[k] else {
            k += 1;
            continue;
        };
        let after_path = matches!(t.get(k.wrapping_sub(1)).map(|x| &x.0), Some(Tok::Path));
        if in_use[k] || after_path || t.get(k + 1).map(|x| &x.0) != Some(&Tok::Path) {
            k += 1;
            continue;
        }
        let mut path = vec![first.clone()];
        let mut j = k + 1;
        while t.get(j).map(|x| &x.0) == Some(&Tok::Path) {
            match t.get(j + 1) {
                Some((Tok::Id(n), _)) => {
                    path.push(n.clone());
                    j += 2;
                }
                _ => break,
            }
        }
        if let Some(abs) = resolve(&path, k, &bound) {
            out.push((*line, abs));
        }
        k = j;
    }
    out.sort();
    (out, bound)
}

/// The module path of `file` under `src`: src/record/store.rs is `record::store`, and a
/// folder's mod.rs is the folder.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("under src");
    let mut m: Vec<String> = rel
        .components()
        .filter_map(|c| c.as_os_str().to_str())
        .map(|c| c.trim_end_matches(".rs").to_string())
        .collect();
    if m.last().is_some_and(|l| l == "mod") {
        m.pop();
    }
    m
}

/// The layers a file's non-test code uses, by any path form, with line numbers.
fn used_layers(text: &str, module: &[String]) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = resolved_paths(text, module)
        .into_iter()
        .filter_map(|(line, p)| p.into_iter().next().map(|l| (line, l)))
        .collect();
    out.dedup();
    out
}

/// `src/` of this crate.
fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every place under `src` where code reaches a later stage (or names no stage), as
/// `path:line: why`, and the stages that have code.
fn upward_uses(src: &Path) -> (Vec<String>, std::collections::BTreeSet<String>) {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut wrong = Vec::new();
    let mut seen_layers = std::collections::BTreeSet::new();
    for f in &files {
        let rel = f.strip_prefix(src).expect("under src");
        let Some(top) = rel.components().next().and_then(|c| c.as_os_str().to_str()) else {
            continue;
        };
        if is_test_only(src, f) {
            continue;
        }
        let Some(own) = LAYERS.iter().position(|l| *l == top) else {
            // lib.rs and main.rs sit above every layer.
            if !matches!(top, "lib.rs" | "main.rs") {
                wrong.push(format!(
                    "{} is outside every stage folder: put it in one of {LAYERS:?}",
                    rel.display()
                ));
            }
            continue;
        };
        seen_layers.insert(top.to_string());
        let text = std::fs::read_to_string(f).expect("readable");
        for (line, used) in used_layers(&text, &module_path(src, f)) {
            match LAYERS.iter().position(|l| *l == used) {
                Some(u) if u > own => wrong.push(format!(
                    "{}:{line}: `{top}` uses `crate::{used}`, a later stage",
                    rel.display()
                )),
                Some(_) => {}
                None => wrong.push(format!(
                    "{}:{line}: `crate::{used}` is not a stage folder",
                    rel.display()
                )),
            }
        }
    }
    (wrong, seen_layers)
}

#[test]
fn every_folder_uses_only_the_layers_below_it() {
    let (wrong, seen_layers) = upward_uses(&src_dir());
    assert!(
        wrong.is_empty(),
        "arrows must point down ({}):\n{}",
        LAYERS.join(" < "),
        wrong.join("\n")
    );
    let all: std::collections::BTreeSet<String> = LAYERS.iter().map(|l| l.to_string()).collect();
    assert_eq!(seen_layers, all, "every layer has code in src/");
}

#[test]
fn the_checker_sees_an_upward_use() {
    let text = "use crate::plan::spec;\nfn f() { crate::report::table::render(); } // crate::cmd\nconst S: &str = \"crate::cmd\";\n#[cfg(test)]\nuse crate::cmd;\n";
    let used = used_layers(text, &["observe".into(), "diagnose".into()]);
    assert_eq!(
        used,
        vec![(1, "plan".to_string()), (2, "report".to_string())],
        "comments, strings and test code are not dependencies"
    );
    // Through `super::super` from a sub-folder's mod.rs (the crate), and through a name a
    // `use` bound.
    let text =
        "use super::super::report::table;\nuse crate::run as r;\nfn f() { r::sweep::go(); }\n";
    let used = used_layers(text, &["observe".into(), "sglang_log".into()]);
    assert_eq!(
        used,
        vec![
            (1, "report".to_string()),
            (2, "run".to_string()),
            (3, "run".to_string())
        ]
    );
}

/// The names a folder's mod.rs binds with its `use`s ([`use_bindings`]).
type Bindings = std::collections::BTreeMap<String, Vec<String>>;

/// The children of `folder` (its files and sub-folders, by module name) that a file's non-test
/// code names, by any path form ([`resolved_paths`]), with line numbers: `module` is the
/// file's module path, `folder` the folder's (a prefix of it). A name the folder's mod.rs
/// binds (`reexports`: `pub use moves::Lift`) counts as the child it comes from, so
/// `super::Lift` is a use of `moves`.
fn used_children(
    text: &str,
    module: &[String],
    folder: &[String],
    reexports: &Bindings,
) -> Vec<(usize, String)> {
    let n = folder.len();
    let child = |p: &[String]| -> Option<String> {
        (p.len() > n && p[..n] == *folder).then(|| p[n].clone())
    };
    resolved_paths(text, module)
        .into_iter()
        .filter_map(|(line, p)| {
            let name = child(&p)?;
            Some((
                line,
                reexports
                    .get(&name)
                    .and_then(|to| child(to))
                    .unwrap_or(name),
            ))
        })
        .collect()
}

/// A cycle in `edges` (module -> modules it uses), as the path that closes it.
fn find_cycle(edges: &std::collections::BTreeMap<String, Vec<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        edges: &std::collections::BTreeMap<String, Vec<String>>,
        path: &mut Vec<String>,
        done: &mut std::collections::BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == n) {
            let mut c = path[at..].to_vec();
            c.push(n.to_string());
            return Some(c);
        }
        if done.contains(n) {
            return None;
        }
        path.push(n.to_string());
        for m in edges.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, edges, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = std::collections::BTreeSet::new();
    for n in edges.keys() {
        if let Some(c) = visit(n, edges, &mut Vec::new(), &mut done) {
            return Some(c);
        }
    }
    None
}

type Edges = std::collections::BTreeMap<String, Vec<String>>;

/// Which child of `folder` uses which: `files` are (module path, text) of files anywhere
/// under `src` (those outside the folder are skipped), `children` the folder's files and
/// sub-folders by module name, `reexports` what its mod.rs binds. A sub-folder's files are all
/// its child; the folder's mod.rs declares the children, it is the folder, not one of them.
fn folder_edges(
    files: &[(Vec<String>, String)],
    folder: &[String],
    children: &[String],
    reexports: &Bindings,
) -> Edges {
    let mut edges = Edges::new();
    for (path, text) in files {
        if path.len() <= folder.len() || path[..folder.len()] != *folder {
            continue;
        }
        let me = &path[folder.len()];
        for (_, used) in used_children(text, path, folder, reexports) {
            if children.contains(&used) && &used != me {
                let e = edges.entry(me.clone()).or_default();
                if !e.contains(&used) {
                    e.push(used);
                }
            }
        }
    }
    edges
}

/// Every folder under `src` (not `src` itself: its folders are the stages, ordered by
/// [`upward_uses`]), at any depth, sorted.
fn folders(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("src is readable") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            out.push(p.clone());
            folders(&p, out);
        }
    }
    out.sort();
}

/// Each folder under `src`, at any depth, whose children (files and sub-folders) use each
/// other in a circle through their non-test code, as `src/<folder>: a -> b -> a`.
fn circles(src: &Path) -> Vec<String> {
    let mut paths = Vec::new();
    rust_files(src, &mut paths);
    paths.sort();
    let files: Vec<(Vec<String>, String)> = paths
        .iter()
        .filter(|f| !is_test_only(src, f))
        .map(|f| {
            let text = std::fs::read_to_string(f).expect("readable");
            (module_path(src, f), text)
        })
        .collect();
    let mut dirs = Vec::new();
    folders(src, &mut dirs);
    let mut circles = Vec::new();
    for dir in dirs {
        let folder = module_path(src, &dir.join("mod.rs"));
        let mut children: Vec<String> = std::fs::read_dir(&dir)
            .expect("a folder is readable")
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n != "mod.rs" && (n.ends_with(".rs") || dir.join(n).is_dir()))
            .map(|n| n.trim_end_matches(".rs").to_string())
            .collect();
        children.sort();
        children.dedup();
        let reexports = [dir.join("mod.rs"), dir.with_extension("rs")]
            .iter()
            .find_map(|f| std::fs::read_to_string(f).ok())
            .map(|text| use_bindings(&text, &folder))
            .unwrap_or_default();
        if let Some(c) = find_cycle(&folder_edges(&files, &folder, &children, &reexports)) {
            circles.push(format!("src/{}: {}", folder.join("/"), c.join(" -> ")));
        }
    }
    circles
}

#[test]
fn no_folder_has_an_import_circle_among_its_files() {
    let circles = circles(&src_dir());
    assert!(
        circles.is_empty(),
        "the files (and sub-folders) of a folder must not use each other in a circle:\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_circle_checker_sees_a_circle() {
    let mut edges = Edges::new();
    edges.insert("flags".into(), vec!["search".into()]);
    edges.insert("search".into(), vec!["spec".into()]);
    edges.insert("spec".into(), vec!["flags".into()]);
    let c = find_cycle(&edges).expect("a circle");
    assert_eq!(c.first(), c.last());
    assert_eq!(c.len(), 4);
    edges.insert("spec".into(), vec![]);
    assert_eq!(find_cycle(&edges), None);
}

/// Every path form that names a sibling module is seen, with its line; a sub-folder's
/// `super::` names its own module's parts, not siblings; comments, strings and tests are not
/// uses.
#[test]
fn the_sibling_check_sees_every_path_form() {
    let m = |p: &str| -> Vec<String> { p.split("::").map(String::from).collect() };
    let text = "use super::{keyed, flags::X};\n\
                use crate::plan::spec;\n\
                use crate::plan;\n\
                use crate::{plan::search as s, util};\n\
                fn f() {\n\
                    plan::expand::go(); s::Y; self::own::z();\n\
                    crate::plan::\n        tune::knobs();\n\
                }\n\
                // super::locate\n\
                const T: &str = \"crate::plan::engine\";\n\
                #[cfg(test)]\n\
                use super::quality;\n";
    // The siblings: the children of the stage folder, here with no mod.rs bindings.
    let used_siblings =
        |text: &str, module: &[String]| used_children(text, module, &module[..1], &Bindings::new());
    let used = used_siblings(text, &m("plan::engine"));
    let names: Vec<(usize, &str)> = used.iter().map(|(l, n)| (*l, n.as_str())).collect();
    assert_eq!(
        names,
        [
            (1, "flags"),
            (1, "keyed"),
            (2, "spec"),
            (4, "search"),
            (6, "engine"),
            (6, "expand"),
            (6, "search"),
            (7, "tune"),
        ],
        "`self::own` is engine's own child; `use crate::plan` alone names no module"
    );
    // From a sub-folder's file: `super::` is its own module, `super::super::` the folder.
    let text = "use super::scan;\nuse super::super::{prom, sglang_log::fields};\n";
    let used = used_siblings(text, &m("observe::vllm_log::line"));
    let names: Vec<&str> = used.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(names, ["vllm_log", "prom", "sglang_log"]);
    // Inside an inline `mod m { }`, `super` is the file's module.
    let text = "mod stamp {\n    use super::Received;\n}\nuse super::prompts;\n";
    let used = used_siblings(text, &m("load::http1"));
    assert_eq!(used, [(2, "http1".to_string()), (4, "prompts".to_string())]);
}

/// A planted circle through `record::x` after `use crate::record` (the form the issue 36
/// circle hid behind, store.rs ↔ plan_file.rs) is found; without its back edge, none is.
#[test]
fn a_planted_record_x_circle_fails_the_check() {
    let modules: Vec<String> = ["store", "plan_file", "rows"].map(String::from).to_vec();
    let (record, none) = (vec!["record".to_string()], Bindings::new());
    let store = "use crate::record::{self, RunRecord};\n\
                 use super::rows::Row;\n\
                 pub fn read_objective() { record::plan_file::read(); }\n";
    let plan_file = "use super::store::{self, StoreError};\n";
    let file = |p: &str, t: &str| (p.split("::").map(String::from).collect(), t.to_string());
    let files = vec![
        file("record::store", store),
        file("record::plan_file", plan_file),
    ];
    let c =
        find_cycle(&folder_edges(&files, &record, &modules, &none)).expect("the planted circle");
    assert_eq!(c, ["plan_file", "store", "plan_file"]);
    let one_way = vec![
        file("record::store", "use super::rows::Row;\n"),
        file("record::plan_file", plan_file),
    ];
    assert_eq!(
        find_cycle(&folder_edges(&one_way, &record, &modules, &none)),
        None
    );
}

/// Writes `files` (path under the tree, text) into a fresh temporary tree: a source tree for
/// a checker to read.
fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tempdir");
    for (path, text) in files {
        let p = tmp.path().join(path);
        std::fs::create_dir_all(p.parent().expect("a folder")).expect("mkdir");
        std::fs::write(&p, text).expect("write");
    }
    tmp
}

/// A circle among the files of a folder two levels down (tune/guide/), through each path form
/// (`use super::b::Step`, `crate::tune::guide::c::g()`, and `super::Lift` that mod.rs
/// re-exports from a.rs), is reported on a small tree; a test-only file and a test block that
/// close a circle do not; without the back edge, none is.
#[test]
fn the_circle_check_sees_a_planted_circle_inside_a_folder() {
    let guide = |c: &str| {
        tree(&[
            ("src/lib.rs", "pub mod tune;\n"),
            ("src/tune/mod.rs", "pub mod guide;\n"),
            (
                "src/tune/guide/mod.rs",
                "mod a;\nmod b;\nmod c;\n#[cfg(test)]\nmod fixtures;\npub use a::Lift;\n",
            ),
            (
                "src/tune/guide/a.rs",
                "use super::b::Step;\npub struct Lift;\n",
            ),
            (
                "src/tune/guide/b.rs",
                "pub struct Step;\npub fn f() { crate::tune::guide::c::g(); }\n",
            ),
            ("src/tune/guide/c.rs", c),
            (
                "src/tune/guide/fixtures.rs",
                "use super::c::g;\nuse super::a::Lift;\n",
            ),
        ])
    };
    let closed = guide("use super::Lift;\npub fn g() {}\n");
    assert_eq!(
        circles(&closed.path().join("src")),
        ["src/tune/guide: a -> b -> c -> a"]
    );
    let open = guide("pub fn g() {}\n#[cfg(test)]\nmod tests {\n    use super::super::Lift;\n}\n");
    assert_eq!(circles(&open.path().join("src")), Vec::<String>::new());
}

/// `src/cmd/` holds thin front-ends (parse the arguments, call `run/` or `report/`, print): a
/// file past this many lines holds work that belongs to a stage.
const CMD_MAX_LINES: usize = 300;

/// The `.rs` files under `dir` longer than `max` lines, as `path: N lines`.
fn files_over(dir: &Path, max: usize) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    files.sort();
    files
        .iter()
        .filter_map(|f| {
            let n = std::fs::read_to_string(f)
                .expect("readable")
                .lines()
                .count();
            (n > max).then(|| format!("{}: {n} lines", f.display()))
        })
        .collect()
}

#[test]
fn every_cmd_file_is_a_thin_front_end() {
    let cmd = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cmd");
    let long = files_over(&cmd, CMD_MAX_LINES);
    assert!(
        long.is_empty(),
        "src/cmd/ files over {CMD_MAX_LINES} lines (move the work into run/ or report/, keep the parsing and printing):\n{}",
        long.join("\n")
    );
}

#[test]
fn the_size_check_names_the_file_past_the_limit() {
    let tmp = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(tmp.path().join("sub")).expect("mkdir");
    std::fs::write(tmp.path().join("fits.rs"), "x\n".repeat(3)).expect("write");
    std::fs::write(tmp.path().join("sub/long.rs"), "x\n".repeat(4)).expect("write");
    std::fs::write(tmp.path().join("notes.md"), "x\n".repeat(9)).expect("write");
    let long = files_over(tmp.path(), 3);
    assert_eq!(
        long,
        [format!(
            "{}: 4 lines",
            tmp.path().join("sub/long.rs").display()
        )]
    );
}

/// The row cells whose values are an enum in record/: compared as `Phase`, `RunStatus` and
/// `ProbeResult` through `Row`'s typed accessors, never as strings, so a renamed value is
/// one change in record/ (issue 25).
const TYPED_CELLS: &[&str] = &["phase", "status", "probe"];

/// The statements of `text`'s non-test code, each with its whitespace (newlines included)
/// folded to one space, with the line it starts on. A statement ends at `;`, `{` or `}`
/// outside a string literal, so a comparison written across lines is one statement.
fn statements(text: &str) -> Vec<(usize, String)> {
    let code = code_of(text, true);
    let bare = code_of(text, false); // the same characters, strings blanked: where to cut
    let mut out = Vec::new();
    let (mut line, mut start, mut cur) = (1, 1, String::new());
    for (ch, b) in code.iter().zip(&bare) {
        if matches!(b, ';' | '{' | '}') {
            if !cur.trim().is_empty() {
                out.push((start, cur.trim().to_string()));
            }
            cur.clear();
        } else if ch.is_whitespace() {
            if !cur.is_empty() && !cur.ends_with(' ') {
                cur.push(' ');
            }
        } else {
            if cur.is_empty() {
                start = line;
            }
            cur.push(*ch);
        }
        if *ch == '\n' {
            line += 1;
        }
    }
    out
}

/// The operands either side of each `==` / `!=` in a statement, as the identifier or call
/// next to the operator (`st` in `if st == "x"`, `get("status")` in `r.get("status") != ""`).
fn compared_operands(stmt: &str) -> Vec<String> {
    let mut out = Vec::new();
    for op in ["==", "!="] {
        for (at, _) in stmt.match_indices(op) {
            let left: String = stmt[..at]
                .trim_end()
                .chars()
                .rev()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            let right: String = stmt[at + 2..]
                .trim_start()
                .trim_start_matches(['&', '*'])
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.extend([left, right].into_iter().filter(|x| !x.is_empty()));
        }
    }
    out
}

/// Statements of `text` that compare a typed cell read as a string, with their first line: a
/// statement that reads the cell (`.get("status")`) and compares (`==`, `!=`, `matches!`),
/// written on one line or across several; or a comparison of a name a `let` bound to such a
/// read (`let st = r.get("status");` then `if st == "interrupted"`).
fn string_compared_cells(text: &str) -> Vec<(usize, String)> {
    let reads = |s: &str| {
        TYPED_CELLS
            .iter()
            .any(|c| s.contains(&format!(".get(\"{c}\")")))
    };
    let mut bound: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for (line, s) in statements(text) {
        let compares = s.contains("==") || s.contains("!=") || s.contains("matches!(");
        if reads(&s) && compares {
            out.push((line, s));
            continue;
        }
        if reads(&s) {
            if let Some(rest) = s.strip_prefix("let ") {
                let name: String = rest
                    .trim_start_matches("mut ")
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    bound.push(name);
                }
            }
            continue;
        }
        if compared_operands(&s).iter().any(|o| bound.contains(o)) {
            out.push((line, s));
        }
    }
    out
}

#[test]
fn outside_record_no_row_cell_of_an_enum_is_compared_as_a_string() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut found = Vec::new();
    for f in files.iter().filter(|f| !f.starts_with(src.join("record"))) {
        let text = std::fs::read_to_string(f).expect("readable");
        for (n, l) in string_compared_cells(&text) {
            found.push(format!("{}:{n}: {l}", f.display()));
        }
    }
    assert!(
        found.is_empty(),
        "compare rows through record::rows::Row::{{phase, status, probe}} (enums), not strings:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_cell_check_sees_a_string_comparison() {
    let text = "fn a(r: &Row) -> bool {\n    r.get(\"phase\") == \"probe\"\n}\nfn b(r: &Row) -> &str {\n    r.get(\"status\")\n}\n#[cfg(test)]\nmod t { fn c(r: &Row) -> bool { r.get(\"probe\") != \"\" } }\n";
    assert_eq!(
        string_compared_cells(text),
        [(2, "r.get(\"phase\") == \"probe\"".to_string())]
    );
}

/// Planted comparisons across lines (the one issue 36 found in run/slurm/merge.rs: the status
/// bound on one line, compared as text on the next; and one expression split over lines) are
/// found; the typed comparison, a string that only mentions a cell, and a comment are not.
#[test]
fn the_cell_check_sees_a_comparison_across_lines() {
    let text = r#"fn state(bad: Option<&Row>) -> &'static str {
    let st = bad.map_or("failed", |r| r.get("status"));
    let state = if st == "interrupted" {
        "cancelled"
    } else {
        "failed"
    };
    state
}
fn probing(r: &Row) -> bool {
    r.phase() == Phase::Probe
        || r
            .get("phase")
            != "probe"
}
fn typed(r: &Row) -> bool {
    r.status() == Some(RunStatus::Interrupted)
}
fn words(n: usize) -> bool {
    let s = format!("r.get(\"probe\") is {n}; x == y");
    // r.get("status") == "ok"
    s.is_empty()
}
"#;
    assert_eq!(
        string_compared_cells(text),
        [
            (3, "let state = if st == \"interrupted\"".to_string()),
            (
                11,
                "r.phase() == Phase::Probe || r .get(\"phase\") != \"probe\"".to_string()
            ),
        ]
    );
}

/// Whether `file` (under `src`) is test code as a whole: a module declared under
/// `#[cfg(test)]` (`#[cfg(test)] mod tests;` in its parent), or inside one. Such a file has
/// no `#[cfg(test)]` line of its own for [`code_of`] to cut at.
fn is_test_only(src: &Path, file: &Path) -> bool {
    let module = module_path(src, file);
    (0..module.len()).any(|i| {
        let name = &module[i];
        // The parent's file: lib.rs for a stage, else the folder's mod.rs or its own file.
        let parent = match i {
            0 => vec![src.join("lib.rs")],
            _ => {
                let dir = src.join(module[..i].join("/"));
                vec![dir.join("mod.rs"), dir.with_extension("rs")]
            }
        };
        parent.iter().any(|p| {
            let Ok(text) = std::fs::read_to_string(p) else {
                return false;
            };
            let lines: Vec<&str> = text.lines().map(str::trim).collect();
            lines.windows(2).any(|w| {
                w[0] == "#[cfg(test)]"
                    && [format!("mod {name};"), format!("pub mod {name};")]
                        .contains(&w[1].to_string())
            })
        })
    })
}

/// The non-test files under `src` outside record/, sorted: what the text-comparison checks
/// read.
fn files_outside_record(src: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    files
        .into_iter()
        .filter(|f| !f.starts_with(src.join("record")) && !is_test_only(src, f))
        .collect()
}

/// The results.csv columns' names, from the one list (`plan::columns`).
fn column_names() -> std::collections::BTreeSet<String> {
    sgtune::plan::columns::Column::all()
        .map(|c| c.name().to_string())
        .collect()
}

/// Column names that are also other things' words, each with why its text is allowed outside
/// record/. A row reads these columns through its typed accessors (`Row::engine`, `status`,
/// `point`, `verdict`), never by a name, so their text elsewhere is the other word.
const COLUMN_NAMES_ALSO_WORDS: &[(&str, &str)] = &[
    (
        "engine",
        "a spec key (`server.engine`, a configuration's `engine:`) and plan ids' JSON key",
    ),
    ("status", "/server_info's key, and a table's header"),
    (
        "concurrency",
        "a spec key (`workload.concurrency`), the search's axis, a table's header",
    ),
    (
        "request_rate",
        "a spec key (`workload.request_rate`), the search's axis, `sgtune load`'s JSON",
    ),
    ("verdict", "a table's header"),
];

/// Files whose text names what is not a results.csv column under a column's name, with why.
const COLUMN_LITERAL_FILES: &[(&str, &str)] = &[
    ("plan/columns.rs", "the one list of the names itself"),
    (
        "observe/",
        "the engines' logs and /server_info: the fields the columns took their names from",
    ),
    (
        "report/log.rs",
        "`sgtune log`'s own table of one server log's summary, not results.csv",
    ),
];

/// The names a string literal may hold outside record/ although a column has it: a column
/// named after the server flag it reports (`max_running_requests`, `kv_cache_dtype`) is, as
/// text, that flag's spec key (from the engines' built-in flag lists); and
/// [`COLUMN_NAMES_ALSO_WORDS`].
fn column_names_allowed() -> std::collections::BTreeSet<String> {
    use sgtune::plan::flags::known::{KnownFlags, SGLANG_BUILT_IN, VLLM_BUILT_IN};
    let flags = [
        KnownFlags::built_in(SGLANG_BUILT_IN),
        KnownFlags::built_in(VLLM_BUILT_IN),
    ];
    column_names()
        .into_iter()
        .filter(|n| {
            flags.iter().any(|f| f.contains(n))
                || COLUMN_NAMES_ALSO_WORDS.iter().any(|(w, _)| w == n)
        })
        .collect()
}

/// The string literals of `text`'s non-test code (comments left out) that are exactly a
/// column's name, with their lines.
fn column_literals(text: &str, names: &std::collections::BTreeSet<String>) -> Vec<(usize, String)> {
    let code = code_of(text, true);
    // The same characters with the literals' contents blanked: a quote there opens or closes
    // a string (a `'"'` character literal is blanked too).
    let bare = code_of(text, false);
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < bare.len() {
        if bare[i] == '\n' {
            line += 1;
        }
        if bare[i] != '"' {
            i += 1;
            continue;
        }
        let Some(end) = (i + 1..bare.len()).find(|&j| bare[j] == '"') else {
            break;
        };
        let literal: String = code[i + 1..end].iter().collect();
        if names.contains(&literal) {
            out.push((line, literal));
        }
        line += code[i + 1..end].iter().filter(|c| **c == '\n').count();
        i = end + 1;
    }
    out
}

/// Every column name written as a string literal in `src`'s non-test code outside record/
/// (bar [`COLUMN_LITERAL_FILES`] and the names [`column_names_allowed`]), as `path:line: name`.
fn column_literals_in(src: &Path) -> Vec<String> {
    let allowed = column_names_allowed();
    let names: std::collections::BTreeSet<String> = column_names()
        .into_iter()
        .filter(|n| !allowed.contains(n))
        .collect();
    let mut found = Vec::new();
    for f in files_outside_record(src) {
        let rel = f.strip_prefix(src).expect("under src");
        let rel_text = rel.to_string_lossy();
        if COLUMN_LITERAL_FILES
            .iter()
            .any(|(p, _)| rel_text == *p || (p.ends_with('/') && rel_text.starts_with(p)))
        {
            continue;
        }
        let text = std::fs::read_to_string(&f).expect("readable");
        for (line, name) in column_literals(&text, &names) {
            found.push(format!("{}:{line}: \"{name}\"", rel.display()));
        }
    }
    found
}

#[test]
fn outside_record_no_column_is_named_as_text() {
    let found = column_literals_in(&src_dir());
    assert!(
        found.is_empty(),
        "name a results.csv column through its type (record::rows::Col's constants, \
         plan::columns::Column), not its text: the names are plan::columns' list, read and \
         written in record/:\n{}",
        found.join("\n")
    );
    // Each exemption still has a reason to be: the words are columns, the files exist.
    let names = column_names();
    for (w, _) in COLUMN_NAMES_ALSO_WORDS {
        assert!(
            names.contains(*w),
            "`{w}` is no longer a column: drop it here"
        );
    }
    for (p, _) in COLUMN_LITERAL_FILES {
        assert!(src_dir().join(p).exists(), "src/{p} is gone: drop it here");
    }
}

/// The check reads exact literals of code: not a comment, a longer text, a test, a character
/// literal, nor a name it was told to allow; across a raw string and an escaped quote too.
#[test]
fn the_column_literal_check_sees_a_planted_name() {
    let names: std::collections::BTreeSet<String> =
        ["ttft_ms_p99", "output_tok_s"].map(String::from).into();
    let text = r##"const M: &[&str] = &["ttft_ms_p99", "x"];
// "output_tok_s" in a comment
fn f() -> String {
    let q = '"';
    let s = format!("{q}ttft_ms_p99 is {} \"output_tok_s\"", r#"a "b""#);
    let t = r#"output_tok_s"#;
    s + t
}
#[cfg(test)]
mod tests { const T: &str = "output_tok_s"; }
"##;
    assert_eq!(
        column_literals(text, &names),
        [
            (1, "ttft_ms_p99".to_string()),
            (6, "output_tok_s".to_string())
        ]
    );
}

/// Whether `expr` (code, strings blanked) names the `outcome` field or a binding of that name,
/// as a whole word.
fn mentions_outcome(expr: &str) -> bool {
    expr.match_indices("outcome").any(|(at, w)| {
        let before = expr[..at].chars().next_back();
        let after = expr[at + w.len()..].chars().next();
        let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !word(before) && !word(after)
    })
}

/// The operand next to position `at` of `bare` (code with its strings blanked, their quotes
/// kept), walking `back` or forward: a path, a call, a string literal, or `Some(...)`, up to
/// the first space, comma or operator outside brackets.
fn operand(bare: &[char], at: usize, back: bool) -> String {
    let step = |i: usize| if back { i.checked_sub(1) } else { Some(i + 1) };
    let mut i = if back { at.checked_sub(1) } else { Some(at) };
    // Skip the spaces by the operator (and a `&` or `*` before the right one).
    while let Some(k) = i.filter(|&k| k < bare.len()) {
        if bare[k] == ' ' || bare[k] == '\n' || (!back && matches!(bare[k], '&' | '*')) {
            i = step(k);
        } else {
            break;
        }
    }
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut in_string = false;
    while let Some(k) = i.filter(|&k| k < bare.len()) {
        let c = bare[k];
        let (open, close) = if back { (')', '(') } else { ('(', ')') };
        if c == '"' {
            in_string = !in_string;
        } else if !in_string {
            if c == open {
                depth += 1;
            } else if c == close {
                if depth == 0 {
                    break;
                }
                depth -= 1;
            } else if depth == 0 && c.is_whitespace() {
                // A method chain goes on across lines (`rec\n    .outcome`).
                let next = std::iter::successors(step(k), |&j| step(j))
                    .take_while(|&j| j < bare.len())
                    .map(|j| bare[j])
                    .find(|c| !c.is_whitespace());
                let chained = if back {
                    out.last() == Some(&'.')
                } else {
                    next == Some('.')
                };
                if !chained {
                    break;
                }
                i = step(k);
                continue;
            } else if depth == 0
                && !(c.is_alphanumeric() || matches!(c, '_' | '.' | ':' | '?' | '!'))
            {
                break;
            }
        }
        out.push(c);
        i = step(k);
    }
    if back {
        out.reverse();
    }
    out.into_iter().collect()
}

/// Statements of `text`'s non-test code that compare a sweep's outcome as text: one side of an
/// `==` or `!=` names `outcome` and the other is (or holds) a string literal
/// (`o.outcome == "deadline"`, `"done" != outcome`, `s.outcome.as_deref() == Some("error")`),
/// or a `matches!` on an outcome with a string pattern; with the lines they start on.
fn outcome_compared_as_text(text: &str) -> Vec<(usize, String)> {
    let bare = code_of(text, false);
    let mut out = Vec::new();
    let mut line = 1;
    for k in 0..bare.len() {
        if bare[k] == '\n' {
            line += 1;
            continue;
        }
        let hit = if matches!(bare[k], '=' | '!') && bare.get(k + 1) == Some(&'=') {
            // Not the second `=` of `==`, nor `<=`, `>=`.
            let prev = k.checked_sub(1).map(|p| bare[p]);
            if matches!(prev, Some('=' | '<' | '>' | '!')) {
                continue;
            }
            let (left, right) = (operand(&bare, k, true), operand(&bare, k + 2, false));
            (mentions_outcome(&left) && right.contains('"'))
                || (mentions_outcome(&right) && left.contains('"'))
        } else if bare[k..].starts_with(&['m', 'a', 't', 'c', 'h', 'e', 's', '!', '(']) {
            let args = operand(&bare, k + 9, false);
            let first = args.split(',').next().unwrap_or("");
            // `operand` stops at the first space: read the rest of the macro's arguments.
            let rest: String = bare[k + 9..]
                .iter()
                .scan(0i32, |depth, &c| {
                    *depth += match c {
                        '(' => 1,
                        ')' => -1,
                        _ => 0,
                    };
                    (*depth >= 0).then_some(c)
                })
                .collect();
            mentions_outcome(first) && rest.contains('"')
        } else {
            false
        };
        if hit {
            let from = (0..k)
                .rev()
                .find(|&j| matches!(bare[j], ';' | '{' | '}'))
                .map_or(0, |j| j + 1);
            let to = (k..bare.len())
                .find(|&j| matches!(bare[j], ';' | '{' | '}'))
                .unwrap_or(bare.len());
            let stmt: String = code_of(text, true)[from..to].iter().collect();
            out.push((line, stmt.split_whitespace().collect::<Vec<_>>().join(" ")));
        }
    }
    out
}

/// Every comparison of an outcome as text in `src`'s non-test code outside record/, as
/// `path:line: statement`.
fn outcome_comparisons_in(src: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for f in files_outside_record(src) {
        let rel = f.strip_prefix(src).expect("under src");
        let text = std::fs::read_to_string(&f).expect("readable");
        for (line, stmt) in outcome_compared_as_text(&text) {
            found.push(format!("{}:{line}: {stmt}", rel.display()));
        }
    }
    found
}

#[test]
fn outside_record_no_outcome_is_compared_as_text() {
    let found = outcome_comparisons_in(&src_dir());
    assert!(
        found.is_empty(),
        "compare a sweep's outcome as record::outcome::SweepEnd (an enum), not as text:\n{}",
        found.join("\n")
    );
}

/// The forms a text comparison of an outcome takes are each caught, across lines too; the
/// typed comparison, a binding that is not compared, another field, a comment, a string that
/// only mentions one, and test code are not.
#[test]
fn the_outcome_check_sees_a_planted_comparison() {
    let text = r#"fn a(o: &Outcome) -> bool {
    o.outcome == "deadline"
}
fn b(rec: &Outcome) -> bool {
    "done" != rec
        .outcome
}
fn c(s: &SweepState) -> bool {
    matches!(s.outcome.as_deref(), Some("interrupted" | "deadline"))
}
fn d(s: &SweepState) -> bool {
    s.outcome.as_deref() == Some("error")
}
fn e(root: &Path) -> Option<Vec<String>> {
    read(root).filter(|o| o.outcome == "deadline").map(|o| o.not_measured)
}
fn typed(o: &Outcome) -> bool {
    let outcome = "x";
    o.outcome == SweepEnd::Deadline && o.summary == "x" && outcome.len() <= 1
}
fn words() -> String {
    // o.outcome == "deadline"
    format!("outcome == \"x\"")
}
#[cfg(test)]
mod t { fn e(o: &Outcome) -> bool { o.outcome == "done" } }
"#;
    let got = outcome_compared_as_text(text);
    let lines: Vec<usize> = got.iter().map(|(l, _)| *l).collect();
    assert_eq!(lines, [2, 5, 9, 12, 15], "{got:?}");
    assert_eq!(got[1].1, "\"done\" != rec .outcome");
}

/// Each rule fails on a violation planted in a copy of src/: a column's name as text (in a
/// report file), an outcome compared as text (in run/), a use of a later stage (observe/
/// reaching report/), and a circle (plan's keyed and spec using each other, and inside
/// plan/spec/ endpoint and sessions); the copy without them passes every rule, as src/ does.
#[test]
fn a_planted_violation_of_each_rule_fails_its_check() {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).expect("mkdir");
        for e in std::fs::read_dir(from).expect("readable") {
            let p = e.expect("entry").path();
            let dest = to.join(p.file_name().expect("a name"));
            if p.is_dir() {
                copy(&p, &dest);
            } else {
                std::fs::copy(&p, &dest).expect("copy");
            }
        }
    }
    /// Put `line` before the file's first `#[cfg(test)]` (its code, not its tests); return
    /// the line number it lands on.
    fn plant(file: &Path, line: &str) -> usize {
        let text = std::fs::read_to_string(file).expect("readable");
        let lines: Vec<&str> = text.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.trim_start().starts_with("#[cfg(test)]"))
            .unwrap_or(lines.len());
        let mut out: Vec<&str> = lines[..at].to_vec();
        out.push(line);
        out.extend(&lines[at..]);
        std::fs::write(file, out.join("\n") + "\n").expect("write");
        at + 1
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let src = tmp.path().join("src");
    copy(&src_dir(), &src);
    assert_eq!(column_literals_in(&src), Vec::<String>::new());
    assert_eq!(outcome_comparisons_in(&src), Vec::<String>::new());
    assert_eq!(upward_uses(&src).0, Vec::<String>::new());
    assert_eq!(circles(&src), Vec::<String>::new());

    let n = plant(
        &src.join("report/compare.rs"),
        "const PLANTED: &[&str] = &[\"tpot_ms_p99\"];",
    );
    assert_eq!(
        column_literals_in(&src),
        [format!("report/compare.rs:{n}: \"tpot_ms_p99\"")]
    );
    let n = plant(
        &src.join("run/report.rs"),
        "fn planted(o: &Outcome) -> bool { o.outcome == \"deadline\" }",
    );
    assert_eq!(
        outcome_comparisons_in(&src),
        [format!("run/report.rs:{n}: o.outcome == \"deadline\"")]
    );
    let n = plant(
        &src.join("observe/diagnose.rs"),
        "use crate::report::table;",
    );
    assert_eq!(
        upward_uses(&src).0,
        [format!(
            "observe/diagnose.rs:{n}: `observe` uses `crate::report`, a later stage"
        )]
    );
    plant(&src.join("plan/keyed.rs"), "use crate::plan::spec;");
    let c = circles(&src);
    assert_eq!(c.len(), 1, "{c:?}");
    assert!(
        c[0].starts_with("src/plan: ") && c[0].contains("keyed -> spec"),
        "{c:?}"
    );
    // One folder down: the circle cut by giving `Endpoint` its own file, planted back.
    plant(
        &src.join("plan/spec/endpoint.rs"),
        "use super::sessions::SessionsSpec;",
    );
    let c = circles(&src);
    assert_eq!(c.len(), 2, "{c:?}");
    assert_eq!(c[1], "src/plan/spec: endpoint -> sessions -> endpoint");
}

/// `text` with its comments and literals blanked ([`blanked`]) and every item under
/// `#[cfg(test)]` blanked too, wherever it sits (a `mod tests { }`, a test-only `fn`, `use`
/// or `const`); all of it for a file that says `#![cfg(test)]`. What is left is the code a
/// build without tests compiles.
fn live_code(text: &str) -> Vec<char> {
    live(text, false)
}

/// [`live_code`], with its string literals kept when `strings` is true.
fn live(text: &str, strings: bool) -> Vec<char> {
    let mut c = blanked(text, strings);
    let blank = |c: &mut Vec<char>, from: usize, to: usize| {
        for x in &mut c[from..to] {
            if *x != '\n' {
                *x = ' ';
            }
        }
    };
    let inner: Vec<char> = "#![cfg(test)]".chars().collect();
    if c.windows(inner.len()).any(|w| w == inner.as_slice()) {
        let n = c.len();
        blank(&mut c, 0, n);
        return c;
    }
    let attr: Vec<char> = "#[cfg(test)]".chars().collect();
    let mut i = 0;
    while i + attr.len() <= c.len() {
        if c[i..i + attr.len()] != attr[..] {
            i += 1;
            continue;
        }
        // The item: up to its first `;` outside brackets, or the `}` that closes its first `{`.
        let (mut j, mut braces, mut brackets) = (i + attr.len(), 0usize, 0usize);
        while j < c.len() {
            match c[j] {
                '(' | '[' => brackets += 1,
                ')' | ']' => brackets = brackets.saturating_sub(1),
                ';' if braces == 0 && brackets == 0 => break,
                '{' => braces += 1,
                '}' => {
                    braces = braces.saturating_sub(1);
                    if braces == 0 {
                        break;
                    }
                }
                _ => {}
            }
            j += 1;
        }
        let end = (j + 1).min(c.len());
        blank(&mut c, i, end);
        i = end;
    }
    c
}

/// The identifiers inside the string literals of a file's live attributes: the functions an
/// attribute names as text (`#[serde(deserialize_with = "positive_f64")]`,
/// `skip_serializing_if = "Engine::is_sglang"`), which the derive calls.
fn attribute_string_identifiers(
    text: &str,
    counts: &mut std::collections::BTreeMap<String, usize>,
) {
    let code = live(text, true);
    let bare = live(text, false); // the same characters, strings blanked: where they are
    let mut i = 0;
    while i + 1 < code.len() {
        if !(bare[i] == '#' && bare[i + 1] == '[') {
            i += 1;
            continue;
        }
        let mut depth = 0usize;
        let mut j = i + 1;
        while j < bare.len() {
            match bare[j] {
                '[' => depth += 1,
                ']' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            j += 1;
        }
        let strings: String = (i..j.min(code.len()))
            .map(|k| if code[k] != bare[k] { code[k] } else { ' ' })
            .collect();
        for w in strings.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if !w.is_empty() {
                *counts.entry(w.to_string()).or_default() += 1;
            }
        }
        i = j;
    }
}

/// The `pub` items (any visibility that says `pub`) a file's live code ([`live_code`])
/// defines, as (line, kind, name): `fn`, `struct`, `enum`, `const`, `static`, `trait`,
/// `type`. Not `pub mod`, `pub use`, nor fields.
fn pub_items(code: &[char]) -> Vec<(usize, String, String)> {
    let t = tokens(code);
    let id = |k: usize| match t.get(k) {
        Some((Tok::Id(s), _)) => Some(s.as_str()),
        _ => None,
    };
    let mut out = Vec::new();
    for k in 0..t.len() {
        if id(k) != Some("pub") {
            continue;
        }
        let mut j = k + 1;
        if t.get(j).map(|x| &x.0) == Some(&Tok::P('(')) {
            while j < t.len() && t[j].0 != Tok::P(')') {
                j += 1;
            }
            j += 1;
        }
        // Qualifiers: `pub const fn`, `pub async fn`, `pub unsafe fn`, `pub extern "C" fn`.
        loop {
            match (id(j), id(j + 1)) {
                (Some("async" | "unsafe" | "extern"), _) => j += 1,
                (Some("const"), Some("fn" | "unsafe" | "async")) => j += 1,
                (None, _) if t.get(j).map(|x| &x.0) == Some(&Tok::P('"')) => j += 1,
                _ => break,
            }
        }
        let Some(kind @ ("fn" | "struct" | "enum" | "const" | "static" | "trait" | "type")) = id(j)
        else {
            continue;
        };
        if let Some(name) = id(j + 1) {
            out.push((t[j + 1].1, kind.to_string(), name.to_string()));
        }
    }
    out
}

/// How often each identifier occurs in a file's live code outside its `use` declarations (a
/// re-export or an import is not a caller).
fn identifier_counts(code: &[char], counts: &mut std::collections::BTreeMap<String, usize>) {
    let t = tokens(code);
    let mut k = 0;
    while k < t.len() {
        if t[k].0 == Tok::Id("use".into())
            && !matches!(
                t.get(k.wrapping_sub(1)).map(|x| &x.0),
                Some(Tok::Path | Tok::P('.'))
            )
        {
            while k < t.len() && t[k].0 != Tok::P(';') {
                k += 1;
            }
            continue;
        }
        if let Tok::Id(name) = &t[k].0 {
            *counts.entry(name.clone()).or_default() += 1;
        }
        k += 1;
    }
}

/// The `pub` items that may have no caller outside tests, as (file under src/, name, why).
/// Keep it short: an item here is kept on purpose, and says why.
const NO_CALLER_ALLOWED: &[(&str, &str, &str)] = &[
    (
        "observe/quantiles.rs",
        "MAX_VALUE",
        "the histogram's top, a stated bound its docs link to (the bins are counted from SUB_BITS)",
    ),
    (
        "observe/quantiles.rs",
        "REL_ERROR",
        "the percentiles' stated accuracy, linked from observe::client's docs and held by a test",
    ),
];

/// Every `pub` item in `root`'s src/ with no caller outside tests, as `path:line: pub kind
/// name`: its name occurs nowhere in the live code ([`live_code`]: not test blocks, not
/// test-only files) of src/, benches/ and examples/ (the benches and examples are the
/// library's callers too) but in its own definition and in `use` lines. The name is matched
/// as text, so a name another item shares counts as used: the check is a floor, not proof.
/// Items in [`NO_CALLER_ALLOWED`] are left out.
fn pub_items_without_callers(root: &Path) -> Vec<String> {
    let src = root.join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let files: Vec<PathBuf> = files
        .into_iter()
        .filter(|f| !is_test_only(&src, f))
        .collect();
    let mut callers = Vec::new();
    for dir in ["benches", "examples"] {
        if root.join(dir).is_dir() {
            rust_files(&root.join(dir), &mut callers);
        }
    }
    let mut counts = std::collections::BTreeMap::new();
    let mut defined = Vec::new();
    for f in files.iter().chain(&callers) {
        let text = std::fs::read_to_string(f).expect("readable");
        let code = live_code(&text);
        identifier_counts(&code, &mut counts);
        attribute_string_identifiers(&text, &mut counts);
        if f.starts_with(&src) {
            let rel = f
                .strip_prefix(&src)
                .expect("under src")
                .to_string_lossy()
                .to_string();
            defined.extend(
                pub_items(&code)
                    .into_iter()
                    .map(|(line, kind, name)| (rel.clone(), line, kind, name)),
            );
        }
    }
    let mut definitions = std::collections::BTreeMap::<&str, usize>::new();
    for (_, _, _, name) in &defined {
        *definitions.entry(name.as_str()).or_default() += 1;
    }
    defined
        .iter()
        .filter(|(rel, _, _, name)| {
            counts.get(name).copied().unwrap_or(0) <= definitions[name.as_str()]
                && !NO_CALLER_ALLOWED
                    .iter()
                    .any(|(p, n, _)| p == rel && n == name)
        })
        .map(|(rel, line, kind, name)| format!("{rel}:{line}: pub {kind} {name}"))
        .collect()
}

#[test]
fn every_pub_item_has_a_caller_outside_tests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dead = pub_items_without_callers(root);
    assert!(
        dead.is_empty(),
        "`pub` items with no caller outside tests: remove them, make a helper the tests need \
         #[cfg(test)] (or move it into the tests), or list it in NO_CALLER_ALLOWED with its \
         reason:\n{}",
        dead.join("\n")
    );
    // Each exception still has a reason to be: it exists, and nothing but tests calls it.
    for (p, name, _) in NO_CALLER_ALLOWED {
        let text = std::fs::read_to_string(root.join("src").join(p))
            .unwrap_or_else(|_| panic!("src/{p} is gone: drop it from NO_CALLER_ALLOWED"));
        assert!(
            pub_items(&live_code(&text))
                .iter()
                .any(|(_, _, n)| n == name),
            "src/{p} has no pub `{name}` any more: drop it from NO_CALLER_ALLOWED"
        );
    }
}

/// On a small tree: a `pub fn` called only from its file's tests, a `pub struct` named only in
/// a test-only file, a `pub const` only re-exported, and a `pub` item inside a test block
/// (not an item of the build) are told apart from items called from another file, a bench,
/// or their own file's code; a comment or a string naming an item is no call.
#[test]
fn the_dead_code_check_sees_a_planted_uncalled_item() {
    let root = tree(&[
        (
            "src/lib.rs",
            "pub mod a;\n#[cfg(test)]\nmod testing;\npub use a::ONLY_REEXPORTED;\n",
        ),
        (
            "src/a.rs",
            "/// tpot_at is said in a comment\n\
             pub fn tpot_at() -> f64 { 1.0 }\n\
             pub(crate) const fn called() -> u8 { 2 }\n\
             pub const ONLY_REEXPORTED: u8 = 3;\n\
             pub struct Planted;\n\
             pub fn bench_only() {}\n\
             pub fn positive_f64() {}\n\
             #[derive(Deserialize)]\n\
             struct Spec { #[serde(deserialize_with = \"positive_f64\")] x: f64 }\n\
             pub enum Used { X }\n\
             fn private() -> u8 { called() }\n\
             pub fn entry() -> Used { let _ = \"Planted\"; Used::X }\n\
             #[cfg(test)]\n\
             mod tests {\n    pub fn helper() { super::tpot_at(); }\n}\n",
        ),
        (
            "src/testing.rs",
            "pub fn t() -> crate::a::Planted { crate::a::Planted }\n",
        ),
        ("src/main.rs", "fn main() { sgtune::a::entry(); }\n"),
        ("benches/b.rs", "fn main() { sgtune::a::bench_only(); }\n"),
    ]);
    assert_eq!(
        pub_items_without_callers(root.path()),
        [
            "a.rs:2: pub fn tpot_at",
            "a.rs:4: pub const ONLY_REEXPORTED",
            "a.rs:5: pub struct Planted",
        ]
    );
}
