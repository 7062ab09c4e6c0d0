"""v08 with FA3's kv tile width for D = 128: 176 rows of K and V per step, the last tile masked.

Structure: v08's CTA (a producer warpgroup with ``cp.async`` into a 128-byte-swizzled K/V
ring on mbarriers, setmaxnreg 24/240; two consumer warpgroups of 64 query rows that take
turns on named barriers and overlap each softmax with their own P·V), with ``BLOCK_N`` kv
rows per step. At 176, S = Q·Kᵀ is eight wgmma m64n176k16 (88 accumulator registers per
thread), P·V eleven m64n128k16 with P in 44 registers. The sequence lengths here are
multiples of 128, so the last kv tile is partial: the producer zero-fills the rows past the
end (``cp.async`` with src-size 0) and the consumers set those scores to -inf before the
softmax. Shared memory: Q 32 KB + 2 stages of 44 KB K and 44 KB V tiles (208 KB). ptxas
builds it with no spills and no serialisation, registers within R0–R219 of the 240.

Hypothesis: v08's single launch keeps the tensor cores busy about three quarters of the time at
the clock it runs at. Part of the rest is per-step overhead: two mbarrier waits and releases,
a turn's barrier, the row max and sum shuffles, ex2 of alpha, the O rescale, the wgmma
fence/commit/wait. A 176-row step spreads those over 38 % more work, and each turn hands
the tensor cores a longer batch. FA3 picks 176 for this head dimension. Predicted: 2–4 % over
v08, enough to pass cuDNN in the same run.

``SWEEP`` compares 176 (2 stages, all that fits) with v08's 128 at 2 and 3 stages, built from
this same source so only the width differs; ``CONFIG`` holds the recorded sweep's choice.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from reporter.cuda import load_module
from sm90_host import BLOCK_M, BLOCK_N, HEAD_DIM, LOG2E, MAX_DYNAMIC_SMEM, TILE_BYTES, check_inputs, kernel_maker

if TYPE_CHECKING:
    import torch

SOURCE = Path(__file__).with_suffix(".cu")
KERNEL_NAME = "attn_fwd_kv176"
DESCRIPTOR_DEFAULTS: dict[str, int] = {"K_LBO": 16, "K_SBO": 1024, "V_LBO": 16384, "V_SBO": 1024}

CONFIG: dict[str, int] = {"BLOCK_N": 176, "STAGES": 2, "PINGPONG": 1}
SWEEP: list[dict[str, int]] = [
    {"BLOCK_N": 176, "STAGES": 2, "PINGPONG": 1},
    {"BLOCK_N": 128, "STAGES": 2, "PINGPONG": 1},
    {"BLOCK_N": 128, "STAGES": 3, "PINGPONG": 1},
]
THREADS = 384


def smem_bytes(stages: int, block_n: int = 176) -> int:
    """Dynamic shared memory of one CTA (as SMEM_BYTES in the .cu): slack, Q, the K/V rings of
    ``block_n``-row tiles, mbarriers."""
    return 1024 + TILE_BYTES + 2 * stages * block_n * 256 + 8 * (1 + 4 * stages)


__all__ = ["BLOCK_M", "BLOCK_N", "HEAD_DIM", "CONFIG", "SWEEP", "check_inputs", "custom_kernel", "make_kernel"]


def launch(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, config: Mapping[str, Any] = CONFIG,
           defines: Mapping[str, Any] | None = None, out: torch.Tensor | None = None) -> None:
    """Compile (once) and launch with ``config`` plus extra ``defines``; O into ``out`` (fp16, like q)."""
    all_defines = {**config, **(defines or {})}  # the configuration is checked first: it needs no tensor
    stages, block_n = int(all_defines.get("STAGES", 2)), int(all_defines.get("BLOCK_N", 176))
    if block_n not in (128, 176):
        raise ValueError(f"BLOCK_N={block_n}: the kernel is written for 128 or 176 kv rows per tile")
    nbytes = smem_bytes(stages, block_n)
    if nbytes > MAX_DYNAMIC_SMEM:
        raise ValueError(f"STAGES={stages} with BLOCK_N={block_n} needs {nbytes} B of shared memory, "
                         f"over {MAX_DYNAMIC_SMEM}")
    b, h, s, d = check_inputs((q, k, v))
    if out is None or tuple(out.shape) != tuple(q.shape) or str(out.dtype) != "torch.float16" \
            or not out.is_contiguous():
        raise ValueError("out must be a contiguous float16 tensor shaped like q")
    kernel = load_module(SOURCE, defines=all_defines, device_index=q.device.index).kernel(KERNEL_NAME)
    kernel((s // BLOCK_M, b * h), (THREADS,), q, k, v, out, np.int32(s),
           np.float32(LOG2E / math.sqrt(d)), shared_mem=nbytes)


make_kernel = kernel_maker(launch, check_inputs)
custom_kernel = make_kernel(CONFIG)
