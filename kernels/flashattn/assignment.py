"""Stanford CS149 assignment 5, part 1: attention, softmax(Q K^T / sqrt(D)) V.

fp16 Q, K, V of shape (B, H, S, D), drawn with ``torch.randn`` from one seeded CUDA
generator in the order Q, K, V; non-causal; the output is (B, H, S, D) fp16, checked with
rtol = atol = 1e-2 against a reference computed in fp32. The benchmark case is
(4, 64, 8192, 128), seed 1118.

torch is imported inside the functions so that `report build` reads this file on a
machine without it.
"""

from __future__ import annotations

import math

from reporter.assignments import Peer, ReferenceResult, Tolerance
from reporter.records import WorkModel

TITLE = "Flash attention: softmax(QKᵀ/√D)·V, fp16, non-causal"
SEED = 1118
CASES = {
    "test_small": dict(b=1, h=64, s=1024, d=128, seed=SEED),
    "test_medium": dict(b=2, h=64, s=4096, d=128, seed=SEED),
    "benchmark": dict(b=4, h=64, s=8192, d=128, seed=SEED),
}
BENCHMARK_CASE = "benchmark"
TOLERANCE = Tolerance(rtol=1e-2, atol=1e-2)

REFERENCE_RESULTS = [
    ReferenceResult(label="CS149 leaderboard #1", gpu="H100", median_ms=13.617,
                    source="Stanford CS149 asst 5 leaderboard"),
]


def generate_input(b: int, h: int, s: int, d: int, seed: int, device: str = "cuda"):
    import torch

    gen = torch.Generator(device=device).manual_seed(seed)
    q = torch.randn(b, h, s, d, dtype=torch.float16, device=device, generator=gen)
    k = torch.randn(b, h, s, d, dtype=torch.float16, device=device, generator=gen)
    v = torch.randn(b, h, s, d, dtype=torch.float16, device=device, generator=gen)
    return q, k, v


def ref_kernel(data, heads_per_chunk: int = 8):
    """fp32 attention, a few heads at a time so the S x S scores fit in memory."""
    import torch

    q, k, v = data
    b, h, s, d = q.shape
    scale = 1.0 / math.sqrt(d)
    out = torch.empty_like(q)
    qf, kf, vf = (x.reshape(b * h, s, d) for x in (q, k, v))
    of = out.view(b * h, s, d)
    for i in range(0, b * h, heads_per_chunk):
        sl = slice(i, i + heads_per_chunk)
        scores = torch.matmul(qf[sl].float(), kf[sl].float().transpose(1, 2)) * scale
        p = torch.softmax(scores, dim=-1)
        del scores
        of[sl] = torch.matmul(p, vf[sl].float()).to(q.dtype)
        del p
    return out


def work_model(b: int, h: int, s: int, d: int, seed: int = SEED) -> WorkModel:
    elem = 2  # fp16
    return WorkModel(
        flops=4.0 * b * h * s * s * d,
        bytes=4.0 * b * h * s * d * elem,
        ceiling="matmul_fp16",
        description="two S×S×D matrix products per head (QKᵀ and PV), 2 flops per multiply-add; "
                    "bytes: Q, K, V read once and O written once",
    )


def _sdpa(backend_name: str):
    def run(data):
        import torch
        from torch.nn.attention import SDPBackend, sdpa_kernel

        q, k, v = data
        with sdpa_kernel(getattr(SDPBackend, backend_name)):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=False)

    return run


PEERS = {
    "sdpa_flash": Peer(_sdpa("FLASH_ATTENTION"), "torch SDPA, FlashAttention-2 backend"),
    "sdpa_cudnn": Peer(_sdpa("CUDNN_ATTENTION"), "torch SDPA, cuDNN backend"),
    "sdpa_efficient": Peer(_sdpa("EFFICIENT_ATTENTION"), "torch SDPA, memory-efficient (xFormers) backend"),
}
