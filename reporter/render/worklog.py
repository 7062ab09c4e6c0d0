"""kernels/<name>/worklog.md: the people's narrative, with its numbers bound to the records.

Format: YAML front matter (title, authors, gpu, ...), then ``## vNN_slug`` sections (one per
version, read by :mod:`reporter.worklog_sections`, the one reader of the file's structure, with ``###`` subsections for the work-log questions), ``## Why we stopped`` and
``## How LLMs helped``; any other ``##`` section is kept in order as front text. Numbers are
jinja expressions (``{{ v03.median_ms }}``) evaluated against the records; a reference that
does not resolve raises :class:`WorklogError` naming the file and line.
"""

from __future__ import annotations

import functools
import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import yaml

from ..analysis.facts import BindingError
from ..assignments import short_handle
from ..worklog_sections import CLOSING_SECTIONS, heading_version, headings

STOPPED, LLMS = CLOSING_SECTIONS


class WorklogError(Exception):
    pass


@dataclass
class Section:
    title: str
    markdown: str
    html: str = ""
    line: int = 0


@dataclass
class Worklog:
    path: Path
    meta: dict[str, Any]
    versions: dict[str, Section] = field(default_factory=dict)  # keyed by 'vNN'
    stopped: Section | None = None
    llms: Section | None = None
    front: list[Section] = field(default_factory=list)

    @property
    def title(self) -> str | None:
        return self.meta.get("title")

    @property
    def authors(self) -> list[str]:
        a = self.meta.get("authors") or []
        return [a] if isinstance(a, str) else [str(x) for x in a]


