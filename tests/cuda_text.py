"""Reading CUDA sources in tests, now that a version's helpers live in shared headers.

A text check on a version asks one of three questions, and each has its own reader:
- what the version's own file says: ``own_code`` (comments removed), ``calls``;
- what one helper it calls does: ``definition`` finds the one ``__device__`` function of that name
  among the files the version reaches through ``#include "…"`` (``reporter.cuda.source_files``,
  the scanner the records and the build use);
- what code the version runs: ``reached_code`` is its own file plus every helper of its include
  closure that it calls, directly or through another helper.

Absence checks ("no cp.async copy", "no trap") read ``reached_code``, never the whole include
closure: a header holds more helpers than any one version calls (v13 includes cp_async.cuh and never
copies with cp.async; mbarrier.cuh holds v06's trapping wait beside v08's faulting one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from reporter import cuda

_LINE_COMMENT = re.compile(r"//[^\n]*")
_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)
# `__device__ <qualifiers and return type> name(` at the start of a line: a top-level function
_DEVICE_FN = re.compile(r"^(?:static\s+)?__device__\b[^;{(=]*?\b(\w+)\s*\(", re.MULTILINE)


@dataclass(frozen=True)
class Definition:
    name: str
    file: Path
    line: int  # of the signature's `__device__`
    text: str  # signature through closing brace, comments removed


def code(text: str) -> str:
    """``text`` without its comments (a comment may name what the code no longer does)."""
    return _LINE_COMMENT.sub("", _BLOCK_COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text))


def own_code(path: Path) -> str:
    """The code of ``path`` alone, without the headers it includes."""
    return code(path.read_text(encoding="utf-8"))


def closure_text(path: Path) -> str:
    """``path`` and every local header it reaches, concatenated in include order."""
    return "\n".join(p.read_text(encoding="utf-8") for p in cuda.source_files(path))


def calls(text: str, name: str) -> bool:
    """Whether ``text`` calls ``name`` (``name(`` or ``name<…>(``), not a longer name ending in it."""
    return re.search(rf"(?<![\w.]){re.escape(name)}\s*(?:<[^;(){{}}]*>)?\s*\(", text) is not None


def definitions_in(source: Path) -> list[Definition]:
    """Every top-level ``__device__`` function defined in ``source`` itself (declarations are not)."""
    text = code(source.read_text(encoding="utf-8"))
    out = []
    for m in _DEVICE_FN.finditer(text):
        end = _through_body(text, m.end() - 1)
        if end is not None:
            out.append(Definition(m.group(1), source, text.count("\n", 0, m.start()) + 1, text[m.start() : end]))
    return out


def definitions(path: Path) -> list[Definition]:
    """Every top-level ``__device__`` function defined in ``path``'s include closure (``path`` too)."""
    return [d for source in cuda.source_files(path) for d in definitions_in(source)]


def definition(path: Path, name: str) -> str:
    """The code of the one ``__device__`` function ``name`` that ``path`` reaches. Fails the test
    if ``path``'s closure defines it nowhere or more than once."""
    found = [d for d in definitions(path) if d.name == name]
    where = [d.file.name for d in found]
    assert len(found) == 1, f"{name}: defined {len(found)} times in the closure of {path.name} ({where})"
    return found[0].text


def reached_code(path: Path) -> str:
    """The code ``path`` runs: its own file and, transitively, every helper of its closure it calls."""
    own = own_code(path)
    helpers = [d for d in definitions(path) if d.file != path]
    chunks, taken, frontier = [own], set(), [own]
    while frontier:
        text = frontier.pop()
        for d in helpers:
            if (d.name, d.file) not in taken and calls(text, d.name):
                taken.add((d.name, d.file))
                chunks.append(d.text)
                frontier.append(d.text)
    return "\n".join(chunks)


def _through_body(text: str, open_paren: int) -> int | None:
    """The index just past the body of the function whose parameter list opens at ``open_paren``;
    None for a declaration."""
    depth, i = 0, open_paren
    while i < len(text):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                break
        i += 1
    brace = text.find("{", i)
    if brace < 0 or ";" in text[i + 1 : brace]:
        return None
    depth = 0
    for j in range(brace, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j + 1
    return None
