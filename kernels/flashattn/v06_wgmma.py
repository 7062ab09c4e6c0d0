"""FlashAttention-3's shape in hand-written sm_90a CUDA: a producer warpgroup feeding two wgmma consumer warpgroups.

One CTA of 384 threads (three warpgroups) owns a 128-row Q block of one (batch, head); the
grid is (S/128, B·H). Warpgroup 0 is the producer: it gives registers back
(``setmaxnreg.dec`` to 24) and copies the Q tile once, then every 128-row K and V tile of
the head, into shared memory with 16-byte ``cp.async``, writing the 128-byte-swizzled
layout that the tensor cores read (a 128×128 fp16 tile is two 64-column halves of
128 B rows, 16-byte chunk c of row r stored at chunk c ^ (r mod 8)). K and V each have a
ring of ``STAGES`` 32 KB buffers; completion of a tile is signalled on its stage's "full"
mbarrier by ``cp.async.mbarrier.arrive.noinc`` from each of the 128 producer threads.
Warpgroups 1 and 2 are the consumers (``setmaxnreg.inc`` to 240), 64 query rows each.
Per K/V tile a consumer waits on the full barrier, computes S = Q·Kᵀ (64×128, fp32)
with eight ``wgmma.mma_async m64n128k16`` reading both operands from shared memory through
matrix descriptors, releases the K stage (one arrive per warp on the "empty" barrier),
runs the online softmax in registers (exp2 with 1/√D·log2 e folded into one FMA; row max
and sum across the four lanes that share a row), rescales O, and accumulates
O += P·V with eight more wgmma whose A operand is P straight from registers (the fp32
accumulator layout of S, packed pairwise to fp16, is the A-fragment layout) and whose B
operand is V read N-major (transposed) from the same swizzled buffers; then it releases the
V stage. The epilogue divides by the row sums and stores fp16 from registers. Every
mbarrier wait traps after 2 s (``HANG_TRAP``) so a deadlock fails the launch instead of
hanging the process. ``DBG_MODE`` 1 and 2 build the kernel that stops after S of the first
tile, or after fp16(S/√D)·V of the first tile, for ``wgmma_selftest.py``; the descriptor
strides are defines (``K_LBO``, ``K_SBO``, ``V_LBO``, ``V_SBO``) so that test can try
alternatives. ``CONFIG`` picks the ring depth; ``SWEEP`` tries 2 and 3 stages (3 stages
use 224 KB of the 227 KB of shared memory). Two more defines stay at their defaults here:
``PROXY_FENCE`` (1: each consumer thread executes ``fence.proxy.async`` after acquiring a
stage, because ``cp.async`` writes through the generic proxy and wgmma reads through the
async proxy) and ``INTRA_WG_OVERLAP`` (0: FlashAttention-3's overlap of the next Q·Kᵀ and
its softmax with the current P·V inside one warpgroup, a second idea for a later version;
the self-test checks and times both).

The idea over v05: specialise warps. v04 and v05 run the two matrix products and the
softmax as one instruction stream per program, and the profiles showed the same compute
throughput with very different memory traffic: the stream, not the bytes, is the limit.
Here loads live in their own warpgroup, so address arithmetic and copy issue leave the
math warps, and the two consumer warpgroups are independent instruction streams: while
one computes exponentials the other's wgmma keeps the tensor cores busy. Each consumer
keeps its 64×128 fp32 O and S accumulators and P in registers without spilling; the
registers the producer gives back are headroom for the overlaps a later version adds.
Hypothesis: this overlap, which Triton's warp specialisation did not
deliver on our card (the attic versions hung), closes a good part of the gap between v04
and cuDNN; the FlashAttention-3 paper's ablation puts this structure clearly above a
single-stream kernel even before its explicit ping-pong schedule between the consumer
warpgroups and the overlap of the next Q·Kᵀ with the current softmax, which are left for
a later version.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from reporter.cuda import load_module
from sm90_host import BLOCK_M, BLOCK_N, HEAD_DIM, LOG2E, MAX_DYNAMIC_SMEM, TILE_BYTES, check_inputs, kernel_maker

if TYPE_CHECKING:  # torch is imported lazily: this module must import on a machine without it
    import torch

SOURCE = Path(__file__).with_suffix(".cu")
KERNEL_NAME = "attn_fwd_wgmma"
THREADS = 384

# wgmma matrix-descriptor strides in bytes, as the .cu defaults them (K-major Q/K, N-major V)
DESCRIPTOR_DEFAULTS: dict[str, int] = {"K_LBO": 16, "K_SBO": 1024, "V_LBO": 16384, "V_SBO": 1024}

CONFIG: dict[str, int] = {"STAGES": 2}
SWEEP: list[dict[str, int]] = [{"STAGES": 2}, {"STAGES": 3}]


__all__ = ["BLOCK_M", "BLOCK_N", "HEAD_DIM", "CONFIG", "SWEEP", "check_inputs", "custom_kernel", "make_kernel"]


def smem_bytes(stages: int) -> int:
    """Dynamic shared memory of one CTA: alignment slack, Q, K and V rings, mbarriers (as SMEM_BYTES in the .cu)."""
    return 1024 + (1 + 2 * stages) * TILE_BYTES + 8 * (1 + 4 * stages)


def launch(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, config: Mapping[str, Any] = CONFIG,
           defines: Mapping[str, Any] | None = None, out: torch.Tensor | None = None,
           dbg: torch.Tensor | None = None) -> None:
    """Compile (once) and launch the kernel with ``config`` plus extra ``defines`` (e.g. DBG_MODE)
    on torch's current stream. ``out`` (fp16, like q) receives O in DBG_MODE 0; ``dbg``
    (fp32, [B*H*S, 128]) receives the debug output of DBG_MODE 1 and 2."""
    b, h, s, d = check_inputs((q, k, v))
    all_defines = {**config, **(defines or {})}
    stages = int(all_defines.get("STAGES", 2))
    mode = int(all_defines.get("DBG_MODE", 0))
    nbytes = smem_bytes(stages)
    if nbytes > MAX_DYNAMIC_SMEM:
        raise ValueError(f"STAGES={stages} needs {nbytes} B of shared memory, over {MAX_DYNAMIC_SMEM}")
    if mode == 0 and (out is None or tuple(out.shape) != tuple(q.shape) or str(out.dtype) != "torch.float16"
                      or not out.is_contiguous()):
        raise ValueError("DBG_MODE 0 needs out: a contiguous float16 tensor shaped like q")
    if mode in (1, 2) and (dbg is None or dbg.numel() != b * h * s * d or str(dbg.dtype) != "torch.float32"
                           or not dbg.is_contiguous()):
        raise ValueError(f"DBG_MODE {mode} needs dbg: a contiguous float32 tensor of B*H*S*D elements")
    kernel = load_module(SOURCE, defines=all_defines, device_index=q.device.index).kernel(KERNEL_NAME)
    kernel((s // BLOCK_M, b * h), (THREADS,), q, k, v, out, dbg, np.int32(s),
           np.float32(LOG2E / math.sqrt(d)), np.float32(1.0 / math.sqrt(d)), shared_mem=nbytes)


make_kernel = kernel_maker(launch, check_inputs)
custom_kernel = make_kernel(CONFIG)
