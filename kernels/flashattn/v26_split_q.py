"""v19's persistent kernel on v15's 176-row K/V tiles, with Q held per consumer warpgroup: three 16 KB slots of 64 query rows instead of two 32 KB tiles.

Structure: the kernel is in ``attn_sm90_split_q.cuh``, on ``attn_sm90_units.cuh`` (v19's work units,
its K/V lane and ring barriers) and v15's steps (``attn_sm90_kv176.cuh``). A piece is one consumer
warpgroup's 64 rows of a unit's Q; piece k = 2 * unit + warpgroup goes into slot k % 3, loaded by the
producer's Q warp once piece k - 3 has left it. S is issued from a piece (its column halves 8 KB
apart); everything else in a step is v15's. The epilogue is v17's (f16x2 pairs from the
accumulators): the 225 KB of tiles leave no room for v21's staging buffers. The launch is v17's grid
(one CTA an SM, whole clusters) with a Q tensor map of 64-row boxes.

Hypothesis: on the benchmark (47 kv steps a unit) v16 keeps v15's 176-row steps but pays at every
CTA's start for its Q and first K/V tiles from DRAM with the tensor cores idle; v21 loads the next
unit's Q a unit ahead but on 128-row steps, and is 1.6 % behind v16 there under the course's harness.
With the pieces, 176-row steps and a Q loaded ahead fit in one CTA. Predicted: the benchmark 1–3 %
faster than v16, test_medium (24 steps a unit) within a few percent of v21, test_small (6 steps a
unit, a tail of 144 masked keys in the last) behind v21.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

import v15_kv176_multicast as v15
import v19_double_q as v19
from launch_plans import planned_kernel
from reporter.cuda import LaunchPlan, encode_tensor_map
from sm90_host import grid_ctas, sm_count

if TYPE_CHECKING:
    import torch

SOURCE = Path(__file__).with_suffix(".cu")
KERNEL_NAME = "attn_fwd_split_q"
# without the cluster: its sweep on the benchmark put CLUSTER 1 measurably ahead (the worklog binds it)
CONFIG: dict[str, int] = {"BLOCK_N": 176, "STAGES": 2, "CLUSTER": 1, "FIRST_LOADS_IN_ORDER": 1}
SWEEP: list[dict[str, int]] = [
    {"BLOCK_N": 176, "STAGES": 2, "CLUSTER": 2, "FIRST_LOADS_IN_ORDER": 1},
    {"BLOCK_N": 176, "STAGES": 2, "CLUSTER": 1, "FIRST_LOADS_IN_ORDER": 1},
]
PIECE_ROWS = 64  # one consumer warpgroup's query rows
Q_SLOTS = 3


def smem_bytes(stages: int, block_n: int) -> int:
    """SPLIT_Q_SMEM_BYTES in the header: slack, three 16 KB Q slots, the K/V ring, the ring's barriers
    and a full and an empty barrier per slot."""
    return 1024 + Q_SLOTS * PIECE_ROWS * 256 + 2 * stages * block_n * 256 + 8 * (4 * stages + 2 * Q_SLOTS)


def plan(q: Any, k: Any, v: Any, config: Mapping[str, Any]) -> LaunchPlan:
    """The launch on (q, k, v): one CTA an SM in whole clusters, Q boxes of one piece's 64 rows."""
    b, h, s, d = v15.check_inputs((q, k, v))
    cluster = v15.cluster_for(s, int(config.get("CLUSTER", 2)))
    block_n, stages = int(config.get("BLOCK_N", 176)), int(config.get("STAGES", 2))
    nbytes = smem_bytes(stages, block_n)
    if nbytes > v15.MAX_DYNAMIC_SMEM:
        raise ValueError(f"BLOCK_N={block_n} STAGES={stages} needs {nbytes} B of shared memory, over {v15.MAX_DYNAMIC_SMEM}")
    kernel = v19.module_of(SOURCE, config, q.device.index, cluster).kernel(KERNEL_NAME)
    view = (b * h, s, d)
    maps = [encode_tensor_map(q, (1, PIECE_ROWS, 64), shape=view)] + [
        encode_tensor_map(t, (1, block_n, 64), shape=view, swizzle=128, l2_promotion=256) for t in (k, v)]
    ctas = grid_ctas(s, b * h, cluster, sm_count(q.device.index))
    return kernel.plan((ctas,), (v15.THREADS,), *maps, None, np.int32(s), np.float32(v15.LOG2E / math.sqrt(d)),
                       np.int32(b * h), shared_mem=nbytes)


def make_kernel(config: Mapping[str, Any]) -> Callable[[Sequence[torch.Tensor]], torch.Tensor]:
    cfg = dict(config)
    return planned_kernel(lambda q, k, v: plan(q, k, v, cfg), v15.check_inputs, v19.OUT_ARG)


custom_kernel = make_kernel(CONFIG)
