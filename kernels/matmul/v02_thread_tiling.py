"""The lecture's GPU matmul v1.5, thread tiling: each thread computes a V x V block of C.

``v02_thread_tiling.cu``: blocks of ``BLOCK`` x ``BLOCK`` threads, each thread owning V rows and
V columns of C (the row from ``threadIdx.x``, as in v01). For each of its rows it holds a piece
of the row of A in registers (``KC`` values at a time; the lecture's ``a[N]`` does not fit in
any thread's registers) and runs it against its V columns of B, read from global memory. A row
of A is read once per thread and a column of B once per (row, column): NV + NV² reads, N³/V + N³
in all (``traffic``), against v01's 2N³. Loads outside the matrix read 0, stores there are skipped.
"""

from __future__ import annotations

from pathlib import Path

import matmul_host as host
import matmul_traffic as mt

SOURCE = Path(__file__).with_suffix(".cu")
CONFIG = {"BLOCK": 16, "V": 4, "KC": 8}
SWEEP = [{"BLOCK": b, "V": v, "KC": 8} for b in (8, 16) for v in (2, 4)]


def traffic(n: int, config: dict = CONFIG) -> mt.Traffic:
    return mt.thread_tiled(n, config["V"])


def make_kernel(config: dict):
    return host.tiled_kernel(SOURCE, "matmul_thread_tiling", config, config["BLOCK"] * config["V"],
                             (config["BLOCK"], config["BLOCK"]))


custom_kernel = make_kernel(CONFIG)
