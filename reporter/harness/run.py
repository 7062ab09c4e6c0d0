"""Orchestration of `report run` and `report sweep`: check, time, record, with progress bars.

For each case: draw the seeded input, compute the reference once, time the peers, then for
each version: poison, call, check; only a version that passes is timed. In ranked mode each
repetition draws a fresh input (seed += 13 per repetition) and re-checks the output.
Every run becomes a :class:`~reporter.records.Run` written atomically under ``logs/``, except in
a quick run (``RunOptions.write=False``, ``report run --quick``), which checks and times the same
way and writes nothing: the one timing loop of the repository serves a look as well as a record.
With ``RunOptions.probes`` the assignment's ``PROBES`` are timed too, after the versions of each case.
"""

from __future__ import annotations

import gc
import shlex
import sys
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .. import store
from ..assignments import Assignment, Version, short_handle
from ..cuda import CudaKernel, track_launches
from ..records import (
    CheckResult,
    DeviceCeilings,
    DeviceInfo,
    KernelBuild,
    PeerResult,
    ProbeResult,
    Run,
    Sweep,
    SweepPoint,
    TimingStats,
    derive,
)
from .check import check_output, clone_input, poison_allocator
from .device import device_info, measure_ceilings, require_cuda
from .events import Events, Silent
from .nvtx_ranges import ranges
from .timing import CudaEventTimer, HeldCudaEventTimer, L2Flusher, StoppingRule, benchmark, benchmark_interleaved

RANK_SEED_STEP = 13
#: seconds a version (a peer, a probe, a sweep's configuration) gets on a case, its compile and its
#: timing included, before it is taken for hung and its worker process killed
DEFAULT_TIMEOUT_S = 300.0


@dataclass
class RunOptions:
    ranked: bool = False
    rule: StoppingRule = field(default_factory=StoppingRule)
    peers: bool = True
    remeasure_ceilings: bool = False
    profile: bool = False  # re-run each checked version once under Nsight Compute (see .profile)
    profile_timeout_s: float = 1800.0
    hold: bool = False  # hold the stream until each timed call is queued (see .hold)
    interleave: bool = False  # time versions and peers of a case in rounds together (see _run_case_interleaved)
    logs: Path | None = None  # where records go; a profile's .ncu-rep is kept beside its run's record there
    probes: bool = False  # also time the assignment's PROBES on each case (see _time_probes)
    write: bool = True  # False: a quick look, nothing written under logs/ (ceilings included)
    isolate: bool = True  # run the versions in a worker process whose crash or hang loses only its version
    timeout_s: float = DEFAULT_TIMEOUT_S  # each version's (peer's, probe's) budget on a case, compile included


def _sync() -> None:
    import torch

    if torch.cuda.is_available():  # the checks also run on CPU tensors (tests without a GPU)
        torch.cuda.synchronize()


def draw_case(a: Assignment, case_name: str, console: Console) -> tuple[dict, Any, Any]:
    """A case's parameters, its seeded input and the reference output, computed once per case."""
    case = a.case(case_name)
    with console.status(f"{a.name}/{case_name}: drawing input and reference"):
        data = a.spec.generate_input(**case)
        ref = a.spec.ref_kernel(data)
        _sync()
    return case, data, ref


def make_timer(hold: bool) -> CudaEventTimer:
    """Plain event timing, or event timing with the stream held (``--hold``)."""
    if not hold:
        return CudaEventTimer()
    from .hold import available

    ok, why = available()
    if not ok:
        raise RuntimeError(f"--hold needs CuPy and a CUDA device to build the hold kernel: {why}")
    return HeldCudaEventTimer()


class QuietProgress(Progress):
    """A progress display that draws only when asked, between samples.

    Rich's default redraws from a background thread ten times a second; the redraw holds the
    GIL, and when it lands inside a timed call whose host path outlasts the L2 clear queued
    before it (a library call with a heavy dispatch, say), the launch waits and the sample grows.
    ``update`` redraws at most every ``interval_s``, from the harness's own thread, after the
    sample's end event was waited on. (With this and the collector kept out of the rounds,
    cuDNN's test_small mean in our harness went from 87 to 81 µs; the course's harness measures
    64–70 µs, and the rest of that gap is not explained yet.)
    """

    def __init__(self, *columns: Any, interval_s: float = 0.25, **kwargs: Any) -> None:
        columns = columns or (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                              TimeElapsedColumn())
        super().__init__(*columns, auto_refresh=False, **kwargs)
        self._interval_s = interval_s
        self._drawn = 0.0

    def update(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        import time

        super().update(*args, **kwargs)
        now = time.perf_counter()
        if now - self._drawn >= self._interval_s:
            self._drawn = now
            self.refresh()


def _free() -> None:
    """Give cached device memory back between versions. Never raises: after a kernel's illegal
    address the context fails every call, this one too, and the version's record already says why
    (the worker checks the context next and ends)."""
    import torch

    gc.collect()
    try:
        torch.cuda.empty_cache()
    except Exception:  # noqa: BLE001 - a poisoned context; see above
        pass


def ensure_ceilings(logs: Path, info: DeviceInfo, console: Console, remeasure: bool,
                    write: bool = True) -> tuple[str, DeviceCeilings]:
    """The device's ceilings: the latest record under logs/devices/, or measured now (and written
    there unless ``write`` is False, when the reference says they were measured and not kept)."""
    found = None if remeasure else store.latest_ceilings(logs, info.name, info.slug)
    if found:
        path, c = found
        return _relative(path, logs), c
    with console.status(f"measuring ceilings of {info.name} (copy bandwidth, fp16/bf16/fp32 matmul)"):
        c = measure_ceilings(info)
    where = str(store.save(c, store.ceilings_path(logs, c), logs=logs)) if write else "not written (quick run)"
    console.print(f"ceilings: copy {c.copy_gbps:,.0f} GB/s; "
                  + ", ".join(f"{k} {v:,.0f} TFLOP/s" for k, v in c.matmul_tflops.items()) + f"  → {where}")
    return (_relative(Path(where), logs) if write else "measured in this session, not written"), c


def _relative(path: Path, logs: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path(logs).resolve()))
    except ValueError:
        return str(path)


