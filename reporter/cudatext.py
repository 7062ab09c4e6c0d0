"""Reading CUDA sources as text: a version's own code, the ``__device__`` functions of the files it
reaches through ``#include "…"`` (:func:`reporter.cuda.source_files`, the scanner the records and
the build use) and which of them it calls.

Three questions, each with its reader:
- what a file says itself: :func:`own_code` (comments removed), :func:`calls`;
- what helpers a closure defines: :func:`definitions_in`, :func:`definitions`;
- what code a version runs: :func:`reached_code`, its own file plus every helper of its include
  closure that it calls, directly or through another helper (:func:`reached`: those helpers).

The report uses them to show the code a version brought into a shared header
(:mod:`reporter.render.code`), the tests to check what a version's kernel does. Nothing here
knows any particular assignment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from . import cuda

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


# a call as `calls` reads one, of any name: the identifier (not a member, not the tail of a longer one),
# template arguments or none, then the parenthesis; a lookahead, so that a match inside another's
# template arguments is found too (`p<q<r>>(x)` calls p and, as `calls` reads it, q)
_CALL = re.compile(r"(?<![\w.])(?=([A-Za-z_]\w*)\s*(?:<[^;(){}]*>)?\s*\()")


def called_names(text: str) -> set[str]:
    """Every name ``text`` calls, as :func:`calls` reads a call: ``calls(text, n)`` is ``n in
    called_names(text)``, in one pass over the text instead of one a name."""
    return {m.group(1) for m in _CALL.finditer(text)}


def definitions_in(source: Path) -> list[Definition]:
    """Every top-level ``__device__`` function defined in ``source`` itself (declarations are not)."""
    return list(_definitions_of(source, source.read_text(encoding="utf-8")))


@lru_cache(maxsize=1024)
def _definitions_of(source: Path, raw: str) -> tuple[Definition, ...]:
    """:func:`definitions_in` of ``source`` as it reads now (``raw``): a report asks for the same
    headers' definitions once a version, and a file whose text changed is read again."""
    text = code(raw)
    out = []
    for m in _DEVICE_FN.finditer(text):
        end = _through_body(text, m.end() - 1)
        if end is not None:
            out.append(Definition(m.group(1), source, text.count("\n", 0, m.start()) + 1, text[m.start() : end]))
    return tuple(out)


def definitions(path: Path) -> list[Definition]:
    """Every top-level ``__device__`` function defined in ``path``'s include closure (``path`` too)."""
    return [d for source in cuda.source_files(path) for d in definitions_in(source)]


def reached(path: Path) -> list[Definition]:
    """The helpers of ``path``'s include closure (not ``path``'s own) that it calls, directly or
    through another helper, in the order they are found."""
    own = own_code(path)
    helpers = [d for d in definitions(path) if d.file != path]
    found: list[Definition] = []
    taken: set[tuple[str, Path]] = set()
    frontier = [own]
    while frontier:
        called = called_names(frontier.pop(0))
        for d in helpers:
            if (d.name, d.file) not in taken and d.name in called:
                taken.add((d.name, d.file))
                found.append(d)
                frontier.append(d.text)
    return found


def reached_code(path: Path) -> str:
    """The code ``path`` runs: its own file and, transitively, every helper of its closure it calls."""
    return "\n".join([own_code(path), *(d.text for d in reached(path))])


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
