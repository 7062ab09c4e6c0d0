"""The work-log records: every measured fact the tool keeps, as pydantic v2 models.

A record is one JSON file under ``logs/``. Eight kinds exist, told apart by ``kind``:

* ``run`` (:class:`Run`): one version of one assignment, checked and timed on one case,
  with the device, the code, the peers timed in the same session and, optionally, a profile;
* ``ceilings`` (:class:`DeviceCeilings`): measured peaks of one device (copy bandwidth,
  matrix-unit rates), under ``logs/devices/``;
* ``sweep`` (:class:`Sweep`): the configurations of a tunable version timed side by side;
* ``crosscheck`` (:class:`CrossCheck`): a version timed by a course's own harness, by
  ``triton.testing.do_bench`` and by ours in one session, under
  ``logs/<assignment>/<version>/crosschecks/``;
* ``reverification`` (:class:`Reverification`): a rewritten version timed in rounds with its earlier
  export, under ``logs/<assignment>/<version>/reverify/``;
* ``probe`` (:class:`ProbeRecord`): what a probe script measured in one session, under
  ``logs/devices/<gpu>/probes/``;
* ``microbench`` (:class:`Microbench`): load latency by working-set size and streaming bandwidth at each
  level of one device, under ``logs/devices/<gpu>/microbench/``;
* ``same_code`` (:class:`SameCode`): the proof that a version's code as a run recorded it and its
  code as the tree holds it later compile to the same thing, under
  ``logs/<assignment>/<version>/same_code/`` (:mod:`reporter.samecode`).

How a record is laid out on disk (schema 2; :mod:`reporter.store` writes it):

* one line of JSON, no indentation;
* a source file is named by its path and sha256 only: its text is kept once, in the source store
  (:mod:`reporter.sources`, ``logs/sources/<sha256>.gz``), however many records ran it;
* the per-sample arrays (:data:`Floats`: a timing's samples and queuing times, the GPU's clocks,
  temperature and power per sample) are packed (:mod:`reporter.packed`): the string ``"f64z:"``
  followed by the base64 of the zlib-compressed little-endian IEEE-754 doubles, every bit of every
  number kept, decoded when first read; the clock event reasons per sample (:data:`ReasonRuns`)
  are run-length coded, ``{"runs": [[12, []], [3, ["sw_power_cap"]]]}``.

Schema 1 (records made before 25 Nov 2026) embedded every source text and wrote the arrays as
JSON lists, indented: those records still load, unchanged, and ``report migrate`` rewrites them
in this layout. In memory both read the same: arrays read as lists of floats, and a
:class:`SourceFile` read from a schema-1 record carries its text (``text``), never written again.

Nothing here touches a GPU, so records load on any machine.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, PlainValidator, field_validator, model_validator

from .packed import FloatArray, read_reason_runs, reason_runs

SCHEMA_VERSION = 2
# the shortest rest (seconds of idle GPU before timing) that counts as timing from a rested card
REST_MIN_S = 1.0


def _unset(value: object) -> bool:
    """A field added after records were committed is left out of the file while it holds nothing, so
    the records made before it keep their layout byte for byte (``report migrate --check``)."""
    return value is None


class Record(BaseModel):
    """Base of every stored model: unknown fields are an error, so a typo or a foreign file
    is reported instead of silently dropped, and a number that is not finite (NaN, ±inf) is
    refused where it is set, so no record is ever written with one."""

    model_config = ConfigDict(extra="forbid", frozen=False, allow_inf_nan=False, validate_assignment=True)


# --------------------------------------------------------------------------- per-sample arrays

Floats = FloatArray
"""A per-sample array of floats: reads as a list, stored packed, decoded on first read (:mod:`reporter.packed`)."""

ReasonRuns = Annotated[list[list[str]], PlainValidator(read_reason_runs),
                       PlainSerializer(reason_runs, when_used="json")]
"""Per sample, a list of names: a list in memory, run-length coded in a stored record."""


# --------------------------------------------------------------------------- device


class DeviceInfo(Record):
    name: str
    slug: str = Field(description="short lowercase GPU label used in file names, e.g. 'h100'")
    compute_capability: str
    sm_count: int
    l2_bytes: int
    memory_bytes: int
    sm_clock_max_mhz: float | None = None
    memory_clock_max_mhz: float | None = None
    driver_version: str | None = None
    cuda_version: str | None = None
    torch_version: str | None = None
    triton_version: str | None = None
    cupy_version: str | None = None
    python_version: str | None = None
    cpu: str | None = None
    platform: str | None = None

    def same_software(self, other: DeviceInfo) -> list[str]:
        """Names of the fields that differ between two devices (empty: comparable)."""
        keys = ["name", "driver_version", "cuda_version", "torch_version", "triton_version", "cupy_version"]
        return [k for k in keys if getattr(self, k) != getattr(other, k)]


class DeviceCeilings(Record):
    """Measured peaks of one device: what the roofline's roofs are drawn from."""

    schema_version: int = SCHEMA_VERSION
    kind: Literal["ceilings"] = "ceilings"
    created_utc: datetime
    device: DeviceInfo
    copy_gbps: float = Field(description="device-to-device copy, bytes read + written per second / 1e9")
    copy_bytes: int
    matmul_tflops: dict[str, float] = Field(description="dtype -> measured dense matmul TFLOP/s")
    matmul_n: int
    notes: list[str] = Field(default_factory=list)

    def ceiling(self, key: str) -> float:
        """Value of a named ceiling: 'copy' in GB/s, 'matmul_<dtype>' in TFLOP/s."""
        if key == "copy":
            return self.copy_gbps
        if key.startswith("matmul_") and key[7:] in self.matmul_tflops:
            return self.matmul_tflops[key[7:]]
        raise KeyError(f"device ceilings have no '{key}' (have: copy, "
                       + ", ".join(f"matmul_{k}" for k in self.matmul_tflops) + ")")


