"""v18's schedule with v17's loop, each slice also asking a later slice into L2.

``v19_l2_prefetch.cu`` sets the tiles and the distance; ``matmul_prefetch_vec.cuh`` gains
``SliceLoader::prefetch_l2`` (compiled only where ``L2_PREFETCH`` is set, so v17's and v18's machine
code is unchanged): at the top of each slice, one thread of each pair that shares a row of A's slice,
and one in eight along a row of B's, issue ``prefetch.global.L2`` for the slice ``L2_PREFETCH``
further on, while the segment still holds it. The hint needs no register and no wait; it costs a
few instructions in the thousand a slice issues.

Hypothesis: v18 issues the same instructions as v17 and issues them on fewer cycles because its
L2 misses go to DRAM, which the loop's one slice of register prefetch does not cover (its profile:
the L2 hit rate down and the DRAM reads up several times, the SMs issuing less). With the lines
asked for two slices earlier, the loads find them in L2, v18's schedule keeps its even rounds
without paying in stalls, and fp32 passes cuBLAS at 4096 and 8192. The sweep also runs the same
prefetch on v17's schedule (``WHOLE_ONLY=1``): if v17 itself gains, part of its stalls were misses too.

Measured: refuted. Every distance, on either schedule, is slower than no prefetch; the misses are
not what the persistent kernels lose to (v20).
"""

from __future__ import annotations

from pathlib import Path

import matmul_host_stream_k as host
import matmul_traffic as mt
import matmul_traffic_tc as mtc

SOURCE = Path(__file__).with_suffix(".cu")
# v18's tiles, two slices ahead: the first guess, kept; the recorded sweeps found every distance
# slower than none (0, v18 itself), and one and two slices tied at 4096
CONFIG = {"BM": 128, "BN": 256, "WM": 64, "WN": 64, "S": 8, "L2_PREFETCH": 2}
_V17 = {"BM": 256, "BN": 128, "WM": 128, "WN": 32, "S": 8}
# the distance on v18's tiles (0: v18 itself), v17's tiles and schedule with and without it
SWEEP = [{**CONFIG, "L2_PREFETCH": d} for d in (0, 1, 2, 4)] + [
    {**_V17, "L2_PREFETCH": 2}, {**_V17, "L2_PREFETCH": 2, "WHOLE_ONLY": 1}, {**_V17, "L2_PREFETCH": 0, "WHOLE_ONLY": 1}]

lane_outputs = host.lane_outputs


def traffic(n: int, config: dict = CONFIG) -> mt.Traffic:
    """v17's: the prefetch asks L2 for lines the loop reads anyway."""
    rows, cols = lane_outputs(config)
    return mtc.rectangular_tiled(n, config["BM"], config["BN"], rows, cols)


def make_kernel(config: dict):
    return host.stream_k_kernel(SOURCE, "matmul_l2_prefetch", config)


custom_kernel = make_kernel(CONFIG)
