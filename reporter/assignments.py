"""Finding and loading ``kernels/<name>/``: the assignment's spec and its versions.

An assignment is a folder holding ``assignment.py`` (data plus functions, in the shape of
the GPU MODE / CS149 harnesses), ``vNN_slug.py`` files (one per iteration, each exposing
``custom_kernel(data)``), optional ``vNN_slug.cu`` sources beside them, and ``worklog.md``.

``assignment.py`` defines:

* ``TITLE``: a one-line title; ``CASES``: ``{case_name: {param: value, ..., "seed": int}}``;
  ``BENCHMARK_CASE``: the name of the case the report ranks by; optionally ``BENCHMARK_CASES``, a
  literal list of benchmark cases, the first the ``BENCHMARK_CASE`` (which may then be left out), for
  versions that do not all run the first (below);
* ``generate_input(**case)`` and ``ref_kernel(data)``;
* ``TOLERANCE``: a :class:`Tolerance` (``Tolerance.exact()`` for integer results);
* ``work_model(**case) -> WorkModel``;
* ``PEERS``: ``{name: Peer}``, library implementations timed beside the versions;
* optionally ``PROBES``: ``{name: Probe}``, pieces of a version timed alone to tell which one bounds
  it (``report run --probes``); they are not checked, since they do not compute the answer;
* ``REFERENCE_RESULTS``: public results (leaderboard rows) with their GPU;
* optionally ``COURSE``: a :class:`CourseSource`, the course problem folder whose interface the
  assignment follows (its harness can then run the exports: ``report crosscheck``);
  ``check_implementation(data, output) -> (ok, message)``, a course's own check, applied on
  top of ``TOLERANCE``; ``LEGACY_CASE_KEYS`` (old key -> new key) and ``LEGACY_CASE_DEFAULTS``
  (key -> value), literals saying how records made before a renaming of the case keys name
  them, so that they read with today's keys.

A version file may define ``CASES_WHERE = {"param": value, ...}``, a literal dict read from its source
(no import, so ``report build`` needs no GPU library): the version runs exactly the cases whose
parameters equal every value it names (say, only the cases of one data type); without it, every case.
A parameter no case has, or a filter that matches no case, is an error naming the file and the
field. The harness (``report run``, ``sweep``, ``export``, ``crosscheck``) leaves a version out of
the cases it does not run, and refuses a case the user named for a version named with it. A
version's *headline case*, the one its figure is taken on, is the first of ``BENCHMARK_CASES`` it
runs (:meth:`Assignment.headline_case`); two versions are compared on the first benchmark case
both run, and not at all where they share none (:func:`reporter.standing.comparison_case`).

Nothing in this module knows any particular assignment.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import Any

from .closure import Closure, ClosureError, source_closure
from .course_imports import course_imports, supplied_names
from .records import CodeSnapshot, SourceFile

#: The one rule for a version's name: 'v', two or three digits, then lowercase words each after one
#: '_' (``v06_wgmma``, ``v15_kv176_multicast``); the bare handle ``v06`` matches too. Files under
#: kernels/, folders under logs/ and ``## `` headings of worklog.md are read with it; ``report new``
#: asks a new name for at least one word (:func:`is_new_version_name`).
VERSION_RE = re.compile(r"^v(\d{2,3})(?:_[a-z0-9]+)*$")


#: The one rule for a name typed on the command line, an assignment's (a folder directly under kernels/)
#: or a version's (``v03_tuned``, or its handle ``v03``): letters, digits, '_' and '-', starting with a
#: letter or digit. So no path separator, no '..', no leading '.', never empty: a name cannot reach
#: outside kernels/ or logs/ (:func:`check_name`, the check every command goes through).
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


def short_handle(version: str) -> str:
    """'v02_fused_triton' -> 'v02' (a name that is not a version's is returned as it is)."""
    m = VERSION_RE.match(version)
    return f"v{int(m.group(1)):02d}" if m else version


def is_new_version_name(name: str) -> bool:
    """A name ``report new`` accepts: a version name with at least one word after the number."""
    return VERSION_RE.match(name) is not None and "_" in name


class AssignmentError(Exception):
    """An assignment or version that cannot be found or loaded; the message names the file."""


class AssignmentCodeError(AssignmentError):
    """The people's code fails on import (a syntax error, an exception at the top level): unlike a
    library missing here, which a report can do without, this is always reported."""


_NAMED_BY = {
    "assignment": "an assignment is named by its folder directly under kernels/",
    "version": "a version is named by its file under kernels/<assignment>/ without .py (v03_tuned) or by its "
               "number (v03)",
}


def check_name(value: str, argument: str) -> str:
    """``value`` when it is a name (:data:`NAME_RE`), else an :class:`AssignmentError` of one line naming the
    ``argument`` ('assignment', 'version') and what is allowed: called before a name is made into a path."""
    if NAME_RE.fullmatch(value) is None:
        shown = f"'{value}'" if value.isprintable() else repr(value)  # a newline stays on the one line
        rule = "letters, digits, '_' and '-', starting with a letter or digit; no '/', '\\', '..' or leading '.'"
        why = _NAMED_BY.get(argument, f"a {argument} is a name")
        raise AssignmentError(f"{argument} {shown} refused: {why}: {rule}")
    return value


@dataclass(frozen=True)
class Tolerance:
    rtol: float = 0.0
    atol: float = 0.0
    exact: bool = False

    @classmethod
    def exact_match(cls) -> Tolerance:
        return cls(exact=True)


@dataclass(frozen=True)
class Peer:
    """A library implementation timed in the same run (e.g. torch SDPA with one backend)."""

    fn: Callable[[Any], Any]
    description: str = ""
    # False: a baseline that does not compute the answer (a device-to-device copy of the
    # array, the ceiling the versions are held to): timed like the others, never checked
    checked: bool = True


@dataclass(frozen=True)
class Probe:
    """A piece of a kernel timed alone (its loads without the arithmetic, say), called with the
    case's input like a version. Its output is not checked: a probe does not compute the answer.
    It raises ``ValueError`` when it does not apply to a case (the harness records why)."""

    fn: Callable[[Any], Any]
    description: str = ""


@dataclass(frozen=True)
class CourseSource:
    """A course problem folder in the CS149 / GPU MODE format (``reference.py``, ``task.py``,
    ``test_cases/test.txt``) that an assignment follows: ``repo`` on GitHub, ``folder`` inside it."""

    repo: str  # 'stanford-cs149/asst5-kernels'
    folder: str  # 'problems/histogram'

    @property
    def url(self) -> str:
        return f"https://github.com/{self.repo}"

    def locate(self, root: Path) -> Path:
        """The problem folder inside a checkout of ``repo`` at ``root``."""
        return Path(root) / self.folder


@dataclass(frozen=True)
class LegacyCaseKeys:
    """How records made before the case keys were renamed name them: ``renamed`` maps an old key
    to today's, ``defaults`` gives today's value of a key those records did not have."""

    renamed: dict[str, str] = field(default_factory=dict)
    defaults: dict[str, Any] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.renamed or self.defaults)

    def apply(self, case: dict[str, Any]) -> dict[str, Any]:
        """``case`` with today's keys, in today's order where known; a case that already uses
        them comes back unchanged."""
        if not any(k in case for k in self.renamed):
            return case
        out = {self.renamed.get(k, k): v for k, v in case.items()}
        for k, v in self.defaults.items():
            out.setdefault(k, v)
        return out


