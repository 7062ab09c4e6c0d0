"""The names worklog.md may bind: ``{{ v03.ms }}``, ``{{ v03.speedup_over('v02') }}``,
``{{ v03.dram_throughput_pct }}``, ``{{ peers.sdpa_cudnn.ms }}``, ``{{ best.short }}``...

``ms`` is a version's figure (reporter.standing: the mean of the run that stands for it), and
``speedup_over``, ``tflops``, ``gbps``, ``roof_pct`` and ``x_from_floor`` follow from it;
``median_ms``, ``min_ms`` and the rest describe the same run's samples.

Every value is a :class:`Number` that prints with sensible precision, so prose never carries
a typed figure. Anything that does not exist raises :class:`BindingError`, which the
renderer turns into "file:line: ..." and a failed build.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

from .. import store
from ..records import DeviceCeilings, PeerResult, ProbeRecord, ProbeResult, Run, Sweep, derive
from . import keys
from .summary import AssignmentSummary, VersionSummary


class BindingError(Exception):
    pass


class Number(float):
    """A float that prints with 4 significant figures (3 decimals under 1, thousands separators).

    ``key`` and ``unit``, when set, say what the number stands for in the report's consistency check
    (reporter.render.ledger): 'fig:v05_persistent:benchmark' in 'ms', 'cmp:v05:v04:benchmark' as a
    'speedup'. Arithmetic on it gives a plain float, which is not checked."""

    def __new__(cls, value: float, digits: int = 4, *, key: str | None = None, unit: str = "") -> Number:
        obj = super().__new__(cls, value)
        obj.digits = digits  # type: ignore[attr-defined]
        obj.key = key  # type: ignore[attr-defined]
        obj.unit = unit  # type: ignore[attr-defined]
        return obj

    def __str__(self) -> str:
        return fmt_number(float(self), self.digits)  # type: ignore[attr-defined]

    __html__ = __str__  # jinja's autoescape prints it as is


def fmt_number(x: float, digits: int = 4) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if x == 0:
        return "0"
    mag = math.floor(math.log10(abs(x)))
    decimals = max(0, digits - 1 - mag)
    s = f"{x:,.{decimals}f}"
    return s


class _Facts:
    _what = "value"

    def __getattr__(self, name: str) -> Any:  # called only for missing attributes
        if name.startswith("__"):
            raise AttributeError(name)
        raise BindingError(f"{self._what} has no '{name}' (known: {', '.join(self.known())})")

    def known(self) -> list[str]:
        return sorted(n for n in dir(type(self)) if not n.startswith("_") and n != "known")


def _in_unit(ms_value: float, unit: str, key: str, what: str) -> Number:
    """A time in milliseconds as a marked Number in ``unit`` ('ms' or 'µs')."""
    if unit not in ("ms", "µs"):
        raise BindingError(f"{what}: unit is 'ms' or 'µs', not {unit!r}")
    return Number(ms_value * (1e3 if unit == "µs" else 1.0), key=key, unit=unit)


def _need(value: float | None, what: str, key: str | None = None, unit: str = "") -> Number:
    if value is None:
        raise BindingError(f"{what} is not recorded")
    return Number(value, key=key, unit=unit)


class TimingFacts(_Facts):
    def __init__(self, run: Run | None, label: str, ceilings: DeviceCeilings | None = None) -> None:
        self._run = run
        self._what = label
        self._ceilings = ceilings

    def _t(self):
        if self._run is None or self._run.timing is None:
            raise BindingError(f"{self._what} has no timed run on the benchmark case")
        return self._run.timing

    def _key(self) -> str | None:
        """What this run's mean stands for in the consistency check: a run of its own (a figure: VersionFacts)."""
        return keys.run(self._run.run_id) if self._run is not None else None

    @property
    def ms(self) -> Number:
        """The figure: the run's mean (see reporter.standing)."""
        return Number(self._t().mean_ms, key=self._key(), unit="ms")

    @property
    def us(self) -> Number:
        return Number(self._t().mean_ms * 1e3, key=self._key(), unit="µs")

    @property
    def median_ms(self) -> Number:
        return Number(self._t().median_ms)

    @property
    def median_us(self) -> Number:
        return Number(self._t().median_ms * 1e3)

    @property
    def mean_ms(self) -> Number:
        return Number(self._t().mean_ms, key=self._key(), unit="ms")

    @property
    def stderr_ms(self) -> Number:
        return Number(self._t().stderr_ms, 2)

    @property
    def min_ms(self) -> Number:
        return Number(self._t().min_ms)

    @property
    def max_ms(self) -> Number:
        return Number(self._t().max_ms)

    @property
    def n(self) -> int:
        return self._t().n

    @property
    def p05_ms(self) -> Number:
        return Number(self._t().quantiles_ms["p05"])

    @property
    def p95_ms(self) -> Number:
        return Number(self._t().quantiles_ms["p95"])

    @property
    def method(self) -> str:
        """How the samples were taken: 'cuda-events' or 'cuda-events+hold'."""
        return self._t().method

    @property
    def enqueue_ms(self) -> Number:
        """Median host time to queue one call (start event to end event), where it was kept."""
        q = self._t().enqueue_ms
        if not q:
            raise BindingError(f"{self._what} kept no host queuing times (recorded before they were)")
        return Number(statistics.median(q))

    def _peer_timing(self, name: str):
        """A peer's timing in this same run (so under the same conditions)."""
        if self._run is None:
            raise BindingError(f"{self._what} has no run")
        for p in self._run.peers:
            if p.name == name and p.timing is not None:
                return p.timing
        have = ", ".join(p.name for p in self._run.peers if p.timing) or "none"
        raise BindingError(f"{self._what}: no timed peer '{name}' in this run (have: {have})")

    def peer_ms(self, name: str) -> Number:
        """A peer's figure (its mean) timed in this same run."""
        key = keys.peer(self._run.run_id, name) if self._run is not None else None
        return Number(self._peer_timing(name).mean_ms, key=key, unit="ms")

    def peer_us(self, name: str) -> Number:
        """:meth:`peer_ms` in microseconds (for figures under a millisecond, as the tables print them)."""
        key = keys.peer(self._run.run_id, name) if self._run is not None else None
        return Number(self._peer_timing(name).mean_ms * 1e3, key=key, unit="µs")

    def peer_median_ms(self, name: str) -> Number:
        """A peer's median timed in this same run."""
        return Number(self._peer_timing(name).median_ms)

    @property
    def enqueue_corr(self) -> Number:
        """Pearson correlation of the samples with the host's queuing times: near 1 when the GPU
        waited for the host inside the timed window."""
        t = self._t()
        if not t.enqueue_ms or len(t.enqueue_ms) < 3:
            raise BindingError(f"{self._what} kept no host queuing times")
        return Number(statistics.correlation(t.samples_ms, t.enqueue_ms), 3)

    @property
    def minus_enqueue_ms(self) -> Number:
        """Median of (sample − host queuing time): what is left of a sample once the host's part is taken out."""
        t = self._t()
        if not t.enqueue_ms:
            raise BindingError(f"{self._what} kept no host queuing times")
        return Number(statistics.median(a - b for a, b in zip(t.samples_ms, t.enqueue_ms)))

    def _state(self):
        g = self._t().gpu_state
        if g is None:
            raise BindingError(f"{self._what} has no NVML readings (pynvml absent, or recorded before they were)")
        return g

    def _sm_clocks(self) -> list[float]:
        clocks = list(self._state().sm_clock_mhz)
        if not clocks:
            raise BindingError(f"{self._what} has NVML readings but no SM clock among them")
        return clocks

    @property
    def sm_clock_min_mhz(self) -> Number:
        return Number(min(self._sm_clocks()))

    @property
    def sm_clock_max_mhz(self) -> Number:
        return Number(max(self._sm_clocks()))

    @property
    def sm_clock_median_mhz(self) -> Number:
        """The SM clock NVML read during the run's samples, their median: the clock a card at its power
        cap settles to under the kernel, which the minimum and maximum (the dips and the first samples)
        do not say."""
        return Number(statistics.median(self._sm_clocks()))

    @property
    def mem_clock_min_mhz(self) -> Number:
        return Number(min(self._state().mem_clock_mhz))

    @property
    def mem_clock_max_mhz(self) -> Number:
        return Number(max(self._state().mem_clock_mhz))

    @property
    def clock_event_samples(self) -> int:
        """Samples during which NVML reported any clock event reason other than idle."""
        return self._state().limited_samples()

    def _derived(self):
        if self._run is None or self._run.timing is None:
            raise BindingError(f"{self._what} has no derived figures")
        if self._ceilings is not None:  # from the figure, as the report derives them
            return derive(self._run.work, self._run.timing.mean_ms, self._ceilings)
        if self._run.derived is None:
            raise BindingError(f"{self._what} has no derived figures")
        return self._run.derived

    @property
    def tflops(self) -> Number:
        t = self._derived().tflops
        if t is None:
            raise BindingError(f"{self._what}: the work model gives no flop count, so there is no TFLOP/s")
        return Number(t)

    @property
    def gbps(self) -> Number:
        return Number(self._derived().gbps)

    @property
    def roof_pct(self) -> Number:
        """Share of the measured ceiling (matmul peak or copy bandwidth), in percent."""
        return _need(None if self._derived().fraction_of_ceiling is None
                     else 100 * self._derived().fraction_of_ceiling, f"{self._what}.roof_pct")

    @property
    def floor_ms(self) -> Number:
        return _need(self._derived().floor_ms, f"{self._what}.floor_ms")

    @property
    def x_from_floor(self) -> Number:
        return Number(self._t().mean_ms / float(self.floor_ms), 3)


    def _check(self):
        run = self.__dict__.get("_run")
        return run.check if run is not None else None

    def _check_field(self, field: str, what: str):  # type: ignore[no-untyped-def]
        check = self._check()
        value = getattr(check, field, None) if check is not None else None
        if value is None:
            raise BindingError(f"{self._what}: no check with {what} recorded")
        return value

    @property
    def max_abs_error(self) -> float:
        """The check of the run (a peer: of its result in the run): the largest absolute difference from
        the reference on the run's input."""
        return self._check_field("max_abs_error", "an error")

    @property
    def mismatches(self) -> int:
        """The check of the run: how many elements fell outside the tolerance (0 when it passed)."""
        return self._check_field("mismatches", "its mismatches")

    @property
    def n_elements(self) -> int:
        """The check of the run: how many elements it compared."""
        return self._check_field("n_elements", "its element count")

    @property
    def registers(self) -> int:
        """Registers a thread of the run's CUDA kernel as ptxas gave them (the most of its kernels' builds)."""
        run = getattr(self, "_run", None)  # a peer's or a probe's facts have no run of their own
        regs = [b.registers for b in (run.builds if run is not None else []) if b.registers is not None]
        if not regs:
            raise BindingError(f"{self._what}: the run recorded no CUDA build")
        return max(regs)


