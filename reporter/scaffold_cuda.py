"""The CUDA side of ``report new --from``: a new version builds on its parent's code, never a copy of it.

A version's ``.cu`` is a comment that says how it is structured, then its code. The new version must
start from exactly what the parent compiles, and the one thing it then changes must be visible as its
own. So:

* where the parent's ``.cu`` holds only ``#include`` lines (its kernel is a shared header's), the new
  ``.cu`` includes the same headers;
* otherwise the parent's code moves, as it is, into a header named after the parent
  (``<parent>.cuh``), and the parent's ``.cu`` keeps its comment and includes that header. Every
  ``#define`` there that the parent set unconditionally (a hook or a setting it chose) is wrapped in
  ``#ifndef``, which changes nothing for the parent (nothing defined it before) and lets the new version
  set it differently. The move is text only, so the parent compiles to the same code; ``report
  same-code`` proves it and records the proof, so the parent's figures stand.

The new ``.cu`` then holds a comment to write (marked with the placeholder), the one place to change
(the parent's choices it can override, named), and the include. Nothing in this module knows any
particular assignment.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

_INCLUDE = re.compile(r'^\s*#\s*include\s*"[^"]+"\s*(?://.*)?$')
_DEFINE = re.compile(r"^\s*#\s*define\s+([A-Za-z_]\w*)")
_IFNDEF = re.compile(r"^\s*#\s*ifndef\s+([A-Za-z_]\w*)\s*$")


@dataclass(frozen=True)
class CudaPlan:
    """What ``report new`` writes for the CUDA side: the new version's ``.cu``, and where the parent's
    code had to move, the header it moved into and the parent's new ``.cu``."""

    new_source: str
    header: tuple[Path, str] | None  # (path, text) of the parent's code as a header, when it moved
    parent_source: str | None  # the parent's .cu after the move
    hooks: list[str]  # the parent's own choices the new version can override


def _logical_lines(text: str) -> list[str]:
    """Lines with backslash continuations joined back to their directive (each keeps its newlines)."""
    out: list[str] = []
    for line in text.splitlines(keepends=True):
        if out and out[-1].rstrip("\n").endswith("\\"):
            out[-1] += line
        else:
            out.append(line)
    return out


def split_comment(text: str) -> tuple[str, str]:
    """A source's leading comment block (``//`` lines and blank lines) and the rest."""
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines) and (lines[i].lstrip().startswith("//") or not lines[i].strip()):
        i += 1
    return "".join(lines[:i]), "".join(lines[i:])


def _is_only_includes(body: str) -> bool:
    return all(not line.strip() or line.lstrip().startswith("//") or _INCLUDE.match(line)
               for line in body.splitlines())


def _guard_defines(body: str) -> tuple[str, list[str]]:
    """``body`` with each unconditional ``#define NAME`` wrapped in ``#ifndef NAME``; the names."""
    lines = _logical_lines(body)
    out: list[str] = []
    names: list[str] = []
    for i, line in enumerate(lines):
        m = _DEFINE.match(line)
        prev = next((p for p in reversed(lines[:i]) if p.strip()), "")
        guarded = m is not None and (g := _IFNDEF.match(prev)) is not None and g.group(1) == m.group(1)
        if m and not guarded and m.group(1) not in names:
            names.append(m.group(1))
            out.append(f"#ifndef {m.group(1)}\n{line if line.endswith(chr(10)) else line + chr(10)}#endif\n")
        else:
            out.append(line)
    return "".join(out), names


def plan_cuda(parent_cu: Path, parent: str, version: str, placeholder: str) -> CudaPlan:
    """The new version's ``.cu`` (and the parent's code as a header where it must move)."""
    text = parent_cu.read_text(encoding="utf-8")
    _comment, body = split_comment(text)
    header: tuple[Path, str] | None = None
    parent_source: str | None = None
    hooks: list[str] = []
    if _is_only_includes(body):
        includes = "".join(line + "\n" for line in body.splitlines() if _INCLUDE.match(line))
    else:
        header_path = parent_cu.with_suffix(".cuh")
        if header_path.exists():
            raise FileExistsError(f"{header_path} already exists: {parent_cu.name}'s code cannot move there "
                                  f"(include it from {parent_cu.name} and keep only includes in the .cu)")
        guarded, hooks = _guard_defines(body)
        note = (f"{parent}'s code, moved here from {parent_cu.name} unchanged by `report new {version} --from "
                f"{parent}`, so that a version built on it includes it instead of copying it. What it does and why "
                f"is in {parent_cu.name}. The #defines {parent} set are wrapped in #ifndef: a version that includes "
                f"this header may set them first (for the parent nothing changes: nothing defined them before).")
        rule = ("Append-only: once a recorded version compiles this header, it is never changed in place (`report "
                "same-code` proves that each version's kernels still compile to the PTX its records ran).")
        comment = "\n//\n".join(textwrap.fill(t, 100, initial_indent="// ", subsequent_indent="// ") for t in (note, rule))
        header = (header_path, f"{comment}\n#pragma once\n\n{guarded.lstrip(chr(10))}")
        parent_source = text[: len(text) - len(body)].rstrip("\n") + f'\n\n#include "{header_path.name}"\n'
        includes = f'#include "{header_path.name}"\n'
    choice = (f"// The parent's own choices, each overridable by a #define before the include: "
              f"{', '.join(hooks)}.\n" if hooks else "")
    new_source = (
        f"// {version}: {placeholder}: how {version} is structured and what it changes from {parent}, in a few\n"
        f"// sentences (the report prints this comment beside the code).\n//\n"
        f"// Built on {parent}'s code, which the include below brings in as it is: {version} compiles to\n"
        f"// exactly what {parent} compiles until you change it here. The one place to change: above the\n"
        f"// include, define a hook of the included headers (each lists its hooks and settings at the top)\n"
        f"// or a helper of your own; a change that no hook allows gets a new hook in the header, whose\n"
        f"// default keeps every version that includes it the same (`report same-code` proves it).\n"
        f"{choice}\n"
        f"// {placeholder}: your change goes here.\n\n{includes}")
    return CudaPlan(new_source, header, parent_source, hooks)
