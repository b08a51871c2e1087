#!/usr/bin/env bash
# The project's test command (README, .ci/run): set up real SGLang on CPU, the peer servers
# (vLLM on CPU, llama.cpp's llama-server) the load generator is tested against, and Chromium for
# the report's browser test (scripts/setup-all.sh, in parallel where it can), all idempotent
# and cached in ~/.cache/sgtune (the first time downloads ~14 GB, builds llama-server for a
# few minutes and starts vLLM once), beside the tests' build, then run every test, including
# the end-to-end tests against those real servers. Those are #[ignore]d so that a bare
# `cargo test` cannot pass them without a server; here they run, with `--include-ignored`.
#
# The tests run through scripts/lib/run-tests.sh: every test binary even after one fails
# (`--no-fail-fast`), then the timing-sensitive comparisons alone on the machine, and a last
# line `test command: PASSED ...` or `test command: FAILED: <binary>::<test>, ...`.
#
# Arguments go to `cargo test`; those after a `--` go to the test binaries, after
# `--include-ignored`:
#   scripts/test.sh --test real_sglang -- --nocapture
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# The setup beside the Rust build, as .ci/run does: the setup is mostly downloads and one C++
# build (llama-server), the Rust build is ~4 minutes of both cores on a fresh clone, and one
# after the other they were 882 s + 252 s on a fresh 2-core machine. The build is exactly the
# test run's own first step (`cargo test --no-run` with the same cargo arguments, those before
# a `--`), so scripts/lib/run-tests.sh finds it done. Under .ci/run both are already done
# (its own overlap): the setup is cached (about a second) and so is the build.
# Python's bytecode cache: with PYTHONDONTWRITEBYTECODE set (some sandboxes and CI images set
# it), every server start compiles SGLang's, vLLM's, torch's and transformers' sources again,
# in each of the server's processes. Measured here: `import sglang.launch_server` took 18 s of
# CPU without .pyc files and 9 s with them, and an SGLang start imports in three processes.
# The venvs are our own cache (~/.cache/sgtune), so the first start writes the .pyc files of
# what it imports and every later start reads them. Unset before the setup, whose own first
# start of vLLM (scripts/setup-peers.sh) writes vLLM's.
unset PYTHONDONTWRITEBYTECODE
cargo_args=()
for a in "$@"; do
  [ "$a" = -- ] && break
  cargo_args+=("$a")
done
setup_out=$(mktemp)
trap 'rm -f "$setup_out" "$setup_out.s"' EXIT
# Its messages (stderr, each with its seconds) show as they come, beside cargo's; its stdout
# is the two environment files to source. Its seconds (since this script began) into a file.
{
  rc=0
  scripts/setup-all.sh >"$setup_out" || rc=$?
  echo "$SECONDS" >"$setup_out.s"
  exit "$rc"
} &
setup_pid=$!
build_ok=1
# Niced: on a fresh machine the setup is the longer of the two (its llama-server build and
# vLLM's first start want the CPU), so it gets the cores first and the build takes the rest.
nice -n 10 cargo test --no-run ${cargo_args[@]+"${cargo_args[@]}"} || build_ok=0
build_s=$SECONDS
setup_ok=1
# A failed build still waits for the setup: stopping it mid-way could leave an apt-get or an
# install half done, and what it did is cached for the next run.
wait "$setup_pid" || setup_ok=0
# For the times line beside the summary (scripts/lib/run-tests.sh): the setup's and the
# build's seconds, both from this script's start (they ran at once), and the seconds before
# the tests, so that its "in all" counts from this script's start.
export SGTUNE_SETUP_S SGTUNE_BUILD_S=$build_s SGTUNE_BEFORE_S=$SECONDS
SGTUNE_SETUP_S=$(cat "$setup_out.s" 2>/dev/null || echo "$SECONDS")
if [ "$build_ok" = 0 ] || [ "$setup_ok" = 0 ]; then
  what=
  [ "$build_ok" = 0 ] && what="the tests did not build (cargo's error above)"
  [ "$setup_ok" = 0 ] && what="${what:+$what; }the setup failed (its messages above)"
  echo "test command: FAILED: $what"
  exit 101
fi
env_file=$(tail -n 2 "$setup_out" | head -n 1)
peers_file=$(tail -n 1 "$setup_out")
# shellcheck disable=SC1090
. "$env_file"
# shellcheck disable=SC1090
. "$peers_file"
rm -f "$setup_out" "$setup_out.s" # exec below ends this shell without its EXIT trap
exec scripts/lib/run-tests.sh "$@"
