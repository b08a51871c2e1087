#!/usr/bin/env bash
# The project's test command (README, .ci/run): set up real SGLang on CPU, the peer servers
# (vLLM on CPU, llama.cpp's llama-server) the load generator is tested against, and Chromium for
# the report's browser test (scripts/setup-all.sh, in parallel where it can), all idempotent
# and cached in ~/.cache/sgtune (the first time downloads ~14 GB and builds llama-server for
# ~6 minutes), then run every test, including the end-to-end tests against those real
# servers. Those are #[ignore]d so that a bare `cargo test` cannot pass them without a server;
# here they run, with `--include-ignored`.
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
setup_started=$SECONDS
files=$(scripts/setup-all.sh)
# The setup's seconds, for the times line beside the summary (scripts/lib/run-tests.sh).
export SGTUNE_SETUP_S=$((SECONDS - setup_started))
env_file=$(echo "$files" | tail -n 2 | head -n 1)
peers_file=$(echo "$files" | tail -n 1)
# shellcheck disable=SC1090
. "$env_file"
# shellcheck disable=SC1090
. "$peers_file"
# Python's bytecode cache: with PYTHONDONTWRITEBYTECODE set (some sandboxes and CI images set
# it), every server start compiles SGLang's, vLLM's, torch's and transformers' sources again,
# in each of the server's processes. Measured here: `import sglang.launch_server` took 18 s of
# CPU without .pyc files and 9 s with them, and an SGLang start imports in three processes.
# The venvs are our own cache (~/.cache/sgtune), so the first start writes the .pyc files of
# what it imports and every later start reads them.
unset PYTHONDONTWRITEBYTECODE
exec scripts/lib/run-tests.sh "$@"
