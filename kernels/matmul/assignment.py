"""CSE-234 lecture 6 (``../shared/references/cse234-lecture6-gpu-matmul.txt``): C = A·B for square
row-major matrices, in fp32 and in fp16, the way the lecture walks it from one thread per output
to shared-memory tiling and beyond (issue 32).

**The problem.** ``generate_input(n, dtype, seed)`` returns ``(a, b)``, two contiguous n x n
matrices on the GPU; ``custom_kernel((a, b))`` returns ``c = a @ b``, n x n, of the inputs'
dtype. fp32: fp32 inputs, fp32 arithmetic (no TF32), fp32 output. fp16: fp16 inputs, products
and sums in fp32 ("fp32 accumulate"), the result rounded once to fp16 (round to nearest even).
Every version takes both dtypes, as every transform version takes fp32 and bf16: the fp32
(CUDA-core) versions read and write fp16 and compute in fp32; the tensor-core versions are the
ones that make fp16 fast.

**Cases.** The benchmark, N = 4096 in fp32 (the lecture's and issue 32's size), and N = 1024,
4096 and 8192 in each dtype; tests at N = 127, 257 and 1000 in both dtypes (no tile size of 16,
32, 64 or 128 divides them, so every kernel runs its edge tiles, and 127 is not a multiple of 4,
so the vectorised loads fall back to guarded scalar ones) and N = 512 (whole tiles).

**Inputs.** Uniform in [-1, 1) from ``torch.Generator(device).manual_seed(seed)``, drawn in fp32
and stored in the case's dtype (an fp16 input is exactly what the kernel reads). A product has
magnitude at most 1 and variance 1/9, so an element of C is a sum of N terms with standard
deviation σ_C = sqrt(N)/3 (30 at N = 8192) and stays far inside fp16's range (65504).

**Reference.** ``a.double() @ b.double()``, rounded to the inputs' dtype: exact to 2^-53 before
the one rounding a correct kernel must also make.

**Tolerance** (``tolerance(n, dtype)``; |c - ref| <= atol + rtol·|ref|, every element):

* fp32. A sum of N products in fp32 adds one rounding (relative 2^-24 = eps/2 of the partial sum)
  per term; with signs at random the errors add like a random walk of N steps whose size is the
  partial sum, about σ_C, so the error of an element is of order sqrt(N)·eps·σ_C (a tiled or
  blocked order only shortens the walk). The allowance is ``atol = 8·sqrt(N)·eps·σ_C`` =
  8·eps·N/3 (about 2.6e-3 at N = 8192, 3.4e-5 at N = 127), with ``eps`` = 2^-23: some 20 times the
  random walk's standard deviation, so the largest of 67 M errors passes and a kernel order
  (cuBLAS's included) does not matter. ``rtol = 2·eps`` covers the output's own rounding. A real
  bug (a skipped k, a wrong row, an edge element left out) moves an element by about one product,
  |a·b| ~ 1/4 on average, a hundred times the allowance even at N = 8192.
* fp16. The output is rounded to fp16 (half an ulp, 2^-11 relative), and a sum that differs from
  the exact one by a little can round to the neighbouring fp16 value: ``rtol = 2^-9``, two ulps.
  ``atol`` is four times the fp32 one: the products of fp16 inputs are exact in fp32, but tensor
  cores accumulate with truncation, not round-to-nearest, and cuBLAS may split k.
* ``TOLERANCE``, the one tolerance the harness and ``report`` print, is the loosest of the cases
  (fp16 at N = 8192); ``check_implementation`` then holds each case to its own dtype and N.

**Work model.** 2N³ flops (a multiply and an add per term); bytes: A and B read once and C
written once, 3·N²·itemsize. The ceiling is the measured dense matmul rate of the dtype
(``report ceilings``: cuBLAS through ``torch.matmul``; fp32 with TF32 off, the CUDA-core rate;
fp16 on the tensor cores). The fp32 figure is what cuBLAS reaches, about 51 TFLOP/s on our H100,
below the CUDA cores' 67 TFLOP/s datasheet peak (132 SMs x 128 FMA x 2 x 1.98 GHz): a version
can pass it, and the description says so.

**Peers** timed in the same run: ``cublas``, ``torch.matmul`` with TF32 off for fp32 (and fp16's
reduced-precision reductions off, so that it computes what the versions compute; both settings
restored after each call); ``triton``, the Triton tutorial's matmul (``matmul_triton.py``: fp16 on
the tensor cores with fp32 accumulate; fp32 with ``input_precision="ieee"``, plain FMA).

**Traffic model.** Each version's ``traffic(n)`` gives the lecture's global and shared-memory
reads for its tile parameters (``matmul_traffic.py``), for the report to set beside the profiles'
DRAM, L2 and shared bytes.

torch is imported inside the functions so that ``report build`` reads this file anywhere.
"""

