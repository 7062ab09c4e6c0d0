"""One assignment's records gathered for reporting: per version its latest run per case,
its sweep, the peers, the device ceilings and the public references.

Records of different GPUs are never mixed: a summary is for one GPU slug (by default the
one of the newest benchmark run).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .. import store
from ..assignments import Assignment, AssignmentCodeError, AssignmentError, ReferenceResult, Version
from ..records import CrossCheck, DeviceCeilings, Microbench, PeerResult, ProbeRecord, Run, SameCode, Sweep
from ..samecode import CodeStatus, Files, code_status, tree_files
from ..standing import Figure, Pairing, comparison_case, figure, pairing, standing_runs


class SummaryError(Exception):
    pass


@dataclass
class VersionSummary:
    version: Version
    runs: dict[str, Run]  # case name -> latest run
    benchmark_case: str  # its headline case, the one its figure is taken on (the report's case but for CASES_WHERE)
    sweep: Sweep | None = None  # the newest
    all_runs: list[Run] = field(default_factory=list)
    all_sweeps: list[Sweep] = field(default_factory=list)  # oldest first
    code_now: Files | None = None  # the version's closure in the tree (reporter.samecode.tree_files)
    proofs: list[SameCode] = field(default_factory=list)  # its same-code proofs, oldest first
    # the report's benchmark cases it runs, in order (reporter.assignments.Assignment.headline_cases): the
    # first is ``benchmark_case``; empty when its CASES_WHERE keeps none of them
    headline_cases: tuple[str, ...] = ()
    cases_where: dict = field(default_factory=dict)  # its CASES_WHERE ({}: every case)

    def code(self, run: Run) -> CodeStatus:
        """How the code ``run`` recorded stands to the tree's (reporter.samecode: the one answer)."""
        if self.code_now is None:
            return CodeStatus("current")  # the tree is not at hand: nothing to compare with
        return code_status(run.code, self.code_now, self.proofs)

    @property
    def name(self) -> str:
        return self.version.name

    @property
    def short(self) -> str:
        return self.version.short

    @property
    def bench(self) -> Run | None:
        """The standing run on its headline case (None for a version that runs none of the report's cases)."""
        return self.runs.get(self.benchmark_case) if self.benchmark_case in self.headline_cases else None

    @property
    def runs_report_case(self) -> bool:
        """Whether it runs the case of the report (its benchmark case), so its figure may be taken elsewhere."""
        return bool(self.headline_cases)

    @property
    def median_ms(self) -> float | None:
        r = self.bench
        return r.timing.median_ms if r and r.timing else None

    @property
    def figure(self) -> Figure | None:
        """The version's time on its headline case (reporter.standing)."""
        return figure(self.bench)

    @property
    def figure_ms(self) -> float | None:
        f = self.figure
        return f.ms if f else None

    @property
    def ok(self) -> bool:
        return bool(self.bench and self.bench.ok)

    def ranked(self, case: str) -> Run | None:
        """The newest --ranked run of this version on a case (fresh input every repetition)."""
        found = [r for r in self.all_runs if r.case_name == case and r.timing and r.timing.ranked]
        return max(found, key=lambda r: r.created_utc) if found else None

    def profiled_run(self, case: str | None = None) -> Run | None:
        """The newest run on a case (default the benchmark) with a successful profile: a later
        re-run without --profile does not lose the metrics."""
        case = case or self.benchmark_case
        found = [r for r in self.all_runs if r.case_name == case and r.profile is not None
                 and r.profile.status == "ok"]
        return max(found, key=lambda r: r.created_utc) if found else None

    def common_case(self, other: VersionSummary) -> str | None:
        """The case this version and ``other`` are compared on (reporter.standing.comparison_case): the
        first benchmark case both run; None when they share none."""
        return comparison_case(self.headline_cases, other.headline_cases)

    def against(self, other: VersionSummary) -> Pairing | None:
        """The runs that compare this version with ``other`` on :meth:`common_case` (reporter.standing)."""
        case = self.common_case(other)
        return pairing(self.all_runs, other.all_runs, case) if case is not None else None

    @property
    def profiled(self) -> bool:
        return any(r.profile is not None and r.profile.status == "ok" for r in self.runs.values())


