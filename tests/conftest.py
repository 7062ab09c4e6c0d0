from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "logs"

if os.environ.get("PYTEST_XDIST_WORKER"):
    # a pytest-xdist worker starts with COLUMNS=80 in its environment: the CLI's rich consoles, made when
    # reporter.cli is imported, would keep that width whatever a test's CliRunner(env={"COLUMNS": ...}) says.
    # Without it a worker sizes its consoles as a plain pytest run does.
    os.environ.pop("COLUMNS", None)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """`pytest -m timed`, the second step of `make test`, imports only the test files that mark a test
    timed (the words ``mark.timed`` in the file, however the mark is applied): collecting the whole suite
    to keep two tests took a third of that step's time (12 s of 32). Any other selection collects all."""
    if (config.option.markexpr == "timed" and collection_path.suffix == ".py"
            and collection_path.name.startswith("test_")):
        return "mark.timed" not in collection_path.read_text(encoding="utf-8")
    return None


def _freeze() -> None:
    import gc

    gc.collect()
    gc.freeze()


def pytest_collection_finish(session: pytest.Session) -> None:
    """What is alive once the tests are collected, and again after each test file, lives on for the
    run (torch, scipy, the test modules, the package, the records its caches hold: a million objects
    and more): it goes to the collector's permanent generation (:func:`gc.freeze`), so that a full
    collection, the harness's before each timed run and Python's own, looks only at what the tests
    made since (0.7 s a collection before, 45 % of a worker's collecting time in full collections).
    The garbage of the moment is freed first; only objects alive then are kept, as they would be."""
    _freeze()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):
    yield
    if nextitem is None or nextitem.module is not item.module:  # its module's fixtures are gone too
        _freeze()


