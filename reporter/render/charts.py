"""Charts as SVG text (matplotlib, Agg): the trajectory of the versions' times and their
bandwidth against the copy ceiling.

Each chart is drawn from plain data (:class:`TrajectoryData`, :class:`BandwidthData`) that
``*_data`` functions take from the assignment summary without matplotlib; ``*_figure`` draws it
(the tests check that no two labels overlap, :func:`text_overlaps`) and :func:`svg_text` turns a
figure into ``<svg>`` text to inline in the HTML, so the report stays one self-contained file.
:mod:`reporter.render.chart_cache` keeps the SVG by the hash of the data, so matplotlib is
imported only when a chart changed. Labels that would collide are spread apart (:func:`spread`).
"""

from __future__ import annotations

import functools
import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..analysis.listing import timed_peers
from ..analysis.summary import AssignmentSummary
from ..records import derive
from ..standing import peer_ms
from . import fonts

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from matplotlib.text import Text

VERSION_COLOR = "#1f5aa6"
PEER_COLOR = "#c0392b"
REF_COLOR = "#7d3c98"
ROOF_COLOR = "#333333"
FLOOR_COLOR = "#2e8b57"
OTHER_CASE_COLOR = "#b9770e"  # versions timed on another headline case (CASES_WHERE)
#: How the trajectory draws each kind of horizontal line: colour, line style, width.
LINE_STYLES = {"peer": (PEER_COLOR, "--", 0.8), "reference": (REF_COLOR, "-.", 0.8), "floor": (FLOOR_COLOR, ":", 1.0)}

#: The report's chart style; profile_charts builds on it. The SVG's ids are salted with a fixed
#: string, so the same chart is the same text in every build (and its part of the PDF is cached).
STYLE = {
    "font.size": 8.5, "font.family": [fonts.SANS, "DejaVu Sans"], "axes.spines.top": False, "axes.spines.right": False,
    "svg.fonttype": "none", "svg.hashsalt": "report", "axes.titlesize": 9.5, "axes.titleweight": "bold",
    "figure.dpi": 100,
}


@functools.cache
def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend with :data:`STYLE`, imported on first use (a second
    of a build that finds every chart in the cache)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.font_manager
    import matplotlib.pyplot as plt

    fonts.register_with_matplotlib(matplotlib.font_manager)

    plt.rcParams.update(STYLE)
    return plt


def svg_text(fig) -> str:
    """The figure as SVG text to inline (no date, so rebuilds are byte-identical); closes it."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    pyplot().close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


def _fmt_ms(ms: float) -> str:
    if ms < 1:
        return f"{ms * 1e3:.0f} µs" if ms >= 0.01 else f"{ms * 1e3:.1f} µs"
    return f"{ms:.3g} ms" if ms < 100 else f"{ms:.0f} ms"




# --------------------------------------------------------------------------- labels that never collide


def spread(wanted: Sequence[float], gap: float, lo: float = float("-inf"), hi: float = float("inf")) -> list[float]:
    """Positions as close as can be to ``wanted`` (any order), at least ``gap`` apart, kept in
    [lo, hi] where they fit, in the order of ``wanted``: labels along one axis, in display units."""
    order = sorted(range(len(wanted)), key=lambda i: wanted[i])
    pos = [wanted[i] for i in order]
    for _ in range(2):  # push up, then down from the top bound, then up again from the bottom
        for k in range(len(pos)):
            pos[k] = max(pos[k], lo + k * gap if k == 0 else pos[k - 1] + gap)
        for k in range(len(pos) - 1, -1, -1):
            pos[k] = min(pos[k], hi - (len(pos) - 1 - k) * gap if k == len(pos) - 1 else pos[k + 1] - gap)
    out = [0.0] * len(wanted)
    for k, i in enumerate(order):
        out[i] = pos[k]
    return out


def visible_texts(fig: Figure) -> list[Text]:
    """Every text the figure draws: titles, axis and tick labels inside the view, annotations, legends."""
    from matplotlib.text import Text

    fig.canvas.draw()
    out = []
    for t in fig.findobj(Text):
        if not t.get_visible() or not t.get_text().strip():
            continue
        out.append(t)
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    box = fig.bbox
    drawn = []
    for t in out:
        bb = Text.get_window_extent(t, renderer)  # an annotation's own box, without its arrow
        if bb.width <= 0 or bb.x1 < box.x0 or bb.x0 > box.x1 or bb.y1 < box.y0 or bb.y0 > box.y1:
            continue
        drawn.append(t)
    # tick labels of ticks outside the view are not drawn
    for ax in fig.axes:
        for axis, (v0, v1) in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
            lo, hi = min(v0, v1), max(v0, v1)
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                if not lo <= tick.get_loc() <= hi:
                    drawn = [t for t in drawn if t is not tick.label1 and t is not tick.label2]
    return drawn


def text_overlaps(fig: Figure, slack_px: float = 0.5) -> list[tuple[str, str]]:
    """Pairs of drawn texts whose boxes overlap (by more than ``slack_px`` on both axes), and an
    annotation's leader line that crosses another text, as ``("leader of <its text>", <the text>)``."""
    from matplotlib.text import Annotation, Text
    from matplotlib.transforms import Bbox

    texts = visible_texts(fig)
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    boxes = [(t, Text.get_window_extent(t, renderer)) for t in texts]
    out = []
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            (a, p), (b, q) = boxes[i], boxes[j]
            if min(p.x1, q.x1) - max(p.x0, q.x0) > slack_px and min(p.y1, q.y1) - max(p.y0, q.y0) > slack_px:
                out.append((a.get_text(), b.get_text()))
    for a, _ in boxes:
        arrow = a.arrow_patch if isinstance(a, Annotation) else None
        if arrow is None or not arrow.get_visible():
            continue
        path = arrow.get_path()  # in display coordinates once drawn
        for b, q in boxes:
            inner = Bbox.from_extents(q.x0 + slack_px, q.y0 + slack_px, q.x1 - slack_px, q.y1 - slack_px)
            if b is not a and inner.width > 0 and inner.height > 0 and path.intersects_bbox(inner, filled=False):
                out.append((f"leader of {a.get_text()}", b.get_text()))
    return out


