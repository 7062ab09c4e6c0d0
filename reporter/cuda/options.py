"""How a CUDA source is compiled: the target architecture, the NVRTC options (the include folders
and the defines among them) and the error a rejected source raises. Every compile of the package
(:mod:`.build` on the GPU, :mod:`.nvrtc` without one, :mod:`.ptxas` through nvcc) starts here."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .sources import include_dirs

# --ptxas-options=-v only adds ptxas's resource report to the program log; the code is unchanged
DEFAULT_OPTIONS: tuple[str, ...] = ("-std=c++17", "-lineinfo", "--ptxas-options=-v")
ARCH_ENV = "REPORTER_CUDA_ARCH"  # e.g. 'sm_90' to build without the arch-specific features


class CudaCompileError(RuntimeError):
    """NVRTC (or nvcc) rejected a source; the message names the file and carries the log."""


def arch_for(compute_capability: tuple[int, int] | str) -> str:
    """'sm_90a' for (9, 0): the arch-specific target from Hopper on, plain 'sm_XY' before it.

    ``REPORTER_CUDA_ARCH`` overrides the choice (e.g. ``sm_90`` to compare builds).
    """
    override = os.environ.get(ARCH_ENV)
    if override:
        return override
    if isinstance(compute_capability, str):
        cc = compute_capability.replace(".", "")
        major = int(cc[:-1])
    else:
        major, minor = compute_capability
        cc = f"{major}{minor}"
    return f"sm_{cc}a" if major >= 9 else f"sm_{cc}"


def define_options(defines: Mapping[str, Any] | None) -> tuple[str, ...]:
    """``{'THREADS': 256, 'FAST': True}`` -> ``('-DFAST=1', '-DTHREADS=256')`` (sorted, so the cache key is stable)."""
    out = []
    for name, value in sorted((defines or {}).items()):
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ValueError(f"not a valid macro name: {name!r}")
        if isinstance(value, bool):
            value = int(value)
        out.append(f"-D{name}" if value is None else f"-D{name}={value}")
    return tuple(out)


def compile_options(arch: str, path: Path, defines: Mapping[str, Any] | None = None,
                    options: Sequence[str] = ()) -> tuple[str, ...]:
    """The full NVRTC option list: architecture, defaults, the include folders (:func:`include_dirs`),
    defines, then the caller's options."""
    return (f"--gpu-architecture={arch}", *DEFAULT_OPTIONS, *(f"-I{d}" for d in include_dirs(path)),
            *define_options(defines), *options)
