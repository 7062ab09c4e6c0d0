"""`report build`: records + worklog.md -> reports/<assignment>/worklog.{html,pdf}."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .. import store
from ..analysis.facts import binding_context
from ..analysis.summary import summarize
from ..assignments import Assignment
from .html import Hooks, build_context, render_html
from .pdf import PdfError, write_pdf
from ..records import gpu_slug
from .worklog import Worklog, WorklogError, parse, read_meta


@dataclass
class BuildResult:
    html: Path
    pdf: Path | None
    pages: int | None
    pdf_error: str | None


def default_hooks() -> Hooks:
    """Wire in the optional analyses that exist in this installation."""
    hooks = Hooks()
    try:
        from ..analysis.diff import compare_timing

        def verdict(a, b) -> str:
            if not a.timed_like(b):  # held vs plain, ranked vs back to back: no test between them
                return f"not compared: timed differently ({a.way} vs {b.way})"
            return compare_timing(a, b).sentence

        hooks.verdict = verdict
    except ImportError:
        pass
    try:
        from ..analysis.diagnose import observe

        hooks.observations = lambda run, prev, ceilings: [o.text for o in observe(run, prev, ceilings)]
    except ImportError:
        pass
    try:
        from .text import format_metric_block

        hooks.profile_block = lambda run: (format_metric_block(run.profile)
                                           if run.profile is not None and run.profile.status == "ok" else None)
    except ImportError:
        pass
    try:
        from .profile_charts import hierarchical_roofline_svg

        def hroof(s):
            runs = [r for v in s.versions if (r := v.profiled_run()) is not None]
            return hierarchical_roofline_svg(runs, s.ceilings) if runs and s.ceilings else None

        hooks.extra_charts.append(("Hierarchical roofline from Nsight Compute: each version at its measured "
                                   "intensity at DRAM, L2 and L1.", hroof))
    except ImportError:
        pass
    return hooks


def build(a: Assignment, repo_root: Path, logs: Path, out_dir: Path, *, gpu: str | None = None,
          pdf: bool = True, hooks: Hooks | None = None) -> BuildResult:
    if not a.worklog_path.is_file():
        raise WorklogError(f"{a.worklog_path}: no worklog.md; `report new {a.name} <version>` creates one")
    # the worklog names its target GPU; records of other GPUs are never mixed into its figures
    target = gpu or read_meta(a.worklog_path).get("gpu")
    s = summarize(a, logs, gpu_slug(str(target)) if target else None)
    wl: Worklog = parse(a.worklog_path, binding_context(s))
    ctx = build_context(s, wl, repo_root, hooks if hooks is not None else default_hooks())
    html_text = render_html(ctx)
    out_dir.mkdir(parents=True, exist_ok=True)
    html_path = out_dir / "worklog.html"
    store.write_atomic(html_path, html_text)
    if not pdf:
        return BuildResult(html_path, None, None, None)
    pdf_path = out_dir / "worklog.pdf"
    try:
        pages = write_pdf(html_text, pdf_path, base_url=out_dir)
    except PdfError as e:
        return BuildResult(html_path, None, None, str(e))
    return BuildResult(html_path, pdf_path, pages, None)
