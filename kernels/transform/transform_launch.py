"""The host side of the bulk-ring versions from v10 on: the launch packed once per shape, then two
allocations and one launch per call (v08's idea; v08 and v09 carry the same code inside their own
files, as they were recorded).

A ring kernel takes ``(x, y, partials, counter, out, n)``. The first call for a given source,
kernel, device, dtype, length and configuration loads the module, allocates the partial sums
(scratch no caller sees, reused by every call in stream order) and packs the launch
(``reporter.cuda.LaunchPlan``); every call allocates y and the 0-d sum, writes x, y and the sum's
pointers into the packed parameters and launches on the current stream. ``counter`` is per-device
memory that is zero between calls: v06's ticket by default, v13's 64-bit sum word (``counter=``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
import v06_one_launch as v06

from reporter.cuda import LaunchPlan, load_module

Counter = Callable[[int], torch.Tensor]  # the device index -> its zeroed counter

THREADS = 256
X, Y, OUT = 0, 1, 4  # the pointer arguments that change from call to call


@functools.cache
def _plan(source: Path, kernel: str, device: int, dtype: torch.dtype, n: int, tile_bytes: int, stages: int,
          per_sm: int, counter: Counter = v06._ticket) -> tuple[LaunchPlan, torch.Tensor]:
    """``kernel``'s launch for one shape, packed once, and the partial sums it writes, kept alive with it."""
    mod = load_module(source, defines={"TILE_BYTES": tile_bytes, "STAGES": stages,
                                       "ELEM_BF16": int(dtype == torch.bfloat16)}, device_index=device)
    blocks = blocks_for(n, dtype.itemsize, {"TILE_BYTES": tile_bytes, "BLOCKS_PER_SM": per_sm}, device)
    partials = torch.empty(blocks, dtype=torch.float64, device=torch.device("cuda", device))
    plan = mod.kernel(kernel).plan((blocks,), (THREADS,), None, None, partials, counter(device), None,
                                   np.uint64(n))
    return plan, partials


def blocks_for(n: int, itemsize: int, config: Mapping[str, Any], device: int) -> int:
    """The grid of a ring kernel: ``BLOCKS_PER_SM`` per SM, no more than there are whole tiles, at least one."""
    tiles = n // (int(config["TILE_BYTES"]) // itemsize)
    return max(1, min(tiles, torch.cuda.get_device_properties(device).multi_processor_count * int(config["BLOCKS_PER_SM"])))


def make_kernel(source: Path, kernel: str, config: Mapping[str, Any],
                counter: Counter = v06._ticket) -> Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]:
    """``custom_kernel`` for the ring kernel ``kernel`` of ``source`` under ``config`` (TILE_BYTES,
    STAGES, BLOCKS_PER_SM), with ``counter`` passed as its fourth argument."""
    tile_bytes, stages, per_sm = int(config["TILE_BYTES"]), int(config["STAGES"]), int(config["BLOCKS_PER_SM"])

    def run(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        device = x.device.index or 0
        plan, _ = _plan(source, kernel, device, x.dtype, x.numel(), tile_bytes, stages, per_sm, counter)
        y = torch.empty_like(x)
        total = torch.empty((), dtype=torch.float64, device=x.device)
        plan.set_pointer(X, x.data_ptr())
        plan.set_pointer(Y, y.data_ptr())
        plan.set_pointer(OUT, total.data_ptr())
        plan.launch(torch.cuda.current_stream(device).cuda_stream)
        return y, total

    return run
