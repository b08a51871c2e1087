#!/usr/bin/env bash
# Time `sgtune log` against `grep -E "throughput|running|queue" FILE | wc -l` on a ~1 GB
# realistic SGLang log, print both, and append them with the command to docs/benchmarks.md.
#
# The log is generated into a temporary folder (deleted at the end), seeded, in the current
# (2026) format: mostly Decode / Prefill / uvicorn access lines, plus start-up lines with tqdm
# bars and a long server_args line, retractions, health/metrics requests and now and then a
# client-disconnect traceback.
#
#   scripts/bench-log.sh                 # 1024 MB, 5 runs each
#   SIZE_MB=200 RUNS=3 scripts/bench-log.sh
#   NO_DOC=1 scripts/bench-log.sh        # print only, do not touch docs/benchmarks.md
set -euo pipefail
cd "$(dirname "$0")/.."

SIZE_MB=${SIZE_MB:-1024}
RUNS=${RUNS:-5}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sgtune-bench.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
LOG=$TMP/server.log

LOAD_AT_START=$(cut -d' ' -f1-3 /proc/loadavg)
echo "generating a ${SIZE_MB} MB log in $TMP ..."
python3 - "$LOG" "$SIZE_MB" <<'PY'
import random, sys, datetime

path, size_mb = sys.argv[1], int(sys.argv[2])
target = size_mb * 1024 * 1024
rng = random.Random(20261130)
t0 = datetime.datetime(2026, 5, 24, 0, 52, 0)
clock = [0.0]
cache = [None, ""]

def ts():
    s = int(clock[0])
    if cache[0] != s:
        cache[0] = s
        cache[1] = (t0 + datetime.timedelta(seconds=s)).strftime("[%Y-%m-%d %H:%M:%S]")
    return cache[1]

out = open(path, "w", buffering=8 << 20)
written = 0

def w(line):
    global written
    out.write(line)
    out.write("\n")
    written += len(line) + 1

site = "/opt/venv/lib/python3.12/site-packages"
# Start-up: warnings, server_args, weights, KV pool, graph capture, capacity, uvicorn, warmup.
w(f"{site}/sglang/launch_server.py:71: UserWarning: 'python -m sglang.launch_server' is still supported, but 'sglang serve' is the recommended entrypoint.")
w("  warnings.warn(")
args = ", ".join(f"'{k}': {v}" for k, v in [
    ("model_path", "'/models/Qwen3-32B'"), ("tp_size", 4), ("dp_size", 1), ("mem_fraction_static", 0.88),
    ("max_running_requests", "None"), ("chunked_prefill_size", 8192), ("cuda_graph_max_bs", 256),
    ("kv_cache_dtype", "'auto'"), ("schedule_policy", "'fcfs'"), ("schedule_conservativeness", 1.0),
] + [(f"option_{i}", "None") for i in range(150)])
w(f"{ts()} server_args={{{args}}}")
for _ in range(40):
    w(f"{ts()} Ignore import error when loading sglang.srt.models.something: cannot import name 'x' from 'y'")
w(f"{ts()} Load weight begin. avail mem=139.10 GB")
w("Loading safetensors checkpoint shards:   0% Completed | 0/17 [00:00<?, ?it/s]" + "".join(
    f"\rLoading safetensors checkpoint shards: {i * 6}% Completed | {i}/17 [00:{i:02d}<00:10,  1.60it/s]" for i in range(1, 18)))
w(f"{ts()} Load weight end. elapsed=11.20 s, type=Qwen3ForCausalLM, avail mem=123.80 GB, mem usage=15.30 GB.")
w(f"{ts()} KV Cache is allocated. dtype: torch.bfloat16, #tokens: 1707904, K size: 52.12 GB, V size: 52.12 GB")
w(f"{ts()} Memory pool end. avail mem=18.92 GB")
w(f"{ts()} Capture cuda graph begin. This can take up to several minutes. avail mem=18.90 GB")
w(f"{ts()} Capture cuda graph bs [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256]")
w("".join(f"Capturing batches (bs={b} avail_mem=18.{b % 90:02d} GB): 100%|##########| 19/19 [00:05<00:00,  3.61it/s]\r" for b in (256, 128, 1)))
w(f"{ts()} Capture cuda graph end. Time elapsed: 5.38 s. mem usage=0.60 GB. avail mem=18.30 GB.")
w(f"{ts()} max_total_num_tokens=1707904, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4096, context_len=40960, available_gpu_mem=18.30 GB")
for m in ("Started server process [4242]", "Waiting for application startup.", "Application startup complete.", "Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)"):
    w(f"{ts()} INFO:     {m}")
