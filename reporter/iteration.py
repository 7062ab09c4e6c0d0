"""The iteration workflow behind `report new`, `list`, `show`, `diff` and `history`.

Everything here is independent of the terminal: scaffolding the next version (and a new
assignment), finding runs by name (``v02``, ``v02_fused_triton``, ``v02@<run-id prefix>``,
a record's path), the rows of `report list`, and the markdown and HTML renderings of a
diff. The typer commands and their rich output live in :mod:`reporter.cli_iteration`.

Errors are :class:`IterationError` with a one-line message naming the path, the name or the
flag at fault; the CLI prints it and exits with code 2.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from . import store
from .analysis.diff import FigureDelta, RunDiff, format_ms, format_ms_range
from .assignments import (VERSION_RE, AssignmentError, LegacyCaseKeys, get_assignment, legacy_case_keys,
                          list_assignments, read_literal)
from .records import Run
from .standing import standing_run, standing_runs

TEMPLATES_DIR = Path(__file__).resolve().parents[1] / "report_templates"
SCAFFOLD_DIR = TEMPLATES_DIR / "scaffold"

# Marks every text a person must write before hand-in, so the report can flag leftovers.
PLACEHOLDER = "EDIT ME"
NEW_VERSION_RE = re.compile(r"^v(\d{2,3})_[a-z0-9]+(?:_[a-z0-9]+)*$")
ASSIGNMENT_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")
# The work-log questions, used when worklog.md has no version section to copy them from.
DEFAULT_QUESTIONS = ["What we concluded", "Hypothesis", "How we came to it", "What to try next"]
CLOSING_SECTIONS = ("why we stopped", "how llms helped")


class IterationError(Exception):
    """A bad name, a missing run or a file that would be overwritten; one line, names the culprit."""


# --------------------------------------------------------------------------- spec literals


def spec_literal(assignment_dir: Path, name: str, default: Any = None) -> Any:
    """A constant of ``assignment.py`` read without importing it (no torch, no side effects);
    falls back to importing the module when the value is not a literal."""
    missing = object()
    value = read_literal(assignment_dir / "assignment.py", name, missing)
    if value is not missing:
        return value
    try:
        return getattr(get_assignment(assignment_dir.parent, assignment_dir.name).spec, name, default)
    except Exception:  # an assignment that does not import here (no torch, say) keeps the default
        return default


def legacy_keys(kernels: Path | None, assignment: str) -> LegacyCaseKeys | None:
    """How the assignment's older records name their case keys (None without a kernels/ folder)."""
    if kernels is None or not (kernels / assignment / "assignment.py").is_file():
        return None
    return legacy_case_keys(kernels / assignment) or None


def benchmark_case(kernels: Path, assignment: str) -> str:
    return str(spec_literal(kernels / assignment, "BENCHMARK_CASE", "benchmark"))


# --------------------------------------------------------------------------- names and runs


def short_handle(version: str) -> str:
    m = VERSION_RE.match(version)
    return f"v{int(m.group(1)):02d}" if m else version


def known_assignments(kernels: Path, logs: Path) -> list[str]:
    names = {a.name for a in list_assignments(kernels)}
    if logs.is_dir():
        names |= {p.name for p in logs.iterdir() if p.is_dir() and p.name != "devices" and any(p.glob("*/*.json"))}
    return sorted(names)


def check_assignment(kernels: Path, logs: Path, assignment: str) -> None:
    if assignment not in known_assignments(kernels, logs):
        have = ", ".join(known_assignments(kernels, logs)) or "none"
        raise IterationError(f"no assignment '{assignment}': neither {kernels / assignment / 'assignment.py'} "
                             f"nor records under {logs / assignment} (have: {have})")


