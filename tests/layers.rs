//! The house rule of docs/architecture.md, checked: `src/` has one folder per stage, in
//! data-flow order, and code only uses the folders before its own (arrows point down). A
//! `use crate::report` inside `src/observe` fails here, naming the file and the line.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test may panic: that is its failure

use std::path::{Path, PathBuf};

/// The layers, lowest first. Keep in step with docs/architecture.md and src/lib.rs.
const LAYERS: &[&str] = &[
    "util", "plan", "server", "load", "observe", "record", "report", "run", "cmd",
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
