"""What the CUDA compiler said about each kernel: ptxas reports as NVRTC logs them
(``--ptxas-options=-v``), launches collected by ``track_launches``, and the harness turning
them into the run record's ``builds``. No GPU and no CuPy: modules and kernels are built
around fake launch functions."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from reporter import cuda
from reporter.cuda import CudaKernel, CudaModule, parse_ptxas, parse_ptxas_log, track_launches
from reporter.harness.worker import kernel_builds

# NVRTC 13, sm_90a, verbatim
SERIALISED_LOG = """\
ptxas info    : (C7512) Potential Performance Loss: wgmma.mma_async instructions are serialized due to insufficient register resources for the function 'attn_fwd_pingpong'
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'attn_fwd_pingpong' for 'sm_90a'
ptxas info    : Function properties for attn_fwd_pingpong
ptxas         .     152 bytes stack frame, 232 bytes spill stores, 232 bytes spill loads
ptxas info    : Used 168 registers, used 16 barriers, 152 bytes cumulative stack size
ptxas info    : Compile time = 378.951 ms
"""
CLEAN_LOG = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'attn_fwd_overlap' for 'sm_90a'
ptxas info    : Function properties for attn_fwd_overlap
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 168 registers, used 16 barriers
ptxas info    : Compile time = 274.179 ms
"""
C7512 = ("(C7512) Potential Performance Loss: wgmma.mma_async instructions are serialized due to insufficient "
         "register resources for the function 'attn_fwd_pingpong'")


def test_nvrtc_log_of_a_serialised_kernel():
    (k,) = parse_ptxas(SERIALISED_LOG)
    assert (k.name, k.arch) == ("attn_fwd_pingpong", "sm_90a")
    assert k.registers == 168 and k.barriers == 16
    assert (k.stack_bytes, k.spill_stores, k.spill_loads) == (152, 232, 232)
    # the advisory precedes the function's own lines in the log and still lands on it
    assert k.advisories == [C7512]
    assert parse_ptxas_log(SERIALISED_LOG).advisories == []


def test_nvrtc_log_of_a_clean_kernel():
    report = parse_ptxas_log(CLEAN_LOG)
    (k,) = report.kernels
    assert (k.name, k.registers, k.spill_stores, k.spill_loads, k.stack_bytes) == ("attn_fwd_overlap", 168, 0, 0, 0)
    assert k.advisories == [] and report.advisories == []


def test_advisories_go_to_the_function_they_name_or_to_the_module():
    log = """\
ptxas info    : (C7508) Potential Performance Loss: 'setmaxnreg' ignored; unable to determine register count at entry.
ptxas warning : (C7509) Potential Performance Loss: wgmma.mma_async instructions are serialized due to the presence of Extern calls in the function 'second'
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'first' for 'sm_90a'
ptxas info    : Function properties for first
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 40 registers, 384 bytes cmem[0]
ptxas info    : Compiling entry function 'second' for 'sm_90a'
ptxas info    : Function properties for second
ptxas         .     8 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 255 registers, 1024 bytes smem, 384 bytes cmem[0]
"""
    report = parse_ptxas_log(log)
    first, second = report.kernels
    assert (first.name, first.registers, first.advisories) == ("first", 40, [])
    assert (second.registers, second.shared_bytes, second.spill_stores, second.spill_loads) == (255, 1024, 8, 4)
    assert second.advisories == ["warning: (C7509) Potential Performance Loss: wgmma.mma_async instructions are "
                                 "serialized due to the presence of Extern calls in the function 'second'"]
    # 'setmaxnreg' is quoted but is no function of the module
    assert report.advisories == ["(C7508) Potential Performance Loss: 'setmaxnreg' ignored; unable to determine "
                                 "register count at entry."]


def test_advisory_naming_a_device_function_goes_to_the_module():
    log = ("ptxas warning : Stack size for function 'helper' cannot be statically determined\n"
           "ptxas info    : Function properties for helper\n"
           "ptxas         .     16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
           "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
           "ptxas info    : Function properties for k\n"
           "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
           "ptxas info    : Used 32 registers\n")
    report = parse_ptxas_log(log)
    assert [(k.name, k.entry) for k in report.kernels] == [("helper", False), ("k", True)]
    assert report.kernels[1].advisories == [] and report.kernels[0].advisories == []
    assert report.advisories == ["warning: Stack size for function 'helper' cannot be statically determined"]


def test_nvcc_form_still_parses():
    text = ("ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
            "ptxas info    : Function properties for k\n"
            "    24 bytes stack frame, 16 bytes spill stores, 12 bytes spill loads\n"
            "ptxas info    : Used 64 registers, 8 bytes smem, 352 bytes cmem[0]\n")
    (k,) = parse_ptxas(text)
    assert (k.registers, k.shared_bytes, k.stack_bytes, k.spill_stores, k.spill_loads) == (64, 8, 24, 16, 12)


