"""`report build`: records + worklog.md -> reports/<assignment>/worklog.{html,pdf}."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .. import store
from ..analysis.facts import binding_context
from ..analysis.summary import summarize
from ..assignments import Assignment
from ..records import gpu_slug
from .html import Hooks, build_context, render_html, worklog_warnings
from .pdf import PdfError, PdfProcess
from .worklog import Worklog, WorklogError, parse, read_meta


@dataclass
class BuildResult:
    html: Path
    pdf: Path | None
    pages: int | None
    pdf_error: str | None
    warnings: list[str] = field(default_factory=list)


def default_hooks() -> Hooks:
    """Wire in the optional analyses that exist in this installation."""
    hooks = Hooks()
    try:
        from ..analysis.diff import compare_timing

        def verdict(a, b) -> tuple[str, str]:
            if not a.timed_like(b):  # held vs plain, ranked vs back to back: no test between them
                return "timed differently", f"not compared: timed differently ({a.way} vs {b.way})"
            v = compare_timing(a, b)
            return v.verdict, v.sentence

        hooks.verdict = verdict
    except ImportError:
        pass
    try:
        from ..analysis.diagnose import observe

        hooks.observations = lambda run, prev, ceilings: [(o.rule, o.text) for o in observe(run, prev, ceilings)]
    except ImportError:
        pass
    try:
        from .profile_charts import hierarchical_roofline_svg

        def hroof(s):
            """The versions that set a new best time, each at its newest profile."""
            runs, best = [], float("inf")
            for v in s.versions:
                if v.figure_ms is not None and v.figure_ms < best:
                    best = v.figure_ms
                    if (r := v.profiled_run()) is not None:
                        runs.append(r)
            return hierarchical_roofline_svg(runs, s.ceilings) if len(runs) > 1 and s.ceilings else None

        hooks.profile_chart = hroof
    except ImportError:
        pass
    return hooks


def build(a: Assignment, repo_root: Path, logs: Path, out_dir: Path, *, gpu: str | None = None,
          pdf: bool = True, hooks: Hooks | None = None, anonymous: bool = False) -> BuildResult:
    if not a.worklog_path.is_file():
        raise WorklogError(f"{a.worklog_path}: no worklog.md; `report new {a.name} <version>` creates one")
    # WeasyPrint's start-up overlaps the analysis below, in a child process on another core
    writer = PdfProcess() if pdf else None
    try:
        # the worklog names its target GPU; records of other GPUs are never mixed into its figures
        target = gpu or read_meta(a.worklog_path).get("gpu")
        s = summarize(a, logs, gpu_slug(str(target)) if target else None)
        wl: Worklog = parse(a.worklog_path, binding_context(s))
        warnings = worklog_warnings(s, wl)
        ctx = build_context(s, wl, repo_root, hooks if hooks is not None else default_hooks(), anonymous=anonymous)
        html_text = render_html(ctx)
        out_dir.mkdir(parents=True, exist_ok=True)
        html_path = out_dir / "worklog.html"
        store.write_atomic(html_path, html_text)
        if writer is None:
            return BuildResult(html_path, None, None, None, warnings)
        pdf_path = out_dir / "worklog.pdf"
        try:
            pages = writer.write(html_text, pdf_path, base_url=out_dir)
        except PdfError as e:
            return BuildResult(html_path, None, None, str(e), warnings)
        return BuildResult(html_path, pdf_path, pages, None, warnings)
    finally:
        if writer is not None:
            writer.close()
