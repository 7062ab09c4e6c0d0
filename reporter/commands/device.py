"""`report device`: the device block as a course's `mb` prints it; with --microbench, measure load
latency and streaming bandwidth at each level and record them under logs/devices/<gpu>/microbench/.
Without --microbench it prints the newest recorded micro-benchmark (no GPU needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from .common import GpuFilterOpt, LogsOpt, RootOpt, console, fail, project_paths

NAME = "device"


def _print_view(view) -> None:  # type: ignore[no-untyped-def]
    from ..render.device import LATENCY_HEADERS, STREAM_HEADERS, STREAM_KEY

    mb = view.record
    for line in view.block:
        console.print(f"GPU 0: {line}", markup=False, highlight=False)
    console.print(f"\nLoad latency (pointer chase), recorded {mb.created_utc:%Y-%m-%d %H:%M} UTC, {mb.run_id}",
                  markup=False)
    t = Table(*LATENCY_HEADERS, box=None, pad_edge=False)
    for row in view.latency:
        t.add_row(*row)
    console.print(t)
    for line in view.level_lines:
        console.print(f"  {line}", markup=False)
    console.print("\nStreaming loads" + ("" if mb.profile_status == "ok" else
                                         f" (no profiler columns: {mb.profile_reason})"), markup=False)
    s = Table(*STREAM_HEADERS, box=None, pad_edge=False)
    for row in view.streams:
        s.add_row(*row)
    console.print(s)
    console.print(STREAM_KEY, markup=False, style="dim")


def command(
    microbench: Annotated[bool, typer.Option(
        "--microbench", help="measure load latency by working-set size and streaming bandwidth at each level "
                             "(L1, L2, DRAM) for vector widths and access patterns, on this GPU, and record them "
                             "(about a minute; the profiler's columns need ncu)")] = False,
    profile: Annotated[bool, typer.Option(
        "--profile/--no-profile", help="with --microbench: also run each streaming configuration once under "
                                       "Nsight Compute for sectors, tag look-ups and bank conflicts per request")] = True,
    gpu: GpuFilterOpt = None,
    root: RootOpt = None, logs: LogsOpt = None,
) -> None:
    """The device block as a course's `mb` prints it (clock, memory, L2, SMs, limits, peak rates); with
    --microbench, measure and record the latency and bandwidth of each memory level on this machine's GPU.
    Without --microbench, the newest recorded micro-benchmark (of --gpu, or of any GPU)."""
    from .. import store
    from ..render.device import device_view

    root_dir, _, logs_dir = project_paths(root, logs)
    if microbench:
        from ..harness.device import NoGPU, require_cuda
        from ..harness.microbench import run_microbench
        from ..render.text import TerminalEvents

        try:
            require_cuda()
        except NoGPU as e:
            fail(str(e), 3)
        mb = run_microbench(root_dir, profile=profile, events=TerminalEvents(console, blocks=False))
        target = store.microbench_path(logs_dir, mb)
        try:
            path = store.save(mb, target, logs=logs_dir)
        except Exception as e:  # the measurement is done: keep it where a person finds it, then say why
            kept = Path.cwd() / f"microbench_{mb.run_id}_unsaved.json"
            kept.write_text(mb.model_dump_json(), encoding="utf-8")
            fail(f"{target}: the record could not be written ({e}); the measurement is kept in {kept}")
        found = store.latest_ceilings(logs_dir, mb.device.name, mb.device.slug)
        _print_view(device_view(mb, found[1] if found else None))
        console.print(f"\nrecorded: {path}", markup=False)
        return
    recorded = store.microbenches(logs_dir, gpu)
    if not recorded:
        where = f"logs/devices/{gpu}/microbench/" if gpu else "logs/devices/*/microbench/"
        fail(f"no micro-benchmark recorded under {where}: run `report device --microbench` on a GPU")
    mb = recorded[-1]
    found = store.latest_ceilings(logs_dir, mb.device.name, mb.device.slug)
    _print_view(device_view(mb, found[1] if found else None))
