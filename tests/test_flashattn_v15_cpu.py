"""flashattn v15_kv176_multicast without a GPU: every swept geometry builds for sm_90a without
spills or wgmma serialisation, K/V come through 3-D tensor maps (so TMA zero-fills the partial
last tile) multicast to the cluster, the partial tile is masked, shared memory fits, and the
wrapper validates like v06. The kernel is checked on the H100 by tests/test_gpu_versions.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from reporter import cuda  # noqa: E402
from reporter.assignments import get_assignment  # noqa: E402

from cuda_text import calls, closure_text, reached_code  # noqa: E402  (tests/cuda_text.py)

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "kernels" / "flashattn" / "v15_kv176_multicast.cu"
ASSIGNMENT = get_assignment(ROOT / "kernels", "flashattn")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def v15():
    return ASSIGNMENT.version("v15").load()


def test_version_is_listed_and_describes_itself(v15):
    v = ASSIGNMENT.version("v15")
    assert v.name == "v15_kv176_multicast" and SOURCE in v.sources
    assert "Hypothesis" in v.docstring() and "Structure" in v.docstring()
    assert v15.CONFIG in v15.SWEEP
    for cfg in v15.SWEEP:
        assert v15.smem_bytes(cfg["STAGES"], cfg["BLOCK_N"]) <= v15.MAX_DYNAMIC_SMEM
    assert v15.smem_bytes(3, 176) > v15.MAX_DYNAMIC_SMEM  # why 176 rows get two stages


def test_kv_tiles_come_through_3d_maps_multicast_and_masked():
    code = reached_code(SOURCE)  # its file and the shared helpers it calls, comments removed
    assert "cp.async.bulk.tensor.3d" in code and ".multicast::cluster" in code and "cp.async.cg" not in code
    assert "mask_tail(sc, tail, col)" in code and "KV_TILE_BYTES" in code
    # the steps' loop runs unmasked copies; only the separate last step masks (MASK_IN_LOOP 0)
    assert "for (int j = 1; j < n_tiles - 1; ++j) consumer_step<0>(" in code
    assert "if (n_tiles > 1) consumer_step<1>(n_tiles - 1," in code
    assert "[&]" not in code  # NVRTC 13.0 (the H100's) takes a generic lambda for a host function
    assert "trap" not in code and calls(code, "hang_fault") and not calls(code, "mbar_wait_trap")


def test_wrapper_refuses_cpu_tensors_and_bad_shapes(v15):
    good = tuple(torch.zeros(1, 2, 256, 128, dtype=torch.float16) for _ in range(3))
    with pytest.raises(ValueError, match="CUDA"):
        v15.custom_kernel(good)
    bad = tuple(torch.zeros(1, 2, 200, 128, dtype=torch.float16) for _ in range(3))
    with pytest.raises(ValueError, match="multiple of 128"):
        v15.custom_kernel(bad)


def test_descriptor_defaults_match_the_source(v15):
    text = closure_text(SOURCE)  # v15's configuration is in attn_sm90_kv176.cuh, which its source includes
    for name, value in v15.DESCRIPTOR_DEFAULTS.items():
        assert f"#define {name} {value}" in text
    assert "#define V_LBO KV_HALF_BYTES" in text


@needs_nvcc
@pytest.mark.parametrize("defines", [{"BLOCK_N": 176, "STAGES": 2, "CLUSTER": 2}, {"BLOCK_N": 128, "STAGES": 2, "CLUSTER": 2},
                                     {"BLOCK_N": 128, "STAGES": 3, "CLUSTER": 2}, {"BLOCK_N": 176, "STAGES": 2, "CLUSTER": 1},
                                     {"BLOCK_N": 176, "STAGES": 2, "CLUSTER": 2, "MASK_IN_LOOP": 1}])
def test_every_geometry_builds_clean(defines):
    import subprocess

    (r,) = cuda.ptxas_report(SOURCE, arch="sm_90a", defines=defines)
    assert r.name == "attn_fwd_kv176_multicast" and r.registers == 168
    assert r.spill_stores == 0 and r.spill_loads == 0 and r.stack_bytes == 0
    cmd = ["nvcc", "-gencode=arch=compute_90a,code=sm_90a", "-cubin", "-std=c++17", "-Xptxas", "-v",
           *(f"-I{d}" for d in cuda.include_dirs(Path(__file__).resolve().parents[1] / "kernels" / "flashattn" / "x.cu")), *cuda.define_options(defines), "-o", "/dev/null", str(SOURCE)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0 and "C7512" not in res.stdout + res.stderr


@needs_nvcc
def test_impossible_settings_do_not_compile():
    with pytest.raises(cuda.CudaCompileError, match="227 KB"):
        cuda.ptxas_report(SOURCE, arch="sm_90a", defines={"BLOCK_N": 176, "STAGES": 3})
    with pytest.raises(cuda.CudaCompileError, match="BLOCK_N must be 128 or 176"):
        cuda.ptxas_report(SOURCE, arch="sm_90a", defines={"BLOCK_N": 192})


@pytest.mark.gpu
@pytest.mark.parametrize("s", [128, 256, 384, 1408, 2048, 2816])
# one partial tile only (no cluster: 1 Q block), a partial second tile in a cluster, odd Q blocks,
# 8 x 176 exactly (odd Q blocks), a partial tail in clusters, 16 x 176 exactly in clusters
def test_partial_and_exact_last_tiles_match_the_reference(v15, s):
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    spec = ASSIGNMENT.spec
    data = spec.generate_input(batch_size=1, num_heads=4, seq_len=s, head_dim=128, seed=7 + s)
    ref = spec.ref_kernel(data)
    out = v15.custom_kernel(data)
    torch.cuda.synchronize()
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out.float(), ref.float(), rtol=1e-2, atol=1e-2)
