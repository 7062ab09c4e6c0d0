"""The CUDA challenge's transform (``../shared/references/cuda-challenge-readme.txt``): a 1-D array
transformed at the speed of a copy, with a sum that never changes.

**The transform.** ``x`` holds ``n`` values in (0, 5) (fp32 or bf16). For each index ``i``, ``f`` is
sin, cos, log or exp as ``i % 4`` is 0, 1, 2 or 3, and

* ``y[i] = f(x[i])`` where ``i % 32 < 16``;
* ``y[i] = f(x[i - 16]) · f(x[i])`` where ``i % 32 >= 16`` (``i - 16`` is in the same 32-block).

``y`` has the dtype of ``x``. A length that is not a multiple of 32 ends in a partial block, whose
rules are the same.

**The sum.** In each group of four (``i % 4 == 0``), ``y[i]`` is the *sin term* and ``y[i + 1]`` the
*cos term* (for ``i % 32 >= 16`` both are products, as above). The sum is that of every sin term
whose cos term is greater than 0.5; a group cut off by the end of the array (no ``y[i + 1]``)
adds nothing. ``custom_kernel`` returns ``(y, s)`` with ``s`` a 0-d fp32 or fp64 tensor, and ``s``
must be **bit-identical from call to call** on one input: the harness calls each version
``REPEATS`` times and keeps every value (``repeat_value``).

**The reference** computes ``y`` and the sum in float64 from the input as stored (bf16 inputs are
exact in float64).

**The check** (``check_implementation``; why these tolerances):

* ``y``: |y - ref| ≤ atol + rtol·|ref|. fp32: rtol = atol = 1e-5. The fast intrinsics
  (``__sinf``, ``__cosf``: absolute error 2^-21.4 on [-π, π]; ``__expf``: 2 + 1.17·|x| ulp, 8 ulp
  at x = 5; ``__logf``: 3 ulp) and one rounded product stay an order of magnitude under it; atol
  covers the values near zero (cos near π/2, log near 1) where a small absolute error is a large
  relative one. bf16: rtol = 8e-3, atol = 1e-3: a bf16 output is rounded to 8 bits (2^-9 relative
  per rounding), and a product of two bf16 factors rounded again carries three roundings, 1.5 ulp
  = 5.9e-3.
* the sum: a cos term within δ = 2e-5 of 0.5 (atol + rtol of fp32, the bound on the cos term's own
  error) may fall on either side of the threshold in a correct kernel, so its sin term may or may
  not be counted: the allowed error is the sum of those sin terms' magnitudes, plus each counted
  term's fp32 tolerance, plus 4e-6 of the sum of their magnitudes
  for the accumulation (a pairwise fp32 sum of the 33.5 M terms of the benchmark case errs by at
  most log2(33.5 M) · 2^-24 ≈ 1.5e-6 of it; a plain fp32 running sum or a fp32 atomicAdd does
  not meet it, which is the point). The terms are held to fp32 precision in both dtypes: a bf16
  kernel compares and sums the terms as it computed them, before rounding them to bf16 for ``y``
  (with the rounded terms, the band around 0.5 where a cos term may fall either way would be the
  bf16 tolerance, 450 times as wide, and a sum off by many whole terms would pass).

**Work model.** HBM bytes: ``x`` read once and ``y`` written once, 2·n·itemsize. The challenge
counts 2.5·n·itemsize, the ``x[i - 16]`` reads as well (its "118 % of memcpy"); the description
gives that convention beside ours, labelled. The peers timed in the same run: a device-to-device
copy of the array (``copy_``: cudaMemcpyAsync, the ceiling the versions are held to: not a
transform, so not checked), torch eager, and ``torch.compile`` of it.

torch is imported inside the functions so that ``report build`` reads this file anywhere.
"""

from __future__ import annotations

from typing import Any

import transform_probes as tp  # beside this file; torch and CuPy only inside its probes

from reporter.assignments import Peer, Probe, ReferenceResult
from reporter.records import WorkModel