# --------------------------------------------------------------------------- code


class SourceFile(Record):
    """One file of the code a record ran, named by its path and the sha256 of its text (UTF-8).
    The text is in the source store (:func:`reporter.sources.read` is how anything reads it)."""

    path: str = Field(description="path relative to the repository root")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    text: str | None = Field(None, exclude=True, repr=False, description=(
        "the text, in memory only: read from disk when the snapshot was taken, or from a schema-1 record "
        "that embedded it; never written into a record (the source store keeps it)"))

    def __eq__(self, other: object) -> bool:
        """The same file: the same path and sha256 (the text follows from the sha256, whether or not
        it is in memory)."""
        if isinstance(other, SourceFile):
            return (self.path, self.sha256) == (other.path, other.sha256)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


class CodeSnapshot(Record):
    files: list[SourceFile]
    git_commit: str | None = None
    git_dirty: bool | None = None
    config: dict[str, int | float | str | bool] = Field(
        default_factory=dict, description="tunable parameters the version ran with")

    @property
    def digest(self) -> str:
        """One short hash for all files, to tell code versions apart at a glance."""
        import hashlib

        h = hashlib.sha256()
        for f in sorted(self.files, key=lambda f: f.path):
            h.update(f.path.encode() + b"\0" + f.sha256.encode())
        return h.hexdigest()[:12]


# --------------------------------------------------------------------------- check


class CheckResult(Record):
    passed: bool
    exact: bool
    rtol: float | None = None
    atol: float | None = None
    n_elements: int
    mismatches: int
    nan_count: int = 0
    inf_count: int = 0
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    shape_ok: bool = True
    message: str = ""
    seed: int | None = None
    repeats: list[float] = Field(default_factory=list, description=(
        "the assignment's repeat_value (a sum that must not drift, say) of every call of the check, the same input each time: "
        "a value that must be bit-identical from call to call"))

    @property
    def criterion(self) -> str:
        """How this check judged, for people: 'exact', 'rtol 0.01, atol 0.01', or the course's check."""
        if self.by == "check_implementation":
            tol = "" if self.rtol is None else f" and rtol {self.rtol:g}, atol {self.atol:g}"
            return f"the assignment's check_implementation{tol}"
        if self.exact:
            return "exact"
        return f"rtol {self.rtol:g}, atol {self.atol:g}" if self.rtol is not None and self.atol is not None else "—"

    by: Literal["tolerance", "check_implementation"] = Field(
        "tolerance", description="what decided ``passed``: the elementwise tolerance (or exact match) against the "
                                 "reference, or the assignment's check_implementation (a course's own check), "
                                 "with the error figures measured against the reference beside it")


# --------------------------------------------------------------------------- timing


class GpuStateSamples(Record):
    """NVML readings taken after each timed call, parallel to ``TimingStats.samples_ms``."""

    sm_clock_mhz: Floats
    mem_clock_mhz: Floats
    temp_c: Floats
    power_w: Floats
    clock_event_reasons: ReasonRuns = Field(
        description="per sample, NVML's active clock event reasons ('sw_power_cap', 'hw_slowdown', ...)")

    def reasons_seen(self) -> dict[str, int]:
        seen: dict[str, int] = {}
        for names in self.clock_event_reasons:
            for n in names:
                seen[n] = seen.get(n, 0) + 1
        return seen

    def limiting_reasons(self) -> dict[str, int]:
        """:meth:`reasons_seen` without 'gpu_idle', the one reason that does not slow a running kernel."""
        return {k: n for k, n in self.reasons_seen().items() if k != "gpu_idle"}

    def limited_samples(self) -> int:
        """Samples during which any limiting reason was active."""
        return sum(1 for names in self.clock_event_reasons if any(n != "gpu_idle" for n in names))


