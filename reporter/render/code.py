"""The key code excerpt of a version, highlighted with Pygments.

Which part is "key": lines between ``# region key`` and ``# endregion`` (``// region key``
in CUDA) if the author marked them; else the first ``@triton.jit`` function of the file;
else the first ``__global__`` kernel of its .cu source; else ``custom_kernel``.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import CudaLexer, PythonLexer

from ..assignments import Version

# Names, punctuation, operators and whitespace print in the default colour anyway; dropping their
# spans keeps the highlighting and halves the inline boxes WeasyPrint must lay out (~1 s per report).
_PLAIN_TOKENS = re.compile(r'<span class="(?:n|p|o|w|nx|err)">([^<]*)</span>')

MAX_LINES = 36  # the whole file is in the record; the report shows the heart of it


@dataclass
class Excerpt:
    path: str
    first_line: int
    code: str
    language: str  # 'python' | 'cuda'
    truncated: bool = False

    def html(self) -> str:
        lexer = PythonLexer() if self.language == "python" else CudaLexer()
        fmt = HtmlFormatter(nowrap=False, cssclass="code", linenos=False)
        return _PLAIN_TOKENS.sub(r"\1", highlight(self.code, lexer, fmt))


def css() -> str:
    return HtmlFormatter(style="friendly").get_style_defs(".code")


def _marked(text: str) -> tuple[int, str] | None:
    m = re.search(r"^[ \t]*(?:#|//)\s*region key.*?\n(.*?)^[ \t]*(?:#|//)\s*endregion", text, re.S | re.M)
    if not m:
        return None
    return text[: m.start(1)].count("\n") + 1, m.group(1)


def _python_function(text: str, want_jit: bool) -> tuple[int, str] | None:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    lines = text.splitlines()
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        is_jit = any("jit" in ast.unparse(d) for d in node.decorator_list)
        if (want_jit and is_jit) or (not want_jit and node.name == "custom_kernel"):
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            return start, "\n".join(lines[start - 1: node.end_lineno])
    return None


def _cuda_kernel(text: str) -> tuple[int, str] | None:
    m = re.search(r"^[^\n]*__global__", text, re.M)
    if not m:
        return None
    start = text[: m.start()].count("\n") + 1
    depth, i, opened = 0, text.index("{", m.start()) if "{" in text[m.start():] else -1, False
    if i < 0:
        return None
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
            opened = True
        elif text[j] == "}":
            depth -= 1
            if opened and depth == 0:
                return start, text[m.start(): j + 1]
    return start, text[m.start():]


def key_excerpt(v: Version, repo_root: Path) -> Excerpt:
    def rel(p: Path) -> str:
        try:
            return str(p.resolve().relative_to(repo_root.resolve()))
        except ValueError:
            return p.name

    py = v.path.read_text(encoding="utf-8")
    cu_path = v.path.with_suffix(".cu")
    cu = cu_path.read_text(encoding="utf-8") if cu_path.exists() else None
    found: tuple[Path, tuple[int, str], str] | None = None
    for path, text, lang in ((v.path, py, "python"), (cu_path, cu, "cuda")):
        if text and (m := _marked(text)):
            found = (path, m, lang)
            break
    if found is None and (m := _python_function(py, want_jit=True)):
        found = (v.path, m, "python")
    if found is None and cu and (m := _cuda_kernel(cu)):
        found = (cu_path, m, "cuda")
    if found is None and (m := _python_function(py, want_jit=False)):
        found = (v.path, m, "python")
    if found is None:
        found = (v.path, (1, py), "python")
    path, (line, code), lang = found
    code_lines = code.rstrip().splitlines()
    truncated = len(code_lines) > MAX_LINES
    if truncated:
        code_lines = code_lines[:MAX_LINES] + ["    ..."]
    return Excerpt(path=rel(path), first_line=line, code="\n".join(code_lines), language=lang, truncated=truncated)
