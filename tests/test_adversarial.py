"""The adversarial cases (issue 36: writes that clobber, names that escape, impossible numbers in
records, hostile worklogs), each kept as a test.

Policy: every adversarial case found is added here, or to the module named in the index below, as a
test that fails without the fix. A case is quoted as it was reported; a case the code does not handle
yet is a test marked ``xfail(strict=True)`` whose reason says what happens, so that the fix turns it
into an XPASS that must be acted on (the mark removed), never a silent pass.

* :data:`INDEX`: each case that a test elsewhere covers, with that test's pytest node id;
  :func:`test_every_indexed_test_still_exists` collects them all (one ``pytest --collect-only``), so a
  renamed or deleted test is noticed here instead of the case silently losing its test.
* :data:`HERE`: each case whose test is in this module (there was none before), with that test's name.

CPU only; the whole module runs in well under 30 s on 2 cores.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import ROOT
from typer.testing import CliRunner

from reporter import packed, store
from reporter.cli import app
from reporter.store import RecordError, RecordSkipped

runner = CliRunner()

OW = "tests/test_output_writes.py"
NM = "tests/test_names.py"
RS = "tests/test_record_sense.py"
WH = "tests/test_worklog_hostile.py"
RF = "tests/test_record_files.py"

# (the case, as the issue words it; the test that covers it elsewhere). A case may name several tests.
INDEX: list[tuple[str, str]] = [
    # ---- writes that clobber what they should not
    ("`report diff A V1 V2 -o PATH` replaces whatever is at PATH (a FIFO, a directory, a symbolic link "
     "stand in for the device)", f"{OW}::test_an_output_that_is_not_a_regular_file_is_refused_and_left_as_it_is"),
    ("[diff -o replaces] the team's own `kernels/flashattn/worklog.md` (791 lines gone, no `--force` asked; "
     "`export` asks, `diff` does not)", f"{OW}::test_an_existing_unrelated_file_needs_force[args0---output]"),
    ("[the same through diff -f json -o, and history --chart: --force for every command alike]",
     f"{OW}::test_an_existing_unrelated_file_needs_force"),
    ("[`export` asks]", "tests/test_export.py::test_existing_different_file_needs_force"),
    ("`report export A V -o X` where X is a character device that never ends (a copy of `/dev/full`) reads it "
     "to compare before writing (a FIFO fed without end stands in)",
     f"{OW}::test_export_never_reads_a_fifo_and_refuses_it"),
    ("[What to build 1] never reads an existing target beyond a bounded size",
     f"{OW}::test_an_existing_file_is_read_no_further_than_the_new_output_and_a_little"),
    ("[export -o] a symbolic link", f"{OW}::test_export_does_not_replace_a_symbolic_link"),
    ("`report build -o DIR` where `DIR/worklog.html` is a directory: the PDF is written without its HTML",
     f"{OW}::test_build_writes_both_or_neither_and_names_the_path_refused[worklog.html-worklog.pdf]"),
    ("where `worklog.pdf` is a directory the error names a temp file instead of the path",
     f"{OW}::test_build_writes_both_or_neither_and_names_the_path_refused[worklog.pdf-worklog.html]"),
    ("`report build flashattn -o /nonexistent/dir/x.pdf` silently creates a *folder* named `x.pdf` (and its "
     "parents) and exits 0",
     f"{OW}::test_build_out_naming_a_file_that_does_not_exist_is_one_line_not_a_folder[x.pdf]"),
    ("`-o` is a folder for `build` but a file or folder for `export` (build -o at a file or through one)",
     f"{OW}::test_build_out_through_a_file_or_at_a_file_is_one_line"),
    ("[`-o` for `export`: a .py file or a folder]", "tests/test_export.py::test_default_path_and_folder_output"),
    ("[bad `--out`: one line] (its timing: test_a_bad_build_option_is_refused_before_any_work_is_done here)",
     f"{OW}::test_build_out_naming_a_file_that_does_not_exist_is_one_line_not_a_folder[x.html]"),
    ("[bad `--case` and `--only`: one line naming what exists] (their timing: tests here)",
     "tests/test_build.py::test_bad_case_and_only_name_what_exists"),
    ("[an output path through a file, diff -o and history --chart: one clear line]",
     "tests/test_outputs.py::test_an_output_path_through_a_file_is_one_clear_line"),
    ("[What to build 1] no partial set of outputs; temp files removed on every exit path (a failed write)",
     "tests/test_outputs.py::test_a_failed_write_leaves_the_previous_file_and_no_temporary"),
    ("Concurrent builds ... leave nothing behind",
     "tests/test_build.py::test_two_builds_at_once_both_finish_and_leave_a_whole_pair"),
    ("Ctrl-C leave[s] nothing behind",
     "tests/test_build.py::test_ctrl_c_during_the_pdf_leaves_the_previous_html_and_pdf_as_a_pair"),
    # ---- names that escape
    ("`report export ../../other/kernels/flashattn v03` is accepted: it ran another tree's `assignment.py` and "
     "wrote into that tree", f"{NM}::test_the_assignment_a_path_names_is_left_alone"),
    ("`build`, `show`, `diff`, `list`, `history` refuse `..` only because nothing is found there",
     f"{NM}::test_every_command_refuses_an_assignment_that_is_no_name"),
    ("`build flashattn/../histogram` loads histogram (the rule; the command itself: here)",
     f"{NM}::test_names_that_are_not_names_are_refused['good/../histogram']"),
    ("Assignment and version names are never validated", f"{NM}::test_every_command_refuses_a_version_that_is_no_name"),
    ("[version names given to build --only]", f"{NM}::test_build_only_refuses_a_version_that_is_no_name"),
    ("[What to build 2] anything with a path separator or `..` is refused with one line",
     f"{NM}::test_names_that_are_not_names_are_refused"),
    # ---- impossible numbers shown as results
    ("A record with a mean of −1 ms (left out at load)",
     f"{RS}::test_a_timing_that_cannot_be_true_is_left_out_naming_the_field[negative mean]"),
    ("[a mean of −1 ms:] `report list` shows `-205.64×`, exit 0 (list, show and diff go on past it)",
     f"{RS}::test_list_show_and_diff_go_on_past_a_nonsense_timing"),
    ("A hand-edited mean of 5.0 ms for a version whose samples span 12.8–16.7 ms: \"236 % of the measured "
     "ceiling\", no warning",
     f"{RS}::test_a_timing_that_cannot_be_true_is_left_out_naming_the_field[mean below the samples]"),
    ("A record's summary statistics are never checked against its own samples",
     f"{RS}::test_a_timing_that_cannot_be_true_is_left_out_naming_the_field[min_ms not the samples' min]"),
    ("[statistics against the samples: their count]",
     f"{RS}::test_a_timing_that_cannot_be_true_is_left_out_naming_the_field[n not the samples, a list]"),
    ("[statistics against the samples: packed samples]",
     f"{RS}::test_packed_samples_not_as_many_as_n_are_refused_when_read"),
    ("[a peer's timing is checked too]",
     f"{RS}::test_a_timing_that_cannot_be_true_is_left_out_naming_the_field[a peer's negative mean]"),
    ("An empty samples list: `report show` dies with `ValueError: median_ci: no samples`; `diff` prints a CI of 0 %",
     f"{RS}::test_a_timing_that_cannot_be_true_is_left_out_naming_the_field[no samples, a list]"),
    ("[an empty samples list, packed]",
     f"{RS}::test_a_timing_that_cannot_be_true_is_left_out_naming_the_field[no samples, packed]"),
    ("One record holding a 5,000-digit integer takes down `list`, `show` (and `build`: here)",
     f"{RS}::test_an_integer_too_long_to_read_is_a_left_out_record"),
    ("A FIFO under logs/ hangs `report list` forever", f"{RS}::test_a_named_pipe_is_left_out_unopened"),
    ("a symlink loop as `logs/flashattn` reads as \"no runs yet\" without naming the loop",
     f"{RS}::test_a_loop_of_symbolic_links_is_named_not_read_as_no_runs"),
    ("[a symbolic link to nothing under logs/]", f"{RS}::test_a_symbolic_link_to_nothing_is_named"),
    # ---- the loader, already clean when the issue was filed
    ("NaN, Infinity ... left out with one warning naming the file",
     f"{RF}::test_a_number_that_is_not_finite_is_refused_naming_its_field"),
    ("non-UTF-8, 100,000-deep nesting [records]", f"{RF}::test_bytes_that_are_not_utf8_and_deep_nesting_are_refused"),
    ("truncated [records]", "tests/test_records.py::test_malformed_json_names_file_and_position"),
    ("[truncated: a compressed record cut short]",
     f"{RF}::test_a_compressed_file_that_is_no_record_is_refused_naming_it[<lambda>-cut short]"),
    ("future-schema [records]", "tests/test_records.py::test_newer_schema_is_refused"),
    ("misplaced records", f"{RF}::test_a_record_in_another_versions_folder_is_set_aside"),
    ("one stray file never hides the good ones",
     f"{RF}::test_one_bad_file_is_left_out_with_a_warning_and_the_good_ones_stay"),
    ("[... and the CLI names it]", f"{RF}::test_the_cli_goes_on_past_a_bad_file_and_names_it"),
    ("a hypothesis fuzzer of 2,400 loader inputs found nothing",
     "tests/test_fuzz.py::test_a_real_record_with_one_value_changed_loads_or_names_a_field"),
    ("[the loader fuzzers]", "tests/test_fuzz.py::test_any_bytes_load_as_a_record_or_our_error"),
    # ---- worklogs
    ("A worklog that is not UTF-8 → `UnicodeDecodeError` traceback (the reader; `report build`: here)",
     f"{WH}::test_a_worklog_that_is_not_utf8_names_the_byte"),
    ("A worklog with a UTF-8 BOM silently loses its front matter (title, authors, gpu, phases), exit 0",
     f"{WH}::test_a_byte_order_mark_is_accepted_and_stripped"),
    ('`{{ "" ~ none.x }}` → UndefinedError traceback',
     f"{WH}::test_a_constant_undefined_attribute_is_an_error_not_a_traceback"),
    ("`{{ 1e308*10 > v03.ms }}` → NameError", f"{WH}::test_an_overflowing_constant_in_a_comparison_is_an_error"),
    ("`{{ 10 ** 5000 }}` → ValueError", f"{WH}::test_a_power_too_large_to_print_is_an_error"),
    ("`{{ 9 ** (9 ** 9) }}` hangs the build indefinitely", f"{WH}::test_an_endless_power_is_refused_at_once"),
    ("[`{{ 9 ** (9 ** 9) }}` through `report build`]",
     f"{WH}::test_report_build_stops_with_the_line_and_writes_nothing"),
    ("`{{ 1e308 * 10 }}` prints `inf` into the report", f"{WH}::test_an_overflow_to_inf_is_never_printed"),
    ("[a literal too large for a float, `{{ 1e400 }}`]",
     f"{WH}::test_a_number_literal_too_large_for_a_float_is_an_error"),
    ("[What to build 4] a time limit on evaluation", f"{WH}::test_an_endless_loop_is_stopped_by_the_time_limit"),
    ("The fuzzer finds this class in about 1 of 1,200 inputs",
     "tests/test_fuzz.py::test_any_worklog_text_binds_or_names_its_line"),
    ("Template injection through the worklog is refused (the sandbox holds)",
     "tests/test_worklog.py::test_any_error_in_the_binding_is_ours_with_its_line[{{ v02.__class__ }}-v02.__class__]"),
    # ---- on the GPU (pytest -m gpu)
    ("On the GPU this already holds (illegal address, hang, out of memory, compile errors, segfault, import "
     "errors each recorded with its reason, and the run goes on)",
     "tests/test_gpu_broken.py::test_every_broken_version_is_recorded_with_its_reason_and_the_run_goes_on"),
]

# (the case, as the issue words it; the test of this module that covers it)
HERE: list[tuple[str, str]] = [
    ("`-o /dev/full` run as root turned the device node into a regular file; the same for `/dev/null`",
     "test_diff_never_replaces_a_character_device"),
    ("[What to build 1] refuses ... sockets", "test_diff_never_replaces_a_socket"),
    ("or a symlink to `/proc/self/fd/1`", "test_a_link_to_the_terminal_is_never_replaced"),
    ("`report export A V -o X` where X is a character device that never ends (a copy of `/dev/full`): "
     "22.8 GB resident, OOM-killed (with or without `--force`)", "test_export_never_reads_an_endless_character_device"),
    ("a path through a file gives \"File exists\" from `export`", "test_export_through_a_file_is_one_line"),
    ("bad `--case`, `--only` and `--out` values are reported only after 6–10 s of work",
     "test_a_bad_build_option_is_refused_before_the_worklog_is_bound_and_writes_nothing"),
    ("[the same:] ... before any work is done (the PDF workers)",
     "test_a_bad_build_option_is_refused_before_any_work_is_done"),
    ("SIGKILL of a build leaves a `report-book-*` temp folder (about 300 KB) in /tmp",
     "test_a_build_killed_with_sigkill_leaves_no_book_folder_once_the_next_build_ran"),
    ("[What to build 1] temp files removed on every exit path including SIGTERM",
     "test_a_build_stopped_with_sigterm_leaves_no_book_folder"),
    ("`build flashattn/../histogram` loads histogram", "test_build_of_a_path_through_another_assignment_is_refused"),
    ("A record with a mean of −1 ms: page 1 shows `v03_tuned: -1,000 µs · -8,796 TFLOP/s`; one record holding a "
     "5,000-digit integer takes down ... `build`", "test_build_goes_on_past_a_negative_mean_and_a_huge_integer"),
    ("A record's summary statistics are never checked ... against the roof (work rates not above a physical "
     "ceiling without a flag)", "test_a_run_faster_than_the_roof_is_left_out"),
    ("[empty records] ... are each left out with one warning naming the file",
     "test_an_empty_record_file_is_left_out_naming_it"),
    ("A worklog that is not UTF-8 → `UnicodeDecodeError` traceback [from `report build`]",
     "test_build_of_a_worklog_that_is_not_utf8_is_one_line"),
]


def _flat(result) -> str:
    return " ".join(result.output.split())


# --------------------------------------------------------------------------- the index


def test_every_indexed_test_still_exists():
    """Each node id of :data:`INDEX` is collected by pytest (one subprocess, GPU tests included), and
    each name of :data:`HERE` is a test of this module."""
    ids = sorted({node for _, node in INDEX})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env.pop("PYTEST_XDIST_WORKER", None)
    command = [sys.executable, "-m", "pytest", "--collect-only", "-p", "no:cacheprovider", "-p", "no:xdist",
               "-m", "gpu or not gpu", *ids]
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    collected = [line.strip() for line in proc.stdout.splitlines() if "::" in line]
    missing = [node for node in ids if not any(c == node or c.startswith(node + "[") for c in collected)]
    not_found = [line for line in (proc.stdout + proc.stderr).splitlines() if "not found:" in line]
    assert proc.returncode == 0 and not missing, not_found or (missing, proc.stdout[-3000:], proc.stderr[-3000:])
    here = {name for name, f in globals().items() if name.startswith("test_") and callable(f)}
    assert not [name for _, name in HERE if name not in here]


# --------------------------------------------------------------------------- writes that clobber

DIFF = ["diff", "transform", "v08", "v10", "--no-code", "--root", str(ROOT)]
EXPORT = ["export", "histogram", "v05", "--root", str(ROOT)]


def _device(tmp_path: Path, name: str, real: str) -> Path:
    """A character device node like ``real`` (/dev/null, /dev/full) at ``tmp_path/name``, made with mknod
    where this process may (as root: a command that replaced it would replace only this copy); elsewhere
    ``real`` itself, which a process that is not root cannot replace (so a failing test harms nothing)."""
    rdev = os.stat(real).st_rdev
    if os.geteuid() == 0:
        path = tmp_path / name
        try:
            os.mknod(path, 0o666 | stat.S_IFCHR, rdev)
        except OSError as e:
            pytest.skip(f"cannot make a device node here ({e})")  # never the real one as root
        return path
    return Path(real)


def _still_the_device(path: Path, real: str) -> bool:
    st = os.lstat(path)
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == os.stat(real).st_rdev


@pytest.mark.parametrize("real", ["/dev/full", "/dev/null"])
def test_diff_never_replaces_a_character_device(tmp_path, real):
    if not os.path.exists(real):
        pytest.skip(f"no {real} here")
    dev = _device(tmp_path, "out.txt", real)
    for force in ([], ["--force"]):
        result = runner.invoke(app, [*DIFF, "-o", str(dev), *force])
        assert result.exit_code == 2, result.output
        assert f"error: --output {dev}: is a character device, not a regular file: not replaced" in _flat(result)
        assert _still_the_device(dev, real)
    if dev.parent == tmp_path:
        assert sorted(p.name for p in tmp_path.iterdir()) == [dev.name]  # no temporary left beside it


def test_diff_never_replaces_a_socket(tmp_path):
    path = tmp_path / "s.txt"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        try:
            sock.bind(str(path))
        except OSError as e:  # a path too long for a socket's address
            pytest.skip(f"cannot bind a socket at {path}: {e}")
        result = runner.invoke(app, [*DIFF, "-o", str(path), "--force"])
    finally:
        sock.close()
    assert result.exit_code == 2, result.output
    assert f"error: --output {path}: is a socket, not a regular file: not replaced" in _flat(result)
    assert stat.S_ISSOCK(os.lstat(path).st_mode)


@pytest.mark.parametrize("args,name,said", [(DIFF, "d.txt", "error: --output {}:"), (EXPORT, "s.py", "error: {}:")],
                         ids=["diff", "export"])
def test_a_link_to_the_terminal_is_never_replaced(tmp_path, args, name, said):
    link = tmp_path / name
    link.symlink_to("/proc/self/fd/1")
    result = runner.invoke(app, [*args, "-o", str(link), "--force"])
    assert result.exit_code == 2, result.output
    assert said.format(link) + " is a symbolic link, not a regular file: not replaced" in _flat(result)
    assert link.is_symlink() and os.readlink(link) == "/proc/self/fd/1"


_EXPORT_TWICE = """
import json, sys
from typer.testing import CliRunner
from reporter.cli import app
args = json.loads(sys.argv[1])
out = [CliRunner().invoke(app, args + extra) for extra in ([], ["--force"])]
print(json.dumps([[r.exit_code, " ".join(r.output.split())] for r in out]))
"""


def _rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def test_export_never_reads_an_endless_character_device(tmp_path):
    """Run in a child process watched from here: were the device read to compare (as before the fix:
    22.8 GB resident, then the OOM killer), the child is stopped at 2 GiB and the test fails, not the machine."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    dev = _device(tmp_path, "submission.py", "/dev/full")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    child = subprocess.Popen([sys.executable, "-c", _EXPORT_TWICE, json.dumps([*EXPORT, "-o", str(dev)])], cwd=ROOT,
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline, too_big = time.monotonic() + 120, None
    while child.poll() is None:
        rss = _rss_bytes(child.pid)
        if rss > 2 << 30 or time.monotonic() > deadline:
            too_big = rss
            child.kill()
            break
        time.sleep(0.05)
    stdout, stderr = child.communicate()
    assert too_big is None, f"export read the device: {too_big / 2**30:.1f} GiB resident, or over 120 s"
    assert child.returncode == 0, stderr[-3000:]
    if dev.parent == tmp_path:  # the copy, named as the file to write
        refusal = f"error: {dev}: is a character device, not a regular file: not replaced"
    else:  # /dev/full itself (not root), read as the folder to write submission.py in
        refusal = f"error: {dev / 'submission.py'}: cannot write: a part of the path is a file, not a folder"
    for code, said in json.loads(stdout.strip().splitlines()[-1]):  # without --force, then with it
        assert code == 2, said
        assert refusal in said, said
    assert _still_the_device(dev, "/dev/full")


