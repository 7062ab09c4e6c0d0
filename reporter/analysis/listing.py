"""The rows of ``report list``: per assignment and version, the run that stands for it on a case
and GPU, with the peers timed beside it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .. import store
from ..assignments import Assignment, AssignmentError, LegacyCaseKeys, benchmark_cases_of, legacy_keys, read_cases_where
from ..lookup import IterationError, check_assignment, known_assignments, known_versions
from ..records import Run
from ..standing import comparison_case, pairing, standing_runs


@dataclass
class ListRow:
    assignment: str
    version: str
    case: str  # the case of the table (the benchmark case, or the one asked for)
    gpu: str | None  # GPU slug of the table the row belongs to; None when nothing ran
    run: Run | None
    speedup_vs_first: float | None = None  # against the first version: the report's ratio (reporter.analysis.compare)
    first_version: str | None = None
    headline: str = ""  # the case of ``run`` when not the table's: its first benchmark case (CASES_WHERE)
    compared_on: str = ""  # the case of speedup_vs_first when not the row's (reporter.standing.comparison_case)
    excluded: bool = False  # its CASES_WHERE keeps none of the table's cases
    best_peer: str | None = None
    speedup_vs_best_peer: float | None = None  # fastest peer's median / the version's median, same run
    peers_run: Run | None = None  # the run the peer figures come from: ``run``, or an earlier one (see below)

    @property
    def profiled(self) -> bool:
        return bool(self.run and self.run.profile is not None and self.run.profile.status == "ok")

    @property
    def peers_from_earlier_run(self) -> bool:
        """The latest run timed no peers (--no-peers, say to profile), so they come from an earlier run."""
        return self.peers_run is not None and self.peers_run is not self.run


def timed_peers(run: Run) -> list:
    """The peers of a run that were timed the way the run's version was and (when checked) passed.

    Records made before peers followed ``--ranked`` hold ranked versions with plain peers; those
    peers are not comparable and are left out."""
    return [p for p in run.peers if p.timing is not None and (p.check is None or p.check.passed)
            and (run.timing is None or run.timing.timed_like(p.timing))]


def latest_run_with_peers(runs: list[Run], like: Run) -> Run | None:
    """The newest timed run with comparable peers of the same version, case, GPU and code as
    ``like``, timed the same way (``like`` itself when it has them): where `list` and `show`
    find peers when the latest run was made without them. Peers and version are always compared
    within one run."""
    if like.timing is None:
        return None
    same = [r for r in runs if r.version == like.version and r.case_name == like.case_name  # cheapest tests first
            and r.device.slug == like.device.slug and r.created_utc <= like.created_utc and r.ok
            and like.timing.timed_like(r.timing) and r.code.digest == like.code.digest and timed_peers(r)]
    return max(same, key=lambda r: r.created_utc) if same else None


def list_rows(kernels: Path, logs: Path, assignment: str | None = None, case: str | None = None,
              gpu: str | None = None) -> list[ListRow]:
    """Per assignment and GPU, every version with its latest run on the case (benchmark by default).

    Runs of different GPUs never share a table: a speedup across cards says nothing about the code.
    """
    if assignment is not None:  # '' too is a name given, and refused
        check_assignment(kernels, logs, assignment)
    rows: list[ListRow] = []
    for name in [assignment] if assignment is not None else known_assignments(kernels, logs):
        order = [case] if case else benchmark_cases_of(kernels / name)
        versions = known_versions(kernels, logs, name)
        try:
            filtered = [v for v in versions if read_cases_where(kernels / name / f"{v}.py")]  # {} without a file
            # the runs of the table's case; of the other benchmark cases, only those of the versions whose
            # CASES_WHERE leaves the table's case out and of the versions up to the first with a run on it
            # (the row every ratio is against): the rest are never shown, and reading them costs time
            runs = _listed_runs(logs, name, order, versions, filtered, legacy_keys(kernels, name)) \
                if (logs / name).is_dir() or (logs / name).is_symlink() else []  # a link that loops: store says so
            heads = {v: list(order) for v in versions}
            if filtered:
                heads.update(_headline_cases(kernels, name, filtered, order, runs))
        except store.RecordError as e:
            raise IterationError(str(e)) from e
        except AssignmentError as e:  # a CASES_WHERE that is no literal, names no parameter or matches no case
            raise IterationError(str(e)) from e
        gpus: list[str | None] = [gpu] if gpu else list(dict.fromkeys(r.device.slug for r in runs)) or [None]
        for slug in gpus:
            on_gpu = [r for r in runs if r.device.slug == slug]
            latest = standing_runs(on_gpu)  # the report's choice
            rows += _assignment_rows(name, order[0], slug, versions, heads, latest, on_gpu)
    return rows


def _listed_runs(logs: Path, assignment: str, order: list[str], versions: list[str], filtered: list[str],
                 legacy: LegacyCaseKeys | None) -> list[Run]:
    """The runs a table reads: every version's on ``order[0]``; on each further benchmark case, those of
    the ``filtered`` versions and of the versions up to the first that has a passing run on ``order[0]``."""
    runs = store.runs(logs, assignment, legacy=legacy, case=order[0])
    if not filtered:
        return runs
    have = {r.version for r in runs if r.ok}
    lead: list[str] = []
    for v in versions:
        lead.append(v)
        if v in have:
            break
    wanted = list(dict.fromkeys([*lead, *filtered]))
    for c in order[1:]:
        more = [r for v in wanted for r in store.runs(logs, assignment, v, legacy=legacy, case=c)]
        runs += sorted(more, key=lambda r: r.created_utc)
    return runs


def _headline_cases(kernels: Path, assignment: str, versions: list[str], order: list[str],
                    runs: list[Run]) -> dict[str, list[str]]:
    """The benchmark cases (of ``order``) each version with a CASES_WHERE runs, in order: the first is the
    case its row shows (reporter.assignments.Assignment.headline_cases)."""
    a = Assignment(assignment, kernels / assignment)
    known, complete = a.known_cases({r.case_name: r.case for r in runs})
    return {v: a.headline_cases(a.version(v), known, complete=complete, among=order) for v in versions}


def _assignment_rows(assignment: str, case: str, gpu: str | None, versions: list[str], heads: dict[str, list[str]],
                     latest: dict[tuple[str, str], Run], on_gpu: list[Run]) -> list[ListRow]:
    rows = []
    for v in versions:
        on = heads[v][0] if heads[v] else case
        rows.append(ListRow(assignment, v, case, gpu, latest.get((v, on)) if heads[v] else None,
                            headline="" if on == case else on, excluded=not heads[v]))
    by_version: dict[str, list[Run]] = {}
    for r in on_gpu:
        by_version.setdefault(r.version, []).append(r)
    first = next((r for r in rows if r.run is not None and r.run.ok), None)
    for row in rows:
        run = row.run
        if run is None or not run.ok:
            continue
        if first is not None:  # the one comparison's case, runs and ratio (reporter.analysis.compare), as the report's
            on = comparison_case(heads[row.version], heads[first.version])
            assert first.run is not None
            if on is None:  # no case in common: no ratio between two cases
                row.speedup_vs_first = None
            elif on == run.case_name == first.run.case_name and run.session_id == first.run.session_id:
                # the figures, of one session (pairing's first rule)
                row.speedup_vs_first = first.run.timing.mean_ms / run.timing.mean_ms  # type: ignore[union-attr]
            else:
                pair = pairing(by_version.get(row.version, []), by_version.get(first.version, []), on)
                row.speedup_vs_first = pair.speedup if pair is not None else None
            row.compared_on = on if on is not None and on != run.case_name else ""
            row.first_version = first.version
        source = latest_run_with_peers(on_gpu, run)
        if source is not None:
            best = min(timed_peers(source), key=lambda p: p.timing.mean_ms)
            row.best_peer = best.name
            row.speedup_vs_best_peer = best.timing.mean_ms / source.timing.mean_ms  # type: ignore[union-attr]
            row.peers_run = source
    return rows