def known_versions(kernels: Path, logs: Path, assignment: str) -> list[str]:
    """Versions with a file under kernels/ or records under logs/ (a deleted file keeps its runs)."""
    names: set[str] = set()
    folder = kernels / assignment
    if folder.is_dir():
        names |= {p.stem for p in folder.glob("v*.py") if VERSION_RE.match(p.stem)}
    if (logs / assignment).is_dir():
        names |= {p.name for p in (logs / assignment).iterdir() if p.is_dir() and VERSION_RE.match(p.name)}
    return sorted(names, key=lambda n: (int(VERSION_RE.match(n).group(1)), n))  # type: ignore[union-attr]


def resolve_version(kernels: Path, logs: Path, assignment: str, handle: str) -> str:
    """'v02' or 'v02_fused_triton' -> 'v02_fused_triton'."""
    versions = known_versions(kernels, logs, assignment)
    if handle in versions:
        return handle
    matches = [v for v in versions if short_handle(v) == handle]
    if len(matches) == 1:
        return matches[0]
    have = ", ".join(versions) or "none"
    if matches:
        raise IterationError(f"version '{handle}' of {assignment} is ambiguous: {', '.join(matches)}")
    raise IterationError(f"no version '{handle}' of {assignment} in {kernels / assignment} or {logs / assignment} "
                         f"(have: {have})")


@dataclass(frozen=True)
class RunSpec:
    """How a user named a run: a record file, or a version with an optional run-id prefix."""

    text: str
    path: Path | None = None
    version: str | None = None
    run_id: str | None = None


def parse_run_spec(text: str) -> RunSpec:
    if text.endswith(".json") or ("/" in text and Path(text).is_file()):
        return RunSpec(text, path=Path(text))
    version, _, run_id = text.partition("@")
    if "@" in text and not run_id:
        raise IterationError(f"'{text}': expected VERSION@RUN_ID, the run id (or a prefix of it) is empty")
    return RunSpec(text, version=version, run_id=run_id or None)


def load_run_file(path: Path) -> Run:
    if not path.is_file():
        raise IterationError(f"{path}: no such record file")
    try:
        record = store.load(path)
    except store.RecordError as e:
        raise IterationError(str(e)) from e
    if not isinstance(record, Run):
        raise IterationError(f"{path}: a '{record.kind}' record, not a run")
    return record


def runs_of(logs: Path, assignment: str, version: str, case: str | None = None, *,
            kernels: Path | None = None) -> list[Run]:
    """Runs of one version (on one case), oldest first; with ``kernels``, older records' case keys
    read as the assignment names them today."""
    try:
        found = store.runs(logs, assignment, version, legacy=legacy_keys(kernels, assignment))
    except store.RecordError as e:
        raise IterationError(str(e)) from e
    return [r for r in found if case is None or r.case_name == case]


def candidate_runs(logs: Path, assignment: str, version: str, case: str, gpu: str | None = None, *,
                   kernels: Path | None = None) -> list[Run]:
    """Runs of one version on one case (and GPU slug), oldest first; never empty."""
    found = runs_of(logs, assignment, version, kernels=kernels)
    on_case = [r for r in found if r.case_name == case]
    if not on_case:
        cases = sorted({r.case_name for r in found})
        if cases:
            raise IterationError(f"no run of {assignment}/{version} on case '{case}' (cases run: {', '.join(cases)}); "
                                 "choose one with --case")
        raise IterationError(f"no run of {assignment}/{version} yet (nothing under {logs / assignment / version}); "
                             f"run it with: report run {assignment} --version {short_handle(version)}")
    if gpu is not None:
        on_gpu = [r for r in on_case if r.device.slug == gpu]
        if not on_gpu:
            gpus = ", ".join(sorted({r.device.slug for r in on_case}))
            raise IterationError(f"no run of {assignment}/{version} on case '{case}' on GPU '{gpu}' "
                                 f"(GPUs run: {gpus}); choose one with --gpu")
        return on_gpu
    return on_case


