"""v32 with a rare path that keeps every finite value: the exp2 values rescaled in the log2 domain, the row sums taken again.

Structure: ``v34_guarded_range.cu`` builds v32's kernel (v19's persistent kernel with v21's staged
epilogue) with ``attn_sm90_guard_logs.cuh``'s ``consumer_step_guard_logs`` as its ``DQ_STEP``: v31's
common path (each score's exp2 against the row's running max, the row sums as the guard, one warp
vote), and on the rare path each row's max moved by log2 of its largest value, every value taken again
as exp2(log2(p) - log2(mx)) and the partial sums added again from them; O and l rescaled by alpha as
before. The step is ``consumer_step_guarded`` with that softmax as its template argument. The grid,
launch plan (``double_q_host``) and configuration are v32's.

Numerics: v32's on the common path. A row whose scores rise in one tile far enough above its running
max that a lane's partial sum overflows (from about 123 log2 units with 32 values a lane) or alpha
flushes (126) now keeps its values; a score 128 log2 units or more above it overflows its own exp2 and
makes the row NaN.

Hypothesis: v31's rare path scaled the values and the lanes' partial sums by alpha, and a lane's sum of
a row overflows before any single value does, while alpha flushes to 0 once the max moves by 126: those
rows came out as zeros or NaN. Taking the values and sums again on the rare path fixes both and leaves the
common path's machine code as v32's. Predicted: v32's times on every case, and the reference's output on
scores that jump by 125 log2 units in one tile, which v32 gets wrong.
"""

from __future__ import annotations

from pathlib import Path

import double_q_host
import v32_guarded_units as v32

SOURCE = Path(__file__).with_suffix(".cu")
KERNEL_NAME = v32.KERNEL_NAME
CONFIG: dict[str, int] = dict(v32.CONFIG)
SWEEP: list[dict[str, int]] = [dict(CONFIG)]
make_kernel = double_q_host.kernel_maker(SOURCE)
custom_kernel = make_kernel(CONFIG)
