"""The launch of matmul's stream-K version (v18): a persistent grid of as many CTAs as the SMs hold
at once (the driver's occupancy for the built kernel), or fewer when there are fewer k slices than
that, with a workspace of one partial tile a CTA and one flag a CTA (zeroed once; the kernel leaves
them zero). The input check and the build's defines are matmul_host.py's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from matmul_host import Data, check_inputs, defines
from matmul_host_sm90 import _sm_count
from reporter.cuda import load_module


def lane_outputs(config: Mapping[str, Any]) -> tuple[int, int]:
    """A lane's rows and columns of C: (WM/32)·4 x (WN/16)·4 (matmul_prefetch.cuh's WarpLanes)."""
    return int(config["WM"]) // 32 * 4, int(config["WN"]) // 16 * 4


def stream_k_kernel(source: Path, kernel: str, config: Mapping[str, Any]) -> Callable[[Data], torch.Tensor]:
    """``custom_kernel`` for a stream-K kernel of ``source`` (matmul_stream_k.cuh) built with ``config``.

    The workspace (per device, grown as needed) is shared by the launches on a device: they must not
    run at once, which the stream order of one stream guarantees."""
    bm, bn, s = int(config["BM"]), int(config["BN"]), int(config["S"])
    threads = (bm // int(config["WM"])) * (bn // int(config["WN"])) * 32
    rows, cols = lane_outputs(config)
    slot_floats = rows * cols * threads
    resident: dict[int, int] = {}  # device -> CTAs the SMs hold at once
    workspaces: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def workspace(device: torch.device, ctas: int) -> tuple[torch.Tensor, torch.Tensor]:
        index = device.index or 0
        held = workspaces.get(index)
        if held is None or held[1].numel() < ctas:
            held = (torch.empty(ctas * slot_floats, dtype=torch.float32, device=device),
                    torch.zeros(ctas, dtype=torch.int32, device=device))
            workspaces[index] = held
        return held

    def run(data: Data) -> torch.Tensor:
        a, b, n = check_inputs(data)
        c = torch.empty_like(a)
        if n == 0:
            return c
        index = a.device.index or 0
        fn = load_module(source, defines=defines(a.dtype, config), device_index=index).kernel(kernel)
        if index not in resident:
            from cupy.cuda import driver

            per_sm = int(driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.raw.ptr, threads, 0))
            if per_sm < 1:
                raise RuntimeError(f"{source.name}: {kernel} with {config} does not fit an SM")
            resident[index] = per_sm * _sm_count(index)
        total = -(-n // bm) * -(-n // bn) * -(-n // s)  # the k slices of all the tiles
        if total >= 2**31:
            raise ValueError(f"{source.name}: n = {n} gives {total} k slices, more than the kernel's int counts")
        ctas = min(resident[index], total)
        partials, flags = workspace(a.device, ctas)
        fn((ctas,), (threads,), a, b, c, np.int32(n), partials, flags)
        return c

    return run