class TimingStats(Record):
    samples_ms: Floats
    n: int
    mean_ms: float
    std_ms: float
    stderr_ms: float
    median_ms: float
    min_ms: float
    max_ms: float
    quantiles_ms: dict[str, float] = Field(description="'p05', 'p25', 'p75', 'p95' -> ms")
    method: str = Field(description="how each sample was taken, e.g. 'cuda-events'")
    l2_flush: bool
    warmup_reps: int
    ranked: bool = False
    interleaved: bool = Field(False, description="timed in rounds with the other callables of its run or sweep "
                                                 "(one call of each per round, rotating order), not on its own")
    stop_reason: str = Field(description="why repetition stopped: 'stderr' (the standard error under target_rel_stderr "
                                         "of the mean), 'budget' (budget_s spent, see budget_of), 'wall' (wall_s of "
                                         "wall time passed) or 'max_reps'")
    target_rel_stderr: float
    budget_s: float
    budget_of: Literal["calls"] | None = Field(
        None, exclude_if=_unset,
        description="what budget_s bounds: 'calls', the sum of the timed calls' durations (the course's eval.py: "
                    "mean × runs); absent in records made before that rule, where it bounded the wall time")
    min_reps: int | None = Field(None, exclude_if=_unset, ge=1,
                                 description="the fewest timed calls before any stop but max_reps; absent in older records")
    max_reps: int | None = Field(None, exclude_if=_unset, ge=1,
                                 description="the most timed calls; absent in older records")
    wall_s: float | None = Field(None, exclude_if=_unset, gt=0,
                                 description="the wall-time limit of the repetitions; absent in older records")
    min_span_s: float | None = Field(None, exclude_if=_unset, ge=0,
                                     description="the least time the timed calls span before any stop but max_reps; "
                                                 "absent in older records")
    enqueue_ms: Floats | None = Field(
        None, description="per sample, host time from the start event's record to the end event's record "
                          "(queuing the call); absent in records made before it was kept")
    gpu_state: GpuStateSamples | None = Field(
        None, description="per sample, the GPU's clocks, temperature and power read through NVML after the call")
    rest_s: float = Field(0.0, ge=0, description="seconds the GPU was left idle before the warm-up, so that the "
                                                 "timing starts from a rested card; 0 in records made before rests")
    start_temp_c: float | None = Field(None, description="the GPU's temperature after the rest, when known")

    @property
    def rel_stderr(self) -> float:
        return self.stderr_ms / self.mean_ms if self.mean_ms else math.inf

    @property
    def rested(self) -> bool:
        """Timed from a rested card: at least :data:`REST_MIN_S` seconds of idle GPU before the warm-up."""
        return self.rest_s >= REST_MIN_S

    @property
    def way(self) -> str:
        """How the samples were taken, as a comparison must match it: the method, and ranked,
        interleaved, rested or not."""
        return (f"{self.method}{', ranked' if self.ranked else ''}{', interleaved' if self.interleaved else ''}"
                f"{', rested' if self.rested else ''}")

    def timed_like(self, other: TimingStats | None) -> bool:
        """Whether ``other`` was timed the same way. Held samples leave the host's share out, a
        ranked run's fresh inputs let the card cool between calls, interleaved samples share
        the card's states with the others of their run, and a rested run starts from a cool card
        where an unrested one starts from whatever ran before: a speedup across ways measures
        the method or the card, not the code."""
        return (other is not None and self.method == other.method and self.ranked == other.ranked
                and self.interleaved == other.interleaved and self.rested == other.rested)


# --------------------------------------------------------------------------- work model


CeilingKey = Annotated[str, Field(pattern=r"^(copy|matmul_[a-z0-9]+)$")]


class WorkModel(Record):
    """What the problem must do at least: it fixes the derived figures and the roof."""

    flops: float | None = Field(ge=0, description=(
        "floating-point operations the algorithm must do; None where they are not known (a course problem's folder "
        "states no flop count): every rate and roof share that needs them is then unknown, never zero"))
    bytes: float = Field(gt=0, description="bytes that must cross device memory (inputs read once, outputs written once)")
    ceiling: CeilingKey = Field(description="which measured ceiling bounds this work: 'copy' or 'matmul_<dtype>'")
    description: str = ""
    bytes_read: float | None = Field(None, exclude_if=_unset, gt=0, description=(
        "of ``bytes``, those of the inputs (the rest is the output): what a profile's read and written bytes are "
        "normalised by; None in records made before it was kept"))

    @model_validator(mode="after")
    def _known_flops_for_a_compute_roof(self) -> WorkModel:
        if self.flops is None and self.ceiling != "copy":
            raise ValueError(f"ceiling {self.ceiling!r} needs the flops: a work model whose flops are unknown (None) "
                             "is bounded by 'copy' only")
        return self

    @property
    def flops_known(self) -> bool:
        return self.flops is not None

    @property
    def intensity(self) -> float | None:
        return self.flops / self.bytes if self.flops is not None else None


class Derived(Record):
    """Figures that follow from the work model, the median time and the device ceilings."""

    tflops: float | None = Field(description="None where the work model's flops are unknown")
    gbps: float
    arithmetic_intensity: float | None
    ceiling: str
    ceiling_value: float | None = None
    ceiling_unit: str | None = None
    fraction_of_ceiling: float | None = None
    floor_ms: float | None = Field(None, description="the time at the roofline's bound for this work")


