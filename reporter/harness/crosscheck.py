"""`report crosscheck`: one version timed by the course's own harness, by ``do_bench`` and by ours.

A figure is a result only if others reproduce it. In one session on one card this runs, one
after another and each from a rested card:

1. the course's ``eval.py`` (a checkout of the course's repository, never a copy of ours) on
   the version exported as ``submission.py``: ``test`` once, ``benchmark`` twice; each peer
   named with ``--peer`` is submitted too, through a shim that calls it, and the benchmark
   runs go version, peers, peers, version (ABBA), so a card that warms or cools over the
   session does not favour either side;
2. our own harness: ``report run``'s rested timing of the version and the peers on every case
   of ours that matches a line of the course's test file (recorded as ordinary runs);
3. ``triton.testing.do_bench`` with ``return_mode='median'`` on the same cases: its default warm-up, and
   its default repetition budget (100 ms) unless ``--do-bench-rep-ms`` gives another (recorded as ``rep_ms``).

The harness's printed output is kept whole in the :class:`~reporter.records.CrossCheck`
record, with the sha256 of the course files that ran.

How the course harness is run, as each layout's runner sets it up (:mod:`reporter.course`):

- CS149: the problem folder, ``eval.py`` and ``utils.py`` are copied to a temporary folder,
  ``submission.py`` is written into the problem's copy, and ``eval.py MODE test_cases/test.txt`` runs
  from there with ``PYTHONPATH`` holding the copy of ``problems/`` and an empty entry (the current
  folder), as the course's README says;
- GPU MODE: the files ``task.yml`` names are copied side by side into a temporary folder, the
  submission among them, the mode's cases (``tests`` or ``benchmarks``) are written one
  ``key: value; …`` line each, and ``config.main`` (``eval.py``) runs on them with ``POPCORN_FD`` naming
  the file its report goes to, whose durations are in nanoseconds.

Nothing of ours is on that path for an exported version, so the export must stand alone as it would
on the course's machines.
"""

from __future__ import annotations

import math

import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .. import store
from ..assignments import Assignment, AssignmentError, Version
from ..course import read_task
from ..course_imports import SUBMISSION_SOURCE
from ..records import CourseCase, CourseHarnessRun, CrossCheck, CrossCheckEntry, DeviceInfo, DoBenchResult, Run
from ..standing import figure_ms
from .events import Events, Silent

EVAL = "eval.py"
SHARED_FILES = ("eval.py", "utils.py")
DO_BENCH_WARMUP_MS = 25.0  # triton.testing.do_bench's defaults
DO_BENCH_REP_MS = 100.0

_BENCH_LINE = re.compile(r"^benchmark\.(\d+): (.*)$", re.M)
_BENCH_FIELD = re.compile(r"^benchmark\.(\d+)\.(runs|mean|std|err|best|worst): ([-+0-9.eE]+)\s*$", re.M)
_FIELD = re.compile(r"(\w+)=([\d,.]+)")


class CrossCheckError(Exception):
    """A cross-check that cannot run (no course folder, no COURSE in the assignment); names what is missing."""


# --------------------------------------------------------------------------- the course's harness


def course_problem(a: Assignment, course_root: Path) -> Path:
    """The assignment's problem folder: the one it is over (``TASK_DIR``, ``report new --from-task``), else
    its ``COURSE`` inside a checkout of the course's repository at ``course_root``."""
    if a.task_folder is not None:
        folder, where = a.task_folder, f"TASK_DIR in {a.path / 'assignment.py'} names it"
    else:
        course = a.course
        if course is None:
            raise CrossCheckError(f"{a.path / 'assignment.py'} names no COURSE (a CourseSource) and no TASK_DIR: "
                                  "there is no course harness to check against")
        folder, where = course.locate(course_root), f"check out {course.url} and pass its root with --course-root"
    if not (folder / "reference.py").is_file():
        raise CrossCheckError(f"{folder}: no course problem folder there (no reference.py); {where}")
    harness = _harness_file(folder)
    if not harness.is_file():
        raise CrossCheckError(f"{folder}: the course's harness is not there ({harness}); {where}")
    return folder