def standing_run_of(logs: Path, assignment: str, version: str, case: str, gpu: str | None = None, *,
                    kernels: Path | None = None) -> Run:
    """The run that stands for the version on the case (:mod:`reporter.standing`), on ``gpu`` or
    else on the GPU of its newest run."""
    runs = candidate_runs(logs, assignment, version, case, gpu, kernels=kernels)
    chosen = standing_run(runs, version, case, gpu=gpu or runs[-1].device.slug)
    assert chosen is not None  # candidate_runs is never empty
    return chosen


def find_run(logs: Path, assignment: str, version: str, run_id: str, case: str | None = None, *,
             kernels: Path | None = None) -> Run:
    """A run by id or unique prefix; a prefix that several cases' runs share (a session's time, say)
    picks the one on ``case`` when that one is unique."""
    if case is not None:
        matching = [r for r in runs_of(logs, assignment, version, kernels=kernels) if r.run_id.startswith(run_id)]
        on_case = [r for r in matching if r.case_name == case]
        if len(matching) > 1 and len(on_case) == 1 and not any(r.run_id == run_id for r in matching):
            return on_case[0]
    try:
        return store.find_run(logs, assignment, version, run_id, legacy=legacy_keys(kernels, assignment))
    except store.RecordError as e:
        raise IterationError(str(e)) from e


def _newest(runs: list[Run]) -> Run:
    return max(runs, key=lambda r: r.created_utc)


def _on_gpu(runs: list[Run], gpu: str) -> list[Run]:
    return [r for r in runs if r.device.slug == gpu]


def resolve_pair(kernels: Path, logs: Path, args: list[str], case: str | None,
                 gpu: str | None = None) -> tuple[Run, Run]:
    """The two runs `report diff` compares, from its positional arguments:
    ``A.json B.json`` or ``ASSIGNMENT A B`` where A and B are versions, ``version@run-id`` or files.

    A bare version means the run that stands for it on the case (reporter.standing, as in the
    report); when both sides are bare versions and ran on a GPU in common, on the GPU of the
    newest such run (``gpu`` forces one), so that a run on another card does not silently become
    the baseline. ``v03 v03`` compares the latest run with the one before it on the same GPU.
    """
    if len(args) == 2:
        specs = [parse_run_spec(t) for t in args]
        if all(s.path for s in specs):
            return load_run_file(specs[0].path), load_run_file(specs[1].path)  # type: ignore[arg-type]
        raise IterationError(f"two arguments must both be record files (*.json); to compare versions give the "
                             f"assignment first: report diff ASSIGNMENT {args[0]} {args[1]}")
    if len(args) != 3:
        raise IterationError(f"expected ASSIGNMENT A B or A.json B.json, got {len(args)} argument(s)")
    assignment = args[0]
    check_assignment(kernels, logs, assignment)
    specs = [parse_run_spec(args[1]), parse_run_spec(args[2])]
    hint = case or benchmark_case(kernels, assignment)  # what a run-id prefix shared by several cases means
    named: list[Run | None] = [_named_run(kernels, logs, assignment, s, hint) for s in specs]
    case = case or next((r.case_name for r in named if r is not None), None) or benchmark_case(kernels, assignment)
    if named[0] is not None and named[1] is not None:
        return named[0], named[1]
    if named[0] is None and named[1] is None:
        va, vb = (resolve_version(kernels, logs, assignment, s.version) for s in specs)  # type: ignore[arg-type]
        return _latest_pair(logs, assignment, va, vb, case, gpu, kernels)
    known = next(r for r in named if r is not None)
    bare = specs[named.index(None)]
    version = resolve_version(kernels, logs, assignment, bare.version)  # type: ignore[arg-type]
    runs = candidate_runs(logs, assignment, version, case, gpu, kernels=kernels)
    other = (_on_gpu(runs, known.device.slug) or runs)[-1]
    return (other, known) if named[0] is None else (known, other)


