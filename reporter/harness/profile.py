"""Nsight Compute as a subprocess: one call of one version, selected by its NVTX range, into a
:class:`~reporter.records.Profile`.

ncu writes its report file (``--export``); the metrics are read from that file with NVIDIA's
``ncu_report`` module (``extras/python`` of the Nsight Compute install) where the install ships
it, otherwise with ``ncu --import <file> --csv --page raw``, and, when no file was written, from
the CSV ncu printed. The record says which (``Profile.read_with``). With a ``keep_report`` path
the file is kept beside the run's record, for Nsight Compute's UI; without, it is deleted.

The harness pushes nested ranges ``<assignment>/<vNN>/<phase>`` (see :mod:`.nvtx_ranges`);
:mod:`.profile_target` runs the version once outside any range (compilation, warm-up) and
once inside ``<assignment>/<vNN>/profile``, so ``--nvtx-include "<assignment>/<vNN>/profile/"``
profiles exactly the kernels of one warm call.

Nothing here raises for a missing or failing profiler: the result is then a Profile with
``status`` 'unavailable' (no ncu, no permission to read counters) or 'failed' (anything
else), and ``reason`` says why in one line, so a run always goes on.

No torch or CUDA import: the profiled process is the one that touches the GPU.
"""

from __future__ import annotations

import csv
import importlib
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..ncu_metrics import LAUNCH_METRICS, PROFILE_METRICS
from ..records import KernelProfile, Metric, Profile

from .events import Events, Progress, Silent

if TYPE_CHECKING:
    from ..assignments import Assignment, Version
    from ..records import Run

#: environment variable naming the ncu executable when it is not on PATH
NCU_ENV = "REPORT_NCU"
_NCU_PLACES = ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/ncu")
DEFAULT_TIMEOUT_S = 1800.0

# columns of `--page raw` that are not metrics
ID_COL, NAME_COL, BLOCK_COL, GRID_COL = "ID", "Kernel Name", "Block Size", "Grid Size"
_MISSING = {"", "n/a", "N/A", "-", "--"}


class NcuOutputError(ValueError):
    """ncu's output holds no CSV we can read; the message says what was found instead."""


# --------------------------------------------------------------------------- units


