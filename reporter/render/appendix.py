"""The report's appendix as plain values: every measurement of every version, how each figure was
taken, what the compiler said, the profile metrics, the sweeps, the device, the method and the
commands that reproduce the figures. The body cites one figure per version; everything else a
reader may want to check is here, said once.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup, escape

from ..analysis import keys
from ..analysis.facts import fmt_number
from ..analysis.metrics import format_value, homework_figures, value
from ..analysis.summary import AssignmentSummary, VersionSummary
from ..ncu_metrics import CS149_BLOCK, DURATION
from ..records import Run
from ..standing import figure
from . import ledger
from .numbers import ms, pct, stopping_rule
from .text import device_lines, short_kernel_name


@dataclass
class CaseRow:
    version: str
    case: str
    figure: str  # marked (reporter.render.ledger)
    kind: str
    median: str
    spread: str  # fastest – slowest
    n: int | str
    rate: str  # TFLOP/s or GB/s
    roof: str
    check: str
    check_ok: bool
    bench: bool


@dataclass
class HowTaken:
    """How one version's benchmark figure was taken, its ranked runs and its builds."""

    version: str
    lines: list[str] = field(default_factory=list)


def _check(r: Run) -> str:
    c = r.check
    if c.passed:
        text = "exact" if c.exact or c.max_abs_error is None else f"pass, err {c.max_abs_error:.1g}"
    else:
        text = f"FAIL: {c.message}"
    if r.ranked_checks:
        text += f"; re-checks {sum(x.passed for x in r.ranked_checks)}/{len(r.ranked_checks)}"
    return text


def case_rows(s: AssignmentSummary) -> list[CaseRow]:
    """One row per version and case: the standing run's figure, how it was taken, its spread."""
    out = []
    for v in s.versions:
        for case in s.assignment.case_order(list(v.runs)):
            r = v.runs[case]
            fig = figure(r)
            t = r.timing
            d = fig.derived(s.ceilings) if fig else None
            rate = ("–" if d is None else f"{fmt_number(d.tflops, 4)} TFLOP/s" if r.work.flops
                    else f"{fmt_number(d.gbps, 4)} GB/s")
            out.append(CaseRow(
                version=v.name, case=case, figure=ledger.mark(keys.fig(v.name, case), ms(fig.ms)) if fig else "–", kind=fig.kind if fig else "–",
                median=ms(t.median_ms) if t else "–", spread=f"{ms(t.min_ms)} – {ms(t.max_ms)}" if t else "–",
                n=t.n if t else "–", rate=rate, roof=pct(d.fraction_of_ceiling) if d and d.fraction_of_ceiling is not None else "–",
                check=_check(r), check_ok=r.check.passed, bench=case == v.benchmark_case and case in v.headline_cases))
    return out


#: How a run was timed, where it differs from the default the appendix states once (plain CUDA events).
METHOD_WORDS = {
    "cuda-events+hold": "CUDA events with the stream held until the whole call was queued (--hold: the GPU time "
                        "of the call, host launch time left out)",
}


def common_how(s: AssignmentSummary) -> str:
    """How most figures were taken ('mean of 100 calls timed alone from a rested card …'): appendix B says
    it once, and a version's line repeats it only where its figure was taken otherwise."""
    hows = [f.how for v in s.versions if (f := v.figure) is not None]
    return max(set(hows), key=hows.count) if hows else ""