_PARSED: dict[Path, tuple[tuple[int, int], dict[str, ast.expr] | None]] = {}


def _top_level(path: Path) -> dict[str, ast.expr] | None:
    """The expressions ``path``'s top-level assignments assign (``name = ...`` or ``name: T = ...``; the
    first of a name), parsed once per version of the file (its modification time and size): one command
    reads several constants of an assignment file, and `report list` one of every version file. None when
    it cannot be read or parsed."""
    try:
        st = path.stat()
    except OSError:
        return None
    key = (st.st_mtime_ns, st.st_size)
    hit = _PARSED.get(path)
    if hit is None or hit[0] != key:
        names: dict[str, ast.expr] | None = {}
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            names = None
        else:
            for node in tree.body:
                if isinstance(node, ast.Assign):
                    targets, value = node.targets, node.value
                elif isinstance(node, ast.AnnAssign) and node.value is not None:
                    targets, value = [node.target], node.value
                else:
                    continue
                for t in targets:
                    if isinstance(t, ast.Name):
                        names.setdefault(t.id, value)  # type: ignore[union-attr]
        hit = _PARSED[path] = (key, names)
    return hit[1]


def _assigned(path: Path, name: str) -> ast.expr | None:
    """The expression a top-level ``name = ...`` of a Python file assigns (the first such), None when the
    file cannot be parsed or assigns no ``name``."""
    names = _top_level(Path(path))
    return names.get(name) if names is not None else None


