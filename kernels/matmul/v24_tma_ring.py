"""v17's loop fed by TMA: A transposed once by a kernel of its own, then both operands copied into
a ring of shared-memory stages that warp 0 keeps full, with no CTA-wide barrier in the loop.

``v24_tma_ring.cu`` sets the tiles and the depth and holds the product's kernel; ``matmul_tma_ring.cuh``,
new here, holds its body and the transposition's kernel. First ``matmul_transpose_a`` writes At = Aᵀ into a scratch matrix (32 x 32
tiles through shared memory). Then ``matmul_tma_ring``: v17's lanes (16 x 8 outputs, four float4s of
sA and two of sB a step, step k + 1's values read during step k's FMAs) read a k-major slice of At and
one of B that TMA copied as two plain boxes into a ring of STAGES stages; lane 0 of warp 0 arms each
stage's full mbarrier and issues the boxes once every warp has released the stage through its empty
mbarrier (a ninth, producer warp would cap every thread at 168 registers). Edges: TMA zero-fills rows and columns past the matrix; for n % 4 != 0 (TMA's
16-byte strides) the host pads the inputs. fp32 only.

Hypothesis: v17 issues on 84 % of its schedulers' active cycles against cuBLAS's 90 % (the feed
probe); its warps wait at each slice's end on their own global loads of the next slice, on their
transposed stores of it and on the CTA-wide barrier. v21 and v23 took the loads off the warps' path
and paid for it in the loop (A read along k; one 4-byte copy an element of A). Transposing A once
costs one pass over A (about 1.6 % of v17's time at N = 4096, under 1 % at 8192); after it, both
operands are boxes that TMA copies with no instruction of the consumers', so their loop is v17's FMAs
and shared loads plus two mbarrier operations a slice, and no warp waits for the slowest at a barrier.
That loop should issue on as many cycles as cuBLAS's and put fp32 past it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import matmul_host_tma_ring as host
import matmul_traffic as mt
import matmul_traffic_tc as mtc

SOURCE = Path(__file__).with_suffix(".cu")
CASES_WHERE = {"dtype": "float32"}
# v17's tiles, 16-deep slices, four in the ring
CONFIG = {"BM": 256, "BN": 128, "WM": 128, "WN": 32, "S": 16, "STAGES": 4}
# depths 8, 16 and 32 on v17's tiles, two ring lengths, and 128 x 256 with 8 x 16 lanes
SWEEP = ([{"BM": 256, "BN": 128, "WM": 128, "WN": 32, "S": s, "STAGES": st}
          for s, st in ((8, 4), (8, 8), (16, 3), (16, 4), (32, 2), (32, 3))]
         + [{"BM": 128, "BN": 256, "WM": 64, "WN": 64, "S": 16, "STAGES": 4}])


def lane_outputs(config: dict) -> tuple[int, int]:
    """A lane's rows and columns of C: (WM/32)·4 x (WN/16)·4, as v17's."""
    return config["WM"] // 32 * 4, config["WN"] // 16 * 4


def traffic(n: int, config: dict = CONFIG) -> mt.Traffic:
    """v17's reads, plus the transposition's one read of A (N²; its write of At, like C's, is left out)."""
    rows, cols = lane_outputs(config)
    t = mtc.rectangular_tiled(n, config["BM"], config["BN"], rows, cols)
    return dataclasses.replace(t, formula=t.formula + " + N²", global_reads=t.global_reads + float(n) * n)


def make_kernel(config: dict):
    return host.fp32_only(host.tma_ring_kernel(SOURCE, "matmul_tma_ring", "matmul_transpose_a", config),
                          "v24_tma_ring")


custom_kernel = make_kernel(CONFIG)
