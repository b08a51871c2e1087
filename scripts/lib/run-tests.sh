#!/usr/bin/env bash
# Run the test suite the way scripts/test.sh promises (after its setup): every test binary
# even after one fails, the timing-sensitive comparisons alone on the machine afterwards, and
# a last line that names what failed.
#
#   1. Everything but the timing-sensitive tests, every binary whatever an earlier one did, in
#      `cargo test --no-fail-fast ... --skip <each timing-sensitive test>` runs at once:
#      `--ignored` (the tests against real servers: SGLang, vLLM, llama.cpp, Slurm) beside the
#      rest (fake servers and pure logic; shown when they end). The rest mostly waits on its
#      fake servers' sleeps (about 550 s of wall time for 150 s of CPU), so beside the real
#      servers it costs them little and hides its own wall time; together the runs are exactly
#      `--include-ignored`. The real servers' run is itself two runs at once when the
#      arguments select no target: tests/real_sglang.rs and tests/real_tune.rs (shown as they
#      run) beside every other binary that has real-server tests (shown when it ends). A real server's test keeps
#      about 70% of the two cores busy on its own (measured: 64-84% per test; the rest waits
#      on server starts, load windows and sleeps), so two of them at once finish sooner than
#      one after the other.
#   2. Each timing-sensitive test the arguments select, in a cargo invocation of its own, with
#      `--exact`, so no other test's server shares the CPU with it. A comparison of two
#      clients' timings (sgtune against sglang.bench_serving), of configurations' latencies
#      against an SLO, or of an estimate or a deadline against the clock measures the machine
#      as much as the code when something else runs.
#   3. One summary line: `test command: PASSED ...` or `test command: FAILED: bin::test, ...`.
# The exit status is 0 only when both runs passed.
#
# Arguments as scripts/test.sh's: those before a `--` go to `cargo test`, those after it to
# the test binaries (after `--include-ignored`).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

# The timing-sensitive tests, run alone in step 2 (test names are unique across binaries). An
# entry of several names joined by commas (tests of one binary) runs as one group: libtest runs
# them at once, and nothing else beside them.
ALONE=(
  agrees_with_sglang_bench_serving                                   # tests/real_sglang.rs
  the_tuning_sweep_finds_more_load_within_the_slo_for_a_larger_kv_pool # tests/real_sglang.rs
  a_12_launch_plan_is_estimated_within_20_percent_before_and_after_the_first_launch # tests/estimate.rs
  # It sets its TPOT bound from a first launch's measurement and compares the tune's launches
  # with it: beside other servers the two ran at 3x each other's speed.
  a_tpot_bound_only_a_smaller_batch_meets_is_traded_for_within_five_launches # tests/real_tune.rs
  # Two clients' TTFT p50 within 10% of each other, on the same server (issue 50).
  sessions_agree_with_bench_serving_with_the_radix_cache             # tests/real_sglang.rs
  # A TTFT bound set from the start it measured, met (or not) at later launches.
  the_guided_tune_turns_a_prefix_lever_up_from_the_evidence_to_an_eligible_launch # tests/real_hicache.rs
  # The three deadline tests (tests/deadline.rs), together: fake servers whose speed is set by
  # construction, mostly sleeping, so they disturb each other's clocks far less than a real
  # server does; one after the other they took 105 s.
  a_deadline_stops_in_time_and_resume_reaches_the_unbudgeted_decision,a_launch_running_at_the_cutoff_is_stopped_before_the_deadline,a_preflight_cut_by_the_deadline_is_said_and_resume_finishes_it
  # A tune's path comes from each launch's evidence (its verdict; on a busy machine the load
  # generator's own scheduling lag can make a launch client-bound), which a busy machine
  # changes: these two compare a Slurm tune's path with the same tune's on local slots, and
  # one failed beside real_sglang's servers (that run confirmed its start at step 2 where the
  # local one had moved on).
  a_tune_runs_in_waves_on_slurm_and_resumes_after_its_driver_is_killed # tests/slurm_executor.rs
  cancelling_a_tunes_wave_stops_its_driver_and_resume_runs_the_wave_again # tests/slurm_executor.rs
)

# tests/test_command.rs runs this script against a fake cargo with a world of its own: it
# names that world's timing-sensitive tests here (space-separated) in place of the list above.
if [ -n "${SGTUNE_ALONE_TESTS:-}" ]; then
  read -ra ALONE <<<"$SGTUNE_ALONE_TESTS"
fi

cargo_args=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  cargo_args+=("$1")
  shift