def timing_note(r: Run | None, usual: str = "") -> str:
    """Which run the benchmark figure comes from, how it was timed (unless as ``usual``), and the GPU's
    state meanwhile."""
    fig = figure(r)
    if r is None or fig is None or r.timing is None:
        return ""
    t = r.timing
    method = "" if t.method == "cuda-events" else f", timed with {METHOD_WORDS.get(t.method, t.method)}"
    how = "" if fig.how == usual else f", the {fig.how}"
    commit = (r.code.git_commit or "")[:10]
    code = f"; code {r.code.digest}" + (f", commit {commit}" if commit else "") + \
        (" (uncommitted changes)" if r.code.git_dirty else "")
    parts = [f"Figure from run {r.run_id} ({r.created_utc:%Y-%m-%d}{code}){how}{method}"
             + (", interleaved with the run's other versions and peers (one call of each per round, in a "
                "rotating order)" if t.interleaved else "")]
    if t.start_temp_c is not None:
        parts.append(f"the GPU was at {t.start_temp_c:.0f} °C when timing began")
    if t.enqueue_ms:
        parts.append(f"the host took a median {ms(statistics.median(t.enqueue_ms))} to queue each call")
    g = t.gpu_state
    if g is not None:
        state = (f"NVML: SM clock {min(g.sm_clock_mhz):.0f}–{max(g.sm_clock_mhz):.0f} MHz, memory clock "
                 f"{min(g.mem_clock_mhz):.0f}–{max(g.mem_clock_mhz):.0f} MHz, up to {max(g.power_w):.0f} W, "
                 f"{min(g.temp_c):.0f}–{max(g.temp_c):.0f} °C")
        seen = g.limiting_reasons()
        state += ("; clock events " + ", ".join(f"{k.replace('_', ' ')} in {n} of {t.n} samples" for k, n in seen.items())
                  if seen else "; no clock events")
        parts.append(state)
    return "; ".join(parts) + "."


def ranked_line(r: Run) -> str:
    t = r.timing
    assert t is not None
    ok = sum(c.passed for c in r.ranked_checks)
    held = " with --hold" if t.method.endswith("+hold") else ""
    held += ", interleaved" if t.interleaved else ""
    return (f"Ranked mode: {r.case_name}: mean {ms(t.mean_ms)} over {t.n} calls{held}, each on a fresh input "
            f"(seed {r.seed} + 13·k), {ok} of {len(r.ranked_checks)} re-checks passed ({r.created_utc:%Y-%m-%d}, "
            f"run {r.run_id}).")


def build_lines(r: Run | None) -> list[str]:
    """One line per CUDA kernel the run launched: what the compiler gave it and what ptxas warned."""
    if r is None:
        return []
    out = []
    for b in r.builds:
        regs = f"{b.registers} registers/thread" if b.registers is not None else "registers not reported"
        if b.reported_by == "driver":
            out.append(f"Build of {b.kernel} ({b.compiler or 'compiler unknown'}, {b.arch}), from the driver's "
                       f"attributes (ptxas's report was not in the compile log): {regs}, {b.local_bytes or 0} B of "
                       f"local memory per thread.")
            continue
        spills = (f"spills {b.spill_stores} B stored / {b.spill_loads} B loaded per thread, {b.stack_bytes} B stack"
                  if b.spills else "no spills")
        line = f"Build of {b.kernel} ({b.compiler or 'compiler unknown'}, {b.arch}): {regs}, {spills}"
        advisories = b.advisories + b.module_advisories
        line += ("; ptxas: " + "; ".join(advisories)) if advisories else "; no ptxas advisories"
        out.append(line + ".")
    return out


def profile_note(v: VersionSummary) -> str:
    prof, bench = v.profiled_run(), v.bench
    if prof is not None:
        if bench is not None and prof is not bench:
            same = prof.code.digest == bench.code.digest
            return (f"Profile from run {prof.run_id}" + (", an earlier run of the same code." if same else
                                                         f", older code ({prof.code.digest})."))
        return f"Profile from run {prof.run_id}."
    if bench is None or not bench.ok:
        return ""
    if bench.profile is None:
        return "Not profiled: this run was made without --profile."
    return f"Not profiled ({bench.profile.status}): {bench.profile.reason}"


@dataclass(frozen=True)
class ProvenNote:
    """The versions whose benchmark figure stands on a proof (code rewritten since it ran, proven to
    compile to the same kernels): said once at the head of appendix B, each name carrying its record."""

    versions: list[tuple[str, str]]  # (version, the proof's record id)
    compilers: str
    machine_code: bool  # every proof behind them compared each kernel's machine code, not its PTX alone


