"""v14 with v12's 176-row kv tiles: K/V multicast across a cluster of two, the partial last tile zero-filled by TMA.

Structure: v14's CTA (a TMA producer lane; K/V halves multicast to a cluster of ``CLUSTER`` =
2 CTAs, neighbouring Q blocks of one head; two consumer warpgroups of 64 query rows taking
turns and overlapping their softmax with their own P·V) with ``BLOCK_N`` = 176 kv rows per
step: S = Q·Kᵀ as eight wgmma m64n176k16, P·V as eleven m64n128k16 with P in 44 registers,
two stages of 44 KB K and V tiles. K and V are described by 3-D tensor maps [B·H, S, 128]
(box 1 × ``BLOCK_N`` × 64), so the box of the last, partial tile is zero-filled past the end of
its head's sequence by the copy engine; the consumers mask those columns' scores to -inf.
``BLOCK_N=128`` builds v14's geometry from this source.

Hypothesis: v12 put 176-row tiles on v08 and lost, but v08's producer paid for the partial
tile with a zero-filling ``cp.async`` path, and v12's own interleaved sweep (timed after we
found that sequential sweeps favour whatever runs first) put 176 rows ahead of 128 within
v12's source. With the copy engine filling the tail and the producer reduced to a lane, the
per-step costs that a wider step spreads out (barrier waits and releases, now remote ones
too, the turn, row reductions, the O rescale, wgmma fence/commit/wait) are what is left.
Predicted: 1–3 % over v14.

First build and what the SASS said: it tested for the partial last tile inside the step loop,
as v12 does (``if (j == n_tiles - 1 && tail < BLOCK_N) mask_tail(...)``). Timed interleaved
with v14 it was slower, and this source at 128 rows, v14's geometry, was slower still. ptxas
had turned the test into selects executed on every step: the loop held 88 ``FSEL`` and
about 30 % more instructions than without the test. The step body is now a template on its masking, the
loop runs the unmasked instance and the last step the masked one, and the loop holds none. The same test
sits in v12's loop, which may be why v12 lost to v08. ``MASK_IN_LOOP=1`` rebuilds the first form.

``SWEEP`` compares 176 rows (2 stages, all that fits) with v14's 128 at 2 and 3 stages, built
from this source, and the first build's in-loop test; ``CONFIG`` holds the recorded
(interleaved) sweep's choice.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from reporter.cuda import encode_tensor_map, load_module
from sm90_host import BLOCK_M, BLOCK_N, HEAD_DIM, LOG2E, MAX_DYNAMIC_SMEM, TILE_BYTES, check_inputs, cluster_for, kernel_maker

if TYPE_CHECKING:
    import torch

SOURCE = Path(__file__).with_suffix(".cu")
KERNEL_NAME = "attn_fwd_kv176_multicast"
DESCRIPTOR_DEFAULTS: dict[str, int] = {"K_LBO": 16, "K_SBO": 1024, "V_SBO": 1024}  # V_LBO: half a kv tile (BLOCK_N x 128 B)

CONFIG: dict[str, int] = {"BLOCK_N": 176, "STAGES": 2, "CLUSTER": 2}
SWEEP: list[dict[str, int]] = [{"BLOCK_N": 176, "STAGES": 2, "CLUSTER": 2}, {"BLOCK_N": 128, "STAGES": 2, "CLUSTER": 2},
                               {"BLOCK_N": 128, "STAGES": 3, "CLUSTER": 2},
                               {"BLOCK_N": 176, "STAGES": 2, "CLUSTER": 2, "MASK_IN_LOOP": 1}]
THREADS = 384
Q_BOX = (1, BLOCK_M, 64)  # head x rows x columns of one TMA copy: 64 fp16 = the 128-byte swizzle span


def smem_bytes(stages: int, block_n: int = 176) -> int:
    """Dynamic shared memory of one CTA (as SMEM_BYTES in the .cu): slack, Q, the K/V rings of
    ``block_n``-row tiles, mbarriers."""
    return 1024 + TILE_BYTES + 2 * stages * block_n * 256 + 8 * (1 + 4 * stages)


__all__ = ["BLOCK_M", "BLOCK_N", "HEAD_DIM", "CONFIG", "SWEEP", "check_inputs", "custom_kernel", "make_kernel"]


def launch(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, config: Mapping[str, Any] = CONFIG,
           defines: Mapping[str, Any] | None = None, out: torch.Tensor | None = None) -> None:
    """Compile (once) and launch with ``config`` plus extra ``defines``; O into ``out`` (fp16, like q)."""
    b, h, s, d = check_inputs((q, k, v))
    all_defines = {**config, **(defines or {})}
    all_defines["CLUSTER"] = cluster_for(s, int(all_defines.get("CLUSTER", 2)))
    block_n = int(all_defines.get("BLOCK_N", 176))
    nbytes = smem_bytes(int(all_defines.get("STAGES", 2)), block_n)
    if nbytes > MAX_DYNAMIC_SMEM:
        raise ValueError(f"STAGES={all_defines.get('STAGES')} needs {nbytes} B of shared memory, over {MAX_DYNAMIC_SMEM}")
    if out is None or tuple(out.shape) != tuple(q.shape) or str(out.dtype) != "torch.float16" \
            or not out.is_contiguous():
        raise ValueError("out must be a contiguous float16 tensor shaped like q")
    kernel = load_module(SOURCE, defines=all_defines, device_index=q.device.index).kernel(KERNEL_NAME)
    view = (b * h, s, d)
    maps = [encode_tensor_map(q, Q_BOX, shape=view)] + [
        encode_tensor_map(t, (1, block_n, 64), shape=view, swizzle=128, l2_promotion=256) for t in (k, v)]
    kernel((s // BLOCK_M, b * h), (THREADS,), *maps, out, np.int32(s),
           np.float32(LOG2E / math.sqrt(d)), shared_mem=nbytes)


make_kernel = kernel_maker(launch, check_inputs)
custom_kernel = make_kernel(CONFIG)
