"""NVRTC without a GPU: a source compiled through ctypes on the ``nvidia-cuda-nvrtc`` wheel's
``libnvrtc`` with the options :func:`~reporter.cuda.build.load_module` gives it, to learn before a
device session whether it builds, what PTX it makes, and which headers it reads."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from .options import CudaCompileError, compile_options

class OfflineBuild(NamedTuple):
    ptx: str
    cubin: bytes


NVRTC_LIBRARY_ENV = "REPORTER_NVRTC_LIBRARY"  # a libnvrtc.so to use instead of the pip wheel's


def find_nvrtc_library() -> Path | None:
    """The NVRTC shared library for :func:`nvrtc_compile_offline`: ``$REPORTER_NVRTC_LIBRARY``, else
    the one the ``nvidia-cuda-nvrtc`` wheel installs (``nvidia/cu13/lib`` or ``nvidia/cuda_nvrtc/lib``),
    newest CUDA first; None when neither is there."""
    env = os.environ.get(NVRTC_LIBRARY_ENV)
    if env:
        return Path(env) if Path(env).is_file() else None
    return nvidia_wheel_file("lib", "libnvrtc.so.*", "cuda_nvrtc")


def nvidia_wheel_file(folder: str, pattern: str, package: str) -> Path | None:
    """The first file named by ``pattern`` in ``folder`` (``lib``, ``bin``) of pip's NVIDIA CUDA wheels:
    ``nvidia/cu13/<folder>``, then ``nvidia/cu12/<folder>``, then the older wheels' ``nvidia/<package>/<folder>``
    (``cuda_nvrtc``); None where no such wheel is installed."""
    import importlib.util

    spec = importlib.util.find_spec("nvidia")
    roots = [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
    for root in roots:
        for sub in (f"cu13/{folder}", f"cu12/{folder}", f"{package}/{folder}"):
            found = sorted((root / sub).glob(pattern))
            if found:
                return found[0]
    return None


def nvrtc_version_offline(library: Path | None = None) -> str | None:
    """'nvrtc 13.0' for the local library, as :func:`~reporter.cuda.build.nvrtc_version` names the
    GPU's (so a build recorded there can be matched with one made here); None where there is none."""
    import ctypes

    lib_path = library or find_nvrtc_library()
    if lib_path is None:
        return None
    try:
        lib = _load(lib_path)
        major, minor = ctypes.c_int(), ctypes.c_int()
        lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
        return f"nvrtc {major.value}.{minor.value}"
    except OSError:
        return None


def _load(library: Path):  # type: ignore[no-untyped-def]
    import ctypes

    for builtins in sorted(library.parent.glob("libnvrtc-builtins.so.*")):
        if ".alt." not in builtins.name:  # NVRTC dlopens its builtins by soname: load them first, globally
            ctypes.CDLL(str(builtins), mode=ctypes.RTLD_GLOBAL)
    return ctypes.CDLL(str(library))


def nvrtc_compile_offline(path: str | Path, *, arch: str = "sm_90a", defines: Mapping[str, Any] | None = None,
                          library: Path | None = None, syntax_only: bool = False) -> tuple[bool, str]:
    """Compile ``path`` with NVRTC exactly as :func:`~reporter.cuda.build.load_module` does on the GPU machine (same
    options), but through ctypes on a local ``libnvrtc``: no GPU, no CuPy. Returns (compiled, log).

    NVRTC is stricter than nvcc in places (JIT mode has no host code: a generic lambda, one with an
    ``auto`` parameter, inside a kernel is a host function to it), so a source that nvcc builds can still fail here; this is
    how to find out before a device session does. ``syntax_only`` stops after the front end (a tenth
    of the time): the source parses and type-checks with these defines, nothing is generated.
    """
    lib_path = library or find_nvrtc_library()
    if lib_path is None:
        raise FileNotFoundError(f"no libnvrtc found: install the nvidia-cuda-nvrtc wheel or set {NVRTC_LIBRARY_ENV}")
    ok, log, _ = _nvrtc_offline(path, arch=arch, defines=defines, library=lib_path, outputs=False,
                                extra=("--fdevice-syntax-only",) if syntax_only else ())
    return ok, log


def nvrtc_ptx_offline(path: str | Path, *, arch: str = "sm_90a", defines: Mapping[str, Any] | None = None,
                      library: Path | None = None) -> str:
    """The PTX NVRTC makes of ``path`` with :func:`~reporter.cuda.build.load_module`'s options less ``-lineinfo`` (so the
    text holds no source positions): two sources that give the same PTX compile to the same code.
    Raises :class:`CudaCompileError` with the log when the compile fails."""
    lib_path = library or find_nvrtc_library()
    if lib_path is None:
        raise FileNotFoundError(f"no libnvrtc found: install the nvidia-cuda-nvrtc wheel or set {NVRTC_LIBRARY_ENV}")
    return nvrtc_build_offline(path, arch=arch, defines=defines, library=library).ptx


