"""Stanford CS149 assignment 5, part 2: a histogram per channel.

The input is a uint8 array of shape [length, num_channels], row-major (one row is
``num_channels`` contiguous bytes), drawn with ``torch.randint(0, 256)`` from one seeded
generator; the output is int32 [num_channels, 256] where ``out[c][b]`` counts the rows whose
byte in channel ``c`` equals ``b``. The check is exact. The benchmark case is
[1048576, 512] (512 MiB), seed 1001: the floor is one read of the input at copy bandwidth.

The ``contention`` case replaces about 90 % of the bytes with one value (drawn from the same
generator), the worst case for atomics that collide on one counter or one shared-memory bank.
"""

from __future__ import annotations

import torch

from reporter.assignments import Peer, ReferenceResult, Tolerance
from reporter.records import WorkModel

TITLE = "Per-channel histogram: uint8 [length, channels] → int32 [channels, 256]"
SEED = 1001
NUM_BINS = 256
CASES = {
    "test_small": dict(length=4096, channels=512, seed=SEED),
    "test_ragged": dict(length=100003, channels=512, seed=SEED),  # no tile size divides 100003
    "contention": dict(length=131072, channels=512, contention=0.9, seed=SEED),
    "benchmark": dict(length=1048576, channels=512, seed=SEED),
}
BENCHMARK_CASE = "benchmark"
TOLERANCE = Tolerance.exact_match()

REFERENCE_RESULTS = [
    ReferenceResult(label="CS149 leaderboard #1", gpu="H100", median_ms=0.315,
                    source="Stanford CS149 asst 5 leaderboard"),
]

# elements per chunk of the reference's bincount: bounds its int64 temporaries to ~128 MB
_REF_CHUNK_ELEMENTS = 1 << 24


def generate_input(length: int, channels: int, seed: int, contention: float = 0.0,
                   device: str = "cuda") -> torch.Tensor:
    """uint8 [length, channels] from ``torch.Generator(device).manual_seed(seed)``.

    With ``contention`` > 0, a second draw from the same generator picks one hot value and a
    third marks each byte with probability ``contention`` to be overwritten with it.
    """
    gen = torch.Generator(device=device).manual_seed(seed)
    data = torch.randint(0, NUM_BINS, (length, channels), dtype=torch.uint8, device=device, generator=gen)
    if contention > 0.0:
        hot = int(torch.randint(0, NUM_BINS, (1,), device=device, generator=gen).item())
        mask = torch.rand((length, channels), device=device, generator=gen) < contention
        data.masked_fill_(mask, hot)
        del mask
    return data


def ref_kernel(data: torch.Tensor) -> torch.Tensor:
    """Exact on any device: one bincount of ``value + 256 * channel`` (int64), a few rows at a time."""
    length, channels = data.shape
    offsets = torch.arange(channels, device=data.device, dtype=torch.int64) * NUM_BINS
    counts = torch.zeros(channels * NUM_BINS, dtype=torch.int64, device=data.device)
    rows = max(1, _REF_CHUNK_ELEMENTS // max(channels, 1))
    for r in range(0, length, rows):
        keys = (data[r:r + rows].to(torch.int64) + offsets).reshape(-1)
        counts += torch.bincount(keys, minlength=channels * NUM_BINS)
    return counts.view(channels, NUM_BINS).to(torch.int32)


def work_model(length: int, channels: int, seed: int = SEED, contention: float = 0.0) -> WorkModel:
    return WorkModel(
        flops=0.0,
        bytes=float(length * channels + channels * NUM_BINS * 4),
        ceiling="copy",
        description="the uint8 input read once and the int32 histogram written once; no floating-point work",
    )


def _bincount_per_channel(data: torch.Tensor) -> torch.Tensor:
    """The CS149 reference: one torch.bincount per channel, in a Python loop."""
    channels = data.shape[1]
    out = torch.empty((channels, NUM_BINS), dtype=torch.int32, device=data.device)
    for c in range(channels):
        out[c] = torch.bincount(data[:, c], minlength=NUM_BINS)
    return out


def _bincount_offset(data: torch.Tensor) -> torch.Tensor:
    """One torch.bincount over ``value + 256 * channel`` for the whole array (int32 keys)."""
    channels = data.shape[1]
    offsets = torch.arange(channels, device=data.device, dtype=torch.int32) * NUM_BINS
    keys = (data.to(torch.int32) + offsets).reshape(-1)
    return torch.bincount(keys, minlength=channels * NUM_BINS).view(channels, NUM_BINS).to(torch.int32)


PEERS = {
    "bincount_per_channel": Peer(_bincount_per_channel,
                                 "torch.bincount per channel in a Python loop (the CS149 reference)"),
    "bincount_offset": Peer(_bincount_offset, "one torch.bincount over value + 256·channel"),
}
