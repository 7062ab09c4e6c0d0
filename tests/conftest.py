from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "logs"


@pytest.fixture(scope="session", autouse=True)
def _report_cache(tmp_path_factory: pytest.TempPathFactory):
    """Builds in the tests keep their cache (rendered parts of the PDF, charts) in one folder of
    this session, not in the checkout: the first build of a report lays it out, later ones reuse it."""
    import os

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


@pytest.fixture(scope="session")
def built_reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The HTML of each committed report (flashattn, histogram, transform), built once per session by the
    CLI as a user builds it, with the consistency check on: the build fails on a contradiction."""
    from typer.testing import CliRunner

    from reporter.cli import app

    out = tmp_path_factory.mktemp("built-reports")
    pages = {}
    for name in ("flashattn", "histogram", "transform"):
        result = CliRunner().invoke(app, ["build", name, "--html-only", "--out", str(out / name)])
        assert result.exit_code == 0, result.output
        assert "contradiction" not in result.output
        pages[name] = (out / name / "worklog.html").read_text()
    return pages


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
