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
from collections.abc import Callable, Iterator, Mapping, Sequence
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


def include_dirs(path: Path) -> tuple[Path, Path]:
    """Where ``#include "..."`` of a source is looked for, in order: the source's folder (a sibling:
    ``v19_double_q.cu``, ``trace.cuh``) and the folder above it, from which shared headers are named
    by their path (``common/sm90/mbarrier.cuh`` from ``kernels/``). An exported submission places
    shared headers under its own folder by that same path, so the first entry finds them there."""
    folder = Path(path).resolve().parent
    return folder, folder.parent


def compile_options(arch: str, path: Path, defines: Mapping[str, Any] | None = None,
                    options: Sequence[str] = ()) -> tuple[str, ...]:
    """The full NVRTC option list: architecture, defaults, the include folders (:func:`include_dirs`),
    defines, then the caller's options."""
    return (f"--gpu-architecture={arch}", *DEFAULT_OPTIONS, *(f"-I{d}" for d in include_dirs(path)),
            *define_options(defines), *options)


@dataclass(frozen=True)
class Include:
    """One local header a source reaches: the file, the name it is included by (the path from
    ``root``), and the include folder it was found under."""

    path: Path
    name: str
    root: Path


def includes(path: str | Path) -> list[Include]:
    """Every local header ``path`` reaches through ``#include "..."``, transitively, each once, in
    the order first reached. A name is looked up beside the including file, then in
    :func:`include_dirs` of ``path`` (the preprocessor's order for quoted includes); a name found
    nowhere is a system or NVRTC header and is left out. This is the one include scanner: the
    compile cache key, the records' source closure and the export all use it."""
    main = Path(path).resolve()
    hit = _FOUND.get(main)
    if hit is not None and all(_stat_key(f) == k for f, k in hit[0]):
        return list(hit[1])
    dirs = include_dirs(main)
    out: list[Include] = []
    seen = {main}
    todo = [main]
    while todo:
        cur = todo.pop(0)
        for name in _INCLUDE_RE.findall(cur.read_text(encoding="utf-8")):
            for root in (cur.parent, *dirs):
                q = (root / name).resolve()
                if q.is_file():
                    if q not in seen:
                        seen.add(q)
                        out.append(Include(q, name, root.resolve()))
                        todo.append(q)
                    break
    _FOUND[main] = ([(f, _stat_key(f)) for f in (main, *(i.path for i in out))], tuple(out))
    return out


# what includes() found for a source, with the state of every file it read: valid while none changed
_FOUND: dict[Path, tuple[list[tuple[Path, tuple[int, int] | None]], tuple[Include, ...]]] = {}