def proven_note(s: AssignmentSummary) -> ProvenNote | None:
    proven = [(v.name, st) for v in s.versions if v.bench is not None and (st := v.code(v.bench)).state == "proven"]
    if not proven:
        return None
    return ProvenNote([(name, st.proofs[-1].run_id) for name, st in proven],
                      "; ".join(sorted({st.proofs[-1].compiler for _, st in proven})),
                      all(st.machine_code for _, st in proven))


def how_taken(s: AssignmentSummary) -> list[HowTaken]:
    out = []
    usual = common_how(s)
    for v in s.versions:
        lines = [x for x in [timing_note(v.bench, usual)] if x]
        if v.cases_where:  # the cases it runs, and the one its figure is taken on
            head = (f"its figure is taken on {v.benchmark_case}, the first benchmark case it runs"
                    if v.headline_cases else "it runs none of the report's cases")
            lines.insert(0, f"Runs only the cases where {_where_words(v.cases_where)} (CASES_WHERE): {head}.")
        if v.bench is not None and (st := v.code(v.bench)).state == "changed":  # proven: proven_note, once
            lines.append(f"Code: {st.words()}.")
        lines += [ranked_line(rr) for c in s.assignment.case_order(list(v.runs)) if (rr := v.ranked(c)) is not None]
        lines += build_lines(v.bench)
        note = profile_note(v)
        if note:
            lines.append(note)
        if lines:
            out.append(HowTaken(v.name, lines))
    return out


def _where_words(where: dict[str, Any]) -> str:
    """'kind = half, size = 4096' for a CASES_WHERE."""
    return ", ".join(f"{k} = {v}" for k, v in where.items())


PROFILE_HEADERS = ("time", "SM %", "busy %", "L1 %", "L2 %", "DRAM %", "L1 hit", "L2 hit", "DRAM rd", "DRAM wr",
                   "L2→L1")
PROFILE_METRICS = CS149_BLOCK[: len(PROFILE_HEADERS)]  # the write-back and cp.async columns are in the records


def _breakable(name: str) -> Markup:
    """A kernel name that a narrow column breaks after its underscores, commas and angle brackets, not in
    the middle of a word."""
    text = str(escape(name))
    for mark in ("_", ",", "&lt;", "::"):
        text = text.replace(mark, mark + "<wbr>")
    return Markup(text)


def profile_rows(s: AssignmentSummary, per_version: int = 3) -> list[dict[str, Any]]:
    """The CS149 metric block of each profiled version as table rows: its longest kernels (at
    most ``per_version``, in launch order), the rest counted."""
    rows = []
    for v in s.versions:
        prof = v.profiled_run()
        if prof is None or prof.profile is None:
            continue
        kernels = list(prof.profile.kernels)
        longest = {id(k) for k in sorted(kernels, key=lambda k: -(value(k, DURATION) or 0.0))[:per_version]}
        shown = [k for k in kernels if id(k) in longest]
        for i, k in enumerate(shown):
            cells = []
            for label, name in PROFILE_METRICS:
                m = k.metrics.get(name)
                if m is None:
                    cells.append("n/a")
                elif label == "Duration":
                    cells.append(format_value(m.value, m.unit))
                else:
                    cells.append(format_value(m.value, m.unit).replace(" %", "").replace("%", ""))
            label = f"{v.name} (on {s.case_label(v)})" if s.case_label(v) else v.name
            rows.append({"version": label if i == 0 else "", "kernel": _breakable(short_kernel_name(k.name, 48)),
                         "cells": cells,
                         "more": (f"+ {len(kernels) - len(shown)} shorter kernels"
                                  if i == len(shown) - 1 and len(kernels) > len(shown) else "")})
    return rows


