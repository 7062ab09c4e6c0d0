"""flashattn's hand-written sm_90a versions (v06-v21) without a GPU.

Every version v06-v15 is held to the same shape (the tests parametrized over :data:`SM90`): it is
listed and describes itself, every swept configuration fits in shared memory, the wrapper refuses
what the kernel cannot do before touching a GPU, the source's descriptor defaults are the Python
side's, the hang check does not trap (from v08 on; v06-v07's wait traps), its clean builds for
sm_90a use the 168 registers of the launch without spills or a serialised wgmma pipeline (ptxas's
C7512), and settings that cannot work do not compile. Then each version's own checks: what its
step changed, read from the code it runs (tests/cuda_text.py: the include closure, never one
file's raw text, so the checks hold when code moves into shared headers), and v16-v21 (v15's steps
planned once per input, in a persistent kernel, with a prefetch warp, two Q buffers, store hooks).

The nvcc builds need nvcc; the NVRTC builds the nvidia-cuda-nvrtc wheel of the test extra. Both
go through tests/cuda_build.py, which compiles each (source, defines) once per session. The
kernels themselves run on the H100: ``pytest -m gpu`` (the GPU tests here, tests/test_gpu_versions.py)
and wgmma_selftest.py.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import cuda_build  # noqa: E402  (tests/cuda_build.py)
from conftest import build_param  # noqa: E402
from cuda_text import (calls, closure_text, definition, definitions, kernel_code, macro_value, own_code,  # noqa: E402
                       reached_code, run_code)

from reporter import cuda  # noqa: E402
from reporter.assignments import get_assignment  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "kernels" / "flashattn"
ASSIGNMENT = get_assignment(ROOT / "kernels", "flashattn")
needs_nvcc = pytest.mark.skipif(cuda_build.NVCC is None, reason="nvcc not installed")
needs_nvrtc = pytest.mark.skipif(cuda_build.NVRTC_LIBRARY is None, reason="no libnvrtc (pip install nvidia-cuda-nvrtc)")


def _config(short: str) -> dict[str, Any]:
    return dict(ASSIGNMENT.version(short).load().CONFIG)


# too deep a ring and a register split setmaxnreg cannot make: every version refuses both at compile time
REFUSED_BY_ALL = (({"STAGES": 4}, "227 KB"), ({"CONSUMER_REGS": 244}, "setmaxnreg needs a multiple of 8"))


@dataclass(frozen=True)
class Sm90:
    """What the shared tests know of one hand-written sm_90a version."""

    short: str
    name: str
    kernel: str  # its entry
    clean: tuple[dict[str, Any], ...]  # nvcc builds with 168 registers, no spills, no stack, no C7512
    refused: tuple[tuple[dict[str, Any], str], ...] = ()  # nvcc refuses these defines, with this message
    builds: tuple[dict[str, Any], ...] = ()  # nvcc builds these at 168 registers (spills allowed)
    docs: tuple[str, ...] = ("Hypothesis", "Structure")  # the docstring's sections
    traps: bool = False  # the hang check traps (v06-v07); from v08 on it faults instead (the trap serialised wgmma)
    v_lbo_by_width: bool = False  # V_LBO follows BLOCK_N (KV_HALF_BYTES), not one number
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def source(self) -> Path:
        return FOLDER / f"{self.name}.cu"


SM90 = [
    Sm90("v06", "v06_wgmma", "attn_fwd_wgmma", docs=("Hypothesis",), traps=True,
         clean=({}, {"DBG_MODE": 1}, {"DBG_MODE": 2}, {"STAGES": 3}, {"HANG_TRAP": 0}, {"PROXY_FENCE": 0}),
         # off by default: ptxas budgets its wgmma pipeline with the 168 entry registers and spills
         builds=({"INTRA_WG_OVERLAP": 1},),
         # 32 + 2 x 240 > 3 x 168: setmaxnreg.inc would wait forever
         refused=(({"PRODUCER_REGS": 32}, "must not exceed"),
                  ({"DBG_MODE": 3}, "DBG_MODE"))),
    Sm90("v07", "v07_pingpong", "attn_fwd_pingpong", traps=True,
         clean=tuple({**_config("v07"), "STAGES": s} for s in (2, 3)),
         builds=tuple(dict(c) for c in ASSIGNMENT.version("v07").load().SWEEP),  # every swept schedule
         refused=(({"PRODUCER_WARPS": 2}, "PRODUCER_WARPS"),)),
    Sm90("v08", "v08_overlap", "attn_fwd_overlap", clean=tuple({**_config("v08"), "STAGES": s} for s in (2, 3))),
    Sm90("v09", "v09_persistent", "attn_fwd_persistent", clean=tuple({**_config("v09"), "STAGES": s} for s in (2, 3))),
    Sm90("v10", "v10_lazy_rescale", "attn_fwd_lazy", clean=tuple({**_config("v10"), "STAGES": s} for s in (2, 3))),
    Sm90("v11", "v11_q_in_registers", "attn_fwd_qreg", clean=tuple({**_config("v11"), "STAGES": s} for s in (2, 3))),
    Sm90("v12", "v12_kv176", "attn_fwd_kv176", v_lbo_by_width=True,
         clean=({"BLOCK_N": 176, "STAGES": 2}, {"BLOCK_N": 128, "STAGES": 3}),
         refused=(({"BLOCK_N": 192}, "BLOCK_N must be 64, 128 or 176"), ({"BLOCK_N": 176, "STAGES": 3}, "227 KB"))),
    Sm90("v13", "v13_tma", "attn_fwd_tma", clean=({"STAGES": 2}, {"STAGES": 3}, {"STAGES": 3, "PROXY_FENCE": 1})),
    Sm90("v14", "v14_multicast", "attn_fwd_multicast",
         clean=({"STAGES": 3, "CLUSTER": 2}, {"STAGES": 2, "CLUSTER": 2}, {"STAGES": 3, "CLUSTER": 1}),
         refused=(({"CLUSTER": 4}, "CLUSTER must be 1 or 2"),)),
    Sm90("v15", "v15_kv176_multicast", "attn_fwd_kv176_multicast", v_lbo_by_width=True,
         clean=({"BLOCK_N": 176, "STAGES": 2, "CLUSTER": 2}, {"BLOCK_N": 128, "STAGES": 2, "CLUSTER": 2},
                {"BLOCK_N": 128, "STAGES": 3, "CLUSTER": 2}, {"BLOCK_N": 176, "STAGES": 2, "CLUSTER": 1},
                {"BLOCK_N": 176, "STAGES": 2, "CLUSTER": 2, "MASK_IN_LOOP": 1}),
         refused=(({"BLOCK_N": 192}, "BLOCK_N must be 64, 128 or 176"), ({"BLOCK_N": 176, "STAGES": 3}, "227 KB"),
                  ({"CLUSTER": 4}, "CLUSTER must be 1 or 2"))),
]
BY_SHORT = {v.short: v for v in SM90}


def _defines_id(d: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in d.items()) or "defaults"


def _per_version(attr: str) -> list:
    return [pytest.param(v, d, id=f"{v.short}-{_defines_id(d)}") for v in SM90 for d in getattr(v, attr)]


def _refusals() -> list:
    return [pytest.param(v, d, msg, id=f"{v.short}-{_defines_id(d)}") for v in SM90
            for d, msg in (*REFUSED_BY_ALL, *v.refused)]


@pytest.fixture(params=SM90, ids=lambda v: v.short)
def version(request) -> Sm90:
    return request.param


def _qkv(b=1, h=2, s=256, d=128, dtype=torch.float16):
    return tuple(torch.zeros(b, h, s, d, dtype=dtype) for _ in range(3))


def _smem(mod, cfg: dict[str, Any]) -> int:
    return mod.smem_bytes(cfg["STAGES"], cfg["BLOCK_N"]) if "BLOCK_N" in cfg else mod.smem_bytes(cfg["STAGES"])


# --------------------------------------------------------------------------- v06-v15: the shared shape


def test_version_is_listed_imports_without_a_gpu_and_describes_itself(version):
    v = ASSIGNMENT.version(version.short)
    mod = v.load()
    assert v.name == version.name and version.source in v.sources
    doc = v.docstring()
    assert len(doc) > 200 and all(word in doc for word in version.docs), version.docs
    assert callable(mod.custom_kernel)
    assert mod.CONFIG in mod.SWEEP
    assert all(callable(mod.make_kernel(cfg)) for cfg in mod.SWEEP)
    for cfg in mod.SWEEP:  # every swept configuration fits in the shared memory a block can opt in to
        assert _smem(mod, cfg) <= mod.MAX_DYNAMIC_SMEM, cfg


def test_wrapper_refuses_cpu_tensors_and_bad_shapes(version):
    mod = ASSIGNMENT.version(version.short).load()
    with pytest.raises(ValueError, match="CUDA"):  # a valid shape, but on the CPU
        mod.custom_kernel(_qkv())
    for call in (mod.custom_kernel, mod.make_kernel(mod.CONFIG)):
        with pytest.raises(ValueError, match="multiple of 128"):
            call(_qkv(s=200))


def test_descriptor_defaults_match_the_source(version):
    mod = ASSIGNMENT.version(version.short).load()
    for name, value in mod.DESCRIPTOR_DEFAULTS.items():  # the value the compiler sees, wherever it is set
        if name == "V_LBO" and version.v_lbo_by_width:  # the distance between V's two 64-column halves
            assert macro_value(version.source, name) == macro_value(version.source, "KV_HALF_BYTES")
            assert macro_value(version.source, name, {"BLOCK_N": 128}) == 16384
        else:
            assert macro_value(version.source, name) == value, name


def test_the_hang_check_traps_only_where_it_is_meant_to(version):
    """v06-v07's consumers wait with a trapping hang check; from v08 on the wait faults instead
    (a `trap` in the waits is what serialised v07's pipelined wgmma: see the v08 test below)."""
    runs = run_code(version.source)  # its kernel as compiled (hooks expanded) and every helper it calls
    if version.traps:
        assert calls(runs, "mbar_wait_trap")
        return
    assert calls(runs, "mbar_wait") and not calls(runs, "mbar_wait_trap")
    assert "trap" not in runs and calls(runs, "hang_fault")
    wait = definition(version.source, "mbar_wait")
    assert "trap" not in wait and calls(wait, "hang_fault")
    assert "trap" not in definition(version.source, "hang_fault")


@needs_nvrtc
@pytest.mark.parametrize("version,defines", _per_version("clean"))
def test_builds_clean_for_sm90a(version, defines):
    """As `report run` builds it (NVRTC, whose log carries ptxas's report): the builds
    tests/test_nvrtc_builds.py makes of the same settings are read, not made again."""
    build = cuda_build.nvrtc(version.source, defines)
    assert build.ok, build.log[-3000:]
    (k,) = build.kernels()
    # __launch_bounds__(384, 1): 168 registers at launch, which setmaxnreg redistributes
    assert k.name == version.kernel and k.registers == 168
    assert k.spill_stores == 0 and k.spill_loads == 0 and k.stack_bytes == 0
    assert "C7512" not in build.log  # wgmma not serialised


@needs_nvrtc
@pytest.mark.parametrize("version,defines", _per_version("builds"))
def test_other_settings_still_build(version, defines):
    build = cuda_build.nvrtc(version.source, defines)
    assert build.ok, build.log[-3000:]
    (k,) = build.kernels()
    assert k.name == version.kernel and k.registers == 168


@needs_nvcc
@pytest.mark.parametrize("version,defines,message", _refusals())
def test_settings_that_cannot_work_do_not_compile(version, defines, message):
    with pytest.raises(cuda.CudaCompileError, match=message):
        cuda.ptxas_report(version.source, arch="sm_90a", defines=defines)


# --------------------------------------------------------------------------- v06 and its self-test


SELFTEST = FOLDER / "wgmma_selftest.py"


@pytest.fixture(scope="module")
def v06():
    return ASSIGNMENT.version("v06").load()


@pytest.fixture(scope="module")
def selftest():
    spec = importlib.util.spec_from_file_location("_wgmma_selftest_under_test", SELFTEST)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_v06_shared_memory_is_q_the_ring_and_the_barriers(v06):
    # Q + 2 x STAGES tiles of 32 KB, 1 KB alignment slack, 8 bytes per mbarrier
    assert v06.smem_bytes(2) == 1024 + 5 * 32768 + 8 * 9


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
def test_v06_wrapper_refuses_what_the_kernel_cannot_do(v06, data, match):
    with pytest.raises(ValueError, match=match):
        v06.custom_kernel(data)
    with pytest.raises(ValueError, match=match):
        v06.make_kernel({"STAGES": 3})(data)


def test_selftest_result_lines_round_trip(selftest, capsys):
    selftest.emit({"stage": "mode1", "ok": True, "max_abs_err": 1e-5})
    text = "noise\n" + capsys.readouterr().out + "more noise\n" + selftest.MARK + "{not json\n"
    assert selftest.parse_results(text) == [{"stage": "mode1", "ok": True, "max_abs_err": 1e-5}]


def test_selftest_compare_debug_flags_unwritten_and_wrong_elements(selftest):
    ref = torch.randn(256, 128, generator=torch.Generator().manual_seed(0)) * 10
    assert selftest.compare_debug(ref.clone(), ref)["ok"]
    poisoned = ref.clone()
    poisoned[3, 5] = float("nan")
    res = selftest.compare_debug(poisoned, ref)
    assert not res["ok"] and res["nan_count"] == 1
    off = ref.clone()
    off[100, 100] += 1.0
    assert not selftest.compare_debug(off, ref)["ok"]


def test_selftest_diagnosis_recognises_swapped_halves_and_chunk_permutations(selftest):
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


# --------------------------------------------------------------------------- v08: the wait that faults


@needs_nvcc
def test_a_trap_in_the_waits_is_what_serialised_v07s_pipeline():
    """The finding that made v08 possible, for the ptxas installed here: v07's pipelined schedule
    is serialised (C7512) with its trapping wait and clean without it, not short of registers."""
    v07 = BY_SHORT["v07"].source
    serialised = cuda_build.nvcc(v07, {"PIPELINE": 1, "STAGES": 2})
    assert serialised.ok and "C7512" in serialised.log and "spill stores" in serialised.log
    clean = cuda_build.nvcc(v07, {"PIPELINE": 1, "STAGES": 2, "HANG_TRAP": 0})
    assert clean.ok and "C7512" not in clean.log
    assert re.search(r"\b0 bytes spill stores", clean.log)


# --------------------------------------------------------------------------- v09: persistent CTAs


def test_v09_shared_memory_matches_the_source():
    v09 = ASSIGNMENT.version("v09").load()
    # SMEM_BYTES as the compiler sees it: slack + Q + 2 * STAGES tiles + (2 + 4 * STAGES) mbarriers
    for stages in (2, 3):
        assert macro_value(BY_SHORT["v09"].source, "NUM_BARRIERS", {"STAGES": stages}) == 2 + 4 * stages
        assert macro_value(BY_SHORT["v09"].source, "SMEM_BYTES", {"STAGES": stages}) == v09.smem_bytes(stages)
    assert v09.smem_bytes(3) == 1024 + 7 * 32768 + 8 * 14


def test_v09_grid_is_one_cta_per_sm_and_never_more_than_the_tiles(monkeypatch):
    v09 = ASSIGNMENT.version("v09").load()
    monkeypatch.setitem(v09._SM_COUNT, 0, 132)
    assert v09.persistent_grid(0, 64 * 256) == 132
    assert v09.persistent_grid(0, 100) == 100
    assert v09.persistent_grid(0, 1) == 1


# --------------------------------------------------------------------------- v10: the lazy rescale


def test_v10_the_skip_is_the_only_change_from_v08():
    """v10 is v08 plus the vote: v08's kernel (attn_sm90_overlap.cuh) with its RESCALE_O hook set, the same
    exact output by construction."""
    v08_source, v10_source = BY_SHORT["v08"].source, BY_SHORT["v10"].source
    vote = "if (!__all_sync(0xffffffffu, alpha0 == 1.f && alpha1 == 1.f)) rescale_o(o, alpha0, alpha1);"
    assert vote in definition(v10_source, "rescale_o_lazy")
    # the kernels as compiled (hooks expanded): v08's but for the name and the rescale it calls
    assert kernel_code(v10_source).count("rescale_o_lazy(o, alpha0, alpha1)") == 1
    for defines in ({}, {"STAGES": 2}, {"STAGES": 3}):
        v10 = kernel_code(v10_source, defines).replace("attn_fwd_lazy", "attn_fwd_overlap")
        assert v10.replace("rescale_o_lazy(", "rescale_o(") == kernel_code(v08_source, defines), defines
    # the helper it skips is the shared one, unchanged: O *= alpha, nothing else
    rescale = definition(v10_source, "rescale_o")
    assert rescale == definition(v08_source, "rescale_o")
    assert "alpha0" in rescale and "alpha1" in rescale and not calls(rescale, "__all_sync")


@pytest.mark.gpu
def test_v10_skipping_the_rescale_changes_no_bit_on_the_gpu(cuda):
    spec = ASSIGNMENT.spec
    v08, v10 = ASSIGNMENT.version("v08").load(), ASSIGNMENT.version("v10").load()
    for case in ("test_small", "test_medium"):
        data = spec.generate_input(**ASSIGNMENT.case(case))
        a = v08.custom_kernel(data)
        b = v10.custom_kernel(data)
        torch.cuda.synchronize()
        assert torch.equal(a, b), case


# --------------------------------------------------------------------------- v11: Q in registers


def test_v11_shared_memory_holds_no_q_tile():
    v11 = ASSIGNMENT.version("v11").load()
    for stages in (2, 3):  # no Q tile, no Q barrier: the compiler's SMEM_BYTES is the host's
        assert macro_value(BY_SHORT["v11"].source, "SMEM_BYTES", {"STAGES": stages}) == v11.smem_bytes(stages)
        assert macro_value(BY_SHORT["v11"].source, "NUM_BARRIERS", {"STAGES": stages}) == 4 * stages
    assert v11.smem_bytes(3) == 1024 + 6 * 32768 + 8 * 12


def test_v11_q_is_never_copied_to_shared_memory():
    runs = run_code(BY_SHORT["v11"].source)  # the kernel and every helper it runs, hooks resolved
    assert "load_tile(sQ" not in runs and "mbar_wait(bar_q" not in runs and "mbar_init(bar_q" not in runs
    assert not calls(runs, "wgmma_m64n128k16_ss") and not calls(runs, "issue_qk")
    assert "load_q_frags(qf" in runs and calls(runs, "issue_qk_qregs")


# --------------------------------------------------------------------------- v12: 176-wide kv tiles


def test_v12_shared_memory_matches_the_source():
    v12 = ASSIGNMENT.version("v12").load()
    for cfg in v12.SWEEP:  # the compiler's SMEM_BYTES is the host's for every swept geometry
        defines = {"STAGES": cfg["STAGES"], "BLOCK_N": cfg["BLOCK_N"]}
        assert macro_value(BY_SHORT["v12"].source, "SMEM_BYTES", defines) == v12.smem_bytes(cfg["STAGES"], cfg["BLOCK_N"])
    assert macro_value(BY_SHORT["v12"].source, "KV_TILE_BYTES") == 176 * 256
    assert v12.smem_bytes(2, 176) == 1024 + 32768 + 4 * 176 * 256 + 8 * 9
    assert v12.smem_bytes(3, 176) > v12.MAX_DYNAMIC_SMEM  # why 176 runs with two stages


def test_v12_launch_refuses_an_unsupported_width_or_too_deep_a_ring():
    v12 = ASSIGNMENT.version("v12").load()
    good, out = _qkv(), torch.empty(1, 2, 256, 128, dtype=torch.float16)
    with pytest.raises(ValueError, match="BLOCK_N=192"):
        v12.launch(*good, config={"BLOCK_N": 192, "STAGES": 2}, out=out)
    with pytest.raises(ValueError, match="shared memory"):
        v12.launch(*good, config={"BLOCK_N": 176, "STAGES": 3}, out=out)


def _partial_tiles_match(short: str, s: int) -> None:
    spec = ASSIGNMENT.spec
    data = spec.generate_input(batch_size=1, num_heads=4, seq_len=s, head_dim=128, seed=7 + s)
    ref = spec.ref_kernel(data)
    out = ASSIGNMENT.version(short).load().custom_kernel(data)
    torch.cuda.synchronize()
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out.float(), ref.float(), rtol=1e-2, atol=1e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("s", [128, 256, 384, 1408, 2048])  # one partial tile only, ..., 1408 = 8 x 176 exactly
def test_v12_partial_and_exact_last_tiles_match_the_reference(cuda, s):
    _partial_tiles_match("v12", s)


# --------------------------------------------------------------------------- v13 and v14: TMA, then multicast


@pytest.mark.parametrize("short", ["v13", "v14"])
def test_copies_are_tma_not_cp_async(short):
    source = BY_SHORT[short].source
    runs = run_code(source)
    assert "cp.async.bulk.tensor.2d" in runs and "mbarrier.arrive.expect_tx" in runs
    assert "cp.async.cg" not in runs and "cp.async.mbarrier" not in runs
    assert "__grid_constant__" in own_code(source)


def test_v14_multicasts_kv_and_releases_slots_cluster_wide():
    source = BY_SHORT["v14"].source
    runs, kernel = run_code(source), kernel_code(source)  # the kernel as compiled, its hooks expanded
    assert ".multicast::cluster" in runs and "__cluster_dims__(2, 1, 1)" in kernel
    assert "mbar_init(bar_empty_k + 8 * s, (8 * 2))" in kernel
    # a release arrives on the neighbour's barrier too (at CTA scope; .release.cluster was the first build's)
    assert "mapa.shared::cluster" in runs and "mbarrier.arrive.shared::cluster" in runs
    assert "mbarrier.arrive.release.cluster.shared::cluster" in run_code(source, {"RELEASE_CLUSTER": 1})
    # the cluster barrier follows the barriers' init and closes both the consumers' and the producer's paths
    assert kernel.count("cluster_sync_all()") == 3
    one = kernel_code(source, {"CLUSTER": 1})  # CLUSTER 1 is v13's protocol: no cluster at all
    assert "cluster_sync_all" not in one and "__cluster_dims__" not in one


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


@pytest.mark.parametrize("short", ["v13", "v14"])
def test_tma_wrappers_refuse_rows_past_int32(short):
    mod = ASSIGNMENT.version(short).load()
    huge = tuple(_Shape((1, 65535, 65536, 128)) for _ in range(3))  # within v06's limits, past TMA's
    with pytest.raises(ValueError, match="2\\^31"):
        mod.check_inputs(huge)


def test_v14_uses_a_cluster_only_where_it_tiles_the_grid():
    v14 = ASSIGNMENT.version("v14").load()
    assert v14.cluster_for(8192, 2) == 2 and v14.cluster_for(1024, 2) == 2
    assert v14.cluster_for(384, 2) == 1  # 3 Q blocks
    assert v14.cluster_for(384, 1) == 1


# --------------------------------------------------------------------------- v15: 176-wide tiles multicast


def test_v15_kv_tiles_come_through_3d_maps_multicast_and_masked():
    v15 = ASSIGNMENT.version("v15").load()
    assert v15.smem_bytes(3, 176) > v15.MAX_DYNAMIC_SMEM  # why 176 rows get two stages
    # its file includes the kernel (attn_sm90_kv176_kernel.cuh, which v24 builds with its own hooks):
    # what runs is that kernel and the helpers it calls, as written
    kernel = BY_SHORT["v15"].source.with_name("attn_sm90_kv176_kernel.cuh")
    assert '#include "attn_sm90_kv176_kernel.cuh"' in BY_SHORT["v15"].source.read_text()
    runs = reached_code(kernel)
    assert "cp.async.bulk.tensor.3d" in runs and ".multicast::cluster" in runs and "cp.async.cg" not in runs
    assert "mask_tail(sc, tail, col)" in runs and "KV_TILE_BYTES" in runs
    # the steps' loop runs unmasked copies; only the separate last step masks (MASK_IN_LOOP 0): the
    # kernel (attn_sm90_kv176_kernel.cuh) calls its step hook, which v15 leaves at consumer_step
    assert "for (int j = 1; j < n_tiles - 1; ++j) KV176_STEP<0>(" in runs
    assert "if (n_tiles > 1) KV176_STEP<1>(n_tiles - 1," in runs
    assert "#define KV176_STEP consumer_step" in kernel.read_text() and "KV176_STEP" not in BY_SHORT["v15"].source.read_text()
    assert "[&]" not in runs  # NVRTC 13.0 (the H100's) takes a generic lambda for a host function


@pytest.mark.gpu
@pytest.mark.parametrize("s", [128, 256, 384, 1408, 2048, 2816])
# one partial tile only (no cluster: 1 Q block), a partial second tile in a cluster, odd Q blocks,
# 8 x 176 exactly (odd Q blocks), a partial tail in clusters, 16 x 176 exactly in clusters
def test_v15_partial_and_exact_last_tiles_match_the_reference(cuda, s):
    _partial_tiles_match("v15", s)


# --------------------------------------------------------------------------- v16 and v17: launch plans, persistence


def test_v16_v17_sources_are_v15_s_steps_and_nothing_copied():
    v16, v17 = ASSIGNMENT.version("v16"), ASSIGNMENT.version("v17")
    assert FOLDER / "v15_kv176_multicast.cu" in v16.sources and not (FOLDER / "v16_launch_plan.cu").exists()
    assert FOLDER / "launch_plans.py" in v16.sources and FOLDER / "launch_plans.py" in v17.sources
    source = FOLDER / "v17_persistent.cu"
    assert '#include "attn_sm90_persistent.cuh"' in own_code(source)  # its kernel, which v18 builds on
    assert FOLDER / "attn_sm90_persistent.cuh" in v17.sources and FOLDER / "attn_sm90_kv176.cuh" in v17.sources
    assert own_code(source).count("__device__") == 0, "v17 adds a kernel only; its device helpers are v15's"
    for v in (v16, v17):
        doc = v.docstring()
        assert "Hypothesis" in doc and "Structure" in doc and len(doc) > 600


@needs_nvrtc
@pytest.mark.parametrize("defines", [
    build_param(d, defines=d, config=ASSIGNMENT.version("v17").load().CONFIG, id=_defines_id(d))
    for d in (dict(BLOCK_N=176, STAGES=2, CLUSTER=2), dict(BLOCK_N=176, STAGES=2, CLUSTER=1),
              dict(BLOCK_N=128, STAGES=3, CLUSTER=2))])
def test_v17_persistent_kernel_builds_without_spills_or_serialised_wgmma(defines):
    build = cuda_build.nvrtc(FOLDER / "v17_persistent.cu", defines)
    assert build.ok, build.log[-3000:]
    k = build.kernel("attn_fwd_persistent")
    assert k.spill_stores == 0 and k.spill_loads == 0 and not k.advisories, (k, build.report.advisories)


def test_v17_grid_is_one_cta_per_sm_in_whole_clusters_never_more_than_the_units():
    v17 = ASSIGNMENT.version("v17").load()
    assert v17.grid_ctas(8192, 256, 2, 132) == 132  # 8192 units: one cluster per SM pair
    assert v17.grid_ctas(1024, 64, 2, 132) == 132  # 256 units of 2 blocks
    assert v17.grid_ctas(256, 4, 2, 132) == 8  # 4 heads x 1 pair: 4 clusters
    assert v17.grid_ctas(384, 3, 1, 132) == 9  # odd Q blocks: no cluster, 9 units
    assert v17.grid_ctas(1024, 64, 2, 131) == 130


@pytest.mark.parametrize("short", ["v16", "v17"])
def test_v16_v17_wrappers_refuse_what_is_not_q_k_v(short):
    mod = ASSIGNMENT.version(short).load()
    with pytest.raises(ValueError, match=r"expected \(q, k, v\)"):
        mod.custom_kernel(5)
    with pytest.raises(ValueError, match="not on a CUDA device|float16"):
        mod.custom_kernel((torch.zeros(1, 1, 128, 128),) * 3)


def _check(mod, b: int, h: int, s: int, seed: int) -> None:
    spec = ASSIGNMENT.spec
    data = spec.generate_input(batch_size=b, num_heads=h, seq_len=s, head_dim=128, seed=seed)
    ref = spec.ref_kernel(data)
    out = mod.custom_kernel(data)
    again = mod.custom_kernel(data)
    torch.cuda.synchronize()
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out.float(), ref.float(), rtol=1e-2, atol=1e-2)
    assert torch.equal(out, again), "two calls on one input differ: a race"


