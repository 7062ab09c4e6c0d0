"""v03 with the shared histogram stored bin-major, so each lane owns one bank: conflict-free atomics.

Same grid, loads and counting loop as v03 (128 channels × 8192 rows per block, 32-bit
loads, 4 rows in flight per thread, one ``red.shared.add`` per byte), but the counter of
channel 4l + j (lane l, byte j) and value b lives at word b·128 + j·32 + l, in bank l
whatever b is: each warp-wide atomic touches 32 banks once, on random data and in the
contention case alike. The output is channel-major, so the flush transposes: each warp
copies 8 values × 32 channels of the histogram into a padded 32 × 9 tile (conflict-free),
then reads it back so that 8 consecutive lanes hold 8 consecutive values of one channel,
and each warp-wide global atomicAdd into the zeroed output covers 4 whole 32-byte sectors.
Shared memory per block: 128 KB of counters plus 32 tiles of 1152 bytes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from histogram_io import fit_bins, unpack
from reporter.cuda import load_module

SOURCE = Path(__file__).with_suffix(".cu")
NUM_BINS = 256
GROUP = 128
THREADS = 1024
ROWS_PER_BLOCK = 8192
MAX_GRID_Y = 65535
SHARED_BYTES = GROUP * NUM_BINS * 4 + (THREADS // 32) * 32 * 9 * 4


def custom_kernel(data: tuple[torch.Tensor, int]) -> torch.Tensor:
    array, num_bins = unpack(data)
    length, channels = array.shape
    if channels % 4 or array.data_ptr() % 4:
        raise ValueError(f"32-bit loads need channels % 4 == 0 and a 4-byte aligned tensor (channels={channels})")
    if length >= 2**31:
        raise ValueError(f"length {length} does not fit the kernel's 32-bit row index")
    out = torch.zeros((channels, NUM_BINS), dtype=torch.int32, device=array.device)
    if length == 0 or channels == 0:
        return fit_bins(out, num_bins)
    rows_per_block = max(ROWS_PER_BLOCK, -(-length // MAX_GRID_Y))
    grid = (-(-channels // GROUP), -(-length // rows_per_block))
    kernel = load_module(SOURCE).kernel("histogram_bank_spread")
    kernel(grid, (THREADS,), array, out, np.uint32(length), np.uint32(channels), np.uint32(rows_per_block),
           shared_mem=SHARED_BYTES)
    return fit_bins(out, num_bins)
