//! `runs/<launch>/quality.jsonl`: the quality pass's outputs, one [`QualitySample`] a line (the
//! type is the load stage's, which makes them), written once per launch by `run::launch` and
//! read back by the quality guard (`run::quality` between rounds, `run::conclude` at the end) and by a launch's second round (pruning)
//! to skip a pass already made.

use super::store::{self, StoreError};
use crate::load::quality::QualitySample;
use std::path::Path;

/// The file each launch writes.
pub const FILE: &str = "quality.jsonl";

/// Write a launch's samples, one JSON line each, atomically.
pub fn write(run_dir: &Path, samples: &[QualitySample]) -> Result<(), StoreError> {
    let path = run_dir.join(FILE);
    let mut text = String::new();
    for s in samples {
        let line = serde_json::to_string(s).map_err(|e| StoreError {
            path: path.display().to_string(),
            source: std::io::Error::other(e),
        })?;
        text.push_str(&line);
        text.push('\n');
    }
    store::write_atomic(&path, text.as_bytes())
}

/// One launch folder's samples (the launch named by the folder, as [`read_all`] does); a
/// line that cannot be read is skipped and named in the returned notes.
pub fn read(run_dir: &Path) -> (Vec<QualitySample>, Vec<String>) {
    let mut out = Vec::new();
    let mut notes = Vec::new();
    read_into(run_dir, &mut out, &mut notes);
    (out, notes)
}

/// Every quality.jsonl line under `runs/*/` of a results folder. A line that cannot be read
/// is skipped and named in the returned notes.
pub fn read_all(runs_dir: &Path) -> (Vec<QualitySample>, Vec<String>) {
    let mut out = Vec::new();
    let mut notes = Vec::new();
    let Ok(entries) = std::fs::read_dir(runs_dir) else {
        return (out, notes);
    };
    let mut dirs: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    dirs.sort();
    for d in dirs {
        read_into(&d, &mut out, &mut notes);
    }
    (out, notes)
}

fn read_into(d: &Path, out: &mut Vec<QualitySample>, notes: &mut Vec<String>) {
    let path = d.join(FILE);
    let Ok(text) = std::fs::read_to_string(&path) else {
        return;
    };
    // A launch is its folder: a resume renames an earlier attempt's folder
    // (`<launch>.attempt-1`) and the lines inside still name the launch they were written
    // for, which would merge two servers' passes into one (and count each prompt twice).
    let folder = d.file_name().map(|n| n.to_string_lossy().to_string());
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<QualitySample>(line) {
            Ok(mut s) => {
                if let Some(f) = &folder {
                    s.launch = f.clone();
                }
                out.push(s)
            }
            Err(e) => notes.push(format!("{}:{}: {e}", path.display(), i + 1)),
        }
    }
}

/// Whether `run_dir`'s quality.jsonl already holds this launch's whole quality pass: `passes` × `count` lines of
/// `run_name`, each readable. Pruning runs a launch in two rounds (the lowest load point, then
/// the rest, in the same folder): its outputs are taken once, in the first, so the verdicts
/// pruning used are the ones the conclusion reads.
pub fn already_answered(run_dir: &Path, run_name: &str, passes: u32, count: usize) -> bool {
    let Ok(text) = std::fs::read_to_string(run_dir.join(FILE)) else {
        return false;
    };
    let mut n = 0usize;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match serde_json::from_str::<QualitySample>(line) {
            Ok(s) if s.run_name == run_name && (1..=passes).contains(&s.pass) => n += 1,
            _ => return false,
        }
    }
    n == passes as usize * count
}

