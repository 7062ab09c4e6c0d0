"""v05 (tiles, the launch packed once) with the slices double-buffered, and layer 1's tile shape
chosen by a recorded sweep.

``v06_double_buffer.cu``: two shared buffers for each side; before a slice's multiply-adds each
thread loads its quads of the next slice into registers, and after them stores those into the
other buffer, so one barrier a slice and the next slice's global loads overlap this slice's
arithmetic (``qkv_fetch_slice``, ``qkv_put_slice``, ``qkv_slice_fma``, ``qkv_store_block`` in
``qkv_tiles.cuh``). Hypothesis: v04's layer 1 waits on its loads at every one of its 32 slices
(a tile's loads and multiply-adds alternate, 2 CTAs an SM to hide them), and it runs 1.09 waves
of 128 x 128 tiles (288 of them on 264 places). The sweep sets smaller and differently shaped
tiles, which fit more CTAs an SM and cut the last wave, against 128 x 128.
Layer 0 keeps v04's 64 x 96 tile in two 16-deep slices, the second's loads in flight during the
first's multiply-adds (one 32-deep slice would hold both in registers: 80 registers and a spill).
"""

from __future__ import annotations

from pathlib import Path

import qkv_host as host

SOURCE = Path(__file__).with_suffix(".cu")
THIN = {"BM": 64, "BN": 96, "BK": 16, "TM": 4, "TN": 4}  # layer 0 in two 16-deep slices (61 registers, no spill)
# the recorded sweep's fastest on layer 1, measurably ahead of the other six: 128 x 96 tiles, 8 x 4 a thread
# (24 x 16 = 384 CTAs of 384 threads), 16-deep slices
CONFIG = {"BM": 128, "BN": 96, "BK": 16, "TM": 8, "TN": 4}
_FIRST = {"BM": 128, "BN": 128, "BK": 16, "TM": 8, "TN": 8}  # v04's layer-1 tile, the sweep's first
SWEEP = [_FIRST] + [{"BM": bm, "BN": bn, "BK": bk, "TM": tm, "TN": tn} for bm, bn, bk, tm, tn in (
    (128, 128, 8, 8, 8), (64, 128, 16, 4, 8), (128, 64, 16, 8, 4), (96, 128, 16, 4, 8), (64, 64, 16, 4, 4),
    (128, 96, 16, 8, 4))]


def make_kernel(config: dict):
    def pick(d_ws: int, d_qkv: int, d_model: int) -> dict:
        return THIN if d_qkv <= 128 and d_model <= 64 else config

    return host.lean_tiled_kernel(SOURCE, "qkv_double_buffer", pick)


custom_kernel = make_kernel(CONFIG)
