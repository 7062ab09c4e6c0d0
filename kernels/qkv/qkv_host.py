"""The host side qkv's CUDA versions share: the input check, a build's defines and the launches.

A version's kernel takes ``(w, h, out, d_ws, d_qkv, d_model)`` (``qkv.cuh``). The homework launches
one block per SM and sweeps the warps per block (4 to 32); :func:`grid_stride_kernel` does the same,
``BLOCKS_PER_SM`` blocks of ``WARPS`` warps per SM, and the kernel spreads its work items over them
with a grid-stride loop. :func:`tiled_kernel` launches one CTA per output tile instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import torch

from reporter.cuda import load_module

Data = tuple[torch.Tensor, torch.Tensor]


def check_inputs(data: Data) -> tuple[torch.Tensor, torch.Tensor, int, int, int]:
    """``(w, h, d_ws, d_qkv, d_model)`` for contiguous fp32 CUDA matrices w (d_qkv x d_model) and h
    (d_ws x d_model) with d_model a multiple of 4 (the kernels read rows in 16-byte quads)."""
    w, h = data
    if w.dim() != 2 or h.dim() != 2 or w.shape[1] != h.shape[1]:
        raise ValueError(f"w_qkv (d_qkv x d_model) and h_in (d_ws x d_model) must share d_model, got "
                         f"{tuple(w.shape)} and {tuple(h.shape)}")
    if w.dtype != torch.float32 or h.dtype != torch.float32:
        raise ValueError(f"w_qkv and h_in must be float32, got {w.dtype} and {h.dtype}")
    if not (w.is_contiguous() and h.is_contiguous()):
        raise ValueError("w_qkv and h_in must be contiguous (row-major)")
    d_qkv, d_model = (int(x) for x in w.shape)
    d_ws = int(h.shape[0])
    if d_model % 4 or w.data_ptr() % 16 or h.data_ptr() % 16:
        raise ValueError(f"d_model must be a multiple of 4 and both matrices 16-byte aligned (d_model = {d_model})")
    if d_ws * max(d_qkv, d_model) >= 2**31:
        raise ValueError(f"d_ws = {d_ws} is too large for the kernels' 32-bit indices")
    return w, h, d_ws, d_qkv, d_model


@cache
def sm_count(device_index: int) -> int:
    return int(torch.cuda.get_device_properties(device_index).multi_processor_count)


def defines(config: Mapping[str, Any]) -> dict[str, int]:
    return {k: int(v) for k, v in config.items()}


def grid_stride_kernel(source: Path, kernel: str, config: Mapping[str, Any]) -> Callable[[Data], torch.Tensor]:
    """``custom_kernel`` for a grid-stride kernel of ``source``: ``BLOCKS_PER_SM`` blocks (default 1, the
    homework's launch) of ``WARPS`` warps on every SM. ``ZERO_OUT`` in the config: the output starts
    as zeros (a kernel that adds its partial sums into it)."""
    warps = int(config["WARPS"])
    per_sm = int(config.get("BLOCKS_PER_SM", 1))
    zeroed = bool(config.get("ZERO_OUT", 0))
    build = defines({k: v for k, v in config.items() if k not in ("BLOCKS_PER_SM", "ZERO_OUT")})

    def run(data: Data) -> torch.Tensor:
        w, h, d_ws, d_qkv, d_model = check_inputs(data)
        out = (torch.zeros if zeroed else torch.empty)((d_ws, d_qkv), device=h.device, dtype=torch.float32)
        if out.numel() == 0:
            return out
        dev = h.device.index or 0
        mod = load_module(source, defines=build, device_index=dev)
        mod.kernel(kernel)((sm_count(dev) * per_sm,), (32 * warps,), w, h, out, np.int32(d_ws), np.int32(d_qkv),
                           np.int32(d_model))
        return out

    return run


def tiled_kernel(source: Path, kernel: str, pick: Callable[[int, int, int], Mapping[str, Any]]
                 ) -> Callable[[Data], torch.Tensor]:
    """``custom_kernel`` for a kernel whose CTA computes one BM x BN tile of h_qkv with
    (BM/TM)·(BN/TN) threads; ``pick(d_ws, d_qkv, d_model)`` gives the build's configuration
    (BM, BN, BK, TM, TN) for a shape."""

    def run(data: Data) -> torch.Tensor:
        w, h, d_ws, d_qkv, d_model = check_inputs(data)
        out = torch.empty((d_ws, d_qkv), device=h.device, dtype=torch.float32)
        if out.numel() == 0:
            return out
        cfg = pick(d_ws, d_qkv, d_model)
        mod = load_module(source, defines=defines(cfg), device_index=h.device.index or 0)
        threads = (cfg["BM"] // cfg["TM"]) * (cfg["BN"] // cfg["TN"])
        grid = (-(-d_qkv // cfg["BN"]), -(-d_ws // cfg["BM"]))
        mod.kernel(kernel)(grid, (threads,), w, h, out, np.int32(d_ws), np.int32(d_qkv), np.int32(d_model))
        return out

    return run


def lean_tiled_kernel(source: Path, kernel: str, pick: Callable[[int, int, int], Mapping[str, Any]]
                      ) -> Callable[[Data], torch.Tensor]:
    """:func:`tiled_kernel` with the launch packed once per shape and device (``reporter.cuda.LaunchPlan``):
    a call checks its inputs' types with a few attribute reads (the full check, and its error, on
    anything unexpected), allocates the output, writes the three pointers into the packed
    parameters and launches on the current stream: one driver call, where a plain call converts
    every argument again."""
    plans: dict[tuple[Any, ...], Any] = {}

    def plan_for(w: torch.Tensor, h: torch.Tensor, key: tuple[Any, ...]) -> Any:
        w, h, d_ws, d_qkv, d_model = check_inputs((w, h))
        cfg = pick(d_ws, d_qkv, d_model)
        mod = load_module(source, defines=defines(cfg), device_index=key[0])
        threads = (cfg["BM"] // cfg["TM"]) * (cfg["BN"] // cfg["TN"])
        grid = (-(-d_qkv // cfg["BN"]), -(-d_ws // cfg["BM"]))
        plans[key] = mod.kernel(kernel).plan(grid, (threads,), None, None, None, np.int32(d_ws), np.int32(d_qkv),
                                             np.int32(d_model))
        return plans[key]

    def run(data: Data) -> torch.Tensor:
        w, h = data
        if not (w.dtype is torch.float32 and h.dtype is torch.float32 and w.is_cuda and w.is_contiguous()
                and h.is_contiguous() and w.data_ptr() % 16 == 0 and h.data_ptr() % 16 == 0):
            check_inputs(data)  # raises, naming what is wrong
        device = h.device.index or 0
        key = (device, tuple(w.shape), tuple(h.shape))
        plan = plans.get(key) or plan_for(w, h, key)
        out = torch.empty((h.shape[0], w.shape[0]), device=h.device, dtype=torch.float32)
        if out.numel() == 0:
            return out
        plan.set_pointer(0, w.data_ptr())
        plan.set_pointer(1, h.data_ptr())
        plan.set_pointer(2, out.data_ptr())
        plan.launch(torch.cuda.current_stream(device).cuda_stream)
        return out

    return run
