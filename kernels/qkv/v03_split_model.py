"""The homework's problem 2: M_D threads compute each block of v02, each summing every M_D-th quad of
i_model, and their partial sums are added three ways, compared in the recorded sweep.

``v03_split_model.cu``: v02's M_H x M_W blocks, M_D neighbouring lanes to a block (they read
neighbouring quads, 16·M_D contiguous bytes of each row); REDUCE 0 adds every partial sum into
h_qkv with atomicAdd (the host zeroes it first), 1 passes them through shared memory to the
group's first lane, 2 combines them with a butterfly of warp shuffles that leaves every lane
with the sums, and the lanes share the stores. Hypothesis: with M_D lanes to an item a warp
covers 32/M_D items instead of 32, so the loads of a round come from fewer rows (fewer sectors and
tags a request) and a shape with few items (layer 1's 2970 rows) keeps more warps busy; of the
three ways to add, the shuffles cost the fewest instructions and no memory traffic.
"""

from __future__ import annotations

from pathlib import Path

import qkv_host as host

SOURCE = Path(__file__).with_suffix(".cu")
# the recorded sweeps' fastest on both layers, measurably ahead of the rest: 16 warps, shuffles (the first
# guess, 8 warps, was 1.60x slower on layer 0)
CONFIG = {"WARPS": 16, "M_H": 2, "M_W": 4, "M_D": 4, "REDUCE": 2}
_FIRST = {"WARPS": 8, "M_H": 2, "M_W": 4, "M_D": 4, "REDUCE": 2}  # the sweeps vary one setting of it at a time
SWEEP = [{**_FIRST, "REDUCE": r, **({"ZERO_OUT": 1} if r == 0 else {})} for r in (0, 1, 2)] + [
    {**_FIRST, "M_D": md} for md in (2, 8)] + [{**_FIRST, "WARPS": wp} for wp in (4, 16)]


def make_kernel(config: dict):
    return host.grid_stride_kernel(SOURCE, "qkv_split_model", config)


custom_kernel = make_kernel(CONFIG)
