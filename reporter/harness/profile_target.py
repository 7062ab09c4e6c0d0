"""The process Nsight Compute profiles: one version of one assignment, called once warm.

    python -m reporter.harness.profile_target <assignment> <version> <case> [--root R]
    python -m reporter.harness.profile_target <assignment> <peer> <case> --peer

With ``--peer`` the second argument names one of the assignment's PEERS (e.g. sdpa_cudnn), profiled
the same way inside ``<assignment>/<peer>/profile``: what a library's kernels are (names, grid,
block, shared memory) is read off such a profile.

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
    p.add_argument("--peer", action="store_true", help="the second argument names a peer, not a version")
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
        case = a.case(args.case)
        if args.peer:
            peers = getattr(a.spec, "PEERS", {}) or {}
            if args.version not in peers:
                raise AssignmentError(f"{a.name} has no peer '{args.version}' (peers: {', '.join(peers) or 'none'})")
            fn, label = peers[args.version].fn, args.version
        else:
            v = a.version(args.version)
            fn, label = a.load(v).custom_kernel, v.short
    except AssignmentError as e:
        print(f"profile_target: {e}", file=sys.stderr)
        return 2
    data = a.spec.generate_input(**case)
    _sync()
    out = fn(data)  # warm: compile, autotune, grow the allocator
    _sync()
    del out
    with ranges(a.name, label, PHASE):
        out = fn(data)
        _sync()
    del out
    return 0


if __name__ == "__main__":
    # ncu prints its CSV on the stdout this process inherits: send the process's own fd 1
    # (C-level prints of compilers and libraries included) to stderr
    sys.stdout.flush()
    os.dup2(2, 1)
    sys.exit(main())