@dataclass
class AssignmentSummary:
    assignment: Assignment
    gpu: str
    versions: list[VersionSummary]
    ceilings: DeviceCeilings | None
    references: list[ReferenceResult]
    crosschecks: list[CrossCheck] = field(default_factory=list)  # on this GPU, oldest first
    probes: list[ProbeRecord] = field(default_factory=list)  # the probe records of this GPU, oldest first
    microbench: Microbench | None = None  # the newest micro-benchmark of this GPU (`report device --microbench`)
    case: str = ""  # the case the report is about; "" for the assignment's benchmark case
    left_out: list[str] = field(default_factory=list)  # versions not shown (report build --only)

    def crosscheck(self, version: str) -> CrossCheck | None:
        """The newest cross-check of a version on this GPU."""
        found = self.crosschecks_of(version)
        return found[-1] if found else None

    def crosschecks_of(self, version: str) -> list[CrossCheck]:
        """Every cross-check of a version on this GPU, oldest first."""
        return [c for c in self.crosschecks if c.version == version]

    @property
    def benchmark_case(self) -> str:
        """The case every figure is taken on: the assignment's benchmark case unless one was chosen."""
        return self.case or self.assignment.benchmark_case

    @property
    def case_references(self) -> list[ReferenceResult]:
        """The public results on the report's case ('benchmark' names the assignment's benchmark case)."""
        on_bench = self.benchmark_case == self.assignment.benchmark_case
        return [r for r in self.references if r.case == self.benchmark_case or (r.case == "benchmark" and on_bench)]

    @property
    def case_words(self) -> str:
        """'the benchmark case', or 'the test_small case' when the report is about another one."""
        return "the benchmark case" if self.benchmark_case == self.assignment.benchmark_case else \
            f"the {self.benchmark_case} case"

    @property
    def measured(self) -> list[VersionSummary]:
        return [v for v in self.versions if v.ok]

    @property
    def headline_cases(self) -> list[str]:
        """The cases the shown versions' figures are taken on, the report's case first, then in the order of
        the benchmark cases (one entry unless a version's CASES_WHERE leaves out the report's case)."""
        found = {v.benchmark_case for v in self.versions if v.headline_cases}
        return [self.benchmark_case] + [c for c in self.assignment.benchmark_cases
                                        if c in found and c != self.benchmark_case]

    def best_on(self, case: str) -> VersionSummary | None:
        """The fastest version among those whose headline case is ``case``: versions are ranked per
        headline case, never one case's figure against another's."""
        ok = [v for v in self.measured if v.benchmark_case == case]
        return min(ok, key=lambda v: v.figure_ms or float("inf")) if ok else None

    @property
    def best(self) -> VersionSummary | None:
        """The fastest version on the report's case (:meth:`best_on`)."""
        return self.best_on(self.benchmark_case)

    def case_label(self, v: VersionSummary) -> str:
        """'' when ``v``'s figure is taken on the report's case, else its headline case's name: what every
        place printing the figure says beside it."""
        return "" if v.benchmark_case == self.benchmark_case else v.benchmark_case

    @property
    def peers(self) -> list[PeerResult]:
        """Peers from the newest benchmark run (of any version, on this GPU) that timed them:
        a later run made with --no-peers (say, to profile) does not hide them. Runs timed back to
        back come first, as the report's own figures do; ranked runs' peers stand in only when
        no plain run timed any."""
        runs = [r for v in self.versions for r in v.all_runs if r.case_name == self.benchmark_case and r.peers]
        plain = [r for r in runs if r.timing is not None and not r.timing.ranked]
        if not runs:
            return []
        return max(plain or runs, key=lambda r: r.created_utc).peers

    def peer(self, name: str) -> PeerResult | None:
        return next((p for p in self.peers if p.name == name), None)

    def new_bests(self, case: str | None = None) -> list[VersionSummary]:
        """The versions whose headline case is ``case`` (default the report's) and whose figure beat every
        earlier one of them, in order: versions are ranked per headline case."""
        case = case or self.benchmark_case
        out, best = [], float("inf")
        for v in self.versions:
            if v.benchmark_case == case and v.figure_ms is not None and v.figure_ms < best:
                best = v.figure_ms
                out.append(v)
        return out

    def previous(self, v: VersionSummary) -> VersionSummary | None:
        ok = [x for x in self.versions if x.ok and x.version.number < v.version.number]
        return ok[-1] if ok else None

    def get(self, handle: str) -> VersionSummary:
        for v in self.versions:
            if handle in (v.name, v.short):
                return v
        raise KeyError(handle)

    @property
    def device(self):
        for v in self.versions:
            for r in v.runs.values():
                return r.device
        return None


def chosen_versions(a: Assignment, only: list[str]) -> list[str]:
    """The full names of the versions ``only`` names (full names or short handles); SummaryError
    naming --only for one the assignment does not have."""
    wanted = []
    for handle in only:
        try:
            wanted.append(a.version(handle).name)
        except AssignmentError as e:
            raise SummaryError(f"--only: {e}") from e
    return wanted


