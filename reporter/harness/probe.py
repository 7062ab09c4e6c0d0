"""Writing a probe's results as a record (:class:`reporter.records.ProbeRecord`).

A probe script (``tools/*_probe.py``) asks one question of the card or the harness and answers it
with its own JSON. This module turns that answer into a record beside the others, under
``logs/devices/<gpu>/probes/<utc-time>_<name>.json.gz``: the device block, the GPU's state before and
after, the command, the script's source closure and the commit, so that a worklog can cite (and
bind) a probe as it cites a run::

    from reporter.harness.probe import ProbeSession

    session = ProbeSession("host_call", __file__)      # reads the device and the GPU's state now
    ...                                                # measure
    path = session.write(data, description="...")      # the record, its texts in the source store

The code closure is what the script ran, read when it writes: the script itself and every module
it imported from ``kernels/`` with that module's own closure (:func:`reporter.closure.source_closure`:
its CUDA sources and headers). The reporter package is named by the commit, as a run's is.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .. import store
from ..assignments import find_repo_root, snapshot_of
from ..closure import ClosureError, source_closure
from ..cuda import includes
from ..records import CodeSnapshot, GpuReading, ProbeRecord, SourceFile
from .device import device_info
from .gpu_state import open_sampler, reason_names


def gpu_reading() -> GpuReading | None:
    """The GPU's clocks, temperature, power and clock event reasons now; None without NVML."""
    sampler = open_sampler()
    if sampler is None:
        return None
    s = sampler.sample()
    return GpuReading(sm_clock_mhz=s["sm_clock_mhz"], mem_clock_mhz=s["mem_clock_mhz"], temp_c=s["temp_c"],
                      power_w=s["power_w"], clock_event_reasons=reason_names(int(s["reasons"])))


def tool_closure(tool: Path, repo_root: Path, cuda_sources: Sequence[Path] = (),
                 modules: dict[str, Any] | None = None) -> list[Path]:
    """The files a probe script ran: the script, the CUDA sources it builds itself with every header
    they include, then every module it imported from the project's ``kernels/`` folder (from
    ``sys.modules``) with that module's source closure."""
    kernels = (repo_root / "kernels").resolve()
    out: list[Path] = [tool.resolve()]
    for src in cuda_sources:
        out.append(Path(src).resolve())
        out.extend(inc.path for inc in includes(Path(src)))
    for mod in list((modules if modules is not None else sys.modules).values()):
        f = getattr(mod, "__file__", None)
        if not f:
            continue
        p = Path(f).resolve()
        if p.suffix != ".py" or not p.is_relative_to(kernels):
            continue
        try:
            out.extend(source_closure(p).paths())
        except ClosureError:
            out.append(p)
    return list(dict.fromkeys(out))


class ProbeSession:
    """One probe's session: created before it measures, written once after."""

    def __init__(self, name: str, tool: str | Path, logs: Path | None = None,
                 cuda_sources: list[Path] | None = None) -> None:
        self.name = name
        self.tool = Path(tool).resolve()
        self.cuda_sources = list(cuda_sources or [])
        self.repo_root = find_repo_root(self.tool.parent)
        self.logs = logs or self.repo_root / "logs"
        self.started = datetime.now(UTC)
        self.device = device_info()
        self.before = gpu_reading()
        self.command = " ".join(shlex.quote(a) for a in [Path(sys.executable).name, *sys.argv])

    def write(self, data: dict[str, Any], *, description: str, attachments: dict[str, bytes] | None = None,
              notes: list[str] | None = None) -> Path:
        """Write the record (and ``attachments``, other files of this probe, beside it); returns its path.
        Results that are no record (a NaN, a numpy number) are kept as they are in ``<id>_unsaved.json``
        beside where the record would be, and the error says so."""
        snap = snapshot_of(tool_closure(self.tool, self.repo_root, self.cuda_sources), self.repo_root)
        files, commit, dirty = snap.files, snap.git_commit, snap.git_dirty
        run_id = f"{store.utc_stamp(self.started)}_{self.name}"
        names = [f"{run_id}_{k}" for k in (attachments or {})]
        try:
            record = self._record(run_id, files, commit, dirty, data, description, names, notes)
        except ValidationError as e:  # the measurement is done: keep it where a person finds it, then say why
            kept = store.probes_folder(self.logs, self.device.slug) / f"{run_id}_unsaved.json"
            store.write_atomic(kept, json.dumps(data, indent=1, default=repr))
            raise ValueError(f"the probe's results are not a record ({e.errors()[0]['msg']}); kept as they are in "
                             f"{kept}") from None
        path = store.probe_path(self.logs, record)
        for name, blob in zip(names, (attachments or {}).values(), strict=True):
            store.write_atomic(path.parent / name, blob)
        return store.save(record, path, logs=self.logs)

    def _record(self, run_id: str, files: list[SourceFile], commit: str | None, dirty: bool | None,
                data: dict[str, Any], description: str, names: list[str], notes: list[str] | None) -> ProbeRecord:
        return ProbeRecord(
            run_id=run_id, name=self.name, created_utc=self.started, gpu=self.device.slug, device=self.device,
            tool=self.tool.relative_to(self.repo_root.resolve()).as_posix(), command=self.command,
            code=CodeSnapshot(files=files, git_commit=commit, git_dirty=dirty), gpu_before=self.before,
            gpu_after=gpu_reading(), description=description, data=data, attachments=names, notes=list(notes or []))