@pytest.mark.gpu
@pytest.mark.parametrize("b,h,s", [
    (1, 4, 128),     # one Q block, one partial kv tile, no cluster
    (1, 3, 384),     # odd Q blocks: no cluster; fewer units than SMs
    (1, 4, 1408),    # 8 x 176 exactly
    (2, 66, 1024),   # 528 units over 66 clusters: every cluster loops 8 times, partial last tiles
    (1, 67, 2816),   # 737 units, a tail of 11 extra units
    (4, 8, 8192),    # the benchmark's sequence length
])
@pytest.mark.parametrize("short", ["v17", "v18", "v19", "v20", "v21"])
def test_persistent_matches_the_reference(cuda, short, b, h, s):
    """v17 and the versions built on its loop (v18 prefetches, v19 double-buffers Q, v20 and v21
    change v19's stores)."""
    _check(ASSIGNMENT.version(short).load(), b, h, s, seed=11 + s + h)


@pytest.mark.gpu
def test_a_plan_follows_its_inputs_not_a_stale_address(cuda):
    """Inputs freed and re-drawn at other shapes and seeds: each call checks against its own input."""
    for short in ("v16", "v17", "v20", "v21"):
        mod = ASSIGNMENT.version(short).load()
        for b, h, s in ((1, 8, 1024), (1, 8, 2048), (1, 8, 1024), (2, 4, 1024)):
            _check(mod, b, h, s, seed=3 + b + s)