def _label_column(ax, items: list[tuple[float, str, str, bool]], x_axes: float = 1.01, fontsize: float = 7.0) -> None:
    """Labels at the right edge of the axes for horizontal lines at data heights ``y`` (log or
    linear), spread so that none overlaps another; each ``(y, text, color, leader)``, with a leader
    line from the line's end to its label where ``leader`` (not for a line off the panel, which
    has no end to point at)."""
    if not items:
        return
    fig = ax.figure
    fig.canvas.draw()  # the transforms must know the final limits
    to_px = ax.transData.transform
    ys_px = [to_px((1.0, y))[1] for y, _, _, _ in items]
    gap = fontsize * 1.35 * fig.dpi / 72
    bbox = ax.get_window_extent()
    placed = spread(ys_px, gap, bbox.y0 + gap / 2, bbox.y1 + gap * 3)
    inv = ax.transAxes.inverted()
    for (y, text, color, leader), y_px in zip(items, placed, strict=True):
        y_ax = inv.transform((bbox.x0, y_px))[1]
        arrow = {"arrowstyle": "-", "color": color, "lw": 0.5, "alpha": 0.6, "shrinkA": 0, "shrinkB": 0}
        ax.annotate(text, xy=(1.0, y), xycoords=("axes fraction", "data"), xytext=(x_axes, y_ax),
                    textcoords="axes fraction", va="center", ha="left", fontsize=fontsize, color=color,
                    annotation_clip=False, arrowprops=arrow if leader else None)


# --------------------------------------------------------------------------- the trajectory


@dataclass(frozen=True)
class TrajectoryData:
    """What the trajectory draws: every version's short name (the ticks), the timed ones' figures,
    which is best, the horizontal lines (height, label, colour) and the title's GPU."""

    ticks: tuple[str, ...]
    points: tuple[tuple[int, float], ...]  # (tick index, ms)
    best: int | None  # index into points
    lines: tuple[tuple[float, str, str], ...]  # (height, label, kind: a key of LINE_STYLES)
    gpu: str
    case_words: str = "the benchmark case"
    # the versions timed on another headline case (their CASES_WHERE leaves the report's out): one series per
    # case, (case, ((tick index, ms), ...)), drawn apart and named, never joined to the report's case's points
    others: tuple[tuple[str, tuple[tuple[int, float], ...]], ...] = ()