@pytest.mark.parametrize("under", ["x.py", "sub/x.py", "sub"])
def test_export_through_a_file_is_one_line(tmp_path, under):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    result = runner.invoke(app, [*EXPORT, "-o", str(blocker / under)])
    assert result.exit_code == 2, result.output
    said = _flat(result)
    assert said.startswith(f"error: {blocker / under}") and "cannot write: a part of the path is a file, not a folder" \
        in said, said
    assert "File exists" not in said and "Traceback" not in result.output
    assert blocker.read_text() == "x" and sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


class _NoWorker:
    """Stands in for a PDF worker (a WeasyPrint child process): counts those started, renders nothing."""

    started = 0

    def __init__(self) -> None:
        type(self).started += 1

    usable = True

    def close(self) -> None:
        pass


def _never_bound(*args, **kwargs):
    raise AssertionError("the worklog was bound before the bad option was refused")


BAD_OPTIONS = [(["--case", "nosuch"], "error: --case: no records of case 'nosuch' for swiglu"),
               (["--only", "v99"], "error: --only: no version 'v99'"),
               (["--out", "OUT/x.pdf"], "error: --out OUT/x.pdf: does not exist and names a pdf file")]


def _build_bad_option(tmp_path, monkeypatch, option: list[str]):
    monkeypatch.setattr(_NoWorker, "started", 0)
    monkeypatch.setattr("reporter.render.report.Worker", _NoWorker)
    monkeypatch.setattr("reporter.render.report.parse", _never_bound)
    out = tmp_path / "out"
    option = [word.replace("OUT", str(out)) for word in option]
    args = ["build", "swiglu", "--root", str(ROOT), *(option if "--out" in option else [*option, "--out", str(out)])]
    return runner.invoke(app, args), out


