"""v17's main loop, scheduled by stream-K in its hybrid form: a persistent grid computes
whole tiles a wave at a time, then shares the k slices of the last one to two waves' tiles evenly, so
that no wave runs partly empty.

``v18_stream_k.cu`` sets the tiles (v17's by default; CONFIG: the sweeps' 128 x 256, the same
512 tiles at 4096); ``matmul_stream_k.cuh``, new here, holds the schedule; the
segment of slices a CTA computes is v17's pipeline (``matmul_prefetch_vec.cuh``'s
``sliced_segment``, which v17's whole tiles now call from slice 0 to the last: the same machine
code as before). The grid is as many CTAs as the SMs hold at once (one an SM at these tiles). All but
the last full wave of tiles go whole, tile w·G + g to CTA g; the slices of the tiles left, in tile
order, are cut into one run a CTA of equal length (to one slice); a tile cut between CTAs is
finished by the CTA that holds its first slice, which adds the partial sums the later CTAs left in
a workspace, in CTA order (deterministic for a given SM count).

Hypothesis: v17 at 4096 runs 512 tiles of 256 x 128 on 132 SMs, 3.88 waves, so its last wave is
12 % empty, about 3 % of its time; at 8192, 15.5 waves, the same 3 %. Stream-K gives that back for
at most two partial tiles a CTA (128 KiB written and read through L2 each), which should put fp32
at or past cuBLAS. At 1024 (32 tiles on 132 SMs: a quarter of the machine busy under v17) every
tile is shared, cut across about four CTAs: a split-k of four.

The first form shared every tile's slices (``SK_ONLY=1``, in the sweep): it halved the 1024 time
but ran slower than v17 at 4096 and 8192 (its runs are kept). Each CTA there walks about four tiles
from a different k, so CTAs on neighbouring tiles no longer read the same slices of A and B at the
same time and L2 stops serving them; hence the whole-tile waves first, in v17's order. Measured,
the hybrid too stays behind v17 at 4096 and 8192: its profile reads far more from DRAM than v17's,
and its SMs are busy less of the time, in the shared slices, where the CTAs are still out of step.
Stream-K wins at 1024, where every tile is shared and nothing else would fill the machine.
"""

from __future__ import annotations

from pathlib import Path

import matmul_host_stream_k as host
import matmul_traffic as mt
import matmul_traffic_tc as mtc

SOURCE = Path(__file__).with_suffix(".cu")
# the recorded sweeps' fastest at 4096 and 8192 fp32: 128 x 256 tiles (8 x 16 a lane), 8-deep slices
# (the first guess, v17's 256 x 128, came third at 8192)
CONFIG = {"BM": 128, "BN": 256, "WM": 64, "WN": 64, "S": 8}
_V17 = {"BM": 256, "BN": 128, "WM": 128, "WN": 32, "S": 8}
# the hybrid against every tile shared (SK_ONLY), and v17's next-best tiles: 16-deep slices and
# 128 x 256 (128 x 128 at two CTAs an SM spills here: 188 bytes at the 128 registers it is allowed)
SWEEP = [_V17, {**_V17, "SK_ONLY": 1}] + [
    {"BM": bm, "BN": bn, "WM": wm, "WN": wn, "S": s}
    for bm, bn, wm, wn, s in ((256, 128, 128, 32, 16), (128, 256, 64, 64, 8))]

lane_outputs = host.lane_outputs


def traffic(n: int, config: dict = CONFIG) -> mt.Traffic:
    """v17's: the k slices are the same slices, cut at other places (the partial sums' traffic, at
    most two tiles a CTA, is not in the lecture's model)."""
    rows, cols = lane_outputs(config)
    return mtc.rectangular_tiled(n, config["BM"], config["BN"], rows, cols)


def make_kernel(config: dict):
    return host.stream_k_kernel(SOURCE, "matmul_stream_k", config)


custom_kernel = make_kernel(CONFIG)