def check_options(a: Assignment, logs: Path, case: str | None, only: list[str] | None) -> None:
    """--case and --only checked before any work (a report's PDF workers, its records read): a version
    the assignment does not have, a case no record file is named after (``<utc>_<gpu>_<case>.json.gz``,
    as every run is named). :func:`summarize` checks the same against the records it reads."""
    if only:
        chosen_versions(a, only)
    if case is not None:
        recorded = store.recorded_cases(logs, a.name)
        if case not in recorded:
            raise SummaryError(f"--case: no records of case '{case}' for {a.name} (recorded: {', '.join(recorded)})")


def summarize(a: Assignment, logs: Path, gpu: str | None = None, *, case: str | None = None,
              only: list[str] | None = None, cache: Path | None = None) -> AssignmentSummary:
    """The records of one assignment on one GPU (default: that of the newest run on the case),
    about one case (default: the assignment's benchmark case), for every version or those in
    ``only`` (full names or short handles, in the assignment's order). ``cache``: where the
    versions' closures in the tree are kept between builds (:func:`reporter.samecode.tree_files`)."""
    all_runs = store.runs(logs, a.name, legacy=a.legacy_case_keys or None)
    if not all_runs:
        raise SummaryError(f"no records for '{a.name}' under {logs / a.name}: run `report run {a.name}` on a GPU first")
    case = case or a.benchmark_case
    recorded = sorted({r.case_name for r in all_runs})
    if case not in recorded:
        raise SummaryError(f"--case: no records of case '{case}' for {a.name} (recorded: {', '.join(recorded)})")
    chosen = a.versions()
    if only:
        wanted = chosen_versions(a, only)
        chosen = [v for v in chosen if v.name in wanted]
    bench_runs = [r for r in all_runs if r.case_name == case] or all_runs
    gpu = gpu or max(bench_runs, key=lambda r: r.created_utc).device.slug
    latest = standing_runs(all_runs, gpu=gpu)
    if not latest:
        have = sorted({r.device.slug for r in all_runs})
        raise SummaryError(f"no '{a.name}' records from GPU '{gpu}' (have: {', '.join(have)})")
    sweeps = [s for s in store.sweeps(logs, a.name, legacy=a.legacy_case_keys or None) if s.device.slug == gpu]
    proofs = store.same_code(logs, a.name)
    # the cases the figures are taken on: the benchmark cases (each version its headline, the first it runs),
    # or the one case chosen with --case
    order = a.benchmark_cases if case == a.benchmark_case else [case]
    known: tuple[dict[str, dict], bool] | None = None
    versions: list[VersionSummary] = []
    for v in chosen:
        runs = {c: r for (ver, c), r in latest.items() if ver == v.name}
        try:
            where = v.cases_where()
            if where and known is None:  # the cases' parameters, only where a version filters them
                known = a.known_cases({r.case_name: r.case for r in all_runs})
            cases, complete = known if known is not None else ({}, True)
            heads = a.headline_cases(v, cases, complete=complete, among=order)
        except AssignmentCodeError:
            raise
        except AssignmentError as e:  # a CASES_WHERE that is no literal, names no parameter or matches no case
            raise SummaryError(str(e)) from e
        sw = [s for s in sweeps if s.version == v.name]
        try:
            now: Files | None = tree_files(v, a.path.parents[1], cache)
        except (AssignmentError, OSError):
            now = None  # a version whose sources cannot be followed: its build says why elsewhere
        versions.append(VersionSummary(
            version=v, runs=runs, benchmark_case=heads[0] if heads else case, sweep=sw[-1] if sw else None,
            all_runs=[r for r in all_runs if r.version == v.name and r.device.slug == gpu], all_sweeps=sw,
            code_now=now, proofs=[p for p in proofs if p.version == v.name], headline_cases=tuple(heads),
            cases_where=where))
    # ceilings: the ones the newest run used, else the newest for this GPU
    ceilings = None
    newest = max(latest.values(), key=lambda r: r.created_utc)
    if newest.ceilings_ref:
        ref = Path(newest.ceilings_ref)
        candidate = logs / "devices" / gpu / ref.name
        if candidate.is_file():
            loaded = store.load(candidate)
            ceilings = loaded if isinstance(loaded, DeviceCeilings) else None
    if ceilings is None:
        found = store.ceilings(logs, gpu)
        ceilings = found[-1] if found else None
    refs = a.references()
    checks = [c for c in store.crosschecks(logs, a.name) if c.device.slug == gpu]
    return AssignmentSummary(assignment=a, gpu=gpu, versions=versions, ceilings=ceilings, references=refs,
                             crosschecks=checks, probes=store.probes(logs, gpu),
                             microbench=mbs[-1] if (mbs := store.microbenches(logs, gpu)) else None,
                             case="" if case == a.benchmark_case else case,
                             left_out=[v.name for v in a.versions() if v not in chosen])
