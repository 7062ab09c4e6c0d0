"""The work-log report as one self-contained HTML file (styles and SVG charts inline).

``build_context`` turns the assignment summary and the bound worklog into plain values for
``report_templates/report.html.j2``; ``render_html`` renders it.
"""

from __future__ import annotations

import statistics

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import jinja2

from ..analysis.facts import fmt_number
from ..standing import figure, peer_ms
from ..analysis.summary import AssignmentSummary, VersionSummary
from ..records import PeerResult, Run, derive
from . import TEMPLATES, charts, code
from .text import device_lines, leaderboard_block
from .worklog import Worklog, markdown_to_html



def ms(x: float | None) -> str:
    if x is None:
        return "–"
    return f"{fmt_number(x * 1e3, 4)} µs" if x < 1 else f"{fmt_number(x, 4)} ms"


def times(x: float | None) -> str:
    return "–" if x is None else f"{fmt_number(x, 3)}×"


def pct(x: float | None) -> str:
    return "–" if x is None else f"{fmt_number(100 * x, 3)} %"


@dataclass
class CaseRow:
    case: str
    shape: str
    check: str
    check_ok: bool
    median: str
    mean_err: str
    fastest: str
    slowest: str
    n: int | str
    tflops: str
    gbps: str
    roof: str
    stop: str


@dataclass
class Comparison:
    against: str
    kind: str  # 'version' | 'peer' | 'reference'
    theirs: str
    speedup: str
    faster: bool
    verdict: str = ""


@dataclass
class VersionView:
    name: str
    short: str
    anchor: str
    structure_html: str
    excerpt_html: str
    excerpt_path: str
    excerpt_line: int
    excerpt_truncated: bool
    config: str
    rows: list[CaseRow]
    comparisons: list[Comparison]
    notes_html: str
    notes_missing: bool
    observations: list[str]
    sweep: dict[str, Any] | None
    code_digest: str
    commit: str
    failed: str | None = None
    headline: str = ""
    profile_block: str | None = None
    ranked: list[str] = field(default_factory=list)
    profile_note: str = ""
    profile_from: str = ""
    timing_note: str = ""
    build_lines: list[str] = field(default_factory=list)
    extra_sections: list[dict[str, str]] = field(default_factory=list)


def _shape(case: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in case.items() if k != "seed") + f"; seed {case.get('seed')}"


def _row(r: Run, ceilings: Any = None) -> CaseRow:
    t, c = r.timing, r.check
    d = derive(r.work, t.mean_ms, ceilings) if t is not None else None
    if c.passed:
        err = f"max abs err {c.max_abs_error:.2g}" if c.max_abs_error is not None and not c.exact else "exact"
        check = f"pass ({err})"
    else:
        check = f"FAIL: {c.message}"
    if r.ranked_checks:
        check += f"; ranked: {sum(x.passed for x in r.ranked_checks)}/{len(r.ranked_checks)} re-checks pass"
    return CaseRow(
        case=r.case_name, shape=_shape(r.case), check=check, check_ok=c.passed,
        median=ms(t.median_ms) if t else "–",
        mean_err=f"{ms(t.mean_ms)} ± {ms(t.stderr_ms)}" if t else "–",
        fastest=ms(t.min_ms) if t else "–", slowest=ms(t.max_ms) if t else "–", n=t.n if t else "–",
        tflops=fmt_number(d.tflops, 4) if d and r.work.flops else "–", gbps=fmt_number(d.gbps, 4) if d else "–",
        roof=pct(d.fraction_of_ceiling) if d else "–", stop=t.stop_reason if t else "–",
    )


def _profile_note(r: Run | None) -> str:
    if r is None or not r.ok:
        return ""
    if r.profile is None:
        return "Not profiled: this run was made without --profile."
    if r.profile.status != "ok":
        return f"Not profiled ({r.profile.status}): {r.profile.reason}"
    return ""


def _ranked_line(r: Run) -> str:
    t = r.timing
    ok = sum(c.passed for c in r.ranked_checks)
    held = " with --hold" if t.method.endswith("+hold") else ""  # type: ignore[union-attr]
    held += ", interleaved" if t.interleaved else ""  # type: ignore[union-attr]
    return (f"{r.case_name}: median {ms(t.median_ms)} over {t.n} calls{held}, each on a fresh input "  # type: ignore[union-attr]
            f"(seed {r.seed} + 13·k), {ok} of {len(r.ranked_checks)} re-checks passed ({r.created_utc:%Y-%m-%d}, "
            f"run {r.run_id})")


