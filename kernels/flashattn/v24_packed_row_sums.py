"""v16 with the softmax's row sums taken from the packed fp16 P by a pairwise tree, not added score by
score in fp32.

Structure: ``v24_packed_row_sums.cu`` builds v15's kernel (``attn_sm90_kv176_kernel.cuh``) through its
three hooks with ``attn_sm90_psum.cuh``: a softmax without the sums, a step that first adds the sums of
the previous tile's P into l (``add_p_sums``: per row, a pairwise ``add.rn.f16x2`` tree over the
thread's packed registers, then the two halves to fp32), and the last tile's sums after the last P·V.
The grid, the cluster, the launch plan and the configuration are v16's.

Numerics: l is the sum of the fp16 values of P that the P·V product multiplies (v15 sums the fp32
values before they are rounded), added in fp16 within one tile's share of a row (each half of a row's
f16x2 sums at most 22 values of at most 1) and in fp32 across tiles.

Hypothesis: at its power cap the card's clock follows the energy spent, and v15's step spends 90 of its
611 instructions on the sums' FADDs (its machine code); the tree takes 46 (42 packed adds and 4
conversions), so the step issues about 6 % fewer instructions. v10's profiles put 5.6 % fewer
instructions at 2.7 % more clock; predicted: the benchmark 2–3 % faster than v16.
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

SOURCE = Path(__file__).with_suffix(".cu")
CONFIG: dict[str, int] = dict(v16.CONFIG)


def _plan(q: Any, k: Any, v: Any, config: Mapping[str, Any]) -> LaunchPlan:
    """v16's planned launch (v15's grid, block, shared memory and tensor maps) of this version's build."""
    b, h, s, d = v15.check_inputs((q, k, v))
    defines = dict(config)
    defines["CLUSTER"] = v15.cluster_for(s, int(defines.get("CLUSTER", 2)))
    block_n = int(defines.get("BLOCK_N", 176))
    nbytes = v15.smem_bytes(int(defines.get("STAGES", 2)), block_n)
    if nbytes > v15.MAX_DYNAMIC_SMEM:
        raise ValueError(f"STAGES={defines.get('STAGES')} needs {nbytes} B of shared memory, over {v15.MAX_DYNAMIC_SMEM}")
    kernel = load_module(SOURCE, defines=defines, device_index=q.device.index).kernel(v15.KERNEL_NAME)
    view = (b * h, s, d)
    maps = [encode_tensor_map(q, v15.Q_BOX, shape=view)] + [
        encode_tensor_map(t, (1, block_n, 64), shape=view, swizzle=128, l2_promotion=256) for t in (k, v)]
    return kernel.plan((s // v15.BLOCK_M, b * h), (v15.THREADS,), *maps, None, np.int32(s),
                       np.float32(v15.LOG2E / math.sqrt(d)), shared_mem=nbytes)


def make_kernel(config: Mapping[str, Any]) -> Callable[[Sequence[torch.Tensor]], torch.Tensor]:
    cfg = dict(config)
    return planned_kernel(lambda q, k, v: _plan(q, k, v, cfg), v15.check_inputs, v16.OUT_ARG)


custom_kernel = make_kernel(CONFIG)
