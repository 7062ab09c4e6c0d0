"""The key code excerpt of a version, highlighted with Pygments.

Which part is "key": lines between ``# region key`` and ``# endregion`` (``// region key``
in CUDA) if the author marked them; else the first ``@triton.jit`` function of the file;
else the first ``__global__`` kernel of its .cu source, from its main loop when it is long;
else ``custom_kernel``. That is for a source new in a version; a version whose source has an
earlier counterpart shows the lines it changed instead (:func:`key_change`), unless its own ``.cu``
marks its key code, which is then shown as the source compiles by default.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections import Counter
from dataclasses import dataclass
from html import escape
from pathlib import Path

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import CudaLexer, PythonLexer

from ..assignments import Version
from ..cudatext import Definition

# Names, punctuation, operators and whitespace print in the default colour anyway; dropping their
# spans keeps the highlighting and halves the inline boxes WeasyPrint must lay out (~1 s per report).
_PLAIN_TOKENS = re.compile(r'<span class="(?:n|p|o|w|nx|err)">([^<]*)</span>')

MAX_LINES = 14  # the whole file is in the record; the report shows the heart of it


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
    m = re.search(r"^[ \t]*(?:#|//)\s*region key.*?\n(.*?)^[ \t]*(?:#|//)\s*endregion", text, re.DOTALL | re.MULTILINE)
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
    m = re.search(r"^[^\n]*__global__", text, re.MULTILINE)
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


def key_excerpt(v: Version, repo_root: Path, earlier: list[Version] = ()) -> Excerpt:
    def rel(p: Path) -> str:
        try:
            return str(p.resolve().relative_to(repo_root.resolve()))
        except ValueError:
            return p.name

    py = v.path.read_text(encoding="utf-8")
    cu_path = source_of(v, ".cu", earlier)
    cu = cu_path.read_text(encoding="utf-8") if cu_path.exists() else None
    found: tuple[Path, tuple[int, str], str] | None = None
    for path, text, lang in ((v.path, py, "python"), (cu_path, cu, "cuda")):
        if text and (m := _marked(text)):
            found = (path, m, lang)
            break
    if found is None and (m := _python_function(py, want_jit=True)):
        found = (v.path, m, "python")
    if found is None and cu and _cuda_kernel(cu):  # the loop of the kernel that most names the version's idea
        return _kept(cu_path, idea_words(v), repo_root, name_words(v), loops_first=False)
    if found is None and (m := _python_function(py, want_jit=False)):
        found = (v.path, m, "python")
    if found is None:
        found = (v.path, (1, py), "python")
    path, (line, code), lang = found
    code_lines = code.rstrip().splitlines()
    if lang == "cuda" and not _marked(cu or "") and len(code_lines) > MAX_LINES:
        # a long kernel opens with set-up (indexes, shared memory, barriers): show its main loop
        loop = next((i for i, text in enumerate(code_lines) if i > 4 and re.match(r"\s*(for|while)\s*\(", text)), None)
        if loop is not None:
            start = max(loop - 2, 0)
            code_lines = ["    ..."] + code_lines[start:]
            line += start
    truncated = len(code_lines) > MAX_LINES
    if truncated:
        code_lines = code_lines[:MAX_LINES] + ["    ..."]
    return Excerpt(path=rel(path), first_line=line, code="\n".join(code_lines), language=lang, truncated=truncated)


# --------------------------------------------------------------------------- the key change


def _language(path: Path) -> str:
    return "cuda" if path.suffix in (".cu", ".cuh") else "python"


def source_of(v: Version, suffix: str, earlier: list[Version] = ()) -> Path:
    """The file that holds a version's code of one kind: its ``.py``, or for ``.cu`` its CUDA source,
    unless that source defines no kernel and includes a header that does which no earlier version's
    source reaches: then that header (v19's kernel is in ``attn_sm90_double_q.cuh``, which v20 and v21
    build with their own epilogues). That is the file its change and its excerpt come from."""
    path = v.path.with_suffix(suffix)
    if suffix != ".cu" or not path.is_file() or _cuda_kernel(path.read_text(encoding="utf-8")):
        return path
    from ..cuda import includes

    for header in introduced_headers(v, earlier):
        if _cuda_kernel(header.read_text(encoding="utf-8")):
            return header
    return path


def brought_helpers(v: Version, earlier: list[Version] = ()) -> list[Definition]:
    """The helpers of the assignment's own headers that a version's CUDA source is the first to run
    (calling them, directly or through another helper): the code it brought into a header the
    versions share (histogram v04's bin-major flush, v05's pipelined row loop)."""
    from ..cudatext import reached

    cu = v.path.with_suffix(".cu")
    if not cu.is_file():
        return []
    before = {(d.file, d.name) for w in earlier if w.number < v.number and (c := w.path.with_suffix(".cu")).is_file()
              for d in reached(c)}
    return [d for d in reached(cu) if d.file.parent == cu.parent and (d.file, d.name) not in before]


def _helper_lines(d: Definition) -> tuple[int, list[str]]:
    """A helper's lines in its file, with the comment and template lines just above its signature:
    (first line, lines)."""
    lines = d.file.read_text(encoding="utf-8").splitlines()
    first = d.line - 1
    while first > 0 and (lines[first - 1].strip().startswith("//") or lines[first - 1].strip().startswith("template")):
        first -= 1
    last = d.line - 1 + d.text.count("\n")
    return first + 1, lines[first:last + 1]


def introduced_headers(v: Version, earlier: list[Version] = ()) -> list[Path]:
    """The assignment's own headers (not the shared ones under common/) that a version's CUDA source
    is the first to include: code the version brought that the versions after it build on."""
    from ..cuda import includes

    cu = v.path.with_suffix(".cu")
    if not cu.is_file():
        return []
    reached = {inc.path for w in earlier if w.number < v.number and (c := w.path.with_suffix(".cu")).is_file()
               for inc in includes(c)}
    return [inc.path for inc in includes(cu) if inc.path.parent == cu.parent and inc.path not in reached]

MAX_CHANGE_LINES = 14  # a step's excerpt: the lines that changed, with a little context
CONTEXT = 2


@dataclass
class Change:
    """What a version changed against the version before it: diff hunks of its sources, or, for a
    source with no predecessor, its key excerpt."""

    path: str
    against: str | None  # the earlier file compared with ('kernels/.../v14_multicast.cu'), None: a new file
    lines: list[tuple[str, str]]  # (kind, text): kind 'add' | 'del' | 'ctx' | 'hunk' | 'gap' (removed lines counted)
    shown: int  # changed lines shown
    total: int  # changed lines in all
    excerpt: Excerpt | None = None  # a new file's key code, or (with ``against``) the code a pruning keeps
    removed: int = 0  # a pruning: code lines it removes
    edited: int = 0  # a pruning: code lines it adds or edits
    brought: str = ""  # the excerpt is this helper of a shared header, first called in this version
    highlighted: str | None = None  # the excerpt's HTML, kept with the change in the cache (Pygments takes time)

    def html(self) -> str:
        if self.excerpt is not None:
            if self.highlighted is None:
                self.highlighted = self.excerpt.html()
            return self.highlighted
        sign = {"add": "+", "del": "-", "ctx": " ", "hunk": "", "gap": " "}
        rows = "".join(f'<span class="{k}">{sign[k]}{escape(t)}</span>\n' for k, t in self.lines)
        return f'<div class="diff"><pre>{rows}</pre></div>'


def _is_comment(line: str) -> bool:
    s = line.strip()
    return not s or s.startswith(("//", "#", "/*", "*", '"""', "'''"))


