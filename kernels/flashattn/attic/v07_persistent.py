"""v06's warp-specialized kernel made persistent: one program per SM loops over (Q block, head) tiles.

The grid is the number of SMs; program p takes tiles p, p + #SMs, p + 2·#SMs, ... Tiles
are numbered head-major (all Q blocks of head 0, then head 1, ...), so the ~132 tiles in
flight at any moment cover one or two heads and share their K and V through L2 instead of
each head's K/V being fetched from DRAM by programs scattered in time. The outer tile loop
is the warp-specialized one (``tl.range(..., warp_specialize=True)``): the producer
warpgroup runs ahead across tile boundaries, loading the next tile's Q block and first
K/V tiles while the two consumer warpgroups (64 rows each) finish the current tile's
softmax, normalise and store it, so the per-tile prologue and epilogue are hidden instead
of paid once per launched program. The per-tile body (``_attend_tile``) is v06's loop:
TMA loads, QKᵀ and PV on wgmma, exp2 online softmax with the scale folded into one FMA.
"""

import math

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

import v04_exp2

LOG2E = 1.4426950408889634

CONFIG = dict(BLOCK_M=128, BLOCK_N=128, num_warps=4, num_stages=2)

# num_warps is per partition (3 warpgroups run); 128×128 with 3 stages and 128×64 with 4 exceed shared memory
SWEEP = [
    dict(BLOCK_M=128, BLOCK_N=bn, num_warps=4, num_stages=st)
    for bn, stages in ((128, (2,)), (64, (2, 3)))
    for st in stages
]

_NUM_SMS = {}


@triton.jit
def _attend_tile(desc_q, desc_k, desc_v, O, N_CTX, qk_scale, tile_id, n_m,
                 HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    off_zh = tile_id // n_m
    start_m = tile_id % n_m
    row0 = off_zh * N_CTX
    q = desc_q.load([row0 + start_m * BLOCK_M, 0])
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    for start_n in range(0, N_CTX, BLOCK_N):
        k = desc_k.load([row0 + start_n, 0])
        qk = tl.dot(q, k.T)
        m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        p = tl.math.exp2(qk * qk_scale - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_ij = tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = desc_v.load([row0 + start_n, 0])
        acc = tl.dot(p.to(v.dtype), v, acc)
        l_i = l_i * alpha + l_ij
        m_i = m_ij
    acc = acc / l_i[:, None]
    offs_m = row0 + start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    tl.store(O + offs_m.to(tl.int64)[:, None] * HEAD_DIM + offs_d[None, :], acc.to(O.dtype.element_ty))


@triton.jit
def attention_fwd_kernel(
    desc_q, desc_k, desc_v, O, N_CTX, qk_scale, n_tiles,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    n_m = N_CTX // BLOCK_M
    for tile_id in tl.range(tl.program_id(0), n_tiles, tl.num_programs(0), warp_specialize=True):
        _attend_tile(desc_q, desc_k, desc_v, O, N_CTX, qk_scale, tile_id, n_m, HEAD_DIM, BLOCK_M, BLOCK_N)


def _num_sms(device) -> int:
    idx = torch.device(device).index or 0
    if idx not in _NUM_SMS:
        _NUM_SMS[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
    return _NUM_SMS[idx]


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, config: dict = CONFIG) -> torch.Tensor:
    b, h, s, d = q.shape
    block_m, block_n = config["BLOCK_M"], config["BLOCK_N"]
    if s % block_m or s % block_n:
        return v04_exp2.attention(q, k, v, v04_exp2.CONFIG)
    q, k, v = (x.contiguous() for x in (q, k, v))
    o = torch.empty_like(q)
    rows = b * h * s
    desc_q = TensorDescriptor(q, [rows, d], [d, 1], [block_m, d])
    desc_k = TensorDescriptor(k, [rows, d], [d, 1], [block_n, d])
    desc_v = TensorDescriptor(v, [rows, d], [d, 1], [block_n, d])
    n_tiles = b * h * (s // block_m)
    grid = (min(_num_sms(q.device), n_tiles),)
    attention_fwd_kernel[grid](
        desc_q, desc_k, desc_v, o, s, LOG2E / math.sqrt(d), n_tiles,
        HEAD_DIM=d, BLOCK_M=block_m, BLOCK_N=block_n,
        num_warps=config["num_warps"], num_stages=config["num_stages"],
    )
    return o


def make_kernel(config: dict):
    def kernel(data):
        q, k, v = data
        return attention(q, k, v, config)

    return kernel


def custom_kernel(data):
    q, k, v = data
    return attention(q, k, v, CONFIG)
