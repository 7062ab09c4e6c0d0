"""Correctness before time: poisoned outputs, then the output judged by :func:`reporter.compare.compare`
(tolerance or exact match, NaN/inf) or by a course's own check.

Versions follow the leaderboards' convention and allocate their own output inside
``custom_kernel``. To catch an element the kernel never wrote, :func:`poison_allocator`
fills a block the size of the expected output with 0xFF bytes (NaN in fp16/fp32, -1 in
int32) and frees it, so PyTorch's caching allocator hands that same block to the kernel's
``torch.empty``: an unwritten element then shows up as NaN or as a wrong count.
"""

from __future__ import annotations

from typing import Any

from ..compare import NO_TOLERANCE, compare
from ..records import CheckResult


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

    An assignment with ``TOLERANCE`` is judged by :func:`reporter.compare.compare`. One with
    ``check_implementation(data, output)`` (a course's own check, CourseTask's or the
    assignment's) is judged by it, on top of the tolerance when there is one; the error
    figures against ``ref`` are kept either way. Without a tolerance, ``mismatches`` counts the
    elements that differ from the reference at all, and only when the check failed.
    """
    tol = getattr(spec, "TOLERANCE", None)
    course = getattr(spec, "check_implementation", None)
    res = compare(out, ref, tol or NO_TOLERANCE, seed=seed, check_dtype=tol is not None)
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
