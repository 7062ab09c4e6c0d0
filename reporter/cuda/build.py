"""A source compiled with NVRTC (through CuPy's binding) for the device's own architecture and
loaded there, once per source text, options, defines and device: :func:`load_module` and the
:class:`CudaModule` it returns, with what ptxas reported of each kernel."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .launch import CudaKernel
from .options import CudaCompileError, arch_for, compile_options
from .ptxas import KernelResources, parse_ptxas_log
from .sass import kernel_code_sha256
from .sources import file_sha256, source_digest, source_files

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
    _codes: dict[str, str | None] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.log and not self.resources:
            try:  # the report is information: a log this parser does not understand never stops a load
                report = parse_ptxas_log(self.log)
            except Exception:
                return
            self.resources = {k.name: k for k in report.kernels}
            self.advisories = report.advisories

    def code_sha256(self, kernel: str) -> str | None:
        """The identity of ``kernel``'s machine code in this module's cubin
        (:func:`~reporter.cuda.sass.kernel_code_sha256`), computed once; None when the cubin cannot be
        read (what ran is still recorded by its sources and options)."""
        if kernel not in self._codes:
            try:
                self._codes[kernel] = kernel_code_sha256(self.binary, kernel)
            except Exception:  # information: an unreadable cubin never stops a run
                self._codes[kernel] = None
        return self._codes[kernel]

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
