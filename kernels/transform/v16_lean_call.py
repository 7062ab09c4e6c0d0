"""v15's kernel with the host's part of a call cut to two allocations and one driver call.

Nothing on the GPU changes: the source (``v15_in_order.cu``), the ring per dtype, the grid, the
per-device counters and the packed launch are v15's. What changes is the Python that runs between
the caller's start event and the launch. A course harness queues a 256 MiB L2 clear, records its
start event, calls ``custom_kernel`` and records its end event; the clear takes the GPU about
90 µs on the H100, and when the host takes longer than that to queue the call, the GPU waits for
it inside the sample. v15's records keep that queuing time per sample (``enqueue_ms``: from the
start event's record to the end event's): its median ranged from 40 to 112 µs over the runs of
23 Nov on the loaned H100 node, and in the 112 µs run the plain-timed fp32 mean was 12 µs over
the held one, in which the host's time is left out.

v15's call checks the length, picks its dtype's launcher, asks for the device twice, looks its
packed launch up in a cache keyed by nine values, allocates ``y`` and the 0-d sum, builds a torch
``Stream`` object to read the current stream's handle, and launches through
``LaunchPlan.launch``. Here the first call per (dtype, shape, device) does all of that once and
keeps a closure; a later call makes one dictionary lookup, two ``torch.empty`` with their
arguments bound, three pointer writes into the packed parameters (``LaunchPlan.pointer``), reads
the raw stream handle and makes the driver call (``LaunchPlan.launcher``).

Hypothesis: the queuing medians drop by the host time saved and the plain-timed means move toward
the held ones, while held times stay v15's. ``CONFIG`` is v15's; ``config_for(case)`` names the
ring a case's dtype runs, so records and sweeps of a case name the same three keys. ``SWEEP`` is
v08's grid, one ring for both dtypes per point.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
import transform_launch
import v08_launch_plan as v08
import v15_in_order as v15

SOURCE = v15.SOURCE  # the kernel v16 launches
KERNEL = "transform_in_order"
KEYS = v15.KEYS
CONFIG: dict[str, int] = dict(v15.CONFIG)
SWEEP: list[dict[str, int]] = list(v08.SWEEP)

Call = Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


def ring(config: Mapping[str, Any], bf16: bool) -> dict[str, int]:
    """The ring a dtype runs under ``config``: the ``BF16_`` keys for bf16 where ``config`` has them,
    else the plain keys (a sweep's point is one ring for both dtypes)."""
    return {k: int(config["BF16_" + k] if bf16 and "BF16_" + k in config else config[k]) for k in KEYS}


def config_for(case: Mapping[str, Any]) -> dict[str, int]:
    """The ring ``CONFIG`` runs on ``case`` (its ``dtype``)."""
    return ring(CONFIG, case.get("dtype") == "bfloat16")


def _call_for(x: torch.Tensor, config: Mapping[str, Any]) -> Call:
    """The call for every input of x's dtype, shape and device: v15's packed launch, found once."""
    if not x.is_cuda:
        raise ValueError(f"v16 takes a CUDA tensor, got one on {x.device}")
    v15._fits(x.numel())
    r = ring(config, x.dtype == torch.bfloat16)
    index = x.device.index or 0
    plan, _ = transform_launch._plan(SOURCE, KERNEL, index, x.dtype, x.numel(), r["TILE_BYTES"], r["STAGES"],
                                     r["BLOCKS_PER_SM"], v15._counters)
    xp, yp, outp = plan.pointer(transform_launch.X), plan.pointer(transform_launch.Y), plan.pointer(transform_launch.OUT)
    go = plan.launcher()
    stream = torch._C._cuda_getCurrentRawStream
    empty, shape, dtype, f64, device = torch.empty, x.shape, x.dtype, torch.float64, torch.device("cuda", index)

    def call(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = empty(shape, dtype=dtype, device=device)
        total = empty((), dtype=f64, device=device)
        xp.value = x.data_ptr()
        yp.value = y.data_ptr()
        outp.value = total.data_ptr()
        go(stream(index))
        return y, total

    return call


def make_kernel(config: Mapping[str, Any]) -> Call:
    """custom_kernel under ``config``: v15's six keys (a ring per dtype) or a sweep's three (one ring)."""
    cfg = dict(config)
    calls: dict[tuple[Any, ...], Call] = {}

    def run(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        key = (x.dtype, x.shape, x.get_device())
        call = calls.get(key)
        if call is None:
            call = calls[key] = _call_for(x, cfg)
        return call(x)

    return run


custom_kernel = make_kernel(CONFIG)
