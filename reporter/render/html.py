"""The work-log report as one self-contained HTML file (styles and SVG charts inline).

``build_context`` turns the assignment summary and the bound worklog into plain values for
``report_templates/report.html.j2``; ``render_html`` renders it. The body tells the story once:
page 1 (how fast, against what, why we stopped), one table of all the steps, one short section
per step (structure, the lines that changed, the result, the work-log questions), Part 2 and
Part 3. Every other measurement goes to the appendix (:mod:`reporter.render.appendix`).

Every figure of a version is its standing figure (:mod:`reporter.standing`); a version is
compared with the previous one and with the peers timed in its own run, never with another run's.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup, escape

from ..analysis import keys
from ..analysis.compare import RULE as COMPARE_RULE
from ..analysis.compare import compare_peer, compare_versions
from ..analysis.diagnose import HOST_BOUND_WORDS
from ..analysis.listing import timed_peers
from ..analysis.summary import AssignmentSummary, VersionSummary
from ..records import DeviceCeilings, Run
from ..standing import figure as standing_figure
from ..worklog_sections import PLACEHOLDER, headings
from . import TEMPLATES, appendix, chart_cache, charts, code, ledger
from .against import Against
from .cover import cover, stopping_facts
from .numbers import ms, pct
from .worklog import Section, Worklog, WorklogError, inline_markdown, markdown_to_html

__all__ = ["Hooks", "build_context", "ms", "pct", "render_html"]

#: Answers that hold a place instead of answering (the scaffold's mark, a pointer elsewhere).
PLACEHOLDER_ANSWERS = re.compile(rf"{re.escape(PLACEHOLDER)}|^\s*(see below|see above|tbd|todo|\.\.\.|…)\s*\.?\s*$",
                                 re.IGNORECASE)


@dataclass
class Question:
    title: str
    markdown: str
    answered: bool

    @property
    def html(self) -> str:
        return markdown_to_html(self.markdown) if self.answered else ""

    @functools.cached_property
    def _split(self) -> tuple[str, str]:
        return split_lead(self.markdown) if self.answered else ("", "")

    @property
    def lead_html(self) -> str:
        """The answer's first paragraph (what the body prints; the rest is in the appendix)."""
        return markdown_to_html(self._split[0]) if self.answered else ""

    @functools.cached_property
    def rest_html(self) -> str:
        return markdown_to_html(self._split[1]) if self._split[1] else ""

    @property
    def lead_inline(self) -> str:
        """The lead as the inside of one paragraph, when it is one (the body then runs the question into
        it: 'What we concluded. The ping-pong …'); '' when it is a list, a table or several blocks."""
        html = self.lead_html.strip()
        if html.startswith("<p>") and html.endswith("</p>") and html.count("<p>") == 1:
            return html[3:-4]
        return ""


def _blocks(markdown: str) -> list[str]:
    """Markdown split into its blocks at blank lines, a fenced code block kept whole."""
    blocks: list[str] = []
    current: list[str] = []
    fenced = False
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if not line.strip() and not fenced:
            if current:
                blocks.append("\n".join(current))
                current = []
            continue
        current.append(line)
    if current:
        blocks.append("\n".join(current))
    return blocks


def split_lead(markdown: str) -> tuple[str, str]:
    """An answer's lead (its first block, with the next when the first ends with a colon and
    introduces it) and the rest: the body prints the lead, the appendix the rest."""
    blocks = _blocks(markdown.strip())
    if not blocks:
        return "", ""
    n = 2 if len(blocks) > 1 and blocks[0].rstrip().endswith(":") else 1
    return "\n\n".join(blocks[:n]), "\n\n".join(blocks[n:])


