//! Every sweep in experiments/ is one `sgtune validate` accepts without a warning, as a user
//! would run it: the GPU ones as written (their model paths are placeholders to edit), the CPU
//! ones with the variables scripts/setup-cpu-sglang.sh sets pointing at a stand-in model folder
//! (a config.json with a vocabulary and a context). A file that drifts from the spec, or a flag
//! SGLang does not have or would refuse, fails here and not on someone's GPU node.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test may panic: that is its failure

mod common;
use common::{repo, run, sgtune, text};

#[test]
fn every_experiment_validates() {
    let model = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        model.path().join("config.json"),
        r#"{"vocab_size": 32000, "max_position_embeddings": 4096}"#,
    )
    .expect("config.json");
    let mut files: Vec<_> = std::fs::read_dir(repo().join("experiments"))
        .expect("experiments/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(
        files
            .iter()
            .any(|f| f.ends_with("gpu-sessions-hicache.yaml")),
        "{files:?}"
    );
    let mut failed = Vec::new();
    for f in &files {
        let out = run(sgtune()
            .arg("validate")
            .arg(f)
            .env("SGTUNE_MODEL", model.path())
            .env("SGTUNE_KERNEL_STANDIN", model.path())
            .env_remove("SGTUNE_PYTHON"));
        // A warning is a setting SGLang would not honour as written (or refuse at start, as
        // HiCache with the radix cache off): an example must have none.
        let warned = text(&out.stderr)
            .lines()
            .chain(text(&out.stdout).lines())
            .any(|l| l.starts_with("warning:"));
        if !out.status.success() || warned {
            failed.push(format!(
                "{}: {:?}\n{}{}",
                f.display(),
                out.status.code(),
                text(&out.stdout),
                text(&out.stderr)
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
