"""v07's host path for a kernel on v05's persistent grid: a launch plan per (device, length, channels) and,
per call, the input checked, the zeroed output allocated and one launch of CuPy's function handle on the raw
stream. v13 and v14 launch their kernels through it; v07 and v11 keep their own copies, which their
records ran.
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

NUM_BINS = v05.NUM_BINS
GROUP = v05.GROUP


def kernel_maker(source: Path, kernel_name: str) -> Callable[[dict], Callable[[tuple[torch.Tensor, int]], torch.Tensor]]:
    """``make_kernel(config)`` for ``kernel_name`` of ``source``, which takes v05's arguments (data, out,
    length, channels, groups, chunks) and adds into a zeroed output; config: threads, unroll."""

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
            kernel = load_module(source, defines=defines, device_index=device_index).kernel(
                kernel_name, max_dynamic_shared_memory=shared_bytes)
            scalars = (np.uint32(length), np.uint32(channels), np.uint32(groups), np.uint32(chunks))
            p = plans[(device_index, length, channels)] = (kernel.function, (groups * chunks,), (threads,), scalars)
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
            fn, grid, block, scalars = plans.get((dev, length, channels)) or plan(dev, length, channels)
            fn(grid, block, (np.uint64(ptr), np.uint64(out.data_ptr()), *scalars),
               shared_mem=shared_bytes, stream=_Stream(torch._C._cuda_getCurrentRawStream(dev)))
            return fit_bins(out, num_bins)

        return run

    return make_kernel