def _named_run(kernels: Path, logs: Path, assignment: str, spec: RunSpec, case: str | None = None) -> Run | None:
    """The run a file or a version@run-id names; None for a bare version."""
    if spec.path is not None:
        return load_run_file(spec.path)
    if spec.run_id is None:
        return None
    version = resolve_version(kernels, logs, assignment, spec.version)  # type: ignore[arg-type]
    return find_run(logs, assignment, version, spec.run_id, case, kernels=kernels)


def _latest_pair(logs: Path, assignment: str, va: str, vb: str, case: str, gpu: str | None,
                 kernels: Path | None = None) -> tuple[Run, Run]:
    runs_b = candidate_runs(logs, assignment, vb, case, gpu, kernels=kernels)
    if va == vb:  # a rerun: the latest against the one before it, on the same GPU when there is one
        if len(runs_b) < 2:
            raise IterationError(f"{assignment}/{va} has {len(runs_b)} run(s) on case '{case}': a same-version diff "
                                 f"needs two; name runs as {short_handle(va)}@RUN_ID")
        latest = runs_b[-1]
        return (_on_gpu(runs_b[:-1], latest.device.slug) or runs_b[:-1])[-1], latest
    runs_a = candidate_runs(logs, assignment, va, case, gpu, kernels=kernels)
    common = {r.device.slug for r in runs_a} & {r.device.slug for r in runs_b}
    slug = (_newest([r for r in runs_a + runs_b if r.device.slug in common]) if common
            else _newest(runs_b)).device.slug
    # each side is the run that stands for its version (reporter.standing), as in the report and `list`
    a = standing_run(_on_gpu(runs_a, slug) or runs_a, va, case)
    b = standing_run(_on_gpu(runs_b, slug) or runs_b, vb, case)
    assert a is not None and b is not None
    return a, b


# --------------------------------------------------------------------------- worklog.md


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


# --------------------------------------------------------------------------- scaffolding


@dataclass(frozen=True)
class PlannedFile:
    path: Path
    text: str
    create: bool  # False: an existing file (worklog.md) is rewritten with a section added


@dataclass(frozen=True)
class ScaffoldPlan:
    assignment: str
    version: str
    source_version: str | None  # the version copied; None for a fresh template
    new_assignment: bool
    files: list[PlannedFile]


def _render(template: str, **context: Any) -> str:
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(SCAFFOLD_DIR), keep_trailing_newline=True,
                             undefined=jinja2.StrictUndefined, autoescape=False)
    return env.get_template(template).render(placeholder=PLACEHOLDER, **context)


def replace_docstring(source: str, docstring: str, path: Path) -> str:
    """The module with its docstring replaced (or, without one, given one); the code is kept."""
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise IterationError(f"{path}:{e.lineno}: cannot copy a file with a syntax error ({e.msg})") from e
    lines = source.splitlines(keepends=True)
    first = tree.body[0] if tree.body else None
    if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        start, end = first.lineno - 1, first.end_lineno or first.lineno
    else:  # keep a shebang or encoding line on top
        start = end = next((i for i, ln in enumerate(lines) if not ln.startswith("#!") and "coding" not in ln[:30]), 0)
        docstring += "\n"
    return "".join(lines[:start]) + docstring + "".join(lines[end:])


