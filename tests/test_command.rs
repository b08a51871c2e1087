//! The README's test command runs every test binary even after one fails, runs the
//! timing-sensitive comparisons alone afterwards, and ends by naming what failed. Checked on
//! scripts/lib/run-tests.sh (what scripts/test.sh hands over to after its setup) with a fake
//! `cargo` first on PATH that records its arguments and prints what libtest and cargo would.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test may panic: that is its failure

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// A `cargo` that logs each invocation (one line) and answers: `--no-run` builds, `--ignored
/// --list` lists the ignored tests by binary (live_peers and real_sglang have some), `--list`
/// lists, `--exact` runs the timing-sensitive test alone (failing with FAIL_ALONE), `--ignored`
/// runs the real servers' tests: with `--test real_sglang` kill_9 (failing with FAIL_REAL),
/// otherwise live_peers' one (failing with FAIL_PEER); anything else is the rest: a passing
/// lib, then fake_server (one test failing with FAIL_SUITE), then load_cmd, which must still run
/// after it.
const FAKE_CARGO: &str = r#"#!/bin/sh
echo "$*" >> "$FAKE_CARGO_LOG"
case " $* " in
  *" --no-run "*) exit 0 ;;
  *" --ignored --list "*)
    echo "     Running unittests src/lib.rs (target/debug/deps/sgtune-0)" >&2
    echo "     Running tests/live_peers.rs (target/debug/deps/live_peers-0)" >&2
    printf 'load_against_live_llama_cpp: test\n\n1 test, 0 benchmarks\n'
    echo "     Running tests/real_sglang.rs (target/debug/deps/real_sglang-0)" >&2
    printf 'agrees_with_sglang_bench_serving: test\nkill_9_of_sgtune_takes_the_server_with_it: test\n'
    echo "     Running tests/real_tune.rs (target/debug/deps/real_tune-0)" >&2
    printf 'a_guided_tune: test\n'
    exit 0 ;;
  *" --list "*)
    printf 'agrees_with_sglang_bench_serving: test\nkill_9_of_sgtune_takes_the_server_with_it: test\nload_against_live_llama_cpp: test\n'
    exit 0 ;;
  *" --exact "*)
    echo "     Running tests/real_sglang.rs (target/debug/deps/real_sglang-0)" >&2
    if [ -n "$FAIL_ALONE" ]; then
      printf 'test agrees_with_sglang_bench_serving ... FAILED\n\ntest result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 4 filtered out\n'
      echo 'error: test failed, to rerun pass `--test real_sglang`' >&2
      exit 101
    fi
    printf 'test agrees_with_sglang_bench_serving ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 4 filtered out; finished in 40.20s\n'
    exit 0 ;;
  *" --ignored "*)
    nice > "$FAKE_CARGO_LOG.nice"
    case " $* " in
      *" --test real_sglang "*)
        echo "     Running tests/real_sglang.rs (target/debug/deps/real_sglang-0)" >&2
        if [ -n "$FAIL_REAL" ]; then
          printf 'test kill_9_of_sgtune_takes_the_server_with_it ... FAILED\n\ntest result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 1 filtered out\n'
          echo 'error: test failed, to rerun pass `--test real_sglang`' >&2
          exit 101
        fi
        printf 'test kill_9_of_sgtune_takes_the_server_with_it ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 1 filtered out; finished in 60.40s\n'
        exit 0 ;;
    esac
    echo "     Running tests/live_peers.rs (target/debug/deps/live_peers-0)" >&2
    if [ -n "$FAIL_PEER" ]; then
      printf 'test load_against_live_llama_cpp ... FAILED\n\ntest result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out\n'
      echo 'error: test failed, to rerun pass `--test live_peers`' >&2
      exit 101
    fi
    printf 'test load_against_live_llama_cpp ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 7.20s\n'
    exit 0 ;;
esac
echo "     Running unittests src/lib.rs (target/debug/deps/sgtune-0)" >&2
printf 'test a::b ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.30s\n'
echo "     Running tests/fake_server.rs (target/debug/deps/fake_server-0)" >&2
if [ -n "$FAIL_SUITE" ]; then
  printf 'test crash_during_load ... FAILED\ntest other ... ok\n\nfailures:\n    crash_during_load\n\ntest result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out\n'
  echo 'error: test failed, to rerun pass `--test fake_server`' >&2
else
  printf 'test crash_during_load ... ok\ntest other ... ok\n\ntest result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 12.60s\n'
fi
echo "     Running tests/load_cmd.rs (target/debug/deps/load_cmd-0)" >&2
printf 'test l ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n'
[ -z "$FAIL_SUITE" ] || exit 101
"#;

struct Ran {
    code: Option<i32>,
    stdout: String,
    calls: Vec<String>,
}

