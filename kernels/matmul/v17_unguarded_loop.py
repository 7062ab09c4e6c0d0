"""v16's tiles with a main loop that issues little besides its FMAs and shared loads: compiled once
for n % 4 == 0 and once for the scalar path, with no guard or predicate on any load in it.

``v17_unguarded_loop.cu`` sets the tiles and the launch bounds; ``matmul_prefetch_vec.cuh``, new
here, holds the kernel body: v09's register-prefetched pipeline (two shared stages, one barrier a
slice, step k + 1's values read during step k's FMAs, v08's warp regions) with the loop templated on
the path (``sliced_tile<VEC>``, chosen once; the stages declared once for both); rows of A and
columns of B past the matrix clamped to the last one before the loop (they feed only outputs that are
never stored), the partial k slice loaded first with guards so that every slice in the loop is whole;
a few global pointers advanced by a constant a slice; shared offsets computed once, so that with the
slice unrolled every shared load and store has an immediate offset; sA swizzled instead of padded
(48 KiB for two 16-deep stages of a 256 x 128 tile); at S = 16 the next slice's quads loaded in two
groups, half a slice apart, so that half as many registers wait on them; and no slice of zeros loaded
at the end (the last iteration loads nothing). Hypothesis: v16 is issue-bound at about 89 % FFMA
(its SASS: 1,155 instructions a slice for 1,024 FFMAs at 256 x 128, S = 8); this loop's are about
93 % (2,199 for 2,048 at S = 16), and the time falls with the issued instructions, to about cuBLAS's.
The recorded sweep chose 8-deep slices (92 % FFMA, 1,108 instructions for 1,024).
"""

from __future__ import annotations

from pathlib import Path

import matmul_host_rect as host
import matmul_traffic as mt
import matmul_traffic_tc as mtc

SOURCE = Path(__file__).with_suffix(".cu")
# the recorded sweep's fastest at N = 4096 fp32: 8-deep slices (the first guess, 16 deep in two load
# groups, was 1.13x slower)
CONFIG = {"BM": 256, "BN": 128, "WM": 128, "WN": 32, "S": 8}
# (BM, BN, WM, WN, S): v16's winner 256 x 128 with 16 x 8 a lane (S = 16 in two load groups, the
# default, or one; S = 8), 128 x 256 with 8 x 16, one CTA per SM; on 128 x 128, two CTAs per SM, v09's
# 8 x 8 lanes (8 warps, 128 registers) and 8 x 16 (4 warps)
_S16 = {"BM": 256, "BN": 128, "WM": 128, "WN": 32, "S": 16}
SWEEP = [_S16, {**_S16, "LOAD_GROUPS": 1}] + [
    {"BM": bm, "BN": bn, "WM": wm, "WN": wn, "S": s}
    for bm, bn, wm, wn, s in ((256, 128, 128, 32, 8), (128, 256, 64, 64, 16), (128, 256, 64, 64, 8),
                              (128, 128, 64, 32, 16), (128, 128, 64, 32, 8), (128, 128, 64, 64, 16))]


def lane_outputs(config: dict) -> tuple[int, int]:
    """A lane's rows and columns of C: (WM/32)·4 x (WN/16)·4."""
    return config["WM"] // 32 * 4, config["WN"] // 16 * 4


def traffic(n: int, config: dict = CONFIG) -> mt.Traffic:
    rows, cols = lane_outputs(config)
    return mtc.rectangular_tiled(n, config["BM"], config["BN"], rows, cols)


def make_kernel(config: dict):
    threads = (config["BM"] // config["WM"]) * (config["BN"] // config["WN"]) * 32
    return host.rect_tiled_kernel(SOURCE, "matmul_unguarded_loop", config, config["BM"], config["BN"], (threads,))


custom_kernel = make_kernel(CONFIG)
