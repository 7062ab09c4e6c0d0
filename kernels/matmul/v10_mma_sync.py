"""fp16 on the tensor cores, warp by warp: mma.sync m16n8k16 (f32 accumulate) fed by ldmatrix from
a STAGES-deep cp.async ring of swizzled shared-memory slices.

``v10_mma_sync.cu`` holds the kernel: v08's block tile and warp regions, but each warp multiplies
its WM x WN region with (WM/16)(WN/8) tensor-core products per 16-deep step instead of its lanes'
FMAs, and loads its operands with ldmatrix (the transposed form for B, which is row-major in
k). The slice deepens from 8 to 64 so that a barrier serves 128 products a warp, and three slices
are in flight instead of two (the configuration the recorded sweep over slice depth, ring depth and
warp region found fastest; the first guess, 32 deep and four slices, was 1.12x slower). Hypothesis: the fp16 versions so far run at the CUDA cores' fp32
rate (a 4096 product in about the time of fp32); the tensor cores' dense f16 rate is an order of
magnitude higher, so the limit moves to feeding them: shared-memory bandwidth (ldmatrix) and the
latency of the copies, which the ring hides. fp16 only.
"""

from __future__ import annotations

from pathlib import Path

import matmul_host_sm90 as host
import matmul_traffic as mt

SOURCE = Path(__file__).with_suffix(".cu")
CASES_WHERE = {"dtype": "float16"}
CONFIG = {"L": 128, "S": 64, "WM": 64, "WN": 32, "STAGES": 3}  # the sweep's fastest (benchmark_fp16)
SWEEP = [{"L": 128, "S": s, "WM": wm, "WN": wn, "STAGES": st}
         for s, st in ((32, 3), (32, 4), (64, 3)) for wm, wn in ((64, 32), (32, 64), (64, 64))]


def shared_bytes(config: dict) -> int:
    """STAGES slices of A (L x S) and B (S x L), fp16."""
    return config["STAGES"] * 2 * config["L"] * config["S"] * 2


def traffic(n: int, config: dict = CONFIG) -> mt.Traffic:
    """v3's global reads (2N³/L); the shared reads are a warp's: WM rows of A and WN columns of B per k."""
    return mt.shared_tiled(n, config["L"], config["WM"], config["WN"])


def make_kernel(config: dict):
    threads = (config["L"] // config["WM"]) * (config["L"] // config["WN"]) * 32
    run = host.smem_tiled_kernel(SOURCE, "matmul_mma_sync", config, config["L"], (threads,), shared_bytes(config))
    return host.fp16_only(run, "v10_mma_sync")


custom_kernel = make_kernel(CONFIG)
