"""flashattn v08_overlap without a GPU: the overlapped schedule builds for sm_90a without spills
or wgmma serialisation, the wrapper validates like v06/v07, the source's defaults match the
Python side; and the finding that made v08 possible (a `trap` in the consumers' waits, not
the register budget, serialises the pipelined wgmma) still holds for the ptxas installed here.
The kernel itself is checked on the H100 by tests/test_gpu_versions.py."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from reporter import cuda  # noqa: E402
from reporter.assignments import get_assignment  # noqa: E402

from cuda_text import calls, definition, macro_value, run_code  # noqa: E402  (tests/cuda_text.py)

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "kernels" / "flashattn" / "v08_overlap.cu"
V07 = ROOT / "kernels" / "flashattn" / "v07_pingpong.cu"
ASSIGNMENT = get_assignment(ROOT / "kernels", "flashattn")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def v08():
    return ASSIGNMENT.version("v08").load()


def test_version_is_listed_and_describes_itself(v08):
    v = ASSIGNMENT.version("v08")
    assert v.name == "v08_overlap"
    assert SOURCE in v.sources
    assert "Hypothesis" in v.docstring()
    assert v08.CONFIG in v08.SWEEP
    for cfg in v08.SWEEP:
        assert v08.smem_bytes(cfg["STAGES"]) <= v08.MAX_DYNAMIC_SMEM


def test_wrapper_refuses_cpu_tensors_and_bad_shapes(v08):
    good = tuple(torch.zeros(1, 2, 256, 128, dtype=torch.float16) for _ in range(3))
    with pytest.raises(ValueError, match="CUDA"):
        v08.custom_kernel(good)
    bad = tuple(torch.zeros(1, 2, 200, 128, dtype=torch.float16) for _ in range(3))
    with pytest.raises(ValueError, match="multiple of 128"):
        v08.custom_kernel(bad)


def test_descriptor_defaults_match_the_source(v08):
    for name, value in v08.DESCRIPTOR_DEFAULTS.items():
        assert macro_value(SOURCE, name) == value, name


def test_the_hang_check_does_not_trap():
    own = run_code(SOURCE)
    assert calls(own, "mbar_wait") and not calls(own, "mbar_wait_trap")  # v06-v07's wait traps
    wait = definition(SOURCE, "mbar_wait")
    assert "trap" not in wait and calls(wait, "hang_fault")
    assert "trap" not in definition(SOURCE, "hang_fault")


def _ptxas_text(path: Path, defines: dict[str, int]) -> str:
    cmd = ["nvcc", "-gencode=arch=compute_90a,code=sm_90a", "-cubin", "-std=c++17", "-Xptxas", "-v",
           *(f"-I{d}" for d in cuda.include_dirs(Path(__file__).resolve().parents[1] / "kernels" / "flashattn" / "x.cu")), *cuda.define_options(defines), "-o", "/dev/null", str(path)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout + res.stderr


@needs_nvcc
@pytest.mark.parametrize("stages", [2, 3])
def test_the_overlapped_schedule_builds_clean(v08, stages):
    cfg = {**v08.CONFIG, "STAGES": stages}
    (r,) = cuda.ptxas_report(SOURCE, arch="sm_90a", defines=cfg)
    assert r.name == "attn_fwd_overlap" and r.registers == 168  # the entry budget: 384 threads, 1 CTA/SM
    assert r.spill_stores == 0 and r.spill_loads == 0 and r.stack_bytes == 0
    assert "C7512" not in _ptxas_text(SOURCE, cfg)  # wgmma not serialised


@needs_nvcc
def test_a_trap_in_the_waits_is_what_serialised_v07s_pipeline():
    serialised = _ptxas_text(V07, {"PIPELINE": 1, "STAGES": 2})
    assert "C7512" in serialised and "spill stores" in serialised
    clean = _ptxas_text(V07, {"PIPELINE": 1, "STAGES": 2, "HANG_TRAP": 0})
    assert "C7512" not in clean
    assert re.search(r"\b0 bytes spill stores", clean)


@needs_nvcc
def test_impossible_settings_do_not_compile():
    with pytest.raises(cuda.CudaCompileError, match="227 KB"):
        cuda.ptxas_report(SOURCE, arch="sm_90a", defines={"STAGES": 4})
    with pytest.raises(cuda.CudaCompileError, match="setmaxnreg"):
        cuda.ptxas_report(SOURCE, arch="sm_90a", defines={"CONSUMER_REGS": 244})
