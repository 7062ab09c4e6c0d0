"""Running the harness's work in a child process that may crash or hang without taking the run down.

A kernel that writes through a bad address poisons its process's CUDA context (every later call
fails), one that never ends holds its process forever, and host code can die of a signal. So
``report run`` and ``report sweep`` hand their work, one item at a time, to a worker process
(:mod:`reporter.harness.worker`) and only write what it sends back. This module is the parent's
side, and knows nothing of kernels or CUDA:

* :class:`Worker` starts ``python -m <module> <fd> <parent pid>`` in its own session (so Ctrl-C reaches only
  the parent, which then ends it), with its stdout and stderr in a log file, and talks to it over
  a socket pair with :class:`multiprocessing.connection.Connection` (pickled messages, framed).
* :meth:`Worker.call` sends one task and relays the worker's messages until the task's answer.
  The worker names each piece of work before it starts it (``("item", key, budget_s, detail)``);
  when the worker dies, or the current item outlasts its budget (the worker is then killed, with
  its process group), :class:`WorkerLost` says which item it was, how it ended (the signal, the
  exit status, or the timeout) and the last lines the worker wrote. The next call starts a fresh
  worker.
* :class:`InProcess` answers the same calls in this process, from the same module imported by its
  name (``report run --no-isolate``: a debugger sees the kernel; a crash ends the run).

The messages a worker sends: ``("item", key, budget_s, detail)``, ``("progress", method, bar, args,
kwargs)`` (a call on its progress bars), ``("say", text, level, detail)`` (a line for the person, as
:meth:`reporter.harness.events.Events.say` takes it), ``("answer", value)``, ``("error", text)`` (the task could not be
done at all: the message is for the person) and ``("exit", why, value)`` (the answer ``value``, after
which the worker ends: its CUDA context is lost, ``why`` says so; the next call starts a fresh one).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

Message = tuple[Any, ...]
OnMessage = Callable[[Message], None]

#: seconds a worker gets to end on SIGTERM before SIGKILL
TERM_GRACE_S = 5.0
#: lines of the worker's output kept in a :class:`WorkerLost`
TAIL_LINES = 12


class WorkerError(RuntimeError):
    """The worker could not do the task at all (no GPU, an assignment that does not load): the
    message is one line for the person, raised in the parent."""


@dataclass
class WorkerLost(Exception):
    """The worker ended (or was ended) in the middle of ``item``."""

    item: Any
    how: str  # 'died of SIGSEGV', 'exited with status 1', 'ran past its 300 s budget'
    tail: list[str] = field(default_factory=list)
    timed_out: bool = False
    detail: Any = None  # what the worker said of the item when it started it

    def __str__(self) -> str:
        return f"the worker process {self.how} while on {self.item}"

    def explain(self, what: str, others: str = "the other versions") -> str:
        """One paragraph for a record and the terminal: what happened to ``what``, what to do."""
        if self.timed_out:
            text = (f"{what} {self.how.replace('ran past', 'did not finish within')} and was stopped (its process "
                    f"killed; {others} go on in a fresh one). A kernel that never ends (a barrier some "
                    "threads never reach, a wait on a flag nobody sets, a loop bound that is never met) looks like "
                    "this; if it is only slow, raise --timeout-s.")
        else:
            text = (f"{what}: the process running it {self.how}; {others} go on in a fresh one. "
                    "A signal like SIGSEGV or SIGABRT comes from host code (an extension, ctypes) or the driver; "
                    "run it alone with --no-isolate under a debugger to see where.")
        if self.tail:
            text += "\nlast lines it wrote:\n" + "\n".join("  " + line for line in self.tail)
        return text


def describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "stopped answering"
    if returncode < 0:
        try:
            return f"died of {signal.Signals(-returncode).name}"
        except ValueError:
            return f"died of signal {-returncode}"
    return f"exited with status {returncode}"


class Worker:
    """A child process running ``python -m module <fd> <parent pid>``; see the module's docstring."""

    def __init__(self, module: str, *, cwd: Path | None = None, env: dict[str, str] | None = None,
                 on_output: Callable[[str], None] | None = None, on_start: Callable[[Worker], None] | None = None,
                 open_budget_s: float = 600.0) -> None:
        self.module, self.cwd, self.env = module, cwd, env
        self.on_output = on_output  # new text the worker wrote to stdout/stderr, after each message
        self.on_start = on_start  # called on each fresh worker before its first task (to open a session)
        self.open_budget_s = open_budget_s
        self.proc: subprocess.Popen[bytes] | None = None
        self.conn: Connection | None = None
        self._log: Any = None
        self._log_pos = 0
        self._recent: deque[str] = deque(maxlen=TAIL_LINES)  # the last lines written during the current call
        self.started = 0  # how many processes were started

    # ------------------------------------------------------------------ life
    def start(self) -> None:
        parent_sock, child_sock = socket.socketpair()
        self._log = tempfile.NamedTemporaryFile(prefix="report-worker-", suffix=".log", delete=False)
        self._log_pos = 0
        env = dict(os.environ if self.env is None else self.env)
        env.setdefault("PYTHONUNBUFFERED", "1")
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", self.module, str(child_sock.fileno()), str(os.getpid())],
                pass_fds=(child_sock.fileno(),),
                stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT, cwd=self.cwd, env=env,
                start_new_session=True)
        finally:
            child_sock.close()
        self.conn = Connection(parent_sock.detach())
        self.started += 1
        if self.on_start is not None:
            self.on_start(self)

    def close(self) -> None:
        """End the worker (politely if it is idle, by force otherwise) and remove its log."""
        proc, self.proc = self.proc, None
        if self.conn is not None:
            try:
                self.conn.send(("quit",))
            except OSError:
                pass
            self.conn.close()
            self.conn = None
        if proc is not None:
            _end(proc)
        if self._log is not None:
            self._flush_output()
            self._log.close()
            Path(self._log.name).unlink(missing_ok=True)
            self._log = None

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ output
    def _new_output(self) -> str:
        if self._log is None:
            return ""
        try:
            with open(self._log.name, "rb") as f:
                f.seek(self._log_pos)
                data = f.read()
        except OSError:
            return ""
        self._log_pos += len(data)
        text = data.decode("utf-8", "replace")
        self._recent.extend(line for line in text.splitlines() if line.strip())
        return text

    def _flush_output(self) -> str:
        text = self._new_output()
        if text and self.on_output is not None:
            self.on_output(text)
        return text

    # ------------------------------------------------------------------ calls
    def call(self, task: tuple[Any, ...], on_message: OnMessage, budget_s: float | None = None) -> Any:
        """Send ``task``; relay every message to ``on_message`` until the answer, which is returned.

        ``budget_s`` bounds the time before the worker's first ``item`` message (default: the
        opening budget); each item then has the budget it names. Raises :class:`WorkerLost` when
        the worker ends or is ended before the answer, :class:`WorkerError` when it answers that
        the task cannot be done."""
        if self.proc is None:
            self.start()
        assert self.conn is not None and self.proc is not None
        item: Any = ("task", task[0])
        detail: Any = None
        self._recent.clear()
        deadline = time.monotonic() + (budget_s if budget_s is not None else self.open_budget_s)
        budget = budget_s if budget_s is not None else self.open_budget_s
        try:
            self.conn.send(task)
        except OSError:
            return self._lost(item, detail, None)
        while True:
            left = deadline - time.monotonic()
            try:
                ready = self.conn.poll(max(0.0, min(left, 0.5)))
            except OSError:
                return self._lost(item, detail, None)
            if not ready:
                self._flush_output()
                if time.monotonic() >= deadline:
                    return self._lost(item, detail, budget)
                if self.proc.poll() is not None and not self.conn.poll(0):
                    return self._lost(item, detail, None)
                continue
            try:
                msg = self.conn.recv()
            except (EOFError, OSError):
                return self._lost(item, detail, None)
            kind = msg[0]
            if kind == "item":
                item, budget, detail = msg[1], float(msg[2]), msg[3]
                deadline = time.monotonic() + budget
            elif kind == "answer":
                self._flush_output()
                return msg[1]
            elif kind == "error":
                self._flush_output()
                raise WorkerError(msg[1])
            elif kind == "exit":  # the answer came; this worker ends, the next call starts a fresh one
                self._flush_output()
                self.close()
                on_message(msg)
                return msg[2]
            else:
                on_message(msg)

    def _lost(self, item: Any, detail: Any, budget: float | None) -> Any:
        proc = self.proc
        timed_out = budget is not None
        if proc is not None and timed_out:
            _end(proc, term_first=False)
        elif proc is not None:
            try:
                proc.wait(timeout=TERM_GRACE_S)
            except subprocess.TimeoutExpired:
                _end(proc)
        how = f"ran past its {budget:g} s budget" if timed_out else describe_exit(proc.returncode if proc else None)
        self._flush_output()
        tail = list(self._recent)
        self.close()
        raise WorkerLost(item=item, how=how, tail=tail, timed_out=timed_out, detail=detail) from None


