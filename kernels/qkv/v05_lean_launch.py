"""v04's tiles with the launch packed once per shape: a call allocates the output, writes three
pointers and launches, one driver call.

``v05_lean_launch.cu`` is v04's kernel (the body in ``qkv_tiles.cuh``); the host side is
``qkv_host.lean_tiled_kernel``: the first call of a shape checks the inputs, loads the module and
packs the launch (``reporter.cuda.LaunchPlan``); later calls check the inputs' types with a few
attribute reads, allocate h_qkv and launch. Hypothesis: layer 0 is host-bound. Its kernel does
0.18 GFLOP and moves 15 MB, a few microseconds of work, while v04's call converts every argument
and looks the module up again each time, and under event timing the GPU waits for that inside the
sample; layer 1's 330 µs hide it.
"""

from __future__ import annotations

from pathlib import Path

import qkv_host as host

SOURCE = Path(__file__).with_suffix(".cu")
THIN = {"BM": 64, "BN": 96, "BK": 32, "TM": 4, "TN": 4}
GEMM = {"BM": 128, "BN": 128, "BK": 16, "TM": 8, "TN": 8}
CONFIG = THIN


def pick(d_ws: int, d_qkv: int, d_model: int) -> dict:
    """v04's choice: THIN where all of w_qkv fits one tile's columns and slice (layer 0), else GEMM."""
    return THIN if d_qkv <= 128 and d_model <= 64 else GEMM


custom_kernel = host.lean_tiled_kernel(SOURCE, "qkv_lean_launch", pick)
