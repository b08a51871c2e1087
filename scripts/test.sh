#!/usr/bin/env bash
# The project's test command (README, .ci/run): set up real SGLang on CPU (idempotent; the
# first time downloads ~10 GB into ~/.cache/sgtune), then run every test, including the
# end-to-end tests against that real server. Extra arguments go to `cargo test`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
env_file=$(scripts/setup-cpu-sglang.sh)
# shellcheck disable=SC1090
. "$env_file"
cargo test "$@"
