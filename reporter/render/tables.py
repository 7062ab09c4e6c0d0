"""Rich tables and panels of the commands that read records: `report list`, `show`, `diff`,
`history` and `crosscheck`. Built from records and analysis, printed by the commands."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.console import Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text
from ..analysis.facts import fmt_number
from .numbers import coverage, stopped_by, stopping_rule

if TYPE_CHECKING:
    from pathlib import Path

    from ..analysis.diff import FigureDelta, RunDiff
    from ..analysis.listing import ListRow
    from ..records import CodeSnapshot, KernelProfile, ProbeRecord, ProbeResult, ReverifyCase, Run


def agreement_table(check, runs=None):  # type: ignore[no-untyped-def]
    from rich.table import Table

    from ..analysis.crosscheck import AGREEMENT_PCT, agreements
    from ..analysis.diff import format_ms

    t = Table(title=f"{check.assignment} {check.version} on {check.device.name}: three timers, one session",
              title_justify="left", box=None, header_style="bold", pad_edge=False,
              caption="course runs that stopped early (its standard-error rule) are set against our mean over "
                      "as many first calls", caption_justify="left")
    for col in ("callable", "case", "ours (mean)", "course harness (mean, calls)", "do_bench (median)", "course test",
                f"within {AGREEMENT_PCT:g} %"):
        t.add_column(col, justify="left" if col in ("callable", "case") else "right")

    def gap(x, ref):  # type: ignore[no-untyped-def]
        if x is None or not ref:
            return ""
        text = f"{(x / ref - 1) * 100:+.1f}"
        return f" ({'+0.0' if text == '-0.0' else text} %)"  # never '-0.0 %'

    for ag in agreements(check, runs):
        course = "\n".join(f"{format_ms(mean)} [{n or '?'}]{gap(mean, ours)}"
                           + ("" if ours is ag.ours_ms or ours is None else f" vs {format_ms(ours)}")
                           for (mean, ours, _), n in zip(ag.course_pairs(), ag.course_calls or [None] * 9)) or "—"
        t.add_row(("peer " if ag.peer else "") + ag.name, ag.case,
                  (format_ms(ag.ours_ms) + (f" [{ag.ours_calls}]" if ag.ours_calls else "")) if ag.ours_ms else "—",
                  course, (format_ms(ag.do_bench_ms) if ag.do_bench_ms else "—") + gap(ag.do_bench_ms, ag.ours_ms),
                  {True: "pass", False: "FAIL", None: "—"}[ag.course_passed],
                  {True: "yes", False: "NO", None: "—"}[ag.agrees])
    return t


VERDICT_STYLE = {"faster": "bold green", "slower": "bold red", "same": "bold"}


def list_table(rows: list[ListRow], width: int) -> Group:
    """One table of `report list`: its title, a header and a line a version, its caption.

    Laid out here as aligned lines of text rather than a rich Table: the same columns, widths and
    ellipses, at a tenth of the time (a rich Table measures and renders every cell, 0.17 s for the
    66 rows of the committed logs, a third of the command's budget)."""
    from ..analysis.diff import format_ms

    first = next((r.first_version for r in rows if r.first_version), None)
    device = next((r.run.device.name for r in rows if r.run is not None), None)
    on = f" · {device}" if device else f" · {rows[0].gpu}" if rows[0].gpu else " · no runs yet"
    earlier = any(r.peers_from_earlier_run for r in rows)
    narrow = width < 100  # 80 columns: peers' names cut, the date without its year, one space between columns
    # a version whose CASES_WHERE leaves the table's case out shows its first benchmark case: a column says which
    cases = any(r.headline or r.excluded for r in rows)
    caption = ("time: each version's figure, the mean of the run that stands for it (rested runs first; report "
               "show VERSION says how it was taken); vs: speedup (above 1: faster), the report's ratio, in one "
               "session that timed both where there is one"
               + ("; case: the first benchmark case a version runs where its CASES_WHERE leaves this one out (each "
                  "ratio on the first benchmark case both run; —: none in common)" if cases else "")
               + ("\n* that run timed no peers: best peer and vs peer come from the latest run of the same code "
                  "that did" if earlier else ""))
    headers = ["version", *(["case"] if cases else []), "check", "time",
               f"vs {first.split('_')[0]}" if first else "vs first", "best peer", "vs peer", "date (UTC)", "ncu"]
    right = {"time", "vs peer", headers[4 if cases else 3]}  # the numbers, right-aligned
    lines: list[list[Text]] = []
    for row in rows:
        run = row.run
        case = [Text(row.headline or ("none (CASES_WHERE)" if row.excluded else ""), style="dim" if row.excluded
                     else "")] if cases else []
        if run is None:
            lines.append([Text(row.version), *case, Text(""), Text("not run", style="dim"), *[Text("")] * 5])
            continue
        check = Text("ok", style="green") if run.check.passed else Text("FAIL", style="bold red")
        median = format_ms(run.timing.mean_ms) if run.timing else "—"
        vs_first = f"{fmt_number(row.speedup_vs_first, 3)}×" if row.speedup_vs_first else "—"
        if row.speedup_vs_first and row.compared_on:
            vs_first += f" on {row.compared_on}"
        vs_peer = f"{fmt_number(row.speedup_vs_best_peer, 3)}×" if row.speedup_vs_best_peer else "—"
        peer = row.best_peer or "—"
        if narrow and len(peer) > 12:
            peer = peer[:11] + "…"
        peer += "*" if row.peers_from_earlier_run else ""
        lines.append([Text(row.version), *case, check, Text(median), Text(vs_first), Text(peer), Text(vs_peer),
                      Text(run.created_utc.strftime("%m-%d %H:%M" if narrow else "%Y-%m-%d %H:%M")),
                      Text("yes" if row.profiled else "")])
    gap = 1 if narrow else 2
    widths = [max([cell_len(h), *(line[i].cell_len for line in lines)]) for i, h in enumerate(headers)]
    while sum(widths) + gap * (len(widths) - 1) > width and max(widths) > 1:
        widths[widths.index(max(widths))] -= 1  # the widest column gives a cell, as a rich Table shrinks

    def laid(cells: list[Text], style: str = "") -> Text:
        out = Text(style=style, no_wrap=True, overflow="ellipsis")
        for i, (cell, w) in enumerate(zip(cells, widths, strict=True)):
            cell = cell.copy()
            cell.truncate(w, overflow="ellipsis")
            cell.align("right" if headers[i] in right else "left", w)
            out.append_text(cell)
            if i < len(cells) - 1:
                out.append(" " * gap)
        out.rstrip()
        return out

    title = Text.assemble((rows[0].assignment, "bold"), f"{on} · case {rows[0].case}")
    body = [laid([Text(h) for h in headers], "bold"), *(laid(line) for line in lines)]
    return Group(title, *body, Text(caption, style="dim"))


def facts_grid(run: Run) -> Table:
    """The check and the timing method, two lines each, labelled on the left."""
    from ..analysis.diff import format_ms, format_ms_range
    from ..analysis.stats import median_ci

    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    c = run.check
    tol = c.criterion
    verdict = Text("✔ passed" if c.passed else "✘ FAILED", style="green" if c.passed else "bold red")
    verdict.append(f": {c.mismatches:,} of {c.n_elements:,} elements out of tolerance ({tol}, seed {c.seed})")
    errors = [f"{label} {value:.3g}" for label, value in (("max abs error", c.max_abs_error),
                                                          ("max rel error", c.max_rel_error)) if value is not None]
    if c.nan_count or c.inf_count:
        errors.append(f"{c.nan_count} NaN, {c.inf_count} inf")
    if run.ranked_checks:
        failed = sum(not r.passed for r in run.ranked_checks)
        errors.append(f"ranked re-checks {len(run.ranked_checks) - failed}/{len(run.ranked_checks)} passed")
    if not c.passed and c.message:
        errors.append(c.message)
    grid.add_row("check", Text.assemble(verdict, "\n" + "; ".join(errors) if errors else ""))
    if run.timing:
        t = run.timing
        ci = median_ci(t.samples_ms)
        grid.add_row("timing", f"median {format_ms(t.median_ms, 5)}, {coverage(ci.coverage)} CI "
                               f"{format_ms_range(ci.low_ms, ci.high_ms)}; {stopped_by(t)}\n"
                               f"repeated {stopping_rule(t)}\n"
                               f"{t.method}, L2 flush {'on' if t.l2_flush else 'off'}, {t.warmup_reps} warm-up calls"
                               + (", ranked (fresh input every repetition)" if t.ranked else ""))
    return grid


def derived_table(run: Run) -> Table:
    from ..render.diff_text import figure_value

    d = run.derived
    assert d is not None
    table = Table(title="derived from the work model", title_justify="left", box=None, header_style="bold",
                  pad_edge=False, padding=(0, 1))
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_column("", style="dim")
    table.add_row("compute", f"{d.tflops:,.1f}" if d.tflops is not None else "—", "TFLOP/s")
    table.add_row("memory traffic", f"{d.gbps:,.1f}", "GB/s")
    table.add_row("arithmetic intensity", f"{d.arithmetic_intensity:,.1f}" if d.arithmetic_intensity is not None else "—",
                  "flop/B")
    if d.ceiling_value is not None:
        table.add_row(f"ceiling ({d.ceiling})", f"{d.ceiling_value:,.1f}", d.ceiling_unit or "")
    if d.fraction_of_ceiling is not None:
        table.add_row("fraction of ceiling", figure_value(d.fraction_of_ceiling, "of ceiling"), "")
    if d.floor_ms is not None:
        table.add_row("roofline floor", f"{d.floor_ms:.3f}", "ms")
    return table


def peers_table(run: Run) -> Table:
    from ..analysis.diff import format_ms

    table = Table(title="peers timed in the same run", title_justify="left", box=None, header_style="bold",
                  pad_edge=False, padding=(0, 1))
    table.add_column("peer", no_wrap=True)
    table.add_column("check")
    table.add_column("median", justify="right", no_wrap=True)
    table.add_column(f"{run.version.split('_')[0]} vs peer", justify="right")
    table.add_column("what it is", style="dim")
    ours = run.timing.mean_ms if run.timing else None
    for p in run.peers:
        if p.timing is None:
            table.add_row(p.name, Text("error", style="red"), "—", "—", p.error or p.description)
            continue
        check = "not checked" if p.check is None else "ok" if p.check.passed else "FAIL"  # None: a baseline
        speedup = f"{p.timing.mean_ms / ours:.2f}×" if ours else "—"
        table.add_row(p.name, check, format_ms(p.timing.mean_ms), speedup, p.description)
    return table


def probes_table(probes: list[ProbeResult], case_name: str, against: Run | None = None) -> Table:
    """The probes timed on one case; beside each, its time as a share of ``against``'s (the version
    whose record holds them) when there is one."""
    from ..analysis.diff import format_ms

    table = Table(title=f"probes on {case_name}: pieces of a kernel timed alone, unchecked", title_justify="left",
                  box=None, header_style="bold", pad_edge=False, padding=(0, 1))
    table.add_column("probe", no_wrap=True)
    table.add_column("mean", justify="right", no_wrap=True)
    table.add_column("± stderr", justify="right", no_wrap=True)
    table.add_column("n", justify="right")
    ours = against.timing.mean_ms if against is not None and against.timing else None
    if ours:
        table.add_column(f"of {against.version.split('_')[0]}'s time", justify="right")  # type: ignore[union-attr]
    table.add_column("what it is", style="dim")
    for p in probes:
        if p.timing is None:
            table.add_row(p.name, Text("error", style="red"), "—", "—", *(["—"] if ours else []),
                          p.error or p.description)
            continue
        share = [f"{100 * p.timing.mean_ms / ours:.0f} %"] if ours else []
        table.add_row(p.name, format_ms(p.timing.mean_ms), format_ms(p.timing.stderr_ms), str(p.timing.n), *share,
                      p.description)
    return table


def code_table(c: CodeSnapshot, logs: Path) -> Table:
    """The files a record's code was made of, with their length (the text from the source store under
    ``logs``), sha256 and the configuration; a text the store lacks is named as missing."""
    from .. import sources

    state = "clean" if c.git_dirty is False else "dirty: uncommitted changes" if c.git_dirty else "state unknown"
    table = Table.grid(padding=(0, 1))
    which = f"code {c.digest}" if c.files else "code: the files were not recorded"
    table.title = f"{which} · commit {c.git_commit or 'unknown'} ({state})"
    table.title_justify = "left"
    table.title_style = "bold"
    table.add_column(no_wrap=True)
    for f in c.files:
        try:
            size = f"[dim]{len(sources.read(logs, f).splitlines())} lines[/dim]"
        except sources.SourceError as e:
            size = f"[yellow]text unavailable[/yellow] [dim]({escape(str(e))})[/dim]"
        table.add_row(f"{escape(f.path)}  {size}")
        table.add_row(f"  [dim]sha256[/dim] {f.sha256}")
    if c.config:
        table.add_row("config: " + ", ".join(f"{k}={v}" for k, v in c.config.items()))
    return table


def refs_table(d: RunDiff, width: int) -> Table:
    same_gpu = d.a.gpu == d.b.gpu
    table = Table(box=None, show_header=True, header_style="bold", pad_edge=False, padding=(0, 1),
                  collapse_padding=width < 100,
                  caption=f"both on {d.a.gpu}" if same_gpu else None, caption_justify="left")
    for col in ("", "version", "run", *([] if same_gpu else ["GPU"]), "commit", "code"):
        table.add_column(col, no_wrap=True)
    for side, r in (("A", d.a), ("B", d.b)):
        commit = (r.git_commit or "?") + (" [yellow](dirty)[/yellow]" if r.git_dirty else "")
        run_id = r.run_id if width >= 100 else r.run_id.split("_")[0]  # the rest repeats GPU and case
        table.add_row(side, r.version, run_id, *([] if same_gpu else [gpu_label(r.gpu)]), commit, r.code_digest)
    return table


def gpu_label(name: str) -> str:
    from ..records import gpu_slug

    return gpu_slug(name)


def timing_table(d: RunDiff) -> Table:
    from ..analysis.diff import format_ms
    from ..render.diff_text import rel_change_text

    v = d.verdict
    assert v is not None
    table = Table(box=None, header_style="bold", pad_edge=False, padding=(0, 1))
    for col, justify in (("timing", "left"), ("A", "right"), ("B", "right"), ("change", "right"), ("B/A", "right")):
        table.add_column(col, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for row in d.timing_rows:
        is_ms = row.unit == "ms"
        a, b = (format_ms(row.a, 5), format_ms(row.b, 5)) if is_ms else (f"{row.a:g}", f"{row.b:g}")
        table.add_row(row.name, a, b, rel_change_text(row.rel_change), f"{row.b / row.a:.3f}" if row.a else "—")
    return table


def figures_table(figures: list[FigureDelta]) -> Table:
    from ..render.diff_text import figure_label, figure_value, rel_change_text

    table = Table(title="figures both runs have, most moved first", title_justify="left", box=None,
                  header_style="bold", pad_edge=False, padding=(0, 1))
    table.add_column("group", no_wrap=True, style="dim", max_width=24, overflow="ellipsis")
    table.add_column("figure", overflow="fold")
    table.add_column("A", justify="right", no_wrap=True)
    table.add_column("B", justify="right", no_wrap=True)
    table.add_column("change", justify="right", no_wrap=True)
    for f in figures:
        change = rel_change_text(f.rel_change)
        style = "" if f.rel_change == 0 else "bold" if f.moved >= 0.05 else ""
        table.add_row(f.group.replace("profile ", "ncu ", 1), figure_label(f), figure_value(f.a, f.unit),
                      figure_value(f.b, f.unit), Text(change, style=style))
    return table


def paths_pair(path_a: str | None, path_b: str | None) -> str:
    """'kernels/x/{v01.py → v02.py}' when both sit in one folder."""
    if path_a and path_b:
        head_a, _, name_a = path_a.rpartition("/")
        head_b, _, name_b = path_b.rpartition("/")
        if head_a == head_b:
            return f"{head_a}/{{{name_a} → {name_b}}}" if name_a != name_b else path_a
    return f"{path_a or '(new)'} → {path_b or '(removed)'}"


def history_table(assignment: str, version: str, case: str, found: list[Run], width: int) -> Table:
    from ..analysis.diff import comparability_warnings, compare_timing, format_ms, format_ms_range
    from ..analysis.stats import median_ci

    gpus = list(dict.fromkeys(r.device.slug for r in found))
    on = f" · on {found[0].device.name}" if len(gpus) == 1 else ""
    table = Table(title=f"[bold]{assignment} {version}[/bold] · case {case}{on} · {len(found)} run(s)",
                  title_justify="left", box=None, header_style="bold", pad_edge=False, padding=(0, 1),
                  collapse_padding=width < 100,
                  caption=f"vs previous: the diff verdict against the run above on the same GPU (⚠: measured "
                          f"differently, see report diff); runs of different sessions can differ by a few percent "
                          f"with the card's state alone; name a run as {version.split('_')[0]}@<run id prefix>",
                  caption_justify="left")
    table.add_column("run id", no_wrap=True, overflow="ellipsis")  # a cut id is still a usable prefix
    if len(gpus) > 1:
        table.add_column("GPU", no_wrap=True)
    table.add_column("n", justify="right", no_wrap=True)
    table.add_column("median (99% CI)", justify="right", no_wrap=True)
    table.add_column("vs previous", no_wrap=True)
    table.add_column("commit", no_wrap=True)
    table.add_column("code", no_wrap=True)
    previous_on: dict[str, Run] = {}
    for run in found:
        commit = (run.code.git_commit or "?")[:8] + ("*" if run.code.git_dirty else "")
        gpu = [run.device.slug] if len(gpus) > 1 else []
        if run.timing is None:
            table.add_row(run.run_id[:19], *gpu, "—", Text("check failed", style="red"), "", commit,
                          run.code.digest[:8])
            continue
        ci = median_ci(run.timing.samples_ms)
        ci_text = format_ms_range(ci.low_ms, ci.high_ms).removesuffix(" ms")
        median = f"{format_ms(run.timing.median_ms)} [dim]({ci_text})[/dim]"
        vs = Text("")
        before = previous_on.get(run.device.slug)
        if before is not None and before.timing is not None:
            v = compare_timing(before.timing, run.timing)
            label = "same" if v.verdict == "same" else (
                f"{1 / v.ratio:.2f}× faster" if v.verdict == "faster" else f"{v.ratio:.2f}× slower")
            vs = Text(label, style={"faster": "green", "slower": "red"}.get(v.verdict, ""))
            if comparability_warnings(before, run):
                vs.append(" ⚠", style="bold yellow")
            if before.code.digest != run.code.digest:
                vs.append(" (code)", style="dim")
        table.add_row(run.run_id[:19], *gpu, str(run.timing.n), median, vs, commit, run.code.digest[:8])
        previous_on[run.device.slug] = run
    return table


def kernel_metrics_table(k: KernelProfile, all_metrics: bool) -> tuple[Table, int]:
    """One profiled kernel: its launch and the CS149 block (every metric with ``all_metrics``), and
    how many of its metrics were left out."""
    from ..ncu_metrics import CS149_BLOCK
    from .diff_text import figure_value

    table = Table(title=f"#{k.index} {k.name}", title_justify="left", box=None, header_style="bold",
                  pad_edge=False, padding=(0, 1))
    table.add_column("metric", overflow="fold")
    table.add_column("value", justify="right", no_wrap=True)
    if k.grid or k.block:
        table.add_row("launch", f"grid {k.grid} × block {k.block}")
    shown = [(label, k.metrics[m]) for label, m in CS149_BLOCK if m in k.metrics]
    if all_metrics:
        named = {m for _, m in CS149_BLOCK}
        shown += [(name, m) for name, m in k.metrics.items() if name not in named]
    for label, m in shown:
        table.add_row(label, figure_value(m.value, m.unit))
    return table, len(k.metrics) - len(shown)


def reverify_table(by_version: dict[str, list[ReverifyCase]]) -> Table:
    """`report reverify`'s verdicts: each version and case, before and now, report diff's sentence."""
    from ..analysis.diff import format_ms

    table = Table("version", "case", "before", "now", "verdict (now against before)", title="re-verification")
    for version, cases in by_version.items():
        for c in cases:
            table.add_row(version, c.case_name,
                          format_ms(c.before.timing.median_ms) if c.before.timing else "-",
                          format_ms(c.after.timing.median_ms) if c.after.timing else "-",
                          c.summary if c.verdict else f"[red]{c.summary}[/red]")
    return table


def probe_grid(record: ProbeRecord) -> Table:
    """What a probe record says about itself: what it measured, where, when, by which command."""
    from .text import device_lines

    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    grid.add_row("measured", escape(record.description or "—"))
    grid.add_row("when", f"{record.created_utc:%Y-%m-%d %H:%M:%S} UTC")
    grid.add_row("device", escape("\n".join(device_lines(record.device)) if record.device is not None
                                  else f"{record.gpu} (no device block was recorded)"))
    grid.add_row("script", escape(record.tool or "not kept"))
    grid.add_row("command", escape(record.command or "not recorded"))
    for label, g in (("GPU before", record.gpu_before), ("GPU after", record.gpu_after)):
        if g is not None:
            parts = [f"{name} {value:.0f} {unit}" for name, value, unit in (
                ("SM", g.sm_clock_mhz, "MHz"), ("memory", g.mem_clock_mhz, "MHz"), ("", g.temp_c, "°C"),
                ("", g.power_w, "W")) if value is not None]
            reasons = ", ".join(g.clock_event_reasons) or "no clock event reasons"
            grid.add_row(label, ", ".join(p.strip() for p in parts) + f"; {reasons}")
    if record.attachments:
        grid.add_row("beside it", escape(", ".join(record.attachments)))
    for note in record.notes:
        grid.add_row("note", escape(note))
    return grid


def data_outline(data: object, depth: int = 3, width: int = 8) -> str:
    """The shape of a probe's results, for a first look: keys (up to ``width`` per level), list
    lengths, numbers as they are, to ``depth`` levels; the worklog binds the values by these keys."""
    lines: list[str] = []

    def walk(x: object, indent: int, level: int) -> None:
        pad = "  " * indent
        if isinstance(x, dict):
            for i, (k, v) in enumerate(x.items()):
                if i == width:
                    lines.append(f"{pad}… {len(x) - width} more keys")
                    break
                lines.append(f"{pad}{k!r}: {_leaf(v)}")
                if isinstance(v, dict | list) and level < depth and not _numbers(v):
                    walk(v, indent + 1, level + 1)
        elif isinstance(x, list):
            for i, v in enumerate(x[:width]):
                lines.append(f"{pad}[{i}]: {_leaf(v)}")
                if isinstance(v, dict | list) and level < depth and not _numbers(v):
                    walk(v, indent + 1, level + 1)
            if len(x) > width:
                lines.append(f"{pad}… {len(x) - width} more items")

    walk(data, 0, 1)
    return "\n".join(lines)


def _numbers(v: object) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, int | float) and not isinstance(x, bool) for x in v)


def _leaf(v: object) -> str:
    if isinstance(v, dict):
        return f"{{{len(v)} keys}}"
    if _numbers(v):
        xs = [float(x) for x in v]  # type: ignore[union-attr]
        return f"{len(xs)} numbers, {min(xs):.6g} to {max(xs):.6g}"
    if isinstance(v, list):
        return f"[{len(v)} items]"
    text = repr(v)
    return text if len(text) <= 60 else text[:59] + "…"
