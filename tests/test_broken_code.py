"""The people's code failing on import (issue 16): an assignment.py with a syntax error or an
exception at its top level, and a version that raises on import, give one line naming the file and
the line, never a traceback, and a broken version is not exported. A library missing on this
machine stays something a report can do without."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import ROOT
from typer.testing import CliRunner

from reporter.assignments import AssignmentCodeError, AssignmentError, get_assignment
from reporter.cli import app

runner = CliRunner()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name in ("kernels", "report_templates"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "logs" / "transform", tmp_path / "logs" / "transform")
    shutil.copytree(ROOT / "logs" / "devices", tmp_path / "logs" / "devices")
    return tmp_path


def _append(path: Path, text: str) -> int:
    """Append ``text`` as the file's last line; returns that line's number."""
    body = path.read_text()
    path.write_text(body + text + "\n")
    return body.count("\n") + 1


@pytest.mark.parametrize("line,says", [("def broken(:", "syntax error: invalid syntax"),
                                       ("raise RuntimeError('half-written')", "raised RuntimeError on import: "
                                                                               "half-written")])
def test_a_broken_assignment_is_one_line_naming_file_and_line(project, line, says):
    path = project / "kernels" / "transform" / "assignment.py"
    n = _append(path, line)
    with pytest.raises(AssignmentCodeError, match=rf"assignment\.py:{n}: {says}"):
        _ = get_assignment(project / "kernels", "transform").spec
    result = runner.invoke(app, ["build", "transform", "--no-pdf", "--root", str(project)])
    assert result.exit_code == 2, result.output
    assert f"assignment.py:{n}: {says}" in " ".join(result.output.split())
    assert "Traceback" not in result.output


def test_a_missing_library_is_still_something_a_report_does_without(project):
    path = project / "kernels" / "transform" / "assignment.py"
    _append(path, "import a_library_this_machine_lacks")
    with pytest.raises(AssignmentError) as e:
        _ = get_assignment(project / "kernels", "transform").spec
    assert not isinstance(e.value, AssignmentCodeError)
    a = get_assignment(project / "kernels", "transform")
    assert a.references() == [] and a.case_order(["benchmark", "test_tiny"]) == ["benchmark", "test_tiny"]
    result = runner.invoke(app, ["list", "transform", "--root", str(project)])
    assert result.exit_code == 0, result.output


def test_a_version_that_raises_on_import_is_not_exported(project, tmp_path):
    pytest.importorskip("torch")  # v11 imports torch before the line that raises
    path = project / "kernels" / "transform" / "v11_two_groups.py"
    n = _append(path, "raise ValueError('not finished')")
    out = tmp_path / "hand-in"
    result = runner.invoke(app, ["export", "transform", "v11", "-o", str(out), "--root", str(project)])
    assert result.exit_code == 2, result.output
    assert f"v11_two_groups.py:{n}: raised ValueError on import: not finished" in " ".join(result.output.split())
    assert not out.exists()
