"""An output against its reference, elementwise: a tolerance (|out - ref| <= atol + rtol * |ref|) or
an exact match, NaN and inf counted, tuples compared part by part, into a
:class:`~reporter.records.CheckResult`.

The harness's check (:mod:`reporter.harness.check`) judges a version's output with it; a kernel's own
self-test (``kernels/flashattn/wgmma_selftest.py``) judges a debug launch the same way without
importing the harness.
"""

from __future__ import annotations

import math
from typing import Any

from .assignments import Tolerance
from .records import CheckResult

#: no tolerance at all: every element must match (a part compared for its shape only uses it too)
NO_TOLERANCE = Tolerance(rtol=0.0, atol=0.0)


def compare(out: Any, ref: Any, tol: Tolerance | tuple[Tolerance | None, ...], *,
            seed: int | None = None, check_dtype: bool = True) -> CheckResult:
    """Check ``out`` against ``ref`` elementwise: |out - ref| <= atol + rtol * |ref|, or exact.

    A reference that is a tuple (an output of several tensors: an array and a sum over it)
    wants an output tuple of the same length, compared part by part; ``tol`` is then one
    tolerance for every part or one per part (``None``: the part is compared for shape only, left
    to the assignment's ``check_implementation``). The result adds the parts' counts and keeps the
    first part's error figures; its message names the part that failed.

    An output of another dtype than the reference's fails (a float32 output where the reference is
    float16 would pass the tolerance, and fail the course's harness), unless ``check_dtype`` is
    False: a part compared for shape only, or an assignment whose ``check_implementation`` judges
    against a wider reference."""
    if isinstance(ref, (tuple, list)):
        return _compare_parts(out, ref, tol, seed=seed, check_dtype=check_dtype)
    assert isinstance(tol, Tolerance), "one tolerance for a single tensor"
    import torch

    if not isinstance(out, torch.Tensor):
        return CheckResult(passed=False, exact=tol.exact, rtol=tol.rtol, atol=tol.atol, n_elements=0,
                           mismatches=0, shape_ok=False, seed=seed,
                           message=f"output is a {type(out).__name__}, expected a tensor")
    n = ref.numel()
    if tuple(out.shape) != tuple(ref.shape):
        return CheckResult(passed=False, exact=tol.exact, rtol=tol.rtol, atol=tol.atol, n_elements=n,
                           mismatches=n, shape_ok=False, seed=seed,
                           message=f"shape {tuple(out.shape)} != expected {tuple(ref.shape)}")
    if check_dtype and out.dtype != ref.dtype:
        return CheckResult(passed=False, exact=tol.exact, rtol=tol.rtol, atol=tol.atol, n_elements=n,
                           mismatches=n, shape_ok=True, seed=seed,
                           message=f"dtype {str(out.dtype).removeprefix('torch.')}, expected "
                                   f"{str(ref.dtype).removeprefix('torch.')} (the reference's)")
    if out.device != ref.device:
        out = out.to(ref.device)
    nan_count = inf_count = 0
    if out.is_floating_point():
        nan_count = int(torch.isnan(out).sum())
        inf_count = int(torch.isinf(out).sum())
    if tol.exact:
        diff = out.to(torch.int64) - ref.to(torch.int64) if not out.is_floating_point() else (out - ref)
        bad = diff != 0
        mismatches = int(bad.sum())
        fin = torch.isfinite(diff) if diff.is_floating_point() else None
        if fin is not None and bool(fin.any()):
            max_abs = float(diff[fin].abs().max())
        else:
            max_abs = float(diff.abs().max()) if n else 0.0
        max_rel = None
    else:
        o, r = out.double() if out.device.type == "cpu" else out.float(), ref.double() if ref.device.type == "cpu" else ref.float()
        err = (o - r).abs()
        allowed = tol.atol + tol.rtol * r.abs()
        bad = ~(err <= allowed)  # NaN compares False, so NaN counts as a mismatch
        mismatches = int(bad.sum())
        finite = torch.isfinite(err)
        max_abs = float(err[finite].max()) if bool(finite.any()) else float("nan")
        rel = err / r.abs().clamp_min(1e-6)
        max_rel = float(rel[finite].max()) if bool(finite.any()) else float("nan")
    passed = mismatches == 0 and nan_count == 0 and inf_count == 0
    message = "ok" if passed else _describe_failure(bad, mismatches, nan_count, inf_count, n)
    # a record holds finite numbers only: the largest errors are over the finite elements, None
    # when none is finite (nan_count and inf_count say how many are not)
    max_abs, max_rel = _finite_or_none(max_abs), _finite_or_none(max_rel)
    return CheckResult(passed=passed, exact=tol.exact, rtol=None if tol.exact else tol.rtol,
                       atol=None if tol.exact else tol.atol, n_elements=n, mismatches=mismatches,
                       nan_count=nan_count, inf_count=inf_count, max_abs_error=max_abs,
                       max_rel_error=max_rel, seed=seed, message=message)


def _finite_or_none(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def _compare_parts(out: Any, ref: tuple | list, tol: Tolerance | tuple[Tolerance | None, ...], *,
                   seed: int | None, check_dtype: bool = True) -> CheckResult:
    n = len(ref)
    tols = tuple(tol) if isinstance(tol, (tuple, list)) else (tol,) * n
    if len(tols) != n:
        raise ValueError(f"TOLERANCE has {len(tols)} parts for an output of {n}")
    if not isinstance(out, (tuple, list)) or len(out) != n:
        what = f"a {type(out).__name__}" + (f" of {len(out)}" if isinstance(out, (tuple, list)) else "")
        return CheckResult(passed=False, exact=False, n_elements=0, mismatches=0, shape_ok=False, seed=seed,
                           message=f"output is {what}, expected a tuple of {n} tensors")
    parts = [compare(o, r, t if t is not None else NO_TOLERANCE, seed=seed, check_dtype=check_dtype and t is not None)
             for o, r, t in zip(out, ref, tols, strict=True)]
    for k, (p, t) in enumerate(zip(parts, tols, strict=True)):
        if t is None and p.shape_ok:  # shape only: the assignment's check judges the values
            parts[k] = p.model_copy(update=dict(passed=p.nan_count == 0 and p.inf_count == 0, mismatches=0,
                                                message="ok" if p.nan_count == p.inf_count == 0 else p.message))
    bad = [f"output[{k}]: {p.message}" for k, p in enumerate(parts) if not p.passed]
    first = parts[0]
    return CheckResult(passed=not bad, exact=all(p.exact for p in parts), rtol=first.rtol, atol=first.atol,
                       n_elements=sum(p.n_elements for p in parts), mismatches=sum(p.mismatches for p in parts),
                       nan_count=sum(p.nan_count for p in parts), inf_count=sum(p.inf_count for p in parts),
                       max_abs_error=first.max_abs_error, max_rel_error=first.max_rel_error,
                       shape_ok=all(p.shape_ok for p in parts), seed=seed, message="; ".join(bad) or "ok")


def _describe_failure(bad: Any, mismatches: int, nans: int, infs: int, n: int) -> str:
    import torch

    parts = [f"{mismatches} of {n} elements outside tolerance"]
    if nans:
        parts.append(f"{nans} NaN (unwritten or overflowed)")
    if infs:
        parts.append(f"{infs} inf")
    idx = torch.nonzero(bad.reshape(bad.shape) if bad.dim() else bad.reshape(1))
    if idx.numel():
        parts.append(f"first at index {tuple(int(i) for i in idx[0])}")
    return "; ".join(parts)
