"""The launch of v15's kernel built from another source (a version that sets its hooks): v16's planned
launch, one CTA per 128-row Q tile in v15's clusters, v15's shared memory and tensor maps.

v24 and v27 each wrote this plan out in their own files before it was shared; their records pin those
files, so they keep their copies. A later version built on v15's kernel plans its launch here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

import v15_kv176_multicast as v15
import v16_launch_plan as v16
from launch_plans import planned_kernel
from reporter.cuda import LaunchPlan, encode_tensor_map, load_module

if TYPE_CHECKING:
    import torch


def plan(source: Path, q: Any, k: Any, v: Any, config: Mapping[str, Any]) -> LaunchPlan:
    """v16's planned launch of v15's kernel as ``source`` builds it with ``config``."""
    b, h, s, d = v15.check_inputs((q, k, v))
    defines = dict(config)
    defines["CLUSTER"] = v15.cluster_for(s, int(defines.get("CLUSTER", 2)))
    block_n = int(defines.get("BLOCK_N", 176))
    nbytes = v15.smem_bytes(int(defines.get("STAGES", 2)), block_n)
    if nbytes > v15.MAX_DYNAMIC_SMEM:
        raise ValueError(f"STAGES={defines.get('STAGES')} needs {nbytes} B of shared memory, over {v15.MAX_DYNAMIC_SMEM}")
    kernel = load_module(source, defines=defines, device_index=q.device.index).kernel(v15.KERNEL_NAME)
    view = (b * h, s, d)
    maps = [encode_tensor_map(q, v15.Q_BOX, shape=view)] + [
        encode_tensor_map(t, (1, block_n, 64), shape=view, swizzle=128, l2_promotion=256) for t in (k, v)]
    return kernel.plan((s // v15.BLOCK_M, b * h), (v15.THREADS,), *maps, None, np.int32(s),
                       np.float32(v15.LOG2E / math.sqrt(d)), shared_mem=nbytes)


def kernel_maker(source: Path) -> Callable[[Mapping[str, Any]], Callable[[Sequence[torch.Tensor]], torch.Tensor]]:
    """``make_kernel(config)`` for a version whose ``source`` builds v15's kernel: its planned ``custom_kernel``."""

    def make_kernel(config: Mapping[str, Any]) -> Callable[[Sequence[torch.Tensor]], torch.Tensor]:
        cfg = dict(config)
        return planned_kernel(lambda q, k, v: plan(source, q, k, v, cfg), v15.check_inputs, v16.OUT_ARG)

    return make_kernel
