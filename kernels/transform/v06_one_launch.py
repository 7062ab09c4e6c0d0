"""v04 with the sum finished in the same launch: one kernel per call.

``v06_one_launch.cu``: v04's loop (``grid_loop``), then each block writes its partial sum,
fences, and draws a ticket from a counter with one ``atomicAdd``. The block that draws the last
ticket adds all the partials by block index in a fixed order (``finish_grid``), writes the sum
and resets the counter to 0. v02–v05 ended every call with a second launch
(``transform_sum_partials``) and the kernel boundary before it; which block finishes last changes
from call to call, the order of the additions does not, so the sum keeps its bits. The counter
is one zeroed int32 per device, kept between calls (each call leaves it at 0). Configuration:
v04's.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import torch

import v04_unrolled as v04
from reporter.cuda import load_module

SOURCE = Path(__file__).with_suffix(".cu")
CONFIG = dict(v04.CONFIG)


@functools.cache
def _ticket(index: int) -> torch.Tensor:
    """The per-device ticket counter, zero between calls."""
    return torch.zeros(1, dtype=torch.int32, device=torch.device("cuda", index))


def custom_kernel(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    n = x.numel()
    y = torch.empty_like(x)
    unroll, per_sm = int(CONFIG["UNROLL"]), int(CONFIG["BLOCKS_PER_SM"])
    groups = (n // 32) * 8
    per_block = v04.THREADS * unroll
    blocks = max(1, min((groups + per_block - 1) // per_block, v04._sms(x.device.index or 0) * per_sm))
    partials = torch.empty(blocks, dtype=torch.float64, device=x.device)
    total = torch.empty((), dtype=torch.float64, device=x.device)
    mod = load_module(SOURCE, defines={"UNROLL": unroll, "ELEM_BF16": int(x.dtype == torch.bfloat16)})
    mod.kernel("transform_one_launch")((blocks,), (v04.THREADS,), x, y, partials, _ticket(x.device.index or 0),
                                       total, np.uint64(n))
    return y, total
