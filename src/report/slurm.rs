//! `sgtune status` of a Slurm submission: one line per run (its state, its task, a detail),
//! then the count of each state and where the merge job stands. Pure rendering: what each
//! task's state is, `run::slurm::merge::status_view` works out.

/// One run of the submission as `status` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskLine {
    pub run: String,
    /// ok / failed / cancelled / pending / running / ended / unknown.
    pub state: String,
    /// `<array job id>_<index>`.
    pub task: String,
    /// The failure kind of a failed row, else the Slurm state of a task without rows.
    pub detail: String,
}

/// The latest submission, seen from its folder and Slurm.
#[derive(Debug, Clone, PartialEq)]
pub struct SlurmStatus {
    pub tasks: Vec<TaskLine>,
    pub merge_job: Option<String>,
    /// results.md is there and no task is still queued or running (a tune's wave: its driver
    /// merged it).
    pub merged: bool,
    /// A guided tune's wave: its number (its tasks' runs name their steps).
    pub wave: Option<usize>,
}

/// The table, one line each, as printed.
pub fn lines(v: &SlurmStatus) -> Vec<String> {
    let mut out = vec![format!(
        "{:<28} {:<10} {:<12} detail",
        "run", "state", "task"
    )];
    let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
    for t in &v.tasks {
        *counts.entry(t.state.as_str()).or_default() += 1;
        out.push(format!(
            "{:<28} {:<10} {:<12} {}",
            t.run, t.state, t.task, t.detail
        ));
    }
    let merge = match (&v.merge_job, v.wave) {
        (_, Some(w)) => format!(
            "tune wave {w}, merged by the tune's driver{}",
            if v.merged { " (results merged)" } else { "" }
        ),
        (Some(m), None) => format!(
            "merge job {m}{}",
            if v.merged { " (results merged)" } else { "" }
        ),
        (None, None) => "no merge job".to_string(),
    };
    let summary: Vec<String> = counts.iter().map(|(k, n)| format!("{n} {k}")).collect();
    out.push(format!("{}; {merge}", summary.join(", ")));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(run: &str, state: &str, task: &str, detail: &str) -> TaskLine {
        TaskLine {
            run: run.into(),
            state: state.into(),
            task: task.into(),
            detail: detail.into(),
        }
    }

    #[test]
    fn one_line_per_run_then_the_counts_and_the_merge_job() {
        let v = SlurmStatus {
            tasks: vec![
                line("a", "ok", "7_0", ""),
                line("b", "failed", "7_1", "oom"),
                line("c", "pending", "7_2", "PENDING"),
                line("d", "ok", "7_3", ""),
            ],
            merge_job: Some("8".into()),
            merged: false,
            wave: None,
        };
        let l = lines(&v);
        assert_eq!(l.len(), 6);
        assert_eq!(
            l[0],
            format!("{:<28} {:<10} {:<12} detail", "run", "state", "task")
        );
        assert_eq!(
            l[2],
            format!("{:<28} {:<10} {:<12} oom", "b", "failed", "7_1")
        );
        assert_eq!(l[5], "1 failed, 2 ok, 1 pending; merge job 8");
        let done = SlurmStatus {
            tasks: vec![line("a", "ok", "7_0", "")],
            merge_job: Some("8".into()),
            merged: true,
            wave: None,
        };
        assert_eq!(lines(&done)[2], "1 ok; merge job 8 (results merged)");
        let none = SlurmStatus {
            merge_job: None,
            ..done
        };
        assert_eq!(lines(&none)[2], "1 ok; no merge job");
        let wave = SlurmStatus {
            wave: Some(3),
            merged: false,
            ..none.clone()
        };
        assert_eq!(
            lines(&wave)[2],
            "1 ok; tune wave 3, merged by the tune's driver"
        );
    }
}
