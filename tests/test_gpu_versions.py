"""Every version of every assignment, checked on its test cases on a real GPU (pytest -m gpu)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reporter.assignments import list_assignments

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENTS = list_assignments(ROOT / "kernels")
PARAMS = [
    pytest.param(a, v, c, id=f"{a.name}-{v.short}-{c}")
    for a in ASSIGNMENTS
    for v in a.versions()
    for c in a.cases()
    if c != a.benchmark_case
]


@pytest.mark.gpu
@pytest.mark.parametrize("assignment,version,case", PARAMS)
def test_version_passes_check(assignment, version, case):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from reporter.harness.check import compare, poison_allocator

    spec = assignment.spec
    params = assignment.case(case)
    mod = version.load()
    for seed in (params["seed"], params["seed"] + 13):  # the case's seed and a ranked re-seed
        data = spec.generate_input(**{**params, "seed": seed})
        ref = spec.ref_kernel(data)
        poison_allocator(ref)
        out = mod.custom_kernel(data)
        torch.cuda.synchronize()
        result = compare(out, ref, spec.TOLERANCE, seed=seed)
        assert result.passed, f"{version.name} on {case} seed {seed}: {result.message}"
