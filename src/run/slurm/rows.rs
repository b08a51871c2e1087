//! The rows of a launch whose task left none (cancelled, failed, lost with its node...): one per
//! measurement, with the task's Slurm state and the end of its output, so the merge has a row for
//! every launch.

use super::state::SlurmState;
use crate::record::layout::slurm_dir;
use crate::record::provenance::now_rfc3339;
use crate::record::{RunRecord, RunStatus};
use crate::run::Launch;
use crate::server::failure::FailureKind;
use std::path::Path;

/// The rows of a launch whose task left none: one per measurement, with its Slurm state and
/// the end of its output.
pub fn missing_rows(
    launch: &Launch,
    param_keys: &[String],
    task: &str,
    state: &SlurmState,
    out_tail: &str,
) -> Vec<RunRecord> {
    let status = state.row_status();
    let kind = if status == RunStatus::Interrupted {
        FailureKind::Interrupted
    } else {
        FailureKind::SlurmTask
    };
    let mut message = format!("Slurm task {task} ended {state} without writing its rows");
    if status == RunStatus::Interrupted {
        message.push_str(" (`sgtune resume` runs it again)");
    }
    if !out_tail.is_empty() {
        message.push_str(&format!("; its output ends: {out_tail}"));
    }
    let now = now_rfc3339();
    launch
        .measurements
        .iter()
        .map(|m| RunRecord {
            status,
            failure_kind: Some(kind),
            failure_message: Some(message.clone()),
            phase: launch.phase,
            notes: vec![format!("slurm: {state}")],
            started_at: now.clone(),
            finished_at: now.clone(),
            ..RunRecord::of_run(&launch.run, param_keys, m.point, m.repeat)
        })
        .collect()
}

/// The last non-empty lines of a task's output file, on one line.
pub fn out_tail(dir: &Path, job: &str, idx: usize) -> String {
    let p = slurm_dir(dir).join(format!("{job}_{idx}.out"));
    let text = std::fs::read_to_string(p).unwrap_or_default();
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let tail = &lines[lines.len().saturating_sub(2)..];
    let joined = tail.join(" | ");
    if joined.chars().count() > 300 {
        joined.chars().take(300).collect::<String>() + "…"
    } else {
        joined
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::flags::ParamValue;

    #[test]
    fn rows_for_a_task_that_left_none() {
        let spec = crate::plan::spec::parse(
            "name: t\nserver:\n  command: [python3, f.py]\n  model_path: /m\nsweep:\n  max_total_tokens: [300]\nworkload:\n  vocab_size: 100\n  concurrency: [2, 8]\n  requests: 4\n  input_tokens: 4\n  output_tokens: 4\nrepeats: 2\n",
            "t.yaml",
        )
        .expect("spec");
        let plan = crate::plan::expand::expand(&spec);
        let launches =
            crate::tune::work::plan_launches(&spec, &plan, &|_, _| false, &|_| Vec::new());
        let l = &launches[1];
        assert_eq!(l.dir_name, "mtt300.r2");
        let keys = vec!["max_total_tokens".to_string(), "absent".to_string()];
        let rows = missing_rows(l, &keys, "9_1", &SlurmState::Cancelled, "a | b");
        assert_eq!(rows.len(), 2, "one per measurement");
        for (r, c) in rows.iter().zip([2, 8]) {
            assert_eq!(r.run_name, "mtt300");
            assert_eq!(r.run_id, l.run.id);
            assert_eq!((r.concurrency, r.repeat), (c, 2));
            assert_eq!(r.status, RunStatus::Interrupted);
            assert_eq!(r.failure_kind, Some(FailureKind::Interrupted));
            assert_eq!(
                r.failure_message.as_deref(),
                Some(
                    "Slurm task 9_1 ended CANCELLED without writing its rows (`sgtune resume` runs it again); its output ends: a | b"
                )
            );
            assert_eq!(r.notes, ["slurm: CANCELLED"]);
            assert_eq!(
                r.params,
                vec![
                    ("max_total_tokens".to_string(), Some(ParamValue::Int(300))),
                    ("absent".to_string(), None)
                ]
            );
            assert_eq!(r.phase, l.phase);
        }
        let failed = missing_rows(l, &keys, "9_1", &SlurmState::OutOfMemory, "");
        assert_eq!(failed[0].status, RunStatus::Failed);
        assert_eq!(failed[0].failure_kind, Some(FailureKind::SlurmTask));
        assert_eq!(
            failed[0].failure_message.as_deref(),
            Some("Slurm task 9_1 ended OUT_OF_MEMORY without writing its rows")
        );
    }

    #[test]
    fn the_end_of_a_tasks_output_on_one_line() {
        let tmp = tempfile::tempdir().expect("tempdir");
        assert_eq!(out_tail(tmp.path(), "5", 0), "", "no output file");
        std::fs::create_dir_all(slurm_dir(tmp.path())).expect("mkdir");
        std::fs::write(
            slurm_dir(tmp.path()).join("5_0.out"),
            "one\n  two  \n\nthree\n\n",
        )
        .expect("write");
        assert_eq!(out_tail(tmp.path(), "5", 0), "two | three");
        std::fs::write(slurm_dir(tmp.path()).join("5_1.out"), "only\n").expect("write");
        assert_eq!(out_tail(tmp.path(), "5", 1), "only");
        let long = "x".repeat(400);
        std::fs::write(slurm_dir(tmp.path()).join("5_2.out"), &long).expect("write");
        let t = out_tail(tmp.path(), "5", 2);
        assert_eq!(t.chars().count(), 301);
        assert!(t.ends_with("x…"));
        std::fs::write(slurm_dir(tmp.path()).join("5_3.out"), "y".repeat(300)).expect("write");
        assert_eq!(out_tail(tmp.path(), "5", 3), "y".repeat(300), "300 fit");
    }
}
