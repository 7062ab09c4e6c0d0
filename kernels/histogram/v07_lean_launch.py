"""v05's kernel with a shorter host path: everything a call does before its launch is looked up once.

Nothing on the GPU changes: the source, grid, block and shared memory are v05's (it imports
them). What changes is the Python that runs between the harness's start event and the kernel
launch. In plain event timing (the leaderboards' method) the GPU finishes the L2 flush queued
before the start event, then waits for that launch: for a 0.2 ms kernel the wait is a visible
share of the sample. v05's call validates the input, allocates and zeroes the output, looks
its module up (a ``stat`` of the .cu file and a dictionary hit), wraps every argument through
the generic launcher (type checks, ``torch.cuda.current_stream()`` building a Stream object)
and launches. Here the first call per (device, shape) builds a launch plan: the CuPy function
handle with its shared-memory limit already raised, grid, block and the scalar arguments as
numpy values; later calls check the input, allocate the zeroed output, read the raw stream
handle and launch with the plan. The hypothesis: the plain-timed median drops toward the held
one (``report run --hold``) by the host time saved, while the held median stays v05's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

import v05_persistent as v05
from histogram_io import fit_bins, unpack
from reporter.cuda import load_module

NUM_BINS = v05.NUM_BINS
GROUP = v05.GROUP
CONFIG = dict(v05.CONFIG)


class _Stream:
    """What CuPy's launcher reads from a stream: the raw handle as ``.ptr``."""

    __slots__ = ("ptr",)

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr


def make_kernel(config: dict) -> Callable[[tuple[torch.Tensor, int]], torch.Tensor]:
    threads, unroll = int(config["threads"]), int(config["unroll"])
    shared_bytes = GROUP * NUM_BINS * 4 + (threads // 32) * 32 * 9 * 4
    defines = {"THREADS": threads, "UNROLL": unroll}
    plans: dict[tuple[int, int, int], tuple[Any, tuple[int], tuple[int], tuple[Any, ...]]] = {}

    def plan(device_index: int, length: int, channels: int) -> tuple[Any, tuple[int], tuple[int], tuple[Any, ...]]:
        if channels % 4:
            raise ValueError(f"32-bit loads need channels % 4 == 0 (channels={channels})")
        if length >= 2**31:
            raise ValueError(f"length {length} does not fit the kernel's 32-bit row index")
        groups = -(-channels // GROUP)
        chunks = max(1, v05._sm_count(device_index) // groups)
        kernel = load_module(v05.SOURCE, defines=defines, device_index=device_index).kernel(
            "histogram_persistent", max_dynamic_shared_memory=shared_bytes)
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
        if ptr % 4:
            raise ValueError("32-bit loads need a 4-byte aligned tensor")
        dev = array.get_device()
        p = plans.get((dev, length, channels)) or plan(dev, length, channels)
        fn, grid, block, scalars = p
        fn(grid, block, (np.uint64(ptr), np.uint64(out.data_ptr()), *scalars),
           shared_mem=shared_bytes, stream=_Stream(torch._C._cuda_getCurrentRawStream(dev)))
        return fit_bins(out, num_bins)

    return run


custom_kernel = make_kernel(CONFIG)
