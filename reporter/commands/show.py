"""`report show`: one run in full (by default the one that stands for the version): the leaderboard
block, the check, derived figures, peers, profile, code."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.panel import Panel
from rich.text import Text

from ..render.tables import code_table, derived_table, facts_grid, kernel_metrics_table, peers_table, probes_table
from .common import CaseOpt, GpuOpt, LogsOpt, RootOpt, console, fail, project_paths, user_errors

if TYPE_CHECKING:
    from ..records import Run

NAME = "show"


def command(
    assignment: Annotated[str | None, typer.Argument(help="folder name under kernels/")] = None,
    version: Annotated[str | None, typer.Argument(help="version name or vNN")] = None,
    case: CaseOpt = None,
    run_id: Annotated[str | None, typer.Option(
        "--run", help="a run id, or a unique prefix of one; default the run that stands for the version "
                      "(timed alone from a rested card before other kinds, the newest of its kind)")] = None,
    gpu: GpuOpt = None,
    all_metrics: Annotated[bool, typer.Option(
        "--all-metrics", help="every profiler metric, not only the CS149 block")] = False,
    probe: Annotated[str | None, typer.Option(
        "--probe", help="a probe record instead of a run: its name (the newest of that name) or its id, "
                        "as under logs/devices/<gpu>/probes/")] = None,
    root: RootOpt = None, logs: LogsOpt = None,
) -> None:
    """One run in full (by default the one that stands for the version): the leaderboard block, the check,
    derived figures, peers, profile, code. With --probe, a probe record: what it measured, where, by which
    command and code, and the shape of its results."""
    from ..analysis.listing import latest_run_with_peers
    from ..lookup import check_assignment, find_run, headline_case, resolve_version, runs_of, standing_run_of

    _, kernels, logs_dir = project_paths(root, logs)
    if probe is not None:
        if assignment is not None:
            fail("--probe names a probe record: give no assignment or version with it")
        _show_probe(logs_dir, probe, gpu)
        return
    if assignment is None or version is None:
        fail("name an assignment and a version (report show flashattn v16), or a probe (report show --probe NAME)")
        return
    try:
        check_assignment(kernels, logs_dir, assignment)
        name = resolve_version(kernels, logs_dir, assignment, version)
        on_case = case or headline_case(kernels, logs_dir, assignment, name)  # the case its figure is taken on
        if run_id:
            run = find_run(logs_dir, assignment, name, run_id, on_case, kernels=kernels)
        else:
            run = standing_run_of(logs_dir, assignment, name, on_case, gpu, kernels=kernels)
        peers_run = None if run.peers else latest_run_with_peers(runs_of(logs_dir, assignment, name,
                                                                         kernels=kernels), run)
    except user_errors() as e:
        fail(str(e))
        return
    _print_run(run, logs_dir, all_metrics, peers_run)



def _show_probe(logs: Path, wanted: str, gpu: str | None) -> None:
    from rich.text import Text

    from .. import store
    from ..render.tables import code_table, data_outline, probe_grid

    records = store.probes(logs, gpu)
    found = [r for r in records if r.run_id == wanted] or [r for r in records if r.name == wanted] \
        or [r for r in records if r.run_id.startswith(wanted)]
    if len({r.name for r in found}) > 1:
        fail(f"--probe: '{wanted}' begins the ids of {len(found)} probes ({', '.join(r.run_id for r in found[:4])}"
             f"{', ...' if len(found) > 4 else ''}): give more of one")
        return
    if not found:
        names = ", ".join(sorted({r.name for r in records})) or "none"
        fail(f"--probe: no probe record named or with the id '{wanted}' under {logs / 'devices'}"
             f"{f' for {gpu}' if gpu else ''} (names: {names})")
        return
    record = max(found, key=lambda r: r.created_utc)
    console.rule(f"[bold]probe {record.name}[/bold] · {record.gpu} · {record.run_id}", align="left")
    console.print(probe_grid(record))
    if record.code is not None:
        console.print(code_table(record.code, logs))
    else:
        console.print("code: not recorded", style="dim")
    console.print("[bold]results[/bold] (bind them in a worklog as "
                  f"{{{{ probes.{record.name}.data... }}}})", highlight=False)
    console.print(Text(data_outline(record.data) or "(empty: the results are in the files beside it)"))


def _print_run(run: Run, logs: Path, all_metrics: bool = False, peers_run: Run | None = None) -> None:
    """``peers_run``: for a run that timed no peers, the latest of the same code that did (named, not shown)."""
    from ..render.text import device_lines, leaderboard_block

    console.rule(f"[bold]{run.assignment} {run.version}[/bold] · {run.case_name} · run {run.run_id}", align="left")
    if run.timing:
        block = leaderboard_block(run.timing, title=f"{run.assignment} {run.version} · {run.case_name}",
                                  case=run.case, device_lines=device_lines(run.device))
    else:
        block = "not timed: " + (run.error or run.check.message or "the check failed")
        block += "\n\nRunning on:\n" + "\n".join(f"* {line}" for line in device_lines(run.device))
    console.print(Panel(Text(block), expand=False, border_style="dim"))
    console.print(facts_grid(run))
    if run.derived:
        console.print(derived_table(run))
    if run.peers:
        console.print(peers_table(run))
    else:
        where = (f"; the latest run of this code that did: report show {run.assignment} "
                 f"{run.version.split('_')[0]} --run {peers_run.run_id}" if peers_run is not None else "")
        console.print(f"peers: none timed in this run{where}", style="dim", highlight=False)
    if run.probes:
        console.print(probes_table(run.probes, run.case_name, against=run))
    _print_profile(run, all_metrics)
    console.print(code_table(run.code, logs))



def _print_profile(run: Run, all_metrics: bool) -> None:
    p = run.profile
    if p is None:
        console.print("profile: none taken", style="dim")
        return
    head = f"profile: {p.tool} {p.tool_version or ''}".rstrip() + f", {p.status}"
    if p.status != "ok":
        console.print(head + (f": {p.reason}" if p.reason else ""), highlight=False)
        return
    read = f", read with {p.read_with}" if p.read_with else ""
    console.print(head + f", {len(p.kernels)} kernel(s){read}", highlight=False)
    if p.report_file:
        console.print(f"Nsight Compute report: {p.report_file}, beside this run's record "
                      f"(gunzip -k it, then open the .ncu-rep in ncu-ui)", highlight=False)
    hidden = 0
    for k in p.kernels:
        table, left_out = kernel_metrics_table(k, all_metrics)
        hidden += left_out
        console.print(table)
    if hidden:
        console.print(f"[dim]{hidden} more metrics in the record: report show ... --all-metrics[/dim]")
