"""What the parent of `report run` / `report sweep` and its worker pass each other, in one place.

The parent (:mod:`reporter.harness.run`) orchestrates and writes the records; the worker
(:mod:`reporter.harness.worker`) checks and times. Neither imports the other: the parent reaches
the worker by its module name (:data:`WORKER_MODULE`, run as ``python -m`` or, with
``--no-isolate``, imported by name in the parent's process), and everything that crosses between
them is defined here: the options of a run, what opens a session in a worker, the key of a sweep's
configurations that stands for all of them, and the skeleton record a version starts from (the
worker names it when it starts a version; the parent completes it when the worker is lost).
What crosses is pickled, so these classes are importable under this module's name on both sides.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .. import store
from ..assignments import Assignment, Version
from ..records import CheckResult, DeviceCeilings, DeviceInfo, Run
from .timing import StoppingRule

#: the module the worker process runs (``python -m``); the parent names it, never imports it
WORKER_MODULE = "reporter.harness.worker"

#: seconds a version (a peer, a probe, a sweep's configuration) gets on a case, its compile and its
#: timing included, before it is taken for hung and its worker process killed
DEFAULT_TIMEOUT_S = 300.0

#: the key of a sweep's ``skip`` that stands for every configuration not named in it
ALL_CONFIGS = -1


@dataclass
class RunOptions:
    ranked: bool = False
    rule: StoppingRule = field(default_factory=StoppingRule)
    peers: bool = True
    remeasure_ceilings: bool = False
    profile: bool = False  # re-run each checked version once under Nsight Compute (see .profile)
    profile_timeout_s: float = 1800.0
    hold: bool = False  # hold the stream until each timed call is queued (see .hold)
    interleave: bool = False  # time versions and peers of a case in rounds together (see worker._run_case_interleaved)
    logs: Path | None = None  # where records go; a profile's .ncu-rep is kept beside its run's record there
    probes: bool = False  # also time the assignment's PROBES on each case (see worker._time_probes)
    write: bool = True  # False: a quick look, nothing written under logs/ (ceilings included)
    isolate: bool = True  # run the versions in a worker process whose crash or hang loses only its version
    timeout_s: float = DEFAULT_TIMEOUT_S  # each version's (peer's, probe's) budget on a case, compile included


@dataclass
class OpenParams:
    """What a worker needs to serve one ``report run`` or ``report sweep``."""

    repo_root: Path
    kernels: Path
    assignment: str
    logs: Path
    opts: RunOptions
    session: str
    command: str
    ceilings: tuple[str, DeviceCeilings] | None = None  # known from an earlier worker of the run
    budget_s: float = 300.0  # each version's (or peer's, probe's, configuration's) budget on a case
    needs_ceilings: bool = True  # a sweep does without (it derives nothing from them)
    extra: dict[str, Any] = field(default_factory=dict)


def command_line() -> str:
    return "report " + " ".join(shlex.quote(x) for x in sys.argv[1:])


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


def new_run(a: Assignment, v: Version, mod: Any, case_name: str, case: dict, info: DeviceInfo, session: str,
            command: str, repo_root: Path, ceilings_ref: str) -> Run:
    """A run record for one version on one case, not checked yet."""
    return Run(run_id=f"{store.utc_stamp()}_{info.slug}_{case_name}", session_id=session,
               assignment=a.name, version=v.name, case_name=case_name, case=dict(case), seed=int(case["seed"]),
               created_utc=datetime.now(timezone.utc), command=command, device=info,
               code=v.snapshot(repo_root, config_of(mod, case)),
               check=CheckResult(passed=False, exact=bool(getattr(a.spec.TOLERANCE, "exact", False)), n_elements=0, mismatches=0,
                                 message="not run"),
               work=a.spec.work_model(**case), ceilings_ref=ceilings_ref)
