from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "logs"

if os.environ.get("PYTEST_XDIST_WORKER"):
    # a pytest-xdist worker starts with COLUMNS=80 in its environment: the CLI's rich consoles, made when
    # reporter.cli is imported, would keep that width whatever a test's CliRunner(env={"COLUMNS": ...}) says.
    # Without it a worker sizes its consoles as a plain pytest run does.
    os.environ.pop("COLUMNS", None)


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (`make test`: -n auto --dist loadgroup), the tests that read the committed reports
    run on one worker, so that each report is built once (:class:`Reports`), not once per worker."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        if "reports" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("reports"))


@pytest.fixture(scope="session", autouse=True)
def _report_cache(tmp_path_factory: pytest.TempPathFactory):
    """Builds in the tests keep their cache (rendered parts of the PDF, charts) in one folder of
    this session, not in the checkout: the first build of a report lays it out, later ones reuse it."""
    old = os.environ.get("REPORT_CACHE_DIR")
    os.environ["REPORT_CACHE_DIR"] = str(tmp_path_factory.mktemp("report-cache"))
    yield
    if old is None:
        os.environ.pop("REPORT_CACHE_DIR", None)
    else:
        os.environ["REPORT_CACHE_DIR"] = old


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A throwaway copy of the project (kernels, logs, templates) for tests that write."""
    for name in ("kernels", "logs", "report_templates"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
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
        """The text of each page of worklog.pdf as pypdf extracts it (read once: a 30-page report takes seconds)."""
        if self._texts is None:
            from pypdf import PdfReader

            self._texts = [p.extract_text() for p in PdfReader(str(self.out / "worklog.pdf")).pages]
        return self._texts


class Reports:
    """The committed reports, each built at most once per session (a whole build of flashattn lays out
    some 30 pages): ``pdf(name)`` with its PDF, ``html(name)`` the HTML alone, read from a whole build
    where one was made (the same page: the HTML does not depend on the PDF being written)."""

    def __init__(self, tmp_path_factory: pytest.TempPathFactory) -> None:
        self._tmp = tmp_path_factory
        self._built: dict[tuple[str, bool], Built] = {}

    def pdf(self, name: str) -> Built:
        return self._build(name, pdf=True)

    def html(self, name: str) -> Built:
        return self._built.get((name, True)) or self._build(name, pdf=False)

    def _build(self, name: str, *, pdf: bool) -> Built:
        if (name, pdf) not in self._built:
            from typer.testing import CliRunner

            from reporter.cli import app

            out = self._tmp.mktemp(f"report-{name}")
            args = ["build", name, "--root", str(ROOT), "--out", str(out), *([] if pdf else ["--html-only"])]
            t0 = time.perf_counter()
            result = CliRunner().invoke(app, args)
            seconds = time.perf_counter() - t0
            assert result.exit_code == 0, result.output
            assert "contradiction" not in result.output  # the consistency check is on: it fails the build
            self._built[name, pdf] = Built(out, result.output, seconds)
        return self._built[name, pdf]


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
        shutil.copytree(LOGS / "sources", target)
    return logs
