"""Stanford CS149 assignment 5, part 2: a histogram per channel, in the course's own terms.

The course's problem folder (github stanford-cs149/asst5-kernels, ``problems/histogram``)
defines the interface, and this file follows it exactly so that a version exported as
``submission.py`` runs in the course's ``eval.py`` as it runs here:
``generate_input(length, num_channels, num_bins, seed)`` draws a uint8 array of shape
[length, num_channels], row-major, with ``torch.randint(0, num_bins)`` from a CUDA generator
seeded with ``seed``, and returns the tuple ``(array, num_bins)``, which ``custom_kernel``
receives as it is. The answer is int32 [num_channels, num_bins], where ``out[c][b]`` counts
the rows whose byte in channel ``c`` equals ``b``. The benchmark case is the course's
test line, ``length: 1048576; num_channels: 512; num_bins: 256; seed: 1001`` (512 MiB): the
floor is one read of the input at copy bandwidth.

The check is exact. The course accepts |out - ref| <= 1e-3 + 1e-3·|ref| (about ±4 counts
at 4096 per bin); every output that passes here passes there. ``COURSE`` names the folder, so
a device session can run the course's own harness on an export (``report crosscheck``).

Our extra cases use the same keys: ``test_ragged`` has a length no tile size divides, and
``contention`` adds the key ``contention``: after the course's draw, about 90 % of the bytes
are replaced with one value (drawn from the same generator), the worst case for atomics that
collide on one counter or one shared-memory bank. Records made before the keys were the
course's (``length, channels, seed``) are read with ``channels`` as ``num_channels`` and
``num_bins`` 256, which is what those runs drew.

torch is imported inside the functions so that `report build` reads this file on a machine
without it.
"""

from __future__ import annotations

from typing import Any

from reporter.assignments import CourseSource, Peer, Probe, ReferenceResult, Tolerance
from reporter.records import WorkModel

import histogram_probes as hp  # beside this file; torch, CuPy and NumPy only inside its probes

TITLE = "Per-channel histogram: uint8 [length, num_channels] → int32 [num_channels, num_bins]"
SEED = 1001
NUM_BINS = 256
CASES = {
    "test_small": dict(length=4096, num_channels=512, num_bins=NUM_BINS, seed=SEED),
    "test_ragged": dict(length=100003, num_channels=512, num_bins=NUM_BINS, seed=SEED),  # no tile size divides it
    "contention": dict(length=131072, num_channels=512, num_bins=NUM_BINS, seed=SEED, contention=0.9),
    "benchmark": dict(length=1048576, num_channels=512, num_bins=NUM_BINS, seed=SEED),
}
BENCHMARK_CASE = "benchmark"
TOLERANCE = Tolerance.exact_match()
COURSE = CourseSource(repo="stanford-cs149/asst5-kernels", folder="problems/histogram")
# how records made before the keys were the course's name them
LEGACY_CASE_KEYS = {"channels": "num_channels"}
LEGACY_CASE_DEFAULTS = {"num_bins": NUM_BINS}

REFERENCE_RESULTS = [
    ReferenceResult(label="CS149 leaderboard #1", gpu="H100", median_ms=0.315,
                    source="Stanford CS149 asst 5 leaderboard"),
]

# elements per chunk of the reference's bincount: bounds its int64 temporaries to ~128 MB
_REF_CHUNK_ELEMENTS = 1 << 24


def generate_input(length: int, num_channels: int, num_bins: int, seed: int, contention: float = 0.0,
                   device: str = "cuda") -> tuple[Any, int]:
    """``(array, num_bins)``: the course's draw, ``torch.randint(0, num_bins, (length, num_channels))``
    in uint8 from ``torch.Generator(device).manual_seed(seed)``.

    With ``contention`` > 0 (our case, not the course's), a second draw from the same generator
    picks one hot value and a third marks each byte with probability ``contention`` to be
    overwritten with it.
    """
    import torch

    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    array = torch.randint(low=0, high=num_bins, size=(length, num_channels), generator=gen, device=device,
                          dtype=torch.uint8).contiguous()
    if contention > 0.0:
        hot = int(torch.randint(0, num_bins, (1,), device=device, generator=gen).item())
        mask = torch.rand((length, num_channels), device=device, generator=gen) < contention
        array.masked_fill_(mask, hot)
        del mask
    return array, num_bins