def test_ptxas_verbose_is_a_default_nvrtc_option():
    opts = cuda.compile_options("sm_90a", Path("/x/k.cu"))
    assert "--ptxas-options=-v" in opts  # and so part of the module cache key, which holds the options


# --------------------------------------------------------------------------- modules and launches


def _module(log: str, name: str = "k.cu") -> CudaModule:
    return CudaModule(path=Path("/src") / name, arch="sm_90a",
                      options=cuda.compile_options("sm_90a", Path("/src") / name, {"STAGES": 2}),
                      device_index=0, binary=b"", log=log, compiler="nvrtc 13.0")


def _kernel(mod: CudaModule, name: str, calls: list) -> CudaKernel:
    return CudaKernel(name, mod, lambda grid, block, args, shared_mem, stream: calls.append((name, grid, args)))


STREAM = SimpleNamespace(ptr=0)


def test_module_holds_the_parsed_report():
    mod = _module(SERIALISED_LOG)
    assert mod.resources["attn_fwd_pingpong"].spill_stores == 232
    assert _kernel(mod, "attn_fwd_pingpong", []).resources is mod.resources["attn_fwd_pingpong"]
    assert _kernel(mod, "absent", []).resources is None


def test_unparseable_log_loads_with_no_report(monkeypatch):
    def broken(text):
        raise ValueError("unexpected log")

    monkeypatch.setattr(cuda.build, "parse_ptxas_log", broken)  # where CudaModule looks it up
    mod = _module(SERIALISED_LOG)
    assert mod.resources == {} and mod.advisories == []


def test_track_launches_collects_each_kernel_once():
    calls: list = []
    mod_a, mod_b = _module(SERIALISED_LOG, "a.cu"), _module(CLEAN_LOG, "b.cu")
    a, b = _kernel(mod_a, "attn_fwd_pingpong", calls), _kernel(mod_b, "attn_fwd_overlap", calls)
    a((1,), (32,), np.int32(1), stream=STREAM)  # before tracking: not collected
    with track_launches() as launched:
        b(2, 32, np.int32(2), stream=STREAM)
        a((3, 1), (128,), np.int32(3), stream=STREAM)
        b(4, 32, np.int32(4), stream=STREAM)
        t = threading.Thread(target=lambda: a(5, 32, stream=STREAM))
        t.start()
        t.join()
    a(6, 32, stream=STREAM)  # after: not collected
    assert launched == [b, a]
    assert [c[0] for c in calls] == ["attn_fwd_pingpong", "attn_fwd_overlap", "attn_fwd_pingpong",
                                     "attn_fwd_overlap", "attn_fwd_pingpong", "attn_fwd_pingpong"]
    assert calls[2][1] == (3, 1) and calls[2][2] == (np.int32(3),)


def test_untracked_kernels_are_left_out():
    calls: list = []
    own = _kernel(_module(CLEAN_LOG), "attn_fwd_overlap", calls)
    own.tracked = False
    with track_launches() as launched:
        own(1, 1, stream=STREAM)
    assert launched == [] and len(calls) == 1


def test_nested_tracking_is_refused_and_the_outer_one_goes_on():
    k = _kernel(_module(CLEAN_LOG), "attn_fwd_overlap", [])
    with track_launches() as outer:
        with pytest.raises(RuntimeError, match="already active"):
            with track_launches():
                pass
        k(1, 1, stream=STREAM)
    assert outer == [k]
    with track_launches() as again:  # the refusal left no tracking behind
        pass
    assert again == []


def test_tracking_ends_when_the_block_raises():
    k = _kernel(_module(CLEAN_LOG), "attn_fwd_overlap", [])
    with pytest.raises(ZeroDivisionError):
        with track_launches() as launched:
            k(1, 1, stream=STREAM)
            1 / 0
    assert launched == [k]
    assert cuda.launch._TRACKING is None


# --------------------------------------------------------------------------- into the record


def test_kernel_builds_for_the_record():
    pingpong = _kernel(_module(SERIALISED_LOG, "v08.cu"), "attn_fwd_pingpong", [])
    clean = _kernel(_module(CLEAN_LOG, "v09.cu"), "attn_fwd_overlap", [])
    unparsed = _kernel(_module("", "v10.cu"), "attn_fwd_lazy", [])
    builds = kernel_builds([pingpong, clean, unparsed])
    assert [b.kernel for b in builds] == ["attn_fwd_pingpong", "attn_fwd_overlap"]  # no log, no driver here: no build
    b = builds[0]
    assert (b.source, b.compiler, b.arch, b.registers) == ("v08.cu", "nvrtc 13.0", "sm_90a", 168)
    assert (b.spill_stores, b.spill_loads, b.stack_bytes, b.barriers) == (232, 232, 152, 16)
    assert b.advisories == [C7512] and b.performance_advisories() == [C7512] and b.spills
    assert "-DSTAGES=2" in b.options and "--ptxas-options=-v" in b.options and "-I" not in b.options
    assert not builds[1].spills and builds[1].performance_advisories() == []


