"""A small stand-in for the `sgl_kernel` package, for SGLang 0.5.23's CPU engine on machines
without Intel AMX and without CUDA.

Why: with SGLANG_USE_CPU_ENGINE=1 SGLang imports many `*_cpu` helpers from `sgl_kernel`. The
PyPI wheel is a CUDA build that cannot load without libcuda, and the CPU build is not published.
On the path SGLang takes here (torch-native attention, no torch.ops.sgl_kernel ops registered)
only two host-side helpers are called; they are written below with plain torch. Every other
name resolves to a function that raises NotImplementedError, so imports succeed and any
unexpected use fails loudly instead of computing something wrong.

Tied to SGLang 0.5.23's import list (scripts/setup-cpu-sglang.sh pins the version).
"""

import ctypes

import torch

__version__ = "0.0.0+sgtune-cpu-standin"


def assign_req_to_token_pool_cpu(
    req_pool_indices, req_to_token, start_offset, end_offset, out_cache_loc, pool_len=None
):
    """For request i, write the next (end_offset[i] - start_offset[i]) entries of out_cache_loc
    (taken consecutively across requests) into req_to_token[req_pool_indices[i], start:end]."""
    pos = 0
    for i in range(req_pool_indices.shape[0]):
        start = int(start_offset[i])
        end = int(end_offset[i])
        n = end - start
        if n <= 0:
            continue
        row = int(req_pool_indices[i])
        req_to_token[row, start:end] = out_cache_loc[pos : pos + n].to(req_to_token.dtype)
        pos += n


def copy_all_layer_kv_cache_cpu(data_ptrs, strides, tgt_loc, src_loc):
    """For every layer buffer (raw base pointer, row stride in bytes) copy row src_loc[j] onto
    row tgt_loc[j]; all sources are read before any target is written."""
    tgt = [int(x) for x in tgt_loc.tolist()]
    src = [int(x) for x in src_loc.tolist()]
    if not tgt:
        return
    for ptr, stride in zip(data_ptrs.tolist(), strides.tolist()):
        ptr, stride = int(ptr), int(stride)
        saved = [ctypes.string_at(ptr + s * stride, stride) for s in src]
        for t, data in zip(tgt, saved):
            ctypes.memmove(ptr + t * stride, data, stride)


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)

    def _missing(*args, **kwargs):
        raise NotImplementedError(
            f"sgl_kernel.{name} is not provided by sgtune's CPU stand-in (SGLang 0.5.23 only)"
        )

    _missing.__name__ = name
    return _missing
