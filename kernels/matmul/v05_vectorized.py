"""v04 with contiguous 16-byte global reads: four consecutive elements of a row per load, A read
along its rows.

``v05_vectorized.cu``: v04's tiles, barriers and thread-to-output mapping. The S x L slices are
fetched as quads of four consecutive elements of a row (one float4 load in fp32, 8 bytes in
fp16), A's along its rows, so that a warp reads whole 32-byte sectors of A as it already did of
B, and written into the transposed sA one value at a time; B's quads go to sB with one 16-byte
store. The inner loop reads sA and sB as float4 too. Where n % 4 != 0 a quad is not aligned and
falls back to four guarded scalar loads. Hypothesis: v04's A reads cost a sector per value; the
lecture's first named next step is contiguous reads.
"""

from __future__ import annotations

from pathlib import Path

import matmul_host as host
import matmul_traffic as mt

SOURCE = Path(__file__).with_suffix(".cu")
CONFIG = {"L": 128, "V": 8, "S": 8}  # a first guess (256 threads, 8 x 8 each) until a recorded sweep chooses
SWEEP = host.tile_sweep()


def traffic(n: int, config: dict = CONFIG) -> mt.Traffic:
    return mt.shared_tiled(n, config["L"], config["V"])


def make_kernel(config: dict):
    return host.shared_tiled_kernel(SOURCE, "matmul_vectorized", config)


custom_kernel = make_kernel(CONFIG)
