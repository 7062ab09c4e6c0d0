"""v07's kernel with the call cut down to what must happen on every call: two allocations and one launch.

The course harness times a call with CUDA events around it, after a 256 MiB L2 flush, and waits
for each call to end before the next. The flush keeps the GPU busy while the host queues the
call; a call whose host side takes longer than the flush leaves the GPU idle inside its own
sample, and that idle time is in the figure. The records keep the host time of every call
(``timing.enqueue_ms``): v07's is several times the memcpy peer's. v07's call compiles nothing
after the first, but it still stats its source file (``load_module``'s check for an edited
``.cu``), builds the compile key, allocates y, the partial sums and the 0-d sum, and converts
all seven kernel arguments on every call.

Here the kernel is v07's (``v07_bulk.cu``); its configuration comes from v08's own sweep, whose
samples no longer carry v07's host time. The first call for a given
device, dtype, length and configuration loads the module, allocates the partial sums (scratch
that no caller sees, reused by every call on that stream order) and packs the launch once
(``reporter.cuda.LaunchPlan``). Every call then allocates y and the sum, writes the three
pointers that change into the packed parameters, and launches on the current stream: one
driver call.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch
import v06_one_launch as v06
import v07_bulk as v07

from reporter.cuda import LaunchPlan, load_module

# the fastest median of the recorded fp32 sweep (the bf16 sweep does not tell it from its own fastest)
CONFIG: dict[str, int] = {"TILE_BYTES": 8192, "STAGES": 2, "BLOCKS_PER_SM": 4}
# v07's sweep timed each configuration with v07's host time inside the samples; with that gone the
# configurations are compared again, with 8 blocks per SM beside v07's 2, 4 and 6 (as many as the
# registers let share an SM; where they do not, the blocks run as a second wave)
SWEEP: list[dict[str, int]] = [
    {"TILE_BYTES": t, "STAGES": s, "BLOCKS_PER_SM": b}
    for t in (4096, 8192, 16384) for s in (2, 3, 4) for b in (4, 6, 8)
    if t * s <= 47 * 1024 and b * (t * s + 1024) <= 227 * 1024
]
X, Y, OUT = 0, 1, 4  # the pointer arguments of transform_bulk that change from call to call


@functools.cache
def _plan(device: int, dtype: torch.dtype, n: int, tile_bytes: int, stages: int,
          per_sm: int) -> tuple[LaunchPlan, torch.Tensor]:
    """transform_bulk's launch for one shape, packed once (x, y and the sum are set per call), and
    the partial sums it writes, kept alive with it."""
    mod = load_module(v07.SOURCE, defines={"TILE_BYTES": tile_bytes, "STAGES": stages,
                                           "ELEM_BF16": int(dtype == torch.bfloat16)}, device_index=device)
    tiles = n // (tile_bytes // dtype.itemsize)
    blocks = max(1, min(tiles, torch.cuda.get_device_properties(device).multi_processor_count * per_sm))
    partials = torch.empty(blocks, dtype=torch.float64, device=torch.device("cuda", device))
    ticket = v06._ticket(device)
    plan = mod.kernel("transform_bulk").plan((blocks,), (v07.THREADS,), None, None, partials, ticket, None,
                                             np.uint64(n))
    return plan, partials


def make_kernel(config: Mapping[str, Any]) -> Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]:
    tile_bytes, stages, per_sm = int(config["TILE_BYTES"]), int(config["STAGES"]), int(config["BLOCKS_PER_SM"])

    def run(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        device = x.device.index or 0
        plan, _ = _plan(device, x.dtype, x.numel(), tile_bytes, stages, per_sm)
        y = torch.empty_like(x)
        total = torch.empty((), dtype=torch.float64, device=x.device)
        plan.set_pointer(X, x.data_ptr())
        plan.set_pointer(Y, y.data_ptr())
        plan.set_pointer(OUT, total.data_ptr())
        plan.launch(torch.cuda.current_stream(device).cuda_stream)
        return y, total

    return run


custom_kernel = make_kernel(CONFIG)
