"""v04 with the streaming cache hint: x and y are touched once, so the L2 may evict them first.

``v05_streaming.cu`` is v04's source with ``TRANSFORM_STREAMING``: the group loads are
``__ldcs`` (``ld.global.cs``) and the stores ``__stcs`` (``st.global.cs``), the cache-streaming
policy for data used once. The 512 MB of x and 512 MB of y of the benchmark case pass through a
50 MB L2 anyway; the question is whether the write-allocations of y and the lines of x kept
after their one use cost DRAM time that the hint saves. Launch and configuration are v04's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

import v04_unrolled as v04
from reporter.cuda import load_module

SOURCE = Path(__file__).with_suffix(".cu")
CONFIG = dict(v04.CONFIG)


def make_kernel(config: Mapping[str, Any]) -> Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]:
    unroll, per_sm = int(config["UNROLL"]), int(config["BLOCKS_PER_SM"])

    def kernel(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        n = x.numel()
        y = torch.empty_like(x)
        groups = (n // 32) * 8
        per_block = v04.THREADS * unroll
        blocks = max(1, min((groups + per_block - 1) // per_block, v04._sms(x.device.index or 0) * per_sm))
        partials = torch.empty(blocks, dtype=torch.float64, device=x.device)
        total = torch.empty((), dtype=torch.float64, device=x.device)
        mod = load_module(SOURCE, defines={"UNROLL": unroll, "ELEM_BF16": int(x.dtype == torch.bfloat16)})
        mod.kernel("transform_unrolled")((blocks,), (v04.THREADS,), x, y, partials, np.uint64(n))
        mod.kernel("transform_sum_partials")((1,), (1024,), partials, np.uint32(blocks), total)
        return y, total

    return kernel


custom_kernel = make_kernel(CONFIG)