def _docstring_lines(text: str, language: str) -> set[int]:
    """0-based indexes of the module docstring (Python) or the leading comment block (CUDA): a
    version's description changes with every version and is shown as its structure instead."""
    lines = text.splitlines()
    if language == "python":
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return set()
        first = tree.body[0] if tree.body else None
        if isinstance(first, ast.Expr) and isinstance(getattr(first, "value", None), ast.Constant) \
                and isinstance(first.value.value, str):
            return set(range(first.lineno - 1, (first.end_lineno or first.lineno)))
        return set()
    out = set()
    for i, line in enumerate(lines):
        if line.strip().startswith("//") or not line.strip():
            out.add(i)
        else:
            break
    return out


def _hunks(old: str, new: str, language: str) -> list[list[tuple[str, str, int]]]:
    """Unified-diff hunks of new against old, as (kind, text, new-file line) rows, without the hunks
    that change only comments, blank lines or the description at the top."""
    # the description at the top is blanked on both sides: it is shown as the structure
    skip_a, skip_b = _docstring_lines(old, language), _docstring_lines(new, language)
    a = ["" if i in skip_a else line for i, line in enumerate(old.splitlines())]
    b = ["" if i in skip_b else line for i, line in enumerate(new.splitlines())]
    # lines are matched with their whitespace normalised: a re-indented block is not a change
    na, nb = [" ".join(x.split()) for x in a], [" ".join(x.split()) for x in b]
    out = []
    for group in difflib.SequenceMatcher(None, na, nb, autojunk=False).get_grouped_opcodes(CONTEXT):
        rows: list[tuple[str, str, int]] = []
        code_changed = False
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                rows += [("ctx", b[j], j + 1) for j in range(j1, j2) if j not in skip_b]
                continue
            for i in range(i1, i2):
                if i not in skip_a:
                    rows.append(("del", a[i], j1 + 1))
                    code_changed |= not _is_comment(a[i])
            for j in range(j1, j2):
                if j not in skip_b:
                    rows.append(("add", b[j], j + 1))
                    code_changed |= not _is_comment(b[j])
        if code_changed:
            out.append(rows)
    return out