METHOD_WORDS = {
    "cuda-events": "plain CUDA events around the Python call (the leaderboards' method: host launch time counts "
                   "whenever it outlasts the work queued before the call)",
    "cuda-events+hold": "CUDA events with the stream held until the whole call was queued (--hold: the GPU time "
                        "of the call, host launch time left out)",
}


def _timing_note(r: Run | None) -> str:
    """Which run the benchmark figures come from, how it was timed, and the GPU's state meanwhile."""
    if r is None or r.timing is None:
        return ""
    t = r.timing
    fig = figure(r)
    parts = [f"The figure is the {fig.how} (run {r.run_id}, {r.created_utc:%Y-%m-%d}), timed with "  # type: ignore[union-attr]
             f"{METHOD_WORDS.get(t.method, t.method)}"
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


def _build_lines(r: Run | None) -> list[str]:
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


def _peer_time(p: PeerResult) -> float | None:
    return peer_ms(p)


def _comparisons(v: VersionSummary, s: AssignmentSummary, verdict_fn) -> list[Comparison]:
    mine = v.figure_ms
    if mine is None:
        return []
    out: list[Comparison] = []
    prev = s.previous(v)
    if prev and prev.figure_ms:
        verdict = ""
        if verdict_fn and prev.bench and prev.bench.timing and v.bench and v.bench.timing:
            verdict = verdict_fn(prev.bench.timing, v.bench.timing)
        out.append(Comparison(prev.name, "previous version", ms(prev.figure_ms), times(prev.figure_ms / mine),
                              prev.figure_ms > mine, verdict))
    first = next((x for x in s.versions if x.ok), None)
    if first and first is not v and first is not prev and first.figure_ms:
        out.append(Comparison(first.name, "first version", ms(first.figure_ms), times(first.figure_ms / mine),
                              first.figure_ms > mine))
    own = [p for p in (v.bench.peers if v.bench else []) if p.timing is not None and v.bench.timing is not None
           and v.bench.timing.timed_like(p.timing) and (p.check is None or p.check.passed)]
    for p in own or s.peers:
        t = _peer_time(p)
        if t:
            out.append(Comparison(p.name, "peer, same run" if own else "peer, newest run that timed it", ms(t),
                                  times(t / mine), t > mine))
    for ref in s.references:
        out.append(Comparison(f"{ref.label} ({ref.gpu})", "public result", ms(ref.median_ms),
                              times(ref.median_ms / mine), ref.median_ms > mine))
    return out


def _sweep_view(v: VersionSummary) -> dict[str, Any] | None:
    sw = v.sweep
    if sw is None:
        return None
    from ..analysis.sweep import decision, note, standings

    runs_with = v.bench.code.config if v.bench is not None else {}
    rows = []
    for st in sorted(standings(sw), key=lambda st: st.point.timing.median_ms if st.point.timing else float("inf")):
        p = st.point
        rows.append({"config": ", ".join(f"{k}={val}" for k, val in p.config.items()),
                     "median": ms(p.timing.median_ms) if p.timing else "–",
                     "n": p.timing.n if p.timing else "–",
                     "note": note(st) + ("; the version runs this" if runs_with and p.config == runs_with else "")})
    pts = [(" ".join(str(val) for val in p.config.values()), p.timing.median_ms) for p in sw.points if p.timing]
    return {
        "case": sw.case_name, "count": len(sw.points), "timed": len(pts), "rows": rows,
        "param_names": " ".join(sw.points[0].config.keys()) if sw.points else "",
        "chart": charts.sweep_chart(pts, f"Sweep of {v.name} on {sw.case_name}: median per configuration"
                                    f" ({' '.join(sw.points[0].config.keys())})") if pts else "",
        "date": sw.created_utc.strftime("%Y-%m-%d"), "run_id": sw.run_id, "order": sw.timing_order,
        "decision": decision(sw),
    }


@dataclass
class Hooks:
    """Optional analysis plugged in by the caller (kept optional so the renderer never
    depends on which analyses exist)."""

    verdict: Any = None  # (TimingStats, TimingStats) -> str
    observations: Any = None  # (Run, Run | None, DeviceCeilings | None) -> list[str]
    profile_block: Any = None  # (Run) -> str | None
    extra_charts: list[Any] = field(default_factory=list)  # [(title, (summary) -> svg | None)]


def build_context(s: AssignmentSummary, wl: Worklog, repo_root: Path, hooks: Hooks | None = None) -> dict[str, Any]:
    hooks = hooks or Hooks()
    views: list[VersionView] = []
    for v in s.versions:
        ex = code.key_excerpt(v.version, repo_root)
        section = wl.versions.get(v.short)
        bench = v.bench
        cases = [v.runs[c] for c in s.assignment.case_order(list(v.runs))]
        failed = None
        if bench is None:
            failed = "no run on the benchmark case recorded for this GPU"
        elif not bench.ok:
            failed = bench.error or bench.check.message
        prev = s.previous(v)
        prof = v.profiled_run()
        # observations read the profile: give them the profiled run's metrics with the benchmark timing
        obs_run = bench.model_copy(update={"profile": prof.profile}) if bench and prof else bench
        prev_run = None
        if prev and prev.bench:
            pp = prev.profiled_run()
            prev_run = prev.bench.model_copy(update={"profile": pp.profile}) if pp else prev.bench
        obs = hooks.observations(obs_run, prev_run, s.ceilings) if hooks.observations and obs_run else []
        headline = ""
        fig = v.figure
        if fig is not None and bench is not None:
            der = fig.derived(s.ceilings)
            headline = f"{ms(fig.ms)} on the benchmark case"
            if bench.work.flops:
                headline += f", {fmt_number(der.tflops, 3)} TFLOP/s"
            else:
                headline += f", {fmt_number(der.gbps, 4)} GB/s"
            if der.fraction_of_ceiling is not None:
                headline += f" ({pct(der.fraction_of_ceiling)} of the measured roof)"
        snap = bench.code if bench else (next(iter(v.runs.values())).code if v.runs else None)
        views.append(VersionView(
            name=v.name, short=v.short, anchor=v.name,
            structure_html=markdown_to_html(v.version.docstring() or "*(no docstring)*"),
            excerpt_html=ex.html(), excerpt_path=ex.path, excerpt_line=ex.first_line,
            excerpt_truncated=ex.truncated,
            config=", ".join(f"{k}={val}" for k, val in (snap.config.items() if snap else [])),
            rows=[_row(r, s.ceilings) for r in cases],
            ranked=[_ranked_line(rr) for c in s.assignment.case_order(list(v.runs)) if (rr := v.ranked(c)) is not None],
            comparisons=_comparisons(v, s, hooks.verdict),
            notes_html=markdown_to_html(section.markdown) if section else "",
            notes_missing=section is None, observations=obs, sweep=_sweep_view(v),
            code_digest=snap.digest if snap else "–",
            commit=((snap.git_commit or "")[:10] + (" (dirty)" if snap.git_dirty else "")) if snap else "–",
            failed=failed, headline=headline,
            profile_block=hooks.profile_block(prof) if hooks.profile_block and prof else None,
            profile_note="" if prof else _profile_note(bench),
            timing_note=_timing_note(bench),
            build_lines=_build_lines(bench),
            profile_from=(f"from run {prof.run_id}, an earlier run of the same code" if prof and bench and prof is not bench
                          and prof.code.digest == bench.code.digest else
                          f"from run {prof.run_id} (older code {prof.code.digest})" if prof and prof is not bench else ""),
        ))
    best = s.best
    dev = s.device
    leaderboard = None
    if best and best.bench and best.bench.timing and dev:
        leaderboard = leaderboard_block(best.bench.timing, title=f"{s.assignment.name} {best.name}",
                                        case=best.bench.case, device_lines=device_lines(dev), symbols=False)
    stop = _stopping_facts(s)
    extra = []
    for title, fn in hooks.extra_charts:
        svg = fn(s)
        if svg:
            extra.append({"title": title, "svg": svg})
    return {
        "title": wl.title or s.assignment.title,
        "subtitle": s.assignment.title if wl.title and wl.title != s.assignment.title else "",
        "assignment": s.assignment.name,
        "authors": wl.authors,
        "gpu": dev.name if dev else s.gpu,
        "gpu_slug": s.gpu.upper(),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        "last_run": max((r.created_utc for v in s.versions for r in v.runs.values())).strftime("%Y-%m-%d %H:%M UTC"),
        "benchmark_case": s.benchmark_case,
        "benchmark_shape": _shape(best.bench.case if best and best.bench else
                                  next((r.case for v in s.versions for r in v.runs.values()
                                        if r.case_name == s.benchmark_case), {})),
        "leaderboard": leaderboard,
        "best": best.name if best else None,
        "best_headline": next((x.headline for x in views if best and x.name == best.name), ""),
        "versions": views,
        "front": [{"title": sec.title, "html": markdown_to_html(sec.markdown)} for sec in wl.front],
        "stopped_html": markdown_to_html(wl.stopped.markdown) if wl.stopped else "",
        "llms_html": markdown_to_html(wl.llms.markdown) if wl.llms else "",
        "stop": stop,
        "chart_time": charts.time_per_version(s),
        "chart_roofline": charts.roofline(s),
        "extra_charts": extra,
        "device_lines": device_lines(dev) if dev else [],
        "ceilings": _ceilings_view(s),
        "method": _method(s),
        "records": [{"version": v.name, "case": r.case_name, "run_id": r.run_id, "commit": (r.code.git_commit or "")[:10],
                     "dirty": r.code.git_dirty, "digest": r.code.digest}
                    for v in s.versions for r in v.runs.values()],
        "code_css": code.css(),
        "worklog_path": str(wl.path.relative_to(repo_root)) if wl.path.is_relative_to(repo_root) else str(wl.path),
    }


def _ceilings_view(s: AssignmentSummary) -> dict[str, Any] | None:
    c = s.ceilings
    if c is None:
        return None
    return {"copy_bw": f"{fmt_number(c.copy_gbps, 4)} GB/s",
            "matmul": [(k, f"{fmt_number(val, 3)} TFLOP/s") for k, val in c.matmul_tflops.items()],
            "date": c.created_utc.strftime("%Y-%m-%d"), "notes": c.notes, "matmul_n": c.matmul_n,
            "copy_gib": c.copy_bytes / 2**30}


def _method(s: AssignmentSummary) -> dict[str, Any]:
    r = next((v.bench for v in s.versions if v.bench and v.bench.timing), None)
    if r is None or r.timing is None:
        return {}
    t = r.timing
    return {"method": t.method, "l2_flush": t.l2_flush, "warmup": t.warmup_reps,
            "target": f"{t.target_rel_stderr * 100:g} %", "budget": f"{t.budget_s:g} s", "ranked": t.ranked,
            "tolerance": r.check.criterion}


def _stopping_facts(s: AssignmentSummary) -> list[str]:
    """Computed sentences for Part 2: where the best version stands against the roof,
    the peers and the public results."""
    best = s.best
    fig = best.figure if best is not None else None
    if best is None or fig is None:
        return ["No version has a timed run on the benchmark case yet."]
    r, d = fig.run, fig.derived(s.ceilings)
    out = [f"The fastest version, {best.name}, runs the benchmark case in {ms(fig.ms)}, the "
           f"{fig.how} (standard error {ms(r.timing.stderr_ms)}; median {ms(r.timing.median_ms)})."]  # type: ignore[union-attr]
    out += _crosscheck_sentences(s, best.name)
    if d.floor_ms and d.ceiling_value:
        unit = d.ceiling_unit or ""
        what = "TFLOP/s" if r.work.flops else "GB/s"
        got = d.tflops if r.work.flops else d.gbps
        out.append(f"It reaches {fmt_number(got, 4)} {what}, {pct(d.fraction_of_ceiling)} of the measured ceiling "
                   f"({d.ceiling}: {fmt_number(d.ceiling_value, 4)} {unit}); the roofline floor for this work is "
                   f"{ms(d.floor_ms)}, so it is {times(fig.ms / d.floor_ms)} from the roof "
                   f"and at most {ms(fig.ms - d.floor_ms)} remain to be won.")
    own = [p for p in r.peers if p.timing is not None and r.timing.timed_like(p.timing)]  # type: ignore[union-attr]
    timed = own or [p for p in s.peers if p.timing]
    if timed:
        fastest = min(timed, key=lambda p: peer_ms(p))  # type: ignore[arg-type,return-value]
        theirs = peer_ms(fastest)
        rel = theirs / fig.ms  # type: ignore[operator]
        word = "faster" if rel > 1 else "slower"
        where = "timed the same way in the same run" if own else "from the newest run that timed the peers"
        out.append(f"The fastest peer, {fastest.name} ({fastest.description}), takes {ms(theirs)} ({where}): "
                   f"{best.name} is {times(rel if rel > 1 else 1 / rel)} {word}.")
    all_runs = {r.run_id: r for v in s.versions for r in v.all_runs}
    course_mine = next((statistics.fmean(a.full_window_means())
                        for check in reversed(s.crosschecks_of(best.name))
                        for a in agreements_of(check, all_runs)
                        if a.name == best.name and a.case == s.benchmark_case and a.full_window_means()), None)
    for ref in s.references:
        where = (f"a public result ({ref.source or 'source not named'}), measured on another {ref.gpu} in another "
                 "session" if ref.gpu.lower() == s.gpu.lower() else
                 f"a public result measured on a {ref.gpu}, not this GPU: not comparable as is")
        if course_mine is not None:
            rel = ref.median_ms / course_mine
            out.append(f"{ref.label}: {ms(ref.median_ms)}, {where}. Our export under the same course harness "
                       f"took {ms(course_mine)} on this card: {times(rel if rel > 1 else 1 / rel)} "
                       f"{'faster' if rel > 1 else 'slower'} than that entry, with that caveat.")
        else:
            out.append(f"{ref.label}: {ms(ref.median_ms)}, {where}; no course-harness run of {best.name} over "
                       "the full window on this card to set beside it.")
    return out


def agreements_of(check, runs):  # type: ignore[no-untyped-def]
    from ..analysis.crosscheck import agreements

    return agreements(check, runs)


def _crosscheck_sentences(s: AssignmentSummary, version: str) -> list[str]:
    """What the newest cross-check of the version says, in sentences: the course harness's verdict
    and means, do_bench's median, each beside our figure from the same session."""
    from ..analysis.crosscheck import agreements

    checks = s.crosschecks_of(version)
    if not checks:
        return [f"No cross-check of {version} on this GPU yet (`report crosscheck {s.assignment.name} "
                f"{version.split('_')[0]}` times it with the course's harness and do_bench beside ours)."]
    runs = {r.run_id: r for v in s.versions for r in v.all_runs}

    def full(c: Any) -> bool:
        return any(a.full_window_means() for a in agreements(c, runs) if a.name == version and a.case == s.benchmark_case)

    out = []
    # the newest cross-check, and, when the course's rule cut every run of it short, the newest one whose
    # course runs covered the same window as ours
    shown = [checks[-1]] + ([c] if not full(checks[-1]) and (c := next((x for x in reversed(checks) if full(x)),
                                                                         None)) is not None else [])
    for check in shown:
        out += _one_crosscheck(check, runs, s, version)
    return out


def _one_crosscheck(check: Any, runs: dict[str, Run], s: AssignmentSummary, version: str) -> list[str]:
    from ..analysis.crosscheck import AGREEMENT_PCT, agreements

    rows = [a for a in agreements(check, runs) if a.case == s.benchmark_case]
    out = []
    mine = next((a for a in rows if a.name == version), None)
    if mine is not None and mine.ours_ms:
        bits = []
        parts = []
        for (mean, ours, against), n in zip(mine.course_pairs(), mine.course_calls or (None,) * 9):
            if ours is None:
                parts.append(f"{ms(mean)} over {n or '?'} calls")
            elif against == "our figure":
                parts.append(f"{ms(mean)} over {n} calls ({(mean / ours - 1) * 100:+.1f} %)")
            else:
                parts.append(f"{ms(mean)} over only {n} calls, the course's rule having stopped it "
                             f"({(mean / ours - 1) * 100:+.1f} % from the mean of our first {n})")
        if parts:
            bits.append("the course's own harness (its eval.py benchmark on the export) " + "; ".join(parts))
        if mine.do_bench_ms is not None:
            bits.append(f"triton's do_bench a median of {ms(mine.do_bench_ms)} ({mine.gap_pct(mine.do_bench_ms):+.1f} %)")
        if bits:
            verdict = ("within" if mine.agrees else "NOT within") + f" {AGREEMENT_PCT:g} %"
            out.append(f"In one session on this card (cross-check {check.run_id}), ours measured {ms(mine.ours_ms)}, "
                       + "; ".join(bits) + f": {verdict}.")
    tests = [r for e in check.entries if e.name == version for r in e.course if r.mode == "test"]
    if tests:
        out.append(f"The course's harness in test mode: {tests[-1].verdict or 'no verdict'} on "
                   f"{len(tests[-1].cases)} case(s)" + (f" ({check.course_repo}, commit {check.course_commit[:10]})"
                                                       if check.course_repo and check.course_commit else "") + ".")
    for a in rows:
        theirs, ours_full = a.full_window_means(), mine.full_window_means() if mine is not None else []
        if a.peer and theirs and ours_full:
            rel = statistics.fmean(theirs) / statistics.fmean(ours_full)
            out.append(f"Submitted the same way (through a shim), peer {a.name} had a course-harness mean of "
                       f"{ms(statistics.fmean(theirs))} over its full runs: {version} is "
                       f"{times(rel if rel > 1 else 1 / rel)} {'faster' if rel > 1 else 'slower'} under the "
                       "course's own timer.")
    return out


def render_html(context: dict[str, Any]) -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=jinja2.select_autoescape(["html", "j2"]),
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    css = (TEMPLATES / "report.css").read_text(encoding="utf-8")
    return env.get_template("report.html.j2").render(**context, css=css)
