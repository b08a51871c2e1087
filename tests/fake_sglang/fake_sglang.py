#!/usr/bin/env python3
"""A fake SGLang 0.5.23 (CPU) server for sgtune's tests. Python 3.11 standard library only.

Launched like the real one:
    python3 fake_sglang.py --model-path DIR --host 127.0.0.1 --port 31234 --max-total-tokens 4096

It prints the real startup/Prefill/Decode/shutdown log lines to stderr (with the
`[YYYY-MM-DD HH:MM:SS] ` prefix), serves the OpenAI completions/chat API over HTTP/1.1
(keep-alive, chunked SSE), and simulates a KV pool: a request reserves
prompt_tokens + max_tokens at admission and waits in a FIFO queue until that fits.

Its tokenizer (`tokenize`): token ids are themselves; text is 4 characters a token; chat
messages are rendered through a ChatML-like template first (`<|im_start|>role\ncontent
<|im_end|>\n` each, then `<|im_start|>assistant\n`), so the template's tokens count as on a
real server. `usage.prompt_tokens`, the cache blocks and `POST /tokenize` (`/v1/tokenize`:
`{"messages": ...}` or `{"prompt": ...}` -> `{"tokens", "count", "max_model_len"}`, as
SGLang 0.5.23 answers) all use it. A completion asked for `return_token_ids` streams each
piece's id in `choices[].token_ids` (` tokN` is id N) and the prompt's in the first chunk's
`prompt_token_ids`, as SGLang 0.5.23 does.

It also simulates SGLang's prefix (radix) cache, so `#cached-token` on Prefill lines is real:
prompts are cut into blocks of 16 tokens, each block keyed by its whole prefix, and a request's cached tokens are
its leading blocks found in the cache. The device tier holds what the pool has room for beside
the running requests' outputs (prompts live in the tree, outputs are private), least recently
used first out, tails before heads as a radix tree evicts leaves. `--disable-radix-cache`
turns it off, /flush_cache empties it. With `--enable-hierarchical-cache` (and
FAKE_SGLANG_HICACHE_OK=1) a host tier of `--hicache-ratio` x the pool's tokens, or
`--hicache-size` GB, keeps a copy of every block (write-through) in its own LRU; a block found
there but not on the device is loaded back, costing --fake-hicache-load-token-s per token,
and counts in `#cached-token` as SGLang counts host hits. The host tier adds no room for
running requests: `max_total_num_tokens` and admission are the same with it. (Admission still
reserves the whole prompt, cached or not: pessimistic, and the same as before the cache.)

Environment knobs:
  FAKE_SGLANG_STARTUP_S     startup delay in seconds, spread over the lines (default 0.3)
  FAKE_SGLANG_TOKEN_S       seconds per decode step; every running request gets one token
                            per step (default 0.002)
  FAKE_SGLANG_PACED=1       decode steps follow the wall clock (step k at start + k x TOKEN_S,
                            even when the decode thread wakes late) and a request whose handler
                            missed steps gets their tokens at once: throughput is set by the
                            sleeps, not by how busy the CPU is (without it, a late thread
                            loses its steps, as a slow server would)
  FAKE_SGLANG_CRASH_AFTER   completed requests before `crash_during_load` fires (default 5)
  FAKE_SGLANG_HICACHE_OK=1  let --enable-hierarchical-cache start instead of dying like on CPU
  FAKE_SGLANG_NO_TOKEN_IDS=1  ignore `return_token_ids` (a server that returns no reply ids,
                            like llama.cpp's /v1/completions) and answer /tokenize with 404
  FAKE_SGLANG_PROMPT_LOG    append to this file "start PID" when ready, "flush" for each
                            flush that took effect, and "prompt HASH" for each completion
                            request (a hash of its prompt): what the tests compare prompts by
  FAKE_SGLANG_SPAWN_CHILD=1 spawn a `sleep 3600` python child in the same process group;
                            it is terminated on graceful exit and on the startup faults, and
                            is left behind when the fake is SIGKILLed from outside or by
                            `crash_during_load`
  FAKE_SGLANG_FAULT         one of:
    oom_at_start        "Not enough memory" scheduler traceback, then SIGKILL itself
    cuda_oom_at_start   torch.OutOfMemoryError traceback, then exit 1
    exit_before_ready   startup lines up to "Memory pool end", then exit 3
    never_ready         listens (/v1/models ok, /health 503) but never prints the ready line
    crash_during_load   SIGKILL itself after FAKE_SGLANG_CRASH_AFTER completed requests
    ignore_sigterm      logs SIGTERM/SIGINT but keeps running
    stream_cut          streamed responses are cut (socket shutdown) after half their tokens
    malformed_sse       the 3rd SSE event of a streamed response is `data: {not json`
    http_500, http_503  every POST answers that status with an OpenAI-style error body
    slow_stream         decode steps take 10x longer
    flush_silently      /flush_cache answers 200 but logs no "Cache flushed successfully!"
  --enable-metrics           GET /metrics serves the sglang:* running/queue/usage gauges, the
                            generation/prompt token counters, the cached tokens by
                            `cache_source` (device, host; as 0.5.23, a series appears at its
                            first increment), the prefill tokens by tier
                            (`prefill_effective_tokens_total{mode=...}`: input, device_hit,
                            host_hit, storage_hit), the radix cache's evicted tokens and, with
                            HiCache, its load-back and backup tokens and host pool gauges, in
                            the Prometheus text format
  --fake-max-mfs-launch X    --mem-fraction-static above X: "Not enough memory" at start-up
  --fake-max-mfs-burst Y     --mem-fraction-static above Y: starts, then dies of a CUDA OOM
                            (traceback, SIGKILL) once 3 requests run at once (the pre-flight's
                            burst)
  --fake-derail P            output quality: requests with `logprobs` (sgtune's quality pass) get
                            greedy outputs that are a seeded hash of the prompt, with top-k
                            log-probabilities; this configuration derails a share P of prompts
                            decisively (a token the hash's output never considered, from a
                            seeded position on)
  --fake-near-tie Q          with `logprobs`, while other requests are in flight (a shared batch),
                            each prompt's one nearly tied position flips with probability Q
                            (a near tie: both tokens within 0.01 nats in each other's top-k)
  --fake-retractions N       once requests run, log N retractions, one per decode step, in
                            SGLang 0.5's words (a warning: "KV cache pool is full. Retract
                            requests. #retracted_reqs: 1, #new_tokens_gained: G,
                            #new_token_ratio: A -> B"); only the log says so, the requests run on
  --fake-retractions-above Z only when --mem-fraction-static is above Z (the pre-flight's
                            retraction storm)
  --fake-fault NAME          the same faults as a flag, so one sweep can give each
                            configuration its own (`fake_fault: oom_at_start` in a config)
  --fake-prefill-token-s P  each request's prefill takes P seconds per new (uncached) prompt
                            token, inside the scheduler (it stalls the decode steps, as a
                            prefill batch does); default 0: prefill is free
  --fake-hicache-load-token-s L  loading a host-tier hit back to the device takes L seconds per
                            token, the same way (default 2e-6)
  --fake-token-s S           FAKE_SGLANG_TOKEN_S as a flag: each configuration its own pace
                            (`fake_token_s: 0.02` in a config), so its throughput is known
  --fake-pace-jitter J       this launch's step is TOKEN_S x (1 + J x U(-1, 1)), unseeded:
                            repeats on new servers differ by design (`fake_pace_jitter: 0.1`)
Flag-driven behaviour (as real 0.5.23 on a CPU without AMX):
  --attention-backend intel_amx          "The current platform does not support Intel AMX, will
                                         fallback to torch_native backend."; /server_info and
                                         server_args= then say torch_native
  --attention-backend torch_native       "Cuda graph is disabled because of using torch native
                                         attention backend" (/server_info keeps
                                         disable_cuda_graph false, as the real one does)
  --kv-cache-dtype fp8_e4m3 / fp8_e5m2   scheduler ValueError traceback, then SIGKILL itself
  --enable-hierarchical-cache            "Allocating kv hierarchical KV host pool: N tokens, X GB
                                         host memory." then "RuntimeError: Found no NVIDIA
                                         driver" + SIGKILL, as 0.5.23 on CPU (docs/cpu-sglang.md);
                                         with FAKE_SGLANG_HICACHE_OK=1 it runs, the host tier
                                         as above
SIGTERM/SIGINT: logs "SIGTERM received ...", /health turns 503, requests (even new ones, as
in the real server) are still served; exits 0 once none is in flight.
"""

