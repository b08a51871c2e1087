//! The batch scripts a submission writes: one per job array (its tasks' GPUs, throttle and the
//! `run-one` of each launch) and the merge job's; and the GPUs a task of a configuration asks for.

use crate::plan::expand::RunConfig;
use crate::plan::flags::ParamValue;
use crate::plan::spec::SlurmSpec;
use crate::record::layout::SLURM;
use crate::server::command::shell_quote;
use std::path::Path;

/// GPUs a task of this configuration asks for: `slurm.gpus_per_run`, else tp_size × dp_size.
pub fn gpus_for(opts: &SlurmSpec, run: &RunConfig) -> u64 {
    let int = |k: &str| match run.param(k) {
        Some(ParamValue::Int(n)) if *n >= 1 => *n as u64,
        _ => 1,
    };
    opts.gpus_per_run
        .unwrap_or_else(|| int("tp_size") * int("dp_size"))
}

/// The `#SBATCH` lines every job of the sweep shares.
fn common_options(opts: &SlurmSpec) -> Vec<String> {
    let mut o = Vec::new();
    for (flag, v) in [
        ("partition", &opts.partition),
        ("account", &opts.account),
        ("qos", &opts.qos),
    ] {
        if let Some(v) = v {
            o.push(format!("--{flag}={v}"));
        }
    }
    o
}

/// The batch script of one job array.
pub fn array_script(
    sweep: &str,
    dir: &Path,
    sgtune: &str,
    opts: &SlurmSpec,
    gpus: u64,
    launches: &[String],
    marker: &str,
) -> String {
    let mut s = String::from("#!/bin/bash\n");
    let throttle = opts.max_running.map_or(String::new(), |n| format!("%{n}"));
    let mut o = vec![
        format!("--job-name=sgtune-{sweep}"),
        format!("--array=0-{}{throttle}", launches.len().saturating_sub(1)),
        format!("--output={}/{SLURM}/%A_%a.out", dir.display()),
    ];
    o.extend(common_options(opts));
    if let Some(t) = &opts.time {
        o.push(format!("--time={t}"));
    }
    if gpus > 0 {
        o.push(format!("--gres=gpu:{gpus}"));
    }
    o.extend(opts.extra.iter().cloned());
    sbatch_head(&mut s, &o, opts);
    s.push_str("launches=(");
    s.push_str(
        &launches
            .iter()
            .map(|l| shell_quote(l))
            .collect::<Vec<_>>()
            .join(" "),
    );
    s.push_str(")\n");
    s.push_str(&format!(
        "exec {} run-one {} --launch \"${{launches[$SLURM_ARRAY_TASK_ID]}}\" --marker {}\n",
        shell_quote(sgtune),
        shell_quote(&dir.display().to_string()),
        shell_quote(marker)
    ));
    s
}

/// The `#SBATCH` lines, `set -e` and the spec's setup lines: the head of every batch script.
fn sbatch_head(s: &mut String, options: &[String], opts: &SlurmSpec) {
    for line in options {
        s.push_str(&format!("#SBATCH {line}\n"));
    }
    s.push_str("set -e\n");
    for l in &opts.setup {
        s.push_str(l);
        s.push('\n');
    }
}

/// The batch script of the merge job.
pub fn merge_script(sweep: &str, dir: &Path, sgtune: &str, opts: &SlurmSpec) -> String {
    let mut s = String::from("#!/bin/bash\n");
    let mut o = vec![
        format!("--job-name=sgtune-{sweep}-merge"),
        format!("--output={}/{SLURM}/merge-%j.out", dir.display()),
    ];
    o.extend(common_options(opts));
    sbatch_head(&mut s, &o, opts);
    s.push_str(&format!(
        "exec {} merge {}\n",
        shell_quote(sgtune),
        shell_quote(&dir.display().to_string())
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpus_per_task_and_the_merge_script() {
        let spec = crate::plan::spec::parse(
            "name: t\nserver:\n  command: [python3, f.py]\n  model_path: /m\n  args: {tp_size: 2}\nconfigs:\n  - {name: a}\n  - {name: b, dp_size: 3}\n  - {name: c}\nworkload:\n  vocab_size: 100\n  concurrency: 2\n  requests: 4\n  input_tokens: 4\n  output_tokens: 4\n",
            "t.yaml",
        )
        .expect("spec");
        let mut plan = crate::plan::expand::expand(&spec);
        // (A size below 1 or not a number counts 1; the spec refuses those, a hand-made
        // configuration may not.)
        plan.runs[2].resolved = vec![
            ("tp_size".into(), ParamValue::Int(0)),
            ("dp_size".into(), ParamValue::Str("x".into())),
        ];
        let o = SlurmSpec::default();
        let g: Vec<u64> = plan.runs.iter().map(|r| gpus_for(&o, r)).collect();
        assert_eq!(
            g,
            [2, 6, 1],
            "tp × dp, a missing or non-positive size counting 1"
        );
        let fixed = SlurmSpec {
            gpus_per_run: Some(0),
            ..Default::default()
        };
        assert_eq!(gpus_for(&fixed, &plan.runs[1]), 0);

        let opts = SlurmSpec {
            partition: Some("gpu".into()),
            account: Some("acct".into()),
            qos: Some("high".into()),
            time: Some("1:00:00".into()),
            setup: vec!["module load cuda".into()],
            ..Default::default()
        };
        let s = merge_script("kv", Path::new("/shared/r"), "/opt/sgtune", &opts);
        assert_eq!(
            s,
            "#!/bin/bash\n#SBATCH --job-name=sgtune-kv-merge\n#SBATCH --output=/shared/r/slurm/merge-%j.out\n#SBATCH --partition=gpu\n#SBATCH --account=acct\n#SBATCH --qos=high\nset -e\nmodule load cuda\nexec /opt/sgtune merge /shared/r\n"
        );
    }

    #[test]
    fn array_script_throttles_asks_gpus_and_runs_one_launch_per_task() {
        let opts = SlurmSpec {
            partition: Some("gpu".into()),
            time: Some("1:00:00".into()),
            max_running: Some(2),
            extra: vec!["--constraint=h100".into()],
            setup: vec!["module load cuda".into()],
            ..Default::default()
        };
        let s = array_script(
            "kv",
            Path::new("/shared/r/kv-1"),
            "/opt/sgtune",
            &opts,
            2,
            &["a".into(), "b c".into(), "d".into()],
            "tok",
        );
        for want in [
            "#SBATCH --array=0-2%2\n",
            "#SBATCH --output=/shared/r/kv-1/slurm/%A_%a.out\n",
            "#SBATCH --partition=gpu\n",
            "#SBATCH --time=1:00:00\n",
            "#SBATCH --gres=gpu:2\n",
            "#SBATCH --constraint=h100\n",
            "module load cuda\n",
            "launches=(a 'b c' d)\n",
            "exec /opt/sgtune run-one /shared/r/kv-1 --launch \"${launches[$SLURM_ARRAY_TASK_ID]}\" --marker tok\n",
        ] {
            assert!(s.contains(want), "{want} in\n{s}");
        }
        let no_gpu = array_script(
            "kv",
            Path::new("/d"),
            "sg",
            &SlurmSpec::default(),
            0,
            &["a".into()],
            "t",
        );
        assert!(!no_gpu.contains("--gres"), "{no_gpu}");
        assert!(no_gpu.contains("--array=0-0\n"), "{no_gpu}");
    }
}
