"""flashattn v11_q_in_registers without a GPU: with Q's 32 extra registers per consumer thread
the overlapped schedule still builds for sm_90a without spills or wgmma serialisation, Q no
longer goes through shared memory, the wrapper validates like v06-v10, the source's defaults
match the Python side.
The kernel itself is checked on the H100 by tests/test_gpu_versions.py."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from reporter import cuda  # noqa: E402
from reporter.assignments import get_assignment  # noqa: E402

from cuda_text import calls, definition, macro_value, run_code  # noqa: E402  (tests/cuda_text.py)

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "kernels" / "flashattn" / "v11_q_in_registers.cu"
ASSIGNMENT = get_assignment(ROOT / "kernels", "flashattn")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def v11():
    return ASSIGNMENT.version("v11").load()


def test_version_is_listed_and_describes_itself(v11):
    v = ASSIGNMENT.version("v11")
    assert v.name == "v11_q_in_registers"
    assert SOURCE in v.sources
    assert "Hypothesis" in v.docstring()
    assert v11.CONFIG in v11.SWEEP
    for cfg in v11.SWEEP:
        assert v11.smem_bytes(cfg["STAGES"]) <= v11.MAX_DYNAMIC_SMEM


def test_wrapper_refuses_cpu_tensors_and_bad_shapes(v11):
    good = tuple(torch.zeros(1, 2, 256, 128, dtype=torch.float16) for _ in range(3))
    with pytest.raises(ValueError, match="CUDA"):
        v11.custom_kernel(good)
    bad = tuple(torch.zeros(1, 2, 200, 128, dtype=torch.float16) for _ in range(3))
    with pytest.raises(ValueError, match="multiple of 128"):
        v11.custom_kernel(bad)


def test_descriptor_defaults_match_the_source(v11):
    for name, value in v11.DESCRIPTOR_DEFAULTS.items():
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
def test_the_overlapped_schedule_builds_clean(v11, stages):
    cfg = {**v11.CONFIG, "STAGES": stages}
    (r,) = cuda.ptxas_report(SOURCE, arch="sm_90a", defines=cfg)
    assert r.name == "attn_fwd_qreg" and r.registers == 168  # the entry budget: 384 threads, 1 CTA/SM
    assert r.spill_stores == 0 and r.spill_loads == 0 and r.stack_bytes == 0
    assert "C7512" not in _ptxas_text(SOURCE, cfg)  # wgmma not serialised


def test_smem_bytes_matches_the_source(v11):
    for stages in (2, 3):  # no Q tile, no Q barrier: the compiler's SMEM_BYTES is the host's
        assert macro_value(SOURCE, "SMEM_BYTES", {"STAGES": stages}) == v11.smem_bytes(stages)
        assert macro_value(SOURCE, "NUM_BARRIERS", {"STAGES": stages}) == 4 * stages
    assert v11.smem_bytes(3) == 1024 + 6 * 32768 + 8 * 12


def test_q_is_never_copied_to_shared_memory():
    code = run_code(SOURCE)  # the kernel and every helper it runs, hooks resolved
    assert "load_tile(sQ" not in code and "mbar_wait(bar_q" not in code and "mbar_init(bar_q" not in code
    assert not calls(code, "wgmma_m64n128k16_ss") and not calls(code, "issue_qk")
    assert "load_q_frags(qf" in code and calls(code, "issue_qk_qregs")


@needs_nvcc
def test_impossible_settings_do_not_compile():
    with pytest.raises(cuda.CudaCompileError, match="227 KB"):
        cuda.ptxas_report(SOURCE, arch="sm_90a", defines={"STAGES": 4})
    with pytest.raises(cuda.CudaCompileError, match="setmaxnreg"):
        cuda.ptxas_report(SOURCE, arch="sm_90a", defines={"CONSUMER_REGS": 244})