def _end(proc: subprocess.Popen[bytes], term_first: bool = True) -> None:
    """End ``proc`` and everything in its process group; wait for it."""
    if proc.poll() is None and term_first:
        try:
            proc.wait(timeout=1.0)  # a worker told to quit ends by itself
        except subprocess.TimeoutExpired:
            _signal_group(proc, signal.SIGTERM)
            try:
                proc.wait(timeout=TERM_GRACE_S)
            except subprocess.TimeoutExpired:
                pass
    if proc.poll() is None:
        _signal_group(proc, signal.SIGKILL)
    proc.wait()


def _signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        try:
            proc.send_signal(sig)
        except ProcessLookupError:
            pass


class InProcess:
    """The same calls answered in this process (no isolation) by the worker module that
    :class:`Worker` would run, imported here by its name: its ``Session().handle(task, send)``."""

    def __init__(self, module: str) -> None:
        import importlib

        self.handle: Callable[[tuple[Any, ...], OnMessage], Any] = importlib.import_module(module).Session().handle
        self.started = 1

    def call(self, task: tuple[Any, ...], on_message: OnMessage, budget_s: float | None = None) -> Any:
        answer: list[Any] = []

        def send(msg: Message) -> None:
            if msg[0] == "answer":
                answer.append(msg[1])
            elif msg[0] == "error":
                raise WorkerError(msg[1])
            elif msg[0] == "exit":
                on_message(msg)
                answer.append(msg[2])
            else:
                on_message(msg)

        self.handle(task, send)
        return answer[0] if answer else None

    def close(self) -> None:
        pass

    def __enter__(self) -> InProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
