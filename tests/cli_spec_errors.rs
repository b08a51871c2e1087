//! A bad spec launches nothing: one clear error with file:line:column (the file alone when it
//! is not text at all), exit 2, no process started, no results folder.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test may panic: that is its failure

mod common;
use common::*;

fn spec_with_marker(marker: &std::path::Path, body: &str) -> String {
    // If sgtune ever launched this "server", the marker file would appear.
    format!(
        "name: bad\nserver:\n  command: [sh, -c, 'touch {}']\n  model_path: /nonexistent\n{body}",
        marker.display()
    )
}

fn check_rejected(body: &str, expect_line: usize, expect_in_msg: &str) {
    check_rejected_at(body, &format!("{expect_line}:"), expect_in_msg);
}

/// As `check_rejected`, with the position after the file name given as `line:` or
/// `line:column:`.
fn check_rejected_at(body: &str, expect_place: &str, expect_in_msg: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = dir.path().join("launched");
    let spec = dir.path().join("bad.yaml");
    std::fs::write(&spec, spec_with_marker(&marker, body)).expect("write spec");
    let results = dir.path().join("results");
    let out = run_sweep(&spec, &results);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    let place = format!("{}:{expect_place}", spec.display());
    assert!(err.contains(&place), "expected {place} in: {err}");
    assert!(
        err.contains(expect_in_msg),
        "expected {expect_in_msg:?} in: {err}"
    );
    assert_eq!(
        err.lines().filter(|l| l.starts_with("error")).count(),
        1,
        "one error: {err}"
    );
    assert!(!marker.exists(), "a server was launched");
    assert!(!results.exists(), "a results folder was created");
}

const WORKLOAD: &str = "workload:\n  concurrency: 2\n  requests: 4\n  input_tokens: 8\n  output_tokens: 8\n  vocab_size: 100\n";

#[test]
fn unknown_key() {
    check_rejected(
        &format!("sweep:\n  mem_fraction_static: [0.8]\n{WORKLOAD}  concurency: 3\n"),
        13,
        "unknown field `concurency`",
    );
}

#[test]
fn an_engine_refused_key_is_named_in_its_own_flow_style_configuration() {
    check_rejected_at(
        &format!(
            "configs:\n  - {{name: a, hicache_size: 8}}\n  - {{name: b, engine: vllm, hicache_size: 48}}\n{WORKLOAD}"
        ),
        "7:29:",
        "(configuration `b` runs on vllm)",
    );
}

#[test]
fn wrong_type() {
    check_rejected(
        &WORKLOAD.replace("requests: 4", "requests: many"),
        7,
        "invalid type: string \"many\", expected a whole number >= 1",
    );
}

#[test]
fn bad_value() {
    check_rejected(
        &format!("sweep:\n  mem_fraction_static: [0.8, 1.7]\n{WORKLOAD}"),
        6,
        "(0, 1]",
    );
}

#[test]
fn bad_objectives() {
    // The objective starts at line 11, after the workload.
    for (objective, place, says) in [
        (
            "objective: {maximize: output_tokps}\n",
            "11:23:",
            "objective: `output_tokps` is not a results.csv column (did you mean `output_tok_s`?",
        ),
        (
            "objective:\n  maximize: output_tok_s\n  slo:\n    ttft_ms_p999: 2000\n",
            "14:5:",
            "objective.slo: `ttft_ms_p999` is not a results.csv column (did you mean `ttft_ms_p99`?",
        ),
        (
            "objective: {maximize: ttft_ms_p99}\n",
            "11:23:",
            "contradicts the column: lower ttft_ms_p99 is better (write `minimize: ttft_ms_p99`)",
        ),
        (
            "objective: {maximize: output_tok_s, slo: {goodput_share: 0.9}}\n",
            "11:43:",
            "where higher is better",
        ),
        (
            "objective:\n  maximize: output_tok_s\n  slo:\n    ttft_ms_p99: -2000\n",
            "14:18:",
            "objective.slo: `ttft_ms_p99`: the bound must be a number > 0, got -2000",
        ),
        (
            "objective: {maximize: output_tok_s, slo: {tpot_ms_p99: 0}}\n",
            "11:56:",
            "the bound must be a number > 0, got 0",
        ),
        (
            "objective: {maximize: output_tok_s, minimize: ttft_ms_p99}\n",
            "11:47:",
            "give `maximize` or `minimize`, not both",
        ),
    ] {
        check_rejected_at(&format!("{WORKLOAD}{objective}"), place, says);
    }
}

