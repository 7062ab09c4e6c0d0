"""One thread per input byte, one global atomicAdd per byte.

The kernel (``v01_global_atomics.cu``) launches length·channels threads in blocks of 256;
thread i reads byte i, takes its channel as i mod channels (the input is row-major), and
does ``atomicAdd(&out[channel][value], 1)`` on the int32 output, which ``custom_kernel``
zeroes first. There is no reuse and no shared memory: every byte is a read-modify-write
executed by the L2, so the L2's atomic throughput, not DRAM, sets the time. It is the
correct-first baseline.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from histogram_io import fit_bins, unpack
from reporter.cuda import load_module

SOURCE = Path(__file__).with_suffix(".cu")
NUM_BINS = 256
THREADS = 256


def custom_kernel(data: tuple[torch.Tensor, int]) -> torch.Tensor:
    array, num_bins = unpack(data)
    length, channels = array.shape
    out = torch.zeros((channels, NUM_BINS), dtype=torch.int32, device=array.device)
    n = length * channels
    if n == 0:
        return fit_bins(out, num_bins)
    kernel = load_module(SOURCE).kernel("histogram_global_atomics")
    kernel(((n + THREADS - 1) // THREADS,), (THREADS,), array, out, np.uint64(n), np.uint32(channels))
    return fit_bins(out, num_bins)
