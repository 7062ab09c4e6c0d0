"""`report export`: one version of an assignment as a single, self-contained ``submission.py``.

The course harnesses (Stanford CS149's and the GPU MODE leaderboards' ``eval.py``, which
CS149's is modelled on) import one file, ``submission.py``, and call ``custom_kernel(data)``
on what the task's ``generate_input`` returned. The harness machine has torch, triton and
cupy, but not this repository: a version that imports an earlier one (``import v04_exp2``)
or compiles the ``.cu`` beside it through :mod:`reporter.cuda` cannot be handed in as it
stands. The export carries all of it in one file:

* every local module the version imports, transitively (earlier versions, helpers in the
  assignment's folder), and the version itself;
* the CUDA sources it compiles and every local header they include, transitively: the
  version's source closure (:mod:`reporter.closure`, the same files a run record holds), a
  shared header placed by its path from ``kernels/`` (``common/sm90/wgmma.cuh``) beside the
  version so that the compiler finds it as it does in the repository;
* the modules of this package they import: only the :mod:`reporter.cuda` package, whose modules
  import only each other, embedded whole; importing any other ``reporter`` module stops the
  export with an error naming the file;
* a header docstring: assignment, version, ``CONFIG``, commit and whether the embedded files
  differ from it, each file's sha256 (of its text, as `report run` records it, so the two can
  be compared), what the harness must have installed, the newest benchmark median per GPU
  read from the records, and the commands that measured and re-measure it.

How the embedded code runs. Each source is stored verbatim as a string. Importing the
submission writes them into a private temporary folder (``tempfile.mkdtemp``, removed at
exit), laid out as in the repository (``v05_tma.py``, ``v04_exp2.py``, ``reporter/cuda/build.py``),
and imports them from there by file, in dependency order (a package before its modules), each
registered in ``sys.modules`` under its own name; a module a package's ``__init__`` imports is
found in the folder, as the package's ``__path__`` points there, and loaded once. Real files rather than ``exec`` of strings, because three things need
them: Triton's ``@jit`` reads a kernel's source back through ``inspect``; a version finds its
CUDA source as ``Path(__file__).with_suffix(".cu")`` and NVRTC resolves ``#include`` from
that folder; and tracebacks show the lines. A folder per process rather than a cache shared
between processes: nothing to trust, lock or clean up across processes or users, for the
price of writing a few small files at import. A module name the process already had (a
harness's own ``reporter``, say) is given back after the import, so the submission never
replaces anything its host uses; names the process did not have stay registered, so an
import inside a function still resolves.

The file is a function of the sources, the records and the git state, except for its
``Exported:`` line: exporting again onto a file that differs only there leaves it untouched.

Nothing in this module knows any particular assignment.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Literal

from . import store
from .analysis.diff import format_ms
from .assignments import (Assignment, AssignmentCodeError, AssignmentError, Version, git_state, headline_case,
                          project_path, spec_literal)
from .closure import ClosureError, imported_modules, inside, source_closure
from .records import Run
from .samecode import CodeStatus, code_status, tree_files
from .standing import figure, standing_run
from .submission import EmbeddedFile

PACKAGE = __name__.partition(".")[0]  # 'reporter'
PACKAGE_DIR = Path(__file__).resolve().parent
EMBEDDABLE_PACKAGE_MODULES = frozenset({f"{PACKAGE}.cuda"})  # standalone by design, with its modules: no other reporter imports
EXPORTED_PREFIX = "Exported:"


class ExportError(Exception):
    """A version that cannot be exported, or an output that would be overwritten; names the file."""


class ExportFormat(StrEnum):
    """What the file is for. CS149's harness is modelled on GPU MODE's ``eval.py``: both import
    ``submission.py`` and call ``custom_kernel(data)``, so both names produce the same file."""

    cs149 = "cs149"
    gpumode = "gpumode"

    @property
    def harness(self) -> str:
        return {"cs149": "CS149", "gpumode": "GPU MODE"}[self.value]


@dataclass(frozen=True)
class Measured:
    """The newest benchmark run of the version on one GPU, as the header states it."""

    run: Run
    code: CodeStatus  # how the code the run recorded stands to the code embedded (reporter.samecode)

    @property
    def same_code(self) -> bool:
        """The figure describes the code embedded: the same files, or proven to compile the same."""
        return self.code.stands


@dataclass(frozen=True)
class Export:
    assignment: Assignment
    version: Version
    files: list[EmbeddedFile]  # the version first, then its CUDA sources, siblings, package modules
    modules: list[tuple[str, str]]  # (name, rel) in import order, the version last
    requires: list[str]
    measured: list[Measured]
    text: str


@dataclass(frozen=True)
class ExportResult:
    path: Path
    status: Literal["written", "overwritten", "unchanged"]
    export: Export


# --------------------------------------------------------------------------- collecting the sources


def _parse(path: Path, text: str) -> ast.Module:
    try:
        return ast.parse(text, filename=str(path))
    except SyntaxError as e:
        raise ExportError(f"{path}:{e.lineno}: syntax error: {e.msg}") from e


def _package_imports(tree: ast.Module, path: Path) -> list[str]:
    """The modules of this package a file imports: ``from reporter.cuda import x``,
    ``import reporter.cuda``, ``from reporter import cuda`` all give 'reporter.cuda'; in a module of
    the package, ``from .launch import x`` and ``from . import launch`` give its sibling."""
    out: list[str] = []
    for module, _, names in imported_modules(tree):
        if module == PACKAGE and names:
            out.extend(f"{PACKAGE}.{n}" for n in names)
        elif module == PACKAGE or module.startswith(PACKAGE + "."):
            out.append(module)
    if inside(path, PACKAGE_DIR):  # relative imports, resolved against the module's own package
        rel = path.resolve().relative_to(PACKAGE_DIR.parent.resolve()).with_suffix("").parts
        here = list(rel[:-1])  # a package's __init__ and a plain module both sit in the folder they name
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level > 0:
                base = ".".join(here[: len(here) - node.level + 1] + ([node.module] if node.module else []))
                out.extend([base] if node.module else [f"{base}.{a.name}" for a in node.names])
    return list(dict.fromkeys(out))


def _embeddable(module: str) -> bool:
    return any(module == m or module.startswith(m + ".") for m in EMBEDDABLE_PACKAGE_MODULES)


def _package_file(module: str) -> Path:
    """The file of a module of this package: ``reporter/cuda/__init__.py`` for a package."""
    folder = PACKAGE_DIR.joinpath(*module.split(".")[1:])
    return folder / "__init__.py" if folder.is_dir() else folder.with_suffix(".py")


INSTALLED = " (the installed reporter package)"


def _origin(path: Path, repo: Path) -> str:
    """A file's name in an export (:func:`reporter.assignments.project_path`), tagged when it is the installed
    package's rather than the project's."""
    name = project_path(path, repo)
    p = path.resolve()
    return name + INSTALLED if not p.is_relative_to(repo.resolve()) and p.is_relative_to(PACKAGE_DIR.parent) else name


def _defines(tree: ast.Module, name: str, folder: Path, seen: set[Path]) -> bool:
    """Whether a module binds ``name`` at its top level (a def, an assignment, an import, also
    inside a top-level if/try), following ``from sibling import *``."""
    def walk(body: list[ast.stmt]) -> bool:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
                return True
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                return True
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name \
                    and node.value is not None:
                return True
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for a in node.names:
                    if (a.asname or a.name.partition(".")[0]) == name:
                        return True
                    if a.name == "*" and isinstance(node, ast.ImportFrom) and node.module:
                        p = folder / f"{node.module}.py"
                        if p.is_file() and p not in seen:
                            seen.add(p)
                            if _defines(_parse(p, p.read_text(encoding="utf-8")), name, folder, seen):
                                return True
            if isinstance(node, ast.If) and (walk(node.body) or walk(node.orelse)):
                return True
            if isinstance(node, ast.Try) and (walk(node.body) or walk(node.orelse) or walk(node.finalbody)
                                              or any(walk(h.body) for h in node.handlers)):
                return True
            if isinstance(node, ast.With) and walk(node.body):
                return True
        return False

    return walk(tree.body)


def collect(repo: Path, version: Version, supplied: tuple[str, ...] = ()) -> tuple[
        list[EmbeddedFile], list[tuple[str, str]], list[str], list[str]]:
    """The files to embed (the version's source closure, then this package's modules it needs),
    the modules in import order (the version last), the third-party packages the embedded code
    imports, and which of ``supplied`` it imports: the modules a course's harness puts beside a
    submission (:meth:`reporter.assignments.Assignment.supplied_names`), neither embedded nor needed."""
    folder = version.assignment_dir
    try:
        closure = source_closure(version.path, version.name)
    except ClosureError as e:
        raise ExportError(str(e)) from e
    texts: dict[str, tuple[Path, str, ast.Module]] = {}  # module name -> (path, text, tree)
    for f in closure.files:
        if f.module is not None:
            text = f.path.read_text(encoding="utf-8")
            texts[f.module] = (f.path, text, _parse(f.path, text))
    order = closure.module_order
    if not _defines(texts[version.name][2], "custom_kernel", folder, set()):
        raise ExportError(f"{version.path}: defines no custom_kernel(data), the function the harness calls")

    # this package's modules the local modules import, and what those import in turn
    package_modules: list[str] = []
    todo = [(m, texts[m][0], texts[m][2]) for m in order]
    while todo:
        _, path, tree = todo.pop(0)
        for mod in _package_imports(tree, path):
            if not _embeddable(mod):
                can = ", ".join(sorted(EMBEDDABLE_PACKAGE_MODULES))
                hint = ""
                if supplied and path.name == "assignment.py":
                    hint = (f"; a version of a course problem imports what the course's harness supplies instead "
                            f"({', '.join(supplied[:3])}: e.g. `from reference import ref_kernel`, "
                            "`from task import input_t, output_t`), never the assignment")
                raise ExportError(f"{path}: imports {mod}, which a submission cannot carry (it needs the rest of "
                                  f"the {PACKAGE} package); an exported version may import only {can}{hint}")
            if mod in package_modules:
                continue
            p = _package_file(mod)
            text = p.read_text(encoding="utf-8")
            tree = _parse(p, text)
            texts[mod] = (p, text, tree)
            package_modules.insert(0, mod)  # imported by what came before: load it first
            todo.append((mod, p, tree))

    # the closure's files, each placed as the compiler and the imports find it beside the version
    files = [EmbeddedFile(rel=f.rel, origin=_origin(f.path, repo),
                          text=texts[f.module][1] if f.module else f.path.read_text(encoding="utf-8"),
                          module=f.module) for f in closure.files]
    for name in package_modules:
        path, text, _ = texts[name]
        files.append(EmbeddedFile(rel=_origin(path, PACKAGE_DIR.parent), origin=_origin(path, repo), text=text,
                                  module=name))

    packages = sorted({".".join(m.split(".")[:i]) for m in package_modules for i in range(1, m.count(".") + 1)}
                      | {m for m in package_modules if _package_file(m).name == "__init__.py"})
    modules = [(p, p.replace(".", "/") + "/__init__.py") for p in packages]  # a parent before its children
    modules += [(m, next(f.rel for f in files if f.module == m)) for m in package_modules if m not in packages]
    modules += [(m, next(f.rel for f in files if f.module == m)) for m in order]

    local = set(order) | {PACKAGE, "__future__"}
    third_party = {mod.partition(".")[0] for _, _, tree in texts.values() for mod, _, _ in imported_modules(tree)}
    given = sorted(m for m in third_party if m in supplied and m not in local)
    requires = sorted(m for m in third_party if m not in local and m not in sys.stdlib_module_names and m not in given)
    return files, modules, requires, given


# --------------------------------------------------------------------------- the header's facts


def config_text(version: Version) -> str | None:
    """``CONFIG`` as ``k=v, ...``, read from the source (no import: no GPU libraries needed).
    Followed into a sibling for ``from sibling import CONFIG``, ``CONFIG = sibling.CONFIG`` and
    ``CONFIG = dict(sibling.CONFIG)``; the expression's text when it is not a literal."""
    seen: set[Path] = set()
    path = version.path
    while path not in seen:
        seen.add(path)
        text = path.read_text(encoding="utf-8")
        tree = _parse(path, text)
        value: ast.expr | None = None
        source_module: str | None = None
        aliases: dict[str, str] = {}  # name in this module -> sibling module
        for node in tree.body:
            if isinstance(node, ast.Import):
                aliases.update({a.asname or a.name: a.name for a in node.names})
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if node.value is not None and any(isinstance(t, ast.Name) and t.id == "CONFIG" for t in targets):
                    value, source_module = node.value, None
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                    and any(a.name == "CONFIG" and a.asname in (None, "CONFIG") for a in node.names):
                value, source_module = None, node.module
        inner = value.args[0] if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) \
            and value.func.id == "dict" and len(value.args) == 1 and not value.keywords else value
        if isinstance(inner, ast.Attribute) and inner.attr == "CONFIG" and isinstance(inner.value, ast.Name) \
                and inner.value.id in aliases:
            value, source_module = None, aliases[inner.value.id]
        if value is not None:
            return _format_config(value, text)
        if source_module and (version.assignment_dir / f"{source_module}.py").is_file():
            path = version.assignment_dir / f"{source_module}.py"
            continue
        return None
    return None


