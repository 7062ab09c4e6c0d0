"""`report ceilings`: measure this GPU's copy bandwidth and matmul peaks; store them under
logs/devices/."""

from __future__ import annotations

from .common import LogsOpt, RootOpt, console, fail, project_paths

NAME = "ceilings"


def command(root: RootOpt = None, logs: LogsOpt = None) -> None:
    """Measure this GPU's copy bandwidth and matmul peaks; store them under logs/devices/."""
    from ..harness.device import NoGPU, device_info
    from ..harness.worker import ensure_ceilings
    from ..render.text import TerminalEvents

    _, _, logs_dir = project_paths(root, logs)
    try:
        ensure_ceilings(logs_dir, device_info(), TerminalEvents(console), remeasure=True)
    except NoGPU as e:
        fail(str(e), 3)
