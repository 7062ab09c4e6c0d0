"""Observations drafted from a run's numbers, shown as "Observed" beside the people's notes.

Each :class:`Observation` is one short sentence that cites the numbers it used, and keeps
those numbers (``metrics``) so the report can link or bind them. The rules:

* how far the run is from its roof (timing and the work model; no profile needed);
* the change against the previous version (timing; no profile needed), and against its
  profile when both were profiled;
* which unit binds: compute (SM) against the busiest memory unit, as % of peak;
* whether DRAM traffic matches the work model (inputs read once, outputs written once);
* L2→L1 traffic against the work model's bytes (how often data is re-fetched);
* notable cache hit rates; shared-memory bank conflicts; uncoalesced global accesses;
* the tensor cores' share of the executed flops;
* the harness-vs-ncu timing cross-check, when the two disagree by more than 5%;
* what the compiler reported for the CUDA kernels the run launched: register spills and
  ptxas's "Potential Performance Loss" (C75xx) advisories (the run's ``builds``; no profile needed).

Thresholds are rules of thumb, named below, not laws; a sentence says what was measured
and leaves the conclusion to the person.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from .. import ncu_metrics as N
from ..records import DeviceCeilings, Run, derive
from . import metrics as M

BUSY_PCT = 60.0  # a unit above this share of its peak is the one that binds
CROSSCHECK_TOLERANCE_PCT = 5.0
DRAM_MATCH = (0.9, 1.25)  # DRAM bytes / work-model bytes counted as "matches"
REFETCH_NOTABLE = 1.5  # L2→L1 bytes / work-model bytes worth a sentence
CONFLICTS_NOTABLE = 0.5  # extra shared-memory wavefronts per shared instruction
COALESCING_POOR = 0.6  # ideal sectors / sectors moved below this: uncoalesced
TENSOR_SHARE_LOW = 0.5
CHANGE_NOTABLE = 0.2  # a relative change of a profile figure worth citing
POINTS_NOTABLE = 10.0  # a change of a percentage figure worth citing, in points
MAX_CHANGES = 3


@dataclass(frozen=True)
class Observation:
    text: str
    metrics: dict[str, float] = field(default_factory=dict)
    rule: str = ""


# --------------------------------------------------------------------------- formatting


def _ms(ms: float) -> str:
    if ms >= 1.0:
        return f"{ms:.2f} ms"
    if ms >= 1e-3:
        return f"{ms * 1e3:.1f} µs"
    return f"{ms * 1e6:.0f} ns"


def _flop(n: float) -> str:
    for scale, unit in ((1e15, "PFLOP"), (1e12, "TFLOP"), (1e9, "GFLOP"), (1e6, "MFLOP")):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n:,.0f} FLOP"


def _count(n: float) -> str:
    for scale, unit in ((1e9, " G"), (1e6, " M"), (1e3, " K")):
        if abs(n) >= scale:
            return f"{n / scale:.2f}{unit}"
    return f"{n:.0f}"


def _pct_change(old: float, new: float) -> str:
    return f"{(new - old) / old * 100:+.0f}%".replace("-", "−") if old else "new"


# --------------------------------------------------------------------------- timing cross-check


def timing_crosscheck(run: Run) -> tuple[float | None, float | None, float | None, str]:
    """(harness median ms, ncu ms summed over the profiled kernels of one call, gap in % of
    the harness median, a sentence). The sentence explains any gap over 5%."""
    harness_ms = run.median_ms
    prof = run.profile
    kernels = prof.kernels if prof is not None and prof.status == "ok" else []
    ncu_ns = M.duration_ns(kernels)
    ncu_ms = ncu_ns / 1e6 if ncu_ns is not None else None
    if harness_ms is None or ncu_ms is None or harness_ms <= 0:
        missing = "no harness timing" if harness_ms is None else "no ncu durations"
        return harness_ms, ncu_ms, None, f"No timing cross-check: {missing}."
    gap_pct = (ncu_ms - harness_ms) / harness_ms * 100.0
    n_k = len(kernels)
    kernels_of = f"{n_k} kernel{'s' if n_k != 1 else ''}"
    head = (f"ncu {_ms(ncu_ms)} (gpu__time_duration summed over {kernels_of} of one call) "
            f"vs harness median {_ms(harness_ms)} ({gap_pct:+.1f}%)")
    if abs(gap_pct) <= CROSSCHECK_TOLERANCE_PCT:
        return harness_ms, ncu_ms, gap_pct, head + ", within 5%."
    n = run.timing.n if run.timing else 0
    why = (f"ncu times one serialised launch of each kernel after flushing every cache (--cache-control all), "
           f"while the harness takes the median of {n} calls, each after an L2 flush")
    if gap_pct < 0:
        # the start event is recorded before the Python call issues its first kernel
        between = f", the gaps between the {n_k} launches" if n_k > 1 else ""
        why += (f"; the harness's events also span the host-side launch overhead{between} and any host work, "
                "which ncu does not count")
    else:
        why += ("; ncu's single launch pays cold caches and TLBs and runs at whatever clock the GPU is at "
                "(--clock-control none)")
    return harness_ms, ncu_ms, gap_pct, f"{head}: {why}."


# --------------------------------------------------------------------------- rules without a profile


def _roof(run: Run, ceilings: DeviceCeilings | None) -> Observation | None:
    if run.timing is None:
        return None
    d = run.derived
    if (d is None or d.fraction_of_ceiling is None) and ceilings is not None:
        try:
            d = derive(run.work, run.timing.median_ms, ceilings)
        except KeyError:  # the ceilings lack this work's matmul dtype
            d = run.derived
    if d is None or d.fraction_of_ceiling is None or d.ceiling_value is None:
        return None
    if d.ceiling == "copy":
        rate = f"Moves {d.gbps:,.0f} GB/s of the work model's bytes"
        roof = f"the measured copy bandwidth ({d.ceiling_value:,.0f} GB/s)"
    else:
        rate = f"Reaches {d.tflops:,.0f} TFLOP/s"
        roof = f"the measured {d.ceiling.removeprefix('matmul_')} matmul ceiling ({d.ceiling_value:,.0f} TFLOP/s)"
    floor = (f": the roofline floor is {_ms(d.floor_ms)} against {_ms(run.timing.median_ms)} measured"
             if d.floor_ms else "")
    return Observation(f"{rate}, {d.fraction_of_ceiling:.0%} of {roof}{floor}.",
                       {"fraction_of_ceiling": d.fraction_of_ceiling, "ceiling_value": d.ceiling_value,
                        "tflops": d.tflops, "gbps": d.gbps, "median_ms": run.timing.median_ms,
                        **({"floor_ms": d.floor_ms} if d.floor_ms else {})}, "roof")


def _speedup(run: Run, previous: Run | None) -> Observation | None:
    if previous is None or previous.timing is None or run.timing is None or previous.case_name != run.case_name:
        return None
    old, new = previous.timing.mean_ms, run.timing.mean_ms  # the figures (reporter.standing: means)
    noise = math.hypot(previous.timing.stderr_ms, run.timing.stderr_ms)
    cited = {"mean_ms": new, "previous_mean_ms": old}
    if abs(old - new) < 2 * noise:
        return Observation(f"No clear change against {previous.version}: {_ms(old)} → {_ms(new)}, "
                           f"within twice the combined standard error ({_ms(noise)}).", cited, "change")
    ratio = old / new
    word = f"Runs {ratio:.2f}× faster" if ratio >= 1 else f"Runs {1 / ratio:.2f}× slower"
    return Observation(f"{word} than {previous.version} ({_ms(old)} → {_ms(new)}).", {**cited, "speedup": ratio},
                       "change")


# --------------------------------------------------------------------------- rules on the timing samples

HOST_CORRELATION = 0.8    # samples this correlated with the host's queuing time follow the host...
HOST_SHARE = 0.2          # ...and are host-bound when queuing a call takes at least this share of a sample
#: The definition, said once before the word is first used (the report's steps table).
HOST_BOUND_WORDS = (f"a run whose calls take about as long as the host takes to queue them: its samples follow "
                    f"the host's queuing time of each call (correlation at least {HOST_CORRELATION:g}) and queuing "
                    f"takes at least {HOST_SHARE:.0%} of a call, so its figure measures the Python launch as much "
                    "as the kernel.")
CLOCK_EVENT_SHARE = 0.5   # clock events in this share of samples make the timing state-dependent


def host_correlation(run: Run | None) -> float | None:
    """The correlation of a plain-timed run's samples with the host's queuing time of each call;
    None where it cannot be told (held samples, too few, or no queuing times kept)."""
    t = run.timing if run is not None else None
    if t is None or not t.enqueue_ms or len(t.enqueue_ms) != len(t.samples_ms) or t.method.endswith("+hold"):
        return None
    if len(t.samples_ms) < 8 or len(set(t.enqueue_ms)) < 2 or len(set(t.samples_ms)) < 2:
        return None
    return statistics.correlation(t.samples_ms, t.enqueue_ms)


def host_bound(run: Run | None) -> bool:
    """Plain event samples that rise and fall with the host's queuing time, where queuing a call takes a
    real share of its time (:data:`HOST_SHARE`), measure the host. A kernel whose time dwarfs its launch
    is never host-bound, however its samples correlate."""
    r = host_correlation(run)
    if r is None or r < HOST_CORRELATION:
        return False
    t = run.timing  # type: ignore[union-attr]
    assert t is not None
    return statistics.median(t.enqueue_ms) >= HOST_SHARE * t.median_ms


def _host_bound(run: Run) -> Observation | None:
    """The observation for a host-bound run (:func:`host_bound`)."""
    if not host_bound(run):
        return None
    r = host_correlation(run)
    assert r is not None
    t = run.timing
    assert t is not None and t.enqueue_ms
    queue = statistics.median(t.enqueue_ms)
    return Observation(
        f"The samples track the host: their correlation with the time the host took to queue each call is "
        f"{r:.2f} (median queuing time {_ms(queue)}, median sample {_ms(t.median_ms)}). The GPU waited for the "
        "Python launch inside the timed window; `report run --hold` times the call's GPU work alone.",
        {"enqueue_correlation": r, "enqueue_median_ms": queue}, "host")


def _clock_events(run: Run) -> Observation | None:
    """NVML saw the card limit its clocks (power cap, thermal) during many samples."""
    t = run.timing
    g = t.gpu_state if t else None
    if t is None or g is None or not g.sm_clock_mhz:
        return None
    limited = g.limited_samples()
    if limited < CLOCK_EVENT_SHARE * len(g.clock_event_reasons):
        return None
    seen = g.limiting_reasons()
    lo, hi = min(g.sm_clock_mhz), max(g.sm_clock_mhz)
    return Observation(
        f"The card limited its clocks during {limited} of {len(g.clock_event_reasons)} samples "
        f"({', '.join(k.replace('_', ' ') for k in seen)}): SM clock {lo:.0f}–{hi:.0f} MHz, up to "
        f"{max(g.power_w):.0f} W. The median depends on how hard and how long the GPU was driven before "
        "each call; compare such runs only with runs made the same way.",
        {"limited_samples": float(limited), "sm_clock_min_mhz": lo, "sm_clock_max_mhz": hi}, "clocks")


# --------------------------------------------------------------------------- rules on the compiler's report


def _builds(run: Run) -> list[Observation]:
    """A kernel that spills registers, or that ptxas warned would lose performance, quoted as ptxas said it."""
    out: list[Observation] = []
    for b in run.builds:
        advisories = b.performance_advisories()
        regs = f"{b.registers} registers per thread" if b.registers is not None else "an unreported register count"
        if b.reported_by == "driver":
            if b.local_bytes:
                out.append(Observation(
                    f"The driver reports that kernel {b.kernel} ({b.compiler or 'compiler'}, {b.arch}) has {regs} and "
                    f"{b.local_bytes} bytes of local memory per thread: register spills or a stack frame (ptxas's own "
                    f"report was not in the compile log, so it cannot say which).",
                    {"registers": float(b.registers or 0), "local_bytes": float(b.local_bytes)}, "build"))
            continue
        if not b.spills and not advisories:
            continue
        head = f"ptxas ({b.compiler or 'compiler'}, {b.arch}) gave kernel {b.kernel} {regs}"
        if b.spills:
            head += (f" and it spills: {b.spill_stores} bytes of spill stores and {b.spill_loads} bytes of spill "
                     f"loads per thread ({b.stack_bytes} bytes stack frame)")
        else:
            head += ", with no spills"
        said = "".join(f" It advised: “{a}”." for a in advisories)
        cited = {"spill_stores": float(b.spill_stores), "spill_loads": float(b.spill_loads),
                 "stack_bytes": float(b.stack_bytes)}
        if b.registers is not None:
            cited["registers"] = float(b.registers)
        out.append(Observation(f"{head}.{said}", cited, "build"))
    return out


# --------------------------------------------------------------------------- rules on the profile


def _bottleneck(kernels: list) -> Observation | None:
    compute = M.weighted_pct(kernels, N.COMPUTE_PCT)
    memory = {lvl: v for lvl, name in (("DRAM", N.DRAM_PCT), ("L2", N.L2_PCT), ("L1", N.L1_PCT))
              if (v := M.weighted_pct(kernels, name)) is not None}
    if compute is None or not memory:
        return None
    level, mem = max(memory.items(), key=lambda kv: kv[1])
    cited = {N.COMPUTE_PCT: compute, **{n: memory[lvl] for lvl, n in (("DRAM", N.DRAM_PCT), ("L2", N.L2_PCT),
                                                                      ("L1", N.L1_PCT)) if lvl in memory}}
    if max(compute, mem) < BUSY_PCT:
        return Observation(f"Neither compute nor memory is busy: SM throughput {compute:.0f}% and the busiest memory "
                           f"unit ({level}) {mem:.0f}% of peak, which points at latency (too few warps in flight, "
                           f"dependencies, or synchronisation).", cited, "bottleneck")
    if compute >= mem:
        return Observation(f"Compute-bound: SM throughput {compute:.0f}% of peak against {mem:.0f}% for the busiest "
                           f"memory unit ({level}).", cited, "bottleneck")
    return Observation(f"Memory-bound at {level}: {level} throughput {mem:.0f}% of peak against {compute:.0f}% for "
                       f"compute (SM).", cited, "bottleneck")


def _dram_vs_model(run: Run, kernels: list) -> Observation | None:
    read, write = M.total(kernels, N.DRAM_READ), M.total(kernels, N.DRAM_WRITE)
    dram = M.total(kernels, N.LEVEL_BYTES["DRAM"])
    if dram is None and read is not None and write is not None:
        dram = read + write
    if not dram:
        return None
    ratio = dram / run.work.bytes
    if read is not None and write is not None:
        parts = f"DRAM read {M.format_bytes(read)} + write {M.format_bytes(write)} = {M.format_bytes(dram)}"
    elif read is not None:
        parts = f"DRAM traffic {M.format_bytes(dram)} (read {M.format_bytes(read)})"
    else:
        parts = f"DRAM traffic {M.format_bytes(dram)}"
    minimum = f"{M.format_bytes(run.work.bytes)}: inputs read once, outputs written once"
    head = f"{parts} ≈ {ratio:.2f}× the work model's minimum ({minimum})"
    lo, hi = DRAM_MATCH
    if ratio > hi:
        tail = ": the excess is data fetched more than once or intermediates that left the chip"
    elif ratio < lo:
        tail = (": below the model's minimum; L2 is write-back, so output still held in L2 when the kernel ended "
                "is not counted (or part of the modelled data was never read)")
    else:
        tail = ": DRAM traffic is at the model's minimum"
    cited = {"dram_bytes": dram, "work_bytes": run.work.bytes, "dram_over_model": ratio}
    if read is not None:
        cited[N.DRAM_READ] = read
    if write is not None:
        cited[N.DRAM_WRITE] = write
    return Observation(head + tail + ".", cited, "dram-vs-model")


def _refetch(fig: M.Figures) -> Observation | None:
    r = fig.l2_to_l1_over_ideal
    if r is None or fig.l2_to_l1_bytes is None or r < REFETCH_NOTABLE:
        return None
    return Observation(f"L2→L1 traffic {M.format_bytes(fig.l2_to_l1_bytes)} is {r:.1f}× the work model's bytes: "
                       f"on average each byte is fetched from L2 {r:.1f} times (larger tiles or more reuse on chip "
                       f"would cut it).", {N.L2_TO_L1: fig.l2_to_l1_bytes, "l2_to_l1_over_model": r}, "refetch")


def _hit_rates(kernels: list, dram_over_model: float | None) -> list[Observation]:
    out: list[Observation] = []
    l2 = M.weighted_pct(kernels, N.L2_HIT_PCT)
    l1 = M.weighted_pct(kernels, N.L1_HIT_PCT)
    if l2 is not None:
        if l2 < 50 and (dram_over_model is None or dram_over_model > DRAM_MATCH[1]):
            out.append(Observation(f"L2 hit rate {l2:.0f}%: most L2 lookups go on to DRAM, so re-reads are not "
                                   f"served from L2.", {N.L2_HIT_PCT: l2}, "cache"))
        elif l2 >= 90:
            out.append(Observation(f"L2 hit rate {l2:.0f}%: repeated reads are served by L2.", {N.L2_HIT_PCT: l2},
                                   "cache"))
    if l1 is not None and l1 >= 80:
        out.append(Observation(f"L1 hit rate {l1:.0f}%: global loads are mostly reused from L1.", {N.L1_HIT_PCT: l1},
                               "cache"))
    return out


def _bank_conflicts(fig: M.Figures) -> Observation | None:
    per = fig.bank_conflicts_per_request
    if per is None or per < CONFLICTS_NOTABLE or not fig.shared_bank_conflicts or not fig.shared_requests:
        return None
    return Observation(f"Shared-memory bank conflicts: {per:.2f} extra wavefronts per shared-memory instruction "
                       f"({_count(fig.shared_bank_conflicts)} conflicts over {_count(fig.shared_requests)} "
                       f"instructions).", {"bank_conflicts": fig.shared_bank_conflicts,
                                           "shared_instructions": fig.shared_requests,
                                           "bank_conflicts_per_request": per}, "bank-conflicts")


def _coalescing(fig: M.Figures) -> list[Observation]:
    out: list[Observation] = []
    for kind, actual, ideal in (("loads", fig.global_ld_sectors_per_request, fig.global_ld_ideal_sectors_per_request),
                                ("stores", fig.global_st_sectors_per_request, fig.global_st_ideal_sectors_per_request)):
        if actual is None or actual <= 4.0:
            continue
        cited = {f"global_{kind}_sectors_per_request": actual}
        if ideal is not None and ideal < 1:
            continue  # under one sector per request the profiler's ideal is not a per-request count: no premise
        if ideal is not None:
            use = ideal / actual
            if use >= COALESCING_POOR:
                continue
            cited[f"global_{kind}_ideal_sectors_per_request"] = ideal
            out.append(Observation(f"Uncoalesced global {kind}: {actual:.1f} sectors per request where the bytes "
                                   f"asked for fit in {ideal:.1f}, so {use:.0%} of each fetched sector is used.",
                                   cited, "coalescing"))
        else:
            out.append(Observation(f"Global {kind} move {actual:.1f} sectors per request, above the 4 of fully "
                                   f"coalesced 4-byte accesses (wider accesses legitimately need up to 16).",
                                   cited, "coalescing"))
    return out


def _tensor_share(run: Run, fig: M.Figures) -> Observation | None:
    if fig.flops <= 0 or "tensor" not in fig.flops_by_class:
        return None
    share = fig.tensor_share or 0.0
    executed = fig.flops
    vs_model = f" (executed flops {executed / run.work.flops:.2f}× the work model's {_flop(run.work.flops)})" \
        if (run.work.flops or 0) > 0 else ""
    cited = {"tensor_flops": fig.flops_by_class["tensor"], "executed_flops": executed, "tensor_share": share}
    if run.work.ceiling.startswith("matmul_") and share < TENSOR_SHARE_LOW:
        return Observation(f"Tensor cores run only {share:.0%} of the {_flop(executed)} executed, though the work is "
                           f"bound by the {run.work.ceiling} ceiling{vs_model}.", cited, "tensor")
    if share == 0:
        return None
    return Observation(f"Tensor cores run {share:.0%} of the {_flop(executed)} executed{vs_model}.", cited, "tensor")


_COMPARED: tuple[tuple[str, str, str], ...] = (
    # (label, how to read it from Figures or a metric, kind)
    ("ncu duration", "duration_ns", "ns"),
    ("DRAM bytes", "DRAM", "byte"),
    ("L2 bytes", "L2", "byte"),
    ("L2→L1 bytes", "l2_to_l1_bytes", "byte"),
    ("instructions", "inst_executed", "count"),
    ("SM throughput", N.COMPUTE_PCT, "%"),
    ("DRAM throughput", N.DRAM_PCT, "%"),
    ("L2 hit rate", N.L2_HIT_PCT, "%"),
    ("bank conflicts", "shared_bank_conflicts", "count"),
)


def _read(fig: M.Figures, kernels: list, key: str) -> float | None:
    if key in N.LEVEL_BYTES:
        return fig.bytes_by_level.get(key)
    if hasattr(fig, key):
        return getattr(fig, key)
    return M.weighted_pct(kernels, key)


def _show(v: float, kind: str) -> str:
    if kind == "ns":
        return _ms(v / 1e6)
    if kind == "byte":
        return M.format_bytes(v)
    if kind == "%":
        return f"{v:.0f}%"
    return _count(v)


def _profile_changes(run: Run, previous: Run | None) -> Observation | None:
    if previous is None or previous.case_name != run.case_name:
        return None
    old_fig = M.profile_figures(previous.profile, previous.work)
    new_fig = M.profile_figures(run.profile, run.work)
    if old_fig is None or new_fig is None:
        return None
    assert previous.profile is not None and run.profile is not None
    changes: list[tuple[float, str, dict[str, float]]] = []
    for label, key, kind in _COMPARED:
        old = _read(old_fig, previous.profile.kernels, key)
        new = _read(new_fig, run.profile.kernels, key)
        if old is None or new is None or old <= 0 or new < 0:
            continue
        if kind == "%":
            size = abs(new - old) / 100.0  # percentage points, as a fraction of the whole scale
            if abs(new - old) < POINTS_NOTABLE:
                continue
            text = f"{label} {old:.0f}% → {new:.0f}%"
        else:
            size = abs(math.log(max(new, 1e-30) / old))
            if abs(new - old) / old < CHANGE_NOTABLE:
                continue
            text = f"{label} {_show(old, kind)} → {_show(new, kind)} ({_pct_change(old, new)})"
        changes.append((size, text, {f"previous_{key}": old, key: new}))
    if not changes:
        return None
    top = sorted(changes, key=lambda c: -c[0])[:MAX_CHANGES]
    cited: dict[str, float] = {}
    for _, _, c in top:
        cited.update(c)
    return Observation(f"Against {previous.version}'s profile: " + "; ".join(t for _, t, _ in top) + ".", cited,
                       "profile-change")


def _crosscheck(run: Run) -> Observation | None:
    harness_ms, ncu_ms, gap, sentence = timing_crosscheck(run)
    if gap is None or abs(gap) <= CROSSCHECK_TOLERANCE_PCT:
        return None
    return Observation(f"Timing cross-check: {sentence}", {"harness_median_ms": harness_ms or 0.0,
                                                            "ncu_ms": ncu_ms or 0.0, "gap_pct": gap},
                       "timing-crosscheck")


# --------------------------------------------------------------------------- entry point


def observe(run: Run, previous: Run | None, ceilings: DeviceCeilings | None) -> list[Observation]:
    """Observations for one run, most general first. Without a profile only the timing,
    work-model and compiler-report rules apply; without a passing check there is nothing to observe."""
    if not run.ok:
        return []
    out: list[Observation | None] = [_roof(run, ceilings), _speedup(run, previous), _host_bound(run),
                                     _clock_events(run), *_builds(run)]
    fig = M.profile_figures(run.profile, run.work)
    if fig is not None and run.profile is not None:
        kernels = run.profile.kernels
        bottleneck = _bottleneck(kernels)
        dram = _dram_vs_model(run, kernels)
        out += [bottleneck, dram, _refetch(fig)]
        out += _hit_rates(kernels, dram.metrics.get("dram_over_model") if dram else None)
        out += [_bank_conflicts(fig), *_coalescing(fig), _tensor_share(run, fig),
                _profile_changes(run, previous), _crosscheck(run)]
    return [o for o in out if o is not None]
