"""Stanford CS149 assignment 5, part 1: attention, softmax(Q K^T / sqrt(D)) V, in the course's terms.

The course's problem folder (github stanford-cs149/asst5-kernels, ``problems/flashattention``)
defines the interface, and this file follows it: ``generate_input(batch_size, num_heads,
head_dim, seq_len, seed)`` draws fp16 Q, K, V of shape (batch_size, num_heads, seq_len,
head_dim) with ``torch.randn`` from one CUDA generator seeded with ``seed``, in the order
Q, K, V, and returns the tuple ``(q, k, v)`` that ``custom_kernel`` receives; non-causal; the
output is fp16 of the same shape. The cases are the three lines of the course's test file,
seed 1118; the benchmark is (4, 64, 8192, 128).

The check is the course's rule, |out - ref| <= 1e-2 + 1e-2·|ref| elementwise with NaN and inf
counted as mismatches, against a reference computed in fp32 a few heads at a time. The
course's reference runs the same formula in fp16 (its S×S scores alone are 32 GiB at the
benchmark); the two references differ by about 1e-3, a tenth of the tolerance.
``COURSE`` names the folder, so a device session can run the course's harness on an export
(``report crosscheck``). Records made before the keys were the course's name them
``b, h, s, d``; they are read with the course's names.

torch is imported inside the functions so that `report build` reads this file on a
machine without it.
"""

from __future__ import annotations

import math

from reporter.assignments import CourseSource, Peer, ReferenceResult, Tolerance
from reporter.records import WorkModel

TITLE = "Flash attention: softmax(QKᵀ/√D)·V, fp16, non-causal"
SEED = 1118
CASES = {
    "test_small": dict(batch_size=1, num_heads=64, seq_len=1024, head_dim=128, seed=SEED),
    "test_medium": dict(batch_size=2, num_heads=64, seq_len=4096, head_dim=128, seed=SEED),
    "benchmark": dict(batch_size=4, num_heads=64, seq_len=8192, head_dim=128, seed=SEED),
}
BENCHMARK_CASE = "benchmark"
TOLERANCE = Tolerance(rtol=1e-2, atol=1e-2)
COURSE = CourseSource(repo="stanford-cs149/asst5-kernels", folder="problems/flashattention")
# how records made before the keys were the course's name them
LEGACY_CASE_KEYS = {"b": "batch_size", "h": "num_heads", "s": "seq_len", "d": "head_dim"}

REFERENCE_RESULTS = [
    ReferenceResult(label="CS149 leaderboard #1", gpu="H100", median_ms=13.617,
                    source="Stanford CS149 asst 5 leaderboard"),
]


def generate_input(batch_size: int, num_heads: int, head_dim: int, seq_len: int, seed: int,
                   device: str = "cuda"):
    """``(q, k, v)``, each fp16 (batch_size, num_heads, seq_len, head_dim), drawn in that order."""
    import torch

    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    shape = (batch_size, num_heads, seq_len, head_dim)
    q, k, v = (torch.randn(*shape, device=device, dtype=torch.float16, generator=gen) for _ in range(3))
    return q.contiguous(), k.contiguous(), v.contiguous()


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


def work_model(batch_size: int, num_heads: int, seq_len: int, head_dim: int, seed: int = SEED) -> WorkModel:
    b, h, s, d = batch_size, num_heads, seq_len, head_dim
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