def _stat_key(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def source_files(path: str | Path) -> list[Path]:
    """The source and every local header it reaches: what a compile of ``path`` reads."""
    main = Path(path).resolve()
    return [main, *(i.path for i in includes(main))]


def source_digest(path: Path) -> str:
    """sha256 over the source and every local header it reaches (by path and content), for the cache key."""
    h = hashlib.sha256()
    for p in source_files(path):
        h.update(str(p).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def file_sha256(path: Path) -> str:
    """sha256 of a source's text, as records and exports state it."""
    return hashlib.sha256(Path(path).read_text(encoding="utf-8").encode()).hexdigest()


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
class ParamBytes:
    """A kernel parameter passed by value as raw bytes: a struct the launcher has no numpy type
    for, such as a 128-byte ``CUtensorMap`` received as a ``const __grid_constant__`` parameter.

    The driver copies as many bytes as the kernel's parameter declares, so ``data`` must be
    exactly that long (:func:`encode_tensor_map` returns one of the right size).
    """

    data: bytes
    what: str = "struct"  # named in errors

    def __post_init__(self) -> None:
        if not isinstance(self.data, (bytes, bytearray)) or not self.data:
            raise TypeError(f"ParamBytes({self.what}) needs non-empty bytes, got {type(self.data).__name__}")


def param_buffers(args: Sequence[Any]) -> list[bytes]:
    """Each launch argument as the bytes the driver copies into the kernel's parameter space
    (``cuLaunchKernel``'s ``kernelParams``): pointers and numpy scalars in their own width,
    :class:`ParamBytes` as given."""
    out: list[bytes] = []
    for i, a in enumerate(args):
        if isinstance(a, ParamBytes):
            out.append(bytes(a.data))
            continue
        x = kernel_arg(a)
        if hasattr(x, "tobytes"):
            out.append(x.tobytes())
        elif hasattr(x, "data") and hasattr(x.data, "ptr"):  # a CuPy array: its device pointer
            import numpy as np

            out.append(np.uint64(x.data.ptr).tobytes())
        else:
            raise TypeError(f"kernel argument {i} of type {type(a).__name__} cannot be passed by raw launch")
    return out


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
    raw: Any = field(repr=False)  # CuPy's function: launch through __call__, plan() or `function`
    _max_dynamic_smem: int = field(default=_STATIC_SMEM_LIMIT, repr=False)
    tracked: bool = True  # False for a harness's own kernels, which track_launches() must not collect

    @property
    def function(self) -> Any:
        """CuPy's function, for a version that launches it itself (a launch plan of its own): taking
        it inside :func:`track_launches` counts as launching it, so the run still records its build."""
        if _TRACKING is not None and self.tracked:
            _note_launch(self)
        return self.raw

    @property
    def resources(self) -> KernelResources | None:
        """What ptxas reported for this kernel when its module was compiled (None: nothing parsed)."""
        return self.module.resources.get(self.name)

    def attribute(self, key: str) -> int:
        from cupy.cuda import driver

        return int(driver.funcGetAttribute(_ATTRS[key], self.raw.ptr))

    @property
    def attributes(self) -> dict[str, int]:
        """Registers, static/local/const memory and limits, as the driver reports them."""
        return {k: self.attribute(k) for k in _ATTRS}

    def set_max_dynamic_shared_memory(self, nbytes: int) -> None:
        """Opt in to more than 48 KB of dynamic shared memory per block (227 KB on H100)."""
        from cupy.cuda import driver

        driver.funcSetAttribute(self.raw.ptr, _MAX_DYNAMIC_SMEM_ATTR, int(nbytes))
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
        if any(isinstance(a, ParamBytes) for a in args):
            self._launch_raw(grid_t, block_t, args, int(shared_mem), int(stream.ptr))
            return
        self.raw(grid_t, block_t, tuple(kernel_arg(a) for a in args),
                      shared_mem=int(shared_mem), stream=stream)

    def _launch_raw(self, grid: tuple[int, ...], block: tuple[int, ...], args: Sequence[Any],
                    shared_mem: int, stream: int) -> None:
        """``cuLaunchKernel`` with a ``kernelParams`` array built here: CuPy's own launcher has no
        way to pass a struct by value."""
        LaunchPlan(self, grid, block, args, shared_mem=shared_mem).launch(stream)

    def plan(self, grid: Sequence[int] | int, block: Sequence[int] | int, *args: Any,
             shared_mem: int = 0) -> LaunchPlan:
        """This kernel's launch with ``args`` packed once (see :class:`LaunchPlan`)."""
        return LaunchPlan(self, grid, block, args, shared_mem=shared_mem)


class LaunchPlan:
    """One kernel launch with its parameters packed once, for a call path that repeats it.

    A Python call that builds a launch from scratch (validating inputs, encoding tensor maps,
    converting every argument) can take longer than a small kernel runs, and under plain event
    timing, the course harnesses' way, the GPU idles for that time inside the sample. A plan
    holds the ``kernelParams`` array (:func:`param_buffers` of ``args``) ready for
    ``cuLaunchKernel``; :meth:`set_pointer` rewrites one pointer argument in place (a fresh
    output tensor, say) and :meth:`launch` costs one driver call. The driver copies the
    parameters at launch, so a plan can be changed and launched again at once.
    """

    def __init__(self, kernel: CudaKernel, grid: Sequence[int] | int, block: Sequence[int] | int,
                 args: Sequence[Any], *, shared_mem: int = 0) -> None:
        import ctypes

        grid_t = (int(grid),) if isinstance(grid, int) else tuple(int(g) for g in grid)
        block_t = (int(block),) if isinstance(block, int) else tuple(int(b) for b in block)
        if shared_mem > kernel._max_dynamic_smem:
            kernel.set_max_dynamic_shared_memory(shared_mem)
        self.kernel = kernel
        self.grid = (*grid_t, 1, 1)[:3]
        self.block = (*block_t, 1, 1)[:3]
        self.shared_mem = int(shared_mem)
        self._buffers = [ctypes.create_string_buffer(b, len(b)) for b in param_buffers(args)]
        self._params = (ctypes.c_void_p * max(1, len(self._buffers)))(*[ctypes.addressof(b) for b in self._buffers])
        self._pointers: dict[int, Any] = {}

    def pointer(self, index: int) -> Any:
        """Argument ``index``, a pointer, as a ``ctypes.c_uint64`` over the packed parameter: set its
        ``.value`` to point the next launch elsewhere (what :meth:`set_pointer` does, without the lookup)."""
        view = self._pointers.get(index)
        if view is None:
            import ctypes

            if len(self._buffers[index]) != 8:
                raise ValueError(f"launch argument {index} is {len(self._buffers[index])} bytes, not a pointer")
            view = self._pointers[index] = ctypes.c_uint64.from_buffer(self._buffers[index])
        return view

    def set_pointer(self, index: int, pointer: int) -> None:
        """Argument ``index``, a pointer, now holds ``pointer`` (e.g. ``out.data_ptr()``)."""
        self.pointer(index).value = pointer

    def launch(self, stream: int) -> None:
        """Launch on the raw stream handle ``stream`` (e.g. ``torch.cuda.current_stream().cuda_stream``)."""
        import ctypes

        from cupy.cuda import driver

        if _TRACKING is not None and self.kernel.tracked:
            _note_launch(self.kernel)
        g, b = self.grid, self.block
        driver.launchKernel(self.kernel.raw.ptr, g[0], g[1], g[2], b[0], b[1], b[2], self.shared_mem, stream,
                            ctypes.addressof(self._params), 0)

    def launcher(self) -> Callable[[int], None]:
        """:meth:`launch` with everything but the stream bound once: ``go(stream)`` reads no attribute,
        imports nothing and makes the one driver call (still noted by :func:`track_launches`)."""
        import ctypes

        from cupy.cuda import driver

        launch, kernel, fn = driver.launchKernel, self.kernel, self.kernel.raw.ptr
        (g0, g1, g2), (b0, b1, b2), smem = self.grid, self.block, self.shared_mem
        params, plan = ctypes.addressof(self._params), self

        def go(stream: int) -> None:  # holds the plan, so the packed parameters outlive the closure
            if plan is not None and _TRACKING is not None and kernel.tracked:
                _note_launch(kernel)
            launch(fn, g0, g1, g2, b0, b1, b2, smem, stream, params, 0)

        return go


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
    sources: dict[str, str] = field(default_factory=dict)  # every file the compile read (absolute path) -> sha256
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

    def global_array(self, name: str, dtype: Any, count: int) -> Any:
        """The module's ``__device__`` variable ``name`` as a CuPy array of ``count`` ``dtype`` items
        (a view: writes go to the device variable), e.g. to clear or read back instrumentation."""
        import cupy

        try:
            ptr = self._module.get_global_var(name)
        except Exception as e:
            raise CudaCompileError(f"{self.path}: no __device__ variable named '{name}' in the module "
                                   f"(compiled with {' '.join(self.options)}): {e}") from e
        nbytes = count * cupy.dtype(dtype).itemsize
        if not isinstance(ptr, int):  # a MemoryPointer in CuPy versions that return one
            ptr = int(ptr.ptr)
        mem = cupy.cuda.UnownedMemory(ptr, nbytes, self._module)
        return cupy.ndarray((count,), dtype=dtype, memptr=cupy.cuda.MemoryPointer(mem, 0))

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
                             log=log, compiler=nvrtc_version(),
                             sources={str(p): file_sha256(p) for p in source_files(resolved)})
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


# --------------------------------------------------------------------------- TMA tensor maps

# CUtensorMapDataType / CUtensorMapSwizzle / CUtensorMapL2promotion of cuda.h (stable since CUDA 12.0)
_TMA_DTYPES = {"uint8": (0, 1), "uint16": (1, 2), "uint32": (2, 4), "int32": (3, 4), "uint64": (4, 8),
               "int64": (5, 8), "float16": (6, 2), "float32": (7, 4), "float64": (8, 8), "bfloat16": (9, 2)}
_TMA_SWIZZLE = {0: 0, 32: 1, 64: 2, 128: 3}
_TMA_L2_PROMOTION = {0: 0, 64: 1, 128: 2, 256: 3}
TENSOR_MAP_BYTES = 128  # sizeof(CUtensorMap)


def tensor_map_args(dtype: str, shape: Sequence[int], box: Sequence[int], *, strides: Sequence[int] | None = None,
                    address: int = 0, swizzle: int = 128, l2_promotion: int = 256) -> dict[str, Any]:
    """Check a tiled tensor map's description against the driver's rules and return the values
    ``cuTensorMapEncodeTiled`` takes (without calling it: testable with no GPU).

    ``shape``, ``box`` and ``strides`` (in elements, default contiguous) list dimensions
    outermost first, as torch does; the driver wants them innermost first, and the strides
    of all but the innermost dimension in bytes. A clear ``ValueError`` names the rule broken.
    """
    if dtype not in _TMA_DTYPES:
        raise ValueError(f"tensor map dtype {dtype!r}: one of {sorted(_TMA_DTYPES)}")
    code, size = _TMA_DTYPES[dtype]
    shape, box = [int(x) for x in shape], [int(x) for x in box]
    if not 1 <= len(shape) <= 5 or len(box) != len(shape):
        raise ValueError(f"tensor map of rank {len(shape)} with a box of rank {len(box)}: both 1..5 and equal")
    if strides is None:
        strides = [1] * len(shape)
        for i in range(len(shape) - 2, -1, -1):
            strides[i] = strides[i + 1] * shape[i + 1]
    strides = [int(x) for x in strides]
    if strides[-1] != 1:
        raise ValueError(f"tensor map: the innermost dimension must be contiguous (stride {strides[-1]})")
    if address % 16:
        raise ValueError(f"tensor map: global address {address:#x} is not 16-byte aligned")
    byte_strides = [s * size for s in strides[:-1]]
    for s in byte_strides:
        if s % 16 or s >= 2**40:
            raise ValueError(f"tensor map: stride of {s} bytes must be a multiple of 16 below 2^40")
    for n, b in zip(shape, box):
        if not 1 <= b <= 256 or n < 1:
            raise ValueError(f"tensor map: box {box} must be 1..256 per dimension, shape {shape} positive")
    if swizzle not in _TMA_SWIZZLE:
        raise ValueError(f"tensor map swizzle {swizzle}: one of {sorted(_TMA_SWIZZLE)} bytes")
    if swizzle and box[-1] * size > swizzle:
        raise ValueError(f"tensor map: the box's inner extent ({box[-1] * size} B) exceeds the {swizzle}-byte swizzle span")
    if (box[-1] * size) % 16:
        raise ValueError(f"tensor map: the box's inner extent ({box[-1] * size} B) must be a multiple of 16 bytes")
    if l2_promotion not in _TMA_L2_PROMOTION:
        raise ValueError(f"tensor map L2 promotion {l2_promotion}: one of {sorted(_TMA_L2_PROMOTION)} bytes")
    return {"dtype": code, "rank": len(shape), "dims": shape[::-1], "byte_strides": byte_strides[::-1],
            "box": box[::-1], "element_strides": [1] * len(shape), "swizzle": _TMA_SWIZZLE[swizzle],
            "l2_promotion": _TMA_L2_PROMOTION[l2_promotion]}


def encode_tensor_map(tensor: Any, box: Sequence[int], *, shape: Sequence[int] | None = None,
                      swizzle: int = 128, l2_promotion: int = 256) -> ParamBytes:
    """A tiled TMA descriptor (``CUtensorMap``) for a CUDA tensor, to pass to a kernel as a
    ``const __grid_constant__`` parameter: ``box`` (outermost first) is the tile one
    ``cp.async.bulk.tensor`` copies, ``shape`` an optional view of the tensor (default its own
    shape; it must be contiguous), ``swizzle`` the shared-memory swizzle span in bytes.

    Calls ``cuTensorMapEncodeTiled`` of the driver library (``libcuda``) through ctypes: a
    host-side function, so encoding costs microseconds and needs no stream.
    """
    import ctypes

    if not tensor.is_cuda or not tensor.is_contiguous():
        raise ValueError("encode_tensor_map needs a contiguous CUDA tensor")
    dtype = str(tensor.dtype).removeprefix("torch.")
    view = list(shape) if shape is not None else list(tensor.shape)
    n = 1
    for x in view:
        n *= int(x)
    if n != tensor.numel():
        raise ValueError(f"encode_tensor_map: shape {view} does not cover the tensor's {tensor.numel()} elements")
    a = tensor_map_args(dtype, view, box, address=int(tensor.data_ptr()), swizzle=swizzle,
                        l2_promotion=l2_promotion)
    fn = _libcuda().cuTensorMapEncodeTiled
    raw = ctypes.create_string_buffer(TENSOR_MAP_BYTES + 128)
    aligned = (ctypes.addressof(raw) + 127) & ~127  # CUtensorMap is declared 128-byte aligned
    r = a["rank"]
    status = fn(ctypes.c_void_p(aligned), ctypes.c_int(a["dtype"]), ctypes.c_uint32(r),
                ctypes.c_void_p(int(tensor.data_ptr())), (ctypes.c_uint64 * r)(*a["dims"]),
                (ctypes.c_uint64 * max(1, r - 1))(*a["byte_strides"]), (ctypes.c_uint32 * r)(*a["box"]),
                (ctypes.c_uint32 * r)(*a["element_strides"]), ctypes.c_int(0), ctypes.c_int(a["swizzle"]),
                ctypes.c_int(a["l2_promotion"]), ctypes.c_int(0))
    if status != 0:
        raise RuntimeError(f"cuTensorMapEncodeTiled failed with CUresult {status} for shape {view}, box {list(box)}, "
                           f"swizzle {swizzle}")
    return ParamBytes(ctypes.string_at(aligned, TENSOR_MAP_BYTES), what="CUtensorMap")


_LIBCUDA: Any = None


def _libcuda() -> Any:
    global _LIBCUDA
    if _LIBCUDA is None:
        import ctypes

        lib = ctypes.CDLL("libcuda.so.1")
        lib.cuTensorMapEncodeTiled.restype = ctypes.c_int
        _LIBCUDA = lib
    return _LIBCUDA


# --------------------------------------------------------------------------- NVRTC without a GPU

NVRTC_LIBRARY_ENV = "REPORTER_NVRTC_LIBRARY"  # a libnvrtc.so to use instead of the pip wheel's


def find_nvrtc_library() -> Path | None:
    """The NVRTC shared library for :func:`nvrtc_compile_offline`: ``$REPORTER_NVRTC_LIBRARY``, else
    the one the ``nvidia-cuda-nvrtc`` wheel installs (``nvidia/cu13/lib`` or ``nvidia/cuda_nvrtc/lib``),
    newest CUDA first; None when neither is there."""
    env = os.environ.get(NVRTC_LIBRARY_ENV)
    if env:
        return Path(env) if Path(env).is_file() else None
    import importlib.util

    spec = importlib.util.find_spec("nvidia")
    roots = [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
    for root in roots:
        for sub in ("cu13/lib", "cu12/lib", "cuda_nvrtc/lib"):
            found = sorted((root / sub).glob("libnvrtc.so.*"))
            if found:
                return found[0]
    return None


def nvrtc_compile_offline(path: str | Path, *, arch: str = "sm_90a", defines: Mapping[str, Any] | None = None,
                          library: Path | None = None) -> tuple[bool, str]:
    """Compile ``path`` with NVRTC exactly as :func:`load_module` does on the GPU machine (same
    options), but through ctypes on a local ``libnvrtc``: no GPU, no CuPy. Returns (compiled, log).

    NVRTC is stricter than nvcc in places (JIT mode has no host code: a generic lambda, one with an
    ``auto`` parameter, inside a kernel is a host function to it), so a source that nvcc builds can still fail here; this is
    how to find out before a device session does.
    """
    lib_path = library or find_nvrtc_library()
    if lib_path is None:
        raise FileNotFoundError(f"no libnvrtc found: install the nvidia-cuda-nvrtc wheel or set {NVRTC_LIBRARY_ENV}")
    ok, log, _ = _nvrtc_offline(path, arch=arch, defines=defines, library=lib_path)
    return ok, log


def nvrtc_ptx_offline(path: str | Path, *, arch: str = "sm_90a", defines: Mapping[str, Any] | None = None,
                      library: Path | None = None) -> str:
    """The PTX NVRTC makes of ``path`` with :func:`load_module`'s options less ``-lineinfo`` (so the
    text holds no source positions): two sources that give the same PTX compile to the same code.
    Raises :class:`CudaCompileError` with the log when the compile fails."""
    lib_path = library or find_nvrtc_library()
    if lib_path is None:
        raise FileNotFoundError(f"no libnvrtc found: install the nvidia-cuda-nvrtc wheel or set {NVRTC_LIBRARY_ENV}")
    ok, log, ptx = _nvrtc_offline(path, arch=arch, defines=defines, library=lib_path, drop=("-lineinfo",))
    if not ok:
        raise CudaCompileError(f"{path}: NVRTC failed (defines {dict(defines or {})})\n{log[-3000:]}")
    return ptx


def _nvrtc_offline(path: str | Path, *, arch: str, defines: Mapping[str, Any] | None, library: Path,
                   drop: tuple[str, ...] = ()) -> tuple[bool, str, str]:
    import ctypes

    for builtins in sorted(library.parent.glob("libnvrtc-builtins.so.*")):
        if ".alt." not in builtins.name:  # NVRTC dlopens its builtins by soname: load them first, globally
            ctypes.CDLL(str(builtins), mode=ctypes.RTLD_GLOBAL)
    lib = ctypes.CDLL(str(library))
    resolved = Path(path).resolve()
    opts = [o.encode() for o in compile_options(arch, resolved, defines) if o not in drop]
    prog = ctypes.c_void_p()
    src = resolved.read_text(encoding="utf-8").encode()
    if lib.nvrtcCreateProgram(ctypes.byref(prog), src, resolved.name.encode(), 0, None, None) != 0:
        raise RuntimeError(f"{resolved}: nvrtcCreateProgram failed")
    try:
        rc = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, buf)
        ptx = ""
        if rc == 0:
            lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
            out = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetPTX(prog, out)
            ptx = out.value.decode(errors="replace")
        return rc == 0, buf.value.decode(errors="replace"), ptx
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


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
               *(f"-I{d}" for d in include_dirs(path)), *define_options(defines), "-o", str(Path(tmp) / "out.cubin"), str(path)]
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