def _harness_file(folder: Path) -> Path:
    """The harness a problem runs under: CS149's eval.py one folder up; GPU MODE's ``config.main``, from
    where task.yml's files take it."""
    try:
        task = read_task(folder)
    except AssignmentError:
        return folder.parent / EVAL
    if task.layout == "cs149":
        return folder.parent / EVAL
    return next((folder / src for name, src in task.files if name == task.main), folder / task.main)


def course_origin(folder: Path) -> tuple[str | None, str | None]:
    """(GitHub 'owner/name', the folder's path inside the checkout) of a problem folder in a git checkout
    of the course's repository; None for what git cannot tell."""
    def git(*args: str) -> str | None:
        try:
            res = subprocess.run(["git", *args], cwd=folder, capture_output=True, text=True, timeout=10, check=False)
        except (OSError, subprocess.SubprocessError):
            return None
        return res.stdout.strip() if res.returncode == 0 and res.stdout.strip() else None

    url, top = git("remote", "get-url", "origin"), git("rev-parse", "--show-toplevel")
    m = re.search(r"github\.com[:/]([^/]+/[^/]+?)(?:\.git)?/?$", url or "")
    rel = Path(folder).resolve().relative_to(Path(top).resolve()).as_posix() if top and \
        Path(folder).resolve().is_relative_to(Path(top).resolve()) else None
    return (m.group(1) if m else None), rel


def parse_output(text: str) -> tuple[str | None, list[CourseCase]]:
    """The harness's closing verdict and its per-case lines (``test.N.*``, ``benchmark.N*``)."""
    verdicts = re.findall(r"^check: (\w+)\s*$", text, re.M)
    cases: dict[int, CourseCase] = {}

    def case(i: int) -> CourseCase:
        return cases.setdefault(i, CourseCase(index=i))

    for kind, i, field, value in re.findall(r"^(test|benchmark)\.(\d+)\.(spec|status|error|message): (.*)$",
                                            text, re.M):
        c = case(int(i))
        if field == "spec":
            c.spec = value.strip()
        elif field == "status" and value.strip() in ("pass", "fail"):
            c.status = value.strip()  # type: ignore[assignment]
        elif field == "error":
            c.error = value.strip()
    for i, rest in _BENCH_LINE.findall(text):
        values = {k: float(v.replace(",", "")) for k, v in _FIELD.findall(rest)}
        c = case(int(i))
        c.runs = int(values["runs"]) if "runs" in values else None
        c.mean_ms, c.std_ms, c.err_ms = values.get("mean"), values.get("std"), values.get("err")
        c.best_ms, c.worst_ms = values.get("best"), values.get("worst")
    # GPU MODE's harness: one line a statistic, durations in nanoseconds (``benchmark.0.mean: 85123.4``)
    for i, name, value in _BENCH_FIELD.findall(text):
        c = case(int(i))
        if name == "runs":
            c.runs = int(float(value))
        else:
            setattr(c, f"{name}_ms", float(value) / 1e6)
    return (verdicts[-1] if verdicts else None), [cases[i] for i in sorted(cases)]


def match_cases(a: Assignment, lines: Sequence[dict[str, Any]]) -> dict[int, str]:
    """Course test-file line index -> our case with exactly those parameters (extra keys of ours
    must be absent or at their defaults: a case of ours with ``contention`` is not a course case)."""
    out: dict[int, str] = {}
    for i, line in enumerate(lines):
        for name, case in a.cases().items():
            if all(case.get(k) == v for k, v in line.items()) and set(case) <= set(line):
                out[i] = name
                break
    return out


