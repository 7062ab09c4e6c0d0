"""v05's loop on 256-byte strips: two blocks to a 512-byte row instead of four, a lane loading 8 bytes
of a row, with 16-bit counters two to a word so that 256 channels' counters fit the 128 KB that held
128; v07's host path launches it.

``v10_wide_strips.cu`` holds the kernel: v05's persistent grid (groups × chunks blocks, groups =
channels / 256), v05's double-buffered row loop with 8-byte loads, v04's bin-major words with the low
half counting channel 8l + j and the high half channel 8l + j + 4 (``red.shared.add`` of 1 or 65536),
and v04's flush with each word split in two. A 16-bit counter holds 65535, so the host cuts the rows
into enough chunks that no block counts more (at the benchmark's 1,048,576 rows, 66 chunks of 15,888);
it needs channels % 8 == 0 and an 8-byte aligned input.

Hypothesis: reading bounds v07, and the probes read the input faster in 256-byte strips than in v07's
128-byte ones in both sessions that timed them (``probe_read_w8`` against ``probe_read_w4``). Counting
256 channels a block reads in that pattern; the atomics are as many and as conflict-free as v07's, and
the flush adds twice as many counters (66 chunks a channel instead of 33), a few microseconds.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

import v05_persistent as v05
from histogram_io import fit_bins, unpack
from reporter.cuda import load_module
from v07_lean_launch import _Stream

SOURCE = Path(__file__).with_suffix(".cu")
NUM_BINS = v05.NUM_BINS
WIDE = 256  # channels a block counts
MAX_ROWS = 65535  # rows a block may count: a 16-bit counter's most
CONFIG = {"threads": 1024, "unroll": 8}
SWEEP = [{"threads": t, "unroll": u} for t in (512, 1024) for u in (4, 8)]


def grid(length: int, channels: int, sms: int) -> tuple[int, int]:
    """(groups, chunks): 256 channels a group, as many chunks as fill the SMs and at least enough that
    no block counts more than 65535 rows."""
    groups = -(-channels // WIDE)
    return groups, max(1, sms // groups, -(-length // MAX_ROWS))


def make_kernel(config: dict) -> Callable[[tuple[torch.Tensor, int]], torch.Tensor]:
    threads, unroll = int(config["threads"]), int(config["unroll"])
    shared_bytes = 128 * NUM_BINS * 4 + (threads // 32) * 32 * 9 * 4  # the words, and v04's flush tiles
    defines = {"THREADS": threads, "UNROLL": unroll}
    plans: dict[tuple[int, int, int], tuple[Any, tuple[int], tuple[int], tuple[Any, ...]]] = {}

    def plan(device_index: int, length: int, channels: int) -> tuple[Any, tuple[int], tuple[int], tuple[Any, ...]]:
        if channels % 8:
            raise ValueError(f"8-byte loads need channels % 8 == 0 (channels={channels})")
        if length >= 2**31:
            raise ValueError(f"length {length} does not fit the kernel's 32-bit row index")
        groups, chunks = grid(length, channels, v05._sm_count(device_index))
        kernel = load_module(SOURCE, defines=defines, device_index=device_index).kernel(
            "histogram_wide_strips", max_dynamic_shared_memory=shared_bytes)
        scalars = (np.uint32(length), np.uint32(channels), np.uint32(groups), np.uint32(chunks))
        p = (kernel.function, (groups * chunks,), (threads,), scalars)
        plans[(device_index, length, channels)] = p
        return p

    def run(data: tuple[torch.Tensor, int]) -> torch.Tensor:
        array, num_bins = unpack(data)
        if not array.is_cuda:
            raise ValueError(f"expected a CUDA tensor, got one on {array.device}")
        length, channels = array.shape
        out = torch.zeros((channels, NUM_BINS), dtype=torch.int32, device=array.device)
        if length == 0 or channels == 0:
            return fit_bins(out, num_bins)
        ptr = array.data_ptr()
        if ptr % 8:
            raise ValueError("8-byte loads need an 8-byte aligned tensor")
        dev = array.get_device()
        p = plans.get((dev, length, channels)) or plan(dev, length, channels)
        fn, grid_, block, scalars = p
        fn(grid_, block, (np.uint64(ptr), np.uint64(out.data_ptr()), *scalars),
           shared_mem=shared_bytes, stream=_Stream(torch._C._cuda_getCurrentRawStream(dev)))
        return fit_bins(out, num_bins)

    return run


custom_kernel = make_kernel(CONFIG)