from __future__ import annotations

from typing import Any

from reporter.assignments import Peer, Tolerance
from reporter.records import WorkModel

TITLE = "Matmul: C = A·B, square, row-major, fp32 and fp16 (fp32 accumulate)"
SEED = 234
CASES = {
    "test_127": dict(n=127, dtype="float32", seed=SEED),
    "test_257": dict(n=257, dtype="float32", seed=SEED),
    "test_512": dict(n=512, dtype="float32", seed=SEED),
    "test_1000": dict(n=1000, dtype="float32", seed=SEED),
    "test_127_fp16": dict(n=127, dtype="float16", seed=SEED),
    "test_257_fp16": dict(n=257, dtype="float16", seed=SEED),
    "test_1000_fp16": dict(n=1000, dtype="float16", seed=SEED),
    "n1024": dict(n=1024, dtype="float32", seed=SEED),
    "benchmark": dict(n=4096, dtype="float32", seed=SEED),
    "n8192": dict(n=8192, dtype="float32", seed=SEED),
    "n1024_fp16": dict(n=1024, dtype="float16", seed=SEED),
    "benchmark_fp16": dict(n=4096, dtype="float16", seed=SEED),
    "n8192_fp16": dict(n=8192, dtype="float16", seed=SEED),
}
BENCHMARK_CASE = "benchmark"
# the tensor-core versions (CASES_WHERE fp16) stand on N = 4096 in fp16
BENCHMARK_CASES = ["benchmark", "benchmark_fp16"]
FP32_EPS = 2.0**-23
FP16_RTOL = 2.0**-9
N_LARGEST = max(c["n"] for c in CASES.values())

# the figures (2.64 ms fp32 with TF32 off, 0.181 ms fp16) were measured on our card, not
# published: they are for the records to reproduce, not reference results
REFERENCE_RESULTS: list = []


def tolerance(n: int, dtype: str) -> Tolerance:
    """The tolerance of one case (see the module's docstring)."""
    atol32 = 8.0 * FP32_EPS * n / 3.0  # 8 · sqrt(N) · eps · σ_C, σ_C = sqrt(N)/3
    if dtype == "float32":
        return Tolerance(rtol=2.0 * FP32_EPS, atol=atol32)
    if dtype == "float16":
        return Tolerance(rtol=FP16_RTOL, atol=4.0 * atol32)
    raise ValueError(f"dtype must be 'float32' or 'float16', not {dtype!r}")


TOLERANCE = tolerance(N_LARGEST, "float16")  # the loosest; check_implementation applies each case's own


def _dtype(name: str) -> Any:
    import torch

    try:
        return {"float32": torch.float32, "float16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype must be 'float32' or 'float16', not {name!r}") from None


