"""A course's problem folder, in the CS149 or the GPU MODE layout, used as an assignment at run time.

Both layouts (CS149's ``asst5-kernels/problems/<name>/``, GPU MODE's ``reference-kernels/problems/<set>/<name>/``):

* ``reference.py`` with ``generate_input(**case)``, ``ref_kernel(data)`` and
  ``check_implementation(data, output)``, which returns ``(ok, message)`` (CS149, GPU MODE's newer
  problems) or an error text, empty when the output passes (GPU MODE's pmpp problems); it imports
  ``task`` (the folder's ``task.py``, types) and often ``utils`` (one folder up, shared by the problems);
* the cases, one ``key: value; key: value`` line each (a value is an integer or a name), which the
  harness's ``eval.py MODE FILE`` reads and passes to ``generate_input``:

  - CS149: ``test_cases/test.txt``, one file for both modes; the cases are its lines, the last the
    benchmark (unless told otherwise), the others ``test_0``, ``test_1``, … by their line index, as
    ``eval.py`` logs them;
  - GPU MODE: ``task.yml``, whose ``tests:`` and ``benchmarks:`` lists of keyword dicts the runner writes
    into that file for test and benchmark mode, and whose ``files:`` say which files the submission runs
    beside (``{"name": "utils.py", "source": "../utils.py"}``; ``@SUBMISSION@`` for the submission) and
    ``config.main`` which one is the harness; the cases are ``test_0``, … for the tests and
    ``benchmark_0``, … for the benchmarks, the last benchmark (the one the leaderboard ranks) named
    ``benchmark``. Its ``solutions/correct/`` and ``solutions/wrong/`` are submissions that the check
    must pass and fail (:func:`solutions`);
* ``README.md``, whose first heading names the problem (GPU MODE: ``task.yml``'s ``description``).

:class:`CourseTask` loads those functions from the folder itself, each time a process needs
them, and never copies them: what the harness calls is the course's code as it is on this
machine. A folder that is not there gives :class:`~reporter.assignments.AssignmentError` naming
it; nothing else in the project needs it (records and reports do not).

``reporter/course.py`` names no assignment; ``report new NAME --from-task PATH`` writes an
``assignment.py`` that is a few lines over this module.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from .assignments import AssignmentError, Peer
from .course_imports import (SUBMISSION_SOURCE, TASK_YML, course_imports, read_task_yml, remember, remembered,
                             task_yml_files)
from .records import WorkModel

TEST_FILE = Path("test_cases") / "test.txt"
BENCHMARK = "benchmark"
# one line of a test file, as the course's eval.py accepts it: key: int-or-name, separated by ';'
_PART = re.compile(r"\s*([a-zA-Z_][a-zA-Z0-9_]*):\s*([a-zA-Z_][a-zA-Z0-9_]*|[+-]?[0-9]+)\s*")


class TestFileError(AssignmentError):
    """A test file line that the course's harness would refuse too; names the file and line."""