def _check_once(fn: Callable[[Any], Any], data: Any, ref: Any, spec: Any, seed: int,
                names: tuple[str, ...]) -> tuple[CheckResult, Any]:
    """One call on a clone of ``data`` into poisoned memory, judged by :func:`check_output`.

    An assignment with ``repeat_value(output) -> float`` (a value that must not change from call to
    call: a sum over the output, say) gets ``REPEATS`` calls in all on the same input; the check keeps every
    value and fails unless they are bit-identical."""
    given = clone_input(data)
    poison_allocator(ref)  # after the clone: every free block the version may get is poison
    with ranges(*names, "check"):
        out = fn(given)
        _sync()
    del given
    res = check_output(spec, data, out, ref, seed=seed)
    repeat = getattr(spec, "repeat_value", None)
    if res.passed and callable(repeat):
        values = [float(repeat(out))]
        for _ in range(int(getattr(spec, "REPEATS", 20)) - 1):
            given = clone_input(data)
            poison_allocator(ref)
            with ranges(*names, "repeat"):
                again = fn(given)
                _sync()
            values.append(float(repeat(again)))
            del given, again
        distinct = sorted(set(values))
        res = res.model_copy(update=dict(repeats=values))
        if len(distinct) > 1:
            shown = ", ".join(v.hex() for v in distinct[:3]) + (" …" if len(distinct) > 3 else "")
            res = res.model_copy(update=dict(passed=False, message=(
                f"not the same from call to call: {len(distinct)} distinct values in {len(values)} calls on one "
                f"input ({shown})")))
    return res, out


class _CaseInputs:
    """The input each timed call of a case gets: the case's own, or in ranked mode a fresh seeded
    one per repetition (seed + 13·(rep + 1)) with its reference, against which ``check`` re-checks
    each output and raises :class:`RankedCheckFailed` on a failure. Warm-up repetitions (negative)
    keep the case's input and are not checked."""

    def __init__(self, a: Assignment, case: dict, data: Any, ref: Any, ranked: bool) -> None:
        self.spec, self.case, self.ranked = a.spec, case, ranked
        self.data, self.ref, self.seed = data, ref, int(case["seed"])

    def prepare(self, rep: int) -> None:
        if self.ranked and rep >= 0:
            self.seed = int(self.case["seed"]) + RANK_SEED_STEP * (rep + 1)
            self.data = self.spec.generate_input(**{**self.case, "seed": self.seed})
            self.ref = self.spec.ref_kernel(self.data)
            poison_allocator(self.ref)

    def check(self, rep: int, out: Any, into: list[CheckResult] | None) -> None:
        if self.ranked and rep >= 0:
            res = check_output(self.spec, self.data, out, self.ref, seed=self.seed)
            if into is not None:
                into.append(res)
            if not res.passed:
                raise RankedCheckFailed(res)


def time_callable(fn: Callable[[Any], Any], data: Any, *, a: Assignment, case: dict, ref: Any,
                  names: tuple[str, ...], opts: RunOptions, flush: L2Flusher, timer: CudaEventTimer,
                  ranked_checks: list[CheckResult] | None = None,
                  on_sample: Callable[[int, float], None] | None = None,
                  state: Callable[[], dict[str, float]] | None = None, checked: bool = True) -> TimingStats:
    """``fn`` timed on the case (ranked: on fresh inputs, each output re-checked unless ``checked``
    is False, for a baseline that does not compute the answer)."""
    inputs = _CaseInputs(a, case, data, ref, opts.ranked)
    with ranges(*names, "timed"):
        return benchmark(lambda rep: fn(inputs.data), timer=timer, rule=opts.rule, flush=flush,
                         prepare=inputs.prepare,
                         after=(lambda rep, out: inputs.check(rep, out, ranked_checks)) if checked else None,
                         ranked=opts.ranked, on_sample=on_sample, state=state)