def _dtype_name(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")


def generate_input(n: int, dtype: str, seed: int, device: str = "cuda") -> tuple[Any, Any]:
    """``(a, b)``: n x n each, uniform in [-1, 1), drawn in fp32 from one generator seeded with
    ``seed`` (a first, then b) and stored in ``dtype``."""
    import torch

    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    a = torch.rand((n, n), generator=gen, device=device, dtype=torch.float32).mul_(2.0).sub_(1.0)
    b = torch.rand((n, n), generator=gen, device=device, dtype=torch.float32).mul_(2.0).sub_(1.0)
    dt = _dtype(dtype)
    return a.to(dt).contiguous(), b.to(dt).contiguous()


def ref_kernel(data: tuple[Any, Any]) -> Any:
    """``a @ b`` in float64, rounded to the inputs' dtype."""
    a, b = data
    return (a.double() @ b.double()).to(a.dtype)


def check_implementation(data: tuple[Any, Any], output: Any) -> tuple[bool, str]:
    """``output`` within the tolerance of its case's dtype and N (``tolerance``)."""
    import torch

    a, _ = data
    if not isinstance(output, torch.Tensor) or output.shape != a.shape or output.dtype != a.dtype:
        return False, (f"c must be a tensor of shape {tuple(a.shape)} and dtype {a.dtype}, got "
                       f"{getattr(output, 'shape', None)} {getattr(output, 'dtype', type(output).__name__)}")
    n = int(a.shape[0])
    tol = tolerance(n, _dtype_name(a.dtype))
    ref = (a.double() @ data[1].double()).to(a.dtype).double()
    err = (output.double() - ref).abs()
    bad = ~(err <= tol.atol + tol.rtol * ref.abs())  # NaN fails
    if bool(bad.any()):
        first = int(torch.nonzero(bad.reshape(-1))[0])
        r, c = divmod(first, n)
        return False, (f"{int(bad.sum())} of {n * n} elements out of tolerance (rtol {tol.rtol:.3g}, atol "
                       f"{tol.atol:.3g}); first at [{r}, {c}]: {float(output[r, c])} against {float(ref[r, c])}")
    return True, f"max error {float(err.max()):.3g} within atol {tol.atol:.3g} + rtol {tol.rtol:.3g}·|ref|"


def work_model(n: int, dtype: str, seed: int = SEED) -> WorkModel:
    size = 2 if dtype == "float16" else 4
    ceiling = "matmul_fp16" if dtype == "float16" else "matmul_fp32"
    what = ("the fp16 tensor-core rate cuBLAS measured" if dtype == "float16" else
            "the fp32 rate cuBLAS measured with TF32 off (CUDA cores; below their datasheet peak, so a "
            "version may pass it)")
    return WorkModel(
        flops=2.0 * n**3,
        bytes=float(3 * n * n * size),
        ceiling=ceiling,
        description=(f"2·N³ flops (a multiply and an add per term); A and B read once and C written once, "
                     f"3·N²·{size} bytes; the ceiling is {what}"),
    )


def _torch_matmul(data: tuple[Any, Any]) -> Any:
    """cuBLAS through torch.matmul, TF32 and fp16 reduced-precision reductions off (restored after)."""
    import torch

    a, b = data
    flags = torch.backends.cuda.matmul
    tf32, reduced = flags.allow_tf32, flags.allow_fp16_reduced_precision_reduction
    flags.allow_tf32 = False
    flags.allow_fp16_reduced_precision_reduction = False
    try:
        return torch.matmul(a, b)
    finally:
        flags.allow_tf32 = tf32
        flags.allow_fp16_reduced_precision_reduction = reduced


def _triton_matmul(data: tuple[Any, Any]) -> Any:
    """The Triton tutorial's matmul (matmul_triton.py, imported here: triton is a GPU-side library)."""
    import matmul_triton  # beside this file

    return matmul_triton.matmul(*data)


PEERS = {
    "cublas": Peer(_torch_matmul, "cuBLAS through torch.matmul (fp32: TF32 off; fp16: fp32 accumulate, "
                                  "no reduced-precision reduction)"),
    "triton": Peer(_triton_matmul, "Triton's tutorial matmul (fp16: tensor cores, fp32 accumulate; fp32: "
                                   "input_precision='ieee', no TF32)"),
}

