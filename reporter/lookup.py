"""Finding versions and runs by the names people type: ``v02``, ``v02_fused_triton``,
``v02@<run-id prefix>``, a record's path; the pair ``report diff`` compares.

The one run lookup of the CLI: which run stands for a version is :mod:`reporter.standing`'s answer,
reading records is :mod:`reporter.store`'s; this module turns a person's handle into those calls.
Errors are :class:`IterationError` with a one-line message naming the path, the name or the flag
at fault; the CLI prints it and exits with code 2.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from . import store
from .assignments import (VERSION_RE, AssignmentError, benchmark_case, check_name, headline_cases_of, legacy_keys,
                          list_assignments, short_handle)
from .records import Run
from .standing import comparison_case, standing_run


class IterationError(Exception):
    """A bad name, a missing run or a file that would be overwritten; one line, names the culprit."""


def known_assignments(kernels: Path, logs: Path) -> list[str]:
    names = {a.name for a in list_assignments(kernels)}
    if logs.is_dir():
        names |= {p.name for p in logs.iterdir() if p.is_dir() and p.name != "devices"
                  and (any(p.glob("*/*.json.gz")) or any(p.glob("*/*.json")))}
    return sorted(names)


def check_assignment(kernels: Path, logs: Path, assignment: str) -> None:
    """An assignment with a folder under kernels/ or records under logs/; a name that is no folder name
    (:func:`~reporter.assignments.check_name`) is refused before either is looked at."""
    check_name(assignment, "assignment")
    if assignment not in known_assignments(kernels, logs):
        have = ", ".join(known_assignments(kernels, logs)) or "none"
        raise IterationError(f"no assignment '{assignment}': neither {kernels / assignment / 'assignment.py'} "
                             f"nor records under {logs / assignment} (have: {have})")


def known_versions(kernels: Path, logs: Path, assignment: str) -> list[str]:
    """Versions with a file under kernels/ or records under logs/ (a deleted file keeps its runs)."""
    names: set[str] = set()
    folder = kernels / assignment
    if folder.is_dir():
        names |= {p.stem for p in folder.glob("v*.py") if VERSION_RE.match(p.stem)}
    if (logs / assignment).is_dir():
        names |= {p.name for p in (logs / assignment).iterdir() if p.is_dir() and VERSION_RE.match(p.name)}
    return sorted(names, key=lambda n: (int(VERSION_RE.match(n).group(1)), n))  # type: ignore[union-attr]


def resolve_version(kernels: Path, logs: Path, assignment: str, handle: str) -> str:
    """'v02' or 'v02_fused_triton' -> 'v02_fused_triton' (a handle that is no name is refused first)."""
    check_name(handle, "version")
    versions = known_versions(kernels, logs, assignment)
    if handle in versions:
        return handle
    matches = [v for v in versions if short_handle(v) == handle]
    if len(matches) == 1:
        return matches[0]
    have = ", ".join(versions) or "none"
    if matches:
        raise IterationError(f"version '{handle}' of {assignment} is ambiguous: {', '.join(matches)}")
    raise IterationError(f"no version '{handle}' of {assignment} in {kernels / assignment} or {logs / assignment} "
                         f"(have: {have})")


@dataclass(frozen=True)
class RunSpec:
    """How a user named a run: a record file, or a version with an optional run-id prefix."""

    text: str
    path: Path | None = None
    version: str | None = None
    run_id: str | None = None


def parse_run_spec(text: str) -> RunSpec:
    if store.is_record_name(text) or ("/" in text and Path(text).is_file()):
        return RunSpec(text, path=Path(text))
    version, _, run_id = text.partition("@")
    if "@" in text and not run_id:
        raise IterationError(f"'{text}': expected VERSION@RUN_ID, the run id (or a prefix of it) is empty")
    return RunSpec(text, version=version, run_id=run_id or None)


def load_run_file(path: Path) -> Run:
    if not path.is_file():
        raise IterationError(f"{path}: no such record file")
    try:
        record = store.load(path)
    except store.RecordError as e:
        raise IterationError(str(e)) from e
    if not isinstance(record, Run):
        raise IterationError(f"{path}: a '{record.kind}' record, not a run")
    return record


def runs_of(logs: Path, assignment: str, version: str, case: str | None = None, *,
            kernels: Path | None = None) -> list[Run]:
    """Runs of one version (on one case), oldest first; with ``kernels``, older records' case keys
    read as the assignment names them today."""
    try:
        found = store.runs(logs, assignment, version, legacy=legacy_keys(kernels, assignment))
    except store.RecordError as e:
        raise IterationError(str(e)) from e
    return [r for r in found if case is None or r.case_name == case]


def headline_cases(kernels: Path, logs: Path, assignment: str, version: str) -> list[str]:
    """The benchmark cases a version runs, in order (:func:`reporter.assignments.headline_cases_of`): the
    first is the case its figure is taken on, the case `show` and `history` default to."""
    try:
        return headline_cases_of(kernels, assignment, version, lambda: {
            r.case_name: r.case for r in runs_of(logs, assignment, version, kernels=kernels)})
    except AssignmentError as e:  # a CASES_WHERE that is no literal, names no parameter or matches no case
        raise IterationError(str(e)) from e


def headline_case(kernels: Path, logs: Path, assignment: str, version: str) -> str:
    """The case a version's figure is taken on (the benchmark case for one that runs none)."""
    heads = headline_cases(kernels, logs, assignment, version)
    return heads[0] if heads else benchmark_case(kernels, assignment)