def shared_dir(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """Under pytest-xdist, the folder of this run that every worker shares (each worker's basetemp is a
    folder in it); None in a plain run, whose one process shares what it builds in memory."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return tmp_path_factory.getbasetemp().parent
    return None


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` (created if need be) across the workers of a pytest-xdist run."""
    import fcntl

    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@pytest.fixture(scope="session", autouse=True)
def _shared_builds(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Under pytest-xdist, the CUDA builds of tests/cuda_build.py are kept where every worker reads them."""
    shared = shared_dir(tmp_path_factory)
    if shared is not None:
        import cuda_build

        cuda_build.SHARED = shared / "cuda-builds"
        cuda_build.SHARED.mkdir(exist_ok=True)


@pytest.fixture(scope="session", autouse=True)
def _report_cache(tmp_path_factory: pytest.TempPathFactory):
    """Builds in the tests keep their cache (rendered parts of the PDF, charts) in one folder of
    this session, not in the checkout: the first build of a report lays it out, later ones reuse it.
    Under pytest-xdist the workers share it (:func:`shared_dir`), as two builds of a user may: every
    file of it is written whole (temporary file and rename) and read as a miss when it is not there."""
    old = os.environ.get("REPORT_CACHE_DIR")
    shared = shared_dir(tmp_path_factory)
    if shared is None:
        cache = tmp_path_factory.mktemp("report-cache")
    else:
        cache = shared / "report-cache"
        cache.mkdir(exist_ok=True)
    os.environ["REPORT_CACHE_DIR"] = str(cache)
    yield
    if old is None:
        os.environ.pop("REPORT_CACHE_DIR", None)
    else:
        os.environ["REPORT_CACHE_DIR"] = old


def copy_tree(src: Path, dst: Path) -> None:
    """``src`` copied to ``dst`` (which must not exist), without __pycache__ folders: `cp -a` where there is one,
    a quarter of shutil.copytree's time on the 2,000 files of logs/ (about 0.25 s against 1 s, for each of the
    forty tests that copy the project)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    if shutil.which("cp") and os.name == "posix":
        subprocess.run(["cp", "-a", str(src), str(dst)], check=True)
        for cache in sorted(dst.rglob("__pycache__"), reverse=True):
            shutil.rmtree(cache, ignore_errors=True)
    else:
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A throwaway copy of the project (kernels, logs, templates) for tests that write."""
    for name in ("kernels", "logs", "report_templates"):
        copy_tree(ROOT / name, tmp_path / name)
    return tmp_path


@dataclass
class Built:
    """One committed report built by the CLI as a user builds it (``report build NAME --root ROOT --out OUT``)."""

    out: Path  # worklog.html, and worklog.pdf unless built with --html-only
    output: str  # what the command printed
    seconds: float  # the command's wall time
    _texts: list[str] | None = None

    @property
    def html(self) -> str:
        return (self.out / "worklog.html").read_text()

    def page_texts(self) -> list[str]:
        """The text of each page of worklog.pdf as pypdf extracts it, once a run (a 30-page report takes seconds):
        kept beside the report for the other workers of a pytest-xdist run."""
        if self._texts is None:
            kept = self.out / "pages.json"
            with locked(self.out.parent / f"{self.out.name}.pages.lock"):
                if kept.is_file():
                    self._texts = json.loads(kept.read_text())
                else:
                    from pypdf import PdfReader

                    self._texts = [p.extract_text() for p in PdfReader(str(self.out / "worklog.pdf")).pages]
                    kept.write_text(json.dumps(self._texts))
        return self._texts


class Reports:
    """The committed reports, each built at most once per run (a whole build of flashattn lays out some
    30 pages): ``pdf(name)`` with its PDF, ``html(name)`` the HTML alone, read from a whole build where one
    was made (the same page: the HTML does not depend on the PDF being written), ``site()`` every report's
    HTML and the index (``report build --all --html-only``). Under pytest-xdist the workers share them
    through :func:`shared_dir`: the first that needs a build makes it, under a lock, and the others wait
    for it and read it."""

    def __init__(self, tmp_path_factory: pytest.TempPathFactory) -> None:
        self._tmp = tmp_path_factory
        self._shared = shared_dir(tmp_path_factory)
        self._built: dict[str, Built] = {}

    def pdf(self, name: str) -> Built:
        return self._build(f"report-{name}-pdf", ["build", name])

    def html(self, name: str) -> Built:
        whole = self._built.get(f"report-{name}-pdf")
        if whole is None and self._shared is not None and (self._shared / f"report-{name}-pdf/built.json").is_file():
            whole = self.pdf(name)  # another worker built it whole
        return whole or self._build(f"report-{name}-html", ["build", name, "--html-only"])

    def site(self) -> Built:
        return self._build("site", ["build", "--all", "--html-only"])

    def _build(self, key: str, args: list[str]) -> Built:
        if key not in self._built:
            if self._shared is None:
                self._built[key] = self._run(args, self._tmp.mktemp(key))
            else:
                out = self._shared / key
                with locked(self._shared / f"{key}.lock"):
                    done = out / "built.json"
                    if done.is_file():
                        kept = json.loads(done.read_text())
                        self._built[key] = Built(out, kept["output"], kept["seconds"])
                    else:
                        shutil.rmtree(out, ignore_errors=True)  # a worker that failed half-way
                        out.mkdir()
                        built = self._run(args, out)
                        done.write_text(json.dumps({"output": built.output, "seconds": built.seconds}))
                        self._built[key] = built
        return self._built[key]

    @staticmethod
    def _run(args: list[str], out: Path) -> Built:
        from typer.testing import CliRunner

        from reporter.cli import app

        t0 = time.perf_counter()
        result = CliRunner().invoke(app, [*args, "--root", str(ROOT), "--out", str(out)])
        seconds = time.perf_counter() - t0
        assert result.exit_code == 0, result.output
        assert "contradiction" not in result.output  # the consistency check is on: it fails the build
        return Built(out, result.output, seconds)


@pytest.fixture(scope="session")
def reports(tmp_path_factory: pytest.TempPathFactory) -> Reports:
    """The committed reports built by the CLI, each once per session (see :class:`Reports`)."""
    return Reports(tmp_path_factory)


@pytest.fixture(scope="session")
def built_reports(reports: Reports) -> dict[str, str]:
    """The HTML of each committed report (flashattn, histogram, transform), built once per session by the
    CLI as a user builds it, with the consistency check on: the build fails on a contradiction."""
    return {name: reports.html(name).html for name in ("flashattn", "histogram", "transform")}


@pytest.fixture
def cuda():
    """torch, on a machine with a CUDA device; the test is skipped elsewhere (GPU tests, ``-m gpu``)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return torch


def with_sources(logs: Path) -> Path:
    """``logs`` (a test's own records folder) with a copy of the committed source store, so that a
    record copied there can be saved (its code's texts are in the store) and shown. Returns ``logs``."""
    target = logs / "sources"
    if not target.is_dir():
        copy_tree(LOGS / "sources", target)
    return logs


def build_param(*values: Any, defines: dict, config: dict | None, id: str) -> Any:
    """A parameter set of a test that builds ``defines`` whole: marked ``sweep_points`` unless the defines are the
    version's CONFIG (what runs, which `make test` always builds); a recorded sweep's other points are history,
    built by `make test-sweeps` and CI."""
    runs = config is not None and {k: str(v) for k, v in defines.items()} == {k: str(v) for k, v in config.items()}
    return pytest.param(*values, id=id, marks=() if runs else (pytest.mark.sweep_points,))



def fixture_text(path: Path) -> str:
    """A text fixture, kept plain or gzipped (``.gz``: the larger captures, such as ncu's metric catalogue)."""
    raw = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
    return raw.decode("utf-8", errors="replace")