import argparse
import collections
import hashlib
import random
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
import zlib
from datetime import datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

VERSION = "0.5.23-fake"
FAULT = os.environ.get("FAKE_SGLANG_FAULT", "").strip()
STARTUP_S = float(os.environ.get("FAKE_SGLANG_STARTUP_S", "0.3"))
TOKEN_S = float(os.environ.get("FAKE_SGLANG_TOKEN_S", "0.002")) * (10 if FAULT == "slow_stream" else 1)
PACED = os.environ.get("FAKE_SGLANG_PACED") == "1"
CRASH_AFTER = int(os.environ.get("FAKE_SGLANG_CRASH_AFTER", "5"))
PROMPT_LOG = os.environ.get("FAKE_SGLANG_PROMPT_LOG", "")
NO_TOKEN_IDS = os.environ.get("FAKE_SGLANG_NO_TOKEN_IDS") == "1"

_log_lock = threading.Lock()
QUIET_INFO = False  # --log-level warning/error hides Prefill/Decode/access lines
RANK = ""  # " TP0" when --tp-size > 1 (scheduler lines only)


def log(msg, prefix=True, sched=False):
    with _log_lock:
        if prefix:
            ts = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
            msg = f"[{ts}{RANK if sched else ''}] {msg}"
        try:
            sys.stderr.write(msg + "\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass


def prompt_log(line):
    """A line for the tests in FAKE_SGLANG_PROMPT_LOG (not part of SGLang's log)."""
    if PROMPT_LOG:
        with _log_lock:
            with open(PROMPT_LOG, "a") as f:
                f.write(line + "\n")


def info(msg, sched=False):
    if not QUIET_INFO:
        log(msg, sched=sched)


# ----------------------------------------------------------------------------- arguments
class Parser(argparse.ArgumentParser):
    def error(self, message):
        time.sleep(0.2)  # the real one takes ~10 s to get here (imports)
        super().error(message)


def build_parser():
    p = Parser(prog="sglang serve")
    a = p.add_argument
    a("--model-path", "--model", dest="model_path", required=True)
    a("--host", default="127.0.0.1")
    a("--port", type=int, default=30000)
    for name in ("--tokenizer-path", "--served-model-name", "--device", "--attention-backend",
                 "--log-level-http"):
        a(name)
    for name in ("--mem-fraction-static",):
        a(name, type=float)
    for name in ("--max-total-tokens", "--max-running-requests", "--context-length",
                 "--chunked-prefill-size", "--cuda-graph-max-bs", "--cuda-graph-max-bs-decode"):
        a(name, type=int)
    a("--max-prefill-tokens", type=int, default=16384)
    a("--kv-cache-dtype", default="auto",
      choices=["auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "fp4_e2m1"])
    a("--schedule-policy", default="fcfs")
    a("--schedule-conservativeness", type=float, default=1.0)
    a("--decode-log-interval", type=int, default=40)
    a("--tp-size", "--tensor-parallel-size", dest="tp_size", type=int, default=1)
    a("--dp-size", "--data-parallel-size", dest="dp_size", type=int, default=1)
    a("--hicache-size", type=int, default=0)
    a("--hicache-ratio", type=float, default=2.0)
    a("--dtype", default="auto")
    a("--log-level", default="info")
    a("--cuda-graph-bs", type=int, nargs="+")
    for name in ("--enable-hierarchical-cache", "--disable-overlap-schedule", "--sleep-on-idle",
                 "--disable-radix-cache", "--disable-cuda-graph", "--enable-metrics",
                 "--trust-remote-code", "--skip-server-warmup"):
        a(name, action="store_true")
    a("--fake-derail", type=float, default=0.0)
    a("--fake-near-tie", type=float, default=0.0)
    a("--fake-fault", default=None, help="test knob: a FAKE_SGLANG_FAULT value for this run")
    a("--fake-prefill-token-s", type=float, default=0.0)
    a("--fake-hicache-load-token-s", type=float, default=2e-6)
    a("--fake-token-s", type=float, default=None,
      help="test knob: FAKE_SGLANG_TOKEN_S for this run (each configuration its own pace)")
    a("--fake-pace-jitter", type=float, default=0.0,
      help="test knob: this launch's decode step is TOKEN_S x (1 + J x U(-1, 1)), drawn once "
           "per launch from an unseeded generator, so repeats on new servers differ by design")
    # Memory thresholds for the pre-flight tests: above the first, start-up runs out of memory;
    # above the second, the server starts but dies of a CUDA OOM once 3 requests run at once.
    a("--fake-max-mfs-launch", type=float, default=None)
    a("--fake-max-mfs-burst", type=float, default=None)
    # Retractions for the pre-flight's retraction-storm rule: N lines once requests run (only
    # above the given --mem-fraction-static when --fake-retractions-above is set).
    a("--fake-retractions", type=int, default=0)
    a("--fake-retractions-above", type=float, default=None)
    return p


def read_model_config(path):
    try:
        with open(os.path.join(path, "config.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


# ----------------------------------------------------------------------------- prefix cache
BLOCK = 16  # tokens per cache block
CHARS_PER_TOKEN = 4  # the fake tokenizer's ratio (`text_tokens`)


def text_tokens(text):
    """The fake's tokenizer for text: one token per 4 characters (the last may be shorter), its
    id a stable hash of them, so equal text starts are equal token starts."""
    return [zlib.crc32(text[i:i + CHARS_PER_TOKEN].encode()) % S.vocab
            for i in range(0, len(text), CHARS_PER_TOKEN)]


def render_chat(messages):
    """The messages through a ChatML-like template, with the assistant's turn opened (as a chat
    completion renders them)."""
    parts = []
    for m in messages or []:
        if not isinstance(m, dict):
            continue
        c = m.get("content")
        if isinstance(c, list):
            c = " ".join(p.get("text", "") for p in c if isinstance(p, dict))
        parts.append(f"<|im_start|>{m.get('role', '')}\n{c if isinstance(c, str) else ''}<|im_end|>\n")
    return "".join(parts) + "<|im_start|>assistant\n"


def tokenize(body, chat):
    """The prompt's token ids, as the request would be counted and cached."""
    if chat:
        return text_tokens(render_chat(body.get("messages")))
    p = body.get("prompt", "")
    if isinstance(p, list) and p and all(isinstance(x, int) for x in p):
        return p
    if isinstance(p, list) and p and isinstance(p[0], list):
        return p[0]
    if isinstance(p, list):
        return text_tokens("".join(x for x in p if isinstance(x, str)))
    return text_tokens(str(p))


def block_keys(units, per_block):
    """Keys of the prompt's whole blocks, each a hash of everything up to its end (a block
    matches only after the same prefix, as a radix tree matches)."""
    keys, h = [], hashlib.sha256()
    for i in range(len(units) // per_block):
        h.update(repr(units[i * per_block:(i + 1) * per_block]).encode())
        keys.append(h.copy().digest()[:12])
    return keys


def prompt_units(body, chat):
    """The prompt as units to cut into blocks, and how many units make a block."""
    return tokenize(body, chat), BLOCK


class PrefixCache:
    """The radix cache's device tier and, with HiCache, its host tier (write-through): blocks in
    LRU order, the least recent first. Callers hold the scheduler's lock."""

    def __init__(self, host_tokens):
        self.device = collections.OrderedDict()
        self.host = collections.OrderedDict()
        self.host_blocks = host_tokens // BLOCK
        # /metrics counters, in blocks: device blocks evicted, blocks written through to host.
        self.evicted = self.backed_up = 0

    def match(self, keys):
        """(device hits, host hits) in blocks: the leading blocks found, the device first. A
        host hit is loaded back to the device."""
        dev = host = 0
        for k in keys:
            if k in self.device and host == 0:
                dev += 1
            elif k in self.host:
                host += 1
            else:
                break
        return dev, host

    def insert(self, keys):
        # The head of a prompt is touched last, so it leaves last: leaves go first.
        for k in reversed(keys):
            self.device[k] = None
            self.device.move_to_end(k)
            if self.host_blocks:
                if k not in self.host:
                    self.backed_up += 1
                self.host[k] = None
                self.host.move_to_end(k)
        while len(self.host) > self.host_blocks:
            self.host.popitem(last=False)

    def fit(self, room_tokens):
        while self.device and len(self.device) * BLOCK > max(room_tokens, 0):
            self.device.popitem(last=False)
            self.evicted += 1

    def flush(self):
        self.device.clear()
        self.host.clear()


# ----------------------------------------------------------------------------- scheduler
class Scheduler:
    """Global KV-pool / FIFO queue. Every running request gets one token per decode step."""

    def __init__(self, total, max_running, interval, graph, retractions=0):
        self.total, self.max_running = total, max_running
        self.retractions_left = retractions  # --fake-retractions still to log
        self.interval, self.graph = max(1, interval), graph
        self.lock = threading.Lock()
        self.admit_cv = threading.Condition(self.lock)  # queue heads wait here for room
        self.step_cv = threading.Condition(self.lock)   # running requests wait for a step
        self.queue = collections.deque()
        self.used = self.running = self.step = self.gen_since_log = 0
        self.last_decode_log = self.last_prefill_log = time.monotonic()
        self.last_gen_throughput = 0.0
        self.gen_total = self.prompt_total = 0  # Prometheus counters (--enable-metrics)
        self.cached_total = 0
        self.host_hit_total = 0  # of cached_total, loaded from the host tier
        self.out_reserved = 0  # the running requests' output tokens: the rest holds the tree
        self.cache = None  # a PrefixCache, unless --disable-radix-cache
        threading.Thread(target=self._loop, daemon=True, name="decode").start()

    def admit(self, prompt, need, keys=()):
        """Reserve `need` tokens (FIFO, waiting for room); return the current step. `keys`: the
        prompt's cache blocks."""
        with self.lock:
            ticket = object()
            self.queue.append(ticket)
            while not (self.queue[0] is ticket and self.running < self.max_running
                       and (self.used + need <= self.total or self.used == 0)):
                self.admit_cv.wait()
            self.queue.popleft()
            before = self.running
            self.running += 1
            a = S.args
            if (a.fake_max_mfs_burst is not None and a.mem_fraction_static is not None
                    and a.mem_fraction_static > a.fake_max_mfs_burst + 1e-9 and self.running >= 3):
                scheduler_traceback(
                    ['  File "sglang/srt/model_executor/model_runner.py", line 2101, in forward',
                     "    return self.forward_extend("],
                    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
                    "GPU 0 has a total capacity of 79.11 GiB of which 1.02 GiB is free.")
                log("Received sigquit from a child process. It usually means the child failed.")
                kill_child()
                die_sigkill()
            self.used += need
            self.out_reserved += need - prompt
            self.prompt_total += prompt
            cached = loaded = 0
            if self.cache is not None:
                dev, host = self.cache.match(keys)
                # SGLang computes at least the prompt's last token.
                cached = min((dev + host) * BLOCK, max(prompt - 1, 0))
                loaded = max(0, min(host * BLOCK, cached - dev * BLOCK))
                self.cache.insert(keys)
                self.cache.fit(self.total - self.out_reserved)
            self.cached_total += cached
            self.host_hit_total += loaded
            new = prompt - cached
            cost = new * a.fake_prefill_token_s + loaded * a.fake_hicache_load_token_s
            if cost > 0:
                # Under the lock: a prefill batch holds the decode steps back.
                time.sleep(cost)
            now = time.monotonic()
            thr = new / max(now - self.last_prefill_log, 1e-3)
            self.last_prefill_log = now
            info(f"Prefill batch, #new-seq: 1, #new-token: {new}, #cached-token: {cached}, "
                 f"token usage: {self.used / self.total:.2f}, #running-req: {before}, "
                 f"#queue-req: {len(self.queue)}, #pending-token: 0, {self.graph}: False, "
                 f"input throughput (token/s): {thr:.2f}", sched=True)
            self.admit_cv.notify_all()  # the next in line may fit too
            self.step_cv.notify_all()   # wake the decode loop
            return self.step

    def release(self, need, prompt=0):
        with self.lock:
            self.running -= 1
            self.used -= need
            self.out_reserved -= need - prompt
            self.admit_cv.notify_all()

    def flush(self):
        with self.lock:
            if self.cache is not None:
                self.cache.flush()

    def next_token(self, last_step):
        """Block until the decode step after `last_step`; return the new step number."""
        with self.lock:
            while self.step <= last_step:
                self.step_cv.wait()
            return self.step

    def _loop(self):
        next_t = None
        while True:
            with self.lock:
                while self.running == 0:
                    next_t = None
                    self.step_cv.wait()
            now = time.monotonic()
            next_t = now + TOKEN_S if next_t is None else next_t + TOKEN_S
            steps = 1
            if next_t > now:
                time.sleep(next_t - now)
            elif PACED:
                # Woke late: every step whose time has come is taken, on the same clock.
                steps += int((now - next_t) / TOKEN_S)
                next_t += (steps - 1) * TOKEN_S
            else:
                next_t = now  # fell behind: do not burst
            with self.lock:
                before = self.step
                self.step += steps
                self.gen_since_log += self.running * steps
                self.gen_total += self.running * steps
                if self.running and self.retractions_left > 0:
                    # SGLang >= 0.5 (logger.warning, so shown at --log-level warning too).
                    self.retractions_left -= 1
                    log("KV cache pool is full. Retract requests. #retracted_reqs: 1, "
                        f"#new_tokens_gained: {self.used // max(self.running, 1)}, "
                        "#new_token_ratio: 0.0980 -> 0.7047", sched=True)
                if self.running and self.step // self.interval > before // self.interval:
                    now = time.monotonic()
                    g = self.gen_since_log / max(now - self.last_decode_log, 1e-6)
                    self.last_gen_throughput = g
                    self.gen_since_log, self.last_decode_log = 0, now
                    info(f"Decode batch, #running-req: {self.running}, #token: {self.used}, "
                         f"token usage: {self.used / self.total:.2f}, {self.graph}: False, "
                         f"gen throughput (token/s): {g:.2f}, #queue-req: {len(self.queue)}",
                         sched=True)
                self.step_cv.notify_all()


# ----------------------------------------------------------------------------- global state
class State:
    args, served, sched, child, rng = None, "", None, None, None
    vocab, total, max_running, ctx_len = 32000, 16384, 2048, 4096
    ready = shutting_down = False
    inflight = completed = 0
    signals = collections.deque()  # (signum, frame repr) queued by the signal handler
    lock = threading.Lock()


S = State()


def kill_child():
    if S.child is not None and S.child.poll() is None:
        S.child.terminate()
        try:
            S.child.wait(timeout=2)
        except subprocess.TimeoutExpired:
            S.child.kill()


def die_sigkill():
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(10)


def exit_now(code):
    """Stop the child (like SGLang's kill_process_tree) and leave at once."""
    kill_child()
    sys.stderr.flush()
    os._exit(code)


def scheduler_traceback(frames, error):
    log("Scheduler hit an exception: Traceback (most recent call last):", sched=True)
    for f in frames:
        log(f, prefix=False)
    log(error, prefix=False)


# ----------------------------------------------------------------------------- HTTP
def jdump(obj):
    return json.dumps(obj, separators=(",", ":"))


def prompt_tokens_of(body, chat):
    return max(1, len(tokenize(body, chat)))


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512  # the default backlog of 5 stalls bursts of connections


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 5  # uvicorn closes idle keep-alive connections after 5 s

    def version_string(self):
        return "uvicorn"

    def log_message(self, fmt, *args):
        pass

    def handle(self):
        try:
            super().handle()
        except (ConnectionError, TimeoutError, OSError):
            self.close_connection = True

    def _access(self, code):
        if self.path.startswith("/health"):
            return  # keep the log readable under polling
        phrase = HTTPStatus(code).phrase
        info(f'INFO:     {self.client_address[0]}:{self.client_address[1]} - '
             f'"{self.command} {self.path} {self.request_version}" {code} {phrase}')

    def _send(self, code, obj=None, raw=b"", ctype="application/json"):
        data = jdump(obj).encode() if obj is not None else raw
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self._access(code)
        self.wfile.write(data)

    def _error(self, code, message, typ):
        self._send(code, {"object": "error", "message": message, "type": typ,
                          "param": None, "code": code})

    # --- GET
    def do_GET(self):
        try:
            self._get()
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            self.close_connection = True

    def _get(self):
        path = self.path.split("?", 1)[0]
        if path in ("/health", "/health_generate"):
            self._send(200 if S.ready and not S.shutting_down else 503)
        elif path == "/v1/models":
            self._send(200, {"object": "list", "data": [{
                "id": S.served, "object": "model", "created": int(time.time()),
                "owned_by": "sglang", "root": S.served, "parent": None,
                "max_model_len": S.ctx_len}]})
        elif path in ("/model_info", "/get_model_info"):
            self._send(200, {"model_path": S.args.model_path,
                             "tokenizer_path": S.args.tokenizer_path or S.args.model_path,
                             "is_generation": True, "preferred_sampling_params": None,
                             "weight_version": "default", "has_image_understanding": False,
                             "has_audio_understanding": False, "model_type": "llama",
                             "architectures": ["LlamaForCausalLM"]})
        elif path == "/metrics" and S.args.enable_metrics:
            sc = S.sched
            labels = f'{{model_name="{S.served}",engine_type="unified",tp_rank="0",pp_rank="0"}}'
            with sc.lock:
                lines = [
                    "# TYPE sglang:num_running_reqs gauge",
                    f"sglang:num_running_reqs{labels} {float(sc.running)}",
                    "# TYPE sglang:num_queue_reqs gauge",
                    f"sglang:num_queue_reqs{labels} {float(len(sc.queue))}",
                    "# TYPE sglang:token_usage gauge",
                    f"sglang:token_usage{labels} {sc.used / sc.total:.2f}",
                    "# TYPE sglang:generation_tokens_total counter",
                    f"sglang:generation_tokens_total{labels} {float(sc.gen_total)}",
                    "# TYPE sglang:prompt_tokens_total counter",
                    f"sglang:prompt_tokens_total{labels} {float(sc.prompt_total)}",
                ]
                # As 0.5.23: the hits by `cache_source`, and a labelled counter is exported
                # only from its first increment (the host series appears at the first host hit).
                tok = f'{{model_name="{S.served}"'
                lines += ["# TYPE sglang:cached_tokens_total counter"] + [
                    f'sglang:cached_tokens_total{tok},cache_source="{src}"}} {float(v)}'
                    for src, v in (("device", sc.cached_total - sc.host_hit_total),
                                   ("host", sc.host_hit_total)) if v > 0]
                # 0.5.23 splits the hits by tier only here (the log's #cached-token is both).
                eff = labels[:-1]
                lines += ["# TYPE sglang:prefill_effective_tokens_total counter"] + [
                    f'sglang:prefill_effective_tokens_total{eff},mode="{mode}"}} {float(v)}'
                    for mode, v in (("input", sc.prompt_total - sc.cached_total),
                                    ("device_hit", sc.cached_total - sc.host_hit_total),
                                    ("host_hit", sc.host_hit_total), ("storage_hit", 0))]
                # The radix cache's counters (every rank's own, by pool) and HiCache's host pool.
                c = sc.cache
                rank = '{cache_type="HiRadixCache",dp_rank="0",pp_rank="0",tp_rank="0"'
                counters = []
                if c is not None:
                    counters.append(("evicted_tokens_total", "", c.evicted * BLOCK))
                if c is not None and c.host_blocks:
                    counters += [("load_back_tokens_total", ',pool="kv"', sc.host_hit_total),
                                 ("hicache_backup_tokens_total", ',pool="kv"',
                                  c.backed_up * BLOCK)]
                    lines += [
                        f"sglang:hicache_host_used_tokens{labels} {float(len(c.host) * BLOCK)}",
                        f"sglang:hicache_host_total_tokens{labels} {float(c.host_blocks * BLOCK)}",
                    ]
                lines += [f"sglang:{name}{rank}{pool}}} {float(v)}"
                          for name, pool, v in counters if v > 0]
            body = ("\n".join(lines) + "\n").encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif path in ("/server_info", "/get_server_info"):
            d = dict(server_args_dict())
            d.update(max_total_num_tokens=S.total, max_req_input_len=S.ctx_len - 1,
                     version=VERSION, internal_states=[{
                         "last_gen_throughput": S.sched.last_gen_throughput,
                         "memory_usage": {"weight": 0.02, "kvcache": kv_gb() * 2,
                                          "token_capacity": S.total, "graph": 0},
                         "effective_max_running_requests_per_dp": S.max_running,
                         "num_running_reqs": S.sched.running, "num_used_tokens": S.sched.used,
                         "num_queue_reqs": len(S.sched.queue)}])
            self._send(200, d)
        else:
            self._send(404, {"detail": "Not Found"})

    # --- POST
    def do_POST(self):
        with S.lock:
            S.inflight += 1
        try:
            self._post()
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            self.close_connection = True
        finally:
            with S.lock:
                S.inflight -= 1

    def _post(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if FAULT in ("http_500", "http_503"):
            code = 500 if FAULT == "http_500" else 503
            return self._error(code, f"Injected fault {FAULT}", "InternalServerError")
        path = self.path.split("?", 1)[0]
        if path == "/flush_cache":
            # As the real scheduler: refused while requests run or wait, logged either way
            # (flush_silently: answered but never done, to test that sgtune notices).
            sched = S.sched
            with sched.lock:
                queued, running = len(sched.queue), sched.running
            if queued or running:
                log("Cache not flushed because there are pending requests. "
                    f"#queue-req: {queued}, #running-req: {running}", sched=True)
                return self._send(400, raw=b"Flush cache failed.\n", ctype="text/plain")
            if FAULT != "flush_silently":
                sched.flush()
                log("Cache flushed successfully!", sched=True)
                prompt_log("flush")
            return self._send(200, raw=b"Cache flushed.\n", ctype="text/plain")
        if path in ("/tokenize", "/v1/tokenize") and not NO_TOKEN_IDS:
            try:
                body = json.loads(raw or b"{}")
                chat = body.get("messages") is not None
                ids = tokenize(body, chat)
            except (ValueError, AttributeError) as e:
                return self._error(400, f"Invalid tokenize request: {e}", "BadRequestError")
            return self._send(200, {"tokens": ids, "count": len(ids), "max_model_len": S.ctx_len})
        if path not in ("/v1/completions", "/v1/chat/completions"):
            return self._send(404, {"detail": "Not Found"})
        try:
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
                raise ValueError("body is not an object")
        except ValueError as e:
            return self._error(400, f"Invalid JSON body: {e}", "BadRequestError")
        chat = path == "/v1/chat/completions"
        if PROMPT_LOG:
            sent = body.get("messages") if chat else body.get("prompt")
            digest = hashlib.sha256(jdump(sent).encode()).hexdigest()[:16]
            prompt_log(f"prompt {digest}")
            if os.environ.get("FAKE_SGLANG_PROMPT_FULL") == "1":
                # The whole prompt, for tests that check what a session sent back.
                prompt_log(f"prompt-json {jdump(sent)}")
        prompt = prompt_tokens_of(body, chat)
        mt = body.get("max_tokens", body.get("max_completion_tokens"))
        try:
            n = max(0, int(mt if mt is not None else 16))
        except (TypeError, ValueError):
            return self._error(400, f"Invalid max_tokens: {mt!r}", "BadRequestError")
        if prompt + n > S.ctx_len:
            return self._error(400, (
                f"Requested token count exceeds the model's maximum context length of "
                f"{S.ctx_len} tokens. You requested a total of {prompt + n} tokens: {prompt} "
                f"tokens from the input messages and {n} tokens for the completion. Please "
                f"reduce the number of tokens in the input messages or the completion to fit "
                f"within the limit."), "BadRequestError")
        need = prompt + n
        keys = block_keys(*prompt_units(body, chat)) if S.sched.cache is not None else ()
        step = S.sched.admit(prompt, need, keys)
        try:
            if body.get("stream"):
                ok = self._stream(body, chat, prompt, n, step)
            else:
                ok = self._whole(chat, prompt, n, step, body)
        finally:
            S.sched.release(need, prompt)
        if ok:
            with S.lock:
                S.completed += 1
                crash = FAULT == "crash_during_load" and S.completed >= CRASH_AFTER
            if crash:
                die_sigkill()

    def _tokens(self, prompt, n, step):
        i = 0
        while i < n:
            new = S.sched.next_token(step)
            # Paced: the steps this handler was too late to see still carry its tokens.
            owed = min(new - step, n - i) if PACED else 1
            step = new
            for _ in range(owed):
                tid = (prompt * 31 + i * 7) % S.vocab
                yield f" tok{tid}", tid
                i += 1

    def _quality(self, body, n, step):
        """A greedy answer with logprobs: the same for the same prompt on every configuration,
        but for the derails (--fake-derail) and the near-tie flips (--fake-near-tie)."""
        key = json.dumps(body.get("prompt"), sort_keys=True)

        def h(*parts):
            d = hashlib.sha256("|".join([key, *map(str, parts)]).encode()).digest()
            return int.from_bytes(d[:8], "big")

        k = max(2, int(body.get("logprobs") or 2))
        derail_at = h("derail-at") % max(n, 1) if (h("derail") % 10_000) < S.args.fake_derail * 10_000 else None
        tie_at = h("tie-at") % max(n, 1)
        with S.lock:
            shared = S.inflight > 1
        flip = shared and S.rng.random() < S.args.fake_near_tie
        tokens, lps, tops = [], [], []
        branch = ""
        for i in range(n):
            step = S.sched.next_token(step)
            tok, alt = f" t{h(branch, i) % S.vocab}", f" a{h(branch, i, 'alt') % S.vocab}"
            own, other = -0.1, -3.0
            if i == tie_at and not branch:
                own, other = -0.69, -0.70
                if flip:
                    tok, alt, branch = alt, tok, "tie"
            if derail_at is not None and i == derail_at and not branch:
                tok, alt, branch = f" x{h('x', i) % S.vocab}", f" y{h('y', i) % S.vocab}", "derail"
                own, other = -0.1, -4.0
            top = {tok: own, alt: other}
            for j in range(k - 2):
                top[f" z{j}_{h(branch, i, j) % S.vocab}"] = other - 1.0 - j
            tokens.append(tok)
            lps.append(own)
            tops.append(top)
        return "".join(tokens), {"tokens": tokens, "token_logprobs": lps, "top_logprobs": tops,
                                 "text_offset": [-1] * n}

    def _whole(self, chat, prompt, n, step, body=None):
        if body is not None and body.get("logprobs") and not chat:
            text, logprobs = self._quality(body, n, step)
            usage = {"prompt_tokens": prompt, "total_tokens": prompt + n, "completion_tokens": n}
            self._send(200, {"id": uuid.uuid4().hex, "object": "text_completion",
                             "created": int(time.time()), "model": S.served,
                             "choices": [{"index": 0, "text": text, "logprobs": logprobs,
                                          "finish_reason": "length", "matched_stop": None}],
                             "usage": usage})
            return True
        pieces = list(self._tokens(prompt, n, step))
        text = "".join(t for t, _ in pieces)
        rid, created = uuid.uuid4().hex, int(time.time())
        usage = {"prompt_tokens": prompt, "total_tokens": prompt + n,
                 "completion_tokens": n, "prompt_tokens_details": None, "reasoning_tokens": 0}
        if chat:
            choice = {"index": 0, "message": {"role": "assistant", "content": text,
                                              "reasoning_content": None, "tool_calls": None},
                      "logprobs": None, "finish_reason": "length", "matched_stop": None}
            obj = "chat.completion"
        else:
            choice = {"index": 0, "text": text, "logprobs": None,
                      "finish_reason": "length", "matched_stop": None}
            if body is not None and body.get("return_token_ids") and not NO_TOKEN_IDS:
                choice["token_ids"] = [i for _, i in pieces]
                choice["prompt_token_ids"] = tokenize(body, chat)
            obj = "text_completion"
        self._send(200, {"id": rid, "object": obj, "created": created, "model": S.served,
                         "choices": [choice], "usage": usage})
        return True

    def _chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _stream(self, body, chat, prompt, n, step):
        rid, created = uuid.uuid4().hex, int(time.time())
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        obj = "chat.completion.chunk" if chat else "text_completion"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self._access(200)
        sent = 0

        def event(choices, usage=None):
            nonlocal sent
            sent += 1
            if FAULT == "malformed_sse" and sent == 3:
                payload = "{not json"
            else:
                payload = jdump({"id": rid, "object": obj, "created": created,
                                 "model": S.served, "choices": choices, "usage": usage})
            self._chunk(f"data: {payload}\n\n".encode())

        ids_asked = bool(body.get("return_token_ids")) and not chat and not NO_TOKEN_IDS
        first = [True]

        def choice(text, finish, role=False, ids=()):
            c = {"index": 0}
            if chat:
                c["delta"] = {"role": "assistant", "content": ""} if role else {"content": text}
            else:
                c["text"] = text
            c.update(logprobs=None, finish_reason=finish, matched_stop=None)
            if ids_asked:
                # SGLang 0.5.23: the chunk's new ids; the prompt's only in the first chunk.
                c["token_ids"] = list(ids)
                if first[0]:
                    c["prompt_token_ids"] = tokenize(body, chat)
                first[0] = False
            return c

        if chat:
            event([choice("", None, role=True)])
        cut_at = n // 2 if FAULT == "stream_cut" else None
        if n == 0:
            event([choice("", "length")])
        for i, (tok, tid) in enumerate(self._tokens(prompt, n, step)):
            if cut_at is not None and i >= cut_at:
                self.close_connection = True
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                return False
            event([choice(tok, "length" if i == n - 1 else None, ids=[tid])])
        if include_usage:
            event([], {"prompt_tokens": prompt, "total_tokens": prompt + n,
                       "completion_tokens": n, "reasoning_tokens": 0})
        self._chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        return True


# ----------------------------------------------------------------------------- startup
def kv_bytes_per_token():
    return {"fp8_e5m2": 1024, "fp8_e4m3": 1024, "fp4_e2m1": 512}.get(S.args.kv_cache_dtype, 2048)


def kv_gb():
    return S.total * kv_bytes_per_token() / 2 / 1e9


def server_args_dict():
    d = dict(vars(S.args))
    d["served_model_name"] = S.served
    if d["mem_fraction_static"] is None:
        d["mem_fraction_static"] = 0.716
    if d["chunked_prefill_size"] is None:
        d["chunked_prefill_size"] = 4096
    if d["tokenizer_path"] is None:
        d["tokenizer_path"] = d["model_path"]
    return d


def on_signal(signum, frame):
    S.signals.append((signum, repr(frame)))


def check_signals():
    """Runs in the main thread: report a pending signal, start/finish a graceful exit."""
    while S.signals:
        sig = S.signals.popleft()
        log(f"SIGTERM received. signum={sig[0]} frame={sig[1]} "
            "Draining requests and shutting down...")
        if FAULT != "ignore_sigterm":
            S.shutting_down = True
    if S.shutting_down:
        with S.lock:
            busy = S.inflight
        if busy == 0:
            time.sleep(0.1)
            log("Gracefully exiting... Remaining number of requests 0")
            exit_now(0)


def pause(seconds):
    end = time.monotonic() + seconds
    while True:
        check_signals()
        left = end - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(left, 0.02))


def startup_fail_sigkill(frames, error):
    scheduler_traceback(frames, error)
    log("Received sigquit from a child process. It usually means the child failed.")
    kill_child()
    die_sigkill()


def main():
    global QUIET_INFO, RANK, FAULT, TOKEN_S
    args = build_parser().parse_args()
    S.args = args
    S.rng = random.Random(int(os.environ.get("FAKE_SGLANG_SEED", "0")) or None)
    if args.fake_token_s is not None:
        # Per-configuration pace (a sweep key), overriding FAKE_SGLANG_TOKEN_S: a
        # configuration's throughput set by construction, whatever else the machine runs.
        TOKEN_S = args.fake_token_s
    if args.fake_pace_jitter:
        # Run-to-run noise by construction: a quiet machine and a deterministic fake give
        # repeats that agree to 0.01%, which a test of "never precise enough" cannot use.
        TOKEN_S *= 1 + args.fake_pace_jitter * random.Random().uniform(-1, 1)
    if args.fake_fault:
        # Per-configuration fault (a sweep key), overriding FAKE_SGLANG_FAULT.
        FAULT = args.fake_fault
        if FAULT == "slow_stream":
            TOKEN_S *= 10
    QUIET_INFO = args.log_level.lower() in ("warning", "error", "critical")
    if args.tp_size > 1:
        RANK = " TP0"
    for s in (signal.SIGTERM, signal.SIGINT):
        signal.signal(s, on_signal)
    if os.environ.get("FAKE_SGLANG_SPAWN_CHILD") == "1":
        S.child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])

    cfg = read_model_config(args.model_path)
    S.vocab = int(cfg.get("vocab_size") or 32000)
    arch = (cfg.get("architectures") or ["LlamaForCausalLM"])[0]
    S.served = args.served_model_name or args.model_path
    S.total = args.max_total_tokens if args.max_total_tokens else 16384
    S.ctx_len = args.context_length or int(cfg.get("max_position_embeddings") or 4096)
    estimate = min(max(S.total * 512 // S.ctx_len, 2048), 4096)
    if args.max_running_requests:
        S.max_running = max(1, min(args.max_running_requests // max(args.dp_size, 1), estimate))
    else:
        S.max_running = max(1, min(estimate, S.total // 2))
    cpu = args.device in (None, "cpu")
    graph = "cpu graph" if cpu else "cuda graph"
    mem_kind = "available_cpu_mem" if cpu else "available_gpu_mem"
    step = STARTUP_S / 11  # number of pause() calls below on the normal path

    log(f"{os.path.dirname(os.path.abspath(__file__))}/launch_server.py:71: UserWarning: "
        "'python -m sglang.launch_server' is still supported, but 'sglang serve' is the "
        "recommended entrypoint.", prefix=False)
    log("  warnings.warn(", prefix=False)
    if args.enable_hierarchical_cache and args.disable_radix_cache:
        log("Traceback (most recent call last):", prefix=False)
        log('  File "sglang/srt/server_args.py", line 812, in __post_init__', prefix=False)
        log("ValueError: The arguments enable-hierarchical-cache and disable-radix-cache are "
            "mutually exclusive and cannot be used at the same time. Please use only one of "
            "them.", prefix=False)
        exit_now(1)
    if args.attention_backend == "intel_amx" and cpu:
        # srt/arg_groups/overrides.py, _attention_backend_platform_fallbacks (no AMX here).
        log("The current platform does not support Intel AMX, will fallback to torch_native "
            "backend.")
        args.attention_backend = "torch_native"
    if args.attention_backend == "torch_native":
        log("Cuda graph is disabled because of using torch native attention backend")
    pause(step)
    log(f"server_args={server_args_dict()!r}")
    pause(step)
    log("Init torch distributed begin.", sched=True)
    log("Init torch distributed ends. elapsed=0.01 s, mem usage=0.00 GB", sched=True)
    pause(step)
    log("Load weight begin. avail mem=20.83 GB", sched=True)
    pause(step)
    log(f"Load weight end. elapsed=0.03 s, type={arch}, avail mem=20.82 GB, "
        "mem usage=0.02 GB.", sched=True)
    pause(step)
    frames = ['  File "sglang/srt/managers/scheduler.py", line 3012, in run_scheduler_process',
              "    scheduler = Scheduler(",
              '  File "sglang/srt/model_executor/model_runner.py", line 612, in initialize',
              "    self.init_memory_pool(",]
    mfs = args.mem_fraction_static
    if FAULT == "oom_at_start" or (
            mfs is not None and args.fake_max_mfs_launch is not None
            and mfs > args.fake_max_mfs_launch + 1e-9):
        startup_fail_sigkill(frames, (
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
            f"Current value: mem_fraction_static={server_args_dict()['mem_fraction_static']}"))
    if FAULT == "cuda_oom_at_start":
        scheduler_traceback(frames, "torch.OutOfMemoryError: CUDA out of memory. Tried to "
                            "allocate 448.00 MiB.")
        log("Received sigquit from a child process. It usually means the child failed.")
        exit_now(1)
    torch_dtype = {"fp8_e5m2": "torch.float8_e5m2", "fp8_e4m3": "torch.float8_e4m3fn",
                   "fp4_e2m1": "torch.float4_e2m1fn_x2"}.get(args.kv_cache_dtype, "torch.bfloat16")
    log(f"KV Cache is allocated. dtype: {torch_dtype}, #tokens: {S.total}, "
        f"K size: {kv_gb():.2f} GB, V size: {kv_gb():.2f} GB", sched=True)
    pause(step)
    log("Memory pool end. avail mem=20.73 GB", sched=True)
    pause(step)
    if FAULT == "exit_before_ready":
        exit_now(3)
    if args.kv_cache_dtype in ("fp8_e4m3", "fp8_e5m2"):
        err = ("ValueError: CPU FP8 KV cache requires Intel AMX support."
               if args.kv_cache_dtype == "fp8_e4m3"
               else "ValueError: --kv-cache-dtype fp8_e5m2 is not supported on CPU.")
        startup_fail_sigkill(
            ['  File "sglang/srt/layers/attention/intel_amx_backend.py", line 41, in __init__',
             "    raise ValueError("], err)
    host_tokens = 0
    if args.enable_hierarchical_cache:
        # 0.5.23: --hicache-size (GB) overrides --hicache-ratio (x the device pool).
        if args.hicache_size > 0:
            host_tokens = int(args.hicache_size * 1e9 // kv_bytes_per_token())
        else:
            host_tokens = int(S.total * args.hicache_ratio) + 1
        log(f"Allocating kv hierarchical KV host pool: {host_tokens} tokens, "
            f"{host_tokens * kv_bytes_per_token() / 1e9:.2f} GB host memory.", sched=True)
        if os.environ.get("FAKE_SGLANG_HICACHE_OK") != "1":
            startup_fail_sigkill(
                ['  File "sglang/srt/mem_cache/memory_pool_host.py", line 118, in __init__',
                 "    self.kv_buffer = self.init_kv_buffer()",
                 '  File "torch/cuda/__init__.py", line 372, in _lazy_init',
                 "    torch._C._cuda_init()"],
                "RuntimeError: Found no NVIDIA driver on your system. Please check that you "
                "have an NVIDIA GPU and installed a driver from "
                "http://www.nvidia.com/Download/index.aspx")
    hier = "True" if args.enable_hierarchical_cache else "False"
    impl = "HiRadixCache" if args.enable_hierarchical_cache else "RadixCache"
    log(f"Tree cache initialized: source=default impl={impl} hybrid_swa=False "
        f"hybrid_ssm=False hierarchical={hier} streaming_wrapped=False", sched=True)
    log(f"max_total_num_tokens={S.total}, chunked_prefill_size="
        f"{server_args_dict()['chunked_prefill_size']}, max_prefill_tokens="
        f"{args.max_prefill_tokens}, max_running_requests={S.max_running}, "
        f"context_len={S.ctx_len}, {mem_kind}=20.73 GB", sched=True)
    pause(step)

    retractions = args.fake_retractions if (
        args.fake_retractions_above is None
        or (mfs is not None and mfs > args.fake_retractions_above + 1e-9)) else 0
    S.sched = Scheduler(S.total, S.max_running, args.decode_log_interval, graph, retractions)
    if not args.disable_radix_cache:
        S.sched.cache = PrefixCache(host_tokens)
    try:
        httpd = Server((args.host, args.port), Handler)
    except OSError as e:
        log(f"ERROR:    [Errno {e.errno}] error while attempting to bind on address "
            f"('{args.host}', {args.port}): {e.strerror.lower() if e.strerror else e}")
        exit_now(1)
    threading.Thread(target=httpd.serve_forever, daemon=True, name="http").start()
    log(f"INFO:     Started server process [{os.getpid()}]")
    log("INFO:     Waiting for application startup.")
    log("INFO:     Application startup complete.")
    log(f"INFO:     Uvicorn running on http://{args.host}:{args.port} (Press CTRL+C to quit)")
    pause(step)
    if FAULT != "never_ready":
        if not args.skip_server_warmup:
            info('INFO:     127.0.0.1:5555 - "GET /model_info HTTP/1.1" 200 OK')
            pause(step)
            info("Prefill batch, #new-seq: 1, #new-token: 11, #cached-token: 0, token usage: "
                 "0.00, #running-req: 0, #queue-req: 0, #pending-token: 0, "
                 f"{graph}: False, input throughput (token/s): 9.44", sched=True)
            pause(step)
            info('INFO:     127.0.0.1:5555 - "POST /generate HTTP/1.1" 200 OK')
        S.ready = True
        prompt_log(f"start {os.getpid()}")
        log("The server is fired up and ready to roll!")
    while True:
        pause(0.05)


if __name__ == "__main__":
    main()