# ncu prints base units with SI prefixes ("Mbyte", "usecond", "Gbyte/second", "cycle/nsecond").
# Stored values use ncu's base units: time in ns, everything else unprefixed, rates per second.
_SI = {"": 1.0, "K": 1e3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_TIME_S = {"nsecond": 1e-9, "ns": 1e-9, "usecond": 1e-6, "us": 1e-6, "msecond": 1e-3, "ms": 1e-3,
           "second": 1.0, "s": 1.0, "sec": 1.0}
_HZ = {"hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9}
_BASE_WORDS = ("byte", "cycle", "inst", "sector", "request", "warp", "thread", "wavefront", "op", "flop",
               "block", "register", "instruction", "transaction")


def _simple_unit(part: str) -> tuple[float, str]:
    """('Mbyte') -> (1e6, 'byte'); time words -> seconds; unknown units pass unscaled."""
    p = part.strip()
    if p in _TIME_S:
        return _TIME_S[p], "second"
    if p.lower() in _HZ:
        return _HZ[p.lower()], "cycle/second"
    for word in _BASE_WORDS:
        for plural in (word, word + "s"):
            if p.endswith(plural) and p[: -len(plural)] in _SI:
                return _SI[p[: -len(plural)]], word
    return 1.0, p


def normalize_unit(unit: str) -> tuple[float, str]:
    """Factor and base unit for an ncu unit string: value_in_base = value × factor.

    'usecond' -> (1e3, 'ns'); 'Gbyte' -> (1e9, 'byte'); 'Tbyte/second' -> (1e12, 'byte/second');
    'cycle/nsecond' -> (1e9, 'cycle/second'); '%' and '' unchanged."""
    u = unit.strip()
    if u in ("", "%"):
        return 1.0, u
    if "/" in u:
        num, den = u.split("/", 1)
        fn, un = _simple_unit(num)
        fd, ud = _simple_unit(den)
        return fn / fd, f"{un}/{ud}"
    f, base = _simple_unit(u)
    if base == "second":  # durations stay in ncu's own base, nanoseconds
        return f / 1e-9, "ns"
    return f, base


def parse_number(raw: str) -> float | str | None:
    """'1,234.5' -> 1234.5; '', 'n/a', 'nan' or 'inf' -> None; anything not numeric stays text."""
    s = raw.strip().strip('"')
    if s in _MISSING:
        return None
    try:
        v = float(s.replace(",", ""))
    except ValueError:
        return s
    return v if math.isfinite(v) else None  # ncu's 'nan' or 'inf': no figure (a record holds finite numbers)


def parse_metric(raw: str, unit: str) -> Metric | None:
    v = parse_number(raw)
    if v is None:
        return None
    if isinstance(v, str):
        return Metric(value=v, unit=unit.strip())
    factor, base = normalize_unit(unit)
    return Metric(value=v * factor, unit=base)


# --------------------------------------------------------------------------- CSV


def _is_metric_column(name: str) -> bool:
    # every ncu metric is <unit>__<counter>[.rollup...]; the launch columns have no '__'
    return "__" in name


def _rows(text: str) -> list[list[str]]:
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("==")]
    return [row for row in csv.reader(lines) if row]


def parse_ncu_csv(text: str, keep: Callable[[str], bool] | None = None) -> list[KernelProfile]:
    """Kernels of ``ncu --csv --page raw`` output (stdout as is: ``==PROF==``/``==WARNING==``
    lines and the application's own prints may surround the table).

    ``keep`` chooses which metric columns to store (default: all). ncu adds many columns to
    the raw page beyond those requested (rollups, device attributes, launch statistics)."""
    rows = _rows(text)
    start = next((i for i, r in enumerate(rows) if r[0].strip() == ID_COL and NAME_COL in r), None)
    if start is None:
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "(empty)")
        raise NcuOutputError(f"no ncu CSV header (\"ID\",...,\"Kernel Name\",...) in the output; "
                             f"it begins: {first[:160]}")
    header: list[str] = []
    units: list[str] = []
    kernels: list[KernelProfile] = []
    for row in rows[start:]:
        ident = row[0].strip()
        if ident == ID_COL and NAME_COL in row:  # a header, first or repeated: its units row follows
            header = [h.strip() for h in row]
            units = [""] * len(header)
            continue
        if ident == "":  # the units row has an empty ID
            units = (row + [""] * len(header))[: len(header)]
            continue
        if not ident.isdigit():  # stray text between or after tables
            continue
        kernels.append(_kernel(int(ident), (row + [""] * len(header))[: len(header)], header, units, keep))
    return kernels


def _kernel(index: int, cells: list[str], header: list[str], units: list[str],
            keep: Callable[[str], bool] | None) -> KernelProfile:
    col = {name: i for i, name in enumerate(header)}

    def cell(name: str) -> str | None:
        return (cells[col[name]].strip() or None) if name in col else None

    metrics = {name: m for i, name in enumerate(header)
               if _is_metric_column(name) and (keep is None or keep(name))
               and (m := parse_metric(cells[i], units[i])) is not None}
    return KernelProfile(index=index, name=cell(NAME_COL) or f"kernel {index}", grid=cell(GRID_COL),
                         block=cell(BLOCK_COL), metrics=metrics)


# --------------------------------------------------------------------------- report files

REPORT_SUFFIX = ".ncu-rep"
#: how a kept report is stored: gzip (a two-kernel H100 profile: 2.3 MB as ncu writes it, 190 kB
#: compressed); ``gunzip -k`` gives the file Nsight Compute's UI opens
KEPT_SUFFIX = REPORT_SUFFIX + ".gz"


