"""v36 with 64-row K/V tiles in a four-stage ring: the shorter steps a lagging consumer would need, in step.

Structure: ``v40_kv64.cu`` is v36's build (v19's persistent kernel with v34's guarded step, v35's store warps
and v36's TMA stores); the configuration sets ``BLOCK_N`` 64 and ``STAGES`` 4 (128 KB of K/V ring, as v36's
two stages of 128 rows), so each step's S is eight m64n64k16 products and its P.V four k16 chunks. The
launch is v36's (``out_map_host``, whose K/V maps take ``BLOCK_N``-row boxes).

Hypothesis: the unit boundaries of v36-v39 cost about a step each because both consumers reach them
together; a consumer running a tile behind the other needs one more ring stage than two 128-row stages
leave room for, and four 64-row stages fit. Before building that, this version measures the price of the
shorter steps alone (twice the turns, barrier waits and row reductions per key). Predicted: test_small
3-6 % slower than v36, the benchmark 2-4 % slower; a kernel whose lag saves less than that is not worth it.
"""

from __future__ import annotations

from pathlib import Path

import out_map_host
import v36_store_tma as v36

SOURCE = Path(__file__).with_suffix(".cu")
KERNEL_NAME = v36.KERNEL_NAME
CONFIG: dict[str, int] = {**v36.CONFIG, "BLOCK_N": 64, "STAGES": 4}
SWEEP: list[dict[str, int]] = [dict(CONFIG)]
make_kernel = out_map_host.kernel_maker(SOURCE)
custom_kernel = make_kernel(CONFIG)
