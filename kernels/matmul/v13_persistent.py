"""v12's cluster pairs made persistent: one pair of CTAs per two SMs, each walking a list of tile
pairs through one ring that runs across tile boundaries.

``v13_persistent.cu`` holds the kernel; the ring, the loops (their persistent forms, which number
slices across tiles) and the pair's copies are ``matmul_wgmma.cuh``'s and ``matmul_wgmma_cluster.cuh``'s.
In v12 each CTA starts with an empty ring and stores its tile with nothing in flight; here the
producer keeps copying the next tile's slices while the consumers finish and store the current one.
Hypothesis: at N = 4096 the copies' share of L2 bandwidth is no longer the limit (v12 moved a
third less and took as long), so what is left is each CTA's start and end: the ring's first fill
and the epilogue, a few microseconds in each tile's 60 or so. fp16 only; the host pads n to a
multiple of 8 as v11's does.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matmul_host_sm90 as host
import matmul_traffic as mt
import matmul_traffic_tc as mtc

SOURCE = Path(__file__).with_suffix(".cu")
CASES_WHERE = {"dtype": "float16"}
BM, BN, BK = host.WGMMA_TILE
CONFIG = {"STAGES": 4}
SWEEP = [{"STAGES": s} for s in (3, 4)]


def traffic(n: int, config: Mapping[str, Any] = CONFIG) -> mt.Traffic:
    """v12's: a pair of tiles reads 2·BM rows of A and BN columns of B (B once, by multicast)."""
    return mtc.rectangular_tiled(n, 2 * BM, BN, 64, BN)


def make_kernel(config: Mapping[str, Any]):
    return host.fp16_only(host.wgmma_kernel(SOURCE, "matmul_wgmma_persistent", config, row_tiles_multiple=2,
                                            persistent=True),
                          "v13_persistent")


custom_kernel = make_kernel(CONFIG)