#: where Nsight Compute installs live, one folder per version ('2025.3.1'), when ncu is CUDA's wrapper script
INSTALL_ROOTS = (Path("/opt/nvidia/nsight-compute"),)


def ncu_report_dir(ncu: str, version: str | None = None, roots: Sequence[Path] = INSTALL_ROOTS) -> Path | None:
    """``extras/python`` (holding ``ncu_report.py``) of the Nsight Compute install ``ncu`` belongs
    to: beside the executable; for CUDA's ``bin/ncu`` wrapper, ``nsight-compute-*`` beside ``bin``, or
    the install under ``roots`` whose folder names ``version`` (``ncu --version``: '2025.3.1.0' is
    in '2025.3.1/'). None when none is found: then the report is read as CSV."""
    real = Path(ncu).resolve()
    candidates = [real.parent / "extras" / "python",
                  *sorted(real.parent.parent.glob("nsight-compute*/extras/python"), reverse=True)]
    if version:
        candidates += [d / "extras" / "python" for root in roots for d in sorted(Path(root).glob("*"), reverse=True)
                       if version == d.name or version.startswith(d.name + ".")]
    return next((c for c in candidates if (c / "ncu_report.py").is_file()), None)


def _dims(action: object, prefix: str) -> str | None:
    """'(x, y, z)' from ``<prefix>_dim_{x,y,z}`` as ncu's CSV prints it, or None."""
    parts = []
    for axis in "xyz":
        m = action.metric_by_name(f"{prefix}_dim_{axis}")  # type: ignore[attr-defined]
        if m is None:
            return None
        parts.append(str(int(m.as_uint64())))
    return f"({', '.join(parts)})"


def _raw_value(ncu_report: object, m: object) -> str:
    """A metric's value as text, as the CSV would give it: text for a string metric, every digit
    of an integer, ``repr`` of a double."""
    metric = getattr(ncu_report, "IMetric", None)
    kind = m.kind()  # type: ignore[attr-defined]
    if kind == getattr(metric, "ValueKind_STRING", object()):
        return m.as_string()  # type: ignore[attr-defined]
    integers = {getattr(metric, f"ValueKind_{k}", object()) for k in ("UINT32", "UINT64")}
    if kind in integers:
        return str(m.as_uint64())  # type: ignore[attr-defined]
    return repr(m.as_double())  # type: ignore[attr-defined]


def read_report_module(path: Path, module_dir: Path, keep: Callable[[str], bool] | None = None) -> list[KernelProfile]:
    """Kernels of an ``.ncu-rep`` read with NVIDIA's ``ncu_report`` module from ``module_dir``."""
    if str(module_dir) not in sys.path:
        sys.path.insert(0, str(module_dir))
    ncu_report = importlib.import_module("ncu_report")
    ctx = ncu_report.load_report(str(path))
    demangled = getattr(getattr(ncu_report, "IAction", None), "NameBase_DEMANGLED", None)
    kernels: list[KernelProfile] = []
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for i in range(rng.num_actions()):
            action = rng.action_by_idx(i)
            metrics = {}
            for name in sorted(action.metric_names()):
                if not _is_metric_column(name) or (keep is not None and not keep(name)):
                    continue
                m = action.metric_by_name(name)
                unit = m.unit() if hasattr(m, "unit") else ""
                parsed = parse_metric(_raw_value(ncu_report, m), unit or "")
                if parsed is not None:
                    metrics[name] = parsed
            name = action.name(demangled) if demangled is not None else action.name()
            kernels.append(KernelProfile(index=len(kernels), name=name, grid=_dims(action, "launch__grid"),
                                         block=_dims(action, "launch__block"), metrics=metrics))
    return kernels


