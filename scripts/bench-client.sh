#!/usr/bin/env bash
# How accurately, and how cheaply, does a client measure? Against examples/timed_server.rs
# (first token exactly TTFT_MS after the request arrives, then one every ITL_MS), run sgtune
# load and sglang.bench_serving at several concurrencies and print each client's mean TTFT and
# ITL against the truth. Then capacity: the server streams as fast as it can and each client,
# pinned to one core, reports the output tokens/s it ingested.
#
# Knobs: CONCURRENCIES ("1 100 1000"), TTFT_MS (50), ITL_MS (10), TOKENS (64),
#        CAP_TOKENS (2000), CAP_CONCURRENCY (32), CAP_REQUESTS (200).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
CONCURRENCIES=${CONCURRENCIES:-"1 100 1000"}
TTFT_MS=${TTFT_MS:-50}
ITL_MS=${ITL_MS:-10}
TOKENS=${TOKENS:-64}
CAP_TOKENS=${CAP_TOKENS:-2000}
CAP_CONCURRENCY=${CAP_CONCURRENCY:-32}
CAP_REQUESTS=${CAP_REQUESTS:-200}
ulimit -n 65536 2>/dev/null || ulimit -n 4096 || true

env_file=$(scripts/setup-cpu-sglang.sh)
# shellcheck disable=SC1090
. "$env_file"
cargo build --release --quiet --bin sgtune --example timed_server
release=${CARGO_TARGET_DIR:-target}/release
SGTUNE_BIN=$release/sgtune
# shellcheck source=scripts/lib/bench-common.sh
. scripts/lib/bench-common.sh
SERVER=$release/examples/timed_server
work=$(mktemp -d)
server_pid=""
stop_server() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  server_pid=""
}
trap 'stop_server; rm -rf "$work"' EXIT
start_server() { # ttft itl tokens
  port=$(free_port)
  taskset -c 1 "$SERVER" "$port" "$1" "$2" "$3" 2>/dev/null &
  server_pid=$!
  for _ in $(seq 1 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
}
bench() { # concurrency requests tokens out-file
  HF_HUB_OFFLINE=1 taskset -c 0 "$SGTUNE_PYTHON" -m sglang.bench_serving --backend sglang-oai \
    --base-url "http://127.0.0.1:$port" --model timed --tokenizer "$SGTUNE_MODEL" \
    --dataset-name random-ids --random-input-len 8 --random-output-len "$3" --random-range-ratio 1.0 \
    --num-prompts "$2" --max-concurrency "$1" --warmup-requests 1 --output-file "$4" > "$4.log" 2>&1
}
sg() { # concurrency requests tokens out-dir
  # The machine's CPU pressure (PSI, share of the last 10 s some task waited for a CPU): at
  # 1,000 streams the TTFT error follows it (docs/benchmarks.md), so each row shows it.
  sed -n 's/^some avg10=\([0-9.]*\).*/\1/p' /proc/pressure/cpu > "$4.pressure" 2>/dev/null || true
  taskset -c 0 "$SGTUNE" load --url "http://127.0.0.1:$port" -w model=timed -w vocab_size=8192 \
    -w concurrency="$1" -w requests="$2" -w warmup_requests="$1" -w input_tokens=8 \
    -w output_tokens="$3" --output "$4" > "$4.log" 2>&1
}

echo "[bench] accuracy: TTFT truth $TTFT_MS ms, ITL truth $ITL_MS ms, $TOKENS tokens" >&2
for c in $CONCURRENCIES; do
  n=$(( c * 3 > 100 ? c * 3 : 100 ))
  start_server "$TTFT_MS" "$ITL_MS" "$TOKENS"
  echo "[bench] concurrency $c, $n requests: sgtune" >&2
  sg "$c" "$n" "$TOKENS" "$work/sg-$c"
  echo "[bench] concurrency $c: bench_serving" >&2
  bench "$c" "$n" "$TOKENS" "$work/bs-$c.jsonl" || echo "[bench] bench_serving failed at $c (see its log)" >&2
  stop_server
done
echo "[bench] capacity: $CAP_TOKENS tokens per request as fast as possible, concurrency $CAP_CONCURRENCY" >&2
start_server 0 0 "$CAP_TOKENS"
sg "$CAP_CONCURRENCY" "$CAP_REQUESTS" "$CAP_TOKENS" "$work/sg-cap"
bench "$CAP_CONCURRENCY" "$CAP_REQUESTS" "$CAP_TOKENS" "$work/bs-cap.jsonl" || echo "[bench] bench_serving capacity run failed" >&2
stop_server

python3 - "$work" "$TTFT_MS" "$ITL_MS" $CONCURRENCIES <<'PY'
import json, sys, os
work, ttft, itl, cs = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4:]
def sg(name):
    return json.load(open(f"{work}/{name}/summary.json"))["load_points"][0]["client"]
def bs(name):
    p = f"{work}/{name}.jsonl"
    if not os.path.exists(p): return None
    lines = [json.loads(l) for l in open(p) if l.strip()]
    return lines[-1] if lines else None
def headers_ms(name):
    # Send to the response head, which the server writes as soon as it has read the request:
    # time spent before the server even held the request (client send + server scheduling).
    import csv
    rows = [r for r in csv.DictReader(open(f"{work}/{name}/requests.csv"))
            if r.get("phase") == "measured" and r.get("headers_ms")]
    return sum(float(r["headers_ms"]) for r in rows) / len(rows) if rows else float("nan")
def pressure(name):
    try: return open(f"{work}/{name}.pressure").read().strip() or "-"
    except OSError: return "-"
print(f"{'concurrency':>11} | {'sgtune TTFT err ms':>18} {'ITL err ms':>10} {'headers ms':>10} {'read lag p99':>12} {'CPU PSI %':>9} | {'bench_serving TTFT err ms':>25} {'ITL err ms':>10}")
for c in cs:
    s, b = sg(f"sg-{c}"), bs(f"bs-{c}")
    st, si = s["ttft_ms"]["mean"] - ttft, s["itl_ms"]["mean"] - itl
    lag = (s.get("read_lag_ms") or {}).get("p99")
    lag = f"{lag:12.2f}" if lag is not None else f"{'-':>12}"
    bt = f"{b['mean_ttft_ms'] - ttft:25.2f}" if b else f"{'failed':>25}"
    bi = f"{b['mean_itl_ms'] - itl:10.2f}" if b else f"{'':>10}"
    print(f"{c:>11} | {st:18.2f} {si:10.2f} {headers_ms(f'sg-{c}'):10.2f} {lag} {pressure(f'sg-{c}'):>9} | {bt} {bi}")
s, b = sg("sg-cap"), bs("bs-cap")
print(f"capacity (one core): sgtune {s['output_tok_s']:.0f} output tok/s (client CPU {s['client_cpu_cores']:.2f} cores); "
      + (f"bench_serving {b['output_throughput']:.0f} output tok/s; ratio {s['output_tok_s'] / b['output_throughput']:.1f}x" if b else "bench_serving failed"))
PY
