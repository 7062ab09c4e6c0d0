"""The names a course's harness makes importable beside a submission, and importing with them.

The course's ``eval.py`` (CS149, GPU MODE) runs from a copy of the problem's folder, with the
``problems/`` folder on ``PYTHONPATH``: a submission can ``from task import input_t, output_t``,
``from reference import ref_kernel`` or ``import utils``, and gets the modules the harness itself
imported. This module is the one answer to "which names are those" (:func:`supplied_names`) and
"import a version of ours the way the harness would let it" (:func:`course_imports`):

* the names are those of the ``.py`` files the submission runs beside: GPU MODE's ``task.yml`` lists
  them (``files:``); in a CS149 folder, the ``.py`` files of the problem's folder and of the folder above
  it (``reference``, ``task``, a problem's own ``model``; ``utils``, ``eval``); never ``submission`` (the
  harness writes that one); where the folder is not on this machine, the format's three, ``reference``,
  ``task`` and ``utils``;
* while a version is imported, the folder and its parent come first on ``sys.path`` and those names
  are bound to the modules the course's reference was loaded with in this process (one instance
  each, as in the harness's process), or imported fresh from the folder; afterwards ``sys.path`` and
  ``sys.modules`` are as they were, so two problems in one process never see each other's ``task``.
  A version keeps the module objects it imported at its top level; an import inside a function runs
  later, outside this context, and is not supported.

Nothing here knows a particular course or problem; it imports nothing of the project.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

#: the names every CS149 / GPU MODE problem folder gives (reference.py and task.py beside the
#: submission, utils.py one folder up)
FORMAT_NAMES = ("reference", "task", "utils")
#: the file the harness writes into the folder: never one of the names it supplies
SUBMISSION = "submission"

_LOCK = threading.RLock()
_LOADED: dict[Path, dict[str, ModuleType]] = {}  # a problem folder (resolved) -> the modules its reference loaded


def supplied_names(folder: Path | None) -> tuple[str, ...]:
    """The module names the course's harness makes importable for a submission of the problem in
    ``folder``: GPU MODE's ``task.yml`` lists the files the submission runs beside (``files:``); a CS149
    folder has its ``.py`` files and those one folder up; the format's three where the folder is not here."""
    if folder is None or not (Path(folder) / "reference.py").is_file():
        return FORMAT_NAMES
    folder = Path(folder)
    listed = _task_yml_files(folder / "task.yml")
    if listed is not None:
        names = [Path(n).stem for n in listed if n.endswith(".py")]
    else:
        names = [p.stem for d in (folder, folder.parent) for p in sorted(d.glob("*.py"))]
    return tuple(dict.fromkeys(n for n in [*FORMAT_NAMES, *names] if n != SUBMISSION and n.isidentifier()))


def _task_yml_files(path: Path) -> list[str] | None:
    """The names under ``files:`` of a GPU MODE task.yml; None without one (a file that cannot be read is
    refused where the cases are read: :func:`reporter.course.read_task`)."""
    if not path.is_file():
        return None
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        return [str(f["name"]) for f in data.get("files") or []]
    except Exception:
        return None


def remember(folder: Path, modules: Mapping[str, ModuleType]) -> None:
    """Keep the modules the course's reference was loaded with (``reference`` among them), so that a
    version importing those names in this process gets the same objects, as in the harness."""
    with _LOCK:
        _LOADED[Path(folder).resolve()] = dict(modules)


@contextmanager
def course_imports(folder: Path, names: tuple[str, ...] | None = None) -> Iterator[dict[str, ModuleType]]:
    """``folder`` and its parent first on ``sys.path``, the supplied names free (or bound to the modules
    remembered for the folder), everything as it was afterwards. Yields a dict that receives, on exit,
    the modules bound to those names inside (what the code run in the context imported)."""
    folder = Path(folder)
    names = names or supplied_names(folder)
    seen: dict[str, ModuleType] = {}
    with _LOCK:
        saved_path = list(sys.path)
        saved = {name: sys.modules.pop(name) for name in names if name in sys.modules}
        sys.modules.update({k: v for k, v in _LOADED.get(folder.resolve(), {}).items() if k in names})
        sys.path[:0] = [str(folder), str(folder.parent)]
        try:
            yield seen
        finally:
            seen.update({name: sys.modules[name] for name in names if name in sys.modules})
            sys.path[:] = saved_path
            for name in names:
                sys.modules.pop(name, None)
            sys.modules.update(saved)
