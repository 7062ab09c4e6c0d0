"""The process Nsight Compute profiles: one version of one assignment, called once warm.

    python -m reporter.harness.profile_target <assignment> <version> <case> [--root R]

It draws the case's seeded input, calls the version once outside any NVTX range (so
compilation, autotuning and allocator growth are not profiled), then once inside the
nested ranges ``<assignment>/<vNN>/profile``, synchronising after each call. ncu's
``--nvtx-include "<assignment>/<vNN>/profile/"`` then sees exactly the kernels of that call.

The reference is not computed and the output not checked: ``report run`` checked this
version on this case before profiling it.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..assignments import AssignmentError, find_repo_root, get_assignment
from .nvtx_ranges import ranges

PHASE = "profile"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m reporter.harness.profile_target",
                                description="Run one version once warm inside an NVTX range, for ncu.")
    p.add_argument("assignment", help="folder name under kernels/")
    p.add_argument("version", help="version name or vNN handle")
    p.add_argument("case", help="case name from the assignment's CASES")
    p.add_argument("--root", type=Path, default=None, help="project root holding kernels/")
    return p


def _sync() -> None:
    import torch

    torch.cuda.synchronize()


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # ncu prints its CSV on the same stdout; anything this process prints goes to stderr instead
    sys.stdout = sys.stderr
    root = (args.root or find_repo_root()).resolve()
    try:
        a = get_assignment(root / "kernels", args.assignment)
        v = a.version(args.version)
        case = a.case(args.case)
        mod = v.load()
    except AssignmentError as e:
        print(f"profile_target: {e}", file=sys.stderr)
        return 2
    data = a.spec.generate_input(**case)
    _sync()
    out = mod.custom_kernel(data)  # warm: compile, autotune, grow the allocator
    _sync()
    del out
    with ranges(a.name, v.short, PHASE):
        out = mod.custom_kernel(data)
        _sync()
    del out
    return 0


if __name__ == "__main__":
    # ncu prints its CSV on the stdout this process inherits: send the process's own fd 1
    # (C-level prints of compilers and libraries included) to stderr
    sys.stdout.flush()
    os.dup2(2, 1)
    sys.exit(main())