CANDIDATES = 4  # earlier sources a version's file is compared with, nearest first


def _as_compiled_by(v: Version, earlier: list[Version], path: Path, before: bool = False) -> str | None:
    """A header's text as the version that compiles it takes its ``#if`` branches
    (:func:`reporter.cudabranches.as_compiled`): ``v`` itself, or with ``before`` the latest earlier
    version whose source reaches it. None for a version's own source, or a header no such version reaches."""
    from ..cuda import includes
    from ..cudabranches import as_compiled

    if path.suffix != ".cuh":
        return None
    users = [v] if not before else sorted((w for w in earlier if w.number < v.number), key=lambda w: -w.number)
    for w in users:
        cu = w.path.with_suffix(".cu")
        if cu.is_file() and any(inc.path == path for inc in includes(cu)):
            return as_compiled(cu, path)
    return None


def _kernel_headers(cu: Path) -> set[Path]:
    """The assignment's own headers that ``cu`` reaches and that define a kernel."""
    from ..cuda import includes

    return {inc.path for inc in includes(cu) if inc.path.parent == cu.parent
            and _cuda_kernel(inc.path.read_text(encoding="utf-8"))}


def _same_kernel_predecessor(v: Version, earlier: list[Version]) -> Path | None:
    """For a version whose ``.cu`` defines no kernel but builds one of a shared header through its
    hooks (v10 on v08's attn_sm90_overlap.cuh), the latest earlier ``.cu`` that builds a kernel of
    the same header: the change is in the hooks and helpers one sets and the other does not."""
    cu = v.path.with_suffix(".cu")
    if not cu.is_file() or _cuda_kernel(cu.read_text(encoding="utf-8")):
        return None
    mine = _kernel_headers(cu)
    if not mine:
        return None
    for w in sorted(earlier, key=lambda w: w.number, reverse=True):
        other = w.path.with_suffix(".cu")
        if w.number < v.number and other.is_file() and _kernel_headers(other) & mine:
            return other
    return None


