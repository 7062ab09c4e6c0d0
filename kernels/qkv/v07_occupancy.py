"""v06's double-buffered tiles with the CTAs an SM set by launch bounds, chosen with the tile by a
recorded sweep.

``v07_occupancy.cu``: v06's kernel body (``qkv_double_buffer_tile`` in ``qkv_tiles.cuh``) under
``__launch_bounds__(THREADS, MIN_CTAS)``, which caps a thread's registers so that MIN_CTAS CTAs fit an
SM. Hypothesis: v06's layer 1 runs one CTA of 12 warps an SM (107 registers a thread, 41 K of the
SM's 64 K), too few warps to hide the shared-memory and global loads behind the multiply-adds (the
profile: an instruction issued in two thirds of the schedulers' active cycles), and its 384 tiles
take three rounds of 132. Two or three CTAs an SM, at 85 or 56 registers a thread, give the
schedulers more warps to choose from; the tiles' count against the places for them decides how
even the last round is, so the sweep sets the two together. Layer 0 keeps v06's 64 x 96 tile.
"""

from __future__ import annotations

from pathlib import Path

import qkv_host as host

SOURCE = Path(__file__).with_suffix(".cu")
THIN = {"BM": 64, "BN": 96, "BK": 16, "TM": 4, "TN": 4, "MIN_CTAS": 1}  # v06's layer-0 tile and launch
# the recorded sweep's fastest on layer 1, measurably ahead of the other eight: v06's tile at one CTA an SM.
# The first guess, 64 x 96 tiles two an SM (71 registers, 24 warps an SM, 752 tiles on 264 places), was
# 1.20x slower in the sweep
CONFIG = {"BM": 128, "BN": 96, "BK": 16, "TM": 8, "TN": 4, "MIN_CTAS": 1}
# tile and CTAs an SM together, every point built for sm_90a without a spill: v06's tile at one CTA (its
# launch); 128 x 128 at two (8-deep: 123 registers); 64 x 96 at two and, 8-deep, at three (56 registers,
# 36 warps an SM); 64 x 64 at three and four; 96 x 64 at two; 128 x 64 and 64 x 128 at two
SWEEP = [
    {"BM": 128, "BN": 96, "BK": 16, "TM": 8, "TN": 4, "MIN_CTAS": 1},
    {"BM": 128, "BN": 128, "BK": 8, "TM": 8, "TN": 8, "MIN_CTAS": 2},
    {"BM": 64, "BN": 96, "BK": 16, "TM": 4, "TN": 4, "MIN_CTAS": 2},
    {"BM": 64, "BN": 96, "BK": 8, "TM": 4, "TN": 4, "MIN_CTAS": 3},
    {"BM": 64, "BN": 64, "BK": 16, "TM": 4, "TN": 4, "MIN_CTAS": 3},
    {"BM": 64, "BN": 64, "BK": 16, "TM": 4, "TN": 4, "MIN_CTAS": 4},
    {"BM": 96, "BN": 64, "BK": 16, "TM": 4, "TN": 4, "MIN_CTAS": 2},
    {"BM": 128, "BN": 64, "BK": 16, "TM": 8, "TN": 4, "MIN_CTAS": 2},
    {"BM": 64, "BN": 128, "BK": 16, "TM": 4, "TN": 8, "MIN_CTAS": 2},
]


def make_kernel(config: dict):
    def pick(d_ws: int, d_qkv: int, d_model: int) -> dict:
        return THIN if d_qkv <= 128 and d_model <= 64 else config

    return host.lean_tiled_kernel(SOURCE, "qkv_occupancy", pick)


custom_kernel = make_kernel(CONFIG)