def read_literal(path: Path, name: str, default: Any = None) -> Any:
    """A top-level constant of a Python file, read without importing it (no torch, no side effects);
    ``default`` when the file, the name or a literal value is missing."""
    value = _assigned(path, name)
    if value is None:
        return default
    try:
        return ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError):
        return default


def read_cases_where(path: Path) -> dict[str, Any]:
    """A version file's ``CASES_WHERE`` (parameter -> value), read without importing it; ``{}`` when it
    defines none (the version runs every case). Anything but a literal dict keyed by parameter names is
    an :class:`AssignmentError` naming the file, the line and the field."""
    path = Path(path)
    node = _assigned(path, "CASES_WHERE")
    if node is None:
        return {}
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError):
        value = None
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise AssignmentError(f"{path}:{node.lineno}: CASES_WHERE must be a literal dict of case parameter -> "
                              'value, e.g. {"param": "value"} (it is read without importing the file)')
    return value


def legacy_case_keys(assignment_dir: Path) -> LegacyCaseKeys:
    """An assignment's ``LEGACY_CASE_KEYS`` and ``LEGACY_CASE_DEFAULTS``, read from its source."""
    path = Path(assignment_dir) / "assignment.py"
    renamed = read_literal(path, "LEGACY_CASE_KEYS", {}) or {}
    defaults = read_literal(path, "LEGACY_CASE_DEFAULTS", {}) or {}
    if not isinstance(renamed, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in renamed.items()):
        raise AssignmentError(f"{path}: LEGACY_CASE_KEYS must be a literal dict of old key -> new key")
    if not isinstance(defaults, dict) or not all(isinstance(k, str) for k in defaults):
        raise AssignmentError(f"{path}: LEGACY_CASE_DEFAULTS must be a literal dict of key -> value")
    return LegacyCaseKeys(dict(renamed), dict(defaults))


@dataclass(frozen=True)
class ReferenceResult:
    """A public result to compare against, such as a course leaderboard row."""

    label: str
    gpu: str
    median_ms: float
    source: str = ""
    case: str = "benchmark"


@dataclass
class Version:
    name: str  # 'v02_fused_triton'
    number: int
    path: Path
    assignment_dir: Path

    @property
    def short(self) -> str:
        """'v02' — the handle worklog.md binds numbers with."""
        return f"v{self.number:02d}"

    def closure(self) -> Closure:
        """The files whose text decides what this version runs (see :mod:`reporter.closure`)."""
        try:
            return source_closure(self.path, self.name)
        except ClosureError as e:
            raise AssignmentError(str(e)) from e

    @property
    def sources(self) -> list[Path]:
        """The paths of :meth:`closure`: the version first, its CUDA sources and headers, its imports."""
        return self.closure().paths()

    def cases_where(self) -> dict[str, Any]:
        """``CASES_WHERE``: the version runs the cases whose parameters equal every value it names; ``{}``
        (none defined): every case. Read from the source (:func:`read_cases_where`)."""
        return read_cases_where(self.path)

    def docstring(self) -> str:
        from .closure import parse

        try:
            tree = parse(self.path)
        except ClosureError as e:
            raise AssignmentError(str(e)) from e
        return (ast.get_docstring(tree) or "").strip()

    def load(self) -> ModuleType:
        mod = _import_file(self.path, f"_kernels_{self.assignment_dir.name}_{self.name}")
        if not callable(getattr(mod, "custom_kernel", None)):
            raise AssignmentError(f"{self.path}: defines no custom_kernel(data)")
        return mod

    def snapshot(self, repo_root: Path, config: dict | None = None) -> CodeSnapshot:
        return snapshot_of(self.sources, repo_root, config)


