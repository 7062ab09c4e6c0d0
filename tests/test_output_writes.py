"""Commands never clobber what they should not (reporter.outputs): an output the user names is only ever
a regular file; a link, directory, FIFO (standing in for a device) is refused, never read; an existing
file that differs needs --force; `build -o` names a folder and writes its pair both or neither."""

from __future__ import annotations

import os
import stat
import threading
import time

import pytest
from conftest import ROOT
from typer.testing import CliRunner

from reporter.cli import app

runner = CliRunner()
DIFF = ["diff", "transform", "v08", "v10", "--no-code", "--root", str(ROOT)]
HISTORY = ["history", "transform", "v10", "--root", str(ROOT)]
EXPORT = ["export", "histogram", "v05", "--root", str(ROOT)]
BUILD = ["build", "swiglu", "--root", str(ROOT)]


def _flat(result) -> str:
    return " ".join(result.output.split())


def _target(tmp_path, kind: str, name: str):
    """A path named ``name`` that is a FIFO, a directory, or a symbolic link to a file that does not exist."""
    path = tmp_path / name
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dir":
        path.mkdir()
    else:
        path.symlink_to(tmp_path / "elsewhere.txt")
    return path


def _still(path, kind: str) -> bool:
    mode = os.lstat(path).st_mode
    return {"fifo": stat.S_ISFIFO, "dir": stat.S_ISDIR, "link": stat.S_ISLNK}[kind](mode)


WORDS = {"fifo": "is a FIFO, not a regular file: not replaced",
         "dir": "is a directory, not a regular file: not replaced",
         "link": "is a symbolic link, not a regular file: not replaced"}


@pytest.mark.parametrize("kind", ["fifo", "dir", "link"])
@pytest.mark.parametrize("args,option,name", [(DIFF + ["-o"], "--output", "d.txt"),
                                              (HISTORY + ["--chart"], "--chart", "h.svg")])