def derive(work: WorkModel, time_ms: float, ceilings: DeviceCeilings | None) -> Derived:
    """The figures that follow from one time of the work (the figure: a run's mean)."""
    seconds = time_ms / 1e3
    tflops = work.flops / seconds / 1e12 if work.flops is not None else None
    gbps = work.bytes / seconds / 1e9
    out = Derived(tflops=tflops, gbps=gbps, arithmetic_intensity=work.intensity, ceiling=work.ceiling)
    if ceilings is not None and tflops is None:
        # flops unknown: which roof binds is unknown too, so no share of one and no floor (the copy's would
        # claim a memory-bound problem); the bandwidth the bytes give stands
        return out
    if ceilings is not None:
        copy_floor_ms = work.bytes / (ceilings.copy_gbps * 1e9) * 1e3
        if work.ceiling == "copy":
            out.ceiling_value, out.ceiling_unit = ceilings.copy_gbps, "GB/s"
            out.fraction_of_ceiling = gbps / ceilings.copy_gbps
            out.floor_ms = copy_floor_ms
        else:
            peak = ceilings.ceiling(work.ceiling)
            out.ceiling_value, out.ceiling_unit = peak, "TFLOP/s"
            out.fraction_of_ceiling = tflops / peak  # type: ignore[operator]
            out.floor_ms = max(work.flops / (peak * 1e12) * 1e3, copy_floor_ms)  # type: ignore[operator]
    return out


# --------------------------------------------------------------------------- profile


class Metric(Record):
    value: float | str
    unit: str = ""


class KernelProfile(Record):
    index: int
    name: str
    grid: str | None = None
    block: str | None = None
    metrics: dict[str, Metric] = Field(default_factory=dict)


class Profile(Record):
    status: Literal["ok", "failed", "unavailable"]
    reason: str = ""
    tool: str = "ncu"
    tool_version: str | None = None
    command: list[str] = Field(default_factory=list)
    kernels: list[KernelProfile] = Field(default_factory=list)
    read_with: str | None = Field(None, description="what read the metrics: 'ncu_report' (NVIDIA's module, "
                                  "from the report file), 'ncu --import csv' or 'ncu stdout csv'; None in "
                                  "records made before it was kept")
    report_file: str | None = Field(None, description="the profile's report, gzip-compressed beside the run's "
                                    "record (a name in its folder; gunzip -k gives the .ncu-rep Nsight Compute's "
                                    "UI opens); None when not kept")


# --------------------------------------------------------------------------- builds


class KernelBuild(Record):
    """What the CUDA compiler (ptxas, through NVRTC's ``--ptxas-options=-v``) reported for one
    kernel that a version launched: the resources it gave the kernel and its advisories."""

    kernel: str
    source: str = Field(description="file name of the compiled source, e.g. 'v08_overlap.cu'")
    compiler: str | None = Field(None, description="e.g. 'nvrtc 13.0'")
    arch: str = Field(description="the target, e.g. 'sm_90a'")
    options: str = Field("", description="the compile options and defines, space-separated, without include paths")
    sources: dict[str, str] = Field(default_factory=dict, description="every file the compile read (the source and "
                                    "the headers it reached; path relative to the repository root) -> sha256 of its "
                                    "text; empty in records made before it was kept")
    code_sha256: str | None = Field(
        None, exclude_if=_unset,
        description="sha256 of the kernel's machine code in the cubin that ran (reporter.cuda.sass."
                    "kernel_code_sha256: its SASS, relocations, attributes and resources, by name, without debug "
                    "sections or other kernels); None in records made before it was kept")
    registers: int | None = Field(None, description="registers per thread")
    spill_stores: int = Field(0, description="bytes per thread stored to local memory by register spills")
    spill_loads: int = Field(0, description="bytes per thread loaded back from local memory after spills")
    stack_bytes: int = Field(0, description="stack frame per thread, bytes")
    shared_bytes: int = Field(0, description="static shared memory per block, bytes")
    barriers: int = 0
    advisories: list[str] = Field(default_factory=list, description="ptxas warnings and (C75xx) advisories naming "
                                                                    "this kernel, as ptxas wrote them")
    module_advisories: list[str] = Field(default_factory=list, description="advisories for the kernel's module that "
                                                                           "name no function")
    reported_by: Literal["ptxas", "driver"] = Field(
        "ptxas", description="'ptxas': its -v report in NVRTC's log (spills and advisories known); 'driver': the "
                             "loaded function's attributes, when the log held no report (NVRTC sometimes returns an "
                             "empty one): registers and local memory only, no advisories")
    local_bytes: int | None = Field(None, description="local memory per thread as the driver reports it (spill "
                                                      "slots plus stack frame); set when reported_by is 'driver'")

    @property
    def spills(self) -> bool:
        return self.spill_stores > 0 or self.spill_loads > 0

    @property
    def uses_local_memory(self) -> bool:
        """Spills, or (from the driver's attributes, which cannot tell them apart) local memory at all."""
        return self.spills or bool(self.local_bytes)

    def performance_advisories(self) -> list[str]:
        """The advisories (this kernel's, then its module's) that warn of lost performance ('(C75xx) ...')."""
        return [a for a in self.advisories + self.module_advisories
                if "Performance Loss" in a or re.search(r"\(C75\d\d\)", a)]


