"""The names a course's harness makes importable beside a submission, and importing with them.

The course's ``eval.py`` (CS149, GPU MODE) runs a submission beside the problem's files: a submission
can ``from task import input_t, output_t``, ``from reference import ref_kernel`` or ``import utils``,
and gets the modules the harness itself imported. This module is the one answer to "which names are
those" (:func:`supplied_names`) and "import a version of ours the way the harness would let it"
(:func:`course_imports`):

* the names are those of the ``.py`` files the submission runs beside: GPU MODE's ``task.yml`` lists
  them (``files:``, each with the file it is copied from, which may sit anywhere in the repository:
  ``../../pmpp_v2/utils.py``); in a CS149 folder, the ``.py`` files of the problem's folder and of the
  folder above it (``reference``, ``task``, a problem's own ``model``; ``utils``, ``eval``); never
  ``submission`` (the harness writes that one); where the folder is not on this machine, the format's
  three, ``reference``, ``task`` and ``utils``;
* while a version is imported, the files come first on ``sys.path`` under those names (a CS149 folder
  and its parent; for ``task.yml``, a private folder holding a link to each listed file under its
  listed name, as the runner lays them out), and the names are bound to the modules the course's
  reference was loaded with in this process, one instance each as in the harness's process, whichever
  was imported first; afterwards ``sys.path`` and ``sys.modules`` are as they were, so two problems in
  one process never see each other's ``task``. A version keeps the module objects it imported at its
  top level; an import inside a function runs later, outside this context, and is not supported.

Nothing here knows a particular course or problem; it imports nothing of the project.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
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
SUBMISSION_SOURCE = "@SUBMISSION@"  # task.yml's stand-in for the submission among its files
TASK_YML = "task.yml"

_LOCK = threading.RLock()
_LOADED: dict[Path, dict[str, ModuleType]] = {}  # a problem folder (resolved) -> the modules loaded under its names
_STAGED: dict[Path, Path] = {}  # a problem folder (resolved) -> the private folder of links to task.yml's files


def read_task_yml(folder: Path) -> dict | None:
    """GPU MODE's ``task.yml`` of a problem folder, as a mapping; None where there is none. The one reader of
    that file: a file that cannot be read, or is no mapping, is a ValueError naming it."""
    path = Path(folder) / TASK_YML
    if not path.is_file():
        return None
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise ValueError(f"{path}: cannot read it: {e}") from e
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a mapping of tests, benchmarks and files")
    return data


def task_yml_files(folder: Path, data: dict) -> list[tuple[str, str]]:
    """(name in the run folder, source relative to the problem folder, or ``@SUBMISSION@``) of each entry of
    ``files:``; a ValueError naming the file and the entry that is not ``{name: ..., source: ...}``."""
    out = []
    for i, entry in enumerate(data.get("files") or []):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not isinstance(entry.get("source"), str):
            raise ValueError(f"{Path(folder) / TASK_YML}: files[{i}] must be {{name: ..., source: ...}}, got {entry!r}")
        out.append((entry["name"], entry["source"]))
    return out


def listed_files(folder: Path) -> list[tuple[str, Path]] | None:
    """(name, file) of each ``.py`` file GPU MODE's ``task.yml`` puts beside the submission, the submission
    left out; None without a task.yml, or with one that cannot be read (it is refused where the cases are
    read: :func:`reporter.course.read_task`)."""
    try:
        data = read_task_yml(folder)
        entries = task_yml_files(folder, data) if data is not None else None
    except ValueError:
        return None
    if entries is None:
        return None
    return [(name, Path(folder) / source) for name, source in entries
            if name.endswith(".py") and source != SUBMISSION_SOURCE and Path(name).stem != SUBMISSION]


def supplied_names(folder: Path | None) -> tuple[str, ...]:
    """The module names the course's harness makes importable for a submission of the problem in
    ``folder`` (see the module's docstring)."""
    if folder is None or not (Path(folder) / "reference.py").is_file():
        return FORMAT_NAMES
    folder = Path(folder)
    listed = listed_files(folder)
    if listed is not None:
        names = [Path(n).stem for n, _ in listed]
    else:
        names = [*FORMAT_NAMES, *(p.stem for d in (folder, folder.parent) for p in sorted(d.glob("*.py")))]
    return tuple(dict.fromkeys(n for n in names if n != SUBMISSION and n.isidentifier()))


def remember(folder: Path, modules: Mapping[str, ModuleType]) -> None:
    """Keep the modules loaded under the course's names for ``folder`` (``reference`` among them), so that
    whatever imports those names next in this process gets the same objects, as in the harness."""
    with _LOCK:
        _LOADED.setdefault(Path(folder).resolve(), {}).update(modules)


def remembered(folder: Path) -> dict[str, ModuleType]:
    """The modules kept for ``folder`` so far (:func:`remember`)."""
    with _LOCK:
        return dict(_LOADED.get(Path(folder).resolve(), {}))


def _search_path(folder: Path) -> list[str]:
    """Where the names resolve: for a task.yml, a private folder of links named as the runner names the
    files (made once a process, removed at exit), then the problem's folder; else the folder and its parent."""
    listed = listed_files(folder)
    if listed is None:
        return [str(folder), str(folder.parent)]
    key = folder.resolve()
    staged = _STAGED.get(key)
    if staged is None or not staged.is_dir():
        staged = Path(tempfile.mkdtemp(prefix="course_files_"))
        atexit.register(shutil.rmtree, staged, ignore_errors=True)
        for name, source in listed:
            if source.is_file():
                try:
                    os.symlink(source.resolve(), staged / name)
                except OSError:  # no symbolic links here: a copy
                    shutil.copy2(source, staged / name)
        _STAGED[key] = staged
    return [str(staged), str(folder)]


@contextmanager
def course_imports(folder: Path, names: tuple[str, ...] | None = None) -> Iterator[dict[str, ModuleType]]:
    """The course's files first on ``sys.path``, the supplied names bound to the modules remembered for the
    folder (or free, then remembered as imported here), everything as it was afterwards. Yields a dict that
    receives, on exit, the modules bound to those names inside (what the code run in the context imported)."""
    folder = Path(folder)
    names = names or supplied_names(folder)
    seen: dict[str, ModuleType] = {}
    with _LOCK:
        saved_path = list(sys.path)
        saved = {name: sys.modules.pop(name) for name in names if name in sys.modules}
        sys.modules.update({k: v for k, v in remembered(folder).items() if k in names})
        sys.path[:0] = _search_path(folder)
        try:
            yield seen
        finally:
            seen.update({name: sys.modules[name] for name in names if name in sys.modules})
            sys.path[:] = saved_path
            for name in names:
                sys.modules.pop(name, None)
            sys.modules.update(saved)
    remember(folder, seen)  # the first import of a name, wherever it happened, is the one instance
