"""v07 in one launch: the kernel zeroes its own output, so the call has no fill kernel before it.

Structure: ``v12_zero_in_kernel.cu`` is v07's kernel (v05's persistent grid of groups × chunks blocks,
v04's counting and flush) with two additions. The block of chunk 0 of each channel group first stores
zeros over the group's rows of the output and publishes ``flags[group] = epoch`` (a release store); every
block acquires that flag before its flush, which is v07's atomics. The host path is v07's (a launch
plan per device and shape) with the output from ``torch.empty`` and two more arguments: ``flags``, one
word per group, allocated once per device and stream (two streams must not share them), and ``epoch``,
a per-stream call count that is never 0, so the flags never need resetting.

Hypothesis: v07's call is two kernels, the 512 KB fill of the output (about 2 µs on the GPU by v05's
profile) and the histogram, with a launch gap between them; both sit inside every timer's window. The
zeros stored at the start of the histogram kernel overlap its first loads, and the flag they publish
has been set for the whole counting when the flush looks at it. Predicted: 1-2 % faster than v07
(2-4 µs), the kernel itself as long as v07's.
"""

from __future__ import annotations

import itertools
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
CONFIG = dict(v05.CONFIG)

_flags: dict[tuple[int, int], torch.Tensor] = {}  # (device index, raw stream) -> one word per group
_epochs: dict[tuple[int, int], itertools.count] = {}


def flags_and_epoch(device_index: int, stream: int, groups: int) -> tuple[torch.Tensor, int]:
    """The flag words of (device, stream), kept for the process, and this call's epoch (1 .. 2**32 - 1:
    a fresh buffer's zeros never match it)."""
    key = (device_index, stream)
    flags = _flags.get(key)
    if flags is None or flags.numel() < groups:
        flags = _flags[key] = torch.zeros(max(groups, 64), dtype=torch.int32, device=f"cuda:{device_index}")
        _epochs[key] = itertools.count(1)
    return flags, next(_epochs[key]) % 0xFFFFFFFF + 1


def make_kernel(config: dict) -> Callable[[tuple[torch.Tensor, int]], torch.Tensor]:
    threads, unroll = int(config["threads"]), int(config["unroll"])
    shared_bytes = GROUP * NUM_BINS * 4 + (threads // 32) * 32 * 9 * 4
    defines = {"THREADS": threads, "UNROLL": unroll}
    plans: dict[tuple[int, int, int], tuple[Any, tuple[int], tuple[int], tuple[Any, ...], int]] = {}

    def plan(device_index: int, length: int, channels: int) -> tuple[Any, tuple[int], tuple[int], tuple[Any, ...], int]:
        if channels % 4:
            raise ValueError(f"32-bit loads need channels % 4 == 0 (channels={channels})")
        if length >= 2**31:
            raise ValueError(f"length {length} does not fit the kernel's 32-bit row index")
        groups = -(-channels // GROUP)
        chunks = max(1, v05._sm_count(device_index) // groups)
        kernel = load_module(SOURCE, defines=defines, device_index=device_index).kernel(
            "histogram_zero_in_kernel", max_dynamic_shared_memory=shared_bytes)
        scalars = (np.uint32(length), np.uint32(channels), np.uint32(groups), np.uint32(chunks))
        p = (kernel.function, (groups * chunks,), (threads,), scalars, groups)
        plans[(device_index, length, channels)] = p
        return p

    def run(data: tuple[torch.Tensor, int]) -> torch.Tensor:
        array, num_bins = unpack(data)
        if not array.is_cuda:
            raise ValueError(f"expected a CUDA tensor, got one on {array.device}")
        length, channels = array.shape
        if length == 0 or channels == 0:
            return fit_bins(torch.zeros((channels, NUM_BINS), dtype=torch.int32, device=array.device), num_bins)
        ptr = array.data_ptr()
        if ptr % 4:
            raise ValueError("32-bit loads need a 4-byte aligned tensor")
        dev = array.get_device()
        p = plans.get((dev, length, channels)) or plan(dev, length, channels)
        fn, grid, block, scalars, groups = p
        stream = torch._C._cuda_getCurrentRawStream(dev)
        flags, epoch = flags_and_epoch(dev, stream, groups)
        out = torch.empty((channels, NUM_BINS), dtype=torch.int32, device=array.device)
        fn(grid, block, (np.uint64(ptr), np.uint64(out.data_ptr()), np.uint64(flags.data_ptr()), *scalars,
                         np.uint32(epoch)), shared_mem=shared_bytes, stream=_Stream(stream))
        return fit_bins(out, num_bins)

    return run


custom_kernel = make_kernel(CONFIG)