def trajectory_data(s: AssignmentSummary) -> TrajectoryData:
    """Each version's figure on the report's case, in order (a version whose check failed is left
    out and its tick stays); the peers timed in the best version's own run, the public references
    (labelled with their card) and the roofline floor as lines."""
    index = {v.name: i for i, v in enumerate(s.versions)}
    timed = [v for v in s.versions if v.figure is not None and v.benchmark_case == s.benchmark_case]
    others = tuple((case, tuple((index[v.name], v.figure.ms) for v in s.versions
                                if v.figure is not None and v.benchmark_case == case))
                   for case in s.headline_cases[1:])
    best = s.best
    lines: list[tuple[float, str, str]] = []
    bench = best.figure.run if best is not None and best.figure is not None else None
    for p in timed_peers(bench) if bench is not None else []:
        if t := peer_ms(p):
            lines.append((t, f"{p.name} {_fmt_ms(t)}", "peer"))
    for ref in s.case_references:
        card = f"another {ref.gpu}" if ref.gpu.lower() == s.gpu.lower() else f"a {ref.gpu}"
        lines.append((ref.median_ms, f"{ref.label} {_fmt_ms(ref.median_ms)} ({card})", "reference"))
    floor = best.figure.derived(s.ceilings).floor_ms if best is not None and best.figure is not None else None
    if floor:
        lines.append((floor, f"roofline floor {_fmt_ms(floor)}", "floor"))
    return TrajectoryData(
        ticks=tuple(v.short for v in s.versions),
        points=tuple((index[v.name], v.figure.ms) for v in timed if v.figure is not None),
        best=next((k for k, v in enumerate(timed) if v is best), None),
        lines=tuple(lines), gpu=s.gpu, case_words=s.case_words, others=tuple((c, pts) for c, pts in others if pts))


#: A trajectory whose slowest version is more than this many times its best is drawn zoomed: the later
#: versions on a linear axis that shows their differences, every version in a small log panel beside it.
ZOOM_RANGE = 3.0
#: The zoomed panel shows the versions within this factor of the best (and the lines in that range).
ZOOM_WITHIN = 1.6
#: ... when at least this many versions crowd into that range (fewer read well on the log axis).
ZOOM_CROWD = 6


def zoom_top(points: Sequence[float], best: float) -> float | None:
    """The top of the zoomed panel, or None when every version fits one readable axis: from the first
    version within :data:`ZOOM_WITHIN` of the best on, every version is shown."""
    if not points or max(points) <= ZOOM_RANGE * best or sum(y <= ZOOM_WITHIN * best for y in points) < ZOOM_CROWD:
        return None
    start = next(i for i, y in enumerate(points) if y <= ZOOM_WITHIN * best)
    return max(points[start:]) * 1.04


