"""The Triton peer: the matmul of Triton's tutorial (03-matrix-multiplication), one program per
BLOCK_M x BLOCK_N tile of C, the tiles grouped GROUP_M rows at a time so that neighbouring
programs share A's rows and B's columns in the L2, an fp32 accumulator, and ``tl.dot`` on
BLOCK_K-wide slices with the loads pipelined over ``num_stages`` stages. fp16 inputs go to the
tensor cores; fp32 inputs are multiplied with ``input_precision="ieee"`` (plain fp32 FMA, no
TF32), so the peer computes what the versions compute. One configuration per dtype, fixed (the
tutorial's H100 choice for fp16; a 128 x 128 x 32 tile for fp32), not autotuned: an autotuner's
choice would be made in the untimed first call and recorded nowhere.

Edge tiles are masked, so any N works. Imported only on a GPU node (``assignment._triton_matmul``).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

CONFIGS = {
    torch.float16: dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=3),
    torch.float32: dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, num_warps=8, num_stages=3),
}


@triton.jit
def _matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                   IEEE: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        if IEEE:
            acc = tl.dot(a, b, acc, input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(c_ptr.dtype.element_ty)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` for 2-D fp16 or fp32 CUDA tensors (fp32 accumulate, the output in the inputs' dtype)."""
    if a.dtype != b.dtype or a.dtype not in CONFIGS:
        raise ValueError(f"the Triton peer takes two float16 or two float32 matrices, got {a.dtype} and {b.dtype}")
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        raise ValueError(f"inner sizes differ: {tuple(a.shape)} @ {tuple(b.shape)}")
    cfg = CONFIGS[a.dtype]
    c = torch.empty((m, n), device=a.device, dtype=a.dtype)
    grid = (triton.cdiv(m, cfg["BLOCK_M"]) * triton.cdiv(n, cfg["BLOCK_N"]),)
    _matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                         c.stride(1), BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"],
                         GROUP_M=cfg["GROUP_M"], IEEE=a.dtype == torch.float32, num_warps=cfg["num_warps"],
                         num_stages=cfg["num_stages"])
    return c