def read_report_module_isolated(path: Path, module_dir: Path, wanted: Iterable[str] | None = None,
                                timeout_s: float = 300.0) -> list[KernelProfile]:
    """:func:`read_report_module` in a child process: NVIDIA's native ``_ncu_report`` can crash the
    process that loads it (on the H100 node it segfaulted inside a process that had torch and CUDA
    loaded), and a crash there must cost the reader, not the run. Raises ``NcuOutputError`` when
    the child fails, so that the CSV import reads the file instead."""
    import json

    cmd = [sys.executable, "-m", "reporter.harness.profile", "--read-report", str(path), str(module_dir),
           *sorted(wanted or ())]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                         *filter(None, [env.get("PYTHONPATH")])])
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False, env=env)
    except subprocess.TimeoutExpired as e:
        raise NcuOutputError(f"ncu_report did not read {path.name} within {timeout_s:.0f} s") from e
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or [f"exit {out.returncode}"])[-1]
        raise NcuOutputError(f"ncu_report could not read {path.name} (exit {out.returncode}): {last[:200]}")
    return [KernelProfile.model_validate(k) for k in json.loads(out.stdout)]


def _read_report_main(argv: list[str]) -> int:
    """``python -m reporter.harness.profile --read-report <file> <module dir> [metric ...]``: the
    kernels as JSON on stdout (every metric when none is named)."""
    import json

    path, module_dir, *wanted = argv
    keep = set(wanted).__contains__ if wanted else None
    kernels = read_report_module(Path(path), Path(module_dir), keep)
    print(json.dumps([k.model_dump() for k in kernels]))
    return 0


def read_report_csv(path: Path, ncu: str, keep: Callable[[str], bool] | None = None,
                    timeout_s: float = 600.0) -> list[KernelProfile]:
    """Kernels of an ``.ncu-rep`` printed by ``ncu --import <file> --csv --page raw``."""
    out = subprocess.run([ncu, "--import", str(path), "--csv", "--page", "raw", "--print-units", "base"],
                         capture_output=True, text=True, timeout=timeout_s, check=False)
    if out.returncode != 0:
        raise NcuOutputError(f"ncu --import {path.name} exited {out.returncode}: "
                             f"{(out.stderr or out.stdout).strip().splitlines()[-1:] or ''}")
    return parse_ncu_csv(out.stdout, keep=keep)


def read_report(path: Path, ncu: str, wanted: Iterable[str] | None = None, version: str | None = None
                ) -> tuple[list[KernelProfile], str]:
    """The kernels of a report file and what read them: ``ncu_report`` where the install ships
    it (and it loads, in a child process), else ``ncu --import`` as CSV. ``wanted``: the metrics to
    keep (default all); ``version``: ``ncu --version``'s, to find the install behind a wrapper script."""
    wanted = set(wanted) if wanted is not None else None
    keep = wanted.__contains__ if wanted is not None else None
    module_dir = ncu_report_dir(ncu, version)
    if module_dir is not None:
        try:
            return read_report_module_isolated(path, module_dir, wanted), "ncu_report"
        except (NcuOutputError, ValueError, OSError):  # the child crashed or the module lacks an API: NVIDIA's
            pass                                       # CSV still reads the file
    return read_report_csv(path, ncu, keep), "ncu --import csv"


# --------------------------------------------------------------------------- failures


def _error_lines(text: str) -> list[str]:
    return [ln.strip() for ln in text.splitlines() if ln.lstrip().startswith("==ERROR==")]


def _last_exception_line(text: str) -> str | None:
    """The last 'SomeError: message' line of a Python traceback, if the output has one."""
    for ln in reversed(text.splitlines()):
        s = ln.strip()
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b", s):
            return s
    return None