# --------------------------------------------------------------------------- runs


class PeerResult(Record):
    name: str
    description: str = ""
    check: CheckResult | None = None
    timing: TimingStats | None = None
    derived: Derived | None = None
    error: str | None = None


class ProbeResult(Record):
    """A probe (:class:`reporter.assignments.Probe`) timed on the case's input, unchecked: what a
    piece of a kernel takes alone. Always timed on the case's own input, one call after another."""

    name: str
    description: str = ""
    timing: TimingStats | None = None
    error: str | None = None


class Measurement(Record):
    """What every measured record (a run, a sweep) says about where and on what it was taken."""

    schema_version: int = SCHEMA_VERSION
    run_id: str = Field(description="the file's stem: <utc-time>_<gpu>_<case>")
    session_id: str = Field(description="records made by one `report run` share it, and their peers")
    assignment: str
    version: str
    case_name: str
    case: dict[str, int | float | str | bool]
    seed: int
    created_utc: datetime
    device: DeviceInfo


class Run(Measurement):
    """One version of one assignment, checked and (if correct) timed on one case."""

    kind: Literal["run"] = "run"
    command: str = ""
    code: CodeSnapshot
    check: CheckResult
    ranked_checks: list[CheckResult] = Field(default_factory=list)
    timing: TimingStats | None = Field(None, description="absent when the check failed")
    work: WorkModel
    derived: Derived | None = None
    ceilings_ref: str | None = Field(None, description="path of the ceilings record the derived figures used")
    peers: list[PeerResult] = Field(default_factory=list)
    probes: list[ProbeResult] = Field(default_factory=list, description="`report run --probes`: pieces of a "
                                      "kernel timed alone on this case, in the same session")
    profile: Profile | None = None
    builds: list[KernelBuild] = Field(
        default_factory=list, description="the compiler's report on each CUDA-source kernel the version launched "
                                          "during its check and timing; empty for Triton/torch code and in records "
                                          "made before it was kept")
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.check.passed and self.timing is not None

    @property
    def median_ms(self) -> float | None:
        return self.timing.median_ms if self.timing else None


class SweepPoint(Record):
    config: dict[str, int | float | str | bool]
    check: CheckResult | None = None
    timing: TimingStats | None = None
    error: str | None = None


class Sweep(Measurement):
    """A tunable version's configurations timed side by side on one case."""

    kind: Literal["sweep"] = "sweep"
    points: list[SweepPoint]
    chosen: dict[str, int | float | str | bool] | None = None
    timing_order: Literal["sequential", "interleaved"] = Field(
        "sequential", description="'sequential': each configuration timed to the end before the next, in SWEEP's "
                                  "order (every sweep recorded before interleaving); 'interleaved': one call of "
                                  "each per round, in a rotating order")

    def best(self) -> SweepPoint | None:
        ok = [p for p in self.points if p.timing is not None and (p.check is None or p.check.passed)]
        return min(ok, key=lambda p: p.timing.mean_ms) if ok else None  # type: ignore[union-attr]


# --------------------------------------------------------------------------- cross-checks


class CourseCase(Record):
    """One line of a course harness's output for one case of its test file."""

    index: int = Field(description="the case's 0-based line in the course's test file, as the harness numbers it")
    spec: str = Field("", description="the test line, as the harness printed it")
    case_name: str | None = Field(None, description="our case with the same parameters, if any")
    status: Literal["pass", "fail"] | None = Field(None, description="test mode: the harness's verdict")
    runs: int | None = None
    mean_ms: float | None = None
    std_ms: float | None = None
    err_ms: float | None = None
    best_ms: float | None = None
    worst_ms: float | None = None
    error: str | None = None


class CourseHarnessRun(Record):
    """One invocation of a course's own ``eval.py`` (``test`` or ``benchmark``) on one submission."""

    mode: str = Field(description="the harness's mode: 'test' or 'benchmark' (the course's eval.py also has 'profile')")
    submission: str = Field(description="what was submitted: 'export of <version>' or 'peer <name> (a shim)'")
    command: list[str]
    returncode: int
    wall_s: float
    verdict: str | None = Field(None, description="the harness's closing 'check:' line: 'pass' or 'fail'")
    cases: list[CourseCase] = Field(default_factory=list)
    output: str = Field(description="everything the harness printed on stdout: the record of the cross-check")
    stderr_tail: str = ""
    started_s: float = Field(0.0, description="seconds from the cross-check's start")


class DoBenchResult(Record):
    case_name: str
    median_ms: float
    warmup_ms: float = Field(description="do_bench's warm-up budget (its own units: milliseconds)")
    rep_ms: float = Field(description="do_bench's repetition budget, milliseconds")
    rest_s: float = Field(0.0, description="idle GPU before the call, as for our rested runs")
    started_s: float = 0.0


