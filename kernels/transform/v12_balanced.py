"""v10 with every block's share of the array equal to within one 32-block.

``v12_balanced.cu``: v10's blocks take whole tiles in turn, and the tiles do not divide evenly
among them: on the 128M benchmark, 528 blocks (4 per SM) of 8 KB tiles make 62.06 rounds in bf16
and 124.12 in fp32, so a few dozen blocks carry one more tile after the others are done, while
the memory is nearly idle. In bf16 that tile is 1/62 of a block's work. Here the blocks take the
same whole tiles in turn for as many rounds as all of them can, then the rest of the array is cut
into one piece per block, the pieces differing by at most one 32-block (``transform_ring.cuh``,
the ring shared from v12 on). Arithmetic, look-back, packing and the one-launch fixed-order sum
are v10's; the host side is ``transform_launch.py``. ``SWEEP`` is v08's grid of tile sizes, ring
depths and blocks per SM.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
import transform_launch
import v10_hw_cvt as v10

SOURCE = Path(__file__).with_suffix(".cu")
CONFIG: dict[str, int] = dict(v10.CONFIG)
SWEEP: list[dict[str, int]] = list(v10.SWEEP)


def make_kernel(config: Mapping[str, Any]) -> Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]:
    return transform_launch.make_kernel(SOURCE, "transform_balanced", config)


custom_kernel = make_kernel(CONFIG)