def run_course_harness(problem: Path, submission_text: str, mode: str, *, submission: str,
                       extra_path: Sequence[str] = (), timeout_s: float = 600.0,
                       started: float | None = None) -> CourseHarnessRun:
    """``eval.py MODE FILE`` on a copy of the problem with ``submission_text`` as its ``submission.py``, laid out
    as the course's runner lays it out (see the module's docstring), and its report read back."""
    t_start = time.time()
    spec = read_task(problem)
    with tempfile.TemporaryDirectory(prefix="crosscheck_") as tmp_name:
        tmp = Path(tmp_name)
        if spec.layout == "cs149":
            for name in SHARED_FILES:
                if (problem.parent / name).is_file():
                    shutil.copy2(problem.parent / name, tmp / name)
            work = tmp / problem.name
            shutil.copytree(problem, work, ignore=shutil.ignore_patterns("submission.py", "__pycache__"))
            (work / "submission.py").write_text(submission_text, encoding="utf-8")
            cases, main, path_entries = "test_cases/test.txt", str(tmp / EVAL), [str(tmp)]
        else:  # GPU MODE: the files task.yml names, side by side, and the cases of the mode in a file
            work = tmp
            for name, source in spec.files:
                if source == SUBMISSION_SOURCE:
                    (work / name).write_text(submission_text, encoding="utf-8")
                else:
                    shutil.copy2(problem / source, work / name)
            listed = spec.tests if mode == "test" else spec.benchmarks
            (work / "cases.txt").write_text("".join("; ".join(f"{k}: {v}" for k, v in case.items()) + "\n"
                                                    for case in listed), encoding="utf-8")
            cases, main, path_entries = "cases.txt", str(work / spec.main), []
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "POPCORN_SEED", "POPCORN_FD")}
        env["PYTHONPATH"] = os.pathsep.join([*path_entries, *extra_path, ""])
        command = [sys.executable, main, mode, cases]
        report = tmp / "popcorn.txt"  # GPU MODE's harness writes its report to the descriptor POPCORN_FD names
        with report.open("w", encoding="utf-8") as fd_file:
            env["POPCORN_FD"] = str(fd_file.fileno())
            try:
                res = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=timeout_s,
                                     check=False, pass_fds=(fd_file.fileno(),))
                out, err, rc = res.stdout, res.stderr, res.returncode
            except subprocess.TimeoutExpired as e:
                out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
                err, rc = f"timed out after {timeout_s:.0f} s", -9
        if spec.layout == "gpumode":
            out = report.read_text(encoding="utf-8", errors="replace") + out
    verdict, parsed = parse_output(out)
    shown = [Path(command[0]).name, Path(main).name, mode, cases]
    return CourseHarnessRun(mode=mode, submission=submission, command=shown, returncode=rc,
                            wall_s=round(time.time() - t_start, 3), verdict=verdict, cases=parsed, output=out,
                            stderr_tail=err[-4000:], started_s=round(t_start - (started or t_start), 3))


def harness_hashes(problem: Path) -> dict[str, str]:
    """sha256 of the course files that define the check and the timing."""
    task = read_task(problem)
    if task.layout == "gpumode":
        files = [task.source, *(problem / src for _, src in task.files if src != SUBMISSION_SOURCE)]
    else:
        files = [problem.parent / n for n in SHARED_FILES] + [problem / "reference.py", problem / "task.py",
                                                               problem / "test_cases" / "test.txt"]
    return {os.path.relpath(Path(p).resolve(), problem.parent.resolve()): hashlib.sha256(Path(p).read_bytes()).hexdigest()
            for p in files if p is not None and Path(p).is_file()}


def course_commit(course_root: Path) -> str | None:
    """The checkout's commit: ``git rev-parse HEAD``, else a ``COMMIT`` file beside it."""
    try:
        res = subprocess.run(["git", "rev-parse", "HEAD"], cwd=course_root, capture_output=True, text=True,
                             timeout=10, check=False)
        if res.returncode == 0 and res.stdout.strip():
            return res.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    marker = course_root / "COMMIT"
    return marker.read_text(encoding="utf-8").strip() or None if marker.is_file() else None


PEER_SHIM = '''"""A shim that submits the peer {peer!r} of {assignment}: the library call itself, for comparison."""
import sys

sys.path[:0] = {paths!r}
from assignment import PEERS  # noqa: E402

_peer = PEERS[{peer!r}].fn


def custom_kernel(data):
    return _peer(data)
'''


def peer_shim(a: Assignment, peer: str, repo: Path) -> tuple[str, list[str]]:
    """The shim's text and the path entries it needs (the project, for the assignment's imports)."""
    paths = [str(repo), str(a.path), *[p for p in sys.path if p.endswith("site-packages") or p == "/tmp/site"]]
    return PEER_SHIM.format(peer=peer, assignment=a.name, paths=paths), [str(repo)]


# --------------------------------------------------------------------------- the session