def kernel_builds(kernels: Iterable[CudaKernel], repo_root: Path | None = None) -> list[KernelBuild]:
    """What the compiler reported for each launched kernel, for the run record.

    From ptxas's report in NVRTC's log when there is one; otherwise (NVRTC returned an empty log)
    from the loaded function's driver attributes: registers and local memory, no advisories, and
    ``reported_by='driver'`` says so. Never raises: a kernel that gives neither is left out, because
    a missing build report must not cost the run its record.
    """
    out: list[KernelBuild] = []
    for k in kernels:
        try:
            mod = k.module
            common = dict(kernel=k.name, source=Path(mod.path).name, compiler=mod.compiler,
                          options=" ".join(o for o in mod.options if not o.startswith("-I")),
                          module_advisories=list(mod.advisories),
                          sources={_relative_to(Path(p), repo_root): h for p, h in mod.sources.items()})
            res = k.resources
            if res is not None:
                out.append(KernelBuild(
                    **common, arch=res.arch or mod.arch, registers=res.registers, spill_stores=res.spill_stores,
                    spill_loads=res.spill_loads, stack_bytes=res.stack_bytes, shared_bytes=res.shared_bytes,
                    barriers=res.barriers, advisories=list(res.advisories)))
            else:
                attrs = k.attributes
                out.append(KernelBuild(**common, arch=mod.arch, registers=attrs["num_regs"],
                                       shared_bytes=attrs["shared_size_bytes"], reported_by="driver",
                                       local_bytes=attrs["local_size_bytes"]))
        except Exception:
            continue
    return out


def _relative_to(path: Path, root: Path | None) -> str:
    if root is not None:
        try:
            return path.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            pass
    return str(path)


class RankedCheckFailed(Exception):
    def __init__(self, result: CheckResult) -> None:
        super().__init__(f"ranked re-check failed at seed {result.seed}: {result.message}")
        self.result = result


def _time_peers(a: Assignment, case: dict, data: Any, ref: Any, opts: RunOptions, flush: L2Flusher,
                timer: CudaEventTimer, ceilings: DeviceCeilings, progress: Progress,
                state: Callable[[], dict[str, float]] | None = None, only: list[str] | None = None) -> list[PeerResult]:
    """The assignment's peers (those named in ``only``, if given) checked and timed on the case."""
    peers = getattr(a.spec, "PEERS", {}) or {}
    out: list[PeerResult] = []
    work = a.spec.work_model(**case)
    for name, peer in peers.items():
        if only is not None and name not in only:
            continue
        task = progress.add_task(f"peer {name}", total=opts.rule.max_reps)
        names = (a.name, f"peer:{name}")
        try:
            checked = getattr(peer, "checked", True)  # a baseline is timed, never checked
            if checked:
                check, o = _check_once(peer.fn, data, ref, a.spec, case["seed"], names)
            else:  # a baseline: one untimed call (a compile, the allocator's first block), no check
                check, o = None, peer.fn(clone_input(data))
                _sync()
            del o
            if check is not None and not check.passed:
                out.append(PeerResult(name=name, description=peer.description, check=check,
                                      error=f"check failed: {check.message}"))
            else:
                # a peer is timed the way the versions are (ranked or not, held or not): a ranked
                # version's fresh inputs and re-checks leave the card idle between calls, so it
                # runs cooler than back-to-back calls would, and only a peer timed the same way
                # is a fair comparison
                same = RunOptions(ranked=opts.ranked, rule=opts.rule, hold=opts.hold)
                t = time_callable(peer.fn, data, a=a, case=case, ref=ref, names=names, opts=same, flush=flush,
                                  timer=timer, on_sample=lambda i, ms: progress.update(task, completed=i + 1),
                                  state=state, checked=checked)
                out.append(PeerResult(name=name, description=peer.description, check=check, timing=t,
                                      derived=derive(work, t.mean_ms, ceilings)))
        except RankedCheckFailed as e:
            out.append(PeerResult(name=name, description=peer.description, check=e.result, error=str(e)))
        except Exception as e:  # a peer missing on this torch build must not stop the run
            out.append(PeerResult(name=name, description=peer.description,
                                  error=_short_error(e)))
        progress.update(task, completed=opts.rule.max_reps, visible=False)
        _free()
    return out


def _time_probes(a: Assignment, case: dict, data: Any, opts: RunOptions, flush: L2Flusher, timer: CudaEventTimer,
                 progress: Progress, state: Callable[[], dict[str, float]] | None = None,
                 only: list[str] | None = None) -> list[ProbeResult]:
    """The assignment's ``PROBES`` timed one after another on the case's own input: one untimed call
    first (a compile, or the ``ValueError`` of a probe that does not apply to the case), then the
    timing rule of the versions, never ranked (a probe's output is not the answer, so there is
    nothing to re-check). A probe that raises is recorded with the error; the others go on."""
    out: list[ProbeResult] = []
    plain = RunOptions(rule=opts.rule, hold=opts.hold)
    for name, probe in (getattr(a.spec, "PROBES", {}) or {}).items():
        if only is not None and name not in only:
            continue
        task = progress.add_task(f"probe {name}", total=opts.rule.max_reps)
        names = (a.name, f"probe:{name}")
        pr = ProbeResult(name=name, description=probe.description)
        try:
            with ranges(*names, "first call"):
                probe.fn(data)
                _sync()
            pr.timing = time_callable(probe.fn, data, a=a, case=case, ref=None, names=names, opts=plain, flush=flush,
                                      timer=timer, on_sample=lambda i, ms, t=task: progress.update(t, completed=i + 1),
                                      state=state)
        except Exception as e:  # a probe is a diagnostic: its failure is recorded, the run goes on
            pr.error = _short_error(e)[:300]
        out.append(pr)
        progress.update(task, completed=opts.rule.max_reps, visible=False)
        _free()
    return out


