"""v35 with each staged O block written by two TMA stores from its store warp instead of a copy loop.

Structure: ``v36_store_tma.cu`` builds v35's kernel (v19's persistent kernel with v34's guarded step and
v35's store warps) with O's tensor map as an extra parameter (``DQ_EXTRA_PARAMS``) and the other halves of
``attn_sm90_store_warps.cuh``: ``store_o_handoff_boxes`` as ``STORE_O`` (the consumer stages its block as
two 64 x 64 boxes in the map's 128-byte swizzle, fences the writes for the async proxy and arrives) and
``store_warps_tma`` as ``DQ_STORE_WARPS`` (lane 0 of warp 2 + cw issues one TMA store a box and frees the
buffer once they have read it). ``out_map_host`` plans the launch: v21's, with the map of each output
buffer written into the plan as its pointer is. The configuration is v35's.

Hypothesis: v35's store warps end the launch: their copy loop has one 16-byte load in flight, and the
trace put their last stores well after consumer 0's exit, as late as v34's CTAs end. Two TMA stores a
block leave the copy to the copy engine. Predicted: the store tail under half a microsecond and test_small
1.5–2.5 % faster than v35; test_medium and the benchmark as v35.
"""

from __future__ import annotations

from pathlib import Path

import out_map_host
import v35_store_warps as v35

SOURCE = Path(__file__).with_suffix(".cu")
KERNEL_NAME = v35.KERNEL_NAME
CONFIG: dict[str, int] = dict(v35.CONFIG)
SWEEP: list[dict[str, int]] = [dict(CONFIG)]
make_kernel = out_map_host.kernel_maker(SOURCE)
custom_kernel = make_kernel(CONFIG)