def plan_new(kernels: Path, assignment: str, version: str, from_version: str | None = None,
             from_task: Path | None = None, benchmark_line: int | None = None) -> ScaffoldPlan:
    """What `report new` will write; raises before anything is written if a file would be overwritten.

    ``from_task``: a course problem folder (CS149 / GPU MODE format) that the new assignment
    loads at run time; ``benchmark_line`` the 0-based line of its test file that is the
    benchmark (default the last)."""
    if not ASSIGNMENT_NAME_RE.match(assignment):
        raise IterationError(f"assignment name '{assignment}' must be lowercase letters, digits and '_', "
                             "starting with a letter")
    if not NEW_VERSION_RE.match(version):
        raise IterationError(f"version name '{version}' must look like vNN_slug (e.g. v04_vectorized_loads): "
                             "'v', two or three digits, '_', lowercase words joined by '_'")
    folder = kernels / assignment
    if not (folder / "assignment.py").is_file():
        if folder.exists() and any(folder.iterdir()):
            raise IterationError(f"{folder} exists but holds no assignment.py: refusing to scaffold into it")
        if from_version:
            raise IterationError(f"--from {from_version}: assignment '{assignment}' does not exist yet "
                                 f"({folder / 'assignment.py'} is missing)")
        if from_task is not None:
            plan = _plan_course_assignment(folder, assignment, version, from_task, benchmark_line)
        else:
            plan = _plan_assignment(folder, assignment, version)
    elif from_task is not None:
        raise IterationError(f"--from-task: assignment '{assignment}' exists already ({folder / 'assignment.py'}); "
                             "--from-task makes a new one")
    else:
        plan = _plan_version(folder, assignment, version, from_version)
    for f in plan.files:
        if f.create and f.path.exists():
            raise IterationError(f"{f.path} already exists: refusing to overwrite it")
    return plan


def _plan_assignment(folder: Path, assignment: str, version: str, template: str = "assignment.py.j2",
                     **extra: Any) -> ScaffoldPlan:
    """A new assignment folder: assignment.py from ``template`` (with ``extra`` in its context), the
    first version and worklog.md."""
    ctx = dict(assignment=assignment, version=version, short=short_handle(version), source=None, source_short=None,
               **extra)
    section = _render("worklog_section.md.j2", questions=DEFAULT_QUESTIONS, **ctx)
    files = [
        PlannedFile(folder / "assignment.py", _render(template, **ctx), create=True),
        PlannedFile(folder / f"{version}.py", _render("first_version.py.j2", **ctx), create=True),
        PlannedFile(folder / "worklog.md", _render("worklog.md.j2", section=section.strip("\n"), **ctx), create=True),
    ]
    return ScaffoldPlan(assignment, version, None, True, files)


def _plan_course_assignment(folder: Path, assignment: str, version: str, task: Path,
                            benchmark_line: int | None) -> ScaffoldPlan:
    """A new assignment over a course problem folder: assignment.py loads the folder at run time."""
    import os

    from .course import TEST_FILE, case_names, parse_test_file, problem_title

    task = Path(task).expanduser()
    if not (task / "reference.py").is_file():
        raise IterationError(f"--from-task {task}: no reference.py there; expected a course problem folder "
                             "(reference.py, task.py, test_cases/test.txt: the CS149 / GPU MODE format)")
    try:
        lines = parse_test_file(task / TEST_FILE)
        names = case_names(len(lines), benchmark_line)
    except AssignmentError as e:
        raise IterationError(f"--from-task {task}: {e}") from e
    rel = os.path.relpath(task.resolve(), folder.resolve())
    title = problem_title(task)
    bench = names.index("benchmark")
    return _plan_assignment(folder, assignment, version, "course_assignment.py.j2",
                            title=title, title_literal=repr(title), task_arg=str(task),
                            task_dir_literal=repr(rel), test_file=TEST_FILE.as_posix(),
                            bench_word="last" if bench == len(names) - 1 else f"number {bench} (0-based)",
                            benchmark_index=None if benchmark_line is None else bench)