class PeerFacts(TimingFacts):
    def __init__(self, peer: PeerResult) -> None:
        self._peer = peer
        self._what = f"peer '{peer.name}'"

    def _check(self):
        return self._peer.check

    def _key(self) -> str | None:
        return None  # which run timed it is not known here

    def _t(self):
        if self._peer.timing is None:
            raise BindingError(f"{self._what} was not timed ({self._peer.error or 'no timing'})")
        return self._peer.timing

    def _derived(self):
        if self._peer.derived is None:
            raise BindingError(f"{self._what} has no derived figures")
        return self._peer.derived


class ProbeFacts(TimingFacts):
    """A probe timed in a version's run (``{{ v07.probe('probe_read_w16').us }}``): its timing only;
    a probe computes no answer, so it has no derived figures."""

    def __init__(self, probe: ProbeResult, owner: str) -> None:
        self._probe = probe
        self._what = f"{owner}'s probe '{probe.name}'"

    def _key(self) -> str | None:
        return None

    def _t(self):
        if self._probe.timing is None:
            raise BindingError(f"{self._what} was not timed ({self._probe.error or 'no timing'})")
        return self._probe.timing

    def _derived(self):
        raise BindingError(f"{self._what}: a probe has a time, no derived figures")


def _config_names(sw: Sweep) -> list[str]:
    """Each point's configuration as a worklog names it: 'STAGES=3 CLUSTER=2', in the sweep's order."""
    return [" ".join(f"{k}={v}" for k, v in p.config.items()) for p in sw.points]


