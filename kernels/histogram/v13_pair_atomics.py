"""v07 with half as many global atomics in its flush: two neighbouring counters added by one 64-bit atomic.

Structure: ``v13_pair_atomics.cu`` is v07's kernel (v05's persistent grid, v04's counting and tile
transpose) with the flush hook set to ``flush_bin_major_pairs`` (histogram.cuh): after the transpose, the
lane holding value v0 + k (k even) of a channel takes value v0 + k + 1's count from the next lane and adds
both into the output's adjacent int32 pair with one 64-bit atomic. The host path is v07's
(``lean_plan``), the configuration v05's.

Hypothesis: v07's flush is 4.3 million global atomics, all 132 blocks at once after their counting. The
flush alone (``probe_flush_only``) took 17 µs median where v07 spends about 14 µs beyond the fastest
read of the input in the same run (``probe_read_w16_t512``): the flush is most of what v07 adds to the
reading. If the L2's atomic units spend their time per operation, half the operations halve that tail.
Predicted: 3-6 µs faster than v07 (1.5-3 %); no change if they spend it per 32-byte request, which
stays the same (four sectors a warp instruction).
"""

from __future__ import annotations

from pathlib import Path

import lean_plan
import v05_persistent as v05

SOURCE = Path(__file__).with_suffix(".cu")
CONFIG = dict(v05.CONFIG)
make_kernel = lean_plan.kernel_maker(SOURCE, "histogram_pair_atomics")
custom_kernel = make_kernel(CONFIG)
