"""v10 with the sum finished by one atomic per block on a 64-bit word.

``v13_one_atomic.cu``: v12's probe without the sum (``ring_no_sum``) ran 2.6 µs faster than v12
in both dtypes, on the H100. That is the one-launch finish every version since v06 ends with: the
block's partial stored, a fence, a ticket atomic, and in the last block a second fence, a read of
every partial and a fixed-order tree over them. Here each block adds its sum, in fixed point,
together with its ticket to one 64-bit word with a single atomic (``transform_sum.cuh``): the
integer additions give the same bits in any order, and the last block finds the whole sum in the
value its atomic returns. The ring (v07's, tiles dealt in turn: ``dealt_tiles`` in
``transform_ring.cuh``), the arithmetic and the packing are v10's; the host side is
``transform_launch.py`` with the word in place of v06's ticket.

The word holds the sum of arrays up to about 2^28 elements at 4 blocks per SM (the benchmark is
2^27); a larger one is refused before launch. ``CONFIG`` is v10's; ``SWEEP`` is v08's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
import transform_launch
import v10_hw_cvt as v10

SOURCE = Path(__file__).with_suffix(".cu")
CONFIG: dict[str, int] = dict(v10.CONFIG)
SWEEP: list[dict[str, int]] = list(v10.SWEEP)
WORD_ROOM = 1 << 26  # grid · (most sin terms of a block + 1) must stay under it (transform_sum.cuh)


@functools.cache
def _word(index: int) -> torch.Tensor:
    """The per-device sum word, zero between calls."""
    return torch.zeros(1, dtype=torch.int64, device=torch.device("cuda", index))


@functools.cache
def _fits(n: int, itemsize: int, tile_bytes: int, per_sm: int, device: int) -> None:
    """Raise unless the word has room for the sum of n elements (the kernel's own bound, on the host)."""
    tile = tile_bytes // itemsize
    grid = transform_launch.blocks_for(n, itemsize, {"TILE_BYTES": tile_bytes, "BLOCKS_PER_SM": per_sm}, device)
    tiles = n // tile
    most = (-(-tiles // grid) + 1) * (tile // 4) + 8
    if grid >= 1 << 12 or grid * (most + 1) >= WORD_ROOM:
        raise ValueError(f"v13's 64-bit sum word has no room for n = {n} at {grid} blocks "
                         f"(grid · (most terms + 1) = {grid * (most + 1)} ≥ {WORD_ROOM}): at most about 2^28 elements")


def make_kernel(config: Mapping[str, Any]) -> Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]:
    run = transform_launch.make_kernel(SOURCE, "transform_one_atomic", config, counter=_word)
    tile_bytes, per_sm = int(config["TILE_BYTES"]), int(config["BLOCKS_PER_SM"])

    def checked(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        _fits(x.numel(), x.element_size(), tile_bytes, per_sm, x.device.index or 0)
        return run(x)

    return checked


custom_kernel = make_kernel(CONFIG)
