"""v10 with two consecutive groups per lane per step: one 16-byte shared-memory access per lane in bf16.

``v11_two_groups.cu``: v10's lanes take one group per step, 8 bytes in bf16, so a bf16 tile takes
four steps of 8-byte shared-memory loads and stores, each with its own index arithmetic, loop
test and four look-back shuffles. Here a lane takes groups 2t and 2t + 1 of a step
(``transform_group8``): one 16-byte load and store in bf16, and the groups 16 elements back come
from the lane two below. The shuffles and the functions per element are unchanged; what goes is
half of the per-step overhead. The bulk ring, the one-launch sum and the host side are v10's;
tiles must hold a whole number of 512 groups, so fp32 tiles are at least 8 KB. ``CONFIG`` is
v10's; ``SWEEP`` is v08's without the 4 KB tiles.
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
SWEEP: list[dict[str, int]] = [c for c in v10.SWEEP if c["TILE_BYTES"] >= 8192]


def make_kernel(config: Mapping[str, Any]) -> Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]:
    return transform_launch.make_kernel(SOURCE, "transform_two_groups", config)


custom_kernel = make_kernel(CONFIG)
