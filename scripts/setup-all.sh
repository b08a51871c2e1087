#!/usr/bin/env bash
# Everything the tests need, set up in parallel where it can be: SGLang on CPU (downloads,
# ~26 minutes the first time) while vLLM downloads and llama-server builds (~14 minutes), then
# the model conversions that need both, and Chromium for the report's browser test. Each step
# is idempotent and cached (~/.cache/sgtune), so a second run takes about a second.
#
# Prints, as its last two lines, the environment files to source (SGLang, then the peers).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
say() { printf '[setup-all] %s\n' "$*" >&2; }

scripts/setup-cpu-sglang.sh --uv-only >/dev/null
log=$(mktemp)
scripts/setup-peers.sh --install-only >"$log" 2>&1 &
peers_pid=$!
env_file=$(scripts/setup-cpu-sglang.sh)
if ! wait "$peers_pid"; then
  cat "$log" >&2
  rm -f "$log"
  say "the peers' install failed (above)"
  exit 1
fi
cat "$log" >&2
rm -f "$log"
peers_file=$(scripts/setup-peers.sh)

# The report's browser test (tests/report_browser.rs) loads report.html in headless Chromium.
if ! command -v chromium >/dev/null 2>&1; then
  say "installing Debian's chromium for the report's browser test"
  as_root=()
  [ "$(id -u)" -eq 0 ] || as_root=(sudo)
  "${as_root[@]}" apt-get update -qq
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
echo "$env_file"
echo "$peers_file"
