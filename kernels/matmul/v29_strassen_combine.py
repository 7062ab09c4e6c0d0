"""v28's Strassen products stored, each into a block of its own, and C written once from them.

``v29_strassen_combine.cu`` holds v28's ``strassen_sums``, ``matmul_strassen_stored`` (v28's product
tiles with a plain epilogue: product r's tile stored into block r of a scratch matrix, as v17 stores
C) and ``strassen_combine`` (new here, in ``matmul_strassen_combine.cuh``), which reads the seven
products at each position and writes C's four quadrants there; for sizes that do not split into whole
tiles and slices, ``matmul_strassen_whole``, v17's kernel. ``matmul_strassen.cuh``'s ``product_tile``
now takes the epilogue as a callable, v27's and v28's the reductions they had.

Hypothesis: v28 adds each product into C with vector reductions into a C zeroed first, 12 quadrants of
reductions through L2 and a 4 N²-byte memset a call; the order the reductions land in can change C's last
bits from call to call, and its calls under our timer spread upwards from a floor near do_bench's median. Storing the
seven products (7 N²/4 floats written) and combining them in one pass (7 N²/4 read, N² written) moves
about as many bytes without a read-modify-write in L2 and without the memset, so it should take v28's
time or less, with one result for one input and calls that do not spread.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import torch

import matmul_host_tma_ring as ring
import matmul_traffic as mt
import matmul_traffic_tc as mtc
from matmul_host import Data, check_inputs, defines
from reporter.cuda import load_module

SOURCE = Path(__file__).with_suffix(".cu")
CASES_WHERE = {"dtype": "float32"}
PASS_THREADS = 256  # the sums' and the combining pass's blocks
# v28's tiles: 128 x 128 with 8 x 8 lanes, two CTAs an SM, 8-deep slices
CONFIG = {"BM": 128, "BN": 128, "WM": 64, "WN": 32, "S": 8}
SWEEP = [CONFIG, {**CONFIG, "S": 16}, {"BM": 128, "BN": 256, "WM": 64, "WN": 64, "S": 8}]


def lane_outputs(config: dict) -> tuple[int, int]:
    """A lane's rows and columns of C: (WM/32)·4 x (WN/16)·4, as v17's."""
    return config["WM"] // 32 * 4, config["WN"] // 16 * 4


def traffic(n: int, config: dict = CONFIG) -> mt.Traffic:
    """v28's reads (7/8 of v17's and the sums' pass over A and B, 2N²) and the combining pass's read of
    the seven products, 7N²/4."""
    rows, cols = lane_outputs(config)
    t = mtc.rectangular_tiled(n, config["BM"], config["BN"], rows, cols)
    return dataclasses.replace(t, formula="7/8 (" + t.formula + ") + 2N² + 7N²/4",
                               global_reads=7 / 8 * t.global_reads + 2.0 * n * n + 7 / 4 * n * n,
                               shared_formula="7/8 (" + t.shared_formula + ")", shared_reads=7 / 8 * t.shared_reads)


def splits(n: int, config: dict) -> bool:
    """Whether n splits into quadrants of whole tiles and whole slices (else v17's kernel runs)."""
    h = n // 2
    return n % 2 == 0 and h > 0 and h % config["BM"] == 0 and h % config["BN"] == 0 and h % config["S"] == 0 and h % 4 == 0


def make_kernel(config: dict):
    bm, bn = int(config["BM"]), int(config["BN"])
    threads = (bm // int(config["WM"])) * (bn // int(config["WN"])) * 32

    def run(data: Data) -> torch.Tensor:
        a, b, n = check_inputs(data)
        c = torch.empty_like(a)
        if n == 0:
            return c
        mod = load_module(SOURCE, defines=defines(a.dtype, config), device_index=a.device.index or 0)
        if not splits(n, config):
            mod.kernel("matmul_strassen_whole")((-(-n // bn), -(-n // bm)), (threads,), a, b, c, np.int32(n))
            return c
        h = n // 2
        ta = torch.empty((3 * h, n), dtype=a.dtype, device=a.device)
        tb = torch.empty((3 * h, n), dtype=a.dtype, device=a.device)
        m = torch.empty((4 * h, n), dtype=a.dtype, device=a.device)
        blocks = -(-(h * h // 4) // PASS_THREADS)
        mod.kernel("strassen_sums")((blocks, 2), (PASS_THREADS,), a, b, ta, tb, np.int32(n))
        mod.kernel("matmul_strassen_stored")((h // bn, h // bm, 7), (threads,), a, ta, b, tb, m, np.int32(n))
        mod.kernel("strassen_combine")((blocks,), (PASS_THREADS,), m, c, np.int32(n))
        return c

    return ring.fp32_only(run, "v29_strassen_combine")


custom_kernel = make_kernel(CONFIG)
