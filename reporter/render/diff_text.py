"""A diff of two runs (:class:`reporter.analysis.diff.RunDiff`) as text: which figures to show,
how to print a figure and a change, and the Markdown and HTML pages of ``report diff``."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ..analysis.diff import FigureDelta, RunDiff, format_ms, format_ms_range
from . import TEMPLATES

# A profile holds hundreds of metrics; the renderings show the ones that moved most.
PROFILE_FIGURES_SHOWN = 25


@dataclass(frozen=True)
class FigureSelection:
    shown: list[FigureDelta]
    hidden_moved: int  # profiler metrics that changed but fell outside the limit
    hidden_unchanged: int  # profiler metrics equal in both runs

    @property
    def note(self) -> str:
        parts = []
        if self.hidden_moved:
            parts.append(f"{self.hidden_moved} more profiler {_plural(self.hidden_moved, 'metric')} moved less")
        if self.hidden_unchanged:
            parts.append(f"{self.hidden_unchanged} {'is' if self.hidden_unchanged == 1 else 'are'} unchanged")
        return "; ".join(parts) + ("; --figures 0 or --format json shows all" if parts else "")


def _plural(n: int, word: str) -> str:
    return word if n == 1 else word + "s"


def select_figures(d: RunDiff, profile_limit: int = PROFILE_FIGURES_SHOWN) -> FigureSelection:
    """Every derived, check and peer figure; of the profiler metrics, the ``profile_limit`` that
    moved most (0: all), the unchanged ones counted rather than listed."""
    shown, moved, unchanged = [], 0, 0
    for f in d.figures:  # already most moved first
        if not f.group.startswith("profile"):
            shown.append(f)
        elif f.rel_change == 0:
            unchanged += 1
        elif profile_limit and moved >= profile_limit:
            moved += 1
        else:
            shown.append(f)
            moved += 1
    hidden_moved = max(moved - profile_limit, 0) if profile_limit else 0
    return FigureSelection(shown, hidden_moved, unchanged)


def _pct(x: float | None) -> str:
    if x is None:
        return "new"
    if x == 0:
        return "="
    return f"{x * 100:+.1f}%" if x < 1 else f"{x + 1:.2f}×"


def _num(x: float) -> str:
    if x == 0 or 1e-3 <= abs(x) < 1e6:
        return f"{x:,.4g}" if abs(x) >= 1e3 else f"{x:.4g}"
    return f"{x:.3e}"


# units whose values figure_value writes with their own unit (so labels leave it out)
SELF_UNITS = frozenset({"of ceiling", "ms", "ns", "nsecond", "byte", "bytes", "%"})


def figure_value(x: float | str, unit: str) -> str:
    """A figure for people: ncu's base units made readable (ns as µs/ms, bytes as MB/GB)."""
    if isinstance(x, str):
        return x
    if unit == "of ceiling":
        return f"{x * 100:.1f}%"
    if unit == "%":
        return f"{x:.1f}%"
    if unit == "ms":
        return format_ms(x)
    if unit in ("ns", "nsecond"):
        return format_ms(x / 1e6)
    if unit in ("byte", "bytes"):
        for scale, name in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
            if abs(x) >= scale:
                return f"{x / scale:,.2f} {name}"
        return f"{x:,.0f} B"
    return _num(x)


def figure_label(f: FigureDelta) -> str:
    return f.title if not f.unit or f.unit in SELF_UNITS else f"{f.title} ({f.unit})"


def rel_change_text(rel: float | None) -> str:
    """+3.2% for small moves, '8.9×' for large ones (a ratio reads better than +788%)."""
    return _pct(rel)


