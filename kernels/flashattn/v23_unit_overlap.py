"""v21 with the boundary between two work units run as one ordinary step: the next unit's first S is
issued in the same turn as the finished unit's last P·V, and the finished unit's O is stored while the
other consumer takes its turn.

Structure: ``v23_unit_overlap.cu`` names v21's staged store (``attn_sm90_staged_store.cuh``) as the
``STORE_O`` hook of its own kernel, ``attn_sm90_unit_overlap.cuh``. That kernel is v19's persistent
kernel (``attn_sm90_units.cuh``: the same shared-memory layout, two Q buffers, the producer
warpgroup, the work units, v15's steps) with one change in the consumers: at a unit boundary one step
issues S_0 of the next unit (its Q loaded a unit ahead in the other buffer, K_0 the ring's next entry)
and O += P_{n-1} V_{n-1} of this one, runs the next unit's first softmax while the P·V finishes, then
stores the finished O and clears the accumulators. The last unit of a CTA ends with v19's last step.
The launch is v21's (v17's grid, v16's launch plan), with the cluster off as v21's sweeps chose.

Hypothesis: v21's trace of test_small (``logs/devices/h100/probes``, 20261122T2013) has a unit take
13.48 µs against 8 × 1.50 µs of steps: about 1.5 µs a unit is the boundary, where a consumer takes a
turn for the last P·V alone, stores O, takes another turn for the next S_0 alone and waits on it
before its softmax. Run as one step, the boundary costs about one step's turn; predicted test_small
5–8 % faster than v21 (4 units an SM), test_medium 1–3 % (16 tiles a unit), the benchmark unchanged
(v22 hands it to v16's kernel anyway).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import v15_kv176_multicast as v15
import v19_double_q as v19
import v21_staged_stores as v21
from launch_plans import planned_kernel
from reporter.cuda import LaunchPlan
from sm90_host import persistent_plan

if TYPE_CHECKING:
    import torch

SOURCE = Path(__file__).with_suffix(".cu")
KERNEL_NAME = "attn_fwd_unit_overlap"
CONFIG: dict[str, int] = dict(v21.CONFIG)
# v21's points (two Q buffers, 128-row tiles), with and without the cluster
SWEEP: list[dict[str, int]] = [dict(c) for c in v21.SWEEP]


def plan(q: Any, k: Any, v: Any, config: Mapping[str, Any]) -> LaunchPlan:
    """The launch on (q, k, v): v21's grid and shared memory, this version's kernel."""
    _, _, s, _ = v15.check_inputs((q, k, v))
    cluster = v15.cluster_for(s, int(config.get("CLUSTER", 2)))
    block_n, stages = int(config.get("BLOCK_N", 128)), int(config.get("STAGES", 2))
    nbytes = v21.smem_bytes(stages, block_n, int(config.get("Q_BUFFERS", 2)))
    if nbytes > v15.MAX_DYNAMIC_SMEM:
        raise ValueError(f"BLOCK_N={block_n} STAGES={stages} needs {nbytes} B of shared memory, over {v15.MAX_DYNAMIC_SMEM}")
    kernel = v19.module_of(SOURCE, config, q.device.index, cluster).kernel(KERNEL_NAME)
    return persistent_plan(kernel, q, k, v, block_n=block_n, cluster=cluster, threads=v15.THREADS, shared_mem=nbytes)


def make_kernel(config: Mapping[str, Any]) -> Callable[[Sequence[torch.Tensor]], torch.Tensor]:
    cfg = dict(config)
    return planned_kernel(lambda q, k, v: plan(q, k, v, cfg), v15.check_inputs, v19.OUT_ARG)


custom_kernel = make_kernel(CONFIG)
