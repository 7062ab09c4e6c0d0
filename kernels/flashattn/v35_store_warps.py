"""v34 with the epilogue's copy to global memory done by the producer's idle warps, not the consumers.

Structure: ``v35_store_warps.cu`` builds v34's kernel (v19's persistent kernel with v34's guarded step
as its ``DQ_STEP``) with ``attn_sm90_store_warps.cuh``'s two halves of the epilogue: ``store_o_handoff``
as ``STORE_O`` (a consumer waits for its staging buffer, stages O / l with v21's stmatrix and arrives on
a named barrier) and ``store_warps`` as the new ``DQ_STORE_WARPS`` hook (producer warp 2 + cw copies
consumer cw's block out, unit by unit, and frees the buffer). The launch plan (``double_q_host``), the
shared memory (v21's) and the configuration are v34's.

Hypothesis: a consumer's epilogue is on the unit's critical path: until its last store has issued it
cannot issue the next unit's first S, and the other consumer's P·V does not cover that long. The copy
out (8 ld.shared.v4, 8 st.global.v4 a thread, after a barrier of the warpgroup) is the part another warp
can do. Predicted: test_small 1.5–3 % faster than v34 (four unit boundaries a CTA), test_medium
under 1 %, the benchmark unchanged.
"""

from __future__ import annotations

from pathlib import Path

import double_q_host
import v34_guarded_range as v34

SOURCE = Path(__file__).with_suffix(".cu")
KERNEL_NAME = v34.KERNEL_NAME
CONFIG: dict[str, int] = dict(v34.CONFIG)
SWEEP: list[dict[str, int]] = [dict(CONFIG)]
make_kernel = double_q_host.kernel_maker(SOURCE)
custom_kernel = make_kernel(CONFIG)
