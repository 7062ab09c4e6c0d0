"""v32 in clusters of two: each K/V tile multicast to a pair of CTAs again, now that the step is lighter.

Structure: v32's GPU code (``v32_guarded_units.cu``: v19's persistent kernel with v21's staged
epilogue and v31's step), built with ``CLUSTER`` = 2: a work unit is two neighbouring 128-row Q
blocks of one head, one per CTA of the pair, and each CTA's producer copies half of every K/V tile
to both (v15's multicast). Everything else is v32's.

Hypothesis: v21's sweeps put clusters of one ahead on every case, when the softmax's instructions
were a larger share of each step. With a fifth of them gone (v31's step), the step leans more on its
tiles, and a pair of CTAs reading each K/V tile from L2 once instead of twice may pay again.
Predicted: the benchmark and test_medium 1–2 % faster than v32, test_small no slower.
"""

from __future__ import annotations

import v32_guarded_units as v32

SOURCE = v32.SOURCE
KERNEL_NAME = v32.KERNEL_NAME
CONFIG: dict[str, int] = {**v32.CONFIG, "CLUSTER": 2}
SWEEP: list[dict[str, int]] = [dict(CONFIG), dict(v32.CONFIG)]
module = v32.module
make_kernel = v32.make_kernel
custom_kernel = make_kernel(CONFIG)
