"""The correctness check: tolerance, exact match, NaN/inf, shape, and poisoned outputs."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from reporter.assignments import Tolerance  # noqa: E402
from reporter.compare import compare  # noqa: E402

TOL = Tolerance(rtol=1e-2, atol=1e-2)


def test_within_tolerance_passes():
    ref = torch.randn(64, 64, generator=torch.Generator().manual_seed(0))
    r = compare(ref + 0.005, ref, TOL)
    assert r.passed and r.mismatches == 0 and r.max_abs_error == pytest.approx(0.005, rel=1e-3)


def test_outside_tolerance_fails_and_points_at_the_element():
    ref = torch.zeros(8, 8)
    out = ref.clone()
    out[2, 5] = 0.5
    r = compare(out, ref, TOL)
    assert not r.passed and r.mismatches == 1
    assert "first at index (2, 5)" in r.message


def test_relative_part_of_tolerance_scales_with_the_value():
    ref = torch.full((4,), 100.0)
    assert compare(ref * 1.009, ref, TOL).passed
    assert not compare(ref * 1.02, ref, TOL).passed


def test_nan_and_inf_fail_even_where_ref_is_nan_free():
    ref = torch.ones(16)
    out = ref.clone()
    out[3] = float("nan")
    out[4] = float("inf")
    r = compare(out, ref, TOL)
    assert not r.passed and r.nan_count == 1 and r.inf_count == 1 and r.mismatches == 2


def test_poisoned_bytes_read_as_nan_in_fp16_and_as_wrong_counts_in_int32():
    # 0xFF bytes are what poison_allocator leaves in memory a kernel did not write
    poison = torch.full((8,), 0xFF, dtype=torch.uint8)
    assert torch.isnan(poison.view(torch.float16)).all()
    assert not compare(poison.view(torch.float16), torch.zeros(4, dtype=torch.float16), TOL).passed
    counts = poison.view(torch.int32)
    r = compare(counts, torch.zeros(2, dtype=torch.int32), Tolerance.exact_match())
    assert not r.passed and r.mismatches == 2


def test_exact_match():
    a = torch.tensor([[1, 2], [3, 4]], dtype=torch.int32)
    assert compare(a.clone(), a, Tolerance.exact_match()).passed
    b = a.clone()
    b[1, 1] += 1
    r = compare(b, a, Tolerance.exact_match())
    assert not r.passed and r.mismatches == 1 and r.max_abs_error == 1


def test_wrong_shape_and_wrong_type():
    ref = torch.zeros(4, 4)
    r = compare(torch.zeros(4, 5), ref, TOL)
    assert not r.passed and not r.shape_ok and "shape" in r.message
    r = compare([0.0] * 16, ref, TOL)
    assert not r.passed and "expected a tensor" in r.message


def test_wrong_dtype_fails_and_names_both():
    ref = torch.zeros(4, 4, dtype=torch.float16)
    r = compare(torch.zeros(4, 4, dtype=torch.float32), ref, TOL)
    assert not r.passed and r.shape_ok and r.mismatches == 16
    assert r.message == "dtype float32, expected float16 (the reference's)"
    assert compare(torch.zeros(4, 4, dtype=torch.float16), ref, TOL).passed
    # a part compared for shape only keeps its own dtype (the assignment's check judges it)
    parts = compare((torch.zeros(2), torch.zeros(1, dtype=torch.float64)),
                    (torch.zeros(2), torch.zeros(1, dtype=torch.float32)), (TOL, None))
    assert parts.passed, parts.message
    parts = compare((torch.zeros(2, dtype=torch.int64), torch.zeros(1)), (torch.zeros(2), torch.zeros(1)), TOL)
    assert not parts.passed and parts.message.startswith("output[0]: dtype int64, expected float32")