def trajectory_figure(d: TrajectoryData) -> Figure:
    """The versions' figures joined in order, the best one green; the lines of :class:`TrajectoryData`
    dashed (peers), dash-dot (references) and dotted (the floor), labelled in a column at the right.

    When the first versions are many times slower than the last (:data:`ZOOM_RANGE`), the main panel
    is linear and zoomed to the versions near the best (:func:`zoom_top`); the versions above it are
    marked ▲ at its top edge, the lines above it are named at the top of the label column, and a small
    log panel at the left shows every version."""
    plt = pyplot()
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    if not d.points and not d.others:
        fig, ax = plt.subplots(figsize=(6.6, 3.0))
        ax.text(0.5, 0.5, "no timed runs", ha="center", va="center", transform=ax.transAxes)
        return fig
    if not d.points:  # only versions timed on another case: those are the series to scale the axes by
        d = TrajectoryData(d.ticks, d.others[0][1], None, d.lines, d.gpu, f"the {d.others[0][0]} case", d.others[1:])
    px = [i for i, _ in d.points]
    py = [ms for _, ms in d.points]
    best_ms = py[d.best] if d.best is not None else min(py)
    top = zoom_top(py, best_ms)
    other_y = [y for _, pts in d.others for _, y in pts]
    n = len(d.ticks)
    if top is None:
        fig, ax = plt.subplots(figsize=(6.6, 3.0))
        overview = None
    else:
        fig, (overview, ax) = plt.subplots(1, 2, figsize=(6.6, 3.0), gridspec_kw={"width_ratios": [1, 4.4],
                                                                                  "wspace": 0.32})
    ax.plot(px, py, "-", color=VERSION_COLOR, lw=1.0, zorder=2)
    ax.plot(px, py, "o", color=VERSION_COLOR, ms=4, zorder=3)
    if d.best is not None:
        ax.plot([px[d.best]], [py[d.best]], "o", color=FLOOR_COLOR, ms=7, zorder=4)
    for case, pts in d.others:  # hollow squares, a series of their own, named by their case at the last point
        ox, oy = [x for x, _ in pts], [y for _, y in pts]
        ax.plot(ox, oy, "--", color=OTHER_CASE_COLOR, lw=0.8, zorder=2)
        ax.plot(ox, oy, "s", mfc="white", mec=OTHER_CASE_COLOR, ms=4.5, zorder=3)
        if top is None or oy[-1] <= top:
            last = ox[-1] == len(d.ticks) - 1  # at the right edge: the label ends at its point
            ax.annotate(f"{_fmt_ms(oy[-1])} on {case}", (ox[-1], oy[-1]), xytext=(4 if last else 0, 6),
                        textcoords="offset points", ha="right" if last else "center", va="bottom", fontsize=6.5, color=OTHER_CASE_COLOR, zorder=5,
                        bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.6, "alpha": 0.9})
    if top is None:
        shown_lines = list(d.lines)
        ax.set_yscale("log")
        every = [y for y, _, _ in d.lines] + py + other_y
        ax.set_ylim(min(every) / 1.6, max(every) * 1.6)
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_ylabel(f"time on {d.case_words} (log)")
    else:
        shown_lines = [ln for ln in d.lines if ln[0] <= top]
        low = min([y for y, _, _ in shown_lines] + py + other_y) * 0.96
        ax.set_ylim(low, top)
        ax.set_ylabel(f"time on {d.case_words}")
        above = [(x, y) for x, y in zip(px, py) if y > top]
        for x, y in above:  # off the panel: a mark at its top edge, the time beside it
            ax.plot([x], [top], marker="^", color=VERSION_COLOR, ms=5, zorder=3, clip_on=False)
        for _, pts in d.others:
            for x, y in pts:
                if y > top:
                    ax.plot([x], [top], marker="^", color=OTHER_CASE_COLOR, ms=5, zorder=3, clip_on=False)
    for y, _, kind in shown_lines:
        color, ls, lw = LINE_STYLES[kind]
        ax.axhline(y, color=color, ls=ls, lw=lw, zorder=1)
    ax.set_xlim(-0.6, n - 0.4)
    # one label a version: the type shrinks as versions are added, so that rotated labels never touch (a rotated
    # label is a line of type wide, and the panel gives each version about 320 / n points)
    tick_pt = 8 if n <= 12 else 7 if n <= 32 else 6 if n <= 40 else 5
    ax.set_xticks(list(range(n)), list(d.ticks), fontsize=tick_pt, rotation=90 if n > 24 else 0)
    if top is not None and n > 12:
        for label in ax.get_xticklabels():
            label.set_rotation(90)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: _fmt_ms(v)))
    ax.grid(True, axis="y", which="major", lw=0.3, color="#ccc")
    ax.set_title(f"Time per version on the {d.gpu.upper()}, lower is better" if top is None else
                 f"Time per version on the {d.gpu.upper()}, zoomed", loc="left" if top else "center")
    # the best and the last version carry their times (and the first, when it is on the panel)
    named = {len(py) - 1} | ({d.best} if d.best is not None else set()) | ({0} if top is None else set())
    for i in sorted(named):
        y = py[i]
        if top is not None and y > top:
            continue
        above_prev = i == 0 or y >= py[i - 1] or i == d.best  # the best's time above it: the floor and
        # the peers it is compared with lie below
        last = i == len(py) - 1 and i != 0
        if last and d.best is not None and i == d.best + 1:
            above_prev = False  # right beside the best's time, above: below its point instead
        first = i == 0  # beside its point, inward: centred, it would sit on the y axis
        # the best right before the last point: its label ends at its point, clear of the right edge's leaders
        leftward = last or (i == d.best and i == len(py) - 2 and i != 0)
        dx, dy = (-5 if leftward else 5 if first else 0), (2 if first else 7 if above_prev else -8)
        ax.annotate(_fmt_ms(y), (px[i], y), xytext=(dx, dy),
                    textcoords="offset points", ha="right" if leftward else "left" if first else "center",
                    va="bottom" if above_prev else "top", fontsize=7, color=VERSION_COLOR, zorder=5,
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.6, "alpha": 0.9})  # no line strikes it
    if overview is not None:
        overview.plot(px, py, "-o", color=VERSION_COLOR, lw=0.8, ms=2.5)
        for _, pts in d.others:
            overview.plot([x for x, _ in pts], [y for _, y in pts], "--s", color=OTHER_CASE_COLOR, mfc="white",
                          lw=0.6, ms=2.5)
        overview.set_yscale("log")
        overview.axhspan(ax.get_ylim()[0], top, color="#e8eef7", zorder=0)
        overview.set_xticks([px[0], px[-1]], [d.ticks[px[0]], d.ticks[px[-1]]], fontsize=7)
        overview.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        overview.yaxis.set_major_formatter(FuncFormatter(lambda v, _: _fmt_ms(v)))
        overview.yaxis.set_minor_formatter(NullFormatter())
        overview.tick_params(axis="y", labelsize=6.5)
        overview.set_title("every version (log)", fontsize=7.5, fontweight="normal")
        overview.set_xlabel("shaded: the range at right", fontsize=6.5)
        overview.grid(True, axis="y", which="major", lw=0.3, color="#ccc")
    # a line above the zoomed range is still named, at the top of the column
    off = [(top, f"{text} (above)", LINE_STYLES[kind][0], False) for y, text, kind in d.lines
           if top is not None and y > top]
    _label_column(ax, [(y, text, LINE_STYLES[kind][0], True) for y, text, kind in shown_lines] + off)
    return fig


