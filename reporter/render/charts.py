"""Charts as SVG text (matplotlib, Agg): the roofline, time per version, and a sweep.

Each function takes the assignment summary and returns an ``<svg>`` string to inline in
the HTML, so the report stays one self-contained file.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, MaxNLocator  # noqa: E402

from ..analysis.summary import AssignmentSummary  # noqa: E402
from ..records import Derived, WorkModel, derive  # noqa: E402

VERSION_COLOR = "#1f5aa6"
PEER_COLOR = "#c0392b"
REF_COLOR = "#7d3c98"
ROOF_COLOR = "#333333"
FLOOR_COLOR = "#2e8b57"

#: The report's chart style; profile_charts builds on it.
STYLE = {
    "font.size": 8.5, "font.family": "DejaVu Sans", "axes.spines.top": False, "axes.spines.right": False,
    "svg.fonttype": "none", "axes.titlesize": 9.5, "axes.titleweight": "bold", "figure.dpi": 100,
}
plt.rcParams.update(STYLE)


def svg_text(fig) -> str:
    """The figure as SVG text to inline (no date, so rebuilds are byte-identical); closes it."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


def _fmt_ms(ms: float) -> str:
    if ms < 1:
        return f"{ms * 1e3:.0f} µs" if ms >= 0.01 else f"{ms * 1e3:.1f} µs"
    return f"{ms:.3g} ms" if ms < 100 else f"{ms:.0f} ms"


def time_per_version(s: AssignmentSummary) -> str:
    """Each version's and peer's figure (the mean) on the benchmark case (whiskers: 5th–95th
    percentile), with the public reference and the roofline floor as vertical lines."""
    rows: list[tuple[str, float, float, float, str]] = []
    for v in s.versions:
        r = v.bench
        if r and r.timing:
            q = r.timing.quantiles_ms
            rows.append((v.name, r.timing.mean_ms, q["p05"], q["p95"], VERSION_COLOR))
    for p in s.peers:
        if p.timing:
            q = p.timing.quantiles_ms
            rows.append((f"peer: {p.name}", p.timing.mean_ms, q["p05"], q["p95"], PEER_COLOR))
    fig, ax = plt.subplots(figsize=(6.6, 0.34 * len(rows) + 1.3))
    if not rows:
        ax.text(0.5, 0.5, "no timed runs", ha="center", va="center", transform=ax.transAxes)
        return svg_text(fig)
    y = list(range(len(rows)))[::-1]
    med = [r[1] for r in rows]
    lo = [max(r[1] - r[2], 0) for r in rows]
    hi = [max(r[3] - r[1], 0) for r in rows]
    ax.barh(y, med, color=[r[4] for r in rows], height=0.62, xerr=[lo, hi],
            error_kw={"elinewidth": 0.8, "capsize": 2, "ecolor": "#555"})
    ax.set_yticks(y, [r[0] for r in rows])
    spread = max(med) / max(min(med), 1e-12)
    if spread > 20:
        ax.set_xscale("log")
    for yi, m in zip(y, med):
        ax.text(m * (1.04 if spread > 20 else 1.0) + (0 if spread > 20 else max(med) * 0.01), yi, _fmt_ms(m),
                va="center", ha="left", fontsize=7.5)
    lines = []
    for ref in s.references:
        if ref.case == s.benchmark_case or ref.case == "benchmark":
            ax.axvline(ref.median_ms, color=REF_COLOR, ls="--", lw=1)
            lines.append((ref.median_ms, f"{ref.label} ({ref.gpu})", REF_COLOR))
    best = s.best
    floor = best.figure.derived(s.ceilings).floor_ms if best and best.figure else None
    if floor:
        f = floor
        ax.axvline(f, color=FLOOR_COLOR, ls=":", lw=1.2)
        lines.append((f, "roofline floor (measured peaks)", FLOOR_COLOR))
    from matplotlib.lines import Line2D

    if lines:
        handles = [Line2D([], [], color=c, ls="--" if c == REF_COLOR else ":", lw=1.2) for _, _, c in lines]
        ax.legend(handles, [f"{label}: {_fmt_ms(x)}" for x, label, _ in lines], loc="lower right", fontsize=7,
                  frameon=True, framealpha=0.9)
    ax.set_xlabel(f"time on the benchmark case ({s.gpu.upper()}; mean, whiskers 5th–95th percentile), lower is better")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: _fmt_ms(v) if v > 0 else "0"))
    ax.set_xlim(right=max(med + [x for x, _, _ in lines]) * (2.2 if spread > 20 else 1.18))
    ax.set_title("Time per version")
    return svg_text(fig)


@dataclass(frozen=True)
class _Point:
    work: WorkModel
    derived: Derived


