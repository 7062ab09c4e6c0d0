"""Hold a CUDA stream until the host has queued everything that is to be timed.

Timing with a start and an end event measures the GPU's time between the two, and that
includes any time the GPU waits for the host: if queuing the timed call (Python, the
framework's dispatcher, allocator calls, the launch itself) takes longer than the work already
queued before the start event (the L2 flush), the GPU idles inside the timed window. For a
0.2 ms kernel behind a Python launch path that idle time can be a large and variable part of
the sample, and it depends on the host (a loaded or virtualised CPU), not on the kernel.

:class:`StreamHold` removes it, the way NVBench's blocking kernel does: before the start
event it queues a one-thread kernel (``hold.cu``) that spins on a flag in pinned host memory;
the host sets the flag after queuing the end event. The spin is bounded by a timeout on the
GPU's own clock, so a callable that synchronises with the GPU from the host (``.item()``,
``torch.cuda.synchronize()``) cannot deadlock: the hold times out, :attr:`timed_out` says so,
and the timer that uses it falls back to plain events (see ``timing.HeldCudaEventTimer``).

What a held sample measures is the GPU time of the queued work: the kernels, the gaps the
GPU needs between them, and anything the callable queues (output allocation fills, copies).
What it leaves out is the host's launch cost, which the leaderboards' plain event timing
includes whenever it exceeds the work queued ahead of the call.
"""

from __future__ import annotations

from pathlib import Path
SOURCE = Path(__file__).with_name("hold.cu")
DEFAULT_TIMEOUT_S = 2.0


class StreamHold:
    def __init__(self, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        import numpy as np
        import torch

        from ..cuda import load_module

        self._np = np
        self.flag = torch.zeros(1, dtype=torch.int32, pin_memory=True)
        self.timeout_flag = torch.zeros(1, dtype=torch.int32, device="cuda")
        self.timeout_ns = int(timeout_s * 1e9)
        self.kernel = load_module(SOURCE).kernel("hold_stream")
        self.kernel.tracked = False  # the harness's kernel, not the timed version's: no build to record

    def hold(self) -> None:
        """Queue the spinning kernel on the current stream; call :meth:`release` after the timed work."""
        self.flag[0] = 0
        self.kernel((1,), (1,), self._np.uint64(self.flag.data_ptr()), self.timeout_flag,
                    self._np.uint64(self.timeout_ns))

    def release(self) -> None:
        self.flag[0] = 1

    @property
    def timed_out(self) -> bool:
        """Whether any hold so far gave up waiting (reads a device flag: synchronises)."""
        return bool(self.timeout_flag.item())

    def reset(self) -> None:
        self.timeout_flag.zero_()


def available() -> tuple[bool, str]:
    """(True, '') when a hold can be built here: CUDA, CuPy and pinned memory."""
    try:
        import cupy  # noqa: F401
        import torch
    except ImportError as e:
        return False, f"{e.name} is not installed"
    if not torch.cuda.is_available():
        return False, "no CUDA device"
    return True, ""

