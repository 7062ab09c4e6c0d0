"""`report reverify`: a rewritten version against the version as it was, on the card.

A rewrite that must not change what a version runs (a helper moved into a shared header, a
launcher shared between versions) is checked where it matters: the earlier version, loaded from
its export (``report export`` at the commit before the rewrite, one self-contained file, so both
can live in one process without their modules colliding), and the version as it is now are
checked on every case and timed in the same rounds (:func:`~.timing.benchmark_interleaved`,
one call of each per round, in a rotating order), so both see the same card. The harness makes
the two runs; the verdict between them is ``report diff``'s, given by the caller.

Nothing in this module knows any particular assignment.
"""

from __future__ import annotations

import importlib.util
import sys
import traceback
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from ..assignments import Assignment, Version
from ..course_imports import course_imports
from ..cuda import track_launches
from ..records import CodeSnapshot, Run, SourceFile, derive
from ..submission import Submission, SubmissionError, read_submission
from .events import Events, Silent
from .jobs import RunOptions, config_of, new_run
from .worker import CaseInputs, check_once, draw_case, free_memory, kernel_builds, open_session
from .timing import benchmark_interleaved


class ReverifyError(Exception):
    """A submission that cannot stand for the earlier version; the message names the file."""


@dataclass
class Pair:
    """One version as it is (``after``) and as it was (``before``, from its export)."""

    version: Version
    after: ModuleType
    before: ModuleType
    submission: Submission


@dataclass
class CaseResult:
    version: str
    case_name: str
    after: Run
    before: Run


def load_submission(path: Path, version: Version, course: Path | None = None) -> tuple[ModuleType, Submission]:
    """Import an exported ``submission.py`` under a private name; it must be an export of ``version``. A version
    of a course problem (``course``: its folder) imports the course's modules, as the course's harness lets it."""
    try:
        sub = read_submission(path)
    except SubmissionError as e:
        raise ReverifyError(str(e)) from e
    if not sub.files or sub.files[0].rel != version.path.name:
        first = sub.files[0].rel if sub.files else "nothing"
        raise ReverifyError(f"{path}: an export of {first}, not of {version.name}")
    name = f"_reverify_before_{version.assignment_dir.name}_{version.name}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ReverifyError(f"{path}: cannot be imported")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    with course_imports(course) if course is not None else nullcontext():
        spec.loader.exec_module(mod)
    if not callable(getattr(mod, "custom_kernel", None)):
        raise ReverifyError(f"{path}: defines no custom_kernel(data)")
    return mod, sub


def before_snapshot(sub: Submission, config: dict | None) -> CodeSnapshot:
    """The earlier version's code as its export embeds it (this package's modules left out, as a
    run's snapshot leaves them out)."""
    files = [SourceFile(path=f.origin, sha256=f.sha256, text=f.text) for f in sub.files
             if not f.rel.startswith("reporter/")]
    return CodeSnapshot(files=files, git_commit=sub.commit, git_dirty=None, config=dict(config or {}))


def reverify(repo_root: Path, logs: Path, a: Assignment, versions: list[Version], befores: dict[str, Path],
             case_names: list[str], opts: RunOptions, events: Events | None = None) -> list[CaseResult]:
    """Check and time each version against its earlier export on each case; returns the pairs of
    runs (nothing is written here: the caller records them with the verdicts)."""
    events = events or Silent()
    info, ceilings_ref, ceilings, session, command, flush, timer = open_session(logs, opts, events)
    # every current version first: an export gives back the module names the process already had,
    # so the current versions' own imports stay theirs
    afters = {v.name: a.load(v) for v in versions}
    pairs = []
    for v in versions:
        before, sub = load_submission(befores[v.name], v, a.task_folder)
        pairs.append(Pair(v, afters[v.name], before, sub))

    out: list[CaseResult] = []
    with events.progress() as progress:
        for case_name, here in a.plan(versions, case_names):  # a version runs only the cases its CASES_WHERE keeps
            case, data, ref = draw_case(a, case_name, events)
            seed = int(case["seed"])
            for p in (p for p in pairs if p.version in here):
                config = config_of(p.after, case)
                after = new_run(a, p.version, p.after, case_name, case, info, session, command, repo_root,
                                 ceilings_ref)
                before = new_run(a, p.version, p.before, case_name, case, info, session, command, repo_root,
                                  ceilings_ref)
                before_config = config_of(getattr(p.before, "_version", p.before), case)
                before.code = before_snapshot(p.submission, config if before_config is None else before_config)
                fns: list[Any] = []
                timed: list[Run] = []
                for r, mod, label in ((after, p.after, "now"), (before, p.before, "before")):
                    try:
                        with track_launches() as launched:
                            r.check, o = check_once(mod.custom_kernel, data, ref, a.spec, seed,
                                                     (a.name, f"{p.version.short} {label}"))
                            del o
                        r.builds = kernel_builds(launched, repo_root)
                        if r.check.passed:
                            fns.append(mod.custom_kernel)
                            timed.append(r)
                        else:
                            r.error = f"check failed, not timed: {r.check.message}"
                    except Exception as e:
                        r.error = f"{type(e).__name__}: {e}"
                        events.say(f"{p.version.name} ({label}) on {case_name} raised", "error",
                                   traceback.format_exc(limit=4))
                if len(fns) == 2:
                    inputs = CaseInputs(a, case, data, ref, opts.ranked)
                    task = progress.add_task(f"{p.version.short} now/before · {case_name}", total=opts.rule.max_reps)
                    res = benchmark_interleaved([lambda rep, f=f: f(inputs.data) for f in fns], timer=timer,
                                                rule=opts.rule, flush=flush, prepare_round=inputs.prepare,
                                                on_sample=lambda i, rep, ms, t=task: progress.update(t, completed=rep + 1))
                    progress.update(task, completed=opts.rule.max_reps, visible=False)
                    for r, st, err in zip(timed, res.stats, res.errors):
                        if err is not None:
                            r.error = f"{type(err).__name__}: {err}"
                        else:
                            r.timing = st
                            r.derived = derive(r.work, st.mean_ms, ceilings) if st else None
                out.append(CaseResult(p.version.name, case_name, after, before))
                free_memory()
            del data, ref
            free_memory()
    return out
