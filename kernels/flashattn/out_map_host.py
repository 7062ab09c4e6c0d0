"""The launch of v21's kernel built with O's tensor map as one more parameter (v36's TMA stores): v21's
planned launch (v19's plan over v21's shared memory) with the map appended, rewritten for every output
buffer a call writes.

The output is a fresh tensor each call, so its map is too: the plan's output pointer brings the map of that
buffer along (:class:`OutMapPlan`), encoded once per address and kept by the plan (the caching allocator
hands the same few buffers back), so a call costs a dictionary look-up by the address and a 128-byte copy
more than v34's: the host queues the call while the harness's L2 clear still runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import v19_double_q as v19
import v21_staged_stores as v21
from launch_plans import planned_kernel

from reporter.cuda.launch import LaunchPlan, ParamBytes
from reporter.cuda.tma import MAPS_KEPT, TENSOR_MAP_BYTES, encode_tensor_map_at

if TYPE_CHECKING:
    import torch

O_BOX = (64, 64)  # one consumer's 64 rows, half of HEAD_DIM's columns: a 128-byte swizzle span


class OutMapPlan:
    """A plan whose output pointer (argument ``out_arg``) brings the tensor map of that buffer, O viewed as
    ``view`` (rows x HEAD_DIM, fp16) in boxes of :data:`O_BOX`, into argument ``map_arg``: what
    ``planned_kernel`` sets before each launch is all a call needs."""

    def __init__(self, plan: LaunchPlan, out_arg: int, map_arg: int, view: tuple[int, int]) -> None:
        self.plan, self.out_arg, self.map_arg, self.view = plan, out_arg, map_arg, view
        self.maps: dict[int, ParamBytes] = {}  # output address -> its map: one dictionary look-up a call

    def set_pointer(self, index: int, pointer: int) -> None:
        self.plan.set_pointer(index, pointer)
        if index == self.out_arg:
            m = self.maps.get(pointer)
            if m is None:
                if len(self.maps) >= MAPS_KEPT:  # a ranked run allocates anew each call: a bound, not a leak
                    self.maps.clear()
                m = self.maps[pointer] = encode_tensor_map_at(pointer, "float16", self.view, O_BOX, swizzle=128)
            self.plan.set_bytes(self.map_arg, m)

    def launch(self, stream: int) -> None:
        self.plan.launch(stream)


def plan(source: Path, q: Any, k: Any, v: Any, config: Mapping[str, Any]) -> OutMapPlan:
    """v21's launch of ``source``'s kernel on (q, k, v) (which checks the inputs) with O's map appended: zero
    bytes until the first output pointer is set, so a launch without one faults instead of writing anywhere."""
    base = v19.plan(source, q, k, v, config, smem=v21.smem_bytes)
    b, h, s, d = (int(x) for x in q.shape)
    unset = ParamBytes(bytes(TENSOR_MAP_BYTES), what="O's tensor map (set with the output pointer)")
    return OutMapPlan(base.appended(unset), v19.OUT_ARG, base.n_args, (b * h * s, d))


def kernel_maker(source: Path) -> Callable[[Mapping[str, Any]], Callable[[Sequence[torch.Tensor]], torch.Tensor]]:
    """``make_kernel(config)`` for a version whose ``source`` builds v21's kernel with O's tensor map."""

    def make_kernel(config: Mapping[str, Any]) -> Callable[[Sequence[torch.Tensor]], torch.Tensor]:
        cfg = dict(config)
        return planned_kernel(lambda q, k, v: plan(source, q, k, v, cfg), v19.v15.check_inputs, v19.OUT_ARG)

    return make_kernel