/// Run a sweep on a file holding exactly `bytes`; check it was refused (exit 2, one error
/// line, no results folder) and return the file's path as printed and the stderr.
fn rejected_file(bytes: &[u8]) -> (String, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = dir.path().join("bad.yaml");
    std::fs::write(&spec, bytes).expect("write spec");
    let results = dir.path().join("results");
    let out = run_sweep(&spec, &results);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert_eq!(
        err.lines().filter(|l| l.starts_with("error")).count(),
        1,
        "one error: {err}"
    );
    assert!(!results.exists(), "a results folder was created");
    (spec.display().to_string(), err)
}

#[test]
fn a_binary_file_is_named_alone_without_a_position() {
    for (bytes, why) in [
        (
            &b"name: bad\n\0\x01\x02\x03"[..],
            "a NUL byte at byte offset 10",
        ),
        (b"name: caf\xe9\n", "invalid UTF-8 at byte offset 9"),
    ] {
        let (spec, err) = rejected_file(bytes);
        let expect = format!("error: {spec}: not a text file ({why}): a sweep file is YAML text");
        assert!(err.contains(&expect), "expected {expect:?} in: {err}");
        assert!(
            !err.contains(&format!("{spec}:0")),
            "a made-up position: {err}"
        );
    }
}

#[test]
fn a_top_level_list_says_what_a_spec_must_be() {
    let (spec, err) = rejected_file(b"# two sweeps?\n- name: a\n- name: b\n");
    let expect =
        format!("{spec}:2:1: the spec must be a mapping with name, server, sweep, workload");
    assert!(err.contains(&expect), "expected {expect:?} in: {err}");
    assert!(err.contains("its top level is a list"), "{err}");
    assert!(
        !err.contains("SweepSpec"),
        "serde's type name leaked: {err}"
    );
}

#[test]
fn validate_and_dry_run_print_the_plan_and_start_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = dir.path().join("launched");
    let spec = dir.path().join("ok.yaml");
    std::fs::write(
        &spec,
        spec_with_marker(
            &marker,
            &format!(
                "sweep:\n  mem_fraction_static: [0.8, 0.9]\n  hicache_size: [0, 4]\n{WORKLOAD}"
            ),
        ),
    )
    .expect("write");
    for args in [vec!["validate"], vec!["run", "--dry-run"]] {
        let out = run(sgtune().args(&args).arg(&spec).current_dir(dir.path()));
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let plan = text(&out.stdout);
        assert_eq!(
            plan.lines()
                .filter(|l| l.contains("--model-path /nonexistent"))
                .count(),
            4,
            "{plan}"
        );
        assert!(plan.contains("mfs0.9_hicache4"), "{plan}");
        assert!(
            plan.contains("--enable-hierarchical-cache --hicache-size 4"),
            "{plan}"
        );
        assert!(plan.contains("PYTHONUNBUFFERED=1 sh -c"), "{plan}");
    }
    assert!(!marker.exists());
    assert!(!dir.path().join("results").exists());
}

/// A misspelled flag key is not refused (a newer engine has newer flags) but named, in
/// `validate` (stdout, with the list it was checked against) and in `run` (stderr, before
/// anything starts): where it is in the file, and the flag it was meant to be.
#[test]
fn validate_and_run_name_the_flag_a_misspelled_key_meant() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = dir.path().join("launched");
    let spec = dir.path().join("typo.yaml");
    let body = format!(
        "sweep:\n  mem_fraction_statc: [0.8, 0.9]\nconfigs:\n  - name: a\n    max_total_tokens: 4096\n  - {{name: b, zzzz_qqqq_xxxx: 1}}\n{WORKLOAD}"
    );
    std::fs::write(&spec, spec_with_marker(&marker, &body)).expect("write");
    let out = run(sgtune().arg("validate").arg(&spec).current_dir(dir.path()));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    let origin = spec.display().to_string();
    assert!(
        said.contains(&format!("warning: {origin}:6:3: `sweep.mem_fraction_statc` is not in sgtune's built-in list of SGLang flags: did you mean `mem_fraction_static`? Fix the key.")),
        "{said}"
    );
    assert!(
        said.contains(&format!("warning: {origin}:10:15: `configs[1].zzzz_qqqq_xxxx` is not in sgtune's built-in list of SGLang flags: check its spelling")),
        "{said}"
    );
    // The `sh -c` command is not asked for its help: the built-in list, and why.
    assert!(
        said.contains("flags: SGLang keys checked against sgtune's built-in list of SGLang flags")
            && said.contains("`sh`, not a python"),
        "{said}"
    );
    // Still passed through as written.
    assert!(said.contains("--mem-fraction-statc 0.9"), "{said}");
    // `run` says it before launching (here the launch is the marker's `sh -c`).
    let results = dir.path().join("results");
    let out = run(sgtune()
        .arg("run")
        .arg(&spec)
        .arg("--results-dir")
        .arg(&results)
        .current_dir(dir.path()));
    let err = text(&out.stderr);
    let at = err
        .find("`sweep.mem_fraction_statc` is not in sgtune's built-in list of SGLang flags: did you mean `mem_fraction_static`?")
        .unwrap_or_else(|| panic!("no warning in {err}"));
    assert!(
        err[..at].contains(&format!("warning: {origin}:6:3: ")),
        "{err}"
    );
    assert!(marker.exists(), "the sweep still ran: {err}");
}

