"""The flashattn assignment on small CPU tensors: inputs, reference, naive version, work model."""

from __future__ import annotations

import math
import sys

import pytest

torch = pytest.importorskip("torch")

from conftest import ROOT  # noqa: E402
from reporter.assignments import get_assignment  # noqa: E402
from reporter.compare import compare  # noqa: E402

A = get_assignment(ROOT / "kernels", "flashattn")


def small(seed=1118):
    return A.spec.generate_input(batch_size=1, num_heads=2, seq_len=64, head_dim=16, seed=seed, device="cpu")


def test_cases_are_the_course_cases():
    """The three lines of the course's test file, keys and all."""
    cases = A.cases()
    assert cases["test_small"] == dict(batch_size=1, num_heads=64, seq_len=1024, head_dim=128, seed=1118)
    assert cases["test_medium"] == dict(batch_size=2, num_heads=64, seq_len=4096, head_dim=128, seed=1118)
    assert cases["benchmark"] == dict(batch_size=4, num_heads=64, seq_len=8192, head_dim=128, seed=1118)
    import inspect

    assert list(inspect.signature(A.spec.generate_input).parameters)[:5] == [
        "batch_size", "num_heads", "head_dim", "seq_len", "seed"]
    assert A.spec.TOLERANCE.rtol == A.spec.TOLERANCE.atol == 1e-2


def test_inputs_are_seeded_fp16_in_the_order_q_k_v():
    q, k, v = small()
    assert q.dtype == torch.float16 and q.shape == (1, 2, 64, 16)
    g = torch.Generator(device="cpu")
    g.manual_seed(1118)
    expect_q = torch.randn(1, 2, 64, 16, dtype=torch.float16, generator=g)
    expect_k = torch.randn(1, 2, 64, 16, dtype=torch.float16, generator=g)
    assert torch.equal(q, expect_q) and torch.equal(k, expect_k)
    assert not torch.equal(small(1118)[0], small(1131)[0])


def test_reference_matches_the_formula_in_float64():
    q, k, v = small()
    out = A.spec.ref_kernel((q, k, v), heads_per_chunk=1)
    qd, kd, vd = (x.double() for x in (q, k, v))
    p = torch.softmax(qd @ kd.transpose(-1, -2) / math.sqrt(16), dim=-1)
    assert torch.allclose(out.double(), p @ vd, atol=2e-3)


def test_naive_version_passes_the_check_on_cpu():
    sys.path.insert(0, str(A.path))
    data = tuple(x.float() for x in small())
    ref = A.spec.ref_kernel(data)
    out = A.version("v01").load().custom_kernel(data)
    assert compare(out, ref, A.spec.TOLERANCE).passed


def test_work_model():
    w = A.spec.work_model(**A.cases()["benchmark"])
    assert w.flops == 4 * 4 * 64 * 8192**2 * 128
    assert w.bytes == 4 * (4 * 64 * 8192 * 128) * 2
    assert w.ceiling == "matmul_fp16"
