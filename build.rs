//! Record the git commit sgtune is built from (for the provenance manifest), when built from a
//! checkout. Anything else (a tarball, no git) leaves it unset.
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/refs");
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty());
    if let Some(c) = commit {
        let dirty = Command::new("git")
            .args(["status", "--porcelain", "--untracked-files=no"])
            .output()
            .ok()
            .is_some_and(|o| !o.stdout.is_empty());
        println!(
            "cargo:rustc-env=SGTUNE_GIT_COMMIT={c}{}",
            if dirty { "-dirty" } else { "" }
        );
    }
}
