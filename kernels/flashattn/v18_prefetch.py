"""v17 with the next work unit prefetched into L2: the loads at a unit's start stop waiting for DRAM.

Structure: ``v18_prefetch.cu`` includes v15's steps (``attn_sm90_kv176.cuh``) and ``trace.cuh`` (timeline
marks, compiled out unless ``TRACE=1``) and holds one kernel, v17's persistent loop plus a
prefetch warp. The grid, the work units and the host side are v17's: one cluster of two CTAs per
pair of SMs looping over units of two neighbouring 128-row Q blocks of one (batch, head), a
launch plan per input. In the producer warpgroup, warp 0's lane loads Q and the K/V ring as in
v17; warp 1 (idle until now) waits on each unit's Q barrier and then issues
``cp.async.bulk.prefetch.tensor`` for the next unit: this CTA's Q block and, of the first
``PREFETCH_KV`` K and V tiles, the half this CTA multicasts. Nothing in shared memory or the
barriers changes.

Hypothesis: on test_small every cluster starts its units at nearly the same moment (same work,
same start), so at each unit boundary all 132 CTAs ask DRAM for a fresh Q block (4.2 MB in all)
and the first K/V tiles of 16 new heads, with the tensor cores idle until they land. v17's
test_small time is well above what its benchmark throughput predicts for the same kv steps (the
worklog binds both figures); this wait would be most of the difference. Prefetching one unit
ahead spreads that traffic over the previous unit's steps. Predicted: test_small 8–12 % faster
than v17, test_medium a few percent, the benchmark unchanged (47 steps a unit hide the boundary).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any


import v15_kv176_multicast as v15
from launch_plans import planned_kernel
from reporter.cuda import CudaModule, LaunchPlan, load_module
from sm90_host import persistent_plan

if TYPE_CHECKING:
    import torch

SOURCE = Path(__file__).with_suffix(".cu")
KERNEL_NAME = "attn_fwd_prefetch"
CONFIG: dict[str, int] = {"BLOCK_N": 176, "STAGES": 2, "CLUSTER": 2, "PREFETCH": 1, "PREFETCH_KV": 8}
SWEEP: list[dict[str, int]] = [
    {"BLOCK_N": 176, "STAGES": 2, "CLUSTER": 2, "PREFETCH": 1, "PREFETCH_KV": 8},
    {"BLOCK_N": 176, "STAGES": 2, "CLUSTER": 2, "PREFETCH": 1, "PREFETCH_KV": 2},
    {"BLOCK_N": 176, "STAGES": 2, "CLUSTER": 2, "PREFETCH": 1, "PREFETCH_KV": 0},
    {"BLOCK_N": 176, "STAGES": 2, "CLUSTER": 2, "PREFETCH": 0, "PREFETCH_KV": 0},
    {"BLOCK_N": 128, "STAGES": 3, "CLUSTER": 2, "PREFETCH": 1, "PREFETCH_KV": 8},
]
OUT_ARG = 3  # (q map, k map, v map, out, S, scale, heads)


def module(config: Mapping[str, Any], device_index: int, cluster: int) -> CudaModule:
    """The compiled source for ``config`` (with the cluster size a launch can use)."""
    return load_module(SOURCE, defines={**config, "CLUSTER": cluster}, device_index=device_index)


def _plan(q: Any, k: Any, v: Any, config: Mapping[str, Any]) -> LaunchPlan:
    b, h, s, d = v15.check_inputs((q, k, v))
    cluster = v15.cluster_for(s, int(config.get("CLUSTER", 2)))
    block_n = int(config.get("BLOCK_N", 176))
    nbytes = v15.smem_bytes(int(config.get("STAGES", 2)), block_n) + 8  # + the Q empty barrier
    if nbytes > v15.MAX_DYNAMIC_SMEM:
        raise ValueError(f"STAGES={config.get('STAGES')} needs {nbytes} B of shared memory, "
                         f"over {v15.MAX_DYNAMIC_SMEM}")
    kernel = module(config, q.device.index, cluster).kernel(KERNEL_NAME)
    return persistent_plan(kernel, q, k, v, block_n=block_n, cluster=cluster, threads=v15.THREADS, shared_mem=nbytes)


def make_kernel(config: Mapping[str, Any]) -> Callable[[Sequence[torch.Tensor]], torch.Tensor]:
    cfg = dict(config)
    return planned_kernel(lambda q, k, v: _plan(q, k, v, cfg), v15.check_inputs, OUT_ARG)


custom_kernel = make_kernel(CONFIG)
