"""The host side of matmul's tensor-core versions (v10 on): the fp16-only guard, the launch of a
square-tiled kernel with dynamic shared memory (v10), and of the wgmma kernels (v11 on), which take
A and B (and from v14 C) as TMA tensor maps, in clusters or persistent grids. The input check and the
build's defines are matmul_host.py's.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from matmul_host import Data, check_inputs, defines
from reporter.cuda import load_module, tensor_map


def fp16_only(run: Callable[[Data], torch.Tensor], version: str) -> Callable[[Data], torch.Tensor]:
    """``run`` for fp16 inputs; fp32 inputs are refused by name (a tensor-core version computes fp16 only:
    the tensor cores' fp32 path is TF32, another precision)."""

    def checked(data: Data) -> torch.Tensor:
        if data[0].dtype != torch.float16:
            raise ValueError(f"{version} multiplies fp16 on the tensor cores; got {data[0].dtype} "
                             "(fp32 there would be TF32, another precision)")
        return run(data)

    return checked


def smem_tiled_kernel(source: Path, kernel: str, config: Mapping[str, Any], tile: int, block: tuple[int, ...],
                      shared_mem: int) -> Callable[[Data], torch.Tensor]:
    """``custom_kernel`` for a kernel of ``source`` that computes one ``tile`` x ``tile`` block of C per
    CTA of ``block`` threads with ``shared_mem`` bytes of dynamic shared memory, built with ``config``."""

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


@functools.cache
def _sm_count(device_index: int) -> int:
    """The device's SMs (asked once: the query costs more than a launch)."""
    return torch.cuda.get_device_properties(device_index).multi_processor_count


PLANS_KEPT = 64  # launches remembered per kernel (a ranked run draws new tensors every call)

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
    of ``row_tiles_multiple`` (a cluster must tile the grid). The launch of each distinct (A, B, C, n) is
    planned once (the tensor maps encoded, the parameters packed: reporter.cuda.LaunchPlan) and the
    plan launched again by one driver call: the whole Python path otherwise costs about 70 µs a call,
    a third of the 4096 kernel, and under per-call event timing part of it lands in the sample. ``persistent``: the grid is one column of
    as many clusters of ``row_tiles_multiple`` CTAs as the SMs hold at once (one CTA an SM), or fewer
    when there are fewer tile groups; the kernel walks the tiles itself. ``staged``: the kernel stores C
    through TMA and takes C's tensor map (64 x 64 boxes, 128-byte swizzle) instead of its pointer."""
    bm, bn, bk = WGMMA_TILE
    smem = wgmma_shared_bytes(config, staged)
    plans: OrderedDict[tuple[int, ...], Callable[[int], None]] = OrderedDict()

    def launcher(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, n8: int) -> Callable[[int], None]:
        """The launch for these tensors, its parameters (tensor maps included) packed once."""
        key = (a.data_ptr(), b.data_ptr(), c.data_ptr(), n8, a.device.index or 0)
        go = plans.get(key)
        if go is not None:
            plans.move_to_end(key)
            return go
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
        go = mod.kernel(kernel).plan(grid, (384,), tm_a, tm_b, out, np.int32(n8), shared_mem=smem).launcher()
        plans[key] = go
        if len(plans) > PLANS_KEPT:
            plans.popitem(last=False)
        return go

    def run(data: Data) -> torch.Tensor:
        a, b, n = check_inputs(data)
        if n == 0:
            return torch.empty_like(a)
        n8 = -(-n // 8) * 8
        if n8 != n:
            a = torch.nn.functional.pad(a, (0, n8 - n, 0, n8 - n))
            b = torch.nn.functional.pad(b, (0, n8 - n, 0, n8 - n))
        c = torch.empty_like(a)
        launcher(a, b, c, n8)(torch.cuda.current_stream(a.device).cuda_stream)
        return c if n8 == n else c[:n, :n].contiguous()

    return run