def config_of(mod: Any, case: dict) -> dict | None:
    """The configuration a version runs on ``case``: ``config_for(case)`` where the version's module
    defines one (a version whose configuration depends on the case, e.g. a ring per dtype, so the
    record and the sweep of that case name the same keys), else its ``CONFIG``."""
    if mod is None:
        return None
    pick = getattr(mod, "config_for", None)
    if pick is None:
        return getattr(mod, "CONFIG", None)
    got = pick(dict(case))
    if not isinstance(got, dict):
        raise TypeError(f"{getattr(mod, '__file__', mod)}: config_for(case) returned {type(got).__name__}, not a dict")
    return got


def _new_run(a: Assignment, v: Version, mod: Any, case_name: str, case: dict, info: DeviceInfo, session: str,
             command: str, repo_root: Path, ceilings_ref: str) -> Run:
    """A run record for one version on one case, not checked yet."""
    return Run(run_id=f"{store.utc_stamp()}_{info.slug}_{case_name}", session_id=session,
               assignment=a.name, version=v.name, case_name=case_name, case=dict(case), seed=int(case["seed"]),
               created_utc=datetime.now(timezone.utc), command=command, device=info,
               code=v.snapshot(repo_root, config_of(mod, case)),
               check=CheckResult(passed=False, exact=bool(getattr(a.spec.TOLERANCE, "exact", False)), n_elements=0, mismatches=0,
                                 message="not run"),
               work=a.spec.work_model(**case), ceilings_ref=ceilings_ref)


def _profile(r: Run, repo_root: Path, a: Assignment, v: Version, opts: RunOptions, console: Console,
             progress: Progress, events: Events) -> None:
    """One call of a checked version under Nsight Compute, into ``r.profile`` (never raises: a
    missing or failing ncu is recorded there). Its report file is kept beside the run's record
    (same stem, ``.ncu-rep.gz``) when records are written."""
    from .profile import KEPT_SUFFIX, ProfileOptions, profile_into_run

    _free()  # the profiled child process needs the memory this one cached
    path = store.run_path(opts.logs, r) if opts.write and opts.logs is not None else None
    keep = path.with_name(path.stem + KEPT_SUFFIX) if path is not None else None
    profile_into_run(r, repo_root, a, v, console=console, progress=progress,
                     options=ProfileOptions(timeout_s=opts.profile_timeout_s, keep_report=keep))
    events.profiled(r)


