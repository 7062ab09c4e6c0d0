"""v27's seven Strassen products, their ten operand sums formed first by a kernel of their own.

``v28_strassen_sums.cu`` holds three kernels on v17's tiles and body: ``strassen_sums`` (new here, in
``matmul_strassen_sums.cuh``), which reads each position of A's and B's quadrants once and writes the
five sums of each that the products take into two scratch matrices; ``matmul_strassen_fed``, the seven
products (grid z) of v27, each operand now one quadrant of an input or one block of the sums, so that a
product is v17's loop exactly (``product_tile`` with a plain ``SliceLoader``), added into C's quadrants
as v27 adds them; and ``matmul_strassen_whole``, v17's kernel, for sizes that do not split into whole
tiles and slices.

Hypothesis: v27 does 7/8 of v17's FMAs in 10 % fewer instructions and still loses, because its loop
waits on its loads (1.11 warps per issued instruction wait on a long scoreboard in its profile, v17
0.05): every quad of a two-term operand is two loads from two places, and the next slice's loads,
issued one slice ahead, do not arrive in time. Forming the sums once, in a pass that reads A and B
once and writes ten h x h blocks (about 0.1 ms at N = 4096 at the card's copy rate), leaves each
product with v17's loads and v17's loop, so the products should take 7/8 of v17's time and the whole
call, with the pass, the zeroing of C and the reductions, should come in under cuBLAS's. v27's
sweep put 128 x 128 tiles, two CTAs an SM, first; they are the first guess here.
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
SUMS_THREADS = 256
# v27's sweep winner: 128 x 128 tiles with v09's 8 x 8 lanes, two CTAs an SM, 8-deep slices
CONFIG = {"BM": 128, "BN": 128, "WM": 64, "WN": 32, "S": 8}
SWEEP = [CONFIG, {**CONFIG, "S": 16}, {"BM": 256, "BN": 128, "WM": 128, "WN": 32, "S": 8},
         {"BM": 128, "BN": 256, "WM": 64, "WN": 64, "S": 8}]


def lane_outputs(config: dict) -> tuple[int, int]:
    """A lane's rows and columns of C: (WM/32)·4 x (WN/16)·4, as v17's."""
    return config["WM"] // 32 * 4, config["WN"] // 16 * 4


def traffic(n: int, config: dict = CONFIG) -> mt.Traffic:
    """Seven products of size N/2, one operand term each: 7/8 of v17's global and shared reads, plus the
    sums' pass, which reads A and B once (2N²)."""
    rows, cols = lane_outputs(config)
    t = mtc.rectangular_tiled(n, config["BM"], config["BN"], rows, cols)
    return dataclasses.replace(t, formula="7/8 (" + t.formula + ") + 2N²", global_reads=7 / 8 * t.global_reads + 2.0 * n * n,
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
        if n == 0:
            return torch.empty_like(a)
        mod = load_module(SOURCE, defines=defines(a.dtype, config), device_index=a.device.index or 0)
        if not splits(n, config):
            c = torch.empty_like(a)
            mod.kernel("matmul_strassen_whole")((-(-n // bn), -(-n // bm)), (threads,), a, b, c, np.int32(n))
            return c
        h = n // 2
        ta = torch.empty((3 * h, n), dtype=a.dtype, device=a.device)
        tb = torch.empty((3 * h, n), dtype=a.dtype, device=a.device)
        c = torch.zeros_like(a)
        mod.kernel("strassen_sums")((-(-(h * h // 4) // SUMS_THREADS), 2), (SUMS_THREADS,), a, b, ta, tb, np.int32(n))
        mod.kernel("matmul_strassen_fed")((h // bn, h // bm, 7), (threads,), a, ta, b, tb, c, np.int32(n))
        return c

    return ring.fp32_only(run, "v28_strassen_sums")


custom_kernel = make_kernel(CONFIG)
