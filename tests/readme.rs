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

/// The README stays a front page: what sgtune does, the two commands, a real result and
/// usage by task. Details belong in docs/ (it had grown to 274 lines).
#[test]
fn readme_stays_within_250_lines() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let n = readme.lines().count();
    assert!(
        n <= 250,
        "README.md has {n} lines (at most 250): move the details to docs/"
    );
}

/// docs/benchmarks.md states the search's figures as the code that makes them has them: the
/// fake SGLang's SLO in tests/search.rs, and the knee ranges benches/tuner.rs draws from.
#[test]
fn benchmarks_doc_states_the_searches_setup_as_the_code_has_it() {
    let root = env!("CARGO_MANIFEST_DIR");
    let read = |p: &str| std::fs::read_to_string(format!("{root}/{p}")).expect(p);
    let doc = read("docs/benchmarks.md")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let search = read("tests/search.rs");
    let slo = search
        .split("slo: {{ttft_ms_p99: ")
        .nth(1)
        .and_then(|s| s.split('}').next())
        .expect("tests/search.rs's TTFT SLO");
    let want = format!("TTFT p99 ≤ {slo} ms): the search finds exactly 6 and 10");
    assert!(
        doc.contains(&want),
        "docs/benchmarks.md should say {want:?}"
    );
    // `trials(&ml, SEED, (A, B), cv, &cliff)` then `... &line)`: knees from A to B.
    let bench = read("benches/tuner.rs");
    let knees: Vec<(u64, u64)> = bench
        .split("let r = trials(&ml, ")
        .skip(1)
        .filter_map(|s| {
            let range = s.split_once(", (")?.1.split_once(')')?.0;
            let (a, b) = range.split_once(", ")?;
            Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
        })
        .collect();
    let [(c0, c1), (l0, l1)] = knees[..] else {
        panic!("two knee ranges (cliff, linear) in benches/tuner.rs: {knees:?}")
    };
    let want = format!(
        "knee drawn uniformly in {c0}-{c1} for the cliff rows and in {l0}-{l1} for the linear ones"
    );
    assert!(
        doc.contains(&want),
        "docs/benchmarks.md should say {want:?}"
    );
}