def test_an_output_that_is_not_a_regular_file_is_refused_and_left_as_it_is(tmp_path, kind, args, option, name):
    target = _target(tmp_path, kind, name)
    result = runner.invoke(app, [*args, str(target), "--force"])
    assert result.exit_code == 2, result.output
    assert f"error: {option} {target}: {WORDS[kind]}" in _flat(result)
    assert _still(target, kind) and not (tmp_path / "elsewhere.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "elsewhere.txt") == [name]  # no temporary


@pytest.mark.parametrize("args,option", [(DIFF + ["-o"], "--output"), (DIFF + ["-f", "json", "-o"], "--output"),
                                         (HISTORY + ["--chart"], "--chart")])
def test_an_existing_unrelated_file_needs_force(tmp_path, args, option):
    target = tmp_path / ("worklog.svg" if option == "--chart" else "worklog.md")
    notes = "# notes\n" + "791 lines of the team's own work\n" * 791
    target.write_text(notes)
    result = runner.invoke(app, [*args, str(target)])
    assert result.exit_code == 2, result.output
    assert (f"error: {option} {target} exists and is not this output (its content differs); pass --force to "
            "replace it") in _flat(result)
    assert target.read_text() == notes
    result = runner.invoke(app, [*args, str(target), "--force"])
    assert result.exit_code == 0, result.output
    assert target.read_text() != notes
    again = runner.invoke(app, [*args, str(target)])  # the same output again: no --force needed
    assert again.exit_code == 0, again.output


def _feed(fifo, stop: threading.Event) -> threading.Thread:
    """Writes into ``fifo`` while someone reads it (a device that would never end), until ``stop`` or
    4 MiB (so that a reader that reads it all, as before this fix, ends: the test fails, not the machine)."""
    def run():
        deadline = time.monotonic() + 5
        while not stop.is_set() and time.monotonic() < deadline:
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # no reader (yet)
                time.sleep(0.01)
                continue
            try:
                for _ in range(64):
                    if stop.is_set():
                        break
                    try:
                        os.write(fd, b"\0" * 65536)
                    except BlockingIOError:
                        time.sleep(0.001)
            except BrokenPipeError:
                pass
            finally:
                os.close(fd)
            return

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_export_never_reads_a_fifo_and_refuses_it(tmp_path):
    target = tmp_path / "submission.py"
    os.mkfifo(target)
    stop = threading.Event()
    feeder = _feed(target, stop)
    try:
        result = runner.invoke(app, [*EXPORT, "-o", str(target), "--force"])
    finally:
        stop.set()
        feeder.join(10)
    assert result.exit_code == 2, result.output
    assert f"error: {target}: {WORDS['fifo']}" in _flat(result)
    assert stat.S_ISFIFO(os.lstat(target).st_mode)


def test_export_does_not_replace_a_symbolic_link(tmp_path):
    target = _target(tmp_path, "link", "submission.py")
    result = runner.invoke(app, [*EXPORT, "-o", str(target)])
    assert result.exit_code == 2, result.output
    assert f"error: {target}: {WORDS['link']}" in _flat(result)
    assert target.is_symlink() and not (tmp_path / "elsewhere.txt").exists()


def test_an_existing_file_is_read_no_further_than_the_new_output_and_a_little(tmp_path):
    from reporter.outputs import read_existing

    big = tmp_path / "big.py"
    with open(big, "wb") as f:
        f.truncate(1 << 32)  # 4 GiB, sparse: reading it whole would take that much memory
    assert len(read_existing(big, 1000)) == 1000
    assert read_existing(tmp_path / "none.py", 1000) is None
    result = runner.invoke(app, [*EXPORT, "-o", str(big)])
    assert result.exit_code == 2 and "exists and differs from this export" in _flat(result)


def _fake_finish(self, labelled, footers, out):
    from reporter.atomic import write_atomic

    write_atomic(out, b"%PDF-1.7 stand-in")
    return 1


@pytest.mark.parametrize("blocked,other", [("worklog.html", "worklog.pdf"), ("worklog.pdf", "worklog.html")])
def test_build_writes_both_or_neither_and_names_the_path_refused(tmp_path, monkeypatch, blocked, other):
    monkeypatch.setattr("reporter.render.book.Book.finish", _fake_finish)
    out = tmp_path / "out"
    (out / blocked).mkdir(parents=True)
    result = runner.invoke(app, [*BUILD, "--out", str(out)])
    assert result.exit_code == 2, result.output
    flat = _flat(result)
    assert f"error: {out / blocked}: {WORDS['dir']}" in flat and ".tmp" not in flat
    assert sorted(p.name for p in out.iterdir()) == [blocked]  # neither written, no temporary


@pytest.mark.parametrize("name", ["x.pdf", "x.html"])
def test_build_out_naming_a_file_that_does_not_exist_is_one_line_not_a_folder(tmp_path, name):
    out = tmp_path / "nonexistent" / "dir" / name
    result = runner.invoke(app, [*BUILD, "--html-only", "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert (f"error: --out {out}: does not exist and names a {name[2:]} file; --out is the folder worklog.html "
            "and worklog.pdf are written in") in _flat(result)
    assert not (tmp_path / "nonexistent").exists()


def test_build_out_through_a_file_or_at_a_file_is_one_line(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    result = runner.invoke(app, [*BUILD, "--html-only", "--out", str(blocker / "sub")])
    assert result.exit_code == 2, result.output
    assert (f"error: --out {blocker / 'sub'}: cannot write: a part of the path is a file, not a folder "
            f"({blocker})") in _flat(result)
    result = runner.invoke(app, [*BUILD, "--html-only", "--out", str(blocker)])
    assert result.exit_code == 2, result.output
    assert f"error: --out {blocker}: is a file, not a folder" in _flat(result)
    assert blocker.read_text() == "x"