@dataclass
class CrossCheckOptions:
    course_root: Path | None
    peers: Sequence[str] = ()
    rest_s: float = 3.0
    harness_timeout_s: float = 600.0
    do_bench: bool = True
    ours: bool = True
    cases: Sequence[str] = ()  # without a course harness: the cases to time (default the benchmark case)
    do_bench_rep_ms: float = DO_BENCH_REP_MS  # do_bench's repetition budget a call (its own units, ms)


def check_options(a: Assignment, opts: CrossCheckOptions) -> None:
    """Refuse, naming the option, what ``opts`` asks of ``a`` that a session could not do."""
    if not (math.isfinite(opts.do_bench_rep_ms) and opts.do_bench_rep_ms > 0):
        raise CrossCheckError(f"--do-bench-rep-ms: {opts.do_bench_rep_ms} is not a positive number of milliseconds")
    if opts.cases and opts.course_root is not None:
        raise CrossCheckError("--case: a course harness run times the course's cases; give --case with --no-course")
    for c in opts.cases:
        if c not in a.cases():
            raise CrossCheckError(f"--case: no case '{c}' in {a.path / 'assignment.py'} (have: {', '.join(a.cases())})")


def crosscheck(repo: Path, logs: Path, a: Assignment, v: Version, opts: CrossCheckOptions,
               submission: str | None, run_ours: Callable[[list[str]], list[Path]],
               do_bench: Callable[[Callable[[Any], Any], Any, float], float] | None,
               info: DeviceInfo, rest: Callable[[float], None],
               events: Events | None = None) -> tuple[Path, CrossCheck]:
    """The session described in the module's docstring; returns the record's path and the record.

    ``submission`` is the version's export (``report export``'s text), which the course harness
    imports as its submission.py; needed when ``opts.course_root`` is set.
    ``run_ours(cases)`` runs our harness on the version and the peers for those cases and returns
    the records written; ``do_bench(fn, data, rep_ms)`` returns ``triton.testing.do_bench``'s median
    over ``opts.do_bench_rep_ms`` of repetitions (None: skip it); ``rest(seconds)`` leaves the GPU idle. ``events`` hears each step as it starts.
    """
    say = (events or Silent()).say
    check_options(a, opts)
    for p in opts.peers:
        if p not in (getattr(a.spec, "PEERS", {}) or {}):
            raise CrossCheckError(f"no peer '{p}' in {a.path / 'assignment.py'} "
                                  f"(have: {', '.join(getattr(a.spec, 'PEERS', {}) or {}) or 'none'})")
    t0 = time.time()
    entries = {v.name: CrossCheckEntry(name=v.name)}
    entries.update({p: CrossCheckEntry(name=p, peer=True) for p in opts.peers})
    notes: list[str] = []
    lines: list[dict[str, Any]] = []
    problem = course_problem(a, opts.course_root) if opts.course_root is not None else None
    if problem is not None:
        task = read_task(problem)
        lines = task.benchmarks  # what the benchmark runs time, and ours and do_bench with them
        matched = match_cases(a, lines)
        matched_tests = match_cases(a, task.tests)
        if submission is None:
            raise CrossCheckError(f"a course harness run needs {v.name}'s export (report export {a.name} {v.short})")
        subs: dict[str, tuple[str, list[str], str]] = {v.name: (submission, [], f"export of {v.name}")}
        for p in opts.peers:
            text, extra = peer_shim(a, p, repo)
            subs[p] = (text, extra, f"peer {p} (a shim calling it)")

        def harness(name: str, mode: str) -> None:
            text, extra, what = subs[name]
            say(f"course harness: {mode} · {what}")
            res = run_course_harness(problem, text, mode, submission=what, extra_path=extra,
                                     timeout_s=opts.harness_timeout_s, started=t0)
            for c in res.cases:  # the line of the file the mode ran: GPU MODE's tests and benchmarks differ
                c.case_name = (matched_tests if mode == "test" else matched).get(c.index)
            entries[name].course.append(res)
            say(f"  → {res.verdict or 'no verdict'} (exit {res.returncode}, {res.wall_s:.0f} s)"
                + "".join(f"; {c.case_name or c.index}: {c.mean_ms:g} ms" for c in res.cases if c.mean_ms))

        harness(v.name, "test")
        order = [v.name, *opts.peers, *reversed(opts.peers), v.name] if opts.peers else [v.name, v.name]
        for name in order:
            harness(name, "benchmark")
        cases = [c for i in sorted(matched) if a.runs_case(v, c := matched[i])]  # ours: the cases v runs
        if len(matched) < len(lines):
            notes.append(f"{len(lines) - len(matched)} of the course's benchmark case(s) match no case of ours "
                         "and were timed by the course's harness only")
    else:
        head = a.headline_case(v)
        cases = list(dict.fromkeys(opts.cases)) or ([head] if head else [])
        if not cases:
            raise CrossCheckError(f"{v.path}: CASES_WHERE {v.cases_where()!r} keeps none of the benchmark cases "
                                  f"({', '.join(a.benchmark_cases)}): name the cases to time with --case")
        try:
            a.plan([v], cases, named=True)  # a case named for this version that its CASES_WHERE leaves out
        except AssignmentError as e:
            raise CrossCheckError(f"--case: {e}") from e
        notes.append("no course harness: only do_bench and our harness")

    if opts.ours and cases:
        say(f"our harness: rested runs of {v.name}" + (f" and {', '.join(opts.peers)}" if opts.peers else ""))
        for path in run_ours(cases):
            r = store.load(path)
            if not isinstance(r, Run) or r.version != v.name:
                continue
            if r.timing is not None:
                entries[v.name].runs[r.case_name] = r.run_id
                entries[v.name].figures_ms[r.case_name] = figure_ms(r.timing)  # type: ignore[assignment]
            for peer in r.peers:
                if peer.name in entries and peer.timing is not None:
                    entries[peer.name].runs[r.case_name] = r.run_id
                    entries[peer.name].figures_ms[r.case_name] = figure_ms(peer.timing)  # type: ignore[assignment]

    if do_bench is not None and opts.do_bench:
        mod = a.load(v)
        fns = {v.name: mod.custom_kernel, **{p: a.spec.PEERS[p].fn for p in opts.peers}}
        for case in cases:
            data = a.spec.generate_input(**a.case(case))
            for name, fn in fns.items():
                rest(opts.rest_s)
                started = time.time() - t0
                median = do_bench(fn, data, opts.do_bench_rep_ms)
                entries[name].do_bench.append(DoBenchResult(
                    case_name=case, median_ms=median, warmup_ms=DO_BENCH_WARMUP_MS, rep_ms=opts.do_bench_rep_ms,
                    rest_s=opts.rest_s, started_s=round(started, 3)))
                say(f"do_bench: {name} on {case}: median {median:.5g} ms")
            del data

    course = a.course if a.task_folder is None else None
    repo_name, folder_name = (course.repo, course.folder) if course else \
        course_origin(problem) if problem is not None else (None, None)
    check = CrossCheck(run_id=f"{store.utc_stamp()}_{info.slug}", assignment=a.name, version=v.name,
                       created_utc=datetime.now(timezone.utc), device=info,
                       command="report " + " ".join(shlex.quote(x) for x in sys.argv[1:]),
                       course_repo=repo_name, course_folder=folder_name,
                       course_commit=course_commit(opts.course_root) if opts.course_root else None,
                       harness_sha256=harness_hashes(problem) if problem else {}, rest_s=opts.rest_s,
                       entries=list(entries.values()), notes=notes)
    return store.save(check, store.crosscheck_path(logs, check), logs=logs), check


def require_course_root(a: Assignment, course_root: Path | None, repo: Path) -> Path | None:
    """Where the course's files are: for an assignment over a course folder, that folder (no other may be
    given); else the checkout as given, or ``<repo>/.course/<repository name>`` when it is there."""
    if a.task_folder is not None:  # the folder the assignment is over: its checkout, wherever it is
        if course_root is not None:
            raise AssignmentError(f"--course-root: {a.name} is over the course folder {a.task_folder} (TASK_DIR in "
                                  f"{a.path / 'assignment.py'}); it takes no other")
        return a.task_folder
    if course_root is not None:
        return course_root
    course = a.course
    if course is None:
        return None
    guess = repo / ".course" / course.repo.split("/")[-1]
    if (guess / course.folder).is_dir():
        return guess
    raise AssignmentError(f"no checkout of {course.url} found at {guess}: clone it there "
                          f"(git clone {course.url} {guess}) or pass --course-root")
