"""v36 with each boundary between two units run as one turn: the next unit's first S with this unit's last P.V.

Structure: ``v39_merged_boundary.cu`` builds v36's kernel (v19's persistent kernel with v34's guarded step,
v35's store warps and v36's TMA stores) with its consumer loop replaced through v19's ``DQ_CONSUME`` hook by
``consume_units_merged`` (``attn_sm90_merged_units.cuh``): a consumer's first unit starts with v19's step 0,
and every later unit's S_0 is issued in the previous unit's last turn, with its last P.V (v23's
``consumer_boundary_step``, now in ``attn_sm90_boundary_step.cuh``); the softmax of S_0 runs under the P.V,
then O is staged for the store warps and cleared. The launch (``out_map_host``) and the configuration are
v36's.

Hypothesis: v36's trace on test_small has a unit boundary take about three steps' time for two steps' work:
each consumer spends two half-size turns there (the last P.V alone, then S_0 alone) with its epilogue and the
first softmax between them, and the other consumer's half-size turns at its own boundary, a fraction of a step
later, do not cover them. One full turn a boundary, with the softmax under the P.V, leaves the epilogue as the
boundary's only extra work. Predicted: the boundary about 0.5 µs shorter and test_small 2–3 % faster than v36
(three boundaries in each CTA's four units); test_medium about 0.5 %, the benchmark unchanged.
"""

from __future__ import annotations

from pathlib import Path

import out_map_host
import v36_store_tma as v36

SOURCE = Path(__file__).with_suffix(".cu")
KERNEL_NAME = v36.KERNEL_NAME
CONFIG: dict[str, int] = dict(v36.CONFIG)
SWEEP: list[dict[str, int]] = [dict(CONFIG)]
make_kernel = out_map_host.kernel_maker(SOURCE)
custom_kernel = make_kernel(CONFIG)