def ref_kernel(data: tuple[Any, int]) -> Any:
    """Exact on any device: one bincount of ``value + stride * channel`` (int64), a few rows at a
    time; values at or past ``num_bins`` are left out, as the course's per-channel slice does."""
    import torch

    array, num_bins = data
    length, channels = array.shape
    stride = max(num_bins, NUM_BINS)
    offsets = torch.arange(channels, device=array.device, dtype=torch.int64) * stride
    counts = torch.zeros(channels * stride, dtype=torch.int64, device=array.device)
    rows = max(1, _REF_CHUNK_ELEMENTS // max(channels, 1))
    for r in range(0, length, rows):
        keys = (array[r:r + rows].to(torch.int64) + offsets).reshape(-1)
        counts += torch.bincount(keys, minlength=channels * stride)
    return counts.view(channels, stride)[:, :num_bins].to(torch.int32).contiguous()


def work_model(length: int, num_channels: int, num_bins: int = NUM_BINS, seed: int = SEED,
               contention: float = 0.0) -> WorkModel:
    return WorkModel(
        flops=0.0,
        bytes=float(length * num_channels + num_channels * num_bins * 4),
        ceiling="copy",
        description="the uint8 input read once and the int32 histogram written once; no floating-point work",
    )


def _bincount_per_channel(data: tuple[Any, int]) -> Any:
    """The course's reference: one torch.bincount per channel, in a Python loop."""
    import torch

    array, num_bins = data
    channels = array.shape[1]
    out = torch.empty((channels, num_bins), dtype=torch.int32, device=array.device)
    for c in range(channels):
        out[c] = torch.bincount(array[:, c], minlength=num_bins)[:num_bins]
    return out


def _bincount_offset(data: tuple[Any, int]) -> Any:
    """One torch.bincount over ``value + num_bins * channel`` for the whole array (int32 keys)."""
    import torch

    array, num_bins = data
    channels = array.shape[1]
    offsets = torch.arange(channels, device=array.device, dtype=torch.int32) * num_bins
    keys = (array.to(torch.int32) + offsets).reshape(-1)
    return torch.bincount(keys, minlength=channels * num_bins).view(channels, num_bins).to(torch.int32)


PEERS = {
    "bincount_per_channel": Peer(_bincount_per_channel,
                                 "torch.bincount per channel in a Python loop (the CS149 reference)"),
    "bincount_offset": Peer(_bincount_offset, "one torch.bincount over value + num_bins·channel"),
}


# pieces of v05 timed alone (probes.cu; `report run histogram -c benchmark --probes`)
PROBES = {
    "probe_read_w4": Probe(hp.read_strips("probe_read_w4", 128, 1024),
                           "read only, 128-byte strips (4 B per lane), 1024 threads"),
    "probe_read_w8": Probe(hp.read_strips("probe_read_w8", 256, 512),
                           "read only, 256-byte strips (8 B per lane), 512 threads"),
    "probe_read_w16": Probe(hp.read_strips("probe_read_w16", 512, 256),
                            "read only, 512-byte strips (16 B per lane), 256 threads"),
    "probe_read_w16_t512": Probe(hp.read_strips("probe_read_w16_t512", 512, 512),
                                 "read only, 512-byte strips, 512 threads (64 KB per SM in flight)"),
    "probe_read_bulk4": Probe(hp.read_bulk("probe_read_bulk4", 4),
                              "read only, whole rows, a contiguous slice per SM by 32 KB bulk copies, 4 in flight"),
    "probe_read_bulk6": Probe(hp.read_bulk("probe_read_bulk6", 6),
                              "read only, whole rows, a contiguous slice per SM by 32 KB bulk copies, 6 in flight"),
    "probe_no_atomics": Probe(hp.no_atomics, "v05's loop with its shared atomic replaced by an add"),
    "probe_atoms_bin_major": Probe(hp.atomics_only("probe_atoms_bin_major"),
                                   "v05's shared atomics alone (bin-major, conflict-free layout), no loads"),
    "probe_atoms_channel_major": Probe(hp.atomics_only("probe_atoms_channel_major"),
                                       "the same atomics in v03's channel-major layout (bank = value % 32)"),
    "probe_count_only": Probe(hp.count_only, "v07's kernel without its global flush: read and count only"),
    "probe_flush_only": Probe(hp.flush_only, "v07's flush alone: one global atomic a counter, all blocks at once"),
}
