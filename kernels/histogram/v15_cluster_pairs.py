"""v07's counting on clusters of two blocks of one channel group that sum their histograms in distributed
shared memory before flushing: half of v07's global atomics.

Structure: ``v15_cluster_pairs.cu`` launches clusters of two (``__cluster_dims__``). The blocks of a
cluster count neighbouring chunks of the rows of one channel group with v07's loop (``count_slice_at``),
synchronise the cluster, and rank r adds the peer's counters of values [128 r, 128 r + 128) into its own
through ``ld.shared::cluster`` and flushes only those (``flush_bin_major_tiles``, v07's atomics). With an
odd chunk count, each group's last chunk is a block of its own that flushes all of its counters; one idle
block evens the grid when needed (``blocks``). The host path is v07's (``grid_plan``), the configuration
v05's.

Hypothesis: v07's flush adds about 10 µs to its reading and counting (probe_count_only held, 189.5 µs,
against v07 held, 199.9 µs, in one run), and it did not move with half the atomic operations in the same
number of 32-byte requests (v13) or with a different order (v14): the L2's rate for the flush's requests
sets it. Summing in pairs first halves those requests for 128 of the 132 blocks, at the price of 64 KB
read from the peer's shared memory per block. Predicted: 3-5 µs faster than v07 (1.5-2.5 %).
"""

from __future__ import annotations

from pathlib import Path

import grid_plan
import v05_persistent as v05

SOURCE = Path(__file__).with_suffix(".cu")
CONFIG = dict(v05.CONFIG)


def blocks(groups: int, chunks: int) -> int:
    """The paired blocks, one block per group for an odd chunk count's last chunk, and an idle block if the
    total is odd: the grid must hold whole clusters of two."""
    n = 2 * (chunks // 2) * groups + (groups if chunks % 2 else 0)
    return n + n % 2


make_kernel = grid_plan.kernel_maker(SOURCE, "histogram_cluster_pairs", blocks)
custom_kernel = make_kernel(CONFIG)