class VersionFacts(TimingFacts):
    def __init__(self, v: VersionSummary, summary: AssignmentSummary) -> None:
        super().__init__(v.bench, v.short, summary.ceilings)
        self._v = v
        self._s = summary
        self._pinned = False  # True for a version bound to one of its runs by at()

    def at(self, run_id: str) -> VersionFacts:
        """This version with one of its earlier benchmark runs (by id or unique prefix) in place of
        the newest, for prose written about that run: ``{% set v05p = v05.at('20261122T0219') %}``.
        ``speedup_over`` another version then compares with that version's run of the same session."""
        label = f"{self.short}.at('{run_id}')"
        pinned = VersionFacts(self._v, self._s)
        pinned._run = self._find(run_id, label)
        pinned._what = label
        pinned._pinned = True
        return pinned

    def _key(self) -> str | None:
        if self._run is not None and self._run is self._v.bench:
            return keys.fig(self._v.name, self._v.benchmark_case)
        return super()._key()

    def _find(self, run_id: str, label: str) -> Run:
        found = [r for r in self._v.all_runs if r.run_id.startswith(run_id)]
        if len(found) != 1:
            ids = ", ".join(r.run_id for r in self._v.all_runs[-6:])
            raise BindingError(f"{label} matches {len(found)} runs (recent: {ids})")
        return found[0]

    @property
    def name(self) -> str:
        return self._v.name

    @property
    def short(self) -> str:
        return self._v.short

    @property
    def headline_case(self) -> str:
        """The case its figure (``ms``) is taken on: the first benchmark case it runs (CASES_WHERE)."""
        return self._v.benchmark_case

    def speedup_over(self, other: str) -> Number:
        """How many times faster this version is than another version or a peer (×): another version by
        the one comparison (reporter.analysis.compare: their figures when one session timed both, else one
        session's pair, as the report prints it); a peer from this version's own run when it timed that
        peer the same way."""
        mine = float(self.ms)
        pinned = self._run is not self._v.bench
        try:
            them = self._s.get(other)
            if pinned:  # pinned by at(): the other version's run of that session
                return Number(self._same_session(them, other) / mine, 3)
            from .compare import compare_versions

            c = compare_versions(self._v, them)
            if c is None and self._v.common_case(them) is None:
                raise BindingError(f"speedup_over('{other}'): {self.short} and {other} run no benchmark case in "
                                   f"common (CASES_WHERE), so they are not compared")
            if c is None:
                raise BindingError(f"speedup_over('{other}'): {other} or {self.short} has no figure on the case")
            return Number(c.speedup, 3, key=keys.cmp(self._v.name, them.name, c.case), unit="speedup")
        except KeyError:
            own = next((p for p in (self._run.peers if self._run else []) if p.name == other and p.timing
                        and self._run.timing and self._run.timing.timed_like(p.timing)), None)  # type: ignore[union-attr]
            peer = own or self._s.peer(other)
            if peer is None:
                raise BindingError(f"speedup_over('{other}'): no version or peer named '{other}'") from None
            theirs = float(PeerFacts(peer).ms)
        key = keys.cmp(self._v.name, other, self._v.benchmark_case) if own is not None and not pinned else None
        return Number(theirs / mine, 3, key=key, unit="speedup")

    def _same_session(self, them: VersionSummary, label: str) -> float:
        """The time of ``them`` in the session of this (pinned) run, timed the same way."""
        r = self._run
        assert r is not None and r.timing is not None
        found = [x for x in them.all_runs if x.session_id == r.session_id and x.case_name == r.case_name
                 and x.timing is not None and x.timing.timed_like(r.timing)]
        if not found:
            raise BindingError(f"{self._what}.speedup_over('{label}'): {label} was not timed the same way in "
                               f"session {r.session_id}")
        return max(found, key=lambda x: x.created_utc).timing.mean_ms  # type: ignore[union-attr]

    def case(self, case_name: str) -> TimingFacts:
        run = self._v.runs.get(case_name)
        if run is None:
            raise BindingError(f"{self.short} has no run on case '{case_name}' (have: {', '.join(self._v.runs)})")
        return TimingFacts(run, f"{self.short}.case('{case_name}')", self._s.ceilings)

    def ranked(self, case_name: str | None = None, held: bool | None = None) -> TimingFacts:
        """The newest --ranked run (fresh input every repetition) on a case, default the benchmark;
        ``held=True``/``False`` picks the newest one timed with/without ``--hold``."""
        case_name = case_name or self._v.benchmark_case
        runs = [r for r in self._v.all_runs if r.case_name == case_name and r.timing and r.timing.ranked
                and (held is None or r.timing.method.endswith("+hold") == held)]
        if not runs:
            kind = "" if held is None else (" held" if held else " plain")
            raise BindingError(f"{self.short} has no{kind} --ranked run on case '{case_name}'")
        return TimingFacts(max(runs, key=lambda r: r.created_utc), f"{self.short}.ranked('{case_name}')")

    def held(self, case_name: str | None = None) -> TimingFacts:
        """The newest run timed with ``--hold`` (not ranked) on a case, default the benchmark."""
        return self._by_method(case_name, True)

    def plain(self, case_name: str | None = None) -> TimingFacts:
        """The newest run timed with plain events (not ranked) on a case, default the benchmark."""
        return self._by_method(case_name, False)

    def _by_method(self, case_name: str | None, held: bool) -> TimingFacts:
        case_name = case_name or self._v.benchmark_case
        runs = [r for r in self._v.all_runs if r.case_name == case_name and r.timing and not r.timing.ranked
                and r.timing.method.endswith("+hold") == held]
        label = f"{self.short}.{'held' if held else 'plain'}('{case_name}')"
        if not runs:
            raise BindingError(f"{label}: no such run")
        return TimingFacts(max(runs, key=lambda r: r.created_utc), label)

    def probe(self, name: str, case_name: str | None = None) -> ProbeFacts:
        """A probe timed in this version's newest run that has probes, on a case (default the
        benchmark): ``{{ v07.probe('probe_read_w16').us }}`` beside ``{{ v07.probe_run().us }}``.
        On a pinned version (``v07.at(run_id)``), a probe of that run, of that run's case."""
        run = self._probe_run(case_name)
        found = next((p for p in run.probes if p.name == name), None)
        if found is None:
            raise BindingError(f"{self.short}.probe('{name}'): not among {', '.join(p.name for p in run.probes)}")
        return ProbeFacts(found, self.short)

    def probe_run(self, case_name: str | None = None) -> TimingFacts:
        """The version's own timing in the run its probes come from (same session, same card)."""
        return TimingFacts(self._probe_run(case_name), f"{self.short}.probe_run()", self._s.ceilings)

    def _probe_run(self, case_name: str | None) -> Run:
        if self._pinned:
            run = self._run
            if case_name not in (None, run.case_name) or not run.probes:
                why = "has no probes" if not run.probes else f"is on case '{run.case_name}', not '{case_name}'"
                raise BindingError(f"{self._what}: the pinned run {run.run_id} {why}")
            return run
        case_name = case_name or self._v.benchmark_case
        runs = [r for r in self._v.all_runs if r.case_name == case_name and r.probes]
        if not runs:
            raise BindingError(f"{self.short} has no run with probes on case '{case_name}' "
                               f"(report run <assignment> -v {self.short} -c {case_name} --probes)")
        return max(runs, key=lambda r: r.created_utc)

    def run(self, run_id: str) -> TimingFacts:
        """A specific run of this version by id (or a unique prefix), e.g. an earlier session's."""
        label = f"{self.short}.run('{run_id}')"
        return TimingFacts(self._find(run_id, label), label)

    def metric(self, name: str, kernel: int | None = None) -> Number:
        """A profiler metric of the benchmark run, summed over kernels (or of one kernel)."""
        run = self._v.profiled_run()
        if run is None or run.profile is None:
            raise BindingError(f"{self.short} has no profile on the benchmark case")
        vals = [k.metrics[name].value for k in run.profile.kernels
                if name in k.metrics and (kernel is None or k.index == kernel)]
        nums = [float(v) for v in vals if isinstance(v, (int, float))]
        if not nums:
            raise BindingError(f"{self.short}: metric '{name}' is not in the profile")
        return Number(sum(nums) if name.endswith(".sum") else max(nums))

    def homework(self, case_name: str | None = None) -> dict[str, Number]:
        """The LSU EE 7722 columns of the version's newest profile on a case (default its benchmark case),
        as the report's profile table prints them (reporter.analysis.metrics.homework_figures): keys
        ``itr``, ``issue_pct``, ``sw``, ``bxw``, ``n_rd``, ``n_wr``, ``l1_l2_gbps``, ``imb_pct``."""
        from .metrics import homework_figures

        case = case_name or self._v.benchmark_case
        run = self._v.profiled_run(case)
        if run is None or run.profile is None:
            raise BindingError(f"{self.short} has no profile on case '{case}'")
        h = homework_figures(run.profile.kernels, run.work)
        out = {"itr": h.insts_per_iteration, "issue_pct": h.issue_pct, "sw": h.sectors_per_request,
               "bxw": h.conflicts_per_load, "n_rd": h.norm_read, "n_wr": h.norm_write, "l1_l2_gbps": h.l1_l2_gbps,
               "imb_pct": h.imbalance_pct}
        missing = [k for k, v in out.items() if v is None]
        if missing:
            raise BindingError(f"{self.short}.homework('{case}'): the profile lacks the counters of {', '.join(missing)}")
        return {k: Number(float(v)) for k, v in out.items()}  # type: ignore[arg-type]

    def metric_gb(self, name: str, kernel: int | None = None) -> Number:
        """A byte-count metric in GB (1e9 bytes)."""
        return Number(float(self.metric(name, kernel)) / 1e9)

    @property
    def dram_throughput_pct(self) -> Number:
        return self.metric("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed")

    @property
    def compute_throughput_pct(self) -> Number:
        return self.metric("sm__throughput.avg.pct_of_peak_sustained_elapsed")

    @property
    def sweep_configs(self) -> int:
        if self._v.sweep is None:
            raise BindingError(f"{self.short} has no recorded sweep")
        return len(self._v.sweep.points)

    @property
    def sweep_best(self) -> str:
        return self.sweep_choice()

    def _sweep(self, at: str | None, label: str) -> Sweep:
        if at is None:
            if self._v.sweep is None:
                raise BindingError(f"{label}: {self.short} has no recorded sweep")
            return self._v.sweep
        found = [s for s in self._v.all_sweeps if s.run_id.startswith(at)]
        if len(found) != 1:
            ids = ", ".join(s.run_id for s in self._v.all_sweeps[-6:]) or "none"
            raise BindingError(f"{label} matches {len(found)} sweeps (recent: {ids})")
        return found[0]

    def sweep_choice(self, at: str | None = None) -> str:
        """The fastest configuration of the newest sweep (or of the sweep whose id starts with ``at``),
        as 'STAGES=3, CLUSTER=2'."""
        label = f"{self.short}.sweep_choice({'' if at is None else repr(at)})"
        best = self._sweep(at, label).best()
        if best is None:
            raise BindingError(f"{label}: the sweep has no timed point")
        return ", ".join(f"{k}={v}" for k, v in best.config.items())

    def crosscheck(self, at: str | None = None) -> CrossCheckFacts:
        """The newest cross-check of this version on the report's GPU (or the one whose id starts with ``at``)."""
        found = [c for c in self._s.crosschecks if c.version == self._v.name
                 and (at is None or c.run_id.startswith(at))]
        label = f"{self.short}.crosscheck({'' if at is None else repr(at)})"
        if not found:
            raise BindingError(f"{label}: no such cross-check of {self._v.name} on this GPU")
        runs = {r.run_id: r for v in self._s.versions for r in v.all_runs}
        return CrossCheckFacts(found[-1], runs, label)

    def sweep_ties(self, at: str | None = None) -> str:
        """The configurations the newest sweep (or the one whose id starts with ``at``) cannot tell
        apart from its fastest, fastest first, as 'STAGES=3 CLUSTER=2; STAGES=2 CLUSTER=2' (the
        fastest alone when it is measurably ahead): the same test as `report diff`."""
        from .sweep import config_name, tied_with_fastest

        label = f"{self.short}.sweep_ties({'' if at is None else repr(at)})"
        tied = tied_with_fastest(self._sweep(at, label))
        if not tied:
            raise BindingError(f"{label}: the sweep has no timed point")
        return "; ".join(config_name(p.config) for p in tied)

    def sweep_decision(self, at: str | None = None) -> str:
        """One sentence on what the sweep decided (see reporter.analysis.sweep.decision)."""
        from .sweep import decision

        return decision(self._sweep(at, f"{self.short}.sweep_decision()"))

    def sweep_ms(self, config: str, at: str | None = None) -> Number:
        """The time of one swept configuration, named as 'STAGES=3 CLUSTER=2' (every key, in the
        sweep's order), in the newest sweep or the one whose id starts with ``at``: the mean of its
        samples, the statistic the sweep ranks by and its table prints (:data:`reporter.standing.STATISTIC`)."""
        label = f"{self.short}.sweep_ms({config!r}{'' if at is None else ', ' + repr(at)})"
        sw = self._sweep(at, label)
        names = _config_names(sw)
        for name, p in zip(names, sw.points):
            if name == config:
                if p.timing is None:
                    raise BindingError(f"{label}: that configuration was not timed ({p.error or 'no timing'})")
                return Number(p.timing.mean_ms)
        raise BindingError(f"{label}: no such configuration (have: {'; '.join(names)})")

    def sweep_order(self, config: str, at: str | None = None) -> int:
        """Where a configuration was timed in its sweep: 1 for the first (the coolest card)."""
        label = f"{self.short}.sweep_order({config!r}{'' if at is None else ', ' + repr(at)})"
        names = _config_names(self._sweep(at, label))
        if config not in names:
            raise BindingError(f"{label}: no such configuration (have: {'; '.join(names)})")
        return names.index(config) + 1