def run_date(t: datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M")


def diff_markdown(d: RunDiff, profile_limit: int = PROFILE_FIGURES_SHOWN) -> str:
    """The diff as GitHub-flavoured markdown (a PR comment, a CI summary)."""
    parts = [_md_header(d), _md_timing(d), _md_figures(d, profile_limit), _md_code(d), _md_notes(d)]
    return "\n".join(line for part in parts for line in part).rstrip("\n") + "\n"


def _md_header(d: RunDiff) -> list[str]:
    a, b = d.a, d.b
    case = a.case_name + (f" → {b.case_name}" if b.case_name != a.case_name else "")
    out = [f"# {a.assignment}: {a.version} → {b.version} ({case})", "",
           "| | version | run | GPU | commit | code |", "| --- | --- | --- | --- | --- | --- |"]
    for side, r in (("A", a), ("B", b)):
        dirty = " (dirty)" if r.git_dirty else ""
        out.append(f"| {side} | {r.version} | `{r.run_id}` | {r.gpu} | `{r.git_commit}`{dirty} | `{r.code_digest}` |")
    out.append("")
    out += [f"> **⚠ not apples to apples:** {w}" for w in d.warnings] + ([""] if d.warnings else [])
    return out


def _md_timing(d: RunDiff) -> list[str]:
    v = d.verdict
    remarks = [f"- {r}" for r in d.remarks] + ([""] if d.remarks else [])
    if v is None:
        return [f"*{d.timing_note}*", "", *remarks]
    out = [f"**{v.sentence}**", "", "| timing | A | B | change | ratio B/A |", "| --- | ---: | ---: | ---: | ---: |"]
    for row in d.timing_rows:
        fa, fb = (format_ms(row.a, 5), format_ms(row.b, 5)) if row.unit == "ms" else (f"{row.a:g}", f"{row.b:g}")
        ratio = f"{row.b / row.a:.3f}" if row.a else "—"
        out.append(f"| {row.name} | {fa} | {fb} | {_pct(row.rel_change)} | {ratio} |")
    return out + [""] + remarks


def _md_figures(d: RunDiff, profile_limit: int) -> list[str]:
    selection = select_figures(d, profile_limit)
    out: list[str] = []
    if selection.shown:
        out += ["## Figures, most moved first", "", "| group | figure | A | B | change |",
                "| --- | --- | ---: | ---: | ---: |"]
        out += [f"| {f.group} | {figure_label(f)} | {figure_value(f.a, f.unit)} | {figure_value(f.b, f.unit)} "
                f"| {_pct(f.rel_change)} |" for f in selection.shown]
        out.append("")
    if selection.note:
        out += [f"*{selection.note}*", ""]
    out += [f"- {t.group} {t.name}: `{t.a}` → `{t.b}`" for t in d.text_changes]
    return out + ([""] if d.text_changes else [])


def _md_code(d: RunDiff) -> list[str]:
    out = ["## Code", ""]
    if not d.code:
        return out + ["No change in the code.", ""]
    for fd in d.code:
        if fd.unreadable:
            out += [f"`{fd.path_a or '(new)'}` → `{fd.path_b or '(removed)'}`: not compared: {fd.unreadable}", ""]
            continue
        out += [f"`{fd.path_a or '(new)'}` → `{fd.path_b or '(removed)'}`: +{fd.lines_added} −{fd.lines_removed}",
                "", "```diff", fd.unified.rstrip("\n"), "```", ""]
    return out


def _md_notes(d: RunDiff) -> list[str]:
    out = ["## Notes (worklog.md)", ""]
    if d.notes_diff:
        return out + ["```diff", d.notes_diff.rstrip("\n"), "```", ""]
    return out + [d.notes_note or "No change in the notes.", ""]


def diff_html(d: RunDiff, profile_limit: int = PROFILE_FIGURES_SHOWN) -> str:
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES),
                             autoescape=jinja2.select_autoescape(["html", "j2"]), undefined=jinja2.StrictUndefined)
    env.filters.update(label=figure_label, ms=format_ms, ms_range=lambda ci: format_ms_range(*ci), pct=_pct,
                       fig=figure_value, date=run_date)
    return env.get_template("diff.html.j2").render(d=d, figures=select_figures(d, profile_limit),
                                                   diff_line_class=_diff_line_class)


def _diff_line_class(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "file"
    if line.startswith("@@"):
        return "hunk"
    return {"+": "add", "-": "del"}.get(line[:1], "ctx")