@dataclass
class Assignment:
    name: str
    path: Path
    module: ModuleType | None = field(default=None, repr=False)

    @property
    def spec(self) -> ModuleType:
        if self.module is None:
            self.module = _import_file(self.path / "assignment.py", f"_kernels_{self.name}_assignment")
            for attr in ("CASES", "generate_input", "ref_kernel", "work_model"):
                if not hasattr(self.module, attr):
                    raise AssignmentError(f"{self.path / 'assignment.py'}: missing '{attr}'")
            tol, check = getattr(self.module, "TOLERANCE", None), getattr(self.module, "check_implementation", None)
            if tol is None and not callable(check):
                raise AssignmentError(f"{self.path / 'assignment.py'}: missing 'TOLERANCE' (or a "
                                      "check_implementation(data, output) that decides correctness)")
            if tol is not None and not isinstance(tol, Tolerance):
                raise AssignmentError(f"{self.path / 'assignment.py'}: TOLERANCE must be a Tolerance, "
                                      f"got {type(tol).__name__}")
        return self.module

    @cached_property
    def title(self) -> str:
        """TITLE, read from the source when it is a literal (no import: a report needs no GPU
        libraries, and no course folder for an assignment over one)."""
        missing = object()
        value = read_literal(self.path / "assignment.py", "TITLE", missing)
        return str(value) if value is not missing else getattr(self.spec, "TITLE", self.name)

    @property
    def profile_block(self) -> str:
        """``PROFILE_BLOCK``: which course's profiler columns the report's profile table shows, 'cs149'
        (the default: Stanford CS149's metric block) or 'ee7722' (LSU EE 7722's hw02 line)."""
        value = read_literal(self.path / "assignment.py", "PROFILE_BLOCK", "cs149")
        if value not in ("cs149", "ee7722"):
            raise AssignmentError(f"{self.path / 'assignment.py'}: PROFILE_BLOCK is {value!r}; it is 'cs149' or 'ee7722'")
        return str(value)

    @cached_property
    def benchmark_cases(self) -> list[str]:
        """``BENCHMARK_CASES``, or ``[BENCHMARK_CASE]`` (:func:`benchmark_cases_of`)."""
        return benchmark_cases_of(self.path)

    @property
    def benchmark_case(self) -> str:
        """The case the report ranks by: the first of :attr:`benchmark_cases`."""
        return self.benchmark_cases[0]

    def references(self) -> list[ReferenceResult]:
        """REFERENCE_RESULTS; an empty list when the assignment cannot be imported here (its course
        folder is elsewhere, say): a report reads its figures from the records."""
        literal = read_literal(self.path / "assignment.py", "REFERENCE_RESULTS", None)
        if literal == []:
            return []
        try:
            return list(getattr(self.spec, "REFERENCE_RESULTS", []) or [])
        except AssignmentCodeError:
            raise
        except AssignmentError:
            return []

    def case_order(self, recorded: list[str]) -> list[str]:
        """The case names in the assignment's order, or, when it cannot be imported here, in the
        order the records give them."""
        try:
            return [c for c in self.cases() if c in recorded] + [c for c in recorded if c not in self.cases()]
        except AssignmentCodeError:
            raise
        except AssignmentError:
            return list(dict.fromkeys(recorded))

    @property
    def worklog_path(self) -> Path:
        return self.path / "worklog.md"

    @property
    def legacy_case_keys(self) -> LegacyCaseKeys:
        return legacy_case_keys(self.path)

    @cached_property
    def task_folder(self) -> Path | None:
        """The course problem folder this assignment is over (``report new --from-task``): ``TASK_DIR`` in
        assignment.py, a literal path relative to that file, read without importing it; None for an
        assignment of its own. The folder need not be on this machine."""
        value = read_literal(self.path / "assignment.py", "TASK_DIR", None)
        if value is None:
            return None
        if not isinstance(value, str) or not value:
            raise AssignmentError(f"{self.path / 'assignment.py'}: TASK_DIR must be a literal path (a string), "
                                  f"got {value!r}")
        return (self.path / value).resolve()

    def supplied_names(self) -> tuple[str, ...]:
        """The module names the course's harness supplies to a version of this assignment (``reference``,
        ``task``, ``utils``, ...; :func:`reporter.course_imports.supplied_names`); none for an assignment of
        its own."""
        return () if self.task_folder is None else supplied_names(self.task_folder)

    def load(self, version: Version) -> ModuleType:
        """``version``'s module, imported as the course's harness would let it import: for an assignment over
        a course folder, with the names the harness supplies (``from task import input_t``,
        ``from reference import ref_kernel``) resolved to the folder's modules."""
        if self.task_folder is None:
            return version.load()
        with course_imports(self.task_folder):
            return version.load()

    @property
    def course(self) -> CourseSource | None:
        course = getattr(self.spec, "COURSE", None)
        if course is not None and not isinstance(course, CourseSource):
            raise AssignmentError(f"{self.path / 'assignment.py'}: COURSE must be a CourseSource, "
                                  f"got {type(course).__name__}")
        return course

    def versions(self) -> list[Version]:
        out = []
        for p in sorted(self.path.glob("v*.py")):
            m = VERSION_RE.match(p.stem)
            if m:
                out.append(Version(p.stem, int(m.group(1)), p, self.path))
        return sorted(out, key=lambda v: (v.number, v.name))

    def version(self, handle: str) -> Version:
        """A version by full name ('v02_fused_triton') or short handle ('v02'); a handle that is no name
        (:func:`check_name`) is refused before anything is looked up."""
        check_name(handle, "version")
        for v in self.versions():
            if handle in (v.name, v.short):
                return v
        known = ", ".join(v.name for v in self.versions()) or "none"
        raise AssignmentError(f"no version '{handle}' in {self.path} (have: {known})")

    def cases(self) -> dict[str, dict]:
        return dict(self.spec.CASES)

    def known_cases(self, recorded: dict[str, dict] | Callable[[], dict[str, dict]]
                    ) -> tuple[dict[str, dict], bool]:
        """The cases (name -> parameters) and whether that is all of them: ``CASES``, or, when the assignment
        cannot be imported here (a library or course folder this machine lacks), the cases the records
        hold (``recorded``, or what it returns when called)."""
        try:
            return self.cases(), True
        except AssignmentCodeError:
            raise
        except AssignmentError:
            return dict(recorded() if callable(recorded) else recorded), False

    def case(self, name: str) -> dict:
        cases = self.cases()
        if name not in cases:
            raise AssignmentError(f"no case '{name}' in {self.path / 'assignment.py'} (have: {', '.join(cases)})")
        return dict(cases[name])

    # ----------------------------------------------------------------------- which cases a version runs

    def cases_of(self, version: Version, cases: dict[str, dict] | None = None, *, complete: bool = True) -> list[str]:
        """The names of the cases ``version`` runs, in the assignment's order: those whose parameters equal
        every value of its ``CASES_WHERE`` (every case when it defines none). ``cases``: name -> parameters,
        default ``CASES``; ``complete`` False when they are only the cases the records hold (the assignment
        does not import here), so that a filter matching none of them is no error.

        A parameter no case has, or a filter that matches no case, is an :class:`AssignmentError` naming the
        version's file and the field."""
        cases = self.cases() if cases is None else cases
        where = version.cases_where()
        if not where:
            return list(cases)
        params = list(dict.fromkeys(k for c in cases.values() for k in c))
        unknown = [k for k in where if k not in params]
        if cases and unknown:
            raise AssignmentError(f"{version.path}: CASES_WHERE names {', '.join(repr(k) for k in unknown)}, not a "
                                  f"parameter of the cases of {self.path / 'assignment.py'} (they have: "
                                  f"{', '.join(params)})")
        runs = [name for name, c in cases.items() if all(k in c and c[k] == v for k, v in where.items())]
        if complete and not runs:
            raise AssignmentError(f"{version.path}: CASES_WHERE {where!r} matches no case of "
                                  f"{self.path / 'assignment.py'} (cases: {', '.join(cases) or 'none'})")
        return runs

    def runs_case(self, version: Version, case_name: str) -> bool:
        """Whether ``version`` runs the case (:meth:`cases_of`)."""
        return not version.cases_where() or case_name in self.cases_of(version)

    def headline_cases(self, version: Version, cases: dict[str, dict] | None = None, *, complete: bool = True,
                       among: list[str] | None = None) -> list[str]:
        """The benchmark cases ``version`` runs, in the order of :attr:`benchmark_cases` (or of ``among``): the
        first is its *headline case*, the one its figure is taken on; every comparison of two versions is
        taken on the first case both run (:func:`reporter.standing.comparison_case`). A version without
        ``CASES_WHERE`` runs them all, and nothing is imported to say so. ``cases``, ``complete``: as for
        :meth:`cases_of`."""
        order = self.benchmark_cases if among is None else among
        if not version.cases_where():
            return list(order)
        runs = set(self.cases_of(version, cases, complete=complete))
        return [c for c in order if c in runs]

    def headline_case(self, version: Version) -> str | None:
        """The case ``version``'s figure is taken on: the first of :attr:`benchmark_cases` it runs (None: it
        runs none of them)."""
        heads = self.headline_cases(version)
        return heads[0] if heads else None

    def plan(self, versions: list[Version], case_names: list[str], *, named: bool = False
             ) -> list[tuple[str, list[Version]]]:
        """Which versions run each case, in order, for the harness: a version is left out of the cases its
        ``CASES_WHERE`` excludes (a case no version runs is left out). ``named``: the user named both the
        cases and the versions, so a pair left out is an error saying which, rather than skipped."""
        out = []
        for case_name in case_names:
            runs = [v for v in versions if self.runs_case(v, case_name)]
            if named and len(runs) < len(versions):
                left = [v for v in versions if v not in runs]
                raise AssignmentError("; ".join(
                    f"{v.name} does not run case '{case_name}': CASES_WHERE {v.cases_where()!r} in {v.path} "
                    f"(it runs: {', '.join(self.cases_of(v))})" for v in left))
            if runs:
                out.append((case_name, runs))
        return out