def zoomed(d: TrajectoryData) -> bool:
    """Whether the trajectory is drawn zoomed (:func:`zoom_top`)."""
    py = [ms for _, ms in d.points]
    return bool(py) and zoom_top(py, py[d.best] if d.best is not None else min(py)) is not None


def trajectory(d: TrajectoryData) -> str:
    return svg_text(trajectory_figure(d))


# --------------------------------------------------------------------------- bandwidth


@dataclass(frozen=True)
class BandwidthData:
    """What the bandwidth chart draws: one bar per version and per peer of the best version's run
    (label, GB/s, colour), the measured copy ceiling and the title's GPU."""

    rows: tuple[tuple[str, float, str], ...]
    copy_gbps: float | None
    gpu: str
    read_gbps: float | None = None  # the micro-benchmark's DRAM load stream (reading only), where measured


def bandwidth_data(s: AssignmentSummary) -> BandwidthData:
    """For work with no floating-point operations: each version's bandwidth (work-model bytes over
    its figure), the peers of the best version's run, and the measured copy ceiling."""
    c = s.ceilings
    rows = [(v.name + (f" (on {s.case_label(v)})" if s.case_label(v) else ""), v.figure.derived(c).gbps,
             VERSION_COLOR if not s.case_label(v) else OTHER_CASE_COLOR) for v in s.versions if v.figure is not None]
    best = s.best
    run = best.figure.run if best is not None and best.figure is not None else None
    if run is not None:
        rows += [(f"{p.name} (peer)", derive(run.work, t, c).gbps, PEER_COLOR) for p in timed_peers(run)
                 if (t := peer_ms(p))]
    from ..analysis.microbench import level_ceilings

    dram = [x.gbps for x in level_ceilings(s.microbench) if x.level == "DRAM"] if s.microbench is not None else []
    return BandwidthData(rows=tuple((n, float(g or 0.0), col) for n, g, col in rows),
                         copy_gbps=c.copy_gbps if c is not None else None, gpu=s.gpu,
                         read_gbps=dram[0] if dram else None)


def bandwidth_figure(d: BandwidthData) -> Figure:
    """The bars, horizontal, with their values; the copy ceiling as a vertical line."""
    plt = pyplot()
    rows = d.rows
    fig, ax = plt.subplots(figsize=(6.6, 0.26 * len(rows) + 1.2))
    if not rows:
        ax.text(0.5, 0.5, "no timed runs", ha="center", va="center", transform=ax.transAxes)
        return fig
    y = list(range(len(rows)))[::-1]
    ax.barh(y, [r[1] for r in rows], color=[r[2] for r in rows], height=0.62)
    ax.set_yticks(y, [r[0] for r in rows], fontsize=7.5)
    top = max([r[1] for r in rows] + [x for x in (d.copy_gbps, d.read_gbps) if x is not None])
    for yi, (_, g, _) in zip(y, rows, strict=True):
        if g >= 0.4 * top:  # inside the bar, at its end: the ceiling line near the longest bars never crosses it
            ax.text(g - top * 0.012, yi, f"{g:,.0f}", va="center", ha="right", fontsize=7, color="white")
        else:
            ax.text(g + top * 0.01, yi, f"{g:,.0f}", va="center", fontsize=7)
    if d.copy_gbps is not None:
        ax.axvline(d.copy_gbps, color=ROOF_COLOR, lw=1.2)
    if d.read_gbps is not None:
        ax.axvline(d.read_gbps, color=ROOF_COLOR, lw=1.0, ls="--")
    ax.set_xlim(0, top * 1.12)
    ax.set_xlabel("GB/s (work-model bytes / time), higher is better"
                  + (f"; black line: measured copy ceiling {d.copy_gbps:,.0f} GB/s" if d.copy_gbps is not None else "")
                  + (f"; dashed: measured DRAM load stream {d.read_gbps:,.0f} GB/s" if d.read_gbps is not None else ""))
    ax.set_title(f"Bandwidth against the copy ceiling ({d.gpu.upper()})")
    return fig


def bandwidth(d: BandwidthData) -> str:
    return svg_text(bandwidth_figure(d))
