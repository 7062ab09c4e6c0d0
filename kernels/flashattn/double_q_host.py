"""The launch of v19's kernel with v21's staged epilogue built from another source (a version that sets
its step hook): v21's planned launch, v17's persistent grid, v21's shared memory and tensor maps.

v32 wrote this ``make_kernel`` out in its own file before it was shared; its records pin that file, so it
keeps its copy. A later version built on v21's kernel plans its launch here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import v19_double_q as v19
import v21_staged_stores as v21
from launch_plans import planned_kernel

if TYPE_CHECKING:
    import torch


def kernel_maker(source: Path) -> Callable[[Mapping[str, Any]], Callable[[Sequence[torch.Tensor]], torch.Tensor]]:
    """``make_kernel(config)`` for a version whose ``source`` builds v21's kernel: its planned ``custom_kernel``."""

    def make_kernel(config: Mapping[str, Any]) -> Callable[[Sequence[torch.Tensor]], torch.Tensor]:
        cfg = dict(config)
        return planned_kernel(lambda q, k, v: v19.plan(source, q, k, v, cfg, smem=v21.smem_bytes),
                              v19.v15.check_inputs, v19.OUT_ARG)

    return make_kernel