def nvrtc_build_offline(path: str | Path, *, arch: str = "sm_90a", defines: Mapping[str, Any] | None = None,
                        library: Path | None = None) -> OfflineBuild:
    """The PTX and the cubin of one NVRTC compile of ``path`` with :func:`~reporter.cuda.build.load_module`'s
    options less ``-lineinfo``: the PTX holds no source positions, and each kernel's machine code
    (:func:`~reporter.cuda.sass.kernel_code_sha256`) is the one the harness's ``-lineinfo`` build
    loads (line information adds sections, never instructions: the 61 builds the H100 loaded,
    tests/fixtures/device_code.json, each give the same hash this way). Raises
    :class:`CudaCompileError` with the log when the compile fails."""
    lib_path = library or find_nvrtc_library()
    if lib_path is None:
        raise FileNotFoundError(f"no libnvrtc found: install the nvidia-cuda-nvrtc wheel or set {NVRTC_LIBRARY_ENV}")
    ok, log, out = _nvrtc_offline(path, arch=arch, defines=defines, library=lib_path, drop=("-lineinfo",))
    if not ok:
        raise CudaCompileError(f"{path}: NVRTC failed (defines {dict(defines or {})})\n{log[-3000:]}")
    return out


def nvrtc_cubin_offline(path: str | Path, *, arch: str = "sm_90a", defines: Mapping[str, Any] | None = None,
                        library: Path | None = None) -> bytes:
    """The cubin NVRTC makes of ``path`` with exactly :func:`~reporter.cuda.build.load_module`'s options:
    with the same NVRTC, the machine code a GPU run loads (:func:`~reporter.cuda.sass.kernel_code_sha256`
    of each kernel is the run's). Raises :class:`CudaCompileError` with the log when the compile fails."""
    lib_path = library or find_nvrtc_library()
    if lib_path is None:
        raise FileNotFoundError(f"no libnvrtc found: install the nvidia-cuda-nvrtc wheel or set {NVRTC_LIBRARY_ENV}")
    ok, log, out = _nvrtc_offline(path, arch=arch, defines=defines, library=lib_path)
    if not ok:
        raise CudaCompileError(f"{path}: NVRTC failed (defines {dict(defines or {})})\n{log[-3000:]}")
    return out.cubin


def nvrtc_headers_offline(path: str | Path, *, arch: str = "sm_90a", defines: Mapping[str, Any] | None = None,
                          library: Path | None = None) -> list[Path]:
    """Every header NVRTC read compiling ``path`` with :func:`~reporter.cuda.build.load_module`'s
    options (NVRTC's own built-in headers left out), each once, as NVRTC itself reports them: not
    through an include scanner, so a test can hold :func:`~reporter.cuda.sources.includes` to it.

    NVRTC 13.0 takes none of the dependency options of nvcc and gcc (``-M``, ``-MM``, ``-MD``,
    ``-MF``, ``--generate-dependencies``, ``--dependency-output``: each is "unrecognized option");
    its ``--fdevice-time-trace`` does write one "Processing Header File" event per header it read,
    with the path it found the header at, and ``--fdevice-syntax-only`` stops after the front end,
    which is where headers are read (a tenth of a second a source). A name NVRTC found relative to
    the current folder (as it may for the main file's quoted includes) is resolved against it.
    Raises :class:`CudaCompileError` with the log when the source does not compile."""
    import json
    import tempfile

    lib_path = library or find_nvrtc_library()
    if lib_path is None:
        raise FileNotFoundError(f"no libnvrtc found: install the nvidia-cuda-nvrtc wheel or set {NVRTC_LIBRARY_ENV}")
    with tempfile.TemporaryDirectory(prefix="nvrtc-trace-") as tmp:
        trace = Path(tmp) / "trace"  # NVRTC writes trace.json
        ok, log, _ = _nvrtc_offline(path, arch=arch, defines=defines, library=lib_path, outputs=False,
                                    extra=(f"--fdevice-time-trace={trace}", "--fdevice-syntax-only"))
        if not ok:
            raise CudaCompileError(f"{path}: NVRTC failed (defines {dict(defines or {})})\n{log[-3000:]}")
        events = json.loads(trace.with_name(trace.name + ".json").read_text(encoding="utf-8"))["traceEvents"]
    out: list[Path] = []
    for e in events:
        if e.get("name") == "Processing Header File":
            p = Path(os.path.abspath(e["args"]["detail"]))
            if p.is_file() and p.resolve() not in out:  # NVRTC's built-in headers are no files
                out.append(p.resolve())
    return out


def _nvrtc_offline(path: str | Path, *, arch: str, defines: Mapping[str, Any] | None, library: Path,
                   drop: tuple[str, ...] = (), extra: tuple[str, ...] = (),
                   outputs: bool = True) -> tuple[bool, str, OfflineBuild]:
    """(compiled, log, the PTX and cubin when compiled and ``outputs``)."""
    import ctypes

    lib = _load(library)
    resolved = Path(path).resolve()
    opts = [o.encode() for o in (*compile_options(arch, resolved, defines), *extra) if o not in drop]
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
        log = buf.value.decode(errors="replace")
        if rc != 0 or not outputs:
            return rc == 0, log, OfflineBuild("", b"")
        lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
        ptx = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetPTX(prog, ptx)
        lib.nvrtcGetCUBINSize(prog, ctypes.byref(size))
        cubin = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetCUBIN(prog, cubin)
        return True, log, OfflineBuild(ptx.value.decode(errors="replace"), cubin.raw)
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
