#!/usr/bin/env bash
# The project's test command (README, .ci/run): set up real SGLang on CPU and the peer servers
# (vLLM on CPU, llama.cpp's llama-server) the load generator is tested against, all idempotent
# and cached in ~/.cache/sgtune (the first time downloads ~14 GB and builds llama-server for
# ~10 minutes), then run every test, including the end-to-end tests against those real
# servers. Extra arguments go to `cargo test`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
env_file=$(scripts/setup-cpu-sglang.sh)
# shellcheck disable=SC1090
. "$env_file"
peers_file=$(scripts/setup-peers.sh)
# shellcheck disable=SC1090
. "$peers_file"
cargo test "$@"
