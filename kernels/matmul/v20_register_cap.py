"""v18's schedule with v17's loop, its registers capped near what v17's loop takes alone.

``v20_register_cap.cu`` sets the cap; ``matmul_stream_k.cuh`` gains ``MAXNREG``: a kernel with it
set is compiled with ``__maxnreg__(MAXNREG)`` instead of its launch bounds (v18's and v19's machine
code is unchanged).

Hypothesis: v19's sweep ran v17's own schedule and tiles on the persistent grid (``WHOLE_ONLY=1``,
no prefetch), and it was slower than v17 itself, although it issues the same loop on the same tiles
in the same order. What differs is the compile: v17's kernel, one loop over slices, takes 210
registers; inside v18's loops over tiles and segments ptxas takes all 255 the launch bounds allow,
and lays the loop out otherwise. Capped at v17's count (no spills at 210 on either tile shape),
the loop should compile as in v17 and the stream-K schedule keep what its even rounds give. The
sweep runs the cap on both tile shapes and on v17's schedule (``WHOLE_ONLY=1``), which should then
match v17.

Measured: the cap helps stream-K on v17's tiles, and does not bring v17's own schedule on the
persistent grid back to v17: what the persistent loops cost is more than the register count.
"""

from __future__ import annotations

from pathlib import Path

import matmul_host_stream_k as host
import matmul_traffic as mt
import matmul_traffic_tc as mtc

SOURCE = Path(__file__).with_suffix(".cu")
# the recorded sweep's fastest at 4096: v17's tiles at v17's register count (the first guess, v18's
# 128 x 256 at 210, came last of the stream-K points; at 8192 the same tiles at 232 led)
CONFIG = {"BM": 256, "BN": 128, "WM": 128, "WN": 32, "S": 8, "MAXNREG": 210}
_V18 = {"BM": 128, "BN": 256, "WM": 64, "WN": 64, "S": 8}
SWEEP = [{**_V18, "MAXNREG": r} for r in (210, 216, 232)] + [
    CONFIG, {**CONFIG, "MAXNREG": 232}, {**CONFIG, "WHOLE_ONLY": 1}]

lane_outputs = host.lane_outputs


def traffic(n: int, config: dict = CONFIG) -> mt.Traffic:
    """v17's: the same slices, cut at other places."""
    rows, cols = lane_outputs(config)
    return mtc.rectangular_tiled(n, config["BM"], config["BN"], rows, cols)


def make_kernel(config: dict):
    return host.stream_k_kernel(SOURCE, "matmul_register_cap", config)


custom_kernel = make_kernel(CONFIG)