def roofline(s: AssignmentSummary) -> str:
    """Log-log roofline from the measured ceilings: one point per version at its
    work-model intensity, arrows from each version to the next, peers as crosses."""
    c = s.ceilings
    pts = [(v.name, _Point(v.figure.run.work, v.figure.derived(c))) for v in s.versions if v.figure is not None]
    fig, ax = plt.subplots(figsize=(6.6, 3.9))
    if c is None or not pts:
        ax.text(0.5, 0.5, "no ceilings or no timed runs recorded", ha="center", va="center", transform=ax.transAxes)
        return svg_text(fig)
    work = pts[0][1].work
    bw_tbs = c.copy_gbps / 1e3  # TB/s -> TFLOP/s per (flop/byte)
    if work.flops == 0:
        return _bandwidth_chart(s)
    intensities = [r.derived.arithmetic_intensity for _, r in pts]
    x_lo = min(min(intensities) / 30, 1.0)
    x_hi = max(max(intensities) * 30, 1e4)
    xs = [x_lo * (x_hi / x_lo) ** (i / 200) for i in range(201)]
    roofs = sorted(c.matmul_tflops.items(), key=lambda kv: -kv[1])
    for name, peak in roofs:
        main = work.ceiling == f"matmul_{name}"
        ax.plot(xs, [min(peak, x * bw_tbs) for x in xs], color=ROOF_COLOR if main else "#999",
                lw=1.6 if main else 0.8, ls="-" if main else "--")
        near_main = any(abs(peak / p - 1) < 0.15 for n, p in roofs if f"matmul_{n}" == work.ceiling)
        if main or not near_main:  # roofs within 15 % of the main one would print on top of it
            ax.text(peak / bw_tbs * 1.15, peak * 1.06, f"{name} matmul {peak:,.0f} TFLOP/s", ha="left",
                    va="bottom", fontsize=7, color=ROOF_COLOR if main else "#777")
    ridge = roofs[0][1] / bw_tbs
    ax.text(ridge / 8, ridge / 8 * bw_tbs * 1.15, f"copy {c.copy_gbps:,.0f} GB/s", rotation=0, fontsize=7,
            color=ROOF_COLOR, ha="center")
    prev = None
    # labels of points at one intensity stack up: spread them vertically, in order of rate
    order = sorted(range(len(pts)), key=lambda i: pts[i][1].derived.tflops)
    label_dy = {i: 0.0 for i in order}
    last_y = None
    for i in order:
        y_log = math.log10(pts[i][1].derived.tflops)
        if last_y is not None and y_log - last_y < 0.06:
            label_dy[i] = label_dy[order[order.index(i) - 1]] + 8
        last_y = y_log
    for i, (name, r) in enumerate(pts):
        x, yv = r.derived.arithmetic_intensity, r.derived.tflops
        ax.plot([x], [yv], "o", color=VERSION_COLOR, ms=5, zorder=3)
        ax.annotate(f"{name.split('_')[0]} {yv:,.0f}", (x, yv), textcoords="offset points",
                    xytext=(7, -3 + label_dy[i]), fontsize=7, color=VERSION_COLOR)
        if prev is not None:
            ax.annotate("", xy=(x, yv), xytext=prev, arrowprops={"arrowstyle": "->", "color": VERSION_COLOR,
                                                                  "lw": 0.9, "shrinkA": 4, "shrinkB": 4})
        prev = (x, yv)
    for p in s.peers:
        pd = derive(work, p.timing.mean_ms, c) if p.timing else None
        if pd and pd.tflops > 0:
            ax.plot([pd.arithmetic_intensity], [pd.tflops], "x", color=PEER_COLOR, ms=6, mew=1.5)
            ax.annotate(p.name, (pd.arithmetic_intensity, pd.tflops), textcoords="offset points",
                        xytext=(-7, 0), ha="right", va="center", fontsize=7, color=PEER_COLOR)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_lo, x_hi)
    top = max(p for _, p in roofs)
    bottom = min([r.derived.tflops for _, r in pts] + [top]) / 10
    ax.set_ylim(bottom, top * 2.2)
    ax.set_xlabel("arithmetic intensity of the work model (flop per DRAM byte)")
    ax.set_ylabel("TFLOP/s (work model flops / time)")
    ax.set_title(f"Roofline on the {s.gpu.upper()}, measured ceilings")
    ax.grid(True, which="major", lw=0.3, color="#ccc")
    return svg_text(fig)


def _bandwidth_chart(s: AssignmentSummary) -> str:
    """For work with no flops: achieved GB/s per version against the copy ceiling."""
    c = s.ceilings
    rows = [(v.name, v.figure.derived(c).gbps, VERSION_COLOR) for v in s.versions if v.figure is not None]
    work = next((v.figure.run.work for v in s.versions if v.figure is not None), None)
    rows += [(f"peer: {p.name}", derive(work, p.timing.mean_ms, c).gbps, PEER_COLOR) for p in s.peers
             if p.timing and work is not None]
    fig, ax = plt.subplots(figsize=(6.6, 0.34 * len(rows) + 1.3))
    y = list(range(len(rows)))[::-1]
    ax.barh(y, [r[1] for r in rows], color=[r[2] for r in rows], height=0.62)
    ax.set_yticks(y, [r[0] for r in rows])
    if c is not None:
        ax.axvline(c.copy_gbps, color=ROOF_COLOR, lw=1.4)
        ax.text(c.copy_gbps, 1.0, f" copy ceiling {c.copy_gbps:,.0f} GB/s", rotation=90, va="top", ha="right",
                fontsize=7, transform=ax.get_xaxis_transform())
    for yi, (_, g, _) in zip(y, rows):
        ax.text(g, yi, f" {g:,.0f}", va="center", fontsize=7.5)
    ax.set_xlabel("achieved bandwidth (work-model bytes / time), GB/s")
    ax.set_title(f"Bandwidth against the measured copy ceiling ({s.gpu.upper()})")
    return svg_text(fig)


def sweep_chart(points: list[tuple[str, float]], title: str) -> str:
    """Medians of a configuration sweep, fastest first; the table beside it names them."""
    meds = sorted(p[1] for p in points)
    fig, ax = plt.subplots(figsize=(6.6, 1.7))
    ax.plot(range(1, len(meds) + 1), meds, "o-", color=VERSION_COLOR, ms=3, lw=0.8)
    ax.plot([1], meds[:1], "o", color=FLOOR_COLOR, ms=6)
    ax.set_xlabel("configurations, fastest first")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # configurations are counted, not measured
    ax.set_ylabel("median ms")
    ax.set_title(title)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.grid(True, axis="y", lw=0.3, color="#ccc")
    return svg_text(fig)
