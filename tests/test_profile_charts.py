"""The hierarchical roofline: its data (analysis.hroofline) and its SVG (render.profile_charts),
from the real records in logs/flashattn/ with ncu fixtures attached."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from reporter import ncu_metrics as N
from reporter import store
from reporter.analysis import metrics as M
from reporter.analysis.hroofline import hierarchical_roofline, version_label
from reporter.harness.profile import profile_from_output
from reporter.records import DeviceCeilings, Metric, Profile, Run
from reporter.render.profile_charts import hierarchical_roofline_svg
from reporter.standing import standing_runs

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "logs"
FIX = ROOT / "tests" / "fixtures" / "ncu"


def _latest(version: str, case: str = "test_small") -> Run:
    runs = standing_runs(store.runs(LOGS, "flashattn", version), gpu="h100")
    if (version, case) not in runs:
        pytest.skip(f"no h100 record of {version} on {case}")
    return runs[(version, case)].model_copy(deep=True)


@pytest.fixture()
def ceilings() -> DeviceCeilings:
    found = store.ceilings(LOGS, "h100")
    if not found:
        pytest.skip("no h100 ceilings")
    return found[-1]


def _handwritten() -> Profile:
    return profile_from_output(0, (FIX / "handwritten_v02_small.csv").read_text(), "")


def _scaled(p: Profile, factors: dict[str, float]) -> Profile:
    out = p.model_copy(deep=True)
    for k in out.kernels:
        for name, f in factors.items():
            if name in k.metrics:
                k.metrics[name] = Metric(value=float(k.metrics[name].value) * f, unit=k.metrics[name].unit)
    return out


@pytest.fixture()
def runs() -> list[Run]:
    """v01 with a profile that moves far more bytes (the materialised S×S), v02 with the
    handwritten one, v03 without a profile."""
    v01, v02 = _latest("v01_naive"), _latest("v02_fused_triton")
    v02.profile = _handwritten()
    v01.profile = _scaled(v02.profile, {N.LEVEL_BYTES["DRAM"]: 25, N.LEVEL_BYTES["L2"]: 12, N.LEVEL_BYTES["L1"]: 6,
                                        N.DURATION: 6.2})
    v03 = v02.model_copy(deep=True)
    v03.version, v03.profile = "v03_tuned", None
    return [v01, v02, v03]


def _parse_svg(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg")
    return root


def _texts(root: ET.Element) -> str:
    return " ".join("".join(e.itertext()) for e in root.iter() if e.tag.endswith("text"))


# --------------------------------------------------------------------------- data


def test_points_per_level_and_binding(runs, ceilings):
    h = hierarchical_roofline(runs, ceilings)
    assert [v.label for v in h.versions] == ["v01", "v02"]
    assert h.skipped == ("v03_tuned: no profile",)
    v02 = h.versions[1]
    fig = M.profile_figures(runs[1].profile, runs[1].work)
    assert v02.flops_source == "executed" and v02.flops == pytest.approx(fig.flops)
    assert v02.duration_ms == pytest.approx(fig.duration_ns / 1e6)
    assert v02.tflops == pytest.approx(fig.flops / (fig.duration_ns * 1e-9) / 1e12)
    assert [p.level for p in v02.points] == ["DRAM", "L2", "L1"]
    for p in v02.points:  # one height, intensity at that level
        assert p.tflops == v02.tflops and p.intensity == pytest.approx(v02.flops / fig.bytes_by_level[p.level])
    # DRAM against the measured copy bandwidth, L2/L1 against ncu's peaks
    assert v02.point("DRAM").peak_gbps == ceilings.copy_gbps
    assert v02.point("L2").peak_gbps == pytest.approx(3840 * 1.755)
    assert v02.binding == "L2"  # 587 MB in 121 µs is the closest to its roof
    assert v02.binding_fraction == max(p.fraction_of_peak for p in v02.points)
    assert v02.compute_peak_tflops == ceilings.matmul_tflops["fp16"]


def test_roofs_measured_and_from_ncu(runs, ceilings):
    h = hierarchical_roofline(runs, ceilings)
    roofs = {(r.kind, r.label): r for r in h.roofs}
    assert roofs[("compute", "fp16 matmul (measured)")].value == ceilings.matmul_tflops["fp16"]
    assert roofs[("compute", "fp32 matmul (measured)")].value == ceilings.matmul_tflops["fp32"]
    assert roofs[("memory", "DRAM copy (measured)")].value == ceilings.copy_gbps
    assert roofs[("memory", "L1 (ncu peak)")].source == "ncu"
    assert {r.level for r in h.roofs if r.kind == "memory"} == {"DRAM", "L2", "L1"}


def test_without_ceilings_uses_ncu_peaks(runs):
    h = hierarchical_roofline(runs, None)
    assert all(r.source == "ncu" for r in h.roofs)
    assert any(r.kind == "compute" and r.label.startswith("fp32 FFMA") for r in h.roofs)
    assert h.versions[1].point("DRAM").peak_gbps == pytest.approx(1280 * 2.62)


def test_work_model_flops_when_the_profile_has_no_flop_counters(ceilings):
    paths = sorted(FIX.glob("ncu_v02_small*.csv"))
    if not paths:
        pytest.skip("no real v02 capture yet")
    prof = profile_from_output(0, paths[0].read_text(), "", requested=N.PROFILE_METRICS)
    run = _latest("v02_fused_triton")
    run.profile = prof
    (v,) = hierarchical_roofline([run], ceilings).versions
    expected = "executed" if M.executed_flops(prof.kernels) else "work model"
    assert v.flops_source == expected
    if expected == "work model":
        assert v.flops == run.work.flops
    assert {p.level for p in v.points} == {"DRAM", "L2", "L1"}


def test_version_label():
    assert version_label("v02_fused_triton") == "v02" and version_label("v7") == "v7"
    assert version_label("v123_x") == "v123" and version_label("peer:sdpa") == "peer:sdpa"


# --------------------------------------------------------------------------- SVG


def test_svg_is_valid_and_labelled(runs, ceilings):
    svg = hierarchical_roofline_svg(runs, ceilings)
    assert svg.lstrip().startswith("<svg")
    text = _texts(_parse_svg(svg))
    for label in ("v01", "v02", "v01_naive", "v02_fused_triton", "not shown: v03_tuned: no profile"):
        assert label in text, label
    for roof in ("DRAM copy (measured)", "L2 (ncu peak)", "L1 (ncu peak)", "fp16 matmul (measured)", "TFLOP/s"):
        assert roof in text, roof
    assert "L2 binds" in text and "Hierarchical roofline" in text


def test_svg_style_white_background_and_a4_width(runs, ceilings):
    root = _parse_svg(hierarchical_roofline_svg(runs, ceilings))
    width_pt = float(root.get("width", "0").removesuffix("pt"))
    assert 380 < width_pt < 620  # about A4 text width (6–8 in at 72 pt/in)
    fills = " ".join(e.get("style", "") for e in root.iter())
    assert "fill: #ffffff" in fills


def test_svg_without_ceilings(runs):
    text = _texts(_parse_svg(hierarchical_roofline_svg(runs, None)))
    assert "v02" in text and "fp32 FFMA (ncu peak)" in text


def test_svg_without_any_profile(ceilings):
    run = _latest("v02_fused_triton")
    svg = hierarchical_roofline_svg([run], ceilings)
    assert "No hierarchical roofline" in _texts(_parse_svg(svg)) and "v02_fused_triton: no profile" in svg
    assert "No hierarchical roofline" in hierarchical_roofline_svg([], ceilings)


def test_failed_profile_is_skipped_with_its_status(runs, ceilings):
    runs[0].profile = Profile(status="unavailable", reason="no ncu")
    h = hierarchical_roofline(runs, ceilings)
    assert "v01_naive: profile unavailable" in h.skipped and [v.label for v in h.versions] == ["v02"]
