"""histogram on the GPU beyond the per-version checks.

v12's kernel zeroes its own output behind per-stream flags and a call count: a build whose zeroing blocks
start late (ZERO_DELAY_NS) makes every other block reach its flush first, so the flag protocol is what keeps
the answer exact, and a repeated call count is caught. The flushes of v13 (two counters an atomic), v14
(shifted tiles) and v15 (cluster pairs summed in distributed shared memory) are exact on channel counts that
leave a last group part-filled, and v15's on a grid with unpaired chunks and an idle block."""

from __future__ import annotations

import pytest

from conftest import ROOT
from reporter.assignments import get_assignment

pytestmark = pytest.mark.gpu

# a last channel group of 72 channels: its blocks flush (and v12's chunk 0 zeroes) fewer rows than a group holds
PART_GROUP = dict(length=5003, num_channels=200, num_bins=256, seed=7)


def _version(short: str):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    a = get_assignment(ROOT / "kernels", "histogram")
    return a, a.load(next(v for v in a.versions() if v.short == short))


def _odd_grid(sms: int) -> dict:
    """A shape on which v15 leaves unpaired chunks and an idle block on this card: an odd number of channel
    groups (the last part-filled) with an odd chunk count, 3 or more (17 groups of 7 chunks on 132 SMs)."""
    for groups in range(3, sms, 2):
        chunks = sms // groups
        if chunks >= 3 and chunks % 2:
            return dict(length=3001, num_channels=groups * 128 - 8, num_bins=256, seed=11)
    pytest.skip(f"no odd grid of 3 or more chunks a group on {sms} SMs")


def test_v12_waits_for_late_zeros_and_a_repeated_call_count_is_caught():
    import numpy as np
    import torch

    from reporter.cuda import load_module

    a, v12 = _version("v12")
    array, num_bins = data = a.spec.generate_input(**PART_GROUP)
    ref = a.spec.ref_kernel(data)
    length, channels = array.shape
    groups = -(-channels // v12.GROUP)
    chunks = max(1, torch.cuda.get_device_properties(array.device).multi_processor_count // groups)
    shared = v12.GROUP * v12.NUM_BINS * 4 + 32 * 32 * 9 * 4
    # the zeroing blocks start 200 µs late: far longer than the other blocks take to count 5003 rows
    kernel = load_module(v12.SOURCE, defines={"THREADS": 1024, "UNROLL": 8, "ZERO_DELAY_NS": 200_000}).kernel(
        "histogram_zero_in_kernel", max_dynamic_shared_memory=shared)
    flags = torch.zeros(64, dtype=torch.int32, device=array.device)

    def call(epoch: int) -> torch.Tensor:
        out = torch.full((channels, v12.NUM_BINS), 7, dtype=torch.int32, device=array.device)  # not zeros
        kernel((groups * chunks,), (1024,), array, out, flags, np.uint32(length), np.uint32(channels),
               np.uint32(groups), np.uint32(chunks), np.uint32(epoch), shared_mem=shared)
        torch.cuda.synchronize()
        return out

    assert torch.equal(call(1), ref) and torch.equal(call(2), ref)
    # the flags already hold 2: nobody waits, the late zeros wipe what the other blocks added
    assert not torch.equal(call(2), ref)


def test_v12_keeps_flags_and_call_counts_per_stream():
    import torch

    _, v12 = _version("v12")
    main, side = torch.cuda.current_stream().cuda_stream, torch.cuda.Stream().cuda_stream
    f1, e1 = v12.flags_and_epoch(0, main, 4)
    f2, e2 = v12.flags_and_epoch(0, side, 4)
    f3, e3 = v12.flags_and_epoch(0, main, 4)
    assert f1.data_ptr() == f3.data_ptr() != f2.data_ptr()
    assert e3 == e1 + 1 and e1 != 0 and e2 != 0


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
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for params in (PART_GROUP, {**PART_GROUP, "contention": 0.9}, _odd_grid(sms)):
        data = a.spec.generate_input(**params)
        ref = a.spec.ref_kernel(data)
        assert torch.equal(v.custom_kernel(data), ref), f"{short} on {params}"