def _run_case_interleaved(a: Assignment, versions: list[Version], modules: dict[str, Any], case_name: str,
                          case: dict, data: Any, ref: Any, opts: RunOptions, flush: L2Flusher,
                          timer: CudaEventTimer, ceilings: DeviceCeilings, ceilings_ref: str, info: DeviceInfo,
                          session: str, command: str, repo_root: Path, progress: Progress,
                          state: Callable[[], dict[str, float]] | None, console: Console,
                          peers_only: list[str] | None = None,
                          on_item: Callable[..., None] | None = None) -> tuple[list[Run], list[PeerResult]]:
    """One case of ``report run --interleave``: check every version and peer once, then time all
    that passed together in rounds (:func:`benchmark_interleaved`), one call of each per round in
    a rotating order, so none of them is timed on a cooler or hotter card than the others.

    Ranked (``--ranked``), each round draws one fresh seeded input that every callable of the
    round is timed on, and re-checks every output; a callable whose re-check fails leaves the
    rounds with the failed check recorded, and the others go on.
    """
    spec = a.spec
    seed = int(case["seed"])
    work = spec.work_model(**case)
    fns: list[Callable[[Any], Any]] = []
    owners: list[tuple[str, int]] = []  # ('peer', index in peer_results) or ('version', index in runs)
    peer_results: list[PeerResult] = []
    runs: list[Run] = []
    launched: dict[int, list[CudaKernel]] = {}
    unchecked: set[int] = set()  # indexes in fns of baselines, never re-checked

    for name, peer in ((getattr(spec, "PEERS", {}) or {}).items() if opts.peers else ()):
        if peers_only is not None and name not in peers_only:
            continue
        on_item("peer", name, name)
        names = (a.name, f"peer:{name}")
        pr = PeerResult(name=name, description=peer.description)
        try:
            if getattr(peer, "checked", True):
                pr.check, o = _check_once(peer.fn, data, ref, spec, seed, names)
            else:  # a baseline: one untimed call, no check
                o = peer.fn(clone_input(data))
                _sync()
            del o
            if pr.check is None or pr.check.passed:
                fns.append(peer.fn)
                owners.append(("peer", len(peer_results)))
                if not getattr(peer, "checked", True):
                    unchecked.add(len(fns) - 1)
            else:
                pr.error = f"check failed: {pr.check.message}"
        except Exception as e:  # a peer missing on this torch build must not stop the run
            pr.error = _short_error(e)
        peer_results.append(pr)
    for v in versions:
        mod = modules[v.name]
        r = _new_run(a, v, mod, case_name, case, info, session, command, repo_root, ceilings_ref)
        on_item("version", v.name, r)
        try:
            with track_launches() as kernels:
                r.check, out = _check_once(mod.custom_kernel, data, ref, spec, seed, (a.name, v.short))
                del out
            launched[len(runs)] = kernels
            if r.check.passed:
                fns.append(mod.custom_kernel)
                owners.append(("version", len(runs)))
            else:
                r.error = f"check failed, not timed: {r.check.message}"
        except Exception as e:
            r.error = f"{type(e).__name__}: {e}"
            console.print(f"[red]{v.name} on {case_name} raised[/red]\n{escape(user_traceback(e))}")
        runs.append(r)

    inputs = _CaseInputs(a, case, data, ref, opts.ranked)  # one fresh input per round, shared by all
    ranked_checks: list[list[CheckResult]] = [[] for _ in fns]

    if fns:
        on_item("rounds", "rounds", None, scale=len(fns))
        task = progress.add_task(f"{a.name} · {case_name} · {len(fns)} interleaved, rounds", total=opts.rule.max_reps)
        with ranges(a.name, "interleaved", "timed"):
            calls = [lambda rep, f=f: f(inputs.data) for f in fns]
            res = benchmark_interleaved(calls, timer=timer, rule=opts.rule, flush=flush,
                                        prepare_round=inputs.prepare,
                                        after=lambda i, rep, out: None if i in unchecked
                                        else inputs.check(rep, out, ranked_checks[i]),
                                        ranked=opts.ranked, state=state,
                                        on_sample=lambda i, rep, ms: progress.update(task, completed=rep + 1))
        progress.update(task, completed=opts.rule.max_reps, visible=False)
        for i, (kind, j) in enumerate(owners):
            st, err = res.stats[i], res.errors[i]
            if kind == "peer":
                pr = peer_results[j]
                if isinstance(err, RankedCheckFailed):
                    pr.check, pr.error = err.result, str(err)
                elif err is not None:
                    pr.error = _short_error(err)
                else:
                    pr.timing = st
                    pr.derived = derive(work, st.mean_ms, ceilings) if st else None
            else:
                r = runs[j]
                r.ranked_checks = ranked_checks[i]
                if isinstance(err, RankedCheckFailed):
                    r.check, r.error = err.result, str(err)
                elif err is not None:
                    r.error = f"{type(err).__name__}: {err}"
                else:
                    r.timing = st
                    r.derived = derive(work, st.mean_ms, ceilings) if st else None
    for j, r in enumerate(runs):
        r.peers = peer_results
        r.builds = kernel_builds(launched.get(j, []), repo_root)
    return runs, peer_results


def open_session(logs: Path, opts: RunOptions, console: Console
                 ) -> tuple[DeviceInfo, str, DeviceCeilings, str, str, L2Flusher, CudaEventTimer]:
    """What every timed session in this process starts with: the device, its ceilings (measured
    once, then read from logs/), the session id, the command line, the L2 flusher and the timer."""
    require_cuda()
    info = device_info()
    ceilings_ref, ceilings = ensure_ceilings(logs, info, console, opts.remeasure_ceilings, write=opts.write)
    return (info, ceilings_ref, ceilings, store.utc_stamp(), command_line(), L2Flusher(info.l2_bytes),
            make_timer(opts.hold))


def command_line() -> str:
    return "report " + " ".join(shlex.quote(x) for x in sys.argv[1:])


def run_version(r: Run, a: Assignment, mod: Any, data: Any, ref: Any, opts: RunOptions, flush: L2Flusher,
                timer: CudaEventTimer, ceilings: DeviceCeilings, repo_root: Path, progress: Progress,
                state: Callable[[], dict[str, float]] | None, console: Console) -> Run:
    """Check one version on its case and, when it passes, time it, into ``r`` (made by
    :func:`_new_run`). Whatever the version does (raises, returns the wrong thing, fails a ranked
    re-check) ends in ``r.check`` and ``r.error``, never in an exception."""
    task = progress.add_task(f"{r.version} · {r.case_name}", total=opts.rule.max_reps)
    names = (a.name, short_handle(r.version))
    launched: list[CudaKernel] = []
    try:
        with track_launches() as launched:  # the CUDA kernels this version runs, for r.builds
            r.check, out = _check_once(mod.custom_kernel, data, ref, a.spec, r.seed, names)
            del out
            if r.check.passed:
                r.timing = time_callable(mod.custom_kernel, data, a=a, case=r.case, ref=ref, names=names,
                                         opts=opts, flush=flush, timer=timer, ranked_checks=r.ranked_checks,
                                         on_sample=lambda i, ms: progress.update(task, completed=i + 1),
                                         state=state)
        if r.check.passed:
            r.derived = derive(r.work, r.timing.mean_ms, ceilings)  # type: ignore[union-attr]
        else:
            r.error = f"check failed, not timed: {r.check.message}"
    except RankedCheckFailed as e:
        r.check = e.result
        r.error = str(e)
    except Exception as e:
        r.error = explain_exception(e, f"{r.version} on {r.case_name}")
        console.print(f"[red]{r.version} on {r.case_name} raised[/red]\n{escape(user_traceback(e))}")
    r.builds = kernel_builds(launched, repo_root)
    progress.update(task, completed=opts.rule.max_reps, visible=False)
    _free()
    return r


