"""The worker of ``report run`` and ``report sweep``: where kernels are checked and timed.

The work: for a case, draw the seeded input and compute the reference once; for each version,
poison, call, check, and time it only when it passes (ranked: each repetition on a fresh seeded
input, seed + 13 per repetition, every output re-checked); the peers and the assignment's
``PROBES`` timed the same way; ``--interleave`` times every callable of a case in rounds together;
a sweep builds, checks and times a tunable version's configurations. ``report reverify`` calls the
same functions in its own process.

The process: started by :class:`reporter.harness.isolate.Worker` as ``python -m reporter.harness.worker <fd> <parent pid>``
(the parent names this module, :data:`reporter.harness.jobs.WORKER_MODULE`, and never imports it);
it receives tasks over the socket ``fd`` and answers each (the protocol is in
:mod:`reporter.harness.isolate`). :class:`Session` holds what a run keeps between tasks (the
assignment, the loaded versions, the device, its ceilings, the timer and the L2 flusher, the
current case's input and reference) and does one task at a time; the parent
(:mod:`reporter.harness.run`) writes the records. The same :class:`Session` serves
``--no-isolate`` in the parent's own process. What crosses between the two is in
:mod:`reporter.harness.jobs`.

Before each piece of work it names it (an ``item`` message with its budget), so that the parent
knows what was running when the process died or hung. After a piece of work that raised, it
checks that its CUDA context still works; when it does not (a kernel's illegal address poisons the
context for good), it answers with ``exit`` and ends, and the parent starts a fresh worker.
"""

from __future__ import annotations

import gc
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .. import store
from ..assignments import Assignment, AssignmentError, Version, get_assignment, short_handle
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
from .events import Events, Level, Progress, Silent
from .gpu_state import open_sampler
from .jobs import ALL_CONFIGS, OpenParams, RunOptions, command_line, config_of, new_run
from .nvtx_ranges import ranges
from .timing import CudaEventTimer, HeldCudaEventTimer, L2Flusher, benchmark, benchmark_interleaved

Send = Callable[[tuple[Any, ...]], None]

#: at most this many progress updates a second go to the parent (a bar needs no more)
PROGRESS_HZ = 10.0

RANK_SEED_STEP = 13


# --------------------------------------------------------------------------- the work


def _sync() -> None:
    import torch

    if torch.cuda.is_available():  # the checks also run on CPU tensors (tests without a GPU)
        torch.cuda.synchronize()


def draw_case(a: Assignment, case_name: str, events: Events) -> tuple[dict, Any, Any]:
    """A case's parameters, its seeded input and the reference output, computed once per case."""
    case = a.case(case_name)
    with events.status(f"{a.name}/{case_name}: drawing input and reference"):
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


def free_memory() -> None:
    """Give cached device memory back between versions. Never raises: after a kernel's illegal
    address the context fails every call, this one too, and the version's record already says why
    (the worker checks the context next and ends)."""
    import torch

    gc.collect()
    try:
        torch.cuda.empty_cache()
    except Exception:  # noqa: BLE001 - a poisoned context; see above
        pass


def ensure_ceilings(logs: Path, info: DeviceInfo, events: Events, remeasure: bool,
                    write: bool = True) -> tuple[str, DeviceCeilings]:
    """The device's ceilings: the latest record under logs/devices/, or measured now (and written
    there unless ``write`` is False, when the reference says they were measured and not kept)."""
    found = None if remeasure else store.latest_ceilings(logs, info.name, info.slug)
    if found:
        path, c = found
        return _relative(path, logs), c
    with events.status(f"measuring ceilings of {info.name} (copy bandwidth, fp16/bf16/fp32 matmul)"):
        c = measure_ceilings(info)
    where = str(store.save(c, store.ceilings_path(logs, c), logs=logs)) if write else "not written (quick run)"
    events.say(f"ceilings: copy {c.copy_gbps:,.0f} GB/s; "
               + ", ".join(f"{k} {v:,.0f} TFLOP/s" for k, v in c.matmul_tflops.items()) + f"  → {where}")
    return (_relative(Path(where), logs) if write else "measured in this session, not written"), c


