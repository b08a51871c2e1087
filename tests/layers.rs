//! The house rule of docs/architecture.md, checked: `src/` has one folder per stage, in
//! data-flow order, and code only uses the folders before its own (arrows point down). A
//! `use crate::report` inside `src/observe` fails here, naming the file and the line.
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

/// The layers a file's non-test code names through `crate::<layer>`, with line numbers.
fn used_layers(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        // Unit tests sit at the end of a file; what they use is not the module's dependency.
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let after = &rest[at + "crate::".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.push((i + 1, name));
            }
            rest = after;
        }
    }
    out
}

#[test]
fn every_folder_uses_only_the_layers_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut wrong = Vec::new();
    let mut seen_layers = std::collections::BTreeSet::new();
    for f in &files {
        let rel = f.strip_prefix(&src).expect("under src");
        let Some(top) = rel.components().next().and_then(|c| c.as_os_str().to_str()) else {
            continue;
        };
        let Some(own) = LAYERS.iter().position(|l| *l == top) else {
            // lib.rs and main.rs sit above every layer.
            assert!(
                matches!(top, "lib.rs" | "main.rs"),
                "{} is outside every stage folder: put it in one of {LAYERS:?}",
                rel.display()
            );
            continue;
        };
        seen_layers.insert(top.to_string());
        let text = std::fs::read_to_string(f).expect("readable");
        for (line, used) in used_layers(&text) {
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
    let text = "use crate::plan::spec;\nfn f() { crate::report::table::render(); } // crate::cmd\n#[cfg(test)]\nuse crate::cmd;\n";
    let used = used_layers(text);
    assert_eq!(
        used,
        vec![(1, "plan".to_string()), (2, "report".to_string())],
        "comments and test code are not dependencies"
    );
}

/// The modules of one folder that a file's non-test code names: `crate::<folder>::<m>` and
/// `super::<m>` (for a file directly in the folder), with line numbers.
fn used_siblings(text: &str, folder: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        let code = line.split("//").next().unwrap_or("");
        for prefix in [format!("crate::{folder}::"), "super::".to_string()] {
            let mut rest = code;
            while let Some(at) = rest.find(&prefix) {
                let after = &rest[at + prefix.len()..];
                let name: String = after
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                // `super::{a, b}`: each name in the braces.
                if name.is_empty() && after.starts_with('{') {
                    let inner = after[1..].split('}').next().unwrap_or("");
                    for n in inner.split(',') {
                        let n: String = n
                            .trim()
                            .chars()
                            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                            .collect();
                        if !n.is_empty() {
                            out.push((i + 1, n));
                        }
                    }
                } else if !name.is_empty() {
                    out.push((i + 1, name));
                }
                rest = after;
            }
        }
    }
    out
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

#[test]
fn no_folder_has_an_import_circle_among_its_modules() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut circles = Vec::new();
    for folder in LAYERS {
        let dir = src.join(folder);
        let mut files = Vec::new();
        rust_files(&dir, &mut files);
        // A module is a top-level file (`flags.rs`) or sub-folder (`sglang_log/`) of the folder.
        let module_of = |f: &Path| -> Option<String> {
            let rel = f.strip_prefix(&dir).ok()?;
            let first = rel.components().next()?.as_os_str().to_str()?;
            Some(first.trim_end_matches(".rs").to_string())
        };
        let mut edges: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for f in &files {
            let Some(me) = module_of(f) else { continue };
            if me == "mod" {
                continue; // mod.rs declares the modules; it is the folder, not one of them
            }
            let directly_in_folder = f.parent() == Some(dir.as_path());
            let text = std::fs::read_to_string(f).expect("readable");
            for (_, used) in used_siblings(&text, folder) {
                // `super::` from a sub-folder's file names its own module's siblings.
                if !directly_in_folder && !text.contains(&format!("crate::{folder}::{used}")) {
                    continue;
                }
                let exists = dir.join(format!("{used}.rs")).exists() || dir.join(&used).is_dir();
                if exists && used != me {
                    let e = edges.entry(me.clone()).or_default();
                    if !e.contains(&used) {
                        e.push(used);
                    }
                }
            }
        }
        if let Some(c) = find_cycle(&edges) {
            circles.push(format!("src/{folder}: {}", c.join(" -> ")));
        }
    }
    assert!(
        circles.is_empty(),
        "modules inside a folder must not use each other in a circle:\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_circle_checker_sees_a_circle() {
    let mut edges: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    edges.insert("flags".into(), vec!["search".into()]);
    edges.insert("search".into(), vec!["spec".into()]);
    edges.insert("spec".into(), vec!["flags".into()]);
    let c = find_cycle(&edges).expect("a circle");
    assert_eq!(c.first(), c.last());
    assert_eq!(c.len(), 4);
    edges.insert("spec".into(), vec![]);
    assert_eq!(find_cycle(&edges), None);
    let used = used_siblings(
        "use super::{keyed, flags::X};\nuse crate::plan::spec;\n",
        "plan",
    );
    let names: Vec<&str> = used.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(names, vec!["keyed", "flags", "spec"]);
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

/// Lines of `text` that compare a typed cell read as a string (`.get("status") != "..."`).
fn string_compared_cells(text: &str) -> Vec<(usize, String)> {
    text.lines()
        .enumerate()
        .take_while(|(_, l)| !l.contains("#[cfg(test)]"))
        .filter(|(_, l)| {
            TYPED_CELLS
                .iter()
                .any(|c| l.contains(&format!(".get(\"{c}\")")))
                && (l.contains("==") || l.contains("!="))
        })
        .map(|(i, l)| (i + 1, l.trim().to_string()))
        .collect()
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
