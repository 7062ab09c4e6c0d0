"""v13 with K and V shared by a cluster of two CTAs: each copies half of every tile and multicasts it to both.

Structure: v13's CTA (a TMA producer lane; two consumer warpgroups of 64 query rows taking
turns on named barriers, each overlapping its softmax with its own P·V; a ``STAGES``-deep K/V
ring in 128-byte-swizzled shared memory), launched in clusters of ``CLUSTER`` = 2 CTAs
(``__cluster_dims__``): neighbouring Q blocks of one (batch, head). CTA rank r copies the r-th
64-column half of each K/V tile with ``.multicast::cluster``, so both CTAs receive the whole
tile from two copies. A slot is refilled only after the consumers of both CTAs released it:
each consumer warp arrives on the empty barrier of every CTA in the cluster (its own, and
the neighbour's through ``mapa`` + ``mbarrier.arrive.shared::cluster``), empty barriers count 16 warps, and a cluster barrier
after the barriers' initialisation and at the very end keeps either CTA from being written
to before it is ready or after it exited. Q is copied per CTA. When the number of Q blocks is
odd (a cluster must tile the grid) the same source is built with ``CLUSTER=1``, which is v13.

Hypothesis: every CTA reads its head's whole K and V, about 69 GB from L2 into shared memory
per benchmark call (ncu, v08), with the L2 at about 57 % of its peak throughput. At the
card's power cap, moving half of those bytes saves energy that the clock gets back; FA3's
code has this path for its forward kernel. The risk: a cluster needs two free SMs of one GPC
at once, and a 227 KB CTA fills an SM, so a GPC with an odd number of SMs leaves one idle;
the remote releases also add a round trip to every slot's turnover. Predicted: 1–3 % over
v13 if the traffic matters, a loss of a few percent if the idle SMs do.

First build and what ncu said: the remote releases were written as
``mbarrier.arrive.release.cluster``, and a call took about 26 ms instead of v13's 14 with the
SMs busy a third of the time; ncu's warp states put 38 % of the cycles between instructions
on memory-barrier stalls: each cluster-scope release carries a fence. The releases now use
``mbarrier.arrive``'s default (release at CTA scope), as CUTLASS's cluster barrier does;
``RELEASE_CLUSTER=1`` rebuilds the first form.

``SWEEP`` tries 3 and 2 stages in clusters of 2, the first build's releases
(``RELEASE_CLUSTER=1``), and ``CLUSTER=1`` (v13 built from this source) as the ablation.
``CONFIG`` holds the choice of the first recorded sweep with these releases: 2 stages. That
sweep timed 2 stages first, on the coolest card, so ``SWEEP`` now starts with 3 stages and
the next sweep checks the choice against the order the card warms up in.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from reporter.cuda import encode_tensor_map, load_module
from sm90_host import BLOCK_M, BLOCK_N, HEAD_DIM, LOG2E, MAX_DYNAMIC_SMEM, TILE_BYTES, cluster_for, kernel_maker
from sm90_host import check_inputs_2d_tma as check_inputs

if TYPE_CHECKING:
    import torch

SOURCE = Path(__file__).with_suffix(".cu")
KERNEL_NAME = "attn_fwd_multicast"
DESCRIPTOR_DEFAULTS: dict[str, int] = {"K_LBO": 16, "K_SBO": 1024, "V_LBO": 16384, "V_SBO": 1024}

CONFIG: dict[str, int] = {"STAGES": 2, "CLUSTER": 2}
SWEEP: list[dict[str, int]] = [{"STAGES": 3, "CLUSTER": 2}, {"STAGES": 2, "CLUSTER": 2},
                               {"STAGES": 3, "CLUSTER": 2, "RELEASE_CLUSTER": 1}, {"STAGES": 3, "CLUSTER": 1}]
THREADS = 384
BOX = (BLOCK_N, 64)  # rows x columns of one TMA copy: 64 fp16 = the 128-byte swizzle span


def smem_bytes(stages: int) -> int:
    """Dynamic shared memory of one CTA (as SMEM_BYTES in the .cu): slack, Q, K/V rings, mbarriers."""
    return 1024 + (1 + 2 * stages) * TILE_BYTES + 8 * (1 + 4 * stages)


__all__ = ["BLOCK_M", "BLOCK_N", "HEAD_DIM", "CONFIG", "SWEEP", "check_inputs", "custom_kernel", "make_kernel"]


def launch(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, config: Mapping[str, Any] = CONFIG,
           defines: Mapping[str, Any] | None = None, out: torch.Tensor | None = None) -> None:
    """Compile (once) and launch with ``config`` plus extra ``defines``; O into ``out`` (fp16, like q)."""
    b, h, s, d = check_inputs((q, k, v))
    all_defines = {**config, **(defines or {})}
    all_defines["CLUSTER"] = cluster_for(s, int(all_defines.get("CLUSTER", 2)))
    nbytes = smem_bytes(int(all_defines.get("STAGES", 2)))
    if nbytes > MAX_DYNAMIC_SMEM:
        raise ValueError(f"STAGES={all_defines.get('STAGES')} needs {nbytes} B of shared memory, over {MAX_DYNAMIC_SMEM}")
    if out is None or tuple(out.shape) != tuple(q.shape) or str(out.dtype) != "torch.float16" \
            or not out.is_contiguous():
        raise ValueError("out must be a contiguous float16 tensor shaped like q")
    kernel = load_module(SOURCE, defines=all_defines, device_index=q.device.index).kernel(KERNEL_NAME)
    rows = b * h * s
    maps = [encode_tensor_map(t, BOX, shape=(rows, d), swizzle=128, l2_promotion=256) for t in (q, k, v)]
    kernel((s // BLOCK_M, b * h), (THREADS,), *maps, out, np.int32(s),
           np.float32(LOG2E / math.sqrt(d)), shared_mem=nbytes)


make_kernel = kernel_maker(launch, check_inputs)
custom_kernel = make_kernel(CONFIG)
