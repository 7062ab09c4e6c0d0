"""v14 with the tile pairs dealt out in groups of GROUP row pairs, column by column within a group
(Triton's grouped ordering), so that the pairs working at one time share their rows of A and
columns of B.

``v15_grouped_order.cu`` holds the order (``GroupedPairOrder``); the kernel is v14's
(``matmul_wgmma_persistent.cuh``). Hypothesis: at N = 8192 B (128 MB) no longer fits the L2 and
v14's order, in which the pairs running at once span every column of B, reads it from DRAM
once per round of pairs; a GROUP x 66/GROUP block of pairs reads a fraction of it, and the L2 keeps
it for the round. At N = 4096 everything fits the L2 and the order should not matter. fp16 only;
the host pads n to a multiple of 8 as v11's does.
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
CONFIG = {"STAGES": 3, "GROUP": 8}
SWEEP = [{"STAGES": 3, "GROUP": g} for g in (2, 4, 8, 16)]


def traffic(n: int, config: Mapping[str, Any] = CONFIG) -> mt.Traffic:
    """v12's: a pair of tiles reads 2·BM rows of A and BN columns of B (B once, by multicast)."""
    return mtc.rectangular_tiled(n, 2 * BM, BN, 64, BN)


def make_kernel(config: Mapping[str, Any]):
    return host.fp16_only(host.wgmma_kernel(SOURCE, "matmul_wgmma_grouped", config, row_tiles_multiple=2,
                                            persistent=True, staged=True),
                          "v15_grouped_order")


custom_kernel = make_kernel(CONFIG)