fn run_tests(dir: &Path, fail: &[&str], args: &[&str]) -> Ran {
    // The fake world's one timing-sensitive test (its `--list` has no other).
    run_tests_alone(dir, fail, args, "agrees_with_sglang_bench_serving")
}

/// `run_tests` with the names the script's ALONE list holds (`SGTUNE_ALONE_TESTS`).
fn run_tests_alone(dir: &Path, fail: &[&str], args: &[&str], alone: &str) -> Ran {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let cargo = bin.join("cargo");
    std::fs::write(&cargo, FAKE_CARGO).unwrap();
    std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755)).unwrap();
    let log = dir.join("calls");
    let _ = std::fs::remove_file(&log);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new("bash");
    cmd.arg(Path::new(ROOT).join("scripts/lib/run-tests.sh"))
        .args(args)
        .env("PATH", path)
        .env("FAKE_CARGO_LOG", &log)
        .env("SGTUNE_ALONE_WAIT_S", "0")
        .env("SGTUNE_ALONE_TESTS", alone)
        .env_remove("FAIL_SUITE")
        .env_remove("FAIL_REAL")
        .env_remove("FAIL_PEER")
        .env_remove("FAIL_ALONE")
        // scripts/test.sh exports its setup's seconds; a test run under it must not see them.
        .env_remove("SGTUNE_SETUP_S");
    for f in fail {
        cmd.env(f, "1");
    }
    let out = cmd.output().expect("run scripts/lib/run-tests.sh");
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        calls: std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .map(String::from)
            .collect(),
    }
}

/// The five cargo calls when the arguments select a target: build, list, the two suite runs
/// (started together, so logged in either order: returned as the rest, then the real servers'
/// `--ignored`), the alone run.
fn five_calls(r: &Ran) -> [&str; 5] {
    let [build, list, a, b, alone] = &r.calls[..] else {
        panic!("five cargo calls: {:?}\n{}", r.calls, r.stdout)
    };
    let (rest, real) = if a.contains(" --ignored ") {
        (b, a)
    } else {
        (a, b)
    };
    [build, list, rest, real, alone]
}

/// The seven cargo calls when the arguments select no target: build, list, the ignored tests'
/// list, the three suite runs (started together, so logged in any order: returned as the rest,
/// real_sglang's `--ignored`, the other binaries' `--ignored`), the alone run.
fn seven_calls(r: &Ran) -> [&str; 7] {
    let [build, list, ignored, a, b, c, alone] = &r.calls[..] else {
        panic!("seven cargo calls: {:?}\n{}", r.calls, r.stdout)
    };
    let find = |want: &dyn Fn(&str) -> bool| -> &str {
        [a, b, c]
            .into_iter()
            .find(|x| want(x))
            .unwrap_or_else(|| panic!("no such suite run in {:?}", r.calls))
    };
    let rest = find(&|x| !x.contains(" --ignored "));
    let sglang = find(&|x| x.contains(" --ignored ") && x.contains("--test real_sglang"));
    let others = find(&|x| x.contains(" --ignored ") && !x.contains("--test real_sglang"));
    [build, list, ignored, rest, sglang, others, alone]
}

fn last_line(s: &str) -> &str {
    s.lines().last().unwrap_or("")
}

