"""LSU EE 7722 (GPU microarchitecture), homework 2 (``../shared/references/lsu-ee7722-hw02.txt``):
the Q, K and V projections of a transformer layer, ``h_qkv = h_in · w_qkvᵀ``, in fp32.

**The problem.** ``h_qkv[i_ws][i_qkv] = Σ_{i_model} w_qkv[i_qkv][i_model] · h_in[i_ws][i_model]``,
every matrix row-major: ``w_qkv`` is d_qkv x d_model, ``h_in`` is d_ws x d_model (d_ws = samples x
words, a word's activations contiguous), ``h_qkv`` is d_ws x d_qkv. Both inputs are contiguous
along i_model, the sum's index: as a GEMM, C (M x N) = A (M x K) · Bᵀ with M = d_ws, N = d_qkv,
K = d_model, A and B both K-major. ``generate_input(...)`` returns ``(w_qkv, h_in)``;
``custom_kernel((w_qkv, h_in))`` returns ``h_qkv``, fp32 inputs, fp32 arithmetic (no TF32), fp32
output.

**Cases.** The homework's two layer shapes: ``layer0`` (d_model 32, d_qkv 96 = 3 x 4 heads x 8,
d_ws 29700 = 300 samples x 99 words) and ``layer1`` (d_model 512, d_qkv 1536 = 3 x 8 heads x 64,
d_ws 2970 = 30 x 99). Layer 0 is a thin product: 0.18 GFLOP on 15.2 MB (12 flops a byte, most of
it the 11.4 MB output), bound by memory and by the launch; layer 1 is a GEMM, 4.7 GFLOP on 27.5 MB
(170 flops a byte), bound by the fp32 rate. Tests at the same d_model and d_qkv on fewer words
(``test_layer0``: 3 x 99 rows; ``test_layer1``: 67 rows, odd), and ``test_odd``: the shape the
homework's text quotes for w_qkv, 108 x 36, on 1001 rows (no power of two in any dimension).

**Inputs.** Uniform in [-1, 1) from ``torch.Generator(device).manual_seed(seed)``, w_qkv first.

**Reference.** ``h_in.double() @ w_qkv.double().T``, rounded to fp32.

**Tolerance** (|out - ref| <= atol + rtol·|ref|, every element). An element is a sum of K =
d_model products of magnitude at most 1 (variance 1/9), so it has standard deviation
σ = sqrt(K)/3; fp32 summation in any order errs by about sqrt(K)·eps·σ (a random walk of roundings
of the partial sums): ``atol = 8·eps·K/3`` (eps = 2^-23; 1.6e-4 at K = 512), some twenty times
that, so a kernel's order of summation (cuBLAS's, a split of the sum over threads) does not matter,
and ``rtol = 2·eps`` for the output's own rounding. A skipped term moves an element by about
|w·h| ~ 1/4, three orders of magnitude past the allowance.

**Work model.** 2·M·N·K flops; bytes: both inputs read once and the output written once,
4·(N·K + M·K + M·N). The roof is the copy bandwidth where a case does under 50 flops a byte (layer
0, 12) and the fp32 matmul rate cuBLAS measured with TF32 off where it does more (layer 1, 170).

**Peer.** ``cublas``: ``torch.matmul(h_in, w_qkv.T)`` with TF32 off (restored after each call), the
homework's own comparison.

torch is imported inside the functions so that ``report build`` reads this file anywhere.
"""

from __future__ import annotations

from typing import Any

from reporter.assignments import Peer, Tolerance
from reporter.records import WorkModel

TITLE = "QKV projection (LSU EE 7722 hw 2): h_qkv = h_in · w_qkvᵀ, fp32"
SEED = 7722
CASES = {
    "test_layer0": dict(d_model=32, d_qkv=96, n_samples=3, n_words=99, seed=SEED),
    "test_layer1": dict(d_model=512, d_qkv=1536, n_samples=1, n_words=67, seed=SEED),
    "test_odd": dict(d_model=36, d_qkv=108, n_samples=7, n_words=143, seed=SEED),
    "layer0": dict(d_model=32, d_qkv=96, n_samples=300, n_words=99, seed=SEED),
    "layer1": dict(d_model=512, d_qkv=1536, n_samples=30, n_words=99, seed=SEED),
}
BENCHMARK_CASE = "layer0"
BENCHMARK_CASES = ["layer0", "layer1"]
PROFILE_BLOCK = "ee7722"  # the report's profile table in the homework's columns
FP32_EPS = 2.0**-23
K_LARGEST = max(c["d_model"] for c in CASES.values())
COMPUTE_BOUND_INTENSITY = 50.0  # flops a byte: above it the roof is the fp32 matmul rate, below it the copy