def _format_config(value: ast.expr, text: str) -> str:
    items: dict | None = None
    try:
        literal = ast.literal_eval(value)
        items = literal if isinstance(literal, dict) else None
    except (ValueError, TypeError, SyntaxError):
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict" \
                and not value.args and all(k.arg for k in value.keywords):
            try:
                items = {k.arg: ast.literal_eval(k.value) for k in value.keywords}
            except (ValueError, TypeError, SyntaxError):
                items = None
    if items is not None and all(isinstance(k, str) for k in items):
        return ", ".join(f"{k}={v!r}" for k, v in items.items()) or "(empty)"
    segment = ast.get_source_segment(text, value) or "?"
    return " ".join(segment.split())


def source_state(repo: Path, files: list[EmbeddedFile]) -> str:
    """'<commit>; the embedded files are as committed' or which of them differ from it."""
    commit, dirty = git_state(repo)
    where = f"commit {commit}" if commit else "commit unknown (the project folder is not a git checkout of its own)"
    paths = [f.origin for f in files if not f.origin.endswith(INSTALLED) and (repo / f.origin).is_file()]
    outside = [f.origin for f in files if f.origin not in paths]  # the installed package's, or not the project's
    if outside:
        where += f"; not the project's, so not compared with it: {', '.join(outside)}"
    if not os.environ.get("REPORT_GIT_COMMIT") and commit and paths:
        try:
            res = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "--", *paths], cwd=repo,
                                 capture_output=True, text=True, timeout=10, check=False)
        except (OSError, subprocess.SubprocessError):
            res = None
        if res is not None and res.returncode == 0:
            changed = [f"{line[3:]} ({'untracked' if line[:2] == '??' else 'modified'})"
                       for line in res.stdout.splitlines() if len(line) > 3]
            if not changed:
                return f"{where}; the embedded files are as committed" if not outside else \
                    f"{where}; the project's embedded files are as committed"
            return f"{where}; differing from it: {', '.join(changed)}"
    if dirty is None:
        return f"{where}; whether the files differ from it is unknown"
    return f"{where}; " + ("uncommitted changes under kernels/ or reporter/" if dirty else "no uncommitted changes")