/// With a server command that is a python, `validate` reads the installed engine's own
/// `--help` (here the fake SGLang's short one) and checks the keys against it instead.
#[test]
fn validate_checks_the_keys_against_the_installed_engines_help() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = dir.path().join("fake.yaml");
    let text_of = format!(
        "name: fake\nserver:\n  command: [python3, {}]\n  model_path: /nonexistent\nsweep:\n  fake_derail: [0.1]\n  enable_mixed_chunk: [true]\n  max_total_tokns: [4096]\n{WORKLOAD}",
        fake_server()
    );
    std::fs::write(&spec, text_of).expect("write");
    let out = run(sgtune().arg("validate").arg(&spec).current_dir(dir.path()));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(
        said.contains("flags: SGLang keys checked against the installed SGLang's own list: ")
            && said.contains("fake_sglang.py --help`"),
        "{said}"
    );
    // The fake's own test flag is in its list; a real SGLang flag it lacks is not.
    assert!(!said.contains("`sweep.fake_derail`"), "{said}");
    assert!(
        said.contains("`sweep.enable_mixed_chunk` is not in the installed SGLang's own list"),
        "{said}"
    );
    assert!(
        said.contains("`sweep.max_total_tokns` is not in the installed SGLang's own list: did you mean `max_total_tokens`?"),
        "{said}"
    );
}

/// The story's sweep over the host pool's ratio: every ratio implies the enable flag (once),
/// a ratio of 0 means off, and a ratio beside a size is said to be ignored by SGLang.
#[test]
fn validate_plans_the_hierarchical_cache_as_one_knob_set() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = dir.path().join("launched");
    let spec = dir.path().join("ok.yaml");
    let body = format!(
        "sweep:\n  hicache_ratio: [0, 2, 'off']\nconfigs:\n  - {{name: both, hicache_ratio: 2, hicache_size: 8, hicache_write_policy: write_back}}\n{WORKLOAD}"
    );
    std::fs::write(&spec, spec_with_marker(&marker, &body)).expect("write");
    for args in [vec!["validate"], vec!["run", "--dry-run"]] {
        let out = run(sgtune().args(&args).arg(&spec).current_dir(dir.path()));
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let plan = text(&out.stdout);
        let line = |name: &str| {
            plan.lines()
                .find(|l| l.contains(&format!(" {name}  [")))
                .unwrap_or_else(|| panic!("no {name} in {plan}"))
                .to_string()
        };
        assert!(
            line("hicache-ratio2").ends_with("--enable-hierarchical-cache --hicache-ratio 2"),
            "{plan}"
        );
        for off in ["hicache-ratio0", "hicache-ratiooff"] {
            assert!(
                !line(off).contains("--enable-hierarchical-cache"),
                "{off} is off: {plan}"
            );
            assert!(!line(off).contains("--hicache"), "{off} is off: {plan}");
        }
        let both = line("both");
        assert_eq!(
            both.matches("--enable-hierarchical-cache").count(),
            1,
            "{both}"
        );
        assert!(
            both.ends_with("--enable-hierarchical-cache --hicache-ratio 2 --hicache-size 8 --hicache-write-policy write_back"),
            "{both}"
        );
        assert!(
            plan.contains("warning: both: `hicache_size: 8` and `hicache_ratio: 2` are both set: SGLang sizes the host pool by hicache_size (it overrides --hicache-ratio), so hicache_ratio has no effect"),
            "{plan}"
        );
        // A ratio of 0 and `off` launch one server: one id, and the plan says so.
        let id = |name: &str| line(name).split('[').nth(1).unwrap_or_default()[..12].to_string();
        assert_eq!(id("hicache-ratio0"), id("hicache-ratiooff"), "{plan}");
        assert!(
            plan.contains(&format!(
                "warning: hicache-ratio0, hicache-ratiooff launch the same server [{}]",
                id("hicache-ratio0")
            )),
            "{plan}"
        );
    }
    assert!(!marker.exists());
}

