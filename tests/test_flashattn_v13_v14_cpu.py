"""flashattn v13_tma and v14_multicast without a GPU: both build for sm_90a without spills or
wgmma serialisation (v14 in clusters of 1 and 2), copy with TMA and not cp.async, validate
their inputs like v06 plus the 32-bit TMA row limit, pick a cluster that tiles the grid, and
keep the defaults their Python side assumes. The kernels themselves are checked on the H100
by tests/test_gpu_versions.py."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from reporter import cuda  # noqa: E402
from reporter.assignments import get_assignment  # noqa: E402

from cuda_text import calls, kernel_code, macro_value, own_code, run_code  # noqa: E402  (tests/cuda_text.py)

ROOT = Path(__file__).resolve().parents[1]
KDIR = ROOT / "kernels" / "flashattn"
V13, V14 = KDIR / "v13_tma.cu", KDIR / "v14_multicast.cu"
ASSIGNMENT = get_assignment(ROOT / "kernels", "flashattn")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def v13():
    return ASSIGNMENT.version("v13").load()


@pytest.fixture(scope="module")
def v14():
    return ASSIGNMENT.version("v14").load()


def _code(path: Path) -> str:
    """The code the version runs: its kernel (in v08's header, hooks expanded) and every helper it calls."""
    return run_code(path)


@pytest.mark.parametrize("short,name,source", [("v13", "v13_tma", V13), ("v14", "v14_multicast", V14)])
def test_versions_are_listed_and_describe_themselves(short, name, source):
    v = ASSIGNMENT.version(short)
    mod = v.load()
    assert v.name == name and source in v.sources
    assert "Hypothesis" in v.docstring() and "Structure" in v.docstring()
    assert mod.CONFIG in mod.SWEEP
    for cfg in mod.SWEEP:
        assert mod.smem_bytes(cfg["STAGES"]) <= mod.MAX_DYNAMIC_SMEM


@pytest.mark.parametrize("source", [V13, V14])
def test_copies_are_tma_and_the_hang_check_does_not_trap(source):
    code = _code(source)
    assert "cp.async.bulk.tensor.2d" in code and "mbarrier.arrive.expect_tx" in code
    assert "cp.async.cg" not in code and "cp.async.mbarrier" not in code
    assert "__grid_constant__" in own_code(source)
    assert "trap" not in code and calls(code, "hang_fault") and not calls(code, "mbar_wait_trap")


def test_v14_multicasts_kv_and_releases_slots_cluster_wide():
    code, kernel = _code(V14), kernel_code(V14)  # the kernel as compiled, its hooks expanded
    assert ".multicast::cluster" in code and "__cluster_dims__(2, 1, 1)" in kernel
    assert "mbar_init(bar_empty_k + 8 * s, (8 * 2))" in kernel
    # a release arrives on the neighbour's barrier too (at CTA scope; .release.cluster was the first build's)
    assert "mapa.shared::cluster" in code and "mbarrier.arrive.shared::cluster" in code
    assert "mbarrier.arrive.release.cluster.shared::cluster" in run_code(V14, {"RELEASE_CLUSTER": 1})
    # the cluster barrier follows the barriers' init and closes both the consumers' and the producer's paths
    assert kernel.count("cluster_sync_all()") == 3
    one = kernel_code(V14, {"CLUSTER": 1})  # CLUSTER 1 is v13's protocol: no cluster at all
    assert "cluster_sync_all" not in one and "__cluster_dims__" not in one


@pytest.mark.parametrize("fixture", ["v13", "v14"])
def test_wrappers_refuse_cpu_tensors_bad_shapes_and_rows_past_int32(fixture, request):
    mod = request.getfixturevalue(fixture)
    good = tuple(torch.zeros(1, 2, 256, 128, dtype=torch.float16) for _ in range(3))
    with pytest.raises(ValueError, match="CUDA"):
        mod.custom_kernel(good)
    bad = tuple(torch.zeros(1, 2, 200, 128, dtype=torch.float16) for _ in range(3))
    with pytest.raises(ValueError, match="multiple of 128"):
        mod.custom_kernel(bad)
    huge = tuple(_Shape((1, 65535, 65536, 128)) for _ in range(3))  # within v06's limits, past TMA's
    with pytest.raises(ValueError, match="2\\^31"):
        mod.check_inputs(huge)


class _Shape:
    """A stand-in with a huge shape: check_inputs reads only dtype, shape, device, contiguity and alignment."""

    def __init__(self, shape):
        self.shape, self.dtype = tuple(shape), torch.float16

    def dim(self):
        return len(self.shape)

    def is_contiguous(self):
        return True

    def data_ptr(self):
        return 1 << 20

    is_cuda = True
    device = "cuda:0"


def test_v14_uses_a_cluster_only_where_it_tiles_the_grid(v14):
    assert v14.cluster_for(8192, 2) == 2 and v14.cluster_for(1024, 2) == 2
    assert v14.cluster_for(384, 2) == 1  # 3 Q blocks
    assert v14.cluster_for(384, 1) == 1


def test_descriptor_defaults_match_the_sources(v13, v14):
    for mod, src in ((v13, V13), (v14, V14)):
        for name, value in mod.DESCRIPTOR_DEFAULTS.items():
            assert macro_value(src, name) == value, (src.name, name)


def _ptxas_text(path: Path, defines: dict[str, int]) -> str:
    cmd = ["nvcc", "-gencode=arch=compute_90a,code=sm_90a", "-cubin", "-std=c++17", "-Xptxas", "-v",
           *(f"-I{d}" for d in cuda.include_dirs(Path(__file__).resolve().parents[1] / "kernels" / "flashattn" / "x.cu")), *cuda.define_options(defines), "-o", "/dev/null", str(path)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout + res.stderr


@needs_nvcc
@pytest.mark.parametrize("source,defines,kernel", [
    (V13, {"STAGES": 2}, "attn_fwd_tma"),
    (V13, {"STAGES": 3}, "attn_fwd_tma"),
    (V13, {"STAGES": 3, "PROXY_FENCE": 1}, "attn_fwd_tma"),
    (V14, {"STAGES": 3, "CLUSTER": 2}, "attn_fwd_multicast"),
    (V14, {"STAGES": 2, "CLUSTER": 2}, "attn_fwd_multicast"),
    (V14, {"STAGES": 3, "CLUSTER": 1}, "attn_fwd_multicast"),
])
def test_every_swept_build_is_clean(source, defines, kernel):
    (r,) = cuda.ptxas_report(source, arch="sm_90a", defines=defines)
    assert r.name == kernel and r.registers == 168
    assert r.spill_stores == 0 and r.spill_loads == 0 and r.stack_bytes == 0
    assert "C7512" not in _ptxas_text(source, defines)


@needs_nvcc
def test_impossible_settings_do_not_compile():
    with pytest.raises(cuda.CudaCompileError, match="227 KB"):
        cuda.ptxas_report(V13, arch="sm_90a", defines={"STAGES": 4})
    with pytest.raises(cuda.CudaCompileError, match="CLUSTER must be 1 or 2"):
        cuda.ptxas_report(V14, arch="sm_90a", defines={"CLUSTER": 4})