@pytest.mark.skipif(cuda.find_nvrtc_library() is None, reason="no libnvrtc (pip install nvidia-cuda-nvrtc)")
def test_each_build_records_the_machine_code_it_loaded(tmp_path, monkeypatch):
    """The record names the kernel's machine code in the very cubin the module loaded
    (reporter.cuda.sass), which a same-code proof can later hold the tree's build to."""
    attrs = {"num_regs": 8, "local_size_bytes": 0, "shared_size_bytes": 0}  # no driver here
    monkeypatch.setattr(CudaKernel, "attributes", property(lambda self: attrs))
    src = tmp_path / "k.cu"
    src.write_text('extern "C" __global__ void k1(float* o) { o[threadIdx.x] = 1.0f; }\n'
                   'extern "C" __global__ void k2(float* o) { o[threadIdx.x] = 2.0f; }\n', encoding="utf-8")
    cubin = cuda.nvrtc_cubin_offline(src)
    mod = CudaModule(path=src, arch="sm_90a", options=cuda.compile_options("sm_90a", src), device_index=0,
                     binary=cubin, log=CLEAN_LOG, compiler="nvrtc 13.0")
    one, two = kernel_builds([_kernel(mod, "k1", []), _kernel(mod, "k2", [])])
    assert one.code_sha256 == cuda.kernel_code_sha256(cubin, "k1") and len(one.code_sha256) == 64
    assert two.code_sha256 == cuda.kernel_code_sha256(cubin, "k2") != one.code_sha256
    (unreadable,) = kernel_builds([_kernel(_module(CLEAN_LOG, "v09.cu"), "attn_fwd_overlap", [])])
    assert unreadable.code_sha256 is None  # an empty binary: the build is still recorded, without its code


def test_kernel_builds_never_raises():
    class Broken:
        name = "k"

        @property
        def resources(self):
            raise RuntimeError("module gone")

    assert kernel_builds([Broken()]) == []  # type: ignore[list-item]


# --------------------------------------------------------------------------- on the GPU


@pytest.mark.gpu
def test_a_run_on_the_gpu_records_what_ptxas_said(tmp_path):
    """NVRTC accepts --ptxas-options=-v on the device's toolkit, and `report run` keeps a build
    report: v08's kernel builds clean (no local memory, no advisories) at the 168 registers of its entry."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from typer.testing import CliRunner

    from reporter import store
    from reporter.cli import app

    res = CliRunner().invoke(app, ["run", "flashattn", "-v", "v08", "-c", "test_small", "--no-peers",
                                   "--max-reps", "5", "--budget-s", "2", "--logs", str(tmp_path)])
    assert res.exit_code == 0, res.output
    (path,) = list((tmp_path / "flashattn" / "v08_overlap").glob("*.json.gz"))
    run = store.load(path)
    assert run.ok
    (b,) = run.builds
    assert b.kernel == "attn_fwd_overlap" and b.arch == "sm_90a" and b.compiler.startswith("nvrtc")
    assert b.registers == 168 and not b.uses_local_memory and b.performance_advisories() == []
    assert "-DSTAGES=3" in b.options
    assert b.code_sha256 is not None and len(b.code_sha256) == 64  # the machine code it loaded, by name
    assert b.reported_by in ("ptxas", "driver")  # NVRTC's log is empty in some processes (see kernel_builds)


def test_an_empty_log_falls_back_to_the_drivers_attributes(monkeypatch):
    """NVRTC sometimes returns an empty log (seen on the H100 inside `report run`): the record then
    says what the driver knows, and says where it came from."""
    attrs = {"num_regs": 168, "local_size_bytes": 152, "shared_size_bytes": 0}
    monkeypatch.setattr(CudaKernel, "attributes", property(lambda self: attrs))
    (b,) = kernel_builds([_kernel(_module("", "v07.cu"), "attn_fwd_pingpong", [])])
    assert (b.reported_by, b.registers, b.local_bytes, b.advisories) == ("driver", 168, 152, [])
    assert b.uses_local_memory and not b.spills and b.compiler == "nvrtc 13.0"
    (parsed,) = kernel_builds([_kernel(_module(CLEAN_LOG, "v09.cu"), "attn_fwd_overlap", [])])
    assert parsed.reported_by == "ptxas" and parsed.local_bytes is None  # the log wins when it has the report