# --------------------------------------------------------------------------- v18: the prefetch warp and the trace


def test_v18_is_v17_s_kernel_plus_the_prefetch_warp_and_trace_marks():
    v17, v18 = FOLDER / "v17_persistent.cu", FOLDER / "v18_prefetch.cu"
    # as compiled: without the prefetch warp and the marks, v18's kernel is v17's to the letter
    for defines in ({}, {"BLOCK_N": 128, "STAGES": 3}, {"CLUSTER": 1}):
        bare = kernel_code(v18, {"PREFETCH": 0, **defines}).replace("attn_fwd_prefetch(", "attn_fwd_persistent(")
        assert bare == kernel_code(v17, defines), defines
    kernel = kernel_code(v18)
    assert calls(kernel, "prefetch_next_units") and "g_trace" not in kernel  # TRACE 0 compiles the marks out
    assert "g_trace" in kernel_code(v18, {"TRACE": 1}) and calls(kernel_code(v18, {"TRACE": 1}), "trace_clock")
    assert '#include "attn_sm90_persistent.cuh"' in own_code(v18)
    assert FOLDER / "trace.cuh" in ASSIGNMENT.version("v18").sources
    # its one helper is the prefetch warp; the L2 prefetch is the shared TMA header's, the rest v15's and v17's
    assert [d.name for d in definitions(v18) if d.file == v18] == ["prefetch_next_units"]
    assert calls(run_code(v18), "tma_prefetch_l2_3d")
    assert "cp.async.bulk.prefetch.tensor.3d.L2" in definition(v18, "tma_prefetch_l2_3d")