def explain_exception(e: BaseException, what: str) -> str:
    """A version's exception as its record keeps it: the exception's text, and for the failures a
    student meets most (out of GPU memory, an illegal address, a compile error) what to do."""
    text = f"{type(e).__name__}: {e}"
    low = str(e).lower()
    if "out of memory" in low or type(e).__name__ == "OutOfMemoryError":
        return (text.splitlines()[0] + f"\n{what} ran out of GPU memory: it asked for more than the card had free. "
                "Look for an allocation sized by the wrong dimension, or a cache that grows call after call; "
                "the other versions go on.")
    if any(k in low for k in ("illegal memory access", "illegal address", "misaligned address",
                              "unspecified launch failure", "illegal instruction", "cuda_error_illegal")):
        return (text.splitlines()[0] + f"\n{what}: a kernel read or wrote outside its buffers (or hit a trap). "
                "`compute-sanitizer --tool memcheck report run <assignment> -v <version> -c <case> --quick "
                "--no-isolate` names the access; the other versions go on in a fresh process.")
    return text


def user_traceback(e: BaseException) -> str:
    """``e``'s traceback from the first frame outside the harness: the version's code and what it
    called, not the harness's frames that called it."""
    here = Path(__file__).resolve().parent
    start, tb = e.__traceback__, e.__traceback__
    while tb is not None:
        if Path(tb.tb_frame.f_code.co_filename).resolve().parent == here and tb.tb_next is not None:
            start = tb.tb_next  # the frame after the harness's last one
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(e), e, start)).rstrip()


def _short_error(e: BaseException) -> str:
    """``'ValueError: the first line of its message'``: how a peer's, a probe's or a sweep point's error is kept."""
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


class _Relay:
    """The parent's end of a worker's messages: its progress bars and its text, shown here."""

    def __init__(self, progress: Progress, console: Console) -> None:
        self.progress, self.console = progress, console
        self.ids: dict[int, Any] = {}

    def __call__(self, msg: tuple[Any, ...]) -> None:
        kind = msg[0]
        if kind == "progress":
            _, method, wid, args, kwargs = msg
            if method == "add_task":
                self.ids[wid] = self.progress.add_task(*args, **kwargs)
            elif wid in self.ids:
                getattr(self.progress, method)(self.ids[wid], *args, **kwargs)
        elif kind == "print":
            self.console.print(msg[1])
        elif kind == "exit":
            self.console.print(f"[yellow]{msg[1]}: the next work goes to a fresh process[/yellow]")

    def reset(self) -> None:
        """Hide the bars of a worker that is gone."""
        for tid in self.ids.values():
            self.progress.update(tid, visible=False)
        self.ids.clear()

    def echo(self, text: str) -> None:
        """What the worker wrote to its stdout or stderr (a library's warning, a kernel's printf)."""
        self.console.print(text.rstrip("\n"), markup=False, highlight=False, style="dim")


class _Work:
    """The parent's handle on the worker process (or, with ``isolate=False``, on a session in this
    process): opens a session on each fresh worker, relays its messages, answers its tasks."""

    def __init__(self, params: Any, isolate: bool, progress: Progress, console: Console) -> None:
        from .isolate import InProcess, Worker
        from .worker import Session

        self.params = params
        self.relay = _Relay(progress, console)
        self.info: DeviceInfo | None = None
        self.ceilings: tuple[str, DeviceCeilings] | None = None
        self.w: Any
        if isolate:
            self.w = Worker("reporter.harness.worker", cwd=params.repo_root, on_output=self.relay.echo,
                            on_start=self._open, open_budget_s=params.budget_s)
            try:
                self.w.start()
            except BaseException:  # a session that cannot open (a bad assignment): no worker left behind
                self.w.close()
                raise
        else:
            self.w = InProcess(Session().handle)
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
    r = lost.detail if isinstance(lost.detail, Run) else _new_run(
        a, v, None, case_name, a.case(case_name), work.info, work.params.session,  # type: ignore[arg-type]
        work.params.command, work.params.repo_root, work.params.ceilings[0] if work.params.ceilings else "")
    r.error = lost.explain(what)
    return r


