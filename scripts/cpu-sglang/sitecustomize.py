"""HiCache on SGLang 0.5.23's CPU engine: two stand-ins for CUDA-only calls, loaded the way the
`sgl_kernel` stand-in beside this file is (this folder first on PYTHONPATH, so Python imports
this module at start-up in every process of the server: launcher, scheduler, detokenizer).

Why: with `--enable-hierarchical-cache` the server dies at start-up on a machine without CUDA,
and only two calls stand in the way (facts: shared/reference/hicache-on-cpu.md; the code:
`sglang/srt/mem_cache/pool_host/{common,mha}.py`):

1. The host pool's buffer is allocated by `alloc_with_host_register`, the allocator
   `ALLOC_MEMORY_FUNCS` gives every device type but npu/musa/xpu, which pins it with
   `cudaHostRegister` for DMA to a GPU. On the CPU engine both tiers are host memory: the same
   allocation, unpinned, is what a CPU-to-CPU copy needs.
2. The copy between the tiers: `pool_host/mha.py` imports the `transfer_kv_*` ops only on CUDA,
   HIP or XPU, so on CPU the first copy fails on a missing name. With `--hicache-io-backend
   direct --hicache-mem-layout layer_first` the only op used is `transfer_kv_direct`: per layer,
   copy the rows `src_indices` of the source tensor into the rows `dst_indices` of the
   destination. (`direct` with the default `page_first` layout silently becomes
   `page_first_direct`, which needs two more ops: use layer_first.)

Nothing else on the path needs CUDA: streams and events come from `get_device_module()`, which is
`torch.cpu` there, and the rest is guarded by device checks.

How: an import hook patches the two modules right after they load, and only on a machine
without CUDA (torch is imported lazily, when SGLang itself imports those modules; other Python
programs run with this folder on PYTHONPATH, such as `sglang.bench_serving` as a client, never
load them and pay nothing). Tied to SGLang 0.5.23 (scripts/setup-cpu-sglang.sh pins it), like
the `sgl_kernel` stand-in.
"""

import importlib.abc
import importlib.machinery
import sys

_COMMON = "sglang.srt.mem_cache.pool_host.common"
_MHA = "sglang.srt.mem_cache.pool_host.mha"


def _no_cuda():
    import torch

    return not torch.cuda.is_available()


def alloc_unpinned(
    dims, dtype, device, pin_memory, allocator, registration_granularity_bytes=None
):
    """`alloc_with_host_register` without the pinning: the allocator's buffer as it is. The
    attribute SGLang reads at `destroy()` says nothing was registered, so nothing is
    unregistered either."""
    buffer = allocator.allocate(dims, dtype=dtype, device=device)
    common = sys.modules.get(_COMMON)
    attr = getattr(common, "_CUDA_HOST_REGISTERED_RANGES_ATTR", None)
    if attr:
        setattr(buffer, attr, [])
    return buffer


def transfer_kv_direct(src_layers, dst_layers, src_indices, dst_indices, page_size):
    """For each layer i: dst_layers[i][dst_indices] = src_layers[i][src_indices]. The indices
    are token slots (a page is `page_size` consecutive slots, already spelled out in the index
    lists), so a row copy per index is the whole job. Reads before writes, as the kernel's
    gather-then-scatter does, so an overlap of the two lists cannot corrupt a row."""
    if len(src_layers) != len(dst_layers):
        raise ValueError(
            f"transfer_kv_direct: {len(src_layers)} source layers, {len(dst_layers)} destination"
        )
    if src_indices.numel() != dst_indices.numel():
        raise ValueError(
            f"transfer_kv_direct: {src_indices.numel()} source rows, {dst_indices.numel()} destination"
        )
    if src_indices.numel() == 0:
        return
    for src, dst in zip(src_layers, dst_layers):
        src_idx = src_indices.to(device=src.device, dtype=_long())
        dst_idx = dst_indices.to(device=dst.device, dtype=_long())
        rows = src.index_select(0, src_idx)
        dst.index_copy_(0, dst_idx, rows.to(device=dst.device, dtype=dst.dtype))


def _long():
    import torch

    return torch.int64


def _patch_common(module):
    if _no_cuda():
        # The dict is shared with pool_host/mha.py (imported by name), so one key serves both.
        module.ALLOC_MEMORY_FUNCS["cpu"] = alloc_unpinned


# The other copy ops `pool_host/mha.py` imports on CUDA: each a name that fails with the flags
# to use, rather than a NameError deep in the scheduler's first copy.
_OTHER_OPS = (
    "transfer_kv_all_layer",
    "transfer_kv_all_layer_direct_lf_pf",
    "transfer_kv_all_layer_lf_pf",
    "transfer_kv_all_layer_lf_ph",
    "transfer_kv_all_layer_mla_lf_pf",
    "transfer_kv_per_layer",
    "transfer_kv_per_layer_direct_pf_lf",
    "transfer_kv_per_layer_mla",
    "transfer_kv_per_layer_mla_pf_lf",
    "transfer_kv_per_layer_pf_lf",
    "transfer_kv_per_layer_ph_lf",
)


def _unsupported(name):
    def _raise(*args, **kwargs):
        raise NotImplementedError(
            f"{name}: sgtune's CPU stand-in copies KV between the tiers only with "
            "--hicache-io-backend direct --hicache-mem-layout layer_first"
        )

    return _raise


def _patch_mha(module):
    if not _no_cuda():
        return
    if not hasattr(module, "transfer_kv_direct"):
        module.transfer_kv_direct = transfer_kv_direct
    for name in _OTHER_OPS:
        if not hasattr(module, name):
            setattr(module, name, _unsupported(name))


_PATCHES = {_COMMON: _patch_common, _MHA: _patch_mha}


class _PatchAfterLoad(importlib.abc.MetaPathFinder):
    """Finds the two modules as Python would, and runs their patch once each has executed."""

    def find_spec(self, name, path, target=None):
        patch = _PATCHES.get(name)
        if patch is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            patch(module)

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _PatchAfterLoad())
