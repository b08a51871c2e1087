#!/usr/bin/env bash
# An experiment, not a test: does the memory pre-flight find a real out-of-memory threshold on
# real CPU SGLang? SGLang on CPU sizes its KV pool from the host's available memory times
# mem_fraction_static (when max_total_tokens is not set), and does not know about cgroups. In
# a memory-limited cgroup (v1, writable as root here) a too-high fraction is then killed by
# the kernel's OOM killer. Runs `sgtune run` on a pre-flight-only spec inside such a cgroup and
# prints the attempts. Needs root and scripts/setup-cpu-sglang.sh; takes 5-15 minutes.
#
#   scripts/experiments/cgroup-preflight.sh [LIMIT_MB]   (default 3072)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
LIMIT_MB=${1:-3072}
CG=/sys/fs/cgroup/memory/sgtune-preflight-$$
env_file=$(scripts/setup-cpu-sglang.sh 2>/dev/null)
# shellcheck disable=SC1090
. "$env_file"
BIN=${SGTUNE_BIN:-target/release/sgtune}
[ -x "$BIN" ] || cargo build --release --quiet
mkdir "$CG"
cleanup() {
  # Processes still in the group (none, if sgtune stopped its servers) are killed first.
  for p in $(cat "$CG/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
  rmdir "$CG" 2>/dev/null || true
}
trap cleanup EXIT
echo $((LIMIT_MB * 1024 * 1024)) > "$CG/memory.limit_in_bytes"
echo 0 > "$CG/memory.swappiness" 2>/dev/null || true
work=$(mktemp -d)
cat > "$work/in-cgroup.sh" <<SH
#!/bin/sh
echo \$\$ > "$CG/cgroup.procs"
exec "\$@"
SH
chmod +x "$work/in-cgroup.sh"
cat > "$work/spec.yaml" <<YAML
name: cgroup-preflight
server:
  command: ["$work/in-cgroup.sh", "$SGTUNE_PYTHON", -m, sglang.launch_server]
  model_path: $SGTUNE_MODEL
  env:
    PYTHONPATH: $SGTUNE_KERNEL_STANDIN
    SGLANG_USE_CPU_ENGINE: "1"
    HF_HUB_OFFLINE: "1"
  args:
    served_model_name: tiny
    device: cpu
    attention_backend: torch_native
    disable_overlap_schedule: true
    sleep_on_idle: true
    dtype: bfloat16
  ready_timeout_s: 400
  stop_timeout_s: 30
sweep:
  mem_fraction_static: [preflight]
workload:
  endpoint: completions
  concurrency: 16
  requests: 16
  input_tokens: 1024
  output_tokens: 256
search:
  preflight:
    mem_fraction_static: {from: 0.02, to: 0.18, resolution: 0.04}
    burst_s: 20
YAML
echo "cgroup $CG: limit $LIMIT_MB MB; host MemAvailable $(awk '/MemAvailable/ {print int($2/1024)}' /proc/meminfo) MB"
"$BIN" run "$work/spec.yaml" --results-dir "$work/results" || true
dir=$(ls -d "$work"/results/*/)
echo "--- attempts (results.csv)"
python3 - "$dir/results.csv" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(r["run_name"], r["phase"], r["param_mem_fraction_static"], r["status"], r["probe"],
          r["failure_kind"], (r["failure_message"] or "")[:160], r["max_total_num_tokens"])
PY
echo "--- preflight.json"
cat "$dir/preflight.json" 2>/dev/null || true
echo "--- memory.failcnt $(cat "$CG/memory.failcnt"), max usage $(( $(cat "$CG/memory.max_usage_in_bytes") / 1024 / 1024 )) MB"
echo "results kept in $dir"
