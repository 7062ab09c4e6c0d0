"""What the harness tells its caller while it works: it prints nothing and formats no result itself.

The harness measures and writes records; what a person sees (each run's leaderboard block, the
profile's metric block, the table of runs, a sweep's table, a line when a version raises or a worker
is lost, a step that takes a while, the progress bars) is drawn by the command that called it, from
the hooks below; the text lives in :mod:`reporter.render.text` (:class:`~reporter.render.text.TerminalEvents`).
:class:`Silent`, the default, ignores every one (a cross-check's or a re-verification's inner runs
show nothing of their own). A worker process has no terminal: its :class:`~reporter.harness.worker.Session`
sends what it says to the parent, whose events show it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Literal, Protocol

from ..records import DeviceInfo, Run, Sweep

#: how a line matters: ``step`` names a step that takes a while (drawing a case's input, measuring
#: ceilings), ``info`` a fact, ``warning`` something that went wrong and was dealt with, ``error``
#: a version, peer or worker that failed (its record says so too)
Level = Literal["step", "info", "warning", "error"]


class Progress(Protocol):
    """The progress bars the harness drives (rich's ``Progress`` has these methods, and the worker's
    stand-in forwards them to the parent's)."""

    def add_task(self, description: str, total: float | None = 100.0, **fields: Any) -> Any:
        """A new bar; returns its id."""

    def update(self, task: Any, **fields: Any) -> None:
        """``completed=``, ``description=``, ``visible=`` of bar ``task``."""

    def advance(self, task: Any, advance: float = 1.0) -> None: ...

    def remove_task(self, task: Any) -> None: ...


class Events(Protocol):
    def run_written(self, run: Run, device: DeviceInfo) -> None:
        """A run's record is on disk (checked, timed or failed)."""

    def profiled(self, run: Run) -> None:
        """``run.profile`` has just been attached (status ok or not)."""

    def runs_done(self, runs: list[Run]) -> None:
        """Every run of ``report run`` is written."""

    def sweep_written(self, sweep: Sweep) -> None:
        """A sweep's record is on disk."""

    def say(self, text: str, level: Level = "info", detail: str = "") -> None:
        """A line for the person (plain text, never markup); ``detail`` (a traceback) goes under it as it is."""

    def output(self, text: str) -> None:
        """What a worker process wrote on its stdout or stderr (a library's warning, a kernel's printf), as it came."""

    def status(self, text: str) -> AbstractContextManager[Callable[[str], None]]:
        """A step that takes a while, shown until the block ends; the block gets a function that
        changes the text (a profiler saying which kernel it is on)."""

    def progress(self) -> AbstractContextManager[Progress]:
        """The progress bars of a run, a sweep or a re-verification, shown while the block runs."""


class NoProgress:
    """Bars nobody sees."""

    def __init__(self) -> None:
        self._next = 0

    def add_task(self, description: str, total: float | None = 100.0, **fields: Any) -> int:
        self._next += 1
        return self._next

    def update(self, task: Any, **fields: Any) -> None:
        pass

    def advance(self, task: Any, advance: float = 1.0) -> None:
        pass

    def remove_task(self, task: Any) -> None:
        pass


class Silent:
    """Hears every event and says nothing."""

    def run_written(self, run: Run, device: DeviceInfo) -> None:
        pass

    def profiled(self, run: Run) -> None:
        pass

    def runs_done(self, runs: list[Run]) -> None:
        pass

    def sweep_written(self, sweep: Sweep) -> None:
        pass

    def say(self, text: str, level: Level = "info", detail: str = "") -> None:
        pass

    def output(self, text: str) -> None:
        pass

    @contextmanager
    def status(self, text: str) -> Iterator[Callable[[str], None]]:
        yield lambda text: None

    @contextmanager
    def progress(self) -> Iterator[Progress]:
        yield NoProgress()