class CrossCheckEntry(Record):
    """What each timer said about one callable: a version (``name`` is the version) or a peer."""

    name: str
    peer: bool = False
    course: list[CourseHarnessRun] = Field(default_factory=list)
    do_bench: list[DoBenchResult] = Field(default_factory=list)
    runs: dict[str, str] = Field(default_factory=dict,
                                 description="case name -> id of our own run of it made in this cross-check")
    figures_ms: dict[str, float] = Field(default_factory=dict,
                                         description="case name -> our figure (that run's mean, see "
                                                     "reporter.standing), copied for reading")


class CrossCheck(Record):
    """One session on one card in which a version (and peers) were timed by the course's harness,
    by ``triton.testing.do_bench`` and by our own harness, one after another, each from a rested
    card: the record that a figure is reproducible, or how far apart the timers are."""

    schema_version: int = SCHEMA_VERSION
    kind: Literal["crosscheck"] = "crosscheck"
    run_id: str
    assignment: str
    version: str
    created_utc: datetime
    device: DeviceInfo
    command: str = ""
    course_repo: str | None = Field(None, description="e.g. 'stanford-cs149/asst5-kernels'")
    course_folder: str | None = Field(None, description="the problem folder inside it")
    course_commit: str | None = None
    harness_sha256: dict[str, str] = Field(default_factory=dict,
                                           description="sha256 of the course files that ran (eval.py, utils.py, ...)")
    rest_s: float = 0.0
    entries: list[CrossCheckEntry]
    notes: list[str] = Field(default_factory=list)


# --------------------------------------------------------------------------- re-verifications


class ReverifyCase(Record):
    """One case of a re-verification: the version as it is and as it was, checked and timed in
    the same rounds, and the verdict ``report diff`` gives between them."""

    case_name: str
    after: Run = Field(description="the version's code now")
    before: Run = Field(description="the version as it was: its code is the earlier export's embedded files")
    verdict: str | None = Field(None, description="'same', 'faster' or 'slower' (after against before), as report "
                                                  "diff judges it; None when either was not timed")
    summary: str = Field("", description="the verdict's sentence, as report diff prints it")


class Reverification(Record):
    """A rewrite that must not change what a version runs (a helper moved to a shared header, a
    launcher shared), checked on the card: every case, the rewritten version interleaved in rounds
    with the version as it was, and a verdict per case."""

    schema_version: int = SCHEMA_VERSION
    kind: Literal["reverification"] = "reverification"
    run_id: str
    session_id: str
    assignment: str
    version: str
    created_utc: datetime
    device: DeviceInfo
    command: str = ""
    before_export: str = Field(description="the submission file the earlier version was loaded from, as given")
    before_export_sha256: str
    before_commit: str | None = Field(None, description="the commit the earlier version was exported from")
    cases: list[ReverifyCase]

    @property
    def same(self) -> bool:
        """Every case timed and judged same within noise."""
        return bool(self.cases) and all(c.verdict == "same" for c in self.cases)


# --------------------------------------------------------------------------- probes


class GpuReading(Record):
    """The GPU's state at one moment, read through NVML."""

    sm_clock_mhz: float | None = None
    mem_clock_mhz: float | None = None
    temp_c: float | None = None
    power_w: float | None = None
    clock_event_reasons: list[str] = Field(default_factory=list)


class ProbeRecord(Record):
    """What a probe script (``tools/*_probe.py``) measured in one device session: a question about
    the card, the harness or a piece of a kernel that is not one version's figure (how close an SM
    copy gets to the memcpy, how long the host takes to queue a call). Its results are the
    script's own JSON (``data``); the record says where, when, on what code and by which command
    they were taken. Under ``logs/devices/<gpu>/probes/``, with any other files the script wrote
    beside it (``attachments``)."""

    schema_version: int = SCHEMA_VERSION
    kind: Literal["probe"] = "probe"
    run_id: str = Field(description="the file's stem: <utc-time>_<name>")
    name: str = Field(pattern=r"^[a-z0-9_]+$", description="what the probe asks, short: 'copy_ceiling', 'host_call'; "
                                                           "worklogs bind it as probes.<name>")
    created_utc: datetime
    gpu: str = Field(description="the GPU's short label ('h100'): the folder the record lies in")
    device: DeviceInfo | None = Field(None, description="the device and software; None in records converted from "
                                                        "a probe's output made before probes were records")
    tool: str = Field(description="the script that measured, relative to the repository root; '' where the script "
                                  "was not kept")
    command: str = Field("", description="the command line, as run from the repository root")
    code: CodeSnapshot | None = Field(None, description="the script's source closure (the script, the kernels' "
                                                        "modules it imports and the CUDA sources they build), or, "
                                                        "converted from an older output, only the commit it ran at")
    gpu_before: GpuReading | None = None
    gpu_after: GpuReading | None = None
    description: str = Field("", description="what it measured and how, for people")
    data: dict[str, Any] = Field(description="the script's results, as it wrote them: JSON's own values, every "
                                             "number finite")
    attachments: list[str] = Field(default_factory=list, description="other files of the same probe beside the "
                                                                     "record (names in its folder)")
    notes: list[str] = Field(default_factory=list)

    @field_validator("data")
    @classmethod
    def _plain_json(cls, data: dict[str, Any]) -> dict[str, Any]:
        """JSON's values only, numbers finite: what is written is what reads back (a NaN would be
        written as null, a numpy number not at all)."""
        _check_json(data, "data")
        return data


