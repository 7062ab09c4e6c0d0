"""v08's kernel with each stage filled by one TMA copy: a box of ROWS rows × 128 bytes of the input,
described by a tensor map ([length, channels] uint8, no swizzle) encoded on the host and passed by
value; v07's host path otherwise.

``v09_tma_strips.cu`` holds the kernel; the block (ring, mbarriers, counting, flush) is
``histogram_staged.cuh``'s, which v08 now shares. The tensor map is encoded once per input address
and shape (``reporter.cuda.tensor_map``, remembered).

Hypothesis: v08 read 5× slower than v07 although it kept three times the bytes in flight: it asked
the copy engine for 128 bytes at a time, 32 000 requests an SM, and the requests, not the bytes,
set its pace. One request a stage (32 KB) gives the engine the same bytes in 256 times fewer
requests, and the reading should then run at what the bytes in flight allow, closer to the copy
ceiling than v07's 4-byte loads.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

import v05_persistent as v05
from histogram_io import fit_bins, unpack
from reporter.cuda import load_module, tensor_map
from v07_lean_launch import _Stream
from v08_bulk_strips import shared_bytes

SOURCE = Path(__file__).with_suffix(".cu")
NUM_BINS = v05.NUM_BINS
GROUP = v05.GROUP
CONFIG = {"threads": 1024, "rows": 256, "stages": 3}
# v08's points: the stage depth and size at the same shared memory or less, and 512 threads
SWEEP = [{"threads": t, "rows": r, "stages": s}
         for t, r, s in ((1024, 256, 3), (1024, 256, 2), (1024, 128, 4), (1024, 128, 6), (512, 256, 3))]


def make_kernel(config: dict) -> Callable[[tuple[torch.Tensor, int]], torch.Tensor]:
    threads, rows, stages = int(config["threads"]), int(config["rows"]), int(config["stages"])
    smem = shared_bytes(config)
    defines = {"THREADS": threads, "ROWS": rows, "STAGES": stages}
    plans: dict[tuple[int, int, int], tuple[Any, tuple[int], tuple[int], tuple[Any, ...]]] = {}

    def plan(device_index: int, length: int, channels: int) -> tuple[Any, tuple[int], tuple[int], tuple[Any, ...]]:
        if channels % 16:
            raise ValueError(f"a tensor map's rows must be 16-byte multiples (channels={channels})")
        if length >= 2**31:
            raise ValueError(f"length {length} does not fit the kernel's 32-bit row index")
        groups = -(-channels // GROUP)
        chunks = max(1, v05._sm_count(device_index) // groups)
        kernel = load_module(SOURCE, defines=defines, device_index=device_index).kernel(
            "histogram_tma_strips", max_dynamic_shared_memory=smem)
        scalars = (np.uint32(length), np.uint32(channels), np.uint32(groups), np.uint32(chunks))
        p = (kernel, (groups * chunks,), (threads,), scalars)
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
        if array.data_ptr() % 16 or not array.is_contiguous():
            raise ValueError("a tensor map needs a contiguous, 16-byte aligned tensor")
        dev = array.get_device()
        kernel, grid, block, scalars = plans.get((dev, length, channels)) or plan(dev, length, channels)
        desc = tensor_map(array, (rows, GROUP), swizzle=0, l2_promotion=256)
        kernel(grid, block, desc, out, *scalars, shared_mem=smem,
               stream=_Stream(torch._C._cuda_getCurrentRawStream(dev)))
        return fit_bins(out, num_bins)

    return run


custom_kernel = make_kernel(CONFIG)