def _predecessor(v: Version, suffix: str, earlier: list[Version], text: str, path: Path | None = None) -> Path | None:
    """The earlier source of this type that the file changes least: usually the previous
    version's, but a version that takes its kernel from an older one (v04 rewriting v02's kernel
    where v03 only imported it) is compared with that one, and a version file that only sets the
    hooks of a shared kernel header with the earlier version file that builds the same kernel."""
    if suffix == ".cu" and path == v.path.with_suffix(".cu") and (same := _same_kernel_predecessor(v, earlier)):
        return same
    found = [p for w in sorted(earlier, key=lambda w: w.number, reverse=True)
             if w.number < v.number and (p := source_of(w, suffix, earlier)).is_file()][:CANDIDATES]
    if not found:
        return None
    lines = text.splitlines()

    def added(p: Path) -> int:  # lines of this file that the earlier one does not have
        other = p.read_text(encoding="utf-8").splitlines()
        sm = difflib.SequenceMatcher(None, other, lines, autojunk=False)
        return len(lines) - sum(block.size for block in sm.get_matching_blocks())

    nearest, cost = found[0], added(found[0])
    for p in found[1:]:
        if (c := added(p)) < 0.6 * cost:  # an older source, clearly closer
            nearest, cost = p, c
    return nearest


_STOP = frozenset(re.findall(r"\w+", """the and for with from into that this than then each every when where
which while plus only also both over under after before same version versions kernel kernels code line lines
one two three four first last next previous new its their them they does done made make uses used using
instead rather about between without"""))


def idea_words(v: Version) -> frozenset[str]:
    """The words that name a version's idea: those of its name after the number and of its
    docstring's first paragraph, lower case, without short and common words, plural 's' dropped."""
    doc = v.docstring().split("\n\n")[0] if v.path.is_file() else ""
    name = v.name.split("_", 1)[1] if "_" in v.name else v.name
    out = set()
    for w in re.findall(r"[a-z0-9]+", f"{name.replace('_', ' ')} {doc.replace('-', '')}".lower()):
        w = w[:-1] if len(w) > 4 and w.endswith("s") else w
        if len(w) >= 3 and w not in _STOP and not w.startswith("v0") and not w.isdigit() or w.isdigit() and len(w) >= 3:
            out.add(w)
    return frozenset(out)


def _code_tokens(line: str) -> list[str]:
    """A source line's identifiers and numbers, lower case, split at underscores and case changes,
    its comment left out (``//`` or ``#``)."""
    code_part = re.split(r"//|(?:^|\s)#(?!include|define|if|ifdef|ifndef|else|elif|endif|pragma)", line, maxsplit=1)[0]
    return re.findall(r"[a-z0-9]+", re.sub(r"([a-z])([A-Z])", r"\1_\2", code_part).lower())


def new_idea_words(words: frozenset[str], old: str, new: str) -> frozenset[str]:
    """The idea words (:func:`idea_words`) that begin more identifiers in the new source's code than
    in the old one's: what the version added, not what both share."""
    def count(text: str) -> Counter[str]:
        tokens = Counter(t for line in text.splitlines() for t in _code_tokens(line))
        return Counter({w: sum(n for t, n in tokens.items() if t.startswith(w)) for w in words})

    before, after = count(old), count(new)
    return frozenset(w for w in words if after[w] > before[w])


def _words(line: str) -> list[str]:
    """A line's identifiers and words, comments included, lower case, split like :func:`_code_tokens`."""
    return re.findall(r"[a-z0-9]+", re.sub(r"([a-z])([A-Z])", r"\1_\2", line).lower())


def _names_idea(text: str, words: frozenset[str]) -> bool:
    """A line of code (not a macro or an include: they configure the idea, the kernel body carries it)
    whose identifiers name one of the idea words."""
    if text.lstrip().startswith("#"):
        return False
    return any(t.startswith(w) for t in _code_tokens(text) for w in words)


def _preprocessor_only(h: list[tuple[str, str, int]]) -> bool:
    """Every changed code line of the hunk is a preprocessor directive (a macro, an include)."""
    changed, directive = [], False
    for k, t, _ in h:  # a line that continues a directive (the one before ends in a backslash) is one too
        if k in ("add", "del") and not _is_comment(t):
            changed.append(directive or t.lstrip().startswith("#"))
        directive = (directive or t.lstrip().startswith("#")) and t.rstrip().endswith("\\")
    return bool(changed) and all(changed)