def find_repo_root(start: Path | None = None) -> Path:
    """The nearest folder upwards holding kernels/ (the project root)."""
    here = (start or Path.cwd()).resolve()
    for p in (here, *here.parents):
        if (p / "kernels").is_dir():
            return p
    return here


def list_assignments(kernels_dir: Path) -> list[Assignment]:
    if not kernels_dir.is_dir():
        return []
    return [Assignment(p.name, p) for p in sorted(kernels_dir.iterdir())
            if (p / "assignment.py").is_file()]


def get_assignment(kernels_dir: Path, name: str) -> Assignment:
    """The assignment in ``kernels_dir/name``; a ``name`` that is no folder name (:func:`check_name`) is
    refused before any path is made of it."""
    check_name(name, "assignment")
    p = kernels_dir / name
    if not (p / "assignment.py").is_file():
        known = ", ".join(a.name for a in list_assignments(kernels_dir)) or "none"
        raise AssignmentError(f"no assignment '{name}': {p / 'assignment.py'} does not exist (have: {known})")
    return Assignment(name, p)


def _import_file(path: Path, module_name: str) -> ModuleType:
    if not path.is_file():
        raise AssignmentError(f"{path}: no such file")
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise AssignmentError(f"{path}: cannot be imported")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = mod
    # let a version import its assignment's helpers (e.g. `from assignment import ...`)
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(mod)
    except SyntaxError as e:
        sys.modules.pop(module_name, None)
        where = f"{e.filename or path}:{e.lineno}" if e.lineno else str(path)
        raise AssignmentCodeError(f"{where}: syntax error: {e.msg}") from e
    except ImportError as e:
        sys.modules.pop(module_name, None)
        if _missing_library(e, path):  # a library or a course folder this machine lacks: callers may do without
            raise AssignmentError(f"{_raised_where(e, path)}: cannot import {e.name}: {e}") from e
        # a misspelt sibling module or name: the people's code, reported like any other error in it
        raise AssignmentCodeError(f"{_raised_where(e, path)}: {type(e).__name__} on import: {e}") from e
    except Exception as e:  # the people's code raising at import: name the file and the line it raised on
        sys.modules.pop(module_name, None)
        raise AssignmentCodeError(f"{_raised_where(e, path)}: raised {type(e).__name__} on import: {e}") from e
    return mod


