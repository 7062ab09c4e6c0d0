"""NVTX ranges nested as <assignment> / <version> / <phase>, so a profiler can select one phase
of one version: ``ncu --nvtx --nvtx-include "flashattn/v02/profile/"``.

Through ``torch.cuda.nvtx`` (torch ships NVTX; no separate package), else nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


def _push_pop():
    try:
        import torch

        if torch.cuda.is_available():
            return torch.cuda.nvtx.range_push, torch.cuda.nvtx.range_pop
    except ImportError:
        pass
    return (lambda name: None), (lambda: None)


_PUSH, _POP = _push_pop()


@contextlib.contextmanager
def ranges(*names: str) -> Iterator[None]:
    """Push each name as a nested range (outermost first) and pop them all on exit."""
    for n in names:
        _PUSH(n)
    try:
        yield
    finally:
        for _ in names:
            _POP()
