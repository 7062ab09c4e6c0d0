"""One level of Strassen's algorithm on v17's loop: seven products of half-size operands instead of eight.

``v27_strassen.cu`` holds two kernels on v17's tiles and body (``matmul_prefetch_vec.cuh``):
``matmul_strassen``, whose grid is the seven products (z) of (n/2)-sized tiles (x, y), and, for a size
that does not split into whole tiles and slices, ``matmul_strassen_whole``, v17's kernel on the whole
matrix. ``matmul_strassen.cuh``, new here, holds the products' table, a loader that adds the two
quadrants of a two-term operand as it reads each quad of a slice (one FMA by the second term's sign),
and the epilogue, which adds the tile into one or two quadrants of C with vector reductions
(``red.global.add.v4.f32``) into a C zeroed before the launch. The header's ``run_slices`` (v17's
loop, now one function that both kernels call) is unchanged in what it compiles to.

Hypothesis: v17 issues its FMAs at the rate cuBLAS's kernel does to within a few percent, and the
rest of the gap sits in machine code that CUDA C does not reach (v22, v26). Doing fewer FMAs does
not need it: Strassen's products are 7/8 of the classical multiply's FMAs, and fed by v17's loop
(about 1 % more instructions a slice for the sums) they should take about 7/8 of its time. What they
add: the operands are read twice where they are sums (1.5 times v17's global reads, mostly from L2),
C is zeroed and then receives 12 quadrant-sized reductions, 3 N² floats through L2 in all, and the
grid of 7·(n/2)² tiles fills the SMs in more, shorter rounds. At N = 4096 and 8192 that should still
leave it ahead of v17 and of cuBLAS. Rounding: each product's operands are sums of two inputs and C
sums up to four products, so the error is a few times the classical product's; the check's tolerance
holds it.
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
# v17's tiles and slices
CONFIG = {"BM": 256, "BN": 128, "WM": 128, "WN": 32, "S": 8}
SWEEP = [CONFIG, {**CONFIG, "S": 16, "LOAD_GROUPS": 1}] + [
    {"BM": bm, "BN": bn, "WM": wm, "WN": wn, "S": s}
    for bm, bn, wm, wn, s in ((128, 256, 64, 64, 8), (128, 128, 64, 32, 16), (128, 128, 64, 32, 8))]


def lane_outputs(config: dict) -> tuple[int, int]:
    """A lane's rows and columns of C: (WM/32)·4 x (WN/16)·4, as v17's."""
    return config["WM"] // 32 * 4, config["WN"] // 16 * 4


def traffic(n: int, config: dict = CONFIG) -> mt.Traffic:
    """Seven products of size N/2 with 12 operand terms of A and 12 of B: 12/8 of v17's global reads
    (each term read in full by its product's tiles) and 7/8 of its shared reads."""
    rows, cols = lane_outputs(config)
    t = mtc.rectangular_tiled(n, config["BM"], config["BN"], rows, cols)
    return dataclasses.replace(t, formula="3/2 (" + t.formula + ")", global_reads=1.5 * t.global_reads,
                               shared_formula="7/8 (" + t.shared_formula + ")", shared_reads=7 / 8 * t.shared_reads)


def splits(n: int, config: dict) -> bool:
    """Whether n splits into quadrants of whole tiles and whole slices (else v17's kernel runs)."""
    h = n // 2
    return n % 2 == 0 and h > 0 and h % config["BM"] == 0 and h % config["BN"] == 0 and h % config["S"] == 0


def make_kernel(config: dict):
    bm, bn = int(config["BM"]), int(config["BN"])
    threads = (bm // int(config["WM"])) * (bn // int(config["WN"])) * 32

    def run(data: Data) -> torch.Tensor:
        a, b, n = check_inputs(data)
        if n == 0:
            return torch.empty_like(a)
        mod = load_module(SOURCE, defines=defines(a.dtype, config), device_index=a.device.index or 0)
        if splits(n, config):
            c = torch.zeros_like(a)
            h = n // 2
            mod.kernel("matmul_strassen")((h // bn, h // bm, 7), (threads,), a, b, c, np.int32(n))
        else:
            c = torch.empty_like(a)
            mod.kernel("matmul_strassen_whole")((-(-n // bn), -(-n // bm)), (threads,), a, b, c, np.int32(n))
        return c

    return ring.fp32_only(run, "v27_strassen")


custom_kernel = make_kernel(CONFIG)
