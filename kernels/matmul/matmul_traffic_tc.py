"""The traffic model of matmul's tensor-core versions (v10 on): the lecture's two levels
(``matmul_traffic.py``) with rectangular tiles, a block of BM x BN outputs and a warp or warpgroup of
WM x WN. No torch or GPU here.
"""

from __future__ import annotations

from matmul_traffic import Traffic, _check


def rectangular_tiled(n: int, bm: int, bn: int, wm: int, wn: int) -> Traffic:
    """v3's two levels with rectangular tiles (the tensor-core versions): a block of BM x BN outputs
    reads N(BM + BN) values of global memory, N³/BN + N³/BM in all (2N³/L when both are L); the unit
    that reads shared memory (a warp or a warpgroup) owns WM x WN outputs and reads N(WM + WN),
    N³/WN + N³/WM in all."""
    _check(n, BM=bm, BN=bn, WM=wm, WN=wn)
    if bm % wm or bn % wn:
        raise ValueError(f"a block's {bm} x {bn} must be a whole number of {wm} x {wn} regions")
    return Traffic("N³/BN + N³/BM", (n * n / (bm * bn)) * n * (bm + bn), (n * n / (wm * wn)) * n * (wm + wn),
                   "N³/WN + N³/WM")
