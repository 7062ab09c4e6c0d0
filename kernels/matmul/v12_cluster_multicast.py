"""v11's kernel in clusters of two CTAs, the two row tiles above one another, which copy B's slices
once for both by TMA multicast.

``v12_cluster_multicast.cu`` holds the kernel; the ring and the loops are ``matmul_wgmma.cuh``'s,
as v11's. Each CTA of a pair copies half of B's slice to both, so the L2 serves 32 KB a slot
instead of 48, and a slot is released to the producers of both CTAs. Hypothesis: v11 moves 1.5 GB
from L2 into shared memory per 4096 product (3 MB a tile, 512 tiles) in about 0.2 ms, several
TB/s, so the copies, not the tensor cores, set its pace; a third less of that traffic is a third
less time waiting for slots. fp16 only; the host pads n to a multiple of 8 as v11's does.
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
    """A pair of blocks reads 2·BM rows of A and BN columns of B across k (B once, by multicast):
    N³/BN + N³/(2·BM) global reads; the consumers' shared reads are v11's."""
    return mtc.rectangular_tiled(n, 2 * BM, BN, 64, BN)


def make_kernel(config: Mapping[str, Any]):
    return host.fp16_only(host.wgmma_kernel(SOURCE, "matmul_wgmma_cluster", config, row_tiles_multiple=2),
                          "v12_cluster_multicast")


custom_kernel = make_kernel(CONFIG)