HOMEWORK_HEADERS = ("figure", "/itr", "issue %", "SW", "BXW", "N-Rd", "N-Wr", "L1↔L2 GB/s", "Imb %")
PROFILE_NOTES = {
    "cs149": ("The course's metric block for each profiled version: its longest kernels, throughputs in percent of peak "
              "(busy %: instructions issued while the SMs were active, the course's SM_Busy), hit rates in percent, "
              "bytes."),
    "ee7722": ("The homework's columns for each profiled version and case, all its kernels together, beside the "
               "version's figure: /itr, thread instructions per multiply-add of the problem (the homework's "
               "instructions per iteration); issue %, cycles a warp scheduler issued, of its active cycles; SW, "
               "sectors per global load request; BXW, L1 data bank conflicts per load request; N-Rd, bytes from L2 "
               "into L1 over the inputs' bytes; N-Wr, bytes from L1 to L2 over the output's; L1↔L2 GB/s, both "
               "directions over the profiled launch; Imb %, how much longer the busiest SM was active than the "
               "average one."),
}


def profile_headers(s: AssignmentSummary) -> tuple[str, ...]:
    return HOMEWORK_HEADERS if s.assignment.profile_block == "ee7722" else PROFILE_HEADERS


def profile_table(s: AssignmentSummary) -> list[dict[str, Any]]:
    """The profile table's rows in the columns of the assignment's course (``PROFILE_BLOCK``)."""
    return homework_rows(s) if s.assignment.profile_block == "ee7722" else profile_rows(s)


def _cell(x: float | None, fmt: str) -> str:
    return format(x, fmt) if x is not None else "n/a"


def homework_rows(s: AssignmentSummary) -> list[dict[str, Any]]:
    """One row a profiled version and headline case: its figure on the case and the homework's columns."""
    rows = []
    for v in s.versions:
        first = True
        for case in v.headline_cases:
            prof = v.profiled_run(case)
            if prof is None or prof.profile is None:
                continue
            fig = figure(v.runs.get(case))
            h = homework_figures(prof.profile.kernels, prof.work)
            cells = [ledger.mark(keys.fig(v.name, case), ms(fig.ms)) if fig else "–",
                     _cell(h.insts_per_iteration, ".2f"), _cell(h.issue_pct, ".0f"),
                     _cell(h.sectors_per_request, ".1f"), _cell(h.conflicts_per_load, ".2f"),
                     _cell(h.norm_read, ".2f"), _cell(h.norm_write, ".2f"), _cell(h.l1_l2_gbps, ",.0f"),
                     _cell(h.imbalance_pct, ".0f")]
            kernels = prof.profile.kernels
            rows.append({"version": v.name if first else "", "kernel": Markup(escape(case)), "cells": cells,
                         "more": f"{len(kernels)} kernels" if len(kernels) > 1 else ""})
            first = False
    return rows


def microbench_view(s: AssignmentSummary) -> dict[str, Any] | None:
    """The newest micro-benchmark of the GPU: its levels, the streaming ceilings, and under the EE 7722
    columns (``PROFILE_BLOCK``) the whole ``mb s`` table, as the homework reads it."""
    mb = s.microbench
    if mb is None:
        return None
    from ..analysis.microbench import level_ceilings
    from .device import STREAM_HEADERS, STREAM_KEY, device_view

    view = device_view(mb)
    full = s.assignment.profile_block == "ee7722"
    return {"date": mb.created_utc.strftime("%Y-%m-%d"), "run_id": mb.run_id, "levels": view.level_lines,
            "ceilings": [f"{c.level} {c.gbps:,.0f} GB/s (V{c.row.point.vector}, {c.row.point.blocks} blocks)"
                         for c in level_ceilings(mb)],
            "headers": STREAM_HEADERS if full else (), "streams": view.streams if full else [], "key": STREAM_KEY}


SWEEP_ROWS = 5  # of a sweep, the fastest configurations shown (and the one the version runs); all are in the record


