"""Shared-memory tiles: a CTA computes a BM x BN tile of h_qkv in BK-deep slices of i_model, each
thread a TM x TN block of it, with the tile's shape picked for the layer.

``v04_smem_tiles.cu``: the CTA reads each slice of h_in and w_qkv once, a quad at a time with a
row's quads on neighbouring lanes (coalesced), and stores it transposed in shared memory, so that
the inner loop reads a thread's rows and columns as float4s; outputs leave as float4s. Where v02
reads every weight once per thread block of outputs from L1, here a CTA reads it once per tile.
Layer 0 (d_model 32, d_qkv 96) takes 64 x 96 tiles, one slice deep: the whole of w_qkv and 64 rows
of h_in in 20 KiB, 464 CTAs of 384 threads; layer 1 takes 128 x 128 tiles in 16-deep slices,
8 x 8 outputs a thread (288 CTAs of 256 threads), the lecture's shared-memory tiling of matmul.
Hypothesis: layer 0 becomes a stream (the 11.4 MB of h_qkv written in full 16-byte runs) and
layer 1 a tiled GEMM; neither is pipelined yet (loads and FMAs of a slice alternate).
"""

from __future__ import annotations

from pathlib import Path

import qkv_host as host

SOURCE = Path(__file__).with_suffix(".cu")
THIN = {"BM": 64, "BN": 96, "BK": 32, "TM": 4, "TN": 4}  # d_qkv and d_model small: w_qkv whole in one tile
GEMM = {"BM": 128, "BN": 128, "BK": 16, "TM": 8, "TN": 8}
CONFIG = THIN


def pick(d_ws: int, d_qkv: int, d_model: int) -> dict:
    """THIN where all of w_qkv fits one tile's columns and slice (layer 0), else GEMM."""
    return THIN if d_qkv <= 128 and d_model <= 64 else GEMM


custom_kernel = host.tiled_kernel(SOURCE, "qkv_smem_tiles", pick)