def _missing_library(e: ImportError, path: Path) -> bool:
    """Whether ``e`` is a module this machine lacks (torch, cupy, a course package), rather than one
    of the assignment's own files or a name misspelt in an import from one."""
    if not isinstance(e, ModuleNotFoundError) or not e.name:
        return False
    top = e.name.split(".")[0]
    for folder in (path.parent, path.parent.parent):  # the assignment's folder, kernels/ (common/)
        if (folder / f"{top}.py").is_file() or (folder / top).is_dir():
            return False
    return True


def _raised_where(e: BaseException, path: Path) -> str:
    """'file:line' of the innermost frame of ``e`` in ``path``'s folder (the people's code), else ``path``."""
    import traceback

    folder = path.parent.resolve()
    where = str(path)
    for frame in traceback.extract_tb(e.__traceback__):
        try:
            if Path(frame.filename).resolve().parent == folder:
                where = f"{frame.filename}:{frame.lineno}"
        except OSError:
            continue
    return where


#: the folder that holds the reporter package (the project's root in a checkout)
PACKAGE_PARENT = Path(__file__).resolve().parent.parent


def project_path(path: Path, repo_root: Path) -> str:
    """A file's name in a record or an export: relative to the project, else to the folder that holds the
    installed reporter package (``reporter/...``), else its bare name; never a path of the machine."""
    p = Path(path).resolve()
    for base in (Path(repo_root).resolve(), PACKAGE_PARENT):
        if p.is_relative_to(base):
            return p.relative_to(base).as_posix()
    return p.name