def measurements(repo: Path, logs: Path, assignment: Assignment, version: Version,
                 benchmark_case: str) -> list[Measured]:
    """Per GPU, the run that stands for the version on the benchmark case (:mod:`reporter.standing`,
    the figure the report and `report list` give), and how the code it recorded stands to the
    tree's (:func:`reporter.samecode.code_status`); newest GPU first."""
    runs = [r for r in store.runs(logs, assignment.name, version.name, legacy=assignment.legacy_case_keys or None)
            if r.case_name == benchmark_case]
    now = tree_files(version, repo)
    proofs = store.same_code(logs, assignment.name, version.name)
    out = []
    for gpu in dict.fromkeys(r.device.slug for r in runs):
        chosen = standing_run(runs, version.name, benchmark_case, gpu=gpu)
        if chosen is not None and chosen.ok:
            out.append(Measured(chosen, code_status(chosen.code, now, proofs)))
    return sorted(out, key=lambda m: m.run.created_utc, reverse=True)


# --------------------------------------------------------------------------- rendering


def _case_text(case: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in case.items())


def _measured_lines(m: Measured, assignment: str, version: Version) -> list[str]:
    r = m.run
    t = r.timing
    assert t is not None
    stale = "" if m.code.state == "current" else f" -- {m.code.words()}"
    command = r.command or f"report run {assignment} -v {version.short} -c {r.case_name}"
    fig = figure(r)
    assert fig is not None
    return [
        (f"  {r.device.name}: {format_ms(fig.ms, 5)}, the {fig.how} "
         f"(standard error of the mean {format_ms(t.stderr_ms, 3)}), case {r.case_name} ({_case_text(r.case)})"),
        f"    run {r.run_id}, {r.created_utc.astimezone(UTC):%Y-%m-%d %H:%M} UTC, code {r.code.digest}{stale}",
        f"    measured with `{command}`",
    ]