def parse_test_file(path: Path) -> list[dict[str, int | str]]:
    """The cases of a ``test_cases/test.txt``: one dict per line, integers as ints, names as strings.

    Blank lines are skipped (the course's harness refuses them; a trailing newline is common).
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise TestFileError(f"{path}: cannot read the test file: {e}") from e
    cases: list[dict[str, int | str]] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        case: dict[str, int | str] = {}
        for part in line.split(";"):
            m = _PART.fullmatch(part)
            if m is None:
                raise TestFileError(f"{path}:{lineno}: '{part.strip()}' is not 'key: value' (a value is an integer "
                                    "or a name)")
            key, value = m.group(1), m.group(2)
            if key in case:
                raise TestFileError(f"{path}:{lineno}: key '{key}' appears twice")
            try:
                case[key] = int(value)
            except ValueError:
                case[key] = value
        cases.append(case)
    if not cases:
        raise TestFileError(f"{path}: no test cases")
    return cases


def case_names(n: int, benchmark_index: int | None = None) -> list[str]:
    """Names for ``n`` test-file lines: the benchmark line (default the last) is ``benchmark``,
    every other line ``test_<index>``, its 0-based line index among the cases (``eval.py``'s)."""
    bench = n - 1 if benchmark_index is None else benchmark_index
    if not 0 <= bench < n:
        raise AssignmentError(f"benchmark line {bench} is outside the test file's {n} cases")
    return [BENCHMARK if i == bench else f"test_{i}" for i in range(n)]


@dataclass(frozen=True)
class TaskSpec:
    """What a problem folder gives its harness, in either layout: the cases of each mode and how the run
    folder is laid out."""

    layout: str  # 'cs149' (test_cases/test.txt) or 'gpumode' (task.yml)
    tests: list[dict[str, int | str]]  # what the harness's test mode runs
    benchmarks: list[dict[str, int | str]]  # what its benchmark mode times
    files: list[tuple[str, str]] = field(default_factory=list)  # gpumode: (name in the run folder, source)
    main: str = "eval.py"  # the harness, in the run folder (gpumode) or one folder up (cs149)
    source: Path | None = None  # the file the cases were read from

    def named_cases(self, benchmark_index: int | None = None) -> dict[str, dict[str, int | str]]:
        """Case name -> parameters. CS149: :func:`case_names` over the test file's lines. GPU MODE: ``test_<i>``
        for each test, ``benchmark_<i>`` for each benchmark, the one at ``benchmark_index`` (default the last,
        the leaderboard's) named ``benchmark``."""
        if self.layout == "cs149":
            return dict(zip(case_names(len(self.tests), benchmark_index), self.tests, strict=True))
        if not self.benchmarks:
            raise TestFileError(f"{self.source}: no benchmarks: the timed cases are task.yml's benchmarks")
        bench = case_names(len(self.benchmarks), benchmark_index)
        out = {f"test_{i}": case for i, case in enumerate(self.tests)}
        out.update({name if name == BENCHMARK else f"benchmark_{i}": case
                    for i, (name, case) in enumerate(zip(bench, self.benchmarks, strict=True))})
        return out


def _yml_cases(path: Path, data: dict, key: str) -> list[dict[str, int | str]]:
    value = data.get(key) or []
    if not isinstance(value, list):
        raise TestFileError(f"{path}: '{key}' must be a list of keyword dicts, got {type(value).__name__}")
    out = []
    for i, case in enumerate(value):
        if not isinstance(case, dict) or not case:
            raise TestFileError(f"{path}: {key}[{i}] must be a dict of keyword arguments, got {case!r}")
        for k, v in case.items():
            text = f"{k}: {v}"
            if not isinstance(k, str) or isinstance(v, bool) or not isinstance(v, (int, str)) or not _PART.fullmatch(text):
                raise TestFileError(f"{path}: {key}[{i}]: '{text}' is not 'key: value' (a value is an integer or a "
                                    "name), which the harness's test file cannot carry")
        out.append(dict(case))
    return out


def read_task(folder: Path, test_file: Path = TEST_FILE) -> TaskSpec:
    """The folder's cases and layout: ``test_cases/test.txt`` (CS149), else ``task.yml`` (GPU MODE); an error
    naming both when neither is there."""
    folder = Path(folder)
    if (folder / test_file).is_file():
        lines = parse_test_file(folder / test_file)
        return TaskSpec("cs149", lines, lines, source=folder / test_file)
    path = folder / TASK_YML
    try:
        data = read_task_yml(folder)
        files = task_yml_files(folder, data) if data is not None else []
    except ValueError as e:
        raise TestFileError(str(e)) from e
    if data is None:
        raise TestFileError(f"{folder}: no cases: neither {test_file.as_posix()} (CS149) nor {TASK_YML} (GPU MODE) "
                            "is there")
    if files and SUBMISSION_SOURCE not in [src for _, src in files]:
        raise TestFileError(f"{path}: no file's source is {SUBMISSION_SOURCE}: where would the submission go?")
    config = data.get("config") or {}
    main = config.get("main", "eval.py") if isinstance(config, dict) else "eval.py"
    tests, benchmarks = _yml_cases(path, data, "tests"), _yml_cases(path, data, "benchmarks")
    if not tests and not benchmarks:
        raise TestFileError(f"{path}: no tests and no benchmarks")
    return TaskSpec("gpumode", tests, benchmarks, files=files, main=str(main), source=path)


def problem_title(folder: Path) -> str:
    """The first Markdown heading of the folder's README.md, else the first line of task.yml's description
    (GPU MODE), else the folder's name."""
    readme = folder / "README.md"
    try:
        for line in readme.read_text(encoding="utf-8").splitlines():
            m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m and m.group(1):
                return m.group(1)
    except (OSError, UnicodeDecodeError):
        pass
    try:
        data = read_task_yml(folder) or {}
    except ValueError:  # refused where the cases are read; the title is the folder's name
        data = {}
    lines = str(data.get("description") or "").strip().splitlines()
    first = lines[0].strip().rstrip(".") if lines else ""
    return first if 0 < len(first) <= 80 else folder.name


def load_reference(folder: Path) -> ModuleType:
    """The folder's ``reference.py``, imported from the folder under a name of its own."""
    path = folder / "reference.py"
    if not path.is_file():
        raise AssignmentError(f"{folder}: no reference.py: not a course problem folder (CS149 / GPU MODE format)")
    module = remembered(folder).get("reference")  # a version of ours that imported it first: the one instance
    if module is None:
        name = f"_course_{re.sub(r'[^A-Za-z0-9_]', '_', str(folder.resolve()))}_reference"
        with course_imports(folder):
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:
                raise AssignmentError(f"{path}: cannot be imported")
            module = importlib.util.module_from_spec(spec)
            try:
                spec.loader.exec_module(module)
            except Exception as e:
                raise AssignmentError(f"{path}: importing it failed: {type(e).__name__}: {e}") from e
        # itself, beside what it imported (task, utils, ...), as a version importing the name gets it
        remember(folder, {"reference": module})
    for attr in ("generate_input", "ref_kernel", "check_implementation"):
        if not callable(getattr(module, attr, None)):
            raise AssignmentError(f"{path}: defines no {attr}(), which the course's harness calls")
    return module


def _tensors(x: Any) -> Iterator[Any]:
    if isinstance(x, (tuple, list)):
        for item in x:
            yield from _tensors(item)
    elif isinstance(x, dict):
        for item in x.values():
            yield from _tensors(item)
    elif hasattr(x, "element_size") and hasattr(x, "numel"):
        yield x


def tensor_bytes(x: Any) -> int:
    """Bytes of every tensor in a (nested) input or output."""
    return sum(int(t.numel()) * int(t.element_size()) for t in _tensors(x))


def check_result(res: Any) -> tuple[bool, str]:
    """(ok, message) of what a course's ``check_implementation`` returned: ``(ok, message)``; a bool; else an
    error, read as the harness reads it (GPU MODE's pmpp problems: ``if error: fail``): an empty text, an
    empty list of reasons or None passes, anything else fails with its text as the message."""
    if isinstance(res, tuple) and len(res) == 2:
        return bool(res[0]), str(res[1] or "")
    if isinstance(res, bool):
        return res, ""
    if not res:
        return True, ""
    return False, " ".join(map(str, res)) if isinstance(res, (list, tuple)) else str(res)


@dataclass
class CourseTask:
    """One problem folder, loaded lazily: reading this object's fields imports nothing until a
    case, a function or a peer is asked for."""

    folder: Path
    test_file: Path = TEST_FILE
    benchmark_index: int | None = None  # which line of the test file is the benchmark; default the last
    _reference: ModuleType | None = field(default=None, init=False, repr=False)
    _sizes: dict[tuple, tuple[int, int]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self.folder = Path(self.folder)

    def require(self) -> Path:
        """The folder, or a clear error saying where it was looked for and how to get it."""
        if not (self.folder / "reference.py").is_file():
            raise AssignmentError(
                f"the course problem folder {self.folder} is not on this machine (no reference.py there): "
                "check out the course's repository so that the folder is there, or point TASK_DIR in this "
                "assignment's assignment.py at the problem's folder")
        return self.folder

    @property
    def reference(self) -> ModuleType:
        if self._reference is None:
            self._reference = load_reference(self.require())
        return self._reference

    # ---- the assignment interface (see reporter.assignments)

    @property
    def spec(self) -> TaskSpec:
        """The folder's cases and harness layout (:func:`read_task`)."""
        return read_task(self.require(), self.test_file)

    @property
    def cases(self) -> dict[str, dict[str, int | str]]:
        return self.spec.named_cases(self.benchmark_index)

    @property
    def title(self) -> str:
        return problem_title(self.folder)

    def generate_input(self, **case: Any) -> Any:
        return self.reference.generate_input(**case)

    def ref_kernel(self, data: Any) -> Any:
        return self.reference.ref_kernel(data)

    def check_implementation(self, data: Any, output: Any) -> tuple[bool, str]:
        """The course's own check, as its harness calls it (on the input the kernel was given a clone of):
        :func:`check_result` of what it returns."""
        return check_result(self.reference.check_implementation(data, output))

    def _moved(self, case: dict[str, Any]) -> tuple[int, int, str]:
        """(bytes read, bytes written, in words) at least: the case's input tensors read once and the reference
        output's written once, measured on the case's own input (drawn once per case and process)."""
        key = tuple(sorted(case.items()))
        sizes = self._sizes.get(key)
        if sizes is None:
            data = self.generate_input(**case)
            out = self.ref_kernel(data)
            sizes = self._sizes[key] = (tensor_bytes(data), tensor_bytes(out))
            del data, out
        read, written = sizes
        return read, written, f"the input's tensors ({read:,} bytes) read once and the output ({written:,} bytes) written once"

    def work_model(self, **case: Any) -> WorkModel:
        """The bytes the problem must move (:meth:`_moved`). A course folder states no flop count: the flops are
        None (unknown), and every output shows the rates and roof shares that need them as unknown, never as
        zero, until ``work_model`` in the assignment gives them (:meth:`counted_work`)."""
        read, written, words = self._moved(case)
        return WorkModel(flops=None, bytes=float(max(read + written, 1)), ceiling="copy",
                         bytes_read=float(read) if read > 0 else None,
                         description=f"{words}; the course's folder gives no flop count, so no TFLOP/s and no share "
                                     "of a roof are known")

    def counted_work(self, case: dict[str, Any], *, flops: float, ceiling: str, what: str) -> WorkModel:
        """The work model with the flops the assignment counts (``what`` says how) against ``ceiling``, and the
        bytes as :meth:`work_model` measures them."""
        read, written, words = self._moved(case)
        return WorkModel(flops=flops, bytes=float(max(read + written, 1)), ceiling=ceiling,
                         bytes_read=float(read) if read > 0 else None, description=f"{what}; {words}")

    def peers(self) -> dict[str, Peer]:
        return {"course_reference": Peer(self.ref_kernel, "the course's ref_kernel (its PyTorch reference)")}

    def attribute(self, name: str) -> Any:
        """A module-level name an assignment over this task does not define itself (its
        ``__getattr__``): ``CASES``, ``generate_input``, ``ref_kernel``, ``check_implementation``,
        ``PEERS``, ``TOLERANCE`` (none: the course's check decides)."""
        getters: dict[str, Callable[[], Any]] = {
            "CASES": lambda: self.cases, "generate_input": lambda: self.generate_input,
            "ref_kernel": lambda: self.ref_kernel, "check_implementation": lambda: self.check_implementation,
            "PEERS": self.peers, "TOLERANCE": lambda: None,
        }
        if name not in getters:
            raise AttributeError(name)
        return getters[name]()
