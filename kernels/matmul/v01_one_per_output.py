"""The lecture's GPU matmul v1: one thread per element of C, every operand read from global memory.

``v01_one_per_output.cu``: blocks of ``BLOCK`` x ``BLOCK`` threads (32 x 32, the lecture's launch)
tile C; the thread at (x, y) computes C[x][y] as the dot product of row x of A and column y of B,
read element by element from global memory, in an fp32 register. As in the lecture's listing, x
(the row) comes from ``threadIdx.x``: the lanes of a warp hold 32 consecutive rows, so each of
their A reads touches its own 32-byte sector and all of them read the same element of B. The
lecture's count: each thread reads 2N values, 2N³ in all (``traffic``). fp16 inputs are read as
fp16 and the sum kept in fp32.
"""

from __future__ import annotations

from pathlib import Path

import matmul_host as host
import matmul_traffic as mt

SOURCE = Path(__file__).with_suffix(".cu")
CONFIG = {"BLOCK": 32}
SWEEP = [{"BLOCK": b} for b in (8, 16, 32)]


def traffic(n: int, config: dict = CONFIG) -> mt.Traffic:
    return mt.one_per_output(n)


def make_kernel(config: dict):
    # the grid's x covers the rows here (the lecture's x), so a tile's x and y are both BLOCK
    return host.tiled_kernel(SOURCE, "matmul_one_per_output", config, config["BLOCK"],
                             (config["BLOCK"], config["BLOCK"]))


custom_kernel = make_kernel(CONFIG)
