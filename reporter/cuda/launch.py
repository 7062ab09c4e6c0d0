"""Launching a loaded kernel on PyTorch's stream: each argument as the driver takes it (a torch
tensor as its device pointer, a numpy scalar with its own width, a struct by value as
:class:`ParamBytes`), :class:`CudaKernel` and its packed :class:`LaunchPlan`, and
:func:`track_launches`, which collects the kernels a call launched so that a run can record their
builds."""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .build import CudaModule
    from .ptxas import KernelResources

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
    exactly that long (:func:`~reporter.cuda.tma.encode_tensor_map` returns one of the right size).
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

    @property
    def n_args(self) -> int:
        """How many arguments the launch passes (the index an appended one gets)."""
        return len(self._buffers)

    def set_bytes(self, index: int, data: ParamBytes) -> None:
        """Argument ``index``, passed by value, now holds ``data`` (e.g. a tensor map of a fresh output), which
        must be as long as the argument it replaces (a 128-byte copy: this sits in the timed call path)."""
        buf, raw = self._buffers[index], data.data
        if len(raw) != len(buf):
            raise ValueError(f"launch argument {index} is {len(buf)} bytes; {data.what} has {len(raw)}")
        ctypes.memmove(buf, raw, len(raw))

    def appended(self, *args: Any) -> LaunchPlan:
        """This launch with ``args`` added after its own (a kernel built with more parameters than the plan's
        maker passes): a new plan, this one unchanged."""
        own = [ParamBytes(bytes(b.raw), what=f"argument {i}") for i, b in enumerate(self._buffers)]
        return LaunchPlan(self.kernel, self.grid, self.block, [*own, *args], shared_mem=self.shared_mem)

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