class CrossCheckFacts(_Facts):
    """A version's cross-check (`report crosscheck`): what the course's harness, do_bench and ours
    said in one session, per case; ``peer`` names a peer submitted beside it."""

    def __init__(self, check: Any, runs: dict[str, Run], label: str) -> None:
        from .crosscheck import agreements

        self._check = check
        self._runs = runs
        self._rows = agreements(check, runs)
        self._what = label

    def _row(self, case: str, peer: str | None):
        name = peer or self._check.version
        for a in self._rows:
            if a.case == case and a.name == name:
                return a
        have = sorted({(a.name, a.case) for a in self._rows})
        raise BindingError(f"{self._what}: nothing for {name} on case '{case}' (have: {have})")

    @property
    def run_id(self) -> str:
        return self._check.run_id

    def ours_ms(self, case: str, peer: str | None = None) -> Number:
        return _need(self._row(case, peer).ours_ms, f"{self._what}.ours_ms('{case}')")

    def course_ms(self, case: str, which: int = 0, peer: str | None = None) -> Number:
        """The mean of the course harness's ``which``-th benchmark run (0-based) on the case."""
        means = self._row(case, peer).course_means_ms
        if not 0 <= which < len(means):
            raise BindingError(f"{self._what}.course_ms('{case}', {which}): {len(means)} course run(s)")
        return Number(means[which])

    def course_mean(self, case: str, peer: str | None = None, unit: str = "ms") -> Number:
        """The course harness's mean on the case over its runs that cover our figure's window (all of them
        when none does): the statistic page 1 prints for the hand-in; ``unit`` 'ms' or 'µs'."""
        name = peer or self._check.version
        value = _need(self._row(case, peer).course_ms, f"{self._what}.course_mean('{case}')")
        return _in_unit(value, unit, keys.xc(self._check.run_id, name, case, "course"), f"{self._what}.course_mean")

    def faster_than(self, peer: str, case: str, timer: str = "course") -> Number:
        """How many times faster the version ran than ``peer`` on the case (the peer's time over its own),
        by the course harness's mean (``timer='course'``) or do_bench's median ('do_bench'):
        :func:`reporter.analysis.crosscheck.against_peer`, as page 1 prints it."""
        from .crosscheck import against_peer

        if timer not in ("course", "do_bench"):
            raise BindingError(f"{self._what}.faster_than('{peer}', '{case}', '{timer}'): timer is 'course' or 'do_bench'")
        row = next((r for r in against_peer(self._check, peer, self._runs) if r.case == case), None)
        ratio = None if row is None else row.course_ratio if timer == "course" else row.do_bench_ratio
        if ratio is None:
            raise BindingError(f"{self._what}.faster_than('{peer}', '{case}', '{timer}'): not timed by both")
        return Number(ratio, 4, key=keys.xc_ratio(self._check.run_id, self._check.version, peer, case, timer),
                      unit="speedup")

    def course_calls(self, case: str, which: int = 0, peer: str | None = None) -> int:
        calls = self._row(case, peer).course_calls
        if not 0 <= which < len(calls) or calls[which] is None:
            raise BindingError(f"{self._what}.course_calls('{case}', {which}): not recorded")
        return int(calls[which])  # type: ignore[arg-type]

    def do_bench_ms(self, case: str, peer: str | None = None, unit: str = "ms") -> Number:
        """do_bench's median on the case; ``unit`` 'ms' (the default) or 'µs'."""
        name = peer or self._check.version
        value = _need(self._row(case, peer).do_bench_ms, f"{self._what}.do_bench_ms('{case}')")
        return _in_unit(value, unit, keys.xc(self._check.run_id, name, case, "do_bench"), f"{self._what}.do_bench_ms")

    @property
    def course_test(self) -> str:
        """The course harness's closing verdict in test mode on the version's export ('pass'/'fail')."""
        tests = [r for e in self._check.entries if e.name == self._check.version for r in e.course if r.mode == "test"]
        if not tests:
            raise BindingError(f"{self._what}: the course harness's test mode did not run")
        return tests[-1].verdict or "no verdict"