/// `validate --executor slurm` refuses what a Slurm submission would refuse, before the night:
/// `repeats: auto`, `objective.prune`, a deadline; the same spec validates for a local run.
#[test]
fn validate_with_the_slurm_executor_refuses_what_slurm_cannot_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = dir.path().join("launched");
    let spec = dir.path().join("s.yaml");
    let two_points = WORKLOAD.replace("concurrency: 2", "concurrency: [2, 4]");
    let cases = [
        (
            format!(
                "repeats: auto\nobjective: {{maximize: output_tok_s}}\nsweep:\n  mem_fraction_static: [0.8, 0.9]\n{WORKLOAD}"
            ),
            "`repeats: auto`",
        ),
        (
            format!(
                "objective: {{maximize: output_tok_s, prune: true}}\nsweep:\n  mem_fraction_static: [0.8, 0.9]\n{two_points}"
            ),
            "`objective.prune`",
        ),
        (
            format!("budget: 8h\nsweep:\n  mem_fraction_static: [0.8]\n{WORKLOAD}"),
            "are for local sweeps",
        ),
    ];
    for (body, says) in cases {
        std::fs::write(&spec, spec_with_marker(&marker, &body)).expect("write");
        let out = run(sgtune().arg("validate").arg(&spec).current_dir(dir.path()));
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let out = run(sgtune()
            .args(["validate", "--executor", "slurm"])
            .arg(&spec)
            .current_dir(dir.path()));
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{says}: {err}");
        assert!(
            err.contains(says) && err.contains("--executor slurm"),
            "{err}"
        );
    }
    assert!(!marker.exists());
}

#[test]
fn validate_prints_the_objective() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = dir.path().join("launched");
    let spec = dir.path().join("ok.yaml");
    let body = format!(
        "{WORKLOAD}repeats: 3\nobjective:\n  maximize: output_tok_s\n  slo: {{ttft_ms_p99: 2000, tpot_ms_p99: 100}}\n"
    );
    std::fs::write(&spec, spec_with_marker(&marker, &body)).expect("write");
    let out = run(sgtune().arg("validate").arg(&spec).current_dir(dir.path()));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let plan = text(&out.stdout);
    assert!(
        plan.contains(
            "objective: maximize output_tok_s subject to ttft_ms_p99 ≤ 2000, tpot_ms_p99 ≤ 100;"
        ),
        "{plan}"
    );
    assert!(
        plan.contains("a winner only when the 95% intervals of its margins (3 repeats)"),
        "{plan}"
    );
    assert!(!marker.exists());
}

#[test]
fn missing_vocab_is_caught_before_launch() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = dir.path().join("launched");
    let spec = dir.path().join("v.yaml");
    std::fs::write(
        &spec,
        spec_with_marker(&marker, &WORKLOAD.replace("  vocab_size: 100\n", "")),
    )
    .expect("write");
    let out = run(sgtune().arg("run").arg(&spec).current_dir(dir.path()));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("set workload.vocab_size"),
        "{}",
        text(&out.stderr)
    );
    assert!(!marker.exists());
}

#[test]
fn usage_errors_exit_2() {
    let out = run(sgtune().arg("run"));
    assert_eq!(out.status.code(), Some(2));
    let out = run(sgtune().arg("frobnicate"));
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn bad_slurm_section() {
    check_rejected(
        &format!("sweep:\n  mem_fraction_static: [0.8]\n{WORKLOAD}slurm:\n  partion: gpu\n"),
        14,
        "unknown field `partion`",
    );
    check_rejected(
        &format!("sweep:\n  mem_fraction_static: [0.8]\n{WORKLOAD}slurm:\n  max_running: 0\n"),
        14,
        ">= 1",
    );
    check_rejected(
        &format!("sweep:\n  mem_fraction_static: [0.8]\n{WORKLOAD}slots:\n  gpus: [\"0,1\"]\n"),
        14,
        "one id per list item",
    );
}

/// Slots that cannot hold a configuration are refused before anything starts.
#[test]
fn gpu_slots_too_small_for_a_configuration() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = dir.path().join("launched");
    let spec = dir.path().join("s.yaml");
    std::fs::write(
        &spec,
        spec_with_marker(
            &marker,
            &format!("configs:\n  - {{name: small}}\n  - {{name: big, tp_size: 4}}\n{WORKLOAD}"),
        ),
    )
    .expect("write spec");
    let results = dir.path().join("results");
    for (flags, want) in [
        (
            &["--gpus", "0,1"][..],
            "configuration big needs 4 GPU(s) (tp_size × dp_size, or --gpus-per-run) but --gpus gives 2",
        ),
        (&["--gpus", "0,0"][..], "GPU 0 is listed twice"),
        (&["--gpus-per-run", "2"][..], "--gpus-per-run needs --gpus"),
        (
            &["--parallel", "2", "--executor", "slurm"][..],
            "drop one of them",
        ),
    ] {
        let out = run(sgtune()
            .arg("run")
            .arg(&spec)
            .arg("--results-dir")
            .arg(&results)
            .args(flags));
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {err}");
        assert!(err.contains(want), "{flags:?}: expected {want:?} in {err}");
    }
    assert!(!marker.exists(), "a server was launched");
    assert!(!results.exists(), "a results folder was created");
}

