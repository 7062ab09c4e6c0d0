"""v17's persistent kernel with two Q buffers and a Q warp: the next unit's Q is loaded a unit ahead, not at the boundary.

Structure: the kernel is in ``attn_sm90_double_q.cuh`` (v20 and v21 build it with their own
epilogues), on v15's steps (``attn_sm90_kv176.cuh``) and ``trace.cuh``. The grid and the work
units are v17's (one cluster of two CTAs per pair of SMs, units of two neighbouring 128-row Q
blocks of one (batch, head), K/V halves multicast). Shared memory
holds two Q tiles; unit u uses buffer u % 2, each with a full and an empty mbarrier. In the
producer warpgroup, warp 0's lane loads the K/V ring as in v17 and warp 1's lane loads Q: unit
u + 1's Q as soon as the consumers released unit u - 1's. Two Q tiles only fit beside a two-stage
ring of 128-row K/V tiles (193 KB; v15's 176-row tiles would need 241 KB), so v19 takes those. The
epilogue is a hook (``STORE_O``), v17's stores by default. The host side is v16's launch plan,
shared with v20 through :func:`plan`.

Hypothesis: v18's trace of v17 on test_small (tools/trace_probe.py, kept under logs/devices/h100/
probes/) puts the missing time at the unit boundaries, not in the steps: consumer 0 finishes a
unit's epilogue and then waits microseconds for a Q that was requested only after the unit's last
S and comes from DRAM while every CTA asks for its own at once. With the Q a unit ahead, the first
S of a unit can start as soon as the previous unit's last P·V has been issued. Predicted:
test_small 8–15 % faster than v17; the benchmark within a few percent of v17 (the 128-row tiles
tied with the 176-row ones in v17's sweep).
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
KERNEL_NAME = "attn_fwd_double_q"
CONFIG: dict[str, int] = {"BLOCK_N": 128, "STAGES": 2, "CLUSTER": 2, "Q_BUFFERS": 2, "FIRST_LOADS_IN_ORDER": 1}
SWEEP: list[dict[str, int]] = [
    {"BLOCK_N": 128, "STAGES": 2, "CLUSTER": 2, "Q_BUFFERS": 2, "FIRST_LOADS_IN_ORDER": 1},
    {"BLOCK_N": 128, "STAGES": 2, "CLUSTER": 2, "Q_BUFFERS": 2, "FIRST_LOADS_IN_ORDER": 0},
    {"BLOCK_N": 128, "STAGES": 2, "CLUSTER": 1, "Q_BUFFERS": 2, "FIRST_LOADS_IN_ORDER": 1},
    {"BLOCK_N": 176, "STAGES": 2, "CLUSTER": 2, "Q_BUFFERS": 1, "FIRST_LOADS_IN_ORDER": 1},
]
OUT_ARG = 3  # (q map, k map, v map, out, S, scale, heads)


def smem_bytes(stages: int, block_n: int, q_buffers: int = 2) -> int:
    """Dynamic shared memory of one CTA (V19_SMEM_BYTES in the .cu): slack, the Q tiles, the K/V
    ring, the ring's barriers and a full and an empty barrier per Q tile."""
    return 1024 + q_buffers * v15.TILE_BYTES + 2 * stages * block_n * 256 + 8 * (4 * stages + 2 * q_buffers)


def module_of(source: Path, config: Mapping[str, Any], device_index: int, cluster: int) -> CudaModule:
    """``source`` (v19's or a version built on it) compiled for ``config`` and a launch's cluster size."""
    return load_module(source, defines={**config, "CLUSTER": cluster}, device_index=device_index)


def module(config: Mapping[str, Any], device_index: int, cluster: int) -> CudaModule:
    return module_of(SOURCE, config, device_index, cluster)


def plan(source: Path, q: Any, k: Any, v: Any, config: Mapping[str, Any],
         smem: Callable[[int, int, int], int] = smem_bytes) -> LaunchPlan:
    """The launch of ``source``'s kernel on (q, k, v): v17's grid, ``smem(stages, block_n,
    q_buffers)`` bytes of shared memory (v19's layout unless a version adds to it)."""
    b, h, s, d = v15.check_inputs((q, k, v))
    cluster = v15.cluster_for(s, int(config.get("CLUSTER", 2)))
    block_n, stages = int(config.get("BLOCK_N", 128)), int(config.get("STAGES", 2))
    q_buffers = int(config.get("Q_BUFFERS", 2))
    nbytes = smem(stages, block_n, q_buffers)
    if nbytes > v15.MAX_DYNAMIC_SMEM:
        raise ValueError(f"BLOCK_N={block_n} STAGES={stages} with {q_buffers} Q buffers needs {nbytes} B of shared "
                         f"memory, over {v15.MAX_DYNAMIC_SMEM}")
    kernel = module_of(source, config, q.device.index, cluster).kernel(KERNEL_NAME)
    return persistent_plan(kernel, q, k, v, block_n=block_n, cluster=cluster, threads=v15.THREADS, shared_mem=nbytes)


def make_kernel(config: Mapping[str, Any]) -> Callable[[Sequence[torch.Tensor]], torch.Tensor]:
    cfg = dict(config)
    return planned_kernel(lambda q, k, v: plan(SOURCE, q, k, v, cfg), v15.check_inputs, OUT_ARG)


custom_kernel = make_kernel(CONFIG)