def _plain(x: Any) -> bool:
    """Whether ``x`` holds JSON's values only, numbers finite (the walk of :func:`_check_json` without
    naming where, which costs a string per element)."""
    if x is None or isinstance(x, bool | str | int):
        return True
    if isinstance(x, float):
        return math.isfinite(x)
    if isinstance(x, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in x.items())
    if isinstance(x, list):
        return all(_plain(v) for v in x)
    return False


def _check_json(x: Any, where: str) -> None:
    if _plain(x):
        return
    _explain_json(x, where)


def _explain_json(x: Any, where: str) -> None:
    """Raise naming the first value of ``x`` that is not plain JSON, with its path."""
    if x is None or isinstance(x, bool | str | int):
        return
    if isinstance(x, float):
        if not math.isfinite(x):
            raise ValueError(f"{where} is {x}: records hold finite numbers only")
        return
    if isinstance(x, dict):
        for k, v in x.items():
            if not isinstance(k, str):
                raise ValueError(f"{where} has the key {k!r}, not a string")
            _explain_json(v, f"{where}.{k}")
        return
    if isinstance(x, list):
        for i, v in enumerate(x):
            _explain_json(v, f"{where}.{i}")
        return
    raise ValueError(f"{where} is a {type(x).__name__}, not a JSON value (convert numpy numbers and arrays with "
                     ".item() and .tolist())")


# --------------------------------------------------------------------------- same code


class PtxComparison(Record):
    """One CUDA build of a run, made from the sources the run recorded and from the tree's, with the
    run's own options, compared kernel by kernel: the PTX, and (in proofs made since it was kept) the
    machine code of the cubin (:func:`reporter.cuda.sass.kernel_code_sha256`), and where the run
    recorded its kernel's machine code and the same compiler made the tree's, that too."""

    source: str = Field(description="the compiled source, path relative to the repository root (the run's side)")
    kernel: str = Field("", description="the kernel the run launched, whose PTX is compared (reporter.samecode."
                                        "kernel_ptx); '' in proofs that compared whole modules")
    options: str = Field(description="the run's compile options as recorded (defines included)")
    before_ptx_sha256: str | None = Field(description="sha256 of the kernel's PTX from the recorded sources; None: "
                                                      "no compile")
    after_ptx_sha256: str | None = Field(description="sha256 of the kernel's PTX from the tree's sources; None: no "
                                                     "compile")
    before_code_sha256: str | None = Field(
        None, exclude_if=_unset,
        description="the kernel's machine code (SASS) built offline from the recorded sources with the run's "
                    "options less -lineinfo (which adds sections, never instructions); None: not compared (proofs "
                    "made before it was kept) or no compile")
    after_code_sha256: str | None = Field(None, exclude_if=_unset, description="the same from the tree's sources")
    recorded_code_sha256: str | None = Field(
        None, exclude_if=_unset,
        description="the machine code the run itself recorded (KernelBuild.code_sha256) when the run's compiler "
                    "is the one that built after_code_sha256; None otherwise")

    @property
    def same(self) -> bool:
        """Both sides give the same machine code, which is the one the run recorded where it recorded
        one; in a proof made before the machine code was kept, the same PTX. Where the machine code
        was compared it decides and the PTX is kept for information only: NVRTC's PTX of one source
        with one set of options is not reproducible for every kernel (the virtual registers it
        numbers can differ from one compile to the next, in fresh processes too, while the machine
        code stays the same: matmul v17's fp16 build gave two PTX hashes in four compiles)."""
        if self.before_code_sha256 is not None or self.after_code_sha256 is not None:
            if self.before_code_sha256 is None or self.before_code_sha256 != self.after_code_sha256:
                return False
            return self.recorded_code_sha256 is None or self.recorded_code_sha256 == self.after_code_sha256
        return self.before_ptx_sha256 is not None and self.before_ptx_sha256 == self.after_ptx_sha256


class PythonComparison(Record):
    """One Python file of either side: the same syntax tree, docstrings aside, is the same program."""

    path: str
    before_sha256: str | None = Field(description="None: the file is not in the recorded code")
    after_sha256: str | None = Field(description="None: the file is not in the tree's code")
    same_tree: bool


class SameCode(Record):
    """A version's code as a run recorded it (``before``) and as the tree held it when this was made
    (``after``): every CUDA build the run made gives the same PTX from both, and every Python file
    of either has the same syntax tree. A run whose code is ``before`` stands for the code ``after``
    (:func:`reporter.samecode.code_status`)."""

    schema_version: int = SCHEMA_VERSION
    kind: Literal["same_code"] = "same_code"
    run_id: str = Field(description="'<utc-time>_<before digest>_<after digest>'")
    assignment: str
    version: str
    created_utc: datetime
    before: CodeSnapshot = Field(description="the code a run recorded (the run named in proven_for first)")
    after: CodeSnapshot = Field(description="the tree's code of the version, with its commit")
    proven_for: list[str] = Field(default_factory=list, description="run ids whose code is `before`")
    compiler: str = Field(description="the compiler that made both sides' PTX, e.g. 'nvrtc 13.0 (offline, no -lineinfo)'")
    builds: list[PtxComparison] = Field(default_factory=list)
    python: list[PythonComparison] = Field(default_factory=list)

    @property
    def same(self) -> bool:
        return all(b.same for b in self.builds) and all(p.same_tree for p in self.python)


