"""Data for the hierarchical roofline: each profiled version as one point per memory level.

For a version, the flops are the executed floating-point work of its profiled call
(CUDA-core add/mul/fma and tensor-core ops, see :mod:`.metrics`; the work model's flops
when the profile has no flop counters), the time is ncu's ``gpu__time_duration`` summed
over the call's kernels, and each memory level contributes a point at

    intensity = flops / bytes at that level      achieved = flops / time

so the three points share a height and spread horizontally: the level whose roof
(bandwidth × intensity) is closest above the point is the one that binds.

Roofs: compute from the measured matmul ceilings (``logs/devices/``); DRAM from the
measured copy bandwidth and, dashed, ncu's DRAM peak; L2 and L1 from ncu's peaks
(``<bytes>.sum.peak_sustained × <unit>__cycles_elapsed.avg.per_second``, median over the
profiled kernels) and, where the device has a micro-benchmark record, the load bandwidth it
measured at each. The measured copy bandwidth is the DRAM roof a kernel can reach, so it
is the one used to say which level binds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from .. import ncu_metrics as N
from ..records import DeviceCeilings, Run
from . import metrics as M

_VERSION = re.compile(r"^v(\d{2,3})")


@dataclass(frozen=True)
class Roof:
    label: str
    kind: Literal["compute", "memory"]
    value: float  # TFLOP/s for compute, GB/s for memory
    source: Literal["measured", "ncu"]
    level: str | None = None  # 'DRAM', 'L2', 'L1' for a memory roof


@dataclass(frozen=True)
class LevelPoint:
    level: str
    bytes: float
    intensity: float  # flop per byte at this level
    tflops: float
    gbps: float
    peak_gbps: float | None
    fraction_of_peak: float | None


@dataclass(frozen=True)
class VersionRoofline:
    version: str
    label: str  # 'v02'
    case_name: str
    duration_ms: float
    flops: float
    flops_source: Literal["executed", "work model"]
    tflops: float
    compute_peak_tflops: float | None
    compute_fraction: float | None
    points: tuple[LevelPoint, ...]
    binding: str  # 'DRAM', 'L2', 'L1' or 'compute'
    binding_fraction: float | None

    def point(self, level: str) -> LevelPoint | None:
        return next((p for p in self.points if p.level == level), None)


@dataclass(frozen=True)
class HierarchicalRoofline:
    versions: tuple[VersionRoofline, ...]
    roofs: tuple[Roof, ...]
    skipped: tuple[str, ...]  # 'v01_naive: no profile', one per run left out


def version_label(version: str) -> str:
    """'v02_fused_triton' -> 'v02' (the handle worklog.md uses); other names unchanged."""
    m = _VERSION.match(version)
    return f"v{int(m.group(1)):02d}" if m else version


def _compute_peak(run: Run, ceilings: DeviceCeilings | None, fig: M.Figures) -> float | None:
    if ceilings is not None:
        if run.work.ceiling.startswith("matmul_"):
            try:
                return ceilings.ceiling(run.work.ceiling)
            except KeyError:
                pass
        if "fp32" in ceilings.matmul_tflops:
            return ceilings.matmul_tflops["fp32"]
    return fig.fp32_peak_tflops


def _ncu_peaks(runs: list[Run]) -> dict[str, float]:
    kernels = [k for r in runs if r.profile is not None and r.profile.status == "ok" for k in r.profile.kernels]
    return M.peak_gbps(kernels)


def _version_points(run: Run, ceilings: DeviceCeilings | None, peaks: dict[str, float]) -> VersionRoofline | str:
    """The version's points, or why it has none."""
    fig = M.profile_figures(run.profile, run.work)
    if fig is None:
        why = "no profile" if run.profile is None else f"profile {run.profile.status}"
        return f"{run.version}: {why}"
    if not fig.duration_ns:
        return f"{run.version}: the profile has no gpu__time_duration"
    source: Literal["executed", "work model"] = "executed" if fig.flops > 0 else "work model"
    flops = fig.flops if source == "executed" else (run.work.flops or 0.0)  # unknown flops: nothing to place
    if flops <= 0:
        return f"{run.version}: no floating-point work to place on a roofline"
    seconds = fig.duration_ns * 1e-9
    tflops = flops / seconds / 1e12
    level_peak = dict(peaks)
    if ceilings is not None:  # what a kernel can reach at DRAM, rather than the datasheet-like peak
        level_peak["DRAM"] = ceilings.copy_gbps
    points = []
    for level in N.LEVELS:
        b = fig.bytes_by_level.get(level)
        if not b:
            continue
        gbps = b / seconds / 1e9
        peak = level_peak.get(level)
        points.append(LevelPoint(level, b, flops / b, tflops, gbps, peak, gbps / peak if peak else None))
    compute_peak = _compute_peak(run, ceilings, fig)
    compute_fraction = tflops / compute_peak if compute_peak else None
    fractions = {p.level: p.fraction_of_peak for p in points if p.fraction_of_peak is not None}
    if compute_fraction is not None:
        fractions["compute"] = compute_fraction
    binding, binding_fraction = max(fractions.items(), key=lambda kv: kv[1]) if fractions else ("unknown", None)
    return VersionRoofline(
        version=run.version, label=version_label(run.version), case_name=run.case_name,
        duration_ms=fig.duration_ns / 1e6, flops=flops, flops_source=source, tflops=tflops,
        compute_peak_tflops=compute_peak, compute_fraction=compute_fraction, points=tuple(points),
        binding=binding, binding_fraction=binding_fraction,
    )


