"""A kernel's machine code by name (reporter.cuda.sass): the hash a run records of each kernel it
launched and a same-code proof compares. It must follow what the kernel runs (an instruction, a
callee, a constant, the resources asked for) and nothing else (line tables, the module's other
kernels). Built offline with the NVRTC wheel, as the harness builds on the GPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from reporter.cuda import (KernelCodeError, find_nvrtc_library, kernel_code_sha256, kernel_names,
                           nvrtc_build_offline, nvrtc_cubin_offline)

LIBRARY = find_nvrtc_library()
pytestmark = pytest.mark.skipif(LIBRARY is None, reason="no libnvrtc (pip install nvidia-cuda-nvrtc)")
ROOT = Path(__file__).resolve().parent.parent

SOURCE = r"""
#ifndef SCALE
#define SCALE 2.0f
#endif
#ifndef TABLE0
#define TABLE0 1.0f
#endif
__constant__ float table[4] = {TABLE0, 2.0f, 3.0f, 4.0f};
__device__ __noinline__ float helper(float x) {
#ifdef HELPER_CHANGED
  return x * 3.0f + 1.0f;
#else
  return x * 3.0f;
#endif
}
extern "C" __global__ void
#ifdef BOUNDS
__launch_bounds__(128, 1)
#endif
kernel_a(float* out, const float* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = helper(in[i]) * SCALE + table[i & 3];
}
extern "C" __global__ void kernel_b(float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
#ifdef B_CHANGED
  if (i < n) out[i] = 2.0f;
#else
  if (i < n) out[i] = 1.0f;
#endif
}
#ifdef WITH_C
extern "C" __global__ void kernel_c(float* out) { out[threadIdx.x] = 3.0f; }
#endif
"""


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sass") / "toy.cu"
    path.write_text(SOURCE, encoding="utf-8")
    return path


def code(path: Path, kernel: str = "kernel_a", **defines: object) -> str:
    return kernel_code_sha256(nvrtc_cubin_offline(path, defines=defines, library=LIBRARY), kernel)


def test_the_hash_follows_the_kernel_and_nothing_else(source):
    base = code(source)
    assert kernel_names(nvrtc_cubin_offline(source, library=LIBRARY)) == ["kernel_b", "kernel_a"]
    # the same kernel: another kernel added to the module, or changed, leaves it as it was
    assert code(source, WITH_C=1) == base
    assert code(source, B_CHANGED=1) == base
    assert code(source, "kernel_b", B_CHANGED=1) != code(source, "kernel_b")
    # what the kernel runs: its arithmetic, a function it calls (not inlined), a __constant__ table
    # it reads by bank and offset, and the resources it asks for
    changed = {"an instruction": code(source, SCALE="3.0f"), "a callee": code(source, HELPER_CHANGED=1),
               "a constant": code(source, TABLE0="5.0f"), "launch bounds": code(source, BOUNDS=1)}
    assert all(h != base for h in changed.values()), changed
    assert len(set(changed.values())) == len(changed)


def test_line_information_does_not_count(source):
    plain = nvrtc_build_offline(source, library=LIBRARY).cubin  # what a same-code proof compares
    with_lines = nvrtc_cubin_offline(source, library=LIBRARY)
    assert len(with_lines) > len(plain)  # the line tables and the PTX text are in it
    assert kernel_code_sha256(plain, "kernel_a") == kernel_code_sha256(with_lines, "kernel_a")


def test_a_kernel_keeps_its_hash_when_its_module_stops_carrying_another_version(tmp_path):
    """v17 once included v15's whole .cu, so its module held v15's kernel too; since the move it
    holds only its own: the same machine code for attn_fwd_persistent."""
    import shutil

    shutil.copytree(ROOT / "kernels" / "flashattn", tmp_path / "flashattn", ignore=shutil.ignore_patterns("attic", "*.py"))
    shutil.copytree(ROOT / "kernels" / "common", tmp_path / "common")
    v17 = tmp_path / "flashattn" / "v17_persistent.cu"
    alone = nvrtc_cubin_offline(v17, library=LIBRARY)
    v17.write_text(v17.read_text(encoding="utf-8") + '\nextern "C" __global__ void other_kernel(float* o) '
                   '{ o[threadIdx.x] = 1.0f; }\n', encoding="utf-8")
    both = nvrtc_cubin_offline(v17, library=LIBRARY)
    assert "other_kernel" in kernel_names(both) and "other_kernel" not in kernel_names(alone)
    assert len(both) > len(alone)
    assert kernel_code_sha256(alone, "attn_fwd_persistent") == kernel_code_sha256(both, "attn_fwd_persistent")


def test_bad_input_is_named(source):
    cubin = nvrtc_cubin_offline(source, library=LIBRARY)
    with pytest.raises(KernelCodeError, match="no kernel named kernel_z"):
        kernel_code_sha256(cubin, "kernel_z")
    with pytest.raises(KernelCodeError, match="cannot read"):
        kernel_code_sha256(b"not an ELF file at all", "kernel_a")


DEVICE_CODE = Path(__file__).resolve().parent / "fixtures" / "device_code.json"


def _device_builds() -> list[dict]:
    import json

    return json.loads(DEVICE_CODE.read_text(encoding="utf-8"))


def test_this_machine_builds_the_code_the_gpu_ran():
    """What the H100 loaded (CuPy's NVRTC on the device, written by tests/test_gpu_versions.py with
    $REPORT_CODE_FIXTURE) is what the NVRTC wheel builds here without a GPU: so a proof made here
    speaks of the code a run ran. The newest build of each assignment whose sources are still the
    tree's is compiled again (the device's run wrote 61, every one the same here on 2026-11-26)."""
    from reporter.cuda import file_sha256, nvrtc_version_offline
    from reporter.samecode import parse_options

    builds = _device_builds()
    assert {b["compiler"] for b in builds} == {"nvrtc 13.0"}
    here = nvrtc_version_offline(LIBRARY)
    if here != "nvrtc 13.0":
        pytest.skip(f"the device built with nvrtc 13.0, this machine has {here}")
    current = [b for b in builds if all((ROOT / p).is_file() and file_sha256(ROOT / p) == h
                                        for p, h in b["sources"].items())]
    newest = {}
    for b in current:
        newest[b["source"].split("/")[1]] = b  # the fixture lists each assignment's versions in order
    assert len(newest) >= 3, ("the kernels changed since the device wrote tests/fixtures/device_code.json: refresh it "
                              "(REPORT_CODE_FIXTURE=... pytest -m gpu tests/test_gpu_versions.py on the GPU)")
    # NVRTC's output for one source and one set of options is not the same on every compile for every kernel
    # (matmul v17's fp16 build: two PTX texts, and on a loaded machine now and then another machine code): the
    # question is whether this machine builds the device's code, so each build gets a few compiles to show it
    def codes(build, n: int = 4):  # type: ignore[no-untyped-def]
        for _ in range(n):
            code = kernel_code_sha256(build(), b["kernel"])
            yield code
            if code == b["code_sha256"]:
                return

    for b in newest.values():
        parsed = parse_options(b["options"])
        assert parsed is not None, b["options"]
        seen = list(codes(lambda: nvrtc_cubin_offline(ROOT / b["source"], arch=parsed.arch, defines=parsed.defines,
                                                      library=LIBRARY)))
        assert seen[-1] == b["code_sha256"], (b["source"], b["options"], seen)
        # and without -lineinfo, as a same-code proof builds it
        seen = list(codes(lambda: nvrtc_build_offline(ROOT / b["source"], arch=parsed.arch, defines=parsed.defines,
                                                      library=LIBRARY).cubin))
        assert seen[-1] == b["code_sha256"], (b["source"], b["options"], seen)
