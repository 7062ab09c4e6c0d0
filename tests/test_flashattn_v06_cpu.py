"""flashattn v06_wgmma (hand-written sm_90a CUDA) without a GPU: the source builds for sm_90a in
every debug mode without spills, the wrapper refuses what the kernel cannot do before touching a
GPU, and wgmma_selftest.py's helpers and whole flow (on its CPU emulation of the kernel) work.
The kernel itself is checked on the H100 by wgmma_selftest.py and tests/test_gpu_versions.py."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from reporter import cuda  # noqa: E402
from reporter.assignments import get_assignment  # noqa: E402
from cuda_text import macro_value  # noqa: E402  (tests/cuda_text.py)

ROOT = Path(__file__).resolve().parents[1]
FLASH = ROOT / "kernels" / "flashattn"
SOURCE = FLASH / "v06_wgmma.cu"
SELFTEST = FLASH / "wgmma_selftest.py"
ASSIGNMENT = get_assignment(ROOT / "kernels", "flashattn")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def v06():
    return ASSIGNMENT.version("v06").load()


@pytest.fixture(scope="module")
def selftest():
    spec = importlib.util.spec_from_file_location("_wgmma_selftest_under_test", SELFTEST)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# --------------------------------------------------------------------------- the version module


def test_version_is_listed_imports_without_a_gpu_and_describes_itself(v06):
    v = ASSIGNMENT.version("v06")
    assert v.name == "v06_wgmma"
    assert SOURCE in v.sources
    assert len(v.docstring()) > 200
    assert callable(v06.custom_kernel)
    assert v06.CONFIG in v06.SWEEP
    assert all(callable(v06.make_kernel(cfg)) for cfg in v06.SWEEP)


def test_every_swept_config_fits_in_shared_memory(v06):
    # Q + 2 x STAGES tiles of 32 KB, 1 KB alignment slack, 8 bytes per mbarrier
    assert v06.smem_bytes(2) == 1024 + 5 * 32768 + 8 * 9
    for cfg in v06.SWEEP:
        assert v06.smem_bytes(cfg["STAGES"]) <= v06.MAX_DYNAMIC_SMEM


def _qkv(b=1, h=2, s=256, d=128, dtype=torch.float16):
    return tuple(torch.zeros(b, h, s, d, dtype=dtype) for _ in range(3))


@pytest.mark.parametrize("data,match", [
    (_qkv(dtype=torch.float32), "float16"),
    (_qkv(d=64), "head dim"),
    (_qkv(s=200), "multiple of 128"),
    (_qkv(s=0), "multiple of 128"),
    ((torch.zeros(1, 2, 256, 128, dtype=torch.float16),) * 2, r"\(q, k, v\)"),
    ((torch.zeros(1, 2, 256, 128, dtype=torch.float16), torch.zeros(1, 2, 384, 128, dtype=torch.float16),
      torch.zeros(1, 2, 256, 128, dtype=torch.float16)), "shape"),
    (tuple(torch.zeros(1, 2, 128, 256, dtype=torch.float16).transpose(2, 3) for _ in range(3)), "contiguous"),
    (tuple(torch.zeros(2, 256, 128, dtype=torch.float16) for _ in range(3)), r"\(B, H, S, D\)"),
    (_qkv(), "CUDA"),  # a valid shape, but on the CPU
])
def test_wrapper_refuses_what_the_kernel_cannot_do(v06, data, match):
    with pytest.raises(ValueError, match=match):
        v06.custom_kernel(data)
    with pytest.raises(ValueError, match=match):
        v06.make_kernel({"STAGES": 3})(data)


# --------------------------------------------------------------------------- the CUDA source


@needs_nvcc
@pytest.mark.parametrize("defines", [
    {}, {"DBG_MODE": 1}, {"DBG_MODE": 2}, {"STAGES": 3}, {"HANG_TRAP": 0}, {"PROXY_FENCE": 0},
], ids=lambda d: ",".join(f"{k}={v}" for k, v in d.items()) or "defaults")
def test_source_builds_for_sm90a_without_spills(defines):
    rows = cuda.ptxas_report(SOURCE, arch="sm_90a", defines=defines)
    assert [r.name for r in rows] == ["attn_fwd_wgmma"]
    (r,) = rows
    assert r.spill_stores == 0 and r.spill_loads == 0 and r.stack_bytes == 0
    # __launch_bounds__(384, 1): 168 registers at launch, which setmaxnreg redistributes (24 / 240)
    assert r.registers == 168


@needs_nvcc
@pytest.mark.parametrize("defines,message", [
    ({"PRODUCER_REGS": 32}, "must not exceed"),  # 32 + 2 x 240 > 3 x 168: setmaxnreg.inc would wait forever
    ({"CONSUMER_REGS": 244}, "multiple of 8"),
    ({"DBG_MODE": 3}, "DBG_MODE"),
    ({"STAGES": 4}, "227 KB"),
])
def test_settings_that_cannot_work_do_not_compile(defines, message):
    with pytest.raises(cuda.CudaCompileError, match=message):
        cuda.ptxas_report(SOURCE, arch="sm_90a", defines=defines)


@needs_nvcc
def test_the_intra_warpgroup_overlap_experiment_still_builds():
    # off by default: ptxas budgets its wgmma pipeline with the 168 entry registers and spills
    (r,) = cuda.ptxas_report(SOURCE, arch="sm_90a", defines={"INTRA_WG_OVERLAP": 1})
    assert r.name == "attn_fwd_wgmma" and r.registers == 168


def test_descriptor_defaults_match_the_source(v06):
    for name, value in v06.DESCRIPTOR_DEFAULTS.items():
        assert macro_value(SOURCE, name) == value, name


# --------------------------------------------------------------------------- the self-test's helpers


def test_result_lines_round_trip(selftest, capsys):
    selftest.emit({"stage": "mode1", "ok": True, "max_abs_err": 1e-5})
    text = "noise\n" + capsys.readouterr().out + "more noise\n" + selftest.MARK + "{not json\n"
    assert selftest.parse_results(text) == [{"stage": "mode1", "ok": True, "max_abs_err": 1e-5}]


def test_compare_debug_flags_unwritten_and_wrong_elements(selftest):
    ref = torch.randn(256, 128, generator=torch.Generator().manual_seed(0)) * 10
    assert selftest.compare_debug(ref.clone(), ref)["ok"]
    poisoned = ref.clone()
    poisoned[3, 5] = float("nan")
    res = selftest.compare_debug(poisoned, ref)
    assert not res["ok"] and res["nan_count"] == 1
    off = ref.clone()
    off[100, 100] += 1.0
    assert not selftest.compare_debug(off, ref)["ok"]


def test_diagnosis_recognises_swapped_halves_and_chunk_permutations(selftest):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(128, 128, generator=g).half().float()
    ident = selftest.chunk_map(x, x, 0.1)
    assert ident["identity"] and ident["matched_fraction"] == 1.0
    swapped = x.roll(64, dims=1)
    m = selftest.chunk_map(swapped, x, 0.1)
    assert m["matched_fraction"] == 1.0 and not m["identity"]
    assert {tuple(k) for k, _ in m["top_shifts (drow, dchunk): count"]} == {(0, 8), (0, -8)}
    perms = selftest.known_permutations(swapped, x, 1e-3)
    assert perms["d_halves_swapped"] and perms["col_groups_of_64: permutation"] == [1, 0]
    rows = x.reshape(16, 8, 128).flip(1).reshape(128, 128)  # rows reversed inside each group of 8
    perms = selftest.known_permutations(rows, x, 1e-3)
    assert perms["single_rows: permuted within 8"] and perms["single_rows: permutation (first 32)"][:8] == list(
        range(7, -1, -1))
    block = selftest.block_error_map(swapped, x, 1e-3)
    assert len(block) == 16 and set("".join(block)) == {"X"}
    assert any(line.strip() for line in selftest.format_diag({"a": {"b": ["x", "y"], "c": 1}}))


def test_selftest_runs_end_to_end_on_the_cpu_emulation(tmp_path):
    """The whole parent/child flow, with emulated hardware whose V strides are the third
    alternative and a process that dies on the second: the retries must find the third."""
    env = {**os.environ, "WGMMA_SELFTEST_FAKE": "1", "OUT": str(tmp_path),
           "WGMMA_FAKE_TRUTH": json.dumps({"V_LBO": 8192, "V_SBO": 1024}),
           "WGMMA_FAKE_CRASH": json.dumps({"V_LBO": 16384, "V_SBO": 2048})}
    proc = subprocess.run([sys.executable, str(SELFTEST), "--only", "mode1,mode2,mode0"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads((tmp_path / "wgmma_selftest.json").read_text())
    assert result["chosen_defines"] == {"K_LBO": 16, "K_SBO": 1024, "V_LBO": 8192, "V_SBO": 1024}
    assert result["verdict"]["mode1_match"] == {"K_LBO": 16, "K_SBO": 1024}
    records = [r for stage in result["stages"] for r in stage.get("records", [])]
    assert any(r.get("error", "").startswith("process exit") for r in records if r["stage"] == "mode2")
    mode0 = [r for r in records if r["stage"] == "mode0"]
    assert mode0 and all(r["ok"] for r in mode0)
    assert "wgmma self-test summary" in proc.stdout