def _relevance(h: list[tuple[str, str, int]], words: frozenset[str]) -> int:
    """How many of a hunk's added code lines name the version's new idea (a word of
    :func:`new_idea_words` begins one of the line's identifiers)."""
    return sum(1 for kind, text, _ in h if kind == "add" and _names_idea(text, words))


REMOVED_SHOWN = 3  # of a run of more than REMOVED_RUN removed lines, the first ones shown; the rest counted
REMOVED_RUN = 6


def _collapse_removed(h: list[tuple[str, str, int]]) -> list[tuple[str, str, int]]:
    """A run of more than ``REMOVED_RUN`` removed lines as its first lines and a count: in a
    rewrite, what came in says more than what went."""
    out: list[tuple[str, str, int]] = []
    i = 0
    while i < len(h):
        j = i
        while j < len(h) and h[j][0] == "del":
            j += 1
        if j - i > REMOVED_RUN:
            out += h[i:i + REMOVED_SHOWN]
            out.append(("gap", f"… {j - i - REMOVED_SHOWN} more lines removed", h[i][2]))
            i = j
        elif j > i:
            out += h[i:j]
            i = j
        else:
            out.append(h[i])
            i += 1
    return out


def _focus(h: list[tuple[str, str, int]], words: frozenset[str], budget: int) -> list[tuple[str, str, int]]:
    """A hunk longer than ``budget`` rows as the window of ``budget`` rows with the most added lines
    that name the version's idea, then the most added lines."""
    if len(h) <= budget:
        return h
    named = [kind == "add" and _names_idea(text, words) for kind, text, _ in h]
    added = [kind == "add" for kind, _, _ in h]

    def key(k: int) -> tuple[int, int]:
        return sum(named[k:k + budget]), sum(added[k:k + budget])

    start = max(range(len(h) - budget + 1), key=key)
    return h[start:start + budget]


PRUNED_LINES = 30  # what a pruned source keeps: its whole loop, where the idea is the schedule it keeps
PRUNED_EDITS = 3  # at most this many new code lines (an edited line is not new) ...
PRUNED_RATIO = 4  # ... and this many times as many removed: the version is its predecessor pruned


def _pruned(hunks: list[tuple[Path, Path, list[tuple[str, str, int]]]]) -> tuple[int, int] | None:
    """(removed, edited) code lines when the change only removes code and edits lines in place (a
    renamed call, a changed argument): the version keeps one path of its predecessor (one schedule
    of several behind a flag), and the diff shows what went, not the idea. None otherwise."""
    adds = [(t, [d for k, d, _ in h if k == "del" and not _is_comment(d)])
            for _, _, h in hunks for k, t, _ in h if k == "add" and not _is_comment(t)]
    dels = sum(1 for _, _, h in hunks for k, t, _ in h if k == "del" and not _is_comment(t))
    edited, removed = len(adds), dels - len(adds)  # an edited line is a removed line and an added one
    if removed < 10 or removed < PRUNED_RATIO * max(edited, 1):  # the cheap test first: most changes add code
        return None
    new = 0
    for t, olds in adds:
        if not any(difflib.SequenceMatcher(None, t.strip(), d.strip()).ratio() > 0.7 for d in olds):
            new += 1
            if new > PRUNED_EDITS:
                return None
    return removed, edited


def _inside_comments(text: str, language: str) -> set[int]:
    """0-based lines inside a block comment or a docstring, its first line excepted: an excerpt never
    starts there (its highlighting would read code as comment and comment as code)."""
    lines = text.splitlines()
    out: set[int] = set()
    if language == "python":
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return out
        for node in ast.walk(tree):
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                out.update(range(node.lineno, node.end_lineno or node.lineno))
        return out
    opened = False
    for i, line in enumerate(lines):
        if opened:
            out.add(i)
        if "/*" in line and "*/" not in line.split("/*", 1)[1]:
            opened = True
        elif opened and "*/" in line:
            opened = False
    return out


