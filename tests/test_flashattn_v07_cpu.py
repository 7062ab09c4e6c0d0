"""flashattn v07_pingpong without a GPU: every SWEEP config builds for sm_90a (the default one
without spills or wgmma serialisation), the wrapper validates like v06, the source's defaults
match the Python side. The kernel itself is checked on the H100 by wgmma_selftest.py (stage v07)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from reporter import cuda  # noqa: E402
from reporter.assignments import get_assignment  # noqa: E402
from cuda_text import macro_value  # noqa: E402  (tests/cuda_text.py)

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "kernels" / "flashattn" / "v07_pingpong.cu"
ASSIGNMENT = get_assignment(ROOT / "kernels", "flashattn")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def v07():
    return ASSIGNMENT.version("v07").load()


def test_version_is_listed_and_describes_itself(v07):
    v = ASSIGNMENT.version("v07")
    assert v.name == "v07_pingpong"
    assert SOURCE in v.sources
    assert len(v.docstring()) > 200
    assert v07.CONFIG in v07.SWEEP
    assert all(callable(v07.make_kernel(cfg)) for cfg in v07.SWEEP)
    for cfg in v07.SWEEP:
        assert v07.smem_bytes(cfg["STAGES"]) <= v07.MAX_DYNAMIC_SMEM


def test_wrapper_refuses_cpu_tensors_and_bad_shapes(v07):
    good = tuple(torch.zeros(1, 2, 256, 128, dtype=torch.float16) for _ in range(3))
    with pytest.raises(ValueError, match="CUDA"):
        v07.custom_kernel(good)
    bad = tuple(torch.zeros(1, 2, 200, 128, dtype=torch.float16) for _ in range(3))
    with pytest.raises(ValueError, match="multiple of 128"):
        v07.make_kernel({"STAGES": 3, "PIPELINE": 0})(bad)


def _ptxas_text(defines):
    cmd = ["nvcc", "-gencode=arch=compute_90a,code=sm_90a", "-cubin", "-std=c++17", "-Xptxas", "-v",
           *(f"-I{d}" for d in cuda.include_dirs(Path(__file__).resolve().parents[1] / "kernels" / "flashattn" / "x.cu")), *cuda.define_options(defines), "-o", "/dev/null", str(SOURCE)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout + res.stderr


@needs_nvcc
def test_every_swept_config_builds(v07):
    for cfg in v07.SWEEP:
        (r,) = cuda.ptxas_report(SOURCE, arch="sm_90a", defines=cfg)
        assert r.name == "attn_fwd_pingpong" and r.registers == 168


@needs_nvcc
@pytest.mark.parametrize("stages", [2, 3])
def test_the_default_schedule_builds_clean(v07, stages):
    cfg = {**v07.CONFIG, "STAGES": stages}
    (r,) = cuda.ptxas_report(SOURCE, arch="sm_90a", defines=cfg)
    assert r.spill_stores == 0 and r.spill_loads == 0 and r.stack_bytes == 0
    assert "C7512" not in _ptxas_text(cfg)  # wgmma not serialised


@needs_nvcc
def test_impossible_settings_do_not_compile():
    with pytest.raises(cuda.CudaCompileError, match="PRODUCER_WARPS"):
        cuda.ptxas_report(SOURCE, arch="sm_90a", defines={"PRODUCER_WARPS": 2})
    with pytest.raises(cuda.CudaCompileError, match="227 KB"):
        cuda.ptxas_report(SOURCE, arch="sm_90a", defines={"STAGES": 4})


def test_descriptor_defaults_match_the_source(v07):
    for name, value in v07.DESCRIPTOR_DEFAULTS.items():
        assert macro_value(SOURCE, name) == value, name