@pytest.mark.parametrize("option,said", BAD_OPTIONS, ids=["case", "only", "out"])
def test_a_bad_build_option_is_refused_before_the_worklog_is_bound_and_writes_nothing(tmp_path, monkeypatch,
                                                                                      option, said):
    result, out = _build_bad_option(tmp_path, monkeypatch, option)
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert _flat(result).startswith(said.replace("OUT", str(out))), result.output
    assert not out.exists()


@pytest.mark.parametrize("option,said", BAD_OPTIONS, ids=["case", "only", "out"])
def test_a_bad_build_option_is_refused_before_any_work_is_done(tmp_path, monkeypatch, option, said):
    result, out = _build_bad_option(tmp_path, monkeypatch, option)
    assert result.exit_code == 2 and _flat(result).startswith(said.replace("OUT", str(out))), result.output
    assert _NoWorker.started == 0, f"{_NoWorker.started} PDF workers started before the refusal"


def _build_stopped(tmp_path: Path, sig: int) -> Path:
    """`report build swiglu` in a child process whose temporary folder is ``tmp_path/tmp`` and whose cache
    is empty (so its book is laid out for seconds), sent ``sig`` once its report-book-* folder exists.
    Returns that temporary folder; the child and its PDF workers have ended."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = {**os.environ, "TMPDIR": str(tmpdir), "REPORT_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    child = subprocess.Popen([sys.executable, "-m", "reporter.cli", "build", "swiglu", "--root", str(ROOT), "--out",
                              str(tmp_path / "out")], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             start_new_session=True)  # its own process group: its PDF workers are ended with it
    try:
        deadline = time.monotonic() + 60
        while not list(tmpdir.glob("report-book-*")):
            if child.poll() is not None:
                pytest.fail(f"the build ended before its book's folder appeared: {child.stderr.read()[-2000:]!r}")
            if time.monotonic() > deadline:
                pytest.fail("no report-book-* folder within 60 s")
            time.sleep(0.01)
        child.send_signal(sig)
        child.wait(timeout=60)
    finally:
        try:
            os.killpg(child.pid, signal.SIGKILL)  # whatever of its group is left (its PDF workers)
        except ProcessLookupError:
            pass
        child.wait(timeout=60)
        child.stderr.close()
    return tmpdir


def test_an_interrupt_while_the_book_folder_is_made_waits_until_it_is_registered(tmp_path):
    """The race behind a book folder left by SIGTERM: a signal that comes while the folder is being made is
    raised only once the folder (and its cleanup) exists. Here the signal is sent from inside the making, as a
    job runner's kill can land: without the hold, the interrupt would unwind before the folder was made."""
    import tempfile

    from reporter.commands.build import _interrupted
    from reporter.render import book

    made = []

    def make():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)  # the handler would run here, at the next bytecode, were it not held
        made.append(tempfile.TemporaryDirectory(dir=tmp_path))
        return made[-1]

    previous = signal.signal(signal.SIGTERM, _interrupted)
    try:
        with pytest.raises(KeyboardInterrupt):
            book._held_interrupts(make)
        assert signal.getsignal(signal.SIGTERM) is _interrupted  # the build's handler is back
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert len(made) == 1 and not Path(made[0].name).exists()  # made, then removed as the interrupt unwound


