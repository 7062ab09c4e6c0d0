"""Orchestration of `report run` and `report sweep`: the parent's side, which writes the records.

The versions are checked and timed by a worker (:mod:`reporter.harness.worker`), in a process of
its own unless ``RunOptions.isolate`` is False; this module hands it one task at a time (a case's
peers, each version, the probes, a sweep), shows what it reports, and writes each record atomically
under ``logs/`` as it comes, except in a quick run (``RunOptions.write=False``, ``report run
--quick``), which checks and times the same way and writes nothing. A worker that crashes, poisons
its CUDA context or hangs loses one item, whose record says so, and the run goes on in a fresh one.
The parent never imports the worker: it names it (:data:`~reporter.harness.jobs.WORKER_MODULE`),
and what the two pass each other is in :mod:`reporter.harness.jobs`.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from .. import store
from ..assignments import Assignment, Version
from ..records import DeviceCeilings, DeviceInfo, PeerResult, ProbeResult, Run
from .device import require_cuda
from .events import Events, Progress, Silent
from .jobs import ALL_CONFIGS, WORKER_MODULE, OpenParams, RunOptions, command_line, new_run
from .timing import StoppingRule


def _profile(r: Run, repo_root: Path, a: Assignment, v: Version, opts: RunOptions, progress: Progress,
             events: Events) -> None:
    """One call of a checked version under Nsight Compute, into ``r.profile`` (never raises: a
    missing or failing ncu is recorded there). Its report file is kept beside the run's record
    (same stem, ``.ncu-rep.gz``) when records are written."""
    from .profile import KEPT_SUFFIX, ProfileOptions, profile_into_run

    path = store.run_path(opts.logs, r) if opts.write and opts.logs is not None else None
    keep = path.with_name(store.stem(path) + KEPT_SUFFIX) if path is not None else None
    profile_into_run(r, repo_root, a, v, events=events, progress=progress,
                     options=ProfileOptions(timeout_s=opts.profile_timeout_s, keep_report=keep))
    events.profiled(r)


class _Relay:
    """The parent's end of a worker's messages: its progress bars and what it says, shown here."""

    def __init__(self, progress: Progress, events: Events) -> None:
        self.progress, self.events = progress, events
        self.ids: dict[int, Any] = {}

    def __call__(self, msg: tuple[Any, ...]) -> None:
        kind = msg[0]
        if kind == "progress":
            _, method, wid, args, kwargs = msg
            if method == "add_task":
                self.ids[wid] = self.progress.add_task(*args, **kwargs)
            elif wid in self.ids:
                getattr(self.progress, method)(self.ids[wid], *args, **kwargs)
        elif kind == "say":
            _, text, level, detail = msg
            self.events.say(text, level, detail)
        elif kind == "exit":
            self.events.say(f"{msg[1]}: the next work goes to a fresh process", "warning")

    def reset(self) -> None:
        """Hide the bars of a worker that is gone."""
        for tid in self.ids.values():
            self.progress.update(tid, visible=False)
        self.ids.clear()

    def echo(self, text: str) -> None:
        """What the worker wrote to its stdout or stderr (a library's warning, a kernel's printf)."""
        self.events.output(text.rstrip("\n"))


class _Work:
    """The parent's handle on the worker process (or, with ``isolate=False``, on a session in this
    process): opens a session on each fresh worker, relays its messages, answers its tasks."""

    def __init__(self, params: Any, isolate: bool, progress: Progress, events: Events) -> None:
        from .isolate import InProcess, Worker

        self.params = params
        self.relay = _Relay(progress, events)
        self.info: DeviceInfo | None = None
        self.ceilings: tuple[str, DeviceCeilings] | None = None
        self.w: Any
        if isolate:
            self.w = Worker(WORKER_MODULE, cwd=params.repo_root, on_output=self.relay.echo,
                            on_start=self._open, open_budget_s=params.budget_s)
            try:
                self.w.start()
            except BaseException:  # a session that cannot open (a bad assignment): no worker left behind
                self.w.close()
                raise
        else:
            self.w = InProcess(WORKER_MODULE)
            self._open(self.w)

    def _open(self, w: Any) -> None:
        from .isolate import WorkerError, WorkerLost

        try:
            # the first opening may measure the ceilings (a minute or so) on top of the usual budget
            info, ref, c = w.call(("open", self.params), self.relay, budget_s=self.params.budget_s + 600.0)
        except WorkerLost as e:
            raise WorkerError(f"the worker process could not open a session: it {e.how}"
                              + ("; its last lines:\n" + "\n".join(e.tail) if e.tail else "")) from None
        self.info = info
        self.params = replace(self.params, ceilings=(ref, c))
        self.ceilings = (ref, c)

    def call(self, task: tuple[Any, ...]) -> Any:
        from .isolate import WorkerLost

        try:
            return self.w.call(task, self.relay, budget_s=self.params.budget_s)
        except WorkerLost:
            self.relay.reset()
            raise

    def close(self) -> None:
        self.w.close()


def _lost_run(work: _Work, a: Assignment, v: Version, case_name: str, lost: Any, what: str) -> Run:
    """The record of a version whose worker died or hung: what it was at the start, with the error."""
    r = lost.detail if isinstance(lost.detail, Run) else new_run(
        a, v, None, case_name, a.case(case_name), work.info, work.params.session,  # type: ignore[arg-type]
        work.params.command, work.params.repo_root, work.params.ceilings[0] if work.params.ceilings else "")
    r.error = lost.explain(what)
    return r


def run(repo_root: Path, logs: Path, a: Assignment, versions: list[Version], case_names: list[str],
        opts: RunOptions, events: Events | None = None) -> list[Path]:
    """Check and time each version on each case; returns the paths of the records written (none
    when ``opts.write`` is False). ``events`` shows the progress and hears of each run (the CLI
    prints its text), written or not.

    The versions run in a worker process (:mod:`.worker`; ``opts.isolate``): one that crashes it,
    poisons its CUDA context or runs past ``opts.timeout_s`` gets a record saying so, and the others
    go on in a fresh one. This process writes every record, atomically, as it comes: Ctrl-C keeps
    the finished ones and leaves no partial file.
    """
    from .isolate import WorkerLost

    events = events or Silent()
    if opts.logs is None:
        opts = replace(opts, logs=logs)
    plan = a.plan(versions, case_names)  # a version runs only the cases its CASES_WHERE keeps
    require_cuda()  # here, so that a machine without a GPU hears it in one line before any process starts
    params = OpenParams(repo_root=repo_root, kernels=a.path.parent, assignment=a.name, logs=logs, opts=opts,
                        session=store.utc_stamp(), command=command_line(), budget_s=opts.timeout_s)
    written: list[Path] = []
    summary: list[Run] = []
    peers_of = (getattr(a.spec, "PEERS", {}) or {}) if opts.peers else {}
    probes_of = (getattr(a.spec, "PROBES", {}) or {}) if opts.probes else {}
    by_name = {v.name: v for v in versions}

    with events.progress() as progress:
        overall = progress.add_task("runs", total=sum(len(here) for _, here in plan))
        work = _Work(params, opts.isolate, progress, events)
        try:
            info = work.info

            def resave(r: Run) -> None:  # a written record that gained a profile or probes: the same file
                if opts.write:
                    store.save(r, store.run_path(logs, r), logs=logs)

            def keep(r: Run) -> None:  # write the record, tell the caller
                if opts.write:
                    written.append(store.save_new(r, logs))
                summary.append(r)
                events.run_written(r, info)  # type: ignore[arg-type]
                progress.advance(overall)

            def free() -> None:  # the worker drops its cached memory (and the case's input)
                try:
                    work.call(("free",))
                except WorkerLost:  # nothing of a record is lost with it; the next task starts a fresh one
                    pass

            def profile(r: Run) -> None:
                if opts.profile and r.timing is not None:
                    free()  # the profiled child process needs the memory the worker cached
                    _profile(r, repo_root, a, by_name[r.version], opts, progress, events)
                    resave(r)

            for case_name, here in plan:
                if opts.interleave:
                    runs = _interleaved_case(work, a, here, case_name, list(peers_of), events)
                else:
                    peers = []
                    for name, peer in peers_of.items():
                        try:
                            peers.append(work.call(("peer", case_name, name)))
                        except WorkerLost as e:
                            peers.append(PeerResult(name=name, description=peer.description,
                                                    error=e.explain(f"peer {name} on {case_name}")))
                            events.say(peers[-1].error or "", "error")
                    runs = []
                    for v in here:
                        try:
                            r = work.call(("version", case_name, v.name))
                        except WorkerLost as e:
                            r = _lost_run(work, a, v, case_name, e, f"{v.name} on {case_name}")
                            events.say(r.error or "", "error")
                        r.peers = peers
                        keep(r)  # written now: a crash further on (a profiler's, say) loses nothing of it
                        profile(r)
                        runs.append(r)
                if opts.interleave:
                    for r in runs:
                        keep(r)
                probes = []
                for name, probe in probes_of.items():  # after the versions: each is timed as in a run without them
                    try:
                        probes.append(work.call(("probe", case_name, name)))
                    except WorkerLost as e:
                        probes.append(ProbeResult(name=name, description=probe.description,
                                                  error=e.explain(f"probe {name} on {case_name}")))
                if probes:
                    for r in runs:
                        r.probes = probes
                        resave(r)
                if opts.interleave:
                    for r in runs:  # profiled once every record of the case is on disk
                        profile(r)
                free()
        except KeyboardInterrupt:
            events.say(f"interrupted: {len(written)} record(s) written, every one whole; "
                       "the version that was running has none", "warning")
            raise
        finally:
            work.close()
    events.runs_done(summary)
    return written


def _interleaved_case(work: _Work, a: Assignment, versions: list[Version], case_name: str, peers: list[str],
                      events: Events) -> list[Run]:
    """One case of ``--interleave`` in the worker; a version or peer whose check loses the worker is
    recorded as lost and the case is tried again without it. Losing the worker during the rounds
    loses the rounds: every version of the case gets a record saying so."""
    from .isolate import WorkerLost

    remaining = [v.name for v in versions]
    peer_names = list(peers)
    lost_runs: dict[str, Run] = {}
    lost_peers: list[PeerResult] = []
    runs: list[Run] = []
    peer_results: list[PeerResult] = []
    by_name = {v.name: v for v in versions}
    while remaining:
        try:
            runs, peer_results = work.call(("interleaved", case_name, list(remaining), list(peer_names)))
            break
        except WorkerLost as e:
            kind, key = (e.item[0], e.item[2]) if isinstance(e.item, tuple) and len(e.item) == 3 else ("task", None)
            if kind == "version" and key in remaining:
                lost_runs[key] = _lost_run(work, a, by_name[key], case_name, e, f"{key} on {case_name} (its check)")
                remaining.remove(key)
                events.say(lost_runs[key].error or "", "error")
            elif kind == "peer" and key in peer_names:
                desc = (getattr(a.spec, "PEERS", {}) or {})[key].description
                lost_peers.append(PeerResult(name=key, description=desc, error=e.explain(f"peer {key} on {case_name}")))
                peer_names.remove(key)
            else:
                for name in remaining:
                    lost_runs[name] = _lost_run(work, a, by_name[name], case_name, e,
                                                f"the interleaved rounds of {case_name} (with {name})")
                events.say(e.explain(f"the interleaved rounds of {case_name}"), "error")
                remaining, runs = [], []
    got = {r.version: r for r in runs}
    got.update(lost_runs)
    everyone = peer_results + lost_peers
    out = [got[v.name] for v in versions if v.name in got]
    for r in out:
        r.peers = everyone
    return out


def sweep(repo_root: Path, logs: Path, a: Assignment, v: Version, case_name: str, rule: StoppingRule,
          hold: bool = False, interleave: bool = True,
          events: Events | None = None, write: bool = True, isolate: bool = True,
          timeout_s: float = 300.0) -> Path | None:
    """Time every configuration a tunable version offers (``SWEEP`` list and ``make_kernel(config)``).

    Each configuration is built and checked first (a failure is recorded and the sweep goes on).
    Then the ones that passed are timed interleaved (one call of each per round, in a rotating
    order: :func:`~reporter.harness.timing.benchmark_interleaved`), so a card that heats up during the sweep cannot favour
    whichever configuration comes first; ``interleave=False`` times them one after another, in
    ``SWEEP``'s order, as sweeps recorded before the interleaving were. With ``write=False``
    (``report sweep --quick``) nothing is written and None is returned; ``events`` still hears of it.

    It runs in a worker process like :func:`run`: a configuration that crashes the worker or runs
    past ``timeout_s`` is recorded with that error and the sweep starts again in a fresh one
    without it; losing the worker during the rounds records every configuration's timing as lost.
    """
    from .isolate import WorkerLost

    events = events or Silent()
    a.plan([v], [case_name], named=True)  # a case the version's CASES_WHERE leaves out: an error saying so
    require_cuda()
    opts = RunOptions(rule=rule, hold=hold, write=write, peers=False, isolate=isolate, timeout_s=timeout_s, logs=logs)
    params = OpenParams(repo_root=repo_root, kernels=a.path.parent, assignment=a.name, logs=logs, opts=opts,
                        session=store.utc_stamp(), command=command_line(), budget_s=timeout_s,
                        needs_ceilings=False, extra={"interleave": interleave})
    skip: dict[int, str] = {}
    with events.progress() as progress:
        work = _Work(params, isolate, progress, events)
        try:
            while True:
                try:
                    s = work.call(("sweep", v.name, case_name, dict(skip)))
                    break
                except WorkerLost as e:
                    kind, key = (e.item[0], e.item[2]) if isinstance(e.item, tuple) and len(e.item) == 3 else ("task", None)
                    if kind == "config" and isinstance(key, int) and key not in skip:
                        skip[key] = e.explain(f"configuration {e.detail} of {v.name}", "the other configurations")[:2000]
                        events.say(skip[key], "error")
                        continue
                    if kind == "rounds":  # every checked configuration's timing is lost: a record says so
                        skip[ALL_CONFIGS] = (f"the rounds of the sweep of {v.name}: the worker process {e.how}, so no "
                                             "configuration's timing is kept" + ("; its last lines:\n" + "\n".join(
                                                 e.tail) if e.tail else ""))[:2000]
                        events.say(skip[ALL_CONFIGS], "error")
                        continue
                    raise
        finally:
            work.close()
    path = store.save(s, store.sweep_path(logs, s), logs=logs) if write else None
    events.sweep_written(s)
    return path
