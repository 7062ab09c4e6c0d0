"""Compiling CUDA sources in the tests without a GPU, each build once per session.

Several test files build the same source with the same defines (a version's CONFIG is checked by
its own tests and by tests/test_nvrtc_builds.py; a clean build is read for its registers, its
spills and its advisories): :func:`nvcc` and :func:`nvrtc` keep each build's log, keyed by the
source's path, the digest of its include closure (:func:`reporter.cuda.source_digest`) and the
defines, so a second test that asks for it reads the log instead of compiling again. Under pytest-xdist
the logs are also kept in :data:`SHARED` (conftest sets it to a folder of the run), where the other
workers read them; a build one worker is making, another waits for instead of making it too.

A build whose defines repeat the source's own defaults (a version's CONFIG is mostly its defaults:
``-DSTAGES=2`` over ``#ifndef STAGES / #define STAGES 2``) is the defaults build when NVRTC's front end
says so: :func:`nvrtc` compiles both sets of defines to NVRTC's LTO IR (``-dlto``, the front end's
whole output, a few hundredths of a second) and, where IR and log are byte for byte the same, takes
the build without those defines. A define that changes anything the front end sees (a header that
names a setting for its own parameter, an ``#ifdef``) gives other IR or another log, and a build of its
own.

- :func:`nvcc`: ``nvcc -cubin -Xptxas -v`` for sm_90a, the command of :func:`reporter.cuda.ptxas_report`
  (whose own path, the error it raises, the tests keep for the builds that must fail);
- :func:`nvrtc`: :func:`reporter.cuda.nvrtc_compile_offline`, NVRTC with ``report run``'s options;
- :func:`nvrtc_front`: the same through the front end only, for what only the front end can refuse.
"""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from reporter import cuda

NVCC = shutil.which("nvcc")
NVRTC_LIBRARY = cuda.find_nvrtc_library()
SHARED: Path | None = None  # under pytest-xdist, the folder where every worker keeps and reads the builds' logs


@dataclass(frozen=True)
class Build:
    ok: bool
    log: str  # the compiler's output: ptxas -v's report, its advisories, the errors

    @property
    def report(self) -> cuda.PtxasReport:
        return cuda.parse_ptxas_log(self.log)

    def kernel(self, name: str) -> cuda.KernelResources:
        """The entry ``name`` of this build's ptxas report (fails the test if the build has none)."""
        found = [k for k in self.report.kernels if k.name == name and k.entry]
        assert len(found) == 1, f"kernel {name}: {len(found)} entries in\n{self.log[-3000:]}"
        return found[0]

    def kernels(self) -> list[cuda.KernelResources]:
        return [k for k in self.report.kernels if k.entry]


def _key(defines: Mapping[str, Any] | None) -> tuple[tuple[str, Any], ...]:
    """The defines as the compiler is given them (``-DBM=256`` from 256, "256" or a bool's 1): a CONFIG
    given as numbers by one test and as text by another is one build."""
    return tuple((o[2:].partition("=")[0], o.partition("=")[2] if "=" in o else None)
                 for o in cuda.define_options(defines))


def _shared(compile_: Callable[..., Build]) -> Callable[..., Build]:
    """``compile_`` once per (path, digest, defines, arch) and process; under pytest-xdist, once per run."""

    @cache
    def once(path: Path, digest: str, defines: tuple[tuple[str, Any], ...], arch: str) -> Build:
        if SHARED is None:
            return compile_(path, digest, defines, arch)
        name = hashlib.sha256(repr((compile_.__name__, str(path), digest, defines, arch)).encode()).hexdigest()[:32]
        kept = SHARED / f"{name}.json"
        if kept.is_file():
            return Build(**json.loads(kept.read_text()))
        with open(SHARED / f"{name}.lock", "a") as lock:  # the other worker, making it now, finishes first
            fcntl.flock(lock, fcntl.LOCK_EX)
            if kept.is_file():
                return Build(**json.loads(kept.read_text()))
            build = compile_(path, digest, defines, arch)
            tmp = kept.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"ok": build.ok, "log": build.log}))
            os.replace(tmp, kept)  # whole or not at all: another worker reads it
        return build

    return once


def nvcc(source: Path, defines: Mapping[str, Any] | None = None, arch: str = "sm_90a") -> Build:
    """``source`` built to a cubin by nvcc with ``-Xptxas -v`` (as :func:`reporter.cuda.ptxas_report`)."""
    path = Path(source).resolve()
    return _nvcc(path, cuda.source_digest(path), _key(defines), arch)