/// A Slurm task that does not see the folder it was submitted from says so and runs nothing.
#[test]
fn slurm_task_without_the_shared_folder() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run(sgtune()
        .arg("run-one")
        .arg(dir.path().join("not-shared"))
        .args(["--launch", "a", "--marker", "tok"]));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("filesystem every node sees"), "{err}");
    let out = run(sgtune().arg("status").arg(dir.path()));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("was not submitted to Slurm"), "{err}");
}

/// `--executor slurm` plans its job arrays once, at submission. What depends on rows measured
/// in between is refused with its reason, exit 2, before any folder or job exists (no Slurm
/// needed: the refusal comes before sbatch is looked for): the pre-flight, `repeats: auto`'s
/// rounds and pruning. Before this, `repeats: auto` and `prune` were silently dropped.
#[test]
fn slurm_refuses_what_it_cannot_plan_at_submission() {
    let objective = "objective:\n  maximize: output_tok_s\n";
    for (body, want) in [
        (
            format!(
                "sweep:\n  mem_fraction_static: [preflight]\n{WORKLOAD}search:\n  preflight:\n    mem_fraction_static: {{from: 0.8, to: 0.9, resolution: 0.05}}\n"
            ),
            "--executor slurm does not run search.preflight",
        ),
        (
            format!(
                "configs:\n  - {{name: a}}\n  - {{name: b}}\nrepeats: auto\n{WORKLOAD}{objective}"
            ),
            "--executor slurm does not run `repeats: auto`",
        ),
        (
            format!(
                "configs:\n  - {{name: a}}\n  - {{name: b}}\n{}{objective}  prune: true\n",
                WORKLOAD.replace("concurrency: 2", "concurrency: [1, 2]")
            ),
            "--executor slurm does not run `objective.prune`",
        ),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let marker = dir.path().join("launched");
        let spec = dir.path().join("s.yaml");
        std::fs::write(&spec, spec_with_marker(&marker, &body)).expect("write spec");
        // The spec itself is fine: only the executor cannot run it.
        let ok = run(sgtune().arg("validate").arg(&spec));
        assert_eq!(ok.status.code(), Some(0), "{body}\n{}", text(&ok.stderr));
        let results = dir.path().join("results");
        let out = run(sgtune()
            .arg("run")
            .arg(&spec)
            .arg("--results-dir")
            .arg(&results)
            .args(["--executor", "slurm"]));
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{want}: {err}");
        assert!(err.contains(want), "expected {want:?} in {err}");
        assert!(err.contains("run the sweep locally"), "{err}");
        assert!(!marker.exists(), "a server was launched");
        assert!(!results.exists(), "a results folder was created");
    }
}

/// `reproduce --decision` has no use for `--tolerance` (the re-check decides by the
/// objective's rule): the combination is refused with the reason instead of being ignored.
#[test]
fn reproduce_decision_refuses_tolerance() {
    let dir = tempfile::tempdir().expect("tempdir");
    let results = dir.path().join("again");
    let out = run(sgtune()
        .arg("reproduce")
        .arg(dir.path().join("a-sweep"))
        .args(["--decision", "--tolerance", "0.1", "--results-dir"])
        .arg(&results));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--tolerance is not used with --decision") && err.contains("--run NAME"),
        "{err}"
    );
    assert!(!results.exists(), "a results folder was created");
}

/// A bad value inside `quality:` lands on its key's line (14), and names the key.
#[test]
fn bad_quality_section() {
    check_rejected(
        &format!("sweep:\n  mem_fraction_static: [0.8]\n{WORKLOAD}quality:\n  count: 1\n"),
        14,
        "quality.count must be a whole number ≥ 2",
    );
    check_rejected(
        &format!("sweep:\n  mem_fraction_static: [0.8]\n{WORKLOAD}quality:\n  confidence: 2\n"),
        14,
        "quality.confidence",
    );
    check_rejected(
        &format!("sweep:\n  mem_fraction_static: [0.8]\n{WORKLOAD}quality:\n  baseline: nope\n"),
        14,
        "quality.baseline `nope` is not a configuration of this plan",
    );
}

