"""v07's pipeline with the outputs dealt out by warp: each warp owns a WM x WN region of the block's
tile, its lanes 8 x 4 micro-tiles of 4 x 4 repeated across it.

``v08_warp_tiling.cu`` holds the mapping (``WarpTiledThreads``); the pipeline is
``matmul_double_buffer.cuh``'s. In v07 a warp is two rows of 16 threads and reads 16 values of A
and 128 of B from shared memory a step; with a 64 x 32 region it reads 64 and 32, fewer
shared-memory wavefronts for the same 2048 products, and each lane still owns 8 x 8 outputs
(rows 32 apart, columns 16 apart). Hypothesis: with the loads hidden (v07) the shared-memory
reads are what is left between the FMAs.
"""

from __future__ import annotations

from pathlib import Path

import matmul_host as host
import matmul_traffic as mt

SOURCE = Path(__file__).with_suffix(".cu")
CONFIG = {"L": 128, "S": 8, "WM": 64, "WN": 32}
# 32 x 64 regions with S = 16 spill in fp32 (ptxas: 8 bytes at 128 registers), so they are left out
SWEEP = [{"L": 128, "S": s, "WM": wm, "WN": wn} for s in (8, 16) for wm, wn in ((64, 32), (32, 64), (32, 32))
         if (s, wm, wn) != (16, 32, 64)]


def lane_outputs(config: dict) -> tuple[int, int]:
    """A lane's rows and columns of C: (WM/32)·4 x (WN/16)·4."""
    return config["WM"] // 32 * 4, config["WN"] // 16 * 4


def traffic(n: int, config: dict = CONFIG) -> mt.Traffic:
    rows, cols = lane_outputs(config)
    return mt.shared_tiled(n, config["L"], rows, cols)


def make_kernel(config: dict):
    threads = (config["L"] // config["WM"]) * (config["L"] // config["WN"]) * 32
    return host.tiled_kernel(SOURCE, "matmul_warp_tiling", config, config["L"], (threads,))


custom_kernel = make_kernel(CONFIG)
