"""v06's threads on a double-buffered pipeline: cp.async copies the next slices of A and B into
shared memory while the block computes on the current ones.

``v07_double_buffer.cu`` holds v06's mapping of threads to 4 x 4 chunks (``ChunkedThreads``);
``matmul_double_buffer.cuh``, new here, holds the pipeline: two shared stages, slice s + 1 put in
flight by cp.async (16 bytes fp32, 8 bytes fp16, zero-filled at the edges) before the threads
wait for slice s, one barrier to see every thread's copies and one before a stage is refilled.
cp.async cannot transpose, so A's slice is row-major in shared memory and each thread reads its
V rows as float4s of four consecutive k. The lecture's third step: overlap the memory traffic
with the computation, so that a barrier no longer waits for global memory.
"""

from __future__ import annotations

from pathlib import Path

import matmul_host as host
import matmul_traffic as mt

SOURCE = Path(__file__).with_suffix(".cu")
CONFIG = {"L": 128, "V": 8, "S": 8}  # a first guess (256 threads, 8 x 8 each) until a recorded sweep chooses
SWEEP = host.tile_sweep()


def traffic(n: int, config: dict = CONFIG) -> mt.Traffic:
    return mt.shared_tiled(n, config["L"], config["V"])


def make_kernel(config: dict):
    return host.shared_tiled_kernel(SOURCE, "matmul_double_buffer", config)


custom_kernel = make_kernel(CONFIG)
