"""flashattn v18-v21 without a GPU: v18 is v17's kernel plus a prefetch warp and trace marks; v20 and
v21 are v19 with only their STORE_O hook; every swept geometry (and the traced builds) compiles for
sm_90a without spills, what does not fit in shared memory is refused at compile time; the trace
probe reads trace.cuh's layout and reduces a launch's stamps as intended."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from reporter import cuda  # noqa: E402
from reporter.assignments import get_assignment  # noqa: E402

from cuda_text import calls, definition, definitions, kernel_code, run_code  # noqa: E402  (tests/cuda_text.py)

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "kernels" / "flashattn"
ASSIGNMENT = get_assignment(ROOT / "kernels", "flashattn")
LIBRARY = cuda.find_nvrtc_library()


@pytest.fixture(scope="module")
def v18():
    return ASSIGNMENT.version("v18").load()


def test_v18_is_v17_s_kernel_plus_the_prefetch_warp_and_trace_marks():
    v17, v18 = FOLDER / "v17_persistent.cu", FOLDER / "v18_prefetch.cu"
    # as compiled: without the prefetch warp and the marks, v18's kernel is v17's to the letter
    for defines in ({}, {"BLOCK_N": 128, "STAGES": 3}, {"CLUSTER": 1}):
        bare = kernel_code(v18, {"PREFETCH": 0, **defines}).replace("attn_fwd_prefetch(", "attn_fwd_persistent(")
        assert bare == kernel_code(v17, defines), defines
    kernel = kernel_code(v18)
    assert calls(kernel, "prefetch_next_units") and "g_trace" not in kernel  # TRACE 0 compiles the marks out
    assert "g_trace" in kernel_code(v18, {"TRACE": 1}) and calls(kernel_code(v18, {"TRACE": 1}), "trace_clock")
    text = v18.read_text()
    assert '#include "attn_sm90_persistent.cuh"' in text and FOLDER / "trace.cuh" in ASSIGNMENT.version("v18").sources
    # its one helper is the prefetch warp; the L2 prefetch is the shared TMA header's, the rest v15's and v17's
    assert [d.name for d in definitions(v18) if d.file == v18] == ["prefetch_next_units"]
    assert calls(run_code(v18), "tma_prefetch_l2_3d")
    assert "cp.async.bulk.prefetch.tensor.3d.L2" in definition(v18, "tma_prefetch_l2_3d")


@pytest.fixture(scope="module")
def probe():
    """tools/trace_probe.py, loaded as the script it is (tools/ is not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("trace_probe", ROOT / "tools" / "trace_probe.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_trace_probe_reads_its_layout_from_the_header(probe):
    header = (FOLDER / "trace.cuh").read_text()
    for name in ("TRACE_MAX_CTAS", "TRACE_UNITS", "TRACE_PER_UNIT", "TRACE_UNIT0", "TR_EPI_DONE", "TR_STEP1"):
        assert f"#define {name} {probe.L[name]}" in header
    assert probe.L["TRACE_SLOTS"] == probe.L["TRACE_UNIT0"] + probe.L["TRACE_UNITS"] * probe.L["TRACE_PER_UNIT"]
    assert probe.SLOT["q_ready"] == probe.L["TR_Q_READY"] and "k0_ready" in probe.SLOT
    assert len(set(probe.SLOT.values())) == len(probe.SLOT), "two marks share a slot"
    assert max(probe.SLOT.values()) < probe.L["TRACE_PER_UNIT"]


def test_a_traced_launch_reduces_to_unit_times(probe):
    """A synthetic two-unit CTA at 1 GHz (cycles = ns): the reduction finds the waits and steps."""
    import numpy as np

    L, S = probe.L, probe.SLOT
    raw = np.zeros((1, L["TRACE_SLOTS"]), dtype=np.uint64)
    raw[0, :4] = [1_000, 1_000, 31_000, 31_000]  # entry ns/clk, exit ns/clk: 30 µs at 1 GHz
    for u, t0 in enumerate((5_000, 18_000)):  # each unit's Q lands at t0 (cycles)
        base = L["TRACE_UNIT0"] + u * L["TRACE_PER_UNIT"]
        marks = {"q_ready": t0, "k0_ready": t0 + 200, "turn0": t0 + 500, "s0_done": t0 + 1_000,
                 "step1": t0 + 2_000, "step1+1": t0 + 4_000, "last_pv": t0 + 8_000, "epi_done": t0 + 9_000,
                 "epi_done_1": t0 + 9_500}
        for k, t in marks.items():
            slot = S["step1"] + 1 if k == "step1+1" else S[k]
            raw[0, base + slot] = t
    out = probe.reduce_launch(raw, 1)
    assert out["span_us"] == 30.0 and out["clock_ghz"] == 1.0
    assert out["first_q_us"] == 4.0  # entry at clock 1000, first Q at 5000
    assert out["q_wait_us"] == 4.0  # unit 0's epilogue at 14000, unit 1's Q at 18000
    assert out["k0_wait_us"] == 0.2 and out["turn_wait_us"] == 0.3 and out["s0_us"] == 1.0
    assert out["step_us"] == 2.0 and out["last_step_us"] == 4.0 and out["epilogue_us"] == 1.0
    assert out["wg1_lag_us"] == 0.5 and out["unit_us"] == 9.0 and out["tail_us"] == 4.0
    assert out["units_max"] == 2


@pytest.mark.skipif(LIBRARY is None, reason="no libnvrtc (pip install nvidia-cuda-nvrtc)")
def test_every_swept_geometry_and_the_traced_build_compile_without_spills(v18):
    configs = [dict(c) for c in v18.SWEEP] + [{**v18.CONFIG, "TRACE": 1}, {**v18.CONFIG, "CLUSTER": 1}]
    for defines in configs:
        ok, log = cuda.nvrtc_compile_offline(FOLDER / "v18_prefetch.cu", defines=defines, library=LIBRARY)
        assert ok, (defines, log[-3000:])
        report = cuda.parse_ptxas_log(log)
        k = next(k for k in report.kernels if k.name == "attn_fwd_prefetch" and k.entry)
        assert k.spill_stores == 0 and k.spill_loads == 0 and not k.advisories, (defines, k, report.advisories)


# --------------------------------------------------------------------------- v19 and v20


@pytest.mark.parametrize("name,hook", [("v20_wide_stores.cu", "store_o_wide"), ("v21_staged_stores.cu", "store_o_staged")])
def test_v20_and_v21_are_v19_with_only_their_store_hook(name, hook):
    text = (FOLDER / name).read_text()
    assert '#include "attn_sm90_double_q.cuh"' in text and f"#define STORE_O {hook}" in text
    assert "__global__" not in text, "no kernel of its own: v19's, with the hook"
    assert '#include "attn_sm90_double_q.cuh"' in (FOLDER / "v19_double_q.cu").read_text()
    kernel = (FOLDER / "attn_sm90_double_q.cuh").read_text()
    assert "#ifndef STORE_O" in kernel and "STORE_O(o," in kernel


def test_v19_and_v20_share_the_launch_and_refuse_what_does_not_fit():
    v19 = ASSIGNMENT.version("v19").load()
    v20 = ASSIGNMENT.version("v20").load()
    assert v20.CONFIG == {**v19.CONFIG, "CLUSTER": 1} and v20.KERNEL_NAME == v19.KERNEL_NAME
    assert v19.smem_bytes(2, 128) <= v19.v15.MAX_DYNAMIC_SMEM < v19.smem_bytes(2, 176)
    assert v19.smem_bytes(2, 176, q_buffers=1) <= v19.v15.MAX_DYNAMIC_SMEM
    assert v19.smem_bytes(2, 128) == 1024 + 2 * 32768 + 2 * 2 * 128 * 256 + 8 * (4 * 2 + 4)
    v21 = ASSIGNMENT.version("v21").load()
    assert v21.smem_bytes(2, 128) == v19.smem_bytes(2, 128) - 8 * 12 + 1024 + 2 * 16384 <= v19.v15.MAX_DYNAMIC_SMEM


@pytest.mark.skipif(LIBRARY is None, reason="no libnvrtc (pip install nvidia-cuda-nvrtc)")
@pytest.mark.parametrize("name", ["v19_double_q.cu", "v20_wide_stores.cu", "v21_staged_stores.cu"])
def test_v19_to_v21_compile_without_spills_and_refuse_176_row_tiles(name):
    v19 = ASSIGNMENT.version("v19").load()
    sweep = [c for c in v19.SWEEP if "v21" not in name or c["Q_BUFFERS"] == 2]
    for defines in [dict(c) for c in sweep] + [{**v19.CONFIG, "TRACE": 1}]:
        ok, log = cuda.nvrtc_compile_offline(FOLDER / name, defines=defines, library=LIBRARY)
        assert ok, (defines, log[-3000:])
        k = next(k for k in cuda.parse_ptxas_log(log).kernels if k.name == "attn_fwd_double_q" and k.entry)
        assert k.spill_stores == 0 and k.spill_loads == 0 and not k.advisories, (name, defines, k)
    ok, log = cuda.nvrtc_compile_offline(FOLDER / name, defines={"BLOCK_N": 176, "STAGES": 2}, library=LIBRARY)
    assert not ok and "two Q buffers and this K/V ring do not fit" in log
    if "v21" in name:
        ok, log = cuda.nvrtc_compile_offline(FOLDER / name, defines={"BLOCK_N": 176, "Q_BUFFERS": 1}, library=LIBRARY)
        assert not ok and "the staging buffers do not fit" in log
