#!/usr/bin/env bash
# Does --parallel 2 halve a sweep's wall time? The same 6-configuration spec, serial and with
# --parallel 2 (and --gpus with fake ids, 2 per run over 4 ids), against the fake SGLang whose
# start-up (FAKE_STARTUP_S) and decode step (FAKE_TOKEN_S) are fixed. Prints each wall time
# and the speed-up. Not a test: it takes about a minute and is timing-dependent.
#
# Knobs: FAKE_STARTUP_S (3), FAKE_TOKEN_S (0.01), CONFIGS (6), SGTUNE_BIN (target/debug/sgtune).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
FAKE_STARTUP_S=${FAKE_STARTUP_S:-3}
FAKE_TOKEN_S=${FAKE_TOKEN_S:-0.01}
CONFIGS=${CONFIGS:-6}
SGTUNE_BIN=${SGTUNE_BIN:-target/debug/sgtune}
[ -x "$SGTUNE_BIN" ] || cargo build --quiet --bin sgtune
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
{
  cat <<YAML
name: bench-parallel
server:
  command: [python3, "$PWD/tests/fake_sglang/fake_sglang.py"]
  model_path: /nonexistent-model
  env:
    FAKE_SGLANG_STARTUP_S: "$FAKE_STARTUP_S"
    FAKE_SGLANG_TOKEN_S: "$FAKE_TOKEN_S"
  args:
    served_model_name: fake
  ready_timeout_s: 60
  stop_timeout_s: 5
configs:
YAML
  for i in $(seq 1 "$CONFIGS"); do echo "  - {name: c$i}"; done
  cat <<YAML
workload:
  vocab_size: 100
  input_tokens: 4
  output_tokens: 50
  warmup_requests: 0
  concurrency: 4
  requests: 16
YAML
} >"$work/spec.yaml"

timed() { # label, flags...
  local label=$1; shift
  local t0 t1
  t0=$(date +%s.%N)
  "$SGTUNE_BIN" run "$work/spec.yaml" --results-dir "$work/$label" "$@" >/dev/null 2>"$work/$label.err" \
    || { echo "$label failed:"; cat "$work/$label.err"; exit 1; }
  t1=$(date +%s.%N)
  rows=$(($(wc -l <"$work/$label"/*/results.csv) - 1))
  awk -v a="$t0" -v b="$t1" -v l="$label" -v r="$rows" 'BEGIN{printf "%-12s %6.1f s  (%d rows)\n", l, b-a, r}'
  echo "$t1 - $t0" | bc -l >"$work/$label.s"
}
echo "$CONFIGS configurations, start-up ${FAKE_STARTUP_S}s, decode step ${FAKE_TOKEN_S}s"
timed serial
timed parallel2 --parallel 2
timed gpus4x2 --gpus 0,1,2,3 --gpus-per-run 2
awk -v s="$(cat "$work/serial.s")" -v p="$(cat "$work/parallel2.s")" -v g="$(cat "$work/gpus4x2.s")" \
  'BEGIN{printf "speed-up: --parallel 2 %.2fx, --gpus 0,1,2,3 --gpus-per-run 2 %.2fx\n", s/p, s/g}'
