"""CUDA sources compiled at run time (NVRTC, through CuPy) and launched on PyTorch's stream.

A version keeps its kernels in a ``.cu`` file beside its ``.py``. :func:`load_module` compiles
that file with NVRTC for the current device's own architecture (``sm_90a`` on Hopper: the
``a`` target is what enables ``wgmma``/``setmaxnreg``), loads the cubin, and caches the module
per (source text, options, defines, device). :meth:`CudaModule.kernel` returns a
:class:`CudaKernel` that launches on ``torch.cuda.current_stream()`` with torch tensors passed
as raw device pointers and scalars passed with their explicit numpy dtype::

    mod = load_module(Path(__file__).with_suffix(".cu"), defines={"THREADS": 256})
    k = mod.kernel("my_kernel")
    k((blocks,), (256,), x, out, np.uint32(n), shared_mem=64 * 1024)

Why not ``cupy.RawModule(code=...)``: it appends its own ``-arch=sm_XX`` and NVRTC rejects a
second architecture option, so an ``sm_90a`` build cannot be asked for through it. This
module drives CuPy's NVRTC binding itself and loads the result with CuPy's ``Module``, so CuPy
stays the only dependency. NVRTC optimises device code by default (there is no ``-O3``);
``-lineinfo`` is on so Nsight Compute can map SASS back to source lines, and
``--ptxas-options=-v`` so the program log carries ptxas's report: :func:`parse_ptxas_log` turns
it into each kernel's registers, stack, spills and performance advisories
(:attr:`CudaModule.resources`). Inside :func:`track_launches` every kernel launched is collected,
so a caller (the harness) can record what the compiler said about the kernels a call ran.

CuPy and torch are imported inside the functions that need them: importing a version module
on a machine without a GPU (to read its docstring, or in CPU tests) never fails here.
``python -m reporter.cuda FILE.cu ...`` compiles with ``nvcc -Xptxas -v`` (no GPU needed) and
prints each kernel's registers, shared memory, stack and spills.

Nothing in this module knows any particular assignment.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# --ptxas-options=-v only adds ptxas's resource report to the program log; the code is unchanged
DEFAULT_OPTIONS: tuple[str, ...] = ("-std=c++17", "-lineinfo", "--ptxas-options=-v")
ARCH_ENV = "REPORTER_CUDA_ARCH"  # e.g. 'sm_90' to build without the arch-specific features

# CUfunction_attribute values of the CUDA driver API (stable across releases)
_ATTRS = {
    "max_threads_per_block": 0,
    "shared_size_bytes": 1,
    "const_size_bytes": 2,
    "local_size_bytes": 3,
    "num_regs": 4,
    "ptx_version": 5,
    "binary_version": 6,
    "max_dynamic_shared_size_bytes": 8,
}
_MAX_DYNAMIC_SMEM_ATTR = 8
_STATIC_SMEM_LIMIT = 48 * 1024

_INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)


class CudaCompileError(RuntimeError):
    """NVRTC (or nvcc) rejected a source; the message names the file and carries the log."""


# --------------------------------------------------------------------------- options


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
    """The full NVRTC option list: architecture, defaults, the source's folder on the include
    path (so a kernel can include a sibling ``.cuh``), defines, then the caller's options."""
    return (f"--gpu-architecture={arch}", *DEFAULT_OPTIONS, f"-I{path.parent}",
            *define_options(defines), *options)


