"""The structure of ``kernels/<name>/worklog.md``, read the one way every reader uses: ATX headings
outside fenced code blocks, ``## <version>`` sections (the first word of the heading is a version
name, :data:`reporter.assignments.VERSION_RE`), ``###`` questions inside them, and the closing
sections ("Why we stopped", "How LLMs helped") that stay last.

``report new`` inserts a section with it, ``report diff`` quotes two, and the report
(:mod:`reporter.render.worklog`) splits the bound text into its sections with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .assignments import VERSION_RE, short_handle

# The work-log questions, used when worklog.md has no version section to copy them from.
DEFAULT_QUESTIONS = ["What we concluded", "Hypothesis", "How we came to it", "What to try next"]
CLOSING_SECTIONS = ("why we stopped", "how llms helped")
#: The mark on every text a person must write before hand-in (``report new`` writes it, the report
#: build refuses to print it as an answer).
PLACEHOLDER = "EDIT ME"


_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Heading:
    level: int
    title: str
    line: int  # 0-based index into the file's lines


def headings(text: str) -> list[Heading]:
    """Markdown ATX headings outside fenced code blocks."""
    out, fenced = [], False
    for i, line in enumerate(text.splitlines()):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        m = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if m and not fenced:
            out.append(Heading(len(m.group(1)), m.group(2), i))
    return out


def heading_version(title: str) -> str | None:
    """'v03_vectorized — float4 loads' -> 'v03_vectorized' (the first word, when it is a version)."""
    word = title.split()[0] if title.split() else ""
    return word if VERSION_RE.match(word) else None


def _section_bounds(text: str) -> list[tuple[Heading, int]]:
    """Each level-2 heading with the index of the line that ends its section."""
    lines = text.splitlines()
    level2 = [h for h in headings(text) if h.level == 2]
    return [(h, level2[i + 1].line if i + 1 < len(level2) else len(lines)) for i, h in enumerate(level2)]


def version_section(text: str, version: str) -> str | None:
    """The text of ``## <version>`` (full name or its vNN handle), heading included."""
    lines = text.splitlines()
    for h, end in _section_bounds(text):
        named = heading_version(h.title)
        if named and (named == version or short_handle(named) == short_handle(version)):
            return "\n".join(lines[h.line:end]).rstrip() + "\n"
    return None


def worklog_questions(text: str) -> list[str]:
    """The ``###`` headings of the last version section, so a new section asks the same questions."""
    level2 = [(h, end) for h, end in _section_bounds(text) if heading_version(h.title)]
    if not level2:
        return list(DEFAULT_QUESTIONS)
    last, end = level2[-1]
    found = [h.title for h in headings(text) if h.level == 3 and last.line < h.line < end]
    return found or list(DEFAULT_QUESTIONS)


def is_closing_heading(title: str) -> bool:
    """'Why we stopped' or 'How LLMs helped' (any case, a trailing ':' or '.'), as the report reads them."""
    return title.lower().rstrip(":. ") in CLOSING_SECTIONS


def insert_section(text: str, section: str) -> str:
    """Put a version section just before the first closing section ('Why we stopped', 'How LLMs
    helped'), so the closing sections stay last; without one, at the end."""
    lines = text.splitlines()
    closing = [h for h, _ in _section_bounds(text) if is_closing_heading(h.title)]
    at = closing[0].line if closing else len(lines)
    before = "\n".join(lines[:at]).rstrip("\n")
    after = "\n".join(lines[at:]).strip("\n")
    parts = [p for p in (before, section.strip("\n"), after) if p]
    return "\n\n".join(parts) + "\n"


def read_worklog_sections(kernels: Path, assignment: str, *versions: str) -> list[str | None]:
    path = kernels / assignment / "worklog.md"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return [None for _ in versions]
    return [version_section(text, v) for v in versions]
