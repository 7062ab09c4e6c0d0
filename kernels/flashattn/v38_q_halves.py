"""v36 with each unit's Q copied as two 64-row halves, each consumer waiting on its own.

Structure: ``v38_q_halves.cu`` builds v36's kernel (v19's persistent kernel with v34's guarded step, v35's
store warps and v36's TMA stores) with v19's Q hooks named: ``init_units_q_halves`` (``DQ_INIT``) sets up a
second full barrier per Q buffer, ``produce_units_q_halves`` (``DQ_PRODUCE``) has the Q warp copy consumer
0's 64 rows, then consumer 1's, each half on its own barrier (at the launch's first unit the second half
after the first K tile has landed: ``Q_SECOND_AFTER_K0``), and ``q_half_bar`` (``DQ_Q_BAR``) is the barrier a
consumer waits on (``attn_sm90_q_halves.cuh``). ``q_halves_host`` plans the launch: v36's, its Q map in
64-row boxes. The configuration is v36's.

Hypothesis: v36's trace on test_small has each CTA's first Q wait at about 4 µs and its first unit's second
step waiting on V_0, which is asked for only once K_0 has landed: the launch's first loads are DRAM-bound,
and both consumers wait for the whole Q tile. Consumer 0 needs half of it. Asking for its half and K_0
first brings the launch's first S earlier, and V_0 with it. Predicted: the first Q wait about 1 µs shorter
and test_small 1–2 % faster than v36; test_medium and the benchmark unchanged (one launch start among 8 or
32 units an SM).
"""

from __future__ import annotations

from pathlib import Path

import q_halves_host
import v36_store_tma as v36

SOURCE = Path(__file__).with_suffix(".cu")
KERNEL_NAME = v36.KERNEL_NAME
CONFIG: dict[str, int] = {**v36.CONFIG, "Q_SECOND_AFTER_K0": 1}
SWEEP: list[dict[str, int]] = [dict(CONFIG), {**CONFIG, "Q_SECOND_AFTER_K0": 0}]
make_kernel = q_halves_host.kernel_maker(SOURCE)
custom_kernel = make_kernel(CONFIG)