w(f'{ts()} INFO:     127.0.0.1:40000 - "GET /model_info HTTP/1.1" 200 OK')
w(f"{ts()} Prefill batch, #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, #pending-token: 0, cuda graph: False, input throughput (token/s): 11.20")
w(f"{ts()} Decode batch, #running-req: 1, #token: 15, token usage: 0.00, cuda graph: True, gen throughput (token/s): 3.10, #queue-req: 0")
w(f'{ts()} INFO:     127.0.0.1:40004 - "POST /generate HTTP/1.1" 200 OK')
w(f"{ts()} The server is fired up and ready to roll!")

traceback = [
    "ERROR:    Exception in ASGI application",
    "Traceback (most recent call last):",
    f'  File "{site}/uvicorn/protocols/http/httptools_impl.py", line 409, in run_asgi',
    "    result = await app(  # type: ignore[func-returns-value]",
    "             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    f'  File "{site}/starlette/responses.py", line 268, in wrap',
    "    await func()",
    f'  File "{site}/starlette/responses.py", line 257, in stream_response',
    "    await send({\"type\": \"http.response.body\", \"body\": chunk, \"more_body\": True})",
    f'  File "{site}/uvicorn/protocols/http/httptools_impl.py", line 560, in send',
    "    raise ClientDisconnect()",
    "starlette.requests.ClientDisconnect",
]

running, queue, usage_tok = 180, 0, 900000
cap = 1707904
port = 40010
tick = 0
while written < target:
    tick += 1
    clock[0] += rng.uniform(0.25, 0.55)
    t = ts()
    # Prefill batches and finished requests between two Decode lines.
    for _ in range(rng.choice((0, 1, 1, 1, 2, 2))):
        nseq = rng.choice((1, 1, 1, 2, 2, 3, 4))
        new = nseq * rng.randint(500, 2000)
        cached = rng.choice((0, 0, 0, rng.randint(0, 1024)))
        w(f"{t} Prefill batch, #new-seq: {nseq}, #new-token: {new}, #cached-token: {cached}, token usage: {usage_tok / cap:.2f}, #running-req: {running}, #queue-req: {queue}, #pending-token: {queue * 1200}, cuda graph: False, input throughput (token/s): {rng.uniform(8000, 60000):.2f}")
    for _ in range(rng.choice((0, 1, 1, 2, 2, 3))):
        port = 40010 + (port + 7) % 20000
        path = rng.choice(("/v1/completions", "/v1/completions", "/v1/chat/completions", "/generate"))
        w(f'{t} INFO:     127.0.0.1:{port} - "POST {path} HTTP/1.1" 200 OK')
    running = max(1, min(256, running + rng.randint(-6, 6)))
    queue = max(0, queue + rng.randint(-3, 3)) if rng.random() < 0.7 else 0
    usage_tok = max(10000, min(cap, usage_tok + rng.randint(-40000, 40000)))
    graph = "True" if running <= 256 else "False"
    w(f"{t} Decode batch, #running-req: {running}, #token: {usage_tok}, token usage: {usage_tok / cap:.2f}, cuda graph: {graph}, gen throughput (token/s): {rng.uniform(3000, 9000):.2f}, #queue-req: {queue}")
    if tick % 50 == 0:
        w(f'{t} INFO:     10.0.0.5:{port} - "GET /health HTTP/1.1" 200 OK')
        w(f'{t} INFO:     10.0.0.5:{port} - "GET /metrics HTTP/1.1" 200 OK')
    if tick % 3000 == 0:
        w(f"{t} KV cache pool is full. Retract requests. #retracted_reqs: {rng.randint(1, 4)}, #new_tokens_gained: {rng.randint(100, 5000)}, #new_token_ratio: 0.{rng.randint(1000, 4000)} -> 0.{rng.randint(5000, 9000)}")
    if tick % 7000 == 0:
        for l in traceback:
            w(l)
out.close()
PY

BYTES=$(stat -c %s "$LOG")
LINES=$(wc -l < "$LOG")
MB=$(python3 -c "print(f'{$BYTES / 1e6:.0f}')")
echo "log: $MB MB (10^6 bytes), $LINES lines"
echo "line mix: $(grep -c 'Decode batch' "$LOG") Decode, $(grep -c 'Prefill batch' "$LOG") Prefill, $(grep -c 'INFO:     ' "$LOG") uvicorn"

echo "building release ..."
cargo build --release --quiet
BIN=target/release/sgtune