@dataclass
class Step:
    name: str
    short: str
    anchor: str
    structure_html: str
    change_html: str
    change_caption: str
    figure: str  # '12.93 ms' (marked) or '–'
    result: str  # the figure with how it was taken and its rate
    comparisons: list[Against]
    questions: list[Question]
    preface_html: str  # worklog text before the first question
    observations: list[str]
    vs_previous: Against | None = None  # the steps table's cell: the comparison with the previous version
    case: str = ""  # the headline case its figure is taken on, when not the report's (CASES_WHERE)
    not_compared: str = ""  # why there is no ratio against the previous version (no case in common, say)
    why_html: str = ""  # one line from the work log (steps table)
    failed: str | None = None
    notes_missing: bool = False


@dataclass
class Phase:
    """Consecutive steps under one title the worklog gives (front matter ``phases``: the version
    that opens each phase, and its title). Each phase starts on a page of its own and is one of
    the PDF's documents, so an edit lays out only its phase again (reporter.render.book)."""

    title: str  # '' for the steps before the first named phase, or for all when none is named
    anchor: str
    steps: list[Step]

    @property
    def span(self) -> str:
        return self.steps[0].short if len(self.steps) == 1 else f"{self.steps[0].short}–{self.steps[-1].short}"


def handin_of(meta: dict[str, Any], versions: list[str], path: Path) -> str | None:
    """The version the team hands in (front matter ``handin``: a version's name or vNN), or None."""
    spec = meta.get("handin")
    if spec is None:
        return None
    if not isinstance(spec, str) or not spec.strip():
        raise WorklogError(f"{path}: front matter 'handin' must name one version (its name or vNN), got {spec!r}")
    found = [v for v in versions if v == spec or v.split("_")[0] == spec]
    if len(found) != 1:
        raise WorklogError(f"{path}: front matter 'handin': no version '{spec}' in this assignment "
                           f"(have: {', '.join(versions)})")
    return found[0]


def phases_of(meta: dict[str, Any], steps: list[Step], versions: list[str], path: Path) -> list[Phase]:
    """The steps grouped by the worklog's front matter ``phases`` (version -> title, in order).
    ``versions``: every version of the assignment in order, shown or not (a phase whose opening
    version ``--only`` leaves out opens at its next shown one; a phase with no shown step is dropped)."""
    spec = meta.get("phases")
    if not spec:
        return [Phase("", "", steps)] if steps else []
    if not isinstance(spec, dict) or not all(isinstance(k, str) and isinstance(v, str) and v.strip()
                                             for k, v in spec.items()):
        raise WorklogError(f"{path}: front matter 'phases' must map the version that opens each phase to its "
                           "title, one per line (e.g. 'v06_wgmma: A hand-written wgmma kernel')")
    opens: list[tuple[int, str]] = []
    for handle, title in spec.items():
        i = next((k for k, name in enumerate(versions) if handle in (name, name.split("_", 1)[0])), None)
        if i is None:
            raise WorklogError(f"{path}: front matter 'phases': no version '{handle}' in this assignment "
                               f"(versions: {', '.join(versions)})")
        if opens and i <= opens[-1][0]:
            raise WorklogError(f"{path}: front matter 'phases': '{handle}' opens a phase before or with the phase "
                               "above it; list the phases in the order of their versions")
        opens.append((i, title.strip()))
    order = {name: k for k, name in enumerate(versions)}
    out = [Phase("", "", [])]
    bounds = [k for k, _ in opens]
    for st in steps:
        n = sum(1 for b in bounds if order.get(st.name, 0) >= b)  # phases opened at or before this step
        while len(out) <= n:
            out.append(Phase(opens[len(out) - 1][1], f"phase-{len(out)}", []))
        out[n].steps.append(st)
    return [ph for ph in out if ph.steps]


@dataclass
class Hooks:
    """Optional analysis plugged in by the caller (kept optional so the renderer never
    depends on which analyses exist)."""

    observations: Any = None  # (Run, Run | None, DeviceCeilings | None) -> list[(rule, text)]
    profile_chart: Callable[[AssignmentSummary], str | None] | None = None
    cache_dir: Path | None = None  # where computed excerpts are kept between builds (None: recomputed)


# --------------------------------------------------------------------------- the work log's words


