"""v15 made persistent: clusters stay resident and loop over work units, loading the next unit's Q and K/V during the current epilogue.

Structure: ``v17_persistent.cu`` includes v15's steps (``attn_sm90_kv176.cuh``) and adds one kernel. The grid is one
cluster of two CTAs per pair of SMs (``min(#SMs / 2, #units)`` clusters, one 227 KB CTA per
SM); a work unit is two neighbouring 128-row Q blocks of one (batch, head), and cluster c takes
units c, c + #clusters, .... Within a unit every step is v15's: the producer lane multicasts
each 176-row K/V tile's halves to both CTAs, the two consumer warpgroups take turns and overlap
their softmax with their own P·V, and the partial last tile is zero-filled by TMA and masked.
Across units the K/V ring's counter, the Q buffer's full/empty barriers and the turns run on,
so the producer starts on the next unit's Q as soon as the last S of the current one has landed
and on its K/V as soon as ring slots free up. The host side is v16's: a launch plan per input.

Hypothesis: a v15 CTA pays a fixed cost besides its kv steps: launch and barrier set-up, the
wait for its first Q and K/V tiles with the tensor cores idle, and an epilogue during which
nothing is loaded. Fitted on the records, about 2 µs per 176-row step and 11–14 µs per CTA, so
on test_small (six steps a CTA, four CTAs per SM) the fixed part is over a third of the time,
and even the benchmark's 47 steps pay about a tenth. v09 made v08 persistent and lost on the
benchmark; v08's producer was a warpgroup copying with cp.async, whose next tile competed with
the consumers for issue slots, where v15's is one TMA lane. Predicted: test_small 20–35 %
faster than v16, test_medium 5–15 %, the benchmark 0–8 %.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any


import v15_kv176_multicast as v15
from launch_plans import planned_kernel
from reporter.cuda import LaunchPlan, load_module
from sm90_host import grid_ctas, persistent_plan  # noqa: F401 (grid_ctas: v17's grid, named here)

if TYPE_CHECKING:
    import torch

SOURCE = Path(__file__).with_suffix(".cu")
KERNEL_NAME = "attn_fwd_persistent"
CONFIG: dict[str, int] = {"BLOCK_N": 176, "STAGES": 2, "CLUSTER": 2}
SWEEP: list[dict[str, int]] = [{"BLOCK_N": 176, "STAGES": 2, "CLUSTER": 2}, {"BLOCK_N": 128, "STAGES": 2, "CLUSTER": 2},
                               {"BLOCK_N": 128, "STAGES": 3, "CLUSTER": 2}]
OUT_ARG = 3  # (q map, k map, v map, out, S, scale, heads)


def _plan(q: Any, k: Any, v: Any, config: Mapping[str, Any]) -> LaunchPlan:
    b, h, s, d = v15.check_inputs((q, k, v))
    defines = dict(config)
    cluster = v15.cluster_for(s, int(defines.get("CLUSTER", 2)))
    defines["CLUSTER"] = cluster
    block_n = int(defines.get("BLOCK_N", 176))
    nbytes = v15.smem_bytes(int(defines.get("STAGES", 2)), block_n) + 8  # + the Q empty barrier
    if nbytes > v15.MAX_DYNAMIC_SMEM:
        raise ValueError(f"STAGES={defines.get('STAGES')} needs {nbytes} B of shared memory, "
                         f"over {v15.MAX_DYNAMIC_SMEM}")
    kernel = load_module(SOURCE, defines=defines, device_index=q.device.index).kernel(KERNEL_NAME)
    return persistent_plan(kernel, q, k, v, block_n=block_n, cluster=cluster, threads=v15.THREADS, shared_mem=nbytes)


def make_kernel(config: Mapping[str, Any]) -> Callable[[Sequence[torch.Tensor]], torch.Tensor]:
    cfg = dict(config)
    return planned_kernel(lambda q, k, v: _plan(q, k, v, cfg), v15.check_inputs, OUT_ARG)


custom_kernel = make_kernel(CONFIG)