# --------------------------------------------------------------------------- micro-benchmarks


class DeviceLimits(Record):
    """What the CUDA runtime says of one device's per-block and per-SM resources, and its functional
    units per SM (from its compute capability): the lines of a course's ``mb`` device block that
    :class:`DeviceInfo` does not hold."""

    max_threads_per_block: int
    max_threads_per_sm: int
    warp_size: int
    shared_bytes_per_block: int = Field(description="without opting in (48 KiB)")
    shared_bytes_per_block_optin: int
    shared_bytes_per_sm: int
    const_bytes: int
    registers_per_block: int
    registers_per_sm: int
    memory_bus_bits: int | None = None
    fp32_lanes_per_sm: int | None = Field(None, description="fp32 FMA units per SM, from the compute capability")
    fp64_lanes_per_sm: int | None = Field(None, description="fp64 FMA units per SM, from the compute capability")


class LatencyPoint(Record):
    """One working-set size of the pointer chase: one thread, each load's address the value the
    previous one returned, one 64-bit pointer per line in a random cyclic order."""

    bytes: int = Field(gt=0, description="the working set: lines × stride")
    stride_bytes: int = Field(gt=0)
    warm_steps: int = Field(ge=0, description="untimed steps first, to bring the set into what holds it")
    steps: int = Field(gt=0, description="timed steps")
    cycles: float = Field(gt=0, description="SM clock cycles per load (clock64)")
    ns: float = Field(gt=0, description="nanoseconds per load (%globaltimer)")


class StreamPoint(Record):
    """One configuration of the streaming load benchmark, timed and (where the profiler ran) profiled."""

    level: Literal["L1", "L2", "DRAM"] = Field(description="the level the footprint is sized for")
    blocks: int = Field(gt=0)
    threads: int = Field(gt=0, description="threads per block")
    vector: Literal[1, 2, 4] = Field(description="floats per load")
    pattern: str = Field(pattern=r"^(s[0-5]|p[1-3])$", description="s<i>: lane τ loads vector τ·2^i of its chunk; "
                         "p<i>: the lane in the low five bits, 2^i distinct 128-byte lines a warp")
    passes: int = Field(gt=0)
    region_bytes: int = Field(gt=0, description="what one block reads in one pass")
    footprint_bytes: int = Field(gt=0, description="the distinct bytes the whole launch reads")
    bytes: int = Field(gt=0, description="bytes the threads loaded (blocks × passes × region): useful bytes")
    samples_ms: list[float] = Field(description="each timed launch, CUDA events")
    block_cycles: float = Field(gt=0, description="median over blocks of the cycles a block took (clock64), "
                                "in the launch timed last")
    profile: KernelProfile | None = Field(None, description="one launch under Nsight Compute; None if not profiled")

    @property
    def label(self) -> str:
        return f"{self.level} {self.blocks} blk V{self.vector} {self.pattern}"


class Microbench(Record):
    """``report device --microbench``: load latency by working-set size, and streaming load bandwidth at
    each level for vector widths and access patterns, on one device in one session, under
    ``logs/devices/<gpu>/microbench/``."""

    schema_version: int = SCHEMA_VERSION
    kind: Literal["microbench"] = "microbench"
    run_id: str = Field(description="the file's stem: the UTC time it started")
    created_utc: datetime
    device: DeviceInfo
    limits: DeviceLimits
    command: str = ""
    code: CodeSnapshot = Field(description="the benchmark's own sources (kernels and host code)")
    gpu_before: GpuReading | None = None
    gpu_after: GpuReading | None = None
    latency: list[LatencyPoint]
    streams: list[StreamPoint]
    profiler: str | None = Field(None, description="the profiler's name and version where it ran")
    profile_status: Literal["ok", "failed", "unavailable", "skipped"] = "skipped"
    profile_reason: str = ""
    notes: list[str] = Field(default_factory=list)


AnyRecord = Annotated[Run | DeviceCeilings | Sweep | CrossCheck | Reverification | ProbeRecord | SameCode | Microbench,
                      Field(discriminator="kind")]

_SLUG = re.compile(r"[^a-z0-9]+")


def gpu_slug(name: str) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'h100'; other names lowercased with dashes."""
    bare = re.sub(r"\b(NVIDIA|GeForce|Tesla)\b", "", name, flags=re.I)
    m = re.search(r"\b([A-Z]{1,2}\d{2,4}[A-Z]?)\b", bare, flags=re.I)
    if m:
        return m.group(1).lower()
    return _SLUG.sub("-", bare.lower()).strip("-") or "gpu"
