"""v17's loop fed the way cuBLAS's fp32 kernel feeds the same shape: a ring of shared-memory stages
filled by cp.async, A transposed on its way in by one 4-byte copy an element.

``v23_cp_async_transposed.cu`` sets the tiles and the depth; ``matmul_cp_async_transposed.cuh``, new
here, holds the kernel: v17's lanes (16 x 8 outputs, four float4s of sA and two of sB a step, step
k + 1's values read during step k's FMAs) reading a k-major sA whose rows are BM + 8 floats apart; a
warp copies 8 rows x 4 k of A (32 banks), a k row of B 16 bytes a lane; STAGES slices in flight, one
barrier a slice, at its last step, after which the freed stage is refilled. k past the matrix is
zero-filled in the last slice only; rows and columns past it are clamped.

Hypothesis: the stall probe has v17 waiting at dispatch twice as often per issued instruction as
cuBLAS, and waiting on its own global loads at each slice's end, with 12 registers holding the next
slice. v21 took loads off the warps' path but read A four k at a time, which cost the loop more than
it saved. cuBLAS's kernel keeps both: a k-major A, which its 4-byte asynchronous copies transpose on
the way in, and nothing in flight in registers. With v17's step loop unchanged and the copies as
cuBLAS makes them, v23 should issue on as many cycles as cuBLAS, with v17's instruction count.
"""

from __future__ import annotations

from pathlib import Path

import matmul_host_rect as host
import matmul_traffic as mt
import matmul_traffic_tc as mtc

SOURCE = Path(__file__).with_suffix(".cu")
# v17's tiles, three slices in flight (cuBLAS's depth)
CONFIG = {"BM": 256, "BN": 128, "WM": 128, "WN": 32, "S": 8, "STAGES": 3}
# two and three stages (four 8-deep stages of 256 x 128 pass the 48 KiB of static shared memory), on
# v17's tiles and on 128 x 256 with 8 x 16 lanes
SWEEP = [{"BM": bm, "BN": bn, "WM": wm, "WN": wn, "S": 8, "STAGES": st}
         for bm, bn, wm, wn in ((256, 128, 128, 32), (128, 256, 64, 64)) for st in (2, 3)]


def lane_outputs(config: dict) -> tuple[int, int]:
    """A lane's rows and columns of C: (WM/32)·4 x (WN/16)·4, as v17's."""
    return config["WM"] // 32 * 4, config["WN"] // 16 * 4


def traffic(n: int, config: dict = CONFIG) -> mt.Traffic:
    rows, cols = lane_outputs(config)
    return mtc.rectangular_tiled(n, config["BM"], config["BN"], rows, cols)


def make_kernel(config: dict):
    threads = (config["BM"] // config["WM"]) * (config["BN"] // config["WN"]) * 32
    return host.rect_tiled_kernel(SOURCE, "matmul_cp_async_transposed", config, config["BM"], config["BN"],
                                  (threads,))


custom_kernel = make_kernel(CONFIG)
