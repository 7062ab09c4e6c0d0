"""Correctness before time: poisoned outputs, NaN/inf detection, tolerance or exact match, or a course's own check.

Versions follow the leaderboards' convention and allocate their own output inside
``custom_kernel``. To catch an element the kernel never wrote, :func:`poison_allocator`
fills a block the size of the expected output with 0xFF bytes (NaN in fp16/fp32, -1 in
int32) and frees it, so PyTorch's caching allocator hands that same block to the kernel's
``torch.empty``: an unwritten element then shows up as NaN or as a wrong count.
"""

from __future__ import annotations

import math
from typing import Any

from ..assignments import Tolerance
from ..records import CheckResult

_NO_TOLERANCE = Tolerance(rtol=0.0, atol=0.0)


def poison_allocator(like: Any, keep_free: int = 2) -> None:
    """Fill every block the CUDA caching allocator holds free with 0xFF bytes (NaN in every float
    type, -1 in every integer), so that an output element a version never writes reads as poison,
    never as an earlier call's right answer.

    First ``keep_free`` blocks of each output's size are taken at once and given back, so that a
    version's allocations of that size come from the cache (poisoned) and not from fresh device
    memory, which holds whatever was there before. Then each free block is filled in place (CuPy's
    memset on the allocator's own addresses). Without CuPy, the blocks of the outputs' sizes are
    filled as they are taken, which misses the rest of the cache. Call it after the input is
    cloned, so that the clone does not take a poisoned block."""
    import torch

    tensors = [like] if isinstance(like, torch.Tensor) else [t for t in _flatten(like) if isinstance(t, torch.Tensor)]
    tensors = [t for t in tensors if t.is_cuda]
    if not tensors:
        return
    device = tensors[0].device
    sizes = sorted({t.numel() * t.element_size() for t in tensors})
    try:
        from cupy.cuda import runtime
    except ImportError:
        blocks = [torch.full((n,), 0xFF, dtype=torch.uint8, device=device) for n in sizes for _ in range(keep_free)]
        del blocks
        return
    for n in sizes:
        spare = [torch.empty(n, dtype=torch.uint8, device=device) for _ in range(keep_free)]
        del spare
    stream = torch.cuda.current_stream(device).cuda_stream
    with torch.cuda.device(device):
        for seg in torch.cuda.memory_snapshot():
            if seg.get("device", device.index) != device.index:
                continue
            address = int(seg["address"])
            for block in seg["blocks"]:
                if block["state"] == "inactive":
                    runtime.memsetAsync(int(block.get("address", address)), 0xFF, int(block["size"]), stream)
                address += int(block["size"])


def _flatten(x: Any) -> list[Any]:
    if isinstance(x, (list, tuple)):
        return [y for item in x for y in _flatten(item)]
    return [x]


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
    parts = [compare(o, r, t if t is not None else _NO_TOLERANCE, seed=seed, check_dtype=check_dtype and t is not None)
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


def clone_input(data: Any) -> Any:
    """A copy of every tensor in a (nested) input, as a course harness gives its kernel: a kernel
    that writes into its input cannot change what its output is checked against."""
    if isinstance(data, tuple):
        return tuple(clone_input(x) for x in data)
    if isinstance(data, list):
        return [clone_input(x) for x in data]
    if isinstance(data, dict):
        return {k: clone_input(v) for k, v in data.items()}
    return data.clone() if hasattr(data, "clone") and hasattr(data, "is_cuda") else data


def check_output(spec: Any, data: Any, out: Any, ref: Any, *, seed: int | None = None) -> CheckResult:
    """The verdict on ``out`` for the input ``data`` whose reference is ``ref``.

    An assignment with ``TOLERANCE`` is judged by :func:`compare`. One with
    ``check_implementation(data, output)`` (a course's own check, CourseTask's or the
    assignment's) is judged by it, on top of the tolerance when there is one; the error
    figures against ``ref`` are kept either way. Without a tolerance, ``mismatches`` counts the
    elements that differ from the reference at all, and only when the check failed.
    """
    tol = getattr(spec, "TOLERANCE", None)
    course = getattr(spec, "check_implementation", None)
    res = compare(out, ref, tol or _NO_TOLERANCE, seed=seed, check_dtype=tol is not None)
    if not callable(course):
        return res
    try:
        ok, message = course(data, out)
    except Exception as e:  # the course's check raising is its verdict: the output is unusable
        ok, message = False, f"check_implementation raised {type(e).__name__}: {e}"
    passed = bool(ok) and (res.passed if tol is not None else res.shape_ok)
    if tol is None:
        res = res.model_copy(update=dict(rtol=None, atol=None, exact=False,
                                         mismatches=0 if passed else res.mismatches))
    if passed:
        text = "ok"
    else:
        parts = [f"check_implementation: {message or ('passed' if ok else 'failed')}"]
        if not res.passed and (tol is not None or not res.shape_ok):
            parts.append(res.message)
        text = "; ".join(parts)
    return res.model_copy(update=dict(passed=passed, by="check_implementation", message=text))
