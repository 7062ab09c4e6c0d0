"""`report history`: every run of one version over time: median and CI, GPU, commit, code, and
whether it moved."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..render.tables import history_table
from .common import CaseOpt, GpuFilterOpt, LogsOpt, RootOpt, console, fail, project_paths, user_errors

if TYPE_CHECKING:
    from ..records import Run

NAME = "history"


def command(
    assignment: Annotated[str, typer.Argument(help="folder name under kernels/")],
    version: Annotated[str, typer.Argument(help="version name or vNN")],
    case: CaseOpt = None,
    gpu: GpuFilterOpt = None,
    chart: Annotated[Path | None, typer.Option(
        "--chart", metavar="PATH.svg", help="also draw the medians over time as an SVG")] = None,
    force: Annotated[bool, typer.Option(
        "--force", help="with --chart: replace an existing file that differs from this chart")] = False,
    root: RootOpt = None, logs: LogsOpt = None,
) -> None:
    """Every run of one version over time: median and CI, GPU, commit, code, and whether it moved."""
    from ..lookup import candidate_runs, check_assignment, headline_case, resolve_version

    _, kernels, logs_dir = project_paths(root, logs)
    if chart is not None and chart.suffix.lower() != ".svg":
        fail(f"--chart {chart}: the chart is written as SVG, give a path ending in .svg")
    try:
        check_assignment(kernels, logs_dir, assignment)
        name = resolve_version(kernels, logs_dir, assignment, version)
        on_case = case or headline_case(kernels, logs_dir, assignment, name)  # the case its figure is taken on
        found = candidate_runs(logs_dir, assignment, name, on_case, gpu, kernels=kernels)
    except user_errors() as e:
        fail(str(e))
        return
    console.print(history_table(assignment, name, on_case, found, console.width))
    if chart is not None:
        from ..outputs import OutputError, write_output

        try:  # only a regular file, one that differs only with --force (reporter.outputs)
            write_output(chart, _history_chart(found, f"{assignment} {name} · {on_case}"), force=force)
        except OutputError as e:
            fail(f"--chart {e}")
            return
        console.print(f"chart written to {chart}", highlight=False)



def _history_chart(found: list[Run], title: str) -> bytes:
    """The chart as SVG, the same bytes for the same runs (no date, fixed ids): a chart drawn again
    is recognised as the same file."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..analysis.stats import median_ci

    timed = [r for r in found if r.timing is not None]
    fig, ax = plt.subplots(figsize=(7, 3.2), layout="constrained")
    for gpu in dict.fromkeys(r.device.slug for r in timed):
        xs, ys, lo, hi = [], [], [], []
        for i, r in enumerate(timed):
            if r.device.slug != gpu:
                continue
            ci = median_ci(r.timing.samples_ms)  # type: ignore[union-attr]
            med = r.timing.median_ms  # type: ignore[union-attr]
            xs.append(i)
            ys.append(med)
            lo.append(med - ci.low_ms)
            hi.append(ci.high_ms - med)
        ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o", capsize=4, label=gpu)
    ax.set_xticks(range(len(timed)), [r.created_utc.strftime("%m-%d\n%H:%M") for r in timed], fontsize=8)
    ax.set_ylabel("median (ms) and its CI")  # 99 %, or [min, max] when the samples are too few
    ax.set_xlabel("run (UTC)", fontsize=8)
    ax.margins(x=0.08)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    if len({r.device.slug for r in timed}) > 1:
        ax.legend(fontsize=8)
    import io

    buf = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": "report history"}):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    plt.close(fig)
    return buf.getvalue()
