"""The launch of v36's kernel built with Q in two 64-row halves (v38): v36's launch (``out_map_host``: v21's
plan with O's tensor map set per output buffer) whose Q map copies boxes of 64 rows, one consumer's half.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import out_map_host
import v19_double_q as v19
from launch_plans import planned_kernel

from reporter.cuda import encode_tensor_map

if TYPE_CHECKING:
    import torch

Q_ARG = 0  # (q map, k map, v map, out, S, scale, heads, o map)
Q_HALF_BOX = (1, 64, 64)  # head x rows x columns: one consumer's 64 rows, a 128-byte swizzle span of columns


def plan(source: Path, q: Any, k: Any, v: Any, config: Mapping[str, Any]) -> out_map_host.OutMapPlan:
    """v36's launch of ``source``'s kernel on (q, k, v) (which checks the inputs), its Q map in 64-row boxes."""
    planned = out_map_host.plan(source, q, k, v, config)
    b, h, s, d = (int(x) for x in q.shape)
    planned.plan.set_bytes(Q_ARG, encode_tensor_map(q, Q_HALF_BOX, shape=(b * h, s, d)))
    return planned


def kernel_maker(source: Path) -> Callable[[Mapping[str, Any]], Callable[[Sequence[torch.Tensor]], torch.Tensor]]:
    """``make_kernel(config)`` for a version whose ``source`` builds v36's kernel with Q in halves."""

    def make_kernel(config: Mapping[str, Any]) -> Callable[[Sequence[torch.Tensor]], torch.Tensor]:
        cfg = dict(config)
        return planned_kernel(lambda q, k, v: plan(source, q, k, v, cfg), v19.v15.check_inputs, v19.OUT_ARG)

    return make_kernel