def _docstring(text: str) -> str:
    return '"""' + text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"') + '"""'


def _literal(text: str) -> str:
    """The text as a Python expression, as readable as possible: a raw triple-quoted string
    starting on the next line, or ``repr`` when the text cannot be one."""
    for quote in ("'''", '"""'):
        literal = f"r{quote}\n{text}{quote}"
        if quote in text:
            continue
        try:
            if ast.literal_eval(literal) == "\n" + text:
                return literal + "[1:]"
        except (SyntaxError, ValueError):
            continue
    return repr(text)


_LOADER = '''

def _import_embedded():
    """Write the sources above to a private temporary folder and import them from there, in
    order, each under its own name; give back any module name the process already had."""
    folder = Path(tempfile.mkdtemp(prefix={prefix!r}))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    for rel, text in _FILES.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    before = {{name: sys.modules.pop(name, None) for name, _ in _MODULES}}
    module = None
    try:
        for name, rel in _MODULES:
            if name in sys.modules:  # imported already, from the folder, by the package above it
                module = sys.modules[name]
                continue
            path = folder / rel
            search = [str(path.parent)] if path.name == "__init__.py" else None
            spec = importlib.util.spec_from_file_location(name, path, submodule_search_locations=search)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            parent, _, child = name.rpartition(".")
            if parent:
                setattr(sys.modules[parent], child, module)
            spec.loader.exec_module(module)
    except BaseException:
        for name, previous in before.items():
            if previous is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = previous
        raise
    for name, previous in before.items():
        if previous is not None:
            sys.modules[name] = previous
    return module


_version = _import_embedded()
_custom_kernel = _version.custom_kernel


def custom_kernel(data):
    """{version}'s custom_kernel(data), under the name the harness calls."""
    return _custom_kernel(data)
'''


