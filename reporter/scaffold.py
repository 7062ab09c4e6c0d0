"""``report new``: the files of the next version (and of a new assignment), planned first and
written only when nothing would be overwritten.

Every text a person must write before hand-in carries :data:`PLACEHOLDER`, so the report can flag
leftovers.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import store
from .assignments import VERSION_RE, AssignmentError, check_name, get_assignment, is_new_version_name, short_handle
from .lookup import IterationError
from .render import TEMPLATES
from .scaffold_cuda import plan_cuda
from .worklog_sections import DEFAULT_QUESTIONS, PLACEHOLDER, insert_section, version_section, worklog_questions

SCAFFOLD_DIR = TEMPLATES / "scaffold"


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
    moved_header: str | None = None  # the header the parent's CUDA code moved into (scaffold_cuda)


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
    check_name(assignment, "assignment")  # the rule every command reads names with: the folder it makes is one
    check_name(version, "version")
    if from_version is not None:
        try:
            check_name(from_version, "version")
        except AssignmentError as e:
            raise IterationError(f"--from: {e}") from e
    if not is_new_version_name(version):  # and a version's file is found only by VERSION_RE
        raise IterationError(f"version name '{version}' must look like vNN_slug (e.g. v04_vectorized_loads): "
                             "'v', two or three digits, '_', lowercase words joined by '_'")
    folder = kernels / assignment
    if not (folder / "assignment.py").is_file():
        if folder.exists() and any(folder.iterdir()):
            raise IterationError(f"{folder} exists but holds no assignment.py: refusing to scaffold into it")
        if from_version is not None:
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
               **{"course": False, "course_types": False, **extra})
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

    from .course import TASK_YML, TEST_FILE, problem_title, read_task

    task = Path(task).expanduser()
    if not (task / "reference.py").is_file():
        raise IterationError(f"--from-task {task}: no reference.py there; expected a course problem folder "
                             f"(reference.py, task.py, and {TEST_FILE.as_posix()} (CS149) or {TASK_YML} (GPU MODE))")
    try:
        spec = read_task(task)
        names = list(spec.named_cases(benchmark_line))
    except AssignmentError as e:
        raise IterationError(f"--from-task {task}: {e}") from e
    rel = os.path.relpath(task.resolve(), folder.resolve())
    title = problem_title(task)
    if spec.layout == "cs149":
        bench = names.index("benchmark")
        which = "last" if bench == len(names) - 1 else f"number {bench} (0-based)"
        cases_words = (f"the cases are the lines of its {TEST_FILE.as_posix()}, named test_0, test_1, … by line, "
                       f"the {which} line being the benchmark")
    else:
        bench = benchmark_line if benchmark_line is not None else len(spec.benchmarks) - 1
        which = "last" if bench == len(spec.benchmarks) - 1 else f"number {bench} (0-based)"
        cases_words = (f"the cases are its {TASK_YML}'s tests (test_0, test_1, …) and benchmarks (benchmark_0, …), the "
                       f"{which} benchmark, the one its leaderboard ranks, named benchmark")
    from .course_imports import supplied_names

    return _plan_assignment(folder, assignment, version, "course_assignment.py.j2", course=True,
                            course_types="task" in supplied_names(task),
                            title=title, title_literal=repr(title), task_arg=str(task),
                            task_dir_literal=repr(rel), cases_words=cases_words,
                            layout_name="CS149" if spec.layout == "cs149" else "GPU MODE",
                            benchmark_index=None if benchmark_line is None else bench)


def _plan_version(folder: Path, assignment: str, version: str, from_version: str | None) -> ScaffoldPlan:
    try:
        a = get_assignment(folder.parent, assignment)
        existing = a.versions()
        source = a.version(from_version) if from_version is not None else (existing[-1] if existing else None)
    except AssignmentError as e:
        raise IterationError(str(e) if from_version is None else f"--from: {e}") from e
    if (folder / f"{version}.py").exists():
        raise IterationError(f"{folder / (version + '.py')} already exists: refusing to overwrite it")
    number = int(VERSION_RE.match(version).group(1))  # type: ignore[union-attr]
    taken = [v.name for v in existing if v.number == number]
    if taken:
        raise IterationError(f"version number v{number:02d} is taken by {folder / (taken[0] + '.py')}: "
                             f"pick the next free number")
    ctx = dict(assignment=assignment, version=version, short=short_handle(version),
               source=source.name if source else None, source_short=source.short if source else None,
               course=a.task_folder is not None, course_types="task" in a.supplied_names())
    files: list[PlannedFile] = []
    moved: str | None = None
    if source is None:
        files.append(PlannedFile(folder / f"{version}.py", _render("first_version.py.j2", **ctx), create=True))
    else:
        code = source.path.read_text(encoding="utf-8")
        code = replace_docstring(code, _render("version_docstring.py.j2", **ctx), source.path)
        cu = source.path.with_suffix(".cu")
        if cu.is_file():  # the new .cu builds on the parent's code (scaffold_cuda): never a copy of it
            try:
                cuda_plan = plan_cuda(cu, source.name, version, PLACEHOLDER)
            except FileExistsError as e:
                raise IterationError(str(e)) from e
            code = code.replace(f"{source.name}.cu", f"{version}.cu")
            files.append(PlannedFile(folder / f"{version}.cu", cuda_plan.new_source, create=True))
            if cuda_plan.header is not None and cuda_plan.parent_source is not None:
                files.append(PlannedFile(cuda_plan.header[0], cuda_plan.header[1], create=True))
                files.append(PlannedFile(cu, cuda_plan.parent_source, create=False))
                moved = cuda_plan.header[0].name
        files.insert(0, PlannedFile(folder / f"{version}.py", code, create=True))
    files.append(_plan_worklog(folder, ctx, [v.name for v in existing]))
    return ScaffoldPlan(assignment, version, source.name if source else None, False, files, moved)


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
