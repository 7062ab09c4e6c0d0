"""v17's kernel, the FMAs of each step issued in another order.

``v22_fma_order.cu`` is v17's tiles and body (``matmul_prefetch_vec.cuh``) with ``FMA_ORDER`` set;
``matmul.cuh`` gains ``outer_product_ordered``: rows outer as v17 (0), rows outer as a serpentine
(1: every other row walked backwards, so the turn shares an operand too), columns outer (2), and
columns outer as a serpentine (3). v17's machine code is unchanged (the default is its order).

Hypothesis: v17 issues fewer instructions than cuBLAS's fp32 kernel at 4096 and still finishes
later: a profile of both has v17's warps stalled at dispatch about twice as often per issued
instruction, which for a loop of FMAs points at register bank conflicts among an FMA's three
sources that the operand reuse caches do not absorb. The order of the FMAs decides which source
consecutive FMAs share; a serpentine keeps one shared across every turn. The sweep times all four
orders on v17's tiles in one session (order 0 is v17's code).

Measured: refuted. v17's own order is the fastest of the four at 4096 and at 8192, and every other
order compiles to more registers and runs slower; the dispatch stalls are not the FMAs' order's to
remove.
"""

from __future__ import annotations

from pathlib import Path

import matmul_host_rect as host
import matmul_traffic as mt
import matmul_traffic_tc as mtc

SOURCE = Path(__file__).with_suffix(".cu")
# v17's tiles, columns outer: the recorded sweeps' fastest order other than v17's own, which led them
# both (the first guess, the serpentine over rows, came last)
CONFIG = {"BM": 256, "BN": 128, "WM": 128, "WN": 32, "S": 8, "FMA_ORDER": 2}
SWEEP = [{**CONFIG, "FMA_ORDER": o} for o in (0, 1, 2, 3)]


def lane_outputs(config: dict) -> tuple[int, int]:
    """A lane's rows and columns of C: (WM/32)·4 x (WN/16)·4, as v17."""
    return config["WM"] // 32 * 4, config["WN"] // 16 * 4


def traffic(n: int, config: dict = CONFIG) -> mt.Traffic:
    rows, cols = lane_outputs(config)
    return mtc.rectangular_tiled(n, config["BM"], config["BN"], rows, cols)


def make_kernel(config: dict):
    threads = (config["BM"] // config["WM"]) * (config["BN"] // config["WN"]) * 32
    return host.rect_tiled_kernel(SOURCE, "matmul_fma_order", config, config["BM"], config["BN"], (threads,))


custom_kernel = make_kernel(CONFIG)