def questions_of(section: Section | None) -> tuple[str, list[Question]]:
    """A version's worklog section split at its ``###`` questions: the markdown before the first,
    and each question with its answer (``answered`` False for an empty answer or a placeholder)."""
    if section is None:
        return "", []
    text = section.markdown
    lines = text.splitlines()
    qs = [h for h in headings(text) if h.level == 3]
    first = qs[0].line if qs else len(lines)
    preface = "\n".join(lines[:first]).strip()
    out = []
    for k, h in enumerate(qs):
        end = qs[k + 1].line if k + 1 < len(qs) else len(lines)
        body = "\n".join(lines[h.line + 1: end]).strip()
        answered = bool(body) and not PLACEHOLDER_ANSWERS.search(body)
        out.append(Question(h.title, body, answered))
    return preface, out


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(`*])")


def first_sentences(markdown: str, at_least: int = 50) -> str:
    """The first sentence of the first paragraph (with the next while shorter than ``at_least``
    characters), as inline HTML."""
    from markdown_it import MarkdownIt

    para = next((p for p in re.split(r"\n\s*\n", markdown.strip()) if p.strip() and not p.lstrip().startswith(
        ("#", "```", "|", ">"))), "")
    para = " ".join(para.split())
    parts = _SENTENCE_END.split(para)
    out = ""
    for p in parts:
        out = f"{out} {p}".strip()
        if len(out) >= at_least:
            break
    return MarkdownIt("commonmark", {"typographer": True}).renderInline(out)


def _concluded(qs: list[Question], section: Section | None) -> str:
    """The steps table's line of why: the start of 'What we concluded' (or of the first question,
    or of the section when it has none)."""
    if section is None:
        return ""
    pick = next((q for q in qs if q.title.lower().startswith("what we concluded")), qs[0] if qs else None)
    if pick is None:
        return first_sentences(section.markdown)
    return first_sentences(pick.markdown) if pick.answered else ""


# --------------------------------------------------------------------------- one step

def _against(v: VersionSummary, other: VersionSummary, kind: str, report_case: str = "") -> Against | None:
    """``v`` against another version (reporter.analysis.compare: the one comparison); ``report_case``: the
    report's case, which the line names when the comparison is taken on another one."""
    c = compare_versions(v, other)
    if c is None:
        return None
    assert c.pair is not None
    return Against(kind, c, host=_host_words([(other.short, c.pair.theirs), (v.short, c.pair.mine)]),
                   report_case=report_case)


def _not_compared(v: VersionSummary, prev: VersionSummary | None) -> str:
    """Why the steps table prints no ratio against the previous version ('' when it prints one or there is
    no previous version): the two run no benchmark case in common, or one has no figure on the one they share."""
    if prev is None or v.figure is None:
        return ""
    case = v.common_case(prev)
    if case is None:
        return f"no case in common with {prev.short}"
    if compare_versions(v, prev) is None:
        return f"{prev.short} has no figure on {case}" if standing_figure(prev.runs.get(case)) is None else \
            f"{v.short} has no figure on {case}"
    return ""


def _host_words(sides: list[tuple[str, Run]]) -> str:
    """Which side of a comparison measured the host (its samples follow the host's queuing time:
    :func:`reporter.analysis.diagnose.host_bound`), so a ratio it decides is not read as the kernels'."""
    from ..analysis.diagnose import host_bound

    names = [name for name, run in sides if host_bound(run)]
    if not names:
        return ""
    return f"host-bound: {', '.join(names)}"


def _comparisons(v: VersionSummary, s: AssignmentSummary) -> list[Against]:
    """The version against the previous one, the first one, and the peers of its own run: the first
    row, when there is a previous version, is the steps table's."""
    if v.figure_ms is None or v.bench is None:
        return []
    out: list[Against] = []
    prev = s.previous(v)
    if prev is not None and (c := _against(v, prev, "previous version", s.benchmark_case)) is not None:
        out.append(c)
    first = next((x for x in s.versions if x.figure_ms), None)
    if first is not None and first is not v and first is not prev:
        if (c := _against(v, first, "first version", s.benchmark_case)) is not None:
            out.append(c)
    for p in timed_peers(v.bench):
        if (pc := compare_peer(v.bench, p)) is not None:
            out.append(Against("peer, same run", pc, report_case=s.benchmark_case))
    return out


def _result(v: VersionSummary, ceilings: DeviceCeilings | None, case_label: str = "") -> Markup | str:
    fig = v.figure
    if fig is None:
        return ""
    d = fig.derived(ceilings)
    rate = f"{d.tflops:,.1f} TFLOP/s" if fig.run.work.flops else f"{d.gbps:,.0f} GB/s"
    roof = f", {pct(d.fraction_of_ceiling)} of the measured roof" if d.fraction_of_ceiling is not None else ""
    figure = ledger.mark(keys.fig(v.name, v.benchmark_case), ms(fig.ms))
    on = f" on {escape(case_label)}, the first benchmark case it runs (CASES_WHERE)" if case_label else ""
    stale = (f' <span class="bad">Measured on earlier code (<a href="#how-{escape(v.name)}">appendix B</a>).</span>'
             if not v.code(fig.run).stands else "")
    return Markup(f"{figure}{on}: {rate}{roof}.{stale}")


@dataclass
class Detail:
    """Appendix G: one step's notes beyond the answers' leads."""

    name: str
    anchor: str
    parts: list[tuple[str, str]]  # (question, the rest of its answer as HTML)


def _details(s: AssignmentSummary, wl: Worklog) -> list[Detail]:
    out = []
    for v in s.versions:
        _, qs = questions_of(wl.versions.get(v.short))
        parts = [(q.title, q.rest_html) for q in qs if q.rest_html]
        if parts:
            out.append(Detail(v.name, v.name, parts))
    return out


def _observations(s: AssignmentSummary, hooks: Hooks) -> dict[str, list[str]]:
    """What the measurements say about each version, each kind of observation said once: a rule
    that fired for the previous version is not repeated unless its wording changed beyond numbers."""
    if not hooks.observations:
        return {}
    out: dict[str, list[str]] = {}
    said: set[str] = set()  # rule and wording with the numbers masked

    def shape(text: str) -> str:
        return re.sub(r"[\d.,]+", "#", text)

    for v in s.versions:
        bench = v.bench
        if bench is None:
            continue
        prof = v.profiled_run()
        run = bench.model_copy(update={"profile": prof.profile}) if prof else bench
        prev = s.previous(v)
        prev_run = None
        # the previous version's run on this one's headline case: what the observations set side by side
        # is one case, as every comparison is
        prev_bench = prev.runs.get(v.benchmark_case) if prev is not None and \
            v.benchmark_case in prev.headline_cases else None
        if prev is not None and prev_bench is not None:
            pp = prev.profiled_run(v.benchmark_case)
            prev_run = prev_bench.model_copy(update={"profile": pp.profile}) if pp else prev_bench
        mine = []
        for rule, text in hooks.observations(run, prev_run, s.ceilings):
            if rule in ("roof", "change", "timing-crosscheck"):  # the result and its comparisons say these
                continue
            key = f"{rule}:{shape(text)}"
            if key in said:
                continue
            said.add(key)
            mine.append(text)
        out[v.name] = mine
    return out


def _step(v: VersionSummary, s: AssignmentSummary, wl: Worklog, repo_root: Path,
          observations: list[str], compared: list[Against], cache: Path | None = None) -> Step:
    earlier = [x.version for x in s.versions if x.version.number < v.version.number]
    change = code.key_change_cached(v.version, earlier, repo_root, cache)
    name = Path(change.path).name
    prev = Path(change.against).name if change.against else ""
    if change.excerpt is not None and change.against is not None:
        ex = change.excerpt
        caption = (f"<code>{name}</code> keeps one path of <code>{prev}</code> ({change.removed} lines removed, "
                   f"{change.edited} edited); what it keeps, from line {ex.first_line}:")
    elif change.excerpt is not None and change.brought:
        ex = change.excerpt
        caption = (f"<code>{escape(change.brought)}</code> in <code>{Path(ex.path).name}</code>, the helper this "
                   f"version is the first to run, from line {ex.first_line}:")
    elif change.excerpt is not None:
        ex = change.excerpt
        caption = f"Key code of <code>{Path(ex.path).name}</code>, new in this version, from line {ex.first_line}:"
    else:
        caption = (f"What changed in <code>{name}</code> against <code>{prev}</code>: "
                   + (f"{change.shown} of {change.total} changed lines" if change.shown < change.total
                      else f"all {change.total} changed lines") + ".")
    section = wl.versions.get(v.short)
    preface, qs = questions_of(section)
    bench = v.bench
    failed = None
    if not v.headline_cases:
        failed = (f"it runs none of the report's cases ({', '.join(s.headline_cases)}): CASES_WHERE "
                  f"{v.cases_where!r} in {v.version.path.name}")
    elif bench is None:
        failed = f"no run on {_case_words(s, v)} recorded for this GPU"
    elif not bench.ok:  # a failed check says so once (the run's error repeats "not timed" before the message)
        check = bench.check
        failed = (f"the check failed, {check.message}" if check is not None and not check.passed
                  else bench.error or "the run recorded no timing")
    comps = compared
    vs_prev = comps[0] if comps and comps[0].kind == "previous version" else None
    doc = _structure(v.version.docstring() or "")
    return Step(
        name=v.name, short=v.short, anchor=v.name,
        structure_html=markdown_to_html(doc or "*(no docstring)*"),
        change_html=change.html(), change_caption=caption,
        figure=ledger.mark(keys.fig(v.name, v.benchmark_case), ms(v.figure_ms)) if v.figure_ms else "–",
        case=s.case_label(v), result=_result(v, s.ceilings, s.case_label(v)), comparisons=comps,
        not_compared=_not_compared(v, s.previous(v)) if vs_prev is None else "",
        questions=qs, preface_html=markdown_to_html(preface) if preface else "",
        observations=[Markup(inline_markdown(o)) for o in observations], vs_previous=vs_prev,
        why_html=_concluded(qs, section), failed=failed, notes_missing=section is None,
    )


def _case_words(s: AssignmentSummary, v: VersionSummary) -> str:
    """'the benchmark case', or 'the big_half case' for a version whose headline case is another."""
    return s.case_words if v.benchmark_case == s.benchmark_case else f"the {v.benchmark_case} case"


STRUCTURE_CHARS = 360  # a step's "how the code is structured": the docstring's opening, about five lines


def _structure(doc: str, limit: int = STRUCTURE_CHARS) -> str:
    """A docstring as the step's structure: Sphinx roles as code, without the paragraphs that state
    a hypothesis (the work log's Hypothesis says it, once), and cut at a sentence after about
    ``limit`` characters (the whole docstring is in the source the excerpt names)."""
    doc = re.sub(r":(?:class|func|data|mod|meth|attr):`~?([^`]+)`", r"`\1`", doc)
    paras = [p for p in re.split(r"\n\s*\n", doc.strip())
             if not re.match(r"\s*(the )?hypothes[ie]s\b", p, re.IGNORECASE)]
    kept: list[str] = []
    used = 0
    for p in paras:
        if used + len(p) <= limit:
            kept.append(p)
            used += len(p)
            continue
        sentences = re.split(r"(?<=[.:;])\s+(?=[A-Z(`*])", p)
        # a paragraph's label ("Structure:") is not a clause of its own: it stays with what it introduces
        for i in range(len(sentences) - 2, -1, -1):
            if re.fullmatch(r"[\w ]{1,24}:", sentences[i]):
                sentences[i:i + 2] = [f"{sentences[i]} {sentences[i + 1]}"]
        part = ""
        for sentence in sentences:
            if used + len(part) + len(sentence) > limit and (part or kept):
                break
            part = f"{part} {sentence}".strip()
        if part:
            kept.append(part[:-1] + "." if part.endswith((";", ":")) else part)  # cut after a clause: end it as a sentence
        break
    return "\n\n".join(kept)


# --------------------------------------------------------------------------- the worklog checked


def worklog_warnings(s: AssignmentSummary, wl: Worklog) -> list[str]:
    """What the people's text is missing or holds by mistake: sections for versions that do not
    exist, versions without a section, questions left unanswered, closing sections missing."""
    path = wl.path
    known = {v.short: v.name for v in s.versions}
    left_out = {name.split("_", 1)[0] for name in s.left_out}  # report build --only: not a mistake
    out = []
    for short, sec in wl.versions.items():
        if short not in known and short not in left_out:
            out.append(f"{path}:{sec.line}: section '## {sec.title}' names no version of {s.assignment.name} "
                       f"(have {', '.join(known.values()) or 'none'}); it is left out of the report")
    for short, name in known.items():
        sec = wl.versions.get(short)
        if sec is None:
            out.append(f"{path}: no section '## {name}': the report says so on its page")
            continue
        _, qs = questions_of(sec)
        for q in qs:
            if not q.answered:
                out.append(f"{path}:{sec.line}: {name}: '{q.title}' is not answered (empty, a pointer or "
                           f"'{PLACEHOLDER}'); the report prints 'not answered'")
    if wl.stopped is None:
        out.append(f"{path}: no '## Why we stopped' section")
    if wl.llms is None:
        out.append(f"{path}: no '## How LLMs helped' section")
    if not wl.authors:
        out.append(f"{path}: the front matter names no authors")
    return out


# --------------------------------------------------------------------------- the whole report


def head_context(s: AssignmentSummary, wl: Worklog, repo_root: Path, *, anonymous: bool = False) -> dict[str, Any]:
    """What every part of the report shows around its content: title, authors, GPU, dates, case."""
    dev = s.device
    return {
        "title": wl.title or s.assignment.title,
        "subtitle": s.assignment.title if wl.title and wl.title != s.assignment.title else "",
        "assignment": s.assignment.name,
        "course": str(wl.meta.get("course") or ""),
        "authors": [] if anonymous else wl.authors,
        "anonymous": anonymous,
        "gpu": dev.name if dev else s.gpu,
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "last_run": max(r.created_utc for v in s.versions for r in v.runs.values()).strftime("%Y-%m-%d"),
        "benchmark_case": s.benchmark_case,
        "benchmark_shape": _shape(s),
        "case_words": s.case_words,
        "assignment_case": s.assignment.benchmark_case,
        "other_headlines": s.headline_cases[1:],  # cases some versions' figures are taken on (CASES_WHERE)
        "left_out": s.left_out,
        "code_css": code.css(),
        "worklog_path": str(wl.path.relative_to(repo_root)) if wl.path.is_relative_to(repo_root) else str(wl.path),
    }


def appendix_context(s: AssignmentSummary, wl: Worklog, repo_root: Path, hooks: Hooks | None = None, *,
                     anonymous: bool = False) -> dict[str, Any]:
    """Everything the appendix shows, without the steps' prose and charts: the PDF's appendix is
    laid out while the rest of the context is computed. ``compared`` (each version against the
    previous one, the first and its run's peers) is reused by :func:`build_context`."""
    hooks = hooks or Hooks()
    flops = any(v.figure is not None and v.figure.run.work.flops for v in s.versions)
    compared = {v.name: _comparisons(v, s) for v in s.versions}
    return {
        **head_context(s, wl, repo_root, anonymous=anonymous),
        "compared": compared,
        "verdicts": compared,
        "compare_rule": COMPARE_RULE,
        "host_bound_words": HOST_BOUND_WORDS,
        "case_rows": appendix.case_rows(s),
        "rate_unit": "TFLOP/s" if flops else "GB/s",
        "how_taken": appendix.how_taken(s),
        "proven_note": appendix.proven_note(s),
        "roofline": _roofline(s, hooks) if flops else None,
        "common_how": appendix.common_how(s),
        "details": _details(s, wl),
        "profile_headers": appendix.profile_headers(s),
        "profile_rows": appendix.profile_table(s),
        "profile_note": appendix.PROFILE_NOTES[s.assignment.profile_block],
        "profile_second": "case" if s.assignment.profile_block == "ee7722" else "kernel",
        "sweeps": [sv for v in s.versions if (sv := appendix.sweep_view(v)) is not None],
        "device_lines": appendix.device(s),
        "ceilings": appendix.ceilings_view(s),
        "microbench": appendix.microbench_view(s),
        "method": appendix.method_view(s),
        "commands": appendix.commands(s),
        "records": appendix.records(s),
    }


def steps_context(s: AssignmentSummary, wl: Worklog, repo_root: Path, hooks: Hooks | None = None, *,
                  anonymous: bool = False, appendix_ctx: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the phases of Part 1 show (the introduction, the steps, the phases): enough to lay them
    out before the charts are drawn. ``appendix_ctx``: :func:`appendix_context` of this build."""
    hooks = hooks or Hooks()
    ctx = appendix_ctx if appendix_ctx is not None else appendix_context(s, wl, repo_root, hooks, anonymous=anonymous)
    observed = _observations(s, hooks)
    steps = [_step(v, s, wl, repo_root, observed.get(v.name, []), ctx["compared"][v.name], hooks.cache_dir)
             for v in s.versions]
    return {
        **ctx,
        "steps": steps,
        "phases": phases_of(wl.meta, steps, [v.name for v in s.assignment.versions()], wl.path),
        "front": [{"title": sec.title, "html": markdown_to_html(sec.markdown)} for sec in wl.front],
    }


def _roofline(s: AssignmentSummary, hooks: Hooks) -> dict[str, str] | None:
    """The hierarchical roofline of the versions that set a new best time, with its caption (appendix C)."""
    if hooks.profile_chart is None:
        return None
    svg = hooks.profile_chart(s)
    if not svg:
        return None
    unprofiled = [v.name for v in s.new_bests() if v.profiled_run() is None]
    return {"svg": svg, "caption": (
        "Hierarchical roofline from Nsight Compute, for the versions that set a new best time"
        + (f" and were profiled ({', '.join(unprofiled)} {'was' if len(unprofiled) == 1 else 'were'} not)"
           if unprofiled else "") + ": each at its measured intensity at DRAM, L2 and L1 and at the rate of its "
        "profiled launch (flops over the launch's duration under the profiler, one launch: higher than the "
        "version's figure, which is a mean over back-to-back calls at the card's power cap).")}


def build_context(s: AssignmentSummary, wl: Worklog, repo_root: Path, hooks: Hooks | None = None, *,
                  anonymous: bool = False, chart_cache_dir: Path | None = None,
                  appendix_ctx: dict[str, Any] | None = None, steps_ctx: dict[str, Any] | None = None
                  ) -> dict[str, Any]:
    """Everything the template shows; the charts are drawn, or taken from ``chart_cache_dir``.
    ``appendix_ctx``, ``steps_ctx``: :func:`appendix_context`, :func:`steps_context` of this build."""
    hooks = hooks or Hooks()
    ctx = steps_ctx if steps_ctx is not None else steps_context(s, wl, repo_root, hooks, anonymous=anonymous,
                                                                appendix_ctx=appendix_ctx)
    handin = handin_of(wl.meta, [v.name for v in s.assignment.versions()], wl.path)
    handin = handin if any(v.name == handin for v in s.versions) else None  # left out by --only: not shown
    c = cover(s, handin)
    stop_summary = ""
    if wl.stopped is not None:
        stop_summary = first_sentences(wl.stopped.markdown, at_least=120)
    overview = []
    if ctx["rate_unit"] == "TFLOP/s":
        pass  # the roofline is in appendix C, beside the profiles it is drawn from (_roofline)
    elif ctx["rate_unit"] != "TFLOP/s":
        overview.append({"svg": chart_cache.svg("bandwidth", charts.bandwidth_data(s), charts.bandwidth,
                                                chart_cache_dir), "caption": (
            "Bandwidth of each version (the work model's bytes over its figure) against the measured copy "
            "ceiling; the peers are those timed in the best version's own run. The work model counts the bytes "
            "moved; the arithmetic done on each element on the way through (transcendental functions included) "
            "is real work that the model does not count, so each version is set against the copy ceiling rather "
            "than a FLOP roofline.")})
    traj = charts.trajectory_data(s)
    return {
        **ctx,
        "cover": c,
        "stop_summary": stop_summary,
        "chart_trajectory": chart_cache.svg("trajectory", traj, charts.trajectory, chart_cache_dir),
        "trajectory_zoomed": charts.zoomed(traj),
        "stopped_html": markdown_to_html(wl.stopped.markdown) if wl.stopped else "",
        "llms_html": markdown_to_html(wl.llms.markdown) if wl.llms else "",
        "stop": stopping_facts(s, handin),
        "overview": overview,
    }


def _shape(s: AssignmentSummary) -> str:
    case = next((r.case for v in s.versions for r in v.runs.values() if r.case_name == s.benchmark_case), {})
    return ", ".join(f"{k}={v}" for k, v in case.items() if k != "seed") + (
        f"; seed {case['seed']}" if "seed" in case else "")


#: The PDF's documents (reporter.render.book): page 1, the rest of the front matter (the contents and the steps
#: table, laid out once the others' page numbers are known), the body in chunks, the appendix.
PARTS = ("cover", "contents", "body", "appendix")


@functools.cache
def _environment(cache: Path | None) -> jinja2.Environment:
    """The report's templates, compiled once per build and kept compiled under ``cache``."""
    return jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=jinja2.select_autoescape(["html", "j2"]),
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                              bytecode_cache=chart_cache.template_bytecode(cache, __file__))


@functools.cache
def _template(cache: Path | None = None) -> tuple[jinja2.Template, str]:
    return _environment(cache).get_template("report.html.j2"), (TEMPLATES / "report.css").read_text(encoding="utf-8")


def body_chunks(context: dict[str, Any]) -> int:
    """How many documents the PDF's body is laid out as: one per phase (the first with the
    introduction), then Part 2 and Part 3."""
    return max(1, len(context.get("phases", []))) + 1


def render_html(context: dict[str, Any], part: str | None = None, labels: dict[str, str] | None = None,
                chunk: int | None = None, cache: Path | None = None) -> str:
    """The report as one HTML file (``part=None``), or one of the PDF's :data:`PARTS`; the
    contents prints ``labels`` (anchor -> printed page number) where given. The body is
    laid out in :func:`body_chunks` documents: ``chunk`` says which (default all). ``cache``: where
    the compiled template is kept between builds."""
    if part is not None and part not in PARTS:
        raise ValueError(f"part must be one of {PARTS}, not {part!r}")
    n = body_chunks(context)
    if chunk is not None and (part != "body" or not 0 <= chunk < n):
        raise ValueError(f"chunk {chunk!r}: only the body has chunks, 0 to {n - 1}")
    template, css = _template(cache)
    return template.render(**context, css=css, part=part, labels=labels or {}, chunk=chunk,
                           shown_phases=range(n - 1) if chunk is None else [chunk] if chunk < n - 1 else [],
                           show_intro=chunk in (None, 0), show_tail=chunk in (None, n - 1))


def render_footers(context: dict[str, Any], footers: list[str], cache: Path | None = None) -> str:
    """A document of ``len(footers)`` pages with nothing but each page's footer, in the report's page
    box: the binding stamps it onto the parts' pages (reporter.render.book), so that no part's layout
    depends on how many pages the others have."""
    _, css = _template(cache)
    return _environment(cache).get_template("footers.html.j2").render(css=css, footers=footers,
                                                                      title=context["title"])
