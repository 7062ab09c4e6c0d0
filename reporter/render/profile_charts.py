"""The hierarchical roofline as SVG text (matplotlib, Agg, log-log, A4-width).

One colour per version, one marker per memory level (DRAM ●, L2 ■, L1 ▲); the points of a
version share a height (its achieved TFLOP/s) and sit at its intensity at each level.
Diagonal roofs are the levels' bandwidths, horizontal ones the measured matmul ceilings;
arrows lead from each version to the next at every level, and the legend names the versions (no
label sits on the plot, where versions of similar rate would pile up) and says which level binds
each (the one closest to its own roof). With more versions than :data:`VERSION_COLORS` the
caller chooses which to draw. Data: :mod:`reporter.analysis.hroofline`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..analysis.hroofline import HierarchicalRoofline, Roof, hierarchical_roofline
from ..records import DeviceCeilings, Run
from .charts import STYLE as BASE_STYLE
from .charts import pyplot, svg_text

if TYPE_CHECKING:
    from matplotlib.lines import Line2D

STYLE: Any = {**BASE_STYLE, "font.size": 9,  # matplotlib types rc keys as literals: a plain dict
                "figure.facecolor": "white", "axes.facecolor": "white", "savefig.facecolor": "white"}
FIGSIZE_IN = (6.7, 3.6)  # A4 text width; the keys go below the axes
VERSION_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
                  "#7f7f7f", "#bcbd22", "#393b79", "#ad494a")  # distinct: tab10 and two more
LEVEL_MARKERS = {"DRAM": "o", "L2": "s", "L1": "^"}
LEVEL_ROOF_STYLE = {"DRAM": ("#333333", "-"), "L2": ("#777777", "--"), "L1": ("#999999", ":")}
COMPUTE_COLOR = "#333333"


def _message(text: str) -> str:
    plt = pyplot()
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(FIGSIZE_IN[0], 1.2))
        ax.axis("off")
        ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)
        return svg_text(fig)


def _limits(h: HierarchicalRoofline) -> tuple[float, float, float, float]:
    xs = [p.intensity for v in h.versions for p in v.points]
    ys = [v.tflops for v in h.versions]
    compute = [r.value for r in h.roofs if r.kind == "compute"]
    memory = [r.value for r in h.roofs if r.kind == "memory"]
    # zoomed to where the points are: from the ridge of the main compute roof on the slowest memory level
    # (where a kernel turns compute-bound) to past the points, and from under the slowest point to above
    # the roofs
    ridge = max(compute) * 1e3 / min(memory) if compute and memory else min(xs)
    x_lo = min(xs + [ridge]) / 4
    x_hi = max(xs + [ridge]) * 4
    y_hi = max(ys + compute) * 1.3
    y_lo = min(ys) / 1.5  # a compute roof far below every point (fp32 under fp16 work) is left out

    return x_lo, x_hi, y_lo, y_hi


def _angle(ax, x0: float, y0: float, x1: float, y1: float) -> float:
    (a, b), (c, d) = ax.transData.transform([(x0, y0), (x1, y1)])
    return math.degrees(math.atan2(d - b, c - a))


def _draw_roofs(ax, roofs: tuple[Roof, ...], lims: tuple[float, float, float, float]) -> list[Line2D]:
    """Draw the roofs; the memory roofs are named in the key (labels on their slopes, close
    parallel lines, would print on each other), the compute roofs at their right end."""
    from matplotlib.lines import Line2D

    x_lo, x_hi, y_lo, _ = lims
    compute = sorted((r for r in roofs if r.kind == "compute"), key=lambda r: -r.value)
    top = compute[0].value if compute else math.inf
    n = 240
    grid = [x_lo * (x_hi / x_lo) ** (i / n) for i in range(n + 1)]
    handles: list[Line2D] = []
    for r in sorted((r for r in roofs if r.kind == "memory"), key=lambda r: -r.value):
        color, style = LEVEL_ROOF_STYLE.get(r.level or "", ("#999999", "-."))
        ls: Any = style
        if r.level == "DRAM" and r.source == "ncu":
            ls = (0, (6, 2, 1, 2))  # dash-dot: the DRAM peak ncu quotes, beside the measured copy
        elif r.level in ("L2", "L1") and r.source == "measured":
            ls = "-"  # solid: what the micro-benchmark's loads reached, beside ncu's dashed peak
        tb_s = r.value / 1e3
        lw = 1.1 if r.source == "measured" else 0.9
        ax.plot(grid, [min(top, x * tb_s) for x in grid], color=color, ls=ls, lw=lw, zorder=1)
        handles.append(Line2D([], [], color=color, ls=ls, lw=lw, label=f"{r.label}: {r.value:,.0f} GB/s"))
    for i, r in enumerate(compute):
        if r.value < lims[2]:  # under the axes' range: not a roof these kernels meet
            continue
        main = i == 0
        ridge = min(r.value / (m.value / 1e3) for m in roofs if m.kind == "memory") if any(
            m.kind == "memory" for m in roofs) else x_lo
        ax.plot([ridge, x_hi], [r.value, r.value], color=COMPUTE_COLOR if main else "#888888", lw=1.5 if main else 0.8,
                ls="-" if main else "--", zorder=1)
        ax.text(x_hi / 1.05, r.value * 1.04, f"{r.label}: {r.value:,.0f} TFLOP/s", ha="right", va="bottom",
                fontsize=7, color=COMPUTE_COLOR if main else "#666666")
    return handles


def _draw_versions(ax, h: HierarchicalRoofline) -> list[Line2D]:
    from matplotlib.lines import Line2D

    handles: list[Line2D] = []
    best = max(range(len(h.versions)), key=lambda i: h.versions[i].tflops)  # the fastest profiled launch
    for i, v in enumerate(h.versions):
        color = VERSION_COLORS[i % len(VERSION_COLORS)]
        big = 2.5 if i == best else 0.0
        for p in v.points:
            binds = p.level == v.binding  # ringed: the level closest to its own roof
            ax.plot([p.intensity], [p.tflops], marker=LEVEL_MARKERS.get(p.level, "D"), ms=(7.5 if binds else 6.5) + big,
                    color=color, mec="black" if binds else "white", mew=1.0 if binds else 0.6, ls="none",
                    zorder=5 if i == best else 4)
        xs = [p.intensity for p in v.points]
        if len(xs) > 1:  # a faint bar tying the version's levels together
            ax.plot([min(xs), max(xs)], [v.tflops, v.tflops], color=color, lw=0.6, alpha=0.5, zorder=3)
        bind = f"{v.binding} binds ({v.binding_fraction:.0%} of its roof)" if v.binding_fraction is not None else \
            "binding level unknown"
        handles.append(Line2D([], [], color=color, marker="o", ls="none", ms=6 + big,
                              label=f"{v.version}: {v.tflops:,.0f} TFLOP/s, {bind}"
                              + (", the fastest" if i == best else "")))
    for prev, nxt in zip(h.versions, h.versions[1:], strict=False):
        for p in prev.points:
            q = nxt.point(p.level)
            if q is not None:
                ax.annotate("", xy=(q.intensity, q.tflops), xytext=(p.intensity, p.tflops), zorder=2,
                            arrowprops={"arrowstyle": "-|>", "color": "#8a8a8a", "lw": 0.7, "shrinkA": 4,
                                        "shrinkB": 4, "mutation_scale": 7})
    return handles


def hierarchical_roofline_svg(runs: list[Run], ceilings: DeviceCeilings | None) -> str:
    """SVG of the hierarchical roofline of the given runs (one per version, in order)."""
    return roofline_svg(hierarchical_roofline(runs, ceilings), runs[0].device.name if runs else "")


def roofline_svg(h: HierarchicalRoofline, gpu: str) -> str:
    """SVG of a hierarchical roofline already computed (what the chart cache keys on)."""
    if not h.versions:
        why = "; ".join(h.skipped) if h.skipped else "no runs"
        return _message(f"No hierarchical roofline: no profiled version ({why}).")
    fig = hierarchical_roofline_figure(h, gpu)
    with pyplot().rc_context(STYLE):
        return svg_text(fig)


def hierarchical_roofline_figure(h: HierarchicalRoofline, gpu: str) -> Any:
    """The figure (the tests check its labels); ``h`` must hold at least one version."""
    from matplotlib.lines import Line2D

    plt = pyplot()
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=FIGSIZE_IN)
        ax.set_xscale("log")
        ax.set_yscale("log")
        lims = _limits(h)
        ax.set_xlim(lims[0], lims[1])
        ax.set_ylim(lims[2], lims[3])
        roof_handles = _draw_roofs(ax, h.roofs, lims)
        handles = _draw_versions(ax, h)
        handles += [Line2D([], [], ls="none", label=f"not shown: {why}") for why in h.skipped]
        levels = [Line2D([], [], color="#444444", marker=m, ls="none", ms=6, mfc="white", label=f"intensity at {lvl}")
                  for lvl, m in LEVEL_MARKERS.items() if any(v.point(lvl) for v in h.versions)]
        levels.append(Line2D([], [], color="#444444", marker="o", ls="none", ms=7, mfc="white", mec="black", mew=1.0,
                             label="ringed: the level that binds"))
        # the keys below the axes, never over a roof or a point: the markers and roofs, then the versions
        key = ax.legend(handles=levels + roof_handles, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3,
                        fontsize=6.5, frameon=False, handletextpad=0.4, columnspacing=1.2)
        ax.add_artist(key)
        rows = math.ceil(len(levels + roof_handles) / 3)
        ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.17 - 0.06 * rows), ncol=2,
                  fontsize=6.6, frameon=False, handletextpad=0.3, columnspacing=1.0,
                  title="each version at the rate of its profiled launch (the fastest drawn larger)", title_fontsize=6.6)
        from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.grid(True, which="major", color="#eeeeee", lw=0.6, zorder=0)
        ax.set_xlabel("arithmetic intensity at each memory level [FLOP/byte]")
        ax.set_ylabel("achieved [TFLOP/s] (flops / ncu duration)")
        cases = sorted({v.case_name for v in h.versions})
        ax.set_title(f"Hierarchical roofline · {', '.join(cases)} · {gpu}")
        return fig