def _plan_version(folder: Path, assignment: str, version: str, from_version: str | None) -> ScaffoldPlan:
    try:
        a = get_assignment(folder.parent, assignment)
        existing = a.versions()
        source = a.version(from_version) if from_version else (existing[-1] if existing else None)
    except AssignmentError as e:
        raise IterationError(str(e) if not from_version else f"--from: {e}") from e
    if (folder / f"{version}.py").exists():
        raise IterationError(f"{folder / (version + '.py')} already exists: refusing to overwrite it")
    number = int(NEW_VERSION_RE.match(version).group(1))  # type: ignore[union-attr]
    taken = [v.name for v in existing if v.number == number]
    if taken:
        raise IterationError(f"version number v{number:02d} is taken by {folder / (taken[0] + '.py')}: "
                             f"pick the next free number")
    ctx = dict(assignment=assignment, version=version, short=short_handle(version),
               source=source.name if source else None, source_short=source.short if source else None)
    files: list[PlannedFile] = []
    if source is None:
        files.append(PlannedFile(folder / f"{version}.py", _render("first_version.py.j2", **ctx), create=True))
    else:
        code = source.path.read_text(encoding="utf-8")
        code = replace_docstring(code, _render("version_docstring.py.j2", **ctx), source.path)
        for ext in (".cu", ".cuh"):
            src = source.path.with_suffix(ext)
            if src.is_file():  # its CUDA source comes along, and the .py names the new copy
                code = code.replace(f"{source.name}{ext}", f"{version}{ext}")
                files.append(PlannedFile(folder / f"{version}{ext}", src.read_text(encoding="utf-8"), create=True))
        files.insert(0, PlannedFile(folder / f"{version}.py", code, create=True))
    files.append(_plan_worklog(folder, ctx, [v.name for v in existing]))
    return ScaffoldPlan(assignment, version, source.name if source else None, False, files)


def _plan_worklog(folder: Path, ctx: dict[str, Any], earlier: list[str]) -> PlannedFile:
    """Add the version's section to worklog.md; a missing worklog.md is created with a section
    for every version so far, so the report finds one for each."""
    path = folder / "worklog.md"
    if not path.is_file():
        chain = [*earlier, ctx["version"]]
        sections = [_render("worklog_section.md.j2", questions=DEFAULT_QUESTIONS, **{
            **ctx, "version": name, "short": short_handle(name),
            "source": chain[i - 1] if i else None, "source_short": short_handle(chain[i - 1]) if i else None,
        }).strip("\n") for i, name in enumerate(chain)]
        return PlannedFile(path, _render("worklog.md.j2", section="\n\n".join(sections), **ctx), create=True)
    text = path.read_text(encoding="utf-8")
    existing = version_section(text, ctx["version"])
    if existing is not None:
        heading = existing.splitlines()[0]
        raise IterationError(f"{path} already has a section for {ctx['short']} ('{heading}'): refusing to add another")
    section = _render("worklog_section.md.j2", questions=worklog_questions(text), **ctx)
    return PlannedFile(path, insert_section(text, section), create=False)


def write_plan(plan: ScaffoldPlan) -> list[Path]:
    """Write the planned files; new ones with mode 'x', so a file that appeared meanwhile is not clobbered."""
    written = []
    for f in plan.files:
        f.path.parent.mkdir(parents=True, exist_ok=True)
        if f.create:
            try:
                with f.path.open("x", encoding="utf-8") as out:
                    out.write(f.text)
            except FileExistsError as e:
                raise IterationError(f"{f.path} already exists: refusing to overwrite it") from e
        else:
            store.write_atomic(f.path, f.text)
        written.append(f.path)
    return written


# --------------------------------------------------------------------------- report list


@dataclass
class ListRow:
    assignment: str
    version: str
    case: str
    gpu: str | None  # GPU slug of the table the row belongs to; None when nothing ran
    run: Run | None
    speedup_vs_first: float | None = None  # first version's median / this median, same GPU
    first_version: str | None = None
    best_peer: str | None = None
    speedup_vs_best_peer: float | None = None  # fastest peer's median / the version's median, same run
    peers_run: Run | None = None  # the run the peer figures come from: ``run``, or an earlier one (see below)

    @property
    def profiled(self) -> bool:
        return bool(self.run and self.run.profile is not None and self.run.profile.status == "ok")

    @property
    def peers_from_earlier_run(self) -> bool:
        """The latest run timed no peers (--no-peers, say to profile), so they come from an earlier run."""
        return self.peers_run is not None and self.peers_run is not self.run


