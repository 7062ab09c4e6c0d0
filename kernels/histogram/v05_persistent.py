"""v04's conflict-free counting on a persistent grid, one block per SM, loads double-buffered.

The grid is groups × chunks blocks with groups = channels/128 and chunks = SMs // groups
(4 × 33 = 132 on an H100 for 512 channels): block b owns the 128-channel slice of group
b mod groups for one contiguous run of length/chunks rows, so each SM zeroes and flushes
its 128 KB histogram once and there is no partial last wave. Each thread keeps two
register batches of UNROLL 32-bit words (UNROLL rows of its 4 channels): it issues the
loads of the next batch, then counts the current one with v04's bin-major shared atomics,
so loads stay in flight while the atomics run. The flush is v04's (tile transpose, then
sector-wide global atomicAdd into the zeroed output). ``CONFIG`` holds the threads per
block and UNROLL; ``SWEEP`` lists the alternatives that ``report sweep`` times.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from histogram_io import fit_bins, unpack
from reporter.cuda import load_module

SOURCE = Path(__file__).with_suffix(".cu")
NUM_BINS = 256
GROUP = 128
CONFIG = {"threads": 1024, "unroll": 8}
SWEEP = [{"threads": t, "unroll": u} for t in (512, 1024) for u in (4, 8, 16)]


@lru_cache(maxsize=None)
def _sm_count(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def make_kernel(config: dict) -> Callable[[tuple[torch.Tensor, int]], torch.Tensor]:
    threads, unroll = int(config["threads"]), int(config["unroll"])
    shared_bytes = GROUP * NUM_BINS * 4 + (threads // 32) * 32 * 9 * 4

    def run(data: tuple[torch.Tensor, int]) -> torch.Tensor:
        array, num_bins = unpack(data)
        length, channels = array.shape
        if channels % 4 or array.data_ptr() % 4:
            raise ValueError(f"32-bit loads need channels % 4 == 0 and a 4-byte aligned tensor (channels={channels})")
        if length >= 2**31:
            raise ValueError(f"length {length} does not fit the kernel's 32-bit row index")
        out = torch.zeros((channels, NUM_BINS), dtype=torch.int32, device=array.device)
        if length == 0 or channels == 0:
            return fit_bins(out, num_bins)
        groups = -(-channels // GROUP)
        chunks = max(1, _sm_count(array.device.index or 0) // groups)
        kernel = load_module(SOURCE, defines={"THREADS": threads, "UNROLL": unroll}).kernel("histogram_persistent")
        kernel((groups * chunks,), (threads,), array, out, np.uint32(length), np.uint32(channels),
               np.uint32(groups), np.uint32(chunks), shared_mem=shared_bytes)
        return fit_bins(out, num_bins)

    return run


custom_kernel = make_kernel(CONFIG)