def run(repo_root: Path, logs: Path, a: Assignment, versions: list[Version], case_names: list[str],
        opts: RunOptions, console: Console | None = None, events: Events | None = None) -> list[Path]:
    """Check and time each version on each case; returns the paths of the records written (none
    when ``opts.write`` is False). ``console`` shows progress; ``events`` hears of each run (the CLI
    prints its text), written or not.

    The versions run in a worker process (:mod:`.worker`; ``opts.isolate``): one that crashes it,
    poisons its CUDA context or runs past ``opts.timeout_s`` gets a record saying so, and the others
    go on in a fresh one. This process writes every record, atomically, as it comes: Ctrl-C keeps
    the finished ones and leaves no partial file.
    """
    from .isolate import WorkerLost
    from .worker import OpenParams

    console = console or Console()
    events = events or Silent()
    if opts.logs is None:
        opts = replace(opts, logs=logs)
    require_cuda()  # here, so that a machine without a GPU hears it in one line before any process starts
    params = OpenParams(repo_root=repo_root, kernels=a.path.parent, assignment=a.name, logs=logs, opts=opts,
                        session=store.utc_stamp(), command=command_line(), budget_s=opts.timeout_s)
    written: list[Path] = []
    summary: list[Run] = []
    peers_of = (getattr(a.spec, "PEERS", {}) or {}) if opts.peers else {}
    probes_of = (getattr(a.spec, "PROBES", {}) or {}) if opts.probes else {}
    by_name = {v.name: v for v in versions}

    with QuietProgress(console=console, transient=False) as progress:
        overall = progress.add_task("runs", total=len(case_names) * len(versions))
        work = _Work(params, opts.isolate, progress, console)
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
                    _profile(r, repo_root, a, by_name[r.version], opts, console, progress, events)
                    resave(r)

            for case_name in case_names:
                if opts.interleave:
                    runs = _interleaved_case(work, a, versions, case_name, list(peers_of), console)
                else:
                    peers = []
                    for name, peer in peers_of.items():
                        try:
                            peers.append(work.call(("peer", case_name, name)))
                        except WorkerLost as e:
                            peers.append(PeerResult(name=name, description=peer.description,
                                                    error=e.explain(f"peer {name} on {case_name}")))
                            console.print(f"[red]{escape(peers[-1].error or '')}[/red]")
                    runs = []
                    for v in versions:
                        try:
                            r = work.call(("version", case_name, v.name))
                        except WorkerLost as e:
                            r = _lost_run(work, a, v, case_name, e, f"{v.name} on {case_name}")
                            console.print(f"[red]{escape(r.error or '')}[/red]")
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
            console.print(f"[yellow]interrupted: {len(written)} record(s) written, every one whole; "
                          "the version that was running has none[/yellow]")
            raise
        finally:
            work.close()
    events.runs_done(summary)
    return written


def _interleaved_case(work: _Work, a: Assignment, versions: list[Version], case_name: str, peers: list[str],
                      console: Console) -> list[Run]:
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
                console.print(f"[red]{escape(lost_runs[key].error or '')}[/red]")
            elif kind == "peer" and key in peer_names:
                desc = (getattr(a.spec, "PEERS", {}) or {})[key].description
                lost_peers.append(PeerResult(name=key, description=desc, error=e.explain(f"peer {key} on {case_name}")))
                peer_names.remove(key)
            else:
                for name in remaining:
                    lost_runs[name] = _lost_run(work, a, by_name[name], case_name, e,
                                                f"the interleaved rounds of {case_name} (with {name})")
                console.print(f"[red]{escape(e.explain(f'the interleaved rounds of {case_name}'))}[/red]")
                remaining, runs = [], []
    got = {r.version: r for r in runs}
    got.update(lost_runs)
    everyone = peer_results + lost_peers
    out = [got[v.name] for v in versions if v.name in got]
    for r in out:
        r.peers = everyone
    return out


#: the key of a sweep's ``skip`` that stands for every configuration not named in it
ALL_CONFIGS = -1


