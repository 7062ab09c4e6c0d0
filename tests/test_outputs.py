"""Outputs written by the CLI (issue 16, part 4): `diff -o` and `history --chart` are written whole
or not at all, under a unique temporary name, and a path that cannot be written is one clear line."""

from __future__ import annotations

import os

import pytest
from conftest import ROOT
from typer.testing import CliRunner

from reporter.cli import app

runner = CliRunner()
DIFF = ["diff", "transform", "v08", "v10", "--no-code", "--root", str(ROOT)]
HISTORY = ["history", "transform", "v10", "--root", str(ROOT)]


@pytest.mark.parametrize("args,option", [(DIFF + ["-o"], "--output"), (HISTORY + ["--chart"], "--chart")])
def test_an_output_path_through_a_file_is_one_clear_line(tmp_path, args, option):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    target = blocker / ("out.svg" if option == "--chart" else "out.txt")
    result = runner.invoke(app, [*args, str(target)])
    assert result.exit_code == 2, result.output
    assert f"error: {option} {target}: cannot write: a part of the path is a file" in " ".join(result.output.split())
    assert "Traceback" not in result.output


@pytest.mark.parametrize("args,name", [(DIFF + ["-o"], "d.txt"), (DIFF + ["-f", "json", "-o"], "d.json"),
                                       (HISTORY + ["--chart"], "h.svg")])
def test_a_failed_write_leaves_the_previous_file_and_no_temporary(tmp_path, monkeypatch, args, name):
    target = tmp_path / name
    first = runner.invoke(app, [*args, str(target)])
    assert first.exit_code == 0, first.output
    before = target.read_bytes()
    assert len(before) > 100

    def full_disk(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    second = runner.invoke(app, [*args, str(target)])
    assert second.exit_code == 2, second.output
    assert "No space left on device" in second.output
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no temporary file left behind


def test_outputs_get_the_mode_of_any_new_file(tmp_path):
    target = tmp_path / "d.md"
    assert runner.invoke(app, [*DIFF, "-f", "markdown", "-o", str(target)]).exit_code == 0
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask
