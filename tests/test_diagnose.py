"""Drafted observations and the timing cross-check, on real records from logs/flashattn/ with a
profile attached (the handwritten fixture, edited per rule, and the real H100 capture)."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from reporter import ncu_metrics as N
from reporter import store
from reporter.analysis import metrics as M
from reporter.analysis.diagnose import Observation, observe, timing_crosscheck
from reporter.harness.profile import profile_from_output
from reporter.analysis.summary import summarize
from reporter.assignments import get_assignment
from reporter.records import DeviceCeilings, Metric, Profile, Run
from reporter.standing import standing_runs

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "logs"
FIX = ROOT / "tests" / "fixtures" / "ncu"


def _latest(version: str, case: str = "test_small", gpu: str = "h100") -> Run:
    runs = standing_runs(store.runs(LOGS, "flashattn", version), gpu=gpu)
    if (version, case) not in runs:
        pytest.skip(f"no {gpu} record of {version} on {case} under logs/")
    return runs[(version, case)]


@pytest.fixture()
def ceilings() -> DeviceCeilings:
    found = [c for c in store.ceilings(LOGS, "h100")]
    if not found:
        pytest.skip("no h100 ceilings under logs/devices/")
    return found[-1]


@pytest.fixture()
def handwritten() -> Profile:
    return profile_from_output(0, (FIX / "handwritten_v02_small.csv").read_text(), "", tool_version="2025.3.1.0")


@pytest.fixture()
def v02(handwritten) -> Run:
    r = _latest("v02_fused_triton").model_copy(deep=True)
    r.profile = handwritten
    return r


@pytest.fixture()
def v01() -> Run:
    return _latest("v01_naive").model_copy(deep=True)


def _set(p: Profile, name: str, value: float, unit: str = "", kernel: int | None = -1) -> None:
    """Set a metric on one kernel (default: the main, last one), or on all with kernel=None."""
    for k in p.kernels if kernel is None else [p.kernels[kernel]]:
        k.metrics[name] = Metric(value=value, unit=unit)


def _scale(p: Profile, name: str, factor: float) -> None:
    for k in p.kernels:
        if name in k.metrics and not isinstance(k.metrics[name].value, str):
            k.metrics[name] = Metric(value=float(k.metrics[name].value) * factor, unit=k.metrics[name].unit)


def _rules(obs: list[Observation]) -> list[str]:
    return [o.rule for o in obs]


def _by_rule(obs: list[Observation], rule: str) -> Observation:
    found = [o for o in obs if o.rule == rule]
    assert found, f"no '{rule}' observation in {_rules(obs)}"
    return found[0]


# --------------------------------------------------------------------------- general shape


def test_observations_cite_numbers(v02, v01, ceilings):
    obs = observe(v02, v01, ceilings)
    assert {"roof", "change", "bottleneck", "dram-vs-model", "tensor"} <= set(_rules(obs))
    for o in obs:
        assert o.text and o.text[0].isupper() and o.text.endswith("."), o.text
        assert re.search(r"\d", o.text), f"cites no number: {o.text}"
        assert o.metrics and all(isinstance(v, float | int) for v in o.metrics.values())
        assert "\n" not in o.text


def test_without_profile_only_timing_rules(v01, ceilings):
    v02 = _latest("v02_fused_triton")
    assert v02.profile is None
    obs = observe(v02, v01, ceilings)
    assert _rules(obs)[:2] == ["roof", "change"] and set(_rules(obs)) <= {"roof", "change", "host"}
    roof = obs[0]
    assert "fp16 matmul ceiling" in roof.text and f"{roof.metrics['fraction_of_ceiling']:.0%}" in roof.text
    ratio = v01.timing.mean_ms / v02.timing.mean_ms  # the versions' figures
    assert obs[1].text.startswith(f"Runs {ratio:.2f}× faster than v01_naive") and obs[1].metrics["speedup"] > 1
    # without ceilings the run's stored derived figures still give the roof
    assert _rules(observe(v02, None, None))[0] == "roof" and set(_rules(observe(v02, None, None))) <= {"roof", "host"}


def test_failed_check_gives_nothing(v02, ceilings):
    v02.check.passed = False
    assert observe(v02, None, ceilings) == []


def test_other_case_is_not_compared(v02, ceilings):
    other = _latest("v01_naive", "test_medium")
    assert "change" not in _rules(observe(v02, other, ceilings))


def test_no_clear_change_within_noise(v02, ceilings):
    twin = v02.model_copy(deep=True)
    twin.version = "v01_twin"
    twin.timing.median_ms *= 1.0001
    o = _by_rule(observe(v02, twin, ceilings), "change")
    assert o.text.startswith("No clear change against v01_twin")


# --------------------------------------------------------------------------- profile rules


def test_bottleneck_memory_compute_and_latency(v02, ceilings):
    o = _by_rule(observe(v02, None, ceilings), "bottleneck")
    assert o.text.startswith("Memory-bound at L1") and "61%" in o.text  # L1 61.5% > SM 47%
    p = v02.profile
    _set(p, N.COMPUTE_PCT, 91.0, "%")
    assert _by_rule(observe(v02, None, ceilings), "bottleneck").text.startswith("Compute-bound")
    for name in (N.COMPUTE_PCT, N.L1_PCT):
        _set(p, name, 20.0, "%")
    assert _by_rule(observe(v02, None, ceilings), "bottleneck").text.startswith("Neither compute nor memory is busy")


def test_dram_matches_the_work_model(v02, ceilings):
    o = _by_rule(observe(v02, None, ceilings), "dram-vs-model")
    assert "1.09× the work model's minimum (67.11 MB" in o.text and "at the model's minimum" in o.text
    assert o.metrics["dram_over_model"] == pytest.approx(73.41e6 / v02.work.bytes, rel=1e-3)


def test_dram_excess_and_shortfall(v02, ceilings):
    for name in (N.DRAM_READ, N.DRAM_WRITE, N.LEVEL_BYTES["DRAM"]):
        _scale(v02.profile, name, 6.0)
    o = _by_rule(observe(v02, None, ceilings), "dram-vs-model")
    assert "fetched more than once" in o.text and o.metrics["dram_over_model"] > 4
    for name in (N.DRAM_READ, N.DRAM_WRITE, N.LEVEL_BYTES["DRAM"]):
        _scale(v02.profile, name, 1 / 12)
    o = _by_rule(observe(v02, None, ceilings), "dram-vs-model")
    assert "below the model's minimum" in o.text and "write-back" in o.text


def test_dram_total_without_the_write_counter(v02, ceilings):
    for k in v02.profile.kernels:
        k.metrics.pop(N.DRAM_WRITE)
    o = _by_rule(observe(v02, None, ceilings), "dram-vs-model")
    assert o.text.startswith("DRAM traffic 73.41 MB (read 52.44 MB) ≈ 1.09×")


def test_refetch_from_l2(v02, ceilings):
    o = _by_rule(observe(v02, None, ceilings), "refetch")
    assert "8.2×" in o.text and o.metrics["l2_to_l1_over_model"] == pytest.approx(553_648_128 / v02.work.bytes)


def test_cache_hit_rates(v02, ceilings):
    assert "cache" not in _rules(observe(v02, None, ceilings))  # 88% L2, 2% L1: nothing notable
    _set(v02.profile, N.L2_HIT_PCT, 96.0, "%", kernel=None)
    assert "L2 hit rate 96%" in _by_rule(observe(v02, None, ceilings), "cache").text
    _set(v02.profile, N.L2_HIT_PCT, 20.0, "%", kernel=None)
    _scale(v02.profile, N.LEVEL_BYTES["DRAM"], 5.0)
    assert "L2 hit rate 20%" in _by_rule(observe(v02, None, ceilings), "cache").text


def test_bank_conflicts(v02, ceilings):
    assert "bank-conflicts" not in _rules(observe(v02, None, ceilings))  # 0.125 per instruction
    _set(v02.profile, N.SHARED_CONFLICTS[0], 12_582_912)
    o = _by_rule(observe(v02, None, ceilings), "bank-conflicts")
    assert "3.00 extra wavefronts per shared-memory instruction" in o.text and "12.58 M conflicts" in o.text


def test_uncoalesced_loads(v02, ceilings):
    assert "coalescing" not in _rules(observe(v02, None, ceilings))  # 8 sectors where 8 are needed
    _set(v02.profile, N.GLOBAL_LD_SECTORS, 32 * 131_072, "sector")
    _set(v02.profile, N.GLOBAL_LD_BYTES, 4 * 32 * 131_072, "byte")  # 4-byte loads: 4 sectors ideal
    o = _by_rule(observe(v02, None, ceilings), "coalescing")
    assert "32.0 sectors per request" in o.text and "fit in 4.0" in o.text and "12%" in o.text


def test_uncoalesced_without_the_ideal(v02, ceilings):
    for k in v02.profile.kernels:
        k.metrics.pop(N.GLOBAL_LD_BYTES, None)
    _set(v02.profile, N.GLOBAL_LD_SECTORS, 12 * 131_072, "sector")
    o = _by_rule(observe(v02, None, ceilings), "coalescing")
    assert "12.0 sectors per request, above the 4" in o.text


def test_tensor_share(v02, ceilings):
    o = _by_rule(observe(v02, None, ceilings), "tensor")
    assert o.text.startswith("Tensor cores run 98% of the 35.10 GFLOP executed")
    assert "1.02× the work model's 34.36 GFLOP" in o.text
    _set(v02.profile, N.TENSOR_OPS["fp16"], 1e9)
    _set(v02.profile, N.FLOP_INSTRUCTIONS["fp32"][2], 16e9, "inst")
    o = _by_rule(observe(v02, None, ceilings), "tensor")
    assert o.text.startswith("Tensor cores run only 3% of the") and "matmul_fp16 ceiling" in o.text


def test_profile_changes_against_the_previous_profile(v02, v01, handwritten, ceilings):
    old = handwritten.model_copy(deep=True)
    _scale(old, N.DRAM_READ, 40.0)
    _scale(old, N.LEVEL_BYTES["DRAM"], 30.0)
    _scale(old, N.DURATION, 6.0)
    _set(old, N.L2_HIT_PCT, 40.0, "%")
    v01.profile = old
    o = _by_rule(observe(v02, v01, ceilings), "profile-change")
    assert o.text.startswith("Against v01_naive's profile: ")
    assert "DRAM bytes 2.20 GB → 73.41 MB (−97%)" in o.text
    assert o.text.count(";") == 2  # the three largest changes only
    assert o.metrics["previous_DRAM"] == pytest.approx(30 * 73.41e6)


# --------------------------------------------------------------------------- timing cross-check


def test_crosscheck_within_five_percent(v02):
    harness_ms, ncu_ms, gap, sentence = timing_crosscheck(v02)
    assert harness_ms == v02.timing.median_ms and ncu_ms == pytest.approx(0.12089)
    assert abs(gap) < 5 and sentence.endswith("within 5%.") and "2 kernels" in sentence


def test_crosscheck_gap_is_explained(v02, ceilings):
    _scale(v02.profile, N.DURATION, 1.5)
    *_, gap, sentence = timing_crosscheck(v02)
    assert gap > 5 and "--cache-control all" in sentence and f"median of {v02.timing.n} calls" in sentence
    assert "cold caches" in sentence
    assert "timing-crosscheck" in _rules(observe(v02, None, ceilings))
    _scale(v02.profile, N.DURATION, 0.5)
    *_, gap, sentence = timing_crosscheck(v02)
    assert gap < -5 and "gaps between the 2 launches" in sentence


def test_crosscheck_without_profile_or_timing(v01):
    assert timing_crosscheck(v01)[2] is None and "no ncu durations" in timing_crosscheck(v01)[3]
    v01.profile = Profile(status="failed", reason="x")
    assert timing_crosscheck(v01)[1] is None
    v01.timing = None
    assert "no harness timing" in timing_crosscheck(v01)[3]


def test_real_capture_on_the_h100_record(ceilings):
    """The real ncu capture of v02 on test_small attached to the real v02 record."""
    paths = sorted(FIX.glob("ncu_v02_small*.csv"))
    if not paths:
        pytest.skip("no real v02 capture yet")
    prof = profile_from_output(0, paths[0].read_text(), "", requested=N.PROFILE_METRICS)
    if prof.status != "ok":
        pytest.skip(f"{paths[0].name}: {prof.reason}")
    run = _latest("v02_fused_triton").model_copy(deep=True)
    run.profile = prof
    obs = observe(run, None, ceilings)
    dram = _by_rule(obs, "dram-vs-model")
    assert "DRAM" in dram.text and 0.5 < dram.metrics["dram_over_model"] < 1.5
    _, ncu_ms, gap, sentence = timing_crosscheck(run)
    assert ncu_ms == pytest.approx(M.duration_ns(prof.kernels) / 1e6)
    assert ("within 5%" in sentence) == (abs(gap) <= 5)


def test_observation_is_plain_data():
    o = Observation("A sentence 1.", {"x": 1.0}, "r")
    assert copy.deepcopy(o) == o


# ------------------------------------------------------------------ rules on the timing samples (real records)


def _record(assignment: str, version: str, run_id: str) -> Run:
    return store.load(LOGS / assignment / version / f"{run_id}.json.gz")


def test_plain_samples_that_follow_the_host_are_called_host_bound():
    plain = _record("histogram", "v05_persistent", "20261122T030107434Z_h100_benchmark")
    held = _record("histogram", "v05_persistent", "20261122T030114346Z_h100_benchmark")
    texts = [o.text for o in observe(plain, None, None) if o.rule == "host"]
    assert len(texts) == 1 and "--hold" in texts[0] and "correlation" in texts[0]
    assert not [o for o in observe(held, None, None) if o.rule == "host"]  # held samples exclude the host
    # the same samples with the queuing times shuffled out of step are not host-bound
    shuffled = plain.model_copy(deep=True)
    q = shuffled.timing.enqueue_ms
    shuffled.timing.enqueue_ms = q[len(q) // 2:] + q[:len(q) // 2]
    assert not [o for o in observe(shuffled, None, None) if o.rule == "host"]


def test_a_kernel_whose_time_dwarfs_its_launch_is_never_host_bound():
    """histogram v01 takes 6.7 ms a call and the host queues it in about 0.2 ms: its samples follow the host's
    queuing time closely, but the launch is a few percent of the call, so no host-bound note is drafted."""
    from reporter.analysis.diagnose import HOST_CORRELATION, host_bound, host_correlation

    s = summarize(get_assignment(ROOT / "kernels", "histogram"), LOGS, "h100")
    v01, v05 = s.get("v01").bench, s.get("v05").bench
    assert host_correlation(v01) >= HOST_CORRELATION and not host_bound(v01)
    assert not [o for o in observe(v01, None, None) if o.rule == "host"]
    assert host_bound(v05)


def test_power_capped_runs_are_flagged_and_steady_ones_are_not():
    capped = _record("flashattn", "v05_tma", "20261122T030745178Z_h100_benchmark")
    steady = _record("histogram", "v07_lean_launch", "20261122T030640483Z_h100_benchmark")
    obs = [o for o in observe(capped, None, None) if o.rule == "clocks"]
    assert len(obs) == 1 and "sw power cap" in obs[0].text
    assert obs[0].metrics["sm_clock_min_mhz"] < obs[0].metrics["sm_clock_max_mhz"]
    assert not [o for o in observe(steady, None, None) if o.rule == "clocks"]


# ------------------------------------------------------------------ rules on the compiler's report


def _with_builds(run: Run, *builds) -> Run:
    return run.model_copy(deep=True, update={"builds": list(builds)})


def _build(name: str, spills: int, advisories: list[str]):
    from reporter.records import KernelBuild

    return KernelBuild(kernel=name, source="k.cu", compiler="nvrtc 13.0", arch="sm_90a", registers=168,
                       spill_stores=spills, spill_loads=spills, stack_bytes=152 if spills else 0,
                       advisories=advisories)


C7512 = ("(C7512) Potential Performance Loss: wgmma.mma_async instructions are serialized due to insufficient "
         "register resources for the function 'attn_fwd_pingpong'")


def test_serialised_spilling_kernel_is_observed(v01, ceilings):
    obs = observe(_with_builds(v01, _build("attn_fwd_pingpong", 232, [C7512])), None, ceilings)
    o = _by_rule(obs, "build")
    assert "attn_fwd_pingpong" in o.text and "168 registers" in o.text
    assert "232 bytes of spill stores" in o.text and "232 bytes of spill loads" in o.text
    assert C7512 in o.text  # quoted as ptxas wrote it
    assert o.metrics == {"registers": 168.0, "spill_stores": 232.0, "spill_loads": 232.0, "stack_bytes": 152.0}


def test_advisory_without_spills_and_spills_without_advisory(v01, ceilings):
    only_advice = _by_rule(observe(_with_builds(v01, _build("a", 0, [C7512])), None, ceilings), "build")
    assert "no spills" in only_advice.text and "C7512" in only_advice.text
    only_spills = _by_rule(observe(_with_builds(v01, _build("b", 8, [])), None, ceilings), "build")
    assert "8 bytes of spill stores" in only_spills.text and "advised" not in only_spills.text


def test_clean_build_gives_no_observation(v01, ceilings):
    clean = _build("attn_fwd_overlap", 0, ["warning: some harmless remark"])  # not a performance advisory
    assert "build" not in _rules(observe(_with_builds(v01, clean), None, ceilings))
    assert "build" not in _rules(observe(v01, None, ceilings))  # records without builds


def test_a_build_known_only_from_the_driver_is_observed_only_with_local_memory(v01, ceilings):
    from reporter.records import KernelBuild

    def driver(local: int) -> KernelBuild:
        return KernelBuild(kernel="attn_fwd_pingpong", source="k.cu", compiler="nvrtc 13.0", arch="sm_90a",
                           registers=168, reported_by="driver", local_bytes=local)

    o = _by_rule(observe(_with_builds(v01, driver(152)), None, ceilings), "build")
    assert "152 bytes of local memory" in o.text and "cannot say which" in o.text
    assert o.metrics == {"registers": 168.0, "local_bytes": 152.0}
    assert not [x for x in observe(_with_builds(v01, driver(0)), None, ceilings) if x.rule == "build"]