class PeersFacts(_Facts):
    _what = "peers"

    def __init__(self, summary: AssignmentSummary) -> None:
        self._s = summary

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        peer = self._s.peer(name)
        if peer is None:
            names = ", ".join(p.name for p in self._s.peers) or "none recorded"
            raise BindingError(f"no peer named '{name}' (have: {names})")
        return PeerFacts(peer)

    def __getitem__(self, name: str) -> PeerFacts:
        return self.__getattr__(name)


class ReferenceFacts(_Facts):
    _what = "reference"

    def __init__(self, summary: AssignmentSummary) -> None:
        self._s = summary

    @property
    def ms(self) -> Number:
        """The public result's time as published (a leaderboard's mean, for the course boards)."""
        if not self._s.references:
            raise BindingError("the assignment defines no REFERENCE_RESULTS")
        return Number(self._s.references[0].median_ms)

    median_ms = ms  # the name REFERENCE_RESULTS rows use

    @property
    def label(self) -> str:
        if not self._s.references:
            raise BindingError("the assignment defines no REFERENCE_RESULTS")
        return self._s.references[0].label


class DataFacts(_Facts):
    """A probe record's results (its script's JSON), read by key: ``.cases.benchmark['v16 call']``.
    A number reads as a :class:`Number`; a missing key names the ones there are."""

    def __init__(self, value: Any, what: str) -> None:
        self._value = value
        self._what = what

    def _at(self, key: Any) -> Any:
        v = self._value
        where = f"{self._what}[{key!r}]"
        if isinstance(v, dict):
            if key not in v:
                have = ", ".join(repr(k) for k in list(v)[:12]) + (", ..." if len(v) > 12 else "")
                raise BindingError(f"{self._what} has no {key!r} (have: {have})")
            return _data(v[key], where)
        if isinstance(v, list):
            if not isinstance(key, int) or not -len(v) <= key < len(v):
                raise BindingError(f"{self._what} is a list of {len(v)}: no item {key!r}")
            return _data(v[key], where)
        raise BindingError(f"{self._what} is {v!r}, not a mapping or a list")

    def __getattribute__(self, name: str) -> Any:
        # a key of the results wins over a helper of the same name (data with a 'mean' key reads it)
        if not name.startswith("_"):
            value = object.__getattribute__(self, "_value")
            if isinstance(value, dict) and name in value:
                return object.__getattribute__(self, "_at")(name)
        return object.__getattribute__(self, name)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return self._at(name)

    def __getitem__(self, key: Any) -> Any:
        return self._at(key)

    def _numbers(self) -> list[float]:
        v = self._value
        if not isinstance(v, list) or not v or not all(isinstance(x, int | float) and not isinstance(x, bool)
                                                       for x in v):
            raise BindingError(f"{self._what} is not a list of numbers")
        return [float(x) for x in v]

    @property
    def median(self) -> Number:
        return Number(statistics.median(self._numbers()))

    @property
    def mean(self) -> Number:
        return Number(statistics.mean(self._numbers()))

    @property
    def min(self) -> Number:
        return Number(min(self._numbers()))

    @property
    def max(self) -> Number:
        return Number(max(self._numbers()))

    def quantile(self, q: float) -> Number:
        """The q-quantile (0 to 1) of a list of numbers: the value at index ⌊q·n⌋ of the n sorted
        (the last for q = 1), the rule the probe scripts print their percentiles by."""
        xs = sorted(self._numbers())
        if not 0 <= q <= 1:
            raise BindingError(f"{self._what}.quantile({q}): q is a fraction from 0 to 1")
        return Number(xs[min(len(xs) - 1, int(q * len(xs)))])

    def where(self, key: str, value: Any) -> DataFacts:
        """The items of a list of mappings whose ``key`` is ``value``, as a list: a probe's rows of one
        contender, ``.cases.benchmark.where('contender', 'v16_launch_plan')``. None is an error."""
        v = self._value
        if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
            raise BindingError(f"{self._what} is not a list of mappings")
        found = [x for x in v if x.get(key) == value]
        if not found:
            have = sorted({str(x.get(key)) for x in v})
            raise BindingError(f"{self._what} has no item whose {key!r} is {value!r} (have: {', '.join(have)})")
        return DataFacts(found, f"{self._what}.where({key!r}, {value!r})")

    def pluck(self, key: str) -> DataFacts:
        """Each item's ``key`` of a list of mappings, as a list (``.where(...).pluck('joules_per_call').mean``);
        an item without it is an error."""
        v = self._value
        if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
            raise BindingError(f"{self._what} is not a list of mappings")
        missing = [i for i, x in enumerate(v) if key not in x]
        if missing:
            raise BindingError(f"{self._what}: item {missing[0]} has no {key!r}")
        return DataFacts([x[key] for x in v], f"{self._what}.pluck({key!r})")

    @property
    def count(self) -> int:
        if not isinstance(self._value, list | dict):
            raise BindingError(f"{self._what} is not a list or a mapping")
        return len(self._value)

    def __str__(self) -> str:
        return str(self._value)