def classify_failure(returncode: int, stdout: str, stderr: str) -> tuple[Literal["failed", "unavailable"], str]:
    """Status and a one-line reason for an ncu run that produced no usable table."""
    both = stdout + "\n" + stderr
    if "ERR_NVGPUCTRPERM" in both:
        return "unavailable", ("no permission to read GPU performance counters (ERR_NVGPUCTRPERM): run as root "
                               "or load the driver with NVreg_RestrictProfilingToAdminUsers=0")
    if m := re.search(r"Failed to find metric[^\n]*", both):
        return "failed", f"ncu rejected a metric: {m.group(0).strip()}"
    if "application returned an error code" in both:
        exc = _last_exception_line(stderr) or _last_exception_line(stdout)
        code = re.search(r"error code \((\-?\d+)\)", both)
        where = f" (exit code {code.group(1)})" if code else ""
        return "failed", f"the profiled process failed{where}: {exc or 'see its output'}"
    if "No kernels were profiled" in both:
        return "failed", ("ncu profiled no kernels: the NVTX range matched nothing (is the nvtx package or "
                          "torch.cuda.nvtx available to the target, and did it launch any kernel?)")
    errors = _error_lines(both)
    if errors:
        return "failed", errors[0].removeprefix("==ERROR==").strip()
    exc = _last_exception_line(stderr)
    if exc:
        return "failed", f"the profiled process failed: {exc}"
    return "failed", f"ncu exited with code {returncode} and printed no kernel table"


# --------------------------------------------------------------------------- running ncu


def find_ncu() -> str | None:
    """REPORT_NCU, else ncu on PATH, else the usual CUDA install places."""
    env = os.environ.get(NCU_ENV)
    if env:
        return env if (Path(env).is_file() or shutil.which(env)) else None
    found = shutil.which("ncu")
    if found:
        return found
    for p in _NCU_PLACES:
        if Path(p).is_file():
            return p
    # the newest of several installs: their folders are named by version
    installed = [*sorted(Path("/opt/nvidia/nsight-compute").glob("*/ncu"), reverse=True),
                 *sorted(Path("/usr/local").glob("cuda*/bin/ncu"), reverse=True)]
    return str(installed[0]) if installed else None


def ncu_version(ncu: str) -> str | None:
    """'2025.3.1.0' from ``ncu --version``; None when it cannot be told."""
    try:
        out = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"Version\s+([0-9][0-9.]*)", out.stdout + out.stderr)
    return m.group(1) if m else None


def nvtx_filter(assignment: str, version_short: str, phase: str = "profile") -> str:
    """The push/pop range path of one phase of one version, as ``--nvtx-include`` takes it."""
    return f"{assignment}/{version_short}/{phase}/"


def ncu_command(ncu: str, *, assignment: str, version: str, version_short: str, case: str, root: Path,
                metrics: Sequence[str] = PROFILE_METRICS, python: str | None = None,
                export: Path | None = None) -> list[str]:
    return [
        ncu,
        *(["--export", str(export), "--force-overwrite"] if export is not None else []),
        "--nvtx", "--nvtx-include", nvtx_filter(assignment, version_short),
        # clocks as the harness sees them (boost), not ncu's locked base clock
        "--clock-control", "none",
        # ncu's default, stated because the timing cross-check explains gaps with it
        "--cache-control", "all",
        # base units keep every digit (auto scaling prints '1.61 Gbyte')
        "--print-units", "base",
        "--csv", "--page", "raw",
        "--metrics", ",".join(metrics),
        python or sys.executable, "-m", "reporter.harness.profile_target",
        assignment, version, case, "--root", str(root),
    ]


@dataclass
class ProfileOptions:
    timeout_s: float = DEFAULT_TIMEOUT_S
    metrics: tuple[str, ...] = PROFILE_METRICS
    ncu: str | None = None  # default: find_ncu()
    extra_env: dict[str, str] = field(default_factory=dict)
    keep_report: Path | None = None  # where the .ncu-rep goes (beside the run's record); None: not kept


@dataclass
class _Completed:
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool


