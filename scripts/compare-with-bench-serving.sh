#!/usr/bin/env bash
# Cross-check sgtune's client against SGLang's own bench_serving on ONE real SGLang server
# (CPU, tiny model): same workload (random token ids, fixed lengths, ignore_eos, streaming
# /v1/completions), same concurrency. Runs the two clients alternately ROUNDS times and prints
# output tok/s, mean TTFT and mean TPOT side by side (both use SGLang's conventions: TTFT at
# the first non-empty chunk, E2E to the end of the stream). Ends with one machine-readable
# line: `AGREEMENT output_tok_s=R ttft_mean=R tpot_mean=R` (R = sgtune / bench_serving).
#
# bench_serving's OpenAI backend (`sglang-oai`) can only send text prompts, which the server
# then tokenizes (a few ms of TTFT on this CPU); sgtune sends token ids. So by default
# bench_serving runs its native backend with `--tokenize-prompt` (token ids, no server-side
# tokenization), the closest match; BENCH_BACKEND=sglang-oai compares on the same endpoint
# with that difference left in.
#
# Knobs (environment): CONCURRENCY (4), REQUESTS (64), INPUT (64), OUTPUT (128), ROUNDS (2),
# BENCH_BACKEND (sglang | sglang-oai).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
CONCURRENCY=${CONCURRENCY:-4}
REQUESTS=${REQUESTS:-64}
INPUT=${INPUT:-64}
OUTPUT=${OUTPUT:-128}
ROUNDS=${ROUNDS:-2}
BENCH_BACKEND=${BENCH_BACKEND:-sglang}
bench_extra=()
[ "$BENCH_BACKEND" = sglang ] && bench_extra=(--tokenize-prompt)

env_file=$(scripts/setup-cpu-sglang.sh)
# shellcheck disable=SC1090
. "$env_file"
# shellcheck source=scripts/lib/bench-common.sh
. scripts/lib/bench-common.sh
work=$(mktemp -d)
port=$(free_port)

echo "[compare] starting SGLang on port $port (log: $work/server.log)" >&2
PYTHONPATH=$SGTUNE_KERNEL_STANDIN SGLANG_USE_CPU_ENGINE=1 HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1 \
  setsid "$SGTUNE_PYTHON" -m sglang.launch_server --model-path "$SGTUNE_MODEL" \
  --served-model-name tiny --device cpu --attention-backend torch_native \
  --disable-overlap-schedule --sleep-on-idle --dtype bfloat16 --max-total-tokens 32768 \
  --host 127.0.0.1 --port "$port" > "$work/server.log" 2>&1 &
server=$!
cleanup() {
  kill -TERM "$server" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$server" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- "-$server" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
for _ in $(seq 1 300); do
  grep -q "The server is fired up and ready to roll" "$work/server.log" && break
  kill -0 "$server" 2>/dev/null || { echo "[compare] server died:" >&2; tail -5 "$work/server.log" >&2; exit 1; }
  sleep 1
done
grep -q "The server is fired up and ready to roll" "$work/server.log" || { echo "[compare] server not ready" >&2; exit 1; }

for round in $(seq 1 "$ROUNDS"); do
  echo "[compare] round $round: sgtune load" >&2
  "$SGTUNE" load --url "http://127.0.0.1:$port" -w concurrency="$CONCURRENCY" -w requests="$REQUESTS" \
    -w warmup_requests="$CONCURRENCY" -w input_tokens="$INPUT" -w output_tokens="$OUTPUT" \
    -w vocab_size=8192 -w seed="$round" --output "$work/sgtune-$round" > /dev/null
  echo "[compare] round $round: sglang.bench_serving" >&2
  HF_HUB_OFFLINE=1 "$SGTUNE_PYTHON" -m sglang.bench_serving --backend "$BENCH_BACKEND" "${bench_extra[@]}" \
    --base-url "http://127.0.0.1:$port" --model tiny --tokenizer "$SGTUNE_MODEL" \
    --dataset-name random-ids --random-input-len "$INPUT" --random-output-len "$OUTPUT" \
    --random-range-ratio 1.0 --num-prompts "$REQUESTS" --max-concurrency "$CONCURRENCY" \
    --warmup-requests "$CONCURRENCY" --seed "$round" --output-file "$work/bench-$round.jsonl" \
    > "$work/bench-$round.log" 2>&1 || { tail -20 "$work/bench-$round.log" >&2; exit 1; }
done

python3 - "$work" "$ROUNDS" <<'PY'
import json, sys, statistics as st
work, rounds = sys.argv[1], int(sys.argv[2])
sg, bs = {"tok": [], "ttft": [], "tpot": []}, {"tok": [], "ttft": [], "tpot": []}
for r in range(1, rounds + 1):
    c = json.load(open(f"{work}/sgtune-{r}/summary.json"))["load_points"][0]["client"]
    sg["tok"].append(c["output_tok_s"]); sg["ttft"].append(c["ttft_ms"]["mean"]); sg["tpot"].append(c["tpot_ms"]["mean"])
    b = [json.loads(l) for l in open(f"{work}/bench-{r}.jsonl") if l.strip()][-1]
    bs["tok"].append(b["output_throughput"]); bs["ttft"].append(b["mean_ttft_ms"]); bs["tpot"].append(b["mean_tpot_ms"])
print(f"{'metric':<16}{'sgtune':>12}{'bench_serving':>16}{'ratio':>8}   per round sgtune | bench_serving")
ratios = {}
for key, name in [("tok", "output tok/s"), ("ttft", "mean TTFT ms"), ("tpot", "mean TPOT ms")]:
    a, b = st.mean(sg[key]), st.mean(bs[key])
    ratios[key] = a / b if b else float("nan")
    per = " ".join(f"{x:.1f}" for x in sg[key]) + " | " + " ".join(f"{x:.1f}" for x in bs[key])
    print(f"{name:<16}{a:>12.2f}{b:>16.2f}{ratios[key]:>8.3f}   {per}")
print(f"AGREEMENT output_tok_s={ratios['tok']:.4f} ttft_mean={ratios['ttft']:.4f} tpot_mean={ratios['tpot']:.4f}")
PY