def sweep_in_process(a: Assignment, v: Version, case_name: str, opts: RunOptions, *, info: DeviceInfo,
                     flush: L2Flusher, timer: CudaEventTimer, state: Callable[[], dict[str, float]] | None,
                     console: Console, progress: Progress, case: dict, data: Any, ref: Any,
                     skip: dict[int, str] | None = None, on_item: Callable[..., None] | None = None,
                     interleave: bool = True) -> Sweep:
    """The sweep of :func:`sweep`, in this process: configurations in ``skip`` (index -> why;
    :data:`ALL_CONFIGS` for every one not named) are recorded with that error and not built; ``on_item`` hears of each configuration before its
    build and check, and of the rounds."""
    skip = dict(skip or {})
    on_item = on_item or (lambda *args, **kwargs: None)
    rule = opts.rule
    mod = v.load()
    configs: list[dict] = list(getattr(mod, "SWEEP", []))
    make = getattr(mod, "make_kernel", None)
    if not configs or make is None:
        raise ValueError(f"{v.path}: a sweep needs SWEEP (a list of configs) and make_kernel(config)")
    points: list[SweepPoint] = []
    fns: dict[int, Callable[[Any], Any]] = {}
    task = progress.add_task(f"sweep {v.name} · {case_name}" + (" · check" if interleave else ""),
                             total=len(configs))
    for k, cfg in enumerate(configs):
        p = SweepPoint(config=cfg)
        if k in skip or ALL_CONFIGS in skip:
            p.error = skip.get(k, skip.get(ALL_CONFIGS))
            points.append(p)
            progress.advance(task)
            continue
        on_item("config", k, cfg)
        try:
            fn = make(cfg)
            p.check, out = _check_once(fn, data, ref, a.spec, int(case["seed"]), (a.name, v.short))
            del out
            if not p.check.passed:
                p.error = p.check.message
            elif interleave:
                fns[len(points)] = fn
            else:
                p.timing = time_callable(fn, data, a=a, case=case, ref=ref, names=(a.name, v.short),
                                         opts=opts, flush=flush, timer=timer, state=state)
        except Exception as e:  # out of resources, compile errors: recorded, sweep goes on
            p.error = _short_error(e)[:300]
        points.append(p)
        progress.advance(task)
        if not interleave:
            _free()
    if fns:
        on_item("rounds", "rounds", None, scale=len(fns))
        rounds = progress.add_task(f"sweep {v.name} · {len(fns)} configurations interleaved, rounds",
                                   total=rule.max_reps)
        idx = list(fns)
        try:
            with ranges(a.name, v.short, "timed"):
                res = benchmark_interleaved(
                    [lambda rep, f=fns[i]: f(data) for i in idx], timer=timer, rule=rule, flush=flush, state=state,
                    on_sample=lambda i, rep, ms: progress.update(rounds, completed=rep + 1))
            for i, st, err in zip(idx, res.stats, res.errors):
                points[i].timing = st
                if err is not None:
                    points[i].error = _short_error(err)[:300]
        except Exception as e:  # e.g. the held timer voided: every point waiting for its timing says so
            why = _short_error(e)[:300]
            for i in idx:
                points[i].error = f"interleaved timing failed: {why}"
        _free()
    s = Sweep(run_id=f"{store.utc_stamp()}_{info.slug}_{case_name}", session_id=store.utc_stamp(),
              assignment=a.name, version=v.name, case_name=case_name, case=case, seed=int(case["seed"]),
              created_utc=datetime.now(timezone.utc), device=info, points=points,
              timing_order="interleaved" if interleave else "sequential")
    best = s.best()
    s.chosen = best.config if best else None  # the lowest median; analysis.sweep says which others it ties with
    return s


def sweep(repo_root: Path, logs: Path, a: Assignment, v: Version, case_name: str, rule: StoppingRule,
          console: Console | None = None, hold: bool = False, interleave: bool = True,
          events: Events | None = None, write: bool = True, isolate: bool = True,
          timeout_s: float = 300.0) -> Path | None:
    """Time every configuration a tunable version offers (``SWEEP`` list and ``make_kernel(config)``).

    Each configuration is built and checked first (a failure is recorded and the sweep goes on).
    Then the ones that passed are timed interleaved (one call of each per round, in a rotating
    order: :func:`benchmark_interleaved`), so a card that heats up during the sweep cannot favour
    whichever configuration comes first; ``interleave=False`` times them one after another, in
    ``SWEEP``'s order, as sweeps recorded before the interleaving were. With ``write=False``
    (``report sweep --quick``) nothing is written and None is returned; ``events`` still hears of it.

    It runs in a worker process like :func:`run`: a configuration that crashes the worker or runs
    past ``timeout_s`` is recorded with that error and the sweep starts again in a fresh one
    without it; losing the worker during the rounds records every configuration's timing as lost.
    """
    from .isolate import WorkerLost
    from .worker import OpenParams

    console = console or Console()
    events = events or Silent()
    require_cuda()
    opts = RunOptions(rule=rule, hold=hold, write=write, peers=False, isolate=isolate, timeout_s=timeout_s, logs=logs)
    params = OpenParams(repo_root=repo_root, kernels=a.path.parent, assignment=a.name, logs=logs, opts=opts,
                        session=store.utc_stamp(), command=command_line(), budget_s=timeout_s,
                        needs_ceilings=False, extra={"interleave": interleave})
    skip: dict[int, str] = {}
    with QuietProgress(console=console) as progress:
        work = _Work(params, isolate, progress, console)
        try:
            while True:
                try:
                    s = work.call(("sweep", v.name, case_name, dict(skip)))
                    break
                except WorkerLost as e:
                    kind, key = (e.item[0], e.item[2]) if isinstance(e.item, tuple) and len(e.item) == 3 else ("task", None)
                    if kind == "config" and isinstance(key, int) and key not in skip:
                        skip[key] = e.explain(f"configuration {e.detail} of {v.name}", "the other configurations")[:2000]
                        console.print(f"[red]{escape(skip[key])}[/red]")
                        continue
                    if kind == "rounds":  # every checked configuration's timing is lost: a record says so
                        skip[ALL_CONFIGS] = (f"the rounds of the sweep of {v.name}: the worker process {e.how}, so no "
                                             "configuration's timing is kept" + ("; its last lines:\n" + "\n".join(
                                                 e.tail) if e.tail else ""))[:2000]
                        console.print(f"[red]{escape(skip[ALL_CONFIGS])}[/red]")
                        continue
                    raise
        finally:
            work.close()
    path = store.save(s, store.sweep_path(logs, s), logs=logs) if write else None
    events.sweep_written(s)
    return path
