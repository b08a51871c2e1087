#!/usr/bin/env bash
# Everything the tests need, set up in parallel where it can be: SGLang on CPU (downloads, then
# the tiny and the trained model) while llama-server builds (the longest step, started first),
# vLLM downloads and Debian's Chromium installs; then vLLM's first start on the tiny model
# (while llama-server still builds), and the GGUF conversion, which needs both SGLang's python
# and the tiny model. Each step is idempotent and cached (~/.cache/sgtune), so a second run takes about a
# second. Every message carries the seconds since this script began.
#
# Prints, as its last two lines, the environment files to source (SGLang, then the peers).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# One clock for the three scripts' messages (see scripts/setup-cpu-sglang.sh).
export SGTUNE_SETUP_T0=${SGTUNE_SETUP_T0:-$(date +%s)}
say() { printf '[setup-all +%ss] %s\n' "$(($(date +%s) - SGTUNE_SETUP_T0))" "$*" >&2; }

scripts/setup-cpu-sglang.sh --uv-only >/dev/null
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# The report's browser test (tests/report_browser.rs) loads report.html in headless Chromium.
# Mostly a download, so it goes beside the others from the start.
install_chromium() {
  command -v chromium >/dev/null 2>&1 && return 0
  say "installing Debian's chromium for the report's browser test"
  local as_root=()
  [ "$(id -u)" -eq 0 ] || as_root=(sudo)
  "${as_root[@]}" apt-get update -qq
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  say "chromium installed"
}
# The longest step first: llama.cpp's build (CPU-bound, minutes), then vLLM's install and
# Chromium (downloads), while SGLang installs here.
scripts/setup-peers.sh --llama >"$logs/llama" 2>&1 &
llama_pid=$!
scripts/setup-peers.sh --vllm >"$logs/vllm" 2>&1 &
vllm_pid=$!
install_chromium >"$logs/chromium" 2>&1 &
chromium_pid=$!
env_file=$(scripts/setup-cpu-sglang.sh)
failed=
wait "$vllm_pid" || failed="vLLM's install"
cat "$logs/vllm" >&2
# vLLM's first start (it needs the tiny model, made above) while llama-server still builds:
# scripts/setup-peers.sh's full run below finds it done.
if [ -z "$failed" ]; then
  scripts/setup-peers.sh --vllm-first-start || failed="vLLM's first start"
fi
wait "$llama_pid" || failed="${failed:+$failed and }llama-server's build"
cat "$logs/llama" >&2
wait "$chromium_pid" || failed="${failed:+$failed and }chromium's install"
cat "$logs/chromium" >&2
if [ -n "$failed" ]; then
  say "$failed failed (above)"
  exit 1
fi
peers_file=$(scripts/setup-peers.sh)
say "done"
echo "$env_file"
echo "$peers_file"