TITLE = "transform: sin, cos, log, exp by i % 4, times f(x[i-16]) where i % 32 >= 16; the sum of the sin terms"
SEED = 20261123
N_BENCHMARK = 128 << 20  # the challenge's own runs (134,217,728 values)
N_PROBLEM = 100_000_000  # the problem statement's 100M
CASES = {
    "test_tiny": dict(n=20, dtype="float32", seed=SEED),  # under one 32-block
    "test_ragged": dict(n=100_003, dtype="float32", seed=SEED),  # ends in a partial block and a partial group
    "test_small": dict(n=1 << 20, dtype="float32", seed=SEED),
    "test_tiny_bf16": dict(n=20, dtype="bfloat16", seed=SEED),
    "test_ragged_bf16": dict(n=100_003, dtype="bfloat16", seed=SEED),
    "n100m": dict(n=N_PROBLEM, dtype="float32", seed=SEED),
    "benchmark": dict(n=N_BENCHMARK, dtype="float32", seed=SEED),
    "n100m_bf16": dict(n=N_PROBLEM, dtype="bfloat16", seed=SEED),
    "benchmark_bf16": dict(n=N_BENCHMARK, dtype="bfloat16", seed=SEED),
}
BENCHMARK_CASE = "benchmark"
TOLERANCES = {"float32": (1e-5, 1e-5), "bfloat16": (8e-3, 1e-3)}  # (rtol, atol) of y, see above
SUM_ACCUMULATION = 4e-6  # of the sum of the counted terms' magnitudes
REPEATS = 20  # calls on one input whose sums must be bit-identical
TOLERANCE = None  # check_implementation judges (its tolerances depend on the dtype and the data)

REFERENCE_RESULTS = [
    ReferenceResult(label="CUDA challenge, 8.5_final_fp32_opt", gpu="H100", median_ms=0.376,
                    source="github RohitNagraj/CUDA-Challenge README (128M fp32; its memcpy: 0.446 ms)"),
]


def _dtype(name: str) -> Any:
    import torch

    try:
        return {"float32": torch.float32, "bfloat16": torch.bfloat16}[name]
    except KeyError:
        raise ValueError(f"dtype must be 'float32' or 'bfloat16', not {name!r}") from None


def generate_input(n: int, dtype: str, seed: int, device: str = "cuda") -> Any:
    """``x``: ``n`` values uniform in (0, 5) from ``torch.Generator(device).manual_seed(seed)``, drawn
    in fp32 and stored in ``dtype``. ``torch.rand`` can return 0, whose log is -inf: a zero is
    replaced by the smallest positive normal of the dtype."""
    import torch

    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    x = torch.rand(n, generator=gen, device=device, dtype=torch.float32).mul_(5.0)
    dt = _dtype(dtype)
    x = x.to(dt)
    return torch.where(x > 0, x, torch.tensor(torch.finfo(dt).tiny, dtype=dt, device=device)).contiguous()


def _transform64(x: Any) -> Any:
    """``y`` in float64 (see the module's docstring), for any length."""
    import torch

    v = x.to(torch.float64)
    n = v.numel()
    i = torch.arange(n, device=v.device)
    k = i % 4
    f = torch.where(k == 0, torch.sin(v), torch.where(k == 1, torch.cos(v), torch.where(k == 2, torch.log(v),
                                                                                          torch.exp(v))))
    upper = (i % 32) >= 16
    prev = torch.ones_like(f)
    prev[16:] = f[:-16] if n > 16 else prev[16:]
    return torch.where(upper, prev * f, f)


def _terms(y: Any) -> tuple[Any, Any]:
    """The sin terms ``y[4g]`` and their cos terms ``y[4g + 1]``; a group cut off before its cos
    term is left out."""
    c = y[1::4]
    return y[0::4][: c.numel()], c


def ref_kernel(x: Any) -> tuple[Any, Any]:
    """``(y, s)`` in float64."""
    import torch

    y = _transform64(x)
    s, c = _terms(y)
    return y, torch.where(c > 0.5, s, torch.zeros_like(s)).sum()


def repeat_value(output: Any) -> float:
    """The value that must be bit-identical from call to call: the sum."""
    return float(output[1])