def _relative(path: Path, logs: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path(logs).resolve()))
    except ValueError:
        return str(path)


def check_once(fn: Callable[[Any], Any], data: Any, ref: Any, spec: Any, seed: int,
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


class CaseInputs:
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
    inputs = CaseInputs(a, case, data, ref, opts.ranked)
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
                          module_advisories=list(mod.advisories), code_sha256=mod.code_sha256(k.name),
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
                check, o = check_once(peer.fn, data, ref, a.spec, case["seed"], names)
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
        free_memory()
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
        free_memory()
    return out


def run_version(r: Run, a: Assignment, mod: Any, data: Any, ref: Any, opts: RunOptions, flush: L2Flusher,
                timer: CudaEventTimer, ceilings: DeviceCeilings, repo_root: Path, progress: Progress,
                state: Callable[[], dict[str, float]] | None, events: Events) -> Run:
    """Check one version on its case and, when it passes, time it, into ``r`` (made by
    :func:`~reporter.harness.jobs.new_run`). Whatever the version does (raises, returns the wrong thing, fails a ranked
    re-check) ends in ``r.check`` and ``r.error``, never in an exception."""
    task = progress.add_task(f"{r.version} · {r.case_name}", total=opts.rule.max_reps)
    names = (a.name, short_handle(r.version))
    launched: list[CudaKernel] = []
    try:
        with track_launches() as launched:  # the CUDA kernels this version runs, for r.builds
            r.check, out = check_once(mod.custom_kernel, data, ref, a.spec, r.seed, names)
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
        events.say(f"{r.version} on {r.case_name} raised", "error", user_traceback(e))
    r.builds = kernel_builds(launched, repo_root)
    progress.update(task, completed=opts.rule.max_reps, visible=False)
    free_memory()
    return r


def _run_case_interleaved(a: Assignment, versions: list[Version], modules: dict[str, Any], case_name: str,
                          case: dict, data: Any, ref: Any, opts: RunOptions, flush: L2Flusher,
                          timer: CudaEventTimer, ceilings: DeviceCeilings, ceilings_ref: str, info: DeviceInfo,
                          session: str, command: str, repo_root: Path, progress: Progress,
                          state: Callable[[], dict[str, float]] | None, events: Events,
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
                pr.check, o = check_once(peer.fn, data, ref, spec, seed, names)
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
        r = new_run(a, v, mod, case_name, case, info, session, command, repo_root, ceilings_ref)
        on_item("version", v.name, r)
        try:
            with track_launches() as kernels:
                r.check, out = check_once(mod.custom_kernel, data, ref, spec, seed, (a.name, v.short))
                del out
            launched[len(runs)] = kernels
            if r.check.passed:
                fns.append(mod.custom_kernel)
                owners.append(("version", len(runs)))
            else:
                r.error = f"check failed, not timed: {r.check.message}"
        except Exception as e:
            r.error = f"{type(e).__name__}: {e}"
            events.say(f"{v.name} on {case_name} raised", "error", user_traceback(e))
        runs.append(r)

    inputs = CaseInputs(a, case, data, ref, opts.ranked)  # one fresh input per round, shared by all
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


def sweep_in_process(a: Assignment, v: Version, case_name: str, opts: RunOptions, *, info: DeviceInfo,
                     flush: L2Flusher, timer: CudaEventTimer, state: Callable[[], dict[str, float]] | None,
                     events: Events, progress: Progress, case: dict, data: Any, ref: Any,
                     skip: dict[int, str] | None = None, on_item: Callable[..., None] | None = None,
                     interleave: bool = True) -> Sweep:
    """The sweep of :func:`reporter.harness.run.sweep`, in the worker: configurations in ``skip`` (index -> why;
    :data:`ALL_CONFIGS` for every one not named) are recorded with that error and not built; ``on_item`` hears of each configuration before its
    build and check, and of the rounds."""
    skip = dict(skip or {})
    on_item = on_item or (lambda *args, **kwargs: None)
    rule = opts.rule
    mod = a.load(v)
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
            p.check, out = check_once(fn, data, ref, a.spec, int(case["seed"]), (a.name, v.short))
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
            free_memory()
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
        free_memory()
    s = Sweep(run_id=f"{store.utc_stamp()}_{info.slug}_{case_name}", session_id=store.utc_stamp(),
              assignment=a.name, version=v.name, case_name=case_name, case=case, seed=int(case["seed"]),
              created_utc=datetime.now(timezone.utc), device=info, points=points,
              timing_order="interleaved" if interleave else "sequential")
    best = s.best()
    s.chosen = best.config if best else None  # the lowest median; analysis.sweep says which others it ties with
    return s


def open_session(logs: Path, opts: RunOptions, events: Events
                 ) -> tuple[DeviceInfo, str, DeviceCeilings, str, str, L2Flusher, CudaEventTimer]:
    """What every timed session in this process starts with: the device, its ceilings (measured
    once, then read from logs/), the session id, the command line, the L2 flusher and the timer."""
    require_cuda()
    info = device_info()
    ceilings_ref, ceilings = ensure_ceilings(logs, info, events, opts.remeasure_ceilings, write=opts.write)
    return (info, ceilings_ref, ceilings, store.utc_stamp(), command_line(), L2Flusher(info.l2_bytes),
            make_timer(opts.hold))


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


# --------------------------------------------------------------------------- the process


class RemoteProgress:
    """The progress bars (:class:`~reporter.harness.events.Progress`), forwarded to the parent's display."""

    def __init__(self, send: Send) -> None:
        self.send = send
        self._next = 0
        self._last: dict[int, float] = {}

    def add_task(self, description: str, total: float | None = 100.0, **kwargs: Any) -> int:
        self._next += 1
        self.send(("progress", "add_task", self._next, (description,), dict(total=total, **kwargs)))
        return self._next

    def update(self, task: int, **kwargs: Any) -> None:
        now = time.monotonic()
        if set(kwargs) == {"completed"} and now - self._last.get(task, 0.0) < 1.0 / PROGRESS_HZ:
            return  # a sample's tick: the display misses nothing it would show
        self._last[task] = now
        self.send(("progress", "update", task, (), kwargs))

    def advance(self, task: int, advance: float = 1.0) -> None:
        self.send(("progress", "advance", task, (), dict(advance=advance)))

    def remove_task(self, task: int) -> None:
        self.send(("progress", "remove_task", task, (), {}))


class RemoteEvents(Silent):
    """What the work says (:meth:`~reporter.harness.events.Events.say`), sent to the parent, whose
    events show it; a step (:meth:`status`) is said once, as it starts. The records' own events are
    the parent's, which writes them."""

    def __init__(self, send: Send) -> None:
        self.send = send

    def say(self, text: str, level: Level = "info", detail: str = "") -> None:
        self.send(("say", text, level, detail))

    @contextmanager
    def status(self, text: str) -> Iterator[Callable[[str], None]]:
        self.say(text, "step")
        yield lambda text: None


def cuda_context_ok() -> tuple[bool, str]:
    """Whether this process's CUDA context still runs work (an illegal address leaves it failing
    every call from then on), with the error when it does not."""
    try:
        import torch

        if not torch.cuda.is_available():
            return True, ""
        torch.cuda.synchronize()
        x = torch.ones(1, device="cuda")
        x.add_(1)
        if float(x.item()) != 2.0:
            return False, "a test kernel gave a wrong value"
        return True, ""
    except Exception as e:
        return False, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


class Session:
    """One run's state in the worker; :meth:`handle` does one task."""

    def __init__(self) -> None:
        self.p: OpenParams | None = None
        self.a: Assignment | None = None
        self.modules: dict[str, Any] = {}
        self._case: tuple[str, dict, Any, Any] | None = None
        self.info: DeviceInfo | None = None
        self.ceilings: DeviceCeilings | None = None
        self.ceilings_ref = ""
        self.flush: Any = None
        self.timer: Any = None
        self.state: Callable[[], dict[str, float]] | None = None
        self.send: Send = lambda msg: None
        self.progress: RemoteProgress | None = None
        self.events: RemoteEvents | None = None
        self.exiting = False  # set once a task ended with the CUDA context lost: the process ends after it

    # ------------------------------------------------------------------ dispatch
    def handle(self, task: tuple[Any, ...], send: Send) -> None:
        self.send = send
        self.progress = RemoteProgress(send)
        self.events = RemoteEvents(send)
        op = task[0]
        try:
            fn = getattr(self, f"task_{op}")
        except AttributeError:
            send(("error", f"worker: unknown task {op!r}"))
            return
        try:
            answer = fn(*task[1:])
        except (AssignmentError, ValueError) as e:  # a bad name or a version that cannot be swept: one line
            send(("error", str(e)))
            return
        except RuntimeError as e:
            if op == "open":  # no GPU, a device that does not answer: one line for the person
                send(("error", str(e)))
                return
            raise
        if isinstance(answer, _Exit):
            self.exiting = True
            send(("exit", answer.why, answer.value))
        else:
            send(("answer", answer))

    def item(self, key: Any, detail: Any = None, scale: float = 1.0) -> None:
        assert self.p is not None
        self.send(("item", key, self.p.budget_s * scale, detail))

    # ------------------------------------------------------------------ tasks
    def task_open(self, p: OpenParams) -> tuple[DeviceInfo, str, DeviceCeilings]:
        self.p = p
        self.a = get_assignment(p.kernels, p.assignment)
        _ = self.a.spec
        require_cuda()
        self.info = device_info()
        if p.ceilings is not None:
            self.ceilings_ref, self.ceilings = p.ceilings
        elif p.needs_ceilings:
            self.ceilings_ref, self.ceilings = ensure_ceilings(p.logs, self.info, self.events,  # type: ignore[arg-type]
                                                               p.opts.remeasure_ceilings, write=p.opts.write)
        self.flush = L2Flusher(self.info.l2_bytes)
        self.timer = make_timer(p.opts.hold)
        sampler = open_sampler()
        self.state = sampler.sample if sampler else None
        return self.info, self.ceilings_ref, self.ceilings  # type: ignore[return-value]

    def task_free(self) -> None:
        self._case = None
        free_memory()

    def _case_data(self, case_name: str) -> tuple[dict, Any, Any]:
        if self._case is None or self._case[0] != case_name:
            self._case = None
            free_memory()
            assert self.a is not None
            case, data, ref = draw_case(self.a, case_name, self.events)  # type: ignore[arg-type]
            self._case = (case_name, case, data, ref)
        return self._case[1], self._case[2], self._case[3]

    def _module(self, name: str) -> Any:
        if name not in self.modules:
            assert self.a is not None
            self.modules[name] = self.a.load(self.a.version(name))
        return self.modules[name]

    def _after_failure(self, value: Any, failed: bool) -> Any:
        """``value``, or an exit with it when the CUDA context no longer works after a failure."""
        if not failed:
            return value
        ok, why = cuda_context_ok()
        return value if ok else _Exit(value, f"the CUDA context no longer works ({why})")

    def task_peer(self, case_name: str, name: str) -> PeerResult:
        assert self.a is not None and self.p is not None
        self.item(("peer", case_name, name), name)
        case, data, ref = self._case_data(case_name)
        (pr,) = _time_peers(self.a, case, data, ref, self.p.opts, self.flush, self.timer, self.ceilings,  # type: ignore[arg-type]
                            self.progress, self.state, only=[name])  # type: ignore[arg-type]
        return self._after_failure(pr, pr.error is not None and pr.timing is None)

    def task_version(self, case_name: str, name: str) -> Run:
        assert self.a is not None and self.p is not None and self.info is not None
        v = self.a.version(name)
        skeleton = new_run(self.a, v, None, case_name, self.a.case(case_name), self.info, self.p.session,
                            self.p.command, self.p.repo_root, self.ceilings_ref)
        self.item(("version", case_name, name), skeleton)  # from here, a crash or a hang is this version's
        r = skeleton.model_copy(deep=True)
        try:
            mod = self._module(name)
        except AssignmentError as e:
            r.error = str(e)
            return r
        r.code.config = dict(config_of(mod, self.a.case(case_name)) or {})
        _, data, ref = self._case_data(case_name)
        run_version(r, self.a, mod, data, ref, self.p.opts, self.flush, self.timer, self.ceilings,  # type: ignore[arg-type]
                    self.p.repo_root, self.progress, self.state, self.events)  # type: ignore[arg-type]
        return self._after_failure(r, r.error is not None and r.timing is None)

    def task_interleaved(self, case_name: str, names: list[str], peers: list[str]) -> Any:
        assert self.a is not None and self.p is not None and self.info is not None
        versions, modules, failed = [], {}, []
        for name in names:
            v = self.a.version(name)
            try:
                modules[name] = self._module(name)
                versions.append(v)
            except AssignmentError as e:
                r = new_run(self.a, v, None, case_name, self.a.case(case_name), self.info, self.p.session,
                             self.p.command, self.p.repo_root, self.ceilings_ref)
                r.error = str(e)
                failed.append(r)
        case, data, ref = self._case_data(case_name)

        def on_item(kind: str, key: str, detail: Any, scale: float = 1.0) -> None:
            self.item((kind, case_name, key), detail, scale)

        runs, peer_results = _run_case_interleaved(
            self.a, versions, modules, case_name, case, data, ref, self.p.opts, self.flush, self.timer,
            self.ceilings, self.ceilings_ref, self.info, self.p.session, self.p.command, self.p.repo_root,  # type: ignore[arg-type]
            self.progress, self.state, self.events, peers_only=peers, on_item=on_item)  # type: ignore[arg-type]
        failures = any(r.error and r.timing is None for r in runs) or any(p.error for p in peer_results)
        return self._after_failure((runs + failed, peer_results), failures)

    def task_probe(self, case_name: str, name: str) -> ProbeResult:
        assert self.a is not None and self.p is not None
        self.item(("probe", case_name, name), name)
        case, data, _ = self._case_data(case_name)
        (pr,) = _time_probes(self.a, case, data, self.p.opts, self.flush, self.timer, self.progress,  # type: ignore[arg-type]
                             self.state, only=[name])
        return self._after_failure(pr, pr.error is not None)

    def task_sweep(self, name: str, case_name: str, skip: dict[int, str]) -> Any:
        assert self.a is not None and self.p is not None and self.info is not None

        def on_item(kind: str, key: int | str, detail: Any, scale: float = 1.0) -> None:
            self.item((kind, case_name, key), detail, scale)

        case, data, ref = self._case_data(case_name)
        return sweep_in_process(self.a, self.a.version(name), case_name, self.p.opts, info=self.info,
                                flush=self.flush, timer=self.timer, state=self.state, events=self.events,  # type: ignore[arg-type]
                                progress=self.progress, case=case, data=data, ref=ref, skip=skip,  # type: ignore[arg-type]
                                on_item=on_item, interleave=bool(self.p.extra.get("interleave", True)))


@dataclass
class _Exit:
    value: Any
    why: str


def _die_with(parent: int) -> None:
    """Have the kernel end this process when its parent ends (Linux), so that a parent killed from
    outside (a time limit's SIGKILL) never leaves a worker holding the GPU with a spinning kernel."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the parent ended before the request took effect
        os._exit(0)


def main(argv: list[str]) -> int:
    from multiprocessing.connection import Connection

    if len(argv) > 1:
        _die_with(int(argv[1]))
    conn = Connection(int(argv[0]))
    session = Session()

    def send(msg: tuple[Any, ...]) -> None:
        conn.send(msg)

    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return 0  # the parent is gone
        if task[0] == "quit":
            return 0
        try:
            session.handle(task, send)
        except Exception:  # noqa: BLE001 - not a kernel's failure (those are in their records): end, so that
            # the parent records the item as lost, with this traceback as its last lines, and goes on in a fresh worker
            traceback.print_exc()
            sys.stderr.flush()
            return 70
        if session.exiting:
            return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
