"""The file `report export` writes, as data: the files a ``submission.py`` embeds, and reading
one back without importing it (``report reverify`` times an earlier export against the version
as it is now, and records the earlier code from it).

An export stores each file as ``_FILES[rel] = <string literal>``, after a comment naming where
the file came from (``# kernels/flashattn/v06_wgmma.py``), and states its commit on a
``Source:`` line of its docstring.
"""

from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path


class SubmissionError(Exception):
    """A file that is not a readable `report export` submission; the message names it."""


@dataclass(frozen=True)
class EmbeddedFile:
    rel: str  # where it goes in the submission's folder: 'v04_exp2.py', 'reporter/cuda/build.py'
    origin: str  # where it came from, for the header: relative to the project root when inside it
    text: str
    module: str | None = None  # the name it is imported under; None for a CUDA source

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()  # as Version.snapshot: records compare


@dataclass(frozen=True)
class Submission:
    """What an exported ``submission.py`` holds, read without importing it."""

    path: Path
    sha256: str
    commit: str | None  # from its 'Source:' line
    files: list[EmbeddedFile]  # each with the origin its '# origin' comment names


def read_submission(path: Path) -> Submission:
    """The embedded files of an export (its ``_FILES[rel] = ...`` statements, each after a comment
    naming where the file came from) and the commit it was exported at."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise SubmissionError(f"{path}: cannot read the submission: {e}") from e
    try:
        tree = ast.parse(text, filename=str(path))
    except SyntaxError as e:
        raise SubmissionError(f"{path}:{e.lineno}: not a Python file: {e.msg}") from e
    lines = text.splitlines()
    files: list[EmbeddedFile] = []
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Subscript)
                and isinstance(node.targets[0].value, ast.Name) and node.targets[0].value.id == "_FILES"):
            continue
        rel = ast.literal_eval(node.targets[0].slice)
        value = node.value  # a string literal, or one sliced by [1:] (see _literal)
        if isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Slice):
            body = ast.literal_eval(value.value)[1:]
        else:
            body = ast.literal_eval(value)
        comment = lines[node.lineno - 2].strip() if node.lineno >= 2 else ""
        origin = comment[2:].split(":")[0].strip() if comment.startswith("# ") else rel
        files.append(EmbeddedFile(rel=rel, origin=origin, text=body))
    if not files:
        raise SubmissionError(f"{path}: holds no embedded files (_FILES[...] = ...): not a `report export` submission")
    m = re.search(r"^Source:\s+commit ([0-9a-f]{7,40})", text, re.MULTILINE)
    return Submission(path=path, sha256=hashlib.sha256(text.encode()).hexdigest(), commit=m.group(1) if m else None,
                      files=files)
