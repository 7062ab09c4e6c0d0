"""v03 with several groups in flight per thread: the loads of an iteration issued before any use.

``v04_unrolled.cu``: each thread loads ``UNROLL`` groups (16 bytes each in fp32, 8 in bf16,
``blockDim`` groups apart so that a warp still holds 32 consecutive groups for the look-back
shuffle) before it transforms and stores the first. v02 and v03 wait for each 16-byte load
before issuing the next, so a thread has one load in flight; keeping the DRAM busy then takes
more resident threads than the SM holds. The grid is ``BLOCKS_PER_SM`` blocks of 256 threads per
SM striding over the groups; the sum and the partial last 32-block are v02's
(``finish_block``). ``SWEEP`` tries 1, 2, 4 and 8 groups in flight at 4, 8 and 16 blocks per
SM; ``CONFIG`` is a first guess until the recorded sweep chooses.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from reporter.cuda import load_module

SOURCE = Path(__file__).with_suffix(".cu")
THREADS = 256
CONFIG: dict[str, int] = {"UNROLL": 4, "BLOCKS_PER_SM": 8}  # a guess: no sweep recorded yet
SWEEP: list[dict[str, int]] = [{"UNROLL": u, "BLOCKS_PER_SM": b} for b in (4, 8, 16) for u in (1, 2, 4, 8)]


@functools.cache
def _sms(index: int) -> int:
    return torch.cuda.get_device_properties(index).multi_processor_count


def make_kernel(config: Mapping[str, Any]) -> Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]:
    unroll, per_sm = int(config["UNROLL"]), int(config["BLOCKS_PER_SM"])

    def kernel(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        n = x.numel()
        y = torch.empty_like(x)
        groups = (n // 32) * 8
        per_block = THREADS * unroll
        blocks = max(1, min((groups + per_block - 1) // per_block, _sms(x.device.index or 0) * per_sm))
        partials = torch.empty(blocks, dtype=torch.float64, device=x.device)
        total = torch.empty((), dtype=torch.float64, device=x.device)
        mod = load_module(SOURCE, defines={"UNROLL": unroll, "ELEM_BF16": int(x.dtype == torch.bfloat16)})
        mod.kernel("transform_unrolled")((blocks,), (THREADS,), x, y, partials, np.uint64(n))
        mod.kernel("transform_sum_partials")((1,), (1024,), partials, np.uint32(blocks), total)
        return y, total

    return kernel


custom_kernel = make_kernel(CONFIG)
