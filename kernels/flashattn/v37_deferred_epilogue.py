"""v36 with each unit's epilogue run under the next unit's first S.

Structure: ``v37_deferred_epilogue.cu`` builds v36's kernel (v19's persistent kernel with v34's guarded step,
v35's store warps and v36's TMA stores) with ``DQ_DEFER_EPILOGUE`` 1: in a unit's step 0 the consumer issues
the first S, gives the other consumer its turn, and only then reduces the previous unit's row sums and stages
its O for the store warp; O and the row sums live across units, and the last unit's epilogue runs after the
loop. The launch (``out_map_host``) and the configuration are v36's.

Hypothesis: at a unit boundary a consumer's epilogue and the next unit's first softmax both fall between two
of its turns, which the other consumer's P·V does not cover; staging O while the first S runs takes the
epilogue off that gap. Predicted: test_small 1–2 % faster than v36 (three boundaries under a first S in each
CTA's four units), test_medium under 1 %, the benchmark unchanged.
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