def _read(path: Path) -> str:
    """The worklog's text: UTF-8, a byte-order mark stripped, line ends as text mode reads them; bytes
    that are not UTF-8 are one error naming the first."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise WorklogError(f"{path}: cannot read: {e.strerror or e}") from e
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise WorklogError(f"{path}: not UTF-8 text (byte {e.start} is {raw[e.start]:#04x}): "
                           "save the worklog as UTF-8") from None
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def _split_front_matter(text: str, path: Path) -> tuple[dict[str, Any], str, int]:
    if not text.startswith("---"):
        return {}, text, 0
    end = text.find("\n---", 3)
    if end < 0:
        raise WorklogError(f"{path}:1: front matter opened with '---' is never closed")
    try:
        meta = yaml.safe_load(text[3:end]) or {}
    except yaml.YAMLError as e:
        line = getattr(getattr(e, "problem_mark", None), "line", 0) + 2
        raise WorklogError(f"{path}:{line}: front matter is not valid YAML: {e}") from e
    if not isinstance(meta, dict):
        raise WorklogError(f"{path}:2: front matter must be 'key: value' lines")
    body_start = text.find("\n", end + 1) + 1
    offset = text[:body_start].count("\n")
    return meta, text[body_start:], offset


class _Refused(ArithmeticError):
    """A number the binder will not make or print: too large, or not finite."""


class _TooLong(RuntimeError):
    """Binding ran past :data:`TIME_LIMIT_S`."""


# what binding a worklog may raise besides our own errors: a template is the people's text, so any
# of these is their mistake, named by file and line, never a traceback
_BIND_ERRORS = (jinja2.TemplateError, BindingError, TypeError, ValueError, ArithmeticError, LookupError,
                AttributeError, RecursionError, _TooLong)

TIME_LIMIT_S = 60.0  # a worklog whose binding runs longer is stopped (the committed ones bind in well under 1 s)
MAX_DIGITS = 300  # an integer that arithmetic makes with more digits is refused
MAX_LENGTH = 100_000  # a string or list that '*' or '+' makes longer than this is refused
_MAX_BITS = int(MAX_DIGITS / math.log10(2)) + 1
_SIZED = (str, list, tuple)


def _finite(x: Any) -> bool:
    return not isinstance(x, float) or math.isfinite(x)


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _check_operands(op: str, left: Any, right: Any) -> None:
    """Refuse, before computing it, an operation whose result would be too large to make in time."""
    if op == "**" and isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1:
        digits = right * math.log10(abs(left))
        if digits > MAX_DIGITS:
            raise _Refused(f"{left} ** {right} is too large (about {digits:.3g} digits; at most {MAX_DIGITS})")
    if op == "*":
        for seq, n in ((left, right), (right, left)):
            if isinstance(seq, _SIZED) and isinstance(n, int) and len(seq) * n > MAX_LENGTH:
                raise _Refused(f"repeating a {type(seq).__name__} of length {len(seq)} {n} times is too large "
                               f"(at most {MAX_LENGTH:,} items)")
    if op == "+" and isinstance(left, _SIZED) and isinstance(right, _SIZED) and len(left) + len(right) > MAX_LENGTH:
        raise _Refused(f"joining {len(left)} and {len(right)} items is too large (at most {MAX_LENGTH:,} items)")
    if op == "%" and isinstance(left, str):
        for width in re.findall(r"%[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?", left):
            if any(w == "*" or (w and int(w) > MAX_LENGTH) for w in width):
                raise _Refused(f"a '%' format width or precision of more than {MAX_LENGTH:,} (or '*') is refused")


def _check_result(op: str, left: Any, right: Any, result: Any) -> Any:
    if isinstance(result, float) and not math.isfinite(result) and _finite(left) and _finite(right):
        raise _Refused(f"{left!r} {op} {right!r} overflows: the result is not a finite number")
    if isinstance(result, int) and result.bit_length() > _MAX_BITS:
        raise _Refused(f"the result of '{op}' is too large (more than {MAX_DIGITS} digits)")
    return result


class _CodeGenerator(jinja2.compiler.CodeGenerator):
    def visit_Const(self, node: jinja2.nodes.Const, frame: Any) -> None:
        value = node.as_const(frame.eval_ctx)
        if isinstance(value, float) and not math.isfinite(value):  # '1e400': jinja would write 'inf' into the code
            self.fail("a number too large for a float (more than 1.8e308)", node.lineno)
        super().visit_Const(node, frame)


def _environment(**options: Any) -> Any:
    """The sandbox a worklog is bound in: no constant folding at compile time (the optimizer and the
    output of constants would evaluate the people's expressions outside these checks, or forever),
    arithmetic through :func:`_check_operands` and :func:`_check_result`, and a time limit checked at
    every call, attribute, item, operator and printed value."""
    from jinja2.sandbox import SandboxedEnvironment

    class Bounded(SandboxedEnvironment):
        code_generator_class = _CodeGenerator
        intercepted_binops = frozenset({"+", "-", "*", "/", "//", "%", "**"})
        deadline = math.inf

        def tick(self) -> None:
            if time.monotonic() > self.deadline:
                raise _TooLong(f"binding took longer than {TIME_LIMIT_S:g} s and was stopped (a loop too long?)")

        def start(self) -> None:
            self.deadline = time.monotonic() + TIME_LIMIT_S

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            self.tick()
            _check_operands(operator, left, right)
            return _check_result(operator, left, right, self.binop_table[operator](left, right))

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
            __self.tick()
            return super().call(__context, __obj, *args, **kwargs)

        def getattr(self, obj: Any, attribute: str) -> Any:
            self.tick()
            return super().getattr(obj, attribute)

        def getitem(self, obj: Any, argument: Any) -> Any:
            self.tick()
            return super().getitem(obj, argument)

    env = Bounded(optimized=False, **options)
    env.finalize = lambda value: _marked(value, env)
    return env


def _marked(value: Any, env: Any = None) -> Any:
    """A bound number that says what it stands for is printed marked for the report's consistency check
    (reporter.render.ledger); everything else as it is. A number that is not finite is never printed
    (a bound figure that is missing prints 'n/a' as its own)."""
    from ..analysis.facts import Number
    from .ledger import mark

    if env is not None:
        env.tick()
    if isinstance(value, float) and (math.isinf(value) or (math.isnan(value) and not isinstance(value, Number))):
        raise _Refused(f"{value} is not a finite number; the report prints none")
    key = getattr(value, "key", None) if isinstance(value, Number) else None
    return str(mark(key, value, unit=value.unit)) if key else value  # type: ignore[attr-defined]


def bind(text: str, context: dict[str, Any], path: Path, first_line: int = 1, cache: Path | None = None) -> str:
    """Evaluate the {{ }} expressions in a sandbox (no attribute that starts with '_', no calls
    to unsafe methods); every error names file:line and the expression. ``cache``: where the
    compiled text is kept, so an unchanged worklog is not compiled again."""
    from .chart_cache import template_bytecode

    name = str(path)
    env = _environment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True,
                       loader=jinja2.FunctionLoader(lambda n: text if n == name else None),
                       bytecode_cache=template_bytecode(cache, __file__))
    try:
        template = env.get_template(name)
    except jinja2.TemplateSyntaxError as e:
        line = e.lineno or 1
        opened = _innermost_unclosed(text) if "Unexpected end of template" in (e.message or "") else None
        if opened is not None:  # jinja names the end of the text; the mistake is where the block opened
            tag, line = opened
            raise WorklogError(f"{path}:{first_line + line - 1}: template syntax: '{{% {tag} %}}' is never closed "
                               f"({e.message})") from e
        raise WorklogError(f"{path}:{first_line + line - 1}: template syntax: {e.message}") from e
    except Exception as e:  # noqa: BLE001 - compiling the people's text: whatever it raises is their mistake
        for i, line in enumerate(text.splitlines()):  # the first line that fails to compile on its own
            if "{{" not in line and "{%" not in line:
                continue
            try:
                env.compile(line)
            except jinja2.TemplateSyntaxError:
                continue  # part of a multi-line block
            except Exception as e2:  # noqa: BLE001
                exprs = _exprs(line)
                raise WorklogError(f"{path}:{first_line + i}: {exprs}: cannot be compiled: {_why(e2)}") from e2
        raise WorklogError(f"{path}: cannot be compiled: {_why(e)}") from e
    env.start()
    try:
        return template.render(**context)
    except _BIND_ERRORS as e:
        # jinja maps the failing frame to its template line; where it does not, fall back to the
        # first line whose expressions fail on their own (which misses names set by {% set %})
        lines = text.splitlines()
        where = _template_line(e)
        if where is not None and 1 <= where <= len(lines):
            exprs = _exprs(lines[where - 1])
            raise WorklogError(f"{path}:{first_line + where - 1}: {exprs}: {_why(e)}") from e
        env.start()  # the search below has a time limit of its own
        for i, line in enumerate(lines):
            if "{{" not in line and "{%" not in line:
                continue
            try:
                env.from_string(line).render(**context)
            except jinja2.TemplateSyntaxError:
                continue  # part of a multi-line block; fall through to the whole-text error
            except _TooLong:
                break
            except _BIND_ERRORS as e2:
                exprs = _exprs(line)
                raise WorklogError(f"{path}:{first_line + i}: {exprs}: {_why(e2)}") from e2
        raise WorklogError(f"{path}: {_why(e)}") from e


_BLOCK_TAGS = {"if", "for", "with", "macro", "call", "filter", "block", "raw", "autoescape", "set"}
_TAG = re.compile(r"\{%-?\s*(\w+)([^%]*?)-?%\}")


def _innermost_unclosed(text: str) -> tuple[str, int] | None:
    """The innermost block tag ('if', 'for', ...) that is never closed, and its line."""
    stack: list[tuple[str, int]] = []
    for m in _TAG.finditer(text):
        tag, rest = m.group(1), m.group(2)
        line = text.count("\n", 0, m.start()) + 1
        if tag == "set" and "=" in rest:
            continue  # {% set x = ... %} is not a block
        if tag in _BLOCK_TAGS:
            stack.append((tag, line))
        elif tag.startswith("end") and stack and stack[-1][0] == tag[3:]:
            stack.pop()
    return stack[-1] if stack else None


def _template_line(e: BaseException) -> int | None:
    """The line of the template where ``e`` was raised, from the frames jinja maps to it."""
    import traceback

    found = None
    for frame in traceback.extract_tb(e.__traceback__):
        if frame.filename == "<template>":
            found = frame.lineno
    return found


def _exprs(line: str, most: int = 80) -> str:
    """The expressions of a line as an error quotes them (each cut to ``most`` characters), or the line."""
    found = re.findall(r"\{\{.*?\}\}|\{%.*?%\}", line) or [line.strip()]
    return ", ".join(x if len(x) <= most else x[: most - 4] + " ..." + x[-2:] for x in found)


def _why(e: Exception) -> str:
    msg = str(e)
    if isinstance(e, OverflowError):
        return f"the result overflows ({e.args[-1] if e.args else msg})"
    if isinstance(e, jinja2.UndefinedError):
        m = re.search(r"'(\w+)' is undefined", msg)
        if m:
            return f"'{m.group(1)}' is not a version, peer or known name"
    return msg


def read_meta(path: Path) -> dict[str, Any]:
    """Only the front matter (e.g. to learn the target GPU before binding)."""
    return _split_front_matter(_read(path), path)[0]


def parse(path: Path, context: dict[str, Any], cache: Path | None = None) -> Worklog:
    """Read, bind and split a worklog; the HTML of each section is left to the renderer. ``cache``:
    where the compiled worklog is kept between builds (:func:`bind`)."""
    text = _read(path)
    meta, body, offset = _split_front_matter(text, path)
    bound = bind(body, context, path, first_line=offset + 1, cache=cache)
    wl = Worklog(path=path, meta=meta)
    lines = bound.splitlines()
    level2 = [h for h in headings(bound) if h.level == 2]  # outside fenced code: a '## ' in a code block is code
    sections: list[Section] = []
    first = level2[0].line if level2 else len(lines)
    start = next((i for i in range(first) if lines[i].strip() and not lines[i].startswith("# ")), None)
    if start is not None:  # text before the first section: front text without a title
        sections.append(Section(title="", markdown="".join(x + "\n" for x in lines[start:first]),
                                line=offset + 1 + start))
    for k, h in enumerate(level2):
        end = level2[k + 1].line if k + 1 < len(level2) else len(lines)
        sections.append(Section(title=h.title, markdown="".join(x + "\n" for x in lines[h.line + 1 : end]),
                                line=offset + 1 + h.line))
    for s in sections:
        key = s.title.lower().rstrip(":. ")
        named = heading_version(s.title)
        if named:
            short = short_handle(named)
            if short in wl.versions:
                raise WorklogError(f"{path}:{s.line}: a second section for {short}")
            wl.versions[short] = s
        elif key == STOPPED:
            wl.stopped = s
        elif key == LLMS:
            wl.llms = s
        else:
            wl.front.append(s)
    return wl


@functools.cache
def _markdown() -> Any:
    """One parser for the build (making one costs more than rendering a paragraph)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"typographer": True}).enable(["table", "replacements", "smartquotes"])


