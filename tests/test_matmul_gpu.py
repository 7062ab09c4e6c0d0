"""matmul on the GPU beyond the per-version checks: v29's combining pass gives the same bits from every
call, where v28's reductions land in an order that can change them."""

from __future__ import annotations

import pytest

from conftest import ROOT
from reporter.assignments import get_assignment

pytestmark = pytest.mark.gpu


def test_v29_gives_the_same_bits_every_call():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    a = get_assignment(ROOT / "kernels", "matmul")
    v29 = a.load(next(v for v in a.versions() if v.short == "v29"))
    data = a.spec.generate_input(**a.case("benchmark"))
    first = v29.custom_kernel(data).clone()
    for _ in range(5):
        assert torch.equal(v29.custom_kernel(data), first)
    passed, message = a.spec.check_implementation(data, first)
    assert passed, message
