//! The docs stay true: the column reference in docs/columns.md is the one in the code, and CI
//! runs the test command the README names.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test may panic: that is its failure

#[test]
fn docs_list_every_results_column() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/columns.md"))
        .expect("docs/columns.md");
    let table = sgtune::record::columns_markdown();
    assert!(
        doc.contains(&table),
        "docs/columns.md's column table is out of date: paste the output of `sgtune columns`"
    );
}

#[test]
fn ci_runs_the_readme_test_command() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).expect("README.md");
    let ci = std::fs::read_to_string(format!("{root}/.ci/run")).expect(".ci/run");
    assert!(readme.contains("scripts/test.sh     # set everything up and run every test"));
    assert!(
        ci.lines().any(|l| l.trim() == "scripts/test.sh"),
        ".ci/run must call scripts/test.sh"
    );
}
