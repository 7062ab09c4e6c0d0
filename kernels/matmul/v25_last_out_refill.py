"""v24's TMA ring, refilled by the last warp to leave a stage, at once, instead of by warp 0 a slice
late.

``v25_last_out_refill.cu`` sets the tiles and the depth (v24's sweep winner: 32-deep slices, three in
the ring) and holds the product's kernel; ``matmul_tma_ring_last.cuh``, new here, holds the ring's
refill by the last warp out; the transposition, the copies and the step loop are v24's (``matmul_tma_ring.cuh``), and so is
the launch (``matmul_host_tma_ring.py``). Each warp, after its last read of a stage, adds one to the
stage's counter in shared memory; the warp that completes the count issues the copies of the slice
STAGES further on into that stage. No empty mbarriers, and no warp waits for another to refill.

Hypothesis: v24 issues fewer instructions than v17 and still loses, its schedulers issuing on 75 % of
their active cycles against v17's 84 %, with 0.28 warps per issued instruction waiting on the full
barriers (v17: 0.05 on its loads). Its refill ran late: warp 0 refilled the stage of slice s - 1 at
the end of its own slice s, after waiting for every warp to leave it, so the warps ahead of warp 0
met stages not yet filled. Refilled by the last warp out, a stage is requested STAGES - 1 slices
ahead of the slowest warp; the waits should fall to v17's and the issue rate rise past it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import matmul_host_tma_ring as host
import matmul_traffic as mt
import matmul_traffic_tc as mtc

SOURCE = Path(__file__).with_suffix(".cu")
CASES_WHERE = {"dtype": "float32"}
# v17's tiles, v24's sweep winner: 32-deep slices, three in the ring
CONFIG = {"BM": 256, "BN": 128, "WM": 128, "WN": 32, "S": 32, "STAGES": 3}
# the depths and ring lengths that fit 227 KiB of shared memory, on v17's tiles
SWEEP = [{"BM": 256, "BN": 128, "WM": 128, "WN": 32, "S": s, "STAGES": st}
         for s, st in ((8, 8), (16, 4), (16, 6), (32, 2), (32, 3), (32, 4))]


def lane_outputs(config: dict) -> tuple[int, int]:
    """A lane's rows and columns of C: (WM/32)·4 x (WN/16)·4, as v17's."""
    return config["WM"] // 32 * 4, config["WN"] // 16 * 4


def traffic(n: int, config: dict = CONFIG) -> mt.Traffic:
    """v24's: v17's reads, plus the transposition's one read of A."""
    rows, cols = lane_outputs(config)
    t = mtc.rectangular_tiled(n, config["BM"], config["BN"], rows, cols)
    return dataclasses.replace(t, formula=t.formula + " + N²", global_reads=t.global_reads + float(n) * n)


def make_kernel(config: dict):
    return host.fp32_only(host.tma_ring_kernel(SOURCE, "matmul_last_out_refill", "matmul_transpose_a", config),
                          "v25_last_out_refill")


custom_kernel = make_kernel(CONFIG)