def candidate_runs(logs: Path, assignment: str, version: str, case: str, gpu: str | None = None, *,
                   kernels: Path | None = None) -> list[Run]:
    """Runs of one version on one case (and GPU slug), oldest first; never empty."""
    found = runs_of(logs, assignment, version, kernels=kernels)
    on_case = [r for r in found if r.case_name == case]
    if not on_case:
        cases = sorted({r.case_name for r in found})
        if cases:
            raise IterationError(f"no run of {assignment}/{version} on case '{case}' (cases run: {', '.join(cases)}); "
                                 "choose one with --case")
        raise IterationError(f"no run of {assignment}/{version} yet (nothing under {logs / assignment / version}); "
                             f"run it with: report run {assignment} --version {short_handle(version)}")
    if gpu is not None:
        on_gpu = [r for r in on_case if r.device.slug == gpu]
        if not on_gpu:
            gpus = ", ".join(sorted({r.device.slug for r in on_case}))
            raise IterationError(f"no run of {assignment}/{version} on case '{case}' on GPU '{gpu}' "
                                 f"(GPUs run: {gpus}); choose one with --gpu")
        return on_gpu
    return on_case


def standing_run_of(logs: Path, assignment: str, version: str, case: str, gpu: str | None = None, *,
                    kernels: Path | None = None) -> Run:
    """The run that stands for the version on the case (:mod:`reporter.standing`), on ``gpu`` or
    else on the GPU of its newest run."""
    runs = candidate_runs(logs, assignment, version, case, gpu, kernels=kernels)
    chosen = standing_run(runs, version, case, gpu=gpu or runs[-1].device.slug)
    assert chosen is not None  # candidate_runs is never empty
    return chosen


def find_run(logs: Path, assignment: str, version: str, run_id: str, case: str | None = None, *,
             kernels: Path | None = None) -> Run:
    """A run by id or a unique prefix of it, within one version (the one run lookup by id). A prefix
    that several cases' runs share (a session's time, say) picks the one on ``case`` when that one
    is unique; an exact id always wins over the runs it is a prefix of."""
    matching = [r for r in runs_of(logs, assignment, version, kernels=kernels) if r.run_id.startswith(run_id)]
    exact = [r for r in matching if r.run_id == run_id]
    if exact:
        return exact[0]
    if not matching:
        raise IterationError(f"no run '{run_id}' of {assignment}/{version} under {logs}")
    if len(matching) == 1:
        return matching[0]
    on_case = [r for r in matching if r.case_name == case] if case is not None else []
    if len(on_case) == 1:
        return on_case[0]
    ids = ", ".join(r.run_id for r in matching[:5])
    raise IterationError(f"run id '{run_id}' is ambiguous in {assignment}/{version}: {ids}")


def _newest(runs: list[Run]) -> Run:
    return max(runs, key=lambda r: r.created_utc)


def _on_gpu(runs: list[Run], gpu: str) -> list[Run]:
    return [r for r in runs if r.device.slug == gpu]