def _run_streaming(cmd: list[str], *, cwd: Path, env: dict[str, str], timeout_s: float,
                   on_line: Callable[[str], None]) -> _Completed:
    """Run cmd, handing each output line to on_line as it comes (ncu reports each kernel it
    profiles), and collect both streams; kill the process group past the timeout."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            errors="replace", start_new_session=True)
    chunks: dict[str, list[str]] = {"out": [], "err": []}

    def pump(stream, key: str) -> None:
        for line in stream:
            chunks[key].append(line)
            on_line(line.rstrip("\n"))

    threads = [threading.Thread(target=pump, args=(proc.stdout, "out"), daemon=True),
               threading.Thread(target=pump, args=(proc.stderr, "err"), daemon=True)]
    for t in threads:
        t.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, 9)  # ncu and the profiled python together; only our own group
        except OSError:
            proc.kill()
        proc.wait()
    for t in threads:
        t.join(timeout=10)
    return _Completed(proc.returncode, "".join(chunks["out"]), "".join(chunks["err"]), timed_out)


_PROFILING = re.compile(r'==PROF== Profiling "([^"]+)"')


def profile_version(repo_root: Path, a: Assignment, v: Version, case_name: str, *,
                    options: ProfileOptions | None = None, events: Events | None = None,
                    progress: Progress | None = None) -> Profile:
    """Profile one warm call of version ``v`` on ``case_name`` under ncu. Never raises for
    profiler trouble: the Profile's status and reason say what happened."""
    opts = options or ProfileOptions()
    ncu = opts.ncu or find_ncu()
    if ncu is None:
        return Profile(status="unavailable", tool="ncu",
                       reason=f"Nsight Compute (ncu) was not found on PATH; install it or set {NCU_ENV}")
    version = ncu_version(ncu)
    with tempfile.TemporaryDirectory(prefix="ncu-") as tmp:
        # ncu writes its report here; it is moved beside the record (keep_report) only once read
        export = Path(tmp) / f"profile{REPORT_SUFFIX}"
        cmd = ncu_command(ncu, assignment=a.name, version=v.name, version_short=v.short, case=case_name,
                          root=repo_root, metrics=opts.metrics, export=export)
        prof = _profile_run(cmd, ncu, version, repo_root, v, case_name, opts, events or Silent(), progress)
        if prof.status == "ok" and opts.keep_report is not None and export.is_file():
            _keep(export, opts.keep_report)
            prof.report_file = opts.keep_report.name
        return prof


def _keep(report: Path, dest: Path) -> None:
    """The report at ``dest``, gzip-compressed when ``dest`` ends in .gz, written atomically."""
    import gzip

    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(f".{dest.name}.{os.getpid()}.part")
    try:
        with open(report, "rb") as src, (gzip.open(part, "wb") if dest.suffix == ".gz" else open(part, "wb")) as out:
            shutil.copyfileobj(src, out)
        os.replace(part, dest)
    finally:
        part.unlink(missing_ok=True)