def snapshot_of(paths: Iterable[Path], repo_root: Path, config: dict | None = None) -> CodeSnapshot:
    """What a record says ran: each file of ``paths`` read now (named by :func:`project_path`, with the sha256
    of its text, as exports and builds state it) and the project's git state (:func:`git_state`)."""
    files = []
    for p in paths:
        text = Path(p).read_text(encoding="utf-8")
        files.append(SourceFile(path=project_path(p, repo_root), sha256=hashlib.sha256(text.encode()).hexdigest(),
                                text=text))
    commit, dirty = git_state(repo_root)
    return CodeSnapshot(files=files, git_commit=commit, git_dirty=dirty, config=dict(config or {}))


def git_state(root: Path) -> tuple[str | None, bool | None]:
    """(commit, dirty) of the project at ``root``: its own git checkout's HEAD and whether kernels/ or
    reporter/ differ from it; (None, None) where ``root`` is not the top of a checkout (a copy of the
    project inside another repository is not that repository's code). REPORT_GIT_COMMIT and
    REPORT_GIT_DIRTY, where set, say it instead (a GPU machine's copy of the tree has no .git)."""
    import os
    import subprocess

    # the GPU node may get a copy of the tree without .git: the caller can pass the state
    if os.environ.get("REPORT_GIT_COMMIT"):
        dirty_env = os.environ.get("REPORT_GIT_DIRTY")
        return os.environ["REPORT_GIT_COMMIT"], (dirty_env == "1") if dirty_env is not None else None
    try:
        # the project's own checkout or none: a copy of the project inside another repository (not a checkout
        # itself) would otherwise name that repository's commit, clean or not, for code it never held
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=root, capture_output=True, text=True,
                             timeout=10).stdout.strip()
        if not top or Path(top).resolve() != Path(root).resolve():
            return None, None
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                                text=True, timeout=10).stdout.strip() or None
        status = subprocess.run(["git", "status", "--porcelain", "--", "kernels", "reporter"], cwd=root,
                                capture_output=True, text=True, timeout=10)
        dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
        return commit, dirty
    except (OSError, subprocess.SubprocessError):
        return None, None


