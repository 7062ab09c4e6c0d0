"""v17's kernel with B's quads rotated by one element in shared memory, so that an FMA's B register and
its accumulator sit in different register banks.

``v26_rotated_b.cu`` is v17's tiles and body (``matmul_prefetch_vec.cuh``) with ``B_ROTATE`` set:
each thread stores its quad of B's slice rotated (element p holds column p + B_ROTATE), and each step
rotates the quads it reads back (``rotate4``), so the arithmetic is v17's. v17's machine code is
unchanged (the default is no rotation).

Hypothesis: v17's warps wait at dispatch about twice as often per issued instruction as cuBLAS's
(the stall probes), and its machine code shows why: the epilogue's float4 stores make ptxas keep each
row of accumulators in an aligned quad of registers, a step's LDS.128 of B fills another, and so in
every FMA of the loop acc[i][j] and b[j] have the same register number mod 4. a[i] comes from the
operand reuse cache, so the two registers each FMA fetches meet in one bank. cuBLAS's kernel lays
its accumulators out against its operands instead (its quad R4-R7 pairs with R135-R132). Rotating
B's quads moves b[j] to the next register of its quad, and ptxas folds the rotation into the
registers it stores the quad from: counted on the machine code (``tools/sass_banks.py``), the FMAs
whose fetched registers share a bank (index mod 4) fall from 912 of the loop's 1,024 to 90 (cuBLAS's
loop: 386), and the loop keeps v17's 1,108 instructions. The time should fall with the dispatch
stalls, towards cuBLAS's.
"""

from __future__ import annotations

from pathlib import Path

import matmul_host_rect as host
import matmul_traffic as mt
import matmul_traffic_tc as mtc

SOURCE = Path(__file__).with_suffix(".cu")
# v17's tiles and slices, B rotated by one
CONFIG = {"BM": 256, "BN": 128, "WM": 128, "WN": 32, "S": 8, "B_ROTATE": 1}
# the three rotations on v17's tiles, v17's own code (rotation 0) as the control, and rotation 1 on
# the other shapes of v17's sweep that came near it
SWEEP = [{**CONFIG, "B_ROTATE": r} for r in (1, 2, 3, 0)] + [
    {"BM": bm, "BN": bn, "WM": wm, "WN": wn, "S": s, "B_ROTATE": 1}
    for bm, bn, wm, wn, s in ((128, 256, 64, 64, 16), (128, 128, 64, 32, 16), (128, 128, 64, 32, 8))]


def lane_outputs(config: dict) -> tuple[int, int]:
    """A lane's rows and columns of C: (WM/32)·4 x (WN/16)·4, as v17."""
    return config["WM"] // 32 * 4, config["WN"] // 16 * 4


def traffic(n: int, config: dict = CONFIG) -> mt.Traffic:
    rows, cols = lane_outputs(config)
    return mtc.rectangular_tiled(n, config["BM"], config["BN"], rows, cols)


def make_kernel(config: dict):
    threads = (config["BM"] // config["WM"]) * (config["BN"] // config["WN"]) * 32
    return host.rect_tiled_kernel(SOURCE, "matmul_rotated_b", config, config["BM"], config["BN"], (threads,))


custom_kernel = make_kernel(CONFIG)