#[test]
fn sglang_only_key_under_vllm() {
    check_rejected(
        "  engine: vllm\nsweep:\n  schedule_conservativeness: [0.3, 1.0]\nworkload: {concurrency: 1, requests: 1, input_tokens: 8, output_tokens: 8}\n",
        7,
        "`schedule_conservativeness` is an SGLang flag with no vLLM equivalent",
    );
    check_rejected(
        "  engine: vllm\n  args:\n    hicache_size: 8\nsweep:\n  max_num_seqs: [4]\nworkload: {concurrency: 1, requests: 1, input_tokens: 8, output_tokens: 8}\n",
        7,
        "`hicache_size` is SGLang's hierarchical cache",
    );
}

#[test]
fn common_key_and_its_vllm_name_together() {
    check_rejected(
        "  engine: vllm\n  args: {max_running_requests: 8}\nsweep:\n  max_num_seqs: [4, 8]\nworkload: {concurrency: 1, requests: 1, input_tokens: 8, output_tokens: 8}\n",
        8,
        "`max_num_seqs` and `max_running_requests` set the same vLLM flag",
    );
}

#[test]
fn unknown_engine() {
    check_rejected(
        "  engine: trt\nsweep:\n  max_num_seqs: [4]\nworkload: {concurrency: 1, requests: 1, input_tokens: 8, output_tokens: 8}\n",
        5,
        "unknown variant `trt`",
    );
}

/// The pre-flight's knob must be one the engine it launches has and honours there.
#[test]
fn preflight_knob_the_engine_ignores_or_lacks() {
    // vLLM ignores --gpu-memory-utilization once kv_cache_memory_bytes sizes the KV cache.
    check_rejected(
        &format!(
            "  engine: vllm\n  args: {{kv_cache_memory_bytes: 67108864}}\nsweep:\n  mem_fraction_static: [preflight]\n{WORKLOAD}search:\n  preflight:\n    mem_fraction_static: {{from: 0.5, to: 0.9, resolution: 0.05}}\n"
        ),
        8,
        "vLLM ignores `mem_fraction_static` (--gpu-memory-utilization) when kv_cache_memory_bytes sizes the KV cache",
    );
    // On CPU, VLLM_CPU_KVCACHE_SPACE replaces the flag.
    check_rejected(
        &format!(
            "  engine: vllm\n  env: {{VLLM_CPU_KVCACHE_SPACE: \"4\"}}\nsweep:\n  kv_cache_memory_bytes: [preflight]\n{WORKLOAD}search:\n  preflight:\n    kv_cache_memory_bytes: {{from: 8388608, to: 67108864, resolution: 8388608}}\n"
        ),
        8,
        "replaces kv_cache_memory_bytes with VLLM_CPU_KVCACHE_SPACE",
    );
    // SGLang has no kv_cache_memory_bytes.
    check_rejected(
        &format!(
            "sweep:\n  kv_cache_memory_bytes: [preflight]\n{WORKLOAD}search:\n  preflight:\n    kv_cache_memory_bytes: {{from: 8388608, to: 67108864, resolution: 8388608}}\n"
        ),
        6,
        "`kv_cache_memory_bytes` is not a memory knob SGLang has for the pre-flight",
    );
    // The knob under vLLM's own name in server.args: the pre-flight's attempts would pass
    // one flag twice.
    check_rejected(
        &format!(
            "  engine: vllm\n  args: {{gpu_memory_utilization: 0.5}}\n{WORKLOAD}search:\n  preflight:\n    mem_fraction_static: {{from: 0.5, to: 0.9, resolution: 0.05}}\n"
        ),
        15,
        "`mem_fraction_static` and `gpu_memory_utilization` are one vLLM flag (--gpu-memory-utilization)",
    );
}

/// A server program that is not there is one error and its own exit code (6), said before a
/// results folder exists; not a failed row per configuration.
#[test]
fn a_missing_server_program_launches_nothing_and_exits_6() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = dir.path().join("missing.yaml");
    std::fs::write(
        &spec,
        format!(
            "name: missing\nserver:\n  command: [sgtune-no-such-python, -m, sglang.launch_server]\n  model_path: /nonexistent\nsweep:\n  mem_fraction_static: [0.8, 0.9]\n{WORKLOAD}"
        ),
    )
    .expect("write spec");
    let results = dir.path().join("results");
    let out = run_sweep(&spec, &results);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(6), "stderr: {err}");
    assert!(
        err.contains("`sgtune-no-such-python`") && err.contains("not on PATH"),
        "{err}"
    );
    assert_eq!(
        err.lines().filter(|l| l.starts_with("error")).count(),
        1,
        "{err}"
    );
    assert!(!results.exists(), "a results folder was created");
}

