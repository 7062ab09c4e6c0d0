"""v14 with the tiles handed out in order by a counter as the blocks ask for them.

``v15_in_order.cu``: every SM copy we had timed stayed about 1.03x the memcpy, and v14 sat on that
ceiling. The copy probes of 09:37 UTC on 23 Nov (``tools/copy_ceiling_probe.py order``) set the same
bulk ring, only copying, in two orders: tiles dealt in advance (b, b + G, ..., as every ring
version since v07), and tiles drawn one at a time from an atomic counter. Drawn in order, the ring
copied the fp32 array in the memcpy's own time. Dealt in advance, blocks drift apart over a call
and the tiles in flight spread across the array; drawn in order they stay one window of consecutive
addresses, as a copy engine walks it.

Which block computes which tile now changes from call to call, so the sum must not depend on it:
each thread's fp32 sum of its terms in a tile (a fixed order, whatever block runs the tile) becomes
fixed point before it is added, and the blocks add their int64 sums with a count to one 64-bit
word (``finish_counted`` in ``transform_sum.cuh``). The host side is ``transform_launch.py`` with a
16-byte per-device counter (the word, then the tile counter). The word holds the sum of arrays of a
little under 2^29 elements; a larger one is refused before launch.

``CONFIG`` has a ring per dtype, as v14's: the in-order copy probes' fastest, 8 KB tiles with 2
stages and 4 blocks per SM in fp32, 8 KB tiles with 4 stages and 4 blocks per SM in bf16.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
import transform_launch
import v14_dtype_config as v14

SOURCE = Path(__file__).with_suffix(".cu")
KEYS = v14.KEYS
CONFIG: dict[str, int] = {"TILE_BYTES": 8192, "STAGES": 2, "BLOCKS_PER_SM": 4,
                          "BF16_TILE_BYTES": 8192, "BF16_STAGES": 4, "BF16_BLOCKS_PER_SM": 4}
SUM_ROOM = 1 << 51  # |the sum| in units of 2^-24 must stay under it (transform_sum.cuh, finish_counted)


@functools.cache
def _counters(index: int) -> torch.Tensor:
    """The per-device sum word and tile counter, zero between calls."""
    return torch.zeros(2, dtype=torch.int64, device=torch.device("cuda", index))


def _fits(n: int) -> None:
    """Raise unless the word has room for the sum of n elements (each |term| ≤ 1, n/4 of them)."""
    if (n // 4 + 1) * ((1 << 24) + 1) >= SUM_ROOM:
        raise ValueError(f"v15's 64-bit sum word has no room for n = {n}: at most a little under 2^29 elements")


def make_kernel(config: Mapping[str, Any]) -> Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]:
    fp32 = transform_launch.make_kernel(SOURCE, "transform_in_order", {k: config[k] for k in KEYS}, counter=_counters)
    bf16 = transform_launch.make_kernel(SOURCE, "transform_in_order", {k: config["BF16_" + k] for k in KEYS},
                                        counter=_counters)

    def run(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        _fits(x.numel())
        return (bf16 if x.dtype == torch.bfloat16 else fp32)(x)

    return run


custom_kernel = make_kernel(CONFIG)