def _roofs(runs: list[Run], ceilings: DeviceCeilings | None, peaks: dict[str, float],
           streams: dict[str, float] | None = None) -> list[Roof]:
    roofs: list[Roof] = []
    keys = list(dict.fromkeys(r.work.ceiling for r in runs))
    if ceilings is not None:
        dtypes = [k.removeprefix("matmul_") for k in keys if k.startswith("matmul_")]
        if "fp32" not in dtypes:
            dtypes.append("fp32")  # the CUDA-core ceiling, for work off the tensor cores
        for dt in dtypes:
            if dt in ceilings.matmul_tflops:
                roofs.append(Roof(f"{dt} matmul (measured)", "compute", ceilings.matmul_tflops[dt], "measured"))
        roofs.append(Roof("DRAM copy (measured)", "memory", ceilings.copy_gbps, "measured", "DRAM"))
    elif (fp32 := M.fp32_peak_tflops([k for r in runs if r.profile and r.profile.status == "ok"
                                      for k in r.profile.kernels])) is not None:
        roofs.append(Roof("fp32 FFMA (ncu peak)", "compute", fp32, "ncu"))
    for level in N.LEVELS:
        if level in peaks:
            roofs.append(Roof(f"{level} (ncu peak)", "memory", peaks[level], "ncu", level))
        if level != "DRAM" and streams and level in streams:  # DRAM's measured roof is the copy's
            roofs.append(Roof(f"{level} load stream (measured)", "memory", streams[level], "measured", level))
    return roofs


def hierarchical_roofline(runs: list[Run], ceilings: DeviceCeilings | None,
                          streams: dict[str, float] | None = None) -> HierarchicalRoofline:
    """Points and roofs for the runs given (one per version, in version order); ``streams``, the
    micro-benchmark's measured load bandwidth by level (:func:`reporter.analysis.microbench.level_ceilings`),
    adds the L2 and L1 roofs a kernel's loads reached, beside ncu's peaks (the binding level is still
    judged against ncu's peaks there, and against the measured copy at DRAM)."""
    peaks = _ncu_peaks(runs)
    versions: list[VersionRoofline] = []
    skipped: list[str] = []
    for r in runs:
        v = _version_points(r, ceilings, peaks)
        (skipped if isinstance(v, str) else versions).append(v)  # type: ignore[arg-type]
    return HierarchicalRoofline(tuple(versions), tuple(_roofs(runs, ceilings, peaks, streams)), tuple(skipped))
