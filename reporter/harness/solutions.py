"""A course folder's own solutions run through its own check: `report solutions`.

GPU MODE's problem folders carry ``solutions/correct/*.py`` and ``solutions/wrong/*.py``: submissions
that the problem's ``check_implementation`` must pass and must fail. Running them is the test of the
check itself: a check that passes a wrong solution would pass a wrong version of ours too. Each
solution is imported as the harness imports a submission (the folder's modules beside it,
:func:`reporter.course_imports.course_imports`), called on each test case's fresh input, and its output
checked; a correct solution must pass every case, a wrong one must be failed by the check on at least
one. A solution that does not import or raises is not judged by the check at all: it is reported as an
error, never as a wrong solution caught. Nothing is timed and nothing is written.
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..course import CourseTask
from ..course_imports import course_imports

KINDS = ("correct", "wrong")


@dataclass
class SolutionResult:
    """One solution file on the test cases: (case, verdict, message) each, the verdict 'pass' or 'fail' (the
    check's) or 'error' (the solution did not import, or raised: the check did not judge it)."""

    path: Path
    kind: str  # 'correct' or 'wrong'
    cases: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def as_expected(self) -> bool:
        verdicts = [v for _, v, _ in self.cases]
        if self.kind == "correct":
            return bool(verdicts) and all(v == "pass" for v in verdicts)
        return "fail" in verdicts


def solution_files(folder: Path) -> list[tuple[str, Path]]:
    """(kind, path) of every ``solutions/correct|wrong/*.py`` of a problem folder, correct ones first."""
    return [(kind, p) for kind in KINDS for p in sorted((Path(folder) / "solutions" / kind).glob("*.py"))]


def _load(task: CourseTask, path: Path) -> Any:
    name = "_solution_" + re.sub(r"[^A-Za-z0-9_]", "_", str(path.resolve()))
    with course_imports(task.folder):
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"{path}: cannot be imported")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module


def check_solutions(task: CourseTask, cases: dict[str, dict[str, Any]]) -> list[SolutionResult]:
    """Each solution of the task's folder on each of ``cases`` (name -> parameters)."""
    from .check import clone_input  # a copy of the input for the check, as the course's harness keeps one

    out = []
    for kind, path in solution_files(task.folder):
        result = SolutionResult(path, kind)
        try:
            fn = _load(task, path).custom_kernel
        except Exception as e:  # a solution that does not import is one that fails every case
            result.cases = [(name, "error", f"import failed: {type(e).__name__}: {e}") for name in cases]
            out.append(result)
            continue
        for name, params in cases.items():
            data = task.generate_input(**params)
            kept = clone_input(data)
            try:
                output = fn(data)
            except Exception as e:
                result.cases.append((name, "error", f"raised {type(e).__name__}: {e}"[:200]))
                continue
            ok, message = task.check_implementation(kept, output)
            result.cases.append((name, "pass" if ok else "fail", message.splitlines()[0][:200] if message else ""))
        out.append(result)
    return out
