"""The host side every CUDA version of matmul shares: the input check, the defines of a build and
one launch over a grid of output tiles.

A version's kernel takes ``(a, b, c, n)``: the row-major n x n inputs, the output and n as an
int32. ``ELEM_FP16`` is 1 for fp16 inputs (the kernel then reads and writes fp16 and still
multiplies and accumulates in fp32), 0 for fp32. The grid covers C with ``tile`` x ``tile``
output tiles, x along the columns, y along the rows (v01, which takes the lecture's x as the row,
says so in its own launch).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from reporter.cuda import load_module

Data = tuple[torch.Tensor, torch.Tensor]


def check_inputs(data: Data) -> tuple[torch.Tensor, torch.Tensor, int]:
    """``(a, b, n)`` for square, contiguous, 16-byte aligned fp32 or fp16 CUDA matrices of one size and dtype."""
    a, b = data
    if a.dim() != 2 or a.shape[0] != a.shape[1] or tuple(b.shape) != tuple(a.shape):
        raise ValueError(f"a and b must be square and of one size, got {tuple(a.shape)} and {tuple(b.shape)}")
    if a.dtype != b.dtype or a.dtype not in (torch.float32, torch.float16):
        raise ValueError(f"a and b must both be float32 or both float16, got {a.dtype} and {b.dtype}")
    if not (a.is_contiguous() and b.is_contiguous()):
        raise ValueError("a and b must be contiguous (row-major)")
    if a.data_ptr() % 16 or b.data_ptr() % 16:  # the vector loads and cp.async assume it (torch allocates at 256 B)
        raise ValueError("a and b must start at 16-byte aligned addresses (a view at an offset is not)")
    n = int(a.shape[0])
    if n >= 2**31 // 8:  # the kernels' 32-bit row and column indices (plus a tile's overhang)
        raise ValueError(f"n = {n} is too large for 32-bit indices")
    return a, b, n


def defines(dtype: torch.dtype, config: Mapping[str, Any]) -> dict[str, int]:
    """The build's macros: the version's configuration and the element type."""
    return {**{k: int(v) for k, v in config.items()}, "ELEM_FP16": int(dtype == torch.float16)}


def tiled_kernel(source: Path, kernel: str, config: Mapping[str, Any], tile: int,
                 block: tuple[int, ...]) -> Callable[[Data], torch.Tensor]:
    """``custom_kernel`` for a kernel of ``source`` that computes one ``tile`` x ``tile`` block of C
    per CTA of ``block`` threads, built with ``config``."""

    def run(data: Data) -> torch.Tensor:
        a, b, n = check_inputs(data)
        c = torch.empty_like(a)
        if n == 0:
            return c
        mod = load_module(source, defines=defines(a.dtype, config), device_index=a.device.index or 0)
        tiles = -(-n // tile)
        mod.kernel(kernel)((tiles, tiles), block, a, b, c, np.int32(n))
        return c

    return run


def tile_sweep(vs: tuple[int, ...] = (4, 8)) -> list[dict[str, int]]:
    """The (L, V, S) grid of the shared-memory-tiled versions: blocks of L x L outputs, V x V per
    thread, S-deep slices; (L/V)² threads, at least two warps and at most 1024."""
    return [{"L": l, "V": v, "S": s} for l in (64, 128) for v in vs for s in (8, 16)  # noqa: E741
            if 64 <= (l // v) ** 2 <= 1024]


def shared_tiled_kernel(source: Path, kernel: str, config: Mapping[str, Any]) -> Callable[[Data], torch.Tensor]:
    """``custom_kernel`` for a kernel whose CTA of (L/V) x (L/V) threads computes an L x L tile."""
    side = config["L"] // config["V"]
    return tiled_kernel(source, kernel, config, config["L"], (side, side))
