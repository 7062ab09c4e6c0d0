"""A shared header as one version compiles it: the lines of the ``#if`` branches that version takes.

A kernel header with hooks (``attn_sm90_overlap.cuh``) holds every version's branches at once: v11's
Q in registers under ``#if !Q_IN_SMEM``, v12's masked tail under ``#if KV_TAIL``. Compared line by
line with another version's file it shows those branches as changes of whichever version introduced
the header. :func:`as_compiled` answers what the version itself compiles: the text of ``target`` with
every line outside the branches taken, and every conditional directive, blanked (line numbers are
kept, so an excerpt still names the file's own lines).

The branches are decided as the preprocessor decides them, from ``entry`` (the version's source): its
``#define`` and ``#undef`` lines and those of every header it reaches through ``#include "…"``, in
order, each file once (the headers are ``#pragma once``). An expression it cannot evaluate keeps both
branches, so a header it does not understand reads as it is written. Only object-like macros are
followed; that is what the kernels' settings and switches are. Nothing here knows any assignment.
"""

from __future__ import annotations

import re
from pathlib import Path

from .cuda import include_dirs

_DIRECTIVE = re.compile(r"^\s*#\s*(\w+)\s*(.*?)\s*$")
_INCLUDE = re.compile(r'"([^"]+)"')
_DEFINE = re.compile(r"([A-Za-z_]\w*)(\(?)\s*(.*)$")
_SUFFIX = re.compile(r"\b(\d+)(?:ull|ul|llu|lu|ll|u|l)\b", re.IGNORECASE)


class _Unknown(Exception):
    pass


def _logical(text: str) -> list[tuple[int, str]]:
    """(first line index, joined text) of each logical line (backslash continuations joined)."""
    out: list[tuple[int, str]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        start, cur = i, lines[i]
        while cur.endswith("\\") and i + 1 < len(lines):
            i += 1
            cur = cur[:-1] + " " + lines[i]
        out.append((start, re.sub(r"//.*$", "", cur)))
        i += 1
    return out


def _evaluate(expr: str, macros: dict[str, str | None]) -> bool:
    def defined(m: re.Match[str]) -> str:
        return "1" if m.group(1) in macros else "0"

    expr = re.sub(r"\bdefined\s*\(\s*(\w+)\s*\)|\bdefined\s+(\w+)",
                  lambda m: "1" if (m.group(1) or m.group(2)) in macros else "0", expr)
    for _ in range(20):  # expand object-like macros; an identifier left over is 0, as in the preprocessor
        new = re.sub(r"[A-Za-z_]\w*", lambda m: f"({macros[m.group(0)] or ''})"
                     if m.group(0) in macros and macros[m.group(0)] is not None else m.group(0), expr)
        if new == expr:
            break
        expr = new
    else:
        raise _Unknown(expr)
    expr = _SUFFIX.sub(r"\1", expr)
    if re.search(r"[A-Za-z_]\w*\s*\(", expr):  # a function-like macro or a call: not ours to decide
        raise _Unknown(expr)
    expr = re.sub(r"[A-Za-z_]\w*", "0", expr)
    expr = expr.replace("&&", " and ").replace("||", " or ")
    expr = re.sub(r"!(?!=)", " not ", expr)
    if not re.fullmatch(r"[\d\s()+\-*/%<>=!andortx]*", expr):
        raise _Unknown(expr)
    try:
        return bool(eval(expr.replace("/", "//"), {"__builtins__": {}}))  # noqa: S307 - digits and operators only
    except Exception as e:  # noqa: BLE001 - anything it cannot evaluate keeps both branches
        raise _Unknown(expr) from e


def as_compiled(entry: Path, target: Path) -> str:
    """``target``'s text as ``entry`` compiles it: lines outside the branches taken, and the conditional
    directives themselves, blanked. ``target`` as it is when ``entry`` never reaches it."""
    entry, target = Path(entry).resolve(), Path(target).resolve()
    macros: dict[str, str | None] = {}
    seen: set[Path] = set()
    result: list[str] | None = None

    def walk(path: Path) -> None:
        nonlocal result
        if path in seen:
            return
        seen.add(path)
        text = path.read_text(encoding="utf-8")
        raw = text.splitlines()
        keep = [True] * len(raw)
        stack: list[tuple[bool, bool, bool]] = []  # (parent active, this branch active, a branch was taken)
        active = True
        for start, line in _logical(text):
            d = _DIRECTIVE.match(line)
            end = start
            while end + 1 < len(raw) and raw[end].endswith("\\"):
                end += 1
            span = range(start, end + 1)
            if d is None:
                if not active:
                    for i in span:
                        keep[i] = False
                continue
            word, rest = d.group(1), d.group(2)
            if word in ("if", "ifdef", "ifndef"):
                if word == "ifdef":
                    cond: bool | None = rest.split()[0] in macros if rest else False
                elif word == "ifndef":
                    cond = rest.split()[0] not in macros if rest else False
                else:
                    try:
                        cond = _evaluate(rest, macros)
                    except _Unknown:
                        cond = None
                taken = True if cond is None else cond
                stack.append((active, taken, taken and cond is not None))  # undecided: the #else is kept too
                active = active and taken
            elif word == "elif" and stack:
                parent, _, done = stack[-1]
                try:
                    cond = not done and _evaluate(rest, macros)
                    decided = True
                except _Unknown:
                    cond, decided = not done, False
                stack[-1] = (parent, bool(cond), done or (bool(cond) and decided))
                active = parent and bool(cond)
            elif word == "else" and stack:
                parent, _, done = stack[-1]
                stack[-1] = (parent, not done, True)
                active = parent and not done
            elif word == "endif" and stack:
                active = stack.pop()[0]
            elif active and word == "define" and (m := _DEFINE.match(rest)):
                macros[m.group(1)] = None if m.group(2) else m.group(3).strip()
            elif active and word == "undef" and rest:
                macros.pop(rest.split()[0], None)
            elif active and word == "include" and (inc := _INCLUDE.search(rest)):
                for folder in include_dirs(path):
                    if (found := (folder / inc.group(1)).resolve()).is_file():
                        walk(found)
                        break
            if word in ("if", "ifdef", "ifndef", "elif", "else", "endif"):
                for i in span:
                    keep[i] = False
            elif not active:
                for i in span:
                    keep[i] = False
        if path == target:
            result = [line if k else "" for line, k in zip(raw, keep)]

    walk(entry)
    if result is None:
        return target.read_text(encoding="utf-8")
    return "\n".join(result) + "\n"
