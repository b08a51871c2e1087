//! Record the git commit sgtune is built from (for the provenance manifest), when built from a
//! checkout. Anything else (a tarball, no git) leaves it unset.
use std::process::Command;

/// `git rev-parse --git-path PATH`: where PATH of the git dir really is (in a worktree,
/// `.git` is a file and HEAD lives under the main checkout's `.git/worktrees/`).
fn git_path(p: &str) -> Option<String> {
    let o = Command::new("git")
        .args(["rev-parse", "--git-path", p])
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let s = String::from_utf8_lossy(&o.stdout).trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn main() {
    // Rerun when HEAD moves: HEAD itself, the branch it names, and packed-refs. A path that
    // does not exist would make cargo rerun this (and rebuild sgtune) on every build.
    let branch = Command::new("git")
        .args(["symbolic-ref", "-q", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let watched = ["HEAD", "packed-refs"]
        .into_iter()
        .map(String::from)
        .chain(branch)
        .filter_map(|p| git_path(&p))
        .filter(|p| std::path::Path::new(p).exists());
    let mut any = false;
    for p in watched {
        println!("cargo:rerun-if-changed={p}");
        any = true;
    }
    if !any {
        // No git: nothing will change the answer (and without a line, any file would rerun it).
        println!("cargo:rerun-if-changed=build.rs");
    }
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