def check_implementation(x: Any, output: Any) -> tuple[bool, str]:
    """``y`` within its dtype's tolerance of the float64 reference and the sum within the slack its
    threshold and accumulation allow (see the module's docstring)."""
    import torch

    if not isinstance(output, (tuple, list)) or len(output) != 2:
        return False, f"expected (y, sum), got {type(output).__name__}"
    y, s = output
    if not isinstance(y, torch.Tensor) or y.shape != x.shape or y.dtype != x.dtype:
        return False, (f"y must be a tensor of shape {tuple(x.shape)} and dtype {x.dtype}, got "
                       f"{getattr(y, 'shape', None)} {getattr(y, 'dtype', type(y).__name__)}")
    if not isinstance(s, torch.Tensor) or s.numel() != 1 or s.dtype not in (torch.float32, torch.float64):
        return False, "the sum must be a 1-element fp32 or fp64 tensor"
    rtol, atol = TOLERANCES["bfloat16" if x.dtype == torch.bfloat16 else "float32"]
    ref = _transform64(x)
    err = (y.to(torch.float64) - ref).abs()
    bad = ~(err <= atol + rtol * ref.abs())
    if bool(bad.any()):
        first = int(torch.nonzero(bad)[0])
        return False, (f"y: {int(bad.sum())} of {y.numel()} values out of tolerance (rtol {rtol:g}, atol {atol:g}); "
                       f"first at {first}: {float(y[first])} against {float(ref[first])}")
    st, ct = _terms(ref)
    counted = ct > 0.5
    want = float(torch.where(counted, st, torch.zeros_like(st)).sum())
    term_rtol, term_atol = TOLERANCES["float32"]  # the terms at fp32 precision in both dtypes (see above)
    delta = term_atol + term_rtol
    ambiguous = (ct - 0.5).abs() <= delta
    slack = (float(st[ambiguous].abs().sum()) + float((term_atol + term_rtol * st[counted].abs()).sum())
             + SUM_ACCUMULATION * float(st[counted].abs().sum()))
    got = float(s)
    if not abs(got - want) <= slack:
        return False, (f"sum {got!r} against {want!r} (float64): off by {abs(got - want):.6g}, allowed {slack:.6g} "
                       f"({int(ambiguous.sum())} cos terms within {delta:g} of 0.5)")
    return True, f"sum {got!r} against {want!r}, within {slack:.3g}"


def work_model(n: int, dtype: str, seed: int = SEED) -> WorkModel:
    size = 2 if dtype == "bfloat16" else 4
    return WorkModel(
        flops=0.0,
        bytes=float(2 * n * size),
        ceiling="copy",
        description=(f"x read once and y written once: 2·n·{size} bytes (the challenge counts 2.5·n·{size}, the "
                     "x[i-16] re-reads too, 25 % more); the transcendental functions are not counted as flops"),
    )


def _copy(x: Any) -> Any:
    """A device-to-device copy of the array (``copy_``: cudaMemcpyAsync)."""
    import torch

    return torch.empty_like(x).copy_(x)


def _eager(x: Any) -> tuple[Any, Any]:
    """The transform and the sum in torch operations on the 32-blocks, computed in fp32."""
    import torch

    n = x.numel()
    pad = (-n) % 32
    v = torch.nn.functional.pad(x.to(torch.float32), (0, pad), value=1.0).view(-1, 32)
    k = torch.arange(32, device=x.device) % 4
    f = torch.where(k == 0, torch.sin(v), torch.where(k == 1, torch.cos(v), torch.where(k == 2, torch.log(v),
                                                                                          torch.exp(v))))
    y = torch.cat([f[:, :16], f[:, :16] * f[:, 16:]], dim=1).reshape(-1)[:n]
    s, c = _terms(y)  # the terms as computed, in fp32, before y is rounded to its dtype
    total = torch.where(c > 0.5, s, torch.zeros_like(s)).to(torch.float64).sum()
    return y.to(x.dtype), total


_compiled: dict[str, Any] = {}


def _compiled_eager(x: Any) -> tuple[Any, Any]:
    """``torch.compile`` of the eager transform (compiled on the first, untimed call)."""
    import torch

    fn = _compiled.get("fn")
    if fn is None:
        fn = _compiled["fn"] = torch.compile(_eager, dynamic=False)
    return fn(x)


PEERS = {
    "memcpy": Peer(_copy, "device-to-device copy of the array (cudaMemcpyAsync through copy_): the ceiling",
                   checked=False),
    "torch_eager": Peer(_eager, "torch eager: the transform on 32-blocks in fp32, the sum in fp64"),
    "torch_compile": Peer(_compiled_eager, "torch.compile of the eager transform"),
}

# SM kernels that only copy x (probes.cu; `report run transform -c benchmark --probes`): what moving
# the bytes costs a kernel on the SMs, to set beside the memcpy peer timed in the same run; and
# v12's kernel without its sum, what the one-launch finish costs a call
PROBES = {
    "copy_vec4": Probe(tp.vec4(8), "x copied by 16-byte loads and stores, 8 blocks of 256 threads per SM "
                                   "(v02's access pattern without the arithmetic)"),
    "copy_bulk": Probe(tp.bulk(8192, 2, 4), "x copied by bulk loads and stores through 8 KB tiles, 2 stages, "
                                            "4 blocks per SM (v08's ring without the arithmetic)"),
    "copy_bulk_4k": Probe(tp.bulk(4096, 4, 8), "x copied by bulk loads and stores through 4 KB tiles, 4 stages, "
                                               "8 blocks per SM"),
    "ring_no_sum": Probe(tp.ring_no_sum(8192, 2, 4), "v12's kernel without the sum's finish (no partials, "
                                                     "ticket or last block), 8 KB tiles, 2 stages, 4 blocks per SM"),
}