def _profile_run(cmd: list[str], ncu: str, version: str | None, repo_root: Path, v: Version, case_name: str,
                 opts: ProfileOptions, events: Events, progress: Progress | None) -> Profile:
    """Run ncu's command, then read what it measured: its report file, else its printed CSV."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(repo_root), *filter(None, [env.get("PYTHONPATH")])])
    env.update(opts.extra_env)
    label = f"ncu {v.short} · {case_name}"
    seen: list[str] = []

    def on_line(line: str, update: Callable[[str], None]) -> None:
        m = _PROFILING.search(line)
        if m:
            seen.append(m.group(1))
            update(f"{label}: profiled {len(seen)} kernel(s), last {m.group(1)[:40]}")

    t0 = time.monotonic()
    try:
        if progress is not None:  # inside `report run`'s live progress: a pulsing task, not a second live display
            task = progress.add_task(f"{label}: starting", total=None)
            try:
                done = _run_streaming(cmd, cwd=repo_root, env=env, timeout_s=opts.timeout_s,
                                      on_line=lambda ln: on_line(ln, lambda d: progress.update(task, description=d)))
            finally:
                progress.remove_task(task)
        else:
            with events.status(f"{label}: starting (profiling replays each kernel many times)") as status:
                done = _run_streaming(cmd, cwd=repo_root, env=env, timeout_s=opts.timeout_s,
                                      on_line=lambda ln: on_line(ln, status))
    except OSError as e:
        return Profile(status="unavailable", tool="ncu", tool_version=version, command=cmd,
                       reason=f"cannot start ncu ({ncu}): {e.strerror or e}")
    export = Path(cmd[cmd.index("--export") + 1]) if "--export" in cmd else None
    report: tuple[list[KernelProfile], str] | None = None
    if export is not None and export.is_file() and done.returncode == 0 and not done.timed_out:
        wanted = set(opts.metrics) | set(LAUNCH_METRICS)
        try:
            report = read_report(export, ncu, wanted=wanted, version=version)
        except (NcuOutputError, OSError, subprocess.SubprocessError):
            report = None  # the printed CSV, if any, is read below
    return profile_from_output(done.returncode, done.stdout, done.stderr, tool_version=version, command=cmd,
                               requested=opts.metrics, timed_out_after_s=opts.timeout_s if done.timed_out else None,
                               elapsed_s=time.monotonic() - t0, from_report=report)


def profile_from_output(returncode: int, stdout: str, stderr: str, *, tool_version: str | None = None,
                        command: list[str] | None = None, requested: Sequence[str] | None = None,
                        timed_out_after_s: float | None = None, elapsed_s: float | None = None,
                        from_report: tuple[list[KernelProfile], str] | None = None) -> Profile:
    """The Profile for one finished ncu run, from its exit code and output, or from its report
    file's kernels and what read them (``from_report``) when there were some. With ``requested``
    only those metrics (and :data:`LAUNCH_METRICS`) are kept; without, every column."""

    def result(status: Literal["ok", "failed", "unavailable"], reason: str,
               kernels: list[KernelProfile] | None = None, read_with: str | None = None) -> Profile:
        return Profile(status=status, reason=reason, tool="ncu", tool_version=tool_version,
                       command=list(command or []), kernels=kernels or [], read_with=read_with)

    if timed_out_after_s is not None:
        return result("failed", f"ncu did not finish within {timed_out_after_s:.0f} s and was stopped")
    took = f"; ncu took {elapsed_s:.0f} s" if elapsed_s is not None else ""
    if returncode == 0 and from_report is not None and from_report[0]:
        kernels, how = from_report
        return result("ok", f"{len(kernels)} kernel(s) profiled{took}", kernels, read_with=how)
    wanted = set(requested or ()) | set(LAUNCH_METRICS)
    try:
        kernels = parse_ncu_csv(stdout, keep=wanted.__contains__ if requested else None)
    except NcuOutputError as e:
        status, reason = classify_failure(returncode, stdout, stderr)
        if returncode == 0 and reason.startswith("ncu exited"):
            reason = str(e)
        return result(status, reason)
    if returncode != 0:
        # a table and a failing exit: the numbers may be of a partial call; keep none
        return result(*classify_failure(returncode, stdout, stderr))
    if not kernels:
        return result(*classify_failure(returncode, stdout, stderr + "\nNo kernels were profiled"))
    return result("ok", f"{len(kernels)} kernel(s) profiled{took}", kernels, read_with="ncu stdout csv")


def profile_into_run(run: Run, repo_root: Path, a: Assignment, v: Version, *, options: ProfileOptions | None = None,
                     events: Events | None = None, progress: Progress | None = None) -> Profile:
    """Profile the run's version and case and attach the result to ``run.profile``. How the
    profile's duration compares with the run's own timing is analysis
    (:func:`reporter.analysis.diagnose.timing_crosscheck`), read from the record by whoever shows it."""
    try:
        prof = profile_version(repo_root, a, v, run.case_name, options=options, events=events, progress=progress)
    except Exception as e:  # a bug here must cost the profile, not the timed run
        prof = Profile(status="failed", tool="ncu", reason=f"profiling raised {type(e).__name__}: {e}")
    run.profile = prof
    return prof


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "--read-report":
        sys.exit(_read_report_main(sys.argv[2:]))
    sys.exit("usage: python -m reporter.harness.profile --read-report <file.ncu-rep> <ncu_report dir> [metric ...]")