def markdown_to_html(md: str) -> str:
    """The worklog's markdown as HTML; in a table's cells a line may also break after an underscore (a
    ``<wbr>`` there), so a narrow column wraps ``test_small`` as ``test_`` / ``small``, not mid-word."""
    parser = _markdown()
    env: dict[str, Any] = {}
    tokens = parser.parse(md, env)
    in_cell = False
    for t in tokens:
        if t.type in ("th_open", "td_open"):
            in_cell = True
        elif t.type in ("th_close", "td_close"):
            in_cell = False
        elif in_cell and t.type == "inline" and t.children:
            t.children = _breaks_after_underscores(t.children)
    return parser.renderer.render(tokens, parser.options, env)


def _breaks_after_underscores(children: list[Any]) -> list[Any]:
    """Inline tokens with a ``<wbr>`` after each underscore of their plain text (code spans are left whole)."""
    from markdown_it.token import Token

    out: list[Any] = []
    for c in children:
        if c.type != "text" or "_" not in c.content:
            out.append(c)
            continue
        pieces = c.content.split("_")
        for i, piece in enumerate(pieces):
            last = i == len(pieces) - 1
            text = piece if last else piece + "_"
            if text:
                out.append(Token("text", "", 0, content=text))
            if not last:
                out.append(Token("html_inline", "", 0, content="<wbr>"))
    return out


@functools.cache
def _markdown_text() -> Any:
    """A parser for the tool's own sentences: markdown, but any HTML in them is text ('attn<Cfg>')."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"typographer": True, "html": False}).enable(["replacements", "smartquotes"])


def inline_markdown(md: str) -> str:
    """One line of the tool's markdown as inline HTML (code spans as code, no paragraph around it, any
    HTML in it escaped)."""
    return _markdown_text().renderInline(md)