def render(repo: Path, logs: Path, assignment: Assignment, version: Version, now: datetime | None = None) -> Export:
    supplied = assignment.supplied_names()
    files, modules, requires, given = collect(repo, version, supplied)
    benchmark_case = headline_case(assignment.path.parent, assignment.name, version.name, lambda: {
        r.case_name: r.case for r in store.runs(logs, assignment.name, version.name,
                                                legacy=assignment.legacy_case_keys or None)})
    title = str(spec_literal(assignment.path, "TITLE", assignment.name))
    measured = measurements(repo, logs, assignment, version, benchmark_case)
    summary = (version.docstring().split("\n\n")[0].replace("\n", " ").strip() or "(no docstring)")
    config = config_text(version)
    stamp = (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    width = max(len(f.origin) for f in files)
    siblings = [name for name, _ in modules if name != version.name and not name.startswith(PACKAGE)]

    head = [
        f"{assignment.name} {version.name}: custom_kernel(data) for the CS149 / GPU MODE harnesses.",
        "",
        "Exported by `report export` from a GPU work-log project. The harness imports this file as",
        "`submission` and calls custom_kernel(data) on what the task's generate_input returned.",
        "",
        f"Assignment:  {assignment.name}: {title}",
        f"Version:     {version.name}: {summary}",
        f"CONFIG:      {config if config is not None else f'none defined in {version.path.name}'}",
        f"Source:      {source_state(repo, files)}",
        f"{EXPORTED_PREFIX:<13}{stamp}",
        f"Needs:       {', '.join(requires) or 'nothing beyond Python'}; nothing from the project's repository",
        *([f"Course:      imports {', '.join(given)} from the problem's folder ({assignment.task_folder.name}), "
           "which the course's harness puts beside this file"] if given and assignment.task_folder else []),
        "",
        "Embedded files (sha256 of each file's text, as `report run` records it):",
        *(f"  {f.origin:<{width}}  {f.sha256}" for f in files),
        "",
    ]
    if measured:
        head.append(f"Measured (per GPU, the run under logs/ that stands for {version.name} on '{benchmark_case}', "
                    "as in the report and `report list`):")
        for m in measured:
            head.extend(_measured_lines(m, assignment.name, version))
    else:
        head.append(f"Measured: no timed '{benchmark_case}' run under logs/{assignment.name}/{version.name}/ yet.")
    head += [
        f"Re-measure:  report run {assignment.name} -v {version.short} -c {benchmark_case}",
        "",
        "How it runs: the files above are stored verbatim below. Importing this file writes them to",
        "a private temporary folder (removed at exit) and imports them from there under their own",
        f"names ({', '.join(name for name, _ in modules if name != PACKAGE)}), so they behave "
        "as in the repository" + (f" (e.g. `import {siblings[0]}` finds the embedded one)." if siblings else "."),
        "",
    ]
    parts = [
        _docstring("\n".join(head)),
        "",
        "import atexit",
        "import importlib.util",
        "import shutil",
        "import sys",
        "import tempfile",
        "from pathlib import Path",
        "",
        "_FILES = {}",
    ]
    for f in files:
        parts += ["", f"# {f.origin}", f"_FILES[{f.rel!r}] = {_literal(f.text)}"]
    for name, rel in modules:
        if rel not in {f.rel for f in files}:  # a package's __init__: a stand-in
            stand_in = '"""' + f"A stand-in for the {name} package: only its modules embedded here." + '"""\n'
            parts += ["", f"# {rel}: a stand-in holding only the modules above",
                      f"_FILES[{rel!r}] = {_literal(stand_in)}"]
    parts += ["", "# (name, file) in import order: a module's imports come before it; the version comes last",
              "_MODULES = (", *(f"    ({name!r}, {rel!r})," for name, rel in modules), ")", ""]
    text = "\n".join(parts) + _LOADER.format(prefix=f"submission_{assignment.name}_{version.name}_",
                                            version=version.name)
    try:
        compile(text, "submission.py", "exec")
    except SyntaxError as e:  # a bug here, not in the user's files
        raise ExportError(f"the generated submission does not compile (line {e.lineno}: {e.msg})") from e
    return Export(assignment, version, files, modules, requires, measured, text)


# --------------------------------------------------------------------------- writing


def default_path(repo: Path, assignment: Assignment, version: Version) -> Path:
    return repo / "exports" / assignment.name / version.name / "submission.py"


def _without_stamp(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.startswith(EXPORTED_PREFIX)]


def write(export: Export, path: Path, force: bool = False) -> ExportResult:
    """Write atomically to ``path``, or to ``path/submission.py`` when ``path`` does not end in
    ``.py`` (a folder). An existing file that differs only in its ``Exported:`` line is left as
    it is; one that differs otherwise is replaced only with ``force``. Only a regular file is
    ever read or replaced, and no more of it than this export's length and a little (the rule of
    :mod:`reporter.outputs`)."""
    from .outputs import OutputError, read_existing

    if path.suffix != ".py" or path.is_dir():
        path = path / "submission.py"
    status: Literal["written", "overwritten", "unchanged"] = "written"
    new_bytes = export.text.encode("utf-8")
    try:  # the date line may differ in length: a little more than the new text is read, never all
        raw = read_existing(path, limit := len(new_bytes) + 4096)
    except OutputError as e:
        raise ExportError(str(e)) from e
    if raw is not None:
        try:  # cut at the limit, a character may be cut too: the file is longer, so it differs anyway
            old = raw.decode("utf-8", errors="replace" if len(raw) >= limit else "strict")
        except UnicodeDecodeError as e:
            old = None
            if not force:
                raise ExportError(f"{path} exists and cannot be read as text ({e}); pass --force to replace it") from e
        if old is not None and _without_stamp(old) == _without_stamp(export.text):
            return ExportResult(path, "unchanged", export)
        if not force:
            new_lines, old_lines = _without_stamp(export.text), _without_stamp(old or "")
            first = next((i for i, (a, b) in enumerate(zip(old_lines, new_lines, strict=False)) if a != b),
                         min(len(old_lines), len(new_lines)))
            shown = old_lines[first].strip()[:60] if first < len(old_lines) else "(end of file)"
            raise ExportError(f"{path} exists and differs from this export (first at line {first + 1}: {shown!r}); "
                              "pass --force to replace it")
        status = "overwritten"
    try:
        store.write_atomic(path, export.text)
    except OSError as e:
        raise ExportError(f"{path}: cannot write: {e.strerror or e}") from e
    return ExportResult(path, status, export)


def export(repo: Path, logs: Path, assignment: Assignment, version: Version, out: Path | None = None,
           force: bool = False, now: datetime | None = None) -> ExportResult:
    """Render ``version`` as one submission file and write it (default under ``exports/``).

    The version is imported first: code that fails on import (a syntax error, an exception at its
    top level) is refused rather than shipped; a library this machine lacks is not a reason."""
    try:
        assignment.load(version)
    except AssignmentCodeError:
        raise
    except AssignmentError:
        pass  # a library or course folder missing here (torch, cupy): the harness's machine has it
    rendered = render(repo, logs, assignment, version, now)
    return write(rendered, out or default_path(repo, assignment, version), force)