# --------------------------------------------------------------------------- constants of assignment.py, read without importing it


def spec_literal(assignment_dir: Path, name: str, default: Any = None) -> Any:
    """A constant of ``assignment.py`` read without importing it (no torch, no side effects);
    falls back to importing the module when the value is not a literal."""
    missing = object()
    value = read_literal(assignment_dir / "assignment.py", name, missing)
    if value is not missing:
        return value
    try:
        return getattr(get_assignment(assignment_dir.parent, assignment_dir.name).spec, name, default)
    except AssignmentCodeError:
        raise
    except Exception:  # an assignment that does not import here (no torch, say) keeps the default
        return default


def legacy_keys(kernels: Path | None, assignment: str) -> LegacyCaseKeys | None:
    """How the assignment's older records name their case keys (None without a kernels/ folder)."""
    if kernels is None or not (kernels / assignment / "assignment.py").is_file():
        return None
    return legacy_case_keys(kernels / assignment) or None


def benchmark_cases_of(assignment_dir: Path) -> list[str]:
    """``BENCHMARK_CASES`` (a list of case names), or ``[BENCHMARK_CASE]`` where it defines only that; the
    first is ``BENCHMARK_CASE`` (which may then be left out). Read without importing where they are literals."""
    path = Path(assignment_dir) / "assignment.py"
    many = None
    if _assigned(path, "BENCHMARK_CASES") is not None:
        many = spec_literal(assignment_dir, "BENCHMARK_CASES", None)
        if not isinstance(many, (list, tuple)) or not many or not all(isinstance(c, str) for c in many) \
                or len(set(many)) != len(many):
            raise AssignmentError(f"{path}: BENCHMARK_CASES must be a literal list of distinct case names, the "
                                  f"first the BENCHMARK_CASE (got {many!r})")
    if many and _assigned(path, "BENCHMARK_CASE") is None:
        return list(many)
    single = str(spec_literal(assignment_dir, "BENCHMARK_CASE", "benchmark"))
    if many and many[0] != single:
        raise AssignmentError(f"{path}: BENCHMARK_CASE '{single}' must be the first of BENCHMARK_CASES "
                              f"({', '.join(many)})")
    return list(many) if many else [single]


def benchmark_case(kernels: Path, assignment: str) -> str:
    return benchmark_cases_of(kernels / assignment)[0]


def headline_cases_of(kernels: Path, assignment: str, version: str,
                      recorded: Callable[[], dict[str, dict]] | None = None) -> list[str]:
    """The benchmark cases a version runs, by its full name (:meth:`Assignment.headline_cases`): every one
    for a version without ``CASES_WHERE`` or whose file is gone (only its records remain). ``recorded``
    gives name -> parameters of the cases the records hold, asked only when the assignment does not
    import here."""
    folder = kernels / assignment
    path = folder / f"{version}.py"
    m = VERSION_RE.match(version)
    if m is None or not path.is_file() or not read_cases_where(path):
        return benchmark_cases_of(folder)
    a = Assignment(assignment, folder)
    known, complete = a.known_cases(recorded or dict)
    return a.headline_cases(Version(version, int(m.group(1)), path, folder), known, complete=complete)


def headline_case(kernels: Path, assignment: str, version: str,
                  recorded: Callable[[], dict[str, dict]] | None = None) -> str:
    """The case a version's figure is taken on (:func:`headline_cases_of`); the benchmark case for a version
    that runs none."""
    heads = headline_cases_of(kernels, assignment, version, recorded)
    return heads[0] if heads else benchmark_case(kernels, assignment)
