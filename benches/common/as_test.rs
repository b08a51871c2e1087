//! A bench that `cargo test` runs too (`test = true` in Cargo.toml, `harness = false`) gets
//! the test binaries' arguments. The test command lists every test first (`--list`) and runs
//! single tests by name (`--exact NAME`): a bench must neither run for those nor print
//! anything a listing would misread.

/// Whether this run should run the bench `name`: not for a listing or for the ignored tests
/// only, and not when a test-name filter is given that does not match `name`.
pub fn selected(name: &str) -> bool {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `--ignored` asks for the ignored tests only, and a bench is not one: scripts/test.sh's
    // real-server run passes it, and the bench already runs in the run beside it.
    if args.iter().any(|a| a == "--list" || a == "--ignored") {
        return false;
    }
    // libtest's options that take a value as the next word.
    const VALUED: [&str; 7] = [
        "--skip",
        "--test-threads",
        "--logfile",
        "--format",
        "--color",
        "-Z",
        "--shuffle-seed",
    ];
    let mut filters = Vec::new();
    let mut value_next = false;
    for a in &args {
        if value_next {
            value_next = false;
        } else if a.starts_with('-') {
            value_next = VALUED.contains(&a.as_str());
        } else {
            filters.push(a.as_str());
        }
    }
    let exact = args.iter().any(|a| a == "--exact");
    filters.is_empty()
        || filters
            .iter()
            .any(|f| if exact { *f == name } else { name.contains(f) })
}
