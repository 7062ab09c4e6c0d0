"""v05's counting fed by the copy engine: each block's 128-byte strip of every row arrives in shared
memory by a one-dimensional bulk copy (cp.async.bulk), ROWS rows a stage and STAGES stages in
flight, and the threads count out of shared memory; v07's host path launches it.

``v08_bulk_strips.cu`` holds the kernel: v05's grid (groups × chunks blocks, one an SM, block b
counting group b mod groups over chunk b / groups), v04's bin-major counters (``count4``), v05's
flush into the zeroed output (``flush_bin_major``), with the flush tiles in the ring's memory once the
counting is done. Warp 0 issues the copies (a lane a row) and arms each stage's mbarrier with the
stage's bytes; every warp waits on it, counts its rows of the stage, and after the stage's barrier
warp 0 refills it with the batch STAGES on. The host path is v07's: the launch planned once per
(device, shape), the raw stream handle; it adds the copies' needs, a 16-byte aligned input and
channels % 16 == 0.

Hypothesis: v07 reads the input once at 2.7 TB/s, and a probe reading v07's 128-byte strips with
nothing else to do takes about as long as v07 itself (``probe_read_w4``): reading bounds it, and
v05's 32 KB an SM in flight, each 4-byte load issued by a thread, is what the reading gets. Three
32 KB stages an SM in flight (96 KB), requested 128 bytes at a time by one warp, should read the
strips closer to the copy ceiling, and the atomics (``probe_atoms_bin_major``: half of v07's time
alone) stay hidden under it.
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
GROUP = v05.GROUP
CONFIG = {"threads": 1024, "rows": 256, "stages": 3}
# the stage depth and size at the same shared memory or less: 3 x 256 rows (96 KB), 2 x 256, 4 x 128,
# 6 x 128 (96 KB in smaller stages), and 512 threads
SWEEP = [{"threads": t, "rows": r, "stages": s}
         for t, r, s in ((1024, 256, 3), (1024, 256, 2), (1024, 128, 4), (1024, 128, 6), (512, 256, 3))]


def shared_bytes(config: dict) -> int:
    """The histogram (128 KB), the ring of stages and one mbarrier a stage."""
    return GROUP * NUM_BINS * 4 + int(config["stages"]) * int(config["rows"]) * GROUP + int(config["stages"]) * 8


def make_kernel(config: dict) -> Callable[[tuple[torch.Tensor, int]], torch.Tensor]:
    threads, rows, stages = int(config["threads"]), int(config["rows"]), int(config["stages"])
    smem = shared_bytes(config)
    defines = {"THREADS": threads, "ROWS": rows, "STAGES": stages}
    plans: dict[tuple[int, int, int], tuple[Any, tuple[int], tuple[int], tuple[Any, ...]]] = {}

    def plan(device_index: int, length: int, channels: int) -> tuple[Any, tuple[int], tuple[int], tuple[Any, ...]]:
        if channels % 16:
            raise ValueError(f"the bulk copies need channels % 16 == 0 (channels={channels})")
        if length >= 2**31:
            raise ValueError(f"length {length} does not fit the kernel's 32-bit row index")
        groups = -(-channels // GROUP)
        chunks = max(1, v05._sm_count(device_index) // groups)
        kernel = load_module(SOURCE, defines=defines, device_index=device_index).kernel(
            "histogram_bulk_strips", max_dynamic_shared_memory=smem)
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
        if ptr % 16:
            raise ValueError("the bulk copies need a 16-byte aligned tensor")
        dev = array.get_device()
        p = plans.get((dev, length, channels)) or plan(dev, length, channels)
        fn, grid, block, scalars = p
        fn(grid, block, (np.uint64(ptr), np.uint64(out.data_ptr()), *scalars),
           shared_mem=smem, stream=_Stream(torch._C._cuda_getCurrentRawStream(dev)))
        return fit_bins(out, num_bins)

    return run


custom_kernel = make_kernel(CONFIG)
