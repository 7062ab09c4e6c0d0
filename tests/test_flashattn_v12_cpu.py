"""flashattn v12_kv176 without a GPU: both kv tile widths build for sm_90a without spills or wgmma
serialisation (the 176-wide S product is m64n176k16), the shared-memory arithmetic matches the
source, impossible settings are refused before launch; on a GPU (marker ``gpu``) sequences
whose last kv tile is partial, or the only tile, match the fp32 reference."""

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
SOURCE = ROOT / "kernels" / "flashattn" / "v12_kv176.cu"
ASSIGNMENT = get_assignment(ROOT / "kernels", "flashattn")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def v12():
    return ASSIGNMENT.version("v12").load()


def test_version_is_listed_and_describes_itself(v12):
    v = ASSIGNMENT.version("v12")
    assert v.name == "v12_kv176"
    assert SOURCE in v.sources
    assert "Hypothesis" in v.docstring()
    assert v12.CONFIG in v12.SWEEP
    for cfg in v12.SWEEP:
        assert v12.smem_bytes(cfg["STAGES"], cfg["BLOCK_N"]) <= v12.MAX_DYNAMIC_SMEM


def test_smem_bytes_matches_the_source(v12):
    for cfg in v12.SWEEP:  # the compiler's SMEM_BYTES is the host's for every swept geometry
        defines = {"STAGES": cfg["STAGES"], "BLOCK_N": cfg["BLOCK_N"]}
        assert macro_value(SOURCE, "SMEM_BYTES", defines) == v12.smem_bytes(cfg["STAGES"], cfg["BLOCK_N"])
    assert macro_value(SOURCE, "KV_TILE_BYTES") == 176 * 256
    assert v12.smem_bytes(2, 176) == 1024 + 32768 + 4 * 176 * 256 + 8 * 9
    assert v12.smem_bytes(3, 176) > v12.MAX_DYNAMIC_SMEM  # why 176 runs with two stages


def test_impossible_settings_are_refused_before_launch(v12):
    good = tuple(torch.zeros(1, 2, 256, 128, dtype=torch.float16) for _ in range(3))
    with pytest.raises(ValueError, match="CUDA"):
        v12.custom_kernel(good)
    with pytest.raises(ValueError, match="multiple of 128"):
        v12.custom_kernel(tuple(torch.zeros(1, 2, 200, 128, dtype=torch.float16) for _ in range(3)))
    out = torch.empty(1, 2, 256, 128, dtype=torch.float16)
    with pytest.raises(ValueError, match="BLOCK_N=192"):
        v12.launch(*good, config={"BLOCK_N": 192, "STAGES": 2}, out=out)
    with pytest.raises(ValueError, match="shared memory"):
        v12.launch(*good, config={"BLOCK_N": 176, "STAGES": 3}, out=out)


def test_descriptor_defaults_match_the_source(v12):
    text = SOURCE.read_text()
    for name, value in v12.DESCRIPTOR_DEFAULTS.items():
        if name == "V_LBO":  # the distance between V's two 64-column halves depends on the width
            assert macro_value(SOURCE, name) == 176 * 128
            assert macro_value(SOURCE, name, {"BLOCK_N": 128}) == value
        else:
            assert macro_value(SOURCE, name) == value, name
    assert "trap" not in re.sub(r"//[^\n]*", "", text)


@needs_nvcc
@pytest.mark.parametrize("cfg", [{"BLOCK_N": 176, "STAGES": 2}, {"BLOCK_N": 128, "STAGES": 3}])
def test_both_widths_build_clean(cfg):
    (r,) = cuda.ptxas_report(SOURCE, arch="sm_90a", defines=cfg)
    assert r.name == "attn_fwd_kv176" and r.registers == 168
    assert r.spill_stores == 0 and r.spill_loads == 0 and r.stack_bytes == 0
    cmd = ["nvcc", "-gencode=arch=compute_90a,code=sm_90a", "-cubin", "-std=c++17", "-Xptxas", "-v",
           *(f"-I{d}" for d in cuda.include_dirs(Path(__file__).resolve().parents[1] / "kernels" / "flashattn" / "x.cu")), *cuda.define_options(cfg), "-o", "/dev/null", str(SOURCE)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0 and "C7512" not in res.stdout + res.stderr


@needs_nvcc
def test_an_unsupported_width_does_not_compile():
    with pytest.raises(cuda.CudaCompileError, match="BLOCK_N must be 128 or 176"):
        cuda.ptxas_report(SOURCE, arch="sm_90a", defines={"BLOCK_N": 192})


@pytest.mark.gpu
@pytest.mark.parametrize("s", [128, 256, 384, 1408, 2048])  # one partial tile only, ..., 1408 = 8 x 176 exactly
def test_partial_and_exact_last_tiles_match_the_reference(v12, s):
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    spec = ASSIGNMENT.spec
    data = spec.generate_input(batch_size=1, num_heads=4, seq_len=s, head_dim=128, seed=7 + s)
    ref = spec.ref_kernel(data)
    out = v12.custom_kernel(data)
    torch.cuda.synchronize()
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out.float(), ref.float(), rtol=1e-2, atol=1e-2)
