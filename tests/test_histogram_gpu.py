"""histogram on the GPU beyond the per-version checks: v12's kernel zeroes its own output behind per-stream
flags and a call count, so every call on any stream, into whatever the allocator hands back, is exact."""

from __future__ import annotations

import pytest

from conftest import ROOT
from reporter.assignments import get_assignment

pytestmark = pytest.mark.gpu


def test_v12_is_exact_call_after_call_on_two_streams_into_poisoned_memory():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from reporter.harness.check import poison_allocator

    a = get_assignment(ROOT / "kernels", "histogram")
    v12 = a.load(next(v for v in a.versions() if v.short == "v12"))
    streams = [torch.cuda.current_stream(), torch.cuda.Stream()]
    shapes = {"test_ragged": a.case("test_ragged"), "benchmark": a.case("benchmark"),
              # a last channel group of 72 channels: its chunk-0 block zeroes fewer rows than a group holds
              "200 channels": dict(length=5003, num_channels=200, num_bins=256, seed=7)}
    for case, params in shapes.items():
        data = a.spec.generate_input(**params)
        ref = a.spec.ref_kernel(data)
        for i in range(6):  # each stream's epoch moves on; its flags are never reset
            stream = streams[i % 2]
            stream.wait_stream(torch.cuda.current_stream())
            poison_allocator(ref)
            with torch.cuda.stream(stream):
                out = v12.custom_kernel(data)
            stream.synchronize()
            assert torch.equal(out, ref), f"v12 on {case}, call {i} on stream {i % 2}"