SGTUNE_CMD="$BIN log $LOG"
GREP_CMD="grep -E \"throughput|running|queue\" $LOG | wc -l"

cat "$LOG" > /dev/null # page cache: both read from memory
"$BIN" log "$LOG" > "$TMP/summary.txt"
RSS_KB=$( { /usr/bin/time -f %M "$BIN" log "$LOG" > /dev/null; } 2>&1 | tail -1) || RSS_KB=""

# Seconds of each run, one per line.
time_runs() {
    local cmd=$1
    local out=$2
    : > "$out"
    for _ in $(seq "$RUNS"); do
        python3 - "$cmd" >> "$out" <<'PY'
import subprocess, sys, time
t = time.perf_counter()
subprocess.run(["bash", "-c", sys.argv[1]], stdout=subprocess.DEVNULL, check=True)
print(f"{time.perf_counter() - t:.4f}")
PY
    done
}

if command -v hyperfine > /dev/null; then
    hyperfine --warmup 1 --runs "$RUNS" --export-json "$TMP/h.json" \
        "$SGTUNE_CMD > /dev/null" "$GREP_CMD > /dev/null"
    python3 - "$TMP/h.json" "$TMP" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
for name, res in zip(("sgtune", "grep"), r):
    open(f"{sys.argv[2]}/{name}.times", "w").write("\n".join(f"{t:.4f}" for t in res["times"]) + "\n")
PY
    TOOL=hyperfine
else
    time_runs "$SGTUNE_CMD > /dev/null" "$TMP/sgtune.times"
    time_runs "$GREP_CMD > /dev/null" "$TMP/grep.times"
    TOOL="wall clock per run (python perf_counter around bash -c)"
fi

REPORT=$(python3 - "$TMP" "$BYTES" "$RUNS" <<'PY'
import statistics, sys
tmp, size, runs = sys.argv[1], int(sys.argv[2]), sys.argv[3]
res = {}
for name in ("sgtune", "grep"):
    t = [float(x) for x in open(f"{tmp}/{name}.times") if x.strip()]
    res[name] = (min(t), statistics.median(t))
for name, label in (("sgtune", "`sgtune log FILE`"), ("grep", "`grep -E \"throughput\\|running\\|queue\" FILE \\| wc -l`")):
    best, med = res[name]
    print(f"| {label} | {best:.3f} | {med:.3f} | {size / 1e6 / best:,.0f} | {size / 1e6 / med:,.0f} |")
ratio_best = res["sgtune"][0] / res["grep"][0]
ratio_med = res["sgtune"][1] / res["grep"][1]
print(f"RATIO {ratio_best:.2f} {ratio_med:.2f}")
PY
)
TABLE=$(echo "$REPORT" | grep '^|')
read -r _ RATIO_BEST RATIO_MED <<< "$(echo "$REPORT" | grep '^RATIO')"

echo
echo "| command | best s | median s | MB/s (best) | MB/s (median) |"
echo "|---|---|---|---|---|"
echo "$TABLE"
echo "sgtune/grep time: $RATIO_BEST (best), $RATIO_MED (median); sgtune peak RSS ${RSS_KB:-?} KB"
echo
echo "sgtune log's verdict on it:"
grep -E '^(decode|gen tok/s|verdict) ' "$TMP/summary.txt" || true

if [ -z "${NO_DOC:-}" ]; then
    CPU=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
    {
        echo
        echo "## \`sgtune log\` against grep (\`scripts/bench-log.sh\`), $(date -u +%Y-%m-%d)"
        echo
        echo "$(nproc) cores ($CPU), load average $LOAD_AT_START at the start (other jobs may share the machine);"
        echo "a generated $MB MB log ($LINES lines: $(grep -c 'Decode batch' "$LOG") Decode, $(grep -c 'Prefill batch' "$LOG") Prefill,"
        echo "$(grep -c 'INFO:     ' "$LOG") uvicorn lines, plus start-up, retraction and traceback lines), read from the"
        echo "page cache. $RUNS runs each, timed with $TOOL;"
        echo "\`sgtune log\` is single-threaded."
        echo
        echo "| command | best s | median s | MB/s (best) | MB/s (median) |"
        echo "|---|---|---|---|---|"
        echo "$TABLE"
        echo
        echo "- \`sgtune log\` takes $RATIO_BEST× grep's time (best run; $RATIO_MED× median). Peak RSS ${RSS_KB:-?} KB."
        echo "- Command: \`scripts/bench-log.sh\` (SIZE_MB=$SIZE_MB RUNS=$RUNS)."
    } >> docs/benchmarks.md
    echo "appended to docs/benchmarks.md"
fi
