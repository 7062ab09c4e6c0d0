"""Raw by-value launch parameters and TMA tensor-map descriptions, without a GPU: what the
driver will be handed (parameter bytes, innermost-first dims and byte strides), and the
clear errors for descriptions the driver would reject. ``encode_tensor_map`` itself calls the
driver and is exercised on the H100 by the versions that use it (tests/test_gpu_versions.py)."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import numpy as np
import pytest

from reporter import cuda
from reporter.cuda import ParamBytes, param_buffers, tensor_map_args


def test_param_buffers_keep_each_arguments_width():
    blob = ParamBytes(bytes(range(128)), what="CUtensorMap")
    bufs = param_buffers([blob, np.int32(-2), np.float32(0.5), np.uint64(2**40 + 3), None])
    assert bufs[0] == bytes(range(128))
    assert bufs[1] == np.int32(-2).tobytes() and len(bufs[1]) == 4
    assert bufs[2] == np.float32(0.5).tobytes()
    assert bufs[3] == (2**40 + 3).to_bytes(8, "little")
    assert bufs[4] == bytes(8)  # None: a null pointer


def test_param_buffers_refuse_untyped_numbers():
    with pytest.raises(TypeError, match="numpy scalar"):
        param_buffers([3])


def test_param_bytes_must_hold_bytes():
    with pytest.raises(TypeError, match="CUtensorMap"):
        ParamBytes(b"", what="CUtensorMap")


def _kernel_with_fake_driver(monkeypatch, launch_kernel):
    """A CudaKernel whose launches go to ``launch_kernel`` (cuLaunchKernel's arguments) instead of CuPy's driver."""
    fake_cupy = types.ModuleType("cupy")
    fake_cuda = types.ModuleType("cupy.cuda")
    fake_cuda.driver = types.SimpleNamespace(launchKernel=launch_kernel)
    fake_cupy.cuda = fake_cuda
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy)
    monkeypatch.setitem(sys.modules, "cupy.cuda", fake_cuda)
    mod = cuda.CudaModule(path=Path("x.cu"), arch="sm_90a", options=(), device_index=0, binary=b"")
    return cuda.CudaKernel("k", mod, types.SimpleNamespace(ptr=1234))


def test_a_struct_argument_takes_the_raw_launch(monkeypatch):
    """A launch with a ParamBytes goes through cuLaunchKernel with a kernelParams array whose
    entries point at the bytes of each argument in order."""
    import ctypes

    seen: dict = {}

    def launch_kernel(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        arr = (ctypes.c_void_p * 3).from_address(params)
        seen.update(f=f, grid=(gx, gy, gz), block=(bx, by, bz), smem=smem, stream=stream, extra=extra,
                    blob=ctypes.string_at(arr[0], 128), n=ctypes.string_at(arr[1], 4),
                    p=ctypes.string_at(arr[2], 8))

    k = _kernel_with_fake_driver(monkeypatch, launch_kernel)
    blob = ParamBytes(bytes([7]) * 128)
    k((4, 2), (384,), blob, np.int32(9), np.uint64(0xABC), shared_mem=1000, stream=types.SimpleNamespace(ptr=55))
    assert seen["f"] == 1234 and seen["grid"] == (4, 2, 1) and seen["block"] == (384, 1, 1)
    assert seen["smem"] == 1000 and seen["stream"] == 55 and seen["extra"] == 0
    assert seen["blob"] == bytes([7]) * 128 and seen["n"] == np.int32(9).tobytes()
    assert seen["p"] == (0xABC).to_bytes(8, "little")


def test_tensor_map_args_for_an_attention_operand():
    a = tensor_map_args("float16", (4 * 64 * 8192, 128), (128, 64), address=0x7F0000000000)
    assert a["dtype"] == 6 and a["rank"] == 2
    assert a["dims"] == [128, 4 * 64 * 8192]  # innermost first
    assert a["byte_strides"] == [256]
    assert a["box"] == [64, 128] and a["element_strides"] == [1, 1]
    assert a["swizzle"] == 3 and a["l2_promotion"] == 3


def test_tensor_map_args_with_explicit_strides_and_rank_three():
    a = tensor_map_args("float32", (2, 8, 64), (1, 8, 32), strides=(1024, 64, 1), swizzle=128, l2_promotion=0)
    assert a["dims"] == [64, 8, 2] and a["byte_strides"] == [256, 4096] and a["box"] == [32, 8, 1]


@pytest.mark.parametrize("kwargs,match", [
    (dict(dtype="float8", shape=(8, 64), box=(8, 64)), "dtype"),
    (dict(dtype="float16", shape=(8, 64), box=(8, 128)), "swizzle span"),
    (dict(dtype="float16", shape=(8, 64), box=(300, 64)), "1..256"),
    (dict(dtype="float16", shape=(8, 64), box=(8, 64), address=8), "16-byte aligned"),
    (dict(dtype="float16", shape=(8, 60), box=(8, 32), swizzle=64), "multiple of 16"),
    (dict(dtype="float16", shape=(8, 64), box=(8, 4), swizzle=0), "multiple of 16 bytes"),
    (dict(dtype="float16", shape=(8, 64), box=(8, 64), strides=(64, 2)), "contiguous"),
    (dict(dtype="float16", shape=(8, 64), box=(8, 64), swizzle=96), "swizzle 96"),
    (dict(dtype="float16", shape=(8, 64), box=(8,)), "rank"),
])
def test_tensor_map_args_name_the_rule_broken(kwargs, match):
    with pytest.raises(ValueError, match=match):
        tensor_map_args(**kwargs)


class _FakeTensor:
    """What tensor_map reads of a tensor: its address, dtype, shape, strides and device."""

    def __init__(self, ptr: int, shape: tuple[int, ...], dtype: str = "torch.float16") -> None:
        self.ptr, self.shape, self.dtype = ptr, shape, dtype
        self.device = type("Device", (), {"index": 0})()

    def data_ptr(self) -> int:
        return self.ptr

    def stride(self) -> tuple[int, ...]:
        return (self.shape[1], 1)


def test_tensor_map_encodes_each_distinct_map_once(monkeypatch):
    from reporter.cuda import tma

    calls = []

    def fake_encode(tensor, box, *, shape=None, swizzle=128, l2_promotion=256):
        calls.append((tensor.ptr, tuple(box), swizzle))
        return tma.ParamBytes(bytes([len(calls)]) * tma.TENSOR_MAP_BYTES, what="CUtensorMap")

    monkeypatch.setattr(tma, "encode_tensor_map", fake_encode)
    monkeypatch.setattr(tma, "_MAPS", tma.OrderedDict())
    a = _FakeTensor(0x1000, (64, 64))
    first = tma.tensor_map(a, (64, 64))
    assert tma.tensor_map(_FakeTensor(0x1000, (64, 64)), (64, 64)) is first and len(calls) == 1
    # any input of the map is part of the key: another address, shape, box, swizzle or dtype encodes again
    tma.tensor_map(_FakeTensor(0x2000, (64, 64)), (64, 64))
    tma.tensor_map(_FakeTensor(0x1000, (128, 64)), (64, 64))
    tma.tensor_map(a, (32, 64))
    tma.tensor_map(a, (64, 64), swizzle=64)
    tma.tensor_map(_FakeTensor(0x1000, (64, 64), "torch.bfloat16"), (64, 64))
    assert len(calls) == 6
    # bounded: the oldest map is forgotten first
    monkeypatch.setattr(tma, "MAPS_KEPT", 6)
    tma.tensor_map(_FakeTensor(0x3000, (64, 64)), (64, 64))
    tma.tensor_map(a, (64, 64))
    assert len(calls) == 8 and len(tma._MAPS) == 6


def _plan_with_fake_launch(monkeypatch, seen: list, sizes: list):
    """A LaunchPlan of a kernel taking (map, int32, pointer), launched through a stand-in driver that keeps each
    launch's parameter bytes (``sizes``: the widths of the parameters the next launch passes)."""
    import ctypes

    def launch_kernel(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        arr = (ctypes.c_void_p * len(sizes)).from_address(params)
        seen.append([ctypes.string_at(arr[i], n) for i, n in enumerate(sizes)])

    k = _kernel_with_fake_driver(monkeypatch, launch_kernel)
    return k.plan((4,), (384,), ParamBytes(bytes([7]) * 128), np.int32(9), np.uint64(0xABC), shared_mem=1000)


def test_a_plan_takes_more_arguments_and_rewrites_a_struct(monkeypatch):
    """appended() gives a new plan with the arguments after the plan's own (the old plan unchanged); set_bytes
    rewrites a by-value argument in place for the next launch, and refuses bytes of another length."""
    seen: list = []
    sizes = [128, 4, 8, 128]
    plan = _plan_with_fake_launch(monkeypatch, seen, sizes)
    more = plan.appended(ParamBytes(bytes([1]) * 128))
    assert (plan.n_args, more.n_args) == (3, 4)
    more.launch(0)
    assert seen[-1] == [bytes([7]) * 128, np.int32(9).tobytes(), (0xABC).to_bytes(8, "little"), bytes([1]) * 128]
    more.set_bytes(3, ParamBytes(bytes([2]) * 128))
    more.set_pointer(2, 0xDEF)
    more.launch(0)
    assert seen[-1][2:] == [(0xDEF).to_bytes(8, "little"), bytes([2]) * 128]
    sizes.pop()
    plan.launch(0)
    assert seen[-1] == [bytes([7]) * 128, np.int32(9).tobytes(), (0xABC).to_bytes(8, "little")]
    with pytest.raises(ValueError, match="argument 1 is 4 bytes"):
        more.set_bytes(1, ParamBytes(bytes(8)))

