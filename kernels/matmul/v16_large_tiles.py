"""Back to fp32 on the CUDA cores: v09's pipeline on larger tiles, 256 x 128 (or 128 x 256) outputs per
CTA of 256 threads, 16 x 8 (or 8 x 16) per lane, one CTA per SM.

``v16_large_tiles.cu`` sets the tiles and the launch bounds; the kernel body is
``matmul_prefetch.cuh``'s, unchanged. A lane's 16 x 8 outputs take four float4 loads of sA and two
of sB per step for 128 FMAs (21 FMAs a shared load against v09's 16), and a CTA reads
N·(BM + BN) elements of A and B for BM·BN outputs (N³/BM + N³/BN in all: a quarter fewer than
v09's 2N³/128). Hypothesis: with v09's pipeline the SM's issue slots are FMAs, shared loads and the
loop's overhead; fewer of the latter two per FMA raise the FMA share, provided one CTA of 8 warps
per SM (about 200 registers a thread) still hides the barrier and the loads' latency. The recorded
sweep at N = 4096 put 256 x 128 with 16 x 8 lanes first, 1.03x ahead of the 8 x 16 shapes; CONFIG
is that one.
"""

from __future__ import annotations

from pathlib import Path

import matmul_host_rect as host
import matmul_traffic as mt
import matmul_traffic_tc as mtc

SOURCE = Path(__file__).with_suffix(".cu")
CONFIG = {"BM": 256, "BN": 128, "WM": 128, "WN": 32, "S": 8}  # the recorded sweep's fastest at N = 4096 fp32
# (BM, BN, WM, WN, S): 8 x 16 a lane on 128 x 256 and 256 x 128; 16 x 8 (WM 128, WN 32) on 256 x 128;
# 8 x 16 on 128 x 128 (4 warps, two CTAs per SM); S = 16 at 128 x 128. S = 16 on the larger tiles needs
# 49,664 bytes of static shared memory, past the 48 KiB a kernel may declare statically
SWEEP = [{"BM": bm, "BN": bn, "WM": wm, "WN": wn, "S": s}
         for bm, bn, wm, wn, s in ((128, 256, 64, 64, 8), (256, 128, 64, 64, 8), (256, 128, 128, 32, 8),
                                   (128, 128, 64, 64, 8), (128, 128, 64, 64, 16))]


def lane_outputs(config: dict) -> tuple[int, int]:
    """A lane's rows and columns of C: (WM/32)·4 x (WN/16)·4."""
    return config["WM"] // 32 * 4, config["WN"] // 16 * 4


def traffic(n: int, config: dict = CONFIG) -> mt.Traffic:
    rows, cols = lane_outputs(config)
    return mtc.rectangular_tiled(n, config["BM"], config["BN"], rows, cols)


def make_kernel(config: dict):
    threads = (config["BM"] // config["WM"]) * (config["BN"] // config["WN"]) * 32
    return host.rect_tiled_kernel(SOURCE, "matmul_large_tiles", config, config["BM"], config["BN"], (threads,))


custom_kernel = make_kernel(CONFIG)
