"""flashattn v09_persistent without a GPU: both ring depths build for sm_90a without spills or
wgmma serialisation, the launch geometry is one CTA per SM and never more CTAs than tiles,
the wrapper validates like v06-v08, the source's defaults match the Python side. The kernel
itself is checked on the H100 by tests/test_gpu_versions.py."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from reporter import cuda  # noqa: E402
from reporter.assignments import get_assignment  # noqa: E402
from cuda_text import macro_value  # noqa: E402  (tests/cuda_text.py)

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "kernels" / "flashattn" / "v09_persistent.cu"
ASSIGNMENT = get_assignment(ROOT / "kernels", "flashattn")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def v09():
    return ASSIGNMENT.version("v09").load()


def test_version_is_listed_and_describes_itself(v09):
    v = ASSIGNMENT.version("v09")
    assert v.name == "v09_persistent"
    assert SOURCE in v.sources
    assert "Hypothesis" in v.docstring()
    assert v09.CONFIG in v09.SWEEP
    for cfg in v09.SWEEP:
        assert v09.smem_bytes(cfg["STAGES"]) <= v09.MAX_DYNAMIC_SMEM


def test_smem_bytes_matches_the_source(v09):
    # SMEM_BYTES in the .cu: slack + Q + 2 * STAGES tiles + (2 + 4 * STAGES) mbarriers
    for stages in (2, 3):  # the compiler's SMEM_BYTES is the host's: Q full and Q empty ahead of the ring's
        assert macro_value(SOURCE, "NUM_BARRIERS", {"STAGES": stages}) == 2 + 4 * stages
        assert macro_value(SOURCE, "SMEM_BYTES", {"STAGES": stages}) == v09.smem_bytes(stages)
    assert v09.smem_bytes(3) == 1024 + 7 * 32768 + 8 * 14


def test_grid_is_one_cta_per_sm_and_never_more_than_the_tiles(v09, monkeypatch):
    monkeypatch.setitem(v09._SM_COUNT, 0, 132)
    assert v09.persistent_grid(0, 64 * 256) == 132
    assert v09.persistent_grid(0, 100) == 100
    assert v09.persistent_grid(0, 1) == 1


def test_wrapper_refuses_cpu_tensors_and_bad_shapes(v09):
    good = tuple(torch.zeros(1, 2, 256, 128, dtype=torch.float16) for _ in range(3))
    with pytest.raises(ValueError, match="CUDA"):
        v09.custom_kernel(good)
    bad = tuple(torch.zeros(1, 2, 200, 128, dtype=torch.float16) for _ in range(3))
    with pytest.raises(ValueError, match="multiple of 128"):
        v09.custom_kernel(bad)


def test_descriptor_defaults_match_the_source(v09):
    text = SOURCE.read_text()
    for name, value in v09.DESCRIPTOR_DEFAULTS.items():
        assert macro_value(SOURCE, name) == value, name
    assert "trap" not in re.sub(r"//[^\n]*", "", text)


@needs_nvcc
@pytest.mark.parametrize("stages", [2, 3])
def test_both_ring_depths_build_clean(v09, stages):
    cfg = {**v09.CONFIG, "STAGES": stages}
    (r,) = cuda.ptxas_report(SOURCE, arch="sm_90a", defines=cfg)
    assert r.name == "attn_fwd_persistent" and r.registers == 168
    assert r.spill_stores == 0 and r.spill_loads == 0 and r.stack_bytes == 0
    cmd = ["nvcc", "-gencode=arch=compute_90a,code=sm_90a", "-cubin", "-std=c++17", "-Xptxas", "-v",
           *(f"-I{d}" for d in cuda.include_dirs(Path(__file__).resolve().parents[1] / "kernels" / "flashattn" / "x.cu")), *cuda.define_options(cfg), "-o", "/dev/null", str(SOURCE)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0 and "C7512" not in res.stdout + res.stderr  # wgmma not serialised