/// `workload.sessions` (issue 43): a bad block launches nothing, and the message names the
/// place and the fix.
const SESSIONS: &str = "workload:\n  concurrency: 2\n  requests: 4\n  vocab_size: 100\n";

#[test]
fn a_session_of_zero_turns_is_refused() {
    check_rejected(
        &format!("{SESSIONS}  sessions: {{turns: 0, user_tokens: 8, reply_tokens: 8}}\n"),
        9,
        "workload.sessions.turns must be >= 1",
    );
}

#[test]
fn a_session_longer_than_the_context_is_refused_before_launch() {
    // 3 turns of 40 user and 20 reply tokens: the last turn needs 40·3 + 20·3 = 180 tokens.
    check_rejected(
        &format!(
            "  args:\n    context_length: 100\n{SESSIONS}  sessions: {{turns: 3, user_tokens: 40, reply_tokens: 20}}\n"
        ),
        11,
        "needs 180 tokens",
    );
}

#[test]
fn a_dataset_conversation_that_is_empty_or_malformed_is_refused() {
    let data = tempfile::tempdir().expect("tempdir");
    for (lines, want) in [
        (
            "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}\n{\"messages\": []}\n",
            ":2: is an empty conversation",
        ),
        (
            "{\"messages\": [{\"role\": \"user\"}]}\n",
            ":1: turn 1 is malformed",
        ),
    ] {
        let path = data.path().join("convs.jsonl");
        std::fs::write(&path, lines).expect("write dataset");
        check_rejected_at(
            &format!(
                "workload:\n  endpoint: chat\n  concurrency: 1\n  requests: 2\n  output_tokens: 8\n  dataset: {}\n  sessions: {{from_dataset: true}}\n",
                path.display()
            ),
            " ",
            want,
        );
    }
}

#[test]
fn validate_prints_the_sessions_shape_and_reusable_share() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = dir.path().join("launched");
    let spec = dir.path().join("ok.yaml");
    let body = format!(
        "{SESSIONS}  sessions: {{turns: 3, user_tokens: 10, reply_tokens: 5, system_tokens: 20}}\n"
    );
    std::fs::write(&spec, spec_with_marker(&marker, &body)).expect("write");
    let out = run(sgtune().arg("validate").arg(&spec).current_dir(dir.path()));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let plan = text(&out.stdout);
    // Prompts 30, 45, 60; reusable 20, 35, 50 (the previous prompt and the server's reply,
    // which completions send back as its token ids too): 105 / 135.
    assert!(
        plan.contains("sessions: 2 sessions of 3 turns, 10 user + 5 reply tokens per turn, a 20-token system prompt every session shares; prompt tokens by turn 30, 45, 60;"),
        "{plan}"
    );
    assert!(plan.contains("reusable share 78%"), "{plan}");
    assert!(
        plan.contains("the server's reply goes back into the history as its token ids"),
        "{plan}"
    );
    assert!(!marker.exists());
}

#[test]
fn validate_counts_a_datasets_conversations() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = dir.path().join("launched");
    let data = dir.path().join("c.jsonl");
    std::fs::write(
        &data,
        "{\"messages\": [{\"role\": \"user\", \"content\": \"one two\"}, {\"role\": \"assistant\", \"content\": \"r\"}, {\"role\": \"user\", \"content\": \"three\"}]}\n",
    )
    .expect("write");
    let spec = dir.path().join("ok.yaml");
    let body = format!(
        "workload:\n  endpoint: chat\n  concurrency: 1\n  requests: 2\n  output_tokens: 8\n  dataset: {}\n  sessions: {{from_dataset: true}}\n",
        data.display()
    );
    std::fs::write(&spec, spec_with_marker(&marker, &body)).expect("write");
    let out = run(sgtune().arg("validate").arg(&spec).current_dir(dir.path()));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let plan = text(&out.stdout);
    assert!(
        plan.contains("sessions in the dataset: 1 conversations (0 with a system prompt), 2 to 2 turns (mean 2.0)"),
        "{plan}"
    );
    assert!(!marker.exists());
}