def sweep_view(v: VersionSummary) -> dict[str, Any] | None:
    sw = v.sweep
    if sw is None:
        return None
    from ..analysis.sweep import decision, note, standings

    # the configuration the version ran on the sweep's case (a version may run one per case: config_for)
    ran = v.runs.get(sw.case_name) or v.bench
    runs_with = ran.code.config if ran is not None else {}
    rows = []
    ranked = sorted(standings(sw), key=lambda st: st.point.timing.mean_ms if st.point.timing else float("inf"))
    for st in ranked:
        p = st.point
        runs_this = bool(runs_with) and p.config == runs_with
        rows.append({"config": ", ".join(f"{k}={val}" for k, val in p.config.items()),
                     "mean": ms(p.timing.mean_ms) if p.timing else "–",
                     "n": p.timing.n if p.timing else "–",
                     "note": note(st) + ("; the version runs this" if runs_this else ""), "runs": runs_this})
    shown = rows[:SWEEP_ROWS] + [r for r in rows[SWEEP_ROWS:] if r["runs"]]  # the one the version runs is always shown
    return {
        "version": v.name, "case": sw.case_name, "count": len(sw.points),
        "timed": sum(1 for p in sw.points if p.timing), "rows": shown, "all": len(rows),
        "date": sw.created_utc.strftime("%Y-%m-%d"), "run_id": sw.run_id, "order": sw.timing_order,
        "decision": decision(sw),
        "runs_config": ", ".join(f"{k}={val}" for k, val in runs_with.items()) if runs_with else "",
        "runs_in_sweep": any(r["runs"] for r in rows),
    }


def ceilings_view(s: AssignmentSummary) -> dict[str, Any] | None:
    c = s.ceilings
    if c is None:
        return None
    return {"copy_bw": f"{fmt_number(c.copy_gbps, 4)} GB/s",
            "matmul": [(k, f"{fmt_number(val, 3)} TFLOP/s") for k, val in c.matmul_tflops.items()],
            "date": c.created_utc.strftime("%Y-%m-%d"), "notes": c.notes, "matmul_n": c.matmul_n,
            "copy_gib": c.copy_bytes / 2**30}


def method_view(s: AssignmentSummary) -> dict[str, Any]:
    r = next((v.bench for v in s.versions if v.bench and v.bench.timing), None)
    if r is None or r.timing is None:
        return {}
    t = r.timing
    ns = [v.bench.timing.n for v in s.versions if v.bench and v.bench.timing]
    return {"method": t.method, "l2_flush": t.l2_flush, "warmup": t.warmup_reps, "rule": stopping_rule(t),
            "calls": f"{min(ns)}" if min(ns) == max(ns) else f"between {min(ns)} and {max(ns)}", "ranked": t.ranked,
            "tolerance": r.check.criterion}


def commands(s: AssignmentSummary) -> list[dict[str, str]]:
    """The command each version's benchmark figure came from, with the commit it ran at; versions
    next to each other whose figures one command took share a row ('v06_wgmma – v13_tma')."""
    out: list[dict[str, str]] = []
    last = None
    for v in s.versions:
        r = v.bench
        if r is None:
            last = None
            continue
        commit = (r.code.git_commit or "")[:10] + (" (uncommitted changes)" if r.code.git_dirty else "")
        command = r.command or "(not recorded)"
        if last is not None and r.command and (last["command"], last["commit"]) == (command, commit or "unknown"):
            last["version"] = f"{last['first']} – {v.name}"
            continue
        last = {"version": v.name, "first": v.name, "command": command, "commit": commit or "unknown",
                "run_id": r.run_id}
        out.append(last)
    return out


def records(s: AssignmentSummary) -> list[dict[str, Any]]:
    return [{"version": v.name, "case": r.case_name, "run_id": r.run_id, "commit": (r.code.git_commit or "")[:10],
             "dirty": r.code.git_dirty, "digest": r.code.digest}
            for v in s.versions for r in v.runs.values()]


def device(s: AssignmentSummary) -> list[str]:
    return device_lines(s.device) if s.device else []
