"""TMA tensor maps: a tiled ``CUtensorMap`` described and checked against the driver's rules
(:func:`tensor_map_args`, no GPU needed) and encoded by the driver (:func:`encode_tensor_map`; once per
distinct map with :func:`tensor_map`), to pass to a kernel by value as a ``const __grid_constant__``
parameter."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from .launch import ParamBytes

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
    if not tensor.is_cuda or not tensor.is_contiguous():
        raise ValueError("encode_tensor_map needs a contiguous CUDA tensor")
    dtype = str(tensor.dtype).removeprefix("torch.")
    view = list(shape) if shape is not None else list(tensor.shape)
    n = 1
    for x in view:
        n *= int(x)
    if n != tensor.numel():
        raise ValueError(f"encode_tensor_map: shape {view} does not cover the tensor's {tensor.numel()} elements")
    return encode_tensor_map_at(int(tensor.data_ptr()), dtype, view, box, swizzle=swizzle, l2_promotion=l2_promotion)


def encode_tensor_map_at(address: int, dtype: str, shape: Sequence[int], box: Sequence[int], *, swizzle: int = 128,
                         l2_promotion: int = 256) -> ParamBytes:
    """:func:`encode_tensor_map` of a contiguous ``shape`` of ``dtype`` elements at device ``address`` (the
    output a kernel is about to write, known by its pointer alone)."""
    import ctypes

    view = [int(x) for x in shape]
    a = tensor_map_args(dtype, view, box, address=int(address), swizzle=swizzle, l2_promotion=l2_promotion)
    fn = _libcuda().cuTensorMapEncodeTiled
    raw = ctypes.create_string_buffer(TENSOR_MAP_BYTES + 128)
    aligned = (ctypes.addressof(raw) + 127) & ~127  # CUtensorMap is declared 128-byte aligned
    r = a["rank"]
    status = fn(ctypes.c_void_p(aligned), ctypes.c_int(a["dtype"]), ctypes.c_uint32(r),
                ctypes.c_void_p(int(address)), (ctypes.c_uint64 * r)(*a["dims"]),
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


_MAPS: OrderedDict[tuple, ParamBytes] = OrderedDict()
MAPS_KEPT = 256  # encoded maps remembered (a ranked run draws new tensors each call: an LRU bound)


def tensor_map(tensor: Any, box: Sequence[int], *, shape: Sequence[int] | None = None, swizzle: int = 128,
               l2_promotion: int = 256) -> ParamBytes:
    """:func:`encode_tensor_map`, remembered: a tensor map is a function of the address, shape, strides,
    dtype, box, swizzle and promotion alone, so a call with the same ones returns the bytes encoded
    before (a dictionary look-up instead of the checks and the driver call, tens of microseconds a
    map inside a timed call). The last ``MAPS_KEPT`` distinct maps are kept."""
    key = (int(tensor.data_ptr()), str(tensor.dtype), tuple(tensor.shape), tuple(tensor.stride()),
           tuple(shape) if shape is not None else None, tuple(box), swizzle, l2_promotion, tensor.device.index)
    hit = _MAPS.get(key)
    if hit is not None:
        _MAPS.move_to_end(key)
        return hit
    encoded = encode_tensor_map(tensor, box, shape=shape, swizzle=swizzle, l2_promotion=l2_promotion)
    _MAPS[key] = encoded
    if len(_MAPS) > MAPS_KEPT:
        _MAPS.popitem(last=False)
    return encoded

