"""Host code shared by the CUDA versions (v06 on): the tile geometry their kernels are written
for, the input checks, the ``custom_kernel`` built over a version's ``launch``, and the
persistent versions' grid and launch plan.

A version's ``.py`` keeps what is its own (its source, kernel name, ``CONFIG``/``SWEEP``, shared
memory layout and launch arguments) and takes the rest from here. This module compiles no CUDA
source, so importing it brings no kernel into a version's source closure (a version that imported
v06 for these constants used to carry ``v06_wgmma.cu`` in its records).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from reporter.cuda import CudaKernel, LaunchPlan, encode_tensor_map

if TYPE_CHECKING:  # torch is imported lazily: a version must import on a machine without it
    import torch

HEAD_DIM = 128
BLOCK_M = 128  # query rows per CTA (2 consumer warpgroups x 64)
BLOCK_N = 128  # key/value rows per tile (v12 on: CONFIG["BLOCK_N"]); S must be a multiple of it
TILE_BYTES = 128 * 128 * 2
MAX_DYNAMIC_SMEM = 227 * 1024  # H100 opt-in limit per block
LOG2E = 1.4426950408889634
Q_BOX = (1, BLOCK_M, 64)  # head x rows x columns of one 3-D TMA copy of Q: 64 fp16 = the 128-byte swizzle span

Launch = Callable[..., None]  # launch(q, k, v, *, config, out)


def check_inputs(data: Any) -> tuple[int, int, int, int]:
    """(B, H, S, D) of a valid (q, k, v), or ValueError; never touches the GPU."""
    if not isinstance(data, (tuple, list)) or len(data) != 3:
        raise ValueError(f"expected (q, k, v), got {type(data).__name__}")
    q, k, v = data
    for name, t in zip("qkv", (q, k, v)):
        if not (hasattr(t, "dtype") and hasattr(t, "shape") and hasattr(t, "is_contiguous")):
            raise ValueError(f"{name} is a {type(t).__name__}, not a tensor")
        if str(t.dtype) != "torch.float16":
            raise ValueError(f"{name} is {t.dtype}; this kernel takes float16")
        if t.dim() != 4:
            raise ValueError(f"{name} has shape {tuple(t.shape)}; expected (B, H, S, D)")
        if tuple(t.shape) != tuple(q.shape):
            raise ValueError(f"{name} has shape {tuple(t.shape)}, q has {tuple(q.shape)}")
        if not t.is_contiguous():
            raise ValueError(f"{name} is not contiguous")
    b, h, s, d = (int(x) for x in q.shape)
    if d != HEAD_DIM:
        raise ValueError(f"head dim {d}: this kernel is written for D = {HEAD_DIM}")
    if s <= 0 or s % BLOCK_N:
        raise ValueError(f"sequence length {s}: this kernel needs S a positive multiple of {BLOCK_N}")
    if b * h <= 0 or b * h > 65535:
        raise ValueError(f"B*H = {b * h}: the grid's y dimension takes 1..65535")
    if s >= 2**31 // HEAD_DIM:
        raise ValueError(f"sequence length {s} overflows the kernel's 32-bit row arithmetic")
    for name, t in zip("qkv", (q, k, v)):
        if not t.is_cuda:
            raise ValueError(f"{name} is on {t.device}, not on a CUDA device")
        if t.device != q.device:
            raise ValueError(f"{name} is on {t.device}, q on {q.device}")
        if t.data_ptr() % 16:
            raise ValueError(f"{name} is not 16-byte aligned (cp.async copies 16 bytes)")
    return b, h, s, d


def check_inputs_2d_tma(data: Any) -> tuple[int, int, int, int]:
    """:func:`check_inputs`, plus the limit of 2-D tensor maps over [B·H·S, 128] (v13, v14): TMA
    coordinates are signed 32-bit rows."""
    b, h, s, d = check_inputs(data)
    if b * h * s >= 2**31:
        raise ValueError(f"B*H*S = {b * h * s} rows: TMA coordinates are 32-bit, this kernel needs fewer than 2^31")
    return b, h, s, d


def check_out(q: Any, out: Any) -> None:
    """``out`` must be a contiguous float16 tensor shaped like q."""
    if out is None or tuple(out.shape) != tuple(q.shape) or str(out.dtype) != "torch.float16" \
            or not out.is_contiguous():
        raise ValueError("out must be a contiguous float16 tensor shaped like q")


def cluster_for(seqlen: int, wanted: int) -> int:
    """The cluster size a launch can use: ``wanted`` CTAs when they tile the Q blocks of a head, else 1."""
    return wanted if (seqlen // BLOCK_M) % wanted == 0 else 1


def kernel_maker(launch: Launch, check: Callable[[Any], Any] = check_inputs
                 ) -> Callable[[Mapping[str, Any]], Callable[[Sequence[torch.Tensor]], torch.Tensor]]:
    """``make_kernel(config)`` for a version's ``launch``: a ``custom_kernel(data)`` that checks the
    input (a clear error before anything is unpacked or allocated), allocates O and launches."""

    def make_kernel(config: Mapping[str, Any]) -> Callable[[Sequence[torch.Tensor]], torch.Tensor]:
        cfg = dict(config)

        def run(data: Sequence[torch.Tensor]) -> torch.Tensor:
            check(data)
            q, k, v = data
            import torch

            out = torch.empty_like(q)
            launch(q, k, v, config=cfg, out=out)
            return out

        return run

    return make_kernel


# --------------------------------------------------------------------------- persistent versions (v17 on)


@lru_cache(maxsize=None)
def sm_count(device_index: int) -> int:
    import torch

    return int(torch.cuda.get_device_properties(device_index).multi_processor_count)


def grid_ctas(seqlen: int, heads: int, cluster: int, sms: int) -> int:
    """CTAs to launch: one per SM in whole clusters, no more than there are work units' CTAs."""
    units = (seqlen // BLOCK_M) // cluster * heads
    return min(sms // cluster, units) * cluster


def persistent_plan(kernel: CudaKernel, q: Any, k: Any, v: Any, *, block_n: int, cluster: int, threads: int,
                    shared_mem: int) -> LaunchPlan:
    """The launch of a persistent kernel taking (q map, k map, v map, out, S, scale, heads): 3-D
    tensor maps over [B·H, S, 128], one CTA per SM in whole clusters (:func:`grid_ctas`)."""
    b, h, s, d = (int(x) for x in q.shape)
    view = (b * h, s, d)
    maps = [encode_tensor_map(q, Q_BOX, shape=view)] + [
        encode_tensor_map(t, (1, block_n, 64), shape=view, swizzle=128, l2_promotion=256) for t in (k, v)]
    ctas = grid_ctas(s, b * h, cluster, sm_count(q.device.index))
    return kernel.plan((ctas,), (threads,), *maps, None, np.int32(s), np.float32(LOG2E / math.sqrt(d)),
                       np.int32(b * h), shared_mem=shared_mem)
