"""v08 made persistent: one CTA per SM loops over the Q blocks, and its producer loads the next block's K/V and Q while the consumers finish the current one.

Structure: v08's CTA (a producer warpgroup with ``cp.async`` into a ``STAGES``-deep
128-byte-swizzled K/V ring on mbarriers, setmaxnreg 24/240; two consumer warpgroups of 64
query rows that take turns on named barriers and overlap each softmax with their own
P·V), launched as ``min(#SMs, #tiles)`` CTAs. A work tile is one 128-row Q block of one
(batch, head); CTA c takes tiles c, c + #CTAs, ..., block-fastest, so the CTAs in flight
share two or three heads' K/V in L2 as before. The ring's slot and phase come from one
counter running over all of a CTA's kv tiles, the single Q buffer has a full and an empty
mbarrier (released as soon as a tile's last S = Q·Kᵀ landed), and the turns run on across
tiles (consumer 1 skips its arrive only on its very last step), so nothing waits at a tile
boundary except on data.

Hypothesis: v08 pays a cold start and a bare epilogue per CTA, about 124 times per SM on the
benchmark: the first Q and K/V tiles arrive from memory while the tensor cores idle, and
nothing is loaded while O is written. A v08 run puts a test_medium kv tile (32 per CTA) at
a visibly higher cost than a benchmark one (64 per CTA), which is what a fixed per-CTA cost
looks like. With the producer running ahead across tiles that cost should mostly vanish:
predicted 3–6 % over v08 on the benchmark, more on the smaller cases.

``SWEEP`` tries 2 and 3 stages; ``CONFIG`` holds the recorded sweep's choice.
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
KERNEL_NAME = "attn_fwd_persistent"
DESCRIPTOR_DEFAULTS: dict[str, int] = {"K_LBO": 16, "K_SBO": 1024, "V_LBO": 16384, "V_SBO": 1024}

CONFIG: dict[str, int] = {"STAGES": 3}
SWEEP: list[dict[str, int]] = [{"STAGES": 2}, {"STAGES": 3}]
THREADS = 384


def smem_bytes(stages: int) -> int:
    """Dynamic shared memory of one CTA (as SMEM_BYTES in the .cu): slack, Q, K/V rings, mbarriers."""
    return 1024 + (1 + 2 * stages) * TILE_BYTES + 8 * (2 + 4 * stages)


_SM_COUNT: dict[int | None, int] = {}


def persistent_grid(device_index: int | None, n_work: int) -> int:
    """One CTA per SM (one fits: 224 KB of shared memory, 384 threads at 168 registers), never more CTAs than tiles."""
    if device_index not in _SM_COUNT:
        import torch

        _SM_COUNT[device_index] = int(torch.cuda.get_device_properties(device_index).multi_processor_count)
    return max(1, min(_SM_COUNT[device_index], n_work))


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
    n_work = (s // BLOCK_M) * b * h
    kernel((persistent_grid(q.device.index, n_work),), (THREADS,), q, k, v, out, np.int32(s), np.int32(n_work),
           np.float32(LOG2E / math.sqrt(d)), shared_mem=nbytes)


make_kernel = kernel_maker(launch, check_inputs)
custom_kernel = make_kernel(CONFIG)