def source_digest(path: Path) -> str:
    """sha256 of the source and of the local headers it includes (one level), for the cache key."""
    text = path.read_text(encoding="utf-8")
    h = hashlib.sha256(text.encode())
    for inc in _INCLUDE_RE.findall(text):
        p = path.parent / inc
        if p.is_file():
            h.update(inc.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


# --------------------------------------------------------------------------- launch arguments


def kernel_arg(x: Any) -> Any:
    """One launch argument as CuPy's launcher takes it.

    A torch tensor (on a CUDA device) becomes its device pointer as ``numpy.uint64``; ``None``
    a null pointer; numpy scalars pass through with their dtype; a CuPy array passes through.
    Plain Python numbers are refused: the kernel's parameter type must be spelled out
    (``np.int32(n)``), or an ``int`` would silently travel as 64 bits.
    """
    import numpy as np

    if x is None:
        return np.uint64(0)
    if isinstance(x, np.generic):
        return x
    if isinstance(x, (bool, int, float)):
        raise TypeError(f"kernel argument {x!r} is a Python {type(x).__name__}: pass a numpy scalar "
                        "with the kernel's parameter type, e.g. np.int32(n) or np.float32(x)")
    if hasattr(x, "data_ptr") and hasattr(x, "is_cuda"):  # a torch.Tensor, without importing torch
        if not x.is_cuda:
            raise ValueError(f"tensor argument is on {x.device}, not on a CUDA device")
        return np.uint64(x.data_ptr())
    if type(x).__module__.startswith("cupy"):
        return x
    raise TypeError(f"unsupported kernel argument of type {type(x).__name__}")


@dataclass(frozen=True)
class _StreamRef:
    """What CuPy's launcher reads from a stream object: its handle, as ``.ptr``."""

    ptr: int


def _torch_stream_ref(device_index: int) -> _StreamRef:
    import torch

    return _StreamRef(int(torch.cuda.current_stream(device_index).cuda_stream))


# --------------------------------------------------------------------------- kernels and modules


@dataclass(eq=False)
class CudaKernel:
    """One ``extern "C" __global__`` function of a loaded module."""

    name: str
    module: CudaModule
    function: Any = field(repr=False)
    _max_dynamic_smem: int = field(default=_STATIC_SMEM_LIMIT, repr=False)
    tracked: bool = True  # False for a harness's own kernels, which track_launches() must not collect

    @property
    def resources(self) -> KernelResources | None:
        """What ptxas reported for this kernel when its module was compiled (None: nothing parsed)."""
        return self.module.resources.get(self.name)

    def attribute(self, key: str) -> int:
        from cupy.cuda import driver

        return int(driver.funcGetAttribute(_ATTRS[key], self.function.ptr))

    @property
    def attributes(self) -> dict[str, int]:
        """Registers, static/local/const memory and limits, as the driver reports them."""
        return {k: self.attribute(k) for k in _ATTRS}

    def set_max_dynamic_shared_memory(self, nbytes: int) -> None:
        """Opt in to more than 48 KB of dynamic shared memory per block (227 KB on H100)."""
        from cupy.cuda import driver

        driver.funcSetAttribute(self.function.ptr, _MAX_DYNAMIC_SMEM_ATTR, int(nbytes))
        self._max_dynamic_smem = int(nbytes)

    def __call__(self, grid: Sequence[int] | int, block: Sequence[int] | int, *args: Any,
                 shared_mem: int = 0, stream: Any = None) -> None:
        """Launch on ``stream`` (default: torch's current stream of the module's device).

        A ``shared_mem`` above the current dynamic limit raises the limit first, once.
        """
        grid_t = (int(grid),) if isinstance(grid, int) else tuple(int(g) for g in grid)
        block_t = (int(block),) if isinstance(block, int) else tuple(int(b) for b in block)
        if shared_mem > self._max_dynamic_smem:
            self.set_max_dynamic_shared_memory(shared_mem)
        if _TRACKING is not None and self.tracked:
            _note_launch(self)
        if stream is None:
            stream = _torch_stream_ref(self.module.device_index)
        elif not hasattr(stream, "ptr"):
            stream = _StreamRef(int(getattr(stream, "cuda_stream", stream)))
        self.function(grid_t, block_t, tuple(kernel_arg(a) for a in args),
                      shared_mem=int(shared_mem), stream=stream)


@dataclass(eq=False)
class CudaModule:
    """A compiled and loaded source file on one device, with what ptxas said about it."""

    path: Path
    arch: str
    options: tuple[str, ...]
    device_index: int
    binary: bytes = field(repr=False)
    log: str = field(default="", repr=False)
    compiler: str | None = None  # e.g. 'nvrtc 13.0'
    resources: dict[str, KernelResources] = field(default_factory=dict, repr=False)  # by function name
    advisories: list[str] = field(default_factory=list)  # ptxas advisories that name no function of the module
    _module: Any = field(default=None, repr=False)
    _kernels: dict[str, CudaKernel] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.log and not self.resources:
            try:  # the report is information: a log this parser does not understand never stops a load
                report = parse_ptxas_log(self.log)
            except Exception:
                return
            self.resources = {k.name: k for k in report.kernels}
            self.advisories = report.advisories

    def kernel(self, name: str, *, max_dynamic_shared_memory: int | None = None) -> CudaKernel:
        k = self._kernels.get(name)
        if k is None:
            try:
                fn = self._module.get_function(name)
            except Exception as e:
                raise CudaCompileError(f"{self.path}: no kernel named '{name}' in the module "
                                       f"(kernels must be extern \"C\"): {e}") from e
            k = CudaKernel(name, self, fn)
            self._kernels[name] = k
            _REGISTRY.append(k)
        if max_dynamic_shared_memory is not None and max_dynamic_shared_memory != k._max_dynamic_smem:
            k.set_max_dynamic_shared_memory(max_dynamic_shared_memory)
        return k


_CACHE: dict[tuple, CudaModule] = {}
_FAST: dict[tuple, tuple[int, int, CudaModule]] = {}  # (path, defines, options, device) -> (mtime, size, module)
_REGISTRY: list[CudaKernel] = []
_LOCK = threading.Lock()


def loaded_kernels() -> list[CudaKernel]:
    """Every kernel fetched so far in this process (e.g. to print their resource usage)."""
    return list(_REGISTRY)


_TRACKING: list[CudaKernel] | None = None  # the kernels launched inside the active track_launches()
_TRACK_LOCK = threading.Lock()


def _note_launch(kernel: CudaKernel) -> None:
    with _TRACK_LOCK:
        if _TRACKING is not None and not any(k is kernel for k in _TRACKING):
            _TRACKING.append(kernel)


@contextmanager
def track_launches() -> Iterator[list[CudaKernel]]:
    """Collect every :class:`CudaKernel` launched inside the block, from any thread, once each, in
    the order of their first launch; the list it yields fills as launches happen and stays valid
    after the block. Kernels marked ``tracked = False`` (a harness's own) are left out.

    One tracking at a time per process: a nested ``track_launches()`` raises ``RuntimeError``
    rather than splitting the launches between two lists.
    """
    global _TRACKING
    launched: list[CudaKernel] = []
    with _TRACK_LOCK:
        if _TRACKING is not None:
            raise RuntimeError("track_launches() is already active in this process; nested tracking is not "
                               "supported (the outer block already collects every launch)")
        _TRACKING = launched
    try:
        yield launched
    finally:
        with _TRACK_LOCK:
            _TRACKING = None


def _current_device_index() -> int:
    import torch

    return int(torch.cuda.current_device())


def load_module(path: str | Path, *, defines: Mapping[str, Any] | None = None,
                options: Sequence[str] = (), device_index: int | None = None) -> CudaModule:
    """Compile ``path`` for the device's architecture (once per source text, options, defines
    and device) and load it there.

    This runs inside timed calls, so a repeated call costs a dictionary look-up and one
    ``stat`` of the file: the source is re-read and re-hashed only when its modification time
    or size changed (an edited header alone is seen by a new process, or after touching the
    ``.cu``).
    """
    if device_index is None:
        device_index = _current_device_index()
    fast_key = (str(path), tuple(sorted((defines or {}).items())), tuple(options), device_index)
    st = os.stat(path)
    hit = _FAST.get(fast_key)
    if hit is not None and hit[0] == st.st_mtime_ns and hit[1] == st.st_size:
        return hit[2]

    import cupy

    resolved = Path(path).resolve()
    cc = cupy.cuda.Device(device_index).compute_capability  # e.g. '90'
    arch = arch_for(cc)
    opts = compile_options(arch, resolved, defines, options)
    key = (str(resolved), source_digest(resolved), opts, device_index)
    with _LOCK:
        mod = _CACHE.get(key)
        if mod is None:
            binary, log = _nvrtc_compile(resolved, opts)
            mod = CudaModule(path=resolved, arch=arch, options=opts, device_index=device_index, binary=binary,
                             log=log, compiler=nvrtc_version())
            with cupy.cuda.Device(device_index):
                m = cupy.cuda.function.Module()
                m.load(binary)
            mod._module = m
            _CACHE[key] = mod
        _FAST[fast_key] = (st.st_mtime_ns, st.st_size, mod)
    return mod


def nvrtc_version() -> str | None:
    """'nvrtc 13.0', from CuPy's NVRTC binding; None where it cannot say."""
    try:
        from cupy.cuda import nvrtc

        major, minor = nvrtc.getVersion()
        return f"nvrtc {major}.{minor}"
    except Exception:
        return None


def _nvrtc_compile(path: Path, options: tuple[str, ...]) -> tuple[bytes, str]:
    from cupy.cuda import nvrtc

    source = path.read_text(encoding="utf-8")
    prog = nvrtc.createProgram(source, path.name, [], [])
    try:
        try:
            nvrtc.compileProgram(prog, list(options))
        except Exception as e:
            log = nvrtc.getProgramLog(prog)
            raise CudaCompileError(f"{path}: NVRTC failed ({type(e).__name__}: {e})\n"
                                   f"options: {' '.join(options)}\n{log}") from None
        log = nvrtc.getProgramLog(prog)
        return nvrtc.getCUBIN(prog), log
    finally:
        nvrtc.destroyProgram(prog)


# --------------------------------------------------------------------------- offline report (no GPU)


@dataclass
class KernelResources:
    """What ``ptxas -v`` says about one kernel (or device function), whether through nvcc or NVRTC."""

    name: str
    arch: str = ""
    registers: int | None = None
    shared_bytes: int = 0
    stack_bytes: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    barriers: int = 0
    advisories: list[str] = field(default_factory=list)  # ptxas warnings and (C75xx) advisories naming it
    entry: bool = False  # a kernel ('Compiling entry function'), not a device function with its own frame


@dataclass
class PtxasReport:
    """A whole ``ptxas -v`` report: each function's resources, and the advisories naming no kernel."""

    kernels: list[KernelResources]
    advisories: list[str] = field(default_factory=list)


def ptxas_report(path: str | Path, *, arch: str = "sm_90a", defines: Mapping[str, Any] | None = None,
                 nvcc: str | None = None) -> list[KernelResources]:
    """Compile ``path`` to a cubin with ``nvcc -Xptxas -v`` (no GPU needed) and parse the report.

    Raises :class:`CudaCompileError` with nvcc's output when the build fails.
    """
    path = Path(path).resolve()
    nvcc = nvcc or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    cc = arch.removeprefix("sm_")
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [nvcc, f"-gencode=arch=compute_{cc},code={arch}", "-cubin", "-std=c++17", "-Xptxas", "-v",
               f"-I{path.parent}", *define_options(defines), "-o", str(Path(tmp) / "out.cubin"), str(path)]
        res = subprocess.run(cmd, capture_output=True, text=True)
    text = res.stdout + res.stderr
    if res.returncode != 0:
        raise CudaCompileError(f"{path}: nvcc failed\n$ {' '.join(cmd)}\n{text}")
    return parse_ptxas(text)


_FUNCTION_RE = re.compile(r"(?:Compiling entry function|Function properties for) '?([A-Za-z_][\w$]*)'?"
                          r"(?: for '(sm_\w+)')?")
# 'ptxas info    : (C7512) Potential Performance Loss: ...', 'ptxas warning : ...'
_ADVISORY_RE = re.compile(r"^\s*ptxas\s+(info|warning|error)\s*:\s*(.*\S)\s*$")
_QUOTED_RE = re.compile(r"'([A-Za-z_][\w$]*)'")
_NAMED_FUNCTION_RE = re.compile(r"\b(?:function|entry)\s+'?([A-Za-z_][\w$]*)'?")


def _advisory(line: str) -> str | None:
    """The text of a ptxas warning or performance advisory line, None for an ordinary report line."""
    m = _ADVISORY_RE.match(line)
    if m is None:
        return None
    level, text = m.groups()
    if level == "info" and not re.match(r"\(C\d{4}\)", text) and "Performance Loss" not in text:
        return None
    return text if level == "info" else f"{level}: {text}"


def parse_ptxas_log(text: str) -> PtxasReport:
    """Parse a ``ptxas -v`` report as nvcc prints it or as NVRTC's program log holds it
    (``--ptxas-options=-v``). An advisory goes to the kernel it names (quoted, or after
    'function'/'entry'), wherever in the log that kernel's own lines are; one that names no
    kernel of the report (nothing, or only a device function) goes to :attr:`PtxasReport.advisories`."""
    out: list[KernelResources] = []
    advisories: list[str] = []
    cur: KernelResources | None = None
    for line in text.splitlines():
        if (adv := _advisory(line)) is not None:
            advisories.append(adv)
            continue
        m = _FUNCTION_RE.search(line)
        if m:
            name = m.group(1)
            cur = next((k for k in out if k.name == name), None)
            if cur is None:
                cur = KernelResources(name=name, arch=m.group(2) or "")
                out.append(cur)
            elif m.group(2) and not cur.arch:
                cur.arch = m.group(2)
            cur.entry = cur.entry or "Compiling entry function" in line
            continue
        if cur is None:
            continue
        # nvcc: 'ptxas info    : Used 40 registers, ...'; NVRTC adds 'ptxas         .     152 bytes stack frame, ...'
        if m := re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line):
            cur.stack_bytes, cur.spill_stores, cur.spill_loads = (int(g) for g in m.groups())
        if m := re.search(r"Used (\d+) registers", line):
            cur.registers = int(m.group(1))
        if m := re.search(r"used (\d+) barriers", line):
            cur.barriers = int(m.group(1))
        if m := re.search(r"(\d+) bytes smem", line):
            cur.shared_bytes = int(m.group(1))
    by_name = {k.name: k for k in out if k.entry}
    unnamed: list[str] = []
    for adv in advisories:
        names = _QUOTED_RE.findall(adv) + _NAMED_FUNCTION_RE.findall(adv)
        owner = next((by_name[n] for n in names if n in by_name), None)
        if owner is None:
            unnamed.append(adv)
        elif adv not in owner.advisories:
            owner.advisories.append(adv)
    return PtxasReport(kernels=out, advisories=unnamed)


def parse_ptxas(text: str) -> list[KernelResources]:
    """Each function's resources from a ``ptxas -v`` report (see :func:`parse_ptxas_log`)."""
    return parse_ptxas_log(text).kernels


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m reporter.cuda [--arch sm_90a] [-DNAME=VALUE ...] FILE.cu ...``"""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m reporter.cuda", description=main.__doc__)
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE")
    args = ap.parse_args(argv)
    defines = dict(d.split("=", 1) if "=" in d else (d, None) for d in args.defines)
    status = 0
    for f in args.files:
        try:
            rows = ptxas_report(f, arch=args.arch, defines=defines)
        except CudaCompileError as e:
            print(e, file=sys.stderr)
            status = 1
            continue
        for r in rows:
            print(f"{f.name:<28} {r.name:<34} {r.arch:<8} regs {r.registers!s:>3}  smem {r.shared_bytes:>6} B  "
                  f"stack {r.stack_bytes} B  spills {r.spill_stores}/{r.spill_loads} B  barriers {r.barriers}")
            for adv in r.advisories:
                print(f"{'':<28} {adv}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