done
if [ $# -gt 0 ]; then shift; fi
test_args=("$@")

# The arguments of step 2 without test-name filters (words that are no option's value): the
# test is selected by --exact NAME there, and another filter would add its own tests to it.
# Options that take a value as the next word: cargo test's, then libtest's.
cargo_valued=" -p --package --exclude --bin --example --test --bench -F --features --target --target-dir --profile -j --jobs --manifest-path --message-format --color --config -Z --lockfile-path "
test_valued=" --skip --test-threads --logfile --format --color -Z --shuffle-seed "
strip_filters() { # $1: the valued options; then the words; prints one word per line
  local valued=$1 expect_value=0 w
  shift
  for w in "$@"; do
    if [ "$expect_value" = 1 ]; then
      printf '%s\n' "$w"
      expect_value=0
    elif [[ "$w" == -* ]]; then
      printf '%s\n' "$w"
      [[ "$valued" == *" $w "* ]] && expect_value=1
    fi
  done
}
mapfile -t cargo_opts < <(strip_filters "$cargo_valued" ${cargo_args[@]+"${cargo_args[@]}"})
mapfile -t test_opts < <(strip_filters "$test_valued" ${test_args[@]+"${test_args[@]}"})

# What scripts/test.sh measured before handing over (its setup, and the build beside it), read
# once and unset, so that the test runs below (tests/test_command.rs runs this script) do not
# see them.
before_setup_s=${SGTUNE_SETUP_S:-}
before_build_s=${SGTUNE_BUILD_S:-}
before_s=${SGTUNE_BEFORE_S:-0}
unset SGTUNE_SETUP_S SGTUNE_BUILD_S SGTUNE_BEFORE_S

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# Build first, where the progress and any error show.
build_started=$SECONDS
if ! cargo test --no-run ${cargo_args[@]+"${cargo_args[@]}"}; then
  echo "test command: FAILED: the tests did not build (cargo's error above)"
  exit 101
fi
build_s=$((SECONDS - build_started + ${before_build_s:-0}))
# Which timing-sensitive tests the arguments select.
list_args=()
for a in ${test_args[@]+"${test_args[@]}"}; do [ "$a" = --list ] || list_args+=("$a"); done
if ! cargo test ${cargo_args[@]+"${cargo_args[@]}"} -- --include-ignored --list \
  ${list_args[@]+"${list_args[@]}"} >"$logs/list" 2>"$logs/list.err"; then
  cat "$logs/list.err" >&2
  echo "test command: FAILED: the tests could not be listed (cargo's error above)"
  exit 101
fi
# Every name ALONE lists; the groups the arguments select (each keeps its selected names).
names=()
selected=()
for entry in "${ALONE[@]}"; do
  IFS=, read -ra group <<<"$entry"
  names+=("${group[@]}")
  picked=()
  for t in "${group[@]}"; do
    grep -qx "$t: test" "$logs/list" && picked+=("$t")
  done
  if [ ${#picked[@]} -gt 0 ]; then
    selected+=("$(IFS=,; echo "${picked[*]}")")
  fi
done

# The real servers' run, split in two when the arguments select no target (a caller that names
# its targets gets one run of exactly those): tests/real_sglang.rs, and the other binaries that
# have an ignored test, each as the target selection cargo takes (`--test NAME`, `--lib`, ...).
real_sglang=()
real_others=()
selects_targets=0
for a in ${cargo_args[@]+"${cargo_args[@]}"}; do
  case "$a" in
    --lib | --bin | --bin=* | --bins | --test | --test=* | --tests | --bench | --bench=* | --benches | \
      --example | --example=* | --examples | --doc | --all-targets) selects_targets=1 ;;
  esac
done
# A run of every test must find every name ALONE lists: a renamed test would otherwise drop out
# of step 2 unseen and run beside the real servers, whose CPU moves the timings it compares.
if [ "$selects_targets" = 0 ] && [ ${#cargo_opts[@]} -eq ${#cargo_args[@]} ] &&
  [ ${#test_opts[@]} -eq ${#test_args[@]} ]; then
  missing=()
  for t in "${names[@]}"; do
    grep -qx "$t: test" "$logs/list" || missing+=("$t")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "test command: FAILED: scripts/lib/run-tests.sh's ALONE names no test: ${missing[*]} (renamed or removed? update the list)"
    exit 101
  fi
fi
if [ "$selects_targets" = 0 ]; then
  if ! cargo test ${cargo_args[@]+"${cargo_args[@]}"} -- --ignored --list \
    ${list_args[@]+"${list_args[@]}"} >"$logs/ignored" 2>&1; then
    cat "$logs/ignored" >&2
    echo "test command: FAILED: the tests could not be listed (cargo's error above)"
    exit 101
  fi
  mapfile -t with_ignored < <(awk '
    /^ +Running unittests src\/lib\.rs/ { t = "--lib"; next }
    /^ +Running unittests / { t = "--bins"; next }
    /^ +Running tests\// { t = $2; sub(/^tests\//, "", t); sub(/\.rs$/, "", t); t = "--test " t; next }
    /^ +Running benches\// { t = $2; sub(/^benches\//, "", t); sub(/\.rs$/, "", t); t = "--bench " t; next }
    /^ +Doc-tests / { t = "--doc"; next }
    /: test$/ && t != "" && !(t in seen) { seen[t] = 1; print t }
  ' "$logs/ignored")
  for t in ${with_ignored[@]+"${with_ignored[@]}"}; do
    # The first stream: real_sglang's tests, and real_tune's beside them in the same run (one
    # server at a time within each binary, cargo runs the binaries one after the other). At
    # the last full run real_sglang's step 1 took 1,011 s while the other stream (real_hicache,
    # real_tune, real_vllm, real_quality, live_peers, Slurm's) took about 1,500: real_tune's
    # step-1 test (156 s) goes to the shorter one.
    if [ "$t" = "--test real_sglang" ] || [ "$t" = "--test real_tune" ]; then
      read -ra words <<<"$t"
      real_sglang+=("${words[@]}")
    else
      read -ra words <<<"$t"
      real_others+=("${words[@]}")
    fi
  done
fi

skips=()
for t in "${names[@]}"; do skips+=(--skip "$t"); done
# The rest in the background, into a file shown when the real servers' run ends (two runs
# printing at once would interleave their lines); the real servers' runs at the lowest
# priority (nice 19, inherited by sgtune and the servers it starts): many of the rest's tests
# decide from the speeds their fake servers are measured at, so whenever they want the CPU
# they get it first, and measure as on a quiet machine. At nice 10, beside two real servers'
# runs, they did not: a fresh CI run saw a pruning test's fake client-bound configuration
# measure 855 and 736 tok/s and prune nothing (quality_guard.rs), where nice 10 had sufficed
# beside one. The real servers' tests assert behaviour (verdicts, rows, files), which a
# slower server does not change; the ones that compare timings run alone in step 2, at the
# normal priority.
cargo test --no-fail-fast ${cargo_args[@]+"${cargo_args[@]}"} -- "${skips[@]}" \
  ${test_args[@]+"${test_args[@]}"} >"$logs/1b" 2>&1 &
rest_pid=$!
real() { # the real servers' tests of the targets in "$@" (none: those the arguments select)
  nice -n 19 cargo test --no-fail-fast ${cargo_args[@]+"${cargo_args[@]}"} "$@" -- --ignored \
    "${skips[@]}" ${test_args[@]+"${test_args[@]}"}
}
others_pid=
if [ "$selects_targets" = 1 ]; then
  real 2>&1 | tee "$logs/1"
  rc=${PIPESTATUS[0]}
else
  if [ ${#real_others[@]} -gt 0 ]; then
    real "${real_others[@]}" >"$logs/1c" 2>&1 &
    others_pid=$!
  fi
  rc=0
  if [ ${#real_sglang[@]} -gt 0 ]; then
    real "${real_sglang[@]}" 2>&1 | tee "$logs/1"
    rc=${PIPESTATUS[0]}
  fi
fi
touch "$logs/1" "$logs/1c"
if [ -n "$others_pid" ]; then
  wait "$others_pid"
  r=$?
  [ "$rc" = 0 ] && rc=$r
  echo "test command: the other real servers' tests (run beside the ones above):" >&2
  cat "$logs/1c"
fi
wait "$rest_pid"
r=$?
[ "$rc" = 0 ] && rc=$r
echo "test command: the tests without a real server (run beside the ones above):" >&2
cat "$logs/1b"

# Step 2: nothing of the suite may still run. A test that panicked may have left its sweep or
# server behind (the tests tag theirs with SGTUNE_TEST_TAG): wait for them, then say so.
tagged() {
  local e
  for e in /proc/[0-9]*/environ; do
    grep -qsz '^SGTUNE_TEST_TAG=' "$e" && echo "${e//[^0-9]/}"
  done
}
if [ ${#selected[@]} -gt 0 ]; then
  for _ in $(seq 1 "${SGTUNE_ALONE_WAIT_S:-60}"); do
    [ -z "$(tagged)" ] && break
    sleep 1
  done
  left=$(tagged | tr '\n' ' ')
  if [ -n "$left" ]; then
    echo "test command: warning: test processes still running beside the timing-sensitive tests (pids $left)" >&2
  fi
fi
selected_names=()
for entry in ${selected[@]+"${selected[@]}"}; do
  IFS=, read -ra group <<<"$entry"
  selected_names+=("${group[@]}")
  echo "test command: running ${group[*]} alone" >&2
  cargo test --no-fail-fast ${cargo_opts[@]+"${cargo_opts[@]}"} -- --include-ignored --exact "${group[@]}" \
    ${test_opts[@]+"${test_opts[@]}"} 2>&1 | tee -a "$logs/2"
  r=${PIPESTATUS[0]}
  [ "$rc" = 0 ] && rc=$r
done
touch "$logs/2"

# The summary: each failed test as binary::name, each failed target that named no failed test.
awk -v alone="${selected_names[*]+${selected_names[*]}}" '
  FNR == 1 { step = (FILENAME ~ /\/2$/) ? 2 : 1 }
  /^ +Running / {
    bin = $2
    if (bin == "unittests") bin = $3
    sub(/^.*\//, "", bin); sub(/\.rs$/, "", bin)
    if ($2 == "unittests") bin = (bin == "lib") ? "lib" : "bin"
  }
  /^ +Doc-tests / { bin = "doc-tests" }
  /^test .* \.\.\. FAILED$/ {
    name = $2
    failed[++nf] = bin "::" name (step == 2 ? " (alone)" : "")
    failed_bin[bin] = 1
  }
  /^test result: / {
    for (i = 1; i <= NF; i++) if ($(i + 1) ~ /^passed/) passed += $i
  }
  /^error: (test|doctest) failed, to rerun pass `/ {
    t = $0; sub(/^.*to rerun pass `/, "", t); sub(/`.*$/, "", t)
    b = t; sub(/^--test /, "", b)
    if (b == "--lib") b = "lib"; if (b == "--doc") b = "doc-tests"; if (b ~ /^--bin /) b = "bin"
    if (!(b in failed_bin) && !(t in seen)) { crashed[++nc] = t; seen[t] = 1 }
  }
  END {
    if (nf == 0 && nc == 0) {
      n = split(alone, a, " ")
      printf "%d passed", passed
      gsub(/ /, ", ", alone)
      if (n > 0) printf " (%d of them alone afterwards: %s)", n, alone
      printf "\n"
      exit 0
    }
    s = ""
    for (i = 1; i <= nf; i++) s = s (s == "" ? "" : ", ") failed[i]
    for (i = 1; i <= nc; i++) s = s (s == "" ? "" : ", ") crashed[i] " (no test named: crashed or killed?)"
    print s
    exit 1
  }
' "$logs/1" "$logs/1c" "$logs/1b" "$logs/2" >"$logs/summary"
summary_rc=$?
summary=$(cat "$logs/summary")

# Where the time went, beside the summary, so that the next slowdown is seen where it happens:
# the setup (scripts/test.sh passes its seconds in SGTUNE_SETUP_S), the build (its seconds
# beside the setup in SGTUNE_BUILD_S, plus this script's check that it is done), then each
# test binary by libtest's own `finished in` (both steps added up), slowest first. From
# scripts/test.sh, the setup and the build ran at once, both from its start, and "in all"
# counts from there (its seconds before handing over, in SGTUNE_BEFORE_S, and this script's).
awk -v setup="$before_setup_s" -v build="$build_s" -v together="$before_build_s" \
  -v total="$((SECONDS + before_s))" '
  /^ +Running / {
    bin = $2
    if (bin == "unittests") bin = $3
    sub(/^.*\//, "", bin); sub(/\.rs$/, "", bin)
    if ($2 == "unittests") bin = (bin == "lib") ? "lib" : "bin"
  }
  /^ +Doc-tests / { bin = "doc-tests" }
  /^test result: .*finished in [0-9.]+s/ {
    t = $0; sub(/^.*finished in /, "", t); sub(/s.*$/, "", t)
    if (!(bin in secs)) order[++n] = bin
    secs[bin] += t
  }
  END {
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
      if (secs[order[j]] > secs[order[i]]) { x = order[i]; order[i] = order[j]; order[j] = x }
    s = ""
    if (setup != "") s = "setup " setup " s, "
    s = s "build " build " s"
    if (together != "") s = s " (at once, both from the start)"
    for (i = 1; i <= n; i++) s = s ", " order[i] " " int(secs[order[i]] + 0.5) " s"
    since = (setup != "") ? "scripts/test.sh started" : "the tests started building"
    printf "test command: times: %s; in all %d s since %s\n", s, total, since
  }
' "$logs/1" "$logs/1c" "$logs/1b" "$logs/2"

if [ "$rc" = 0 ] && [ "$summary_rc" = 0 ]; then
  echo "test command: PASSED: $summary"
  exit 0
fi
if [ "$summary_rc" = 0 ]; then # cargo failed but no test or target said so
  summary="cargo test exited $rc without naming a failed test (see above)"
fi
echo "test command: FAILED: $summary"
[ "$rc" = 0 ] && rc=1
exit "$rc"
