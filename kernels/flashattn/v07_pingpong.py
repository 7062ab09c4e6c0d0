"""v06 plus FlashAttention-3's inter-warpgroup ping-pong: the two consumer warpgroups take turns on the tensor cores.

Structure: v06's CTA (a producer warpgroup copying Q once and K/V tiles into a STAGES-deep
128-byte-swizzled shared ring with cp.async + mbarriers, two consumer warpgroups of 64
query rows using wgmma m64n128k16, online softmax with exp2, O += P·V with P from
registers). New: two named barriers, TURN[0] and TURN[1] (ids 1 and 2, 256 threads each).
A consumer ``bar.sync``s its own TURN before issuing its wgmma and ``bar.arrive``s the other's
right after the issue, so the warpgroups alternate: while one runs its softmax the other's
products occupy the tensor cores. Consumer 1 arrives once before its loop (consumer 0 goes
first) and skips its arrive on its last step, so each barrier gets exactly as many arrive
phases as syncs (the counting argument is in the .cu's header comment).

Two schedules (define ``PIPELINE``):

* 1, FA3's full schedule: per kv tile j (and one extra step), the turn issues S_j = Q·K_jᵀ and
  O += P_{j-1}·V_{j-1} together; S_j is waited for alone (wait_group 1), its softmax runs
  while P·V is still in flight, then O is rescaled. It needs S, O and P live at once.
  nvcc 13.0's ptxas serialises the wgmma (C7512, "insufficient register resources") and
  spills 232 B with the 24/240 setmaxnreg split under ``__launch_bounds__(384, 1)``, and
  still does so (166 registers used, 240 B spilled) with ``PRODUCER_WARPS=1`` (one producer
  warp, 288 threads, no setmaxnreg: a 224-register cap that ptxas does not use), so the cap is
  not the whole story. Off by default; in the SWEEP so the GPU run times it anyway.
* 0 (default): the turn covers only S_j = Q·K_jᵀ; softmax, rescale and O += P_j·V_j follow
  outside the turn as in v06. Builds clean (168 registers, no spills, no C7512).

``PRODUCER_WARPS`` (4 default: v06's producer warpgroup; 1: a single producer warp issuing all
cp.async, no setmaxnreg) is a register-budget experiment for ``PIPELINE=1``.

The idea over v06: order the two consumers' tensor-core work explicitly instead of leaving
it to the warp schedulers. Hypothesis: in v06 both warpgroups tend to reach their Q·Kᵀ at
the same time and then their softmax at the same time, so the tensor cores idle while both
do exponentials; forcing alternation makes one warpgroup's softmax overlap the other's
GEMMs. The quoted v06 self-test on the H100 (v06 16.51 ms, cuDNN 14.44 ms on
(4, 64, 8192, 128); INTRA_WG_OVERLAP=1 at 20.9 ms when it spilled) says the spilling
schedule is a loss, so only the clean lean ping-pong is the default; it should gain where
v06's two consumers collide on the tensor cores, less than the full FA3 schedule would.
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
KERNEL_NAME = "attn_fwd_pingpong"
DESCRIPTOR_DEFAULTS: dict[str, int] = {"K_LBO": 16, "K_SBO": 1024, "V_LBO": 16384, "V_SBO": 1024}

CONFIG: dict[str, int] = {"STAGES": 3, "PIPELINE": 0}  # the recorded sweep of 2026-11-22 chose 3 stages
SWEEP: list[dict[str, int]] = [
    {"STAGES": 2, "PIPELINE": 0},
    {"STAGES": 3, "PIPELINE": 0},
    {"STAGES": 2, "PIPELINE": 1},
    {"STAGES": 3, "PIPELINE": 1},
]


def threads(defines: Mapping[str, Any]) -> int:
    return 256 + 32 * int(defines.get("PRODUCER_WARPS", 4))


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
    kernel((s // BLOCK_M, b * h), (threads(all_defines),), q, k, v, out, np.int32(s),
           np.float32(LOG2E / math.sqrt(d)), shared_mem=nbytes)


make_kernel = kernel_maker(launch, check_inputs)
custom_kernel = make_kernel(CONFIG)
