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
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from reporter.cuda import load_module

if TYPE_CHECKING:  # torch is imported lazily: this module must import on a machine without it
    import torch

SOURCE = Path(__file__).with_suffix(".cu")
KERNEL_NAME = "attn_fwd_wgmma"
HEAD_DIM = 128
BLOCK_M = 128  # query rows per CTA (2 consumer warpgroups x 64)
BLOCK_N = 128  # key/value rows per tile
THREADS = 384
TILE_BYTES = 128 * 128 * 2
MAX_DYNAMIC_SMEM = 227 * 1024  # H100 opt-in limit per block
LOG2E = 1.4426950408889634

# wgmma matrix-descriptor strides in bytes, as the .cu defaults them (K-major Q/K, N-major V)
DESCRIPTOR_DEFAULTS: dict[str, int] = {"K_LBO": 16, "K_SBO": 1024, "V_LBO": 16384, "V_SBO": 1024}

CONFIG: dict[str, int] = {"STAGES": 2}
SWEEP: list[dict[str, int]] = [{"STAGES": 2}, {"STAGES": 3}]


def smem_bytes(stages: int) -> int:
    """Dynamic shared memory of one CTA: alignment slack, Q, K and V rings, mbarriers (as SMEM_BYTES in the .cu)."""
    return 1024 + (1 + 2 * stages) * TILE_BYTES + 8 * (1 + 4 * stages)


def check_inputs(data: Any) -> tuple[int, int, int, int]:
    """(B, H, S, D) of a valid (q, k, v), or ValueError; never touches the GPU."""
    if not isinstance(data, (tuple, list)) or len(data) != 3:
        raise ValueError(f"expected (q, k, v), got {type(data).__name__}")
    q, k, v = data
    for name, t in zip("qkv", (q, k, v)):
        if not (hasattr(t, "dtype") and hasattr(t, "shape") and hasattr(t, "is_contiguous")):
            raise ValueError(f"{name} is a {type(t).__name__}, not a tensor")
        if str(t.dtype) != "torch.float16":
            raise ValueError(f"{name} is {t.dtype}; this kernel takes float16")
        if t.dim() != 4:
            raise ValueError(f"{name} has shape {tuple(t.shape)}; expected (B, H, S, D)")
        if tuple(t.shape) != tuple(q.shape):
            raise ValueError(f"{name} has shape {tuple(t.shape)}, q has {tuple(q.shape)}")
        if not t.is_contiguous():
            raise ValueError(f"{name} is not contiguous")
    b, h, s, d = (int(x) for x in q.shape)
    if d != HEAD_DIM:
        raise ValueError(f"head dim {d}: this kernel is written for D = {HEAD_DIM}")
    if s <= 0 or s % BLOCK_N:
        raise ValueError(f"sequence length {s}: this kernel needs S a positive multiple of {BLOCK_N}")
    if b * h <= 0 or b * h > 65535:
        raise ValueError(f"B*H = {b * h}: the grid's y dimension takes 1..65535")
    if s >= 2**31 // HEAD_DIM:
        raise ValueError(f"sequence length {s} overflows the kernel's 32-bit row arithmetic")
    for name, t in zip("qkv", (q, k, v)):
        if not t.is_cuda:
            raise ValueError(f"{name} is on {t.device}, not on a CUDA device")
        if t.device != q.device:
            raise ValueError(f"{name} is on {t.device}, q on {q.device}")
        if t.data_ptr() % 16:
            raise ValueError(f"{name} is not 16-byte aligned (cp.async copies 16 bytes)")
    return b, h, s, d


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


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, config: Mapping[str, Any] = CONFIG,
              out: torch.Tensor | None = None) -> torch.Tensor:
    """softmax(q kᵀ / √D) v for fp16 (B, H, S, 128) tensors, S a multiple of 128."""
    check_inputs((q, k, v))
    if out is None:
        import torch

        out = torch.empty_like(q)
    launch(q, k, v, config=config, out=out)
    return out


def make_kernel(config: Mapping[str, Any]) -> Callable[[Sequence[torch.Tensor]], torch.Tensor]:
    cfg = dict(config)

    def run(data: Sequence[torch.Tensor]) -> torch.Tensor:
        check_inputs(data)  # once per call: a clear error before anything is unpacked or allocated
        q, k, v = data
        import torch

        out = torch.empty_like(q)
        launch(q, k, v, config=cfg, out=out)
        return out

    return run


custom_kernel = make_kernel(CONFIG)
