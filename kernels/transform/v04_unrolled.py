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


def module(source: Path, x: torch.Tensor, config: Mapping[str, Any]) -> Any:
    """``source`` (v04's or a later version's build of it) compiled for ``x``'s dtype and ``config``."""
    return load_module(source, defines={"UNROLL": int(config["UNROLL"]), "ELEM_BF16": int(x.dtype == torch.bfloat16)})


def buffers(x: torch.Tensor, config: Mapping[str, Any]) -> tuple[torch.Tensor, int, torch.Tensor, torch.Tensor]:
    """For ``x`` under ``config``: y, the number of blocks, the blocks' partial sums and the 0-d sum."""
    n = x.numel()
    groups = (n // 32) * 8
    per_block = THREADS * int(config["UNROLL"])
    most = _sms(x.device.index or 0) * int(config["BLOCKS_PER_SM"])
    blocks = max(1, min((groups + per_block - 1) // per_block, most))
    return (torch.empty_like(x), blocks, torch.empty(blocks, dtype=torch.float64, device=x.device),
            torch.empty((), dtype=torch.float64, device=x.device))


def launch(mod: Any, x: torch.Tensor, config: Mapping[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
    """``transform_unrolled`` then ``transform_sum_partials`` of ``mod`` on ``x``."""
    y, blocks, partials, total = buffers(x, config)
    mod.kernel("transform_unrolled")((blocks,), (THREADS,), x, y, partials, np.uint64(x.numel()))
    mod.kernel("transform_sum_partials")((1,), (1024,), partials, np.uint32(blocks), total)
    return y, total


def make_kernel(config: Mapping[str, Any]) -> Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]:
    return lambda x: launch(module(SOURCE, x, config), x, config)


custom_kernel = make_kernel(CONFIG)