#[test]
fn the_readme_command_hands_over_to_the_runner() {
    let t = std::fs::read_to_string(format!("{ROOT}/scripts/test.sh")).unwrap();
    assert!(
        t.lines()
            .any(|l| l.trim() == r#"exec scripts/lib/run-tests.sh "$@""#),
        "scripts/test.sh must end by running scripts/lib/run-tests.sh with its arguments"
    );
}

/// Every binary runs whatever an earlier one did (--no-fail-fast), the real servers' tests
/// (`--ignored`) beside the rest (neither flag: together exactly `--include-ignored`), the
/// timing-sensitive test is skipped there and runs alone afterwards, and a passing run says
/// so last.
#[test]
fn every_binary_runs_and_the_timing_sensitive_test_runs_alone() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_tests(dir.path(), &[], &[]);
    assert_eq!(r.code, Some(0), "{}", r.stdout);
    let [build, list, ignored, rest, sglang, others, alone] = seven_calls(&r);
    assert!(build.starts_with("test --no-run"), "{build}");
    assert!(list.contains("--include-ignored --list"), "{list}");
    assert!(ignored.starts_with("test -- --ignored --list"), "{ignored}");
    for suite in [rest, sglang, others] {
        assert!(suite.starts_with("test --no-fail-fast "), "{suite}");
        // The fake world's ALONE list (`SGTUNE_ALONE_TESTS`) is its one timing-sensitive test.
        assert!(
            suite.contains("--skip agrees_with_sglang_bench_serving"),
            "{suite}"
        );
        assert!(!suite.contains("--include-ignored"), "{suite}");
    }
    // The real servers' tests in two runs at once: real_sglang's with real_tune's, and those
    // of every other binary the ignored tests' list named (live_peers; lib had none), by target.
    assert!(
        sglang.starts_with(
            "test --no-fail-fast --test real_sglang --test real_tune -- --ignored --skip "
        ),
        "{sglang}"
    );
    assert!(
        others.starts_with("test --no-fail-fast --test live_peers -- --ignored --skip "),
        "{others}"
    );
    // The real servers' runs yield the CPU to the rest (nice 19).
    let own: i32 = String::from_utf8_lossy(&Command::new("nice").output().unwrap().stdout)
        .trim()
        .parse()
        .unwrap();
    let real_nice: i32 = std::fs::read_to_string(dir.path().join("calls.nice"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(
        real_nice,
        (own + 19).min(19),
        "the real servers' run's niceness"
    );
    assert!(!rest.contains("--ignored"), "{rest}");
    // Every run's tests are shown: real_sglang's as they run, then the other real servers',
    // then the rest's.
    let (k, p, f) = (
        r.stdout
            .find("test kill_9_of_sgtune_takes_the_server_with_it ... ok"),
        r.stdout.find("test load_against_live_llama_cpp ... ok"),
        r.stdout.find("test crash_during_load ... ok"),
    );
    assert!(
        k.is_some() && p.is_some() && f.is_some() && k < p && p < f,
        "{}",
        r.stdout
    );
    assert!(
        alone.contains("--include-ignored --exact agrees_with_sglang_bench_serving"),
        "{alone}"
    );
    // Where the time went, next to the summary: the build, then each binary slowest first,
    // the alone run's seconds added to its binary's (the fake's real_sglang ran only alone).
    let times = r
        .stdout
        .lines()
        .find(|l| l.starts_with("test command: times: "))
        .unwrap_or_else(|| panic!("a times line: {}", r.stdout));
    assert!(
        times.starts_with("test command: times: build ")
            && times.contains(
                " s, real_sglang 101 s, fake_server 13 s, live_peers 7 s, lib 0 s; in all "
            ),
        "{times}"
    );
    assert_eq!(
        last_line(&r.stdout),
        "test command: PASSED: 7 passed (1 of them alone afterwards: agrees_with_sglang_bench_serving)"
    );
}

/// A failing binary does not stop the ones after it, the alone run still happens, and the
/// last line names each failed test with its binary; the exit status is a failure.
#[test]
fn failures_in_both_runs_are_named_at_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_tests(
        dir.path(),
        &["FAIL_SUITE", "FAIL_REAL", "FAIL_PEER", "FAIL_ALONE"],
        &[],
    );
    assert_eq!(r.code, Some(101), "{}", r.stdout);
    assert!(
        r.stdout.contains("test l ... ok"),
        "load_cmd ran: {}",
        r.stdout
    );
    assert_eq!(r.calls.len(), 7, "{:?}", r.calls);
    assert_eq!(
        last_line(&r.stdout),
        "test command: FAILED: real_sglang::kill_9_of_sgtune_takes_the_server_with_it, live_peers::load_against_live_llama_cpp, fake_server::crash_during_load, real_sglang::agrees_with_sglang_bench_serving (alone)"
    );
    // Only the other real servers' run failing fails the command: its exit status is not
    // lost in the background either.
    let r = run_tests(dir.path(), &["FAIL_PEER"], &[]);
    assert_eq!(r.code, Some(101), "{}", r.stdout);
    assert_eq!(
        last_line(&r.stdout),
        "test command: FAILED: live_peers::load_against_live_llama_cpp"
    );
    // Only the real servers' run failing fails the command, and names its test.
    let r = run_tests(dir.path(), &["FAIL_REAL"], &[]);
    assert_eq!(r.code, Some(101), "{}", r.stdout);
    assert_eq!(
        last_line(&r.stdout),
        "test command: FAILED: real_sglang::kill_9_of_sgtune_takes_the_server_with_it"
    );
    // Only the rest failing fails it too: its exit status is not lost in the background.
    let r = run_tests(dir.path(), &["FAIL_SUITE"], &[]);
    assert_eq!(r.code, Some(101), "{}", r.stdout);
    assert_eq!(
        last_line(&r.stdout),
        "test command: FAILED: fake_server::crash_during_load"
    );
    // Only the alone run failing still fails the command.
    let r = run_tests(dir.path(), &["FAIL_ALONE"], &[]);
    assert_eq!(r.code, Some(101), "{}", r.stdout);
    assert_eq!(
        last_line(&r.stdout),
        "test command: FAILED: real_sglang::agrees_with_sglang_bench_serving (alone)"
    );
}

/// `scripts/test.sh --test real_sglang -- --nocapture kill_9`: cargo's arguments and the test
/// binaries' reach every run; the alone run keeps the options but not the name filter, which
/// would add its own tests to it.
#[test]
fn arguments_pass_through_and_filters_stay_out_of_the_alone_run() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_tests(
        dir.path(),
        &[],
        &[
            "--test",
            "real_sglang",
            "--",
            "--nocapture",
            "--test-threads",
            "1",
            "kill_9",
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.stdout);
    let [build, list, rest, real, alone] = five_calls(&r);
    assert_eq!(build, "test --no-run --test real_sglang");
    assert!(
        list.starts_with("test --test real_sglang -- --include-ignored --list")
            && list.ends_with("--nocapture --test-threads 1 kill_9"),
        "{list}"
    );
    assert!(
        real.starts_with("test --no-fail-fast --test real_sglang -- --ignored --skip ")
            && real.ends_with("--nocapture --test-threads 1 kill_9"),
        "{real}"
    );
    assert!(
        rest.starts_with("test --no-fail-fast --test real_sglang -- --skip ")
            && rest.ends_with("--nocapture --test-threads 1 kill_9"),
        "{rest}"
    );
    assert_eq!(
        alone,
        "test --no-fail-fast --test real_sglang -- --include-ignored --exact agrees_with_sglang_bench_serving --nocapture --test-threads 1"
    );
}

/// A renamed timing-sensitive test must not drop out of the alone run unseen: a run of every
/// test fails, naming the ALONE entry no binary lists. A run the arguments narrow (a target, a
/// filter) need not list every name, and goes on.
#[test]
fn a_name_the_alone_list_holds_that_no_test_has_fails_a_full_run() {
    let dir = tempfile::tempdir().unwrap();
    let alone = "agrees_with_sglang_bench_serving renamed_away";
    let r = run_tests_alone(dir.path(), &[], &[], alone);
    assert_eq!(r.code, Some(101), "{}", r.stdout);
    assert_eq!(
        last_line(&r.stdout),
        "test command: FAILED: scripts/lib/run-tests.sh's ALONE names no test: renamed_away (renamed or removed? update the list)"
    );
    // Nothing ran: only the build and the list.
    assert_eq!(r.calls.len(), 2, "{:?}", r.calls);
    let r = run_tests_alone(dir.path(), &[], &["--test", "real_sglang"], alone);
    assert_eq!(r.code, Some(0), "{}", r.stdout);
    let r = run_tests_alone(dir.path(), &[], &["--", "kill_9"], alone);
    assert_eq!(r.code, Some(0), "{}", r.stdout);
}

/// An ALONE entry of several names joined by commas is one group: its tests run in one alone
/// invocation (libtest runs them at once), skipped from the first step like any alone test, and
/// a name of the group that no test has still fails a full run.
#[test]
fn an_alone_group_runs_its_tests_in_one_invocation() {
    let dir = tempfile::tempdir().unwrap();
    let group = "agrees_with_sglang_bench_serving,kill_9_of_sgtune_takes_the_server_with_it";
    let r = run_tests_alone(dir.path(), &[], &[], group);
    assert_eq!(r.code, Some(0), "{}", r.stdout);
    let alone: Vec<&String> = r.calls.iter().filter(|c| c.contains("--exact")).collect();
    assert_eq!(
        alone.len(),
        1,
        "one invocation for the group: {:?}",
        r.calls
    );
    assert!(
        alone[0].ends_with(
            "-- --include-ignored --exact agrees_with_sglang_bench_serving kill_9_of_sgtune_takes_the_server_with_it"
        ),
        "{}",
        alone[0]
    );
    let real: Vec<&String> = r
        .calls
        .iter()
        .filter(|c| c.contains("--ignored --skip"))
        .collect();
    assert!(!real.is_empty(), "{:?}", r.calls);
    for c in real {
        assert!(
            c.contains("--skip agrees_with_sglang_bench_serving --skip kill_9_of_sgtune_takes_the_server_with_it"),
            "both skipped in the first step: {c}"
        );
    }
    assert!(
        last_line(&r.stdout).ends_with(
            "(2 of them alone afterwards: agrees_with_sglang_bench_serving, kill_9_of_sgtune_takes_the_server_with_it)"
        ),
        "{}",
        r.stdout
    );
    let r = run_tests_alone(
        dir.path(),
        &[],
        &[],
        "agrees_with_sglang_bench_serving,gone",
    );
    assert_eq!(r.code, Some(101), "{}", r.stdout);
    assert!(
        last_line(&r.stdout).contains("names no test: gone"),
        "{}",
        r.stdout
    );
}