def _data(value: Any, what: str) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return Number(value)
    return DataFacts(value, what)


class ProbeRecordFacts(_Facts):
    """One probe record (``{{ probes.host_call.data.cases.benchmark['v16 call'].enqueue_us.median }}``):
    its results as ``data``, and where they come from."""

    def __init__(self, record: ProbeRecord) -> None:
        self._r = record
        self._what = f"probe {record.run_id}"

    @property
    def data(self) -> DataFacts:
        return DataFacts(self._r.data, f"{self._what}'s data")

    @property
    def run_id(self) -> str:
        return self._r.run_id

    @property
    def when(self) -> str:
        return f"{self._r.created_utc:%Y-%m-%d %H:%M} UTC"

    @property
    def tool(self) -> str:
        return self._r.tool or "a script that was not kept"

    @property
    def commit(self) -> str:
        c = self._r.code.git_commit if self._r.code is not None else None
        return c[:7] if c else "unknown"

    @property
    def path(self) -> str:
        return store.probe_path(Path("logs"), self._r).as_posix()


class ProbesFacts(_Facts):
    """The probe records of the report's GPU: ``probes.host_call`` is the newest named host_call,
    ``probes['20261123T1217Z_host_call']`` one by its id."""

    _what = "probes"

    def __init__(self, records: list[ProbeRecord]) -> None:
        self._records = records

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        found = [r for r in self._records if r.name == name]
        if not found:
            names = ", ".join(sorted({r.name for r in self._records})) or "none recorded on this GPU"
            raise BindingError(f"no probe named '{name}' (have: {names})")
        return ProbeRecordFacts(max(found, key=lambda r: r.created_utc))

    def __getitem__(self, key: str) -> ProbeRecordFacts:
        exact = [r for r in self._records if r.run_id == key]
        if exact:
            return ProbeRecordFacts(exact[0])
        return self.__getattr__(key)


def binding_context(summary: AssignmentSummary) -> dict[str, Any]:
    """Everything worklog.md may name: each version by short handle, `best`, `peers`,
    `reference` (the first public result), `ceilings`, `gpu`, `probes` (the probe records of the GPU)."""
    ctx: dict[str, Any] = {v.short: VersionFacts(v, summary) for v in summary.versions}
    if summary.best is not None:
        ctx["best"] = VersionFacts(summary.best, summary)
    ctx["peers"] = PeersFacts(summary)
    ctx["probes"] = ProbesFacts(summary.probes)
    ctx["reference"] = ReferenceFacts(summary)
    ctx["gpu"] = summary.gpu.upper()
    if summary.ceilings is not None:
        c = summary.ceilings
        ctx["ceilings"] = {"copy_gbps": Number(c.copy_gbps),
                           **{f"matmul_{k}_tflops": Number(val) for k, val in c.matmul_tflops.items()}}
    return ctx