REFERENCE_RESULTS: list = []


def tolerance(d_model: int) -> Tolerance:
    """The tolerance of a case with ``d_model`` terms a sum (see the module's docstring)."""
    return Tolerance(rtol=2.0 * FP32_EPS, atol=8.0 * FP32_EPS * d_model / 3.0)


TOLERANCE = tolerance(K_LARGEST)  # the loosest; check_implementation holds each case to its own


def generate_input(d_model: int, d_qkv: int, n_samples: int, n_words: int, seed: int,
                   device: str = "cuda") -> tuple[Any, Any]:
    """``(w_qkv, h_in)``: d_qkv x d_model and (n_samples·n_words) x d_model, fp32, uniform in [-1, 1),
    from one generator seeded with ``seed`` (w_qkv drawn first)."""
    import torch

    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    w = torch.rand((d_qkv, d_model), generator=gen, device=device, dtype=torch.float32).mul_(2.0).sub_(1.0)
    h = torch.rand((n_samples * n_words, d_model), generator=gen, device=device, dtype=torch.float32)
    return w.contiguous(), h.mul_(2.0).sub_(1.0).contiguous()


def ref_kernel(data: tuple[Any, Any]) -> Any:
    """``h_in @ w_qkvᵀ`` in float64, rounded to fp32."""
    w, h = data
    return (h.double() @ w.double().T).float()


def check_implementation(data: tuple[Any, Any], output: Any) -> tuple[bool, str]:
    """``output`` within the tolerance of its case's d_model (``tolerance``)."""
    import torch

    w, h = data
    shape = (int(h.shape[0]), int(w.shape[0]))
    if not isinstance(output, torch.Tensor) or tuple(output.shape) != shape or output.dtype != torch.float32:
        return False, (f"h_qkv must be a float32 tensor of shape {shape}, got "
                       f"{getattr(output, 'shape', None)} {getattr(output, 'dtype', type(output).__name__)}")
    tol = tolerance(int(w.shape[1]))
    ref = (h.double() @ w.double().T)
    err = (output.double() - ref).abs()
    bad = ~(err <= tol.atol + tol.rtol * ref.abs())  # NaN fails
    if bool(bad.any()):
        first = int(torch.nonzero(bad.reshape(-1))[0])
        r, c = divmod(first, shape[1])
        return False, (f"{int(bad.sum())} of {shape[0] * shape[1]} elements out of tolerance (rtol {tol.rtol:.3g}, "
                       f"atol {tol.atol:.3g}); first at [{r}, {c}]: {float(output[r, c])} against {float(ref[r, c])}")
    return True, f"max error {float(err.max()):.3g} within atol {tol.atol:.3g} + rtol {tol.rtol:.3g}·|ref|"


def work_model(d_model: int, d_qkv: int, n_samples: int, n_words: int, seed: int = SEED) -> WorkModel:
    m, n, k = n_samples * n_words, d_qkv, d_model
    flops = 2.0 * m * n * k
    nbytes = 4.0 * (n * k + m * k + m * n)
    compute_bound = flops / nbytes > COMPUTE_BOUND_INTENSITY
    return WorkModel(
        flops=flops, bytes=nbytes, bytes_read=4.0 * (n * k + m * k),
        ceiling="matmul_fp32" if compute_bound else "copy",
        description=(f"2·M·N·K flops (M = d_ws = {m}, N = d_qkv = {n}, K = d_model = {k}); w_qkv and h_in read "
                     f"once and h_qkv written once, 4·(NK + MK + MN) bytes; {flops / nbytes:.0f} flops a byte, so "
                     + ("the roof is the fp32 matmul rate cuBLAS measured with TF32 off" if compute_bound else
                        "the roof is the copy bandwidth")),
    )


def _torch_matmul(data: tuple[Any, Any]) -> Any:
    """cuBLAS through torch.matmul, TF32 off (restored after the call)."""
    import torch

    w, h = data
    flags = torch.backends.cuda.matmul
    tf32 = flags.allow_tf32
    flags.allow_tf32 = False
    try:
        return torch.matmul(h, w.T)
    finally:
        flags.allow_tf32 = tf32


PEERS = {
    "cublas": Peer(_torch_matmul, "cuBLAS through torch.matmul(h_in, w_qkv.T), TF32 off"),
}
