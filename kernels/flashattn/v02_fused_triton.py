"""A first fused flash-attention kernel in Triton: one program per (Q block, batch·head).

Each program loads its BLOCK_M rows of Q once into registers and walks the whole key
sequence in BLOCK_N steps. Per step it loads a Kᵀ tile and a V tile, computes the scores
S = Q Kᵀ·scale on the tensor cores in fp32, and keeps an online softmax: the running row
maximum m, the running denominator l, and the fp32 output accumulator, rescaled by
exp(m_old - m_new) whenever the maximum grows. P is cast to fp16 for the second product
P·V. At the end each row is divided by l and stored as fp16. The S × S matrix never
leaves the chip, so DRAM traffic falls to Q, K, V read (K and V once per Q block) and O
written once. Block sizes here are a first guess (64 × 64, 4 warps, 2 stages).
"""

import math

import torch
import triton
import triton.language as tl

CONFIG = dict(BLOCK_M=64, BLOCK_N=64, num_warps=4, num_stages=2)


@triton.jit
def attention_fwd_kernel(
    Q, K, V, O,
    stride_qz, stride_qh, stride_qm, stride_qd,
    stride_kz, stride_kh, stride_kn, stride_kd,
    stride_vz, stride_vh, stride_vn, stride_vd,
    stride_oz, stride_oh, stride_om, stride_od,
    H, N_CTX, sm_scale,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, EVEN_N: tl.constexpr,
):
    # program (m, zh) owns rows [m*BLOCK_M, (m+1)*BLOCK_M) of head h of batch z
    start_m = tl.program_id(0)
    off_zh = tl.program_id(1)
    off_z = off_zh // H
    off_h = off_zh % H
    q_base = Q + off_z * stride_qz + off_h * stride_qh
    k_base = K + off_z * stride_kz + off_h * stride_kh
    v_base = V + off_z * stride_vz + off_h * stride_vh
    o_base = O + off_z * stride_oz + off_h * stride_oh

    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    row_ok = offs_m[:, None] < N_CTX

    q = tl.load(q_base + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qd, mask=row_ok, other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)

    for start_n in range(0, N_CTX, BLOCK_N):
        cols = start_n + offs_n
        kt_ptrs = k_base + cols[None, :] * stride_kn + offs_d[:, None] * stride_kd
        v_ptrs = v_base + cols[:, None] * stride_vn + offs_d[None, :] * stride_vd
        if EVEN_N:
            kt = tl.load(kt_ptrs)
        else:
            kt = tl.load(kt_ptrs, mask=cols[None, :] < N_CTX, other=0.0)
        s = tl.dot(q, kt) * sm_scale
        if not EVEN_N:
            s = tl.where(cols[None, :] < N_CTX, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        if EVEN_N:
            v = tl.load(v_ptrs)
        else:
            v = tl.load(v_ptrs, mask=cols[:, None] < N_CTX, other=0.0)
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_new

    acc = acc / l_i[:, None]
    tl.store(o_base + offs_m[:, None] * stride_om + offs_d[None, :] * stride_od, acc.to(O.dtype.element_ty), mask=row_ok)


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, config: dict = CONFIG) -> torch.Tensor:
    b, h, s, d = q.shape
    o = torch.empty_like(q)
    block_m, block_n = config["BLOCK_M"], config["BLOCK_N"]
    grid = (triton.cdiv(s, block_m), b * h)
    attention_fwd_kernel[grid](
        q, k, v, o,
        *q.stride(), *k.stride(), *v.stride(), *o.stride(),
        h, s, 1.0 / math.sqrt(d),
        HEAD_DIM=d, BLOCK_M=block_m, BLOCK_N=block_n, EVEN_N=(s % block_n == 0),
        num_warps=config["num_warps"], num_stages=config["num_stages"],
    )
    return o


def custom_kernel(data):
    q, k, v = data
    return attention(q, k, v)