def test_a_build_stopped_with_sigterm_leaves_no_book_folder(tmp_path):
    tmpdir = _build_stopped(tmp_path, signal.SIGTERM)
    assert not list(tmpdir.glob("report-book-*"))


def test_a_build_killed_with_sigkill_leaves_no_book_folder_once_the_next_build_ran(tmp_path, monkeypatch):
    """SIGKILL cannot be caught: what it leaves must go with the next build (the same $TMPDIR and cache)."""
    tmpdir = _build_stopped(tmp_path, signal.SIGKILL)
    assert list(tmpdir.glob("report-book-*"))  # the folder the killed build left
    monkeypatch.setattr(tempfile, "tempdir", str(tmpdir))
    monkeypatch.setenv("REPORT_CACHE_DIR", str(tmp_path / "cache"))
    result = runner.invoke(app, ["build", "swiglu", "--root", str(ROOT), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert not list(tmp_path.rglob("report-book-*"))


# --------------------------------------------------------------------------- names that escape


def test_build_of_a_path_through_another_assignment_is_refused(tmp_path):
    out = tmp_path / "out"
    result = runner.invoke(app, ["build", "flashattn/../histogram", "--html-only", "--root", str(ROOT),
                                 "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert result.stdout == "" and result.stderr.startswith("error: assignment 'flashattn/../histogram' refused: ")
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not out.exists()


# --------------------------------------------------------------------------- impossible numbers


def _swiglu(tmp_path: Path) -> Path:
    """A project holding swiglu alone (its kernels, its records) and the templates."""
    root = tmp_path / "proj"
    shutil.copytree(ROOT / "kernels" / "swiglu", root / "kernels" / "swiglu",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "logs" / "swiglu", root / "logs" / "swiglu")
    (root / "report_templates").symlink_to(ROOT / "report_templates")
    return root


def _newest_copy(folder: Path, stem: str, edit=None, text_edit=None) -> Path:
    """A copy of the newest record in ``folder`` as a plain .json named ``stem`` (made the newest run),
    its data passed through ``edit`` and then its text through ``text_edit``."""
    source = max(folder.glob("*_h100_benchmark.json.gz"))
    data = json.loads(store.read_text(source))
    data["run_id"], data["created_utc"] = stem, "2099-01-01T00:00:00Z"
    if edit is not None:
        edit(data)
    text = json.dumps(data)
    path = folder / f"{stem}.json"
    path.write_text(text_edit(text) if text_edit else text)
    return path


def test_build_goes_on_past_a_negative_mean_and_a_huge_integer(tmp_path):
    from reporter.analysis.summary import summarize
    from reporter.assignments import get_assignment
    from reporter.render.html import ms

    root = _swiglu(tmp_path)
    folder = root / "logs" / "swiglu" / "v01_reference"
    negative = _newest_copy(folder, "20990101T000000000Z_h100_benchmark",
                            edit=lambda d: d["timing"].update(mean_ms=-1.0))
    huge = _newest_copy(folder, "20990101T000000001Z_h100_benchmark", edit=lambda d: d.update(seed="HUGE"),
                        text_edit=lambda t: t.replace('"HUGE"', "9" * 5000))
    assert "9" * 5000 in huge.read_text()
    out = tmp_path / "out"
    result = runner.invoke(app, ["build", "swiglu", "--html-only", "--root", str(root), "--out", str(out)])
    assert result.exit_code == 0, result.output
    said = " ".join(result.stderr.split())
    assert f"{negative.name}: field 'timing.mean_ms' is -1.0" in said and "left out" in said, said
    assert f"{huge.name}: field 'seed' is an integer literal of 5,000 digits" in said, said
    html = (out / "worklog.html").read_text()
    best = summarize(get_assignment(ROOT / "kernels", "swiglu"), ROOT / "logs").best  # from the good records
    assert best is not None and ms(best.figure_ms) in html
    assert ms(-1.0) not in html and "-1,000" not in html


def _faster(factor: float):
    """A run whose every time is divided by ``factor`` (samples too, so it agrees with itself) and whose
    derived rates are multiplied by it: only the device's roof says it cannot be."""
    def edit(d):
        t = d["timing"]
        for k in ("mean_ms", "median_ms", "min_ms", "max_ms", "std_ms", "stderr_ms"):
            t[k] /= factor
        t["quantiles_ms"] = {k: v / factor for k, v in t["quantiles_ms"].items()}
        t["samples_ms"] = packed.pack([x / factor for x in packed.unpack(t["samples_ms"])])
        dv = d["derived"]
        for k in ("gbps", "tflops", "fraction_of_ceiling"):
            dv[k] *= factor
    return edit


def test_a_run_faster_than_the_roof_is_left_out(tmp_path):
    for name in ("transform/v10_hw_cvt", "devices"):
        shutil.copytree(ROOT / "logs" / name, tmp_path / "logs" / name)
    folder = tmp_path / "logs" / "transform" / "v10_hw_cvt"
    stray = _newest_copy(folder, "20990101T000000000Z_h100_benchmark", edit=_faster(4.0))
    source = store.load(max(folder.glob("*_h100_benchmark.json.gz")))
    assert source.derived.fraction_of_ceiling < 1  # type: ignore[union-attr]
    with pytest.warns(RecordSkipped) as caught:
        runs = store.runs(tmp_path / "logs", "transform", "v10_hw_cvt")
    assert stray.stem not in {r.run_id for r in runs}
    assert [str(w.message) for w in caught if stray.name in str(w.message)]


def test_an_empty_record_file_is_left_out_naming_it(tmp_path):
    shutil.copytree(ROOT / "logs" / "swiglu", tmp_path / "logs" / "swiglu")
    folder = tmp_path / "logs" / "swiglu" / "v01_reference"
    good = sorted(store.stem(p) for p in folder.glob("*.json.gz"))
    empty = [folder / "20990101T000000000Z_h100_benchmark.json", folder / "20990101T000000001Z_h100_benchmark.json.gz"]
    for path in empty:
        path.write_bytes(b"")
        with pytest.raises(RecordError, match=f"^{re.escape(str(path))}: "):
            store.load(path)
    with pytest.warns(RecordSkipped) as caught:
        runs = store.runs(tmp_path / "logs", "swiglu", "v01_reference")
    assert sorted(r.run_id for r in runs) == good
    warned = [str(w.message) for w in caught]
    assert all(len([w for w in warned if path.name in w and "left out" in w]) == 1 for path in empty), warned


# --------------------------------------------------------------------------- worklogs


def test_build_of_a_worklog_that_is_not_utf8_is_one_line(tmp_path):
    root = _swiglu(tmp_path)
    wl = root / "kernels" / "swiglu" / "worklog.md"
    head = wl.read_bytes().split(b"\n## ", 1)[0]
    wl.write_bytes(head + b"\nIt took 3 \xb5s.\n")
    out = tmp_path / "out"
    result = runner.invoke(app, ["build", "swiglu", "--html-only", "--root", str(root), "--out", str(out)])
    assert result.exit_code != 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    said = _flat(result)
    assert said.startswith(f"error: {wl}: ") and f"not UTF-8 text (byte {len(head) + 11} is 0xb5)" in said, said
    assert "Traceback" not in result.output and not (out / "worklog.html").exists()