@_shared
def _nvcc(path: Path, digest: str, defines: tuple[tuple[str, Any], ...], arch: str) -> Build:
    assert NVCC is not None, "nvcc not installed"
    cc = arch.removeprefix("sm_")
    cmd = [NVCC, f"-gencode=arch=compute_{cc},code={arch}", "-cubin", "-std=c++17", "-Xptxas", "-v",
           *(f"-I{d}" for d in cuda.include_dirs(path)), *cuda.define_options(dict(defines)),
           "-o", "/dev/null", str(path)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    return Build(res.returncode == 0, res.stdout + res.stderr)


def nvrtc(source: Path, defines: Mapping[str, Any] | None = None, arch: str = "sm_90a") -> Build:
    """``source`` compiled by the offline NVRTC with ``report run``'s options
    (:func:`reporter.cuda.nvrtc_compile_offline`); the build without the defines that repeat the
    source's defaults where the front end sees no difference (see the module's docstring)."""
    path = Path(source).resolve()
    digest = cuda.source_digest(path)
    return _nvrtc(path, digest, _without_defaults(path, digest, _key(defines), arch), arch)


# `#ifndef NAME` / `#define NAME VALUE`: a setting's default, which a -DNAME=VALUE repeats
_DEFAULT = re.compile(r"^\s*#\s*ifndef\s+([A-Za-z_]\w*)\s*\n\s*#\s*define\s+\1[ \t]+([^\s/]+)[ \t]*(?://[^\n]*)?$",
                      re.MULTILINE)


@cache
def _defaults(path: Path, digest: str) -> dict[str, str]:
    """Each setting's default in ``path`` and the headers it reaches, as ``-D`` would state it (the first
    one found: a candidate only, :func:`_front_end` decides)."""
    out: dict[str, str] = {}
    for f in cuda.source_files(path):
        for name, value in _DEFAULT.findall(f.read_text(encoding="utf-8")):
            out.setdefault(name, f"-D{name}={value}")
    return out


def _without_defaults(path: Path, digest: str, defines: tuple[tuple[str, Any], ...],
                      arch: str) -> tuple[tuple[str, Any], ...]:
    """``defines`` less those that state a default of the source, when NVRTC's front end makes the same
    of the source with and without them; else ``defines``."""
    defaults = _defaults(path, digest)
    kept = tuple((n, v) for n, v in defines if cuda.define_options({n: v})[0] != defaults.get(n))
    if kept == defines or _front_end(path, digest, defines, arch) != _front_end(path, digest, kept, arch):
        return defines
    return kept


@cache
def _front_end(path: Path, digest: str, defines: tuple[tuple[str, Any], ...], arch: str) -> str:
    """sha256 of what NVRTC's front end makes of ``path`` with ``report run``'s options and these
    defines: the LTO IR of ``-dlto`` (everything the later stages compile) and the log."""
    assert NVRTC_LIBRARY is not None, "no libnvrtc (pip install nvidia-cuda-nvrtc)"
    lib = _nvrtc_library()
    opts = [o.encode() for o in (*cuda.compile_options(arch, path, dict(defines)), "-dlto")]
    prog = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(prog), path.read_bytes(), path.name.encode(), 0, None, None) != 0:
        raise RuntimeError(f"{path}: nvrtcCreateProgram failed")
    try:
        rc = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, log)
        ir = b""
        if rc == 0:
            lib.nvrtcGetLTOIRSize(prog, ctypes.byref(size))
            buf = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetLTOIR(prog, buf)
            ir = buf.raw
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return hashlib.sha256(b"%d\0%s\0%s" % (rc, log.value, ir)).hexdigest()


@cache
def _nvrtc_library() -> Any:
    from reporter.cuda.nvrtc import _load

    assert NVRTC_LIBRARY is not None
    return _load(NVRTC_LIBRARY)


@_shared
def _nvrtc(path: Path, digest: str, defines: tuple[tuple[str, Any], ...], arch: str) -> Build:
    assert NVRTC_LIBRARY is not None, "no libnvrtc (pip install nvidia-cuda-nvrtc)"
    ok, log = cuda.nvrtc_compile_offline(path, arch=arch, defines=dict(defines), library=NVRTC_LIBRARY)
    return Build(ok, log)


def nvrtc_front(source: Path, defines: Mapping[str, Any] | None = None, arch: str = "sm_90a") -> Build:
    """``source`` through NVRTC's front end only (``--fdevice-syntax-only``, ``report run``'s options
    otherwise): it parses and type-checks with these defines; no code, no ptxas report."""
    path = Path(source).resolve()
    return _nvrtc_front(path, cuda.source_digest(path), _key(defines), arch)


@_shared
def _nvrtc_front(path: Path, digest: str, defines: tuple[tuple[str, Any], ...], arch: str) -> Build:
    assert NVRTC_LIBRARY is not None, "no libnvrtc (pip install nvidia-cuda-nvrtc)"
    ok, log = cuda.nvrtc_compile_offline(path, arch=arch, defines=dict(defines), library=NVRTC_LIBRARY,
                                         syntax_only=True)
    return Build(ok, log)


_OFFLINE: dict[tuple[Any, ...], cuda.OfflineBuild] = {}


def offline_build(path: str | Path, *, arch: str = "sm_90a", defines: Mapping[str, Any] | None = None,
                  library: Path | None = None) -> cuda.OfflineBuild:
    """:func:`reporter.cuda.nvrtc_build_offline`, once per process for each source (its path and the
    digest of its include closure) and options, as :func:`nvrtc` keys its builds. A same-code proof
    compiles each build a run recorded once per kernel of it, and the tree's code once per recorded
    code: the same file with the same options, over and over. Code in two folders (the tree and a
    recorded code written out to a temporary one) is still compiled in each. A compile that fails
    raises each time."""
    path = Path(path).resolve()
    key = (path, cuda.source_digest(path), arch, _key(defines), str(library))
    if key not in _OFFLINE:
        from reporter.cuda import nvrtc as offline  # the module's own function, whatever a test patched

        _OFFLINE[key] = offline.nvrtc_build_offline(path, arch=arch, defines=defines, library=library)
    return _OFFLINE[key]