@pytest.fixture(scope="module")
def probe():
    """tools/trace_probe.py, loaded as the script it is (tools/ is not a package)."""
    spec = importlib.util.spec_from_file_location("trace_probe", ROOT / "tools" / "trace_probe.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_trace_probe_reads_its_layout_from_the_header(probe):
    header = closure_text(FOLDER / "trace.cuh")
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
    assert out["boundary_us"] == 11.0  # unit 0's last step at 9000, unit 1's first at 20000
    assert out["units_max"] == 2
    # a unit with 8 step stamps may be longer than its stamps (steps 1 .. 8 of more): no boundary from it
    base = L["TRACE_UNIT0"]
    for i in range(8):
        raw[0, base + S["step1"] + i] = 7_000 + 250 * i
    assert probe.reduce_launch(raw, 1)["boundary_us"] is None


def _v18_builds() -> list:
    v18 = ASSIGNMENT.version("v18").load()
    configs = [dict(c) for c in v18.SWEEP] + [{**v18.CONFIG, "TRACE": 1}, {**v18.CONFIG, "CLUSTER": 1}]
    return [build_param(c, defines=c, config=v18.CONFIG, id=_defines_id(c)) for c in configs]


@needs_nvrtc
@pytest.mark.parametrize("defines", _v18_builds())
def test_v18_every_swept_geometry_and_the_traced_build_compile_without_spills(defines):
    build = cuda_build.nvrtc(FOLDER / "v18_prefetch.cu", defines)
    assert build.ok, (defines, build.log[-3000:])
    k = build.kernel("attn_fwd_prefetch")
    assert k.spill_stores == 0 and k.spill_loads == 0 and not k.advisories, (defines, k, build.report.advisories)


# --------------------------------------------------------------------------- v19-v21: two Q buffers, store hooks


@pytest.mark.parametrize("name,hook", [("v20_wide_stores.cu", "store_o_wide"),
                                       ("v21_staged_stores.cu", "store_o_staged")])
def test_v20_and_v21_are_v19_with_only_their_store_hook(name, hook):
    own = own_code(FOLDER / name)
    assert '#include "attn_sm90_double_q.cuh"' in own and f"#define STORE_O {hook}" in own
    assert "__global__" not in own, "no kernel of its own: v19's, with the hook"
    assert '#include "attn_sm90_double_q.cuh"' in own_code(FOLDER / "v19_double_q.cu")
    kernel = own_code(FOLDER / "attn_sm90_double_q.cuh")
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


def _v19_to_v21_builds() -> list:
    v19 = ASSIGNMENT.version("v19").load()
    out = []
    for name in ("v19_double_q.cu", "v20_wide_stores.cu", "v21_staged_stores.cu"):
        config = ASSIGNMENT.version(name.split("_")[0]).load().CONFIG
        sweep = [c for c in v19.SWEEP if "v21" not in name or c["Q_BUFFERS"] == 2]
        for defines in [dict(c) for c in sweep] + [{**v19.CONFIG, "TRACE": 1}]:
            out.append(build_param(name, defines, defines=defines, config=config,
                                   id=f"{name.split('_')[0]}-{_defines_id(defines)}"))
    return out


@needs_nvrtc
@pytest.mark.parametrize("name,defines", _v19_to_v21_builds())
def test_v19_to_v21_compile_without_spills(name, defines):
    build = cuda_build.nvrtc(FOLDER / name, defines)
    assert build.ok, (defines, build.log[-3000:])
    k = build.kernel("attn_fwd_double_q")
    assert k.spill_stores == 0 and k.spill_loads == 0 and not k.advisories, (name, defines, k)


@needs_nvrtc
@pytest.mark.parametrize("name", ["v19_double_q.cu", "v20_wide_stores.cu", "v21_staged_stores.cu"])
def test_v19_to_v21_refuse_176_row_tiles(name):
    build = cuda_build.nvrtc(FOLDER / name, {"BLOCK_N": 176, "STAGES": 2})
    assert not build.ok and "two Q buffers and this K/V ring do not fit" in build.log
    if "v21" in name:
        build = cuda_build.nvrtc(FOLDER / name, {"BLOCK_N": 176, "Q_BUFFERS": 1})
        assert not build.ok and "the staging buffers do not fit" in build.log



def test_v36s_plan_writes_the_map_of_each_output_buffer(monkeypatch):
    """out_map_host.OutMapPlan: setting the output pointer also writes the tensor map of that buffer (O as rows x
    128 fp16 in 64 x 64 boxes) into the map argument, encoded once per address (a buffer the allocator hands back
    again is a look-up) and forgotten all at once past MAPS_KEPT addresses; other pointers leave the map alone."""
    monkeypatch.syspath_prepend(str(FOLDER))
    import out_map_host

    calls: list = []
    encoded: list = []

    class Plan:
        def set_pointer(self, index, pointer):
            calls.append(("pointer", index, pointer))

        def set_bytes(self, index, data):
            calls.append(("bytes", index, data))

        def launch(self, stream):
            calls.append(("launch", stream))

    def encode(address, dtype, shape, box, swizzle):
        encoded.append(address)
        return (address, dtype, shape, box, swizzle)

    monkeypatch.setattr(out_map_host, "encode_tensor_map_at", encode)
    monkeypatch.setattr(out_map_host, "MAPS_KEPT", 3)
    plan = out_map_host.OutMapPlan(Plan(), 3, 7, (65536, 128))
    plan.set_pointer(0, 0x10)
    plan.set_pointer(3, 0x2000)
    plan.launch(5)
    assert calls == [("pointer", 0, 0x10), ("pointer", 3, 0x2000),
                     ("bytes", 7, (0x2000, "float16", (65536, 128), (64, 64), 128)), ("launch", 5)]
    plan.set_pointer(3, 0x2000)
    assert encoded == [0x2000] and calls[-1] == ("bytes", 7, (0x2000, "float16", (65536, 128), (64, 64), 128))
    for address in (0x3000, 0x4000, 0x5000, 0x2000):  # the fourth address clears the three kept
        plan.set_pointer(3, address)
    assert encoded == [0x2000, 0x3000, 0x4000, 0x5000, 0x2000] and calls[-1][2][0] == 0x2000


def test_v38s_plan_copies_q_in_halves(monkeypatch):
    """q_halves_host.plan is v36's plan (out_map_host) with Q's map, the launch's first argument, replaced by one
    over the same [B*H, S, 128] view whose boxes are 64 rows (one consumer's half of a 128-row tile) by 64 columns,
    as attn_sm90_q_halves.cuh copies them."""
    monkeypatch.syspath_prepend(str(FOLDER))
    import q_halves_host
    import sm90_host

    class Plan:
        def __init__(self):
            self.calls = []

        def set_bytes(self, index, data):
            self.calls.append((index, data))

    class Planned:
        plan = Plan()

    class Q:
        shape = (2, 8, 4096, 128)

    seen = []
    monkeypatch.setattr(q_halves_host.out_map_host, "plan", lambda *a: seen.append(a) or Planned)
    monkeypatch.setattr(q_halves_host, "encode_tensor_map", lambda t, box, shape: (t, box, shape))
    q = Q()
    out = q_halves_host.plan(Path("x.cu"), q, "k", "v", {"A": 1})
    assert out is Planned and seen == [(Path("x.cu"), q, "k", "v", {"A": 1})]
    assert Planned.plan.calls == [(0, (q, (1, 64, 64), (16, 4096, 128)))]
    assert 2 * q_halves_host.Q_HALF_BOX[1] == sm90_host.Q_BOX[1] and q_halves_host.Q_HALF_BOX[2] == sm90_host.Q_BOX[2]


@needs_nvrtc
@pytest.mark.parametrize("name", ["v37_deferred_epilogue.cu", "v38_q_halves.cu"])
def test_a_consumer_loop_of_its_own_refuses_the_hooks_it_would_drop(name):
    """v19's DQ_CONSUME (v39's loop) waits on v19's Q barriers and stages O at once: built over v37's deferred
    epilogue or v38's Q halves it would silently drop them (and with v38, consumer 1 would read rows not yet
    landed), so the build stops with the reason."""
    defines = {**ASSIGNMENT.version(name.split("_")[0]).load().CONFIG, "DQ_CONSUME": "consume_units_merged"}
    build = cuda_build.nvrtc(FOLDER / name, defines)
    assert not build.ok and "DQ_CONSUME replaces the loop that DQ_Q_BAR and DQ_DEFER_EPILOGUE change" in build.log


def test_a_trace_probe_keeps_every_summary_and_the_first_launches_raw_stamps(probe):
    """The raw stamps are most of a trace probe's size: the attachment holds each version's first N launches'
    (all of them when there are fewer), while every launch keeps its summary in the record."""
    results = [{"launches": [{"summary": {"i": i}, "raw": [[i]]} for i in range(5)]},
               {"launches": [{"summary": {"i": 9}, "raw": [[9]]}]}]
    kept = probe.kept_raw(results, 3)
    assert kept == [[[[0]], [[1]], [[2]]], [[[9]]]]
    assert all("raw" not in x and "summary" in x for r in results for x in r["launches"])
    assert [len(r["launches"]) for r in results] == [5, 1]
