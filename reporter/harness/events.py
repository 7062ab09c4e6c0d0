"""What the harness tells its caller while it works, so that it never formats a result itself.

The harness measures and writes records; what a person sees of them (the leaderboard block of each
run, the profile's metric block, the table of runs, a sweep's table) is text that lives in
:mod:`reporter.render.text`, printed by the command that called the harness. The harness calls
the hooks below at those moments; :class:`Silent`, the default, ignores them (a cross-check's or a
re-verification's inner runs print nothing of their own).
"""

from __future__ import annotations

from typing import Protocol

from ..records import DeviceInfo, Run, Sweep


class Events(Protocol):
    def run_written(self, run: Run, device: DeviceInfo) -> None:
        """A run's record is on disk (checked, timed or failed)."""

    def profiled(self, run: Run) -> None:
        """``run.profile`` has just been attached (status ok or not)."""

    def runs_done(self, runs: list[Run]) -> None:
        """Every run of ``report run`` is written."""

    def sweep_written(self, sweep: Sweep) -> None:
        """A sweep's record is on disk."""


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
