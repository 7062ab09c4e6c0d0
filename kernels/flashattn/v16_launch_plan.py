"""v15's kernel with its launch planned once per input: tensor maps and parameters packed on the first call.

Structure: the GPU code is v15's, unchanged (the ``.cu``, ``CONFIG``, grid, block and shared
memory come from ``v15_kv176_multicast``). What changes is the host path between the caller's
start event and the launch. v15 validates the inputs, looks its module up, encodes three tensor
maps through ``cuTensorMapEncodeTiled`` and converts every argument on every call. Here the
first call for a given (q, k, v) — their addresses, shapes, strides, dtypes and device — does
all of that once and keeps a :class:`reporter.cuda.LaunchPlan`: the packed ``kernelParams``
with the three tensor maps in place (``launch_plans.planned_kernel``, shared with later
versions). A later call with the same inputs allocates the output, writes its address into the
plan and makes one driver call.

Hypothesis: the course harness times ``custom_kernel`` with events around the call from the
host, so v15's host path (about 0.2 ms in our records' queuing times) is inside every sample
once it outlasts the L2 clear queued before the start event; on the test cases (0.1 ms and
2 ms kernels) that decides the comparison with cuDNN. Predicted: the plain-timed medians of
the two test cases drop by about the host time v15 spends beyond the clear, the benchmark's
does not move, and the held (``--hold``) medians equal v15's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

import v15_kv176_multicast as v15
from launch_plans import planned_kernel
from reporter.cuda import LaunchPlan, encode_tensor_map, load_module

if TYPE_CHECKING:
    import torch

CONFIG: dict[str, int] = dict(v15.CONFIG)
OUT_ARG = 3  # index of the output pointer among the kernel's arguments: (q map, k map, v map, out, S, scale)


def _plan(q: Any, k: Any, v: Any, config: Mapping[str, Any]) -> LaunchPlan:
    """v15's launch for these inputs, packed (v15.launch does the same work on every call)."""
    b, h, s, d = v15.check_inputs((q, k, v))
    defines = dict(config)
    defines["CLUSTER"] = v15.cluster_for(s, int(defines.get("CLUSTER", 2)))
    block_n = int(defines.get("BLOCK_N", 176))
    nbytes = v15.smem_bytes(int(defines.get("STAGES", 2)), block_n)
    if nbytes > v15.MAX_DYNAMIC_SMEM:
        raise ValueError(f"STAGES={defines.get('STAGES')} needs {nbytes} B of shared memory, "
                         f"over {v15.MAX_DYNAMIC_SMEM}")
    kernel = load_module(v15.SOURCE, defines=defines, device_index=q.device.index).kernel(v15.KERNEL_NAME)
    view = (b * h, s, d)
    maps = [encode_tensor_map(q, v15.Q_BOX, shape=view)] + [
        encode_tensor_map(t, (1, block_n, 64), shape=view, swizzle=128, l2_promotion=256) for t in (k, v)]
    return kernel.plan((s // v15.BLOCK_M, b * h), (v15.THREADS,), *maps, None, np.int32(s),
                       np.float32(v15.LOG2E / math.sqrt(d)), shared_mem=nbytes)


def make_kernel(config: Mapping[str, Any]) -> Callable[[Sequence[torch.Tensor]], torch.Tensor]:
    cfg = dict(config)
    return planned_kernel(lambda q, k, v: _plan(q, k, v, cfg), v15.check_inputs, OUT_ARG)


custom_kernel = make_kernel(CONFIG)