def name_words(v: Version) -> frozenset[str]:
    """The words of a version's name after its number ('v06_wgmma' -> {'wgmma'}), as :func:`idea_words`
    spells them: the idea the version is named for."""
    name = v.name.split("_", 1)[1] if "_" in v.name else v.name
    return frozenset(w[:-1] if len(w) > 4 and w.endswith("s") else w
                     for w in name.lower().split("_") if len(w) >= 3 and w not in _STOP)


def _kept(path: Path, words: frozenset[str], repo_root: Path, named: frozenset[str] = frozenset(), *,
          loops_first: bool = True, n_lines: int = MAX_LINES) -> Excerpt:
    """What a pruned source keeps: the loop of its kernel (at most :data:`MAX_LINES` lines from it)
    that most names the version's idea, in its code or its comments, each idea word counting the
    less the more lines of the file it names (``softmax`` in five lines says more than ``tile`` in
    twenty). Without a loop, the window of that many lines that names it most."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    skip = _docstring_lines(text, _language(path))
    body = 0
    if (m := re.search(r"__global__[^{]*\{", text)) is not None:  # the kernel's body: its signature names
        body = text[:m.end()].count("\n") + 1                      # the version, not the idea
    hits = [set() if i < body or i in skip else {w for w in words for tok in _words(t) if tok.startswith(w)}
            for i, t in enumerate(lines)]
    spread = Counter(w for h in hits for w in h)
    # a word of the version's name counts in full on every line of code that uses it; the docstring's
    # words the less the more lines they name
    weight = [sum(1 / spread[w] for w in h) + sum(1 for w in named if any(t.startswith(w) for t in _code_tokens(t_)))
              if i >= body and i not in skip else 0.0 for i, (h, t_) in enumerate(zip(hits, lines))]
    n = min(n_lines, len(lines))
    loops = {max(i - 2, 0) for i in range(body, len(lines)) if re.match(r"\s*(for|while)\s*\(", lines[i])}
    inside = _inside_comments(text, _language(path))
    starts = [i for i in range(body, max(len(lines) - n + 1, body + 1)) if i not in inside and i not in skip
              and (not loops_first or not loops or i in loops)] or list(range(len(lines) - n + 1))
    best = max(starts, key=lambda i: (round(sum(weight[i:i + n]), 6), i in loops, -i))
    try:
        shown = str(path.resolve().relative_to(repo_root.resolve()))
    except ValueError:
        shown = path.name
    return Excerpt(path=shown, first_line=best + 1, code="\n".join(lines[best:best + n]),
                   language=_language(path), truncated=best + n < len(lines))


def key_change(v: Version, earlier: list[Version], repo_root: Path) -> Change:
    """The lines a version changed against its predecessors' sources (the .cu first, then the .py):
    the hunks whose added code lines most often name what the version brings (:func:`new_idea_words`),
    then the largest, up to :data:`MAX_CHANGE_LINES`, shown in file order.
    A version whose sources have no predecessor (the first, or the first in a new language) shows
    its key excerpt instead."""
    def rel(p: Path) -> str:
        try:
            return str(p.resolve().relative_to(repo_root.resolve()))
        except ValueError:
            return p.name

    def changed(h: list[tuple[str, str, int]]) -> int:
        return sum(k in ("add", "del") for k, _, _ in h)

    hunks: list[tuple[Path, Path, list[tuple[str, str, int]]]] = []
    score: dict[int, int] = {}
    total = 0  # changed lines in all the hunks, before any is shortened
    words = idea_words(v)
    new_files = []
    raw: list[tuple[Path, Path, list[tuple[str, str, int]]]] = []  # the hunks before any is shortened
    kernel_source = source_of(v, ".cu", earlier)
    compiled = (_as_compiled_by(v, earlier, kernel_source) if kernel_source != v.path.with_suffix(".cu") else None)
    if compiled is not None and (m := _marked(compiled)):
        # the kernel header this version introduced marks its key code (`// region key`): the header also
        # holds the hooks of the versions built on it, so a diff would show theirs as this one's change;
        # the region is shown as this version compiles it (the branches of later versions left out)
        first, code = m
        lines = [line for line in code.rstrip().splitlines() if line.strip()]
        ex = Excerpt(path=rel(kernel_source), first_line=first, code="\n".join(lines[:MAX_LINES]),
                     language="cuda", truncated=len(lines) > MAX_LINES)
        return Change(path=ex.path, against=None, lines=[], shown=0, total=0, excerpt=ex)
    own = v.path.with_suffix(".cu")
    if compiled is None and kernel_source == own and own.is_file() and _marked(own.read_text(encoding="utf-8")):
        # the version's own source marks its key code: that region, as the source compiles by default
        from ..cudabranches import as_compiled

        m = _marked(as_compiled(own, own))
        if m is not None:
            first, code = m
            lines = [line for line in code.rstrip().splitlines() if line.strip()]
            ex = Excerpt(path=rel(own), first_line=first, code="\n".join(lines[:MAX_LINES]), language="cuda",
                         truncated=len(lines) > MAX_LINES)
            return Change(path=ex.path, against=None, lines=[], shown=0, total=0, excerpt=ex)
    for header in introduced_headers(v, earlier):
        # a header new in this version that marks its key code: that region, as the version compiles it
        if header != kernel_source and (m := _marked(_as_compiled_by(v, earlier, header) or "")):
            first, code = m
            lines = [line for line in code.rstrip().splitlines() if line.strip()]
            ex = Excerpt(path=rel(header), first_line=first, code="\n".join(lines[:MAX_LINES]), language="cuda",
                         truncated=len(lines) > MAX_LINES)
            return Change(path=ex.path, against=None, lines=[], shown=0, total=0, excerpt=ex)
    sources = [(kernel_source, ".cu", "cuda")]
    sources += [(h, ".cu", "cuda") for h in introduced_headers(v, earlier) if h != kernel_source]
    sources.append((v.path, ".py", "python"))
    for path, suffix, language in sources:
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        prev = _predecessor(v, suffix, earlier, text, path)
        if prev is None:
            new_files.append(path)
            continue
        old = prev.read_text(encoding="utf-8")
        if language == "cuda":  # a shared header reads as the version that compiles it takes its branches
            text = _as_compiled_by(v, earlier, path) or text
            old = _as_compiled_by(v, earlier, prev, before=True) or old
        fresh = new_idea_words(words, old, text)
        for h in _hunks(old, text, language):
            total += changed(h)
            raw.append((path, prev, h))
            h = _focus(_collapse_removed(h), fresh, MAX_CHANGE_LINES)
            hunks.append((path, prev, h))
            score[id(h)] = _relevance(h, fresh)
    if any(_language(p) == "cuda" for p, _, _ in hunks):  # a CUDA version's change is in its kernel source
        hunks = [t for t in hunks if _language(t[0]) == "cuda"]
    # a hunk that only changes preprocessor lines (#define, #include) is shown only when nothing else changed
    code_hunks = [t for t in hunks if not _preprocessor_only(t[2])]
    hunks = code_hunks or hunks
    if kernel_source in new_files or not hunks:
        ex = key_excerpt(v, repo_root, earlier)
        return Change(path=ex.path, against=None, lines=[], shown=0, total=0, excerpt=ex)
    # a helper the version is the first to run, in a header the versions share, when it names the
    # version's name more often than any hunk of its own files: there is where its idea went
    named = name_words(v)
    shown_best = max((_relevance(h, named) for _, _, h in code_hunks), default=0)
    helpers = [(sum(1 for t in _helper_lines(d)[1] if _names_idea(t, named)), -i, d)
               for i, d in enumerate(brought_helpers(v, earlier))]
    if helpers and max(helpers)[0] > shown_best:
        d = max(helpers)[2]
        first, lines = _helper_lines(d)
        ex = Excerpt(path=rel(d.file), first_line=first, code="\n".join(lines[:MAX_LINES]), language="cuda",
                     truncated=len(lines) > MAX_LINES)
        return Change(path=rel(d.file), against=None, lines=[], shown=0, total=total, excerpt=ex, brought=d.name)

    pruned = _pruned([t for t in raw if t[0] == hunks[0][0]])
    if pruned is not None:  # the version keeps one of the earlier source's paths and removes the rest
        path, prev = hunks[0][0], hunks[0][1]
        ex = _kept(path, words, repo_root, name_words(v), n_lines=PRUNED_LINES)
        return Change(path=rel(path), against=rel(prev), lines=[], shown=0, total=total, excerpt=ex,
                      removed=pruned[0], edited=pruned[1])

    budget, chosen = MAX_CHANGE_LINES, []
    for path, prev, h in sorted(hunks, key=lambda t: (-score[id(t[2])], -changed(t[2]))):
        if budget <= 0:
            break
        if len(h) > budget:  # the largest hunk alone is over the budget: its first lines, the rest counted
            if chosen:
                continue
            rest = sum(k in ("add", "del") for k, _, _ in h[budget - 1:])
            h = h[:budget - 1] + [("gap", f"… {rest} more changed lines in this hunk", h[budget - 1][2])]
        chosen.append((path, prev, h))
        budget -= len(h)
    order = {id(h): i for i, (_, _, h) in enumerate(hunks)}
    chosen.sort(key=lambda t: (0 if _language(t[0]) == "cuda" else 1, order.get(id(t[2]), 0)))
    lines: list[tuple[str, str]] = []
    files = []
    for path, prev, h in chosen:
        if path not in files:
            files.append(path)
            if len({p for p, _, _ in chosen}) > 1:
                lines.append(("hunk", f"{rel(path)} (against {rel(prev)})"))
        lines.append(("hunk", f"@@ line {h[0][2]}"))
        lines += [(k, t) for k, t, _ in h]
    first = chosen[0]
    return Change(path=rel(first[0]), against=rel(first[1]), lines=lines,
                  shown=sum(changed(h) for _, _, h in chosen), total=total)


def key_change_cached(v: Version, earlier: list[Version], repo_root: Path, cache: Path | None) -> Change:
    """:func:`key_change`, kept in ``cache`` by the hash of this module, the version, the earlier
    versions and every source it may read (the assignment's .py, .cu and .cuh files and the shared
    headers): an unchanged build does not diff the sources again."""
    if cache is None:
        return key_change(v, earlier, repo_root)
    import hashlib
    import pickle

    from . import chart_cache

    h = hashlib.sha256(Path(__file__).read_bytes())
    h.update(v.name.encode() + str(repo_root.resolve()).encode())
    h.update(" ".join(sorted(w.name for w in earlier)).encode())
    h.update(_sources_digest(v.assignment_dir).encode())

    def load(data: bytes) -> Change:
        try:
            found = pickle.loads(data)
        except (pickle.UnpicklingError, EOFError, AttributeError, ImportError) as e:
            raise ValueError(str(e)) from e
        if not isinstance(found, Change):
            raise ValueError("not a Change")
        return found

    def make() -> bytes:
        change = key_change(v, earlier, repo_root)
        change.html()  # highlighted once, kept with it
        return pickle.dumps(change)

    return chart_cache.kept(cache, f"change-{h.hexdigest()[:32]}.pickle", make, load, "change-*.pickle", CHANGES_KEPT)


CHANGES_KEPT = 256  # newest computed excerpts kept in the cache

_DIGESTS: dict[Path, tuple[tuple, str]] = {}


def _sources_digest(folder: Path) -> str:
    """A hash of the text of every .py, .cu and .cuh file of an assignment's folder and of the shared
    headers beside it, read again only when one of them changed (its modification time or size)."""
    import hashlib

    files = sorted(p for top in (folder, folder.parent / "common") if top.is_dir() for p in top.rglob("*")
                   if p.suffix in (".py", ".cu", ".cuh") and p.is_file() and "__pycache__" not in p.parts)
    state = tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in files)
    hit = _DIGESTS.get(folder)
    if hit is None or hit[0] != state:
        h = hashlib.sha256()
        for p in files:
            h.update(str(p.relative_to(folder.parent)).encode() + b"\0" + p.read_bytes())
        hit = _DIGESTS[folder] = (state, h.hexdigest())
    return hit[1]