def resolve_pair(kernels: Path, logs: Path, args: list[str], case: str | None,
                 gpu: str | None = None) -> tuple[Run, Run]:
    """The two runs `report diff` compares, from its positional arguments:
    ``A.json B.json`` or ``ASSIGNMENT A B`` where A and B are versions, ``version@run-id`` or files.

    A bare version means the run that stands for it on the case (reporter.standing, as in the
    report); when both sides are bare versions and ran on a GPU in common, on the GPU of the
    newest such run (``gpu`` forces one), so that a run on another card does not silently become
    the baseline. ``v03 v03`` compares the latest run with the one before it on the same GPU.
    """
    if len(args) == 2:
        specs = [parse_run_spec(t) for t in args]
        if all(s.path for s in specs):
            return load_run_file(specs[0].path), load_run_file(specs[1].path)  # type: ignore[arg-type]
        raise IterationError(f"two arguments must both be record files (*.json.gz, or plain *.json); to compare "
                             f"versions give the assignment first: report diff ASSIGNMENT {args[0]} {args[1]}")
    if len(args) != 3:
        raise IterationError(f"expected ASSIGNMENT A B or A.json B.json, got {len(args)} argument(s)")
    assignment = args[0]
    check_assignment(kernels, logs, assignment)
    specs = [parse_run_spec(args[1]), parse_run_spec(args[2])]
    for s in specs:  # both names checked before either is looked up
        if s.version is not None:
            check_name(s.version, "version")
    hint = case or benchmark_case(kernels, assignment)  # what a run-id prefix shared by several cases means
    named: list[Run | None] = [_named_run(kernels, logs, assignment, s, hint) for s in specs]
    if named[0] is not None and named[1] is not None:
        return named[0], named[1]
    if named[0] is None and named[1] is None:
        va, vb = (resolve_version(kernels, logs, assignment, s.version) for s in specs)  # type: ignore[arg-type]
        if case is None:  # the one comparison's case: the first benchmark case both run (reporter.standing)
            case = comparison_case(headline_cases(kernels, logs, assignment, va),
                                   headline_cases(kernels, logs, assignment, vb))
            if case is None:
                raise IterationError(f"{va} and {vb} run no benchmark case in common (their CASES_WHERE), so they "
                                     "are not compared; name a case with --case, or runs as VERSION@RUN_ID")
        return _latest_pair(logs, assignment, va, vb, case, gpu, kernels)
    known = next(r for r in named if r is not None)
    case = case or known.case_name
    bare = specs[named.index(None)]
    version = resolve_version(kernels, logs, assignment, bare.version)  # type: ignore[arg-type]
    runs = candidate_runs(logs, assignment, version, case, gpu, kernels=kernels)
    other = (_on_gpu(runs, known.device.slug) or runs)[-1]
    return (other, known) if named[0] is None else (known, other)


def _named_run(kernels: Path, logs: Path, assignment: str, spec: RunSpec, case: str | None = None) -> Run | None:
    """The run a file or a version@run-id names; None for a bare version."""
    if spec.path is not None:
        return load_run_file(spec.path)
    if spec.run_id is None:
        return None
    version = resolve_version(kernels, logs, assignment, spec.version)  # type: ignore[arg-type]
    return find_run(logs, assignment, version, spec.run_id, case, kernels=kernels)


def _latest_pair(logs: Path, assignment: str, va: str, vb: str, case: str, gpu: str | None,
                 kernels: Path | None = None) -> tuple[Run, Run]:
    runs_b = candidate_runs(logs, assignment, vb, case, gpu, kernels=kernels)
    if va == vb:  # a rerun: the latest against the one before it, on the same GPU when there is one
        if len(runs_b) < 2:
            raise IterationError(f"{assignment}/{va} has {len(runs_b)} run(s) on case '{case}': a same-version diff "
                                 f"needs two; name runs as {short_handle(va)}@RUN_ID")
        latest = runs_b[-1]
        return (_on_gpu(runs_b[:-1], latest.device.slug) or runs_b[:-1])[-1], latest
    runs_a = candidate_runs(logs, assignment, va, case, gpu, kernels=kernels)
    common = {r.device.slug for r in runs_a} & {r.device.slug for r in runs_b}
    slug = (_newest([r for r in runs_a + runs_b if r.device.slug in common]) if common
            else _newest(runs_b)).device.slug
    # each side is the run that stands for its version (reporter.standing), as in the report and `list`
    a = standing_run(_on_gpu(runs_a, slug) or runs_a, va, case)
    b = standing_run(_on_gpu(runs_b, slug) or runs_b, vb, case)
    assert a is not None and b is not None
    return a, b
