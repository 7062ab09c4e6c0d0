"""The lecture's GPU matmul v3, SRAM tiling: a block's L x L tile of C from S-deep slices of A and B that its
threads fetch into shared memory together.

``v04_shared_tiling.cu``: a CTA of (L/V) x (L/V) threads owns an L x L tile of C, each thread a
V x V block of it (rows from ``threadIdx.y``, as in the lecture's listing). For each slice of S
columns of A and S rows of B the threads fetch the two S x L slices into shared memory together
(cooperative fetching: thread t takes elements t, t + threads, ...), A's transposed (``sA[k][m]``),
wait at a barrier, then each adds S outer products of V values of sA and V of sB (v03's inner
loop, from shared memory); a barrier at the top of the loop keeps a fast thread from overwriting
a slice others still read. Global reads 2N³/L, shared reads 2N³/V (``traffic``). The fetch walks
sA's order, so a warp reads A down a column: v05 changes that.
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
    return host.shared_tiled_kernel(SOURCE, "matmul_shared_tiling", config)


custom_kernel = make_kernel(CONFIG)
