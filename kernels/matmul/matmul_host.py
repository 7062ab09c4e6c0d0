"""The host side every CUDA version of matmul shares: the input check, the defines of a build and
one launch over a grid of output tiles.

A version's kernel takes ``(a, b, c, n)``: the row-major n x n inputs, the output and n as an
int32. ``ELEM_FP16`` is 1 for fp16 inputs (the kernel then reads and writes fp16 and still
multiplies and accumulates in fp32), 0 for fp32. The grid covers C with ``tile`` x ``tile``
output tiles, x along the columns, y along the rows (v01, which takes the lecture's x as the row,
says so in its own launch).
"""

from __future__ import annotations

import functools
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
                 block: tuple[int, ...], shared_mem: int = 0) -> Callable[[Data], torch.Tensor]:
    """``custom_kernel`` for a kernel of ``source`` that computes one ``tile`` x ``tile`` block of C
    per CTA of ``block`` threads, built with ``config``, with ``shared_mem`` bytes of dynamic shared
    memory."""

    def run(data: Data) -> torch.Tensor:
        a, b, n = check_inputs(data)
        c = torch.empty_like(a)
        if n == 0:
            return c
        mod = load_module(source, defines=defines(a.dtype, config), device_index=a.device.index or 0)
        tiles = -(-n // tile)
        mod.kernel(kernel)((tiles, tiles), block, a, b, c, np.int32(n), shared_mem=shared_mem)
        return c

    return run


def fp16_only(run: Callable[[Data], torch.Tensor], version: str) -> Callable[[Data], torch.Tensor]:
    """``run`` for fp16 inputs; fp32 inputs are refused by name (a tensor-core version computes fp16 only:
    the tensor cores' fp32 path is TF32, another precision)."""

    def checked(data: Data) -> torch.Tensor:
        if data[0].dtype != torch.float16:
            raise ValueError(f"{version} multiplies fp16 on the tensor cores; got {data[0].dtype} "
                             "(fp32 there would be TF32, another precision)")
        return run(data)

    return checked


def tile_sweep(vs: tuple[int, ...] = (4, 8)) -> list[dict[str, int]]:
    """The (L, V, S) grid of the shared-memory-tiled versions: blocks of L x L outputs, V x V per
    thread, S-deep slices; (L/V)² threads, at least two warps and at most 1024."""
    return [{"L": l, "V": v, "S": s} for l in (64, 128) for v in vs for s in (8, 16)  # noqa: E741
            if 64 <= (l // v) ** 2 <= 1024]


def shared_tiled_kernel(source: Path, kernel: str, config: Mapping[str, Any]) -> Callable[[Data], torch.Tensor]:
    """``custom_kernel`` for a kernel whose CTA of (L/V) x (L/V) threads computes an L x L tile."""
    side = config["L"] // config["V"]
    return tiled_kernel(source, kernel, config, config["L"], (side, side))


@functools.cache
def _sm_count(device_index: int) -> int:
    """The device's SMs (asked once: the query costs more than a launch)."""
    return torch.cuda.get_device_properties(device_index).multi_processor_count


#: the block tile (rows, columns) and slice depth of the wgmma versions (matmul_wgmma.cuh's BM, BN, BK)
WGMMA_TILE = (128, 256, 64)


def wgmma_shared_bytes(config: Mapping[str, Any], staged: bool = False) -> int:
    """A wgmma version's dynamic shared memory: 1024 B of alignment slack, STAGES slots of A (BM x BK)
    and B (BK x BN) fp16, and two mbarriers a slot; ``staged``: the barriers padded to 1024 B and C's
    BM x BN fp16 staging buffer after them (matmul_wgmma.cuh's store_acc_staged)."""
    bm, bn, bk = WGMMA_TILE
    stages = int(config["STAGES"])
    if staged:
        return 1024 + stages * (bm * bk + bk * bn) * 2 + 1024 + bm * bn * 2
    return 1024 + stages * (bm * bk + bk * bn) * 2 + 16 * stages


def wgmma_kernel(source: Path, kernel: str, config: Mapping[str, Any], row_tiles_multiple: int = 1,
                 persistent: bool = False, staged: bool = False) -> Callable[[Data], torch.Tensor]:
    """``custom_kernel`` for a wgmma version (matmul_wgmma.cuh): one BM x BN tile of C per CTA of 384
    threads, A and B passed as TMA tensor maps (128 x 64 and 64 x 64 boxes, 128-byte swizzle). TMA needs
    16-byte row strides, so for n % 8 != 0 the inputs are copied into zero-padded matrices of the next
    multiple of 8 and the product is cut back to n x n. The grid's row tiles are rounded up to a multiple
    of ``row_tiles_multiple`` (a cluster must tile the grid). ``persistent``: the grid is one column of
    as many clusters of ``row_tiles_multiple`` CTAs as the SMs hold at once (one CTA an SM), or fewer
    when there are fewer tile groups; the kernel walks the tiles itself. ``staged``: the kernel stores C
    through TMA and takes C's tensor map (64 x 64 boxes, 128-byte swizzle) instead of its pointer."""
    from reporter.cuda import tensor_map

    bm, bn, bk = WGMMA_TILE
    smem = wgmma_shared_bytes(config, staged)

    def run(data: Data) -> torch.Tensor:
        a, b, n = check_inputs(data)
        if n == 0:
            return torch.empty_like(a)
        n8 = -(-n // 8) * 8
        if n8 != n:
            a = torch.nn.functional.pad(a, (0, n8 - n, 0, n8 - n))
            b = torch.nn.functional.pad(b, (0, n8 - n, 0, n8 - n))
        c = torch.empty_like(a)
        mod = load_module(source, defines=defines(a.dtype, config), device_index=a.device.index or 0)
        tm_a = tensor_map(a, (bm, 64), swizzle=128)
        tm_b = tensor_map(b, (bk, 64), swizzle=128)
        cols, rows = -(-n8 // bn), -(-n8 // bm)
        rows = -(-rows // row_tiles_multiple) * row_tiles_multiple
        grid = (cols, rows)
        if persistent:
            sms = _sm_count(a.device.index or 0)
            groups = min(cols * rows // row_tiles_multiple, sms // row_tiles_multiple)
            grid = (1, groups * row_tiles_multiple)
        out = tensor_map(c, (64, 64), swizzle=128) if staged else c
        mod.kernel(kernel)(grid, (384,), tm_a, tm_b, out, np.int32(n8), shared_mem=smem)
        return c if n8 == n else c[:n, :n].contiguous()

    return run
