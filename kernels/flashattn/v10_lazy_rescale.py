"""v08 with the O rescale skipped in warps whose rows all kept their running max: fewer instructions per tile, no change in the result.

Structure: v08's CTA unchanged (a producer warpgroup with ``cp.async`` into a 3-stage
128-byte-swizzled K/V ring on mbarriers, setmaxnreg 24/240; two consumer warpgroups that
take turns on named barriers and overlap each softmax with their own P·V). After a tile's
P·V has landed, each consumer warp votes (``__all_sync``) whether every one of its 16 rows
kept its running max; if so, alpha is exactly 1 for all of them and the 64 multiplies of
O *= alpha are skipped. The row sums l are still rescaled (two FMAs).

Hypothesis: under sustained load the card sits at its software power cap (NVML says so in
every back-to-back benchmark sample of v06 to v09, and for cuDNN too), so a kernel that
issues fewer instructions per flop runs at a higher clock. The rescale is 64 of roughly 350
instructions a consumer thread issues per kv tile; with random scores a row's max moves on
tile j with probability about 1/j, so on the benchmark's 64 tiles about half of the warps'
rescales are skipped. Predicted: a small gain (1–3 %) in back-to-back timing, none or less
in ranked timing where the card is not at its cap; exact same output as v08.

``CONFIG`` and ``SWEEP`` are v08's (3 stages chosen by v08's recorded sweep).
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
KERNEL_NAME = "attn_fwd_lazy"
DESCRIPTOR_DEFAULTS: dict[str, int] = {"K_LBO": 16, "K_SBO": 1024, "V_LBO": 16384, "V_SBO": 1024}

CONFIG: dict[str, int] = {"STAGES": 3, "PINGPONG": 1}  # v08's sweep's choice
SWEEP: list[dict[str, int]] = [{"STAGES": 3, "PINGPONG": 1}, {"STAGES": 2, "PINGPONG": 1}]
THREADS = 384


def smem_bytes(stages: int) -> int:
    """Dynamic shared memory of one CTA (as SMEM_BYTES in the .cu): slack, Q, K/V rings, mbarriers."""
    return 1024 + (1 + 2 * stages) * TILE_BYTES + 8 * (1 + 4 * stages)


__all__ = ["BLOCK_M", "BLOCK_N", "HEAD_DIM", "CONFIG", "SWEEP", "check_inputs", "custom_kernel", "make_kernel"]


def launch(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, config: Mapping[str, Any] = CONFIG,
           defines: Mapping[str, Any] | None = None, out: torch.Tensor | None = None) -> None:
    """Compile (once) and launch with ``config`` plus extra ``defines``; O into ``out`` (fp16, like q)."""
    b, h, s, d = check_inputs((q, k, v))
    all_defines = {**config, **(defines or {})}
    nbytes = smem_bytes(int(all_defines.get("STAGES", 2)))
    if nbytes > MAX_DYNAMIC_SMEM:
        raise ValueError(f"STAGES={all_defines.get('STAGES')} needs {nbytes} B of shared memory, over {MAX_DYNAMIC_SMEM}")
    if out is None or tuple(out.shape) != tuple(q.shape) or str(out.dtype) != "torch.float16" \
            or not out.is_contiguous():
        raise ValueError("out must be a contiguous float16 tensor shaped like q")
    kernel = load_module(SOURCE, defines=all_defines, device_index=q.device.index).kernel(KERNEL_NAME)
    kernel((s // BLOCK_M, b * h), (THREADS,), q, k, v, out, np.int32(s),
           np.float32(LOG2E / math.sqrt(d)), shared_mem=nbytes)


make_kernel = kernel_maker(launch, check_inputs)
custom_kernel = make_kernel(CONFIG)