/// `sessions: {from_trace: ...}` (issue 43): a bad trace is refused before anything is
/// launched, the message naming the file, the record or conversation, the field and the fix.
#[test]
fn a_bad_trace_is_refused_naming_the_record_and_the_fix() {
    let data = tempfile::tempdir().expect("tempdir");
    let agentic = "workload:\n  endpoint: chat\n  concurrency: 1\n  requests: 2\n  output_tokens: 8\n  sessions: {from_trace: TRACE, format: agentic}\n";
    let mooncake = "workload:\n  endpoint: completions\n  concurrency: 1\n  requests: 2\n  vocab_size: 100\n  sessions: {from_trace: TRACE, format: mooncake, block_tokens: 4}\n";
    let rec = |ts: u64, input: u64, ids: &str| {
        format!(
            "{{\"timestamp\": {ts}, \"input_length\": {input}, \"output_length\": 2, \"hash_ids\": {ids}}}\n"
        )
    };
    for (body, file, want) in [
        (
            agentic,
            r#"{"conversations": [[{"messages": [{"role": "user", "content": "q"}]}], []]}"#.to_string(),
            "conversation 2 is an empty conversation",
        ),
        (
            agentic,
            r#"{"conversations": [[{"messages": [{"role": "user", "content": "q"}]}, {"messages": []}]]}"#.to_string(),
            "conversation 1, turn 2 has no `messages`",
        ),
        (
            agentic,
            r#"{"conversations": [[{"messages": [{"role": "user", "content": 7}]}]]}"#.to_string(),
            "turn 1, message 1 has no `content`",
        ),
        (mooncake, format!("{}{{\"timestamp\": 3,\n", rec(0, 4, "[1]")), ":2: record 2: not a JSON object"),
        (
            mooncake,
            "{\"timestamp\": 0, \"input_length\": 4, \"hash_ids\": [1]}\n".to_string(),
            ":1: record 1 has no `output_length`",
        ),
        (
            mooncake,
            format!("{}{}", rec(500, 4, "[1]"), rec(200, 4, "[1]")),
            ":2: record 2: `timestamp` 200 is earlier than line 1's 500: the records must be in time order",
        ),
        (
            mooncake,
            rec(0, 5, "[1, 2, 3]"),
            ":1: record 1: `input_length` 5 is shorter than its 3 hash blocks imply",
        ),
    ] {
        let path = data.path().join("trace");
        std::fs::write(&path, file).expect("write trace");
        let body = body.replace("TRACE", &path.display().to_string());
        check_rejected_at(&body, " ", want);
    }
}

#[test]
fn a_mooncake_record_past_the_context_is_refused_before_launch() {
    let data = tempfile::tempdir().expect("tempdir");
    let path = data.path().join("m.jsonl");
    std::fs::write(
        &path,
        "{\"timestamp\": 0, \"input_length\": 60, \"output_length\": 10, \"hash_ids\": [1]}\n{\"timestamp\": 5, \"input_length\": 90, \"output_length\": 20, \"hash_ids\": [1, 2]}\n",
    )
    .expect("write trace");
    check_rejected_at(
        &format!(
            "  args:\n    context_length: 100\nworkload:\n  endpoint: completions\n  concurrency: 1\n  requests: 2\n  vocab_size: 100\n  sessions: {{from_trace: {}, format: mooncake, block_tokens: 64}}\n",
            path.display()
        ),
        "12:3:",
        "record 2 needs 110 tokens",
    );
}

#[test]
fn validate_prints_a_traces_shape_and_a_mooncake_traces_reusable_share() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = dir.path().join("launched");
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/traces");
    let spec = dir.path().join("ok.yaml");
    for (body, want) in [
        (
            format!(
                "workload:\n  endpoint: chat\n  concurrency: 1\n  requests: 5\n  output_tokens: 8\n  sessions: {{from_trace: {}, format: agentic}}\n",
                fixtures.join("agentic.json").display()
            ),
            "sessions in the trace: 2 conversations, 2 to 3 turns (mean 2.5); new messages 1 system, 2 tool, 3 user; 5 words of new messages per turn on average;",
        ),
        (
            format!(
                "workload:\n  endpoint: completions\n  concurrency: 4\n  requests: 4\n  vocab_size: 100\n  sessions: {{from_trace: {}, format: mooncake, block_tokens: 4, slowdown: 2}}\n",
                fixtures.join("mooncake.jsonl").display()
            ),
            "records in the trace: 4 over 0.5 s (unscaled), 9 input + 2 output tokens per record on average; reusable share 48.6% of the prompt tokens (18 of 37:",
        ),
        (
            format!(
                "workload:\n  endpoint: completions\n  concurrency: 4\n  requests: 4\n  vocab_size: 100\n  sessions: {{from_trace: {}, format: mooncake, block_tokens: 4}}\n",
                fixtures.join("mooncake.jsonl").display()
            ),
            "at concurrency 4, 4 requests after 2 warmup, input and output lengths from the trace, seed 1",
        ),
    ] {
        std::fs::write(&spec, spec_with_marker(&marker, &body)).expect("write");
        let out = run(sgtune().arg("validate").arg(&spec).current_dir(dir.path()));
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let plan = text(&out.stdout);
        assert!(plan.contains(want), "{plan}");
    }
    assert!(!marker.exists());
}
