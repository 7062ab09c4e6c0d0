"""The probes of ``probes.cu`` as the harness calls them: each takes the case's input
``(array, num_bins)`` like a version and launches one probe kernel on v05's persistent grid
(``groups`` strips of channels × ``chunks`` slices of rows, about one block per SM). Nothing here
is checked: a probe writes one word per thread into a sink so that its work is not optimised
away, and its time is what that piece of v05 costs alone.

``assignment.PROBES`` names them; ``report run histogram -c benchmark --probes`` times them after
the versions of the case and keeps them in each run's record.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from reporter.cuda import load_module

SOURCE = Path(__file__).with_name("probes.cu")
FLUSH_SOURCE = Path(__file__).with_name("probes_flush.cu")  # v07's count and flush, each alone
NUM_BINS = 256  # probes.cu counts 256 bins
ATOMS_SMEM_BYTES = 128 * 1024  # 128 channels x 256 bins x 4 B, v05's shared histogram
_sinks: dict[tuple[int, int], Any] = {}


def _grid(channels: int, width: int, sms: int) -> tuple[int, int]:
    """v05's grid: ``groups`` strips of ``width`` channels, ``chunks`` slices of rows per strip."""
    groups = -(-channels // width)
    return groups, max(1, sms // groups)


def _sink(device: Any, words: int) -> Any:
    """One int32 buffer per device and size, allocated once, outside the timed calls."""
    import torch

    key = (device.index or 0, words)
    if key not in _sinks:
        _sinks[key] = torch.empty(words, dtype=torch.int32, device=device)
    return _sinks[key]


def _geometry(data: tuple[Any, int], width: int) -> tuple[Any, int, int, int, int]:
    import torch

    array, num_bins = data
    length, channels = array.shape
    if num_bins != NUM_BINS:
        raise ValueError(f"probes.cu counts {NUM_BINS} bins; this case has {num_bins}")
    if channels % width:
        raise ValueError(f"{channels} channels is not a multiple of the {width}-byte strip")
    sms = torch.cuda.get_device_properties(array.device).multi_processor_count
    groups, chunks = _grid(channels, width, sms)
    return array, length, channels, groups, chunks


def read_strips(kernel: str, width: int, threads: int) -> Callable[[tuple[Any, int]], None]:
    """Read only: every lane loads width/32 bytes of a row, a block covers a ``width``-byte strip."""

    def probe(data: tuple[Any, int]) -> None:
        import numpy as np

        array, length, channels, groups, chunks = _geometry(data, width)
        k = load_module(SOURCE).kernel(kernel)
        sink = _sink(array.device, groups * chunks * threads)
        k((groups * chunks,), (threads,), array, sink, np.uint32(length), np.uint32(channels), np.uint32(groups),
          np.uint32(chunks))

    return probe


def no_atomics(data: tuple[Any, int]) -> None:
    """v05's loop (loads, byte extraction, address arithmetic) with the atomic replaced by an add."""
    import numpy as np

    array, length, channels, groups, chunks = _geometry(data, 128)
    k = load_module(SOURCE).kernel("probe_no_atomics")
    sink = _sink(array.device, groups * chunks * 1024)
    k((groups * chunks,), (1024,), array, sink, np.uint32(length), np.uint32(channels), np.uint32(groups),
      np.uint32(chunks))


def atomics_only(kernel: str) -> Callable[[tuple[Any, int]], None]:
    """v05's shared-memory atomics, as many as it issues on this case, with no global load."""

    def probe(data: tuple[Any, int]) -> None:
        import numpy as np

        array, length, _, groups, chunks = _geometry(data, 128)
        k = load_module(SOURCE).kernel(kernel)
        sink = _sink(array.device, groups * chunks * 1024)
        k((groups * chunks,), (1024,), sink, np.uint32(length), np.uint32(groups), np.uint32(chunks),
          shared_mem=ATOMS_SMEM_BYTES)

    return probe


BULK_PIECE = 32768  # probes.cu's BULK_PIECE


def read_bulk(kernel: str, stages: int) -> Callable[[tuple[Any, int]], None]:
    """Read only, whole rows: one block of one warp per SM copies its contiguous slice of rows with the copy
    engine, ``stages`` pieces of 32 KB in flight."""

    def probe(data: tuple[Any, int]) -> None:
        import numpy as np
        import torch

        array, num_bins = data
        length, channels = array.shape
        if (length * channels) % 16 or channels % 16:
            raise ValueError(f"bulk copies move 16-byte multiples: {channels} channels a row")
        sms = torch.cuda.get_device_properties(array.device).multi_processor_count
        smem = stages * BULK_PIECE + 8 * stages
        k = load_module(SOURCE).kernel(kernel, max_dynamic_shared_memory=smem)
        sink = _sink(array.device, sms * 32)
        k((sms,), (32,), array, sink, np.uint32(length), np.uint32(channels), shared_mem=smem)

    return probe


FLUSH_SMEM_BYTES = ATOMS_SMEM_BYTES + 32 * 32 * 9 * 4  # v07's: the histogram and a flush tile per warp


def count_only(data: tuple[Any, int]) -> None:
    """v07's kernel without its global flush: read and count into shared memory only."""
    import numpy as np

    array, length, channels, groups, chunks = _geometry(data, 128)
    k = load_module(FLUSH_SOURCE).kernel("probe_count_only", max_dynamic_shared_memory=FLUSH_SMEM_BYTES)
    sink = _sink(array.device, groups * chunks * 1024)
    k((groups * chunks,), (1024,), array, sink, np.uint32(length), np.uint32(channels), np.uint32(groups),
      np.uint32(chunks), shared_mem=FLUSH_SMEM_BYTES)


def flush_only(data: tuple[Any, int]) -> None:
    """v07's flush alone on v07's grid: one global atomic a counter, every block at once."""
    import numpy as np

    array, _, channels, groups, chunks = _geometry(data, 128)
    k = load_module(FLUSH_SOURCE).kernel("probe_flush_only", max_dynamic_shared_memory=FLUSH_SMEM_BYTES)
    sink = _sink(array.device, channels * NUM_BINS)
    k((groups * chunks,), (1024,), sink, np.uint32(channels), np.uint32(groups), shared_mem=FLUSH_SMEM_BYTES)
