"""`report build`: records + worklog.md -> reports/<assignment>/worklog.{html,pdf}."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..analysis.facts import binding_context
from ..analysis.summary import check_options, summarize
from ..assignments import Assignment
from ..outputs import check_target, place, stage
from ..records import gpu_slug
from . import ledger
from .book import APPENDIX, BODY, FRONT, Book, LabelledPart, Part, PartCache
from .cover import Cover
from .html import (Hooks, appendix_context, body_chunks, build_context, render_footers, render_html, steps_context,
                   worklog_warnings)
from .pdf import PdfError, Worker
from .worklog import Worklog, WorklogError, parse, read_meta


class ContradictionError(Exception):
    """The report would print one figure, ratio or verdict with two values (reporter.render.ledger)."""


@dataclass
class BuildResult:
    html: Path | None
    pdf: Path | None
    pages: int | None
    pdf_error: str | None
    warnings: list[str] = field(default_factory=list)
    title: str = ""
    cover: Cover | None = None  # the headline figures, for the index of `report build --all`
    gpu: str = ""


def default_hooks(chart_cache_dir: Path | None = None) -> Hooks:
    """Wire in the optional analyses that exist in this installation."""
    hooks = Hooks(cache_dir=chart_cache_dir)
    try:
        from ..analysis.diagnose import observe

        hooks.observations = lambda run, prev, ceilings: [(o.rule, o.text) for o in observe(run, prev, ceilings)]
    except ImportError:
        pass
    from ..analysis.hroofline import hierarchical_roofline
    from . import chart_cache

    def hroof(s):
        """The versions that set a new best time, each at its newest profile."""
        runs = [r for v in s.new_bests() if (r := v.profiled_run()) is not None]
        if len(runs) < 2 or not s.ceilings:
            return None

        def draw(d):
            from .profile_charts import roofline_svg

            return roofline_svg(*d)

        from ..analysis.microbench import level_ceilings

        streams = {c.level: c.gbps for c in level_ceilings(s.microbench)} if s.microbench is not None else None
        return chart_cache.svg("hroof", (hierarchical_roofline(runs, s.ceilings, streams), runs[0].device.name), draw,
                               chart_cache_dir)

    hooks.profile_chart = hroof
    return hooks


WORKERS = 2  # processes laying out the PDF's parts (the CI machine has two cores)


def cache_dir(repo_root: Path) -> Path | None:
    """Where rendered parts of the PDF are kept between builds: ``$REPORT_CACHE_DIR`` (empty: none),
    else ``.cache/report`` in the project."""
    env = os.environ.get("REPORT_CACHE_DIR")
    if env is not None:
        return Path(env) if env.strip() else None
    return repo_root / ".cache" / "report"


def _stale_note(pdf_path: Path) -> str:
    """What a failed PDF step leaves beside the new HTML: the previous build's PDF, or none."""
    import datetime as dt

    if not pdf_path.is_file():
        return ""
    when = dt.datetime.fromtimestamp(pdf_path.stat().st_mtime, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"; {pdf_path.name} beside it is the previous build's ({when}), older than the new HTML"


def build(a: Assignment, repo_root: Path, logs: Path, out_dir: Path, *, gpu: str | None = None,
          pdf: bool = True, html: bool = True, hooks: Hooks | None = None, anonymous: bool = False,
          case: str | None = None, only: list[str] | None = None, workers: list[Worker] | None = None,
          strict: bool = True) -> BuildResult:
    """Write ``worklog.html`` (unless ``html`` is false) and ``worklog.pdf`` (unless ``pdf`` is
    false) for one assignment into ``out_dir``: about ``case`` (default the benchmark case), for
    the versions in ``only`` (default all). ``workers`` lay out the PDF (default: started here).

    Before anything is written, the whole document is read back by the consistency check
    (:mod:`reporter.render.ledger`): a thing printed with two values raises :class:`ContradictionError`
    naming each (``strict``), or becomes a warning (not ``strict``)."""
    if not a.worklog_path.is_file():
        raise WorklogError(f"{a.worklog_path}: no worklog.md; `report new {a.name} <version>` creates one")
    # WeasyPrint's start-up overlaps the analysis below, in child processes on the other cores: both
    # for a first build, which lays out every part; one where this output was built before, whose
    # parts mostly come from the cache (the book starts the second if parts queue for it)
    # only regular files are replaced: a directory, link, FIFO or device where either output goes is
    # refused before anything is computed or written (reporter.outputs), naming that path
    html_path, pdf_path = out_dir / "worklog.html", out_dir / "worklog.pdf"
    for path, wanted in ((html_path, html), (pdf_path, pdf)):
        if wanted:
            check_target(path)
    check_options(a, logs, case, only)  # before the PDF workers start and the records are read
    own = workers is None and pdf
    cache = cache_dir(repo_root)
    built_before = PartCache(cache).labels(str(out_dir / "worklog.pdf")) is not None
    workers = [Worker() for _ in range(1 if built_before else WORKERS)] if own else (workers or [])
    staged: str | None = None
    try:
        # the worklog names its target GPU; records of other GPUs are never mixed into its figures
        target = gpu or read_meta(a.worklog_path).get("gpu")
        slug = gpu_slug(str(target)) if target else None
        s = summarize(a, logs, slug, case=case, only=only, cache=cache)
        # the worklog's prose cites every version on the benchmark case, whatever this report shows
        full = s if case in (None, a.benchmark_case) and not only else summarize(a, logs, s.gpu, cache=cache)
        wl: Worklog = parse(a.worklog_path, binding_context(full), cache)
        warnings = worklog_warnings(s, wl)
        hooks = hooks if hooks is not None else default_hooks(cache)
        app_ctx = appendix_context(s, wl, repo_root, hooks, anonymous=anonymous)
        out_dir.mkdir(parents=True, exist_ok=True)
        book = Book(workers, PartCache(cache), out_dir, most=WORKERS) if pdf else None
        if book is not None:  # laid out while the steps and charts are computed
            book.add(Part("appendix", render_html(app_ctx, "appendix", cache=cache), APPENDIX, position=1000))
        steps = steps_context(s, wl, repo_root, hooks, anonymous=anonymous, appendix_ctx=app_ctx)
        last = body_chunks(steps) - 1  # the phases of Part 1, then Parts 2 and 3
        if book is not None:  # the phases are laid out while the charts are drawn, the longest first
            chunks = [Part(f"body-{k}", render_html(steps, "body", chunk=k, cache=cache), BODY, position=1 + k) for k in range(last)]
            for part in sorted(chunks, key=lambda p: -len(p.html)):
                book.add(part)
        ctx = build_context(s, wl, repo_root, hooks, anonymous=anonymous, chart_cache_dir=cache, steps_ctx=steps)
        result = BuildResult(html_path if html else None, None, None, None, warnings, title=ctx["title"],
                             cover=ctx["cover"], gpu=ctx["gpu"])
        if book is not None:
            book.add(Part(f"body-{last}", render_html(ctx, "body", chunk=last, cache=cache), BODY, position=1 + last))
            book.add(Part("cover", render_html(ctx, "cover", cache=cache), FRONT, position=-2))
        page = render_html(ctx, cache=cache)
        found = ledger.contradictions(page)
        if found and strict:
            raise ContradictionError(f"{a.name}: the report would contradict itself ({len(found)}): "
                                     + "; ".join(str(c) for c in found)
                                     + " (report build --warn-contradictions builds it anyway)")
        result.warnings += [f"contradiction: {c}" for c in found]
        page = page if html else None
        # the HTML is written in full beside its place before the PDF is: when it cannot be (a full
        # disk), the PDF is not written either; once the PDF is done (or has failed) it is put in place
        staged = stage(html_path, page) if page is not None else None
        if book is not None:
            try:
                contents = LabelledPart("contents", lambda labels: render_html(ctx, "contents", labels, cache=cache), FRONT,
                                        position=-1, anchors=("contents", "steps"))
                result.pages = book.finish(contents, lambda texts: render_footers(ctx, texts, cache), pdf_path)
                result.pdf = pdf_path
            except PdfError as e:
                result.pdf_error = str(e) + _stale_note(pdf_path)
        # the HTML is written once the PDF is done (or has failed): a build stopped during the PDF
        # (Ctrl-C) leaves the previous HTML and PDF as they were, a pair; a failed PDF step still
        # leaves the new HTML, and the warning says the PDF beside it is the previous build's
        if staged is not None:
            place(staged, html_path)
            staged = None
        return result
    finally:
        if staged is not None:  # interrupted during the PDF: the previous pair stays, no temporary
            Path(staged).unlink(missing_ok=True)
        if own:
            for w in workers:
                w.close()
