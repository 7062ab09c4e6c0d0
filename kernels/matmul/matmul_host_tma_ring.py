"""The launch of matmul's TMA-fed CUDA-core version (v24): A transposed into a scratch matrix by one
kernel, then one BM x BN block of C per CTA of (BM/WM)·(BN/WN) warps (warp 0 also issues the copies),
reading At and B through TMA tensor maps (S x BM and S x BN boxes, no swizzle). fp32 only. TMA needs 16-byte row
strides: for n % 4 != 0 the inputs are copied into zero-padded matrices of the next multiple of 4 (the
test sizes only) and the product is cut back to n x n. The input check and the build's defines are
matmul_host.py's.

Both launches of each distinct (A, B, C, At, n) are planned once (the tensor maps encoded, the
parameters packed: reporter.cuda.LaunchPlan) and launched again by one driver call each, as the wgmma
versions' are: the Python path of two launches with two tensor maps otherwise costs tens of
microseconds a call.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from matmul_host import Data, check_inputs, defines
from reporter.cuda import load_module, tensor_map

PLANS_KEPT = 64  # launches remembered (a ranked run draws new tensors every call)
TRANSPOSE_TILE, TRANSPOSE_ROWS = 32, 8  # matmul_tma_ring.cuh's TR_TILE and TR_ROWS


def ring_shared_bytes(config: Mapping[str, Any]) -> int:
    """The ring's dynamic shared memory (matmul_tma_ring.cuh's RING_SMEM_BYTES): STAGES stages of an
    S-deep slice of A (BM floats a k) and of B (BN), then a full and an empty mbarrier a stage."""
    stages, s = int(config["STAGES"]), int(config["S"])
    return stages * s * (int(config["BM"]) + int(config["BN"])) * 4 + 16 * stages


def fp32_only(run: Callable[[Data], torch.Tensor], version: str) -> Callable[[Data], torch.Tensor]:
    """``run`` for fp32 inputs; fp16 inputs are refused by name (the ring's boxes and the transposition
    move 4-byte elements)."""

    def checked(data: Data) -> torch.Tensor:
        if data[0].dtype != torch.float32:
            raise ValueError(f"{version} multiplies fp32 on the CUDA cores; got {data[0].dtype}")
        return run(data)

    return checked


def tma_ring_kernel(source: Path, kernel: str, transpose: str, config: Mapping[str, Any]) -> Callable[[Data], torch.Tensor]:
    """``custom_kernel`` for the TMA-fed version in ``source``: ``transpose`` writes At = Aᵀ, then
    ``kernel`` computes one BM x BN tile of C per CTA of (BM/WM)·(BN/WN) warps (grid x along the
    columns, y along the rows)."""
    bm, bn, s = int(config["BM"]), int(config["BN"]), int(config["S"])
    threads = (bm // int(config["WM"])) * (bn // int(config["WN"])) * 32  # a warp a WM x WN region
    smem = ring_shared_bytes(config)
    plans: OrderedDict[tuple[int, ...], Callable[[int], None]] = OrderedDict()

    def launcher(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, at: torch.Tensor, n: int) -> Callable[[int], None]:
        key = (a.data_ptr(), b.data_ptr(), c.data_ptr(), at.data_ptr(), n, a.device.index or 0)
        go = plans.get(key)
        if go is not None:
            plans.move_to_end(key)
            return go
        mod = load_module(source, defines=defines(a.dtype, config), device_index=a.device.index or 0)
        tiles = -(-n // TRANSPOSE_TILE)
        first = mod.kernel(transpose).plan((tiles, tiles), (TRANSPOSE_TILE, TRANSPOSE_ROWS), a, at, np.int32(n),
                                           np.int32(n)).launcher()
        tm_at = tensor_map(at, (s, bm), swizzle=0)
        tm_b = tensor_map(b, (s, bn), swizzle=0)
        second = mod.kernel(kernel).plan((-(-n // bn), -(-n // bm)), (threads,), tm_at, tm_b, c, np.int32(n),
                                         shared_mem=smem).launcher()

        def go(stream: int) -> None:
            first(stream)
            second(stream)

        plans[key] = go
        if len(plans) > PLANS_KEPT:
            plans.popitem(last=False)
        return go

    def run(data: Data) -> torch.Tensor:
        a, b, n = check_inputs(data)
        if n == 0:
            return torch.empty_like(a)
        n4 = -(-n // 4) * 4
        if n4 != n:
            a = torch.nn.functional.pad(a, (0, n4 - n, 0, n4 - n))
            b = torch.nn.functional.pad(b, (0, n4 - n, 0, n4 - n))
        c = torch.empty_like(a)
        at = torch.empty_like(a)
        launcher(a, b, c, at, n4)(torch.cuda.current_stream(a.device).cuda_stream)
        return c if n4 == n else c[:n, :n].contiguous()

    return run
