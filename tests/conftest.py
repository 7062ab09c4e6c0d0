from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "logs"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A throwaway copy of the project (kernels, logs, templates) for tests that write."""
    for name in ("kernels", "logs", "report_templates"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path
