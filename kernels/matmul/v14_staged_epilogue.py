"""v13 with the epilogue handed to TMA: each consumer warpgroup writes its 64 x 256 block of C into a
staging buffer in shared memory, one thread issues four box stores, and the warpgroup goes on to its
next tile while the copy engine writes C out.

``v14_staged_epilogue.cu`` holds the kernel; the staged store is ``matmul_wgmma.cuh``'s
``store_acc_staged``. In v13 every tile ends with 64 global stores a thread during which no product
runs. The buffer (64 KB) leaves room for three ring slots instead of four. Hypothesis: the tensor
cores idle through each tile's epilogue, a few percent of its time; writing C to shared memory is
several times faster than to global memory, and the rest overlaps the next tile's products.
fp16 only; the host pads n to a multiple of 8 as v11's does.
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
CONFIG = {"STAGES": 3}  # the staging buffer leaves room for three slots, not four
SWEEP = [{"STAGES": s} for s in (2, 3)]


def traffic(n: int, config: Mapping[str, Any] = CONFIG) -> mt.Traffic:
    """v12's: a pair of tiles reads 2·BM rows of A and BN columns of B (B once, by multicast)."""
    return mtc.rectangular_tiled(n, 2 * BM, BN, 64, BN)


def make_kernel(config: Mapping[str, Any]):
    return host.fp16_only(host.wgmma_kernel(SOURCE, "matmul_wgmma_staged", config, row_tiles_multiple=2,
                                            persistent=True, staged=True),
                          "v14_staged_epilogue")


custom_kernel = make_kernel(CONFIG)
