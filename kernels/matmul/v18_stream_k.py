"""v17's tiles and main loop, scheduled by stream-K: a persistent grid shares the k slices of all
the tiles evenly, so that no wave runs partly empty.

``v18_stream_k.cu`` sets the tiles; ``matmul_stream_k.cuh``, new here, holds the schedule; the
segment of slices a CTA computes is v17's pipeline (``matmul_prefetch_vec.cuh``'s
``sliced_segment``, which v17's whole tiles now call from slice 0 to the last). The grid is as many
CTAs as the SMs hold at once (one an SM at 256 x 128); the tiles' slices, in tile order, are cut into
one run a CTA of equal length (to one slice); a tile cut between CTAs is finished by the CTA that
holds its first slice, which adds the partial sums the later CTAs left in a workspace, in CTA order
(deterministic for a given SM count). Hypothesis: v17 at 4096 runs 512 tiles of 256 x 128 on 132
SMs, 3.88 waves, so its last wave is 12 % empty, about 3 % of its time; at 8192, 15.5 waves, the
same 3 %. Stream-K gives that back for two partial tiles a CTA (about 128 KiB written and read
through L2 each), which should put fp32 at or past cuBLAS. At 1024 (32 tiles on 132 SMs, a quarter
of the machine busy under v17) each tile is cut across about four CTAs: a split-k of four.
"""

from __future__ import annotations

from pathlib import Path

import matmul_host_stream_k as host
import matmul_traffic as mt
import matmul_traffic_tc as mtc

SOURCE = Path(__file__).with_suffix(".cu")
# v17's recorded sweep's fastest tiles
CONFIG = {"BM": 256, "BN": 128, "WM": 128, "WN": 32, "S": 8}
# v17's two best tile shapes at 8- and 16-deep slices, and 128 x 128 at two CTAs an SM
SWEEP = [{"BM": bm, "BN": bn, "WM": wm, "WN": wn, "S": s}
         for bm, bn, wm, wn, s in ((256, 128, 128, 32, 8), (256, 128, 128, 32, 16), (128, 256, 64, 64, 8),
                                   (128, 128, 64, 32, 8), (128, 128, 64, 32, 16))]


lane_outputs = host.lane_outputs


def traffic(n: int, config: dict = CONFIG) -> mt.Traffic:
    """v17's: the k slices are the same slices, cut at other places (the partial sums' traffic, at
    most two tiles a CTA, is not in the lecture's model)."""
    rows, cols = lane_outputs(config)
    return mtc.rectangular_tiled(n, config["BM"], config["BN"], rows, cols)


custom_kernel = host.stream_k_kernel(SOURCE, "matmul_stream_k", CONFIG)
