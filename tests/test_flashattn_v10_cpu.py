"""flashattn v10_lazy_rescale without a GPU: both ring depths build for sm_90a without spills or
wgmma serialisation, the kernel is v08's but for the vote that skips the rescale, the
wrapper validates like v06-v09, the source's defaults match the Python side. The kernel
itself is checked on the H100 by tests/test_gpu_versions.py."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from reporter import cuda  # noqa: E402
from reporter.assignments import get_assignment  # noqa: E402

from cuda_text import calls, definition, kernel_code, macro_value, run_code  # noqa: E402  (tests/cuda_text.py)

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "kernels" / "flashattn" / "v10_lazy_rescale.cu"
ASSIGNMENT = get_assignment(ROOT / "kernels", "flashattn")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def v10():
    return ASSIGNMENT.version("v10").load()


def test_version_is_listed_and_describes_itself(v10):
    v = ASSIGNMENT.version("v10")
    assert v.name == "v10_lazy_rescale"
    assert SOURCE in v.sources
    assert "Hypothesis" in v.docstring()
    assert v10.CONFIG in v10.SWEEP
    for cfg in v10.SWEEP:
        assert v10.smem_bytes(cfg["STAGES"]) <= v10.MAX_DYNAMIC_SMEM


def test_the_skip_is_the_only_change_from_v08():
    """v10 is v08 plus the vote: same headers, helpers and schedule, same exact output by construction."""
    v08_source = ROOT / "kernels" / "flashattn" / "v08_overlap.cu"
    vote = "if (!__all_sync(0xffffffffu, alpha0 == 1.f && alpha1 == 1.f)) rescale_o(o, alpha0, alpha1);"
    assert vote in definition(SOURCE, "rescale_o_lazy")
    # the kernels as compiled (hooks expanded): v08's but for the name and the rescale it calls
    v10_kernel = kernel_code(SOURCE)
    assert v10_kernel.count("rescale_o_lazy(o, alpha0, alpha1)") == 1
    assert (v10_kernel.replace("attn_fwd_lazy", "attn_fwd_overlap").replace("rescale_o_lazy(", "rescale_o(")
            == kernel_code(v08_source))
    for stages in (2, 3):  # and with the swept ring depths too
        assert (kernel_code(SOURCE, {"STAGES": stages}).replace("attn_fwd_lazy", "attn_fwd_overlap")
                .replace("rescale_o_lazy(", "rescale_o(") == kernel_code(v08_source, {"STAGES": stages}))
    # the helper it skips is the shared one, unchanged: O *= alpha, nothing else
    rescale = definition(SOURCE, "rescale_o")
    assert rescale == definition(ROOT / "kernels" / "flashattn" / "v08_overlap.cu", "rescale_o")
    assert "alpha0" in rescale and "alpha1" in rescale and not calls(rescale, "__all_sync")


def test_wrapper_refuses_cpu_tensors_and_bad_shapes(v10):
    good = tuple(torch.zeros(1, 2, 256, 128, dtype=torch.float16) for _ in range(3))
    with pytest.raises(ValueError, match="CUDA"):
        v10.custom_kernel(good)
    bad = tuple(torch.zeros(1, 2, 200, 128, dtype=torch.float16) for _ in range(3))
    with pytest.raises(ValueError, match="multiple of 128"):
        v10.custom_kernel(bad)


def test_descriptor_defaults_match_the_source(v10):
    for name, value in v10.DESCRIPTOR_DEFAULTS.items():
        assert macro_value(SOURCE, name) == value, name
    own = run_code(SOURCE)
    assert calls(own, "mbar_wait") and not calls(own, "mbar_wait_trap") and "trap" not in own


@needs_nvcc
@pytest.mark.parametrize("stages", [2, 3])
def test_both_ring_depths_build_clean(v10, stages):
    cfg = {**v10.CONFIG, "STAGES": stages}
    (r,) = cuda.ptxas_report(SOURCE, arch="sm_90a", defines=cfg)
    assert r.name == "attn_fwd_lazy" and r.registers == 168
    assert r.spill_stores == 0 and r.spill_loads == 0 and r.stack_bytes == 0
    cmd = ["nvcc", "-gencode=arch=compute_90a,code=sm_90a", "-cubin", "-std=c++17", "-Xptxas", "-v",
           *(f"-I{d}" for d in cuda.include_dirs(Path(__file__).resolve().parents[1] / "kernels" / "flashattn" / "x.cu")), *cuda.define_options(cfg), "-o", "/dev/null", str(SOURCE)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0 and "C7512" not in res.stdout + res.stderr  # wgmma not serialised


@pytest.mark.gpu
def test_skipping_the_rescale_changes_no_bit_on_the_gpu(v10):
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    spec = ASSIGNMENT.spec
    v08 = ASSIGNMENT.version("v08").load()
    for case in ("test_small", "test_medium"):
        data = spec.generate_input(**ASSIGNMENT.case(case))
        a = v08.custom_kernel(data)
        b = v10.custom_kernel(data)
        torch.cuda.synchronize()
        assert torch.equal(a, b), case