def timed_peers(run: Run) -> list:
    """The peers of a run that were timed the way the run's version was and (when checked) passed.

    Records made before peers followed ``--ranked`` hold ranked versions with plain peers; those
    peers are not comparable and are left out."""
    return [p for p in run.peers if p.timing is not None and (p.check is None or p.check.passed)
            and (run.timing is None or run.timing.timed_like(p.timing))]


def latest_run_with_peers(runs: list[Run], like: Run) -> Run | None:
    """The newest timed run with comparable peers of the same version, case, GPU and code as
    ``like``, timed the same way (``like`` itself when it has them): where `list` and `show`
    find peers when the latest run was made without them. Peers and version are always compared
    within one run."""
    same = [r for r in runs if r.ok and timed_peers(r) and r.version == like.version
            and r.case_name == like.case_name and r.device.slug == like.device.slug
            and r.code.digest == like.code.digest and r.created_utc <= like.created_utc
            and like.timing is not None and like.timing.timed_like(r.timing)]
    return max(same, key=lambda r: r.created_utc) if same else None


def list_rows(kernels: Path, logs: Path, assignment: str | None = None, case: str | None = None,
              gpu: str | None = None) -> list[ListRow]:
    """Per assignment and GPU, every version with its latest run on the case (benchmark by default).

    Runs of different GPUs never share a table: a speedup across cards says nothing about the code.
    """
    if assignment:
        check_assignment(kernels, logs, assignment)
    rows: list[ListRow] = []
    for name in [assignment] if assignment else known_assignments(kernels, logs):
        on_case = case or benchmark_case(kernels, name)
        try:
            runs = [r for r in (store.runs(logs, name, legacy=legacy_keys(kernels, name)) if (logs / name).is_dir()
                                else []) if r.case_name == on_case]
        except store.RecordError as e:
            raise IterationError(str(e)) from e
        gpus: list[str | None] = [gpu] if gpu else list(dict.fromkeys(r.device.slug for r in runs)) or [None]
        versions = known_versions(kernels, logs, name)
        for slug in gpus:
            on_gpu = [r for r in runs if r.device.slug == slug]
            latest = {ver: r for (ver, _), r in standing_runs(on_gpu).items()}  # the report's choice
            rows += _assignment_rows(name, on_case, slug, versions, latest, on_gpu)
    return rows


def _assignment_rows(assignment: str, case: str, gpu: str | None, versions: list[str],
                     latest: dict[str, Run], on_gpu: list[Run]) -> list[ListRow]:
    rows = [ListRow(assignment, v, case, gpu, latest.get(v)) for v in versions]
    first = next((r for r in rows if r.run is not None and r.run.ok), None)
    for row in rows:
        run = row.run
        if run is None or not run.ok:
            continue
        mine = run.timing.mean_ms  # type: ignore[union-attr]  # the figure (reporter.standing)
        if first is not None:
            row.speedup_vs_first = first.run.timing.mean_ms / mine  # type: ignore[union-attr]
            row.first_version = first.version
        source = latest_run_with_peers(on_gpu, run)
        if source is not None:
            best = min(timed_peers(source), key=lambda p: p.timing.mean_ms)
            row.best_peer = best.name
            row.speedup_vs_best_peer = best.timing.mean_ms / source.timing.mean_ms  # type: ignore[union-attr]
            row.peers_run = source
    return rows


# --------------------------------------------------------------------------- diff renderings


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
    out += [f"| median CI | {format_ms_range(*v.ci_a)} ({v.ci_coverage_a:.0%}) "
            f"| {format_ms_range(*v.ci_b)} ({v.ci_coverage_b:.0%}) | | |", ""]
    return out + remarks


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

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES_DIR),
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