/// A sweep's quality passes: its own (`root/runs/*/`) and, when given, a reference sweep's
/// (a re-check's: `reference/runs/*/`). A line that cannot be read is said and skipped.
pub fn read_sweep(
    root: &Path,
    reference: Option<&Path>,
) -> (Vec<QualitySample>, Vec<QualitySample>) {
    let (own, mut notes) = read_all(&store::runs_dir(root));
    let mut theirs = Vec::new();
    if let Some(r) = reference {
        let (t, n) = read_all(&store::runs_dir(r));
        theirs = t;
        notes.extend(n);
    }
    for n in notes {
        crate::util::say(&format!("warning: a quality.jsonl line was skipped: {n}"));
    }
    (own, theirs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_read_back_as_written() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let d = dir.path().join("a.r2");
        std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("{e}"));
        let samples: Vec<QualitySample> = (0..2)
            .map(|i| QualitySample {
                run_name: "a".into(),
                launch: "a.r2".into(),
                pass: 1,
                prompt_id: i,
                prompt: serde_json::json!([1, 2, 3]),
                answer: Some("4".into()),
                tokens: vec![" a".into()],
                logprobs: vec![Some(-0.5), None],
                top: vec![vec![(" a".into(), -0.5), (" b".into(), -1.25)]],
                text: " a".into(),
                pass_s: 1.5,
                error: (i == 1).then(|| "HTTP 500".into()),
            })
            .collect();
        write(&d, &samples).unwrap_or_else(|e| panic!("{e}"));
        let (back, notes) = read(&d);
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(back, samples);
        assert!(already_answered(&d, "a", 1, 2));
    }

    /// A line from an older sgtune (without the later fields) loads with their defaults; a
    /// broken line is skipped and named (file and line).
    #[test]
    fn an_older_line_loads_and_a_bad_one_is_named() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let old = r#"{"run_name": "a", "launch": "a", "pass": 1, "prompt_id": 0}"#;
        std::fs::write(dir.path().join(FILE), format!("{old}\n{{broken\n"))
            .unwrap_or_else(|e| panic!("{e}"));
        let (back, notes) = read(dir.path());
        assert_eq!(back.len(), 1);
        assert_eq!((back[0].pass_s, back[0].tokens.len()), (0.0, 0));
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("quality.jsonl:2"), "{notes:?}");
    }

    #[test]
    fn a_launch_is_read_as_its_folder_so_a_resumed_attempt_stays_apart() {
        let dir = tempfile::tempdir().expect("tempdir");
        let line = |id: u64| {
            let s = QualitySample {
                run_name: "a".into(),
                launch: "a".into(),
                pass: 1,
                prompt_id: id,
                ..Default::default()
            };
            serde_json::to_string(&s).expect("json") + "\n"
        };
        for folder in ["a", "a.attempt-1"] {
            let d = dir.path().join(folder);
            std::fs::create_dir_all(&d).expect("mkdir");
            std::fs::write(d.join(FILE), line(0) + &line(1)).expect("write");
        }
        let (samples, notes) = read_all(dir.path());
        assert!(notes.is_empty(), "{notes:?}");
        let launches: Vec<&str> = samples.iter().map(|s| s.launch.as_str()).collect();
        assert_eq!(launches, ["a", "a", "a.attempt-1", "a.attempt-1"]);
    }

    #[test]
    fn a_launchs_complete_pass_is_recognised_and_nothing_else() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(FILE);
        let run_dir = dir.path();
        assert!(!already_answered(run_dir, "a", 1, 2), "no file");
        let line = |run: &str, pass: u32, id: u64| {
            let s = QualitySample {
                run_name: run.into(),
                launch: run.into(),
                pass,
                prompt_id: id,
                ..Default::default()
            };
            serde_json::to_string(&s).expect("json") + "\n"
        };
        let write = |lines: &[String]| std::fs::write(&path, lines.concat()).expect("write");
        write(&[line("a", 1, 0), line("a", 1, 1)]);
        assert!(already_answered(run_dir, "a", 1, 2));
        assert!(
            !already_answered(run_dir, "b", 1, 2),
            "another configuration's"
        );
        assert!(!already_answered(run_dir, "a", 2, 2), "one pass of two");
        assert!(!already_answered(run_dir, "a", 1, 3), "fewer prompts");
        write(&[
            line("a", 1, 0),
            line("a", 1, 1),
            line("a", 2, 0),
            line("a", 2, 1),
        ]);
        assert!(already_answered(run_dir, "a", 2, 2));
        assert!(
            !already_answered(run_dir, "a", 1, 2),
            "more passes than asked"
        );
        write(&[line("a", 1, 0), "{not json\n".into()]);
        assert!(!already_answered(run_dir, "a", 1, 1), "an unreadable line");
    }
}
