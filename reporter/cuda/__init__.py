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
package drives CuPy's NVRTC binding itself and loads the result with CuPy's ``Module``, so CuPy
stays the only dependency. NVRTC optimises device code by default (there is no ``-O3``);
``-lineinfo`` is on so Nsight Compute can map SASS back to source lines, and
``--ptxas-options=-v`` so the program log carries ptxas's report: :func:`parse_ptxas_log` turns
it into each kernel's registers, stack, spills and performance advisories
(:attr:`CudaModule.resources`). Inside :func:`track_launches` every kernel launched is collected,
so a caller (the harness) can record what the compiler said about the kernels a call ran.

One module per job, each importing only its siblings (an export carries the package as it is):

- :mod:`.sources`: a source and the local headers it reaches (the one include scanner), their hashes;
- :mod:`.options`: the architecture, the NVRTC options, the compile error;
- :mod:`.build`: NVRTC through CuPy on the GPU, the loaded module and its cache;
- :mod:`.launch`: launch arguments, kernels, launch plans, tracking the kernels a call launched;
- :mod:`.tma`: TMA tensor maps, checked and encoded;
- :mod:`.nvrtc`: NVRTC without a GPU (ctypes on the wheel's library): builds, PTX, the headers it read;
- :mod:`.sass`: the identity of one kernel's machine code in a cubin (what a run records, what a proof compares);
- :mod:`.ptxas`: ptxas's report of each kernel, from NVRTC's log or from nvcc.

The names other code uses are re-exported here (``from reporter.cuda import load_module``); a test
that replaces one patches the module that owns it (``reporter.cuda.build.parse_ptxas_log``), where
it is looked up.

CuPy and torch are imported inside the functions that need them: importing a version module
on a machine without a GPU (to read its docstring, or in CPU tests) never fails here.
``python -m reporter.cuda FILE.cu ...`` compiles with ``nvcc -Xptxas -v`` (no GPU needed) and
prints each kernel's registers, shared memory, stack and spills.

Nothing in this package knows any particular assignment.
"""

from __future__ import annotations

from .build import CudaModule, load_module, loaded_kernels, nvrtc_version
from .launch import CudaKernel, LaunchPlan, ParamBytes, kernel_arg, param_buffers, track_launches
from .nvrtc import (NVRTC_LIBRARY_ENV, OfflineBuild, find_nvrtc_library, nvrtc_build_offline, nvrtc_compile_offline, nvrtc_cubin_offline,
                    nvrtc_headers_offline, nvrtc_ptx_offline, nvrtc_version_offline)
from .options import ARCH_ENV, DEFAULT_OPTIONS, CudaCompileError, arch_for, compile_options, define_options
from .sass import KernelCodeError, kernel_code_sha256, kernel_names
from .ptxas import KernelResources, PtxasReport, parse_ptxas, parse_ptxas_log, ptxas_report
from .sources import Include, file_sha256, include_dirs, includes, source_digest, source_files
from .tma import TENSOR_MAP_BYTES, encode_tensor_map, tensor_map, tensor_map_args

__all__ = [
    "ARCH_ENV", "DEFAULT_OPTIONS", "NVRTC_LIBRARY_ENV", "OfflineBuild", "TENSOR_MAP_BYTES", "CudaCompileError", "CudaKernel",
    "CudaModule", "Include", "KernelResources", "LaunchPlan", "ParamBytes", "PtxasReport", "arch_for",
    "compile_options", "define_options", "encode_tensor_map", "tensor_map", "file_sha256", "find_nvrtc_library", "include_dirs",
    "includes", "kernel_arg", "load_module", "loaded_kernels", "nvrtc_compile_offline", "nvrtc_headers_offline",
    "nvrtc_build_offline", "nvrtc_cubin_offline", "nvrtc_ptx_offline", "nvrtc_version_offline", "KernelCodeError", "kernel_code_sha256", "kernel_names", "nvrtc_version", "param_buffers", "parse_ptxas", "parse_ptxas_log", "ptxas_report",
    "source_digest", "source_files", "tensor_map_args", "track_launches",
]
