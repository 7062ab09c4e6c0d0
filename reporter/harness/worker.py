"""The worker process of ``report run`` and ``report sweep``: where kernels run.

Started by :class:`reporter.harness.isolate.Worker` as ``python -m reporter.harness.worker <fd> <parent pid>``;
it receives tasks over the socket ``fd`` and answers each (the protocol is in
:mod:`reporter.harness.isolate`). :class:`Session` holds what a run keeps between tasks (the
assignment, the loaded versions, the device, its ceilings, the timer and the L2 flusher, the
current case's input and reference) and does the work with the functions of
:mod:`reporter.harness.run`; the parent writes the records. The same :class:`Session` serves
``--no-isolate`` in the parent's own process.

Before each piece of work it names it (an ``item`` message with its budget), so that the parent
knows what was running when the process died or hung. After a piece of work that raised, it
checks that its CUDA context still works; when it does not (a kernel's illegal address poisons the
context for good), it answers with ``exit`` and ends, and the parent starts a fresh worker.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..assignments import Assignment, AssignmentError, get_assignment
from ..records import DeviceCeilings, DeviceInfo, PeerResult, ProbeResult, Run

Send = Callable[[tuple[Any, ...]], None]

#: at most this many progress updates a second go to the parent (a bar needs no more)
PROGRESS_HZ = 10.0


@dataclass
class OpenParams:
    """What a worker needs to serve one ``report run`` or ``report sweep``."""

    repo_root: Path
    kernels: Path
    assignment: str
    logs: Path
    opts: Any  # RunOptions
    session: str
    command: str
    ceilings: tuple[str, DeviceCeilings] | None = None  # known from an earlier worker of the run
    budget_s: float = 300.0  # each version's (or peer's, probe's, configuration's) budget on a case
    needs_ceilings: bool = True  # a sweep does without (it derives nothing from them)
    extra: dict[str, Any] = field(default_factory=dict)


class RemoteProgress:
    """The part of rich's Progress the harness uses, forwarded to the parent's display."""

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


class RemoteConsole:
    """The part of rich's Console the harness uses: text goes to the parent, which prints it."""

    def __init__(self, send: Send) -> None:
        self.send = send

    def print(self, *objects: Any, **kwargs: Any) -> None:
        self.send(("print", " ".join(str(o) for o in objects)))

    @contextmanager
    def status(self, text: str, **kwargs: Any):  # type: ignore[no-untyped-def]
        self.send(("print", f"[dim]{text}[/dim]"))
        yield self


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
        self.console: RemoteConsole | None = None
        self.exiting = False  # set once a task ended with the CUDA context lost: the process ends after it

    # ------------------------------------------------------------------ dispatch
    def handle(self, task: tuple[Any, ...], send: Send) -> None:
        self.send = send
        self.progress = RemoteProgress(send)
        self.console = RemoteConsole(send)
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
        from .device import device_info, require_cuda
        from .gpu_state import open_sampler
        from .run import ensure_ceilings, make_timer
        from .timing import L2Flusher

        self.p = p
        self.a = get_assignment(p.kernels, p.assignment)
        _ = self.a.spec
        require_cuda()
        self.info = device_info()
        if p.ceilings is not None:
            self.ceilings_ref, self.ceilings = p.ceilings
        elif p.needs_ceilings:
            self.ceilings_ref, self.ceilings = ensure_ceilings(p.logs, self.info, self.console,  # type: ignore[arg-type]
                                                               p.opts.remeasure_ceilings, write=p.opts.write)
        self.flush = L2Flusher(self.info.l2_bytes)
        self.timer = make_timer(p.opts.hold)
        sampler = open_sampler()
        self.state = sampler.sample if sampler else None
        return self.info, self.ceilings_ref, self.ceilings  # type: ignore[return-value]

    def task_free(self) -> None:
        from .run import _free

        self._case = None
        _free()

    def _case_data(self, case_name: str) -> tuple[dict, Any, Any]:
        from .run import _free, draw_case

        if self._case is None or self._case[0] != case_name:
            self._case = None
            _free()
            assert self.a is not None
            case, data, ref = draw_case(self.a, case_name, self.console)  # type: ignore[arg-type]
            self._case = (case_name, case, data, ref)
        return self._case[1], self._case[2], self._case[3]

    def _module(self, name: str) -> Any:
        if name not in self.modules:
            assert self.a is not None
            self.modules[name] = self.a.version(name).load()
        return self.modules[name]

    def _after_failure(self, value: Any, failed: bool) -> Any:
        """``value``, or an exit with it when the CUDA context no longer works after a failure."""
        if not failed:
            return value
        ok, why = cuda_context_ok()
        return value if ok else _Exit(value, f"the CUDA context no longer works ({why})")

    def task_peer(self, case_name: str, name: str) -> PeerResult:
        from .run import _time_peers

        assert self.a is not None and self.p is not None
        self.item(("peer", case_name, name), name)
        case, data, ref = self._case_data(case_name)
        (pr,) = _time_peers(self.a, case, data, ref, self.p.opts, self.flush, self.timer, self.ceilings,  # type: ignore[arg-type]
                            self.progress, self.state, only=[name])  # type: ignore[arg-type]
        return self._after_failure(pr, pr.error is not None and pr.timing is None)

    def task_version(self, case_name: str, name: str) -> Run:
        from .run import _new_run, config_of, run_version

        assert self.a is not None and self.p is not None and self.info is not None
        v = self.a.version(name)
        skeleton = _new_run(self.a, v, None, case_name, self.a.case(case_name), self.info, self.p.session,
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
                    self.p.repo_root, self.progress, self.state, self.console)  # type: ignore[arg-type]
        return self._after_failure(r, r.error is not None and r.timing is None)

    def task_interleaved(self, case_name: str, names: list[str], peers: list[str]) -> Any:
        from .run import _new_run, _run_case_interleaved

        assert self.a is not None and self.p is not None and self.info is not None
        versions, modules, failed = [], {}, []
        for name in names:
            v = self.a.version(name)
            try:
                modules[name] = self._module(name)
                versions.append(v)
            except AssignmentError as e:
                r = _new_run(self.a, v, None, case_name, self.a.case(case_name), self.info, self.p.session,
                             self.p.command, self.p.repo_root, self.ceilings_ref)
                r.error = str(e)
                failed.append(r)
        case, data, ref = self._case_data(case_name)

        def on_item(kind: str, key: str, detail: Any, scale: float = 1.0) -> None:
            self.item((kind, case_name, key), detail, scale)

        runs, peer_results = _run_case_interleaved(
            self.a, versions, modules, case_name, case, data, ref, self.p.opts, self.flush, self.timer,
            self.ceilings, self.ceilings_ref, self.info, self.p.session, self.p.command, self.p.repo_root,  # type: ignore[arg-type]
            self.progress, self.state, self.console, peers_only=peers, on_item=on_item)  # type: ignore[arg-type]
        failures = any(r.error and r.timing is None for r in runs) or any(p.error for p in peer_results)
        return self._after_failure((runs + failed, peer_results), failures)

    def task_probe(self, case_name: str, name: str) -> ProbeResult:
        from .run import _time_probes

        assert self.a is not None and self.p is not None
        self.item(("probe", case_name, name), name)
        case, data, _ = self._case_data(case_name)
        (pr,) = _time_probes(self.a, case, data, self.p.opts, self.flush, self.timer, self.progress,  # type: ignore[arg-type]
                             self.state, only=[name])
        return self._after_failure(pr, pr.error is not None)

    def task_sweep(self, name: str, case_name: str, skip: dict[int, str]) -> Any:
        from .run import sweep_in_process

        assert self.a is not None and self.p is not None and self.info is not None

        def on_item(kind: str, key: int | str, detail: Any, scale: float = 1.0) -> None:
            self.item((kind, case_name, key), detail, scale)

        case, data, ref = self._case_data(case_name)
        return sweep_in_process(self.a, self.a.version(name), case_name, self.p.opts, info=self.info,
                                flush=self.flush, timer=self.timer, state=self.state, console=self.console,  # type: ignore[arg-type]
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
