"""histogram on the GPU beyond the per-version checks: v12's kernel zeroes its own output behind per-stream
flags and a call count, so every call on any stream, into whatever the allocator hands back, is exact; the
flushes of v13 (two counters an atomic), v14 (shifted tiles) and v15 (cluster pairs summed in distributed
shared memory) are exact on channel counts that leave a last group part-filled, and v15's on a grid with
unpaired chunks and an idle block."""

from __future__ import annotations

import pytest

from conftest import ROOT
from reporter.assignments import get_assignment

pytestmark = pytest.mark.gpu

# a last channel group of 72 channels: its blocks flush (and v12's chunk 0 zeroes) fewer rows than a group holds
PART_GROUP = dict(length=5003, num_channels=200, num_bins=256, seed=7)
# 17 channel groups, the last part-filled: on 132 SMs, 7 chunks a group, so v15 pairs 3 and leaves the 7th
# alone in each group, and 119 blocks take an idle 120th to make whole clusters
ODD_GRID = dict(length=3001, num_channels=2168, num_bins=256, seed=11)


def _version(short: str):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    a = get_assignment(ROOT / "kernels", "histogram")
    return a, a.load(next(v for v in a.versions() if v.short == short))


def test_v12_is_exact_call_after_call_on_two_streams_into_poisoned_memory():
    import torch

    from reporter.harness.check import poison_allocator

    a, v12 = _version("v12")
    streams = [torch.cuda.current_stream(), torch.cuda.Stream()]
    shapes = {"test_ragged": a.case("test_ragged"), "benchmark": a.case("benchmark"), "200 channels": PART_GROUP}
    for case, params in shapes.items():
        data = a.spec.generate_input(**params)
        ref = a.spec.ref_kernel(data)
        for i in range(6):  # each stream's epoch moves on; its flags are never reset
            stream = streams[i % 2]
            poison_allocator(ref)
            torch.cuda.synchronize()  # the poison is written before the call's stream takes a block
            with torch.cuda.stream(stream):
                out = v12.custom_kernel(data)
            stream.synchronize()
            assert torch.equal(out, ref), f"v12 on {case}, call {i} on stream {i % 2}"


@pytest.mark.parametrize("short", ["v13", "v14", "v15"])
def test_flush_variants_are_exact_with_a_part_filled_last_group(short):
    import torch

    a, v = _version(short)
    for params in (PART_GROUP, {**PART_GROUP, "contention": 0.9}, ODD_GRID):
        data = a.spec.generate_input(**params)
        ref = a.spec.ref_kernel(data)
        assert torch.equal(v.custom_kernel(data), ref), f"{short} on {params}"
