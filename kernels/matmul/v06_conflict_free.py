"""v05 with shared-memory accesses free of bank conflicts: a padded sA and each thread's outputs
as 4 x 4 chunks so that a warp's float4 reads of sB are contiguous.

``v06_conflict_free.cu``: v05's fetch, tiles and barriers. Two of v05's shared accesses serialise
in a bank: the inner loop's reads of sB (threads 8 floats apart, two float4s per bank group) and
the transposed stores of A's quads (a row pitch of L floats puts two threads of one row in one
bank). A thread now owns (V/4) x (V/4) chunks of 4 x 4 outputs, L/(V/4) apart, so consecutive
threads read consecutive float4s of sB and write consecutive float4s of C; sA's rows are padded
to L + 4 floats (with S = 8 a warp's 32 stores fall in 32 banks). The lecture's second named
step, avoiding bank conflicts, with the register blocking kept at V x V.
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
    return host.shared_tiled_kernel(SOURCE, "matmul_conflict_free", config)


custom_kernel = make_kernel(CONFIG)
