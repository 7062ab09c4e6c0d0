"""The lecture's GPU matmul v2, register tiling: a thread's V x V block as a sum of outer products.

``v03_register_tiling.cu``: v02's grid and mapping (``BLOCK`` x ``BLOCK`` threads, each owning V
rows and V columns of C). For each k the thread loads V values of column k of A and V of row k
of B into registers and adds their V x V outer product to its sums, so every value loaded serves
V products: 2NV reads a thread, 2N³/V in all (``traffic``), against v02's N³/V + N³. The
hypothesis is the lecture's: the reads, not the arithmetic, bound v01 and v02.
"""

from __future__ import annotations

from pathlib import Path

import matmul_host as host
import matmul_traffic as mt

SOURCE = Path(__file__).with_suffix(".cu")
CONFIG = {"BLOCK": 16, "V": 4}
SWEEP = [{"BLOCK": b, "V": v} for b in (8, 16) for v in (2, 4, 8)]


def traffic(n: int, config: dict = CONFIG) -> mt.Traffic:
    return mt.register_tiled(n, config["V"])


def make_kernel(config: dict):
    return host.tiled_kernel(SOURCE, "matmul_register_tiling", config, config["BLOCK"] * config["V"],
                             (config["BLOCK"], config["BLOCK"]))


custom_kernel = make_kernel(CONFIG)
