"""fp16 on Hopper's asynchronous warpgroup product: wgmma m64n256k16 reads both operands from
shared memory, filled by TMA, with one producer warpgroup and two consumer warpgroups on a
STAGES-deep ring of mbarrier-guarded slots.

``v11_wgmma_tma.cu`` holds the kernel. Against v10 three things change together because they only
work together: the product is a warpgroup's (128 threads issue one 64 x 256 x 16 product instead of
each warp many 16 x 8 x 16 ones, and no operand passes through registers), the copies are TMA's
(one lane issues a whole 128 x 64 or 64 x 64 box, zero-filled at the edges, in the 128-byte
swizzle wgmma reads), and the threads are specialised (a producer that only copies, consumers that
only multiply, handing slots over through full/empty mbarriers instead of block-wide barriers).
The block tile grows to 128 x 256 with 64-deep slices. Hypothesis: v10's limit is feeding mma.sync
through ldmatrix and the registers; with the operands read by the tensor cores from shared memory
and the ring kept full by TMA, the kernel runs near the tensor cores' rate.

TMA needs 16-byte row strides: for n % 8 != 0 the inputs are copied into zero-padded matrices of
the next multiple of 8 (the test sizes only) and the product cut back to n x n. fp16 only.
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
    """A block reads BM rows of A and BN columns of B across k: N³/BN + N³/BM global reads (2N³/L when
    BM = BN = L); the shared reads are the consumers' (a warpgroup's 64 rows and 256 columns)."""
    return mtc.rectangular_tiled(n, BM, BN, 64, BN)


def make_kernel(config: Mapping[str, Any]):
    return host.fp16_only(host.wgmma_kernel(SOURCE, "matmul_wgmma_tma", config), "v11_wgmma_tma")


custom_kernel = make_kernel(CONFIG)
