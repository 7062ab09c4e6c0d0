"""The copies of ``probes.cu`` as the harness calls them: each takes the case's input (the array
x) like a version, allocates its output with ``torch.empty_like`` as a version allocates y, and
launches one copy kernel through a launch packed once (``reporter.cuda.LaunchPlan``), as v08
does, so a probe's host time per call is a version's. Nothing here is checked: a probe does not
compute the answer, and its time is what moving the bytes costs an SM kernel alone.

``assignment.PROBES`` names them; ``report run transform -c benchmark --probes`` times them after
the versions of the case and keeps them in each run's record.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from reporter.cuda import LaunchPlan, load_module

SOURCE = Path(__file__).with_name("probes.cu")
RING_SOURCE = Path(__file__).with_name("v12_balanced.cu")
THREADS_VEC4 = 256


@functools.cache
def _vec4_plan(device: int, nbytes: int, per_sm: int) -> LaunchPlan:
    import numpy as np
    import torch

    sms = torch.cuda.get_device_properties(device).multi_processor_count
    mod = load_module(SOURCE, defines={"UNROLL": 1}, device_index=device)
    return mod.kernel("copy_vec4").plan((sms * per_sm,), (THREADS_VEC4,), None, None, np.uint64(nbytes // 16))


@functools.cache
def _bulk_plan(device: int, nbytes: int, tile_bytes: int, stages: int, per_sm: int) -> LaunchPlan:
    import numpy as np
    import torch

    sms = torch.cuda.get_device_properties(device).multi_processor_count
    mod = load_module(SOURCE, defines={"TILE_BYTES": tile_bytes, "STAGES": stages, "ORDER": 0, "HINT": 0},
                      device_index=device)
    tiles = nbytes // tile_bytes
    return mod.kernel("copy_bulk").plan((max(1, min(tiles, sms * per_sm)),), (32,), None, None, np.uint64(tiles),
                                        shared_mem=tile_bytes * stages)


@functools.cache
def _ring_plan(device: int, bf16: bool, n: int, tile_bytes: int, stages: int, per_sm: int) -> LaunchPlan:
    import numpy as np
    import transform_launch  # v12's launch: its grid and block, so the probe is v12 less the finish

    mod = load_module(RING_SOURCE, defines={"TILE_BYTES": tile_bytes, "STAGES": stages, "ELEM_BF16": int(bf16),
                                            "SKIP_SUM": 1}, device_index=device)
    blocks = transform_launch.blocks_for(n, 2 if bf16 else 4, {"TILE_BYTES": tile_bytes, "BLOCKS_PER_SM": per_sm},
                                         device)
    # the partial sums, the ticket and the sum are never touched without the finish
    return mod.kernel("transform_balanced").plan((blocks,), (transform_launch.THREADS,), None, None, None, None, None,
                                                 np.uint64(n))


def _launch(plan: LaunchPlan, x: Any) -> Any:
    import torch

    y = torch.empty_like(x)
    plan.set_pointer(0, x.data_ptr())
    plan.set_pointer(1, y.data_ptr())
    plan.launch(torch.cuda.current_stream(x.device).cuda_stream)
    return y


def vec4(per_sm: int) -> Callable[[Any], Any]:
    """x copied by 16-byte loads and stores, one per thread per step of a grid-stride loop."""

    def probe(x: Any) -> Any:
        nbytes = x.numel() * x.element_size()
        if nbytes % 16:
            raise ValueError(f"the array is {nbytes} bytes, not a whole number of 16-byte vectors")
        return _launch(_vec4_plan(x.device.index or 0, nbytes, per_sm), x)

    return probe


def bulk(tile_bytes: int, stages: int, per_sm: int) -> Callable[[Any], Any]:
    """x copied tile by tile through shared memory by bulk loads and bulk stores."""

    def probe(x: Any) -> Any:
        nbytes = x.numel() * x.element_size()
        if nbytes % tile_bytes:
            raise ValueError(f"the array is {nbytes} bytes, not a whole number of {tile_bytes}-byte tiles")
        return _launch(_bulk_plan(x.device.index or 0, nbytes, tile_bytes, stages, per_sm), x)

    return probe


def ring_no_sum(tile_bytes: int, stages: int, per_sm: int) -> Callable[[Any], Any]:
    """v12's kernel built with ``SKIP_SUM``: the balanced ring with the arithmetic, without the
    sum's finish (partials, ticket, last block). Its y is v12's for the whole 32-blocks."""

    def probe(x: Any) -> Any:
        import torch

        if x.dtype not in (torch.float32, torch.bfloat16):
            raise ValueError(f"x is {x.dtype}, not float32 or bfloat16")
        plan = _ring_plan(x.device.index or 0, x.dtype == torch.bfloat16, x.numel(), tile_bytes, stages, per_sm)
        return _launch(plan, x)

    return probe
