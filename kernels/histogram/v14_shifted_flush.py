"""v07 with the blocks of a channel group flushing different quarters of the output at a time.

Structure: ``v14_shifted_flush.cu`` is v07's kernel (v05's persistent grid, v04's counting, tile
transpose and atomics) with the flush hook set to ``flush_bin_major_shifted`` (histogram.cuh), the tiles
of block (group, chunk) shifted by (chunk mod 4) x 32 with the configuration's 1024 threads: its 32 warps
start on quarter chunk mod 4 of the group's output words instead of the first. The host path is v07's (``lean_plan``), the configuration v05's.

Hypothesis: v07's flush is most of what it adds to the reading (``probe_flush_only``, 17 µs median, against
about 14 µs between v07 and the fastest read in the same run), and its 33 blocks per group flush in the
same order, so at any moment up to 33 atomics wait on each of a quarter of the group's words while the
rest wait their turn. Shifted, about 8 blocks add into each word at a time over four times as many words
and L2 slices. Predicted: 2-5 µs faster than v07 if same-word queuing sets the flush's pace; no change
if the L2's total atomic rate does.
"""

from __future__ import annotations

from pathlib import Path

import lean_plan
import v05_persistent as v05

SOURCE = Path(__file__).with_suffix(".cu")
CONFIG = dict(v05.CONFIG)
make_kernel = lean_plan.kernel_maker(SOURCE, "histogram_shifted_flush")
custom_kernel = make_kernel(CONFIG)
